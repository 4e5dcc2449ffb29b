"""var/std/var_mean/std_mean and group_norm at huge and non-finite values give eager's values and
NaN/inf pattern (fuzz seeds 2418, 4554: a float32 std is accumulated in double; 2867, 4747, 6872:
var_mean's mean is Welford's, NaN once a value follows an infinity; 3319, 4050: a group whose
mean squared overflows is NaN)."""
import pytest
import torch

import ptgo

inf = float("inf")
nan = float("nan")


def same(got, want):
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert torch.equal(torch.isnan(g), torch.isnan(w)), (g, w)
        assert torch.equal(torch.isinf(g) & (g > 0), torch.isinf(w) & (w > 0)), (g, w)
        assert torch.equal(torch.isinf(g) & (g < 0), torch.isinf(w) & (w < 0)), (g, w)
        ok = torch.isfinite(w)
        torch.testing.assert_close(g[ok], w[ok])


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [
    lambda x: torch.var_mean(x), lambda x: torch.std_mean(x), lambda x: torch.var_mean(x, 1),
    lambda x: torch.std_mean(x, 0), lambda x: torch.var_mean(x, (0, 1), keepdim=True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_var_mean_welford_mean(backend, fn, dtype):
    rows = [[1.0, 2.0, inf], [inf, 1.0, 2.0], [1.0, inf, 2.0], [inf, inf, 3.0], [-inf, 2.0, inf],
            [1.0, 2.0, -inf], [nan, 1.0, 2.0], [1.0, 2.0, 3.0]]
    x = torch.tensor(rows, dtype=dtype)
    for t in (x, x[:, 2:], x[2:3], x[:3]):
        same(ptgo.compile(fn, backend=backend)(t), fn(t))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [lambda x: torch.std(x, 1), lambda x: torch.std_mean(x, 1)[0],
                                lambda x: torch.std(x), lambda x: torch.var(x, 1)])
def test_float32_std_accumulates_in_double(backend, fn):
    x = torch.tensor([[0.0, 1e22, -3e22, 5.0], [1e20, 2e20, 3e20, 4e20], [1.0, 2.0, 3.0, 4.0]])
    same(ptgo.compile(fn, backend=backend)(x), fn(x))


@pytest.mark.skipif(not torch.__version__.startswith("1.13"),
                    reason="2.14's moments cascade is NaN for some group sizes only (GroupNormOverflowNaN)")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("channels", [2, 40])
def test_group_norm_overflowing_mean_is_nan(backend, channels):
    gn = torch.nn.GroupNorm(1, channels)
    torch.manual_seed(0)
    x = torch.randn(4, channels, 1)
    x[0, channels // 2, 0] = 1e30
    x[2, 0, 0] = 3e19
    x[3, -1, 0] = -1e25
    with torch.no_grad():
        same(ptgo.compile(gn, backend=backend)(x), gn(x))
