"""Training through compiled regions is never silently different from eager: double backward
(create_graph=True), hessians, and the other ways autograd meets a compiled region (allow_unused,
retain_graph, hooks, .grad accumulation, in-place changes after the forward)."""
import copy
import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C
from conftest import assert_same

BACKENDS = ["inductor", "aot_eager", None]  # None: ptgo.compile's default
RECOMPUTE_HINT = "recomputes the region's forward with torch"


def stats():
    return json.loads(_C.request("inductor_stats", "{}"))


def compile_with(fn, backend):
    return ptgo.compile(fn) if backend is None else ptgo.compile(fn, backend=backend)


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 1))


def gradient_penalty_step(model, x):
    """WGAN-GP's critic step: the penalty on the input gradient's norm is differentiated again."""
    out = model(x).sum()
    g, = torch.autograd.grad(out, x, create_graph=True)
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    (out + 10 * penalty).backward()
    return out.detach(), g.detach(), penalty.detach()


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_penalty_equals_eager(backend, ptgo_log):
    ptgo.set_logs("perf_hints")
    eager, model = mlp(), mlp()
    compiled = compile_with(model, backend)
    torch.manual_seed(1)
    x = torch.randn(6, 8)
    before = stats()["autograd"]
    for _ in range(2):  # the second call runs the cached region
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        assert_same(gradient_penalty_step(compiled, xc), gradient_penalty_step(eager, xe))
        assert_same(xc.grad, xe.grad)
    for pc, pe in zip(model.parameters(), eager.parameters()):
        assert_same(pc.grad, pe.grad)  # the first layer's gradient includes the penalty's
    # The region is a compiled one (not a torch fallback) and says once that its double
    # backward is recomputed with torch.
    assert ptgo_log.text.count(RECOMPUTE_HINT) == 1, ptgo_log.text
    if backend != "aot_eager":
        assert stats()["autograd"] > before


@pytest.mark.parametrize("backend", BACKENDS)
def test_hessian_of_compiled_function_equals_eager(backend):
    def f(x):
        return (x.sin() * x.cos()).sum() + (x ** 3).sum() + (x[:-1] * x[1:]).exp().sum()

    x = torch.randn(5, dtype=torch.float64)
    cf = compile_with(f, backend)
    assert_same(torch.autograd.functional.hessian(cf, x), torch.autograd.functional.hessian(f, x))


def test_hessian_vector_product_of_module_parameters():
    eager, model = mlp(), mlp()
    compiled = ptgo.compile(model)
    x = torch.randn(4, 8)
    results = []
    for m, fn in ((eager, eager), (model, compiled)):
        loss = fn(x).pow(2).mean()
        grads = torch.autograd.grad(loss, list(m.parameters()), create_graph=True)
        v = [torch.ones_like(g) for g in grads]
        hv = torch.autograd.grad(grads, list(m.parameters()), v)
        results.append(hv)
    assert_same(results[1], results[0])


def test_second_order_grad_through_a_graph_break(counter):
    def f(x):
        y = x.sin() * x
        print("", end="")  # a graph break: two compiled regions
        return (y.exp() * y).sum()

    x = torch.linspace(-1, 1, 6, requires_grad=True)
    xe = x.detach().clone().requires_grad_()
    cf = ptgo.compile(f)
    for fn, xx in ((cf, x), (f, xe)):
        g, = torch.autograd.grad(fn(xx), xx, create_graph=True)
        g.pow(2).sum().backward()
    assert_same(x.grad, xe.grad)
    # and the regions compiled on both sides of the break
    ptgo.reset()
    cc = ptgo.compile(f, backend=counter)
    cc(x)
    assert counter.frame_count == 2


def test_double_backward_through_training_batchnorm_keeps_running_stats():
    def make():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Tanh(), nn.Flatten(), nn.Linear(4 * 6 * 6, 1))

    eager, model = make(), make()
    compiled = ptgo.compile(model)
    x = torch.randn(3, 3, 8, 8)
    for _ in range(2):
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        assert_same(gradient_penalty_step(compiled, xc), gradient_penalty_step(eager, xe))
        assert_same(xc.grad, xe.grad)
    for pc, pe in zip(model.parameters(), eager.parameters()):
        assert_same(pc.grad, pe.grad)
    # The recompute reads the statistics the forward read and leaves them as the forward did.
    for bc, be in zip(model.buffers(), eager.buffers()):
        assert_same(bc, be)


def test_double_backward_replays_random_numbers():
    def f(x):
        mask = (torch.rand_like(x) > 0.5).to(x.dtype)  # no gradient flows through the draw
        return (x.sin() * mask * x).sum()

    cf = ptgo.compile(f)
    out = []
    for fn in (cf, f):
        torch.manual_seed(3)
        x = torch.linspace(-1, 1, 16, requires_grad=True)
        g, = torch.autograd.grad(fn(x), x, create_graph=True)
        g.pow(2).sum().backward()
        out.append((g.detach(), x.grad, torch.rand(2)))  # the generator is where eager leaves it
    assert_same(out[0], out[1])


