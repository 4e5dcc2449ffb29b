"""`make bench`: ptgo beside its peers on the workloads of bench/models.py, in one process.

Contestants, each on its own copy of the model, interleaved round by round so that all see the
same machine state:
  eager          the model as it is
  torchscript    torch.jit.trace + freeze + optimize_for_inference (inference workloads only):
                 the compiler that runs on torch 1.13
  ptgo           ptgo.compile(model) (the default backend)
  and on torch 2.x:
  inductor       torch.compile(model) (Inductor, default mode)
  max-autotune   torch.compile(model, mode="max-autotune") (with --max-autotune: slow to compile)
  dynamo+ptgo    torch.compile(model, backend="ptgo", dynamic=False)

For each workload and thread count (1 and 2): the median time per call of every contestant and
of its best round, its speedup over eager and the largest difference from eager on a late call;
at 2 threads the speedup is also given over eager's best thread count (eager here is often slower
at 2 threads than at 1). Per workload at 1 thread, where ptgo's time goes (torch.profiler:
externs — matrix products and convolutions, which ptgo leaves to torch —, ptgo's generated
kernels, other torch ops, the rest), and the extern share of eager's time with its Amdahl bound.
Compile times: the first call's extra time in a new process with an empty cache (cold) and with
the cache the first process filled (warm), for ptgo and the torch.compile contestants.
Writes bench/results/results.md, results.json and speedup.png. A report, not a test.

Usage: python bench/run.py [--quick] [--only a,b] [--threads 1,2] [--no-compile-times] [--max-autotune]
       [--contestants eager,ptgo,...]
"""
import argparse
import importlib.util
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch

from threads import set_threads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if importlib.util.find_spec("ptgo") is None:
    # the checkout's ptgo when none is installed; the torch 2 venv has its own build (the
    # checkout's C extensions are built against Debian's torch 1.13 and abort under torch 2)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from models import VISION, WORKLOADS  # noqa: E402

TORCH2 = hasattr(torch, "compile")
# One report per torch world: bench/results (Debian's torch 1.13), bench/results/torch2 (PyPI's).
RESULTS = os.path.join(HERE, "results", "torch2") if TORCH2 else os.path.join(HERE, "results")
ALL = dict(WORKLOADS, **VISION)


def make(name, seed=0):
    ctor, inputs, grad = ALL[name]
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


# --cpu-time: at 1 thread, this process's CPU time instead of wall time (other work on a shared
# machine then costs a contestant only the cache it evicts, not the time it is descheduled).
CLOCK = time.perf_counter
CPU_TIME = False


def timed(fn, reps):
    t0 = CLOCK()
    for _ in range(reps):
        fn()
    return (CLOCK() - t0) / reps


def max_err(a, b):
    return (a.detach().double() - b.detach().double()).abs().max().item()


# ---- contestants --------------------------------------------------------------------------

def _torchscript(model, args, grad):
    if grad:
        return None  # TorchScript's freeze is for inference
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model, tuple(args), check_trace=False)
        return torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))


def contestants(max_autotune=False):
    """name -> build(model, args, grad) -> callable or None (not applicable)."""
    c = {
        "eager": lambda m, a, g: m,
        "torchscript": _torchscript,
        "ptgo": lambda m, a, g: ptgo.compile(m),
        # ptgo with parameters left live (no BatchNorm folding, no packed convolution weights):
        # only with --contestants
        "ptgo-nofreeze": lambda m, a, g: ptgo.compile(m, options={"freezing": False}),
    }
    if TORCH2:
        c["inductor"] = lambda m, a, g: torch.compile(m)
        if max_autotune:
            c["max-autotune"] = lambda m, a, g: torch.compile(m, mode="max-autotune")
        c["dynamo+ptgo"] = lambda m, a, g: torch.compile(m, backend="ptgo", dynamic=False)
    return c


