"""The five workloads of the fuzzer: each a header of ``ts`` code that declares the tensors,
the schedule ``s``, the arguments and the numpy reference ``ref``; and their drawn sizes."""

from __future__ import annotations


def _header_gemm(z):
    return f"""\
M, N, K = {z["M"]}, {z["N"]}, {z["K"]}
A = ts.placeholder((M, K), name="A")
B = ts.placeholder((K, N), name="B")
k = ts.reduce_axis((0, K), name="k")
C = ts.compute((M, N), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
s = ts.create_schedule(C.op)
args = [A, B, C]


def ref(a, b):
    return a @ b
"""


def _conv_shape(z):
    return (
        f"ConvShape(N={z['N']}, CI={z['CI']}, IH={z['IH']}, IW={z['IW']}, CO={z['CO']}, "
        f"KH={z['KH']}, KW={z['KW']}, stride={z['stride']}, pad={z['pad']})"
    )


def _header_conv2d(z):
    return f"""\
from tensorsched.ops.conv2d import ConvShape, conv2d_nchw, stages_by_name
shape = {_conv_shape(z)}
data, kernel, conv2d = conv2d_nchw(shape)
data_pad = stages_by_name(conv2d)["data_pad"]
s = ts.create_schedule(conv2d.op)
args = [data, kernel, conv2d]


def ref(d, w):
    return conv2d_ref(d, w, stride={z["stride"]}, pad={z["pad"]})
"""


def _header_conv2d_packed(z):
    return f"""\
from tensorsched.ops.conv2d import ConvShape, conv2d_nchw_spatial_pack, stages_by_name
shape = {_conv_shape(z)}
data, kernel, output_unpack = conv2d_nchw_spatial_pack(shape, VH={z["VH"]}, VW={z["VW"]}, \
VC={z["VC"]})
stages = stages_by_name(output_unpack)
data_pad, data_vec, kernel_vec, conv = (stages[n] for n in ("data_pad", "data_vec", \
"kernel_vec", "conv"))
s = ts.create_schedule(output_unpack.op)
args = [data, kernel, output_unpack]


def ref(d, w):
    return conv2d_ref(d, w, stride={z["stride"]}, pad={z["pad"]})
"""


def _header_softmax(z):
    return f"""\
M, N = {z["M"]}, {z["N"]}
A = ts.placeholder((M, N), name="A")
k = ts.reduce_axis((0, N), name="k")
mx = ts.compute((M,), lambda i: ts.max(A[i, k], axis=k), name="mx")
ex = ts.compute((M, N), lambda i, j: ts.exp(A[i, j] - mx[i]), name="ex")
k2 = ts.reduce_axis((0, N), name="k2")
sm = ts.compute((M,), lambda i: ts.sum(ex[i, k2], axis=k2), name="sm")
out = ts.compute((M, N), lambda i, j: ex[i, j] / sm[i], name="out")
s = ts.create_schedule(out.op)
args = [A, out]


def ref(a):
    e = np.exp(a - a.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
"""


def _header_elementwise(z):
    return f"""\
M, N = {z["M"]}, {z["N"]}
A = ts.placeholder((M, N), name="A")
Bv = ts.placeholder((N,), name="Bv")
T1 = ts.compute((M, N), lambda i, j: A[i, j] * 2.0 + Bv[j], name="T1")
T2 = ts.compute((M, N), lambda i, j: ts.sigmoid(T1[i, j]) - 0.5, name="T2")
out = ts.compute((M, N), lambda i, j: T2[i, j] * T1[M - 1 - i, j] + T2[i, N - 1 - j], name="out")
s = ts.create_schedule(out.op)
args = [A, Bv, out]


def ref(a, b):
    t1 = 2 * a + b
    t2 = 1 / (1 + np.exp(-t1)) - 0.5
    return t2 * t1[::-1, :] + t2[:, ::-1]
"""


HEADERS = {
    "gemm": _header_gemm,
    "conv2d": _header_conv2d,
    "conv2d_packed": _header_conv2d_packed,
    "softmax": _header_softmax,
    "elementwise": _header_elementwise,
}

PRELUDE = (
    "import numpy as np\n\nimport tensorsched as ts\nfrom tensorsched.ops.conv2d import "
    "conv2d_ref\nfrom tensorsched.runtime.numerics import check_numerics\n"
)


SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 13)
PRIMES = (2, 3, 5, 7, 11, 13)
FACTORS = (1, 2, 3, 4, 5, 7, 8)


def draw_sizes(draw, workload, small):
    from hypothesis import strategies as st

    dim = st.sampled_from(SIZES[:8] if small else SIZES) | st.sampled_from(PRIMES)
    if workload == "gemm":
        z = dict(M=draw(dim), N=draw(dim), K=draw(dim))
    elif workload in ("softmax", "elementwise"):
        z = dict(M=draw(dim), N=draw(dim))
    else:
        KH, KW = draw(st.sampled_from((1, 2, 3))), draw(st.sampled_from((1, 2, 3)))
        pad = draw(st.sampled_from((0, 1)))
        z = dict(
            N=draw(st.sampled_from((1, 2))),
            CI=draw(st.sampled_from((1, 2, 3))),
            IH=draw(st.integers(max(1, KH - 2 * pad), 7)),
            IW=draw(st.integers(max(1, KW - 2 * pad), 7)),
            CO=draw(st.sampled_from((1, 2, 3, 5))),
            KH=KH,
            KW=KW,
            stride=draw(st.sampled_from((1, 2))),
            pad=pad,
        )
        if workload == "conv2d_packed":
            z.update(
                VH=draw(st.sampled_from((1, 2))),
                VW=draw(st.sampled_from((1, 2, 3, 4))),
                VC=draw(st.sampled_from((1, 2, 4))),
            )
    return tuple(z.items())
