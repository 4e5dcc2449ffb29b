"""Nearest interpolation compiled: an integer upsampling factor whose float32 scale picks
source index i // k everywhere is a broadcast view copied once (A121); other sizes gather
at torch's floor(i * scale). Bit-exact against eager: values, shape, strides."""
import pytest
import torch
import torch.nn.functional as F

import ptgo
from conftest import assert_same


CASES = [
    ((2, 3, 7, 5), dict(scale_factor=2)),
    ((2, 3, 7, 5), dict(scale_factor=3)),
    ((2, 3, 7, 5), dict(size=(14, 15))),
    ((2, 3, 7, 5), dict(size=(10, 11))),        # not a multiple: gathers
    ((2, 3, 7, 5), dict(scale_factor=(2.0, 1.5))),
    ((1, 4, 9), dict(scale_factor=4)),
    ((1, 2, 3, 4, 5), dict(scale_factor=2)),
    ((2, 3, 7, 5), dict(scale_factor=2, mode="nearest-exact")),
]


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("shape,kw", CASES)
def test_nearest_interpolate(backend, shape, kw):
    kw = dict(kw)
    mode = kw.pop("mode", "nearest")
    fn = lambda x: F.interpolate(x * 2, mode=mode, **kw)  # noqa: E731
    cf = ptgo.compile(fn, backend=backend)
    xs = [torch.randn(*shape)]
    if len(shape) == 4:
        xs.append(xs[0].contiguous(memory_format=torch.channels_last))
    for x in xs:
        got, want = cf(x), fn(x)
        assert_same(got, want)
        assert got.stride() == want.stride(), (got.stride(), want.stride())
