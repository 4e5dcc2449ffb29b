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


# ---- Python arithmetic and comparisons on float arguments (A138) ----------------------------
#
# Arithmetic on a float argument stays in the graph, computed in float64 as Python computes it;
# a comparison decides at this call's value under a guard that recomputes it on each call, so a
# value on the same side reuses the graph and one on the other side recompiles.


def compiles_of(fn):
    """Graphs compiled for fn's code object so far."""
    log = (json.loads(_C.request("compile_log", "{}")) or []) if _C.go_loaded() else []
    return sum(1 for r in log if r.get("compiled") and r.get("name", fn.__name__) == fn.__name__)


def outcome(fn, *args):
    """fn's results, or the exception it raised (type and message)."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with eager's
        return (type(e), str(e))


def same_outcome(got, want, what):
    if isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], type):
        assert got == want, "%s: %r, eager %r" % (what, got, want)
        return
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want), what
    for i, (r, e) in enumerate(zip(got, want)):
        if isinstance(e, torch.Tensor):
            exactly(r, e, "%s output %d" % (what, i))
        else:
            assert type(r) is type(e), "%s output %d: %r, eager %r" % (what, i, r, e)
            assert r == e or (r != r and e != e), "%s output %d: %r, eager %r" % (what, i, r, e)
            if isinstance(e, float):
                assert math.copysign(1, r) == math.copysign(1, e), "%s output %d: %r, eager %r" % (what, i, r, e)


def arithmetic(x, a):
    b = 1 - a
    c = (a * 0.5 + 2) / 3
    d = -a ** 2 + abs(a) - float(a)
    return x * b, x + c, x.mul(d), x * (a // 0.3), x - (a % 0.3), x * (2.0 ** -abs(a)), b * c


ARITH_VALUES = [0.25, 0.7, -3.3, 1e-30, 2.5, float("inf"), -0.0, 0.0, float("nan"), 1 / 3, -7e20, 0.3, -0.3, 1e300]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_float_arithmetic_is_eager_exact(dtype, backend):
    """+ - * / // % ** neg abs float() on a float argument, computed in the graph as Python computes
    them (float64), then used by tensor ops as the Python float eager passes: bit for bit, signed
    zeros, infinities and NaNs included, one graph for every value."""
    cf = ptgo.compile(arithmetic, backend=backend)
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(3, 17, generator=g) * 10).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for a in ARITH_VALUES:
            same_outcome(outcome(cf, x, a), outcome(arithmetic, x, a), "a=%r" % a)
    assert compiled_count() <= 2


def divisions(x, a, b):
    return x * (1 / a), x + (b // a), x - (b % a), x * (a ** -1.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_division_by_a_float_argument_that_becomes_zero(backend):
    """A float argument that becomes 0.0 raises ZeroDivisionError as eager does (the graph's check
    hands the call to torch's run of the captured graph); the next nonzero value reuses the graph.
    OverflowError and the complex result of a negative base to a fractional power likewise."""
    cf = ptgo.compile(divisions, backend=backend)
    x = torch.randn(9)
    values = [(0.5, 2.0), (0.25, 3.0), (0.0, 1.0), (2.0, 1.5), (-0.0, 1.0), (-2.0, 5.0), (1e-300, 1.0),
              (3.0, -7.5), (0.0, 0.0), (0.75, 1.0)]
    for a, b in values:
        want = outcome(divisions, x, a, b)
        same_outcome(outcome(cf, x, a, b), want, "a=%r b=%r" % (a, b))
    assert ZeroDivisionError in [outcome(divisions, x, a, b)[0] for a, b in values[2:3]]
    assert compiled_count() <= 2


def branches(x, a, b):
    if a >= 0:
        x = x * a + (1 - a)
    if a < b:
        x = x - b
    if a == 0.5 or b != 2.0:
        x = x * 2
    if b > 2 * a and a <= 1:
        x = x + a * b
    if a:
        x = x / 3
    return x, min(a, b), max(a, 0.25)


def test_comparisons_guard_the_side_and_never_serve_a_stale_graph():
    """Every comparison becomes a guard on its outcome: values on the sides already compiled reuse
    their graph, and a call on another side never runs a graph compiled for the first (guard churn:
    values alternate across every boundary many times)."""
    cf = ptgo.compile(branches)
    x = torch.randn(16)
    pairs = [(0.3, 1.0), (0.2, 1.5), (0.4, 1.7), (-1.0, 2.0), (0.5, 2.0), (0.0, 0.0), (1.5, 0.2), (2.0, 5.0),
             (float("nan"), 1.0), (-0.0, 3.0)]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the churn below may pass the cache limit: eager then
        for rnd in range(3):
            for a, b in pairs:
                same_outcome(outcome(cf, x, a, b), outcome(branches, x, a, b), "round %d a=%r b=%r" % (rnd, a, b))
                seen.add(compiled_count())
    # values on a side already compiled reused its graph: rounds 2 and 3 compiled nothing new
    n = compiled_count()
    for a, b in pairs:
        cf(x, a, b)
    assert compiled_count() == n
    assert n <= 9


def test_same_side_reuses_the_graph():
    cf = ptgo.compile(branches)
    x = torch.randn(16)
    for a in [0.3, 0.35, 0.31, 0.33, 0.39, 0.45, 0.41]:
        same_outcome(cf(x, a, 1.0), branches(x, a, 1.0), "a=%r" % a)
    assert compiled_count() <= 2  # static, then a read at run time (the same side every time)


def to_ints(x, a):
    n = int(a * 10)
    k = round(a * 4) + math.floor(a) + math.ceil(-a)
    out = x[:n] * a
    for i in range(n):
        out = out + i * a
    return out, torch.zeros(n + 1) + k, n, k


def test_floats_used_as_ints_specialise_the_int():
    """int(a * 10), round(), math.floor/ceil: the integer of this call, guarded (a value that gives
    another integer recompiles; one that gives the same integer reuses the graph). range(n),
    slicing and shapes then see a plain int."""
    cf = ptgo.compile(to_ints)
    x = torch.randn(12)
    for a in [0.31, 0.35, 0.42, 0.38, 0.05, 0.07, 0.33, 1.0, -0.2, 0.36]:
        same_outcome(outcome(cf, x, a), outcome(to_ints, x, a), "a=%r" % a)
    # 0.31 static; 0.35, 0.38, 0.33, 0.36 one graph (int 3); 0.42; 0.05/0.07; 1.0; -0.2
    assert compiled_count() <= 6


def none_defaults(x, a=None, b=None):
    if a is not None:
        x = x * a
    if b is None:
        b = 0.5
    return x + b


def test_is_none_does_not_specialise():
    cf = ptgo.compile(none_defaults)
    x = torch.randn(5)
    for a in [0.1, 0.2, 0.3, 0.4]:
        same_outcome(cf(x, a), none_defaults(x, a), "a=%r" % a)
    assert compiled_count() <= 2


def powers(x, g):
    return x.abs() ** g, torch.pow(x.abs() + 1, g)


def test_pow_exponent_read_at_run_time():
    """A float argument as pow's exponent: one graph for every ordinary exponent; the exponents
    eager's kernel special-cases (2.0, 0.5, ...) each get a graph of their own, bit-equal to eager."""
    cf = ptgo.compile(powers)
    x = torch.randn(4, 33)
    with torch.no_grad():
        for g in [1.5, 2.5, 0.7, 3.25, -1.7, 1.5, 2.0, 0.5, 2.75]:
            got, want = cf(x, g), powers(x, g)
            assert_same(got, want, "g=%r" % g)
            if g == 2.0:  # (x ** 0.5 differs from torch 2's in the last bit, static or not)
                for r, e in zip(got, want):
                    exactly(r, e, "g=%r" % g)
    assert compiled_count() <= 4  # static, run-time exponent, 2.0, 0.5


def test_pow_exponent_in_training_is_specialised():
    cf = ptgo.compile(powers)
    for g in [1.5, 2.5, 0.7]:
        x1 = torch.randn(4, 8).requires_grad_()
        x2 = x1.detach().clone().requires_grad_()
        got, want = cf(x1, g), powers(x2, g)
        (got[0].sum() + got[1].sum()).backward()
        (want[0].sum() + want[1].sum()).backward()
        assert_same(got, want, "g=%r" % g)
        assert_same(x1.grad, x2.grad, "grad g=%r" % g)


def focal_like(x, t, alpha):
    """The float arithmetic of a focal loss without its transcendental ops (whose kernels differ
    from eager's in the last bit): bit for bit against eager."""
    if alpha >= 0:
        alpha_t = alpha * t + (1 - alpha) * (1 - t)
        x = alpha_t * x
    return x


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_focal_alpha_arithmetic_bit_exact(dtype):
    cf = ptgo.compile(focal_like)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 20, generator=g).to(dtype)
    t = (torch.rand(32, 20, generator=g) > 0.8).to(dtype)
    for alpha in [0.25, 0.5, 0.1, 0.75, 0.3, 0.9, 1 / 3, -1.0, 0.0, -0.0, 0.6]:
        exactly(cf(x, t, alpha), focal_like(x, t, alpha), "alpha=%r" % alpha)
    assert compiled_count() <= 3


