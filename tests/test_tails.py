"""Tail strategies of ``Stage.split`` (``tail="guard" | "shift" | "peel"``): what the lowered
IR looks like, that every strategy computes the same numbers at sizes no factor divides, and
the mistakes a user can make with them."""

import numpy as np
import pytest

import tensorsched as ts
from tensorsched.ops.space import Config
from tensorsched.ops.templates import gemm_cpu
from tensorsched.runtime.numerics import random_array, relative_error
from tensorsched.tune.task import Task


def matmul(n, m, kk):
    A = ts.placeholder((n, kk), name="A")
    B = ts.placeholder((kk, m), name="B")
    k = ts.reduce_axis((0, kk), name="k")
    C = ts.compute((n, m), lambda i, j: ts.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def tiled(n, m, kk, tail_ij, tail_k, factors=(8, 4, 4)):
    A, B, C = matmul(n, m, kk)
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factors[0], tail=tail_ij)
    jo, ji = s[C].split(j, factors[1], tail=tail_ij)
    ko, ki = s[C].split(C.op.reduce_axis[0], factors[2], tail=tail_k)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].unroll(ki)
    return s, [A, B, C]


def run(s, args, target):
    A, B, C = args
    rng = np.random.default_rng(0)
    a, b = random_array(A.shape, "float32", rng), random_array(B.shape, "float32", rng)
    c = np.full(C.shape, np.nan, np.float32)
    ts.build(s, args, target=target)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_shift_moves_the_last_tile_inwards_and_drops_the_guards():
    s, args = tiled(37, 29, 24, "shift", "guard")
    ir = str(ts.lower(s, args))
    assert "min(i.outer*8, 29)" in ir and "min(j.outer*4, 25)" in ir
    assert "if (" not in ir  # 4 divides K: no guard at all


def test_peel_writes_the_last_iteration_out_and_the_loop_runs_guard_free():
    s, args = tiled(32, 32, 23, "guard", "peel")
    ir = str(ts.lower(s, args))
    main, last = ir.split("for (k.outer, 0, 5)")[1].split("if (", 1)
    assert "if (" not in main  # the first 5 K steps are whole
    assert "k.inner + 20 < 23" in last  # the 6th has 3 of its 4 elements
    src = ts.build(s, args, target="opencl").get_source()
    assert "if (" not in src  # unrolled, the peeled copy's guards fold away


@pytest.mark.parametrize(
    "tail_ij,tail_k", [("guard", "guard"), ("shift", "peel"), ("shift", "guard")]
)
@pytest.mark.parametrize("shape", [(37, 29, 23), (5, 3, 2), (64, 33, 17)])
def test_every_tail_strategy_computes_the_same_product(tail_ij, tail_k, shape):
    s, args = tiled(*shape, tail_ij, tail_k)
    run(s, args, "python")


@pytest.mark.opencl
def test_tail_strategies_on_the_device():
    for tail_ij, tail_k in (("shift", "peel"), ("guard", "guard")):
        s, args = tiled(37, 29, 23, tail_ij, tail_k)
        run(s, args, "opencl")


def test_shift_on_an_axis_shorter_than_the_tile():
    # the tile shrinks to the axis (TVM's bound inference, issue 17): no shift, no guard
    s, args = tiled(5, 3, 2, "shift", "peel")
    ir = str(ts.lower(s, args))
    assert "min(" not in ir and "if (" not in ir and "for (i.inner, 0, 5)" in ir


@pytest.mark.opencl
@pytest.mark.parametrize(
    "template,tiles",
    [
        ("cpu", {"tile_y": (2, 8), "tile_x": (1, 16), "tail_k": "peel", "tile_k": (8,)}),
        ("gpu_tiled", {"tile_y": (1, 8, 4), "tile_x": (1, 8, 4), "double_buffer": "none"}),
    ],
)
def test_gemm_templates_with_shift_check_no_element_against_m_or_n(template, tiles):
    M, N, K = 67, 45, 37
    s, args, cfg = Task("gemm", template, (M, N, K)).instantiate({"tail": "shift", **tiles})
    assert cfg.valid
    src = ts.build(s, args, target="opencl").get_source()
    guards = [line for line in src.splitlines() if "if (" in line]
    assert not [g for g in guards if f"< {M})" in g or f"< {N})" in g]
    assert len(guards) == (0 if template == "cpu" else len(guards))  # cpu: K peeled too
    run(s, args, "opencl")


