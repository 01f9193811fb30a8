"""GEMM as a compute declaration: ``C = A @ B`` with A or B stored transposed."""

from __future__ import annotations

from ..errors import ComputeError
from ..ir import intrin as I
from ..ir.tensor import Tensor, compute, placeholder, reduce_axis

LAYOUTS = ("NN", "NT", "TN")


def gemm(
    M: int,
    N: int,
    K: int,
    layout: str = "NN",
    dtype: str = "float32",
    out_dtype: str | None = None,
    name: str = "C",
) -> tuple[Tensor, Tensor, Tensor]:
    """Placeholders A, B and the tensor ``C[i, j] = sum_k A(i, k) * B(k, j)``.

    ``layout`` says how A and B are stored: ``NN`` A is MxK and B is KxN; ``NT`` B is stored NxK
    (transposed, as seed 000's kernels read it); ``TN`` A is stored KxM.
    ``out_dtype`` (default ``dtype``) is the accumulation and output type.
    """
    if layout not in LAYOUTS:
        raise ComputeError(f"gemm: unknown layout '{layout}'; use one of {', '.join(LAYOUTS)}")
    out_dtype = out_dtype or dtype
    A = placeholder((K, M) if layout == "TN" else (M, K), dtype, name="A")
    B = placeholder((N, K) if layout == "NT" else (K, N), dtype, name="B")
    k = reduce_axis((0, K), name="k")

    def a(i, kk):
        return (A[kk, i] if layout == "TN" else A[i, kk]).astype(out_dtype)

    def b(kk, j):
        return (B[j, kk] if layout == "NT" else B[kk, j]).astype(out_dtype)

    C = compute(
        (M, N), lambda i, j: I.sum(a(i, k) * b(k, j), axis=k), name=name, tag=f"gemm_{layout}"
    )
    return A, B, C
