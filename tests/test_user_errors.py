"""Mistakes in the user's call raise exactly what eager PyTorch raises.

A shape, dtype or device mistake, a wrong argument count, an index out of range, an op torch's
kernels do not implement for the dtype: the compiled call raises torch's own exception type and
message, with the user's line in the traceback, after exactly the side effects eager applies
before the failing op; the next call with correct inputs compiles normally. Never "ptgo BUG",
never ptgo.BackendCompilerFailed.
"""
import copy
import json
import sys
import traceback
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C
from conftest import assert_same

BACKENDS = ["counter", "eager", "aot_eager", "inductor"]


def compile_log():
    return json.loads(_C.request("compile_log", "{}")) or []


def compiled_frames():
    return sum(1 for r in compile_log() if r["compiled"])


# ---- modules --------------------------------------------------------------------------------

class MatView(nn.Module):
    """A matmul and a view, counting its calls (a side effect before either can fail)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 6))
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        y = x @ self.w
        return y.view(-1, 12)


class Cat(nn.Module):
    def forward(self, x, y):
        return torch.cat([x, y], 1) * 2


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x + 1, -1)


class Gelu(nn.Module):
    def forward(self, x):
        return F.gelu(x * 2)


class FloorDivMask(nn.Module):
    """Fuzz seed 11782: torch has no bool (or complex) kernel for a rounding division."""
    def forward(self, x):
        y = x.sin() if x.is_floating_point() else x
        return torch.div(y, 2 * y if y.is_complex() else y, rounding_mode="floor")


class Row(nn.Module):
    def forward(self, x):
        return x[5] + 1


class SumDim(nn.Module):
    def forward(self, x):
        return (x * 2).sum(4)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.full((4,), 2.0))

    def forward(self, x):
        return torch.relu(x) * self.scale


class Bucketize(nn.Module):
    """An op ptgo has no meta function for (torch's meta kernel decides)."""

    def forward(self, x, boundaries):
        return torch.bucketize(x * 2, boundaries) + 1


class CallsTooMany(nn.Module):
    """A module calling a submodule with one argument too many (a mistake in the code)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        h = x * 2
        return self.fc(h, h)


def seq():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))


def r(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device) if device == "cpu" else torch.empty(*shape, dtype=dtype,
                                                                                          device=device)


def ints(*shape):
    return torch.randint(0, 5, shape)


class Case:
    """kernel_dtype: whether eager rejects the call depends on the dtypes this torch's CPU kernels
    implement (torch 1.13 has no float16 matrix product or layer norm on CPU, torch 2 has): the
    expectation is what eager does in the running torch, an exception or a result."""

    def __init__(self, name, make, bad, good=None, kwargs=None, kernel_dtype=False):
        self.name, self.make, self.bad, self.good, self.kwargs = name, make, bad, good, kwargs or {}
        self.kernel_dtype = kernel_dtype

    def __repr__(self):
        return self.name


# (module kind and mistake, module, bad arguments, correct arguments or None for a mistake in code)
CASES = [
    Case("linear-last-dim", lambda: nn.Linear(4, 2), lambda: (r(3, 5),), lambda: (r(3, 4),)),
    Case("linear-float64-input", lambda: nn.Linear(4, 2), lambda: (r(3, 4, dtype=torch.float64),),
         lambda: (r(3, 4),)),
    Case("linear-int-input", lambda: nn.Linear(4, 2), lambda: (ints(3, 4),), lambda: (r(3, 4),)),
    # torch 1.13 has no float16 matrix product or layer norm on CPU (torch 2 has): no correct call
    # to follow.
    Case("linear-float16-cpu", lambda: nn.Linear(4, 2).half(), lambda: (r(3, 4, dtype=torch.float16),),
         kernel_dtype=True),
    Case("linear-too-many-args", lambda: nn.Linear(4, 2), lambda: (r(3, 4), r(3, 4)), lambda: (r(3, 4),)),
    Case("linear-unexpected-keyword", lambda: nn.Linear(4, 2), lambda: (r(3, 4),), lambda: (r(3, 4),),
         kwargs={"bias": True}),
    Case("conv2d-channels", lambda: nn.Conv2d(3, 4, 3), lambda: (r(1, 2, 8, 8),), lambda: (r(1, 3, 8, 8),)),
    Case("conv2d-ndim", lambda: nn.Conv2d(3, 4, 3), lambda: (r(8, 8),), lambda: (r(1, 3, 8, 8),)),
    Case("conv2d-float64-input", lambda: nn.Conv2d(3, 4, 3), lambda: (r(1, 3, 8, 8, dtype=torch.float64),),
         lambda: (r(2, 3, 8, 8),)),
    Case("layernorm-last-dim", lambda: nn.LayerNorm(4), lambda: (r(3, 5),), lambda: (r(3, 4),)),
    Case("layernorm-int-input", lambda: nn.LayerNorm(4), lambda: (ints(3, 4),), lambda: (r(3, 4),)),
    Case("layernorm-float16-cpu", lambda: nn.LayerNorm(4).half(), lambda: (r(3, 4, dtype=torch.float16),),
         kernel_dtype=True),
    Case("layernorm-meta-device", lambda: nn.LayerNorm(4), lambda: (r(3, 4, device="meta"),),
         lambda: (r(3, 4),)),
    Case("embedding-float-indices", lambda: nn.Embedding(10, 3), lambda: (r(4),), lambda: (ints(4),)),
    Case("batchnorm2d-channels", lambda: nn.BatchNorm2d(3), lambda: (r(2, 4, 5, 5),), lambda: (r(2, 3, 5, 5),)),
    Case("batchnorm2d-ndim", lambda: nn.BatchNorm2d(3), lambda: (r(2, 3, 5),), lambda: (r(2, 3, 5, 5),)),
    Case("batchnorm2d-eval-channels", lambda: nn.BatchNorm2d(3).eval(), lambda: (r(2, 4, 5, 5),),
         lambda: (r(2, 3, 5, 5),)),
    Case("sequential-last-dim", seq, lambda: (r(1, 3, 7, 7),), lambda: (r(1, 3, 6, 6),)),
    Case("sequential-channels", seq, lambda: (r(1, 1, 6, 6),), lambda: (r(2, 3, 6, 6),)),
    Case("custom-matmul", MatView, lambda: (r(3, 5),), lambda: (r(2, 4),)),
    Case("custom-view", MatView, lambda: (r(3, 4),), lambda: (r(2, 4),)),
    Case("custom-cat", Cat, lambda: (r(2, 3), r(3, 3)), lambda: (r(2, 3), r(2, 4))),
    Case("custom-int-softmax", Softmax, lambda: (ints(3, 4),), lambda: (r(3, 4),)),
    Case("custom-int-gelu", Gelu, lambda: (ints(3, 4),), lambda: (r(3, 4),)),
    Case("custom-bool-floor-division", FloorDivMask, lambda: (r(5, 4) > 0,), lambda: (r(5, 4),)),
    Case("custom-complex-floor-division", FloorDivMask, lambda: (r(5, 4, dtype=torch.complex64),), lambda: (r(5, 4),)),
    Case("custom-index-out-of-range", Row, lambda: (r(3, 4),), lambda: (r(6, 4),)),
    Case("custom-dim-out-of-range", SumDim, lambda: (r(3, 4),), lambda: (r(1, 2, 3, 4, 5),)),
    Case("custom-meta-device", Scaled, lambda: (r(3, 4, device="meta"),), lambda: (r(3, 4),)),
    Case("custom-no-meta-op", Bucketize, lambda: (r(5), r(2, 2)), lambda: (r(5), torch.arange(3.0))),
    Case("custom-submodule-too-many-args", CallsTooMany, lambda: (r(3, 4),)),
    # torch 2 rejects a group norm with no elements per channel or no channels (1.13 normalizes
    # it to an empty result): like kernel_dtype, the expectation is what the running torch does
    Case("groupnorm-empty-spatial", lambda: nn.GroupNorm(2, 4), lambda: (r(2, 4, 0),), lambda: (r(2, 4, 3),),
         kernel_dtype=True),
    Case("groupnorm-no-channels", lambda: nn.GroupNorm(2, 0), lambda: (r(2, 0, 3),), kernel_dtype=True),
]


def _eager_accepts(mod, args, kwargs):
    try:
        copy.deepcopy(mod)(*args, **kwargs)
    except Exception:  # noqa: BLE001 - any rejection: the expectation is that exception
        return False
    return True


def eager_error(fn, args, kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.value


def state(m):
    """The module's parameters, buffers and plain attributes (copies)."""
    sd = {k: v.detach().clone() for k, v in m.state_dict().items()}
    attrs = {k: v for k, v in vars(m).items() if isinstance(v, (int, float, str, bool))}
    return sd, attrs


def assert_same_state(got, want):
    sd_got, attrs_got = got
    sd_want, attrs_want = want
    assert sorted(sd_got) == sorted(sd_want)
    for k in sd_want:
        assert_same(sd_got[k], sd_want[k], k)
    assert attrs_got == attrs_want


def backend_of(name, counter):
    return counter if name == "counter" else name


def raises_like_eager(compiled, args, kwargs, expected):
    """Calls compiled(*args, **kwargs) and checks it raises exactly what eager raised, with this
    file's calling line in the traceback."""
    with pytest.raises(Exception) as info:
        line = sys._getframe().f_lineno + 1
        compiled(*args, **kwargs)
    got = info.value
    assert type(got) is type(expected), "%s: %s, eager raised %s: %s" % (
        type(got).__name__, got, type(expected).__name__, expected)
    assert str(got) == str(expected)
    assert not isinstance(got, ptgo.PtgoError)
    frames = traceback.extract_tb(info.tb)
    assert any(f.filename == __file__ and f.lineno == line for f in frames), traceback.format_tb(info.tb)
    assert "ptgo BUG" not in "".join(traceback.format_exception(got))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", CASES, ids=repr)
def test_mistake_raises_like_eager(case, backend, counter):
    torch.manual_seed(0)
    eager_mod = case.make()
    mod = copy.deepcopy(eager_mod)
    torch.manual_seed(1)
    bad = case.bad()
    compiled = ptgo.compile(mod, backend=backend_of(backend, counter))
    if case.kernel_dtype and _eager_accepts(eager_mod, bad, case.kwargs):
        # This torch implements the kernel: the call is no mistake here, and the compiled call
        # gives eager's result (dtype included) from a compiled graph.
        frames_before = compiled_frames()
        want = eager_mod(*bad, **case.kwargs)
        got = compiled(*bad, **case.kwargs)
        assert_same(got, want)
        assert_same_state(state(mod), state(eager_mod))
        assert compiled_frames() > frames_before
        if backend == "counter":
            assert counter.frame_count == 1
        return
    expected = eager_error(eager_mod, bad, case.kwargs)
    assert not isinstance(expected, ptgo.PtgoError)

    raises_like_eager(compiled, bad, case.kwargs, expected)
    # Eager's side effects before the failing op (BatchNorm's num_batches_tracked, MatView.calls),
    # no others.
    assert_same_state(state(mod), state(eager_mod))

    if case.good is None:
        return
    good = case.good()
    frames_before, graphs_before = compiled_frames(), counter.frame_count
    want = eager_mod(*good)
    got = compiled(*good)
    assert_same(got, want)
    assert_same_state(state(mod), state(eager_mod))
    # The correct call compiled (the bad input's metadata is guarded, it does not run eagerly).
    assert compiled_frames() > frames_before
    if backend == "counter":
        assert counter.frame_count > graphs_before


FULLGRAPH_CASES = [c for c in CASES if c.name in (
    "linear-last-dim", "layernorm-int-input", "batchnorm2d-ndim", "custom-cat", "custom-int-gelu",
    "sequential-last-dim", "custom-index-out-of-range")]


@pytest.mark.parametrize("case", FULLGRAPH_CASES, ids=repr)
def test_fullgraph_raises_torchs_exception(case, counter):
    torch.manual_seed(0)
    eager_mod = case.make()
    mod = copy.deepcopy(eager_mod)
    bad = case.bad()
    expected = eager_error(eager_mod, bad, case.kwargs)
    compiled = ptgo.compile(mod, backend=counter, fullgraph=True)
    raises_like_eager(compiled, bad, case.kwargs, expected)
    assert_same_state(state(mod), state(eager_mod))
    good = case.good()
    assert_same(compiled(*good), eager_mod(*good))
    assert counter.frame_count >= 1


# ---- side effects before the failing op -----------------------------------------------------

log = []
W = torch.randn(4, 2)


def helper(y):
    log.append("helper")
    return y @ W


def appends_then_fails(x):
    log.append(1)
    y = x.sin()
    z = y @ W
    log.append(2)
    return z + 1


def appends_then_fails_in_helper(x):
    log.append(1)
    z = helper(x.cos())
    log.append(2)
    return z


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [appends_then_fails, appends_then_fails_in_helper], ids=lambda f: f.__name__)
def test_side_effects_before_the_failing_op(fn, backend, counter):
    bad, good = torch.randn(3, 5), torch.randn(3, 4)
    log.clear()
    expected = eager_error(fn, (bad,), {})
    eager_log = list(log)
    assert eager_log[0] == 1 and 2 not in eager_log
    want = fn(good)
    eager_log_after = list(log)

    log.clear()
    compiled = ptgo.compile(fn, backend=backend_of(backend, counter))
    raises_like_eager(compiled, (bad,), {}, expected)
    assert log == eager_log
    got = compiled(good)
    assert_same(got, want)
    assert log == eager_log_after
    if backend == "counter":
        assert counter.frame_count >= 1