@pytest.mark.opencl
@pytest.mark.parametrize("order", ["cols", "rows"])
def test_cpu_gemm_work_groups_in_either_order_compute_the_product(order):
    # "rows": the work-groups along M are OpenCL's dimension 0, the one the device runs
    # one after another, so consecutive ones share B's column slice
    tiles = {"tile_y": (2, 8), "tile_x": (1, 16), "tile_k": (4,), "tail": "shift"}
    s, args, cfg = Task("gemm", "cpu", (67, 45, 37)).instantiate({**tiles, "group_order": order})
    assert cfg.valid
    src = ts.build(s, args, target="opencl").get_source()
    rows_by = "blockIdx_x" if order == "rows" else "blockIdx_y"  # (x: get_group_id(0))
    assert f"A[min({rows_by} * 16, 51) * 37" in src  # 16-row tiles, the last shifted to 51
    run(s, args, "opencl")


def product_error(f, args, layout, seed):
    """The relative error of built GEMM ``f`` (arguments ``args``, operands laid out as
    ``layout``) on random operands, into a NaN-poisoned output."""
    A, B, C = args
    rng = np.random.default_rng(seed)
    a, b = random_array(A.shape, "float32", rng), random_array(B.shape, "float32", rng)
    c = np.full(C.shape, np.nan, np.float32)
    f(a, b, c)
    return relative_error(c, (a.T if layout[0] == "T" else a) @ (b.T if layout[1] == "T" else b))


@pytest.mark.opencl
@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("shape", [(67, 45, 37), (40, 512, 24), (33, 129, 300), (21, 96, 40)])
def test_cpu_gemm_reads_b_from_a_packed_copy(layout, shape):
    # pad_b: a kernel of its own copies B first, and the GEMM reads the copy. Where the
    # work-group tiles divide N (and a work-item's columns are a multiple of 16), into panels
    # of 16 columns, each contiguous over K (B_panel[j // 16, k, j % 16]); else into rows
    # 80 elements longer than a multiple of 256 (rows a power of two apart share cache sets)
    M, N, K = shape
    wide = N % 32 == 0  # two work-items of 16 columns divide N
    knobs = {"tile_y": (2, 8), "tile_x": (2, 16), "tile_k": (4,), "pad_b": True}
    cfg = Config(knobs | ({} if wide else {"tail": "shift"}))
    s, args = gemm_cpu(cfg, M, N, K, layout)
    assert cfg.valid
    f = ts.build(s, args, target="opencl")
    kernels = f.get_source().split("__kernel")[1:]
    assert len(kernels) == 2  # the copy and the GEMM
    if wide:
        assert "B_panel + " in kernels[0] and "B_panel + " in kernels[1]
        assert "vload16(0, B_panel + " in kernels[1]  # a work-item's 16 columns at a time
    else:
        row = args[1].shape[-1]
        stride = row + (80 - row) % 256
        assert "B_global + " in kernels[0] and f"ax0_inner * {stride}" in kernels[0]
    assert product_error(f, args, layout, seed=1) < 1e-5


@pytest.mark.opencl
@pytest.mark.parametrize("layout", ["NN", "NT"])
@pytest.mark.parametrize("pad_b", [False, True])
@pytest.mark.parametrize("shape", [(67, 45, 37), (33, 129, 300), (40, 64, 1024)])
def test_cpu_gemm_reads_a_from_a_copy_with_padded_rows(layout, pad_b, shape):
    # pad_a: a kernel of its own copies A into rows 80 elements longer than a multiple of
    # 256 (a work-item's rows of A a multiple of 4 KiB apart share one L1 set), before B's
    # copy where there is one; the GEMM reads both copies
    M, N, K = shape
    knobs = {"tile_y": (2, 8), "tile_x": (2, 16), "tile_k": (4,), "pad_a": True, "pad_b": pad_b}
    ragged = M % 16 != 0 or N % 32 != 0
    cfg = Config(knobs | ({"tail": "shift"} if ragged else {}))
    s, args = gemm_cpu(cfg, M, N, K, layout)
    assert cfg.valid
    f = ts.build(s, args, target="opencl")
    kernels = {k.split(" void ")[1].split("(")[0]: k for k in f.get_source().split("__kernel")[1:]}
    assert len(kernels) == 2 + pad_b
    copy, gemm = kernels["default_function_A_global"], kernels["default_function_C"]
    stride = K + (80 - K) % 256
    assert f"A_global + blockIdx_x * {32 * stride} + ax0_inner * {stride}" in copy
    assert "A_global[" in gemm and " A[" not in gemm and "(A[" not in gemm  # reads the copy
    A, B, C = args
    rng = np.random.default_rng(2)
    a, b = random_array(A.shape, "float32", rng), random_array(B.shape, "float32", rng)
    c = np.full(C.shape, np.nan, np.float32)
    f(a, b, c)
    assert relative_error(c, a @ (b.T if layout[1] == "T" else b)) < 1e-5


