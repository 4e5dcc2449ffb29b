"""Floats read from tensors with .item() stay in the compiled graph (A136): Python float
arithmetic on them, tensor ops taking them as numbers, torch.optim's Adam family whose step
count is read with .item() every step — one graph, eager's values bit for bit, and eager's
exceptions (with eager's effects before them) where Python raises for the value."""
import copy
import json
import math

import pytest
import torch

import ptgo
from conftest import assert_same


def compiled_count():
    from ptgo import _C

    return json.loads(_C.request("inductor_stats", "{}"))["compiled"]


def same_as_eager(fn, *args, backend="inductor", calls=None):
    compiled = ptgo.compile(fn, backend=backend)
    for a in calls or [args]:
        ea = copy.deepcopy(a)
        ca = copy.deepcopy(a)
        want = got = None
        try:
            want = fn(*ea)
        except Exception as e:  # noqa: BLE001 - the exception is the result
            want = e
        try:
            got = compiled(*ca)
        except Exception as e:  # noqa: BLE001
            got = e
        if isinstance(want, Exception):
            assert type(got) is type(want) and str(got) == str(want), (got, want)
        else:
            assert_same(got, want)
        assert_same(ca, ea, "arguments after the call")
    return compiled


def adam_math(x, step):
    v = step.item()
    bc1 = 1 - 0.9 ** v
    bc2 = 1 - 0.999 ** v
    return x / math.sqrt(bc2) * (0.01 / bc1) - v


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_float_arithmetic_one_graph_bit_equal(backend):
    x = torch.randn(16)
    before = compiled_count()
    same_as_eager(adam_math, x, torch.tensor(3.0), backend=backend,
                  calls=[(x, torch.tensor(v)) for v in (1.0, 3.0, 7.5, 1e6)])
    if backend == "inductor":
        assert compiled_count() - before == 1  # one graph for every value


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("value,exc", [(0.0, ZeroDivisionError), (-1.0, ValueError)])
def test_python_exceptions_with_eager_effects(backend, value, exc):
    # eager writes acc before it divides by zero (or takes the square root of a negative
    # number): the compiled graph refuses the run before writing and torch's run of the captured
    # graph raises eager's exception after eager's write
    def f(acc, x, s):
        acc.add_(x)
        v = s.item()
        r = x * (1.0 / v) if value == 0.0 else x * math.sqrt(v)
        acc.mul_(2)
        return r

    x = torch.randn(8)
    same_as_eager(f, torch.zeros(8), x, torch.tensor(2.0), backend=backend,
                  calls=[(torch.zeros(8), x, torch.tensor(4.0)), (torch.zeros(8), x, torch.tensor(value))])
    with pytest.raises(exc):
        ptgo.compile(f, backend=backend)(torch.zeros(8), x, torch.tensor(value))


@pytest.mark.parametrize("base,exp", [(0.0, -1.0), (10.0, 400.0), (-8.0, 0.5), (2.0, 0.5), (-2.0, 3.0),
                                      (float("nan"), 0.0), (1.0, float("nan"))])
def test_power_is_pythons(base, exp):
    # 0 ** -1 raises ZeroDivisionError, an overflow OverflowError, a negative base to a
    # fractional power gives a complex number (the graph hands the run to torch, whose run is
    # Python's); the rest equal C's pow, as Python's do
    def f(x, b, e):
        r = b.item() ** e.item()
        return x * 1.0, r

    same_as_eager(f, torch.ones(2), torch.tensor(base, dtype=torch.float64), torch.tensor(exp, dtype=torch.float64))


def test_float_as_tensor_op_operand_promotes_as_a_python_number():
    # an int tensor times a Python float is float32 (the default dtype), a 0-d float32 tensor
    # plus one stays float32: the float is a Python number, never a 0-d float64 tensor
    def f(i, z, s):
        v = s.item()
        return i * v, z + v, torch.arange(3) / v

    same_as_eager(f, torch.arange(4), torch.tensor(1.5), torch.tensor(0.1, dtype=torch.float64))


def test_graph_break_hands_the_float_over():
    # a comparison needs the value: the graph ends there, the float it computed reaches the
    # resumed code as the same Python float
    def f(x, s):
        v = s.item() * 3
        w = v / 7
        if v > 1:
            return x + w, w
        return x - w, w

    same_as_eager(f, torch.randn(3), torch.tensor(2.0), calls=[(torch.randn(3), torch.tensor(v)) for v in (2.0, 0.1)])


def test_float16_operand_and_int_item_break_the_graph_and_equal_eager():
    def f(h, n, s):
        v = s.item()
        k = n.sum().item()
        return h * v, k + v

    same_as_eager(f, torch.randn(4).half(), torch.arange(3), torch.tensor(0.3))


def test_training_graph_with_an_item_scale():
    # a loss scale read with .item() in a training graph: gradients equal eager's
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x, scale):
            return self.lin(x).tanh().sum() * (scale.item() * 0.5)

    torch.manual_seed(0)
    m1 = M()
    m2 = copy.deepcopy(m1)
    c = ptgo.compile(m2)
    x = torch.randn(5, 4)
    for s in (2.0, 3.0):
        l1 = m1(x, torch.tensor(s))
        l2 = c(x, torch.tensor(s))
        l1.backward()
        l2.backward()
        assert_same(l2, l1)
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            assert_same(p2.grad, p1.grad)


OPTIMIZERS = {
    "Adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "Adam_amsgrad_wd": lambda p: torch.optim.Adam(p, lr=1e-2, amsgrad=True, weight_decay=0.1),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=1e-2),
    "NAdam": lambda p: torch.optim.NAdam(p, lr=1e-2),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2, lr_decay=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_reading_item_compile_once(name):
    if not ptgo._compat.for_torch(ptgo._compat.TORCH_CAPTURED_EXTRA):
        pytest.skip("torch.optim runs eagerly on this torch (_compat.TORCH_CAPTURED_EXTRA)")
    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    m2 = copy.deepcopy(m1)
    o1, o2 = OPTIMIZERS[name](m1.parameters()), OPTIMIZERS[name](m2.parameters())
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 16)
    counts = []
    for i in range(5):
        for m, o, st in ((m1, o1, o1.step), (m2, o2, step)):
            o.zero_grad()
            m(x).square().mean().backward()
            st()
        for (k, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            assert_same(p2, p1, path=k)
        assert_same(o2.state_dict(), o1.state_dict(), "state_dict")
        counts.append(compiled_count())
    assert counts[-1] == counts[1]  # every step after the first (which makes the state) is one graph


def test_ops_that_cannot_take_the_float_break_cleanly(ptgo_log):
    # a rounding division, clamp's bound, full's value: the graph breaks there (no compiler
    # error), and every result equals eager's
    ptgo.set_logs("graph_breaks")

    def f(x, s):
        v = s.item()
        return x.div(v, rounding_mode="floor"), torch.rsub(x, v), x.clamp(max=v), torch.full((2,), v), x.add(x, alpha=v)

    same_as_eager(f, torch.randn(5) * 4, torch.tensor(1.5))
    assert "BUG" not in ptgo_log.text, ptgo_log.text
