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


_tspec = importlib.util.spec_from_file_location(
    "ptgo_bench_train", os.path.join(os.path.dirname(__file__), "..", "bench", "train.py"))
_train = importlib.util.module_from_spec(_tspec)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
try:
    _tspec.loader.exec_module(_train)
finally:
    sys.path.pop(0)


@pytest.mark.parametrize("name", ["mlp_sgd", "cnn_bn_dropout_sgd"])
def test_training_step_workload_equals_eager_and_settles(name):
    # bench/train.py's whole training step compiled (zero_grad, forward, loss, backward, the
    # optimizer's step): the same parameters as eager's after each step (same seeds, so dropout
    # draws the same masks), and no compile after the second step
    from ptgo import _C
    import json

    ctor, mk_x, mk_t, loss_fn, mk_opt = _train.WORKLOADS[name]
    torch.manual_seed(0)
    m1 = ctor().train()
    m2 = __import__("copy").deepcopy(m1)
    x, t = mk_x(), mk_t()
    eager = _train.make_step(m1, mk_opt(m1.parameters()), loss_fn)
    compiled = ptgo.compile(_train.make_step(m2, mk_opt(m2.parameters()), loss_fn))
    n = None
    for i in range(5):
        torch.manual_seed(i)
        l1 = eager(x, t)
        torch.manual_seed(i)
        l2 = compiled(x, t)
        assert_same(l2, l1)
        for (k, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            assert_same(p2, p1, path=k)
        for b1, b2 in zip(m1.buffers(), m2.buffers()):
            assert_same(b2, b1)
        if i == 1:
            n = json.loads(_C.request("inductor_stats", "{}"))["compiled"]
    assert json.loads(_C.request("inductor_stats", "{}"))["compiled"] == n
