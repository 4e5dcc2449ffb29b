"""Dynamic shapes (issue 10): size symbols in capture, their guards, and the dynamic= policy.

Every test compares with eager and counts the graphs ptgo compiled (its compile log), across a
sweep of sizes: automatic dynamic compiles static first and one symbolic graph after the first
size change; dynamic=True is symbolic from the start; dynamic=False compiles once per size.
"""
import copy
import json
import os
import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C
from conftest import assert_same


def compiled_count():
    log = (json.loads(_C.request("compile_log", "{}")) or []) if _C.go_loaded() else []
    return sum(1 for r in log if r.get("compiled"))


BACKENDS = ["eager", "aot_eager", "inductor"]


def sweep(fn, make, sizes, **kw):
    cf = ptgo.compile(fn, **kw)
    for n in sizes:
        args = make(n)
        assert_same(cf(*args), fn(*args), "size %r" % (n,))
    return compiled_count()


def pointwise(x, y):
    b = x.size(0)
    z = x.reshape(b, -1) * 2 + y.reshape(b, -1).sum(1, keepdim=True)
    return torch.relu(z) / x.shape[1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_automatic_dynamic_batch(backend):
    sizes = [3, 5, 8, 5, 11, 17, 2, 40, 64, 33]
    n = sweep(pointwise, lambda b: (torch.randn(b, 4, 2), torch.randn(b, 8)), sizes, backend=backend)
    assert n <= 2, "%d graphs for %d sizes" % (n, len(set(sizes)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dynamic_true_compiles_once(backend):
    sizes = [3, 5, 8, 11, 17]
    n = sweep(pointwise, lambda b: (torch.randn(b, 4, 2), torch.randn(b, 8)), sizes, backend=backend, dynamic=True)
    assert n == 1


def test_dynamic_false_compiles_per_size():
    sizes = [3, 5, 8]
    n = sweep(pointwise, lambda b: (torch.randn(b, 4, 2), torch.randn(b, 8)), sizes, backend="eager", dynamic=False)
    assert n == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_pointwise_many_2d_shapes(backend):
    def f(x):
        return torch.sigmoid(x) * x + 1.0

    rng = random.Random(0)
    shapes = [(rng.randint(2, 64), rng.randint(2, 64)) for _ in range(14)]
    n = sweep(f, lambda s: (torch.randn(*s),), shapes, backend=backend)
    assert n <= 2


def test_size_one_is_specialised():
    cf = ptgo.compile(pointwise, backend="eager", dynamic=True)
    for b in [5, 1, 6, 1]:
        args = (torch.randn(b, 4, 2), torch.randn(b, 8))
        assert_same(cf(*args), pointwise(*args))
    # one symbolic graph for sizes >= 2, one for size 1
    assert compiled_count() == 2


def test_branch_on_size_guards_the_branch():
    def f(x):
        if x.size(0) > 4:
            return x * 2
        return x - 1

    cf = ptgo.compile(f, backend="eager", dynamic=True)
    for b in [8, 3, 9, 2, 16]:
        x = torch.randn(b, 7)
        assert_same(cf(x), f(x))
    assert compiled_count() == 2  # one graph per side of the branch


def test_equal_sizes_share_a_symbol_and_are_guarded():
    def f(x, y):
        return x + y

    cf = ptgo.compile(f, backend="eager", dynamic=True)
    x, y = torch.randn(5), torch.randn(5)
    assert_same(cf(x, y), f(x, y))
    x, y = torch.randn(7), torch.randn(7)
    assert_same(cf(x, y), f(x, y))
    assert compiled_count() == 1
    # sizes that differ fail the equality guard and get eager's error
    with pytest.raises(RuntimeError) as theirs:
        f(torch.randn(5), torch.randn(7))
    with pytest.raises(RuntimeError) as ours:
        cf(torch.randn(5), torch.randn(7))
    assert str(ours.value) == str(theirs.value)


def test_mark_dynamic_and_mark_static():
    def f(x):
        return x.sum(0) * 3

    cf = ptgo.compile(f, backend="eager")
    x = torch.randn(6, 3)
    ptgo.mark_dynamic(x, 0)
    assert_same(cf(x), f(x))
    x2 = torch.randn(9, 3)
    ptgo.mark_dynamic(x2, 0)
    assert_same(cf(x2), f(x2))
    assert compiled_count() == 1

    ptgo.reset()
    cs = ptgo.compile(f, backend="eager", dynamic=True)
    for b in [4, 5]:
        x = torch.randn(b, 3)
        ptgo.mark_static(x, 0)
        assert_same(cs(x), f(x))
    assert compiled_count() == 2


def test_mark_dynamic_errors():
    x = torch.randn(2, 3)
    with pytest.raises(TypeError):
        ptgo.mark_dynamic([1, 2], 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ptgo.mark_dynamic(x, 2)
    with pytest.raises(TypeError):
        ptgo.compile(lambda t: t, dynamic="yes")


def test_guards_and_logs_name_the_symbol(ptgo_log, monkeypatch):
    monkeypatch.setattr(ptgo.config, "assume_dynamic", False)  # automatic dynamic, even under PTGO_DYNAMIC=1

    def f(x):
        return x * 2

    cf = ptgo.compile(f, backend="eager")
    ptgo.set_logs("dynamic,guards")
    for b in [3, 5, 7]:
        cf(torch.randn(b, 2))
    text = ptgo_log.text
    assert "dimension 0 of x became dynamic: its size changed from 3 to 5" in text
    assert "size=(s0, 2)" in text
    assert compiled_count() == 2


def test_python_count_from_a_size_specialises():
    def f(x):
        out = x
        for _ in range(x.size(0)):
            out = out + 1
        return out

    cf = ptgo.compile(f, backend="eager", dynamic=True)
    for b in [2, 3, 2]:
        x = torch.randn(b, 2)
        assert_same(cf(x), f(x))
    assert compiled_count() == 2  # a loop count depends on the size: one graph per count


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_batch_sweep_inference(backend):
    torch.manual_seed(0)
    m = MLP().eval()
    cm = ptgo.compile(m, backend=backend)
    with torch.no_grad():
        for b in [1, 7, 32, 100, 3, 1000, 64, 2]:
            x = torch.randn(b, 16)
            assert_same(cm(x), m(x), "batch %d" % b)
    assert compiled_count() <= 3  # batch 1 (specialised), the first other size, the symbolic graph


def _gpt_block():
    import importlib.util
    import os
    spec = importlib.util.spec_from_file_location("bench_dynamic", os.path.join(os.path.dirname(__file__), "..", "bench", "dynamic.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LENGTHS = [1, 7, 16, 31, 64, 100, 128, 200, 256, 333, 400, 512]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("model", ["encoder", "gpt_block", "embed_pool"])
def test_sequence_length_sweeps(backend, model):
    bench = _gpt_block()
    ctor, make, sizes = bench.workloads()[model]
    torch.manual_seed(0)
    m = ctor()
    cm = ptgo.compile(m, backend=backend)
    with torch.no_grad():
        for t in sizes:
            args = make(t)
            assert_same(cm(*args), m(*args), "%s length %d" % (model, t))
    n = compiled_count()
    assert n <= 2, "%d graphs over %d lengths" % (n, len(sizes))


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_norm_statistics_over_a_symbolic_batch(backend):
    """The running variance's unbiased factor n/(n-1) is computed from the call's batch size:
    a kernel that reads no tensor but a size symbol runs on every call (it had been run once
    per arena, like a constant: the factor of the first batch size served every later one)."""
    torch.manual_seed(0)
    ref, cmp = nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    compiled = ptgo.compile(cmp, backend=backend, dynamic=True)
    for n in (16, 16, 2, 5, 2):
        x = torch.randn(n, 4)
        assert_same(compiled(x), ref(x))
        assert_same(cmp.state_dict(), ref.state_dict(), "batch of %d" % n)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.bn, self.fc2 = nn.Linear(8, 32), nn.BatchNorm1d(32), nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.bn(torch.relu(self.fc1(x))))


@pytest.mark.parametrize("backend", BACKENDS)
def test_train_eval_toggle_with_ragged_last_batch(backend):
    torch.manual_seed(0)
    data, target = torch.randn(50, 8), torch.randint(0, 3, (50,))
    ref, cmp = Net(), Net()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (ref, cmp)]
    for epoch in range(5):
        for model, fn, opt in ((ref, ref, opts[0]), (cmp, compiled, opts[1])):
            model.train()
            losses = []
            for i in range(0, 50, 16):  # batches of 16, 16, 16 and a ragged 2
                opt.zero_grad()
                loss = F.cross_entropy(fn(data[i:i + 16]), target[i:i + 16])
                loss.backward()
                opt.step()
                losses.append(loss.detach())
            model.eval()
            with torch.no_grad():
                val = fn(data[:10])
            if model is ref:
                want = (losses, val, [p.detach().clone() for p in model.parameters()], model.bn.running_mean.clone())
            else:
                got = (losses, val, [p.detach().clone() for p in model.parameters()], model.bn.running_mean.clone())
        assert_same(got, want, "epoch %d" % epoch)
    n = compiled_count()
    assert n <= 6, "%d graphs over 5 epochs" % n


class ScaleTanh(nn.Module):
    def __init__(self):
        super().__init__()
        self.w, self.b = nn.Parameter(torch.randn(8)), nn.Parameter(torch.randn(8))

    def forward(self, x):
        h = torch.tanh(x * self.w + self.b)
        return (h * h).sum(1).mean() + F.softmax(h, dim=1).amax(1).mean()


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_batch_sweep(backend):
    # contiguous batches of changing size: the training graph becomes symbolic after the first
    # change; aot_eager runs its symbolic forward and backward with torch at every size (a size
    # baked into either, mean's 1/N, would show at the next size)
    torch.manual_seed(0)
    ref, cmp = ScaleTanh(), ScaleTanh()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    train_sweep(ref, cmp, compiled, [torch.randn(n, 8) for n in (16, 2, 5, 9, 33, 2, 5)], lambda y: y)
    n = compiled_count()
    assert n <= 2, "%d graphs" % n  # the static graph and one symbolic graph


def train_sweep(ref, cmp, compiled, inputs, loss):
    """Forward and backward of ref and of cmp through compiled on each input; the losses and
    every parameter's gradient equal eager's."""
    for x in inputs:
        got, want = loss(compiled(x)), loss(ref(x))
        got.backward()
        want.backward()
        assert_same(got, want, "input of shape %s" % (tuple(x.shape),))
        for p, q in zip(ref.parameters(), cmp.parameters()):
            assert_same(q.grad, p.grad, "gradient at input shape %s" % (tuple(x.shape),))
            p.grad = q.grad = None


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_gpt_block_training_length_sweep(backend):
    # a causal mask buffer sliced to the length, in training: the slice's gradient pads back to
    # the block size for any length up to it, the block size itself included (no guard T < 64)
    GPTBlock = _gpt_block().GPTBlock
    torch.manual_seed(0)
    ref, cmp = GPTBlock(d=32, heads=2, block=64), GPTBlock(d=32, heads=2, block=64)
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    train_sweep(ref, cmp, compiled, [torch.randn(2, t, 32) for t in (7, 16, 33, 64, 20, 64, 5)], lambda y: y.square().mean())
    n = compiled_count()
    assert n <= 2, "%d graphs" % n


# ---- ints read from attributes and dict items (automatic dynamic beyond frame arguments) ----

class _Counter(nn.Module):
    """A module that counts its calls in a Python int attribute and sizes tensors by it."""

    def __init__(self):
        super().__init__()
        self.step = 5
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.step += 1
        h = self.lin(x)
        return h.unsqueeze(0).expand(self.step, 3, 4) * 2 + torch.ones(self.step, 1, 1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_module_int_attribute_counter_compiles_two_graphs(backend):
    # self.step changes on every call: static for the first value, then a symbol read from
    # L['self'].step (guarded by its type and >= 2) for every later one, written back after the
    # graph as eager writes it
    torch.manual_seed(0)
    ref = _Counter()
    cmp = _Counter()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    x = torch.randn(3, 4)
    for i in range(7):
        assert_same(compiled(x), ref(x), "call %d" % i)
        assert type(cmp.step) is int and cmp.step == ref.step
    n = compiled_count()
    assert n <= 2, "%d graphs" % n


class _Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.n = 3

    def forward(self, x):
        self.n += 1
        # a branch decided at trace time on the symbolic int: guarded (n >= 9 or not), so the
        # graph of one side never serves the other
        if self.n > 8:
            return torch.ones(self.n, 2) * x.sum()
        return torch.zeros(self.n, 2) - x.sum()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_int_attribute_in_python_branch_recompiles_on_the_other_side(backend):
    ref, cmp = _Branchy(), _Branchy()
    compiled = ptgo.compile(cmp, backend=backend)
    x = torch.randn(5)
    for i in range(10):
        assert_same(compiled(x), ref(x), "call %d (n = %d)" % (i, ref.n))
        assert cmp.n == ref.n
    n = compiled_count()
    # static at n = 4, symbolic n <= 8, symbolic n >= 9
    assert n == 3, "%d graphs" % n


def test_dict_item_int_specialised_where_python_needs_its_value():
    # d['k'] becomes symbolic once it changed; range() and a list's length need its value, so
    # that trace specialises it (a value guard) and each value recompiles, never a stale result
    def f(x, d):
        d["k"] += 1
        parts = [x * i for i in range(d["k"])]
        return torch.stack(parts).sum(0), x.new_zeros(d["k"])

    d1, d2 = {"k": 2}, {"k": 2}
    cf = ptgo.compile(f, backend="eager")
    x = torch.randn(3)
    for i in range(5):
        assert_same(cf(x, d2), f(x, d1), "call %d" % i)
        assert d1 == d2 and type(d2["k"]) is int


def floor_and_mod(x):
    n = x.size(1)
    return x[:, ::2] * (n // 3) + x[:, n % 3:].sum(1, keepdim=True)[:, :1] - x[:, 1::3].mean(1, keepdim=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_floor_division_of_sizes_stays_symbolic(backend):
    # n // 3, n % 3 and stepped slices of a dynamic size are derived symbols (floor(n / k)),
    # computed per call: no compile per size (they used to specialise, one graph per size until
    # the cache limit). A floor division that is 0 or 1 is specialised, as torch does sizes.
    sizes = [7, 8, 9, 10, 13, 14, 21, 40, 41, 6, 12]
    n = sweep(floor_and_mod, lambda b: (torch.randn(3, b),), sizes, backend=backend)
    assert n <= 3, "%d graphs for %d sizes" % (n, len(sizes))


def slice_from_remainder(x):
    n = x.size(1)
    return x[:, n % 3:] * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_remainder_slice_from_a_first_quotient_of_one(backend):
    # At a first size of 4, n // 3 == 1 is specialised and n % 3 is n - 3: a slice start that
    # is provably in range only with the specialisation's bound n >= 3 (ShapeEnv.LowerBound).
    # Without it inductor refused the symbolic graph and every size compiled static until the
    # cache limit.
    sizes = list(range(4, 20))
    n = sweep(slice_from_remainder, lambda b: (torch.randn(2, b),), sizes, backend=backend, dynamic=True)
    assert n <= 2, "%d graphs for %d sizes" % (n, len(sizes))


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1), torch.nn.Conv2d(8, 8, 3, stride=2), torch.nn.AvgPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2), torch.nn.MaxPool2d(2),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("channels_last", [False, True])
def test_cnn_image_sizes_stay_symbolic(backend, channels_last):
    # Convolutions and poolings keep the spatial sizes symbolic (out = floor((in + 2p - d(k-1)
    # - 1) / s) + 1, a derived symbol for a stride above 1; adaptive pooling to 1x1 a mean):
    # a CNN fed images of many sizes compiles a bounded number of graphs (one per size until
    # the cache limit before). A channels-last input's symbolic strides are products of its
    # sizes in its own dim order, which the tensor guard checks.
    m = _cnn()
    sizes = [32, 40, 48, 33, 37, 41, 56, 64, 29, 45]

    def make(s):
        x = torch.randn(2, 3, s, s + 3)
        return (x.to(memory_format=torch.channels_last) if channels_last else x,)

    with torch.no_grad():
        n = sweep(m, make, sizes, backend=backend)
    assert n <= 3, "%d graphs for %d sizes" % (n, len(sizes))


@pytest.mark.parametrize("backend", BACKENDS)
def test_ceil_mode_and_adaptive_pooling_stay_symbolic(backend):
    # ceil_mode pooling whose last window never starts past the input (GoogLeNet's, SqueezeNet's)
    # and adaptive average pooling to a fixed size other than 1 (VGG's 7x7, AlexNet's 6x6) keep
    # image sizes symbolic; odd and even feature maps share the graph (a ceil-mode max pool of
    # a symbolic size runs torch's kernel rather than guarding the size's parity).
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, ceil_mode=True), torch.nn.Conv2d(8, 8, 3, padding=1),
        torch.nn.MaxPool2d(2, 2, ceil_mode=True), torch.nn.AvgPool2d(3, 1, 1, ceil_mode=True),
        torch.nn.MaxPool2d(3, 1, 1, ceil_mode=True), torch.nn.AdaptiveAvgPool2d((3, 2)),
        torch.nn.Flatten(), torch.nn.Linear(48, 4)).eval()
    sizes = [32, 40, 33, 37, 45, 50, 29, 64]
    with torch.no_grad():
        n = sweep(m, lambda s: (torch.randn(2, 3, s, s + 5),), sizes, backend=backend)
    assert n <= 2, "%d graphs for %d sizes" % (n, len(sizes))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("channels_last", [False, True])
def test_transposed_convolutions_keep_image_sizes_symbolic(backend, channels_last):
    # out = (in - 1)·stride - 2·padding + dilation·(kernel - 1) + output_padding + 1: a linear
    # size, no floor division; an encoder-decoder fed many image sizes compiles 2 graphs (one
    # per size before), forward and backward.
    torch.manual_seed(0)
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1),
        torch.nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1, dilation=2))
    m2 = copy.deepcopy(m)
    f = ptgo.compile(m2, backend=backend)
    for s in [16, 20, 17, 31, 24, 40]:
        x = torch.randn(2, 3, s, s + 3)
        if channels_last:
            x = x.to(memory_format=torch.channels_last)
        a, b = f(x), m(x)
        assert_same(a, b, "size %d" % s)
        assert a.stride() == b.stride()
        a.square().mean().backward()
        b.square().mean().backward()
        for (name, p), p2 in zip(m.named_parameters(), m2.parameters()):
            torch.testing.assert_close(p2.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)
        m.zero_grad()
        m2.zero_grad()
    assert compiled_count() <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_and_contiguous_inputs_never_share_a_graph(backend):
    # The same sizes in two layouts: each call's strides match eager's (a channels-last input
    # gives channels-last conv outputs), and a symbolic channels-last graph never serves a
    # row-major input or the other way round.
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1).eval()

    def f(x):
        y = conv(x)
        return y.relu() + 1, x * 2

    cf = ptgo.compile(f, backend=backend)
    with torch.no_grad():
        for i, s in enumerate([8, 9, 10, 11, 12, 13, 9, 8]):
            x = torch.randn(2, 3, s, s + 1)
            if i % 2:
                x = x.to(memory_format=torch.channels_last)
            for a, b in zip(cf(x), f(x)):
                assert_same(a, b, "size %d, channels-last %s" % (s, bool(i % 2)))
                assert a.stride() == b.stride(), (s, i % 2, a.stride(), b.stride())
    assert compiled_count() <= 4


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_cnn_training_over_image_sizes(backend):
    import copy

    m = _cnn().train()
    m2 = copy.deepcopy(m)
    f = ptgo.compile(m2, backend=backend)
    for s in [32, 40, 37, 45]:
        x = torch.randn(2, 3, s, s)
        m(x).square().mean().backward()
        f(x).square().mean().backward()
        for (name, p), p2 in zip(m.named_parameters(), m2.parameters()):
            torch.testing.assert_close(p2.grad, p.grad, rtol=1e-4, atol=1e-5, msg=name)
        for b, b2 in zip(m.buffers(), m2.buffers()):
            torch.testing.assert_close(b2, b)
        m.zero_grad()
        m2.zero_grad()
    assert compiled_count() <= 3
