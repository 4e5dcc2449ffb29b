"""In-place metadata ops (unsqueeze_, squeeze_, t_, transpose_, swapdims_): they change the tensor
object's sizes and strides, not its elements. On a tensor the graph made (a temporary, or a view
of one) the compiled graph follows them; on the caller's tensors (an input, a view of one) torch
runs the graph, so the caller's object changes as in eager."""
import torch

import ptgo
from conftest import assert_same


def compiled_stats():
    import json
    from ptgo import _C
    return json.loads(_C.request("inductor_stats", "{}"))["compiled"]


def check(fn, *args):
    want = fn(*[a.clone() for a in args])
    before = compiled_stats()
    got = ptgo.compile(fn)(*[a.clone() for a in args])
    assert_same(got, want)
    return compiled_stats() - before


def test_unsqueeze_on_a_temporary_then_cat():
    def f(a, g):
        t = g.abs().add_(1e-3)
        return torch.cat([a.mul(0.9).unsqueeze(0), t.unsqueeze_(0)], 0).amax(0, keepdim=False), t.shape[0]

    assert check(f, torch.randn(5, 3), torch.randn(5, 3)) == 1


def test_later_uses_see_the_new_metadata():
    def f(x):
        t = x * 2
        t.t_()
        u = t + torch.arange(4.0)  # broadcasts over the transposed [3, 4]
        t.unsqueeze_(1)
        t.squeeze_()
        t.transpose_(0, 1)
        return u, t * 1, t.is_contiguous()

    assert check(f, torch.randn(4, 3)) == 1


def test_view_of_a_temporary_keeps_aliasing_its_base():
    def f(x):
        base = x + 0
        v = base[1:]
        v.t_()  # v is still a view of base: writes through either are seen by the other
        v.mul_(10)
        base.add_(1)
        return base, v, v.shape

    assert check(f, torch.randn(3, 2)) == 1


def test_base_with_views_is_followed_or_run_by_torch():
    def f(x):
        base = x * 1
        v = base[0]
        base.unsqueeze_(0)  # v keeps base's old view: torch runs this graph
        v.add_(5)
        return base, v

    check(f, torch.randn(3, 2))


def test_input_metadata_changes_reach_the_caller():
    def f(x):
        x.t_()
        return x + 1

    a, b = torch.randn(2, 3), None
    b = a.clone()
    want = f(a)
    got = ptgo.compile(f)(b)
    assert_same(got, want)
    assert b.shape == a.shape == (3, 2) and b.stride() == a.stride()


import pytest  # noqa: E402
import torch.nn.functional as F  # noqa: E402


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
@pytest.mark.parametrize("case", ["p0", "eval", "empty", "alpha_p0"])
def test_dropout_that_returns_its_input_is_the_same_object(backend, case):
    """Fuzz seeds 1450, 2225: eager's CPU dropout returns its input tensor itself when p == 0,
    when not training, or when the input has no elements, so a later t_() of the input changes
    the result too; ptgo's result was a new tensor."""
    def f(x):
        v = x.roll(1, 0) if case != "empty" else x[:0].roll(1, 0)
        if case == "p0":
            y = F.dropout(v, 0.0, training=True)
        elif case == "eval":
            y = F.dropout(v, 0.5, training=False)
        elif case == "alpha_p0":
            y = F.alpha_dropout(v, 0.0, training=True)
        else:
            y = F.dropout(v, 0.5, training=True)
        v.t_()
        return y.shape, y * 2, y is v

    x = torch.randn(4, 3)
    want = f(x)
    got = ptgo.compile(f, backend=backend)(x)
    assert got[0] == want[0] and got[2] is want[2] is True
    assert_same(got[1], want[1])


def _detach_then_write(x):
    y = torch.nn.functional.elu(x) * 2
    d = y.detach()
    r = y.detach()[0]
    y *= 3
    return d, r, y