def test_sigmoid_focal_loss_alpha_gamma_sweep():
    """torchvision's sigmoid_focal_loss (`if alpha >= 0: alpha_t = alpha * targets + (1 - alpha) *
    (1 - targets)`, `(1 - p_t) ** gamma`; 0.29 first checks `not (0 <= alpha <= 1) and alpha != -1`)
    over 9 alphas (both branch sides) and 3 gammas: one graph
    per branch side once alpha and gamma are read at run time, each result equal to eager and bit
    for bit equal to ptgo's graph compiled for those constants."""
    ops = pytest.importorskip("torchvision.ops")
    sfl = ops.sigmoid_focal_loss
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 80, generator=g)
    t = (torch.rand(64, 80, generator=g) > 0.9).float()
    alphas = [0.25, 0.5, 0.1, 0.75, 0.3, 0.9, 0.0, 1.0, -1.0]  # (torchvision 0.29 refuses others)
    gammas = [1.5, 2.5, 3.5]

    # the reference: a static graph per (alpha, gamma), the values constants of the trace
    static = {}
    for gamma in gammas:
        for alpha in alphas:
            ptgo.reset()
            fixed = ptgo.compile(lambda x, t: sfl(x, t, alpha, gamma), dynamic=False)
            static[alpha, gamma] = fixed(x, t)
    ptgo.reset()

    cf = ptgo.compile(sfl)
    counts = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache-limit warning
        for gamma in gammas:
            for alpha in alphas:
                got = cf(x, t, alpha, gamma)
                assert_same(got, sfl(x, t, alpha, gamma), "alpha=%r gamma=%r" % (alpha, gamma))
                exactly(got, static[alpha, gamma], "alpha=%r gamma=%r" % (alpha, gamma))
            counts.append(compiled_count())
    # gamma 1.5: static, alpha read at run time, the alpha < 0 side; each later gamma value: at
    # most one graph per side (gamma becomes read at run time), then none
    assert counts[0] <= 3
    assert counts[1] - counts[0] <= 2
    assert counts[2] == counts[1]


