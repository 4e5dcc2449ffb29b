"""ptgo's C backend specifics: freezing, fallbacks, error reporting."""
import json
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

import ptgo
from ptgo import _C
from conftest import assert_same
from test_modules import CNN


def stats():
    return json.loads(_C.request("inductor_stats", "{}"))


def test_freezing_folds_batchnorm_and_tracks_weight_updates(ptgo_log):
    ptgo.set_logs("+inductor")
    torch.manual_seed(0)
    m = CNN().eval()
    # non-trivial running statistics
    for bn in (m.features[1], m.features[5]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 16, 16)
    cm = ptgo.compile(m, options={"freezing": True})
    with torch.no_grad():
        assert_same(cm(x), m(x))
        assert ptgo_log.text.count("freezing: folded") == 2, ptgo_log.text
        # An in-place update of a folded parameter must not be served stale.
        m.features[0].weight.mul_(1.5)
        m.features[1].running_var.add_(0.25)
        assert_same(cm(x), m(x))


def test_folded_weight_of_a_channels_last_model_stays_channels_last():
    """A channels-last model (model.to(memory_format=torch.channels_last), torch's own advice for
    convolution speed) fed channels-last images: the folded convolution weight kept the layout of
    the weight it came from, or every convolution copied it back to channels-last on every call
    (resnet18: 17 copies, 78 ms a call against 47)."""
    m = _cnn_with_stats().to(memory_format=torch.channels_last)
    x = torch.randn(2, 3, 16, 16).contiguous(memory_format=torch.channels_last)
    cm = ptgo.compile(m)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        with torch.profiler.profile() as prof:
            cm(x)
    copies = [e for e in prof.key_averages() if e.key in ("aten::copy_", "aten::contiguous")]
    assert not copies, [(e.key, e.count) for e in copies]


def test_freezing_options_are_validated():
    with pytest.raises(ValueError, match="unknown options"):
        ptgo.compile(nn.Linear(2, 2), options={"freezeing": True})


