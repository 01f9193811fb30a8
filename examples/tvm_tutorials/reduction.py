"""TVM's reduction tutorial, redone for tensorsched: row sums of an n x m matrix of symbolic
size, scheduled five ways, then reductions of your own with ``ts.comm_reducer``.

1. the default loop nest;
2. the rows split over work-groups and work-items, the reduction split by 16;
3. ``rfactor``: the reduction split into 16 partial sums (a stage of its own) and their sum;
4. a cross-thread reduction: the reduction axis bound to ``threadIdx.x``, so the 16 partial
   sums of a row are computed by 16 work-items and combined in ``__local`` memory;
5. ``ts.comm_reducer``: a product and an argmax over (index, value) pairs.

Every kernel runs at sizes that no factor divides and is checked against numpy.

    python examples/tvm_tutorials/reduction.py [--target opencl|python|llvm] [--quiet]
"""

import argparse

import numpy as np

import tensorsched as ts

SIZES = [(37, 53), (64, 16)]  # (n rows, m columns)


def row_sum():
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, m), name="A")
    k = ts.reduce_axis((0, m), "k")
    B = ts.compute((n,), lambda i: ts.sum(A[i, k], axis=k), name="B")
    return A, B


def default():
    A, B = row_sum()
    return ts.create_schedule(B.op), [A, B]


def split_and_bind():
    A, B = row_sum()
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis("threadIdx.x"))
    return s, [A, B]


def rfactor():
    A, B = row_sum()
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    # BF[ki, i] = the sum over ko of A[i, ko*16 + ki]; B[i] = the sum of BF[:, i]
    BF = s.rfactor(B, ki)
    print(f"   rfactor made the stage {BF.op.name} of shape {tuple(map(str, BF.shape))}")
    return s, [A, B]


def cross_thread():
    A, B = row_sum()
    s = ts.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis("threadIdx.y"))
    tx = ts.thread_axis("threadIdx.x")
    # the 16 partial sums of a row: one work-item each, combined across the work-items
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))  # work-item 0 of the 16 stores the row's sum
    return s, [A, B]


def product():
    """A reduction of your own: the product of each row (identity 1)."""
    prod = ts.comm_reducer(lambda x, y: x * y, lambda t: ts.const(1, dtype=t), name="prod")
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, m), name="A")
    k = ts.reduce_axis((0, m), "k")
    B = ts.compute((n,), lambda i: prod(A[i, k], axis=k), name="B")
    s = ts.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].bind(xo, ts.thread_axis("blockIdx.x"))
    s[B].bind(xi, ts.thread_axis("threadIdx.x"))
    return s, [A, B]


def argmax():
    """A reduction over (index, value) pairs: the column of each row's largest value."""

    def combine(x, y):
        take_x = x[1] >= y[1]
        return ts.if_then_else(take_x, x[0], y[0]), ts.if_then_else(take_x, x[1], y[1])

    def identity(index_dtype, value_dtype):
        return ts.const(-1, index_dtype), ts.min_value(value_dtype)

    argmax_reducer = ts.comm_reducer(combine, identity, name="argmax")
    n, m = ts.var("n"), ts.var("m")
    A = ts.placeholder((n, m), name="A")
    k = ts.reduce_axis((0, m), "k")
    # one op with two outputs: the index (k itself) and the value
    T_idx, T_val = ts.compute((n,), lambda i: argmax_reducer((k, A[i, k]), axis=k), name="T")
    s = ts.create_schedule(T_idx.op)
    return s, [A, T_idx, T_val]


SECTIONS = [
    ("default schedule", default),
    ("split and bind", split_and_bind),
    ("rfactor", rfactor),
    ("cross-thread reduction", cross_thread),
    ("comm_reducer: product", product),
    ("comm_reducer: argmax", argmax),
]


def run(title, s, args, target, rng):
    """Build once, run at each of ``SIZES``, return the worst relative error against numpy."""
    func = ts.build(s, args, target=target)
    dev = ts.opencl(0) if target == "opencl" else ts.cpu(0)
    worst = 0.0
    for n, m in SIZES:
        if "product" in title:  # values near 1, so that the products stay in range
            a = (1 + (rng.random((n, m)) - 0.5) / 8).astype(np.float32)
        else:
            a = rng.random((n, m), dtype=np.float32)
        # outputs poisoned with a value no result has
        outs = [ts.nd.array(np.full(n, -7, t.dtype), dev) for t in args[1:]]
        func(ts.nd.array(a, dev), *outs)
        if "argmax" in title:
            ok = np.array_equal(outs[0].numpy(), a.argmax(axis=1)) and np.array_equal(
                outs[1].numpy(), a.max(axis=1)
            )
            worst = max(worst, 0.0 if ok else np.inf)
            continue
        a64 = a.astype(np.float64)
        want = a64.prod(axis=1) if "product" in title else a64.sum(axis=1)
        worst = max(worst, float(np.max(np.abs(outs[0].numpy() - want) / np.abs(want))))
    return worst


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="opencl", help="opencl, llvm (CPU OpenCL) or python")
    p.add_argument("--quiet", action="store_true", help="leave out the lowered IR")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    failed = []
    for title, make in SECTIONS:
        print(f"== {title} ==")
        s, targs = make()
        if not args.quiet:
            print(ts.lower(s, targs, simple_mode=True))
        err = run(title, s, targs, args.target, rng)
        print(f"-- {title}: max relative error against numpy at (n, m) in {SIZES}: {err:.1e}\n")
        if not err <= 1e-5:
            failed.append(title)
    if failed:
        raise SystemExit(f"results differ from numpy: {', '.join(failed)}")


if __name__ == "__main__":
    main()
