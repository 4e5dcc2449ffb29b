"""Where a workload's time goes: per plan step of ptgo's compiled graph (the C++ runtime's
Graph.profile) next to eager's per-op times (torch.profiler). A report for tuning, not a test.

Usage: .venv/bin/python bench/profile_plan.py [--threads 1] [--reps 200] workload [workload ...]
"""
import argparse
import importlib.util
import os
import sys
import time

import torch

from threads import set_threads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if importlib.util.find_spec("ptgo") is None:
    # the checkout's ptgo when none is installed; the torch 2 venv has its own build (the
    # checkout's C extensions are built against Debian's torch 1.13 and abort under torch 2)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from ptgo import _runtime  # noqa: E402
from run import make, step  # noqa: E402


def capture_graphs(name):
    """Compiles the workload and runs it once; returns the model, the compiled model, its inputs
    and, per runtime graph built, a second Graph object of the same plan with the arguments
    the compiled model last called it with."""
    graphs = []
    orig = _runtime.make_compiled_graph

    def record(plan_json, lib_path, consts, rerun=None):
        from ptgo import _fast

        g = orig(plan_json, lib_path, consts, rerun)
        entry = [graph_for_profile(plan_json, lib_path, consts), None]
        graphs.append(entry)

        def recorded(*args):
            entry[1] = args
            return g(*args)

        return recorded

    _runtime.make_compiled_graph = record
    try:
        model, args, grad = make(name)
        ptgo.reset()
        compiled = ptgo.compile(model)
        step(compiled, args, grad)
    finally:
        _runtime.make_compiled_graph = orig
    # compile again without the recording wrappers, for the timings
    ptgo.reset()
    fast = ptgo.compile(model)
    step(fast, args, grad)
    return model, fast, args, grad, graphs


def graph_for_profile(plan_json, lib_path, consts):
    """A second runtime Graph object of a compiled graph's plan, for Graph.profile."""
    from ptgo import _fast

    plan, externs = _runtime._decode_plan(plan_json)
    return _fast.Graph(plan, lib_path, externs, list(consts), None)


def per_call(fn, reps):
    for _ in range(3):
        fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="+")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=200)
    opts = ap.parse_args()
    set_threads(opts.threads)
    for name in opts.workloads:
        model, compiled, args, grad, graphs = capture_graphs(name)
        te = per_call(lambda: step(model, args, grad), opts.reps)
        tc = per_call(lambda: step(compiled, args, grad), opts.reps)
        print("== %s (%d thread%s): eager %.3f ms, ptgo %.3f ms, %.2fx" % (
            name, opts.threads, "" if opts.threads == 1 else "s", te * 1e3, tc * 1e3, te / tc))
        for g, gargs in graphs:
            if gargs is None:
                continue
            prof = g.profile(tuple(gargs), opts.reps)
            total = sum(t for _, t in prof)
            print("  ptgo plan: %.3f ms per call in steps" % (total / opts.reps * 1e3))
            for label, t in prof:
                if t / opts.reps >= 1e-6:
                    print("    %8.1f us  %s" % (t / opts.reps * 1e6, label))
        with torch.no_grad() if not grad else torch.enable_grad():
            with torch.profiler.profile() as p:
                for _ in range(opts.reps):
                    step(model, args, grad)
        print("  eager ops (self CPU time per call):")
        for ev in sorted(p.key_averages(), key=lambda e: -e.self_cpu_time_total)[:15]:
            print("    %8.1f us  %s x%d" % (ev.self_cpu_time_total / opts.reps, ev.key, ev.count // opts.reps))


if __name__ == "__main__":
    main()
