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

Dynamic shapes (``dynamic=True``, automatic dynamic, ``mark_dynamic``): Dynamo's size symbols
(sympy symbols ``s77``, ``s27`` of its ShapeEnv) become ptgo's ``s0``, ``s1``, ... in the JSON's
``symbols`` table, each read by the runtime from the first placeholder that carries it bare (a
tensor dim, a SymInt placeholder, a storage offset), with the hint of this call. Sizes, strides
and offsets in metas are ``{"sym": ...}`` integer polynomials; a node that computes a size
(``x.size()``, ``getitem`` on it, ``operator.mul`` of SymInts, a ``SymFloat`` Dynamo specialised)
is folded into the expression its FakeTensor value holds, and its uses become that constant.
Expressions that are not integer polynomials (inexact ``FloorDiv``/``Mod``, ``Min``, a float
symbol) are refused. Dynamo owns the frame's guards, so what ptgo's compile assumes about the
symbols beyond Dynamo's (a symbol ≥ 2 where Dynamo allows less, a guard a decomposition
recorded) is checked on every call; a call that fails a check runs ``gm.forward``.

What cannot be expressed (a callable with no importable path, a non-tensor input, a size
expression that is no polynomial) raises :class:`FXImportUnsupported`; :func:`compile_fx` then
runs ``gm.forward`` and names the reason on ``PTGO_LOGS=perf_hints``, as it does for every graph
Go does not compile.
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


def _is_symbolic_tensor(t) -> bool:
    return any(isinstance(s, _SYM) for s in t.shape) or any(isinstance(s, _SYM) for s in t.stride()) or \
        isinstance(t.storage_offset(), _SYM)


def _tensor_meta(t, what: str, syms=None) -> dict:
    if t.layout != torch.strided:
        raise FXImportUnsupported("%s is a %s tensor (ptgo compiles strided tensors)" % (what, t.layout))
    shape = list(t.shape)
    if _is_symbolic_tensor(t):
        if syms is None:
            raise FXImportUnsupported("%s has symbolic shapes %s outside a graph's symbols" % (what, tuple(shape)))
        size = lambda x, part: syms.int_json(x, "%s's %s" % (what, part))  # noqa: E731
    else:
        size = lambda x, part: int(x)  # noqa: E731
    dt = _DTYPE_NAMES.get(t.dtype)
    if dt is None:
        raise FXImportUnsupported("%s has dtype %s, which ptgo does not compile" % (what, t.dtype))
    dev = t.device
    return {"tensor": {"dtype": dt, "shape": [size(s, "size") for s in shape],
                       "stride": [size(s, "stride") for s in t.stride()],
                       "storage_offset": size(t.storage_offset(), "storage offset"), "device": str(dev),
                       "requires_grad": bool(t.requires_grad)}}


def _value_meta(v, what: str, syms=None):
    """A META of the schema for a node's value (a tensor, a tuple of them, a Python scalar)."""
    if isinstance(v, torch.Tensor):
        return _tensor_meta(v, what, syms)
    if isinstance(v, _SYM):
        if syms is None:
            raise FXImportUnsupported("%s is a symbolic %s outside a graph's symbols" % (what, type(v).__name__))
        return syms.scalar_json(v, what)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, (tuple, list)):
        return {"tuple": [_value_meta(x, what, syms) for x in v]}
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


def _arg(a, names: Dict[torch.fx.Node, str], where: str, syms=None):
    """An ARG of the schema for a node argument (syms: the graph's _Symbols; a node it folded
    is the constant it computes)."""
    if isinstance(a, torch.fx.Node):
        if syms is not None and a in syms.folded:
            return syms.folded[a]
        return {"node": names[a]}
    if a is None or isinstance(a, (bool, str)):
        return a
    if isinstance(a, _SYM):
        if syms is None:
            raise FXImportUnsupported("%s takes a symbolic value outside a graph's symbols" % where)
        return syms.scalar_json(a, where)
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
        return {"tuple": [_arg(x, names, where, syms) for x in a]}
    if isinstance(a, tuple):
        return {"tuple": [_arg(x, names, where, syms) for x in a]}
    if isinstance(a, list):
        return {"list": [_arg(x, names, where, syms) for x in a]}
    if isinstance(a, slice):
        return {"slice": [_arg(x, names, where, syms) for x in (a.start, a.stop, a.step)]}
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return {"dict": [[k, _arg(v, names, where, syms)] for k, v in a.items()]}
    raise FXImportUnsupported("%s takes a %s (%r), which ptgo's graphs do not hold" % (where, type(a).__name__, a))


