"""torch.optim's steps compiled by ptgo (issue 9, "faster steps"): `ptgo.compile(opt.step)` and a
compiled training step that calls opt.step() trace torch.optim's own code, so the update, the
optimizer state and its guards are torch's for every optimizer and torch version; the
per-parameter loop becomes fused C kernels. Eager is the specification: parameters, state,
version counters and errors after each step."""
import copy
import json

import pytest
import torch

import ptgo
from ptgo import _C
from conftest import assert_same


# torch.optim is captured where ptgo._compat.TORCH_CAPTURED_EXTRA says (torch 1.13 and 2.x);
# where it runs eagerly the comparisons below hold trivially and the kernel counts do not.
OPTIM_CAPTURED = bool(ptgo._compat.for_torch(ptgo._compat.TORCH_CAPTURED_EXTRA))
needs_capture = pytest.mark.skipif(not OPTIM_CAPTURED, reason="torch.optim runs eagerly on this torch")


def stats():
    return json.loads(_C.request("inductor_stats", "{}"))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(12, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.norm(self.fc1(x))))


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "sgd_nesterov_wd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "sgd_dampening_maximize": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.5, dampening=0.3, maximize=True),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "adam_amsgrad_wd": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=1e-2),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-2, momentum=0.5),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=1e-1),
    "adamax": lambda ps: torch.optim.Adamax(ps, lr=1e-2, weight_decay=1e-3),
}


def _pair(make, seed=0):
    torch.manual_seed(seed)
    m1 = MLP()
    m2 = copy.deepcopy(m1)
    return m1, make(m1.parameters()), m2, make(m2.parameters())


def _grads(models, x):
    for m in models:
        m.zero_grad()
        m(x).square().mean().backward()


def _same_state(o1, o2):
    s1, s2 = o1.state_dict(), o2.state_dict()
    assert s1["param_groups"] == s2["param_groups"]
    assert s1["state"].keys() == s2["state"].keys()
    for k in s1["state"]:
        assert_same(s2["state"][k], s1["state"][k], path="state[%d]" % k)


def _sqrt_rounded_correctly():
    """Whether eager's float32 sqrt is correctly rounded: PyPI's torch 2.x computes it with
    MKL's vector math (vsSqrt), within one ulp but 1 in 6 results a ulp off here; ptgo's
    kernels use the correctly rounded sqrt."""
    x = torch.rand(4096) * 0.03
    return torch.equal(x.sqrt(), x.double().sqrt().float())


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_step_equals_eager(name):
    m1, o1, m2, o2 = _pair(OPTIMIZERS[name])
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12)
    for _ in range(6):
        _grads((m1, m2), x)
        o1.step()
        step()
        if name == "rmsprop" and not _sqrt_rounded_correctly():
            # RMSprop divides by sqrt(square_avg) + eps and feeds the quotient back through
            # its momentum buffer: eager's one-ulp sqrt differences grow to about 1e-5
            for a, b in zip(list(m2.parameters()) + [s["momentum_buffer"] for s in o2.state.values()],
                            list(m1.parameters()) + [s["momentum_buffer"] for s in o1.state.values()]):
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
            continue
        for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            assert_same(p2, p1, path=n)
        _same_state(o1, o2)


@needs_capture
def test_sgd_momentum_runs_fused_kernels_and_compiles_twice():
    m1, o1, m2, o2 = _pair(OPTIMIZERS["sgd_momentum"])
    before = stats()["compiled"]
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12)
    for _ in range(8):
        _grads((m1, m2), x)
        o1.step()
        step()
    # one graph for the first step (it creates the momentum buffers), one for every later one
    assert stats()["compiled"] - before == 2
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_same(p2, p1)


def test_training_step_function_with_optimizer():
    m1, o1, m2, o2 = _pair(OPTIMIZERS["sgd_momentum"])

    def train_step(model, opt, x, y):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = ptgo.compile(train_step)
    torch.manual_seed(1)
    for _ in range(5):
        x, y = torch.randn(8, 12), torch.randint(0, 3, (8,))
        l1 = train_step(m1, o1, x, y)
        l2 = compiled(m2, o2, x, y)
        assert_same(l2, l1)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_same(p2, p1)
    _same_state(o1, o2)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_training_step_closure_settles(set_to_none):
    # the optimizer and model reached through the step's closure, zero_grad inside the step
    # (set_to_none assigns p.grad = None; its profiler range records nothing): the compiled
    # step equals eager's and stops compiling after the first two steps
    m1, o1, m2, o2 = _pair(OPTIMIZERS["sgd_momentum"])

    def make(model, opt):
        def train_step(x, y):
            opt.zero_grad(set_to_none=set_to_none)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return train_step

    eager, compiled = make(m1, o1), ptgo.compile(make(m2, o2))
    torch.manual_seed(1)
    n = None
    for i in range(6):
        x, y = torch.randn(8, 12), torch.randint(0, 3, (8,))
        assert_same(compiled(x, y), eager(x, y))
        if i == 2:
            n = stats()["compiled"]
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            assert_same(p2, p1)
            assert (p1.grad is None) == (p2.grad is None)
    assert stats()["compiled"] == n
    _same_state(o1, o2)


