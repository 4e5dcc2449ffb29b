"""The backend entry point (torch.compile(m, backend="ptgo")) on torch.fx graphs, in any torch.

torch 1.13 has no torch.compile: the GraphModules here come from ptgo's own capture (a custom
backend hands them to ``ptgo.backends.torch_entry_point``) or are built node by node with
torch.fx's Graph API. The entry point must compile them with ptgo's C backend (checked through
``inductor_stats``: its "fx" counter and the same compiled/fallback counts ptgo.compile's own
path gets on the same model), return what ``gm.forward`` returns, and fall back to
``gm.forward`` — named on perf_hints — for what it cannot take. tests/test_torch_compile.py
runs the real torch.compile on torch 2.
"""
import json
import operator
import os
import sys

import pytest
import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C, _runtime
from ptgo.backends import torch_entry_point
from ptgo.fx_import import graph_json
from conftest import assert_same, clone_args

sys.path.append(os.path.join(os.path.dirname(__file__), "..", "bench"))
from models import WORKLOADS  # noqa: E402
from test_modules import CNN, MLP, Encoder  # noqa: E402


def stats():
    _runtime.ensure_initialized()
    return json.loads(_C.request("inductor_stats", "{}"))


def fx_import_text(text, grad_enabled=False):
    """{"graph": text} of what pipeline.ImportFX makes of fx_import's JSON, or {"unsupported": why}."""
    _runtime.ensure_initialized()
    return json.loads(_C.request("fx_import", json.dumps({"graph": text, "grad_enabled": grad_enabled})))


def assert_grad_close(got, want, path):
    """Gradients: dtype, shape and values; float32 gradients are sums over the batch that the
    compiled backward's products accumulate in another order, so 1e-4 rather than 1.3e-6."""
    assert got.dtype == want.dtype and got.shape == want.shape, path
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4, msg=lambda m: "%s: %s" % (path, m))


def delta(before, after):
    return {k: after[k] - before[k] for k in ("compiled", "autograd", "fx", "fallbacks")}


class EntryBackend:
    """A custom backend that keeps each GraphModule and hands it to the entry point."""

    def __init__(self):
        self.graphs, self.examples, self.results = [], [], []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        self.examples.append(list(example_inputs))
        fn = torch_entry_point(gm, example_inputs)
        self.results.append(fn)
        return fn

    def ran_torch(self, i=-1):
        """Whether the entry point gave back gm.forward (the graph runs with torch)."""
        fn = self.results[i]
        return getattr(fn, "__self__", None) is self.graphs[i] and getattr(fn, "__name__", "") == "forward"


def run_model(model, args, grad, backend="inductor", calls=2):
    """Compiled vs eager over `calls` calls (inputs shifted per call); grads too when grad."""
    ctx = torch.enable_grad() if grad else torch.no_grad()
    compiled = ptgo.compile(model, backend=backend, dynamic=False)  # FX import takes static graphs
    for call in range(calls):
        x = [a + 0.25 * call if a.is_floating_point() else a for a in args]
        xc = clone_args(x)
        with ctx:
            torch.manual_seed(call)
            out = compiled(*xc)
            torch.manual_seed(call)
            ref = model(*x)
        assert_same(out, ref)
        if grad:
            loss_out = out if isinstance(out, torch.Tensor) else out[0]
            loss_ref = ref if isinstance(ref, torch.Tensor) else ref[0]
            model.zero_grad()
            loss_out.float().sum().backward()
            got = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
            model.zero_grad()
            loss_ref.float().sum().backward()
            for i, (g, p) in enumerate(zip(got, model.parameters())):
                assert (g is None) == (p.grad is None), "grad %d present in one run only" % i
                if g is not None:
                    assert_grad_close(g, p.grad, "grad[%d]" % i)


def direct_and_entry(make, inputs, grad):
    """(stats delta of ptgo.compile's own C backend, of the entry point) on fresh copies."""
    torch.manual_seed(0)
    m = make()
    m.train(grad)
    args = inputs()
    s0 = stats()
    run_model(m, args, grad)
    s1 = stats()
    ptgo.reset()
    torch.manual_seed(0)
    m = make()
    m.train(grad)
    backend = EntryBackend()
    run_model(m, args, grad, backend=backend)
    s2 = stats()
    return delta(s0, s1), delta(s1, s2), backend


