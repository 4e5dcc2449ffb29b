"""layer_norm computes as torch's kernel writes it (float32/float64): 1.13 normalizes with
fma(x, rstd, -mean·rstd), 2.14 with (x - mean)·rstd, both apply weight and bias as one fma, and
the variance is NaN where torch's moments square an overflowing mean. Degenerate rows (one
element, huge values) then give eager's bits, signs and NaNs (fuzz seed 972)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import ptgo


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(torch.isnan(a), torch.isnan(b)), (a, b)
    ok = ~torch.isnan(a)
    assert torch.equal(a[ok], b[ok]), (a, b)


@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_over_one_element_is_eagers(affine, dtype):
    torch.manual_seed(0)
    x = torch.cat([torch.randn(64, 1), torch.tensor([[1e30], [-3e19], [1.8e19], [1e-30], [0.0], [-0.0]])]).to(dtype)
    w, b = (torch.randn(1, dtype=dtype), torch.randn(1, dtype=dtype)) if affine else (None, None)
    f = lambda x: F.layer_norm(x, (1,), w, b)
    same_bits(ptgo.compile(f)(x), f(x))
    # the sign pattern of the rounding residue is what a later comparison reads
    g = lambda x: (F.layer_norm(x, (1,)) > 0).sum()
    assert ptgo.compile(g)(x).item() == g(x).item()


def test_layer_norm_module_with_grad_is_eagers():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(1, elementwise_affine=False)
    x = torch.tensor([[3.0], [-2.5], [1e30], [7.1], [0.1]], requires_grad=True)
    x2 = x.detach().clone().requires_grad_()
    want, got = ln(x), ptgo.compile(ln)(x2)
    same_bits(got.detach(), want.detach())
    want.sum().backward()
    got.sum().backward()
    same_bits(x2.grad, x.grad)


def test_layer_norm_rows_stay_close():
    torch.manual_seed(0)
    x, w, b = torch.randn(64, 37), torch.randn(37), torch.randn(37)
    f = lambda x: F.layer_norm(x, (37,), w, b)
    torch.testing.assert_close(ptgo.compile(f)(x), f(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batch_norm_scale_shift_is_eagers(layout, training, dtype):
    # torch's batch_norm kernel applies the statistics as fma(x, a, fma(-mean, a, bias)),
    # a = rstd * weight, on contiguous and channels-last inputs, and as ((x - mean) * rstd) *
    # weight + bias on others. With eager's running statistics (eval) the results are eager's
    # bits; a constant channel gives eager's rounding residue, not 0, which a comparison reads
    # (fuzz seed 14413).
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm2d(6).to(dtype)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    bn.train(training)
    x = torch.randn(4, 6, 5, 7, dtype=dtype) * 3 + 1
    x[:, 2] = 1.5  # a constant channel
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
    elif layout == "transposed":
        x = x.transpose(0, 2).contiguous().transpose(0, 2)
    bn2 = copy.deepcopy(bn)
    with torch.no_grad():
        want, got = bn(x), ptgo.compile(bn2)(x)
    if training:
        torch.testing.assert_close(got, want)
    else:
        same_bits(got, want)
    g = lambda m, x: (m(x) != 0).sum()
    with torch.no_grad():
        assert ptgo.compile(g)(bn2, x).item() == g(bn, x).item()
    for a, b in zip(bn.buffers(), bn2.buffers()):
        torch.testing.assert_close(b, a)


def test_batch_norm_over_a_constant_channel_in_training():
    # the fuzz program of seed 14413 (there bfloat16, which eager and ptgo compute in float32):
    # track_running_stats=False, 1.5 everywhere
    for dtype in (torch.float32, torch.float64):
        bn = torch.nn.BatchNorm1d(4, track_running_stats=False).to(dtype)
        x = torch.full((3, 4, 8), 1.5, dtype=dtype)
        f = lambda x: torch.logical_and(bn(x), bn(x))
        with torch.no_grad():
            assert torch.equal(ptgo.compile(f)(x), f(x))


@pytest.mark.parametrize("n", [2, 3, 5, 7, 9, 12, 15])
def test_group_norm_of_a_huge_value_is_eagers(n):
    # torch's group_norm statistics (a Welford cascade) are NaN for a group whose mean squared
    # overflows: for every group size in 1.13, for groups of fewer than 8 elements in 2.14
    # (fuzz seed 22187: a group of 3 holding 1e30); elsewhere (x - mean) * rstd
    for pos in range(n):
        x = torch.zeros(2, 3, n)
        x[1, 0, pos] = 1e30
        f = lambda x: torch.fmin(torch.nn.functional.group_norm(x, 1), x)
        same_bits(ptgo.compile(f)(x), f(x))


@pytest.mark.parametrize("layout", ["contiguous", "permuted"])
@pytest.mark.parametrize("kind", ["batch_eval", "batch_train", "instance"])
def test_norm_without_bias_adds_torchs_zero(kind, layout):
    """Fuzz seed 37831: torch's batch_norm kernels take a missing bias as 0 and add it, so where
    the mean is 0 an input's −0 comes out +0 (β = 0 − mean·α in the scale-shift form, + 0 in the
    other); ptgo kept the −0, and a later atan2 gave −π where eager gives π."""
    x = torch.tensor([0.0, -0.0, 1.0, -1.0]).repeat(4, 8, 1)
    if layout == "permuted":
        x = x.permute(2, 1, 0).contiguous().permute(2, 1, 0)
    if kind == "instance":
        m = torch.nn.InstanceNorm1d(8)
    else:
        m = torch.nn.BatchNorm1d(8, affine=False)
        m.train(kind == "batch_train")
    ref = copy.deepcopy(m)
    got, want = ptgo.compile(lambda x: m(x))(x), ref(x)
    torch.testing.assert_close(got, want)  # (under symbolic sizes rstd may differ in the last bit)
    assert torch.equal(torch.signbit(got), torch.signbit(want)), (got, want)