# ---- a meta function stricter than torch --------------------------------------------------

def sin_twice(x):
    return torch.sin(x) * 2


@pytest.mark.parametrize("fullgraph", [False, True])
def test_stricter_meta_runs_eagerly(fullgraph, counter):
    """If ptgo's meta function rejects a call torch accepts (a meta bug), the call runs eagerly
    and succeeds: the meta's error never reaches the user."""
    x = torch.randn(3, 4)
    _C.request("meta_rejects", json.dumps({"targets": ["torch.sin"]}))
    try:
        got = ptgo.compile(sin_twice, backend=counter, fullgraph=fullgraph)(x)
    finally:
        _C.request("meta_rejects", json.dumps({"targets": []}))
    assert_same(got, sin_twice(x))
    assert counter.frame_count == 0
    # The rejection was seen (the test exercised the stricter meta) and the frame ran eagerly.
    rec = [r for r in compile_log() if r["function"] == "sin_twice"]
    assert rec and not rec[-1]["compiled"]
    assert "rejects the call" in rec[-1]["break_reason"]
    ptgo.reset()
    assert_same(ptgo.compile(sin_twice, backend=counter)(x), sin_twice(x))
    assert counter.frame_count == 1


def test_meta_stricter_than_torch_today(counter):
    """pairwise_distance on integer tensors: torch computes it, ptgo's meta rejects it today
    (it checks vector_norm's float-only rule). The result must still be eager's."""
    a, b = torch.randint(0, 5, (3, 4)), torch.randint(0, 5, (3, 4))
    f = lambda a, b: F.pairwise_distance(a, b) + 1  # noqa: E731
    assert_same(ptgo.compile(f, backend=counter)(a, b), f(a, b))