def test_sigmoid_focal_loss_training_alpha_sweep():
    ops = pytest.importorskip("torchvision.ops")
    sfl = ops.sigmoid_focal_loss
    cf = ptgo.compile(sfl)
    g = torch.Generator().manual_seed(2)
    t = (torch.rand(16, 10, generator=g) > 0.7).float()
    for alpha in [0.25, 0.5, 0.1, 0.75, -1.0, 0.3, 1.0, -1.0]:
        x1 = torch.randn(16, 10, generator=g).requires_grad_()
        x2 = x1.detach().clone().requires_grad_()
        got, want = cf(x1, t, alpha, 2, "mean"), sfl(x2, t, alpha, 2, "mean")
        got.backward()
        want.backward()
        assert_same(got, want, "alpha=%r" % alpha)
        assert_same(x1.grad, x2.grad, "grad alpha=%r" % alpha)
    assert compiled_count() <= 3


def tensor_comparisons(x, a):
    return x > a, x <= a, x == a, x != (1 - a), torch.lt(x, a), x.ge(a * 2), (x > a).float() * a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bool], ids=str)
def test_tensor_compared_with_a_float_argument(dtype, backend):
    """x > alpha reads alpha at run time and compares as eager does (the Python float converted to
    the computation dtype: 0.1 beside float32(0.1), values past float32's range, NaN, tiny
    subnormals): one graph for every value."""
    cf = ptgo.compile(tensor_comparisons, backend=backend)
    x = torch.tensor([0.1, 0.2, 0.3, 0.30000001192092896, 0.0, -0.0, 3.0, float("nan"), 1e-45, -1e-45,
                      float("inf"), 1e38], dtype=torch.float64)
    x = torch.cat([x, torch.randn(20, dtype=torch.float64, generator=torch.Generator().manual_seed(3))]).to(dtype)
    values = [0.1, 0.2, float(torch.tensor(0.1)), 0.30000001192092896, -0.0, 0.0, float("nan"), float("inf"),
              -1e-45, 1e-46, 3.0, 1e39]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for a in values:
            for i, (r, e) in enumerate(zip(cf(x, a), tensor_comparisons(x, a))):
                exactly(r, e, "output %d a=%r" % (i, a))
    assert compiled_count() <= 2
