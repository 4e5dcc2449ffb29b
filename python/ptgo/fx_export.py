"""Turn ptgo's graph IR, in its JSON form, into a real ``torch.fx.GraphModule``.

The Go side (``fxgraph.EncodeJSON``; the schema is documented in ``fxgraph/json.go``) captures a
graph at torch-function level. Custom backends and the ``eager`` backend receive it as a
GraphModule built here:

* nodes keep their names, ops and order; ``call_function`` targets are Python paths
  (``torch.nn.functional.linear``, ``operator.getitem``, ``getattr``) resolved by importing the
  module and walking attributes, once per path per process;
* ``get_attr`` targets are dotted paths in the user's module (``fc1.weight``); the GraphModule
  holds the *same* tensor objects under the same names, in plain ``torch.nn.Module``
  containers: parameters stay ``nn.Parameter``, buffers stay buffers (non-persistent ones too);
* each node's meta goes to ``node.meta["ptgo_meta"]`` (a dict with dtype, shape, stride,
  storage_offset, device, requires_grad; a tuple of those for tuple results; the value for a
  Python scalar) and its source line to ``node.meta["stack_trace"]``, as a traceback names it
  (``File "/src/model.py", line 12, in forward`` and the line's code, as Dynamo writes it:
  torch 2's code printer shows only stack traces of that form; a graph without "stack" keeps
  its "where", ``model.py:12``).

One rewrite: a ``call_function`` of a C-implemented Tensor method (``torch.Tensor.add``) becomes
``call_method`` (``x.add(...)``), because torch 1.13's code generation cannot name such
functions. The two mean the same call.

This module imports only torch and the standard library, so it works before ptgo's compiled
extension is built.
"""

from __future__ import annotations

import builtins
import importlib
import json
import operator
import linecache
import math
import re
import types
from typing import Any, Dict, Optional, Tuple

import torch
import torch.fx