# ---- errors only the data shows (run time) ----------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_embedding_index_out_of_range(backend, counter):
    """An index out of range is in the data, not the metadata: the compiled graph raises it when
    it runs. The exception type and message are torch's for every backend."""
    torch.manual_seed(0)
    eager_mod = nn.Embedding(10, 3)
    mod = copy.deepcopy(eager_mod)
    bad, good = torch.tensor([1, 12]), torch.tensor([1, 9])
    expected = eager_error(eager_mod, (bad,), {})
    compiled = ptgo.compile(mod, backend=backend_of(backend, counter))
    raises_like_eager(compiled, (bad,), {}, expected)
    assert_same(compiled(good), eager_mod(good))


def test_unsupported_break_message_is_not_a_bug(ptgo_log):
    """A graph break right after reading a parameter (no graph op before it) keeps the parameter
    on the stack: it is reloaded from its module, never reported as a ptgo bug."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))

        def forward(self, x):
            w = self.w
            print(end="")
            return x * w

    ptgo.set_logs(graph_breaks=True)
    m = M()
    x = torch.randn(3)
    assert_same(ptgo.compile(m, backend="eager")(x), m(x))
    assert "ptgo BUG" not in ptgo_log.text
    assert "Graph break" in ptgo_log.text


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_with_a_tensor_made_inside(backend):
    """Fuzz seed 1928: x[torch.tensor([2])] (the index made by torch.tensor inside the graph, a
    torch fallback without effects) out of range in a training graph: the graph is rerun with
    torch, which raises its own message, not ptgo's 'index out of range in ptgo kernel'."""
    import torch.nn as nn

    lin = nn.Linear(1, 4)

    def f(x):
        return lin(x[torch.tensor([2])])

    compiled = ptgo.compile(f, backend=backend)
    compiled(torch.randn(3))
    with pytest.raises(IndexError) as want:
        f(torch.randn(2))
    with pytest.raises(IndexError) as got:
        compiled(torch.randn(2))
    assert str(got.value) == str(want.value)


