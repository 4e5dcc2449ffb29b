"""torch.compile(m, backend="ptgo") for real: torch 2's Dynamo captures, ptgo's pipeline compiles.

Needs torch.compile (torch >= 2; make setup-torch2, make test-py2). On torch 1.13 the whole file
is skipped: there is no torch.compile to be the caller. Every test compares with eager (values,
dtypes, requires_grad, parameter gradients, BatchNorm statistics) and checks through
``inductor_stats`` that ptgo's C backend compiled the graph, or that the graph ran with torch
with the reason on perf_hints.
"""
import json
import os
import sys

import pytest
import torch
import torch.nn as nn

if not hasattr(torch, "compile"):
    pytest.skip("torch %s has no torch.compile (torch >= 2 is the caller of backend='ptgo'); "
                "make test-py2 runs this file" % torch.__version__, allow_module_level=True)

import ptgo  # noqa: E402
from ptgo import _C, _runtime  # noqa: E402
from conftest import assert_same, clone_args  # noqa: E402

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "bench"))
from models import WORKLOADS  # noqa: E402


def stats():
    _runtime.ensure_initialized()
    return json.loads(_C.request("inductor_stats", "{}"))


def assert_grad_close(got, want, path):
    """Gradients: dtype, shape and values; float32 gradients are sums over the batch that the
    compiled backward's products accumulate in another order, so 1e-4 rather than 1.3e-6."""
    assert got.dtype == want.dtype and got.shape == want.shape, path
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=lambda m: "%s: %s" % (path, m))


def delta(before, after):
    return {k: after[k] - before[k] for k in ("compiled", "autograd", "fx", "fallbacks")}


@pytest.fixture(autouse=True)
def _dynamo_reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def check(model, args, train, calls=2, dynamic=False):
    """torch.compile(model, backend="ptgo") against eager; returns the stats delta."""
    model.train(train)
    compiled = torch.compile(model, backend="ptgo", dynamic=dynamic)
    ctx = torch.enable_grad() if train else torch.no_grad()
    s0 = stats()
    for call in range(calls):
        x = [a + 0.25 * call if a.is_floating_point() else a for a in args]
        with ctx:
            torch.manual_seed(call)
            out = compiled(*clone_args(x))
            torch.manual_seed(call)
            ref = model(*x)
        assert_same(out, ref)
        if train:
            model.zero_grad()
            out.float().sum().backward()
            got = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
            model.zero_grad()
            ref.float().sum().backward()
            for i, (g, p) in enumerate(zip(got, model.parameters())):
                assert (g is None) == (p.grad is None), i
                if g is not None:
                    assert_grad_close(g, p.grad, "grad[%d]" % i)
    return delta(s0, stats())


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_bench_workload(name):
    make, inputs, grad = WORKLOADS[name]
    torch.manual_seed(0)
    d = check(make(), inputs(), grad)
    assert d["fx"] == 1, d  # one graph, compiled by ptgo's C backend
    assert d["compiled" if not grad else "autograd"] == 1, d


@pytest.mark.parametrize("name", ["gelu_mlp", "rmsnorm_silu", "gpt_block", "norm_softmax_chain"])
def test_bench_workload_training(name):
    """The inference workloads in training mode: ptgo's forward/backward split, grads as eager's."""
    make, inputs, _ = WORKLOADS[name]
    torch.manual_seed(0)
    d = check(make(), inputs(), True)
    assert d["fx"] == 1 and d["autograd"] == 1, d


def torchvision_models():
    tv = pytest.importorskip("torchvision")
    return {
        "resnet18": (lambda: tv.models.resnet18(num_classes=10), (2, 3, 64, 64)),
        "mobilenet_v2": (lambda: tv.models.mobilenet_v2(num_classes=10, dropout=0.0), (2, 3, 64, 64)),
        "vit_small": (lambda: tv.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                          hidden_dim=32, mlp_dim=64, num_classes=10), (2, 3, 32, 32)),
    }


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "vit_small"])
def test_torchvision_inference(name):
    make, shape = torchvision_models()[name]
    torch.manual_seed(0)
    d = check(make().eval(), [torch.randn(*shape)], False)
    assert d["fx"] == 1 and d["compiled"] == 1, d