def measure(name, builders, threads, rounds):
    """Median and best seconds per call of every contestant, and its max error against eager on a
    late call (later calls reuse arenas, constants computed once and recycled outputs)."""
    set_threads(threads)
    base, args, grad = make(name)
    runs = {}
    for cname, build in builders.items():
        try:
            fn = build(copy.deepcopy(base), args, grad)
        except Exception as e:  # a peer that cannot compile this workload is reported, not fatal
            print("  %s: %s cannot build: %s" % (name, cname, str(e).splitlines()[0][:120]), flush=True)
            fn = None
        if fn is not None:
            runs[cname] = fn
    for fn in runs.values():  # compile and warm up
        for _ in range(3):
            step(fn, args, grad)
    # Repetitions per round: about 0.2 s of eager.
    t = timed(lambda: step(runs["eager"], args, grad), 1)
    reps = max(1, min(200, int(0.2 / max(t, 1e-6))))
    times = {c: [] for c in runs}
    order = list(runs)
    for r in range(rounds):
        # each round starts with another contestant: the first of a round measured slower by a
        # few percent (caches and allocator state the previous one left), always the same one
        for cname in order[r % len(order):] + order[:r % len(order)]:
            fn = runs[cname]
            times[cname].append(timed(lambda: step(fn, args, grad), reps))
    ref = step(runs["eager"], args, grad)
    out = {}
    for cname, fn in runs.items():
        out[cname] = {"ms": statistics.median(times[cname]) * 1e3, "best_ms": min(times[cname]) * 1e3,
                      "max_err": max_err(step(fn, args, grad), ref)}
    return out


# Ops whose time ptgo leaves to torch by design (DESIGN D5): BLAS products and convolutions.
EXTERN_OPS = ("aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::bmm", "aten::baddbmm",
              "aten::mkldnn_convolution", "mkldnn_prepacked::conv2d_run", "aten::_slow_conv2d_forward", "aten::thnn_conv2d",
              "aten::_nnpack_spatial_convolution", "aten::_convolution", "aten::slow_conv_dilated2d",
              "aten::convolution_backward", "aten::mkldnn_convolution_backward")


def where_time_goes(fn, args, grad, reps=10):
    """Self times under torch.profiler, grouped: externs, ptgo's kernels (generated, and its own
    depthwise convolution), other torch ops, and the rest of the wall time (guards, the runtime,
    Python)."""
    for _ in range(2):
        step(fn, args, grad)
    with torch.profiler.profile() as p:
        # the wall time of the calls only: the profiler's own start and stop (tens of ms) once
        # counted as "rest" and made gpt_block's 4.4 ms of matrix products look like 44%
        t0 = time.perf_counter()
        for _ in range(reps):
            step(fn, args, grad)
        wall = (time.perf_counter() - t0) * 1e6
    groups = {"externs": 0.0, "kernels": 0.0, "torch ops": 0.0}
    for e in p.key_averages():
        if e.key in EXTERN_OPS:
            groups["externs"] += e.self_cpu_time_total
        elif e.key.startswith("cpp_fused_") or e.key.startswith("ptgo::"):
            # ptgo's generated kernels and its hand-written ones (ptgo::depthwise_conv2d, A124)
            groups["kernels"] += e.self_cpu_time_total
        elif e.key.startswith("aten::"):
            groups["torch ops"] += e.self_cpu_time_total
    groups["rest"] = max(0.0, wall - sum(groups.values()))
    total = sum(groups.values()) or 1.0
    return {k: v / total for k, v in groups.items()}


