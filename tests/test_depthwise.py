"""ptgo's depthwise convolution (A124): the kernel of pybridge/fast/ptgo_depthwise.cpp against
torch's convolution, on its own (every instruction set this CPU has) and inside compiled models
(bias, folded BatchNorm, relu/relu6 absorbed into its output pass, odd sizes, batches, channels-last
inputs left to torch)."""
import ctypes
import random

import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

_fast = pytest.importorskip("ptgo._fast")


class Shape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in "N C H W kh kw sh sw ph pw".split()]


def _lib():
    lib = ctypes.CDLL(_fast.__file__)
    lib.ptgo_depthwise_scratch.restype = ctypes.c_int64
    return lib


# the activations the kernel applies, as ptgo's graphs compute them (silu: x / (exp(-x) + 1))
ACTS = {0: lambda t: t, 1: torch.relu, 2: lambda t: t.clamp(0, 6), 3: lambda t: t / (torch.exp(-t) + 1)}


def _widths(lib):
    best = lib.ptgo_depthwise_width()
    return [w for w in (4, 8, 16) if w <= best]


def test_kernel_matches_torch_on_random_shapes_for_every_isa():
    lib = _lib()
    P = ctypes.c_void_p
    rng = random.Random(0)
    for width in _widths(lib):
        for _ in range(120):
            kh, kw = rng.choice([1, 2, 3, 5, 7]), rng.choice([1, 3, 4, 5, 7])
            sh, sw = rng.choice([1, 2]), rng.choice([1, 2])
            ph, pw = rng.randrange(kh), rng.randrange(kw)
            H, W = rng.randint(max(1, kh - 2 * ph), 37), rng.randint(max(1, kw - 2 * pw), 37)
            N, C, act = rng.randint(1, 3), rng.randint(1, 19), rng.choice([0, 1, 2, 3])
            s = Shape(N, C, H, W, kh, kw, sh, sw, ph, pw)
            assert lib.ptgo_depthwise_supported(ctypes.byref(s)) == 1
            x, w, b = torch.randn(N, C, H, W), torch.randn(C, 1, kh, kw), torch.randn(C)
            x[0, 0, 0, 0] = float("nan")  # stays NaN through every activation, as torch's
            scale = rng.choice([1, 30])  # silu far into both tails
            x *= scale
            ref = ACTS[act](torch.convolution(x, w, b, (sh, sw), (ph, pw), (1, 1), False, (0, 0), C))
            y = torch.full_like(ref, 12345.0)
            # garbage in the scratch memory must not reach the results
            scratch = torch.full((lib.ptgo_depthwise_scratch(ctypes.byref(s)),), float("nan"))
            lib.ptgo_depthwise_conv2d_width(P(x.data_ptr()), P(w.data_ptr()), P(b.data_ptr()), P(y.data_ptr()),
                                            ctypes.byref(s), act, ctypes.c_int64(0), ctypes.c_int64(N * C),
                                            P(scratch.data_ptr()), width)
            where = "width %d: %s" % (width, (N, C, H, W, kh, kw, sh, sw, ph, pw, act))
            # sums in another order: errors grow with the terms' size and number
            torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-6 * scale * kh * kw, equal_nan=True, msg=where)


def test_kernel_refuses_what_it_cannot_do():
    lib = _lib()
    for shape in [(1, 4, 8, 8, 9, 3, 1, 1, 1, 1),  # a kernel over 7
                  (1, 4, 8, 8, 3, 3, 3, 1, 1, 1),  # stride 3
                  (1, 4, 8, 8, 3, 3, 1, 1, 3, 1),  # padding not below the kernel size
                  (1, 4, 1, 1, 3, 3, 1, 1, 0, 0)]:  # a window larger than the padded input
        assert lib.ptgo_depthwise_supported(ctypes.byref(Shape(*shape))) == 0, shape


