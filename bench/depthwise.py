"""Depthwise convolutions (A124): ptgo's kernel (pybridge/fast/ptgo_depthwise.cpp) against torch's
convolution, per layer shape of the models and on the whole models. A report for choosing the
routing rule, not a test.

  --shapes   every depthwise layer shape of the models (batch 1, 224×224 input), timed on its own
             at 1 thread: torch.convolution on the dense NCHW input (what ptgo called before; its
             activation then took a pass of its own) and ptgo's kernel called through ctypes
             (bias and the layer's activation in its output pass); medians of interleaved rounds
             of process CPU time. `routed` is the kernel's measured rule
             (ptgo_depthwise_preferred).
  --models   eager and ptgo.compile on whole models at 1 thread, one process per build and
             round (--builds: the python/ dirs holding each build's ptgo), the builds alternating
             round by round; per build the median over rounds of each process's median, and
             eager's, measured in the same processes.

Usage: python bench/depthwise.py --shapes [--models-list mobilenet_v2,...]
       python bench/depthwise.py --models --builds main=/work/main/python,dw=python [--rounds 6]
"""
import argparse
import collections
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

from threads import set_threads  # noqa: E402
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["mobilenet_v2", "efficientnet_b0", "shufflenet_v2_x1_0", "mnasnet0_5"]


class Shape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in "N C H W kh kw sh sw ph pw".split()]


ACTS = {None: 0, "relu": 1, "relu6": 2, "silu": 3}


def layer_shapes(names):
    """(input shape, kernel, stride, padding) -> [(model, activation after its BatchNorm)]."""
    import torchvision

    out = collections.OrderedDict()
    for name in names:
        m = getattr(torchvision.models, name)().eval()
        mods = list(m.modules())
        for i, mod in enumerate(mods):
            if isinstance(mod, nn.Conv2d) and mod.groups == mod.in_channels == mod.out_channels > 1:
                nxt = mods[i + 1:i + 3]
                act = None
                if len(nxt) == 2 and isinstance(nxt[0], nn.BatchNorm2d):
                    act = {nn.ReLU: "relu", nn.ReLU6: "relu6", nn.SiLU: "silu"}.get(type(nxt[1]))
                mod.register_forward_hook(lambda mod, inp, o, name=name, act=act: out.setdefault(
                    (tuple(inp[0].shape), mod.kernel_size, mod.stride, mod.padding), []).append((name, act)))
        with torch.no_grad():
            m(torch.randn(1, 3, 224, 224))
    return out


