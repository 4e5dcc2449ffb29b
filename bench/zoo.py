"""The model zoo report: what ptgo captures of each zoo model (bench/zoo_models.py) and how fast the
default backend runs it, in eval mode under torch.no_grad() at 1 thread.

Per model: capture time (the first compiled call minus a steady-state call, in a new process with
an empty kernel cache, and ptgo's own compile-time records from its compile log), graphs per forward, ops per
graph, graph breaks with their reasons (from ptgo.explain), the default backend's steady-state
time against eager (median of interleaved repetitions, as bench/run.py measures; the best
repetitions' ratio beside it) and the largest difference from eager (absolute, and relative to
max|eager|). Writes bench/results/zoo.md and zoo.json. A report, not a test.

Usage: .venv/bin/python bench/zoo.py [--quick] [--only name,name]
"""
import argparse
import importlib.util
import collections
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
from run import RESULTS, _cpu, max_err, timed  # noqa: E402
from zoo_models import ZOO, make, tensors  # noqa: E402


def call(model, args, kwargs):
    with torch.no_grad():
        return model(*args, **kwargs)


def out_err(out_c, out_e):
    """(max abs difference, that / max|eager|) over the output's tensors."""
    pairs = list(zip(tensors(out_c), tensors(out_e)))
    err = max(max_err(a, b) for a, b in pairs)
    scale = max(b.detach().double().abs().max().item() for _, b in pairs)
    return err, err / scale if scale else err


def breaks_summary(explained):
    """Distinct break reasons with how often each occurred: [(count, kind, reason, where)]."""
    seen = collections.Counter()
    for b in explained.break_reasons:
        reason = b.reason.split(" at 0x")[0].split(" object at ")[0]
        where = b.user_stack.rsplit("/", 1)[-1].rsplit(":", 1)[0] if b.user_stack else ""
        seen[(b.kind, reason, where)] += 1
    return [(n, k, r, w) for (k, r, w), n in seen.items()]


