"""End-to-end tests of python/ptgo/fx_export.py on graphs written by the Go side.

The JSON files come from fxgraph/testdata/export/ (written by `go test ./fxgraph -update`, see
fxgraph/examples_test.go). Each is turned into a torch.fx.GraphModule and run against the same
computation written eagerly; parameters must be the user's own tensors under their own names, and
every node's ptgo_meta must describe the value torch actually computes.

Run: cd /work/main && PYTHONPATH=python /usr/bin/python3 -m pytest tests/test_fx_export.py
"""

import importlib.util
import math
import pathlib

import pytest
import torch
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parents[1]
EXPORT_DIR = REPO / "fxgraph" / "testdata" / "export"


def _load_fx_export():
    # By file path: python/ptgo/__init__.py may import a compiled extension that is not built.
    spec = importlib.util.spec_from_file_location("ptgo_fx_export_under_test", REPO / "python" / "ptgo" / "fx_export.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fx_export = _load_fx_export()


def read_json(name):
    return (EXPORT_DIR / f"{name}.json").read_text()


# ---- the models and eager computations the Go example graphs were written from ----


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 2, bias=False)

    def forward(self, x):
        return (self.fc2(torch.relu(self.fc1(x))),)


class SeqBuffers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(8, 8)), torch.nn.BatchNorm1d(8))
        self.register_buffer("scale", torch.rand(8) + 0.5, persistent=False)
        with torch.no_grad():
            self.seq[1].running_mean.uniform_(-1, 1)
            self.seq[1].running_var.uniform_(0.5, 2)
            self.seq[1].weight.uniform_(0.5, 2)
        self.eval()

    def forward(self, x):
        return (self.seq(x) * self.scale,)


def constants_eager(x, y):
    to = x.to(dtype=torch.float64)
    return (
        x[:2, ...],
        [x[..., 0:4:2], {"sum": torch.add(to, y, alpha=2.5), "none": None, "n": 3}],
        torch.full((2, 3), math.inf, dtype=torch.float32, device=torch.device("cpu"), layout=torch.strided),
        torch.full([2], math.nan),
        torch.mul(x, -0.0),
        F.gelu(x, approximate="tanh"),
        torch.einsum("ij,j->i", to, y),
        torch.reshape(x, [1, 4, 2, 3]).contiguous(memory_format=torch.channels_last),
        torch.max(x, 1, keepdim=True)[0],
        x.size(0) * 2.5,
        x.add(1),
        torch.mul(x, complex(1.0, -2.0)),
        torch.zeros((2,), dtype=torch.float16),
    )


def nested_output_eager(a, b):
    s = a + b
    return {"sum": s, "pair": [(s.view(-1, 1), torch.neg(a)), ()], "meta": (1, 0.5, "s", None)}


CASES = {
    # name: (root module factory or None, eager function of (root, *inputs))
    "mlp": (MLP, lambda m, *xs: m(*xs)),
    "seq_buffers": (SeqBuffers, lambda m, *xs: m(*xs)),
    "constants": (None, lambda m, *xs: constants_eager(*xs)),
    "nested_output": (None, lambda m, *xs: nested_output_eager(*xs)),
}


def test_every_exported_graph_is_covered():
    files = sorted(p.stem for p in EXPORT_DIR.glob("*.json"))
    assert files == sorted(CASES), (
        f"{EXPORT_DIR} holds {files}, this test knows {sorted(CASES)}; "
        "run `go test ./fxgraph -update` and add a case here for each new graph"
    )


# ---- helpers ----


def make_input(meta, gen):
    """A tensor with exactly the placeholder's dtype, shape, strides and storage offset."""
    shape, stride, offset = meta["shape"], meta["stride"], meta["storage_offset"]
    size = offset + 1 + sum((s - 1) * st for s, st in zip(shape, stride)) if all(shape) else offset
    base = torch.randn(size, generator=gen, dtype=torch.float64).to(meta["dtype"])
    return base.as_strided(shape, stride, offset).requires_grad_(meta["requires_grad"])


def inputs_for(gm, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [make_input(n.meta["ptgo_meta"], gen) for n in gm.graph.nodes if n.op == "placeholder"]


def assert_same(got, want, path="out"):
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape, f"{path}: {got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}"
        assert got.stride() == want.stride(), f"{path}: strides {got.stride()} != {want.stride()}"
        torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{path}: {m}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), f"{path}: {got} is not nan"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


