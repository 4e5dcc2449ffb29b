"""The benchmark workloads are captured as one graph each, with eager's results."""
import importlib.util
import os

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
