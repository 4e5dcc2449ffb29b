"""Turn a ``torch.fx.GraphModule`` handed to a backend into ptgo's graph JSON, compile it in Go.

This is the other direction of ``fx_export``: ``torch.compile(m, backend="ptgo")`` (torch 2's
Dynamo), ptgo's own capture through a custom backend, or anyone with a GraphModule calls
``ptgo.backends.torch_entry_point(gm, example_inputs)``, which calls :func:`compile_fx`.

The JSON is fxgraph's schema (``fxgraph/json.go``), version 1:

* ``placeholder`` nodes carry the meta of their example input (dtype, shape, stride, storage
  offset, device, requires_grad);
* ``call_function`` targets are importable paths: what ``ptgo._runtime.torch_name`` names
  (``torch.relu``, ``torch.nn.functional.linear``, ``operator.add``), ``torch.Tensor.X``
  becomes ``call_method X``, ``torch.ops.aten.add.Tensor`` for ``OpOverload`` objects,
  ``torch._C._set_grad_enabled``, builtins by their name (``getattr``); any other callable
  whose ``module.qualname`` imports back to the same object. Go (``pipeline.ImportFX``) maps
  each onto ptgo's op registry;
* call nodes carry the meta of ``node.meta["ptgo_meta"]`` (ptgo's own capture),
  ``["example_value"]`` or ``["val"]`` (Dynamo's FakeTensors); ptgo recomputes the metas of
  registered ops and refuses a graph whose metas disagree with torch's;
* ``get_attr`` tensors go to Go as a dict by path;
* the output is one flat tuple of distinct tensor nodes; the structure ``gm.forward`` returns
  (tuple, list, dict, constants, repeated values) is rebuilt around the compiled callable.

What cannot be expressed (symbolic shapes, a callable with no importable path, a non-tensor
input) raises :class:`FXImportUnsupported`; :func:`compile_fx` then runs ``gm.forward`` and
names the reason on ``PTGO_LOGS=perf_hints``, as it does for every graph Go does not compile.
"""
from __future__ import annotations

import builtins
import json
import operator
import re
from typing import Any, Dict, List, Tuple

import torch
import torch.fx

from . import _logging

__all__ = ["FXImportUnsupported", "graph_json", "compile_fx"]


class FXImportUnsupported(Exception):
    """The GraphModule cannot be expressed in ptgo's graph IR; the message says why."""


_DTYPE_NAMES = {getattr(torch, n): n for n in (
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
    "complex64", "complex128")}

# Callables torch_name does not find (it looks in operator, torch, torch.nn.functional, ...).
_EXTRA_NAMES = {id(torch._C._set_grad_enabled): "torch._C._set_grad_enabled"}


def _sym_types():
    return tuple(t for t in (getattr(torch, "SymInt", None), getattr(torch, "SymFloat", None),
                             getattr(torch, "SymBool", None)) if t is not None)


_SYM = _sym_types()


def _float(v: float) -> dict:
    return {"float": repr(float(v))}


def _tensor_meta(t, what: str) -> dict:
    if t.layout != torch.strided:
        raise FXImportUnsupported("%s is a %s tensor (ptgo compiles strided tensors)" % (what, t.layout))
    shape = list(t.shape)
    if any(isinstance(s, _SYM) for s in shape) or any(isinstance(s, _SYM) for s in t.stride()) or \
            isinstance(t.storage_offset(), _SYM):
        raise FXImportUnsupported("%s has symbolic shapes %s (dynamic shapes; compile with dynamic=False)"
                                  % (what, tuple(shape)))
    dt = _DTYPE_NAMES.get(t.dtype)
    if dt is None:
        raise FXImportUnsupported("%s has dtype %s, which ptgo does not compile" % (what, t.dtype))
    dev = t.device
    return {"tensor": {"dtype": dt, "shape": [int(s) for s in shape], "stride": [int(s) for s in t.stride()],
                       "storage_offset": int(t.storage_offset()), "device": str(dev),
                       "requires_grad": bool(t.requires_grad)}}


def _value_meta(v, what: str):
    """A META of the schema for a node's value (a tensor, a tuple of them, a Python scalar)."""
    if isinstance(v, torch.Tensor):
        return _tensor_meta(v, what)
    if isinstance(v, _SYM):
        raise FXImportUnsupported("%s is a symbolic %s (dynamic shapes; compile with dynamic=False)"
                                  % (what, type(v).__name__))
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, (tuple, list)):
        return {"tuple": [_value_meta(x, what) for x in v]}
    raise FXImportUnsupported("%s is a %s, which ptgo's graphs do not hold" % (what, type(v).__name__))


