"""Pointwise (1×1) convolutions in inference (A223): the bias goes to the kernels after the
convolution, and at one thread the runtime runs the convolution of one image as one matrix
product into its planned buffer; at more threads, for batches, strides, padding, groups and
channels-last inputs it stays torch's convolution. Frozen ones of a dense float32 input may also
run through oneDNN with a packed weight, where that measured faster on their first call (A226).
Results equal eager's."""
import pytest
import torch
import torch.nn as nn
from torch.profiler import profile

import ptgo
from conftest import assert_same

pytest.importorskip("ptgo._fast")


class Block(nn.Module):
    """mobilenet_v2's inverted residual: expand 1×1, depthwise 3×3, project 1×1, residual."""

    def __init__(self, c=8, e=24):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e), nn.ReLU6())
        self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))
        self.head = nn.Conv2d(c, 5, 1)

    def forward(self, x):
        return self.head(x + self.project(self.dw(self.expand(x))))


def model():
    torch.manual_seed(0)
    m = Block().eval()
    for mod in m.modules():  # statistics that make the folded weights differ from the raw ones
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
            mod.weight.data.uniform_(0.5, 1.5)
    return m


def ops_of(fn, x):
    with profile() as p:
        fn(x)
    return {e.key for e in p.key_averages()}


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.mark.parametrize("way", ["measure", "packed", "unpacked"])
@pytest.mark.parametrize("nthreads", [1, 2])
@pytest.mark.parametrize("case", ["one_image", "batch", "channels_last", "odd_size"])
def test_pointwise_convolutions_equal_eager(case, nthreads, way, threads, pointwise_way):
    threads(nthreads)
    pointwise_way(way)
    m = model()
    x = {"one_image": torch.randn(1, 8, 12, 12), "batch": torch.randn(3, 8, 12, 12),
         "channels_last": torch.randn(1, 8, 12, 12).contiguous(memory_format=torch.channels_last),
         "odd_size": torch.randn(1, 8, 7, 5)}[case]
    compiled = ptgo.compile(model())
    with torch.no_grad():
        want = m(x)
        for _ in range(3):  # every call, not only the first
            got = compiled(x)
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            assert got.stride() == want.stride()


def test_one_image_at_one_thread_is_a_matrix_product(threads, pointwise_way):
    threads(1)
    pointwise_way("unpacked")
    compiled = ptgo.compile(model())
    x = torch.randn(1, 8, 12, 12)
    with torch.no_grad():
        compiled(x)
        ops = ops_of(compiled, x)
    assert "aten::mm" in ops, ops
    # torch's convolution would run these through its slow_conv2d path at one thread (the
    # depthwise one is ptgo's kernel, or oneDNN's under symbolic sizes)
    assert "aten::_slow_conv2d_forward" not in ops and "aten::thnn_conv2d" not in ops, ops


def test_at_two_threads_pointwise_convolutions_stay_torchs(threads, pointwise_way):
    threads(2)
    pointwise_way("unpacked")
    compiled = ptgo.compile(model())
    x = torch.randn(1, 8, 12, 12)
    with torch.no_grad():
        want = compiled(x)
        ops = ops_of(compiled, x)
        assert "aten::convolution" in ops and "aten::mm" not in ops, ops
        threads(1)  # the same compiled graph, now at one thread: the product, the same values
        torch.testing.assert_close(compiled(x), want, rtol=1e-5, atol=1e-5)


def test_pointwise_conv1d_and_float64():
    torch.manual_seed(1)
    c1 = nn.Conv1d(6, 4, 1).eval()
    c2 = nn.Conv2d(3, 5, 1).double().eval()
    f = ptgo.compile(lambda a, b: (c1(a).relu(), c2(b) * 2))
    a, b = torch.randn(1, 6, 9), torch.randn(1, 3, 4, 4, dtype=torch.float64)
    with torch.no_grad():
        got, want = f(a, b), (c1(a).relu(), c2(b) * 2)
    torch.testing.assert_close(got, want)


def test_training_pointwise_convolution_keeps_torchs_convolution():
    # a weight that requires grad: the convolution (and its derivative) stay torch's
    torch.manual_seed(2)
    ref = nn.Conv2d(4, 6, 1)
    cmp = nn.Conv2d(4, 6, 1)
    cmp.load_state_dict(ref.state_dict())
    f = ptgo.compile(lambda x: cmp(x).tanh().sum())
    x = torch.randn(1, 4, 5, 5)
    loss_ref = ref(x).tanh().sum()
    loss = f(x)
    loss_ref.backward()
    loss.backward()
    assert_same(loss.detach(), loss_ref.detach())
    torch.testing.assert_close(cmp.weight.grad, ref.weight.grad)
    torch.testing.assert_close(cmp.bias.grad, ref.bias.grad)


def test_packed_pointwise_convolutions_run_through_onednn(threads, pointwise_way):
    threads(1)
    pointwise_way("packed")
    m = model()
    compiled = ptgo.compile(model(), dynamic=False)  # symbolic image sizes are never packed
    x = torch.randn(1, 8, 12, 12)
    with torch.no_grad():
        compiled(x)
        ops = ops_of(compiled, x)
        assert "aten::mm" not in ops and "aten::convolution" not in ops, ops
        assert "mkldnn_prepacked::conv2d_run" in ops, ops
        torch.testing.assert_close(compiled(x), m(x), rtol=1e-5, atol=1e-5)
        m.head.weight.mul_(-2)  # not folded: packed as it is, and packed again after the write
        compiled.head.weight.mul_(-2)
        torch.testing.assert_close(compiled(x), m(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_the_measured_way_is_the_one_that_runs(nthreads, threads, pointwise_way):
    """On a shape's first call at a thread count the runtime times the packed run against the
    other way and keeps the faster one (_fast.measured_pointwise lists the answers); the ops the
    next calls run are the chosen ones, and the values equal eager's on every call."""
    from ptgo import _fast

    threads(nthreads)
    pointwise_way("measure")
    m = model()
    compiled = ptgo.compile(model(), dynamic=False)  # symbolic image sizes are never packed
    # an image size no other test uses: the answers are kept per process, by shape (a
    # channels-last input of the same shape is measured apart and may answer otherwise)
    x = torch.randn(1, 8, 11, 13)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), m(x), rtol=1e-5, atol=1e-5)
        answers = {k: v for k, v in _fast.measured_pointwise().items() if k[-1] == nthreads and k[:4] == (1, 8, 11, 13)}
        # the expand (8 → 24 channels) and the head (8 → 5); its activation and whether it writes
        # into a planned buffer are part of the key
        assert {k[4] for k in answers} == {24, 5}, answers
        ops = ops_of(compiled, x)
        packed = sum(answers.values())
        assert ("mkldnn_prepacked::conv2d_run" in ops) == (packed > 0), (answers, ops)
        torch.testing.assert_close(compiled(x), m(x), rtol=1e-5, atol=1e-5)
