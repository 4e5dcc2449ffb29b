"""`make bench` (training, issue 9): whole training steps — forward, loss, backward, optimizer
step, zero_grad — compiled by ptgo beside eager and, on torch 2.x, torch.compile, in one process.

Contestants, each on its own copy of the model and optimizer, interleaved round by round:
  eager            the step as written
  ptgo-model       ptgo.compile(model); loss, backward and the optimizer step eager
  ptgo-step        ptgo.compile(train_step): the optimizer step and zero_grad traced too
  and on torch 2.x:
  inductor-model   torch.compile(model)
  inductor-step    torch.compile(train_step)

Every step reseeds torch's generator first, so dropout draws the same masks in every contestant,
and the parameters after the warm-up steps are compared with eager's (max abs difference): a
training step that is fast but drifts from eager is not a result. Median seconds per step of the
rounds; 1 thread is the primary figure (this is a shared 2-core machine). Writes
bench/results[/torch2]/train.md and train.json. A report, not a test.

Usage: python bench/train.py [--quick] [--only a,b] [--threads 1] [--contestants eager,ptgo-step]
"""
import argparse
import copy
import importlib.util
import json
import os
import statistics
import sys
import time
import warnings

import torch

from threads import set_threads  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if importlib.util.find_spec("ptgo") is None:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from models import GPTBlock, GeluMLP  # noqa: E402

TORCH2 = hasattr(torch, "compile")
RESULTS = os.path.join(HERE, "results", "torch2") if TORCH2 else os.path.join(HERE, "results")