def _ptgo_meta(m):
    """node.meta["ptgo_meta"] (fx_export's form) back to the schema's META."""
    if m is None or isinstance(m, bool):
        return m
    if isinstance(m, int):
        return int(m)
    if isinstance(m, float):
        return _float(m)
    if isinstance(m, complex):
        return {"complex": [repr(m.real), repr(m.imag)]}
    if isinstance(m, tuple):
        return {"tuple": [_ptgo_meta(x) for x in m]}
    if isinstance(m, dict):
        return {"tensor": {"dtype": _DTYPE_NAMES[m["dtype"]], "shape": list(m["shape"]), "stride": list(m["stride"]),
                           "storage_offset": m["storage_offset"], "device": str(m["device"]),
                           "requires_grad": bool(m["requires_grad"])}}
    raise FXImportUnsupported("ptgo_meta %r has an unknown form" % (m,))


_MEMORY_FORMATS = {torch.contiguous_format: "contiguous_format", torch.channels_last: "channels_last",
                   torch.preserve_format: "preserve_format"}
if hasattr(torch, "channels_last_3d"):
    _MEMORY_FORMATS[torch.channels_last_3d] = "channels_last_3d"


def _arg(a, names: Dict[torch.fx.Node, str], where: str):
    """An ARG of the schema for a node argument."""
    if isinstance(a, torch.fx.Node):
        return {"node": names[a]}
    if a is None or isinstance(a, (bool, str)):
        return a
    if isinstance(a, _SYM):
        raise FXImportUnsupported("%s takes a symbolic value (dynamic shapes; compile with dynamic=False)" % where)
    if isinstance(a, int):
        if not -(1 << 63) <= a < (1 << 63):
            raise FXImportUnsupported("%s takes the integer %d, which does not fit in 64 bits" % (where, a))
        return int(a)
    if isinstance(a, float):
        return _float(a)
    if isinstance(a, complex):
        return {"complex": [repr(a.real), repr(a.imag)]}
    if isinstance(a, torch.dtype):
        if a not in _DTYPE_NAMES:
            raise FXImportUnsupported("%s takes dtype %s" % (where, a))
        return {"dtype": _DTYPE_NAMES[a]}
    if isinstance(a, torch.device):
        return {"device": str(a)}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, torch.memory_format):
        return {"memory_format": _MEMORY_FORMATS[a]}
    if isinstance(a, torch.layout):
        if a != torch.strided:
            raise FXImportUnsupported("%s takes layout %s" % (where, a))
        return {"layout": "strided"}
    if isinstance(a, torch.Size):
        return {"tuple": [_arg(x, names, where) for x in a]}
    if isinstance(a, tuple):
        return {"tuple": [_arg(x, names, where) for x in a]}
    if isinstance(a, list):
        return {"list": [_arg(x, names, where) for x in a]}
    if isinstance(a, slice):
        return {"slice": [_arg(a.start, names, where), _arg(a.stop, names, where), _arg(a.step, names, where)]}
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return {"dict": [[k, _arg(v, names, where)] for k, v in a.items()]}
    raise FXImportUnsupported("%s takes a %s (%r), which ptgo's graphs do not hold" % (where, type(a).__name__, a))


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def call_target(fn) -> Tuple[str, str]:
    """(op, target) for a call_function target: ("call_function", "torch.relu"),
    ("call_method", "add") for torch.Tensor.add."""
    from . import _runtime

    op_overload = getattr(getattr(torch, "_ops", None), "OpOverload", None)
    if op_overload is not None and isinstance(fn, op_overload):
        ns, _, rest = fn.name().partition("::")
        name, _, overload = rest.partition(".")
        return "call_function", "torch.ops.%s.%s.%s" % (ns, name, overload or "default")
    path = _EXTRA_NAMES.get(id(fn)) or _runtime.torch_name(fn)
    if path is None:
        mod, qual = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
        if mod == "builtins" and isinstance(qual, str) and getattr(builtins, qual, None) is fn:
            return "call_function", qual
        if isinstance(mod, str) and isinstance(qual, str) and _IDENT.match(mod + "." + qual):
            try:
                if _runtime.resolve(mod + "." + qual) is fn:
                    path = mod + "." + qual
            except Exception:  # noqa: BLE001 - no importable path: unsupported below
                pass
    if path is None:
        raise FXImportUnsupported("call target %r has no importable path" % (fn,))
    if path.startswith("torch.Tensor."):
        return "call_method", path[len("torch.Tensor."):]
    return "call_function", path


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _where(node) -> str:
    st = node.meta.get("stack_trace")
    if not isinstance(st, str) or not st:
        return ""
    if "\n" not in st.strip() and "File " not in st:
        return st.strip()  # ptgo's own form: "model.py:12"
    frames = _FRAME.findall(st)
    if not frames:
        return ""
    f, line = frames[-1]
    return "%s:%s" % (f.rsplit("/", 1)[-1], line)