def test_double_backward_after_an_input_changed_raises_as_eager():
    def f(h):
        return h.sin().sum()

    cf = ptgo.compile(f)
    for fn in (f, cf):
        x = torch.ones(3, requires_grad=True)
        h = x * 1
        loss = fn(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            torch.autograd.grad(loss, x, create_graph=True)


# ---- first-order autograd around a compiled region ---------------------------------------------

def _grads(ts):
    return [None if t is None else t.detach().clone() for t in ts]


def test_grad_allow_unused_gives_none_as_eager():
    def f(x, y):
        return x.sin().sum() + y.detach().sum()

    cf = ptgo.compile(f)
    out = []
    for fn in (f, cf):
        x = torch.linspace(0, 1, 3, requires_grad=True)
        y = torch.ones(3, requires_grad=True)
        out.append(_grads(torch.autograd.grad(fn(x, y), [x, y], allow_unused=True)))
        with pytest.raises(RuntimeError, match="not have been used in the graph"):
            torch.autograd.grad(fn(x, y), [x, y])
    assert out[1][1] is None
    assert_same(out[1], out[0])


def test_retain_graph_backward_twice_accumulates_as_eager():
    def f(x):
        return (x.exp() * 2).sum()

    cf = ptgo.compile(f)
    out = []
    for fn in (f, cf):
        x = torch.linspace(0, 1, 3, requires_grad=True)
        loss = fn(x)
        loss.backward(retain_graph=True)
        loss.backward()
        out.append(x.grad)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()
    assert_same(out[1], out[0])


def test_hooks_and_retain_grad_as_eager():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g * 10)  # a hook on an intermediate inside the frame
        z = y * y
        z.retain_grad()
        return z.sum(), z

    cf = ptgo.compile(f)
    out = []
    for fn in (f, cf):
        x = torch.linspace(0, 1, 3, requires_grad=True)
        seen = []
        x.register_hook(lambda g: seen.append(g.clone()) or g * 3)  # a hook on an input
        loss, z = fn(x)
        loss.backward()
        out.append((x.grad, z.grad, seen))
    assert_same(out[1], out[0])


def test_grad_accumulates_and_unused_parameters_stay_none():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x).tanh().sum()

    out = []
    for wrap in (lambda m: m, ptgo.compile):
        torch.manual_seed(0)
        m = M()
        fn = wrap(m)
        x = torch.randn(2, 3)
        fn(x).backward()
        fn(x * 2).backward()
        out.append([p.grad for p in m.parameters()])
    assert out[1][2] is None and out[1][3] is None
    assert_same(out[1], out[0])


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_equal_gradients_are_separate_tensors_and_accumulate_as_eager(backend):
    # Two biases added to one value have equal gradients (the sum of the incoming gradient), and
    # a third input's gradient is a view of it: ptgo's backward computes the sum once, but each
    # .grad must be a tensor of its own, or the second backward (accumulating without zero_grad)
    # adds into one tensor through two fields (resnet's second step: bn2.bias and
    # downsample.1.bias).
    def f(x, a, b, c):
        return ((x + a + b + c).relu() * x).sum()

    out = []
    for fn in (f, ptgo.compile(f, backend=backend)):
        torch.manual_seed(0)
        x = torch.randn(5, 4)
        ps = [torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True),
              torch.randn(1, 4, requires_grad=True)]
        fn(x, *ps).backward()
        fn(x * 2, *ps).backward()
        ptrs = {p.grad.data_ptr() for p in ps}
        assert len(ptrs) == 3, "gradients share memory"
        out.append([p.grad for p in ps])
    assert_same(out[1], out[0])


def test_non_contiguous_incoming_gradient():
    def f(x):
        return x.sin() * 3

    out = []
    for fn in (f, ptgo.compile(f)):
        x = torch.linspace(0, 1, 12).reshape(3, 4).requires_grad_()
        fn(x).backward(torch.arange(12.).reshape(4, 3).t())
        out.append(x.grad)
    assert_same(out[1], out[0])


