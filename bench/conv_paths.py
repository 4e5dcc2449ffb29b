"""Which convolution call is fastest for a model's convolutions with frozen weights (issue 12):
per conv kind (dense k×k, pointwise 1×1, depthwise, grouped), the summed time of the model's
convolutions through
  aten        torch.convolution on dense tensors (ptgo's extern call today; BatchNorm folded)
  mkldnn      torch.mkldnn_convolution on dense tensors (oneDNN, weight reordered per call)
  prepacked   torch.ops.mkldnn_prepacked.conv2d_run with the weight packed once (oneDNN,
              dense NCHW in and out, ReLU as a oneDNN post-op where the model has one next)
  blocked     torch.mkldnn_convolution on mkldnn (blocked) tensors with the weight reordered once
              by mkldnn_reorder_conv2d_weight (conversions not counted: a chain stays blocked)
  cl, cl_*    the same on channels-last dense tensors
  mm          a pointwise (1×1, stride 1) convolution of one image as torch.mm(W, x) plus the
              bias (other kinds: aten)
medians of interleaved rounds (process CPU time at 1 thread). A report for choosing, not a test.

Usage: .venv/bin/python bench/conv_paths.py [--threads 1] [--rounds 15] resnet18 mobilenet_v2 ...
"""
import argparse
import statistics
import time

import torch

from threads import set_threads  # noqa: E402
import torch.nn as nn


def clock():
    """CPU time of this process at 1 thread (other engineers' load on the shared cores inflates wall
    time), wall time otherwise."""
    return time.process_time() if torch.get_num_threads() == 1 else time.perf_counter()


def conv_calls(name, size=224):
    import torchvision

    m = getattr(torchvision.models, name)().eval()
    calls = []
    mods = dict(m.named_modules())
    names = list(mods)
    for i, (n, mod) in enumerate(mods.items()):
        if isinstance(mod, nn.Conv2d):
            # ReLU right after (conv, bn, relu sequences): the post-op the prepacked path may fuse
            nxt = [mods[k] for k in names[i + 1:i + 3]]
            relu = any(isinstance(x, nn.ReLU) for x in nxt) and isinstance(nxt[0], nn.BatchNorm2d)
            mod.register_forward_hook(lambda mod, inp, out, relu=relu: calls.append((mod, inp[0].shape, relu)))
    with torch.no_grad():
        m(torch.randn(1, 3, size, size))
    return calls


def kind(mod):
    if mod.groups == 1:
        return "1x1" if mod.kernel_size == (1, 1) else "%dx%d" % mod.kernel_size
    if mod.groups == mod.in_channels == mod.out_channels:
        return "depthwise"
    return "grouped"


def variants(mod, shape, relu):
    x = torch.randn(shape)
    w = mod.weight.detach().clone()
    b = torch.randn(w.shape[0])
    s, p, d, g = list(mod.stride), list(mod.padding), list(mod.dilation), mod.groups
    ctx = torch.ops.mkldnn_prepacked.conv2d_prepack(w, b, s, p, d, g, list(shape), "relu" if relu else "none")
    xm = x.to_mkldnn()
    wm = torch._C._nn.mkldnn_reorder_conv2d_weight(w.to_mkldnn(), p, s, d, g)
    ref = torch.convolution(x, w, b, s, p, d, False, [0, 0], g)
    xc = x.contiguous(memory_format=torch.channels_last)
    wc = w.contiguous(memory_format=torch.channels_last)
    out = {
        "cl": lambda: torch.convolution(xc, wc, b, s, p, d, False, [0, 0], g),
        "cl_mkldnn": lambda: torch.mkldnn_convolution(xc, wc, b, p, s, d, g),
        "cl_packed": lambda: torch.ops.mkldnn_prepacked.conv2d_run(xc, ctx),
        "aten": lambda: torch.convolution(x, w, b, s, p, d, False, [0, 0], g),
        "mkldnn": lambda: torch.mkldnn_convolution(x, w, b, p, s, d, g),
        "prepacked": lambda: torch.ops.mkldnn_prepacked.conv2d_run(x, ctx),
        "blocked": lambda: torch.mkldnn_convolution(xm, wm, b, p, s, d, g),
    }
    if mod.kernel_size == (1, 1) and mod.stride == (1, 1) and mod.padding == (0, 0) and g == 1 and shape[0] == 1:
        # a pointwise convolution of one image is a matrix product: W[Co,Ci] @ x[Ci,H*W] (+ bias)
        w2, x2 = w.reshape(w.shape[0], -1), x.reshape(x.shape[1], -1)
        out["mm"] = lambda: torch.mm(w2, x2).add_(b[:, None]).reshape(ref.shape)
    else:
        out["mm"] = out["aten"]
    # every variant computes the convolution (prepacked with its ReLU)
    for k, f in out.items():
        r = f()
        r = r.to_dense() if r.is_mkldnn else r
        want = ref.relu() if k.endswith("packed") and relu else ref
        err = ((r - want).abs().max() / want.abs().max().clamp_min(1e-12)).item()
        assert err < 1e-4, (k, mod, err)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    set_threads(a.threads)
    for name in a.models:
        calls = conv_calls(name)
        fns = [(kind(mod), variants(mod, shape, relu)) for mod, shape, relu in calls]
        keys = list(fns[0][1])
        times = {}  # (kind, variant) -> per-round sums
        with torch.no_grad():
            for _ in range(a.rounds):
                for k in keys:
                    per = {}
                    for kd, vs in fns:
                        f = vs[k]
                        f()
                        t0 = clock()
                        for _ in range(3):
                            f()
                        per[kd] = per.get(kd, 0.0) + (clock() - t0) / 3
                    for kd, t in per.items():
                        times.setdefault((kd, k), []).append(t)
        kinds = sorted({kd for kd, _ in fns})
        print("%s, %d threads: summed convolution time per call (ms), median of %d rounds" % (name, a.threads, a.rounds))
        print("%-10s %5s " % ("kind", "convs") + " ".join("%10s" % k for k in keys))
        for kd in kinds + ["all"]:
            n = sum(1 for k2, _ in fns if kd in (k2, "all"))
            row = []
            for k in keys:
                if kd == "all":
                    rounds = [sum(times[(k2, k)][i] for k2 in kinds) for i in range(a.rounds)]
                else:
                    rounds = times[(kd, k)]
                row.append("%10.3f" % (1e3 * statistics.median(rounds)))
            print("%-10s %5d " % (kd, n) + " ".join(row))


if __name__ == "__main__":
    main()