class Block(nn.Module):
    """A depthwise convolution, BatchNorm and an activation, then a pointwise convolution."""

    def __init__(self, c, k=3, stride=1, act=nn.ReLU6, bias=False, bn=True):
        super().__init__()
        self.dw = nn.Conv2d(c, c, k, stride, k // 2, groups=c, bias=bias)
        self.bn = nn.BatchNorm2d(c) if bn else nn.Identity()
        self.act = act() if act else nn.Identity()
        self.pw = nn.Conv2d(c, 2 * c, 1)

    def forward(self, x):
        return self.pw(self.act(self.bn(self.dw(x))))


def _ops(cm, x):
    with torch.no_grad(), torch.profiler.profile() as p:
        cm(x)
    return [e.name for e in p.events()]


CASES = [
    # channels, kernel, stride, activation, bias, BatchNorm, input (N, H, W)
    (32, 3, 1, nn.ReLU6, False, True, (1, 28, 28)),
    (24, 3, 2, nn.ReLU, False, True, (2, 17, 23)),
    (16, 5, 1, nn.ReLU, True, False, (3, 7, 7)),
    (40, 5, 2, None, False, True, (1, 15, 9)),
    (8, 7, 1, nn.SiLU, True, True, (2, 14, 13)),
    (12, 3, 2, nn.Hardswish, False, True, (1, 6, 5)),
]


@pytest.mark.parametrize("way", ["packed", "unpacked"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "c%d_k%d_s%d_%s" % (c[0], c[1], c[2], c[3].__name__ if c[3] else "none"))
def test_compiled_depthwise_blocks_match_eager(case, way, pointwise_way):
    pointwise_way(way)  # how the pointwise convolution after it runs (A226): counted below
    c, k, stride, act, bias, bn, (n, h, w) = case
    torch.manual_seed(0)
    m = Block(c, k, stride, act, bias, bn).eval()
    if bn:
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
        m.bn.weight.data.uniform_(0.5, 2)
    x = torch.randn(n, c, h, w) * 3
    cm = ptgo.compile(m, dynamic=False)
    with torch.no_grad():
        for _ in range(2):
            assert_same(cm(x), m(x))
        # channels-last: torch's convolution, which keeps eager's layout
        xc = x.contiguous(memory_format=torch.channels_last)
        assert_same(cm(xc), m(xc))
    ops = _ops(cm, x)
    assert ops.count("ptgo::depthwise_conv2d") == 1, ops
    # the pointwise one: packed for oneDNN, or torch's convolution, or for one image at one
    # thread a matrix product (A223)
    if way == "packed":
        assert ops.count("mkldnn_prepacked::conv2d_run") == 1 and "aten::convolution" not in ops, ops
    else:
        assert ops.count("aten::convolution") + ops.count("aten::mm") == 1, ops
    if act in (nn.ReLU, nn.ReLU6, nn.SiLU):  # absorbed into the convolution: no kernel left
        # (but the pointwise convolution's bias add, A223, where it runs as a matrix product)
        assert not [o for o in ops if o.startswith("cpp_fused") and not o.startswith("cpp_fused_add_")], ops


def test_absorbed_activation_is_applied_when_torch_runs_the_convolution():
    # a channels-last input of a graph compiled for contiguous ones runs torch's convolution;
    # the relu6 absorbed into it is then applied after it
    torch.manual_seed(0)
    m = Block(16).eval()
    x = torch.randn(2, 16, 9, 9) * 4
    cm = ptgo.compile(m, dynamic=False)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        xc = x.contiguous(memory_format=torch.channels_last)
        out = cm(xc)
        assert_same(out, m(xc))
    assert "ptgo::depthwise_conv2d" not in _ops(cm, xc)


def test_depthwise_result_read_twice_keeps_its_activation_kernel():
    # the convolution's result is also a graph output: the relu stays a kernel of its own
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

        def forward(self, x):
            y = self.dw(x)
            return y, torch.relu(y)

    torch.manual_seed(0)
    m = Two().eval()
    x = torch.randn(1, 8, 10, 11)
    cm = ptgo.compile(m, dynamic=False)
    with torch.no_grad():
        assert_same(cm(x), m(x))


def test_depthwise_with_a_symbolic_batch():
    torch.manual_seed(0)
    m = Block(16, 3, 2).eval()
    cm = ptgo.compile(m, dynamic=True)
    with torch.no_grad():
        for b in (2, 3, 5):
            # dynamic=True makes the image sizes symbolic too, which the depthwise kernel is
            # not: they are marked static, the batch stays symbolic
            x = torch.randn(b, 16, 11, 11)
            ptgo.mark_static(x, (2, 3))
            assert_same(cm(x), m(x), "batch %d" % b)
        x = torch.randn(4, 16, 11, 11)
        ptgo.mark_static(x, (2, 3))
        assert _ops(cm, x).count("ptgo::depthwise_conv2d") == 1


def test_depthwise_at_two_threads():
    torch.manual_seed(0)
    m = Block(64, 3, 1).eval()
    x = torch.randn(2, 64, 20, 20)
    cm = ptgo.compile(m, dynamic=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with torch.no_grad():
            assert_same(cm(x), m(x))
    finally:
        torch.set_num_threads(threads)


def test_depthwise_training_step_matches_eager():
    # the forward runs ptgo's kernel; the gradients are torch's convolution_backward
    torch.manual_seed(0)
    m = Block(8, 3, 1, nn.ReLU, bias=True, bn=False).train()
    m2 = Block(8, 3, 1, nn.ReLU, bias=True, bn=False).train()
    m2.load_state_dict(m.state_dict())
    x = torch.randn(2, 8, 9, 9)
    cm = ptgo.compile(m2)
    m(x).sum().backward()
    cm(x).sum().backward()
    for (n, p), p2 in zip(m.named_parameters(), m2.parameters()):
        assert_same(p2.grad, p.grad, n)


def test_silu_tails_match_eager():
    # the kernel's exp saturates: inf and NaN stay what torch's x / (exp(-x) + 1) gives
    lib = _lib()
    P = ctypes.c_void_p
    x = torch.tensor([0.0, -0.0, 1e-30, 5.0, -5.0, 20.0, -20.0, 87.0, -87.0, 88.5, -88.5, 100.0, -100.0,
                      float("inf"), float("-inf"), float("nan")]).repeat(3).reshape(1, 1, 1, 48)
    w, b = torch.ones(1, 1, 1, 1), torch.zeros(1)
    s = Shape(1, 1, 1, 48, 1, 1, 1, 1, 0, 0)
    ref = ACTS[3](x)
    for width in _widths(lib):
        y = torch.empty_like(x)
        scratch = torch.empty(lib.ptgo_depthwise_scratch(ctypes.byref(s)))
        lib.ptgo_depthwise_conv2d_width(P(x.data_ptr()), P(w.data_ptr()), P(b.data_ptr()), P(y.data_ptr()),
                                        ctypes.byref(s), 3, ctypes.c_int64(0), ctypes.c_int64(1),
                                        P(scratch.data_ptr()), width)
        torch.testing.assert_close(y, ref, rtol=2e-6, atol=1e-30, equal_nan=True, msg="width %d" % width)
