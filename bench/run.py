"""`make bench`: eager vs ptgo on the workloads of bench/models.py, side by side in one process.

For each workload and thread count (1 and 2): median time per call of eager and of the compiled
model (interleaved repetitions), speedup, the largest difference from eager; per workload the
cold compile time (empty kernel cache) and the warm start (a new process with the cache filled).
The speedup of the best repetitions (min over rounds on both sides) is reported beside the
median's: other processes on a shared machine only ever add time, so on a noisy machine the
best times say more about the code and the median more about what a user sees.
Writes bench/results/results.md, results.json and speedup.png. A report, not a test.

Usage: .venv/bin/python bench/run.py [--quick] [--only name,name] [--backend inductor]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from models import WORKLOADS  # noqa: E402

RESULTS = os.path.join(HERE, "results")


def make(name, seed=0):
    ctor, inputs, grad = WORKLOADS[name]
    torch.manual_seed(seed)
    m = ctor()
    m.train(grad)
    return m, inputs(), grad


def step(model, args, grad):
    if grad:
        out = model(*args)
        out.float().sum().backward()
        return out
    with torch.no_grad():
        return model(*args)


def timed(fn, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def max_err(a, b):
    return (a.detach().double() - b.detach().double()).abs().max().item()


def measure(name, backend, threads, rounds, reps):
    torch.set_num_threads(threads)
    model, args, grad = make(name)
    ptgo.reset()
    compiled = ptgo.compile(model, backend=backend)
    out_c = step(compiled, args, grad)  # compile
    out_e = step(model, args, grad)
    err = max_err(out_c, out_e)
    for _ in range(2):
        step(compiled, args, grad)
        step(model, args, grad)
    te, tc = [], []
    for _ in range(rounds):  # interleaved: both see the same machine state
        te.append(timed(lambda: step(model, args, grad), reps))
        tc.append(timed(lambda: step(compiled, args, grad), reps))
    # the error of a late call too: later calls reuse the arena, constants computed once and
    # recycled outputs
    out_c, out_e = step(compiled, args, grad), step(model, args, grad)
    err = max(err, max_err(out_c, out_e))
    return statistics.median(te), statistics.median(tc), err, min(te) / min(tc)


def compile_time(name, backend, cache_dir):
    """Seconds the first call of the compiled model takes in a new process with the given cache
    dir (capture, compile or cache load), beyond what a steady-state call of it takes."""
    code = (
        "import sys, time, torch; sys.path[:0] = [%r, %r]\n"
        "import ptgo\nfrom run import make, step\n"
        "m, a, g = make(%r)\nc = ptgo.compile(m, backend=%r)\n"
        "t0 = time.perf_counter(); step(c, a, g); first = time.perf_counter() - t0\n"
        "steady = []\n"
        "for _ in range(5):\n"
        "    t0 = time.perf_counter(); step(c, a, g); steady.append(time.perf_counter() - t0)\n"
        "print(first - min(steady))\n" % (HERE, os.path.join(HERE, "..", "python"), name, backend)
    )
    env = dict(os.environ, PTGO_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return float("nan")
    return float(out.stdout.strip().splitlines()[-1])


# Ops whose time ptgo leaves to torch by design (DESIGN D5): BLAS products and convolutions.
EXTERN_OPS = ("aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::bmm", "aten::baddbmm", "aten::mkldnn_convolution",
              "aten::_slow_conv2d_forward", "aten::thnn_conv2d", "aten::_nnpack_spatial_convolution",
              "aten::_convolution", "aten::slow_conv_dilated2d")


def extern_share(name, reps=20):
    """Fraction of eager's time (1 thread) spent in EXTERN_OPS, from torch.profiler's self times:
    1 / share bounds what any compiler calling the same kernels can gain (Amdahl: all the rest
    free)."""
    torch.set_num_threads(1)
    model, args, grad = make(name)
    for _ in range(3):
        step(model, args, grad)
    with torch.profiler.profile() as p:
        for _ in range(reps):
            step(model, args, grad)
    events = p.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    ext = sum(e.self_cpu_time_total for e in events if e.key in EXTERN_OPS)
    return ext / total if total else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--backend", default="inductor")
    opts = ap.parse_args()
    names = [n for n in WORKLOADS if not opts.only or n in opts.only.split(",")]
    rounds, reps = (3, 3) if opts.quick else (7, 10)
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            cold = compile_time(name, opts.backend, cache)
            warm = compile_time(name, opts.backend, cache)
        share = extern_share(name)
        row = {"workload": name, "cold_compile_s": cold, "warm_compile_s": warm, "extern_share": share,
               "bound": 1 / share if share > 0 else float("inf")}
        for threads in (1, 2):
            te, tc, err, best = measure(name, opts.backend, threads, rounds, reps)
            row["t%d" % threads] = {"eager_ms": te * 1e3, "ptgo_ms": tc * 1e3, "speedup": te / tc, "max_err": err,
                                    "speedup_best": best}
        rows.append(row)
        print("%-26s 1 thread %5.2fx (best %5.2fx, bound %5.2fx)  2 threads %5.2fx (best %5.2fx)  cold %.2fs warm %.2fs  max err %.1e" % (
            name, row["t1"]["speedup"], row["t1"]["speedup_best"], row["bound"], row["t2"]["speedup"],
            row["t2"]["speedup_best"], cold, warm, row["t1"]["max_err"]), flush=True)
    geo = {t: statistics.geometric_mean([r["t%d" % t]["speedup"] for r in rows]) for t in (1, 2)}
    geo_best = {t: statistics.geometric_mean([r["t%d" % t]["speedup_best"] for r in rows]) for t in (1, 2)}
    print("geomean speedup: 1 thread %.2fx, 2 threads %.2fx (best repetitions: %.2fx, %.2fx)" % (
        geo[1], geo[2], geo_best[1], geo_best[2]))
    geo = {1: geo[1], 2: geo[2], "best1": geo_best[1], "best2": geo_best[2]}
    write(rows, geo, opts.backend)


def write(rows, geo, backend):
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"backend": backend, "torch": torch.__version__, "ptgo": ptgo.__version__,
            "cpu": _cpu(), "date": time.strftime("%Y-%m-%d %H:%M")}
    with open(os.path.join(RESULTS, "results.json"), "w") as f:
        json.dump({"meta": meta, "geomean": geo, "rows": rows}, f, indent=1)
    lines = [
        "# ptgo vs eager (%s backend)" % backend, "",
        "%s, torch %s, %s. Median of interleaved repetitions in one process; speedup = eager / ptgo. "
        "*extern share*: the part of eager's 1-thread time in BLAS products and convolutions, which "
        "ptgo also leaves to torch (DESIGN D5); *bound* = 1 / share, the most any compiler "
        "calling the same kernels can gain at 1 thread. *cold*/*warm*: extra time of the first call "
        "in a new process with an empty / a filled kernel cache." % (
            meta["cpu"], meta["torch"], meta["date"]), "",
        "| workload | eager 1T ms | ptgo 1T ms | speedup 1T | best 1T | extern share | bound 1T | eager 2T ms | ptgo 2T ms | speedup 2T | best 2T | cold compile s | warm start s | max abs err |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r["t1"], r["t2"]
        lines.append("| %s | %.2f | %.2f | %.2fx | %.2fx | %.0f%% | %s | %.2f | %.2f | %.2fx | %.2fx | %.2f | %.2f | %.1e |" % (
            r["workload"], a["eager_ms"], a["ptgo_ms"], a["speedup"], a["speedup_best"], 100 * r["extern_share"],
            "%.2fx" % r["bound"] if r["extern_share"] > 0 else "—", b["eager_ms"], b["ptgo_ms"], b["speedup"], b["speedup_best"], r["cold_compile_s"],
            r["warm_compile_s"], max(a["max_err"], b["max_err"])))
    lines += ["", "Geomean speedup: %.2fx at 1 thread, %.2fx at 2 threads (medians); %.2fx and %.2fx for the best "
              "repetitions (min over rounds on both sides)." % (geo[1], geo[2], geo["best1"], geo["best2"])]
    with open(os.path.join(RESULTS, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [r["workload"] for r in rows]
        x = range(len(names))
        fig, ax = plt.subplots(figsize=(10, 4.5))
        ax.bar([i - 0.2 for i in x], [r["t1"]["speedup"] for r in rows], 0.4, label="1 thread")
        ax.bar([i + 0.2 for i in x], [r["t2"]["speedup"] for r in rows], 0.4, label="2 threads")
        ax.axhline(1.0, color="gray", lw=1)
        ax.set_xticks(list(x))
        ax.set_xticklabels(names, rotation=30, ha="right")
        ax.set_ylabel("speedup over eager")
        ax.set_title("ptgo (%s) vs eager PyTorch %s" % (backend, torch.__version__))
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, "speedup.png"), dpi=100)
    except ImportError:
        print("matplotlib missing: no chart (apt-get install python3-matplotlib)")


def _cpu():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + ", %d cores" % os.cpu_count()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    main()
