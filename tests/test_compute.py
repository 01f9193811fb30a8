"""The compute language, checked numerically against numpy through the python target.

Sizes are odd (primes) so that nothing lines up by accident.
"""

import numpy as np
from ts_check import check, gemm, gemm_ref

import tensorsched as ts


def default(*outs):
    return ts.create_schedule([o.op for o in outs])


# ---------------------------------------------------------------- placeholder / compute / indexing


def test_elementwise_add_2d():
    A = ts.placeholder((13, 7), name="A")
    B = ts.placeholder((13, 7), name="B")
    C = ts.compute((13, 7), lambda i, j: A[i, j] + B[i, j] * 2.0 - 1.0, name="C")
    check(default(C), [A, B, C], lambda a, b: a + b * 2 - 1)


def test_index_arithmetic_transpose_and_shift():
    A = ts.placeholder((7, 13), name="A")
    C = ts.compute((13, 5), lambda i, j: A[j + 2, 12 - i], name="C")
    check(default(C), [A, C], lambda a: a[2:7, ::-1].T)


def test_chained_indexing_equals_tuple_indexing():
    A = ts.placeholder((5, 7, 3), name="A")
    C1 = ts.compute((5, 7, 3), lambda i, j, k: A[i][j][k] * 3.0, name="C")
    C2 = ts.compute((5, 7, 3), lambda i, j, k: A[i, j, k] * 3.0, name="C")
    C3 = ts.compute((5, 7, 3), lambda i, j, k: A[i][j, k] * 3.0, name="C")
    texts = [str(ts.lower(default(c), [A, c])) for c in (C1, C2, C3)]
    assert texts[0] == texts[1] == texts[2]
    check(default(C1), [A, C1], lambda a: 3 * a)
    check(default(C3), [A, C3], lambda a: 3 * a)


def test_compute_with_varargs_lambda():
    A = ts.placeholder((3, 5, 7), name="A")
    C = ts.compute((3, 5, 7), lambda *idx: A[idx] + 1.0, name="C")
    check(default(C), [A, C], lambda a: a + 1)


def test_one_dimensional_and_four_dimensional():
    A = ts.placeholder((37,), name="A")
    C = ts.compute((37,), lambda i: A[36 - i] * A[i], name="C")
    check(default(C), [A, C], lambda a: a[::-1] * a)
    X = ts.placeholder((2, 3, 5, 7), name="X")
    Y = ts.compute(
        (2, 3, 5, 7), lambda n, c, h, w: X[n, c, h, w] * (c + 1).astype("float32"), name="Y"
    )
    check(default(Y), [X, Y], lambda x: x * np.arange(1, 4).reshape(1, 3, 1, 1))


def test_multiple_outputs_share_an_input():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * 2.0, name="B")
    C = ts.compute((13, 7), lambda i, j: A[i, j] + 5.0, name="C")
    check(default(B, C), [A, B, C], lambda a: (2 * a, a + 5))


def test_stage_chain_tensor_of_tensors():
    A = ts.placeholder((13, 7), name="A")
    B = ts.compute((13, 7), lambda i, j: A[i, j] * A[i, j], name="B")
    C = ts.compute((7, 13), lambda i, j: B[j, i] + A[j, i], name="C")
    D = ts.compute((7,), lambda i: C[i, 0] - C[i, 12], name="D")
    check(default(D), [A, D], lambda a: (a * a + a).T[:, 0] - (a * a + a).T[:, 12])


# ---------------------------------------------------------------- reductions


def test_sum_one_axis():
    A = ts.placeholder((13, 37), name="A")
    k = ts.reduce_axis((0, 37), name="k")
    C = ts.compute((13,), lambda i: ts.sum(A[i, k], axis=k), name="C")
    check(default(C), [A, C], lambda a: a.sum(axis=1))


def test_sum_gemm_odd():
    A, B, C = gemm(13, 7, 37)
    check(default(C), [A, B, C], gemm_ref)


