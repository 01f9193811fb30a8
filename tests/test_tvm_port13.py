"""TVM classic ``te`` programs ported in the thirteenth round:
``unittest/test_te_tensor_overload.py`` (``+ - * /`` with tensors: the types and tags of the
results, a combination with a scalar argument, tensor-scalar operations on symbolic shapes,
broadcasts, a conv2d followed by a scalar operation), ``integration/test_dot.py``,
``topi/recipe/rnn/matexp.py`` (with and without ``env_threads``) and ``topi/recipe/rnn/lstm.py``
(as written, refused; with ``h`` and ``c`` as rows of one state, run), and TOPI's operators
as their tests compute them, written with ``te.compute``: ``test_topi_reduce.py`` (sum with
``keepdims``, min over two axes, argmax), ``test_topi_transform.py`` (concatenate, stack,
split, flip, tile, repeat, gather, gather_nd, one_hot, sequence_mask, arange,
layout_transform to ``NCHW4c`` and back), ``test_topi_depth_to_space.py`` /
``test_topi_space_to_depth.py``, ``test_topi_batch_norm.py``, ``test_topi_instance_norm.py``,
``test_topi_group_norm.py``, ``test_topi_l2_normalize.py``, ``test_topi_image.py``'s bilinear
resize, ``test_topi_pooling.py``'s pool1d and pool3d, ``test_topi_relu.py``'s leaky_relu and
prelu, ``test_topi_scan.py``'s cumsum (a ``te.scan`` here), ``test_topi_loss.py``'s nll_loss,
and the ``low_level_custom_pass.py`` tutorial (refused; its alternative run).

Fixed in this round: ``+ - * /`` with a ``te.Tensor`` were a TypeError; they are stages as
TVM's TOPI makes them (two tensors broadcast, tagged ``"broadcast"``; a tensor and a number,
an expression or an element, elementwise, tagged ``"elemwise"``; ``n + A`` too). A scan whose
steps read other work-items' rows was refused when bound to a ``blockIdx`` of one work-group
(TVM's persistent kernel on one block); it runs, a barrier after each step.
``Stage.env_threads`` was an AttributeError: it is recorded and checked (tensorsched runs a
scan's steps in the threads its parts are bound to). The parser's index check said that an
index computed through a float (``int32(floor(y * 0.5f))``, a resize's) "depends on values
read from a buffer"; it says it is computed from a float and to clamp it. Stays refused, with
what to do: TVM's names for writing a lowering pass (``tir.stmt_functor.post_order_visit``,
``ir_transform``, ``tir.transform.prim_func_pass``, ``transform.PassContext``; they were an
AttributeError, now a LoweringError: walk ``ts.lower``'s result with tensorsched's visitors
and give it to ``ts.build``), ``compute_at`` at a scan's env thread or at its step (the persistent recipes keep
weights in registers across steps; compute them at a loop of the update), a stage of a scan's
step read by two updates (``lstm.py``'s ``s_h2h``), a store predicate on a thread bound only
inside the stage (``lstm.py``'s ``threadIdx.y == 0`` on its updates), broadcasts of shapes
that do not match. Indices read from a tensor or computed from a float are clipped, as
TOPI's take and resize clip them, so that the printed IR parses back. Every kernel runs on
the python target and the CPU OpenCL device against numpy on random data, at sizes no split
factor divides, into NaN-poisoned (integers: sentinel-filled) outputs."""

import numpy as np
import pytest
from test_tvm_port11 import conv_ref, flat_gpu, rnd, run, thr
from ts_check import TARGETS, build

import tensorsched as ts
from tensorsched.errors import ComputeError, ScheduleError, TensorschedError

te = ts.te


def refused(fn, kind, *words):
    """``fn()`` raises ``kind`` (a TensorschedError) whose message has every one of ``words``."""
    with pytest.raises(kind) as info:
        fn()
    assert isinstance(info.value, TensorschedError)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    return info.value


def clip(x, n):
    """An index read at run time, clipped into ``[0, n)``, so that the printed IR parses back
    (``parse_ir`` proves every access inside its buffer; TOPI's ``take`` clips by default)."""
    return te.max(te.min(x, n - 1), 0)


# ---------------------------------------------------------------- test_te_tensor_overload.py


def test_operator_types_and_tags():
    # a tensor in + - * / makes a stage: elementwise beside a scalar, broadcast beside a tensor
    k, n = 1, te.var("n")
    A = te.placeholder((), name="A")
    B = te.placeholder((10, 5), name="B")
    B2 = B[0, 0]
    for e in (k + n, n + n, k + B2, B2 + k, n + B2, B2 + n, B2 + B2):
        assert not isinstance(e, te.Tensor)
    scalar_side = [k + A, A + k, n + A, A + n, k + B, B + k, n + B, B + n, B2 + A, A + B2]
    scalar_side += [B2 + B, B + B2]
    for t in scalar_side:
        assert isinstance(t, te.Tensor) and t.op.tag == "elemwise", t
    for t in (A + A, A + B, B + A, B + B):
        assert isinstance(t, te.Tensor) and t.op.tag == "broadcast", t
    assert (A + B).shape == (10, 5) and (A + A).shape == ()
    assert [t.op.name for t in (B - 1, B * 2, B / 2.0, -B)] == [
        "T_subtract",
        "T_multiply",
        "T_divide",
        "T_multiply",
    ]


