"""Dead code with effects is kept (issue 8): a call whose result nothing reads still writes what it
writes, draws from torch's generator and raises for the inputs eager raises for. The op registry
says which calls have effects (primtorch.Op.CallEffects); every backend keeps them."""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

BACKENDS = ["eager", "aot_eager", "inductor"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_training_batchnorm_updates_statistics(backend):
    def f(m, x):
        m(x)
        return x + 1

    torch.manual_seed(0)
    x = torch.randn(6, 3)
    m, ref = nn.BatchNorm1d(3).train(), nn.BatchNorm1d(3).train()
    for _ in range(2):
        assert_same(ptgo.compile(f, backend=backend)(m, x), f(ref, x))
    torch.testing.assert_close(m.running_mean, ref.running_mean)
    torch.testing.assert_close(m.running_var, ref.running_var)
    assert m.num_batches_tracked.item() == ref.num_batches_tracked.item() == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_random_op_advances_the_generator(backend):
    def f(x):
        torch.rand_like(x)
        return x + torch.rand_like(x)

    x = torch.zeros(5)
    torch.manual_seed(3)
    expected = f(x)
    after = torch.rand(1)
    torch.manual_seed(3)
    got = ptgo.compile(f, backend=backend)(x)
    assert_same(got, expected)
    assert_same(torch.rand(1), after)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_ops_keep_their_order(backend):
    """Fuzz seed 1729: a kernel fused across two random calls (sign before normal, x / r after
    rand_like) must not move rand_like before normal: the values drawn and the generator's
    state (normal's cached second sample) would differ from eager's."""
    def f(x):
        s = torch.sign(x)
        n = torch.normal(s, 1.0)
        r = torch.rand_like(x)
        return n, x / r

    x = torch.randn(6)
    torch.manual_seed(5)
    expected = f(x)
    state = torch.get_rng_state()
    torch.manual_seed(5)
    got = ptgo.compile(f, backend=backend)(x)
    assert_same(got, expected)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layout", ["t", "slice", "slice_t", "slice_small"])
@pytest.mark.parametrize("op", ["uniform_", "bernoulli_", "normal_", "exponential_"])
def test_random_inplace_on_a_strided_input_draws_in_memory_order(backend, layout, op):
    """Fuzz seeds 1711, 1924: x.uniform_() on a transposed input draws for its elements in
    memory order; the fallback's copy of x must have x's layout, not a contiguous one (eager's
    numbers at transposed positions). Fuzz seed 11818: normal_ of a stepped slice of 16 elements
    or more — torch fills a contiguous float tensor with another algorithm than a strided one, so
    the copy keeps the slice's strides, gaps included."""
    def f(x):
        getattr(x, op)()
        return x * 2

    def make():
        if layout == "t":
            return torch.zeros(6, 8).t()
        if layout == "slice":
            return torch.zeros(4, 12)[:, ::2]
        if layout == "slice_t":
            return torch.zeros(6, 12)[:, ::2].t()
        return torch.zeros(3, 8)[:, ::2].t()

    xe, xc = make(), make()
    torch.manual_seed(2)
    expected = f(xe)
    torch.manual_seed(2)
    got = ptgo.compile(f, backend=backend)(xc)
    assert_same(got, expected)
    assert_same(xc, xe)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_index_out_of_range_raises(backend):
    def f(x, i):
        x[i]
        return x * 2

    x, i = torch.randn(4), torch.tensor([4])
    with pytest.raises(IndexError) as want:
        f(x, i)
    with pytest.raises(IndexError) as got:
        ptgo.compile(f, backend=backend)(x, i)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_integer_division_by_zero_raises(backend):
    def f(x, a, b):
        a // b
        return x + 1

    x, a, b = torch.randn(3), torch.tensor([1, 2]), torch.tensor([0, 1])
    with pytest.raises(RuntimeError) as want:
        f(x, a, b)
    compiled = ptgo.compile(f, backend=backend)
    with pytest.raises(RuntimeError) as got:
        compiled(x, a, b)
    assert str(got.value) == str(want.value) == "ZeroDivisionError"
    assert_same(compiled(x, a, b + 1), f(x, a, b + 1))  # the same compiled code, a divisor without zeros


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "trunc"])
def test_integer_division_by_zero_in_a_kernel_raises(backend, op):
    """A live integer division (floor, remainder, fmod, trunc) by a zero in the data: the C kernel
    reports it, and the user gets torch's RuntimeError("ZeroDivisionError")."""
    def f(x, a, b):
        y = x * 2
        if op == "trunc":
            return y, torch.div(a, b, rounding_mode="trunc") + 1
        return y, getattr(torch, op)(a, b) + 1

    x, a = torch.randn(3), torch.tensor([5, -7, 9], dtype=torch.int32)
    compiled = ptgo.compile(f, backend=backend)
    assert_same(compiled(x, a, torch.tensor([2, 3, -4], dtype=torch.int32)), f(x, a, torch.tensor([2, 3, -4], dtype=torch.int32)))
    zero = torch.tensor([2, 0, -4], dtype=torch.int32)
    with pytest.raises(RuntimeError) as want:
        f(x, a, zero)
    with pytest.raises(RuntimeError) as got:
        compiled(x, a, zero)
    assert str(got.value) == str(want.value)