def _train_step(name, dtype):
    """One forward and backward of model name in training mode, compiled through Dynamo and
    eagerly, from the same weights: (compiled model, eager model, compiled output, eager output,
    stats delta of the compiled step)."""
    make, shape = torchvision_models()[name]
    torch.manual_seed(0)
    m = make().train().to(dtype)
    ref_model = make().train().to(dtype)
    ref_model.load_state_dict(m.state_dict())
    compiled = torch.compile(m, backend="ptgo", dynamic=False)
    x = torch.randn(*shape, dtype=dtype)
    s0 = stats()
    out = compiled(x.clone())
    out.sum().backward()
    d = delta(s0, stats())
    ref = ref_model(x)
    ref.sum().backward()
    return m, ref_model, out, ref, d


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "vit_small"])
def test_torchvision_training(name, ptgo_log):
    """Forward and backward in training mode: values, grads and BatchNorm statistics as eager's.
    resnet18 and mobilenet_v2 compile to C (max_pool2d and bias-free convolutions stay
    compiled, A108); vit's multi_head_attention_forward has an op ptgo cannot differentiate, so
    it runs with torch, named on perf_hints.

    mobilenet_v2's backward over a batch of 2 is chaotic in float32 (its last BatchNorms
    normalise 8 values; see test_zoo's _verify_in_float64): eager's own float32 gradients are
    0.1% RMS off float64 at the first layer, and which of the two float32 computations is the
    closer varies by layer (ptgo's error is a seventh of eager's at features.14, 2.7x at
    features.0), and running variances differ by 1.3e-5. A value past the float32 tolerance is therefore judged by compiling the same
    model in float64, which must agree with eager's float64 to 1e-8."""
    ptgo.set_logs("perf_hints")
    m, ref_model, out, ref, d = _train_step(name, torch.float32)
    assert_same(out, ref)
    off = []
    for (k, p), (_, q) in zip(m.named_parameters(), ref_model.named_parameters()):
        try:
            assert_grad_close(p.grad, q.grad, "grad of " + k)
        except AssertionError as e:
            off.append(str(e).splitlines()[0])
    # BatchNorm running statistics moved as eager's did.
    for (k, a), (_, b) in zip(m.state_dict().items(), ref_model.state_dict().items()):
        try:
            assert_same(a, b, k)
        except AssertionError as e:
            off.append(str(e).splitlines()[0])
    if name == "vit_small":
        assert d["fx"] == 0 and d["fallbacks"] >= 1, d
        assert "no derivative for prims.fallback" in ptgo_log.text, ptgo_log.text
    else:
        assert d["fx"] == 1 and d["autograd"] == 1 and d["fallbacks"] == 0, d
    if off:
        m64, ref64, out64, want64, _ = _train_step(name, torch.float64)
        torch.testing.assert_close(out64, want64, rtol=1e-8, atol=0)
        pairs = [("grad of " + k, p.grad, q.grad) for (k, p), (_, q) in
                 zip(m64.named_parameters(), ref64.named_parameters())]
        pairs += [(k, a, b) for (k, a), (_, b) in zip(m64.state_dict().items(), ref64.state_dict().items())]
        for k, a, b in pairs:
            torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10,
                                       msg=lambda msg: "float64 %s: %s\nfloat32 off: %s" % (k, msg, off))


def test_functions_static_shapes():
    def f(x, y):
        h = torch.tanh(x @ y) * 0.5 + x.mean(dim=-1, keepdim=True)
        return torch.softmax(h, dim=-1), [h.sum(), None]

    cf = torch.compile(f, backend="ptgo", dynamic=False)
    s0 = stats()
    for n in (4, 8):
        x, y = torch.randn(n, 6), torch.randn(6, 6)
        assert_same(cf(x, y), f(x, y))
    d = delta(s0, stats())
    assert d["fx"] == 2 and d["compiled"] == 2, d  # one graph per shape (static)


