"""Python float arguments read at run time (primtorch/symfloat.go, bytecode/symfloat.go).

A float argument whose value changes between calls becomes a graph input (automatic dynamic, as
for ints): one graph serves every value, and every value gives eager's result bit for bit. Any
use of the value ptgo cannot read at run time specialises it under a guard, so no call is ever
served a result computed for another value.
"""

import json
import math
import warnings

import pytest
import torch

import ptgo
from ptgo import _C
from conftest import assert_same


def compiled_count():
    log = (json.loads(_C.request("compile_log", "{}")) or []) if _C.go_loaded() else []
    return sum(1 for r in log if r.get("compiled"))


BACKENDS = ["eager", "aot_eager", "inductor"]
VALUES = [0.1, 0.7, -3.3, 1e-30, 2.5, float("inf"), -0.0, 0.0, float("nan"), 1 / 3, -7e20]


def exactly(actual, expected, what):
    """Same dtype, shape and values, NaN where eager has NaN, signed zeros and infinities alike."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, what
    if expected.is_floating_point():
        nan = expected.isnan()
        assert torch.equal(actual.isnan(), nan), what
        assert torch.equal(actual[~nan], expected[~nan]), what
        assert torch.equal(actual[~nan].signbit(), expected[~nan].signbit()), what
    else:
        assert torch.equal(actual, expected), what


def scale_shift(x, a):
    return x * a + a


def mixed(x, a):
    return (a - x) / a, a / x, x.div(a), torch.add(x, a), x.sub(a), torch.rsub(x, a)


def in_place(x, a):
    y = x.clone()
    y.mul_(a)
    y += a
    return y


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_argument_sweep_compiles_twice(backend):
    cf = ptgo.compile(lambda x, t: torch.softmax(x / t, -1) * t, backend=backend)
    x = torch.randn(6, 40)
    for t in [1.0, 0.7, 0.5, 0.3, 2.0, 1.5, 0.9, 0.05, 3.0, 1.25]:
        assert_same(cf(x, t), torch.softmax(x / t, -1) * t, "temperature %r" % t)
    assert compiled_count() <= 2


@pytest.mark.parametrize("fn", [scale_shift, mixed, in_place], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool], ids=str)
def test_float_argument_values_exact(fn, dtype):
    cf = ptgo.compile(fn)
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache-limit warning: one graph serves every value
        for a in VALUES:
            x = (torch.randn(4, 33, generator=g) * 10).to(dtype) if dtype != torch.bool else torch.randn(4, 33, generator=g) > 0
            try:
                want = fn(x, a)
            except RuntimeError as e:
                with pytest.raises(type(e), match=str(e)[:40]):
                    cf(x, a)
                continue
            got = cf(x, a)
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, tuple) else (got,)
            for i, (r, e) in enumerate(zip(got, want)):
                exactly(r, e, "%s output %d with a=%r" % (dtype, i, a))
    assert compiled_count() <= 2


def test_float_symbol_in_the_kernel(ptgo_log, monkeypatch):
    """The C kernel reads the float from its floats argument; the graph names the symbol."""
    monkeypatch.setattr(ptgo.config, "assume_dynamic", False)  # automatic dynamic, even under PTGO_DYNAMIC=1
    cf = ptgo.compile(scale_shift)
    ptgo.set_logs("dynamic,output_code")
    x = torch.randn(64)
    for a in (0.5, 0.25, 0.125):
        exactly(cf(x, a), scale_shift(x, a), "a=%r" % a)
    text = ptgo_log.text
    assert "float argument a became dynamic: it changed from 0.5 to 0.25" in text
    assert "floats[0]" in text
    log = json.loads(_C.request("compile_log", "{}"))
    assert any('symfloat("f0")' in (r.get("graph") or "") for r in log), [r.get("graph") for r in log]
    assert compiled_count() == 2


def test_item_graph_break_does_not_recompile_per_value():
    """A comparison of a float read with .item() breaks the graph; the float it hands to the
    resumed frame is read at run time."""

    def f(x):
        s = x.abs().sum().item()
        if s > 1e9:
            return x
        return (x / s).cos() * s

    cf = ptgo.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            x = torch.randn(8, 8)
            assert_same(cf(x), f(x))
    # the first frame, and the resumed one: static, then with the float read at run time
    assert compiled_count() <= 3


def test_kernel_reading_a_float_is_not_a_constant():
    """A kernel whose inputs are all parameters but that reads a float runs on every call (a
    Once kernel would serve the first value's result forever)."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(16))

        def forward(self, x, a):
            return x + (self.w * a).exp()

    m = M().eval()
    cm = ptgo.compile(m)
    x = torch.randn(4, 16)
    with torch.no_grad():
        for a in [0.1, 0.2, 0.3, 0.4, 0.5, -1.0, 2.0]:
            assert_same(cm(x, a), m(x, a), "a=%r" % a)


def test_uses_that_need_the_value_are_guarded():
    """Python arithmetic, a comparison, or an op that reads its argument's value specialise the
    float under a guard: every call still gets its own value's result."""

    def f(x, a):
        y = x * a  # read at run time
        if a > 0.5:  # a Python branch: specialised
            y = y + 1
        return torch.clamp(y, max=a * 2) + torch.full((1,), a)  # clamp's bound and full: specialised

    cf = ptgo.compile(f)
    x = torch.randn(32)
    for a in [0.1, 0.9, 0.3, 0.7, 0.5, 0.6]:
        exactly(cf(x, a), f(x, a), "a=%r" % a)


def test_dynamic_false_specialises_floats():
    cf = ptgo.compile(scale_shift, dynamic=False)
    x = torch.randn(8)
    for a in [0.1, 0.2, 0.3]:
        exactly(cf(x, a), scale_shift(x, a), "a=%r" % a)
    assert compiled_count() == 3


def test_specialised_float_guards_compare_bits():
    """A graph specialised for -0.0 is not served for 0.0 (x * a has the other signed zeros),
    and a NaN argument equals itself (no recompile per call)."""
    cf = ptgo.compile(lambda x, a: x * a, dynamic=False)
    x = -torch.ones(3)
    for a in [-0.0, 0.0, -0.0]:
        exactly(cf(x, a), x * a, "a=%r" % a)
    assert compiled_count() == 2
    nan = float("nan")
    for _ in range(3):
        assert cf(x, nan).isnan().all()
    assert compiled_count() == 3


def test_float_then_int_argument():
    """The float input's guard is its type: an int in its place compiles anew (int * tensor has
    other dtype rules), and both give eager's results."""
    cf = ptgo.compile(scale_shift)
    x = torch.arange(6)
    for a in [0.5, 1.5, 2.5, 3, 4, 2.0, True]:
        exactly(cf(x, a), scale_shift(x, a), "a=%r" % (a,))


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_argument_in_training(backend):
    def f(x, w, a):
        return ((x @ w) * a).tanh().sum() * a

    cf = ptgo.compile(f, backend=backend)
    torch.manual_seed(0)
    x = torch.randn(5, 7)
    for a in [0.1, 0.3, -0.5, 2.0, 0.25, 1.5, 0.05, 0.75, 3.0, 0.6]:
        w1 = torch.randn(7, 3, requires_grad=True)
        w2 = w1.detach().clone().requires_grad_()
        got, want = cf(x, w1, a), f(x, w2, a)
        got.backward()
        want.backward()
        assert_same(got, want, "a=%r" % a)
        assert_same(w1.grad, w2.grad, "grad a=%r" % a)
    assert not math.isnan(got.item())


def test_backward_through_a_written_saved_value_raises_with_a_float_input():
    """Fuzz seed 129: autograd_probe (does eager's backward refuse the graph?) ran the graph on
    dummy tensors and gave up on a float input, so ptgo's backward succeeded where eager's
    raises "modified by an inplace operation"."""
    ln = torch.nn.LayerNorm(4)

    def f(x):
        s = x.sum().item()
        v = x * s
        y = ln(v)
        v.mul_(2)
        return y

    cf = ptgo.compile(f)
    for k in range(3):
        x = torch.rand(2, 4) + k
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            f(x).sum().backward()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            cf(x).sum().backward()