@pytest.mark.opencl
@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize(
    "shape, tiles",
    [
        ((1, 4096, 64), ((1, 1), (2, 2048), (8,))),  # a matrix-vector product
        ((3, 1000, 77), ((1, 2), (2, 256), (8,))),  # ragged N and K, rows guarded
        ((5, 1030, 300), ((2, 1), (1, 1024), (4,))),  # one tile over all but 6 columns
    ],
)
def test_a_wide_tile_walks_its_columns_in_a_loop_the_k_steps_rows_inside(layout, shape, tiles):
    # more columns than a register tile holds (64): a loop over the work-item's vectors of
    # sums, each taking the K step's rows in turn, so that every row of B streams through
    M, N, K = shape
    (ty, tx, tk), ragged = tiles, N % (tiles[1][0] * tiles[1][1]) != 0
    knobs = {"tile_y": ty, "tile_x": tx, "tile_k": tk, "vec": 16, "pad_b": False}
    cfg = Config(knobs | ({"tail": "shift"} if ragged or M % ty[1] else {}))
    s, args = gemm_cpu(cfg, M, N, K, layout)
    assert cfg.valid
    f = ts.build(s, args, target="opencl")
    src = f.get_source()
    vectors = tx[1] // 16
    assert f"C_local[{vectors * ty[1]}]" in src
    assert f"j_c_outer < {vectors}; ++j_c_outer)" in src  # a loop, not unrolled
    assert f"C_local[{vectors - 1}]" not in src  # no vector of sums named one by one
    assert product_error(f, args, layout, seed=3) < 1e-5


def test_wide_tiles_are_for_few_rows_a_work_item():
    def valid(ty, tx):
        return Task("gemm", "cpu", (512, 4096, 512)).instantiate({"tile_y": ty, "tile_x": tx})[2]

    assert valid((1, 2), (1, 2048)).valid and valid((1, 4), (1, 1024)).valid
    assert valid((1, 32), (1, 64)).valid  # a register tile: as before
    cfg = valid((1, 4), (1, 2048))
    assert not cfg.valid and "at most 4096 outputs" in " ".join(cfg.constraints)


def test_pad_a_defaults_where_a_work_items_rows_fill_an_l1_set_and_others_refuse_it():
    def default(shape, rows):
        _, _, cfg = Task("gemm", "cpu", shape).instantiate({"tile_y": (1, rows)})
        return cfg.space["pad_a"].default

    assert default((512, 512, 2048), 16) is True  # 16 rows 8 KiB apart: one set, 8 ways
    assert default((512, 512, 512), 16) is True  # 2 KiB apart: 8 of the 16 in a set
    assert default((1024, 1024, 1024), 8) is True  # 4 KiB apart: 8 in one set
    assert default((1024, 1024, 512), 8) is False  # 2 KiB apart: 4 a set
    assert default((512, 512, 2048), 4) is False
    assert default((1000, 1000, 1000), 16) is False  # 4000 bytes apart: spread over sets
    # TN stores A transposed (its rows along M), and a conv scheduled as a GEMM has no A
    # operand to copy: the knob is there, True refused
    transposed = Config({"pad_a": True})
    gemm_cpu(transposed, 512, 512, 2048, "TN")
    conv = Task("conv2d", "gemm_cpu", (1, 16, 10, 10, 32, 3, 3, 1, 1))
    for cfg in (transposed, conv.instantiate({"pad_a": True})[2]):
        assert not cfg.valid and "no A operand to pad" in " ".join(cfg.constraints)


