"""PoCL 3.1 aborts (an assertion in its work-group compiler, ``ParallelRegion.cc``: "Multiple
outgoing edges from exit block!") when it compiles this kernel for a launch: a legal
kernel with two barriers inside nested loops of uniform trip counts, which the schedule
fuzzer generated (a spatially packed conv with its kernel's repacking computed inside the
reduction's factored stage). With ``-cl-opt-disable`` it builds and runs; without the
barriers too. Each build runs in a child process, since the abort ends the process::

    .venv/bin/python benchmarks/results/cpu_amd_2026-11-29_s30/pocl_abort.py
"""

import subprocess
import sys

SOURCE = """
__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void default_function_conv_rf(
    __global const float* restrict kernel_1, __global const float* restrict data_vec,
    __global float* restrict conv_rf) {
  const int blockIdx_z = get_group_id(2);
  __local float kernel_vec[4] __attribute__((aligned(16)));
  // conv.rf
  for (int n = 0; n < 2; ++n) {
    for (int co = 0; co < 2; ++co) {
      for (int h = 0; h < 3; ++h) {
        // kernel_vec
        for (int ci = 0; ci < 2; ++ci) {
          for (int kw = 0; kw < 2; ++kw) {
            kernel_vec[ci * 2 + kw] = kernel_1[co * 6 + ci * 3 + blockIdx_z * 2 + kw];
          }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int w = 0; w < 5; ++w) {
          for (int vh = 0; vh < 2; ++vh) {
            conv_rf[blockIdx_z * 120 + n * 60 + co * 30 + h * 10 + w * 2 + vh] = 0.0f;
            for (int ci_1 = 0; ci_1 < 2; ++ci_1) {
              for (int kw_inner = 0; kw_inner < 2; ++kw_inner) {
                {
                  conv_rf[blockIdx_z * 120 + n * 60 + co * 30 + h * 10 + w * 2 + vh] =
                conv_rf[blockIdx_z * 120 + n * 60 + co * 30 + h * 10 + w * 2 + vh]
              + data_vec[n * 180 + h * 60 + w * 12 + ci_1 * 6 + vh * 3 + blockIdx_z * 2 + kw_inner]
                * kernel_vec[ci_1 * 2 + kw_inner];
                }
              }
            }
          }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
    }
  }
}

"""

CHILD = """
import sys
import pyopencl as cl
from tensorsched.runtime.device import resolve_device
dev = resolve_device(None)
prog = cl.Program(dev.context, sys.stdin.read()).build(options=sys.argv[1:])
kern = prog.all_kernels()[0]
bufs = [cl.Buffer(dev.context, cl.mem_flags.READ_WRITE, 4096) for _ in range(kern.num_args)]
kern.set_args(*bufs)
cl.enqueue_nd_range_kernel(dev.queue, kern, (1, 1, 2), (1, 1, 1)).wait()
print("built and ran")
"""


def attempt(source: str, options: list[str]) -> str:
    p = subprocess.run(
        [sys.executable, "-c", CHILD, *options], input=source, capture_output=True, text=True
    )
    lines = (p.stdout + p.stderr).strip().splitlines()
    return f"exit {p.returncode}: {lines[-1] if lines else ''}"


print("default options:   ", attempt(SOURCE, []))
print("-cl-opt-disable:   ", attempt(SOURCE, ["-cl-opt-disable"]))
no_barriers = "\n".join(line for line in SOURCE.splitlines() if "barrier" not in line)
print("without barriers:  ", attempt(no_barriers, []))