def test_a_detached_alias_of_a_written_tensor_stays_detached():
    # d = y.detach(); y *= 3: d holds y's new values and does not require grad; the new value
    # of y's alias is the view replayed on it, whose detach cut stays (fuzz seed 21274: d
    # required grad). r = y.detach()[0] is a view of a detached alias in eager (its _base).
    for backend in ["eager", "aot_eager", "inductor"]:
        ptgo.reset()
        x = torch.randn(3, 2, requires_grad=True)
        want = _detach_then_write(x)
        got = ptgo.compile(_detach_then_write, backend=backend)(x)
        for a, b in zip(got, want):
            assert_same(a, b)
            assert a.requires_grad == b.requires_grad, backend
        assert got[1]._base is not None and not got[1]._base.requires_grad, backend
        got[2].sum().backward()
        g = x.grad.clone()
        x.grad = None
        want[2].sum().backward()
        torch.testing.assert_close(g, x.grad)


def _view_then_requires_grad(x):
    v1 = torch.nn.functional.softshrink(x, 0.5)
    v2 = v1[-1]
    v1.requires_grad_()
    return (torch.gather(v2, -1, torch.zeros_like(v2, dtype=torch.long)),)


def test_requires_grad_on_a_tensor_with_views_reaches_the_views():
    # eager's v2 = v1[-1] requires grad once v1.requires_grad_() ran (a view follows its
    # base); a traced view keeps the meta it was made with, so the call breaks the graph
    # (fuzz seed 15516)
    for backend in ["eager", "aot_eager", "inductor"]:
        ptgo.reset()
        x = torch.randn(3, 5)
        want = _view_then_requires_grad(x)
        got = ptgo.compile(_view_then_requires_grad, backend=backend)(x)
        for a, b in zip(got, want):
            assert_same(a, b)
            assert a.requires_grad == b.requires_grad, backend


def test_detach_then_requires_grad_stays_in_the_graph():
    # detach() shares memory but not autograd: requires_grad_() on it concerns it alone, so it
    # does not break the graph as a view's base would (a gradient-penalty step's input)
    def f(x):
        y = x.detach().requires_grad_()
        return y * 2, x[0] + 1

    ex = ptgo.explain(f)(torch.randn(3, 2, requires_grad=True))
    assert ex.graph_break_count == 0, [str(b) for b in ex.break_reasons]
    x = torch.randn(3, 2, requires_grad=True)
    for a, b in zip(ptgo.compile(f)(x), f(x)):
        assert_same(a, b)
        assert a.requires_grad == b.requires_grad


def _write_grad_into_viewed_base(x, w):
    v1 = torch.asin(x)
    v5 = v1[1:]
    v1[..., 0] = (w * 2)[..., 0]
    return v5 * 0.5 + 1, v1


def _inplace_grad_into_viewed_base(x, w):
    v1 = torch.asin(x)
    v5 = v1[1:]
    v1.mul_(w)
    return v5 * 0.5 + 1, v1


@pytest.mark.parametrize("fn", [_inplace_grad_into_viewed_base, _write_grad_into_viewed_base])
def test_writing_a_grad_value_into_a_viewed_tensor_reaches_its_views(fn):
    # fuzz seed 17113: v5 = v1[1:]; v1[0] = w (requires grad): eager's v5 requires grad from
    # then on, as its base does; a traced view cannot follow, so the write breaks the graph,
    # and the outputs before it keep eager's base and view: a view made in the caller's grad
    # mode (the C++ runtime), a non-differentiable view of a base output a view of what the
    # base became (an autograd region)
    for backend in ["eager", "aot_eager", "inductor"]:
        ptgo.reset()
        x, w = torch.rand(4) * 0.5, torch.randn(4, requires_grad=True)
        want = fn(x.clone(), w)
        got = ptgo.compile(fn, backend=backend)(x.clone(), w)
        for a, b in zip(got, want):
            assert_same(a, b)
            assert a.requires_grad == b.requires_grad, (fn.__name__, backend)