def _cnn_with_stats():
    torch.manual_seed(0)
    m = CNN().eval()
    for bn in (m.features[1], m.features[5]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return m


@pytest.mark.parametrize("grad_off", [torch.no_grad, torch.inference_mode])
def test_freezing_is_the_default_in_eval_without_grad(ptgo_log, grad_off):
    ptgo.set_logs("+inductor")
    m = _cnn_with_stats()
    cm = ptgo.compile(m)
    x = torch.randn(2, 3, 16, 16)
    with grad_off():
        assert_same(cm(x), m(x))
    assert ptgo_log.text.count("freezing: folded") == 2, ptgo_log.text
    with torch.no_grad():
        # in place, the way an optimizer step or a user's fix-up writes
        m.features[0].weight.add_(0.5)
        m.features[1].running_mean.sub_(0.25)
    with grad_off():
        assert_same(cm(x), m(x))
    # .data replaced: same Parameter, same version counter, new storage
    m.features[4].weight.data = torch.randn_like(m.features[4].weight)
    m.features[5].weight.data = torch.rand_like(m.features[5].weight) + 0.5
    with grad_off():
        assert_same(cm(x), m(x))
    # load_state_dict copies into the same tensors
    other = _cnn_with_stats()
    for p in other.parameters():
        p.data.uniform_(-1, 1)
    m.load_state_dict(other.state_dict())
    with grad_off():
        assert_same(cm(x), m(x))
        assert_same(cm(x), other(x))


class _ConvNoBN(nn.Module):
    """A convolution freezing packs (no BatchNorm to fold) beside the folded ones."""

    def __init__(self):
        super().__init__()
        self.cnn = _cnn_with_stats()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        return self.cnn(self.conv(x))


def test_frozen_weights_written_through_data_are_not_stale():
    """torch gives `p.data` a version counter of its own, so a write through it (an EMA update,
    weight clipping, a pruning mask: `p.data.mul_(...)`) leaves p's version as it was; the
    tensors freezing made constants from share theirs with their `.data` aliases (A182)."""
    torch.manual_seed(0)
    m = _ConvNoBN().eval()
    cm = ptgo.compile(m)
    x = torch.randn(2, 3, 16, 16)
    writes = [
        lambda: m.conv.weight.data.mul_(2),                       # packed, not folded
        lambda: m.cnn.features[0].weight.data.add_(0.5),          # folded into the conv
        lambda: m.cnn.features[1].running_var.data.mul_(3),       # a folded buffer
        lambda: m.cnn.features[4].bias.data.__setitem__(0, 7.0),  # an element
        lambda: m.cnn.features[5].weight.data.copy_(torch.rand(16) + 0.5),
        lambda: m.cnn.head.weight.data.zero_(),
    ]
    with torch.no_grad():
        assert_same(cm(x), m(x))
        for write in writes:
            write()
            assert_same(cm(x), m(x))
    # .data still reads and assigns as torch's does
    w = m.conv.weight
    assert w.data.data_ptr() == w.data_ptr() and not w.data.requires_grad and w.requires_grad
    w.data = torch.ones_like(w)
    assert isinstance(w, nn.Parameter) and bool((w == 1).all())
    with torch.no_grad():
        assert_same(cm(x), m(x))


def test_freezing_false_keeps_parameters_live(ptgo_log):
    ptgo.set_logs("+inductor")
    m = _cnn_with_stats()
    cm = ptgo.compile(m, options={"freezing": False})
    x = torch.randn(2, 3, 16, 16)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        m.features[0].weight.mul_(1.5)
        assert_same(cm(x), m(x))
    assert "freezing: folded" not in ptgo_log.text, ptgo_log.text


def test_no_default_freezing_in_train_mode(ptgo_log):
    ptgo.set_logs("+inductor")
    m = _cnn_with_stats()
    m.features[5].train()  # one BatchNorm in training mode, the module in eval mode
    m.train()
    cm = ptgo.compile(m)
    x = torch.randn(2, 3, 16, 16)
    m2 = _cnn_with_stats().train()
    with torch.no_grad():
        assert_same(cm(x), m2(x))
    assert "freezing: folded" not in ptgo_log.text, ptgo_log.text


def test_train_eval_loop_replaces_its_frozen_entry(ptgo_log):
    """Each evaluation after a training step finds a folded weight written: the frozen entry is
    dropped and recompiled, never served stale and never piling up to cache_size_limit."""
    ptgo.set_logs("+inductor")
    m = _cnn_with_stats()
    cm = ptgo.compile(m)
    x = torch.randn(2, 3, 16, 16)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for _ in range(ptgo.config.cache_size_limit + 3):
        m.train()
        cm(x).sum().backward()
        opt.step()
        opt.zero_grad()
        m.eval()
        with torch.no_grad():
            assert_same(cm(x), m(x))
    assert "cache_size_limit" not in ptgo_log.text, ptgo_log.text
    assert ptgo_log.text.count("freezing: folded") == 2 * (ptgo.config.cache_size_limit + 3), ptgo_log.text
    entries = _C.cache_info(type(m).forward.__code__)
    assert len(entries) <= 3, entries  # train, eval and at most one dropped entry not yet purged


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_training_graphs_compile_forward_and_backward(backend):
    torch.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.LayerNorm(12), nn.Linear(12, 3))
    m2 = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.LayerNorm(12), nn.Linear(12, 3))
    m2.load_state_dict(m1.state_dict())
    x = torch.randn(5, 6)
    target = torch.randint(0, 3, (5,))
    out = ptgo.compile(m1, backend=backend)(x)
    assert type(out.grad_fn).__name__ == "CompiledRegionBackward", out.grad_fn
    ref = m2(x)
    assert_same(out, ref)
    torch.nn.functional.cross_entropy(out, target).backward()
    torch.nn.functional.cross_entropy(ref, target).backward()
    for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
        torch.testing.assert_close(p1.grad, p2.grad, rtol=1e-4, atol=1e-5, msg=n)