def test_sum_several_axes():
    A = ts.placeholder((5, 7, 3, 2), name="A")
    k1 = ts.reduce_axis((0, 7), name="k1")
    k2 = ts.reduce_axis((0, 2), name="k2")
    C = ts.compute((5, 3), lambda i, j: ts.sum(A[i, k1, j, k2], axis=[k1, k2]), name="C")
    check(default(C), [A, C], lambda a: a.sum(axis=(1, 3)))


def test_sum_reduce_axis_not_starting_at_zero():
    A = ts.placeholder((7, 13), name="A")
    k = ts.reduce_axis((3, 11), name="k")
    C = ts.compute((7,), lambda i: ts.sum(A[i, k], axis=k), name="C")
    check(default(C), [A, C], lambda a: a[:, 3:11].sum(axis=1))


def test_sum_with_where():
    A = ts.placeholder((7, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((7,), lambda i: ts.sum(A[i, k], axis=k, where=k <= i), name="C")
    check(default(C), [A, C], lambda a: np.tril(a).sum(axis=1))


def test_sum_with_where_of_two_axes():
    A = ts.placeholder((5, 7, 3), name="A")
    k1 = ts.reduce_axis((0, 7), name="k1")
    k2 = ts.reduce_axis((0, 3), name="k2")
    C = ts.compute(
        (5,),
        lambda i: ts.sum(A[i, k1, k2], axis=[k1, k2], where=ts.any((k1 % 2).equal(0), k2 > 1)),
        name="C",
    )

    def ref(a):
        m = (np.arange(7)[:, None] % 2 == 0) | (np.arange(3)[None, :] > 1)
        return (a * m[None]).sum(axis=(1, 2))

    check(default(C), [A, C], ref)


def test_max_reduction():
    A = ts.placeholder((13, 7), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    C = ts.compute((13,), lambda i: ts.max(A[i, k], axis=k), name="C")
    check(default(C), [A, C], lambda a: a.max(axis=1))


def test_min_reduction_positional_axis_and_two_axes():
    A = ts.placeholder((3, 7, 5), name="A")
    k = ts.reduce_axis((0, 7), name="k")
    r = ts.reduce_axis((0, 5), name="r")
    C = ts.compute((3,), lambda i: ts.min(A[i, k, r], [k, r]), name="C")
    check(default(C), [A, C], lambda a: a.min(axis=(1, 2)))


def test_max_reduction_with_where():
    A = ts.placeholder((7, 13), name="A")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((7,), lambda i: ts.max(A[i, k], axis=k, where=k >= 2 * i - 1), name="C")

    def ref(a):
        return np.array([a[i, max(2 * i - 1, 0) :].max() for i in range(7)])

    check(default(C), [A, C], ref)


def test_reduction_of_an_expression():
    A = ts.placeholder((7, 13), name="A")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((7,), lambda i: ts.sum(ts.exp(A[i, k]) * 0.5 + A[i, 12 - k], axis=k), name="C")
    check(default(C), [A, C], lambda a: (np.exp(a) * 0.5 + a[:, ::-1]).sum(axis=1))


def test_int32_sum_reduction():
    A = ts.placeholder((5, 13), name="A", dtype="int32")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((5,), lambda i: ts.sum(A[i, k] * (k - 6), axis=k), name="C")
    assert C.dtype == "int32"
    check(default(C), [A, C], lambda a: (a * (np.arange(13) - 6)).sum(axis=1))


def test_int32_max_and_min_reduction():
    A = ts.placeholder((5, 13), name="A", dtype="int32")
    k = ts.reduce_axis((0, 13), name="k")
    C = ts.compute((5,), lambda i: ts.max(A[i, k], axis=k), name="C")
    D = ts.compute((5,), lambda i: ts.min(A[i, k], axis=k), name="D")
    check(default(C), [A, C], lambda a: a.max(axis=1))
    check(default(D), [A, D], lambda a: a.min(axis=1))


# ---------------------------------------------------------------- constants, conditions


def test_const_float_and_int():
    A = ts.placeholder((7,), name="A")
    C = ts.compute((7,), lambda i: A[i] * ts.const(2.5) + ts.const(3, "float32"), name="C")
    check(default(C), [A, C], lambda a: a * 2.5 + 3)
    D = ts.compute((7,), lambda i: ts.const(4) * i - ts.const(9, "int32"), name="D")
    s = default(D)
    mod = ts.build(s, [D], target="python")
    d = np.full(7, -1, "int32")
    mod(d)
    np.testing.assert_array_equal(d, 4 * np.arange(7) - 9)


def test_const_dtype():
    assert ts.const(1.5).dtype == "float32"
    assert ts.const(2).dtype == "int32"
    assert ts.const(1, "float16").dtype == "float16"


def test_if_then_else_with_all_and_any():
    A = ts.placeholder((13, 7), name="A")
    C = ts.compute(
        (13, 7),
        lambda i, j: ts.if_then_else(
            ts.all(i >= 2, i < 11, j > 0),
            A[i, j],
            ts.if_then_else(ts.any(i.equal(0), j.equal(6)), 1.0, -A[i, j] * 3.0),
        ),
        name="C",
    )

    def ref(a):
        i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
        inner = (i >= 2) & (i < 11) & (j > 0)
        edge = (i == 0) | (j == 6)
        return np.where(inner, a, np.where(edge, 1.0, -3 * a))

    check(default(C), [A, C], ref)


def test_if_then_else_on_data():
    A = ts.placeholder((37,), name="A")
    C = ts.compute((37,), lambda i: ts.if_then_else(A[i] > 0.0, A[i], A[i] * 0.1), name="C")
    check(default(C), [A, C], lambda a: np.where(a > 0, a, 0.1 * a))


def test_if_then_else_out_of_range_read_is_guarded():
    A = ts.placeholder((7,), name="A")
    C = ts.compute((9,), lambda i: ts.if_then_else(ts.all(i >= 1, i < 8), A[i - 1], 0.0), name="C")
    check(default(C), [A, C], lambda a: np.pad(a, 1))


def test_logical_not_and_operators():
    A = ts.placeholder((13,), name="A")
    C = ts.compute(
        (13,), lambda i: ts.if_then_else(~((i > 3) & (i < 9)) | i.equal(5), A[i], -A[i]), name="C"
    )

    def ref(a):
        i = np.arange(13)
        return np.where(~((i > 3) & (i < 9)) | (i == 5), a, -a)

    check(default(C), [A, C], ref)


# ---------------------------------------------------------------- math intrinsics


def test_exp_sqrt_sigmoid():
    A = ts.placeholder((13, 7), name="A")
    E = ts.compute((13, 7), lambda i, j: ts.exp(A[i, j]), name="E")
    Q = ts.compute((13, 7), lambda i, j: ts.sqrt(A[i, j] * A[i, j] + 1.0), name="Q")
    G = ts.compute((13, 7), lambda i, j: ts.sigmoid(A[i, j] * 4.0), name="G")
    check(default(E), [A, E], np.exp)
    check(default(Q), [A, Q], lambda a: np.sqrt(a * a + 1))
    check(default(G), [A, G], lambda a: 1 / (1 + np.exp(-4 * a)))


def test_log_tanh_fabs_power():
    A = ts.placeholder((13,), name="A")
    C = ts.compute(
        (13,),
        lambda i: ts.log(ts.fabs(A[i])) + ts.tanh(A[i]) + ts.power(ts.fabs(A[i]), 1.5),
        name="C",
    )
    check(default(C), [A, C], lambda a: np.log(np.abs(a)) + np.tanh(a) + np.abs(a) ** 1.5)


def test_elementwise_max_min():
    A = ts.placeholder((13, 7), name="A")
    B = ts.placeholder((13, 7), name="B")
    C = ts.compute((13, 7), lambda i, j: ts.max(A[i, j], B[i, j]) - ts.min(A[i, j], 0.0), name="C")
    check(default(C), [A, B, C], lambda a, b: np.maximum(a, b) - np.minimum(a, 0))


def test_elementwise_max_min_int_indices():
    A = ts.placeholder((13,), name="A")
    C = ts.compute((13,), lambda i: A[ts.min(i + 3, 12)] + A[ts.max(i - 4, 0)], name="C")
    idx = np.arange(13)
    check(default(C), [A, C], lambda a: a[np.minimum(idx + 3, 12)] + a[np.maximum(idx - 4, 0)])


def test_relu_epilogue_on_gemm():
    A, B, C = gemm(7, 13, 5)
    R = ts.compute(C.shape, lambda i, j: ts.max(C[i, j], ts.const(0.0)), name="R")
    check(default(R), [A, B, R], lambda a, b: np.maximum(a @ b, 0))


# ---------------------------------------------------------------- dtypes and casts


def test_astype_float_to_int_truncates():
    A = ts.placeholder((37,), name="A")
    C = ts.compute((37,), lambda i: (A[i] * 7.0).astype("int32"), name="C")
    check(default(C), [A, C], lambda a: np.trunc(a * 7).astype(np.int32))


def test_astype_int_to_float():
    A = ts.placeholder((13,), name="A", dtype="int32")
    C = ts.compute((13,), lambda i: A[i].astype("float32") / 3.0 + i.astype("float32"), name="C")
    check(default(C), [A, C], lambda a: a / 3.0 + np.arange(13))


def test_float16_elementwise_and_cast():
    A = ts.placeholder((13, 7), name="A", dtype="float16")
    C = ts.compute((13, 7), lambda i, j: A[i, j] * ts.const(2.0, "float16") + A[i, 6 - j], name="C")
    assert C.dtype == "float16"
    check(default(C), [A, C], lambda a: 2 * a + a[:, ::-1])
    D = ts.compute((13, 7), lambda i, j: A[i, j].astype("float32") * 3.0, name="D")
    assert D.dtype == "float32"
    check(default(D), [A, D], lambda a: 3 * a)
    H = ts.placeholder((7,), name="H")
    E = ts.compute((7,), lambda i: H[i].astype("float16"), name="E")
    check(default(E), [H, E], lambda h: h.astype(np.float16))


def test_float16_gemm_with_float32_accumulation():
    M, N, K = 7, 5, 13
    A = ts.placeholder((M, K), name="A", dtype="float16")
    B = ts.placeholder((K, N), name="B", dtype="float16")
    k = ts.reduce_axis((0, K), name="k")
    C = ts.compute(
        (M, N),
        lambda i, j: ts.sum(A[i, k].astype("float32") * B[k, j].astype("float32"), axis=k),
        name="C",
    )
    assert C.dtype == "float32"
    check(default(C), [A, B, C], gemm_ref)


def test_float16_gemm():
    A, B, C = gemm(7, 5, 13, dtype="float16")
    assert C.dtype == "float16"
    check(default(C), [A, B, C], gemm_ref)


def test_int32_elementwise():
    A = ts.placeholder((13, 7), name="A", dtype="int32")
    B = ts.placeholder((13, 7), name="B", dtype="int32")
    C = ts.compute((13, 7), lambda i, j: A[i, j] * B[i, j] - A[i, j] + i * j, name="C")
    i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
    check(default(C), [A, B, C], lambda a, b: a * b - a + i * j)


def test_mixed_int_float_promotes_to_float():
    A = ts.placeholder((7,), name="A", dtype="int32")
    B = ts.placeholder((7,), name="B")
    C = ts.compute((7,), lambda i: A[i] + B[i], name="C")
    assert C.dtype == "float32"
    check(default(C), [A, B, C], lambda a, b: a + b)


# ---------------------------------------------------------------- pad


def test_pad_2d_symmetric():
    A = ts.placeholder((5, 7), name="A")
    P = ts.pad(A, [1, 2], name="P")
    assert P.shape == (7, 11)
    check(default(P), [A, P], lambda a: np.pad(a, ((1, 1), (2, 2))))


def test_pad_asymmetric_with_value():
    A = ts.placeholder((5, 7), name="A")
    P = ts.pad(A, [0, 3], [2, 1], pad_value=-2.5, name="P")
    assert P.shape == (7, 11)
    check(default(P), [A, P], lambda a: np.pad(a, ((0, 2), (3, 1)), constant_values=-2.5))


def test_pad_4d_inlined_into_consumer():
    A = ts.placeholder((1, 2, 5, 7), name="A")
    P = ts.pad(A, [0, 0, 1, 1], name="P")
    C = ts.compute((1, 2, 5, 7), lambda n, c, h, w: P[n, c, h, w] + P[n, c, h + 2, w + 2], name="C")
    s = default(C)
    s[P].compute_inline()
    check(
        s,
        [A, C],
        lambda a: (
            np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))[:, :, :5, :7]
            + np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))[:, :, 2:, 2:]
        ),
    )


