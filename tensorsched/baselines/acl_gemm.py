"""Running and timing the ACL-style GEMM (``AclGemm``) and its GEMM-method convolution
(``AclConv2d``) on an OpenCL device.

    gemm = AclGemm("reshaped", "4,4,4,1,2,0,1,1,0", M, N, K, batch=2)
    gemm(a, b, c)                       # numpy arrays (B, M, K), (B, K, N), (B, M, N); 2-D if B = 1
    t = gemm.time(a, b, c, repeat=5)    # Timing: t.mean (all kernels of one call)
    t.kernel_mean(gemm.gemm_kernel)     # the GEMM kernel alone

A config is checked (``configs.GEMMConfig``, ``configs.check_fits``) before anything is built;
an illegal one raises ``AclConfigError``. Timing uses the profiling events of the kernels
(device time), as tensorsched's ``OpenCLModule.time_evaluator`` does. The benchmark figure is
the **mean** of ``repeat`` runs after ``warmup`` unmeasured runs, as ACL's benchmark averages
its 5 runs; the per-run times are kept, so ``Timing.device_median`` is there too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import RuntimeCallError
from ..ops.conv2d import ConvShape, conv_output_size
from ..runtime.device import Device, resolve_device
from ..runtime.module import (
    DEFAULT_OPTIONS,
    Timing,
    build_program,
    copy_to_host,
    event_times,
    timing_of_runs,
)
from ..schedules.relations import ceil_div
from .configs import (
    AclConfigError,
    GEMMConfig,
    as_config,
    check_fits,
    lhs_layout,
    rhs_layout,
    strategy_name,
)
from .kernels import conv_source, gemm_source

# pyopencl is imported inside the functions that use it, so that ``import tensorsched`` works
# without an OpenCL driver (and skips pyopencl's ~0.17 s import) until a kernel runs.

GEMM_KERNEL = {
    "native": "gemm_native",
    "reshaped_rhs_only": "gemm_reshaped_rhs_only",
    "reshaped": "gemm_reshaped",
}


def _check_array(
    x: Any, shape: tuple[int, ...], name: str, output: bool = False
) -> NDArray[np.float32]:
    """``x`` as a C-contiguous float32 array of ``shape`` (a 2-D array stands for batch 1)."""
    if not isinstance(x, np.ndarray):
        raise RuntimeCallError(f"{name} must be a numpy array, got {type(x).__name__}")
    if x.shape != shape and not (shape[0] == 1 and x.shape == shape[1:]):
        want = f"{shape}" + (f" or {shape[1:]}" if shape[0] == 1 else "")
        raise RuntimeCallError(f"{name} has shape {x.shape}, expected {want}")
    if output:
        if x.dtype != np.float32:
            raise RuntimeCallError(
                f"{name} must be float32 (it receives the result), got {x.dtype}"
            )
        if not x.flags.writeable:
            raise RuntimeCallError(f"{name} is read-only; it receives the result")
        return x
    if x.dtype != np.float32:
        raise RuntimeCallError(f"{name} must be float32, got {x.dtype}")
    return np.ascontiguousarray(x)


class _AclKernels(ABC):
    """What ``AclGemm`` and ``AclConv2d`` share: a call uploads the two inputs, launches the
    kernels and downloads the output; ``time`` measures the launches as ACL's benchmark does."""

    device: Device
    out_name: str  # the output's name in error messages

    @property
    @abstractmethod
    def out_shape(self) -> tuple[int, ...]: ...

    @abstractmethod
    def upload(self, a: NDArray[np.float32], b: NDArray[np.float32]) -> None: ...

    @abstractmethod
    def launch(self, skip: Collection[str] = ()) -> list[tuple[str, Any]]: ...

    @abstractmethod
    def download(self, out: NDArray[np.float32]) -> None: ...

    def __call__(
        self, a: NDArray[np.float32], b: NDArray[np.float32], out: NDArray[np.float32]
    ) -> None:
        """``out[...]`` = the result for inputs ``a`` and ``b``, on the device."""
        _check_array(out, self.out_shape, self.out_name, output=True)
        self.upload(a, b)
        self.launch()
        self.download(out)

    def time(
        self,
        a: NDArray[np.float32],
        b: NDArray[np.float32],
        out: NDArray[np.float32],
        repeat: int = 5,
        warmup: int = 1,
        include_rhs_reshape: bool = True,
    ) -> Timing:
        """Device time of one call, as a ``Timing`` of ``repeat`` runs after ``warmup``
        unmeasured ones; its figure is the **mean** (``.mean``: all kernels of a call, reshapes
        included; ``.kernel_mean(gemm_kernel)``: the GEMM kernel alone).
        ``include_rhs_reshape=False`` runs a whole call once beforehand and leaves the RHS
        reshape out of the timed ones, as ACL does for constant weights. The result of the
        last run lands in ``out``."""
        _check_array(out, self.out_shape, self.out_name, output=True)
        self.upload(a, b)
        skip = () if include_rhs_reshape else ("reshape_rhs",)
        if skip:
            self.launch()
        for _ in range(warmup):
            self.launch(skip)
        self.device.queue.finish()
        runs = []
        for _ in range(repeat):
            events = self.launch(skip)
            self.device.queue.finish()
            total, per = event_times(events)
            runs.append((total, per, float("nan")))
        timing = timing_of_runs(runs)
        self.download(out)
        return timing