# The absolute expectations (one graph per model, which ones compile to C) are torch 1.13's,
# the world this file is for. On torch 2 ptgo's own capture breaks some models into several
# frames and meets other ops (scaled_dot_product_attention): the comparisons with ptgo.compile's
# own path still hold there, and tests/test_torch_compile.py has torch 2's own expectations.
TORCH1 = torch.__version__ < "2"


def one_graph_capture(backend):
    """On torch 1.13: ptgo's capture made one graph of the model (asserted). Elsewhere False."""
    if TORCH1:
        assert len(backend.graphs) == 1, "ptgo's capture made %d graphs" % len(backend.graphs)
    return TORCH1


# Workloads whose one graph ptgo's C backend compiles (inference; the training ones compile
# their forward and backward), so the entry point must compile them too.
COMPILED = {"gelu_mlp", "norm_softmax_chain", "pointwise_chain", "rmsnorm_silu", "gpt_block",
            "transformer_encoder_layer", "small_cnn", "gelu_mlp_train"}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_bench_workload_through_entry_point(name):
    make, inputs, grad = WORKLOADS[name]
    direct, entry, backend = direct_and_entry(make, inputs, grad)
    # The same C backend work as ptgo.compile's own path, reached through the FX import.
    assert entry["compiled"] == direct["compiled"] and entry["autograd"] == direct["autograd"], (direct, entry)
    assert entry["fallbacks"] == direct["fallbacks"], (direct, entry)
    assert entry["fx"] == entry["compiled"] + entry["autograd"], entry
    if one_graph_capture(backend):
        assert name in COMPILED
        assert entry["fx"] == 1, entry
        assert not backend.ran_torch()


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("model", ["mlp", "cnn", "encoder"])
def test_models_through_entry_point(model, train):
    make, inputs = {"mlp": (MLP, lambda: [torch.randn(4, 16)]),
                    "cnn": (CNN, lambda: [torch.randn(2, 3, 16, 16)]),
                    "encoder": (Encoder, lambda: [torch.randint(0, 50, (2, 7))])}[model]
    direct, entry, backend = direct_and_entry(make, inputs, train)
    assert entry["compiled"] == direct["compiled"] and entry["autograd"] == direct["autograd"], (direct, entry)
    assert entry["fallbacks"] == direct["fallbacks"], (direct, entry)
    # Where ptgo's own path compiles, the entry point did not hand back gm.forward.
    ran_c = direct["compiled"] + direct["autograd"]
    if backend.graphs:
        assert all(backend.ran_torch(i) for i in range(len(backend.graphs))) == (ran_c == 0)
    assert entry["fx"] == ran_c
    # Every model compiles, training graphs with dropout (mlp), max_pool2d and avg_pool2d (cnn,
    # differentiated with torch's avg_pool2d_backward) included, on both paths alike.
    if one_graph_capture(backend):
        assert ran_c == 1, direct


@pytest.mark.parametrize("name", ["mlp", "cnn", "encoder", "gpt_block", "small_cnn", "norm_softmax_chain"])
def test_round_trip_graph_text(name):
    """ptgo graph → fx_export GraphModule → fx_import JSON → pipeline.ImportFX: the same text."""
    make, inputs = {"mlp": (MLP, lambda: [torch.randn(4, 16)]),
                    "cnn": (CNN, lambda: [torch.randn(2, 3, 16, 16)]),
                    "encoder": (Encoder, lambda: [torch.randint(0, 50, (2, 7))])}.get(name) or WORKLOADS[name][:2]
    torch.manual_seed(0)
    m = make().eval()
    backend = EntryBackend()
    with torch.no_grad():
        ptgo.compile(m, backend=backend, dynamic=False)(*inputs())
    captured = [r["graph"] for r in json.loads(_C.request("compile_log", "{}")) if r.get("graph")]
    one_graph_capture(backend)
    assert len(captured) == len(backend.graphs) >= 1
    for gm, examples, want in zip(backend.graphs, backend.examples, captured):
        text, _, _ = graph_json(gm, examples)
        got = fx_import_text(text)
        assert got.get("graph") == want, got.get("unsupported")