def test_grad_assignment_in_compiled_code():
    w1 = torch.randn(3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()

    def f(w, g):
        w.grad = g * 2
        out = w.grad + 1  # the assigned gradient, read back
        w.grad = None if out.sum() > 1e9 else w.grad
        return out

    cf = ptgo.compile(f)
    g = torch.randn(3)
    assert_same(cf(w2, g), f(w1, g))
    assert_same(w2.grad, w1.grad)
    with pytest.raises(RuntimeError) as eager:
        f(w1, torch.randn(4))
    with pytest.raises(RuntimeError) as ours:
        cf(w2, torch.randn(4))
    assert str(ours.value) == str(eager.value)


def test_learning_rate_changes_are_seen():
    m1, o1, m2, o2 = _pair(OPTIMIZERS["sgd_momentum"])
    s1 = torch.optim.lr_scheduler.StepLR(o1, step_size=2, gamma=0.5)
    s2 = torch.optim.lr_scheduler.StepLR(o2, step_size=2, gamma=0.5)
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12)
    for _ in range(7):
        _grads((m1, m2), x)
        o1.step()
        step()
        s1.step()
        s2.step()
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            assert_same(p2, p1)
    # a group's hyperparameters changed by hand too
    o1.param_groups[0]["momentum"] = o2.param_groups[0]["momentum"] = 0.5
    _grads((m1, m2), x)
    o1.step()
    step()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_same(p2, p1)


def test_missing_grads_and_new_state_are_seen():
    m1, o1, m2, o2 = _pair(OPTIMIZERS["adam"])
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12)
    for i in range(6):
        _grads((m1, m2), x)
        if i in (2, 3):
            # a parameter without a gradient this step (set_to_none, or frozen)
            m1.fc2.weight.grad = m2.fc2.weight.grad = None
        o1.step()
        step()
        for p1, p2 in zip(m1.parameters(), m2.parameters()):
            assert_same(p2, p1)
        _same_state(o1, o2)
    # a state loaded from elsewhere: new tensors under the same keys (a copy: torch 2.x's
    # load_state_dict keeps the given tensors, so o1 and o2 would share their state)
    o2.load_state_dict(copy.deepcopy(o1.state_dict()))
    _grads((m1, m2), x)
    o1.step()
    step()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_same(p2, p1)
    _same_state(o1, o2)


def test_step_bumps_version_counters_like_eager():
    # autograd refuses a backward through a value the step overwrote; the compiled step must
    # leave the same trace in the parameters' version counters
    for compiled in (False, True):
        torch.manual_seed(0)
        w = torch.nn.Parameter(torch.randn(4))
        opt = torch.optim.SGD([w], lr=0.1, momentum=0.9)
        step = ptgo.compile(opt.step) if compiled else opt.step
        for _ in range(3):
            w.grad = torch.randn(4)
            step()
        x = torch.randn(4, requires_grad=True)
        y = (x * w).sum()  # saves w for x's gradient
        v = w._version
        w.grad = torch.randn(4)
        step()
        assert w._version > v
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_compiled_function_writing_inputs_bumps_versions():
    def f(x, y):
        x.add_(y)
        x.mul_(2)

    cf = ptgo.compile(f)
    x, y = torch.randn(8), torch.randn(8)
    cf(x, y)
    w = torch.randn(8, requires_grad=True)
    z = w * x  # saves x
    v = x._version
    cf(x, y)
    assert x._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inference_tensor_written_outside_inference_mode():
    def f(x):
        x.add_(1)
        x.mul_(5)

    results = []
    for fn in (f, ptgo.compile(f)):
        with torch.inference_mode():
            x = torch.zeros(3)
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            fn(x)
        with torch.inference_mode():
            fn(x)
        results.append(x.clone())
    assert_same(results[1], results[0])


def test_two_copies_reading_each_other():
    # SGD with weight decay by hand: the new buffer reads p and buf and is written to both; both
    # writes must happen (they once formed an ordering cycle and were dropped)
    def f(p, g, buf):
        d_p = g.add(p, alpha=1e-4)
        buf.mul_(0.9).add_(d_p)
        d_p = d_p.add(buf, alpha=0.9)
        p.add_(d_p, alpha=-0.1)

    torch.manual_seed(0)
    args = [torch.randn(64, 16) for _ in range(3)]
    expected = [a.clone() for a in args]
    f(*expected)
    ptgo.compile(f)(*args)
    for a, e in zip(args, expected):
        assert_same(a, e)


@needs_capture
def test_adamax_compiles_its_unsqueeze_(ptgo_log):
    # Adamax's single-tensor step calls unsqueeze_ on a temporary (torch.cat of exp_inf and
    # |grad| + eps): an in-place metadata change the decomposition follows (no graph runs with torch)
    ptgo.set_logs("perf_hints")
    m1, o1, m2, o2 = _pair(lambda ps: torch.optim.Adamax(ps, lr=1e-2, foreach=False))
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12)
    for _ in range(4):
        _grads((m1, m2), x)
        o1.step()
        step()
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert_same(p2, p1)
    _same_state(o1, o2)
    assert not [line for line in ptgo_log if "runs with torch" in line or "unsqueeze_ changes" in line], ptgo_log
