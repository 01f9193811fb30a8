"""CLBlast's SGEMM as a baseline of the GPU benchmark (``bench.py``; not part of the package,
which never unpacks or loads a system library): the library's C API called with ctypes on
tensorsched's OpenCL device (its context and profiling queue, through pyopencl's ``int_ptr``
handles).

    lib = ClBlast.load()                       # finds libclblast.so.1 (see ``find_clblast``)
    gemm = ClBlastGemm(lib, M, N, K)           # row-major C = A @ B on the current device
    gemm(a, b, c)                              # numpy arrays in, the result lands in c
    seconds = gemm.time(repeat=10)             # per-call times (see ``ClBlastGemm.time``)
    lib.override_parameters(gemm.device, "Xgemm", {"MWG": 128, ...})   # tuned parameters

Finding the library (``find_clblast``): an explicit path (the file, or a folder holding it);
else a copy unpacked before under ``/tmp/clblast``; else the system's; else the Debian package
``libclblast1_*.deb`` of a folder of packages (``.whl/`` of the repository) is unpacked there
with ``dpkg -x`` (never into /). CLBlast links ``libOpenCL.so.1``; where the system has none,
``ocl-icd-libopencl1_*.deb`` is unpacked the same way and loaded first, globally, so that the
dynamic linker resolves CLBlast's dependency to it.

C API facts used here (``clblast_c.h``): ``CLBlastLayoutRowMajor = 101``,
``CLBlastTransposeNo = 111``, ``CLBlastPrecisionSingle = 32``, status 0 is success;
``CLBlastSgemm(layout, a_transpose, b_transpose, m, n, k, alpha, a_buffer, a_offset, a_ld,
b_buffer, b_offset, b_ld, beta, c_buffer, c_offset, c_ld, cl_command_queue*, cl_event*)``;
``CLBlastOverrideParameters(device, kernel_name, precision, num_parameters, names, values)``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import math
import os
import shutil
import subprocess
import time

import numpy as np

from tensorsched.errors import TensorschedError
from tensorsched.runtime.device import current_device, find_device

LAYOUT_ROW_MAJOR = 101
TRANSPOSE_NO = 111
PRECISION_SINGLE = 32
SUCCESS = 0
STATUS_NAMES = {
    -4: "temporary buffer allocation failure",
    -5: "OpenCL out of resources",
    -11: "OpenCL build program failure",
    -36: "invalid command queue",
    -38: "invalid memory object",
    -54: "invalid work-group size",
    -1017: "invalid dimension",
    -1016: "invalid leading dimension of A",
    -1015: "invalid leading dimension of B",
    -1014: "invalid leading dimension of C",
    -2048: "invalid override kernel",
    -2047: "missing override parameter",
    -2046: "invalid local memory usage",
    -2041: "database error (device not found)",
    -2040: "unknown error",
    -2039: "unexpected error",
}

LIBRARY = "libclblast.so.1"
OPENCL_LIBRARY = "libOpenCL.so.1"
UNPACK_DIR = "/tmp/clblast"
CLBLAST_DEB = "libclblast1_*.deb"
OPENCL_DEB = "ocl-icd-libopencl1_*.deb"


class ClBlastError(TensorschedError):
    """CLBlast cannot be found or loaded, or one of its calls returned an error status."""


# ---- finding and loading the library


def _in_tree(root, name):
    """The first file ``name`` under ``root`` (an unpacked package keeps it in usr/lib/...)."""
    if os.path.isfile(root):
        return root
    hits = sorted(glob.glob(os.path.join(root, "**", name), recursive=True))
    return hits[0] if hits else None


def _unpack(debs_dir, pattern, unpack_dir):
    """Unpack the newest Debian package matching ``pattern`` in ``debs_dir`` into
    ``unpack_dir`` with ``dpkg -x``; the folder, or None without a package or dpkg."""
    debs = sorted(glob.glob(os.path.join(debs_dir, pattern))) if debs_dir else []
    if not debs:
        return None
    if shutil.which("dpkg") is None:
        raise ClBlastError(
            f"found {debs[-1]} but no dpkg to unpack it; unpack it by hand "
            f"(ar x + tar) and pass the folder"
        )
    if os.path.abspath(unpack_dir) == "/":
        raise ClBlastError("refusing to unpack a package into /")
    os.makedirs(unpack_dir, exist_ok=True)
    subprocess.run(["dpkg", "-x", debs[-1], unpack_dir], check=True, capture_output=True)
    return unpack_dir


def find_clblast(path=None, debs_dir=None, unpack_dir=UNPACK_DIR):
    """The path of ``libclblast.so.1`` (see the module docstring for the order of the search),
    or None when there is none."""
    if path:
        found = _in_tree(path, LIBRARY) or _in_tree(path, "libclblast.so*")
        if not found:
            raise ClBlastError(f"no {LIBRARY} at {path}")
        return found
    found = _in_tree(unpack_dir, LIBRARY) if os.path.isdir(unpack_dir) else None
    if found:
        return found
    system = ctypes.util.find_library("clblast")
    if system:
        return system
    if _unpack(debs_dir, CLBLAST_DEB, unpack_dir):
        return _in_tree(unpack_dir, LIBRARY)
    return None


def _system_has(soname):
    try:
        ctypes.CDLL(soname)
        return True
    except OSError:
        return False


def ensure_opencl_loader(debs_dir=None, unpack_dir=UNPACK_DIR):
    """Make ``libOpenCL.so.1`` resolvable for CLBlast: nothing to do when the system has one,
    else load the ICD loader unpacked from ``ocl-icd-libopencl1_*.deb`` globally. Returns the
    path loaded, "system", or raises ``ClBlastError``."""
    if _system_has(OPENCL_LIBRARY):
        return "system"
    found = _in_tree(unpack_dir, OPENCL_LIBRARY) if os.path.isdir(unpack_dir) else None
    if not found and _unpack(debs_dir, OPENCL_DEB, unpack_dir):
        found = _in_tree(unpack_dir, OPENCL_LIBRARY)
    if not found:
        raise ClBlastError(
            f"CLBlast needs {OPENCL_LIBRARY}, which the system lacks, and no "
            f"{OPENCL_DEB} was found in {debs_dir or '(no folder given)'}"
        )
    ctypes.CDLL(found, mode=ctypes.RTLD_GLOBAL)
    return found


class ClBlast:
    """The loaded library, with the prototypes of the functions used here."""

    def __init__(self, path, opencl=None):
        self.path, self.opencl = path, opencl
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as exc:
            raise ClBlastError(f"cannot load {path}: {exc}") from None
        size, ptr = ctypes.c_size_t, ctypes.c_void_p
        f = self.lib.CLBlastSgemm
        f.argtypes = (
            [ctypes.c_int] * 3
            + [size] * 3
            + [
                ctypes.c_float,
                ptr,
                size,
                size,
                ptr,
                size,
                size,
                ctypes.c_float,
                ptr,
                size,
                size,
                ctypes.POINTER(ptr),
                ctypes.POINTER(ptr),
            ]
        )
        f.restype = ctypes.c_int
        f = self.lib.CLBlastOverrideParameters
        f.argtypes = [
            ptr,
            ctypes.c_char_p,
            ctypes.c_int,
            size,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(size),
        ]
        f.restype = ctypes.c_int
        self.lib.CLBlastClearCache.argtypes = []
        self.lib.CLBlastClearCache.restype = ctypes.c_int

    @classmethod
    def load(cls, path=None, debs_dir=None, unpack_dir=UNPACK_DIR):
        """Find (``find_clblast``) and load the library; ``ClBlastError`` when it cannot."""
        found = find_clblast(path, debs_dir, unpack_dir)
        if not found:
            raise ClBlastError(
                f"{LIBRARY} not found (no --clblast path, nothing unpacked in "
                f"{unpack_dir}, none on the system, no {CLBLAST_DEB} in "
                f"{debs_dir or '(no folder given)'})"
            )
        opencl = ensure_opencl_loader(debs_dir, unpack_dir)
        return cls(found, opencl)

    @staticmethod
    def check(status, what):
        if status != SUCCESS:
            name = STATUS_NAMES.get(status, "see clblast_c.h")
            raise ClBlastError(f"{what} returned status {status} ({name})")

    def sgemm(self, queue, M, N, K, a, b, c, alpha=1.0, beta=0.0):
        """Enqueue row-major ``c = alpha * a @ b + beta * c`` on ``queue`` (pyopencl objects);
        returns the event CLBlast gives back (of its last kernel)."""
        import pyopencl as cl

        q = ctypes.c_void_p(queue.int_ptr)
        ev = ctypes.c_void_p()
        status = self.lib.CLBlastSgemm(
            LAYOUT_ROW_MAJOR,
            TRANSPOSE_NO,
            TRANSPOSE_NO,
            M,
            N,
            K,
            alpha,
            a.int_ptr,
            0,
            K,
            b.int_ptr,
            0,
            N,
            beta,
            c.int_ptr,
            0,
            N,
            ctypes.byref(q),
            ctypes.byref(ev),
        )
        self.check(status, f"CLBlastSgemm({M}x{N}x{K})")
        return cl.Event.from_int_ptr(ev.value, retain=False) if ev.value else None

    def override_parameters(self, device, kernel, params, precision=PRECISION_SINGLE):
        """``CLBlastOverrideParameters``: use ``params`` (name -> value, every parameter of the
        kernel) for ``kernel`` (e.g. "Xgemm") on ``device`` (a tensorsched ``Device``), then
        clear CLBlast's program cache so that the next call compiles with them."""
        names = (ctypes.c_char_p * len(params))(*[k.encode() for k in params])
        values = (ctypes.c_size_t * len(params))(*[int(v) for v in params.values()])
        status = self.lib.CLBlastOverrideParameters(
            ctypes.c_void_p(device.cl_device.int_ptr),
            kernel.encode(),
            precision,
            len(params),
            names,
            values,
        )
        self.check(status, f"CLBlastOverrideParameters({kernel})")
        self.check(self.lib.CLBlastClearCache(), "CLBlastClearCache")


