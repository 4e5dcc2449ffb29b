"""Capture-stage report (issue 2): per-call overhead of a compiled one-op function on a tiny
tensor against calling it eagerly, and capture time of a Transformer encoder.

A report, not a test: run `.venv/bin/python bench/overhead.py`.
"""
import statistics
import time

import torch

from threads import set_threads  # noqa: E402
import torch.nn as nn

import ptgo


def per_call_ns(fn, *args, n=20000, repeat=7):
    for _ in range(200):
        fn(*args)
    best = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn(*args)
        best.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(best)


def one_op(x):
    return x + 1


class Encoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=2):
        super().__init__()
        self.layers = nn.ModuleList(
            [nn.TransformerEncoderLayer(d, heads, dim_feedforward=128, dropout=0.0, batch_first=True)
             for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def main():
    set_threads(1)
    x = torch.randn(4)
    eager = per_call_ns(one_op, x)
    compiled_fn = ptgo.compile(one_op, backend="eager")
    compiled = per_call_ns(compiled_fn, x)
    print("one-op function on a 4-element tensor (median ns per call)")
    print("  eager    %8.0f" % eager)
    print("  compiled %8.0f   overhead %+.0f ns (%.2fx)" % (compiled, compiled - eager, compiled / eager))

    m = Encoder().train()
    xe = torch.randn(2, 16, 64)
    times = []
    for _ in range(5):
        ptgo.reset()
        graphs = []
        cm = ptgo.compile(m, backend=lambda gm, ex: (graphs.append(gm), gm.forward)[1])
        t0 = time.perf_counter()
        cm(xe)
        times.append(time.perf_counter() - t0)
        assert len(graphs) == 1
    n_nodes = len(graphs[0].graph.nodes)
    print("Transformer encoder (2 layers, d=64, training) capture + first call: median %.1f ms"
          " (best %.1f ms), one graph of %d nodes" % (statistics.median(times) * 1e3, min(times) * 1e3, n_nodes))
    t0 = time.perf_counter()
    for _ in range(100):
        cm(xe)
    tc = (time.perf_counter() - t0) / 100
    t0 = time.perf_counter()
    for _ in range(100):
        m(xe)
    te = (time.perf_counter() - t0) / 100
    print("  warm call %.0f us vs eager %.0f us" % (tc * 1e6, te * 1e6))


if __name__ == "__main__":
    main()