def _sum_rows(x):
    return x.sum(0, keepdim=True)[torch.tensor([2])]  # [1, 3] indexed along its size-1 dim


def _plus_one(x):
    return (x + 1)[torch.tensor([2])]


def _empty_select(x):
    return x.index_select(0, torch.tensor([0])) + 1


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("fn,shape", [(_sum_rows, (5, 3)), (_plus_one, (1, 3)), (_empty_select, (0, 3))],
                         ids=["reduced", "pointwise", "empty"])
def test_index_out_of_range_along_a_dim_of_size_1_or_0_raises_as_eager(backend, fn, shape):
    """Fuzz seeds 8771, 9866, 4347: an indirect index along a dim of size 1 was dropped (the dim
    reads index 0, and inlining or keeping the indexed buffer in a C variable skipped the index),
    so an out-of-range index returned data where eager raises; along an empty dim the range
    check's element 0 was read from torch's null data pointer (a segfault)."""
    x = torch.randn(*shape)
    with pytest.raises((IndexError, RuntimeError)) as want:  # (empty: RuntimeError)
        fn(x)
    with pytest.raises((IndexError, RuntimeError)) as got:
        ptgo.compile(fn, backend=backend)(x)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_logaddexp_of_a_bool_tensor_raises_in_backward_as_eager(backend):
    """Fuzz seed 5480: eager's logaddexp backward computes other - self, which raises for a bool
    operand; the decomposition promoted the bool and its backward succeeded."""
    def f(x):
        return torch.logaddexp(x < 0.5, x)

    x = torch.rand(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError) as want:
        f(x).sum().backward()
    with pytest.raises(RuntimeError) as got:
        ptgo.compile(f, backend=backend)(x).sum().backward()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("rows", [2, 0])
