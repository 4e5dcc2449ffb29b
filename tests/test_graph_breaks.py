"""Graph breaks (issue 4): code before and after an unsupported instruction stays compiled; the
instruction runs eagerly; results, printed output and side effects are eager's."""
import os
import time

import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

HERE = os.path.basename(__file__)


def run_both(fn, args, capsys, counter=None):
    """Runs fn eagerly and compiled on copies of args; returns (eager, compiled, printed outputs)."""
    expected = fn(*args)
    out_eager = capsys.readouterr().out
    compiled = ptgo.compile(fn, backend=counter or "eager")
    actual = compiled(*args)
    out_compiled = capsys.readouterr().out
    assert_same(actual, expected)
    assert out_compiled == out_eager
    return compiled


# ---- one break each ----------------------------------------------------------------------

def print_in_middle(x):
    y = torch.relu(x) * 2
    print("shape", tuple(y.shape))
    return y + 1


def item_in_middle(x):
    s = x.abs().mul(10).long().sum().item()  # an int read from a tensor (a float stays in the graph)
    return x / (s + 1)


def branch(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def unsupported_c_function(x):
    y = x + 1
    pid = os.getpid()
    return y * (pid > 0)


@pytest.mark.parametrize("fn", [print_in_middle, item_in_middle, branch, unsupported_c_function])
def test_one_break(fn, capsys):
    x = torch.randn(5)
    run_both(fn, [x], capsys)
    e = ptgo.explain(fn)(x)
    capsys.readouterr()
    assert e.graph_count >= 2, str(e)
    assert e.graph_break_count == 1, str(e)
    assert HERE + ":" in e.break_reasons[0].user_stack


def test_branch_takes_each_side(capsys, counter):
    cf = ptgo.compile(branch, backend=counter)
    for sign in (1, -1, 1, -1):
        x = torch.ones(3) * sign
        assert_same(cf(x), branch(x))
    # prefix graph + one graph per side, each compiled once
    assert counter.frame_count == 3


def test_two_and_three_breaks(capsys):
    def two(x):
        a = x * 2
        print("a")
        b = a.sin()
        n = b.abs().mul(10).long().sum().item()
        return b * n

    def three(x):
        a = x * 2
        print("a")
        b = a + 1
        if b.mean() > 0:
            b = b * 3
        c = b.cos()
        print("c")
        return c - 1

    for fn, breaks in ((two, 2), (three, 3)):
        x = torch.randn(6)
        run_both(fn, [x], capsys)
        e = ptgo.explain(fn)(x)
        capsys.readouterr()
        assert e.graph_break_count == breaks, str(e)
        assert e.graph_count >= breaks + 1, str(e)


CALLS = []


def helper_with_side_effect(t):
    CALLS.append(int(t.shape[0]))
    print("helper sees", len(CALLS))
    return t * 3


def calls_helper(x):
    y = x + 1
    z = helper_with_side_effect(y)
    return z - 1


def test_break_in_callee_with_global_mutation(capsys):
    x = torch.randn(4)
    CALLS.clear()
    expected = calls_helper(x)
    out_e = capsys.readouterr().out
    calls_e = list(CALLS)
    CALLS.clear()
    e = ptgo.explain(calls_helper)(x)
    out_c = capsys.readouterr().out
    assert_same(e.out, expected)
    assert out_c == out_e
    assert CALLS == calls_e
    assert e.graph_count >= 2, str(e)


def test_print_inside_no_grad(capsys):
    def f(x, w):
        with torch.no_grad():
            y = x * w
            print("grad enabled:", torch.is_grad_enabled())
            z = y + 1
        return z * w

    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    cf = run_both(f, [x, w], capsys)
    assert torch.is_grad_enabled()
    out = cf(x, w)
    capsys.readouterr()
    assert out.requires_grad
    out.sum().backward()
    assert w.grad is not None


def test_exception_at_break_restores_grad_mode():
    def f(x):
        with torch.no_grad():
            y = x * 2
            int("not a number")  # raises ValueError, eagerly
        return y

    cf = ptgo.compile(f, backend="eager")
    with pytest.raises(ValueError, match="invalid literal"):
        cf(torch.ones(2))
    assert torch.is_grad_enabled()


class BranchyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        print("hidden norm positive:", bool(h.norm() > 0))
        if h.mean() > 0:
            h = self.b(h)
        return h.relu()


def test_module_with_data_dependent_branch_and_print(capsys):
    torch.manual_seed(0)
    m = BranchyModule()
    for seed in range(4):
        torch.manual_seed(seed)
        x = torch.randn(2, 4)
        run_both(m, [x], capsys)


# ---- side effects in eager's order -----------------------------------------------------------

class Stats:
    def __init__(self):
        self.calls = 0
        self.seen = []


STATS = Stats()
REGISTRY = {"n": 0}


def mutates_everything(x):
    STATS.calls += 1
    STATS.seen.append(x.shape[0])
    REGISTRY["n"] = REGISTRY["n"] + 2
    REGISTRY["last"] = "f"
    y = x * STATS.calls
    print("calls", STATS.calls, REGISTRY["n"])
    return y + 1


def test_side_effects_replayed_in_order(capsys):
    x = torch.randn(3)
    STATS.calls, STATS.seen = 0, []
    REGISTRY.clear()
    REGISTRY["n"] = 0
    expected = [mutates_everything(x) for _ in range(3)]
    out_e = capsys.readouterr().out
    state_e = (STATS.calls, list(STATS.seen), dict(REGISTRY))
    STATS.calls, STATS.seen = 0, []
    REGISTRY.clear()
    REGISTRY["n"] = 0
    cf = ptgo.compile(mutates_everything, backend="eager")
    actual = [cf(x) for _ in range(3)]
    out_c = capsys.readouterr().out
    for a, e in zip(actual, expected):
        assert_same(a, e)
    assert out_c == out_e
    assert (STATS.calls, list(STATS.seen), dict(REGISTRY)) == state_e


def test_list_argument_mutation_keeps_identity():
    def f(xs, t):
        xs.append(t * 2)
        xs.insert(0, t)
        return len(xs)

    a, b = [], []
    t = torch.ones(2)
    assert ptgo.compile(f, backend="eager")(a, t) == f(b, t)
    assert len(a) == len(b) == 2
    assert a[0] is t and torch.equal(a[1], b[1])


# ---- frames that stay eager ------------------------------------------------------------------

def break_in_loop(x):
    for i in range(3):
        x = x * 2
        print("step", i)
    return x


def break_in_try(x):
    y = x + 1
    try:
        print("trying")
    except ValueError:
        y = y - 1
    return y


@pytest.mark.parametrize("fn,why", [(break_in_loop, "inside a loop"), (break_in_try, "inside a try block")])
def test_unresumable_break_runs_frame_eagerly(fn, why, capsys, ptgo_log):
    ptgo.set_logs("graph_breaks")
    x = torch.randn(2)
    run_both(fn, [x], capsys)
    assert why in ptgo_log.text and HERE + ":" in ptgo_log.text, ptgo_log.text


@pytest.mark.parametrize("fn", [print_in_middle, item_in_middle, branch, unsupported_c_function, break_in_loop])
def test_fullgraph_raises_at_first_break(fn, capsys):
    with pytest.raises(ptgo.Unsupported) as e:
        ptgo.compile(fn, backend="eager", fullgraph=True)(torch.randn(3))
    assert HERE + ":" in str(e.value), str(e.value)


def test_break_logged_once_and_resume_reused(capsys, ptgo_log):
    ptgo.set_logs("graph_breaks")
    cf = ptgo.compile(print_in_middle, backend="eager")
    for _ in range(3):
        cf(torch.randn(2))
    capsys.readouterr()
    assert ptgo_log.text.count("Graph break") == 1


def test_explain_report_is_readable(capsys):
    e = ptgo.explain(print_in_middle)(torch.randn(3))
    capsys.readouterr()
    text = str(e)
    assert "Graph count: 2" in text and "Graph break count: 1" in text
    assert "print" in text and "hint:" in text
    assert e.op_count == sum(len(o) for o in e.ops_per_graph) >= 3
    assert e.guards and e.compile_times


# ---- models with a print mid-forward keep most ops compiled -----------------------------------

from test_modules import CNN, MLP, Encoder  # noqa: E402


class Printing(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x):
        h = self.first(x)
        print("mid-forward", tuple(h.shape))
        return self.second(h)


def split_models():
    torch.manual_seed(0)
    mlp = MLP().eval()
    cnn = CNN().eval()
    enc = Encoder().eval()

    class EncHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.layers = enc.embed, enc.layers

        def forward(self, t):
            x = self.embed(t)
            for layer in self.layers:
                x = layer(x)
            return x

    class EncTail(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = enc.norm

        def forward(self, x):
            return self.norm(x).mean(1)

    return [
        ("mlp", mlp, Printing(nn.Sequential(mlp.fc1, mlp.act), nn.Sequential(mlp.drop, mlp.fc2)), torch.randn(4, 16)),
        ("cnn", cnn, Printing(cnn.features, nn.Sequential(cnn.pool, nn.Flatten(1), cnn.head)), torch.randn(2, 3, 16, 16)),
        ("encoder", enc, Printing(EncHead(), EncTail()), torch.randint(0, 50, (2, 7))),
    ]


@pytest.mark.parametrize("name", ["mlp", "cnn", "encoder"])
def test_models_with_print_keep_ops_compiled(name, capsys):
    for n, whole, printing, x in split_models():
        if n != name:
            continue
        with torch.no_grad():
            ref = ptgo.explain(whole)(x)
            e = ptgo.explain(printing)(x)
            capsys.readouterr()
            assert_same(e.out, whole(x))
        assert e.graph_break_count == 1, str(e)
        assert e.op_count >= 0.9 * ref.op_count, "%d of %d ops compiled\n%s" % (e.op_count, ref.op_count, e)


def test_break_with_call_being_set_up(capsys):
    import logging

    log = logging.getLogger("ptgo-test-user")

    def f(x):
        y = x * 2
        log.warning("mean %s", float(y.mean()))  # float() breaks while log.warning is being set up
        print(f"sum={y.sum():.3f}")  # formatting a tensor breaks inside print's arguments
        return y + 1

    x = torch.randn(4)
    run_both(f, [x], capsys)
    e = ptgo.explain(f)(x)
    capsys.readouterr()
    assert e.graph_count >= 2, str(e)


def test_frozen_stdlib_frames_are_not_captured(capsys):
    import os.path

    def f(x):
        name = os.path.basename("/a/b.txt")
        print(name)
        return x + len(name)

    e = ptgo.explain(f)(torch.randn(2))
    capsys.readouterr()
    assert all("frozen" not in b.user_stack for b in e.break_reasons), str(e)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_resume_arguments_never_share_a_name(backend):
    """A resume function's stack arguments (___stack0) are named apart from the code's own
    variables (a resume function resumed again has a ___stack0 of its own), and a graph's inputs
    are distinct parameter names (a local stack0 beside the stack's ___stack0)."""
    def twice(x0):
        v1 = x0.nonzero()  # break: __resume_at_… takes ___stack0
        v6 = v1.as_strided([1], [1])
        v9 = v1.nonzero()  # break again, inside the resume function
        v16 = v6.relu()
        if v16.max() > 0.5:
            v16 = v16 + 1
        return v16, v9

    def local_named_stack0(x0):
        stack0 = x0 * 2
        v1 = x0.nonzero()
        return v1.sum() + stack0

    for f in (twice, local_named_stack0):
        x = torch.tensor([0.0, 2.0, -1.0, 3.0])
        assert_same(ptgo.compile(f, backend=backend)(x), f(x))


class _AliasedConfig:
    """Hugging Face's PretrainedConfig pattern: __getattribute__ maps aliases through a class
    dict read with super().__getattribute__."""

    attribute_map = {"hidden": "hidden_size"}

    def __init__(self):
        self.hidden_size = 3

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)


class _SubConfig(_AliasedConfig):
    pass


@pytest.mark.parametrize("cls", [_AliasedConfig, _SubConfig])
def test_super_getattribute_in_an_override(cls):
    """super().__getattribute__ in a class that overrides __getattribute__ is object's: the
    code after a break used to rebuild it as self.__getattribute__, the override, which called
    itself until RecursionError ("ptgo BUG: cannot resolve torch.is_grad_enabled"; every
    transformers model hit it)."""
    cfg = cls()
    compiled = ptgo.compile(cls.__getattribute__)
    for key in ("hidden", "hidden_size", "attribute_map"):
        assert compiled(cfg, key) == cls.__getattribute__(cfg, key)
    with pytest.raises(AttributeError):
        compiled(cfg, "missing")


class _Scaled:
    def __init__(self, k):
        self.k = k

    def scale(self, x):
        return x * self.k


class _ScaledAfterBreak(_Scaled):
    def scale(self, x):
        y = x + 1
        print("break", tuple(y.shape))
        # zero-argument super() after the break: it reads the method's self from local slot 0
        return super().scale(y) + self.k


def test_zero_argument_super_after_a_break(capsys):
    obj = _ScaledAfterBreak(2.0)
    x = torch.randn(3)
    compiled = ptgo.compile(obj.scale)
    assert_same(compiled(x), obj.scale(x))
    assert_same(compiled(x), obj.scale(x))


def test_a_call_returning_thousands_of_tensors_breaks_the_graph(ptgo_log):
    # fuzz seed 22586: masked_select(...).unbind(0) of 90000 elements made a graph of 90000
    # getitems whose text alone ran the compiler out of memory; eager makes them in a moment
    ptgo.set_logs("graph_breaks")

    def f(x):
        v = torch.masked_select(x, x != 0)
        return v.unbind(0)[0] * 2, len(x.unbind(1))

    x = torch.randn(300, 300)
    assert ptgo.compile(f)(x) == f(x)
    assert "unbind returns 90000 tensors" in ptgo_log.text, ptgo_log.text
