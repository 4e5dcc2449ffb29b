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
    # RAdam's step branches on rho_t > 5, a float computed from the step count: it crosses at
    # the 6th step with beta2 = 0.999, so its runs take 8 steps (STEPS)
    "radam": lambda ps: torch.optim.RAdam(ps, lr=1e-2),
    "radam_wd": lambda ps: torch.optim.RAdam(ps, lr=1e-2, weight_decay=1e-2),
    "nadam": lambda ps: torch.optim.NAdam(ps, lr=1e-2),
    "adadelta": lambda ps: torch.optim.Adadelta(ps, lr=1.0, weight_decay=1e-3),
    "asgd": lambda ps: torch.optim.ASGD(ps, lr=1e-2, t0=3),
    "rprop": lambda ps: torch.optim.Rprop(ps, lr=1e-2),
    # the foreach (multi-tensor) steps: torch._foreach_* ops traced as the per-tensor ops torch's
    # CPU kernels run (A202); RAdam and ASGD branch on a float read from a tensor and break there
    "radam_foreach": lambda ps: torch.optim.RAdam(ps, lr=1e-2, foreach=True),
    "nadam_foreach": lambda ps: torch.optim.NAdam(ps, lr=1e-2, foreach=True),
    "adadelta_foreach": lambda ps: torch.optim.Adadelta(ps, lr=1.0, foreach=True),
    "asgd_foreach": lambda ps: torch.optim.ASGD(ps, lr=1e-2, t0=3, foreach=True),
    "rprop_foreach": lambda ps: torch.optim.Rprop(ps, lr=1e-2, foreach=True),
    "adam_foreach": lambda ps: torch.optim.Adam(ps, lr=1e-2, foreach=True),
    "adam_amsgrad_wd_foreach": lambda ps: torch.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=1e-2, foreach=True),
    "adamw_foreach": lambda ps: torch.optim.AdamW(ps, lr=1e-2, foreach=True),
    "sgd_nesterov_wd_foreach": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3,
                                                          foreach=True),
    "rmsprop_foreach": lambda ps: torch.optim.RMSprop(ps, lr=1e-2, momentum=0.5, centered=True, foreach=True),
    "adagrad_foreach": lambda ps: torch.optim.Adagrad(ps, lr=1e-1, foreach=True),
    "adamax_foreach": lambda ps: torch.optim.Adamax(ps, lr=1e-2, weight_decay=1e-3, foreach=True),
}

#: steps per run where 6 do not reach every branch
STEPS = {"radam": 8, "radam_wd": 8, "radam_foreach": 8}

TORCH2 = torch.__version__ >= "2"


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
    MKL's vector math (vsSqrt), within one ulp but 1 in 6 results a ulp off here; ptgo then
    keeps torch's sqrt (A143)."""
    x = torch.rand(4096) * 0.03
    return torch.equal(x.sqrt(), x.double().sqrt().float())


def _bits(actual, expected, path):
    """assert_same, and the values equal to the bit (NaN where eager has NaN)."""
    assert_same(actual, expected, path=path)
    if isinstance(expected, torch.Tensor):
        assert torch.equal(actual, expected) or (actual.isnan().any() and torch.equal(
            actual.nan_to_num(), expected.nan_to_num())), "%s: values differ in bits" % path


def _run_steps(make, steps=6, x=None):
    """Steps an eager optimizer and ptgo.compile of a copy's step side by side; after each step
    the parameters and the optimizer state (state_dict) are equal to the bit. Returns the pair
    and the number of graphs ptgo compiled meanwhile."""
    m1, o1, m2, o2 = _pair(make)
    before = stats()["compiled"]
    step = ptgo.compile(o2.step)
    x = torch.randn(8, 12) if x is None else x
    for i in range(steps):
        _grads((m1, m2), x)
        o1.step()
        step()
        for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            _bits(p2, p1, "step %d: %s" % (i, n))
        s1, s2 = o1.state_dict(), o2.state_dict()
        assert s1["param_groups"] == s2["param_groups"]
        assert s1["state"].keys() == s2["state"].keys()
        for k in s1["state"]:
            assert s1["state"][k].keys() == s2["state"][k].keys()
            for key, v in s1["state"][k].items():
                _bits(s2["state"][k][key], v, "step %d: state[%d][%r]" % (i, k, key))
    return (m1, o1, m2, o2), stats()["compiled"] - before


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_compiled_step_equals_eager(name):
    _run_steps(OPTIMIZERS[name], steps=STEPS.get(name, 6))