__all__ = ["ExportError", "graph_module_from_json", "resolve_call_target", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1


def _stack_trace(stack, where):
    """node.meta["stack_trace"] for a node's "stack" (a traceback's File line) and "where"."""
    if not stack:
        return where or None
    m = re.match(r'File "(.*)", line (\d+), in ', stack)
    code = linecache.getline(m.group(1), int(m.group(2))).strip() if m else ""
    # torch.fx reads a File line followed by its code; a source it cannot show is said so.
    return "  %s\n    %s\n" % (stack, code or "<source not available>")


class ExportError(ValueError):
    """The JSON graph cannot be turned into a GraphModule; the message says why and what to do."""


# path -> ("call_function", callable) or ("call_method", method name); filled on first use.
_CALL_TARGETS: Dict[str, Tuple[str, Any]] = {}
_TENSOR_METHOD_TYPES = (types.MethodDescriptorType, types.WrapperDescriptorType)


def resolve_call_target(path: str) -> Tuple[str, Any]:
    """Resolve a call_function target path to the FX op and target to emit (cached).

    ``"torch.relu"`` gives ``("call_function", torch.relu)``; ``"getattr"`` a builtin;
    ``"torch.Tensor.add"`` gives ``("call_method", "add")``.
    """
    hit = _CALL_TARGETS.get(path)
    if hit is None and path in _OWN_TARGETS:
        hit = _CALL_TARGETS[path] = ("call_function", _OWN_TARGETS[path])
    if hit is None:
        fn = _import_path(path)
        objclass = getattr(fn, "__objclass__", None)
        if isinstance(fn, _TENSOR_METHOD_TYPES) and isinstance(objclass, type) and issubclass(
            objclass, torch._C._TensorBase
        ):
            hit = ("call_method", fn.__name__)
        else:
            hit = ("call_function", fn)
        _CALL_TARGETS[path] = hit
    return hit


def restride(t: Any, stride: Any) -> Any:
    """``t`` with the given strides (the prims graph's meta: eager's), copied only when torch's
    kernel chose another layout (size-1 dims do not count). The aot_eager backend's outputs go
    through it: its torch calls (a softmax's reductions and pointwise ops, torch.full for
    ones_like, index_select for flip) lay out results their own way."""
    if not isinstance(t, torch.Tensor) or t.dim() != len(stride) or all(
            n <= 1 or a == b for n, a, b in zip(t.shape, t.stride(), stride)):
        return t
    return torch.empty_strided(t.shape, stride, dtype=t.dtype, device=t.device).copy_(t)


class CheckFailed(RuntimeError):
    """A compiled graph refused its run: Python raises for a float the graph computes from
    tensor data (a division by zero, ...; prims.check). Raised before the graph writes an input
    or draws a random number; the caller runs the captured graph with torch instead, which
    raises eager's own exception."""


def check(cond: Any) -> Any:
    """prims.check: cond, unless an element of it is true (CheckFailed)."""
    if bool(cond.any()):
        raise CheckFailed("ptgo: a float computed from tensor data takes a value Python raises for")
    return cond


def float_tensor(f: Any) -> Any:
    """ptgo.float_tensor: a Python float as a 0-d float64 tensor (a float the graph computes,
    handed over at a graph break). When torch runs the graph the value is Python's own, which
    may be complex (a negative number to a fractional power): that tensor is complex."""
    return torch.tensor(f, dtype=torch.complex128 if isinstance(f, complex) else torch.float64)


def constant_pad_nd(x: Any, pad: Any, value: Any) -> Any:
    """prims.constant_pad_nd in a torch graph: torch.constant_pad_nd, which refuses an input
    with a zero-size dim it does not pad ("resulted in a negative output size"); with no input
    elements the result is the padded shape filled with value (a slice's gradient of an empty
    tensor: fuzz seed 17331)."""
    if x.numel() != 0:
        return torch.constant_pad_nd(x, pad, value)
    shape = list(x.shape)
    for k in range(len(pad) // 2):
        d = len(shape) - 1 - k
        shape[d] += pad[2 * k] + pad[2 * k + 1]
    if any(n < 0 for n in shape):
        return torch.constant_pad_nd(x, pad, value)  # torch's error for a negative size
    return torch.full(shape, value, dtype=x.dtype, device=x.device)


# Call targets this module defines itself ("ptgo.restride"), resolved without importing ptgo.
def negative_base_pow(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` for a negative constant base. torch.fx writes ``operator.pow`` inline
    without parentheses, and Python reads ``-2 ** x`` as ``-(2 ** x)`` (fuzz seed 39054: the
    eager and aot_eager backends gave -1 for ``(-2**40) ** 0``); a call keeps the base whole."""
    return base ** exponent


_OWN_TARGETS = {"ptgo.restride": restride, "ptgo.check": check, "ptgo.float_tensor": float_tensor,
                "ptgo.constant_pad_nd": constant_pad_nd}


def _import_path(path: str) -> Any:
    parts = path.split(".")
    if not all(p.isidentifier() for p in parts):
        raise ExportError(
            f"fx_export: call target {path!r} is not a dotted Python path; "
            "fxgraph.Verify rejects such targets, run it on the Go side"
        )
    if len(parts) == 1:
        if hasattr(builtins, path):
            return _callable(path, getattr(builtins, path))
        raise ExportError(
            f"fx_export: call target {path!r} is not a builtin; give its module path (operator.add)"
        )
    try:
        obj = importlib.import_module(parts[0])
    except ImportError as e:
        raise ExportError(f"fx_export: cannot import module {parts[0]!r} for call target {path!r}: {e}") from e
    for i in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[i])
        except AttributeError:
            prefix = ".".join(parts[: i + 1])
            try:
                obj = importlib.import_module(prefix)
            except ImportError:
                raise ExportError(
                    f"fx_export: cannot resolve call target {path!r}: "
                    f"{'.'.join(parts[:i])} has no attribute {parts[i]!r}; check the target path"
                ) from None
    return _callable(path, obj)


def _callable(path: str, obj: Any) -> Any:
    if not callable(obj):
        raise ExportError(f"fx_export: call target {path!r} resolves to {type(obj).__name__}, which is not callable")
    return obj


def _dtype(name: str) -> torch.dtype:
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise ExportError(f"fx_export: unknown dtype {name!r}")
    return dt


def _torch_constant(name: str, kind: type) -> Any:
    v = getattr(torch, name, None)
    if not isinstance(v, kind):
        raise ExportError(f"fx_export: torch.{name} is not a {kind.__name__}")
    return v


def _tag(v: dict) -> Tuple[str, Any]:
    if len(v) != 1:
        raise ExportError(f"fx_export: tagged value {v!r} must have exactly one key")
    return next(iter(v.items()))


class _Symbols:
    """The size symbols of a graph with dynamic shapes: each symbol is a ``size`` call on the
    placeholder that carries it (made once, after the placeholders), and each size expression an
    ``operator`` chain over them (made once per expression)."""

    def __init__(self, graph: torch.fx.Graph, symbols: Any):
        self.graph, self.symbols = graph, symbols or []
        self.nodes: Dict[int, Any] = {}
        self.exprs: Dict[str, Any] = {}

    def symbol(self, sid: int, env: Dict[str, torch.fx.Node]) -> Any:
        if sid in self.nodes:
            return self.nodes[sid]
        s = self.symbols[sid]
        if s["dim"] == -3:
            # a derived symbol: floor(def / div) of earlier symbols
            value = self._op(operator.floordiv, self.expr(s["def"], env), s["div"])
        elif s["input"] < 0:
            value = s["hint"]  # specialised by the trace (guarded equal to its hint)
        else:
            ph = [n for n in self.graph.nodes if n.op == "placeholder"][s["input"]]
            if s["dim"] == -1:
                value = ph  # an int input
            elif s["dim"] == -2:
                value = self.graph.create_node("call_method", "storage_offset", (ph,), name=f"sym_offset_s{sid}")
            else:
                value = self.graph.create_node("call_method", "size", (ph, s["dim"]), name=f"sym_size_s{sid}")
        self.nodes[sid] = value
        return value

    def expr(self, x: Any, env: Dict[str, torch.fx.Node]) -> Any:
        key = json.dumps(x, sort_keys=True)
        if key in self.exprs:
            return self.exprs[key]
        total: Any = None
        for coef, ids in x["terms"]:
            term: Any = coef if coef != 1 else None
            for sid in ids:
                f = self.symbol(sid, env)
                term = f if term is None else self._op(operator.mul, term, f)
            total = term if total is None else self._op(operator.add, total, term)
        if x["c"]:
            total = self._op(operator.add, total, x["c"])
        self.exprs[key] = total
        return total

    def _op(self, fn: Any, a: Any, b: Any) -> Any:
        # Named apart from the graph's own nodes: a later node named "add" must keep its name.
        name = f"sym_{fn.__name__}_{len(self.graph.nodes)}"
        return self.graph.create_node("call_function", fn, (a, b), name=name)


def _arg(v: Any, env: Dict[str, torch.fx.Node], syms: Optional[_Symbols] = None) -> Any:
    """An ARG of the schema as the Python value (or fx.Node) torch.fx expects."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if not isinstance(v, dict):
        raise ExportError(f"fx_export: unexpected argument {v!r}; lists are tagged {{\"list\": [...]}}")
    tag, x = _tag(v)
    if tag == "sym":
        if syms is None:
            raise ExportError("fx_export: a size expression in a graph without symbols")
        return syms.expr(x, env)
    if tag == "node":
        node = env.get(x)
        if node is None:
            raise ExportError(f"fx_export: argument refers to node {x!r}, which is not defined before it")
        return node
    if tag == "float":
        return float(x)
    if tag == "complex":
        return complex(float(x[0]), float(x[1]))
    if tag == "list":
        return [_arg(e, env, syms) for e in x]
    if tag == "tuple":
        return tuple(_arg(e, env, syms) for e in x)
    if tag == "dict":
        return {k: _arg(e, env, syms) for k, e in x}
    if tag == "slice":
        return slice(*(_arg(e, env, syms) for e in x))
    if tag == "dtype":
        return _dtype(x)
    if tag == "device":
        return torch.device(x)
    if tag == "ellipsis":
        return Ellipsis
    if tag == "memory_format":
        return _torch_constant(x, torch.memory_format)
    if tag == "layout":
        return _torch_constant(x, torch.layout)
    raise ExportError(f"fx_export: unknown argument tag {tag!r}")


def _meta(v: Any) -> Any:
    """A META of the schema as node.meta["ptgo_meta"]."""
    if v is None or isinstance(v, (bool, int)):
        return v
    tag, x = _tag(v)
    if tag == "tensor":
        return {
            "dtype": _dtype(x["dtype"]),
            "shape": tuple(x["shape"]),
            "stride": tuple(x["stride"]),
            "storage_offset": x["storage_offset"],
            "device": torch.device(x["device"]),
            "requires_grad": x["requires_grad"],
        }
    if tag == "tuple":
        return tuple(_meta(e) for e in x)
    if tag == "sym":
        return None
    if tag == "float":
        return float(x)
    if tag == "complex":
        return complex(float(x[0]), float(x[1]))
    raise ExportError(f"fx_export: unknown meta tag {tag!r}")


def _lookup(root: torch.nn.Module, path: str) -> Tuple[Any, bool]:
    """The attribute at a dotted path of root, and whether it is a persistent buffer/param."""
    *prefix, field = path.split(".")
    owner: Any = root
    for part in prefix:
        owner = getattr(owner, part)
    value = getattr(owner, field)
    non_persistent = getattr(owner, "_non_persistent_buffers_set", ())
    return value, field not in non_persistent


def graph_module_from_json(
    text: str,
    root: Optional[torch.nn.Module],
    attrs: Optional[Dict[str, torch.Tensor]] = None,
) -> torch.fx.GraphModule:
    """Build a ``torch.fx.GraphModule`` from ``fxgraph.EncodeJSON`` output.

    ``get_attr`` targets are looked up in ``attrs`` (dotted path -> tensor) first, then in
    ``root`` (the user's module); the GraphModule holds those very tensor objects under the same
    dotted names.
    """
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("version") != SCHEMA_VERSION:
        raise ExportError(
            f"fx_export: graph JSON has schema version {data.get('version') if isinstance(data, dict) else None!r}, "
            f"this reader knows {SCHEMA_VERSION}; rebuild ptgo so its Go and Python halves match"
        )
    graph = torch.fx.Graph()
    env: Dict[str, torch.fx.Node] = {}
    attr_paths: Dict[str, None] = {}
    syms = _Symbols(graph, data.get("symbols"))
    for n in data["nodes"]:
        op, name, target = n["op"], n["name"], n.get("target")
        args = tuple(_arg(a, env, syms) for a in n.get("args", ()))
        kwargs = {k: _arg(v, env, syms) for k, v in n.get("kwargs", ())}
        if op == "placeholder":
            # The target is the argument's own name (``input``), the name may differ (``input_1``).
            node = graph.create_node("placeholder", target or name, name=name)
        elif op == "call_function":
            kind, fn = resolve_call_target(target)
            if kind == "call_method" and not args:
                kind, fn = "call_function", _import_path(target)
            if fn is operator.pow and args and isinstance(args[0], (int, float)) and math.copysign(1, args[0]) < 0:
                fn = negative_base_pow
            node = graph.create_node(kind, fn, args, kwargs, name=name)
        elif op == "call_method":
            node = graph.create_node("call_method", target, args, kwargs, name=name)
        elif op == "get_attr":
            node = graph.create_node("get_attr", target, name=name)
            attr_paths[target] = None
        elif op == "output":
            if len(args) != 1 or kwargs:
                raise ExportError("fx_export: the output node must have exactly one argument")
            node = graph.output(args[0])
        else:
            raise ExportError(f"fx_export: node {name!r} has unknown op {op!r}")
        if op != "output" and node.name != name:
            raise ExportError(
                f"fx_export: torch.fx renamed node {name!r} to {node.name!r}; "
                "fxgraph.Verify rejects names torch.fx changes, run it on the Go side"
            )
        meta = _meta(n.get("meta"))
        if meta is not None:
            node.meta["ptgo_meta"] = meta
        stack_trace = _stack_trace(n.get("stack"), n.get("where"))
        if stack_trace:
            node.meta["stack_trace"] = stack_trace
        env[name] = node

    tensors: Dict[str, Any] = {}
    non_persistent = []
    for path in attr_paths:
        if attrs is not None and path in attrs:
            value, persistent = attrs[path], True
        elif root is not None:
            try:
                value, persistent = _lookup(root, path)
            except AttributeError:
                raise ExportError(
                    f"fx_export: get_attr target {path!r} is not an attribute of the root "
                    f"{type(root).__name__}; pass the module the graph was captured from"
                ) from None
        else:
            raise ExportError(
                f"fx_export: get_attr target {path!r} is not in attrs and there is no root module; "
                "pass the user's module as root or the tensor in attrs"
            )
        if not isinstance(value, torch.Tensor):
            raise ExportError(
                f"fx_export: get_attr target {path!r} is a {type(value).__name__}, not a tensor; "
                "get_attr reads parameters and buffers"
            )
        tensors[path] = value
        if not persistent:
            non_persistent.append(path)

    try:
        gm = torch.fx.GraphModule(tensors, graph)
    except (KeyError, AttributeError, RuntimeError) as e:
        raise ExportError(f"fx_export: cannot build the GraphModule: {e}") from e
    for path in non_persistent:
        *prefix, field = path.split(".")
        gm.get_submodule(".".join(prefix))._non_persistent_buffers_set.add(field)
    if root is not None:
        gm.train(root.training)
    return gm