def test_effects_are_registry_facts():
    """Pure dead ops are still removed: only effects keep a call."""
    graphs = []

    def backend(gm, ex):
        graphs.append(gm)
        return gm.forward

    def f(x):
        torch.sin(x)  # dead, no effect: dropped
        return x.cos()

    ptgo.compile(f, backend=backend)(torch.randn(3))
    targets = [getattr(n.target, "__name__", n.target) for n in graphs[0].graph.nodes if n.op != "placeholder"]
    assert "sin" not in targets and "cos" in targets


@pytest.mark.parametrize("backend", BACKENDS)
# (not amin of gelu: gelu's minimum is flat, rows hold near-ties there that one ulp of gelu decides)
@pytest.mark.parametrize("fn,red", [(fn, red) for fn in ["tanh", "exp", "sigmoid", "gelu"]
                                    for red in ["amax", "amin", "max", "maximum"] if (fn, red) != ("gelu", "amin")])
def test_gradient_of_a_maximum_over_a_transcendental_result(backend, fn, red):
    """The backward of amax/amin/max compares its input with the forward's result (the mask of
    the maximum) and maximum's compares its operands: those values are saved, never recomputed
    in another kernel, whose vector and scalar tanhf/expf may differ from the forward's in the
    last bit (the mask then misses: an infinite, NaN or zero gradient). 257 columns: vector
    loops and a scalar tail."""
    act = getattr(torch.nn.functional, fn) if fn == "gelu" else getattr(torch, fn)

    def f(x, w):
        y = act(x * w)
        if red == "maximum":
            return torch.maximum(y, act(x)).sum()
        if red == "max":
            return y.max() + y.max(dim=1).values.sum()
        return getattr(torch, red)(y, dim=1).sum()

    torch.manual_seed(0)
    compiled = ptgo.compile(f, backend=backend)
    for _ in range(3):
        x0, w0 = torch.randn(64, 257) * 3, torch.randn(257)
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        f(x, w).backward()
        xc, wc = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        compiled(xc, wc).backward()
        assert_same(xc.grad, x.grad)
        # w.grad sums 64 rows of x * act'(x * w): its rounding scales with the sum of their
        # magnitudes (act' differs from torch's vectorised erf/tanh by an ulp, and on AVX-512
        # machines gelu's rows cancel to 4e-5 relative); a missed mask moves a whole term (~1)
        # (|act'| <= 1.13): the tolerance is 1e-6 of that sum, 1.5e-4 here
        torch.testing.assert_close(wc.grad, w.grad, rtol=1.3e-6, atol=max(1e-6 * x0.abs().sum(0).max().item(), 1e-5))


def _copy_into(x0, x1):
    x1.copy_(x0)
    return x1 * 2


def _copy_into_a_view(x0, x1):
    x1.view(-1)[:2].copy_(x0.view(-1)[:2])
    return x1 + 1


def _setitem(x0, x1):
    x1[torch.tensor([1])] = x0[0]
    return x1.sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [_copy_into, _copy_into_a_view, _setitem])