def make_gm(build, attrs=None):
    """A GraphModule written with torch.fx's Graph API: build(graph) adds the nodes."""
    g = torch.fx.Graph()
    build(g)
    return torch.fx.GraphModule(attrs or {}, g)


def test_output_structure_is_gm_forwards():
    def build(g):
        x = g.placeholder("x")
        y = g.placeholder("y")
        r = g.call_function(torch.relu, (x,))
        s = g.call_function(operator.add, (r, y))
        v = g.call_method("view", (s, [-1]))
        g.output({"a": r, "b": [s, None, r], "c": (v, 3)})

    gm = make_gm(build)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    s0 = stats()
    fn = torch_entry_point(gm, [x, y])
    assert delta(s0, stats())["fx"] == 1
    assert_same(fn(x, y), gm.forward(x, y))
    assert_same(fn(x * 2, y), gm.forward(x * 2, y))


def test_aten_overloads_map_onto_the_registry():
    aten = torch.ops.aten

    def build(g):
        x = g.placeholder("x")
        w = g.placeholder("w")
        mm = g.call_function(aten.mm.default, (x, w))
        add = g.call_function(aten.add.Tensor, (mm, x), {"alpha": 2})
        r = g.call_function(aten.relu.default, (add,))
        g.output((g.call_function(aten.sum.dim_IntList, (r, [1])),))

    gm = make_gm(build)
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    text, _, _ = graph_json(gm, [x, w])
    got = fx_import_text(text)
    assert "graph" in got, got
    assert "torch.mm(" in got["graph"] and "torch.add(" in got["graph"] and "torch.relu(" in got["graph"], got["graph"]
    s0 = stats()
    fn = torch_entry_point(gm, [x, w])
    assert delta(s0, stats())["fx"] == 1
    assert_same(fn(x, w), gm.forward(x, w))


def test_get_attr_parameters_train_and_infer():
    lin = nn.Linear(4, 3)
    attrs = {"weight": lin.weight, "bias": lin.bias}

    def build(g):
        x = g.placeholder("x")
        w = g.get_attr("weight")
        b = g.get_attr("bias")
        out = g.call_function(F.linear, (x, w, b))
        g.output((torch.fx.Proxy(out).tanh().node,))

    gm = make_gm(build, attrs)
    assert gm.weight is lin.weight
    x = torch.randn(2, 4)
    s0 = stats()
    fn = torch_entry_point(gm, [x])  # grad mode on: the autograd path
    d = delta(s0, stats())
    assert d["fx"] == 1 and d["autograd"] == 1, d
    out = fn(x)
    ref = gm.forward(x)
    assert_same(out, ref)
    out[0].sum().backward()
    got = [lin.weight.grad.clone(), lin.bias.grad.clone()]
    lin.zero_grad()
    ref[0].sum().backward()
    assert_same(got, [lin.weight.grad, lin.bias.grad])
    with torch.no_grad():
        s0 = stats()
        fn = torch_entry_point(gm, [x])
        assert delta(s0, stats())["compiled"] == 1
        assert_same(fn(x), gm.forward(x))


def test_unknown_op_runs_with_torch_inside_the_compiled_graph(ptgo_log):
    ptgo.set_logs("perf_hints")

    def build(g):
        x = g.placeholder("x")
        c = g.call_function(torch.sinc, (x,))  # not in ptgo's registry
        g.output((g.call_function(torch.sigmoid, (c,)),))

    gm = make_gm(build)
    x = torch.randn(3, 5)
    # Built by hand: no example_value metas, and ptgo has no meta for sinc: unsupported.
    fn = torch_entry_point(gm, [x])
    assert getattr(fn, "__self__", None) is gm
    assert "torch.sinc is not an op ptgo knows" in ptgo_log.text
    # With torch's metas (as Dynamo records them) the call runs with torch inside the graph.
    for node in gm.graph.nodes:
        if node.op == "call_function":
            args = [a.meta["example_value"] if isinstance(a, torch.fx.Node) else a for a in node.args]
            node.meta["example_value"] = node.target(*args)
        elif node.op == "placeholder":
            node.meta["example_value"] = x
    s0 = stats()
    fn = torch_entry_point(gm, [x])
    assert delta(s0, stats())["fx"] == 1
    assert "torch.sinc stays a call to torch" in ptgo_log.text
    assert_same(fn(x), gm.forward(x))


