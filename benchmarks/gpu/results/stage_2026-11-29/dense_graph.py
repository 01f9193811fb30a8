"""A graph of two dense layers (4096 -> 4096 -> 1000, relu between) at 1, 2, 4 and 8 rows,
built untuned on the current device: each layer's template and the graph's median time
(50 calls, wall clock, input in and output back), checked against numpy.

    python benchmarks/gpu/results/stage_2026-11-29/dense_graph.py
"""

import statistics
import time

import numpy as np

from tensorsched.graph import Graph, build

rng = np.random.default_rng(0)
w1 = (rng.standard_normal((4096, 4096)) / 64).astype(np.float32)
w2 = (rng.standard_normal((1000, 4096)) / 64).astype(np.float32)
for rows in (1, 2, 4, 8):
    g = Graph(f"dense{rows}")
    x = g.input("x", (rows, 4096))
    h = g.relu(g.dense(x, g.constant("w1", w1), name="fc1"))
    g.output(g.dense(h, g.constant("w2", w2), name="fc2"))
    net = build(g)
    xs = rng.standard_normal((rows, 4096)).astype(np.float32)
    ref = np.maximum(xs.astype(np.float64) @ w1.T, 0) @ w2.T
    err = np.abs(net(xs) - ref).max() / np.abs(ref).max()
    times = []
    for _ in range(50):
        t = time.perf_counter()
        net(xs)
        times.append(time.perf_counter() - t)
    kernels = [la.kernel for la in net.layers if la.node.name in ("fc1", "fc2")]
    print(f"rows {rows}: {statistics.median(times) * 1e3:.3f} ms, err {err:.1e}, {kernels}")
