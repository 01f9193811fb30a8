"""TVM's scan tutorial, redone for tensorsched: recurrences along the first axis with
``ts.scan``.

A scan has an initial stage (the first rows), an update stage (row t from the state's earlier
rows) and a state placeholder standing for the scan's own result. The example computes the
cumulative sum down the rows of an m x n matrix (symbolic m and n), first as plain loops, then
with the columns spread over work-groups and work-items, and then with an update made of two
stages (the earlier row doubled, then the new row added). Each is checked against numpy at
sizes no factor divides.

    python examples/tvm_tutorials/scan.py [--target opencl|python|llvm] [--quiet]
"""

import argparse

import numpy as np

import tensorsched as ts

SIZES = [(5, 300), (17, 64)]  # (m rows, n columns)
NUM_THREAD = 64


def cumsum():
    m, n = ts.var("m"), ts.var("n")
    X = ts.placeholder((m, n), name="X")
    state = ts.placeholder((m, n), name="state")
    init = ts.compute((1, n), lambda _, i: X[0, i], name="init")
    update = ts.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    res = ts.scan(init, update, state, inputs=[X])
    return X, init, update, res


def plain():
    X, init, update, res = cumsum()
    return ts.create_schedule(res.op), [X, res]


def bound():
    """Each column is one work-item's: the scan's steps run one after another, the columns
    side by side (a work-item reads only the column it computed, so no barrier is needed)."""
    X, init, update, res = cumsum()
    s = ts.create_schedule(res.op)
    for stage in (init, update):
        xo, xi = s[stage].split(stage.op.axis[1], factor=NUM_THREAD)
        s[stage].bind(xo, ts.thread_axis("blockIdx.x"))
        s[stage].bind(xi, ts.thread_axis("threadIdx.x"))
    return s, [X, res]


def two_stage_update():
    """The update made of two stages: ``doubled`` (the earlier row times 2) feeds ``update``;
    scheduling ``doubled`` inside the update's loop keeps it per element."""
    m, n = ts.var("m"), ts.var("n")
    X = ts.placeholder((m, n), name="X")
    state = ts.placeholder((m, n), name="state")
    init = ts.compute((1, n), lambda _, i: X[0, i], name="init")
    doubled = ts.compute((m, n), lambda t, i: state[t - 1, i] * 2, name="doubled")
    update = ts.compute((m, n), lambda t, i: doubled[t, i] + X[t, i], name="update")
    res = ts.scan(init, update, state, inputs=[X])
    s = ts.create_schedule(res.op)
    xo, xi = s[update].split(update.op.axis[1], factor=NUM_THREAD)
    s[update].bind(xo, ts.thread_axis("blockIdx.x"))
    s[update].bind(xi, ts.thread_axis("threadIdx.x"))
    s[doubled].compute_at(s[update], xi)
    return s, [X, res]


def reference(title, x):
    x = x.astype(np.float64)
    if "two" not in title:
        return np.cumsum(x, axis=0)
    out = np.empty_like(x)
    out[0] = x[0]
    for t in range(1, len(x)):
        out[t] = 2 * out[t - 1] + x[t]
    return out


SECTIONS = [
    ("cumulative sum, plain loops", plain),
    ("cumulative sum, columns on work-items", bound),
    ("two-stage update", two_stage_update),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="opencl", help="opencl, llvm (CPU OpenCL) or python")
    p.add_argument("--quiet", action="store_true", help="leave out the lowered IR")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    dev = ts.opencl(0) if args.target == "opencl" else ts.cpu(0)
    failed = []
    for title, make in SECTIONS:
        s, targs = make()
        if not args.quiet:
            print(f"== {title} ==\n{ts.lower(s, targs, simple_mode=True)}")
        func = ts.build(s, targs, target=args.target, name="scan")
        worst = 0.0
        for m, n in SIZES:
            x = rng.random((m, n), dtype=np.float32)
            out = ts.nd.array(np.full((m, n), np.nan, np.float32), dev)  # poisoned
            func(ts.nd.array(x, dev), out)
            want = reference(title, x)
            worst = max(worst, float(np.max(np.abs(out.numpy() - want) / np.abs(want))))
        print(f"-- {title}: max relative error against numpy at (m, n) in {SIZES}: {worst:.1e}\n")
        if not worst <= 1e-5:
            failed.append(title)
    if failed:
        raise SystemExit(f"results differ from numpy: {', '.join(failed)}")


if __name__ == "__main__":
    main()