@pytest.mark.opencl
def test_a_large_temporary_on_a_cpu_device_is_zeroed_host_memory_that_the_kernels_use():
    # temporaries of a huge page or more live in host memory advised onto huge pages (the
    # padded copy of B walks down its rows, a TLB miss a row on 4 KiB pages)
    import pyopencl as cl

    from tensorsched.runtime.module import HUGE_PAGE, huge_page_host_buffer, temp_buffer

    s, args, cfg = Task("gemm", "cpu", (40, 1024, 520)).instantiate(
        {"tile_y": (1, 8), "tile_x": (2, 32), "tile_k": (4,), "pad_b": True}
    )
    assert cfg.valid
    run(s, args, "opencl")  # B's copy: 520 rows of 1104 floats, 2.3 MB
    f = ts.build(s, args, target="opencl")
    if not f.device.is_cpu or huge_page_host_buffer(f.device.context, HUGE_PAGE) is None:
        pytest.skip("host memory temporaries are for CPU devices with transparent huge pages")
    buf = temp_buffer(f.device.context, HUGE_PAGE + 4, zeroed=True)
    assert buf.flags & cl.mem_flags.USE_HOST_PTR and buf.size == 2 * HUGE_PAGE
    out = np.ones(buf.size, np.uint8)
    cl.enqueue_copy(f.device.queue, out, buf)
    assert not out.any()


def test_pad_b_defaults_where_b_rows_share_cache_sets_and_views_refuse_it():
    space = Task("gemm", "cpu", (1024, 1024, 1024)).space()
    assert space.space["pad_b"].default is True
    assert Task("gemm", "cpu", (256, 1024, 1024)).space().space["pad_b"].default is True
    for shape in ((512, 512, 512), (1024, 1024, 256), (1000, 1000, 1000)):
        assert Task("gemm", "cpu", shape).space().space["pad_b"].default is False
    # fewer rows of A than PAD_ROWS read B about once: the copy's extra pass is not repaid
    for m, copied in ((1, False), (8, False), (16, True), (64, True)):
        assert Task("gemm", "cpu", (m, 4096, 4096)).space().space["pad_b"].default is copied
    # a conv scheduled as a GEMM has no B operand to copy: the knob is there, True refused
    conv = Task("conv2d", "gemm_cpu", (1, 16, 10, 10, 32, 3, 3, 1, 1))
    _, _, cfg = conv.instantiate({"pad_b": True})
    assert not cfg.valid and "no B operand to pad" in " ".join(cfg.constraints)
    # a channels-last conv pads its repacked weights only where the search chooses it
    nhwc = Task("conv2d", "gemm_nhwc", (1, 512, 14, 14, 512, 3, 3, 1, 1)).space()
    assert nhwc.space["pad_b"].default is False


@pytest.mark.parametrize("shape", [(19, 77, 40), (5, 130, 17), (64, 64, 64)])
def test_a_work_group_tile_over_the_whole_of_m_keeps_its_size_and_computes_guard_free(shape):
    # 64-row tiles over M = 19 (every work-group's tile overhangs M, so no tail strategy
    # applies): the __local tiles keep their 64 rows, zeros past M, and the register tile
    # reads only them, so its updates test no element; a work-item whose rows all lie past
    # M skips them with one test of its first row; the stores to C check M and N
    s, args, cfg = Task("gemm", "gpu_tiled", shape).instantiate(
        {"tile_y": (1, 8, 8), "tile_x": (1, 16, 4), "tile_k": (8,), "tail": "guard",
         "double_buffer": "none"}
    )  # fmt: skip
    assert cfg.valid
    update, store = str(ts.lower(s, args)).split("produce C.local {")[1].split("\n  }\n")[:2]
    M, N, _ = shape
    tests = [line.strip() for line in update.splitlines() if "if (" in line]
    assert not [t for t in tests if ".c " in t or "ax0" in t or "ax1" in t]  # no element's
    assert (f"if (threadIdx.y*8 < {M}) {{" in tests) == (M == 19)  # 8 rows a work-item
    assert (f"< {M})" in store) == (M % 64 != 0)
    run(s, args, "python")