@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_remainder_of_a_number_by_an_empty_tensor_raises_in_backward_as_eager(backend, rows):
    """Fuzz seed 35222: `1e10 % bn(x)` of a batch of 0: torch has no derivative for a number's
    remainder by a tensor, and the rule for empty results (a clone, differentiable) made the
    backward succeed where eager's raises."""
    bn = nn.BatchNorm1d(3, track_running_stats=False)

    def f(x):
        return 1e10 % bn(x)

    compiled = ptgo.compile(f, backend=backend)
    x = torch.randn(rows, 3)
    expected = eager_error(lambda x: f(x).sum().backward(), (x,), {})
    raises_like_eager(lambda x: compiled(x).sum().backward(), (x,), {}, expected)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_inplace_write_to_an_unbind_output_raises_as_eager(backend):
    """Fuzz seed 35787: an in-place op on one of unbind's outputs, which require grad: autograd
    refuses the write itself ("... is the output of a function that returns multiple views"),
    whatever the values; the probe's forward on dummy data met it and took it for the data's
    fault, and the compiled region returned a result. Now the region runs with torch."""
    lin = nn.Linear(5, 8)

    def f(x):
        v = F.gelu(lin(x), approximate="tanh").unbind(-1)[0]
        v.sigmoid_()
        return v

    x = torch.randn(4, 5)
    raises_like_eager(ptgo.compile(f, backend=backend), (x,), {}, eager_error(f, (x,), {}))
    with torch.no_grad():  # without autograd the write is allowed
        assert_same(ptgo.compile(f, backend=backend)(x), f(x))


def test_a_torch_error_inside_a_compiled_graph_has_no_cpp_backtrace():
    """Fuzz seed 3454: an extern step of a compiled graph (as_strided of an empty selection)
    raised c10::Error, which the C++ runtime turned into a RuntimeError carrying the C++
    backtrace; torch's own translation gives eager's message and type."""
    def f(x):
        v = (x * 2)[x > 5]
        return v.as_strided([1], [1])

    x = torch.zeros(4, 4)
    with pytest.raises(RuntimeError) as want:
        f(x)
    with pytest.raises(RuntimeError) as got:
        ptgo.compile(f, backend="inductor")(x)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_a_resumed_region_has_no_backward_edge_to_an_unused_input(backend):
    """Fuzz seed 4406: a frame resumed after a graph break takes v1 (whose grad_fn is torch's
    NotImplemented node of floor_divide_) as an input it never uses; the compiled region's
    autograd Function had an edge to it, so the backward of the region's output ran that node
    and raised "derivative for aten::floor_divide_ is not implemented", which eager never
    reaches."""
    import torch.nn as nn

    lin = nn.Linear(1, 3)

    def f(x):
        v1 = x * 2
        v1.floor_divide_(x + 3)
        if v1.mean() < 100:  # a graph break: the rest resumes with v1 live
            pass
        out = lin(torch.ones(1))
        return out, v1

    x = torch.randn(4, requires_grad=True)
    f(x)[0].sum().backward()  # eager: fine
    out, _ = ptgo.compile(f, backend=backend)(x)
    out.sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_in_a_graph_with_torch_take_raises_as_eager(backend):
    """Fuzz seed 7407: torch.take was unknown to the registry, so its graph counted as one
    that may write or draw (an unknown call has every effect) and a later x[idx] out of range
    raised ptgo's 'index out of range in ptgo kernel' instead of torch's message; the registry
    now knows take (a torch call that writes nothing and draws nothing)."""
    def f(x, i):
        t = torch.take(x * 2, i)
        return x[t.long().abs() % 3], t

    x = torch.tensor([[1.0, 2.0, 1.0]])
    i = torch.tensor([0, 1, 2])
    with pytest.raises(IndexError) as want:
        f(x, i)
    with pytest.raises(IndexError) as got:
        ptgo.compile(f, backend=backend)(x, i)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_in_a_graph_that_writes_its_own_tensor_raises_as_eager(backend):
    """Fuzz seeds 8771, 4347: v[0] = 7 writes a tensor the graph computed (std's result), which a
    rerun with torch computes again from scratch, so the graph may still be rerun when a kernel
    finds an index out of range: torch's message, not 'index out of range in ptgo kernel'."""
    def f(x):
        v = x.std(0)
        v[0] = 7
        return (v - x.narrow(-2, 0, 1))[torch.tensor([2])]

    x = torch.randn(5, 3, requires_grad=True)
    with pytest.raises(IndexError) as want:
        f(x)
    with pytest.raises(IndexError) as got:
        ptgo.compile(f, backend=backend)(x)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_index_out_of_range_along_an_expanded_dim_raises(backend):
    """x[idx] along a dim of stride 0 reads the same address for every index, so the index drops
    out of the address; its range check must not (fuzz seed 11463: an index 4 of 4 rows
    returned values)."""
    def fn(x):
        return torch.nn.functional.threshold(x, 0.1, 20.0)[torch.tensor([1, 1, 4])]

    x = torch.randint(0, 4, (1, 1, 5), dtype=torch.int32).expand(4, 1, 5)
    with pytest.raises(IndexError) as want:
        fn(x)
    with pytest.raises(IndexError) as got:
        ptgo.compile(fn, backend=backend)(x)
    assert str(got.value) == str(want.value)
    ok = torch.randint(0, 4, (1, 1, 5), dtype=torch.int32).expand(5, 1, 5)
    assert torch.equal(ptgo.compile(fn, backend=backend)(ok), fn(ok))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_in_a_region_that_draws_raises_as_eager(backend):
    """Fuzz seed 15623: an embedding index out of range in a training region that also draws
    random numbers (randperm) could not be rerun with torch (the rerun would draw again), so
    ptgo's index message showed instead of embedding's. The region writes nothing: its wrapper
    puts torch's generator back where the forward found it and reruns, drawing eager's numbers."""
    import torch.nn as nn

    emb = nn.Embedding(5, 4)

    def f():
        return emb(torch.randperm(6).abs() % 6)

    torch.manual_seed(3)
    with pytest.raises(IndexError) as want:
        f()
    after_eager = torch.rand(3)
    torch.manual_seed(3)
    with pytest.raises(IndexError) as got:
        ptgo.compile(f, backend=backend)()
    assert str(got.value) == str(want.value)
    assert torch.equal(torch.rand(3), after_eager)  # the random stream is eager's too


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_in_a_region_that_writes_raises_as_eager(backend):
    """Fuzz seed 16808: an embedding index out of range in a training region that also updates
    a BatchNorm's running statistics gave ptgo's index message: the region writes, so it was
    not rerun with torch. Its writes are its epilogue's alone: the wrapper writes the values
    before the failed forward back (versions untouched) and reruns, so eager's exception shows
    and the statistics are eager's (updated once, before the embedding fails)."""
    import torch.nn as nn

    torch.manual_seed(0)
    bn, emb = nn.BatchNorm1d(4), nn.Embedding(3, 2)
    bn_ref = nn.BatchNorm1d(4)

    def make_f(bn):
        def f(x, idx):
            return bn(x).sum() + emb(idx).sum()
        return f

    x = torch.randn(5, 4, requires_grad=True)
    idx = torch.tensor([0, 2, 5])
    with pytest.raises(IndexError) as want:
        make_f(bn_ref)(x, idx)
    with pytest.raises(IndexError) as got:
        ptgo.compile(make_f(bn), backend=backend)(x, idx)
    assert str(got.value) == str(want.value)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert torch.equal(getattr(bn, name), getattr(bn_ref, name)), name
        assert getattr(bn, name)._version == getattr(bn_ref, name)._version, name


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_beside_a_function_the_registry_lacks_raises_as_eager(backend):
    """Fuzz seed 24668: torch.sinc is not in ptgo's registry (torch's meta kernel gives its
    result), so its graph counted as one that may write and draw, could not be rerun with torch
    and raised ptgo's index message. What such a function does besides computing is read from
    the running torch's schemas (_runtime.schema_effects): sinc writes nothing and draws
    nothing, so the graph is rerun and eager's message shows."""
    def f(x, n):
        return torch.sinc(n), x.index_select(-1, torch.tensor([9]))

    n = torch.full([], 3)
    with pytest.raises(IndexError) as want:
        f(torch.ones(8), n)
    c = ptgo.compile(f, backend=backend)
    for size in (8, 6):  # a static graph, then a symbolic one
        with pytest.raises(IndexError) as got:
            c(torch.ones(size), n)
        assert str(got.value) == str(want.value)
    ok = torch.ones(12)
    assert all(torch.equal(a, b) for a, b in zip(c(ok, n), f(ok, n)))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("loss", ["mse_loss", "huber_loss", "l1_loss"])
