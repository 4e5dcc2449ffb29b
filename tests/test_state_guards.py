"""Guards for the state eager reads (issue 8, part 3): class attributes reached through instances
(constants and methods, changed on the class after compiling), parameters whose `.data` was
replaced, torch's default dtype and inference mode. A changed value must recompile, never serve a
stale result."""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

BACKENDS = ["counter", "eager", "inductor"]


def _compile(fn, backend, counter):
    return ptgo.compile(fn, backend=counter if backend == "counter" else backend)


class Scaled(nn.Module):
    SCALE = 2.0

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def act(self, x):
        return torch.relu(x)

    def forward(self, x):
        return self.act(self.fc(x)) * self.SCALE


class Plain:
    OFFSET = 1

    def shift(self, x):
        return x + self.OFFSET


@pytest.mark.parametrize("backend", BACKENDS)
def test_class_constant_changed_on_the_class(counter, backend):
    m = Scaled()
    cm = _compile(m, backend, counter)
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        Scaled.SCALE = 5.0
        try:
            assert_same(cm(x), m(x))
        finally:
            Scaled.SCALE = 2.0
        assert_same(cm(x), m(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_class_method_replaced(counter, backend):
    m = Scaled()
    cm = _compile(m, backend, counter)
    x = torch.randn(3, 4)
    old = Scaled.act
    with torch.no_grad():
        assert_same(cm(x), m(x))
        Scaled.act = lambda self, x: torch.sigmoid(x)
        try:
            assert_same(cm(x), m(x))
        finally:
            Scaled.act = old
        assert_same(cm(x), m(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_plain_object_class_attribute(counter, backend):
    p = Plain()

    def f(x):
        return p.shift(x) * 2

    cf = _compile(f, backend, counter)
    x = torch.randn(3)
    assert_same(cf(x), f(x))
    Plain.OFFSET = 7
    try:
        assert_same(cf(x), f(x))
        p.OFFSET = 9  # now shadowed on the instance
        assert_same(cf(x), f(x))
    finally:
        Plain.OFFSET = 1
        del p.OFFSET


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameter_data_replaced_with_other_strides(counter, backend):
    m = nn.Linear(6, 4)
    cm = _compile(m, backend, counter)
    x = torch.randn(2, 6)
    with torch.no_grad():
        assert_same(cm(x), m(x))
        w = torch.randn(6, 4).t()  # same shape, transposed strides
        m.weight.data = w
        assert m.weight.stride() == (1, 4)
        assert_same(cm(x), m(x))
        m.weight.data = torch.randn(4, 6)  # same layout, new values
        assert_same(cm(x), m(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_default_dtype(counter, backend):
    def f(x):
        return x + torch.ones(3) * 0.5

    cf = _compile(f, backend, counter)
    x = torch.randn(3, dtype=torch.float64)
    assert_same(cf(x), f(x))
    torch.set_default_dtype(torch.float64)
    try:
        assert_same(cf(x), f(x))
    finally:
        torch.set_default_dtype(torch.float32)
    assert_same(cf(x), f(x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_inference_mode(counter, backend):
    def f(x):
        return torch.tanh(x) + 1

    cf = _compile(f, backend, counter)
    x = torch.randn(3)
    assert not cf(x).is_inference()
    with torch.inference_mode():
        y = cf(x)
        assert y.is_inference() == f(x).is_inference()
    assert not cf(x).is_inference()


def test_view_at_another_storage_offset_is_not_served_the_old_graph(counter):
    # the kernels index the storage with the offset compiled for: a view at another offset
    # (x[1:], a chunk of a flat buffer) is guarded, never read at the old offset
    base = torch.randn(8 * 64 + 3)
    f = ptgo.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1, backend=counter)
    g = ptgo.compile(lambda x: torch.nn.functional.gelu(x) * 2 + 1)
    for off in (0, 1, 2, 0, 3):
        x = base[off:off + 8 * 64].view(8, 64)
        want = torch.nn.functional.gelu(x) * 2 + 1
        assert_same(f(x), want)
        assert_same(g(x), want)
    # offsets 0 and 1 compile static; once the offset changed, offsets >= 2 share a graph
    # whose storage offset is a size symbol (automatic dynamic)
    assert counter.frame_count == 3
