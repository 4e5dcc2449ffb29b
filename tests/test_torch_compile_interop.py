"""ptgo and torch 2's own compile stack in one process.

A torch.compile'd callable called from ptgo-compiled code is a graph break: it runs as
torch.compile made it (its frames belong to torch.compile's frame evaluator, never to ptgo's),
and ptgo captures the code around it. ptgo-compiled code called from a torch.compile'd function
runs ptgo's compiled code. torch.compiler.disable, torch._dynamo.disable and
torch._disable_dynamo run their function eagerly, outside any graph; torch.compiler.is_compiling()
answers as eagerly while ptgo traces (ptgo.is_compiling() is ptgo's flag). Every result is eager's. torch 1.13 has no torch.compile: there these
tests do not apply.
"""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

pytestmark = pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch 1.13 has no torch.compile")


class DynamoCounter:
    """A torch.compile backend counting the graphs Dynamo gives it (runs them with torch)."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward


def test_torch_compiled_function_inside_ptgo(counter, ptgo_log):
    ptgo.set_logs("graph_breaks")
    dyn = DynamoCounter()

    def g(x):
        return torch.sin(x) * 2

    gc = torch.compile(g, backend=dyn)

    def f(x):
        y = torch.relu(x) + 1
        z = gc(y)
        return z * 3 + y

    cf = ptgo.compile(f, backend=counter)
    x = torch.randn(8)
    assert_same(cf(x), f(x))
    # ptgo captured both sides of the break, Dynamo compiled g: no frame of g's went to ptgo.
    assert counter.frame_count == 2
    assert [t for t in counter.targets(0)] == ["relu", "add"]
    assert len(dyn.graphs) == 1
    assert "torch.compile'd" in ptgo_log.text and "g" in ptgo_log.text
    # Cached on both sides; capture goes on after the torch.compile'd call returned.
    x2 = torch.randn(8)
    assert_same(cf(x2), f(x2))
    assert counter.frame_count == 2 and len(dyn.graphs) == 1
    assert counter.calls == 4


def test_ptgo_function_inside_torch_compiled(counter):
    dyn = DynamoCounter()

    def h(x):
        return torch.cos(x) - 1

    hc = ptgo.compile(h, backend=counter)

    def k(x):
        return hc(x * 2) + x

    kc = torch.compile(k, backend=dyn)
    x = torch.randn(8)
    assert_same(kc(x), k(x))
    assert counter.frame_count == 1, "ptgo compiled h"
    assert len(dyn.graphs) >= 1
    assert_same(kc(x), k(x))
    assert counter.frame_count == 1
    # ptgo's capture still works afterwards.
    m = ptgo.compile(lambda x: x * 5 + 2, backend=counter)
    assert_same(m(x), x * 5 + 2)
    assert counter.frame_count == 2


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.lin(x))


class Outer(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.inner(x * 2) + x)


@pytest.mark.parametrize("how", ["torch.compile(module)", "module.compile()"])
def test_torch_compiled_submodule_inside_ptgo(counter, how):
    torch.manual_seed(0)
    dyn = DynamoCounter()
    inner = Inner()
    if how == "module.compile()":
        inner.compile(backend=dyn)
    else:
        inner = torch.compile(inner, backend=dyn)
    model = Outer(inner)
    x = torch.randn(3, 8)
    want = model(x)
    n_eager = len(dyn.graphs)
    got = ptgo.compile(model, backend=counter)(x)
    assert_same(got, want)
    assert counter.frame_count == 2, "ptgo captured the code before and after the submodule"
    assert "tanh" not in counter.targets(0) + counter.targets(1), "the submodule is torch.compile's"
    assert len(dyn.graphs) == n_eager, "Dynamo's cache served the call from ptgo's frame"


def test_disabled_functions_run_eagerly_outside_the_graph(counter):
    import torch._dynamo

    @torch.compiler.disable
    def a(x):
        return torch.exp(x)

    @torch._dynamo.disable
    def b(x):
        return torch.log1p(x)

    @torch._disable_dynamo
    def c(x):
        return torch.sigmoid(x)

    def f(x):
        return c(b(a(x * 2) + 1) - 1) * 3

    x = torch.randn(5)
    assert_same(ptgo.compile(f, backend=counter)(x), f(x))
    ops = [t for i in range(counter.frame_count) for t in counter.targets(i)]
    assert "exp" not in ops and "log1p" not in ops and "sigmoid" not in ops, ops
    assert "mul" in ops


def test_torch_is_compiling_answers_as_eagerly_while_ptgo_traces(counter):
    import torch._dynamo

    def f(x):
        a = x + 1 if torch.compiler.is_compiling() else x - 1
        b = a * 2 if torch._dynamo.is_compiling() else a * 3
        c = b if torch.compiler.is_exporting() else -b
        return c + 1 if ptgo.is_compiling() else c

    x = torch.randn(4)
    got = ptgo.compile(f, backend=counter)(x)
    # eager's branches for torch's flags (torch's own code then runs as eagerly: torch 2's
    # TransformerEncoder keeps its nested-tensor path), ptgo's flag is True
    assert_same(got, -((x - 1) * 3) + 1)
    assert_same(f(x), -((x - 1) * 3))
    assert_same(torch.compile(f, backend="eager")(x), -((x + 1) * 2))  # torch.compile's branches
    assert counter.frame_count == 1


def test_torch_compile_with_ptgo_backend():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    x = torch.randn(5, 8)
    assert_same(torch.compile(m, backend="ptgo")(x), m(x))