# Graphs compiled over 8 steps by ptgo.compile(opt.step) of a single-tensor step, per torch
# (measured): the first step's graph creates the state, every later step runs the second.
# torch 1.13's Adadelta and Rprop keep their step count as a Python int in the state dict
# (state['step'] += 1): automatic dynamic makes it a symbol read from that dict item once its
# value changed, but the second step reads 1, and 0 and 1 are always specialised (as torch
# does), so the int is static there and symbolic from the third step on: three graphs, where a
# value guard per step used to recompile up to the cache limit. (Rprop's third trace builds the
# C code of its second, which the kernel cache serves: 2 compiled.)
GRAPHS = {
    "nadam": (2, 2),
    "adadelta": (3, 2),
    "rprop": (2, 2),
}


@needs_capture
@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_single_tensor_step_compiles_a_bounded_number_of_graphs(name):
    want = GRAPHS[name][TORCH2]
    _, graphs = _run_steps(OPTIMIZERS[name], steps=8)
    assert graphs == want


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
    _run_steps(lambda ps: torch.optim.Adamax(ps, lr=1e-2, foreach=False), steps=4)
    assert not [line for line in ptgo_log if "runs with torch" in line or "unsqueeze_ changes" in line], ptgo_log


@needs_capture
def test_sqrt_runs_with_torch_where_eager_rounds_it_otherwise(ptgo_log):
    # NAdam divides by sqrt(exp_avg_sq / bias_correction2) + eps: where eager's sqrt is not
    # correctly rounded (PyPI torch 2.14's MKL vsSqrt), torch computes it inside the compiled
    # step and perf_hints says so; elsewhere it is fused like any pointwise op (A143)
    ptgo.set_logs("perf_hints")
    _run_steps(OPTIMIZERS["nadam"])
    said = [line for line in ptgo_log if "sqrt stays a call to torch" in line and "not correctly rounded" in line]
    assert bool(said) == (not _sqrt_rounded_correctly()), ptgo_log


@needs_capture
@pytest.mark.parametrize("name", ["radam", "asgd"])
def test_branch_on_a_float_read_from_a_tensor_runs_with_torch(name, ptgo_log):
    # RAdam branches on rho_t > 5 and ASGD on mu.item() != 1, floats computed from the state's
    # tensors (step_t.item(), A136): no guard can decide a comparison the graph computes, so
    # the graph breaks there; the break is inside the loop over parameters, so that loop runs
    # with torch, equal to eager, and graph_breaks says why
    ptgo.set_logs("graph_breaks")
    _run_steps(OPTIMIZERS[name], steps=STEPS.get(name, 6))
    assert [line for line in ptgo_log if "a float read from a tensor" in line
            and "used as a plain Python float" in line], ptgo_log


# foreach optimizers whose step is one graph of ptgo kernels, per torch (torch 1.13's foreach
# Adamax writes torch.max(..., out=(a, b)), which runs with torch)
FOREACH_WHOLE = {
    "adam_foreach": (True, True), "adam_amsgrad_wd_foreach": (True, True), "adamw_foreach": (True, True),
    "sgd_nesterov_wd_foreach": (True, True), "rmsprop_foreach": (True, True), "adagrad_foreach": (True, True),
    "nadam_foreach": (True, True), "adadelta_foreach": (True, True), "adamax_foreach": (False, True),
}


@needs_capture
@pytest.mark.parametrize("name", sorted(FOREACH_WHOLE))
def test_foreach_step_is_one_graph_without_foreach_calls(name):
    if not FOREACH_WHOLE[name][TORCH2]:
        pytest.skip("this torch's foreach step has a call ptgo leaves to torch")
    m, opt, _, _ = _pair(OPTIMIZERS[name])
    _grads((m,), torch.randn(8, 12))
    opt.step()  # the state exists: the steady-state step
    _grads((m,), torch.randn(8, 12))
    ex = ptgo.explain(opt.step)()
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    ops = ex.ops_per_graph[0]
    assert not [o for o in ops if "_foreach_" in o or "_group_tensors" in o], ops


