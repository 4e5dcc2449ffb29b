"""Dead code with effects is kept (issue 8): a call whose result nothing reads still writes what it
writes, draws from torch's generator and raises for the inputs eager raises for. The op registry
says which calls have effects (primtorch.Op.CallEffects); every backend keeps them."""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

BACKENDS = ["eager", "aot_eager", "inductor"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_training_batchnorm_updates_statistics(backend):
    def f(m, x):
        m(x)
        return x + 1

    torch.manual_seed(0)
    x = torch.randn(6, 3)
    m, ref = nn.BatchNorm1d(3).train(), nn.BatchNorm1d(3).train()
    for _ in range(2):
        assert_same(ptgo.compile(f, backend=backend)(m, x), f(ref, x))
    torch.testing.assert_close(m.running_mean, ref.running_mean)
    torch.testing.assert_close(m.running_var, ref.running_var)
    assert m.num_batches_tracked.item() == ref.num_batches_tracked.item() == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_random_op_advances_the_generator(backend):
    def f(x):
        torch.rand_like(x)
        return x + torch.rand_like(x)

    x = torch.zeros(5)
    torch.manual_seed(3)
    expected = f(x)
    after = torch.rand(1)
    torch.manual_seed(3)
    got = ptgo.compile(f, backend=backend)(x)
    assert_same(got, expected)
    assert_same(torch.rand(1), after)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dead_index_out_of_range_raises(backend):
    def f(x, i):
        x[i]
        return x * 2

    x, i = torch.randn(4), torch.tensor([4])
    with pytest.raises(IndexError) as want:
        f(x, i)
    with pytest.raises(IndexError) as got:
        ptgo.compile(f, backend=backend)(x, i)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", [
    "eager", "aot_eager",
    pytest.param("inductor", marks=pytest.mark.xfail(strict=True, reason=(
        "issue 8: the C kernels give 0 for an integer division by zero (A24) where eager raises "
        "ZeroDivisionError; the dead call is kept, the kernel does not raise"))),
])
def test_dead_integer_division_by_zero_raises(backend):
    def f(x, a, b):
        a // b
        return x + 1

    x, a, b = torch.randn(3), torch.tensor([1, 2]), torch.tensor([0, 1])
    with pytest.raises(RuntimeError) as want:
        f(x, a, b)
    with pytest.raises(RuntimeError) as got:
        ptgo.compile(f, backend=backend)(x, a, b)
    assert str(got.value) == str(want.value)


def test_effects_are_registry_facts():
    """Pure dead ops are still removed: only effects keep a call."""
    graphs = []

    def backend(gm, ex):
        graphs.append(gm)
        return gm.forward

    def f(x):
        torch.sin(x)  # dead, no effect: dropped
        return x.cos()

    ptgo.compile(f, backend=backend)(torch.randn(3))
    targets = [getattr(n.target, "__name__", n.target) for n in graphs[0].graph.nodes if n.op != "placeholder"]
    assert "sin" not in targets and "cos" in targets