@pytest.mark.opencl
def test_a_tile_over_the_whole_of_m_on_the_device():
    for dbuf, fetch in (("none", 1), ("both", 4), ("local", 1)):
        s, args, cfg = Task("gemm", "gpu_tiled", (19, 77, 40)).instantiate(
            {"tile_y": (1, 8, 8), "tile_x": (1, 16, 4), "tile_k": (8,), "tail": "guard",
             "double_buffer": dbuf, "fetch_vec": fetch}
        )  # fmt: skip
        assert cfg.valid
        run(s, args, "opencl")


def test_shift_on_a_reduction_axis_is_refused():
    A, B, C = matmul(8, 8, 9)
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="reduction axis.*tail='peel'"):
        s[C].split(C.op.reduce_axis[0], 4, tail="shift")


def test_shift_outside_a_reduction_loop_is_refused_at_lowering():
    A, B, C = matmul(10, 8, 9)
    s = ts.create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, 4, tail="shift")
    s[C].reorder(k, io, ii, j)  # the shifted tile's overlap would be accumulated twice
    with pytest.raises(ts.ScheduleError, match="accumulated twice"):
        ts.lower(s, [A, B, C])


def test_an_unknown_tail_is_refused():
    A, B, C = matmul(8, 8, 8)
    s = ts.create_schedule(C.op)
    with pytest.raises(ts.ScheduleError, match="tail must be one of 'guard', 'shift', 'peel'"):
        s[C].split(C.op.axis[0], 4, tail="pad")


def staged(n, m, kk, dbuf, factors=(8, 8, 4)):
    """``tiled`` with A and B staged per K step in work-group tiles computed at the K loop
    (optionally double-buffered), the K split peeled."""
    A, B, C = matmul(n, m, kk)
    s = ts.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    AA, BB = s.cache_read(A, "shared", [CL]), s.cache_read(B, "shared", [CL])
    i, j = s[C].op.axis
    bi, ti = s[C].split(i, factors[0])
    bj, tj = s[C].split(j, factors[1])
    s[C].reorder(bi, bj, ti, tj)
    for ax, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y")):
        s[C].bind(ax, ts.thread_axis(tag))
    s[C].bind(tj, ts.thread_axis("threadIdx.x"))
    s[CL].compute_at(s[C], tj)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factors[2], tail="peel")
    s[CL].unroll(ki)
    for T in (AA, BB):
        s[T].compute_at(s[CL], ko)
        rest, fx = s[T].split(s[T].fuse(*s[T].op.axis), factors[1])
        _, fy = s[T].split(rest, factors[0])
        s[T].bind(fy, ts.thread_axis("threadIdx.y"))
        s[T].bind(fx, ts.thread_axis("threadIdx.x"))
        if dbuf:
            s[T].double_buffer(dbuf)
    return s, [A, B, C]


@pytest.mark.parametrize("dbuf", [None, "shared", "local", "both"])
def test_peel_a_k_loop_holding_its_tiles_and_double_buffered(dbuf):
    """Tiles allocated at the peeled loop move out around both copies; a double-buffered
    loop is peeled after the pipeline is built (its last step loads nothing ahead); the steps
    before the last run guard-free; Python and OpenCL compute the product."""
    s, args = staged(19, 13, 23, dbuf)
    ir = str(ts.lower(s, args))
    assert "for (k.outer, 0, 5)" in ir  # 6 steps of 4 over K = 23: 5 in the loop, 1 peeled
    assert "k.outer*4 + k.inner < 23" not in ir  # no guard on the reduction in the loop
    assert "k.inner + 20 < 23" in ir  # the peeled step's three elements
    assert ir.count("allocate A.shared[") == 1
    run(s, args, "python")
    run(s, args, "opencl")


@pytest.mark.parametrize("dbuf", [None, "shared", "local", "both"])
def test_peel_two_k_steps_keeps_a_barrier_between_them(dbuf):
    """Two K steps: the peeled step follows the first one (without double buffering, the
    loop of one step goes away: straight-line code), and its fill must wait at a barrier
    until every work-item has finished reading the first step's tiles."""
    s, args = staged(19, 13, 7, dbuf)  # steps of 4 and 3
    ir = str(ts.lower(s, args))
    assert "k.inner + 4 < 7" in ir  # the peeled step's three elements
    if dbuf is None:
        assert "for (k.outer" not in ir
        fills = ir.split("produce A.shared {")
        assert len(fills) == 3
        assert "barrier(shared)" in fills[1].split("produce B.shared {")[1]  # after step 1
    run(s, args, "python")
    run(s, args, "opencl")