def assert_meta(meta, value, where):
    """ptgo_meta (from the Go side) describes what torch computed."""
    if isinstance(meta, dict):
        assert isinstance(value, torch.Tensor), f"{where}: meta says tensor, got {type(value).__name__}"
        actual = {
            "dtype": value.dtype,
            "shape": tuple(value.shape),
            "stride": value.stride(),
            "storage_offset": value.storage_offset(),
            "device": value.device,
            "requires_grad": value.requires_grad,
        }
        assert meta == actual, f"{where}: ptgo_meta {meta} != actual {actual}"
    elif isinstance(meta, tuple):
        assert len(meta) == len(value), f"{where}: tuple meta of {len(meta)}, value of {len(value)}"
        for i, (m, v) in enumerate(zip(meta, value)):
            assert_meta(m, v, f"{where}[{i}]")
    else:
        assert type(meta) is type(value) and meta == value, f"{where}: meta {meta!r} != value {value!r}"


class MetaRecorder(torch.fx.Interpreter):
    def run_node(self, n):
        value = super().run_node(n)
        if "ptgo_meta" in n.meta:
            assert_meta(n.meta["ptgo_meta"], value, f"node {n.name}")
            self.checked += 1
        return value


def build(name):
    factory, eager = CASES[name]
    torch.manual_seed(0)
    root = factory() if factory else None
    gm = fx_export.graph_module_from_json(read_json(name), root)
    return root, eager, gm