def test_bool_shift_raises_eagers_error():
    # fuzz seed 16990: shifts take integers but not bool (bitwise_and does)
    def f(x):
        b = x > 0
        return b << b

    x = torch.randn(3)
    with pytest.raises(RuntimeError) as want:
        f(x)
    for backend in ["aot_eager", "inductor"]:
        ptgo.reset()
        with pytest.raises(RuntimeError) as got:
            ptgo.compile(f, backend=backend)(x)
        assert str(got.value) == str(want.value)
    assert str((torch.tensor([True]) << 1).dtype) == "torch.int64"
    assert_same(ptgo.compile(lambda t: t << 1)(torch.tensor([True, False])), torch.tensor([True, False]) << 1)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gradient_of_a_slice_of_an_empty_tensor(backend):
    # fuzz seed 17331: the slice's gradient pads an empty tensor, which torch.constant_pad_nd
    # refuses where a zero-size dim is not padded (aot_eager's torch backward)
    def f(x):
        return torch.where(x > 0, x, x * 2).chunk(2, -2)[0]

    x = torch.randn(3, 0, requires_grad=True)
    want = torch.autograd.grad(f(x).sum(), x)[0]
    ptgo.reset()
    got = torch.autograd.grad(ptgo.compile(f, backend=backend)(x).sum(), x)[0]
    assert_same(got, want)


@pytest.mark.parametrize("view", [True, False])
def test_torch_call_reads_a_view_after_a_write_into_its_base(view):
    # fuzz seed 18871: isclose (run by torch inside the compiled graph) read v6 = v5.view(-1)
    # before v5[-1].mul_(-1) was scattered into v5's buffer: the view was an alias of the
    # buffer's storage, not of the written value, so nothing ordered the call after the write
    def f(x):
        v5 = F.relu6(x)
        v6 = v5.view(-1) if view else v5
        v5[-1].mul_(-1)
        return torch.isclose(x, v6), v6 * 2

    x = torch.tensor([1.0, 2.0, 3.0, -1.0])
    for backend in ["aot_eager", "inductor"]:
        ptgo.reset()
        for a, b in zip(ptgo.compile(f, backend=backend)(x), f(x)):
            assert_same(a, b)


def test_heaviside_of_a_permuted_operand_has_eager_strides():
    """Fuzz seed 30450: torch 2.14's heaviside meta kernel lays out a broadcast result of a
    permuted operand otherwise than its CPU kernel ((10, 1, 5) against (1, 5, 25)); ptgo takes
    the metadata from the CPU kernel for it (_compat.META_KERNEL_DIFFERS_FROM_CPU)."""
    def f(x):
        return torch.heaviside(x[-1], x)

    x = (torch.rand(2, 5, 5) < 0.5).permute(2, 1, 0)
    for backend in ["aot_eager", "inductor"]:
        ptgo.reset()
        assert_same(ptgo.compile(f, backend=backend)(x), f(x))


def test_copy_of_an_input_into_a_permuted_temporary_keeps_its_layout():
    """Fuzz seed 36841: `v = x ** 0.5; v.copy_(x); return v` with a permuted x. v's new value is
    x's elements, a tensor of its own in eager with v's (x's) strides; ptgo's copy of the
    input was contiguous."""
    def f(x):
        v = x ** 0.5
        v.copy_(x)
        return v

    x = torch.rand(2, 8, 3).permute(2, 1, 0)
    for backend in ["aot_eager", "inductor"]:
        ptgo.reset()
        got, want = ptgo.compile(f, backend=backend)(x), f(x)
        assert_same(got, want)
        assert got.stride() == want.stride() and got.data_ptr() != x.data_ptr()


def test_narrow_of_a_whole_size_one_dim_keeps_the_inputs_strides():
    """Fuzz seed 36717: x.narrow(0, 0, 1) of a [1, 4] tensor with strides (1, 1) is a view with
    those strides (a view(1, 4) would give (4, 1)); its .long() is that view itself, so the
    result aliases the input in eager and must in ptgo."""
    def f(x):
        return x.narrow(0, 0, 1).long(), x[0:1], x.view(1, 4)

    def h(x):  # tuple-valued view ops returning their input (fuzz seeds 37196, 37437)
        return x.split(4, 1)[0] * 2, x.chunk(1)[0] + 1, x.split(1, 0)

    x = torch.arange(4).reshape(4, 1).t()
    for backend in ["aot_eager", "inductor"]:
        ptgo.reset()
        got, want = ptgo.compile(f, backend=backend)(x), f(x)
        for a, w in zip(got, want):
            assert a.stride() == w.stride() and a.data_ptr() == x.data_ptr()
        assert_same(ptgo.compile(h, backend=backend)(x), h(x))
