"""Schedule templates: functions ``template(cfg, *shape, dtype=..., epilogue=...)`` returning
``(schedule, args)``, written with the public schedule API only. Copy one to start your own.

GEMM templates take ``(cfg, M, N, K)``; conv2d templates take ``(cfg, ConvShape)``.
``args`` is ``[A, B, *epilogue inputs, C]`` (``gemm_vec_dot`` takes B transposed, N x K) or
``[data, kernel, *epilogue inputs, output]``.
"""

from functools import partial

from ..space import Config
from .conv2d import conv2d_im2col, conv2d_implicit_gemm, conv2d_spatial_pack
from .gemm_cpu import gemm_cpu
from .gemm_gpu import gemm_gpu_tiled
from .gemm_mobile import gemm_adreno, gemm_block2x2, gemm_vec_dot

TEMPLATES = {
    "gemm": {
        "gpu_tiled": gemm_gpu_tiled,  # desktop GPU: __local tiles + register tiles
        "cpu": gemm_cpu,  # CPU OpenCL device: big register tiles, wide vectors
        "vec_dot": gemm_vec_dot,  # seed 000 "just vectorize" (B transposed)
        "block2x2": gemm_block2x2,  # seed 000/002 2x2 blocking; layout knob: Morton packing
        "adreno": gemm_adreno,  # seed 004: B as image2d_t, 8x4 float4 micro-tiles
    },
    "conv2d": {
        "spatial_pack": conv2d_spatial_pack,  # seed 003 (+ register accumulation knob)
        "im2col": conv2d_im2col,  # the GEMM method, GEMM by the CPU template
        "im2col_gpu": partial(conv2d_im2col, gemm="gpu"),  # ... by the GPU template
        "implicit_gemm": conv2d_implicit_gemm,  # desktop GPU: one kernel, tiles from the image
    },
}


def space(template, *args, **kwargs):
    """The knob space of ``template`` for these shape arguments (a ``Config`` with no values)."""
    cfg = Config()
    template(cfg, *args, **kwargs)
    return cfg


__all__ = [
    "TEMPLATES",
    "space",
    "gemm_gpu_tiled",
    "gemm_cpu",
    "gemm_vec_dot",
    "gemm_block2x2",
    "gemm_adreno",
    "conv2d_spatial_pack",
    "conv2d_im2col",
    "conv2d_implicit_gemm",
]
