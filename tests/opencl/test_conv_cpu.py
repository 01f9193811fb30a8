"""The CPU conv template ``conv2d/gemm_cpu``: the CPU GEMM schedule over (output channel,
output pixel), written straight to NCHW. Correct at odd shapes with every epilogue and tail
strategy; its kernels keep the register tile small and guard-free."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.codegen.opencl import emit_opencl
from tensorsched.ops.conv2d import ConvShape, conv2d_ref
from tensorsched.ops.nn import epilogue_ref
from tensorsched.runtime.numerics import compare, random_array
from tensorsched.tune.task import Task

SHAPES = [
    (1, 5, 9, 11, 7, 3, 3, 1, 1),  # 99 pixels: no tile divides
    (2, 3, 7, 6, 5, 3, 3, 2, 1),  # batch 2, stride 2
    (1, 6, 8, 9, 10, 1, 1, 1, 0),  # 1x1: the image is the GEMM's operand
    (1, 6, 9, 9, 4, 1, 1, 2, 0),  # 1x1 at stride 2: patches materialised
    (1, 3, 15, 13, 9, 7, 7, 2, 3),  # a first layer: 7x7, stride 2, pad 3
]
CONFIGS = [
    None,
    {"tile_y": (1, 4), "tile_x": (2, 8), "vec": 4, "tile_k": (2,), "tail": "shift"},
    {"tile_y": (2, 4), "tile_x": (1, 16), "vec": 8, "tile_k": (4,), "tail": "guard"},
]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("epilogue", [(), ("bias", "add", "relu"), ("bias", "relu6")], ids=str)
def test_gemm_cpu_conv_matches_numpy(ocl_device, rng, shape, epilogue):
    task = Task("conv2d", "gemm_cpu", shape, "float32", epilogue)
    cs = ConvShape(*shape)
    for config in CONFIGS:
        s, args, cfg = task.instantiate(dict(config or {}, tail_k="guard"))
        if not cfg.valid:
            continue
        mod = ts.build(s, args, target="opencl", name="conv")
        ins = [random_array(a.shape, np.float32, rng) for a in args[:-1]]
        ref = conv2d_ref(ins[0], ins[1], cs.stride, cs.pad)
        ref = epilogue_ref(ref, epilogue, ins[2:], bias_axis=1)
        out = np.full(args[-1].shape, np.nan, np.float32)
        mod(*ins, out)
        compare(out, ref, "float32", name=f"gemm_cpu {shape} {epilogue} {config}")


def _kernel_text(shape, epilogue=("bias", "relu")):
    s, args, _ = Task("conv2d", "gemm_cpu", shape, "float32", epilogue).instantiate()
    return emit_opencl(ts.lower(s, args)).text


@pytest.mark.parametrize("epilogue", [("bias", "relu"), ("bias", "add", "relu")], ids=str)
def test_register_tile_is_the_work_items_tile(epilogue):
    """ResNet's 28x28x128 layer: 784 pixels, which the default tile (32) does not divide. The
    accumulator stays one work-item's 16 x 16 tile (not every pixel's column: a residual add
    once made it 784 wide), and the last tile shifts inwards instead of guarding each element."""
    text = _kernel_text((1, 128, 28, 28, 128, 3, 3, 1, 1), epilogue)
    assert "float16 conv_gemm[16];" in text
    gemm = text[text.index("void default_function_relu") :]
    assert gemm.count("if (") <= 1  # at most the work-group's own bound check


def test_one_by_one_conv_reads_the_image():
    """A 1x1 stride-1 conv is one kernel: the GEMM reads the NCHW image as its columns."""
    text = _kernel_text((1, 64, 14, 14, 32, 1, 1, 1, 0))
    assert text.count("__kernel") == 1
    assert "data_col" not in text
    assert "vload16" in text


@pytest.mark.parametrize(
    "shape, rows",
    [
        ((1, 64, 56, 56, 64, 3, 3, 1, 1), 64 * 3 * 58 * 56),  # 3 copies of 58 padded rows
        ((1, 3, 224, 224, 64, 7, 7, 2, 3), 3 * 7 * 2 * 115 * 112),  # 7 columns x 2 phases
    ],
    ids=["3x3", "7x7s2"],
)
def test_batch_one_reads_the_image_rows_not_the_patch_matrix(shape, rows):
    """Batch 1: the GEMM's operand is the image's rows (KW shifted copies per row phase, the
    kernel row an offset into them), KH / min(stride, KH) times smaller than the patch
    matrix; the GEMM reads it as whole vectors at offsets linear in its loops (no division
    in the GEMM kernel)."""
    cs = ConvShape(*shape)
    s, args, _ = Task("conv2d", "gemm_cpu", shape, "float32", ("bias", "relu")).instantiate()
    func = ts.lower(s, args)
    text = emit_opencl(func).text
    assert "data_col" not in text
    (alloc,) = [ln for ln in str(func).splitlines() if ln.startswith("allocate data_rows[")]
    size = int(np.prod([int(d) for d in alloc.split("[")[1].split("]")[0].split(" * ")[1:]]))
    assert size == rows < cs.CI * cs.KH * cs.KW * cs.OH * cs.OW
    gemm = text[text.index("void default_function_relu") :]
    assert "vload16(0, data_rows" in gemm
    # offsets linear in the loops; at stride 2 only the kernel row's phase and half
    divisions = {"rh / 2", "rh % 2"} if cs.stride == 2 else set()
    for op in (" / ", " % "):
        for i in [i for i in range(len(gemm)) if gemm.startswith(op, i)]:
            assert gemm[i - 2 : i + 4] in divisions, gemm[i - 40 : i + 40]


def test_networks_use_it_on_cpu_devices():
    from tensorsched.graph.tasks import choose_template

    shape = (1, 64, 56, 56, 64, 3, 3, 1, 1)
    assert choose_template("conv2d", shape, ("bias", "relu"), gpu=False) == "gemm_cpu"
    assert choose_template("conv2d", shape, ("bias", "relu"), gpu=True) == "implicit_gemm"


@pytest.mark.parametrize("template", ["gemm_cpu", "implicit_gemm"])
def test_a_residual_add_keeps_the_tiles_of_the_plain_conv(template):
    """Batch 1: the fused residual input (read at [n, co, oh, ow]) once made bound inference
    cover whole images: implicit_gemm's ``__local`` tile grew to 418 KB at ResNet-18's
    56x56x64 layer, which NVIDIA's compiler rejected. The buffers are the plain conv's."""

    def buffers(epilogue):
        s, args, _ = Task(
            "conv2d", template, (1, 64, 56, 56, 64, 3, 3, 1, 1), "float32", epilogue
        ).instantiate()
        func = ts.lower(s, args)
        return sorted(
            line.strip().split(" ", 2)[1]
            for line in str(func).splitlines()
            if line.strip().startswith("allocate ")
        )

    assert buffers(("bias", "add", "relu")) == buffers(("bias", "relu"))
