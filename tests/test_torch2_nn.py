"""torch 2's nn internals under ptgo, as a user expects them: Module.__call__'s hook dicts (those
of this torch: bytecode/torch_versions.go), F.scaled_dot_product_attention (a registered op
decomposed for the C backend), the grad-mode decorators of torch.utils._contextlib, generators
with `yield from` (Module.modules()). Each test runs where this torch has the feature: the
hook kinds and SDPA are collected from what the running torch offers."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from conftest import assert_same

M = torch.nn.modules.module


def _hook_kinds():
    """(name, register(module, calls) -> handle) for every hook kind this torch has."""
    kinds = {
        "forward": lambda m, calls: m.register_forward_hook(lambda mod, i, o: calls.append("f")),
        "forward_pre": lambda m, calls: m.register_forward_pre_hook(lambda mod, i: calls.append("p")),
        "full_backward": lambda m, calls: m.register_full_backward_hook(lambda mod, gi, go: calls.append("b")),
        "global_forward": lambda m, calls: M.register_module_forward_hook(lambda mod, i, o: calls.append("gf")),
        "global_forward_pre": lambda m, calls: M.register_module_forward_pre_hook(lambda mod, i: calls.append("gp")),
    }
    if hasattr(nn.Module, "register_full_backward_pre_hook"):  # torch 2
        kinds["full_backward_pre"] = lambda m, calls: m.register_full_backward_pre_hook(
            lambda mod, go: calls.append("bp"))
        kinds["global_backward_pre"] = lambda m, calls: M.register_module_full_backward_pre_hook(
            lambda mod, go: calls.append("gbp"))
        kinds["forward_with_kwargs"] = lambda m, calls: m.register_forward_hook(
            lambda mod, a, kw, o: calls.append("fk"), with_kwargs=True)
        kinds["forward_always_called"] = lambda m, calls: m.register_forward_hook(
            lambda mod, i, o: calls.append("fa"), always_call=True)
    return kinds


HOOKS = _hook_kinds()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 3)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


@pytest.mark.parametrize("kind", sorted(HOOKS))
def test_submodule_hooks_run_as_in_eager(kind, counter):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(2, 4, requires_grad=True)
    compiled = ptgo.compile(net, backend=counter)
    assert_same(compiled(x), net(x))  # compiled without hooks
    graphs = counter.frame_count
    calls = []
    handle = HOOKS[kind](net.b, calls)
    try:
        want_calls = []
        handle.remove()
        handle = HOOKS[kind](net.b, want_calls)
        want = net(x)
        want.sum().backward()
        handle.remove()
        handle = HOOKS[kind](net.b, calls)
        x.grad = None
        got = compiled(x)
        got.sum().backward()
        assert_same(got, want)
        assert calls == want_calls and calls, (calls, want_calls)
        assert counter.frame_count > graphs, "the hook dict's guard failed and the frame recompiled"
    finally:
        handle.remove()


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"), reason="torch 1.13 has no scaled_dot_product_attention")
class TestScaledDotProductAttention:
    def test_forms(self, counter):
        torch.manual_seed(0)
        q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 6)
        bool_mask = torch.rand(4, 5) > 0.3
        bool_mask[1] = False  # a fully masked row: zeros, as torch gives
        float_mask = torch.randn(2, 1, 4, 5)

        def f(q, k, v, bm, fm):
            return (F.scaled_dot_product_attention(q, k, v, attn_mask=bm),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=fm, scale=0.3),
                    F.scaled_dot_product_attention(q, k[:, :, :4], v[:, :, :4], is_causal=True),
                    F.scaled_dot_product_attention(q[0], k[:1], v))

        args = (q, k, v, bool_mask, float_mask)
        assert_same(ptgo.compile(f, backend=counter)(*args), f(*args))
        assert counter.frame_count == 1
        assert counter.targets().count("scaled_dot_product_attention") == 4
        for backend in ("inductor", "aot_eager"):
            assert_same(ptgo.compile(f, backend=backend)(*args), f(*args))

    def test_gradients_through_the_c_backend(self, ptgo_log):
        ptgo.set_logs("perf_hints")
        torch.manual_seed(0)
        qkv = [torch.randn(2, 4, 5, 8, requires_grad=True) for _ in range(3)]

        def f(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True).tanh()

        ref = [t.detach().clone().requires_grad_() for t in qkv]
        got, want = ptgo.compile(f)(*qkv), f(*ref)
        assert_same(got, want)
        got.sum().backward()
        want.sum().backward()
        for a, b in zip(qkv, ref):
            assert_same(a.grad, b.grad)
        assert "fallback" not in ptgo_log.text, ptgo_log.text

    def test_multihead_attention_without_weights(self, counter, ptgo_log):
        torch.manual_seed(0)
        mha = nn.MultiheadAttention(16, 4, batch_first=True)
        x = torch.randn(2, 5, 16)
        mask = torch.rand(2, 5) > 0.7

        def f(x, mask):
            return mha(x, x, x, key_padding_mask=mask, need_weights=False)[0]

        assert_same(ptgo.compile(f, backend=counter)(x, mask), f(x, mask))
        assert counter.frame_count == 1
        assert "scaled_dot_product_attention" in counter.targets()
        ptgo.set_logs("perf_hints")
        with torch.no_grad():
            assert_same(ptgo.compile(f)(x, mask), f(x, mask))
        assert "scaled_dot_product_attention" not in ptgo_log.text, ptgo_log.text  # decomposed, no fallback

    @pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
    def test_dropout_draws_eagers_mask(self, backend, ptgo_log):
        # dropout_p > 0 is torch's math kernel on the CPU: q and kᵀ scaled by √scale, at::dropout
        # of the weights. ptgo's draws the same mask from torch's generator (its state after the
        # call too); values and gradients equal eager's within rounding, the zeros exactly
        ptgo.set_logs("perf_hints")
        torch.manual_seed(0)
        qkv = [torch.randn(2, 3, 5, 8, requires_grad=True) for _ in range(3)]
        masks = [None, torch.randn(5, 5), torch.rand(5, 5) > 0.3]

        def f(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m, dropout_p=0.4)

        c = ptgo.compile(f, backend=backend)
        for m in masks:
            ref = [t.detach().clone().requires_grad_() for t in qkv]
            torch.manual_seed(1)
            want = f(*ref, m)
            want.sum().backward()
            state = torch.get_rng_state()
            torch.manual_seed(1)
            got = c(*qkv, m)
            got.sum().backward()
            assert torch.equal(torch.get_rng_state(), state)
            assert torch.equal(got == 0, want == 0)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
            for a, b in zip(qkv, ref):
                torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-6)
                a.grad = None
        assert "fallback" not in ptgo_log.text, ptgo_log.text

    def test_encoder_layer_training_with_dropout_compiles(self, ptgo_log):
        # torch 2's TransformerEncoderLayer in training passes its dropout to
        # scaled_dot_product_attention: the whole layer, forward and backward, is ptgo's
        ptgo.set_logs("perf_hints")
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1, batch_first=True).train()
        ref = __import__("copy").deepcopy(layer)
        x = torch.randn(2, 7, 32)
        c = ptgo.compile(layer)
        for i in range(2):
            torch.manual_seed(i)
            want = ref(x)
            want.square().mean().backward()
            torch.manual_seed(i)
            got = c(x)
            got.square().mean().backward()
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        for (name, a), b in zip(layer.named_parameters(), ref.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-6, msg=name)
        assert "runs with torch" not in ptgo_log.text and "fallback" not in ptgo_log.text, ptgo_log.text


def test_grad_mode_decorators(counter, ptgo_log):
    ptgo.set_logs("graph_breaks")

    @torch.no_grad()
    def a(x):
        return x * 2

    @torch.enable_grad()
    def b(x):
        return x + 1

    try:
        # torch 1.13's set_grad_enabled applies itself when created, decorator or not (torch 2
        # restores the mode): eager's grad mode afterwards is what the compiled call leaves too
        @torch.set_grad_enabled(False)
        def c(x):
            return x - 1

        def f(x):
            return a(x) + b(x) + c(x)

        x = torch.randn(3, requires_grad=True)
        mode = torch.is_grad_enabled()
        want = f(x)
        assert torch.is_grad_enabled() == mode
        got = ptgo.compile(f, backend=counter)(x)
        assert torch.is_grad_enabled() == mode
        assert_same(got, want)
        assert "Graph break" not in ptgo_log.text, ptgo_log.text
    finally:
        torch.set_grad_enabled(True)


def test_yield_from_in_an_inlined_generator(counter, ptgo_log):
    ptgo.set_logs("graph_breaks")

    def inner(xs):
        for x in xs:
            yield x * 2

    def gen(xs):
        yield from inner(xs)
        yield from (x + 1 for x in xs)
        yield xs[0]

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Sequential(nn.ReLU(), nn.Linear(4, 4))])

        def forward(self, x):
            n = sum(1 for _ in self.modules())  # Module.named_modules: yield from
            return sum(gen([x, x * 3])) * n + self.layers[1](self.layers[0](x))

    m = Stack()
    x = torch.randn(2, 4)
    assert_same(ptgo.compile(m, backend=counter)(x), m(x))
    assert counter.frame_count == 1
    assert "Graph break" not in ptgo_log.text, ptgo_log.text


def test_multihead_attention_fast_path_is_one_graph(counter):
    # In eval without autograd, MultiheadAttention checks for a fast path; torch 2 also asks
    # how many TorchDispatchModes are active (torch.utils._python_dispatch). vit_b_16's blocks.
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)

    def f(x):
        return mha(x, x, x, need_weights=False)[0]

    with torch.no_grad():
        assert_same(ptgo.compile(f, backend=counter)(x), f(x))
        assert_same(ptgo.compile(f)(x), f(x))
    assert counter.frame_count == 1


@pytest.mark.skipif(not hasattr(torch.utils, "_python_dispatch"), reason="torch 1.13 has no TorchDispatchMode stack query")
def test_code_under_a_dispatch_mode_runs_eagerly(counter):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops += 1
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)

    def f(x):
        return mha(x, x, x, need_weights=False)[0]

    compiled = ptgo.compile(f, backend=counter)
    with torch.no_grad():
        assert_same(compiled(x), f(x))
        graphs = counter.frame_count
        want_mode, got_mode = Count(), Count()
        with want_mode:
            want = f(x)
        with got_mode:
            got = compiled(x)
    assert_same(got, want)
    assert got_mode.ops == want_mode.ops > 0, "every op went through the mode, as in eager"
    assert counter.frame_count == graphs, "the mode is guarded: the frame ran eagerly"