class _Symbols:
    """A Dynamo graph's size symbols as ptgo's: Dynamo's sympy symbols get ids 0, 1, ... in the
    order the placeholders carry them bare (where ``fxgraph.SymbolBindings`` finds them), with
    the hints of this call; SymInt/SymFloat values become fxgraph's ``{"sym": ...}`` integer
    polynomials or constants; ``folded`` maps each node that only computes such a value to it."""

    def __init__(self):
        self.ids: Dict[Any, int] = {}
        self.entries: List[dict] = []  # the JSON's "symbols"
        self.low: List[Any] = []  # Dynamo's lower bound of each symbol's value range
        self.folded: Dict[torch.fx.Node, Any] = {}
        self.env = None
        self._readers = None

    def _note_env(self, x):
        if self.env is None:
            self.env = getattr(getattr(x, "node", None), "shape_env", None)

    def define(self, x, inp: int, dim: int, hint):
        """Placeholder ``inp`` carries ``x`` (a SymInt) bare at ``dim`` (-1: it is the int, -2: the
        storage offset): a new symbol unless one already has it."""
        self._note_env(x)
        e = x.node.expr
        if not getattr(e, "is_Symbol", False) or e in self.ids:
            return
        hint = self._hint(e, hint)
        self.ids[e] = len(self.entries)
        self.entries.append({"input": inp, "dim": dim, "hint": hint})
        low = None
        ranges = getattr(self.env, "var_to_range", None)
        if ranges is not None and e in ranges:
            low = ranges[e].lower
        self.low.append(low)

    def _hint(self, e, hint):
        vals = getattr(self.env, "backed_var_to_val", None)
        if vals is None:
            vals = getattr(self.env, "var_to_val", None) or {}
        v = vals.get(e)
        if v is not None:
            v = int(v)
            if hint is not None and int(hint) != v:
                raise FXImportUnsupported("size symbol %s has hint %d but the example input has %d" % (e, v, hint))
            return v
        if hint is None:
            raise FXImportUnsupported("size symbol %s has no hint (an unbacked, data-dependent size)" % e)
        return int(hint)

    def needs_check(self, sid: int) -> bool:
        """Whether Dynamo lets symbol ``sid`` be < 2, which ptgo assumes it is not."""
        low = self.low[sid]
        try:
            return low is None or not bool(low >= 2)
        except TypeError:
            return True

    def poly(self, e, what: str) -> Dict[Tuple[int, ...], int]:
        """A sympy expression as {monomial (sorted symbol ids): coefficient}; () is the constant."""
        import sympy

        try:
            from torch.utils._sympy import functions as F
        except ImportError:  # pragma: no cover - torch 2 has it
            F = None
        if e.is_Integer:
            return {(): int(e)} if int(e) else {}
        if e.is_Symbol:
            if e not in self.ids:
                raise FXImportUnsupported("%s uses size symbol %s, which no input carries as a size or an int "
                                          "(ptgo reads symbols from input sizes, int inputs and storage offsets)"
                                          % (what, e))
            return {(self.ids[e],): 1}
        if isinstance(e, sympy.Add):
            out: Dict[Tuple[int, ...], int] = {}
            for a in e.args:
                _padd(out, self.poly(a, what))
            return out
        if isinstance(e, sympy.Mul):
            out = {(): 1}
            for a in e.args:
                out = _pmul(out, self.poly(a, what))
            return out
        pow_types = (sympy.Pow,) + ((F.PowByNatural,) if F is not None and hasattr(F, "PowByNatural") else ())
        if isinstance(e, pow_types) and e.args[1].is_Integer and int(e.args[1]) >= 0:
            base, out = self.poly(e.args[0], what), {(): 1}
            for _ in range(int(e.args[1])):
                out = _pmul(out, base)
            return out
        if F is not None and isinstance(e, tuple(getattr(F, n) for n in ("FloorDiv", "Mod", "PythonMod")
                                                   if hasattr(F, n))):
            a, b = self.poly(e.args[0], what), self.poly(e.args[1], what)
            n = b.get(()) if set(b) <= {()} else None
            if n is not None and n > 0 and all(c % n == 0 for m, c in a.items() if m):
                c = a.get((), 0)
                if isinstance(e, F.FloorDiv):
                    out = {m: k // n for m, k in a.items() if m}
                    if c // n:
                        out[()] = c // n
                    return out
                return {(): c % n} if c % n else {}
            raise FXImportUnsupported("%s is %s, which is not an integer polynomial of the input sizes "
                                      "(an inexact %s)" % (what, e, type(e).__name__))
        minmax = [t for t in (sympy.Max, sympy.Min) + tuple(getattr(F, n) for n in ("Max", "Min") if F is not None
                                                            and hasattr(F, n))]
        if isinstance(e, tuple(minmax)):
            # Max(1, s0) of a contiguous stride: one argument that is ≥ (Max) or ≤ (Min) every other
            # for all symbol values ≥ 2 (which ptgo assumes and checks where Dynamo does not)
            ps = [self.poly(a, what) for a in e.args]
            want_max = type(e).__name__ == "Max"
            for p in ps:
                if all(_provably_ge(p, q) if want_max else _provably_ge(q, p) for q in ps):
                    return p
            raise FXImportUnsupported("%s is %s, which is not an integer polynomial of the input sizes (a %s of "
                                      "sizes no argument of which is always the %s)"
                                      % (what, e, type(e).__name__, "largest" if want_max else "smallest"))
        raise FXImportUnsupported("%s is %s, which is not an integer polynomial of the input sizes (%s)"
                                  % (what, e, type(e).__name__))

    def int_json(self, x, what: str):
        """An int or SymInt as the schema's INT or {"sym": ...}."""
        if not isinstance(x, _SYM):
            return int(x)
        self._note_env(x)
        p = self.poly(x.node.expr, what)
        if set(p) <= {()}:
            return int(p.get((), 0))
        terms = sorted((m, c) for m, c in p.items() if m)
        return {"sym": {"c": int(p.get((), 0)), "terms": [[int(c), list(m)] for m, c in terms]}}

    def scalar_json(self, x, what: str):
        """A SymInt, SymFloat or SymBool value as an ARG: a size expression, or the constant
        Dynamo specialised it to (its guards check that)."""
        self._note_env(x)
        e = x.node.expr
        if isinstance(x, torch.SymInt):
            return self.int_json(x, what)
        if getattr(e, "free_symbols", None):
            raise FXImportUnsupported("%s is a symbolic %s (%s): ptgo's size symbols are integers"
                                      % (what, type(x).__name__, e))
        if isinstance(x, torch.SymBool):
            return bool(e)
        return _float(float(e))

    def fold(self, node, v, what: str) -> bool:
        """Folds ``node`` when its value ``v`` is a size computation: SymInts, a torch.Size, or a
        plain number computed from folded values (a size Dynamo specialised)."""
        if _holds_tensor(v) or not (_holds_sym(v) or self._reads_folded(node)):
            return False
        if not isinstance(v, (tuple, list, int, float, bool) + _SYM):
            return False
        self.folded[node] = self._value_json(v, what)
        return True

    def _reads_folded(self, node) -> bool:
        found = []
        torch.fx.node.map_arg((node.args, node.kwargs), lambda a: found.append(a in self.folded))
        return any(found)

    def _value_json(self, v, what):
        if isinstance(v, _SYM):
            return self.scalar_json(v, what)
        if isinstance(v, (tuple, list)):
            return {"tuple": [self._value_json(x, what) for x in v]}
        if v is None or isinstance(v, (bool, int)):
            return v
        if isinstance(v, float):
            return _float(v)
        raise FXImportUnsupported("%s is a %s, which ptgo's graphs do not hold" % (what, type(v).__name__))

    def value_of(self, arg, args) -> int:
        """The value of a folded size expression for the call's arguments."""
        if not isinstance(arg, dict):
            return arg
        sym = arg["sym"]
        vals = self.values(args)
        v = sym["c"]
        for c, ids in sym["terms"]:
            for i in ids:
                c *= vals[i]
            v += c
        return v

    def readers(self):
        """One function per symbol reading its value from the call's arguments."""
        out = []
        for e in self.entries:
            i, d = e["input"], e["dim"]
            if d == -1:
                out.append(lambda args, i=i: int(args[i]))
            elif d == -2:
                out.append(lambda args, i=i: args[i].storage_offset())
            else:
                out.append(lambda args, i=i, d=d: args[i].shape[d])
        return out

    def values(self, args) -> List[int]:
        if self._readers is None:
            self._readers = self.readers()
        return [r(args) for r in self._readers]


def _padd(acc, p):
    for m, c in p.items():
        c += acc.get(m, 0)
        if c:
            acc[m] = c
        else:
            acc.pop(m, None)


def _provably_ge(a, b) -> bool:
    """Whether polynomial a ≥ b for every value ≥ 2 of the symbols: a - b has no negative
    coefficient on a symbolic term (so it only grows with each symbol) and is ≥ 0 with all at 2."""
    d = dict(a)
    _padd(d, {m: -c for m, c in b.items()})
    if any(c < 0 for m, c in d.items() if m):
        return False
    return sum(c * (2 ** len(m)) for m, c in d.items()) >= 0


def _pmul(a, b):
    out: Dict[Tuple[int, ...], int] = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            _padd(out, {tuple(sorted(ma + mb)): ca * cb})
    return out


def _holds_sym(v) -> bool:
    if isinstance(v, _SYM):
        return True
    if isinstance(v, (tuple, list)):
        return any(_holds_sym(x) for x in v)
    return False


def _holds_tensor(v) -> bool:
    if isinstance(v, torch.Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_holds_tensor(x) for x in v)
    return False


def _example_value(node):
    for key in ("example_value", "val"):
        if key in node.meta:
            return node.meta[key]
    return None


def _define_symbols(gm, example_inputs) -> "_Symbols":
    """The symbols the placeholders carry bare, in SymbolBindings' order."""
    syms = _Symbols()
    i = 0
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        ex = example_inputs[i] if i < len(example_inputs) else None
        v = _example_value(node)
        if isinstance(ex, _SYM) or isinstance(v, _SYM):
            x = v if isinstance(v, _SYM) else ex
            if isinstance(x, torch.SymInt):
                syms.define(x, i, -1, x.node.hint if x.node.has_hint() else None)
        elif isinstance(v, torch.Tensor) and _is_symbolic_tensor(v):
            real = ex if isinstance(ex, torch.Tensor) else None
            for d, sz in enumerate(v.shape):
                if isinstance(sz, torch.SymInt):
                    syms.define(sz, i, d, None if real is None else int(real.shape[d]))
            off = v.storage_offset()
            if isinstance(off, torch.SymInt):
                syms.define(off, i, -2, None if real is None else int(real.storage_offset()))
        i += 1
    return syms



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


def _node_meta(node, what: str, syms=None):
    if "ptgo_meta" in node.meta:
        return _ptgo_meta(node.meta["ptgo_meta"])
    for key in ("example_value", "val"):
        if key in node.meta:
            return _value_meta(node.meta[key], what, syms)
    return None


def graph_json(gm: torch.fx.GraphModule, example_inputs) -> Tuple[str, Dict[str, torch.Tensor], Any]:
    """(JSON text, get_attr tensors by path, output spec) for ``gm``; raises
    FXImportUnsupported for what ptgo's graph IR cannot express."""
    text, attrs, spec, _ = _graph_json(gm, example_inputs)
    return text, attrs, spec


def _graph_json(gm, example_inputs):
    """graph_json and the graph's _Symbols (its size symbols and folded size computations)."""
    nodes: List[dict] = []
    names: Dict[torch.fx.Node, str] = {}
    attrs: Dict[str, torch.Tensor] = {}
    example_inputs = list(example_inputs)
    syms = _define_symbols(gm, example_inputs)
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
            v = _example_value(node)
            if isinstance(ex, _SYM) or isinstance(v, _SYM):
                x = v if isinstance(v, _SYM) else ex
                meta = syms.int_json(x, "input %s" % node.name) if isinstance(x, torch.SymInt) else None
                if not isinstance(meta, dict):
                    raise FXImportUnsupported("input %s is a %s Dynamo specialised to %r (ptgo's int inputs are "
                                              "size symbols)" % (node.name, type(x).__name__, meta))
                syms.folded[node] = meta  # its uses read the symbol as a size expression
                jn["meta"] = meta
                nodes.append(jn)
                continue
            if not isinstance(ex, torch.Tensor):
                raise FXImportUnsupported("input %s is a %s, not a tensor" % (node.name, type(ex).__name__))
            meta = _node_meta(node, what) if "ptgo_meta" in node.meta else None
            if meta is None:
                if isinstance(v, torch.Tensor) and _is_symbolic_tensor(v):
                    meta = _tensor_meta(v, what, syms)
                    t = meta["tensor"]
                    t["requires_grad"] = bool(ex.requires_grad)
                    if t["dtype"] != _DTYPE_NAMES.get(ex.dtype) or t["device"] != str(ex.device):
                        raise FXImportUnsupported("input %s: its example is %s on %s, its FakeTensor %s on %s"
                                                  % (node.name, ex.dtype, ex.device, v.dtype, v.device))
                else:
                    if v is not None:
                        _value_meta(v, what, syms)  # refuses what ptgo's graphs do not hold
                    meta = _tensor_meta(ex, what)
            jn["meta"] = meta
        elif node.op in ("call_function", "call_method"):
            if syms.fold(node, _example_value(node), what):
                continue  # a size computation: its uses take the expression
            if node.op == "call_function":
                op, target = call_target(node.target)
            else:
                op, target = "call_method", node.target
            jn["op"], jn["target"] = op, target
            jn["args"] = [_arg(a, names, what, syms) for a in node.args]
            if node.kwargs:
                jn["kwargs"] = [[k, _arg(v, names, what, syms)] for k, v in node.kwargs.items()]
            meta = _node_meta(node, what, syms)
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
            out_spec = _spec(node.args[0], leaves, syms)
            jn["args"] = [{"tuple": [{"node": n} for n in leaves]}]
        else:
            raise FXImportUnsupported("node %s has op %s (call_module: ptgo compiles flat graphs)" % (node.name, node.op))
        where = _where(node)
        if where:
            jn["where"] = where
        nodes.append(jn)
    if nph != len(example_inputs):
        raise FXImportUnsupported("%d example inputs for %d placeholders" % (len(example_inputs), nph))
    graph: Dict[str, Any] = {"version": 1, "name": "forward"}
    if syms.entries:
        graph["symbols"] = syms.entries
    graph["nodes"] = nodes
    return json.dumps(graph), attrs, out_spec, syms


def _get_attr(gm, path):
    obj = gm
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _spec(a, leaves: List[str], syms=None):
    """The output structure: ("out", i) for the i-th distinct node, ("const", v) for constants,
    ("sym", expr) for a size the graph returns (computed from the call's arguments)."""
    if isinstance(a, torch.fx.Node):
        if syms is not None and a in syms.folded:
            v = syms.folded[a]
            if isinstance(v, dict) and "sym" in v:
                return ("sym", v)
            if v is None or isinstance(v, (bool, int)):
                return ("const", v)
            raise FXImportUnsupported("the graph returns %s, a size computation ptgo does not rebuild" % a.name)
        if a.name not in leaves:
            leaves.append(a.name)
        return ("out", leaves.index(a.name))
    if isinstance(a, tuple):
        return ("tuple", [_spec(x, leaves, syms) for x in a])
    if isinstance(a, list):
        return ("list", [_spec(x, leaves, syms) for x in a])
    if isinstance(a, dict):
        return ("dict", [(k, _spec(v, leaves, syms)) for k, v in a.items()])
    if a is None or isinstance(a, (bool, int, float, str)):
        return ("const", a)
    raise FXImportUnsupported("the graph returns a %s" % type(a).__name__)


def _builder(spec, syms=None):
    """A function (compiled outputs, call arguments) -> what gm.forward returns."""
    kind, x = spec
    if kind == "out":
        return lambda outs, args: outs[x]
    if kind == "const":
        return lambda outs, args: x
    if kind == "sym":
        return lambda outs, args: syms.value_of(x, args)
    if kind in ("tuple", "list"):
        parts = [_builder(s, syms) for s in x]
        wrap = tuple if kind == "tuple" else list
        return lambda outs, args: wrap([p(outs, args) for p in parts])
    keys = [k for k, _ in x]
    parts = [_builder(s, syms) for _, s in x]
    return lambda outs, args: {k: p(outs, args) for k, p in zip(keys, parts)}


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
    positionally and returns what ``gm.forward`` returns.

    Freezing (A183), as ``ptgo.compile`` does it: ``options={"freezing": True}`` asks for it and
    by default it is on in an inference graph (grad off when compiled). The parameters and
    buffers Dynamo lifted to inputs become constants (BatchNorms fold into convolutions, their
    weights are packed); every call checks they are the same tensors at the same versions and
    data, and a call that finds one written compiles again with the new values (a few times,
    then the parameters stay inputs), said on perf_hints."""
    options = dict(options or {})
    freezing = options.get("freezing")
    freeze = (not torch.is_grad_enabled()) if freezing is None else bool(freezing)
    compiled = _compile_fx(gm, example_inputs, freeze)
    if compiled.sources is None:
        return compiled.run
    from . import _logging

    state = [compiled, 0]

    def run(*args):
        c = state[0]
        if c.sources is None or c.unchanged(args):
            return c.run(*args)
        state[1] += 1
        again = state[1] <= _REFREEZES
        _logging.emit("perf_hints", "%s: a frozen parameter or buffer was written or replaced since it was compiled: "
                      "compiling it again %s" % (type(gm).__name__, "with the new values" if again else
                                                 "with parameters as inputs (written %d times)" % state[1]))
        state[0] = c = _compile_fx(gm, args, again)
        return c.run(*args)

    return run


# How many times a frozen FX graph whose parameters were written is frozen again before they
# stay inputs (an evaluation after each training epoch refreezes; a write every call does not).
_REFREEZES = 8


class _CompiledFX:
    """One compile of an FX graph: run (takes the graph's inputs) and, when frozen, the
    tensors it made constants: (position or None for a get_attr, tensor, version, data_ptr)."""

    __slots__ = ("run", "sources")

    def __init__(self, run, sources=None):
        self.run, self.sources = run, sources

    def unchanged(self, args):
        for i, t, version, ptr in self.sources:
            if i is not None and args[i] is not t:
                return False
            if t._version != version or t.data_ptr() != ptr:
                return False
        return True


def _static_inputs(gm, example_inputs, attrs):
    """The placeholders Dynamo lifted from the module's parameters and buffers (it marks their
    tensors static), by name; their tensors are added to attrs under those names. A tensor
    without a version counter (made under inference_mode) cannot be checked and stays an input."""
    out = []
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, ex in zip(phs, example_inputs):
        if (isinstance(ex, torch.Tensor) and getattr(ex, "_dynamo_static_input_type", None) is not None
                and not ex.is_inference() and node.name not in attrs):
            out.append(node.name)
            attrs[node.name] = ex
    return out


def _compile_fx(gm, example_inputs, freeze):
    from . import _C, _logging, _runtime

    try:
        text, attrs, spec, syms = _graph_json(gm, example_inputs)
    except FXImportUnsupported as e:
        return _CompiledFX(_fallback(gm, str(e)))
    _runtime.ensure_initialized()
    example_inputs = list(example_inputs)
    own_attrs = list(attrs.values())
    static = _static_inputs(gm, example_inputs, attrs) if freeze else []
    opts = json.dumps({"grad_enabled": torch.is_grad_enabled(), "freezing": freeze, "static": static,
                       "name": type(gm).__name__ if type(gm).__name__ != "GraphModule" else "forward"})
    # A kernel that rejects its data hands the call to torch: with frozen inputs it gets the
    # inputs that stayed (frozen_at is known once the compile returns, before any call).
    frozen_at: List[Tuple[int, torch.Tensor]] = []

    def rerun_forward(*args):
        if frozen_at:
            full = list(args)
            for i, t in frozen_at:
                full.insert(i, t)
            args = tuple(full)
        return gm.forward(*args)

    ok, result = _C.compile_fx(text, attrs, opts, _C.Disabled(rerun_forward))
    if not ok:
        # Go named the reason on perf_hints (and counted it in inductor_stats).
        return _CompiledFX(gm.forward)
    result, guards, frozen = result[0], json.loads(result[1]), json.loads(result[2])
    sources = None
    if frozen["frozen"]:
        frozen_at.extend((i, example_inputs[i]) for i in frozen["inputs"])
        sources = [(i, t, t._version, t.data_ptr()) for i, t in frozen_at]
        sources += [(None, t, t._version, t.data_ptr()) for t in own_attrs if not t.is_inference()]
        if frozen_at:
            keep = [i for i in range(len(example_inputs)) if i not in frozen["inputs"]]
            compiled = result

            def result(*args):
                return compiled(*[args[i] for i in keep])
    # The kernels index each input's storage with the storage offset it had when compiled (or
    # its symbol), and Dynamo's guards do not check storage offsets: a call with a view at
    # another offset runs gm.forward (torch), said once on perf_hints.
    sym_offsets = {e["input"] for e in syms.entries if e["dim"] == -2}
    offsets = [(i, a.storage_offset()) for i, a in enumerate(example_inputs)
               if isinstance(a, torch.Tensor) and i not in sym_offsets]
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

    check = _symbol_check(gm, syms, guards)
    if check is None:
        use_torch = offsets_differ
    else:
        def use_torch(args):  # the offsets, then what ptgo assumed about the size symbols
            return offsets_differ(args) or not check(args)

    if _is_identity(spec, len(_output_leaves(spec))):
        def run(*args):
            return gm.forward(*args) if use_torch(args) else result(*args)
        return _CompiledFX(run, sources)
    build = _builder(spec, syms)

    def run(*args):
        return gm.forward(*args) if use_torch(args) else build(result(*args), args)

    return _CompiledFX(run, sources)


_RELS = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, ">": operator.gt}


def _symbol_check(gm, syms, guards):
    """A function of the call's arguments that says whether ptgo's compile holds for their sizes:
    every symbol ≥ 2 where Dynamo allows less (a SymInt input), and every guard ptgo's import and
    compile recorded (Dynamo checks only its own). None when there is nothing to check."""
    from . import _logging

    small = [i for i in range(len(syms.entries)) if syms.needs_check(i)]
    if not small and not guards:
        return None
    readers = syms.readers()
    polys = [(g["sym"]["c"], g["sym"]["terms"], _RELS[g["rel"]], g.get("why", "")) for g in guards]
    hinted = []

    def check(args):
        vals = [r(args) for r in readers]
        why = None
        for i in small:
            if vals[i] < 2:
                why = "size symbol s%d is %d here; ptgo compiled it for values >= 2" % (i, vals[i])
                break
        else:
            for c, terms, rel, reason in polys:
                v = c
                for k, ids in terms:
                    for j in ids:
                        k *= vals[j]
                    v += k
                if not rel(v, 0):
                    why = "a guard ptgo's compile assumed fails (%s)" % (reason or "a size relation")
                    break
        if why is None:
            return True
        if not hinted:
            hinted.append(True)
            _logging.emit("perf_hints", "%s: %s: this call runs the graph with torch" % (type(gm).__name__, why))
        return False

    return check


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
