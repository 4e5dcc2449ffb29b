"""Tensor.bernoulli_ in compiled code: torchvision's stochastic depth and timm's drop_path fill a
fresh tensor with `bernoulli_(keep)`; ptgo draws it as eager draws it (torch's generator, the
same stream and the same generator state after), inside its graph, on both torches."""
import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

BACKENDS = ["inductor", "aot_eager"]
STAYS_TORCH = "Tensor.bernoulli_ stays a call to torch"


def run_both(f, *args, seed=5):
    """f eager and compiled under one seed: results and the next draw of the generator."""
    compiled = ptgo.compile(f)
    got = []
    for fn in (f, compiled, compiled):
        torch.manual_seed(seed)
        got.append((fn(*args), torch.rand(3)))
    return got


LAYOUTS = {
    "contiguous": lambda: torch.empty(6, 5),
    "transposed": lambda: torch.empty(5, 6).t(),
    "sliced": lambda: torch.empty(6, 10)[:, ::2],
    "channels_last": lambda: torch.empty(2, 3, 4, 5).contiguous(memory_format=torch.channels_last),
    "float64": lambda: torch.empty(4, 7, dtype=torch.float64),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_bernoulli_fill_draws_eagers_stream(layout, ptgo_log):
    # torch's CPU kernel visits the elements in memory order: a transposed, sliced or
    # channels-last tensor gets the draws of a contiguous one in its own order
    ptgo.set_logs("perf_hints")

    def f(x):
        noise = LAYOUTS[layout]().bernoulli_(0.3)
        return x * noise.sum(), noise

    got = run_both(f, torch.randn(3))
    assert_same(got[1], got[0])
    assert_same(got[2], got[0])
    assert STAYS_TORCH not in ptgo_log.text, ptgo_log.text


def test_bernoulli_fill_differs_per_call_and_follows_the_seed():
    f = ptgo.compile(lambda x: x * torch.empty(64).bernoulli_(0.5))
    x = torch.ones(64)
    a, b = f(x), f(x)
    assert not torch.equal(a, b)  # a fresh draw per call, not a constant
    torch.manual_seed(11)
    c = f(x)
    torch.manual_seed(11)
    assert_same(f(x), c)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_bernoulli_fill_at_the_ends_still_draws(p):
    # p = 0 and p = 1 give constant values, but eager's kernel draws one number per element
    def f(x):
        return x + torch.empty(3, 4).bernoulli_(p)

    got = run_both(f, torch.zeros(3, 4))
    assert_same(got[1], got[0])


def test_dead_bernoulli_fill_advances_the_generator():
    def f(x):
        torch.empty(10).bernoulli_(0.5)
        return x + 1

    got = run_both(f, torch.zeros(2))
    assert_same(got[1], got[0])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["row", "batch"])
def test_stochastic_depth_training_equals_eager(backend, mode, ptgo_log):
    """torchvision.ops.StochasticDepth (efficientnet, convnext): outputs, gradients and the
    generator state equal eager's over training steps, with the fill in ptgo's graph."""
    from torchvision.ops import StochasticDepth

    ptgo.set_logs("perf_hints")

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)
            self.sd = StochasticDepth(0.3, mode)

        def forward(self, x):
            return x + self.sd(torch.relu(self.lin(x)))

    torch.manual_seed(0)
    ref = Block().train()
    cmp = Block().train()
    cmp.load_state_dict(ref.state_dict())
    compiled = ptgo.compile(cmp, backend=backend)
    for step in range(3):
        x = torch.randn(16, 8)
        outs = []
        for model in (ref, compiled):
            torch.manual_seed(100 + step)
            y = model(x)
            y.square().sum().backward()
            outs.append((y.detach(), torch.rand(2)))
        assert_same(outs[1], outs[0], "step %d" % step)
        for p, q in zip(ref.parameters(), cmp.parameters()):
            assert_same(q.grad, p.grad)
            p.grad = q.grad = None
    assert STAYS_TORCH not in ptgo_log.text, ptgo_log.text


def test_drop_path_new_empty_fill():
    # timm's drop_path: x.new_empty((batch, 1, ..., 1)).bernoulli_(keep), divided by keep
    def drop_path(x, keep=0.8):
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep)
        random_tensor.div_(keep)
        return x * random_tensor

    got = run_both(drop_path, torch.randn(4, 3, 5))
    assert_same(got[1], got[0])


def test_bernoulli_fill_stays_torchs_where_ptgo_does_not_draw(ptgo_log):
    # a tensor of probabilities and an explicit generator: torch's call, eager's values
    ptgo.set_logs("perf_hints")

    def f(p):
        g = torch.Generator().manual_seed(3)
        return torch.empty(4, 5).bernoulli_(p), torch.empty(4, 5).bernoulli_(0.5, generator=g)

    got = run_both(f, torch.rand(4, 5))
    assert_same(got[1], got[0])
    assert STAYS_TORCH in ptgo_log.text


@pytest.mark.parametrize("p", [1.5, -0.1, float("nan")])
def test_bernoulli_fill_rejects_p_outside_0_1_as_torch(p):
    def f(x):
        return x + torch.empty(3).bernoulli_(p)

    with pytest.raises(RuntimeError) as want:
        f(torch.zeros(3))
    with pytest.raises(RuntimeError) as got:
        ptgo.compile(f)(torch.zeros(3))
    assert str(got.value) == str(want.value)


def test_bernoulli_fill_with_a_bad_tensor_p_raises_torchs_error():
    def f(p):
        return torch.empty(2, 3).bernoulli_(p)

    p = torch.tensor([0.5, 1.5, 0.2])
    with pytest.raises(RuntimeError) as want:
        f(p)
    with pytest.raises(RuntimeError) as got:
        ptgo.compile(f)(p)
    assert str(got.value) == str(want.value)