def test_function_training_grads():
    def f(x, w):
        return torch.nn.functional.gelu(x @ w).pow(2).mean()

    cf = torch.compile(f, backend="ptgo", dynamic=False)
    x = torch.randn(5, 7, requires_grad=True)
    w = torch.randn(7, 3, requires_grad=True)
    s0 = stats()
    out = cf(x, w)
    out.backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    ref = f(x, w)
    ref.backward()
    assert_same(out, ref)
    assert_same([gx, gw], [x.grad, w.grad])
    assert delta(s0, stats())["autograd"] == 1


# ---- dynamic shapes: Dynamo's symbolic graphs compiled by ptgo's symbolic pipeline ----------

TORCH_RAN = ("runs with torch", "runs the graph with torch")


def sweep(fn, inputs, dynamic, grad=False):
    """torch.compile(fn, backend="ptgo", dynamic=dynamic) called on each input tuple, each
    result equal to eager's (and the gradients of the inputs' parameters when grad); the stats
    delta."""
    compiled = torch.compile(fn, backend="ptgo", dynamic=dynamic)
    params = list(fn.parameters()) if isinstance(fn, nn.Module) else []
    s0 = stats()
    for args in inputs:
        with torch.enable_grad() if grad else torch.no_grad():
            out = compiled(*clone_args(args))
            ref = fn(*args)
        assert_same(out, ref)
        if grad:
            out.pow(2).sum().backward()
            got = [p.grad.clone() for p in params]
            for p in params:
                p.grad = None
            ref.pow(2).sum().backward()
            for k, (g, p) in enumerate(zip(got, params)):
                assert_grad_close(g, p.grad, "grad[%d]" % k)
            for p in params:
                p.grad = None
    return delta(s0, stats())


def assert_compiled_symbolic(d, log, graphs=1, autograd=False):
    """ptgo compiled `graphs` FX graphs, none ran with torch: with sizes changing on every call,
    one graph serving them all is the symbolic one."""
    assert d["fx"] == graphs and d["fallbacks"] == 0, d
    assert d["autograd" if autograd else "compiled"] == graphs, d
    assert not any(t in log.text for t in TORCH_RAN), log.text


def pointwise(x):
    return (torch.sin(x) * 2 + 1).relu() - x.mean(dim=-1, keepdim=True)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(12, 32), nn.Linear(32, 5)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x)))


class Block(nn.Module):
    """A transformer-ish block: pre-norm single-head attention and an MLP, residuals."""

    def __init__(self, c=16, heads=1):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.ff = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c))
        self.c, self.heads = c, heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(self.c, dim=-1)
        if self.heads > 1:
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        a = torch.softmax(q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5, dim=-1) @ v
        if self.heads > 1:
            a = a.transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(a)
        return x + self.ff(self.ln2(x))


@pytest.mark.parametrize("dynamic", [True, None])
def test_dynamic_pointwise(dynamic, ptgo_log):
    ptgo.set_logs("perf_hints")
    if dynamic:  # every dim symbolic from the start: one graph for every 2-d shape
        shapes = [(8, 4), (9, 4), (10, 5), (3, 7), (33, 16), (2, 2)]
    else:  # automatic dynamic: static first, then the dim that changed is symbolic
        shapes = [(8, 4), (9, 4), (10, 4), (3, 4), (100, 4), (2, 4)]
    d = sweep(pointwise, [(torch.randn(*s),) for s in shapes], dynamic)
    assert_compiled_symbolic(d, ptgo_log, graphs=1 if dynamic else 2)


@pytest.mark.parametrize("dynamic", [True, None])
def test_dynamic_mlp_batch_sizes(dynamic, ptgo_log):
    ptgo.set_logs("perf_hints")
    m = MLP().eval()
    d = sweep(m, [(torch.randn(n, 12),) for n in (3, 5, 17, 64, 7, 300)], dynamic)
    assert_compiled_symbolic(d, ptgo_log, graphs=1 if dynamic else 2)