def test_foreach_ops_in_user_code_equal_eager():
    """torch._foreach_* called directly: out-of-place and in-place forms, lists of scalars, a
    scalar first operand, a shared tensor operand, mixed dtypes; values, dtypes and version
    counters are eager's."""
    def fn(xs, ys, zs, c):
        same = torch._foreach_add_(xs, ys, alpha=2)
        assert same is (xs if TORCH2 else None)  # torch 2 returns the list, 1.13 None
        torch._foreach_addcdiv_(xs, ys, zs, [0.5, -1.5, 2.0])
        torch._foreach_addcmul_(ys, zs, zs, 0.25)
        torch._foreach_mul_(zs, c)
        torch._foreach_maximum_(ys, zs)
        r = torch._foreach_sqrt(ys)
        torch._foreach_div_(r, [2.0, 3.0, 4.0])
        norms = torch._foreach_norm(xs, 2)
        torch._foreach_zero_(r[1:])
        if TORCH2:  # torch 2's additions
            torch._foreach_lerp_(zs, ys, 0.3)
            torch._foreach_clamp_min_(ys, 0.1)
            return r, norms, torch._foreach_pow(0.9, zs)
        return r, norms

    def make():
        torch.manual_seed(3)
        xs = [torch.randn(5), torch.randn(2, 3), torch.randn(4, dtype=torch.float64)]
        ys = [torch.rand(5), torch.rand(2, 3), torch.rand(4, dtype=torch.float64)]
        zs = [torch.rand(5) + 0.5, torch.rand(2, 3) + 0.5, torch.rand(4, dtype=torch.float64) + 0.5]
        return xs, ys, zs, torch.tensor(1.5)

    a, b = make(), make()
    expected = fn(*a)
    compiled = ptgo.compile(fn)
    actual = compiled(*b)
    assert_same(actual, expected)
    for la, lb in zip(a[:3], b[:3]):
        for ta, tb in zip(la, lb):
            _bits(tb, ta, "operand")
            assert tb._version == ta._version
    ex = ptgo.explain(fn)(*make())
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    assert not [o for o in ex.ops_per_graph[0] if "_foreach_" in o]


def test_foreach_list_length_mismatch_raises_eagers_error():
    def fn(xs, ys):
        torch._foreach_add_(xs, ys)
        return xs[0] * 2

    xs, ys = [torch.ones(2), torch.ones(3)], [torch.ones(2)]
    with pytest.raises(RuntimeError) as eager:
        fn(xs, ys)
    xs2 = [torch.ones(2), torch.ones(3)]
    with pytest.raises(RuntimeError) as compiled:
        ptgo.compile(fn)(xs2, ys)
    assert str(compiled.value) == str(eager.value)
    assert torch.equal(xs2[0], xs[0]) and torch.equal(xs2[1], xs[1])


@pytest.mark.skipif(not TORCH2, reason="torch._C._group_tensors_by_device_and_dtype is torch 2's")
def test_group_tensors_by_device_and_dtype_is_torchs():
    """The grouping torch 2's foreach optimizers call first, folded while tracing: the same
    groups, order, indices and tensor objects as torch's, None entries and empty lists kept."""
    from torch.utils._foreach_utils import _group_tensors_by_device_and_dtype as group

    def fn(a, b, c, d):
        g = group([[a, b, c], [d, None, d], []], with_indices=True)
        h = group([[a, b, c]])
        return [(k, [[t if t is None else t + 0 for t in l] for l in ls], idx) for k, (ls, idx) in g.items()], \
            [(k, idx) for k, (_, idx) in h.items()]

    args = (torch.randn(2), torch.randn(3, dtype=torch.float64), torch.randn(1), torch.randn(2))
    expected = fn(*args)
    actual = ptgo.compile(fn)(*args)
    assert repr(actual) == repr(expected)
    ex = ptgo.explain(fn)(*args)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