def _node_meta(node, what: str):
    if "ptgo_meta" in node.meta:
        return _ptgo_meta(node.meta["ptgo_meta"])
    for key in ("example_value", "val"):
        if key in node.meta:
            return _value_meta(node.meta[key], what)
    return None


def graph_json(gm: torch.fx.GraphModule, example_inputs) -> Tuple[str, Dict[str, torch.Tensor], Any]:
    """(JSON text, get_attr tensors by path, output spec) for ``gm``; raises
    FXImportUnsupported for what ptgo's graph IR cannot express."""
    nodes: List[dict] = []
    names: Dict[torch.fx.Node, str] = {}
    attrs: Dict[str, torch.Tensor] = {}
    example_inputs = list(example_inputs)
    nph = 0
    out_spec = None
    leaves: List[str] = []
    for node in gm.graph.nodes:
        what = "node %s (%s)" % (node.name, node.op)
        names[node] = node.name
        jn: Dict[str, Any] = {"name": node.name, "op": node.op}
        if node.op == "placeholder":
            jn["target"] = node.target
            if nph >= len(example_inputs):
                raise FXImportUnsupported("placeholder %s has no example input" % node.name)
            ex = example_inputs[nph]
            nph += 1
            if not isinstance(ex, torch.Tensor):
                raise FXImportUnsupported("input %s is a %s, not a tensor (a symbolic size: compile with "
                                          "dynamic=False)" % (node.name, type(ex).__name__))
            meta = _node_meta(node, what) if "ptgo_meta" in node.meta else None
            if meta is None:
                for key in ("example_value", "val"):
                    if key in node.meta:
                        _value_meta(node.meta[key], what)  # refuses symbolic shapes
                meta = _tensor_meta(ex, what)
            jn["meta"] = meta
        elif node.op in ("call_function", "call_method"):
            if node.op == "call_function":
                op, target = call_target(node.target)
            else:
                op, target = "call_method", node.target
            jn["op"], jn["target"] = op, target
            jn["args"] = [_arg(a, names, what) for a in node.args]
            if node.kwargs:
                jn["kwargs"] = [[k, _arg(v, names, what)] for k, v in node.kwargs.items()]
            meta = _node_meta(node, what)
            if meta is not None:
                jn["meta"] = meta
        elif node.op == "get_attr":
            jn["target"] = node.target
            value = _get_attr(gm, node.target)
            if not isinstance(value, torch.Tensor):
                raise FXImportUnsupported("get_attr %s is a %s, not a tensor" % (node.target, type(value).__name__))
            attrs[node.target] = value
            jn["meta"] = _tensor_meta(value, what)
        elif node.op == "output":
            jn["target"] = "output"
            out_spec = _spec(node.args[0], leaves)
            jn["args"] = [{"tuple": [{"node": n} for n in leaves]}]
        else:
            raise FXImportUnsupported("node %s has op %s (call_module: ptgo compiles flat graphs)" % (node.name, node.op))
        where = _where(node)
        if where:
            jn["where"] = where
        nodes.append(jn)
    if nph != len(example_inputs):
        raise FXImportUnsupported("%d example inputs for %d placeholders" % (len(example_inputs), nph))
    text = json.dumps({"version": 1, "name": "forward", "nodes": nodes})
    return text, attrs, out_spec


def _get_attr(gm, path):
    obj = gm
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _spec(a, leaves: List[str]):
    """The output structure: ("out", i) for the i-th distinct node, ("const", v) for constants."""
    if isinstance(a, torch.fx.Node):
        if a.name not in leaves:
            leaves.append(a.name)
        return ("out", leaves.index(a.name))
    if isinstance(a, tuple):
        return ("tuple", [_spec(x, leaves) for x in a])
    if isinstance(a, list):
        return ("list", [_spec(x, leaves) for x in a])
    if isinstance(a, dict):
        return ("dict", [(k, _spec(v, leaves)) for k, v in a.items()])
    if a is None or isinstance(a, (bool, int, float, str)):
        return ("const", a)
    raise FXImportUnsupported("the graph returns a %s" % type(a).__name__)