def test_what_ptgo_cannot_take_runs_gm_forward(ptgo_log):
    ptgo.set_logs("perf_hints")

    def build(g):
        x = g.placeholder("x")
        n = g.placeholder("n")
        y = g.call_function(lambda t, k: t * k, (x, n))
        g.output((y,))

    gm = make_gm(build)
    x = torch.randn(3)
    fn = torch_entry_point(gm, [x, torch.tensor(2.0)])
    assert getattr(fn, "__self__", None) is gm
    assert "has no importable path" in ptgo_log.text
    fn = torch_entry_point(gm, [x, 2])  # a SymInt-like int input
    assert getattr(fn, "__self__", None) is gm
    assert "is a int, not a tensor" in ptgo_log.text
    assert_same(fn(x, 2), gm.forward(x, 2))


def test_metas_that_disagree_with_torchs_refuse_the_graph(ptgo_log):
    ptgo.set_logs("perf_hints")

    def build(g):
        x = g.placeholder("x")
        g.output((g.call_function(torch.relu, (x,)),))

    gm = make_gm(build)
    x = torch.randn(3, 4)
    relu = [n for n in gm.graph.nodes if n.op == "call_function"][0]
    relu.meta["example_value"] = torch.empty(4, 3)  # a wrong shape
    fn = torch_entry_point(gm, [x])
    assert getattr(fn, "__self__", None) is gm
    assert "ptgo's meta for torch.relu differs from torch's" in ptgo_log.text


def test_interrupt_during_an_fx_compile_is_raised_as_itself(monkeypatch):
    """Ctrl-C in a callback of the entry point's compile (here: building the runtime object) is
    raised as KeyboardInterrupt, not as BackendCompilerFailed nor a silent gm.forward; the next
    compile works."""
    def build(g):
        x = g.placeholder("x")
        g.output((g.call_function(torch.relu, (g.call_function(operator.add, (x, x)),)),))

    gm = make_gm(build)
    x = torch.randn(3, 4)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    real = _runtime.make_compiled_graph
    monkeypatch.setattr(_runtime, "make_compiled_graph", interrupted)
    with pytest.raises(KeyboardInterrupt):
        torch_entry_point(gm, [x])
    monkeypatch.setattr(_runtime, "make_compiled_graph", real)
    s0 = stats()
    fn = torch_entry_point(gm, [x])
    assert delta(s0, stats())["fx"] == 1
    assert_same(fn(x), gm.forward(x))


def test_size_expressions_as_polynomials():
    """Dynamo's sympy size expressions as ptgo's integer polynomials: exact floor division and
    modulo, a Max/Min one argument of which dominates for symbols >= 2; the rest refused."""
    sympy = pytest.importorskip("sympy")
    F = pytest.importorskip("torch.utils._sympy.functions")
    from ptgo.fx_import import FXImportUnsupported, _Symbols

    s0, s1 = sympy.symbols("s77 s27", integer=True, positive=True)
    syms = _Symbols()
    syms.ids = {s0: 0, s1: 1}
    cases = [
        (4 * s0 * s1 + 2, {(0, 1): 4, (): 2}),
        (s1 ** 2 - s0, {(1, 1): 1, (0,): -1}),
        (F.FloorDiv(6 * s0 + 5, 3), {(0,): 2, (): 1}),
        (F.Mod(6 * s0 + 5, 3), {(): 2}),
        (F.Max(1, s0), {(0,): 1}),
        (F.Min(2 * s0, s0 + 1), {(0,): 1, (): 1}),
    ]
    for e, want in cases:
        assert syms.poly(e, "x") == want, e
    for e, why in ((F.FloorDiv(s0, 2), "inexact FloorDiv"), (F.Max(s0, s1), "Max of sizes"),
                   (sympy.Symbol("u0"), "no input carries")):
        with pytest.raises(FXImportUnsupported, match=why):
            syms.poly(e, "x")