class PoolDropoutNet(nn.Module):
    """The layers that used to send a training graph back to torch: a bias-free convolution of
    an input that needs no grad, max pooling (non-overlapping, and 3×3 stride 2 over a ReLU's
    ties), dropout."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 3, 2, 1)
        return self.fc(self.drop(x.mean((2, 3))))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_pool_dropout_and_bias_free_conv_train_compiled(backend, ptgo_log):
    # compiled, not run with torch: dropout draws eager's random numbers (its noise is torch's,
    # the product ptgo's), max pooling's gradient is torch's kernel, a convolution's unneeded
    # input gradient is None; losses, gradients, BatchNorm statistics and the RNG state after
    # each step equal eager's
    ptgo.set_logs("perf_hints")
    torch.manual_seed(0)
    ref = PoolDropoutNet()
    cmp = PoolDropoutNet()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    before = stats()
    for step in range(3):
        x = torch.randn(4, 3, 18, 18)
        got = []
        for model in (ref, compiled):
            torch.manual_seed(step)
            loss = model(x).square().mean()
            loss.backward()
            got.append((loss.detach(), torch.rand(2)))
        assert_same(got[1], got[0], "step %d" % step)
        for p, q in zip(ref.parameters(), cmp.parameters()):
            assert_same(q.grad, p.grad, "gradient at step %d" % step)
            p.grad = q.grad = None
        assert_same(cmp.bn.running_mean, ref.bn.running_mean)
    assert "runs with torch" not in ptgo_log.text, ptgo_log.text
    if backend == "inductor":
        assert stats()["autograd"] - before["autograd"] >= 1


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("variant", ["dropout", "alpha_dropout", "dropout2d", "feature_alpha_dropout"])
@pytest.mark.parametrize("grad", [False, True])
def test_every_dropout_variant_in_training_as_eager(backend, variant, grad):
    """Fuzz seed 142: the alpha and feature variants of dropout draw other noise than plain
    dropout (a mask plus an offset, one draw per channel): each gives eager's values, gradient and
    random stream, compiled or run with torch."""
    import torch.nn.functional as F
    drop = getattr(F, variant)

    def f(x):
        return drop(torch.tanh(x) * 2, 0.3, True) + 1

    x0 = torch.randn(2, 4, 3, 3)
    compiled = ptgo.compile(f, backend=backend)
    got = []
    for fn in (f, compiled):
        x = x0.clone().requires_grad_(grad)
        torch.manual_seed(7)
        y = fn(x)
        if grad:
            y.square().sum().backward()
        got.append((y.detach(), x.grad, torch.rand(2)))
    assert_same(got[1], got[0])


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("layout", ["transposed", "permuted", "sliced", "channels_last", "expanded"])
def test_dropout_of_any_layout_compiled_as_eager(backend, layout, ptgo_log):
    """nn.MultiheadAttention's output (batch_first) is a transposed view, and a
    TransformerEncoderLayer's dropout1 of it sent the whole training graph back to torch. Dropout
    of any layout is x · dropout(ones_like(x)): eager's noise, drawn in the layout eager draws it
    in (contiguous on 1.13, the input's on 2.x); values, gradients and the random stream after it
    equal eager's, and the graph is compiled."""
    ptgo.set_logs("perf_hints")
    views = {
        "transposed": lambda t: t.transpose(0, 1),
        "permuted": lambda t: t.permute(2, 0, 1),
        "sliced": lambda t: t[:, ::2],
        "channels_last": lambda t: t.unsqueeze(0).contiguous(memory_format=torch.channels_last)[0],
        "expanded": lambda t: t[:, :1].expand(-1, 6, -1),
    }

    def f(w, x):
        y = views[layout](torch.tanh(x) * w)
        return torch.nn.functional.dropout(y, 0.4, True).cos()

    x0 = torch.randn(5, 6, 7)
    w0 = torch.randn(5, 6, 7)
    compiled = ptgo.compile(f, backend=backend)
    got = []
    for fn in (f, compiled):
        w = w0.clone().requires_grad_()
        torch.manual_seed(3)
        y = fn(w, x0)
        y.square().sum().backward()
        got.append((y.detach(), w.grad, torch.rand(2)))
    assert_same(got[1], got[0])
    if layout != "expanded":
        assert "runs with torch" not in ptgo_log.text, ptgo_log.text


class AvgPoolNet(nn.Module):
    """densenet's transition (BatchNorm, ReLU, 1x1 conv, 2x2 average pool) and inception's
    3x3 stride-1 average pool, with and without counting the padding."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(4)
        self.c = nn.Conv2d(4, 6, 1, bias=False)
        self.c2 = nn.Conv2d(6, 3, 3, padding=1)

    def forward(self, x):
        y = torch.nn.functional.avg_pool2d(self.c(torch.relu(self.bn(x))), 2, 2)
        z = torch.nn.functional.avg_pool2d(self.c2(y), 3, 1, 1, count_include_pad=False)
        return (torch.nn.functional.avg_pool2d(z, 3, 1, 1) + z).sum((2, 3))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_avg_pool_train_compiled(backend, ptgo_log):
    # compiled, not run with torch: avg_pool2d in a training graph is torch's kernel,
    # differentiated with torch's avg_pool2d_backward (eager's kernel), so the pool's own
    # gradient is eager's; losses, gradients and BatchNorm statistics equal eager's
    ptgo.set_logs("perf_hints")
    torch.manual_seed(0)
    ref, cmp = AvgPoolNet(), AvgPoolNet()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    before = stats()
    for step in range(2):
        x = torch.randn(2, 4, 10, 10)
        losses = [model(x).square().sum() for model in (ref, compiled)]
        for loss in losses:
            loss.backward()
        assert_same(losses[1].detach(), losses[0].detach(), "step %d" % step)
        for p, q in zip(ref.parameters(), cmp.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-5)
            p.grad = q.grad = None
        assert_same(cmp.bn.running_var, ref.bn.running_var)
    assert "runs with torch" not in ptgo_log.text, ptgo_log.text
    if backend == "inductor":
        assert stats()["autograd"] - before["autograd"] >= 1


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_batch_norm_of_an_empty_batch_leaves_its_statistics(backend):
    """Fuzz seed 956: torch's batch_norm of an empty input returns a copy and leaves the running
    statistics alone; the mean of no elements made them NaN."""
    torch.manual_seed(0)
    ref, cmp = nn.BatchNorm1d(3), nn.BatchNorm1d(3)
    compiled = ptgo.compile(cmp, backend=backend)
    outs = []
    for model in (ref, compiled):
        x = torch.randn(0, 3, requires_grad=True)
        y = model(x * 2)
        y.sum().backward()
        outs.append((y.detach(), x.grad))
    assert_same(outs[1], outs[0])
    assert_same(cmp.state_dict(), ref.state_dict())


def _grad_or_error(fn, x, g):
    x = x.clone().requires_grad_()
    try:
        y = fn(x * 1)
        y.backward(g)
        return y.detach(), x.grad
    except RuntimeError as e:
        return str(e)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("case", ["0d", "0d_dim", "1d_all", "1d_dim", "correction", "var_mean", "std"])
def test_variance_without_degrees_of_freedom_differentiates_as_eager(backend, case):
    """Fuzz seed 813: var over as many elements as its correction. torch 1.13's var_backward
    answers inf * grad when reducing every dim (a 0-d input), raises for a 1-element 1-d input
    ('returned an invalid gradient'), NaN with a dim; differentiating the decomposition gave
    0/0 = NaN everywhere. Those calls run with torch."""
    fn, x, g = {
        "0d": (lambda x: x.var(), torch.tensor(0.7), torch.tensor(-2.0)),
        "0d_dim": (lambda x: x.var(0), torch.tensor(0.7), torch.tensor(-2.0)),
        "1d_all": (lambda x: x.var(), torch.tensor([0.7]), torch.tensor(-2.0)),
        "1d_dim": (lambda x: x.var(0), torch.tensor([0.7]), torch.tensor(-2.0)),
        "correction": (lambda x: torch.var(x, 0, correction=3), torch.tensor([0.7, 1.0, 2.0]), torch.tensor(-2.0)),
        "var_mean": (lambda x: torch.var_mean(x)[0], torch.tensor(0.7), torch.tensor(-2.0)),
        "std": (lambda x: x.std(), torch.tensor(0.7), torch.tensor(-2.0)),
    }[case]
    want = _grad_or_error(fn, x, g)
    got = _grad_or_error(ptgo.compile(fn, backend=backend), x, g)
    if isinstance(want, str):
        assert got == want
    else:
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_variance_over_a_symbolic_length_and_a_large_correction(backend):
    """With dynamic=True a length may equal var's correction of 3 at one call and not at the
    next: the length is specialised under a guard, so each size gets eager's gradient (inf at
    length 3, finite at 5), whichever came first."""
    def fn(x):
        return torch.var(x, 0, correction=3)

    compiled = ptgo.compile(fn, backend=backend, dynamic=True)
    for n in (5, 3, 6, 3):
        x = torch.linspace(0.5, 2.0, n)
        got, want = _grad_or_error(compiled, x, torch.tensor(-2.0)), _grad_or_error(fn, x, torch.tensor(-2.0))
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("row", [[2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 1e30, 2.0, -1.0], [2.0, float("inf"), 3.0, 1.0],
                                 [1.5, -2.0, 0.5, 3.0], [0.0, 0.0, 2.0, 3.0], [float("nan"), 0.0, 2.0, 1.0]])
def test_cumprod_gradient_with_zeros_and_infinities_as_eager(backend, row):
    """Fuzz seed 1186: cumprod's gradient is torch's cumprod_backward, which masks what follows
    the first zero of a row; the exact every-product-but-one form gave NaN for a row with a zero
    and an inf (0 * inf)."""
    def f(x):
        return torch.cumprod(x ** 3, -1) * 1

    base = torch.tensor([row, [1.0] * len(row)])
    g = torch.arange(1.0, 1.0 + base.numel()).reshape(base.shape)
    want = base.clone().requires_grad_()
    f(want).backward(g)
    got = base.clone().requires_grad_()
    ptgo.compile(f, backend=backend)(got).backward(g)
    assert_same(got.grad, want.grad)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_rounding_division_gradient_is_zeros_as_eager(backend):
    """Fuzz seed 1359: torch's gradient of div(rounding_mode='trunc') is zeros for both operands,
    whatever the incoming gradient; differentiating trunc(a / b) gave 0 / 0 = NaN where b is 0."""
    def f(x, y):
        return torch.div(x, y, rounding_mode="trunc")

    def run(fn):
        x = torch.tensor([1.0, 2.0, -3.5], dtype=torch.float64, requires_grad=True)
        y = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
        out = fn(x, y)
        out.backward(torch.tensor([float("inf"), 1.0, float("nan")], dtype=torch.float64))
        return out.detach(), x.grad, y.grad

    for got, want in zip(run(ptgo.compile(f, backend=backend)), run(f)):
        assert_same(got, want)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_layer_norm_of_an_empty_batch_gives_parameters_zero_gradients(backend):
    """Fuzz seed 1790: an empty result is a clone of its same-shaped argument, which cut the
    weight's and bias's gradient paths (.grad None where eager gives zeros)."""
    ln = nn.LayerNorm(3)

    def f(x):
        return ln(x)

    for fn in (f, ptgo.compile(f, backend=backend)):
        ln.zero_grad(set_to_none=True)
        fn(torch.zeros(0, 3, requires_grad=True)).backward(torch.zeros(0, 3))
        assert_same(ln.weight.grad, torch.zeros(3))
        assert_same(ln.bias.grad, torch.zeros(3))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_norm_of_a_zero_vector_differentiates_as_eager(backend):
    """torch's norm_backward gives a zero vector a zero gradient (it masks norm == 0), where the
    root's derivative is infinite: differentiating sqrt(sum(x * x)) gave NaN for F.normalize of
    a zero row (swin_v2_t's attention over zero-padded tokens, whose key bias is zeroed)."""
    def f(k, w):
        return ((F.normalize(k, dim=-1) * w).sum() + (torch.linalg.vector_norm(k, dim=-1) * w[:, 0]).sum()
                + (k.norm(3, dim=-1) * w[:, 1]).sum() + (F.normalize(k, p=1.5, dim=-1) * w).sum())

    out = []
    for fn in (f, ptgo.compile(f, backend=backend)):
        k = torch.arange(-6.0, 6.0).reshape(3, 4) / 4
        k[1] = 0
        k.requires_grad_()
        w = torch.arange(12.0).reshape(3, 4)
        fn(k, w).backward()
        out.append(k.grad)
    assert torch.isfinite(out[1]).all()
    assert_same(out[1], out[0])


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_max_pool_runs_once_per_training_step(backend, channels_last):
    # On a contiguous float input the pool is ptgo's: the window's index as torch's kernel
    # picks it, the values gathered there, the gradient accumulated at those indices; no torch
    # pool at all. Otherwise (channels-last) it is torch's max_pool2d_with_indices, whose
    # indices are saved for max_pool2d_with_indices_backward as eager saves them (the backward
    # used to recompute them, running the pool twice per step). Ties after a ReLU send the
    # gradient to torch's first maximum either way.
    from torch.profiler import profile

    torch.manual_seed(0)
    ref = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.MaxPool2d(3, 1, 1))
    cmp = copy.deepcopy(ref)
    compiled = ptgo.compile(cmp, backend=backend)
    x = torch.randn(2, 3, 8, 8)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    for model, fn in ((ref, ref), (cmp, compiled)):
        fn(x).sum().backward()
    for p, q in zip(ref.parameters(), cmp.parameters()):
        assert_same(q.grad, p.grad)
    with profile() as prof:
        compiled(x).sum().backward()
    calls = {e.key: e.count for e in prof.key_averages()}
    torch_pools = 2 if channels_last else None
    assert calls.get("aten::max_pool2d_with_indices") == torch_pools, calls
    assert calls.get("aten::max_pool2d_with_indices_backward") == torch_pools, calls


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("config", [(2, 2, 0), (3, 2, 1), (3, 1, 1), ((3, 2), (2, 1), (1, 0)), (3, 3, 1)])
def test_training_max_pool_picks_torchs_index(config, dtype):
    """ptgo's training max pool gives eager's values, and gradients to the element torch's
    kernel picks, to the bit: the last NaN of a window, else its first maximum (ties of signed
    zeros and of -inf included), -inf padding never, an all -inf window its first position;
    overlapping windows accumulate in torch's order."""
    k, s, p = config
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 9, 8, dtype=dtype, generator=g)
    flat = x.view(-1)
    for v in (float("nan"), float("-inf"), 0.0, -0.0, 1.0):
        flat[torch.randint(0, flat.numel(), (flat.numel() // 8,), generator=g)] = v
    x[1, 2] = float("-inf")

    def f(x):
        return F.max_pool2d(x * 1, k, s, p)

    xe, xp = x.clone().requires_grad_(), x.clone().requires_grad_()
    want, got = f(xe), ptgo.compile(f, backend="inductor")(xp)
    assert_same(got, want)
    grad = torch.randn(want.shape, dtype=dtype, generator=g)
    want.backward(grad)
    got.backward(grad)
    bits = torch.int64 if dtype == torch.float64 else torch.int32
    assert torch.equal(xp.grad.view(bits), xe.grad.view(bits))


def _detach(x):
    return x.detach()


def _detach_slice(x):
    return x.detach()[1:]


def _detach_three(x):
    return x.detach(), x.detach()[1:], (x * 2).detach()


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("f", [_detach, _detach_slice, _detach_three], ids=["detach", "slice", "three"])
def test_detach_of_an_input_that_requires_grad_does_not_require_grad(backend, f):
    """Fuzz seeds 2629, 4492, 5107, 7982: x.detach() returned by a compiled graph required grad
    on the C backend (its launch plan made the output as a view of x, and a view of a tensor
    that requires grad requires grad even when made with grad mode off)."""
    x = torch.randn(4, 3, requires_grad=True)
    want = f(x)
    got = ptgo.compile(f, backend=backend)(x)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for w, g in zip(want, got):
        assert (g.requires_grad, g.is_leaf, g.grad_fn) == (w.requires_grad, w.is_leaf, w.grad_fn)
        assert_same(g, w)
    before = x.detach().clone()
    got[0].add_(1)  # eager allows writing a detached tensor in place: it shares x's memory
    assert not torch.equal(x.detach(), before)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_gradient_through_complex_fallbacks_reaches_the_input(backend):
    """Fuzz seed 3112: x's gradient through torch.complex and view_as_real (torch fallbacks)
    into a Linear layer: complex values did not count as requiring grad, so ptgo's autograd
    stopped the gradient there silently (x.grad None) while the layer's parameters got theirs;
    the graph runs with torch, as ptgo cannot differentiate those fallbacks."""
    torch.manual_seed(0)
    lin = nn.Linear(2, 3)
    x1 = torch.rand(8, 4, 1) + 0.05

    def f(x0):
        return lin(torch.view_as_real(torch.complex(x1 * x0, x1 * x0))).sum()

    a = torch.tensor(0.3, requires_grad=True)
    f(a).backward()
    want = (a.grad, lin.weight.grad.clone())
    lin.zero_grad()
    b = torch.tensor(0.3, requires_grad=True)
    ptgo.compile(f, backend=backend)(b).backward()
    assert b.grad is not None
    assert_same(b.grad, want[0])
    assert_same(lin.weight.grad, want[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_masked_write_into_tensor_that_requires_grad(backend):
    # fuzz seed 9255: x[x > 0] = -3 into a non-leaf that requires grad returns nothing that
    # requires grad, yet autograd must see the write (the overwritten elements get no gradient)
    def f(x):
        x[x > 0] = -3
        return (x,)

    grads = []
    for fn in (f, compile_with(f, backend)):
        torch.manual_seed(0)
        base = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
        fn(base * 1.0)[0].backward(torch.arange(16.0, dtype=torch.float64).view(4, 4))
        grads.append(base.grad)
    assert torch.equal(grads[0], grads[1]), grads


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("value", [float("nan"), 2.0, float("-inf"), -0.0])
def test_amin_of_a_0d_tensor_gradient_as_eager(backend, value):
    """Fuzz seed 25816: amin/amax over dim 0 of a 0-d tensor is the tensor, but torch's gradient
    is amax's (grad / count) · (x == result): NaN where x is NaN. The reduction over no dims
    read as max()'s, which gives a NaN element the whole gradient."""
    for fn in (torch.amin, torch.amax):
        def f(x, fn=fn):
            return fn(x * 1, 0)

        want = torch.tensor(value, requires_grad=True)
        out = f(want)
        out.backward(torch.tensor(1.5))
        got = torch.tensor(value, requires_grad=True)
        res = ptgo.compile(f, backend=backend)(got)
        res.backward(torch.tensor(1.5))
        assert_same(res, out)
        assert_same(got.grad, want.grad)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("exponent", [-2, -0.5, 2, 3, 0.5, -1])
def test_pow_gradient_at_zeros_and_infinities_as_eager(backend, exponent):
    """Fuzz seed 27192: x ** -2 is computed as torch's kernel does, 1 / (x · x), and its chain
    rule gave NaN at ±0 and ±inf where torch's derivative, grad · (e · x^(e−1)), gives ±inf
    and −0; rsqrt's chain rule had the wrong sign of infinity at −0."""
    def f(x):
        return x ** exponent

    vals = [0.0, -0.0, 1e-30, -1e-30, float("inf"), float("-inf"), 2.0, 0.75]
    want = torch.tensor(vals, requires_grad=True)
    f(want).backward(torch.ones(len(vals)))
    got = torch.tensor(vals, requires_grad=True)
    ptgo.compile(f, backend=backend)(got).backward(torch.ones(len(vals)))
    assert torch.equal(got.grad.isnan(), want.grad.isnan())
    finite = ~want.grad.isnan()
    assert torch.equal(got.grad[finite].isinf(), want.grad[finite].isinf())
    assert torch.equal(torch.signbit(got.grad[finite]), torch.signbit(want.grad[finite]))
    torch.testing.assert_close(got.grad[finite], want.grad[finite], rtol=1e-6, atol=0)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("exponent", [False, 0, 0.0])
def test_pow_by_zero_gradient_as_eager(backend, exponent):
    """Fuzz seed 25377: torch's pow_backward tests a bool exponent against 0.0 and finds it
    unequal, so x ** False's gradient is grad · (0 · x⁻¹) — NaN at 0 and NaN — where x ** 0 and
    x ** 0.0 give zeros."""
    def f(x):
        return x ** exponent

    vals = [0.0, -0.0, float("nan"), float("inf"), 2.0]
    want = torch.tensor(vals, requires_grad=True)
    want_out = f(want)
    want_out.backward(torch.ones(len(vals)))
    got = torch.tensor(vals, requires_grad=True)
    out = ptgo.compile(f, backend=backend)(got)
    out.backward(torch.ones(len(vals)))
    assert_same(out, want_out)
    assert torch.equal(got.grad.isnan(), want.grad.isnan())
    assert torch.equal(got.grad.nan_to_num(), want.grad.nan_to_num())


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_atan2_gradient_at_the_origin_as_eager(backend):
    """Fuzz seed 28525: torch 2.14 zeroes atan2's gradient where self² + other² is 0 (1.13
    gives NaN there); both compute grad · other · (1 / (self² + other²)) elsewhere."""
    def f(a, b):
        return torch.atan2(a, b)

    vals = [0.0, -0.0, 0.0, 1.5, -2.0, 1e-30]
    other = [0.0, -0.0, -0.0, 0.5, 0.0, 1e-30]
    g = torch.tensor([1.0, -2.0, 3.0, 0.5, 1.0, 1.0])
    want = [torch.tensor(v, requires_grad=True) for v in (vals, other)]
    f(*want).backward(g)
    got = [torch.tensor(v, requires_grad=True) for v in (vals, other)]
    ptgo.compile(f, backend=backend)(*got).backward(g)
    for w, c in zip(want, got):
        assert torch.equal(c.grad.isnan(), w.grad.isnan())
        assert torch.equal(c.grad.nan_to_num(), w.grad.nan_to_num())
        assert torch.equal(torch.signbit(c.grad[~w.grad.isnan()]), torch.signbit(w.grad[~w.grad.isnan()]))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("op", ["logical_not_", "logical_or_", "gt_"])
def test_inplace_logical_op_through_a_view_keeps_the_gradient_as_eager(backend, op):
    """Fuzz seed 29589: torch's in-place logical ops have no derivative, so a tensor that
    requires grad keeps its autograd history through them and its gradient passes the write
    (x · 2 then logical_not_ through a view: the gradient is still 2), where ptgo's functional
    write gave 0; such a region runs with torch. The in-place comparisons have a derivative,
    zeros, which the functional write gives."""
    def f(x):
        v = x * 2
        w = v[1:, None]
        getattr(w, op)() if op == "logical_not_" else getattr(w, op)(torch.zeros(3, 1))
        return v * 3

    want = torch.randn(4, requires_grad=True)
    out = f(want)
    out.sum().backward()
    got = want.detach().clone().requires_grad_()
    res = ptgo.compile(f, backend=backend)(got)
    res.sum().backward()
    assert_same(res, out)
    assert_same(got.grad, want.grad)


class EmbedDropoutLM(nn.Module):
    """A GPT's input: token embedding plus positions, dropout, a split into q/k/v, a head."""

    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(16, 8)
        self.pos = nn.Parameter(torch.randn(1, 5, 8))
        self.drop = nn.Dropout(0.25)
        self.qkv = nn.Linear(8, 24)
        self.head = nn.Linear(8, 16)

    def forward(self, ids):
        x = self.drop(self.tok(ids) + self.pos)
        q, k, v = self.qkv(x).split(8, dim=-1)
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return self.head(att @ v)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_embedding_with_dropout_trains_compiled(backend, ptgo_log):
    """An embedding's index check (A204) beside dropout's draw: the region compiles (it used
    to run with torch: a check in a graph that draws was refused, and `split`'s items counted as
    writes); an index out of range raises eager's IndexError with torch's generator where eager
    leaves it, and the next steps' losses, gradients and random streams equal eager's."""
    ptgo.set_logs("perf_hints")
    torch.manual_seed(0)
    ref = EmbedDropoutLM()
    cmp = copy.deepcopy(ref)
    compiled = ptgo.compile(cmp, backend=backend)
    before = stats()
    for step, ids in enumerate([torch.randint(0, 16, (2, 5)), torch.tensor([[1, 2, 3, 4, 16], [0, 0, 0, 0, 0]]),
                                torch.randint(0, 16, (2, 5))]):
        got = []
        for model in (ref, compiled):
            torch.manual_seed(step)
            try:
                loss = model(ids).square().mean()
                loss.backward()
                got.append((loss.detach(), torch.rand(2)))
            except IndexError as e:
                got.append((str(e), torch.rand(2)))
        if isinstance(got[0][0], str):
            assert got[1][0] == got[0][0] and torch.equal(got[1][1], got[0][1])
            continue
        assert_same(got[1], got[0], "step %d" % step)
        for p, q in zip(ref.parameters(), cmp.parameters()):
            assert_same(q.grad, p.grad, "gradient at step %d" % step)
            p.grad = q.grad = None
    assert "runs with torch" not in ptgo_log.text, ptgo_log.text
    if backend == "inductor":
        assert stats()["autograd"] - before["autograd"] >= 1


class IndexedBiasBN(nn.Module):
    """LeViT's attention biases (a parameter indexed by an index buffer) beside a training
    BatchNorm, which writes its running statistics (timm levit, coatnet, maxvit)."""

    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.bias = nn.Parameter(torch.randn(4, 16))
        self.register_buffer("idx", torch.randint(0, 16, (16, 16)), persistent=False)

    def forward(self, x):
        x = torch.tanh(self.bn(x))  # (no gradient that is zero in exact arithmetic: cancellation noise)
        return (x @ x.transpose(1, 2)).sum() + self.bias[:, self.idx].square().sum()


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_check_beside_a_training_batchnorm_compiles(backend, ptgo_log):
    """A region with an index check whose forward writes an input (running statistics) ran with
    torch: a failed check could not hand the call over untouched. The wrapper puts the written
    inputs back before torch's rerun (A187), so it compiles; an index out of range raises
    eager's IndexError with the statistics updated once, as eager's."""
    ptgo.set_logs("perf_hints")
    torch.manual_seed(0)
    ref = IndexedBiasBN()
    cmp = copy.deepcopy(ref)
    compiled = ptgo.compile(cmp, backend=backend)
    before = stats()
    for step in range(4):
        if step == 2:
            ref.idx[3, 5] = cmp.idx[3, 5] = 16
        if step == 3:
            ref.idx[3, 5] = cmp.idx[3, 5] = 2
        x = torch.randn(2, 8, 16)
        got = []
        for model in (ref, compiled):
            try:
                loss = model(x)
                loss.backward()
                got.append(loss.detach())
            except IndexError as e:
                got.append(str(e))
        if step == 2:
            assert isinstance(got[0], str) and got[1] == got[0]
        else:
            assert_same(got[1], got[0], "step %d" % step)
        for p, q in zip(ref.parameters(), cmp.parameters()):
            assert_same(q.grad, p.grad, "gradient at step %d" % step)
            p.grad = q.grad = None
        assert_same((cmp.bn.running_mean, cmp.bn.running_var, cmp.bn.num_batches_tracked),
                    (ref.bn.running_mean, ref.bn.running_var, ref.bn.num_batches_tracked), "statistics at step %d" % step)
    assert "runs with torch" not in ptgo_log.text, ptgo_log.text
    if backend == "inductor":
        assert stats()["autograd"] - before["autograd"] >= 1


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_check_of_values_written_in_the_graph(backend):
    """An embedding of values the graph wrote in place itself (through a view of its own
    result), beside a random draw: the index check reads the write, which is no effect on the
    user's tensors, so nothing orders the check before it (fuzz seed 29707: a scheduling cycle,
    "kernel groups have no order to run in")."""
    emb = nn.Embedding(10, 2)

    def f(x):
        v = x * x.sum().item()
        noise = torch.randn(4, 3)
        v.unsqueeze(0).mul_(3.0)
        return emb(v.long().abs() % 10), v, noise

    x = torch.randn(4, 3)
    torch.manual_seed(0)
    want = f(x)
    torch.manual_seed(0)
    got = ptgo.compile(f, backend=backend)(x)
    assert_same(got, want)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
def test_channels_last_cnn_training_steps_equal_eager(layout):
    """A channels-last CNN (torchvision's `--channels-last` training recipe) through a compiled
    training step: torch's convolution and pooling backward kernels give channels-last
    gradients, which the plan now expects (they were copied back to contiguous on every call),
    and BatchNorm's pointwise parts run in memory order. Losses, parameters, gradient strides
    and BatchNorm statistics equal eager's."""
    torch.manual_seed(0)
    body = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.AvgPool2d(2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))
    x, target = torch.randn(4, 3, 16, 16), torch.randint(0, 4, (4,))
    if layout == "channels_last":
        body = body.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    models = [body, copy.deepcopy(body)]
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in models]

    def make(m, opt):
        def step(x, t):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(m(x), t)
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make(models[0], opts[0]), ptgo.compile(make(models[1], opts[1]))
    for _ in range(3):
        le, lc = eager(x, target), compiled(x, target)
        torch.testing.assert_close(lc, le, rtol=1e-5, atol=1e-6)
    for (name, pe), pc in zip(models[0].named_parameters(), models[1].parameters()):
        torch.testing.assert_close(pc, pe, rtol=1e-4, atol=1e-5, msg=name)
        assert pc.grad.stride() == pe.grad.stride(), (name, pc.grad.stride(), pe.grad.stride())
    for be, bc in zip(models[0].buffers(), models[1].buffers()):
        torch.testing.assert_close(bc, be, rtol=1e-5, atol=1e-6)
