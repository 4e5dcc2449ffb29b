"""``ptgo.explain(fn)(*args, **kwargs)``: what ptgo captures of a call, and why it breaks.

It forgets every compiled frame (``ptgo.reset()``), runs ``fn`` once compiled with a backend that
records the graphs, and reports them with every graph break: the reason, the user's file:line
and a hint of what to change.
"""
import json

import torch

from . import _C
from .eval_frame import compile as _compile
from .eval_frame import reset as _reset


class BreakReason:
    """One graph break (or frame ptgo ran eagerly): why, where, and what to change."""

    __slots__ = ("reason", "user_stack", "hint", "function", "graph_break")

    def __init__(self, reason, where, hint, function, graph_break):
        self.reason = reason
        self.user_stack = where
        self.hint = hint
        self.function = function
        self.graph_break = graph_break

    def __repr__(self):
        return "BreakReason(reason=%r, where=%r)" % (self.reason, self.user_stack)

    def __str__(self):
        kind = "graph break" if self.graph_break else "runs eagerly"
        s = "%s in %s: %s\n    at %s" % (kind, self.function, self.reason, self.user_stack)
        if self.hint:
            s += "\n    hint: " + self.hint
        return s


class ExplainOutput:
    """What explain() found. Fields mirror torch._dynamo.explain's."""

    def __init__(self, graphs, records, out):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = [
            BreakReason(r["break_reason"], r.get("break_where", ""), r.get("break_hint", ""),
                        r["function"], r["compiled"])
            for r in records if r.get("break_reason")
        ]
        self.graph_break_count = sum(1 for b in self.break_reasons if b.graph_break)
        self.ops_per_graph = [
            [_node_name(n) for n in gm.graph.nodes if n.op in ("call_function", "call_method")
             and n.target is not torch._C._set_grad_enabled]
            for gm in graphs
        ]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.guards = [g for r in records for g in (r.get("guards") or [])]
        self.compile_times = {r["function"] + " (%s:%d)" % (r["file"].rsplit("/", 1)[-1], r["line"]): r["seconds"]
                              for r in records}
        self.out = out

    def __repr__(self):
        return "ExplainOutput(graph_count=%d, graph_break_count=%d, op_count=%d)" % (
            self.graph_count, self.graph_break_count, self.op_count)

    def __str__(self):
        lines = [
            "Graph count: %d" % self.graph_count,
            "Graph break count: %d" % self.graph_break_count,
            "Op count: %d" % self.op_count,
        ]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, b in enumerate(self.break_reasons, 1):
                lines.append("  %d. %s" % (i, str(b).replace("\n", "\n     ")))
        for i, ops in enumerate(self.ops_per_graph):
            lines.append("Ops in graph %d: %s" % (i, ", ".join(ops) or "(none)"))
        if self.compile_times:
            lines.append("Compile times:")
            for k, v in self.compile_times.items():
                lines.append("  %s: %.1f ms" % (k, v * 1e3))
        return "\n".join(lines)


def _node_name(n):
    if n.op == "call_method":
        return n.target
    t = n.target
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__name__", str(t))
    mod = {"_operator": "operator"}.get(mod, mod)
    return (mod + "." + name) if mod and mod not in ("builtins",) else name


def explain(fn, *extra_args, **extra_kwargs):
    """``explain(fn)(*args, **kwargs)`` → ExplainOutput (also accepts ``explain(fn, *args)``)."""

    def run(*args, **kwargs):
        graphs = []

        def recorder(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        _reset()
        out = _compile(fn, backend=recorder)(*args, **kwargs)
        records = []
        if _C is not None and _C.go_loaded():
            records = json.loads(_C.request("compile_log", "{}")) or []
        return ExplainOutput(graphs, records, out)

    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run