# ---- tests ----


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_module_matches_eager(name):
    root, eager, gm = build(name)
    gm.graph.lint()
    compile(gm.code, f"<{name}>", "exec")
    xs = inputs_for(gm)
    assert_same(gm(*xs), eager(root, *xs))
    assert_same(gm(*inputs_for(gm, seed=1)), eager(root, *inputs_for(gm, seed=1)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_nodes_keep_names_ops_and_metas(name):
    import json

    nodes = json.loads(read_json(name))["nodes"]
    _, _, gm = build(name)
    fx_nodes = list(gm.graph.nodes)
    assert [n.name for n in fx_nodes] == [n["name"] for n in nodes]
    for fx_node, n in zip(fx_nodes, nodes):
        if n["target"] != "torch.Tensor.add":
            assert fx_node.op == n["op"], fx_node.name
        trace = fx_node.meta.get("stack_trace")
        if "stack" in n:
            assert trace.startswith("  " + n["stack"] + "\n"), fx_node.name
        else:
            assert trace == n.get("where"), fx_node.name
        assert ("ptgo_meta" in fx_node.meta) == ("meta" in n), fx_node.name
    recorder = MetaRecorder(gm)
    recorder.checked = 0
    recorder.run(*inputs_for(gm))
    assert recorder.checked == sum("meta" in n for n in nodes)


def test_parameters_are_the_users_tensors():
    model, _, gm = build("mlp")
    params = dict(gm.named_parameters())
    assert list(params) == ["fc1.weight", "fc1.bias", "fc2.weight"]
    for name, p in params.items():
        assert p is model.get_parameter(name)
        assert isinstance(p, torch.nn.Parameter)
    assert gm.fc1.weight is model.fc1.weight
    assert type(gm.fc1) is torch.nn.Module
    # Gradients reach the user's parameters.
    (out,) = gm(torch.randn(4, 8))
    out.sum().backward()
    assert model.fc1.weight.grad is not None and model.fc2.weight.grad is not None
    # State dict keys are the original names.
    assert set(gm.state_dict()) == {"fc1.weight", "fc1.bias", "fc2.weight"}


def test_buffers_stay_buffers_under_nested_sequential_names():
    model, _, gm = build("seq_buffers")
    buffers = dict(gm.named_buffers())
    assert set(buffers) == {"seq.1.running_mean", "seq.1.running_var", "scale"}
    for name, b in buffers.items():
        assert b is model.get_buffer(name)
    assert set(dict(gm.named_parameters())) == {"seq.0.0.weight", "seq.0.0.bias", "seq.1.weight", "seq.1.bias"}
    assert gm.get_parameter("seq.0.0.weight") is model.seq[0][0].weight
    # The non-persistent buffer stays out of the state dict, as in the user's module.
    assert "scale" not in gm.state_dict() and "scale" not in model.state_dict()
    assert "seq.1.running_mean" in gm.state_dict()
    assert gm.training is False


def test_attrs_supply_tensors_without_a_root():
    model = MLP()
    attrs = dict(model.named_parameters())
    gm = fx_export.graph_module_from_json(read_json("mlp"), None, attrs)
    assert gm.fc2.weight is model.fc2.weight
    x = torch.randn(4, 8)
    assert_same(gm(x), model(x))


def test_where_becomes_stack_trace_and_code_comment():
    _, _, gm = build("mlp")
    nodes = {n.name: n for n in gm.graph.nodes}
    # A traceback's File line and the line's code (model.py is no file here), as Dynamo writes
    # node.stack_trace; a node with only a "where" keeps it.
    assert nodes["linear"].meta["stack_trace"] == '  File "model.py", line 12, in forward\n    <source not available>\n'
    assert nodes["relu"].meta["stack_trace"] == "model.py:13"
    # print_readable's code (verbose) shows it as a comment above the node: torch 1.13 as
    # "File: model.py:12, code: ...", torch 2 as "File: model.py:12 in forward, code: ...".
    src = gm.graph.python_code(root_module="self", verbose=True).src
    assert "# File: model.py:12" in src and "code: <source not available>" in src
    assert "def forward(self, x)" in gm.code


def test_captured_nodes_carry_the_users_source_line(counter):
    import ptgo
    from conftest import assert_same

    def f(x):
        y = torch.relu(x)  # the line torch.fx shows
        return y + 1

    x = torch.randn(3)
    assert_same(ptgo.compile(f, backend=counter)(x), f(x))
    relu = next(n for n in counter.graphs[0].graph.nodes if n.op in ("call_function", "call_method"))
    line = f.__code__.co_firstlineno + 1
    assert relu.meta["stack_trace"] == '  File "%s", line %d, in f\n    y = torch.relu(x)  # the line torch.fx shows\n' % (
        __file__, line)
    src = counter.graphs[0].graph.python_code(root_module="self", verbose=True).src
    assert "File: %s:%d" % (__file__, line) in src and "code: y = torch.relu(x)" in src


def test_constants_and_rewrites():
    _, _, gm = build("constants")
    nodes = {n.name: n for n in gm.graph.nodes}
    assert nodes["add_1"].op == "call_method" and nodes["add_1"].target == "add"  # torch.Tensor.add
    assert nodes["getitem"].args[1] == (slice(None, 2, None), Ellipsis)
    assert nodes["full"].kwargs == {"dtype": torch.float32, "device": torch.device("cpu"), "layout": torch.strided}
    assert math.isinf(nodes["full"].args[1]) and math.isnan(nodes["full_1"].args[1])
    assert math.copysign(1.0, nodes["mul"].args[1]) == -1.0
    assert nodes["contiguous"].kwargs["memory_format"] is torch.channels_last
    assert nodes["mul_2"].args[1] == complex(1.0, -2.0)
    assert nodes["max_1"].meta["ptgo_meta"][1]["dtype"] is torch.int64
    assert nodes["size"].meta["ptgo_meta"] == 4 and nodes["mul_1"].meta["ptgo_meta"] == 10.0
    assert nodes["y"].meta["ptgo_meta"]["stride"] == (2,) and nodes["y"].meta["ptgo_meta"]["storage_offset"] == 1


def test_target_resolution_is_cached():
    assert fx_export.resolve_call_target("torch.nn.functional.linear") == ("call_function", F.linear)
    first = fx_export.resolve_call_target("operator.getitem")
    assert fx_export.resolve_call_target("operator.getitem") is first
    assert fx_export.resolve_call_target("getattr") == ("call_function", getattr)
    assert fx_export.resolve_call_target("torch.Tensor.add") == ("call_method", "add")
    assert fx_export.resolve_call_target("torch.Tensor.split")[0] == "call_function"  # Python-level method
    assert fx_export.resolve_call_target("torch.ops.aten.relu.default")[1] is torch.ops.aten.relu.default


@pytest.mark.parametrize(
    "target, message",
    [
        ("torch.nn.functional.no_such_op", "torch.nn.functional has no attribute 'no_such_op'"),
        ("no_such_module.f", "cannot import module 'no_such_module'"),
        ("no_such_builtin", "is not a builtin"),
        ("torch.float32", "is not callable"),
        ("<lambda>", "is not a dotted Python path"),
    ],
)
def test_bad_targets_say_what_is_wrong(target, message):
    with pytest.raises(fx_export.ExportError, match=message.replace("(", r"\(").replace(".", r"\.")):
        fx_export.resolve_call_target(target)


def test_missing_attributes_say_what_to_pass():
    with pytest.raises(fx_export.ExportError, match="get_attr target 'fc1.weight' is not in attrs and there is no root"):
        fx_export.graph_module_from_json(read_json("mlp"), None)
    with pytest.raises(fx_export.ExportError, match="not an attribute of the root Linear"):
        fx_export.graph_module_from_json(read_json("mlp"), torch.nn.Linear(2, 2))


def test_schema_version_is_checked():
    text = read_json("mlp").replace('"version": 1', '"version": 2', 1)
    with pytest.raises(fx_export.ExportError, match="schema version 2"):
        fx_export.graph_module_from_json(text, MLP())