def _builder(spec):
    kind, x = spec
    if kind == "out":
        return lambda outs: outs[x]
    if kind == "const":
        return lambda outs: x
    if kind in ("tuple", "list"):
        parts = [_builder(s) for s in x]
        wrap = tuple if kind == "tuple" else list
        return lambda outs: wrap([p(outs) for p in parts])
    keys = [k for k, _ in x]
    parts = [_builder(s) for _, s in x]
    return lambda outs: {k: p(outs) for k, p in zip(keys, parts)}


def _is_identity(spec, n):
    """Whether spec is the tuple of outputs 0..n-1 in order (the compiled result as it is)."""
    return spec[0] == "tuple" and len(spec[1]) == n and all(s == ("out", i) for i, s in enumerate(spec[1]))


def tensors_of(path, *args, **kwargs):
    """Calls the function at ``path`` and returns the tensors of its tuple result (the Nones
    left out): pipeline.ImportFX rewrites calls ptgo runs with torch whose results hold None
    (``F.multi_head_attention_forward(..., need_weights=False)``) into calls of this."""
    from . import _runtime

    fn = _TENSORS_OF_FNS.get(path)
    if fn is None:
        fn = _TENSORS_OF_FNS[path] = _runtime.resolve(path)
    ts = tuple(r for r in fn(*args, **kwargs) if r is not None)
    return ts[0] if len(ts) == 1 else ts  # the C++ runtime takes a one-result extern's tensor bare


_TENSORS_OF_FNS: Dict[str, Any] = {}


def _fallback(gm, reason):
    _logging.emit("perf_hints", "a torch.fx graph handed to ptgo's backend runs with torch (gm.forward): %s" % reason)
    return gm.forward


def compile_fx(gm: torch.fx.GraphModule, example_inputs, options=None):
    """The backend: ``gm`` compiled by ptgo's pipeline (pipeline.ImportFX, then pipeline.Compile),
    or ``gm.forward`` with the reason on perf_hints. The result takes the graph's inputs
    positionally and returns what ``gm.forward`` returns."""
    from . import _C, _logging, _runtime

    options = dict(options or {})
    try:
        text, attrs, spec = graph_json(gm, example_inputs)
    except FXImportUnsupported as e:
        return _fallback(gm, str(e))
    _runtime.ensure_initialized()
    opts = json.dumps({"grad_enabled": torch.is_grad_enabled(), "freezing": bool(options.get("freezing", False)),
                       "name": type(gm).__name__ if type(gm).__name__ != "GraphModule" else "forward"})
    rerun = _C.Disabled(gm.forward)
    ok, result = _C.compile_fx(text, attrs, opts, rerun)
    if not ok:
        # Go named the reason on perf_hints (and counted it in inductor_stats).
        return gm.forward
    # The kernels index each input's storage with the storage offset it had when compiled, and
    # Dynamo's guards do not check storage offsets: a call with a view at another offset runs
    # gm.forward (torch), said once on perf_hints.
    offsets = [(i, a.storage_offset()) for i, a in enumerate(example_inputs) if isinstance(a, torch.Tensor)]
    hinted = []

    def offsets_differ(args):
        for i, off in offsets:
            if args[i].storage_offset() != off:
                if not hinted:
                    hinted.append(True)
                    _logging.emit("perf_hints", "%s: an input at another storage offset than the one "
                                           "compiled for runs the graph with torch" % type(gm).__name__)
                return True
        return False

    if _is_identity(spec, len(_output_leaves(spec))):
        def run(*args):
            return gm.forward(*args) if offsets_differ(args) else result(*args)
        return run
    build = _builder(spec)

    def run(*args):
        return gm.forward(*args) if offsets_differ(args) else build(result(*args))

    return run


def _output_leaves(spec, acc=None):
    acc = set() if acc is None else acc
    kind, x = spec
    if kind == "out":
        acc.add(x)
    elif kind in ("tuple", "list"):
        for s in x:
            _output_leaves(s, acc)
    elif kind == "dict":
        for _, s in x:
            _output_leaves(s, acc)
    return acc