def test_dynamic_mlp_training(ptgo_log):
    ptgo.set_logs("perf_hints")
    m = MLP().train()
    d = sweep(m, [(torch.randn(n, 12),) for n in (3, 5, 17, 64)], True, grad=True)
    assert_compiled_symbolic(d, ptgo_log, autograd=True)


@pytest.mark.parametrize("dynamic", [True, None])
def test_dynamic_transformer_block_sequence_lengths(dynamic, ptgo_log):
    ptgo.set_logs("perf_hints")
    m = Block().eval()
    d = sweep(m, [(torch.randn(2, t, 16),) for t in (5, 9, 12, 17, 33, 64)], dynamic)
    assert_compiled_symbolic(d, ptgo_log, graphs=1 if dynamic else 2)


def test_dynamic_mark_dynamic(ptgo_log):
    ptgo.set_logs("perf_hints")
    m = Block().eval()
    cm = torch.compile(m, backend="ptgo")
    s0 = stats()
    for t in (5, 9, 12):
        x = torch.randn(2, t, 16)
        torch._dynamo.mark_dynamic(x, 1)  # symbolic from the first call
        with torch.no_grad():
            assert_same(cm(x), m(x))
    assert_compiled_symbolic(delta(s0, stats()), ptgo_log)


def test_dynamic_multi_head_block_compiles_symbolically(ptgo_log):
    """Heads split by view/transpose make an index with a division times a symbolic stride; the
    C backend compiles it symbolically: one graph serves every sequence length."""
    ptgo.set_logs("perf_hints")
    m = Block(heads=2).eval()
    d = sweep(m, [(torch.randn(2, t, 16),) for t in (5, 9, 12)], True)
    assert_compiled_symbolic(d, ptgo_log)


def test_dynamic_sizes_that_are_no_polynomial_run_with_torch(ptgo_log):
    ptgo.set_logs("perf_hints")

    def halves(x):
        return x.view(x.size(0) // 2, -1) * 2

    def scaled(x):
        return x * (x.shape[0] / 2)

    for fn, why in ((halves, "an inexact FloorDiv"), (scaled, "symbolic SymFloat")):
        d = sweep(fn, [(torch.randn(n, 3),) for n in (4, 6, 8)], True)
        assert d["fx"] == 0, d
        assert why in ptgo_log.text, ptgo_log.text


def test_dynamic_returned_size_and_int_input(ptgo_log):
    ptgo.set_logs("perf_hints")

    def flat(x):
        return x.reshape(-1) + 1, x.shape[0] * 3, [x.size(1)]

    d = sweep(flat, [(torch.randn(n, 3),) for n in (4, 6, 8)], True)
    assert_compiled_symbolic(d, ptgo_log)

    def cut(x, n):  # n becomes a SymInt input; ptgo specialises the slice bound under a guard
        return (x[:, :n] * 2).sum(dim=1) + n

    torch._dynamo.reset()
    s0 = stats()
    cf = torch.compile(cut, backend="ptgo")
    for n in (3, 4, 5, 6, 4):
        x = torch.randn(6, 8)
        assert_same(cf(x, n), cut(x, n))
    assert delta(s0, stats())["fx"] == 2
    assert "a guard ptgo's compile assumed fails (a slice bound" in ptgo_log.text, ptgo_log.text


def test_dynamic_non_contiguous_input():
    def f(x):
        return torch.tanh(x) + x.sum(dim=0)

    cf = torch.compile(f, backend="ptgo", dynamic=True)
    for n in (4, 6, 9):
        for x in (torch.randn(n, 5), torch.randn(5, n).t(), torch.randn(n, 10)[:, ::2]):
            assert_same(cf(x), f(x))


def test_input_at_another_storage_offset_runs_with_torch(ptgo_log):
    # Dynamo's guards do not check storage offsets; ptgo's kernels index with the compiled one
    ptgo.set_logs("perf_hints")
    base = torch.randn(8 * 64 + 3)

    def f(x):
        return torch.nn.functional.gelu(x) * 2 + 1

    cf = torch.compile(f, backend="ptgo", dynamic=False)
    for off in (0, 1, 2, 0):
        x = base[off:off + 8 * 64].view(8, 64)
        assert_same(cf(x), f(x))
    assert "another storage offset" in ptgo_log.text


class _ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.Conv2d(8, 4, 3), nn.BatchNorm2d(4))
        self.head = nn.Linear(4, 5)

    def forward(self, x):
        return self.head(self.body(x).mean((2, 3)))