@pytest.mark.parametrize("target", TARGETS)
def test_combination_of_overloaded_operators(target):
    # k + A - B * C + x with x a scalar argument of the kernel
    n, m, k = 5, 10, 3
    x = te.var("x")
    A, B, C = (te.placeholder((n, m), name=c) for c in "ABC")
    D = k + A - B * C + x
    s = te.create_schedule(D.op)
    f = build(s, [x, A, B, C, D], target)
    a, b, c = rnd((n, m), 1), rnd((n, m), 2), rnd((n, m), 3)
    d = np.full((n, m), np.nan, "float32")
    f(2, a, b, c, d)
    np.testing.assert_allclose(d, k + a - b * c + 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "shape, op", [((1,), "+"), ((3, 5), "-"), ((1, 3, 5), "*"), ((2, 3, 1, 33), "/")]
)
def test_tensor_scalar_op_on_symbolic_shapes(target, shape, op):
    # verify_tensor_scalar_bop: A's dims are size variables, k a scalar argument, the GPU
    # elementwise schedule (every axis fused, split, bound)
    sh = [te.size_var(f"n{i}") for i in range(len(shape))]
    k = te.var("k")
    A = te.placeholder(sh, name="A")
    B = {"+": lambda: A + k, "-": lambda: A - k, "*": lambda: A * k, "/": lambda: A / k}[op]()
    assert B.op.tag == "elemwise"
    s = te.create_schedule(B.op)
    flat_gpu(s, B, 16)
    f = build(s, [A, B, k, *sh], target)
    a = rnd(shape, 4)
    b = np.full(shape, np.nan, "float32")
    f(a, b, 3, *shape)
    want = {"+": a + 3.0, "-": a - 3.0, "*": a * 3.0, "/": a / 3.0}[op]
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "lhs, rhs, op",
    [
        ((2, 3), (), "+"),
        ((5, 2, 3), (1,), "+"),
        ((1, 33), (17, 33), "-"),
        ((5, 17, 9), (2, 5, 17, 1), "*"),
        ((2, 3, 1, 33), (17, 33), "/"),
    ],
)
def test_broadcast_op_of_two_tensors(target, lhs, rhs, op):
    # verify_broadcast_bop: numpy's broadcast, the injective GPU schedule
    A = te.placeholder(lhs, name="A")
    B = te.placeholder(rhs, name="B")
    C = {"+": A + B, "-": A - B, "*": A * B, "/": A / B}[op]
    assert C.op.tag == "broadcast"
    s = te.create_schedule(C.op)
    flat_gpu(s, C, 32)
    a, b = rnd(lhs, 5), rnd(rhs, 6)
    if op == "/":
        b = np.abs(b) + 0.25
    want = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}[op](
        a.astype("float64"), b
    )
    run(s, [A, B, C], target, [a, b], [want])


