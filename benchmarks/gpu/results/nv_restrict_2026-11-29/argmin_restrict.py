"""TVM's argmin as a tuple reducer (tests/test_tvm_port11.py), its OpenCL C as tensorsched wrote
it before TS_RESTRICT_IN, built by the OpenCL device's compiler with each change below and run
into outputs poisoned with -77: which variants store the int output. From the project root,
on the GPU host after ``. benchmarks/gpu/gpu_env.sh``:

    python benchmarks/gpu/results/nv_restrict_2026-11-29/argmin_restrict.py
"""

import numpy as np
import pyopencl as cl

from tensorsched.runtime.device import resolve_device

M, N = 9, 31
PARAMS = (
    "__global const int* restrict idx, __global const float* restrict val, "
    "__global int* restrict T_v0, __global float* restrict T_v1"
)
BODY = """
  const int blockIdx_x = get_group_id(0);
  const int threadIdx_x = get_local_id(0);
  if (blockIdx_x * 4 + threadIdx_x < 9) {
    T_v0[blockIdx_x * 4 + threadIdx_x] = (-1);
    T_v1[blockIdx_x * 4 + threadIdx_x] = 3.4028234663852886e+38f;
  }
  if (blockIdx_x * 4 + threadIdx_x < 9) {
    for (int k = 0; k < 31; ++k) {
      int T_v0_new[1];
      float T_v1_new[1];
      T_v0_new[0] = (T_v1[blockIdx_x * 4 + threadIdx_x] <= val[blockIdx_x * 124 + threadIdx_x * 31 + k] ? T_v0[blockIdx_x * 4 + threadIdx_x] : idx[blockIdx_x * 124 + threadIdx_x * 31 + k]);
      T_v1_new[0] = (T_v1[blockIdx_x * 4 + threadIdx_x] <= val[blockIdx_x * 124 + threadIdx_x * 31 + k] ? T_v1[blockIdx_x * 4 + threadIdx_x] : val[blockIdx_x * 124 + threadIdx_x * 31 + k]);
      T_v0[blockIdx_x * 4 + threadIdx_x] = T_v0_new[0];
      T_v1[blockIdx_x * 4 + threadIdx_x] = T_v1_new[0];
    }
  }
}
"""  # noqa: E501


def kernel(params: str) -> str:
    head = "__kernel __attribute__((reqd_work_group_size(4, 1, 1))) void argmin_T"
    return f"{head}({params}) {{{BODY}"


VARIANTS = [
    ("as written", PARAMS, ""),
    ("no restrict", PARAMS.replace(" restrict", ""), ""),
    ("no restrict on T_v0", PARAMS.replace("int* restrict T_v0", "int* T_v0"), ""),
    ("no restrict on T_v1", PARAMS.replace("float* restrict T_v1", "float* T_v1"), ""),
    (
        "no restrict on the inputs",
        PARAMS.replace("const int* restrict", "const int*").replace(
            "const float* restrict", "const float*"
        ),
        "",
    ),  # fmt: skip
    ("as written, -cl-opt-disable", PARAMS, "-cl-opt-disable"),
]

ctx = resolve_device(None).context
queue = cl.CommandQueue(ctx)
rng = np.random.default_rng(0)
val = rng.standard_normal((M, N)).astype("float32")
idx = np.tile(np.arange(N, dtype="int32"), (M, 1))
print(ctx.devices[0].name, "| want", val.argmin(1))
mf = cl.mem_flags
for name, params, options in VARIANTS:
    prg = cl.Program(ctx, kernel(params)).build(options=options.split())
    bufs = [
        cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=idx),
        cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=val),
        cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full(M, -77, "int32")),
        cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full(M, np.nan, "float32")),
    ]
    prg.argmin_T(queue, (12,), (4,), *bufs)
    got = np.empty(M, "int32")
    cl.enqueue_copy(queue, got, bufs[2])
    queue.finish()
    print(f"{name:28s} {got}")