def _conv_bn():
    torch.manual_seed(0)
    m = _ConvBN().eval()
    for bn in (m.body[1], m.body[4]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return m


def test_inference_freezes_lifted_parameters(ptgo_log):
    """A13/A183: Dynamo lifts parameters and buffers to graph inputs; in an inference graph ptgo
    folds them as ptgo.compile does (BatchNorms into convolutions) and checks on every call that
    they are the same tensors at the same versions and data: written in place, through .data,
    replaced, the graph is compiled again, never served stale."""
    ptgo.set_logs("+inductor,perf_hints")
    m = _conv_bn()
    c = torch.compile(m, backend="ptgo", dynamic=False)
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        assert_same(c(x), m(x))
        assert ptgo_log.text.count("freezing: folded") == 2, ptgo_log.text
        writes = [
            lambda: m.body[0].weight.mul_(1.5),                               # version
            lambda: m.body[4].running_var.data.mul_(2),                       # through .data
            lambda: setattr(m.body[3].weight, "data", torch.randn(4, 8, 3, 3)),  # new storage
            lambda: m.head.bias.data.__setitem__(0, 3.0),
            lambda: m.load_state_dict(_conv_bn().state_dict()),
        ]
        for write in writes:
            write()
            assert_same(c(x), m(x))
    assert "compiling it again with the new values" in ptgo_log.text, ptgo_log.text


def test_frozen_graph_written_every_call_stops_freezing(ptgo_log):
    ptgo.set_logs("perf_hints")
    m = _conv_bn()
    c = torch.compile(m, backend="ptgo", dynamic=False)
    x = torch.randn(2, 3, 10, 10)
    with torch.no_grad():
        for _ in range(12):
            m.body[0].weight.add_(0.01)
            assert_same(c(x), m(x))
    assert "with parameters as inputs (written 9 times)" in ptgo_log.text, ptgo_log.text
    assert ptgo_log.text.count("compiling it again") == 9, ptgo_log.text


def test_no_freezing_where_the_graph_writes_a_buffer_or_grad_is_on(ptgo_log):
    """A training-mode BatchNorm under no_grad updates its running statistics: the parameters
    stay inputs. Grad on, or options={"freezing": False}: no freezing either."""
    ptgo.set_logs("+inductor")
    m = _conv_bn().train()
    ref = _conv_bn().train()
    with torch.no_grad():
        x = torch.randn(2, 3, 10, 10)
        assert_same(torch.compile(m, backend="ptgo", dynamic=False)(x), ref(x))
    assert_same(m.body[1].running_mean, ref.body[1].running_mean)
    assert "freezing: folded" not in ptgo_log.text and "not frozen: " in ptgo_log.text, ptgo_log.text
    torch._dynamo.reset()
    m = _conv_bn()
    x = torch.randn(2, 3, 10, 10)
    assert_same(torch.compile(m, backend="ptgo", dynamic=False)(x), m(x))
    with torch.no_grad():
        assert_same(torch.compile(m, backend="ptgo", dynamic=False, options={"freezing": False})(x), m(x))
    assert "freezing: folded" not in ptgo_log.text, ptgo_log.text


def test_frozen_graph_with_dynamic_batch(ptgo_log):
    ptgo.set_logs("+inductor")
    m = _conv_bn()
    c = torch.compile(m, backend="ptgo")
    s0 = stats()
    with torch.no_grad():
        for n in (2, 3, 5):
            x = torch.randn(n, 3, 10, 10)
            torch._dynamo.mark_dynamic(x, 0)
            assert_same(c(x), m(x))
    assert "freezing: folded" in ptgo_log.text, ptgo_log.text
    assert delta(s0, stats())["fx"] == 1