@pytest.mark.parametrize("target", [torch.float64, torch.bool, torch.int64])
def test_backward_eager_refuses_for_mixed_dtypes_raises_as_eager(backend, loss, target):
    """Fuzz seed 21084: a float32 prediction against a float64 target (a target from numpy):
    torch 1.13's mse_loss backward and both torches' huber_loss backward raise "Found dtype
    Double but expected Float", where ptgo's derivatives gave gradients; seed 37984: a bool
    target ("Found dtype Bool but expected Float"). The tracer asks torch whether the backward of
    a call mixing dtypes accepts it (backward_probe); one that does not runs with torch."""
    import torch.nn.functional as F

    fn = getattr(F, loss)

    def f(x, t):
        return fn(x * 2, t)

    def run(g):
        x = torch.ones(8, 1, requires_grad=True)
        t = torch.zeros((), dtype=target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the broadcast target's UserWarning
            out = g(x, t)
        try:
            out.backward()
        except RuntimeError as e:
            return out, None, str(e)
        return out, x.grad, None

    try:
        want, want_grad, want_err = run(f)
    except RuntimeError as e:  # a forward eager refuses (huber_loss of an integer target)
        with pytest.raises(RuntimeError) as got:
            run(ptgo.compile(f, backend=backend))
        assert str(got.value) == str(e)
        return
    got, got_grad, got_err = run(ptgo.compile(f, backend=backend))
    assert got_err == want_err
    assert got.dtype == want.dtype and torch.allclose(got, want)
    if want_grad is not None:
        assert torch.allclose(got_grad, want_grad)


def test_schema_effects_of_functions_the_registry_lacks():
    """What ptgo reads from torch's schemas for a function it has no entry for: writes (an
    in-place method, out=), draws (tagged nondeterministic_seeded, or a Generator argument),
    and always 'may raise'; a Python function is not read (None: every effect)."""
    from ptgo import _runtime

    writes, draws, raises = 1, 2, 4
    assert _runtime.schema_effects("torch.sinc", False) == (raises, ["out"])
    assert _runtime.schema_effects("torch.randperm", False)[0] == draws | raises
    assert _runtime.schema_effects("torch.dropout", False)[0] == draws | raises  # no Generator: the tag
    assert _runtime.schema_effects("index_put_", True)[0] == writes | raises
    assert _runtime.schema_effects("torch.nn.functional.dropout", False) is None
    assert _runtime.schema_effects("split", True) is None  # Tensor.split is Python code


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_batchnorm_of_no_channels_raises_as_eager(backend):
    """Fuzz seeds 15055, 17262: BatchNorm1d(0) takes weight[0] of its empty weight."""
    import torch.nn as nn

    bn = nn.BatchNorm1d(0).eval()
    x = torch.randn(2, 0)
    with pytest.raises(IndexError) as want:
        bn(x)
    with pytest.raises(IndexError) as got:
        ptgo.compile(bn, backend=backend)(x)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_masked_fill_of_a_number_an_int_tensor_cannot_hold_raises_as_eager(backend):
    """Fuzz seed 23192: inf (or 1e20) into an int32 tensor overflows in c10's checked
    conversion; a float that fits (3.7) is truncated."""
    def f(x, v):
        x.masked_fill_(x < 1, v)
        return x

    for v in (float("inf"), 1e20):
        x = torch.zeros(3, dtype=torch.int32)
        with pytest.raises(RuntimeError) as want:
            f(x.clone(), v)
        ptgo.reset()
        with pytest.raises(RuntimeError) as got:
            ptgo.compile(f, backend=backend)(x.clone(), v)
        assert str(got.value) == str(want.value)
    x = torch.zeros(3, dtype=torch.int32)
    assert_same(ptgo.compile(f, backend=backend)(x.clone(), 3.7), f(x.clone(), 3.7))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_clamp_of_a_bool_tensor_by_a_number_raises_as_eager(backend):
    """Fuzz seed 24652: a number bound takes clamp's scalar kernels, which have no bool
    implementation (1.13 raises RuntimeError, 2.14 NotImplementedError, with other kernel
    names); a tensor bound passes."""
    b = torch.tensor([True, False])
    fails = [lambda t: t.clamp_min(False), lambda t: t.clamp_max(True), lambda t: t.clamp(False, True),
             lambda t: torch.clamp(t, min=False), lambda t: t.clone().clamp_min_(False)]
    for f in fails:
        with pytest.raises(Exception) as want:
            f(b)
        ptgo.reset()
        with pytest.raises(Exception) as got:
            ptgo.compile(f, backend=backend)(b)
        assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    for f in (lambda t: t.clamp_min(torch.tensor(False)), lambda t: t.clamp_min(0)):
        ptgo.reset()
        assert_same(ptgo.compile(f, backend=backend)(b), f(b))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_addcdiv_by_an_integer_tensor_raises_in_backward_as_eager(backend):
    """Fuzz seed 24989: addcdiv's derivative for tensor1 divides into an integer tensor2's
    dtype: eager's backward raises; the forward and a backward to self alone pass."""
    i = torch.tensor([1, 2, 3, 4])

    def f(x, y):
        return torch.addcdiv(x, y, i, value=0.5)

    for grads in ((False, True), (True, True), (True, False)):
        args = [torch.randn(4, requires_grad=g) for g in grads]
        try:
            f(*args).sum().backward()
            want = None
        except RuntimeError as e:
            want = str(e)
        ptgo.reset()
        args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
        try:
            ptgo.compile(f, backend=backend)(*args).sum().backward()
            got = None
        except RuntimeError as e:
            got = str(e)
        assert got == want, grads


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_write_over_the_same_memory_with_other_strides_raises_as_eager(backend):
    """Fuzz seed 24663: torch calls two views of the same memory FULL overlap only when their
    strides are equal; x.copy_(x.t()), and v[:, ::2] of a [3, 1] v (another stride for the
    size-1 dim), are PARTIAL: eager refuses the write."""
    def f(x):
        y = x * 1
        y.copy_(y.t())
        return y

    def g(x):
        v = (x * 2).trunc()
        v[:, ::2].floor_divide_(v)
        return v

    for fn, x in ((f, torch.randn(3, 3)), (g, torch.randn(3, 1))):
        with pytest.raises(RuntimeError) as want:
            fn(x)
        ptgo.reset()
        with pytest.raises(RuntimeError) as got:
            ptgo.compile(fn, backend=backend)(x)
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_function_the_registry_lacks_rejects_a_dtype_after_a_write_as_eager(backend):
    """Fuzz seed 25774: torch.gcd is not in ptgo's registry and its meta kernel takes a float
    operand, which its CPU kernel refuses; the graph compiled, and its failed run happened before
    random_ wrote the input, where eager raises after the write. Every call to a function the
    registry lacks is tried on torch's CPU kernel while tracing: the graph breaks before gcd,
    the write happens, and eager's exception follows."""
    def f(x):
        x.random_(0, 5)
        return torch.gcd(torch.arange(6), x)

    torch.manual_seed(0)
    xe = torch.tensor(1.5)
    with pytest.raises(Exception) as want:
        f(xe)
    torch.manual_seed(0)
    xc = torch.tensor(1.5)
    with pytest.raises(Exception) as got:
        ptgo.compile(f, backend=backend)(xc)
    assert type(got.value) is type(want.value) and str(got.value) == str(want.value)
    assert torch.equal(xc, xe)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_index_out_of_range_in_a_graph_that_writes_an_input_raises_as_eager(backend):
    """Fuzz seed 31954: x0[:, 0] = True writes the caller's tensor, so a kernel's failed run could
    not be handed to torch and x0[torch.tensor([0, 1, 0])] raised ptgo's 'index out of range in
    ptgo kernel'. The index is now checked before any write (a prims.check, A204): torch's run
    writes x0 and raises eager's message, and x0 holds what eager leaves in it."""
    def f(x0, w):
        x0[:, 0] = True
        w.mul_(2)
        return x0[torch.tensor([0, 1, 0])] * w[0]

    def run(fn, rows):
        x0, w = torch.zeros(rows, 1, dtype=torch.float64), torch.ones(rows, 1, dtype=torch.float64)
        try:
            out = fn(x0, w)
        except IndexError as e:
            return str(e), x0, w, w._version
        return out, x0, w, w._version

    compiled = ptgo.compile(f, backend=backend)
    got, want = run(compiled, 1), run(f, 1)
    assert isinstance(want[0], str) and got[0] == want[0]
    for a, b in zip(got[1:], want[1:]):
        assert_same(a, b)
    got, want = run(compiled, 2), run(f, 2)  # in range: the compiled graph's values
    for a, b in zip(got, want):
        assert_same(a, b)


def test_embedding_index_out_of_range_in_a_graph_that_draws_raises_as_eager():
    """A graph that draws random numbers (dropout) and looks up an embedding row out of range:
    the index check runs before the draw, torch's run raises eager's message and leaves the
    random generator where eager leaves it."""
    emb = torch.nn.Embedding(4, 3)

    def f(ids, x):
        noise = torch.nn.functional.dropout(x, 0.5)
        return emb(ids) + noise

    def run(fn, ids):
        torch.manual_seed(0)
        try:
            out = fn(ids, torch.ones(2, 3))
        except IndexError as e:
            out = str(e)
        return out, torch.rand(2)

    bad, good = torch.tensor([1, 4]), torch.tensor([1, 3])
    compiled = ptgo.compile(f)
    got, want = run(compiled, bad), run(f, bad)
    assert isinstance(want[0], str) and got[0] == want[0] and torch.equal(got[1], want[1])
    got, want = run(compiled, good), run(f, good)
    assert_same(got[0], want[0])
    assert torch.equal(got[1], want[1])


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
@pytest.mark.parametrize("use", ["returned", "used"])
def test_a_multi_view_output_whose_base_was_written_raises_as_eager(backend, use):
    """Fuzz seed 42844: v2 = v1.chunk(2, 0)[0], then v1.lerp_(x): autograd refuses to rebuild
    v2's grad_fn ("... is the output of a function that returns multiple views"), in eager at the
    first use that needs it: the backward of a returned v2, or an op on v2 in the forward. The
    probe met the error reading the outputs' grad_fn, took the failure for its own and answered
    nothing, and the compiled region returned a v2 whose backward succeeded."""
    def f(x):
        v1 = torch.randn_like(x)
        v2 = v1.chunk(2, 0)[0]
        v1.lerp_(x, 0.5)
        return (v1, v2) if use == "returned" else (v1, v2 * 3)

    def step(x):
        torch.manual_seed(0)
        return f(x)[1].sum().backward()

    def compiled_step(x):
        torch.manual_seed(0)
        return compiled(x)[1].sum().backward()

    compiled = ptgo.compile(f, backend=backend)
    x = torch.rand(4, 8).requires_grad_() * 1
    raises_like_eager(compiled_step, (x,), {}, eager_error(step, (x,), {}))
    with torch.no_grad():  # nothing records autograd: no refusal
        torch.manual_seed(0)
        want = f(x)
        torch.manual_seed(0)
        assert_same(compiled(x), want)
