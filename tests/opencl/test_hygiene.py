"""Building leaves nothing in the working directory: the control-flow graphs PoCL writes there
(``<kernel>.dot``) are moved to the folder of saved kernels."""

import os
import tempfile
import time

from tensorsched.runtime.module import _move_pocl_dumps


def test_pocl_dot_dumps_are_moved_out_of_the_working_directory(ocl_device, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if "portable computing language" not in ocl_device.platform_name.lower():
        return  # only PoCL writes them
    for name in ("kern_dump.dot", "kern_dump.dot.0", "unrelated.dot"):
        (tmp_path / name).write_text("digraph {}")
    _move_pocl_dumps(ocl_device, "__kernel void kern_dump(__global float* a) {}\n", time.time())
    assert sorted(os.listdir(tmp_path)) == ["unrelated.dot"]
    moved = os.path.join(tempfile.gettempdir(), "tensorsched-kernels", "kern_dump.dot")
    assert os.path.exists(moved)
