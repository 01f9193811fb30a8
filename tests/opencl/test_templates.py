"""Every operator template, at several knob settings and odd shapes, matches numpy on the CPU
device (outputs poisoned first)."""

import itertools
import zlib

import numpy as np
import pytest
from ocl_util import conv_ref

import tensorsched as ts
from tensorsched.ops.conv2d import ConvShape
from tensorsched.ops.space import Config
from tensorsched.ops.templates import TEMPLATES, layouts_of, space
from tensorsched.runtime.numerics import compare, random_array


def _points(cfg, k=2, seed=0, keep=None):
    """The default point, the first and last points of the grid, and ``k`` random ones (read
    by index: a space can hold millions of points). ``keep``: the random ones are the first
    ``k`` of a random order that ``keep(point)`` accepts."""
    n = cfg.size()
    rng = np.random.default_rng(seed)
    if keep is None:
        picks = [cfg.point(int(i)) for i in rng.choice(n, min(k, n), False)]
    else:
        order = (cfg.point(int(i)) for i in rng.permutation(n))
        picks = list(itertools.islice(filter(keep, order), k))
    return [{}, cfg.point(0), cfg.point(n - 1)] + picks


def _small_and_valid(tmpl, cfg, *args):
    """A ``keep`` for ``_points``: valid points that unroll no more than the default does (the
    product of every split's innermost factor: the outputs and K steps of one work-item). The
    last point of the grid already covers the largest tiles; PoCL takes most of a minute to
    compile each of them."""

    def unrolled(point):
        splits = [n for n, knob in cfg.space.items() if knob.kind == "split"]
        return int(np.prod([point.get(n, cfg[n])[-1] for n in splits]))

    def keep(point):
        if unrolled(point) > unrolled({}):
            return False
        c = Config(point)
        tmpl(c, *args)
        return c.valid

    return keep


def _gemm_inputs(args, rng, transposed_b):
    a = random_array(args[0].shape, np.float32, rng)
    b = random_array(args[1].shape, np.float32, rng, positive=True)
    bmat = b.T if transposed_b else b
    return [a, b], a.astype(np.float64) @ bmat


def _apply_epilogue(ref, epilogue, extra_inputs, rng, axis):
    ins = []
    for kind in epilogue:
        if kind == "bias":
            bias = random_array((ref.shape[axis],), np.float32, rng, positive=True)
            ins.append(bias)
            shape = [1] * ref.ndim
            shape[axis] = -1
            ref = ref + bias.reshape(shape)
        elif kind == "relu":
            ref = np.maximum(ref, 0)
        elif kind == "sigmoid":
            ref = 1 / (1 + np.exp(-ref))
    return ref, ins


GEMM_SHAPES = [(37, 29, 23), (16, 20, 12)]


@pytest.mark.parametrize("name", sorted(TEMPLATES["gemm"]))
@pytest.mark.parametrize("shape", GEMM_SHAPES)
def test_gemm_template(ocl_device, rng, name, shape):
    tmpl = TEMPLATES["gemm"][name]
    M, N, K = shape
    if name == "adreno" and N % 4:
        N += 4 - N % 4  # the image path needs whole float4 texels
    knobs = space(tmpl, M, N, K)
    keep = _small_and_valid(tmpl, knobs, M, N, K) if name == "cpu" else None
    for k, point in enumerate(_points(knobs, seed=zlib.crc32(name.encode()) % 100, keep=keep)):
        cfg = Config(point)
        epilogue = (("bias", "relu"), ("sigmoid",), ())[k % 3]
        s, args = tmpl(cfg, M, N, K, epilogue=epilogue)
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="opencl")
        ins, ref = _gemm_inputs(args, rng, transposed_b=(name == "vec_dot"))
        ref, extra = _apply_epilogue(ref, epilogue, args, rng, axis=1)
        out = np.full(args[-1].shape, np.nan, np.float32)
        mod(*ins, *extra, out)
        compare(out, ref, "float32", name=f"{name} {point} {epilogue}")


CONV_SHAPES = [
    ConvShape(1, 3, 7, 9, 5, 3, 3, 1, 1),
    ConvShape(1, 4, 9, 8, 6, 3, 3, 2, 1),
    ConvShape(2, 3, 5, 6, 7, 1, 1, 1, 0),
]


@pytest.mark.parametrize("name", sorted(TEMPLATES["conv2d"]))
@pytest.mark.parametrize("shape", CONV_SHAPES, ids=str)
def test_conv2d_template(ocl_device, rng, name, shape):
    tmpl = TEMPLATES["conv2d"][name]
    for k, point in enumerate(_points(space(tmpl, shape), k=2, seed=len(name))):
        cfg = Config(point)
        epilogue = (("bias", "relu"), ())[k % 2]
        s, args = tmpl(cfg, shape, epilogue=epilogue)
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="opencl")
        d = random_array(args[0].shape, np.float32, rng)
        w = random_array(args[1].shape, np.float32, rng)
        data_layout, out_layout = layouts_of("conv2d", name)  # channels-last: transposed
        ref = conv_ref(d.transpose(0, 3, 1, 2) if data_layout == "NHWC" else d, w, shape.pad,
                       shape.stride)  # fmt: skip
        if out_layout == "NHWC":
            ref = ref.transpose(0, 2, 3, 1)
        ref, extra = _apply_epilogue(
            ref, epilogue, args, rng, axis=3 if out_layout == "NHWC" else 1
        )
        out = np.full(args[-1].shape, np.nan, np.float32)
        mod(d, w, *extra, out)
        compare(out, ref, "float32", name=f"{name} {point} {epilogue}")


def test_register_tile_is_an_array_of_vectors():
    """A private tile accessed only by aligned vectors is declared as ``floatN t[..]``, the
    form OpenCL compilers keep in registers (10x faster than a float array on PoCL)."""
    from tensorsched.codegen.opencl import emit_opencl

    s, args = TEMPLATES["gemm"]["cpu"](Config(), 64, 64, 64)
    text = emit_opencl(ts.lower(s, args)).text
    assert "float16 C_local[16];" in text
    assert "C_local[15] = C_local[15] + " in text
    assert "vload16(0, C_local" not in text
