"""`make bench` (dynamic shapes): sweeps of sizes through one compiled function, in one process.

Workloads, each called with many sizes (issue 10's "done when"):
  pointwise     sigmoid(x)*x + 1 over 2-D inputs of 14 shapes
  mlp           Linear-GELU-Linear in eval, batch sizes 1..1000 (12 sizes)
  encoder       nn.TransformerEncoderLayer (batch_first, eval), sequence lengths 1..512 (12)
  gpt_block     a GPT-2 style block (causal self-attention over a registered mask buffer sliced to
                the length, MLP), sequence lengths 1..512 (12)
  embed_pool    nn.Embedding + masked mean pooling over variable lengths (12)

Contestants: eager; ptgo with dynamic shapes (the default, automatic dynamic); ptgo with static
shapes (dynamic=False, the cache limit raised so every size gets its own graph); on torch 2.x
also torch.compile (default). For each: graphs compiled over the sweep, the first sweep's time
(compiles included), and the median over rounds of a warm sweep (every size once, in a shuffled
order, interleaved with the other contestants). A report, not a test.

Usage: python bench/dynamic.py [--quick] [--only a,b] [--threads 1]
"""
import argparse
import importlib.util
import copy
import json
import os
import random
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("ptgo") is None:
    # the checkout's ptgo when none is installed; the torch 2 venv has its own build (the
    # checkout's C extensions are built against Debian's torch 1.13 and abort under torch 2)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from ptgo import _C  # noqa: E402

TORCH2 = hasattr(torch, "compile")
RESULTS = os.path.join(HERE, "results", "torch2") if TORCH2 else os.path.join(HERE, "results")
LENGTHS = [1, 7, 16, 31, 64, 100, 128, 200, 256, 333, 400, 512]


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 64)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class GPTBlock(nn.Module):
    def __init__(self, d=128, heads=4, block=512):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class EmbedPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 64)

    def forward(self, ids, mask):
        h = self.emb(ids) * mask.unsqueeze(-1)
        return h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


def pointwise(x):
    return torch.sigmoid(x) * x + 1.0


def workloads():
    rng = random.Random(0)
    shapes = [(rng.randint(2, 256), rng.randint(2, 256)) for _ in range(14)]
    return {
        "pointwise": (lambda: pointwise, lambda s: (torch.randn(*s),), shapes),
        "mlp": (lambda: MLP().eval(), lambda b: (torch.randn(b, 64),), [1, 2, 5, 16, 31, 64, 100, 128, 250, 500, 777, 1000]),
        "encoder": (lambda: nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True).eval(),
                    lambda t: (torch.randn(2, t, 128),), LENGTHS),
        "gpt_block": (lambda: GPTBlock().eval(), lambda t: (torch.randn(1, t, 128),), LENGTHS),
        "embed_pool": (lambda: EmbedPool().eval(),
                       lambda t: (torch.randint(0, 1000, (4, t)), (torch.rand(4, t) > 0.3).float()), LENGTHS),
    }


def graphs():
    log = (json.loads(_C.request("compile_log", "{}")) or []) if _C.go_loaded() else []
    return sum(1 for r in log if r.get("compiled"))


def contestants():
    out = {
        "eager": lambda m: m,
        "ptgo-dynamic": lambda m: ptgo.compile(m),
        "ptgo-static": lambda m: ptgo.compile(m, dynamic=False),
    }
    if TORCH2:
        out["torch.compile"] = lambda m: torch.compile(m)
    return out


def run_sweep(fn, inputs):
    for args in inputs:
        fn(*args)


def bench(name, ctor, make, sizes, rounds):
    torch.manual_seed(0)
    model = ctor()
    inputs = [make(s) for s in sizes]
    row = {"workload": name, "sizes": len(sizes)}
    fns, first, counts = {}, {}, {}
    # One reset per workload, before any contestant compiles: a reset between contestants would
    # drop the graphs of those built before it, which then recompiled inside the timed rounds.
    # Each contestant compiles its own copy of the model (the copies share their forward's code,
    # and ptgo's cache for it holds every contestant's graphs, told apart by the guards on
    # self), so the cache limit must hold all of them: ptgo-static's one graph per size
    # included.
    ptgo.reset()
    if TORCH2:
        torch._dynamo.reset()
    ptgo.config.cache_size_limit = 64
    for cname, build in contestants().items():
        before = graphs()
        fn = build(copy.deepcopy(model))
        with torch.no_grad():
            t0 = time.perf_counter()
            run_sweep(fn, inputs)
            first[cname] = time.perf_counter() - t0
        counts[cname] = graphs() - before if cname.startswith("ptgo") else None
        fns[cname] = fn
    times = {c: [] for c in fns}
    order = list(fns)
    for r in range(rounds):
        random.Random(r).shuffle(order)
        for cname in order:
            with torch.no_grad():
                t0 = time.perf_counter()
                run_sweep(fns[cname], inputs)
                times[cname].append(time.perf_counter() - t0)
    with torch.no_grad():
        ref = [model(*a) for a in inputs]
        for cname, fn in fns.items():
            err = max(float((fn(*a) - e).abs().max()) for a, e in zip(inputs, ref))
            row[cname + " max err"] = err
    for cname in fns:
        row[cname] = {"warm_s": statistics.median(times[cname]), "first_s": first[cname], "graphs": counts[cname]}
    return row


def write(rows, threads):
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "dynamic.json"), "w") as f:
        json.dump({"threads": threads, "torch": torch.__version__, "rows": rows}, f, indent=1)
    names = [c for c in contestants()]
    lines = ["# Dynamic shapes: one function over a sweep of sizes (torch %s, %d thread)" % (torch.__version__, threads), "",
             "Warm sweep time (median over rounds; every size once), its ratio to eager, graphs ptgo compiled, and the "
             "first sweep's time (compiles included). `bench/dynamic.py`; a report, not a test.", "",
             "| workload | sizes | " + " | ".join("%s warm ms (×eager) · graphs · first s" % c for c in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for r in rows:
        e = r["eager"]["warm_s"]
        cells = []
        for c in names:
            x = r[c]
            g = "" if x["graphs"] is None else " · %d" % x["graphs"]
            cells.append("%.1f (%.2f×)%s · %.2f" % (x["warm_s"] * 1e3, e / x["warm_s"], g, x["first_s"]))
        lines.append("| %s | %d | %s |" % (r["workload"], r["sizes"], " | ".join(cells)))
    with open(os.path.join(RESULTS, "dynamic.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    from threads import set_threads  # bench/, the script's folder (tests load this file by path)

    set_threads(a.threads)
    only = set(filter(None, a.only.split(",")))
    rows = []
    for name, (ctor, make, sizes) in workloads().items():
        if only and name not in only:
            continue
        rows.append(bench(name, ctor, make, sizes, 3 if a.quick else 7))
        print(name, "done", flush=True)
    write(rows, a.threads)


if __name__ == "__main__":
    main()
