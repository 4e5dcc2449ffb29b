"""ptgo demo: compile a small model, show the captured graph, check the result against eager.

Run with `make demo`.
"""
import time

import torch
import torch.nn as nn

import ptgo


class Block(nn.Module):
    def __init__(self, dim=64, hidden=256):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        h = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))
        return x + h


def main():
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).eval()
    x = torch.randn(8, 64)

    graphs = []

    def show(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = ptgo.compile(model, backend=show)
    t0 = time.perf_counter()
    with torch.no_grad():
        out = compiled(x)
    t1 = time.perf_counter()
    with torch.no_grad():
        ref = model(x)

    print("ptgo %s — captured %d graph(s) in %.1f ms" % (ptgo.__version__, len(graphs), (t1 - t0) * 1e3))
    for i, gm in enumerate(graphs):
        print("\n--- graph %d: %d nodes ---" % (i, len(gm.graph.nodes)))
        print(gm.code.strip())
    err = (out - ref).abs().max().item()
    print("\nresult shape %s, dtype %s; max |compiled - eager| = %.3g" % (tuple(out.shape), out.dtype, err))
    ok = torch.allclose(out, ref, rtol=1e-5, atol=1e-6) and out.dtype == ref.dtype and out.shape == ref.shape
    print("matches eager:", ok)

    # The default backend ("inductor"), called again: a cache hit runs the compiled code.
    fast = ptgo.compile(model)
    with torch.no_grad():
        fast(x)
        out2 = fast(x)
    ok2 = torch.allclose(out2, ref, rtol=1e-5, atol=1e-6)
    print("default backend matches eager:", ok2)
    if not (ok and ok2):
        raise SystemExit("demo FAILED: compiled result differs from eager")


if __name__ == "__main__":
    main()