# ---------------------------------------------------------------- floor division and modulo


def test_floordiv_and_mod_negative_operands():
    C = ts.compute((13,), lambda i: (i - 3) // 2, name="C")
    D = ts.compute((13,), lambda i: (i - 3) % 2, name="D")
    E = ts.compute((13,), lambda i: (i * 5 - 31) // 4 + (7 - i * 3) % 5, name="E")
    i = np.arange(13)
    for T, ref in ((C, (i - 3) // 2), (D, (i - 3) % 2), (E, (i * 5 - 31) // 4 + (7 - i * 3) % 5)):
        check(default(T), [T], lambda: ref)


def test_floordiv_mod_negative_divisor():
    C = ts.compute((13,), lambda i: (i - 5) // -3 * 100 + (i - 5) % -3, name="C")
    i = np.arange(13)
    check(default(C), [C], lambda: (i - 5) // -3 * 100 + (i - 5) % -3)


def test_floordiv_mod_by_a_variable():
    C = ts.compute((13, 5), lambda i, j: (i - 6) // (j + 1) * 10 + (i - 6) % (j + 1), name="C")
    i, j = np.meshgrid(np.arange(13), np.arange(5), indexing="ij")
    check(default(C), [C], lambda: (i - 6) // (j + 1) * 10 + (i - 6) % (j + 1))


def test_floordiv_mod_in_indices():
    A = ts.placeholder((7, 2), name="A")
    C = ts.compute((13,), lambda i: A[(i + 1) // 2, (i + 1) % 2] * 2.0, name="C")
    i = np.arange(13)
    check(default(C), [A, C], lambda a: 2 * a[(i + 1) // 2, (i + 1) % 2])


def test_floordiv_mod_reconstruct_index():
    A = ts.placeholder((37,), name="A")
    C = ts.compute((37,), lambda i: A[(i // 5) * 5 + i % 5], name="C")
    check(default(C), [A, C], lambda a: a)
    # the simplifier folds (i//5)*5 + i%5 back to i
    assert "//" not in str(ts.lower(default(C), [A, C]))


def test_unpack_like_output_of_packed_layout():
    # conv-style packing: P[c // 4, h, c % 4] -> back to (c, h)
    A = ts.placeholder((13, 5), name="A")
    P = ts.compute(
        (4, 5, 4),
        lambda co, h, vc: ts.if_then_else(co * 4 + vc < 13, A[ts.min(co * 4 + vc, 12), h], 0.0),
        name="P",
    )
    C = ts.compute((13, 5), lambda c, h: P[c // 4, h, c % 4] + 1.0, name="C")
    check(default(C), [A, C], lambda a: a + 1)