class DropCNN(nn.Module):
    """Conv + BatchNorm + ReLU blocks, max pooling, dropout before the head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.body(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab=512, d=256, layers=2, t=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, t, d))
        self.blocks = nn.Sequential(*[GPTBlock(d) for _ in range(layers)])
        self.drop = nn.Dropout(0.1)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        return self.head(self.ln(self.blocks(self.drop(self.tok(idx) + self.pos))))


def _resnet18():
    import torchvision

    return torchvision.models.resnet18(num_classes=10)


def _encoder():
    return nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.1, batch_first=True)


def _classify(out, target):
    return F.cross_entropy(out, target)


def _lm(out, target):
    return F.cross_entropy(out.flatten(0, 1), target.flatten())


def _regress(out, target):
    return F.mse_loss(out, target)


# name -> (model, inputs, target, loss, optimizer)
WORKLOADS = {
    "mlp_sgd": (GeluMLP, lambda: torch.randn(64, 512), lambda: torch.randn(64, 512), _regress,
                lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9)),
    "mlp_adam": (GeluMLP, lambda: torch.randn(64, 512), lambda: torch.randn(64, 512), _regress,
                 lambda p: torch.optim.Adam(p, lr=1e-3)),
    "cnn_bn_dropout_sgd": (DropCNN, lambda: torch.randn(16, 3, 32, 32), lambda: torch.randint(0, 10, (16,)),
                           _classify, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4)),
    # torchvision's --channels-last recipe: the model and its images in channels-last
    "cnn_channels_last_sgd": (lambda: DropCNN().to(memory_format=torch.channels_last),
                              lambda: torch.randn(16, 3, 32, 32).contiguous(memory_format=torch.channels_last),
                              lambda: torch.randint(0, 10, (16,)), _classify,
                              lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4)),
    "resnet18_sgd": (_resnet18, lambda: torch.randn(4, 3, 64, 64), lambda: torch.randint(0, 10, (4,)),
                     _classify, lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9, weight_decay=1e-4)),
    "encoder_layer_adamw": (_encoder, lambda: torch.randn(4, 64, 256), lambda: torch.randn(4, 64, 256),
                            _regress, lambda p: torch.optim.AdamW(p, lr=1e-4)),
    "tiny_gpt_adamw": (TinyGPT, lambda: torch.randint(0, 512, (4, 64)), lambda: torch.randint(0, 512, (4, 64)),
                       _lm, lambda p: torch.optim.AdamW(p, lr=1e-4)),
}


def make_step(model, opt, loss_fn):
    def train_step(x, target):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        return loss
    return train_step


def contestants():
    """name -> build(model, make_opt, loss_fn) -> (step callable, model)."""
    def eager(m, mk, lf):
        return make_step(m, mk(m.parameters()), lf), m

    def ptgo_model(m, mk, lf):
        return make_step(ptgo.compile(m), mk(m.parameters()), lf), m

    def ptgo_step(m, mk, lf):
        return ptgo.compile(make_step(m, mk(m.parameters()), lf)), m

    c = {"eager": eager, "ptgo-model": ptgo_model, "ptgo-step": ptgo_step}
    if TORCH2:
        c["inductor-model"] = lambda m, mk, lf: (make_step(torch.compile(m), mk(m.parameters()), lf), m)
        c["inductor-step"] = lambda m, mk, lf: (torch.compile(make_step(m, mk(m.parameters()), lf)), m)
    return c


def run_steps(step, x, target, n, seed):
    for i in range(n):
        torch.manual_seed(seed + i)
        step(x, target)


def max_param_diff(m, ref):
    return max((a.detach().double() - b.detach().double()).abs().max().item()
               for a, b in zip(m.parameters(), ref.parameters()))


def measure(name, builders, threads, rounds, warm):
    set_threads(threads)
    ctor, mk_x, mk_t, loss_fn, mk_opt = WORKLOADS[name]
    torch.manual_seed(0)
    base = ctor().train()
    x, target = mk_x(), mk_t()
    runs, first = {}, {}
    for cname, build in builders.items():
        try:
            step, model = build(copy.deepcopy(base), mk_opt, loss_fn)
            t0 = time.perf_counter()
            run_steps(step, x, target, 1, 1000)
            first[cname] = time.perf_counter() - t0
            run_steps(step, x, target, warm - 1, 1001)
        except Exception as e:  # a contestant that cannot run this workload is reported, not fatal
            print("  %s: %s failed: %s" % (name, cname, str(e).splitlines()[0][:160]), flush=True)
            continue
        runs[cname] = (step, model)
    # parameters after the same warm-up steps, against eager's
    diffs = {c: max_param_diff(m, runs["eager"][1]) for c, (_, m) in runs.items()}
    t0 = time.perf_counter()
    run_steps(runs["eager"][0], x, target, 1, 5000)
    t = time.perf_counter() - t0
    reps = max(1, min(50, int(0.3 / max(t, 1e-6))))
    times = {c: [] for c in runs}
    for r in range(rounds):
        for cname, (step, _) in runs.items():
            t0 = time.perf_counter()
            run_steps(step, x, target, reps, 10000 + r * reps)
            times[cname].append((time.perf_counter() - t0) / reps)
    return {c: {"ms": statistics.median(v) * 1e3, "best_ms": min(v) * 1e3, "param_diff": diffs[c],
                "first_s": first[c]} for c, v in times.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--contestants", default="")
    opts = ap.parse_args()
    warnings.simplefilter("ignore")
    names = [n for n in WORKLOADS if not opts.only or n in opts.only.split(",")]
    builders = contestants()
    if opts.contestants:
        builders = {k: v for k, v in builders.items() if k in opts.contestants.split(",") or k == "eager"}
    rounds, warm = (3, 3) if opts.quick else (7, 4)
    rows = []
    for name in names:
        row = {"workload": name, "threads": {}}
        for t in [int(t) for t in opts.threads.split(",")]:
            row["threads"][str(t)] = measure(name, builders, t, rounds, warm)
        rows.append(row)
        print(line(row), flush=True)
    write(rows)


def speedups(row, t):
    res = row["threads"][str(t)]
    eager = min(r["eager"]["ms"] for r in row["threads"].values()) if t > 1 else res["eager"]["ms"]
    return {c: eager / r["ms"] for c, r in res.items() if c != "eager"}


def line(row):
    parts = []
    for t in sorted(row["threads"], key=int):
        res = row["threads"][t]
        parts.append("%sT eager %.2f ms " % (t, res["eager"]["ms"]) + " ".join(
            "%s %.2fx (diff %.0e)" % (c, s, res[c]["param_diff"]) for c, s in speedups(row, int(t)).items()))
    return "%-22s %s" % (row["workload"], "  |  ".join(parts))


def write(rows):
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"torch": torch.__version__, "ptgo": ptgo.__version__, "date": time.strftime("%Y-%m-%d %H:%M"),
            "python": sys.version.split()[0]}
    with open(os.path.join(RESULTS, "train.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    cont = [c for c in rows[0]["threads"]["1" if "1" in rows[0]["threads"] else next(iter(rows[0]["threads"]))]
            if c != "eager"] if rows else []
    lines = ["# Training steps: ptgo beside eager%s" % (" and torch.compile" if TORCH2 else ""), "",
             "Python %s, torch %s, %s; written by `bench/train.py`, a report, not a test. One step = "
             "zero_grad, forward, loss, backward, optimizer step. Median ms per step over interleaved rounds, "
             "every contestant on its own copy; *x* = speedup over eager (at 2 threads over eager's best "
             "thread count); *diff* = max abs difference of the parameters from eager's after the same "
             "warm-up steps (same seeds, so dropout draws the same masks); *first* = the first step's "
             "seconds (capture and compile, or cache load)." % (meta["python"], meta["torch"], meta["date"]), ""]
    for t in sorted({t for r in rows for t in r["threads"]}, key=int):
        lines += ["## %s thread%s" % (t, "" if t == "1" else "s"), "",
                  "| workload | eager ms | " + " | ".join(cont) + " |", "|---|---|" + "---|" * len(cont)]
        for r in rows:
            res = r["threads"][t]
            sp = speedups(r, int(t))
            cells = ["%.2f ms %.2fx, diff %.0e, first %.1f s" % (res[c]["ms"], sp[c], res[c]["param_diff"],
                                                                  res[c]["first_s"]) if c in res else "failed"
                     for c in cont]
            lines.append("| %s | %.2f | %s |" % (r["workload"], res["eager"]["ms"], " | ".join(cells)))
        per = {c: [speedups(r, int(t))[c] for r in rows if c in r["threads"][t]] for c in cont}
        lines += ["", "Geomean: " + ", ".join("%s %.2fx" % (c, statistics.geometric_mean(v))
                                              for c, v in per.items() if v), ""]
    with open(os.path.join(RESULTS, "train.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