def test_writing_a_grad_value_into_an_input_makes_it_require_grad(backend, fn):
    """x.copy_(w), a copy into a view of x, x[i] = w, with w requiring grad and x not: eager's
    autograd makes the caller's x require grad (its grad_fn the write's), and gradients reach w
    through x (fuzzer seed 485)."""
    def run(f):
        torch.manual_seed(0)
        x0 = torch.randn(4, 1).expand(4, 8).contiguous().requires_grad_()
        x1 = torch.zeros(4, 8)
        out = f(x0, x1)
        assert x1.requires_grad
        (out.sum() + x1.sum()).backward()
        return out, x1, type(x1.grad_fn).__name__, x0.grad

    got, want = run(ptgo.compile(fn, backend=backend)), run(fn)
    assert got[2] == want[2]
    for g, w in zip(got[:2] + got[3:], want[:2] + want[3:]):
        assert_same(g, w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("grad", [False, True])
def test_write_to_an_input_that_overlaps_another(backend, grad):
    """Fuzz seeds 441, 472: x0 = base[:-1] and x1 = base[1:] share memory; x1.neg_() changes
    what x0 reads afterwards. The compiled graph assumes inputs that do not alias, so such a
    call runs with torch (perf_hints); a call with separate inputs runs the compiled graph."""
    def f(x0, x1, w):
        x1.neg_()
        return x0 * w

    w = torch.ones(4, requires_grad=grad)
    compiled = ptgo.compile(f, backend=backend)
    for shared in (True, False, True):
        be, bc = torch.arange(6.0), torch.arange(6.0)
        if shared:
            args_e, args_c = (be[:-2], be[1:-1]), (bc[:-2], bc[1:-1])
        else:
            args_e, args_c = (be[:4], be[4:].repeat(2)), (bc[:4], bc[4:].repeat(2))
        expected = f(*args_e, w)
        got = compiled(*args_c, w)
        assert_same(got.detach(), expected.detach())
        assert_same(bc, be)
        assert_same(args_c[1], args_e[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_put_dtype_mismatch_raises_after_earlier_inplace_ops(backend):
    # fuzz seed 4061: torch's meta kernel for index_put_ does not check the values' dtype, so the
    # CPU kernel raised from inside the compiled graph, before the relu_ was written back to x
    def f(x):
        torch.relu_(x)
        x.index_put_((torch.tensor([0]),), torch.tensor(0.5))
        return x.sum()

    x = torch.tensor([[-1.0], [2.0], [-3.0], [4.0]], dtype=torch.float64)
    a, b = x.clone(), x.clone()
    with pytest.raises(RuntimeError, match="dtypes match"):
        f(a)
    with pytest.raises(RuntimeError, match="dtypes match"):
        ptgo.compile(f, backend=backend)(b)
    assert torch.equal(a, b)


@pytest.mark.parametrize("backend", BACKENDS)
def test_random_inplace_of_a_refused_dtype_raises_after_batchnorm_updates(backend):
    # fuzz seed 4976: torch's meta kernel of exponential_ takes an int8 tensor that the CPU kernel
    # refuses, so the error came from inside the compiled graph, before the running statistics
    # were written back
    bn = nn.BatchNorm1d(1, affine=False)

    def f(x0, x1):
        v = x1.char()
        out = bn(x0)
        v.exponential_()
        return out

    torch.manual_seed(0)
    x0, x1 = torch.rand(4, 1, 3), torch.randn(3)
    # (torch 1.13: '"exponential_cpu" not implemented for 'Char''; 2.x says floating point only)
    with pytest.raises(RuntimeError) as eager_error:
        f(x0, x1)
    want = bn.running_mean.clone()
    bn.running_mean.zero_()
    bn.running_var.fill_(1)
    bn.num_batches_tracked.zero_()
    with pytest.raises(RuntimeError) as ptgo_error:
        ptgo.compile(f, backend=backend)(x0, x1)
    assert str(ptgo_error.value) == str(eager_error.value)
    # (the statistics up to rounding: the BatchNorm before the error runs compiled)
    assert torch.allclose(bn.running_mean, want)