def compile_time(name, contestant, cache_dir):
    """Seconds the first call of the contestant takes in a new process with the given cache
    directory (capture, compile or cache load), beyond what a steady-state call takes."""
    code = (
        "import sys, time, torch, warnings; warnings.simplefilter('ignore'); sys.path[:0] = [%r, %r]\n"
        "from run import make, step, contestants\n"
        "m, a, g = make(%r)\nc = contestants(True)[%r](m, a, g)\n"
        "t0 = time.perf_counter(); step(c, a, g); first = time.perf_counter() - t0\n"
        "steady = []\n"
        "for _ in range(3):\n"
        "    t0 = time.perf_counter(); step(c, a, g); steady.append(time.perf_counter() - t0)\n"
        "print(first - min(steady))\n" % (HERE, os.path.dirname(os.path.dirname(ptgo.__file__)), name, contestant)
    )
    env = dict(os.environ, PTGO_CACHE_DIR=os.path.join(cache_dir, "ptgo"),
               TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_dir, "inductor"), TRITON_CACHE_DIR=os.path.join(cache_dir, "triton"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print("compile time of %s/%s failed: %s" % (name, contestant, out.stderr.strip()[-300:]), file=sys.stderr)
        return float("nan")
    return float(out.stdout.strip().splitlines()[-1])


def extern_share(name, reps=10):
    """Fraction of eager's 1-thread time in EXTERN_OPS: 1 / share bounds what any compiler calling
    the same kernels can gain (Amdahl: all the rest free)."""
    set_threads(1)
    model, args, grad = make(name)
    return where_time_goes(model, args, grad, reps)["externs"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer rounds, no compile times")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--no-compile-times", action="store_true")
    ap.add_argument("--max-autotune", action="store_true", help="also torch.compile(mode='max-autotune')")
    ap.add_argument("--contestants", default="", help="comma-separated subset (ptgo-nofreeze only when named)")
    ap.add_argument("--cpu-time", action="store_true", help="time 1-thread runs by process CPU time (a shared machine)")
    opts = ap.parse_args()
    global CLOCK, CPU_TIME
    CPU_TIME = opts.cpu_time
    names = [n for n in ALL if not opts.only or n in opts.only.split(",")]
    threads = [int(t) for t in opts.threads.split(",")]
    rounds = 3 if opts.quick else 7
    builders = contestants(opts.max_autotune)
    if opts.contestants:
        builders = {k: v for k, v in builders.items() if k in opts.contestants.split(",") or k == "eager"}
    else:
        builders.pop("ptgo-nofreeze")
    compiled = [c for c in builders if c not in ("eager", "torchscript")]
    rows = []
    for name in names:
        row = {"workload": name, "grad": ALL[name][2], "threads": {}, "compile": {}}
        if not (opts.quick or opts.no_compile_times):
            for c in compiled:
                with tempfile.TemporaryDirectory() as cache:
                    row["compile"][c] = {"cold_s": compile_time(name, c, cache), "warm_s": compile_time(name, c, cache)}
        row["extern_share"] = extern_share(name)
        set_threads(1)
        m, a, g = make(name)
        row["ptgo_profile"] = where_time_goes(ptgo.compile(copy.deepcopy(m)), a, g)
        for t in threads:
            CLOCK = time.process_time if opts.cpu_time and t == 1 else time.perf_counter
            row["threads"][str(t)] = measure(name, builders, t, rounds)
        rows.append(row)
        print(summary_line(row), flush=True)
    geo = geomeans(rows)
    print("geomean speedup over eager: " + ", ".join("%s %dT %.2fx" % (c, int(t), v) for (c, t), v in sorted(geo.items())))
    write(rows, geo)


def speedups(row, t):
    """contestant -> speedup over eager at t threads (at 2 threads and more: over eager's best
    thread count measured)."""
    res = row["threads"].get(str(t))
    if not res:
        return {}
    eager = res["eager"]["ms"]
    if t > 1:
        eager = min(r["eager"]["ms"] for r in row["threads"].values())
    return {c: eager / r["ms"] for c, r in res.items() if c != "eager"}


def geomeans(rows):
    out = {}
    for t in {t for r in rows for t in r["threads"]}:
        per = {}
        for r in rows:
            for c, s in speedups(r, int(t)).items():
                per.setdefault(c, []).append(s)
        for c, v in per.items():
            out[(c, t)] = statistics.geometric_mean(v)
    return out


def summary_line(row):
    parts = []
    for t in sorted(row["threads"], key=int):
        parts.append("%sT " % t + " ".join("%s %.2fx" % (c, s) for c, s in speedups(row, int(t)).items()))
    return "%-26s %s" % (row["workload"], "  |  ".join(parts))


def write(rows, geo):
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"torch": torch.__version__, "ptgo": ptgo.__version__, "cpu": _cpu(), "date": time.strftime("%Y-%m-%d %H:%M"),
            "python": sys.version.split()[0]}
    with open(os.path.join(RESULTS, "results.json"), "w") as f:
        json.dump({"meta": meta, "geomean": {"%s@%sT" % k: v for k, v in geo.items()}, "rows": rows}, f, indent=1)
    cont = []
    for r in rows:
        for res in r["threads"].values():
            for c in res:
                if c not in cont:
                    cont.append(c)
    lines = [
        "# ptgo beside eager, TorchScript%s" % (" and torch.compile" if TORCH2 else ""), "",
        "%s, Python %s, torch %s, %s; written by `bench/run.py`, a report, not a test. Median time per call of "
        "interleaved rounds in one process, every contestant on its own copy of the model; *x* = speedup over "
        "eager (at 2 threads over eager's best thread count, since eager is often slower at 2 threads "
        "here); the best round's ratio in parentheses. Vision models: 1x3x224x224, eval, no_grad. "
        "*ptgo's time*: torch.profiler self times of ptgo's compiled call at 1 thread — externs (matrix "
        "products, convolutions: torch's kernels), ptgo's kernels (generated ones and its depthwise convolution), other torch ops, rest (guards, "
        "runtime, Python). *bound*: 1 / the extern share of eager's 1-thread time, the most any compiler "
        "calling the same kernels can gain.%s" % (meta["cpu"], meta["python"], meta["torch"], meta["date"],
                                                  " 1-thread times are this process's CPU time (--cpu-time)."
                                                  if CPU_TIME else ""), "",
    ]
    for t in sorted({t for r in rows for t in r["threads"]}, key=int):
        others = [c for c in cont if c != "eager"]
        lines += ["## %s thread%s" % (t, "" if t == "1" else "s"), "",
                  "| workload | eager ms | " + " | ".join(others) + " | max abs err (ptgo) |",
                  "|---|---|" + "---|" * len(others) + "---|"]
        for r in rows:
            res = r["threads"].get(t)
            if not res:
                continue
            sp = speedups(r, int(t))
            cells = []
            for c in others:
                if c not in res:
                    cells.append("—")
                    continue
                best = res["eager"]["best_ms"] / res[c]["best_ms"]
                cells.append("%.2f ms %.2fx (%.2fx)" % (res[c]["ms"], sp[c], best))
            lines.append("| %s | %.2f | %s | %.1e |" % (r["workload"], res["eager"]["ms"], " | ".join(cells),
                                                       res.get("ptgo", {}).get("max_err", float("nan"))))
        lines += ["", "Geomean: " + ", ".join("%s %.2fx" % (c, geo[(c, t)]) for c in others if (c, t) in geo), ""]
    lines += ["## Where ptgo's time goes (1 thread) and compile times", "",
              "| workload | externs | kernels | torch ops | rest | bound | " +
              " | ".join("%s cold s / warm s" % c for c in cont if c not in ("eager", "torchscript")) + " |",
              "|---|---|---|---|---|---|" + "---|" * len([c for c in cont if c not in ("eager", "torchscript")])]
    for r in rows:
        p = r["ptgo_profile"]
        comp = []
        for c in cont:
            if c in ("eager", "torchscript"):
                continue
            ct = r["compile"].get(c)
            comp.append("%.2f / %.2f" % (ct["cold_s"], ct["warm_s"]) if ct else "—")
        lines.append("| %s | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %s | %s |" % (
            r["workload"], 100 * p["externs"], 100 * p["kernels"], 100 * p["torch ops"], 100 * p["rest"],
            "%.2fx" % (1 / r["extern_share"]) if r["extern_share"] > 0 else "—", " | ".join(comp)))
    with open(os.path.join(RESULTS, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = [r["workload"] for r in rows]
        others = [c for c in cont if c != "eager"]
        fig, ax = plt.subplots(figsize=(max(10, len(names) * 0.8), 4.5))
        w = 0.8 / max(1, len(others))
        for k, c in enumerate(others):
            ax.bar([i + (k - (len(others) - 1) / 2) * w for i in range(len(names))],
                   [speedups(r, 1).get(c, 0) for r in rows], w, label=c)
        ax.axhline(1.0, color="gray", lw=1)
        ax.set_xticks(list(range(len(names))))
        ax.set_xticklabels(names, rotation=40, ha="right")
        ax.set_ylabel("speedup over eager, 1 thread")
        ax.set_title("torch %s" % torch.__version__)
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
