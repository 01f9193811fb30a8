"""tensorsched's OpenCL kernels launched through CUDA on an NVIDIA GPU: the PTX that NVIDIA's
OpenCL returns as the program's binary, loaded with the CUDA driver (``cuModuleLoadData``,
libcuda through ctypes) into torch's context and launched with the OpenCL NDRange on torch's
buffers. Shared by ``bench.py`` (its "tensorsched via CUDA" column), ``floor_probe.py`` and
``cuda_launch_probe.py``: a kernel timed this way and cuBLAS timed the same way (a CUDA graph's
replay) compare the kernels alone, without NVIDIA's OpenCL launch and profiling cost (about
5 us a kernel by its events, 1 us through CUDA; ``floor_probe.py``)."""

from __future__ import annotations

import ctypes
import re
from typing import Any

_cuda: Any = None


def libcuda() -> Any:
    """The CUDA driver library (loaded once)."""
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def check(rc: int, what: str) -> None:
    """Raises ``RuntimeError`` naming ``what`` and the CUDA error where ``rc`` is not 0."""
    if rc:
        msg = ctypes.c_char_p()
        libcuda().cuGetErrorString(rc, ctypes.byref(msg))
        raise RuntimeError(f"{what}: CUDA error {rc} {msg.value}")


def load_ptx(binary: bytes) -> ctypes.c_void_p:
    """A CUDA module of an NVIDIA OpenCL program binary (PTX text)."""
    ptx = binary.rstrip(b"\0") + b"\0"
    # NVIDIA's OpenCL adds %envreg values (the NDRange's offsets, set by its runtime) to
    # %ctaid for get_group_id; a CUDA launch leaves them undefined: they are 0 here
    ptx = re.sub(rb"(mov\.b32\s+%r\d+,\s*)%envreg\d+;", rb"\g<1>0;", ptx)
    module = ctypes.c_void_p()
    check(libcuda().cuModuleLoadData(ctypes.byref(module), ptx), "cuModuleLoadData")
    return module


def function(module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
    fn = ctypes.c_void_p()
    check(libcuda().cuModuleGetFunction(ctypes.byref(fn), module, name.encode()), name)
    return fn


def launch(torch: Any, fn: Any, grid: list[int], block: list[int], pointers: list[int]) -> None:
    """``fn`` on torch's current stream with these buffer addresses as its arguments."""
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    ptrs = [ctypes.c_uint64(p) for p in pointers]
    argv = (ctypes.c_void_p * max(1, len(ptrs)))(*[ctypes.addressof(p) for p in ptrs])
    check(libcuda().cuLaunchKernel(fn, *grid, *block, 0, stream, argv, None), "cuLaunchKernel")


class CudaKernels:
    """The kernels of a module built for NVIDIA's OpenCL, loaded from its PTX; called with
    ``{buffer name: torch tensor}`` for its arguments and temporaries (counters zeroed).
    Refused (``ValueError``) where a kernel takes a scalar or an image, which this launcher
    does not pass."""

    def __init__(self, mod: Any, torch: Any) -> None:
        self.torch = torch
        self.module = load_ptx(mod.binary())
        self.launches = []
        for info in mod.source.kernels:
            if info.scalars or any(b.image for b in info.params):
                raise ValueError(f"kernel {info.name} takes a scalar or an image")
            gs = list(info.global_size) + [1] * (3 - len(info.global_size))
            ls = list(info.local_size) + [1] * (3 - len(info.local_size))
            grid = [g // b for g, b in zip(gs, ls)]
            self.launches.append((function(self.module, info.name), grid, ls, info.params))
        self.temps = {t.name: int(t.size) for t in mod.source.temps}

    def buffers(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with a zeroed float32 tensor for each temporary added."""
        torch = self.torch
        temps = {n: torch.zeros(max(1, size), device="cuda") for n, size in self.temps.items()}
        return {**args, **temps}

    def __call__(self, bufs: dict[str, Any]) -> None:
        for fn, grid, block, params in self.launches:
            launch(self.torch, fn, grid, block, [bufs[b.name].data_ptr() for b in params])


def cuda_graph_seconds(torch: Any, call: Any, repeat: int, n: int = 20) -> float:
    """Median seconds per call of ``n`` calls captured in a CUDA graph, replayed ``repeat``
    times (CUDA events around each replay), after warm-up off the default stream."""
    import statistics

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as capture requires
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(n):
            call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    times = []
    for _ in range(repeat):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / n)
    return statistics.median(times)