class AclGemm(_AclKernels):
    """An ACL-style GEMM ``C = A * B`` of one strategy and config, built for one device.

    ``strategy``: ``"native"``, ``"reshaped_rhs_only"`` or ``"reshaped"``; ``config``: a
    ``GEMMConfig`` or its CSV text in the strategy's column order (``configs.COLUMNS``).
    ``broadcast_b``: one B (K x N) for every batch item (a convolution's weights).
    The work-group shape is left to the driver (ACL's GEMM tuner does not tune it either).
    """

    def __init__(
        self,
        strategy: str,
        config: GEMMConfig | str,
        M: int,
        N: int,
        K: int,
        batch: int = 1,
        device: Device | str | None = None,
        broadcast_b: bool = False,
    ) -> None:
        self.strategy = strategy_name(strategy)
        self.config = as_config(self.strategy, config)
        self.M, self.N, self.K, self.batch = M, N, K, batch
        self.broadcast_b = broadcast_b
        self.device = resolve_device(device)
        check_fits(self.config, M, N, K, batch, self.device, broadcast_b)
        self.source = gemm_source(self.config)
        self.program = build_program(self.device, self.source, DEFAULT_OPTIONS)
        import pyopencl as cl  # a cached program's kernels are fetched anew

        self.kernels = {name: cl.Kernel(self.program, name) for name in self.kernel_names}
        self.buffers: dict[str, Any] = {}  # by _allocate, on the first upload

    @property
    def kernel_names(self) -> tuple[str, ...]:
        """The kernels of one call, in launch order."""
        return {
            "native": ("gemm_native",),
            "reshaped_rhs_only": ("reshape_rhs", "gemm_reshaped_rhs_only"),
            "reshaped": ("reshape_lhs", "reshape_rhs", "gemm_reshaped"),
        }[self.strategy]

    @property
    def gemm_kernel(self) -> str:
        """The name of the GEMM kernel (``timing.kernel_mean(gemm.gemm_kernel)``: its time)."""
        return GEMM_KERNEL[self.strategy]

    out_name = "C"

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.batch, self.M, self.N)

    @property
    def flop(self) -> int:
        return 2 * self.M * self.N * self.K * self.batch

    def get_source(self) -> str:
        return self.source

    # ---- device memory

    def _allocate(self) -> dict[str, Any]:
        import pyopencl as cl

        ctx, mf, cfg = self.device.context, cl.mem_flags, self.config
        M, N, K, nb = self.M, self.N, self.K, self.batch
        b_items = 1 if self.broadcast_b else nb
        bufs: dict[str, Any] = {
            "A": cl.Buffer(ctx, mf.READ_WRITE, 4 * M * K * nb),
            "B": cl.Buffer(ctx, mf.READ_WRITE, 4 * K * N * b_items),
            "C": cl.Buffer(ctx, mf.READ_WRITE, 4 * M * N * nb),
        }
        if self.strategy != "native":
            rhs = rhs_layout(cfg, N, K)
            if cfg.export_to_cl_image_rhs:
                fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.FLOAT)
                create_image = getattr(cl, "create_image", cl.Image)  # pyopencl >= 2024.2
                bufs["Brs"] = create_image(
                    ctx, mf.READ_WRITE, fmt, shape=(rhs.row_stride // 4, rhs.rows * b_items)
                )
            else:
                bufs["Brs"] = cl.Buffer(ctx, mf.READ_WRITE, 4 * rhs.size * b_items)
        if self.strategy == "reshaped":
            bufs["Ars"] = cl.Buffer(ctx, mf.READ_WRITE, 4 * lhs_layout(cfg, M, K).size * nb)
        self.buffers = bufs
        return bufs

    def _plan(self) -> list[tuple[str, tuple[int, int, int], tuple[Any, ...]]]:
        """``[(kernel name, global size, arguments)]`` of one call."""
        i32 = np.int32
        cfg, bufs = self.config, self.buffers or self._allocate()
        M, N, K, nb = self.M, self.N, self.K, self.batch
        b_items = 1 if self.broadcast_b else nb
        b_batch = 0 if self.broadcast_b else K * N
        gemm_grid = (ceil_div(N, cfg.n0), ceil_div(M, cfg.m0), nb)
        if self.strategy == "native":
            return [
                (
                    "gemm_native",
                    gemm_grid,
                    (
                        bufs["A"],
                        bufs["B"],
                        bufs["C"],
                        i32(M),
                        i32(N),
                        i32(K),
                        i32(M * K),
                        i32(b_batch),
                        i32(M * N),
                    ),
                )
            ]
        rhs = rhs_layout(cfg, N, K)
        per_item = rhs.rows if cfg.export_to_cl_image_rhs else rhs.size
        rhs_batch = 0 if self.broadcast_b else per_item
        plan = [
            (
                "reshape_rhs",
                (rhs.blocks, rhs.kblocks, b_items),
                (bufs["B"], bufs["Brs"], i32(K), i32(N), i32(b_batch), i32(per_item)),
            )
        ]
        if self.strategy == "reshaped_rhs_only":
            return plan + [
                (
                    "gemm_reshaped_rhs_only",
                    gemm_grid,
                    (
                        bufs["A"],
                        bufs["Brs"],
                        bufs["C"],
                        i32(M),
                        i32(N),
                        i32(K),
                        i32(M * K),
                        i32(rhs_batch),
                        i32(M * N),
                    ),
                )
            ]
        lhs = lhs_layout(cfg, M, K)
        return (
            [
                (
                    "reshape_lhs",
                    (lhs.kblocks, lhs.blocks, nb),
                    (bufs["A"], bufs["Ars"], i32(M), i32(K), i32(M * K), i32(lhs.size)),
                )
            ]
            + plan
            + [
                (
                    "gemm_reshaped",
                    gemm_grid,
                    (
                        bufs["Ars"],
                        bufs["Brs"],
                        bufs["C"],
                        i32(M),
                        i32(N),
                        i32(K),
                        i32(lhs.size),
                        i32(rhs_batch),
                        i32(M * N),
                    ),
                )
            ]
        )

    def launch(self, skip: Collection[str] = ()) -> list[tuple[str, Any]]:
        """Enqueue one call on the device buffers; ``[(kernel name, event)]``."""
        q, events = self.device.queue, []
        for name, grid, args in self._plan():
            if name in skip:
                continue
            events.append((name, self.kernels[name](q, grid, None, *args)))
        return events

    def upload(self, a: NDArray[np.float32], b: NDArray[np.float32]) -> None:
        """Copy A and B to the device."""
        import pyopencl as cl

        nb, b_items = self.batch, 1 if self.broadcast_b else self.batch
        a = _check_array(a, (nb, self.M, self.K), "A")
        b = _check_array(b, (b_items, self.K, self.N), "B")
        bufs = self.buffers or self._allocate()
        cl.enqueue_copy(self.device.queue, bufs["A"], a)
        cl.enqueue_copy(self.device.queue, bufs["B"], b)

    def download(self, c: NDArray[np.float32]) -> None:
        """Copy the result into ``c`` (``(batch, M, N)``, or ``(M, N)`` for batch 1)."""
        c = _check_array(c, self.out_shape, "C", output=True)
        copy_to_host(self.device.queue, c, self.buffers["C"])
        self.device.queue.finish()


def _pair(v: int | Sequence[int], name: str) -> tuple[int, int]:
    pair = (v, v) if isinstance(v, (int, np.integer)) else tuple(v)
    if len(pair) != 2 or any(int(x) != x for x in pair):
        raise AclConfigError(f"conv2d {name} must be an integer or a pair, got {v!r}")
    return int(pair[0]), int(pair[1])


class AclConv2d(_AclKernels):
    """The GEMM method of an NCHW convolution, ACL-style: ``im2col`` (output positions x
    CI*KH*KW), an ``AclGemm`` with M = OH*OW, N = CO, K = CI*KH*KW (the layout of the GEMMParam
    lists, so a tuned config applies as it is) and ``col2im`` back to NCHW. The weights
    (CO, CI, KH, KW) become the K x CO matrix on the host, as ACL's configure step reshapes them
    once.

    ``shape``: a ``tensorsched.ops.conv2d.ConvShape`` or anything with the fields
    ``N, CI, IH, IW, CO, KH, KW, stride, pad`` (stride, pad: an integer or an (h, w) pair), or
    those nine values as a tuple.
    """

    def __init__(
        self,
        strategy: str,
        config: GEMMConfig | str,
        shape: ConvShape | Sequence[Any] | Any,
        device: Device | str | None = None,
    ) -> None:
        dilation = (
            shape[9] if isinstance(shape, (tuple, list)) and len(shape) > 9
            else getattr(shape, "dilation", 1)
        )  # fmt: skip
        if dilation != 1:
            raise AclConfigError(
                f"conv2d {shape}: dilation {dilation}; the ACL-style GEMM method here reads "
                "undilated windows only"
            )
        if isinstance(shape, (tuple, list)):
            names = ("N", "CI", "IH", "IW", "CO", "KH", "KW", "stride", "pad")
            shape = dict(zip(names, shape))
        else:
            shape = {
                k: getattr(shape, k)
                for k in ("N", "CI", "IH", "IW", "CO", "KH", "KW", "stride", "pad")
            }
        self.N, self.CI, self.IH, self.IW = shape["N"], shape["CI"], shape["IH"], shape["IW"]
        self.CO, self.KH, self.KW = shape["CO"], shape["KH"], shape["KW"]
        self.stride, self.pad = _pair(shape["stride"], "stride"), _pair(shape["pad"], "pad")
        self.OH = conv_output_size(self.IH, self.KH, self.stride[0], self.pad[0])
        self.OW = conv_output_size(self.IW, self.KW, self.stride[1], self.pad[1])
        if self.OH < 1 or self.OW < 1 or min(self.stride) < 1 or min(self.pad) < 0:
            raise AclConfigError(
                f"conv2d {shape}: no output (OH={self.OH}, OW={self.OW}); "
                "check kernel size, stride and pad"
            )
        self.gemm = AclGemm(
            strategy,
            config,
            self.OH * self.OW,
            self.CO,
            self.CI * self.KH * self.KW,
            batch=self.N,
            device=device,
            broadcast_b=True,
        )
        self.device = self.gemm.device
        self.source = conv_source(self.KH, self.KW, self.stride, self.pad)
        program = build_program(self.device, self.source, DEFAULT_OPTIONS)
        import pyopencl as cl

        self.kernels = {k: cl.Kernel(program, k) for k in ("im2col", "col2im")}
        self._data: Any = None
        self._out: Any = None

    out_name = "out"

    @property
    def out_shape(self) -> tuple[int, ...]:
        return (self.N, self.CO, self.OH, self.OW)

    @property
    def flop(self) -> int:
        return self.gemm.flop

    def get_source(self) -> str:
        return self.source + "\n" + self.gemm.source

    def upload(self, data: NDArray[np.float32], weight: NDArray[np.float32]) -> None:
        """Copy the image and the weights (as the K x CO matrix) to the device."""
        import pyopencl as cl

        data = _check_array(data, (self.N, self.CI, self.IH, self.IW), "data")
        weight = _check_array(weight, (self.CO, self.CI, self.KH, self.KW), "weight")
        bufs = self.gemm.buffers or self.gemm._allocate()
        if self._out is None:
            self._data = cl.Buffer(self.device.context, cl.mem_flags.READ_ONLY, data.nbytes)
            self._out = cl.Buffer(
                self.device.context, cl.mem_flags.WRITE_ONLY, 4 * int(np.prod(self.out_shape))
            )
        cl.enqueue_copy(self.device.queue, self._data, data)
        w_mat = np.ascontiguousarray(weight.reshape(self.CO, -1).T)  # K x CO
        cl.enqueue_copy(self.device.queue, bufs["B"], w_mat)

    def launch(self, skip: Collection[str] = ()) -> list[tuple[str, Any]]:
        """Enqueue one call (im2col, the GEMM's kernels, col2im); ``[(kernel name, event)]``."""
        i32, q, g = np.int32, self.device.queue, self.gemm
        M = self.OH * self.OW
        events = [
            (
                "im2col",
                self.kernels["im2col"](
                    q,
                    (M, self.CI, self.N),
                    None,
                    self._data,
                    g.buffers["A"],
                    i32(self.CI),
                    i32(self.IH),
                    i32(self.IW),
                    i32(self.OH),
                    i32(self.OW),
                ),
            )
        ]
        events += g.launch(skip)
        events.append(
            (
                "col2im",
                self.kernels["col2im"](
                    q, (M, self.CO, self.N), None, g.buffers["C"], self._out, i32(M), i32(self.CO)
                ),
            )
        )
        return events

    def download(self, out: NDArray[np.float32]) -> None:
        """Copy the result into ``out`` (N, CO, OH, OW)."""
        out = _check_array(out, self.out_shape, "out", output=True)
        copy_to_host(self.device.queue, out, self._out)
        self.device.queue.finish()


def conv2d_gemm_shape(
    N: int,
    CI: int,
    IH: int,
    IW: int,
    CO: int,
    KH: int,
    KW: int,
    stride: int | Sequence[int] = 1,
    pad: int | Sequence[int] = 0,
) -> tuple[int, int, int, int]:
    """The GEMMParam ``(M, N, K, B)`` of a convolution's GEMM method: M = OH*OW, N = CO,
    K = CI*KH*KW, B = the batch."""
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(pad, "pad")
    OH, OW = conv_output_size(IH, KH, sh, ph), conv_output_size(IW, KW, sw, pw)
    return (OH * OW, CO, CI * KH * KW, N)