# ---- one GEMM shape on one device


class ClBlastGemm:
    """Row-major float32 ``C = A @ B`` (M x K times K x N) by CLBlast on one device, with its
    device buffers allocated once."""

    def __init__(self, lib, M, N, K, device=None):
        import pyopencl as cl

        self.lib, self.M, self.N, self.K = lib, M, N, K
        self.device = (
            find_device(device) if isinstance(device, str) else (device or current_device())
        )
        ctx, mf = self.device.context, cl.mem_flags
        self.a = cl.Buffer(ctx, mf.READ_WRITE, 4 * M * K)
        self.b = cl.Buffer(ctx, mf.READ_WRITE, 4 * K * N)
        self.c = cl.Buffer(ctx, mf.READ_WRITE, 4 * M * N)

    @property
    def flop(self):
        return 2 * self.M * self.N * self.K

    def upload(self, a, b, c=None):
        import pyopencl as cl

        q = self.device.queue
        cl.enqueue_copy(q, self.a, np.ascontiguousarray(a, np.float32))
        cl.enqueue_copy(q, self.b, np.ascontiguousarray(b, np.float32))
        if c is not None:  # e.g. an output poisoned with NaN
            cl.enqueue_copy(q, self.c, np.ascontiguousarray(c, np.float32))

    def launch(self):
        return self.lib.sgemm(self.device.queue, self.M, self.N, self.K, self.a, self.b, self.c)

    def download(self, c):
        import pyopencl as cl

        cl.enqueue_copy(self.device.queue, c, self.c)
        self.device.queue.finish()

    def __call__(self, a, b, c):
        """``c[...] = a @ b``; ``c`` (C-contiguous float32) is uploaded first, so that elements
        CLBlast did not write keep their values (poison it with NaN to see them)."""
        self.upload(a, b, c)
        self.launch()
        self.download(c)

    def time(self, repeat=10, warmup=2, min_seconds=0.02, max_calls=100):
        """Per-call seconds of ``repeat`` measurements after ``warmup`` calls.

        CLBlast runs helper kernels (padding, transposing) besides its GEMM kernel, and the
        event it returns is the last kernel's only; so each measurement is the wall clock of
        enough back-to-back calls (at least ``min_seconds``, at most ``max_calls``) and one
        ``queue.finish()``, divided by the number of calls: the device stays busy while the
        host enqueues, and the finish is amortized."""
        q = self.device.queue
        for _ in range(warmup):
            self.launch()
        q.finish()
        t0 = time.perf_counter()
        self.launch()
        q.finish()
        number = max(1, min(max_calls, math.ceil(min_seconds / (time.perf_counter() - t0))))
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                self.launch()
            q.finish()
            times.append((time.perf_counter() - t0) / number)
        return times


__all__ = [
    "LAYOUT_ROW_MAJOR",
    "PRECISION_SINGLE",
    "TRANSPOSE_NO",
    "ClBlast",
    "ClBlastError",
    "ClBlastGemm",
    "ensure_opencl_loader",
    "find_clblast",
]
