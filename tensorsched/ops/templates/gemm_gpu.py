"""Desktop-GPU GEMM: work-group tiles staged through ``__local`` memory, a register tile per
work-item accumulated in ``"local"`` scope, vectorized columns.

Knobs: ``tile_y`` / ``tile_x`` = (work-items, outputs per work-item) along M / N, ``tile_k``
(the K step staged per ``__local`` tile), ``unroll_k``, ``vectorize``.
"""
import tensorsched as ts

from ...tune.space import split_axis
from ..gemm import gemm
from ..nn import epilogue as make_epilogue
from .common import bind_2d, reduction_and_epilogue

THREADS = (4, 8, 16, 32)
PER_ITEM = (1, 2, 4, 8)
K_STEPS = (4, 8, 16, 32)
LOCAL_MEM = 48 * 1024


def gemm_gpu_tiled(cfg, M, N, K, layout="NN", dtype="float32", epilogue=()):
    A, B, C = gemm(M, N, K, layout, dtype)
    O, extra = make_epilogue(C, epilogue)
    s = ts.create_schedule(O.op)
    schedule_gemm_gpu(cfg, s, O, A, B, M, N, K)
    return s, [A, B] + extra + [O]


def schedule_gemm_gpu(cfg, s, O, A, B, M, N, K):
    """Schedule the GEMM (plus elementwise epilogue) producing ``O`` from ``A`` and ``B``."""
    ty, wy = cfg.define_split("tile_y", M, 3, policy="candidates", default=(16, 4),
                              candidates=[(t, w) for t in THREADS for w in PER_ITEM])
    tx, wx = cfg.define_split("tile_x", N, 3, policy="candidates", default=(16, 4),
                              candidates=[(t, w) for t in THREADS for w in PER_ITEM])
    (kstep,) = cfg.define_split("tile_k", K, 2, policy="candidates", default=(8,),
                                candidates=[(k,) for k in K_STEPS])
    unroll_k = cfg.define_knob("unroll_k", (1, 0))
    vec = cfg.define_knob("vectorize", (1, 0))
    cfg.constrain(tx * ty <= 1024, "work-group over 1024 work-items")
    cfg.constrain((ty * wy + tx * wx) * kstep * 4 <= LOCAL_MEM, "__local tiles over 48 KiB")

    comp, out = reduction_and_epilogue(s, O)
    AA = s.cache_read(A, "shared", [comp])
    BB = s.cache_read(B, "shared", [comp])

    i, j = s[out].op.axis
    by, tyy, wyy = split_axis(s[out], i, (ty, wy))
    bx, txx, wxx = split_axis(s[out], j, (tx, wx))
    s[out].reorder(by, bx, tyy, txx, wyy, wxx)
    bind_2d(s, out, by, bx, tyy, txx)
    if vec:
        s[out].vectorize(wxx)

    s[comp].compute_at(s[out], txx)
    ci, cj = s[comp].op.axis
    (ck,) = s[comp].op.reduce_axis
    ko, ki = s[comp].split(ck, kstep)
    s[comp].reorder(ko, ki, ci, cj)
    if unroll_k:
        s[comp].unroll(ki)
    if vec:
        s[comp].vectorize(cj)

    for T in (AA, BB):
        s[T].compute_at(s[comp], ko)
        r, c = s[T].op.axis
        ro, ri = s[T].split(r, nparts=ty)
        co, cl = s[T].split(c, nparts=tx)
        s[T].reorder(ro, co, ri, cl)
        s[T].bind(ro, ts.thread_axis("threadIdx.y"))
        s[T].bind(co, ts.thread_axis("threadIdx.x"))
        if vec:
            s[T].vectorize(cl)