def shapes(opts):
    import ptgo._fast

    lib = ctypes.CDLL(ptgo._fast.__file__)
    lib.ptgo_depthwise_scratch.restype = ctypes.c_int64
    P = ctypes.c_void_p
    set_threads(1)
    tot = collections.Counter()
    print("| input | k | s | layers | act | torch | torch+act | ptgo kernel | speedup | routed | max err |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (shape, k, s, p), users in layer_shapes(opts.models_list.split(",")).items():
        act = users[0][1]
        x = torch.randn(shape)
        C = shape[1]
        w, b = torch.randn(C, 1, *k), torch.randn(C)
        sh = Shape(*shape, *k, *s, *p)
        ref = torch.convolution(x, w, b, s, p, (1, 1), False, (0, 0), C)
        y = torch.empty_like(ref)
        scr = torch.empty(lib.ptgo_depthwise_scratch(ctypes.byref(sh)))
        actf = {None: lambda t: t, "relu": torch.relu_, "relu6": lambda t: t.clamp_(0, 6),
                "silu": torch.nn.functional.silu}[act]

        def mine():
            lib.ptgo_depthwise_conv2d(P(x.data_ptr()), P(w.data_ptr()), P(b.data_ptr()), P(y.data_ptr()),
                                      ctypes.byref(sh), ACTS[act], ctypes.c_int64(0), ctypes.c_int64(C),
                                      P(scr.data_ptr()))

        fs = {"torch": lambda: torch.convolution(x, w, b, s, p, (1, 1), False, (0, 0), C),
              "torch+act": lambda: actf(torch.convolution(x, w, b, s, p, (1, 1), False, (0, 0), C)),
              "mine": mine}
        mine()
        if act == "silu":  # in place, as the runtime does after torch's convolution
            actf = lambda t: torch.nn.functional.silu(t, inplace=True)  # noqa: E731
        err = (y - actf(ref.clone())).abs().max().item()
        ts = {n: [] for n in fs}
        reps = max(3, int(1e6 / x.numel()))
        for _ in range(opts.rounds):
            for n, f in fs.items():
                t0 = time.process_time()
                for _ in range(reps):
                    f()
                ts[n].append((time.process_time() - t0) / reps * 1e6)
        med = {n: statistics.median(v) for n, v in ts.items()}
        routed = lib.ptgo_depthwise_preferred(ctypes.byref(sh))
        n = len(users)
        for c in fs:
            tot[c] += med[c] * n
        tot["routed"] += (med["mine"] if routed else med["torch+act"]) * n
        print("| %s | %d | %d | %d (%s) | %s | %.1f | %.1f | %.1f | %.2fx | %s | %.1e |" % (
            "x".join(map(str, shape[1:])), k[0], s[0], n, ",".join(sorted({u[0] for u in users})), act or "-",
            med["torch"], med["torch+act"], med["mine"], med["torch+act"] / med["mine"], "yes" if routed else "no", err))
    print("\nsummed over layers: torch+act %.0f us, ptgo kernel %.0f us, as routed %.0f us" % (
        tot["torch+act"], tot["mine"], tot["routed"]))


CHILD = r"""
import json, statistics, sys, time, torch, torchvision, ptgo
set_threads(1)
out = {}
for name in sys.argv[1].split(","):
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)().eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        c = ptgo.compile(m)
        c(x); c(x)
        ref, got = m(x), c(x)
        te, tp = [], []
        for _ in range(int(sys.argv[2])):
            t0 = time.process_time(); m(x); te.append(time.process_time() - t0)
            t0 = time.process_time(); c(x); tp.append(time.process_time() - t0)
    out[name] = {"eager": statistics.median(te), "ptgo": statistics.median(tp),
                 "err": (got - ref).abs().max().item(), "scale": ref.abs().max().item(),
                 "strides": got.stride() == ref.stride()}
print(json.dumps(out))
"""


def models(opts):
    builds = [b.split("=", 1) for b in opts.builds.split(",")]
    runs = collections.defaultdict(list)
    for r in range(opts.rounds):
        for label, path in (builds if r % 2 == 0 else builds[::-1]):
            env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
            cmd = [sys.executable, "-c", CHILD, opts.models_list, str(opts.reps)]
            if opts.cpu is not None:
                cmd = ["taskset", "-c", str(opts.cpu)] + cmd
            res = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
            runs[label].append(res)
    print("| model | eager ms | " + " | ".join("%s ms | %s/eager" % (l, l) for l, _ in builds) + " | max abs err (output max) |")
    print("|---|---|" + "---|---|" * len(builds) + "---|")
    for name in opts.models_list.split(","):
        eager = statistics.median(x[name]["eager"] for l, _ in builds for x in runs[l]) * 1e3
        cells = []
        for label, _ in builds:
            p = statistics.median(x[name]["ptgo"] for x in runs[label]) * 1e3
            e = statistics.median(x[name]["eager"] for x in runs[label]) * 1e3
            spread = [x[name]["ptgo"] * 1e3 for x in runs[label]]
            cells.append("%.2f (%.2f–%.2f) | %.2fx" % (p, min(spread), max(spread), e / p))
        errs = ", ".join("%s %.1e (%.1e)" % (l, max(x[name]["err"] for x in runs[l]), runs[l][0][name]["scale"])
                         for l, _ in builds)
        strides = all(x[name]["strides"] for l, _ in builds for x in runs[l])
        print("| %s | %.2f | %s | %s%s |" % (name, eager, " | ".join(cells), errs, "" if strides else " STRIDES DIFFER"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", action="store_true")
    ap.add_argument("--models", action="store_true")
    ap.add_argument("--models-list", default=",".join(MODELS))
    ap.add_argument("--builds", default="this=" + os.path.join(HERE, "..", "python"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--cpu", type=int, default=None, help="pin the model processes to this core")
    opts = ap.parse_args()
    if opts.shapes:
        shapes(opts)
    if opts.models:
        models(opts)


if __name__ == "__main__":
    main()
