"""Checking a candidate's output against the task's float64 reference.

The error is ``max |out - ref| / max |ref|`` in float64, and a candidate passes when it is at
most the dtype's tolerance (``RTOL``); a NaN anywhere (the output is poisoned with NaN before
the checked run, so an element the kernel never wrote stays NaN) fails it.

Large float32 outputs are compared on the device, where the device has float64
(``cl_khr_fp64``): the reference stays there next to the inputs, one reduction kernel gives
the error, and nothing but a number crosses to the host. A failing candidate is compared once
more on the host, which gives the verdict and the message. Other outputs are read back and
compared on the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RTOL = {"float32": 1e-5, "float16": 1e-2, "float64": 1e-10}
DEVICE_CHECK_MIN = 1 << 18  # outputs with at least this many elements: compared on device

# max |out - ref| over a float output and its float64 reference, infinite at a NaN, per
# work-group (the host takes the max of the groups')
MAX_ERROR_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void ts_max_error(__global const float *out, __global const double *ref, const long n,
                           __global double *partial) {
  __local double acc[256];
  const int lid = get_local_id(0);
  double m = 0.0;
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    const float o = out[i];
    m = fmax(m, isnan(o) ? (double)INFINITY : fabs((double)o - ref[i]));
  }
  acc[lid] = m;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s)
      acc[lid] = fmax(acc[lid], acc[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0)
    partial[get_group_id(0)] = acc[0];
}
"""


def poison(queue: Any, out: Any) -> None:
    """Fill a device array with NaN (float) or 0x7f bytes (other types), without a kernel."""
    import pyopencl as cl

    if np.issubdtype(out.dtype, np.floating):
        pattern = np.array([np.nan], dtype=out.dtype)
    else:
        pattern = np.full(1, 0x7F, dtype=np.uint8)
    cl.enqueue_fill_buffer(queue, out.data, pattern, 0, out.nbytes)


def host_error(out: Any, ref: np.ndarray, scale: float) -> tuple[float, bool]:
    """``(relative error, has NaN)`` of a host array against the float64 reference."""
    out = np.asarray(out)
    err = float(np.max(np.abs(out.astype(np.float64) - ref))) / scale
    return err, bool(np.issubdtype(out.dtype, np.floating) and np.isnan(out).any())


class OutputCheck:
    """The check of one task's output: ``check(out_dev)`` is ``None`` when the device array
    ``out_dev`` matches the reference, else the reason it does not."""

    def __init__(self, queue: Any, ref: Any, dtype: Any, device_side: bool | None = None) -> None:
        self.queue = queue
        self.ref = np.asarray(ref, dtype=np.float64)
        self.rtol = RTOL.get(str(np.dtype(dtype)), 1e-5)
        self.scale = float(np.max(np.abs(self.ref))) or 1.0
        self.dtype = np.dtype(dtype)
        if device_side is None:
            device_side = (
                self.dtype == np.float32
                and self.ref.size >= DEVICE_CHECK_MIN
                and "cl_khr_fp64" in queue.device.extensions
            )
        self._kernel: Any = None
        self._ref_dev: Any = None
        if device_side:
            import pyopencl as cl
            import pyopencl.array as cla

            self._ref_dev = cla.to_device(queue, np.ascontiguousarray(self.ref).ravel())
            dev = queue.device
            self._local = 1 << (min(256, dev.max_work_group_size).bit_length() - 1)
            self._groups = max(1, min(1024, -(-self.ref.size // self._local)))
            self._partial = cla.empty(queue, self._groups, np.float64)
            prg = cl.Program(queue.context, MAX_ERROR_SOURCE).build()
            self._kernel = prg.ts_max_error

    @property
    def on_device(self) -> bool:
        return self._kernel is not None

    def device_error(self, out_dev: Any) -> float:
        """The relative error computed on the device (infinite where the output has NaN)."""
        self._kernel(
            self.queue,
            (self._groups * self._local,),
            (self._local,),
            out_dev.data,
            self._ref_dev.data,
            np.int64(self.ref.size),
            self._partial.data,
        )
        return float(self._partial.get(queue=self.queue).max()) / self.scale

    def __call__(self, out_dev: Any) -> str | None:
        if self.on_device and self.device_error(out_dev) <= self.rtol:
            return None
        out = out_dev.get(queue=self.queue)
        err, nan = host_error(out, self.ref, self.scale)
        if err <= self.rtol:
            return None
        where = "unwritten (NaN) elements" if nan else f"relative error {err:.2e}"
        return f"output differs from numpy: {where}"
