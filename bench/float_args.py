"""Float arguments that change between calls (A117, A138): a report, not a test.

Workload: torchvision's sigmoid_focal_loss(inputs, targets, alpha, gamma) on 256x80 logits, over
9 alphas (both sides of its `if alpha >= 0`) x 3 gammas, in inference (no_grad) and in a training
step (forward + backward).

Contestants: eager; ptgo (automatic dynamic: alpha and gamma read at run time once they change);
ptgo with static floats (dynamic=False, the cache limit raised so every value gets its own graph).
For each: graphs compiled over the sweep, the first sweep's time (compiles included) and the
median per-call time of warm sweeps.

Usage: python bench/float_args.py [--threads 1] [--rounds 20]
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

from threads import set_threads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("ptgo") is None:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from ptgo import _C  # noqa: E402
from torchvision.ops import sigmoid_focal_loss  # noqa: E402

ALPHAS = [0.25, 0.5, 0.1, 0.75, 0.3, 0.9, 0.0, 1.0, -1.0]
GAMMAS = [1.5, 2.5, 3.5]


def compiled():
    log = json.loads(_C.request("compile_log", "{}")) or []
    return sum(1 for r in log if r.get("compiled"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    set_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 80, generator=g)
    t = (torch.rand(256, 80, generator=g) > 0.9).float()
    calls = [(a, gm) for gm in GAMMAS for a in ALPHAS]

    def infer(fn):
        def run(a, gm):
            with torch.no_grad():
                return fn(x, t, a, gm)
        return run

    def train(fn):
        def run(a, gm):
            xi = x.detach().requires_grad_()
            fn(xi, t, a, gm, "mean").backward()
            return xi.grad
        return run

    print("sigmoid_focal_loss %s, %d threads, %d calls a sweep (9 alphas x 3 gammas)" % (tuple(x.shape), args.threads, len(calls)))
    print("%-9s %-22s %6s %12s %14s" % ("mode", "contestant", "graphs", "first sweep", "warm per call"))
    for mode, wrap in (("inference", infer), ("training", train)):
        for name in ("eager", "ptgo", "ptgo static"):
            ptgo.reset()
            if name == "eager":
                fn = sigmoid_focal_loss
            elif name == "ptgo":
                fn = ptgo.compile(sigmoid_focal_loss)
            else:
                ptgo.config.cache_size_limit = 64
                fn = ptgo.compile(sigmoid_focal_loss, dynamic=False)
            run = wrap(fn)
            t0 = time.perf_counter()
            for a, gm in calls:
                run(a, gm)
            first = time.perf_counter() - t0
            n = compiled() if name != "eager" else 0
            per = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                for a, gm in calls:
                    run(a, gm)
                per.append((time.perf_counter() - t0) / len(calls))
            ptgo.config.cache_size_limit = 8
            print("%-9s %-22s %6d %10.3f s %11.1f us" % (mode, name, n, first, statistics.median(per) * 1e6))


if __name__ == "__main__":
    main()
