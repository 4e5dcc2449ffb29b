"""The benchmark workloads are captured as one graph each, with eager's results."""
import importlib.util
import os
import sys

import pytest
import torch

import ptgo
from conftest import assert_same

# bench/models.py loaded by path, so bench/ never comes before the standard library on sys.path
# (no file in bench/ may be named like a standard module: torch 2's torch._dynamo imports
# cProfile, which imports `profile`; the profiler script is bench/profile_plan.py for that).
_spec = importlib.util.spec_from_file_location(
    "ptgo_bench_models", os.path.join(os.path.dirname(__file__), "..", "bench", "models.py"))
_models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_models)
WORKLOADS = _models.WORKLOADS


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_one_graph(name, counter):
    make, inputs, grad = WORKLOADS[name]
    torch.manual_seed(0)
    m = make()
    m.train(grad)
    args = inputs()
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        out = ptgo.compile(m, backend=counter)(*args)
        ref = m(*args)
    assert_same(out, ref)
    assert counter.frame_count == 1


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_workload_inductor(name):
    make, inputs, grad = WORKLOADS[name]
    torch.manual_seed(0)
    m = make()
    m.train(grad)
    args = inputs()
    ctx = torch.enable_grad() if grad else torch.no_grad()
    compiled = ptgo.compile(m)
    # Every call, not only the first: later calls reuse the arena, constants computed once and
    # recycled output storage (gpt_block once gave NaN from its second call on).
    for call in range(3):
        with ctx:
            x = [a + 0.25 * call for a in args]
            out = compiled(*x)
            ref = m(*x)
        assert_same(out, ref)


def test_no_module_shadows_the_standard_library():
    """bench/ and tests/ go to the front of sys.path (scripts, these tests): a file named like a
    standard module (bench/profile.py) shadows it for everything imported later (torch 2's
    torch._dynamo imports cProfile, which imports profile)."""
    root = os.path.join(os.path.dirname(__file__), "..")
    names = set(sys.stdlib_module_names) if hasattr(sys, "stdlib_module_names") else {"profile", "test", "types"}
    shadows = []
    for d in ("bench", "tests", os.path.join("tests", "fuzz")):
        for f in os.listdir(os.path.join(root, d)):
            mod = f[:-3] if f.endswith(".py") else f if os.path.isdir(os.path.join(root, d, f)) else None
            if mod in names:
                shadows.append(os.path.join(d, f))
    assert shadows == [], "rename these: they shadow standard modules"