def test_setitem_under_autograd_keeps_gradients(ptgo_log):
    ptgo.set_logs("perf_hints")

    def f(x):
        y = x * 2
        y[0] = 0.0
        return y

    x1 = torch.randn(3, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    before = stats()
    ptgo.compile(f)(x1).sum().backward()
    f(x2).sum().backward()
    assert_same(x1.grad, x2.grad)
    after = stats()
    assert after["fallbacks"] == before["fallbacks"], after["reasons"]


def test_setitem_of_a_value_that_requires_grad():
    # Writing w into a fresh buffer makes the buffer require grad (torch's rule); the gradient
    # reaches w only through the written positions, and not at all under no_grad.
    def f(x, w):
        buf = torch.zeros(4, 3)
        buf[1:3] = w * 2
        return (buf * x).sum(1)

    x = torch.randn(4, 3)
    w1 = torch.randn(2, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_(True)
    before = stats()
    cf = ptgo.compile(f)
    out = cf(x, w1)
    ref = f(x, w2)
    assert out.requires_grad and ref.requires_grad
    assert_same(out, ref)
    out.backward(torch.arange(4.0))
    ref.backward(torch.arange(4.0))
    assert_same(w1.grad, w2.grad)
    assert stats()["fallbacks"] == before["fallbacks"], stats()["reasons"]
    with torch.no_grad():
        out = cf(x, w1)
        assert not out.requires_grad
        assert_same(out, f(x, w2))


def test_inference_graph_compiles_to_c():
    before = stats()["compiled"]
    f = ptgo.compile(lambda x: torch.relu(x) * 2 + 1)
    with torch.no_grad():
        x = torch.randn(16)
        assert_same(f(x), torch.relu(x) * 2 + 1)
    assert stats()["compiled"] == before + 1


def run_child(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True)


def test_no_c_compiler_warns_and_runs_with_torch(tmp_path):
    code = (
        "import warnings, torch, ptgo\n"
        "warnings.simplefilter('always')\n"
        "f = ptgo.compile(lambda x: x.sin() + 1)\n"
        "with torch.no_grad():\n"
        "    x = torch.randn(8)\n"
        "    assert torch.equal(f(x), x.sin() + 1)\n"
        "print('ok')\n"
    )
    out = run_child(code, CC=str(tmp_path / "no-such-cc"), PTGO_CACHE_DIR=str(tmp_path / "cache"))
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout
    assert "no C compiler" in out.stderr, out.stderr


def test_kernel_compile_error_is_reported(tmp_path):
    cc = tmp_path / "badcc"
    cc.write_text("#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = -v ] && exec gcc -v; done\n"
                  "echo 'kernel.c:1:1: error: simulated compiler failure' >&2\nexit 1\n")
    cc.chmod(0o755)
    code = (
        "import torch, ptgo\n"
        "f = ptgo.compile(lambda x: x.cos() * 3)\n"
        "try:\n"
        "    with torch.no_grad():\n"
        "        f(torch.randn(8))\n"
        "except ptgo.BackendCompilerFailed as e:\n"
        "    print('FAILED:', e)\n"
        "print('alive')\n"
    )
    out = run_child(code, CC=str(cc), PTGO_CACHE_DIR=str(tmp_path / "cache"))
    assert out.returncode == 0, out.stderr
    assert "alive" in out.stdout
    assert "FAILED:" in out.stdout and "simulated compiler failure" in out.stdout, out.stdout
    assert ".c" in out.stdout  # the path of the kept source


# The frozen convolutions packed for oneDNN, by torch version (ptgo_runtime.cpp kPackRules): torch
# 2.14 packs k×k and grouped ones of any channel count (A159), 1.13 ungrouped k×k ones of 16+
# channels (A91); pointwise ones both, where measured faster (A226): these tests set the way
# (the pointwise_way fixture) and count a packed pointwise one where it is "packed".
PACKS_EVERY_KXK = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


class ConvKinds(nn.Module):
    """A pointwise convolution (BatchNorm folded; packed or not by the way set), depthwise ones ptgo's
    kernel leaves to torch (5×5 over more than 576 channels on a small plane, A124) with the ReLU /
    ReLU6 they absorb, and a grouped one: those packed on torch 2.14 (the ReLU as oneDNN's
    post-op), torch's convolution on 1.13."""

    def __init__(self):
        super().__init__()
        self.pw = nn.Conv2d(8, 640, 1)
        self.bn = nn.BatchNorm2d(640)
        self.dw = nn.Conv2d(640, 640, 5, padding=2, groups=640)
        self.dw6 = nn.Conv2d(640, 640, 5, padding=2, groups=640, bias=False)
        self.g = nn.Conv2d(640, 64, 3, padding=1, groups=4)

    def forward(self, x):
        y = torch.relu(self.dw(self.bn(self.pw(x))))
        return self.g(nn.functional.relu6(self.dw6(y)))


class ConvChain(nn.Module):
    """3×3 convolutions of 16+ channels (packed for oneDNN when frozen), a pointwise one (the way
    set), a depthwise one (ptgo's kernel, A124), BatchNorm and a residual add."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.a = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.b = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.pw = nn.Conv2d(32, 32, 1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        y = torch.relu(self.bn(self.a(x)) + x)
        y = torch.relu(self.b(y))
        return self.dw(self.pw(y)) + y


def _conv_ops(cm, x):
    with torch.no_grad(), torch.profiler.profile() as p:
        cm(x)
    return [e.name for e in p.events() if "conv" in e.name]


def _frozen(model, x):
    """The model in eval mode with random BatchNorm statistics, compiled static and checked
    against eager twice; returns the model, the compiled one and the convolution ops it runs."""
    torch.manual_seed(0)
    m = model().eval()
    m.bn.running_mean.uniform_(-1, 1)
    m.bn.running_var.uniform_(0.5, 2)
    cm = ptgo.compile(m, dynamic=False)
    with torch.no_grad():
        for _ in range(2):
            assert_same(cm(x), m(x))
    return m, cm, _conv_ops(cm, x)


@pytest.mark.parametrize("way", ["packed", "unpacked"])
def test_frozen_convolutions_run_packed_and_repack_after_writes(way, pointwise_way):
    pointwise_way(way)
    x = torch.randn(2, 3, 12, 12)
    m, cm, ops = _frozen(ConvChain, x)
    # a (BatchNorm folded) and b are packed, the stem (3 channels) too on torch 2.14; the pointwise
    # one as the way says, the depthwise one is ptgo's
    packed = (3 if PACKS_EVERY_KXK else 2) + (way == "packed")
    assert ops.count("mkldnn_prepacked::conv2d_run") == packed, ops
    assert ops.count("aten::convolution") == 4 - packed, ops
    assert ops.count("ptgo::depthwise_conv2d") == 1, ops
    with torch.no_grad():
        m.b.weight.mul_(-1.5)  # a parameter packed as it is (not folded: no version guard)
        assert_same(cm(x), m(x))
        m.b.bias.add_(1.0)
        assert_same(cm(x), m(x))
    m.b.weight.data = torch.randn_like(m.b.weight) * 0.1  # new storage, same version
    with torch.no_grad():
        assert_same(cm(x), m(x))
        m.a.weight.add_(0.1)  # folded into a's packed weight: recompiles
        assert_same(cm(x), m(x))


@pytest.mark.parametrize("way", ["packed", "unpacked"])
def test_frozen_convolutions_with_a_symbolic_batch_run_packed(way, pointwise_way):
    # one symbolic graph for every batch size; the packed convolutions get a context per batch
    # size (the most recent 8), repacked after a weight write, and a non-contiguous input (a
    # channels-last batch) runs torch's convolution
    pointwise_way(way)
    torch.manual_seed(0)
    m = ConvChain().eval()
    cm = ptgo.compile(m, dynamic=True)
    before = stats()
    with torch.no_grad():
        for b in (2, 3, 5, 2, 9, 4, 6, 7, 8, 10, 11, 3, 2):
            x = torch.randn(b, 3, 12, 12)
            ptgo.mark_static(x, (2, 3))  # dynamic=True would make the image sizes symbolic too
            assert_same(cm(x), m(x), "batch %d" % b)
        assert stats()["compiled"] - before["compiled"] == 1
        x = torch.randn(4, 3, 12, 12)
        ptgo.mark_static(x, (2, 3))
        assert _conv_ops(cm, x).count("mkldnn_prepacked::conv2d_run") == (3 if PACKS_EVERY_KXK else 2) + (way == "packed")
        m.b.weight.mul_(-1.5)
        assert_same(cm(x), m(x))
        xc = torch.randn(3, 3, 12, 12).to(memory_format=torch.channels_last)
        assert_same(cm(xc), m(xc))


@pytest.mark.parametrize("way", ["packed", "unpacked"])
def test_frozen_convolutions_of_every_kind_pack_by_torch_version(way, pointwise_way):
    pointwise_way(way)
    x = torch.randn(2, 8, 10, 10)
    m, cm, ops = _frozen(ConvKinds, x)
    packed = (3 if PACKS_EVERY_KXK else 0) + (way == "packed")
    assert ops.count("mkldnn_prepacked::conv2d_run") == packed, ops
    assert ops.count("aten::convolution") == 4 - packed, ops
    assert "ptgo::depthwise_conv2d" not in ops, ops
    with torch.no_grad():
        m.g.weight.mul_(-1.5)  # packed as it is (not folded: no version guard): packed again
        assert_same(cm(x), m(x))
        m.dw.bias.add_(-0.5)  # the bias of a packed convolution with a ReLU post-op
        assert_same(cm(x), m(x))
        m.dw6.weight.mul_(3.0)
        assert_same(cm(x), m(x))
    m.g.weight.data = torch.randn_like(m.g.weight) * 0.1  # new storage, same version
    with torch.no_grad():
        assert_same(cm(x), m(x))
        m.pw.weight.add_(0.1)  # folded with the BatchNorm: recompiles
        assert_same(cm(x), m(x))
        m.bn.running_var.mul_(2.0)
        assert_same(cm(x), m(x))


@pytest.mark.parametrize("way", ["packed", "unpacked"])
def test_a_channels_last_model_runs_its_convolutions_packed(way, pointwise_way):
    """A channels-last model fed channels-last images (torch's advice for convolution speed): its
    frozen convolutions run packed for oneDNN on the channels-last activations (oneDNN takes
    and gives channels-last; resnet18 at one thread 23.3 -> 21.6 ms), with eager's values and
    layout; after a weight write they pack again."""
    pointwise_way(way)
    torch.manual_seed(0)
    m = ConvChain().eval().to(memory_format=torch.channels_last)
    m.bn.running_mean.uniform_(-1, 1)
    m.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 12, 12).contiguous(memory_format=torch.channels_last)
    cm = ptgo.compile(m, dynamic=False)
    with torch.no_grad():
        for _ in range(2):
            assert_same(cm(x), m(x))
        assert cm(x).is_contiguous(memory_format=torch.channels_last)
    ops = _conv_ops(cm, x)
    # a and b (a's BatchNorm folded), the stem on torch 2.14, the pointwise one as the way says;
    # the depthwise one is torch's (ptgo's kernel takes NCHW only)
    packed = (3 if PACKS_EVERY_KXK else 2) + (way == "packed")
    assert ops.count("mkldnn_prepacked::conv2d_run") == packed, ops
    with torch.no_grad():
        m.b.weight.mul_(-1.5)
        assert_same(cm(x), m(x))


def test_unfrozen_convolutions_stay_torchs():
    torch.manual_seed(0)
    m = ConvChain().eval()
    x = torch.randn(2, 3, 12, 12)
    cm = ptgo.compile(m, options={"freezing": False})
    with torch.no_grad():
        assert_same(cm(x), m(x))
    ops = _conv_ops(cm, x)
    assert "mkldnn_prepacked::conv2d_run" not in ops, ops


@pytest.mark.parametrize("args", [(3, 2, 1), (3, 1, 1), ((3, 2), (2, 1), (1, 0)), (3, 2, 0), (2, 1, 1, 2)])
def test_overlapping_max_pool_is_compiled(args):
    def f(x):
        return torch.nn.functional.max_pool2d(torch.relu(x) - 0.5, *args)

    x = torch.randn(2, 4, 13, 11)
    x[0, 0, 0, :3] = float("nan")
    x[1, 1, :, 0] = float("-inf")
    x[1, 2] = float("-inf")
    before = stats()
    assert_same(ptgo.compile(f)(x), f(x))
    after = stats()
    assert after["fallbacks"] == before["fallbacks"], after["reasons"]
    assert after["compiled"] == before["compiled"] + 1


def test_default_freezing_never_fails_a_compile(ptgo_log):
    """Parameters made under inference_mode have no version counter: freezing by default steps
    aside (said on perf_hints) where options={"freezing": True} would fail."""
    ptgo.set_logs("perf_hints")
    with torch.inference_mode():
        m = _cnn_with_stats()
        x = torch.randn(2, 3, 16, 16)
        assert_same(ptgo.compile(m)(x), m(x))
    assert "not frozen" in ptgo_log.text, ptgo_log.text


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "one element"])
def test_gelu_signed_zeros_as_eager(dtype, layout):
    """Fuzz seed 256: torch 1.13's CPU gelu runs oneDNN's kernel for a contiguous float32 tensor
    of more than one element (-0.0 and large negative x give +0.0) and ATen's x/2 * (1 +
    erf(x/√2)) otherwise (-0.0); torch 2.14's runs ATen's on an AVX-512 CPU and oneDNN's as
    1.13 does on an AVX2 one (ptgo._compat.probe_behavior): the C kernel computes the form the
    running torch's kernel would."""
    import torch.nn.functional as F

    def f(x):
        return F.gelu(x)

    base = torch.tensor([-0.0, -30.0, 0.0, 1.0, -1e30, 2.0], dtype=dtype)
    x = {"contiguous": base, "strided": base[::2], "one element": base[:1]}[layout]
    want, got = f(x), ptgo.compile(f)(x)
    assert torch.equal(torch.signbit(got), torch.signbit(want))
    torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-2)


def test_clamp_with_a_nan_bound_as_the_running_torch():
    """Fuzz seed 429: torch 1.13's clamp with a NaN number as its only bound returns x, 2.14's
    NaN (primtorch.Behavior); with both bounds NaN on both. clamp_ writes either way: on a leaf
    that requires grad it raises as eager does (the write had been dropped)."""
    nan = float("nan")

    def f(x):
        return x.clamp(min=nan) * 2, x.clamp(max=nan), torch.clamp(x, nan, 1.0), torch.clamp_min(x, nan)

    x = torch.tensor([0.3, -1.0, -0.0])
    for got, want in zip(ptgo.compile(f)(x), f(x)):
        assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
        assert torch.equal(got.nan_to_num().signbit(), want.nan_to_num().signbit())

    def g(x):
        x.clamp_(min=nan)
        return x * 2

    for fn in (g, ptgo.compile(g)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            fn(torch.tensor(0.3, requires_grad=True))


@pytest.mark.parametrize("op", ["normalize", "cosine_similarity", "pairwise_distance"])
def test_large_float32_norms_inside_other_ops_as_eager(op):
    """normalize, cosine_similarity and pairwise_distance compute torch's vector norm too: over
    more than 1024 float32 values they run with torch as norm does (one rule, torchNormDrifts)."""
    import torch.nn.functional as F
    fns = {"normalize": lambda x, y: F.normalize(x * 1, dim=1),
           "cosine_similarity": lambda x, y: F.cosine_similarity(x * 1, y, dim=1),
           "pairwise_distance": lambda x, y: F.pairwise_distance(x * 1, y, p=3)}
    f = fns[op]
    x, y = torch.randn(3, 90000).clamp(min=2), torch.randn(3, 90000).clamp(max=-1)
    got, want = ptgo.compile(f)(x, y), f(x, y)
    assert torch.equal(got, want), (got - want).abs().max()


@pytest.mark.parametrize("cfg", [
    dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1), dict(kernel_size=5, stride=3),
    dict(kernel_size=(3, 2), stride=(1, 2), padding=(1, 0)), dict(kernel_size=3, stride=2, padding=1, divisor_override=7),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_avg_pool2d_bit_exact(cfg, layout, dtype, ptgo_log):
    """avg_pool2d compiles to strided window views summed in the window's row-major order from
    +0.0 (a window of -0.0s averages to +0.0), as torch's CPU kernel adds: values, signs of zero
    and strides equal eager's; count_include_pad=False over padding and ceil_mode run torch's."""
    import torch.nn.functional as F

    def f(x):
        return F.avg_pool2d(torch.relu(x) - x * 0.5, **cfg)

    x = torch.randn(2, 5, 17, 13, dtype=dtype) * 100
    x[0, 0, :4, :4] = -0.0
    x[1, 2, 3, 4] = 3e38  # float32 sums overflow to inf as eager's do
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    ptgo.set_logs("perf_hints")
    before = stats()
    want, got = f(x), ptgo.compile(f)(x)
    assert torch.equal(got, want) and torch.equal(torch.signbit(got), torch.signbit(want))
    assert got.stride() == want.stride()
    assert stats()["compiled"] == before["compiled"] + 1
    torch_runs = "ceil_mode" in cfg or cfg.get("count_include_pad") is False
    assert ("avg_pool2d stays a call to torch" in ptgo_log.text) == torch_runs, ptgo_log.text


@pytest.mark.parametrize("p", [2, 1, 3])
def test_large_float32_norm_as_eager(p):
    """Fuzz seed 1771: torch's CPU norm accumulates float32 sums in float32 (no cascade), so
    over 90000 elements of about 1.7 it is 5e-5 below the exact value that the C kernel's double
    accumulation gives; such norms run with torch (small ones stay compiled)."""
    def f(x):
        return (x * 1).norm(p)

    x = torch.randn(300, 300).clamp(min=2)
    assert_same(ptgo.compile(f)(x), f(x))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("negate", ["div", "mul", "neg"])
def test_negated_fma_keeps_the_sign_of_zero(negate, dtype):
    # fuzz seed 8589: addcmul_ lowers to fma; gcc folded its negation (a div_ by -1) into one
    # fnmsub, which gives +0 where eager's -(x*x + x) is -0 (x = -0)
    def fn(x):
        x.addcmul_(x, x)
        if negate == "div":
            x.div_(-1)
        elif negate == "mul":
            x.mul_(-1)
        else:
            x.neg_()
        return x.sum()

    x = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.5] * 8, dtype=dtype)
    a, b = x.clone(), x.clone()
    fn(a)
    ptgo.compile(fn, backend="inductor")(b)
    assert torch.equal(torch.signbit(a), torch.signbit(b))
    assert torch.equal(a, b)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_conversion_of_a_strided_input_keeps_its_stride_order(backend):
    """.to(dtype) of a non-dense view is laid out as empty_like(preserve_format) lays it out:
    dense in the view's stride order (a diagonal with strides (1, 40) converts to (1, 8)), not
    contiguous (fuzz seeds 10206, 11022)."""
    def f(x):
        d = x.diagonal()
        s = x[:, ::2].transpose(0, 1)
        return d.to(torch.int32), d.double(), s.to(torch.float64), s.type_as(torch.zeros(1, dtype=torch.int64))

    x = torch.randn(4, 4, 8)
    got, want = ptgo.compile(f, backend=backend)(x), f(x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.stride() == w.stride(), (g.stride(), w.stride())
        assert torch.equal(g, w)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64])
def test_softsign_of_integers_wraps_as_torchs(backend, dtype):
    """Fuzz seed 43224: torch's softsign takes an integer x's |x| + 1 in x's dtype, where both
    wrap at its extremes (softsign of int64's minimum is 1.0), before a true division; ptgo
    converted x to float first and gave -1.0."""
    info = torch.iinfo(dtype)
    x = torch.tensor([info.min, info.min + 1, 0, 5, info.max - 1, info.max], dtype=dtype)
    assert_same(ptgo.compile(nn.functional.softsign, backend=backend)(x), nn.functional.softsign(x))
