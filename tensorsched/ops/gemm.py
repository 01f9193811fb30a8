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
    b_panel: int = 0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Placeholders A, B and the tensor ``C[i, j] = sum_k A(i, k) * B(k, j)``.

    ``layout`` says how A and B are stored: ``NN`` A is MxK and B is KxN; ``NT`` B is stored NxK
    (transposed, as seed 000's kernels read it); ``TN`` A is stored KxM.
    ``out_dtype`` (default ``dtype``) is the accumulation and output type. ``b_panel``
    (dividing N): C reads B through ``B_panel[j // b_panel, k, j % b_panel]``, a stage that
    packs B's columns into panels of that width, each contiguous over K.
    """
    if layout not in LAYOUTS:
        raise ComputeError(f"gemm: unknown layout '{layout}'; use one of {', '.join(LAYOUTS)}")
    out_dtype = out_dtype or dtype
    A = placeholder((K, M) if layout == "TN" else (M, K), dtype, name="A")
    B = placeholder((N, K) if layout == "NT" else (K, N), dtype, name="B")
    k = reduce_axis((0, K), name="k")

    def a(i, kk):
        return (A[kk, i] if layout == "TN" else A[i, kk]).astype(out_dtype)

    def stored_b(kk, j):
        return B[j, kk] if layout == "NT" else B[kk, j]

    read_b = stored_b
    if b_panel:
        if N % b_panel:
            raise ComputeError(f"gemm: b_panel {b_panel} does not divide N = {N}")
        P = b_panel
        panel = compute(
            (N // P, K, P), lambda jo, kk, ji: stored_b(kk, jo * P + ji), name="B_panel"
        )

        def read_b(kk, j):
            return panel[j // P, kk, j % P]

    def b(kk, j):
        return read_b(kk, j).astype(out_dtype)

    C = compute(
        (M, N), lambda i, j: I.sum(a(i, k) * b(k, j), axis=k), name=name, tag=f"gemm_{layout}"
    )
    return A, B, C