def capture_time(name):
    """In a new process with an empty kernel cache (as CI starts): the first compiled call's time
    beyond a steady-state call, and the seconds ptgo's compile log records."""
    code = (
        "import json, sys, time, warnings, torch; sys.path[:0] = [%r, %r]\n"
        "warnings.simplefilter('ignore')\n"
        "import ptgo\nfrom ptgo import _C\nfrom zoo import call\nfrom zoo_models import make\n"
        "from threads import set_threads\nset_threads(1)\n"
        "m, a, k = make(%r)\nm.eval()\nc = ptgo.compile(m)\n"
        "t0 = time.perf_counter(); call(c, a, k); first = time.perf_counter() - t0\n"
        "log = json.loads(_C.request('compile_log', '{}')) or []\n"
        "steady = []\n"
        "for _ in range(3):\n"
        "    t0 = time.perf_counter(); call(c, a, k); steady.append(time.perf_counter() - t0)\n"
        "print(json.dumps([first - min(steady), first, sum(r.get('seconds', 0.0) for r in log)]))\n"
        % (HERE, os.path.join(HERE, "..", "python"), name))
    with tempfile.TemporaryDirectory(prefix="ptgo-zoo-kernels-") as cache:
        env = dict(os.environ, PTGO_CACHE_DIR=cache)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print("capture-time run of %s failed:\n%s" % (name, out.stderr[-2000:]), file=sys.stderr)
        return float("nan"), float("nan"), float("nan")
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def report(name, rounds, reps_target):
    set_threads(1)
    warnings.simplefilter("ignore")  # torch's own prototype warnings; ptgo's are counted below
    model, args, kwargs = make(name)
    model.eval()
    ref = copy.deepcopy(model)

    # What ptgo captures (counting backend inside explain), then a fresh compile for timing.
    with torch.no_grad():
        explained = ptgo.explain(model)(*args, **kwargs)
    ptgo.reset()
    compiled = ptgo.compile(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        out_c = call(compiled, args, kwargs)
        first_in_run = time.perf_counter() - t0
        steady = []
        for _ in range(3):
            t0 = time.perf_counter()
            call(compiled, args, kwargs)
            steady.append(time.perf_counter() - t0)
    ptgo_warnings = sorted({str(w.message).split(";")[0] for w in caught if str(w.message).startswith("ptgo")})
    out_e = call(ref, args, kwargs)
    err, rel = out_err(out_c, out_e)

    t_est = max(min(steady), 1e-5)
    reps = max(1, int(reps_target / t_est))
    te, tc = [], []
    for _ in range(rounds):  # interleaved: both see the same machine state
        te.append(timed(lambda: call(ref, args, kwargs), reps))
        tc.append(timed(lambda: call(compiled, args, kwargs), reps))
    # a late call too: later calls reuse the arena and recycled outputs
    err2, rel2 = out_err(call(compiled, args, kwargs), call(ref, args, kwargs))
    spec = ZOO[name]
    capture, first, compile_s = capture_time(name)
    return {
        "model": name, "family": spec.family, "size": spec.size, "config": spec.config,
        "graphs": explained.graph_count, "ops_per_graph": [len(o) for o in explained.ops_per_graph],
        "breaks": breaks_summary(explained), "graph_break_count": explained.graph_break_count,
        "capture_s": capture, "first_call_s": first, "ptgo_compile_s": compile_s,
        "capture_s_in_run": first_in_run - min(steady),
        "explain_compile_s": sum(explained.compile_times.values()),
        "eager_ms": statistics.median(te) * 1e3, "ptgo_ms": statistics.median(tc) * 1e3,
        "speedup": statistics.median(te) / statistics.median(tc), "speedup_best": min(te) / min(tc),
        "reps": reps, "rounds": rounds, "max_abs_err": max(err, err2), "max_rel_err": max(rel, rel2),
        "ptgo_warnings": ptgo_warnings,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--only", default="", help="comma-separated model names")
    opts = ap.parse_args()
    only = [n for n in opts.only.split(",") if n]
    unknown = set(only) - set(ZOO)
    if unknown:
        ap.error("unknown models: %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(ZOO)))
    names = [n for n in ZOO if not only or n in only]
    rounds, reps_target = (3, 0.05) if opts.quick else (7, 0.2)
    # The timed runs use an empty kernel cache of their own (the user's is left alone); capture
    # times come from a new process per model with an empty cache.
    cache = tempfile.TemporaryDirectory(prefix="ptgo-zoo-kernels-")
    os.environ["PTGO_CACHE_DIR"] = cache.name  # read when Go starts, at the first compile
    rows = []
    for name in names:
        r = report(name, rounds, reps_target)
        rows.append(r)
        print("%-34s %2d graph(s)  ops %-14s capture %6.2fs  eager %8.2f ms  ptgo %8.2f ms  %5.2fx (best %5.2fx)  "
              "max err %.1e (rel %.1e)%s" % (
                  name, r["graphs"], _ops(r["ops_per_graph"]), r["capture_s"], r["eager_ms"], r["ptgo_ms"],
                  r["speedup"], r["speedup_best"], r["max_abs_err"], r["max_rel_err"],
                  "  ptgo warnings: %d" % len(r["ptgo_warnings"]) if r["ptgo_warnings"] else ""), flush=True)
    geo = statistics.geometric_mean([r["speedup"] for r in rows])
    geo_best = statistics.geometric_mean([r["speedup_best"] for r in rows])
    print("geomean speedup at 1 thread: %.2fx (best repetitions %.2fx)" % (geo, geo_best))
    if not only:
        write(rows, geo, geo_best, opts)
    else:
        print("--only: bench/results/zoo.md and zoo.json not written (they report the whole zoo)")
    cache.cleanup()


def _ops(ops):
    if len(ops) <= 3:
        return ",".join(map(str, ops))
    return "%d..%d (%d total)" % (min(ops), max(ops), sum(ops))


def write(rows, geo, geo_best, opts):
    os.makedirs(RESULTS, exist_ok=True)
    meta = {"torch": torch.__version__, "torchvision": _tv_version(), "ptgo": ptgo.__version__, "cpu": _cpu(),
            "threads": 1, "date": time.strftime("%Y-%m-%d %H:%M"), "quick": opts.quick}
    with open(os.path.join(RESULTS, "zoo.json"), "w") as f:
        json.dump({"meta": meta, "geomean_speedup": geo, "geomean_speedup_best": geo_best, "rows": rows}, f,
                  indent=1)
    lines = [
        "# The model zoo: ptgo's default backend vs eager, eval mode, 1 thread", "",
        "Numbers from a 2-core machine shared with other developers' builds and tests (%s), torch %s, "
        "torchvision %s, %s; written by `bench/zoo.py`, a report, not a test. Eval mode under torch.no_grad(), "
        "`set_threads(1)` (torch and OpenBLAS), random initialisation (weights=None), inputs as in *input*. "
        "*graphs*: graphs per forward (ptgo.explain); *ops*: ops per graph; *capture s*: first compiled call "
        "minus a steady-state call, in a new process with an empty kernel cache as in CI (capture, "
        "decomposition, C compilation); *ptgo compile s*: the seconds ptgo's compile log records for the "
        "frames of that call; "
        "*eager / ptgo ms*: median of %d interleaved rounds; *speedup* = eager / ptgo, *best* = ratio of the "
        "fastest rounds (other processes only ever add time); *max err*: largest absolute difference from "
        "eager on the first and a late call, *rel* = that / max|eager| (random-init BatchNorm models reach "
        "outputs of 1e11: inception_v3). Models marked † are torchvision's classes with a smaller "
        "configuration (below)." % (
            meta["cpu"], meta["torch"], meta["torchvision"], meta["date"], rows[0]["rounds"] if rows else 0), "",
        "| model | input | graphs | ops | breaks | capture s | ptgo compile s | eager ms | ptgo ms | speedup | best | max err | rel err |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| %s%s | %s | %d | %s | %d | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.1e | %.1e |" % (
            r["model"], " †" if r["config"] and r["family"] == "torchvision" else "", r["size"], r["graphs"],
            _ops(r["ops_per_graph"]), r["graph_break_count"], r["capture_s"], r["ptgo_compile_s"], r["eager_ms"],
            r["ptgo_ms"], r["speedup"], r["speedup_best"], r["max_abs_err"], r["max_rel_err"]))
    lines += ["", "Geomean speedup at 1 thread: %.2fx (medians), %.2fx (best rounds)." % (geo, geo_best), ""]
    broken = [r for r in rows if r["breaks"] or r["ptgo_warnings"]]
    if broken:
        lines += ["## Graph breaks", "",
                  "Distinct reasons per model (count × kind: reason, file); ptgo warnings of the timed compile.", ""]
        for r in broken:
            lines.append("- **%s** (%d graphs):" % (r["model"], r["graphs"]))
            for n, kind, reason, where in r["breaks"]:
                lines.append("  - %d × %s: %s (%s)" % (n, kind, reason, where))
            for w in r["ptgo_warnings"]:
                lines.append("  - warning: %s" % w)
        lines.append("")
    configured = [r for r in rows if r["config"]]
    if configured:
        lines += ["## Configurations", ""]
        for r in configured:
            lines.append("- **%s**: `%s`" % (r["model"], r["config"]))
        lines.append("")
    with open(os.path.join(RESULTS, "zoo.md"), "w") as f:
        f.write("\n".join(lines))


def _tv_version():
    import torchvision

    return torchvision.__version__


if __name__ == "__main__":
    main()