def test_broadcast_of_shapes_that_do_not_match_is_refused():
    A, B = te.placeholder((3, 4), name="A"), te.placeholder((5,), name="B")
    refused(lambda: A + B, ComputeError, "(3, 4)", "(5,)", "do not broadcast")
    refused(lambda: A + "x", ComputeError, "str", "a tensor, a number or an expression")


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
def test_conv2d_then_a_scalar_op(target, op):
    # verify_conv2d_scalar_bop: a conv2d, then ``conv op 10.0``; both are outputs
    N, CI, H, F, KS, P = 1, 3, 11, 4, 3, 1
    A = te.placeholder((N, CI, H, H), name="A")
    W = te.placeholder((F, CI, KS, KS), name="W")
    Ap = ts.pad(A, (0, 0, P, P), (0, 0, P, P), name="pad")
    rc, ry, rx = (te.reduce_axis((0, e), name=nm) for e, nm in ((CI, "rc"), (KS, "ry"), (KS, "rx")))
    B = te.compute(
        (N, F, H, H),
        lambda n, f, y, x: te.sum(Ap[n, rc, y + ry, x + rx] * W[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv",
    )
    C = {
        "+": lambda: B + 10.0,
        "-": lambda: B - 10.0,
        "*": lambda: B * 10.0,
        "/": lambda: B / 10.0,
    }[op]()
    s = te.create_schedule(C.op)
    s[Ap].compute_inline()
    n, f, y, x = s[B].op.axis
    s[B].bind(s[B].fuse(n, f), thr("blockIdx.y"))
    yo, yi = s[B].split(y, factor=4)
    s[B].bind(yo, thr("blockIdx.x"))
    s[B].bind(yi, thr("threadIdx.y"))
    s[B].bind(x, thr("threadIdx.x"))
    flat_gpu(s, C, 32)
    a, w = rnd((N, CI, H, H), 7), rnd((F, CI, KS, KS), 8)
    b = conv_ref(a, w, 1, P, 1)
    c = {"+": b + 10.0, "-": b - 10.0, "*": b * 10.0, "/": b / 10.0}[op]
    run(s, [A, W, B, C], target, [a, w], [b, c])


# ---------------------------------------------------------------- integration/test_dot.py


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("rfactor", [False, True])
def test_dot_into_a_one_element_output(target, rfactor):
    n = 37
    A, B = te.placeholder((n,), name="A"), te.placeholder((n,), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((1,), lambda _: te.sum(A[k] * B[k], axis=k), name="C")
    s = te.create_schedule(C.op)
    if rfactor:  # the sum spread over 8 work-items, then reduced across them
        ko, ki = s[C].split(k, factor=8)
        CF = s.rfactor(C, ki)
        tx = thr("threadIdx.x")
        s[C].bind(s[C].op.reduce_axis[0], tx)
        s[CF].compute_at(s[C], s[C].op.reduce_axis[0])
        s[C].set_store_predicate(tx.var.equal(0))
    a, b = rnd((n,), 9), rnd((n,), 10)
    run(s, [A, B, C], target, [a, b], [np.dot(a.astype("float64"), b)[None]])


# ---------------------------------------------------------------- topi/recipe/rnn


def matexp_schedule(steps, batch, hidden, persistent):
    """matexp.py: ``X[t] = X[t-1] @ W`` from ``X[0] = 1``; the reduction split over
    threadIdx.y and rfactored, the state staged through shared then local memory."""
    nty, ntx, nsm = 4, 8, 1
    Whh = te.placeholder((hidden, hidden), name="Whh")
    init = te.compute((1, batch, hidden), lambda _, i, j: 1.0, name="init")
    state = te.placeholder((steps, batch, hidden), name="state")
    kh = te.reduce_axis((0, hidden), name="kh")
    CL = te.compute(
        (steps, batch, hidden),
        lambda t, i, j: te.sum(state[t - 1, i, kh] * Whh[kh, j], axis=kh),
        name="update",
    )
    scan = te.scan(init, CL, state)
    s = te.create_schedule(scan.op)
    SS = s.cache_read(state, "shared", [CL])
    SL = s.cache_read(SS, "local", [CL])
    WhhL = s.cache_read(Whh, "local", [CL])
    ko, _ = s[CL].split(s[CL].op.reduce_axis[0], nparts=nty)
    CLF = s.rfactor(CL, ko)
    bx_t = te.thread_axis((0, nsm), "blockIdx.x")
    tx_t = te.thread_axis((0, ntx), "threadIdx.x")
    ty_t = te.thread_axis((0, nty), "threadIdx.y")
    if persistent:
        s[scan.op].env_threads([bx_t, ty_t, tx_t])
    for part, axis in ((init, init.op.axis[2]), (CL, s[CL].op.axis[2])):
        bx, xi = s[part].split(axis, nparts=nsm)
        tx, xi = s[part].split(xi, nparts=ntx)
        s[part].bind(bx, bx_t)
        s[part].bind(tx, tx_t)
    s[CL].bind(s[CL].op.reduce_axis[0], ty_t)
    s[CLF].compute_at(s[CL], s[CL].op.reduce_axis[0])
    s[CL].set_store_predicate(ty_t.equal(0))
    s[WhhL].compute_at(s[CLF], CLF.op.axis[3])
    s[WhhL].unroll(WhhL.op.axis[0])
    kr, ki = s[CLF].split(CLF.op.reduce_axis[0], nparts=1)
    ko, ki = s[CLF].split(ki, factor=4)
    s[SS].compute_at(s[CLF], kr)
    s[SL].compute_at(s[CLF], ko)
    xo, xi = s[SS].split(SS.op.axis[2], factor=ntx * nty * 3)
    ty, xi = s[SS].split(xi, nparts=nty)
    tx, xi = s[SS].split(xi, nparts=ntx)
    s[SS].bind(ty, ty_t)
    s[SS].bind(tx, tx_t)
    return s, scan, Whh, WhhL, tx_t


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("persistent", [False, True])
def test_rnn_matexp(target, persistent):
    # one work-group (blockIdx.x of extent 1, TVM's persistent kernel on one block): each
    # step reads the whole previous row that all work-items wrote, behind a barrier
    steps, batch, hidden = 6, 3, 37
    s, scan, Whh, _, _ = matexp_schedule(steps, batch, hidden, persistent)
    w = rnd((hidden, hidden), 11) / 4
    want = np.ones((steps, batch, hidden))
    for t in range(1, steps):
        want[t] = want[t - 1] @ w.astype("float64")
    f = build(s, [scan, Whh], target)
    res = np.full(want.shape, np.nan, "float32")
    f(res, w)
    np.testing.assert_allclose(res, want, rtol=1e-4, atol=1e-5)


def test_rnn_matexp_persistent_placements_are_refused():
    # the persistent recipe keeps Whh's tile in registers across steps (computed at the
    # scan's env thread); tensorsched computes nothing between a scan's steps
    s, scan, _, WhhL, tx_t = matexp_schedule(6, 3, 37, True)
    refused(
        lambda: s[WhhL].compute_at(s[scan], tx_t),
        ScheduleError,
        "env_threads",
        "at a loop of the update ('update')",
    )
    refused(lambda: s[WhhL].compute_at(s[scan], scan.op.scan_axis), ScheduleError, "its step")
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    refused(lambda: te.create_schedule(B.op)[B].env_threads([tx_t]), ScheduleError, "not a scan")
    refused(lambda: s[scan].env_threads([te.thread_axis("vthread")]), ScheduleError, "thread axes")


def lstm_reference(x, w):
    def sig(v):
        return 1.0 / (1.0 + np.exp(-v))

    steps, batch, _, hidden = x.shape
    h, c = np.zeros((steps, batch, hidden)), np.zeros((steps, batch, hidden))
    for t in range(1, steps):
        g = x[t].astype("float64") + np.einsum("ik,xjk->ixj", h[t - 1], w.astype("float64"))
        c[t] = sig(g[:, 2]) * c[t - 1] + sig(g[:, 0]) * np.tanh(g[:, 1])
        h[t] = sig(g[:, 3]) * np.tanh(c[t])
    return h, c


def lstm_gates(Xi2h, s_h2h, c_prev):
    """lstm.py's gate rules, as one cell function of ``(t, i, j)``: ``(next_c, next_h)``."""

    def cell(t, i, j):
        gate = [Xi2h[t, i, x, j] + s_h2h[t, i, x, j] for x in range(4)]
        c = te.sigmoid(gate[2]) * c_prev(t, i, j) + te.sigmoid(gate[0]) * te.tanh(gate[1])
        return c, te.sigmoid(gate[3]) * te.tanh(c)

    return cell


def test_rnn_lstm_with_two_states_read_by_one_body_stage_is_refused():
    # lstm.py as written: h2h (a reduction over the previous h) feeds both states' updates;
    # TVM computes such a stage once per step in its scan group, tensorsched inside the one
    # update that reads it, so two readers are refused with what to do
    steps, batch, hidden = 4, 1, 9
    Xi2h = te.placeholder((steps, batch, 4, hidden), name="Xi2h")
    Wh2h = te.placeholder((4, hidden, hidden), name="Wh2h")
    h_state = te.placeholder((steps, batch, hidden), name="state_h")
    c_state = te.placeholder((steps, batch, hidden), name="state_c")
    init_c = te.compute((1, batch, hidden), lambda *i: 0.0, name="init_c")
    init_h = te.compute((1, batch, hidden), lambda *i: 0.0, name="init_h")
    k = te.reduce_axis((0, hidden), name="ki2h")
    s_h2h = te.compute(
        (steps, batch, 4, hidden),
        lambda t, i, x, j: te.sum(h_state[t - 1, i, k] * Wh2h[x, j, k], axis=k),
        name="s_h2h",
    )
    cell = lstm_gates(Xi2h, s_h2h, lambda t, i, j: c_state[t - 1, i, j])
    gshape = (steps, batch, hidden)
    next_c = te.compute(gshape, lambda t, i, j: cell(t, i, j)[0], name="next_c")
    update_c = te.compute(gshape, lambda *i: next_c(*i), name="update_c")
    next_h = te.compute(
        gshape,
        lambda t, i, j: te.sigmoid(Xi2h[t, i, 3, j] + s_h2h[t, i, 3, j]) * te.tanh(next_c[t, i, j]),
        name="next_h",
    )
    update_h = te.compute(gshape, lambda *i: next_h(*i), name="update_h")
    scan_h, scan_c = te.scan(
        [init_h, init_c], [update_h, update_c], [h_state, c_state], inputs=[Xi2h], name="lstm"
    )
    s = te.create_schedule(scan_h.op)
    refused(
        lambda: ts.lower(s, [Xi2h, Wh2h, scan_h, scan_c]),
        ScheduleError,
        "scan 'lstm'",
        "a stage read by two updates cannot be",
    )


@pytest.mark.parametrize("target", TARGETS)
def test_rnn_lstm_with_h_and_c_as_rows_of_one_state(target):
    # lstm.py's cell and schedule (h2h's reduction rfactored over threadIdx.y, the previous h
    # staged in shared memory, one work-group bound as the persistent kernel's), with h and c
    # as rows 1 and 0 of one state, so that h2h has one reader
    steps, batch, hidden = 5, 2, 21
    nty, ntx = 4, 8
    Xi2h = te.placeholder((steps, batch, 4, hidden), name="Xi2h")
    Wh2h = te.placeholder((4, hidden, hidden), name="Wh2h")
    state = te.placeholder((steps, 2, batch, hidden), name="state")
    init = te.compute((1, 2, batch, hidden), lambda *i: 0.0, name="init")
    k = te.reduce_axis((0, hidden), name="ki2h")
    s_h2h = te.compute(
        (steps, batch, 4, hidden),
        lambda t, i, x, j: te.sum(state[t - 1, 1, i, k] * Wh2h[x, j, k], axis=k),
        name="s_h2h",
    )
    cell = lstm_gates(Xi2h, s_h2h, lambda t, i, j: state[t - 1, 0, i, j])
    update = te.compute(
        (steps, 2, batch, hidden),
        lambda t, r, i, j: te.if_then_else(r == 0, cell(t, i, j)[0], cell(t, i, j)[1]),
        name="update",
    )
    scan = te.scan(init, update, state, inputs=[Xi2h], name="lstm")
    s = te.create_schedule(scan.op)
    block_x = te.thread_axis((0, 1), "blockIdx.x")
    thread_x = te.thread_axis((0, ntx), "threadIdx.x")
    thread_y = te.thread_axis((0, nty), "threadIdx.y")
    s[scan].env_threads([block_x, thread_y, thread_x])
    h_shared = s.cache_read(state, "shared", [s_h2h])
    w_local = s.cache_read(Wh2h, "local", [s_h2h])
    ko, _ = s[s_h2h].split(s[s_h2h].op.reduce_axis[0], nparts=nty)
    h2h_rf = s.rfactor(s_h2h, ko)
    s[s_h2h].bind(s[s_h2h].op.reduce_axis[0], thread_y)
    s[h2h_rf].compute_at(s[s_h2h], s[s_h2h].op.reduce_axis[0])
    s[w_local].compute_at(s[h2h_rf], h2h_rf.op.axis[3])
    s[w_local].unroll(w_local.op.axis[0])
    s[h_shared].compute_at(s[h2h_rf], h2h_rf.op.axis[3])
    _, xi = s[h_shared].split(h_shared.op.axis[3], factor=ntx * nty)
    ty, xi = s[h_shared].split(xi, nparts=nty)
    tx, _ = s[h_shared].split(xi, nparts=ntx)
    s[h_shared].bind(ty, thread_y)
    s[h_shared].bind(tx, thread_x)
    for part in (init, update):
        bx, xi = s[part].split(s[part].op.axis[3], nparts=1)
        tx, ji = s[part].split(xi, nparts=ntx)
        s[part].bind(bx, block_x)
        s[part].bind(tx, thread_x)
    # lstm.py's store predicate ``threadIdx.y == 0`` on the update is refused: threadIdx.y is
    # bound only inside it, by h2h's reduction (port5); every row of work-items stores the same
    s[s_h2h].compute_at(s[update], ji)
    x, w = rnd((steps, batch, 4, hidden), 12), rnd((4, hidden, hidden), 13) / 2
    h, c = lstm_reference(x, w)
    f = build(s, [Xi2h, Wh2h, scan], target)
    out = np.full((steps, 2, batch, hidden), np.nan, "float32")
    f(x, w, out)
    np.testing.assert_allclose(out[:, 1], h, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out[:, 0], c, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- topi/python/test_topi_reduce.py


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_sum_keepdims_and_min_over_two_axes(target):
    # topi.sum(A, axis=1, keepdims=True) and topi.min(A, axis=(0, 2)), written with te.compute
    A = te.placeholder((5, 17, 7), name="A")
    k1 = te.reduce_axis((0, 17), name="k1")
    S = te.compute((5, 1, 7), lambda i, _, j: te.sum(A[i, k1, j], axis=k1), name="sum")
    k0, k2 = te.reduce_axis((0, 5), name="k0"), te.reduce_axis((0, 7), name="k2")
    M = te.compute((17,), lambda j: te.min(A[k0, j, k2], axis=[k0, k2]), name="min")
    s = te.create_schedule([S.op, M.op])
    flat_gpu(s, S, 16)
    jo, ji = s[M].split(M.op.axis[0], factor=8)
    s[M].bind(jo, thr("blockIdx.x"))
    s[M].bind(ji, thr("threadIdx.x"))
    a = rnd((5, 17, 7), 20)
    run(s, [A, S, M], target, [a], [a.sum(1, keepdims=True, dtype="float64"), a.min((0, 2))])


@pytest.mark.parametrize("target", TARGETS)
def test_reduce_argmax_along_the_middle_axis(target):
    # topi.argmax(A, axis=1): a tuple reducer (index, value), the first index of the maximum
    def fcombine(x, y):
        keep = x[1] >= y[1]
        return te.if_then_else(keep, x[0], y[0]), te.if_then_else(keep, x[1], y[1])

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    A = te.placeholder((4, 19, 6), name="A")
    k = te.reduce_axis((0, 19), name="k")
    idx, val = te.compute((4, 6), lambda i, j: argmax((k.var, A[i, k, j]), axis=k), name="argmax")
    s = te.create_schedule(idx.op)
    flat_gpu(s, idx, 8)
    a = rnd((4, 19, 6), 21)
    run(s, [A, idx, val], target, [a], [a.argmax(1).astype("int32"), a.max(1)])


# ---------------------------------------------------------------- test_topi_transform.py


@pytest.mark.parametrize("target", TARGETS)
def test_concatenate_along_the_middle_axis(target):
    shapes = [(2, 3, 5), (2, 4, 5), (2, 1, 5)]
    ins = [te.placeholder(sh, name=f"x{n}") for n, sh in enumerate(shapes)]

    def body(i, j, m):
        out, base = None, 0
        bases = []
        for t in ins:
            bases.append(base)
            base += t.shape[1]
        for t, b0 in zip(ins, bases):  # the last block whose start j passed
            v = t[i, j - b0, m]
            out = v if out is None else te.if_then_else(j >= b0, v, out)
        return out

    C = te.compute((2, 8, 5), body, name="concatenate")
    s = te.create_schedule(C.op)
    flat_gpu(s, C, 16)
    arrays = [rnd(sh, 30 + n) for n, sh in enumerate(shapes)]
    run(s, [*ins, C], target, arrays, [np.concatenate(arrays, axis=1)])


@pytest.mark.parametrize("target", TARGETS)
def test_stack_and_split_into_three_outputs(target):
    # topi.stack along a new axis 1; topi.split of the stack along axis 2 at [2, 5]
    A, B = te.placeholder((3, 7), name="A"), te.placeholder((3, 7), name="B")
    st = te.compute((3, 2, 7), lambda i, k, j: te.if_then_else(k == 0, A[i, j], B[i, j]), "stack")

    def part(lo, hi, nm):
        return te.compute((3, 2, hi - lo), lambda i, k, j: st[i, k, j + lo], name=nm)

    parts = [part(0, 2, "s0"), part(2, 5, "s1"), part(5, 7, "s2")]
    s = te.create_schedule([p.op for p in parts])
    s[st].compute_inline()
    for p in parts:
        flat_gpu(s, p, 4)
    a, b = rnd((3, 7), 31), rnd((3, 7), 32)
    want = np.stack([a, b], axis=1)
    run(s, [A, B, *parts], target, [a, b], np.split(want, [2, 5], axis=2))


@pytest.mark.parametrize("target", TARGETS)
def test_flip_tile_and_repeat(target):
    # topi.flip(axis=0), topi.tile(reps=(2, 3)), topi.repeat(repeats=3, axis=1)
    A = te.placeholder((5, 4), name="A")
    F = te.compute((5, 4), lambda i, j: A[4 - i, j], name="flip")
    T = te.compute((10, 12), lambda i, j: A[i % 5, j % 4], name="tile")
    R = te.compute((5, 12), lambda i, j: A[i, j // 3], name="repeat")
    s = te.create_schedule([F.op, T.op, R.op])
    for t in (F, T, R):
        flat_gpu(s, t, 16)
    a = rnd((5, 4), 33)
    run(s, [A, F, T, R], target, [a], [a[::-1], np.tile(a, (2, 3)), np.repeat(a, 3, axis=1)])


@pytest.mark.parametrize("target", TARGETS)
def test_gather_and_gather_nd(target):
    # topi.gather(data, axis=1, indices) and topi.gather_nd(data, indices) (indices first)
    D = te.placeholder((4, 6, 3), name="data")
    I = te.placeholder((4, 5, 3), name="indices", dtype="int32")

    G = te.compute((4, 5, 3), lambda i, j, m: D[i, clip(I[i, j, m], 6), m], name="gather")
    N = te.placeholder((2, 7), name="nd_indices", dtype="int32")
    GN = te.compute((7, 3), lambda p, m: D[clip(N[0, p], 4), clip(N[1, p], 6), m], name="gather_nd")
    s = te.create_schedule([G.op, GN.op])
    flat_gpu(s, G, 16)
    flat_gpu(s, GN, 8)
    rng = np.random.default_rng(34)
    d = rnd((4, 6, 3), 35)
    idx = rng.integers(0, 6, (4, 5, 3)).astype("int32")
    nd = np.stack([rng.integers(0, 4, 7), rng.integers(0, 6, 7)]).astype("int32")
    run(s, [D, I, N, G, GN], target, [d, idx, nd], [np.take_along_axis(d, idx, 1), d[nd[0], nd[1]]])


@pytest.mark.parametrize("target", TARGETS)
def test_one_hot_sequence_mask_and_arange(target):
    # topi.one_hot(indices, 1.0, 0.0, depth=6, axis=-1), topi.sequence_mask (batch on axis
    # 1, masked with -1.5) and topi.arange(2.5, 9.0, 0.75)
    I = te.placeholder((5,), name="indices", dtype="int32")
    OH = te.compute((5, 6), lambda i, d: te.if_then_else(I[i] == d, 1.0, 0.0), name="one_hot")
    X = te.placeholder((7, 3, 2), name="data")
    L = te.placeholder((3,), name="valid_length", dtype="int32")
    SM = te.compute(
        (7, 3, 2), lambda t, b, c: te.if_then_else(t < L[b], X[t, b, c], -1.5), name="mask"
    )
    AR = te.compute((9,), lambda i: 2.5 + i.astype("float32") * 0.75, name="arange")
    s = te.create_schedule([OH.op, SM.op, AR.op])
    for t in (OH, SM, AR):
        flat_gpu(s, t, 4)
    rng = np.random.default_rng(36)
    ind = rng.integers(0, 6, 5).astype("int32")
    x = rnd((7, 3, 2), 37)
    lens = np.array([0, 4, 7], "int32")
    mask = np.where(np.arange(7)[:, None, None] < lens[None, :, None], x, -1.5)
    run(
        s,
        [I, X, L, OH, SM, AR],
        target,
        [ind, x, lens],
        [np.eye(6)[ind], mask, np.arange(2.5, 9.0, 0.75)],
    )


@pytest.mark.parametrize("target", TARGETS)
def test_layout_transform_nchw_to_nchw4c_and_back(target):
    # topi.layout_transform("NCHW", "NCHW4c") of 6 channels: the last block padded with 0
    N, C, H, W = 2, 6, 3, 5
    A = te.placeholder((N, C, H, W), name="A")
    P = te.compute(
        (N, 2, H, W, 4),
        lambda n, co, h, w, ci: te.if_then_else(
            co * 4 + ci < C, A[n, te.min(co * 4 + ci, C - 1), h, w], 0.0
        ),
        name="nchw4c",
    )
    B = te.compute((N, C, H, W), lambda n, c, h, w: P[n, c // 4, h, w, c % 4], name="nchw")
    s = te.create_schedule([P.op, B.op])
    flat_gpu(s, P, 16)
    flat_gpu(s, B, 16)
    a = rnd((N, C, H, W), 38)
    padded = np.concatenate([a, np.zeros((N, 2, H, W), "float32")], axis=1)
    run(s, [A, P, B], target, [a], [padded.reshape(N, 2, 4, H, W).transpose(0, 1, 3, 4, 2), a])


@pytest.mark.parametrize("target", TARGETS)
def test_depth_to_space_and_space_to_depth(target):
    # test_topi_depth_to_space.py (DCR) and test_topi_space_to_depth.py, block size 2
    N, C, H, W, bs = 1, 8, 3, 5, 2
    A = te.placeholder((N, C, H, W), name="A")
    oc = C // (bs * bs)
    D2S = te.compute(
        (N, oc, H * bs, W * bs),
        lambda n, c, y, x: A[n, ((y % bs) * bs + x % bs) * oc + c, y // bs, x // bs],
        name="depth_to_space",
    )
    S2D = te.compute(
        (N, C, H, W),
        lambda n, c, y, x: D2S[n, c % oc, y * bs + (c // oc) // bs, x * bs + (c // oc) % bs],
        name="space_to_depth",
    )
    s = te.create_schedule([D2S.op, S2D.op])
    flat_gpu(s, D2S, 16)
    flat_gpu(s, S2D, 16)
    a = rnd((N, C, H, W), 39)
    d2s = a.reshape(N, bs, bs, oc, H, W).transpose(0, 3, 4, 1, 5, 2).reshape(N, oc, H * bs, W * bs)
    run(s, [A, D2S, S2D], target, [a], [d2s, a])


# ---------------------------------------------------------------- topi normalisations


@pytest.mark.parametrize("target", TARGETS)
def test_batch_norm_inference_and_instance_norm(target):
    # test_topi_batch_norm.py (inference: moving mean and variance, gamma, beta on axis 1)
    # and test_topi_instance_norm.py (mean and variance over H, W per sample and channel)
    N, C, H, W, eps = 2, 3, 5, 7, 1e-5
    X = te.placeholder((N, C, H, W), name="X")
    mean, var = te.placeholder((C,), name="mean"), te.placeholder((C,), name="var")
    gamma, beta = te.placeholder((C,), name="gamma"), te.placeholder((C,), name="beta")
    BN = te.compute(
        (N, C, H, W),
        lambda n, c, h, w: (X[n, c, h, w] - mean[c]) / te.sqrt(var[c] + eps) * gamma[c] + beta[c],
        name="batch_norm",
    )
    rh, rw = te.reduce_axis((0, H), name="rh"), te.reduce_axis((0, W), name="rw")
    IM = te.compute(
        (N, C), lambda n, c: te.sum(X[n, c, rh, rw] / (H * W), axis=[rh, rw]), name="in_mean"
    )
    sh, sw = te.reduce_axis((0, H), name="sh"), te.reduce_axis((0, W), name="sw")
    IV = te.compute(
        (N, C),
        lambda n, c: te.sum(
            (X[n, c, sh, sw] - IM[n, c]) * (X[n, c, sh, sw] - IM[n, c]) / (H * W), axis=[sh, sw]
        ),
        name="in_var",
    )
    IN = te.compute(
        (N, C, H, W),
        lambda n, c, h, w: (
            (X[n, c, h, w] - IM[n, c]) / te.sqrt(IV[n, c] + eps) * gamma[c] + beta[c]
        ),
        name="instance_norm",
    )
    s = te.create_schedule([BN.op, IN.op])
    flat_gpu(s, BN, 32)
    b, t = s[IN].split(s[IN].fuse(*IN.op.axis[:2]), factor=4)
    s[IN].bind(b, thr("blockIdx.x"))
    s[IN].bind(t, thr("threadIdx.x"))
    s[IM].compute_at(s[IN], t)
    s[IV].compute_at(s[IN], t)
    x = rnd((N, C, H, W), 40)
    m, v = rnd((C,), 41), rnd((C,), 42, 0.5, 1.5)
    g, bt = rnd((C,), 43), rnd((C,), 44)
    c4 = (slice(None), None, None)
    x64 = x.astype("float64")
    bn = (x64 - m[c4]) / np.sqrt(v[c4] + eps) * g[c4] + bt[c4]
    mu, sd = x64.mean((2, 3), keepdims=True), x64.var((2, 3), keepdims=True)
    inorm = (x64 - mu) / np.sqrt(sd + eps) * g[c4] + bt[c4]
    run(s, [X, mean, var, gamma, beta, BN, IN], target, [x, m, v, g, bt], [bn, inorm])


@pytest.mark.parametrize("target", TARGETS)
def test_group_norm(target):
    # test_topi_group_norm.py: channels in groups of 2, mean and variance over each group's
    # channels and H, W, then a per-channel scale and shift
    N, C, H, W, G, eps = 2, 6, 3, 5, 3, 1e-5
    cg = C // G
    X = te.placeholder((N, C, H, W), name="X")
    gamma, beta = te.placeholder((C,), name="gamma"), te.placeholder((C,), name="beta")
    cnt = cg * H * W
    axes = [te.reduce_axis((0, e), name=nm) for e, nm in ((cg, "rc"), (H, "rh"), (W, "rw"))]
    M = te.compute(
        (N, G),
        lambda n, g: te.sum(X[n, g * cg + axes[0], axes[1], axes[2]] / cnt, axis=axes),
        name="gn_mean",
    )
    axes2 = [te.reduce_axis((0, e), name=nm) for e, nm in ((cg, "vc"), (H, "vh"), (W, "vw"))]

    def sq(n, g):
        d = X[n, g * cg + axes2[0], axes2[1], axes2[2]] - M[n, g]
        return te.sum(d * d / cnt, axis=axes2)

    V = te.compute((N, G), sq, name="gn_var")
    Y = te.compute(
        (N, C, H, W),
        lambda n, c, h, w: (
            (X[n, c, h, w] - M[n, c // cg]) / te.sqrt(V[n, c // cg] + eps) * gamma[c] + beta[c]
        ),
        name="group_norm",
    )
    s = te.create_schedule(Y.op)
    flat_gpu(s, Y, 32)
    for t in (M, V):
        flat_gpu(s, t, 4)
    x, g, b = rnd((N, C, H, W), 45), rnd((C,), 46), rnd((C,), 47)
    xg = x.astype("float64").reshape(N, G, cg, H, W)
    y = (xg - xg.mean((2, 3, 4), keepdims=True)) / np.sqrt(xg.var((2, 3, 4), keepdims=True) + eps)
    want = y.reshape(N, C, H, W) * g[:, None, None] + b[:, None, None]
    run(s, [X, gamma, beta, Y], target, [x, g, b], [want], rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_l2_normalize_over_channels(target):
    # test_topi_l2_normalize.py: x / sqrt(max(sum over axis 1 of x^2, eps))
    N, C, H, W, eps = 2, 5, 3, 4, 1e-3
    X = te.placeholder((N, C, H, W), name="X")
    rc = te.reduce_axis((0, C), name="rc")
    SS = te.compute(
        (N, H, W), lambda n, h, w: te.sum(X[n, rc, h, w] * X[n, rc, h, w], axis=rc), "ss"
    )
    Y = te.compute(
        (N, C, H, W),
        lambda n, c, h, w: X[n, c, h, w] / te.sqrt(te.max(SS[n, h, w], eps)),
        name="l2_normalize",
    )
    s = te.create_schedule(Y.op)
    n, c, h, w = s[Y].op.axis
    s[Y].reorder(n, h, w, c)
    hw = s[Y].fuse(h, w)
    s[Y].bind(n, thr("blockIdx.x"))
    s[Y].bind(hw, thr("threadIdx.x"))
    s[SS].compute_at(s[Y], hw)
    x = rnd((N, C, H, W), 48)
    x[0, :, 0, 0] = 1e-3  # a position below eps
    x64 = x.astype("float64")
    want = x64 / np.sqrt(np.maximum((x64 * x64).sum(1, keepdims=True), eps))
    run(s, [X, Y], target, [x], [want])


# ---------------------------------------------------------------- topi image, pooling, activations


@pytest.mark.parametrize("target", TARGETS)
def test_resize_bilinear_align_corners(target):
    # test_topi_image.py's resize2d (NCHW, "linear", "align_corners") from 5x7 to 9x11
    N, C, H, W, OH, OW = 1, 2, 5, 7, 9, 11
    A = te.placeholder((N, C, H, W), name="A")
    sy, sx = (H - 1) / (OH - 1), (W - 1) / (OW - 1)

    def body(n, c, y, x):
        fy, fx = y.astype("float32") * sy, x.astype("float32") * sx
        y0, x0 = te.floor(fy).astype("int32"), te.floor(fx).astype("int32")
        dy, dx = fy - y0.astype("float32"), fx - x0.astype("float32")
        # TOPI clamps every source index into the image (the IR text then proves it in range)
        y1, x1 = te.max(te.min(y0 + 1, H - 1), 0), te.max(te.min(x0 + 1, W - 1), 0)
        y0, x0 = te.max(te.min(y0, H - 1), 0), te.max(te.min(x0, W - 1), 0)
        top = A[n, c, y0, x0] * (1.0 - dx) + A[n, c, y0, x1] * dx
        bottom = A[n, c, y1, x0] * (1.0 - dx) + A[n, c, y1, x1] * dx
        return top * (1.0 - dy) + bottom * dy

    R = te.compute((N, C, OH, OW), body, name="resize")
    s = te.create_schedule(R.op)
    flat_gpu(s, R, 32)
    a = rnd((N, C, H, W), 49)
    fy, fx = np.arange(OH) * sy, np.arange(OW) * sx
    y0, x0 = np.floor(fy).astype(int), np.floor(fx).astype(int)
    y1, x1 = np.minimum(y0 + 1, H - 1), np.minimum(x0 + 1, W - 1)
    dy, dx = (fy - y0)[:, None], (fx - x0)[None, :]
    a64 = a.astype("float64")
    top = a64[:, :, y0][:, :, :, x0] * (1 - dx) + a64[:, :, y0][:, :, :, x1] * dx
    bottom = a64[:, :, y1][:, :, :, x0] * (1 - dx) + a64[:, :, y1][:, :, :, x1] * dx
    run(s, [A, R], target, [a], [top * (1 - dy) + bottom * dy], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_pool1d_max_and_pool3d_avg(target):
    # test_topi_pooling.py's pool1d (NCW, max, kernel 3, stride 2, pad 1) and pool3d
    # (NCDHW, avg, kernel 2, stride 2, count_include_pad with pad 1)
    A1 = te.placeholder((2, 3, 11), name="A1")
    P1 = ts.pad(A1, (0, 0, 1), (0, 0, 1), pad_value=te.min_value("float32"), name="pad1")
    r = te.reduce_axis((0, 3), name="r")
    M1 = te.compute((2, 3, 6), lambda n, c, w: te.max(P1[n, c, w * 2 + r], axis=r), "pool1d")
    A3 = te.placeholder((1, 2, 5, 5, 7), name="A3")
    P3 = ts.pad(A3, (0, 0, 1, 1, 1), (0, 0, 1, 1, 1), name="pad3")
    rd, rh, rw = (te.reduce_axis((0, 2), name=nm) for nm in ("rd", "rh", "rw"))
    M3 = te.compute(
        (1, 2, 3, 3, 4),
        lambda n, c, d, h, w: te.sum(
            P3[n, c, d * 2 + rd, h * 2 + rh, w * 2 + rw] / 8.0, axis=[rd, rh, rw]
        ),
        name="pool3d",
    )
    s = te.create_schedule([M1.op, M3.op])
    s[P1].compute_inline()
    s[P3].compute_inline()
    flat_gpu(s, M1, 8)
    flat_gpu(s, M3, 16)
    a1, a3 = rnd((2, 3, 11), 50), rnd((1, 2, 5, 5, 7), 51)
    p1 = np.pad(a1, [(0, 0), (0, 0), (1, 1)], constant_values=-np.inf)
    want1 = np.stack([p1[..., w * 2 : w * 2 + 3].max(-1) for w in range(6)], -1)
    p3 = np.pad(a3.astype("float64"), [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)])
    want3 = p3[..., :6, :6, :8].reshape(1, 2, 3, 2, 3, 2, 4, 2).mean((3, 5, 7))
    run(s, [A1, A3, M1, M3], target, [a1, a3], [want1, want3])


@pytest.mark.parametrize("target", TARGETS)
def test_leaky_relu_and_prelu(target):
    # test_topi_relu.py: leaky_relu(alpha=0.1) and prelu with a slope per channel (axis 1)
    X = te.placeholder((3, 5, 7), name="X")
    slope = te.placeholder((5,), name="slope")
    LR = te.compute((3, 5, 7), lambda *i: te.if_then_else(X(*i) > 0, X(*i), X(*i) * 0.1), "leaky")
    PR = te.compute(
        (3, 5, 7),
        lambda n, c, w: te.if_then_else(X[n, c, w] > 0, X[n, c, w], X[n, c, w] * slope[c]),
        name="prelu",
    )
    s = te.create_schedule([LR.op, PR.op])
    flat_gpu(s, LR, 16)
    flat_gpu(s, PR, 16)
    x, sl = rnd((3, 5, 7), 52), rnd((5,), 53)
    x64 = x.astype("float64")
    want = [np.where(x64 > 0, x64, x64 * 0.1), np.where(x64 > 0, x64, x64 * sl[None, :, None])]
    run(s, [X, slope, LR, PR], target, [x, sl], want)


@pytest.mark.parametrize("target", TARGETS)
def test_cumsum_and_exclusive_cumsum_as_scans(target):
    # test_topi_scan.py's cumsum along axis 0 (TOPI writes it with the IR builder; here the
    # te.scan the tutorial uses), and the exclusive form (the running sum before each row)
    T, M = 9, 13
    X = te.placeholder((T, M), name="X")
    state = te.placeholder((T, M), name="state")
    init = te.compute((1, M), lambda _, j: X[0, j], name="init")
    update = te.compute((T, M), lambda t, j: state[t - 1, j] + X[t, j], name="update")
    cs = te.scan(init, update, state, inputs=[X], name="cumsum")
    EX = te.compute((T, M), lambda t, j: cs[t, j] - X[t, j], name="exclusive")
    s = te.create_schedule(EX.op)
    for part in (init, update):
        bx, tx = s[part].split(s[part].op.axis[1], factor=4)
        s[part].bind(bx, thr("blockIdx.x"))
        s[part].bind(tx, thr("threadIdx.x"))
    flat_gpu(s, EX, 16)
    x = rnd((T, M), 54)
    c = np.cumsum(x.astype("float64"), axis=0)
    run(s, [X, cs, EX], target, [x], [c, c - x])


@pytest.mark.parametrize("target", TARGETS)
def test_nll_loss_mean_with_weights_and_an_ignored_index(target):
    # test_topi_loss.py: nll_loss(predictions, targets, weights, "mean", ignore_index=2)
    N, C, ignore = 7, 5, 2
    P = te.placeholder((N, C), name="predictions")
    Tg = te.placeholder((N,), name="targets", dtype="int32")
    Wt = te.placeholder((C,), name="weights")
    loss = te.compute(
        (N,),
        lambda i: te.if_then_else(Tg[i] == ignore, 0.0, -P[i, clip(Tg[i], C)] * Wt[clip(Tg[i], C)]),
        name="loss",
    )
    wsum = te.compute(
        (N,), lambda i: te.if_then_else(Tg[i] == ignore, 0.0, Wt[clip(Tg[i], C)]), "w"
    )
    k = te.reduce_axis((0, N), name="k")
    total = te.compute((1,), lambda _: te.sum(loss[k], axis=k), name="total")
    k2 = te.reduce_axis((0, N), name="k2")
    norm = te.compute((1,), lambda _: te.sum(wsum[k2], axis=k2), name="norm")
    out = te.compute((), lambda: total[0] / norm[0], name="nll_loss")
    s = te.create_schedule(out.op)
    s[loss].compute_inline()
    s[wsum].compute_inline()
    p, w = rnd((N, C), 55), rnd((C,), 56, 0.5, 1.5)
    tg = np.array([0, 2, 4, 1, 2, 3, 4], "int32")
    keep = tg != ignore
    want = -(p[np.arange(N), tg] * w[tg])[keep].sum(dtype="float64") / w[tg][keep].sum()
    run(s, [P, Tg, Wt, out], target, [p, tg, w], [np.array(want)])


# ---------------------------------------------------------------- low_level_custom_pass.py


@pytest.mark.parametrize("target", TARGETS)
def test_low_level_custom_pass_is_refused_and_the_lowered_ir_can_be_walked(target):
    # the tutorial's pass finds the loops (post_order_visit) and rewrites them (ir_transform)
    # inside the lowering via PassContext(config={"tir.add_lower_pass": ...}): refused, each
    # name with what to do instead, which is shown to work here
    from tensorsched.ir import stmt as S
    from tensorsched.ir.visitor import Visitor

    n = 37
    a, b = te.placeholder((n,), name="a"), te.placeholder((n,), name="b")
    c = te.compute((n,), lambda i: a[i] + b[i], name="c")
    s = te.create_schedule(c.op)
    xo, xi = s[c].split(c.op.axis[0], factor=4)
    func = ts.lower(s, [a, b, c])
    for fn in (
        lambda: ts.tir.stmt_functor.post_order_visit(func.body, print),
        lambda: ts.tir.stmt_functor.ir_transform(func.body, None, print, ["tir.For"]),
        lambda: ts.tir.transform.prim_func_pass(print, opt_level=0),
        lambda: ts.transform.PassContext(config={"tir.add_lower_pass": []}),
    ):
        refused(fn, ts.LoweringError, "custom lowering passes are not supported", "Visitor")
    loops = []

    class Loops(Visitor):
        def visit_For(self, f):
            loops.append(f.var.name)
            self.generic_visit(f)

    Loops().visit(func.body)
    assert loops == ["i.outer", "i.inner"] and isinstance(func.body, S.Stmt)
    f = ts.build(func, target=target)
    x, y = rnd((n,), 60), rnd((n,), 61)
    out = np.full((n,), np.nan, "float32")
    f(x, y, out)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
