"""``ptgo.explain(fn)(*args, **kwargs)``: what ptgo captures of a call, and why it breaks.

It forgets every compiled frame (``ptgo.reset()``), runs ``fn`` once compiled with a backend that
records the graphs, and reports them with every frame that did not become one graph: graph
breaks, frames that run eagerly (a break ptgo cannot resume from, a cache limit reached, code the
skip policy never captures), each with the reason, the user's file:line and a hint of what to
change.
"""
import json

import torch

from . import _C, _runtime
from .eval_frame import compile as _compile
from .eval_frame import reset as _reset


# What happened to a frame that did not become one whole graph (BreakReason.kind).
GRAPH_BREAK = "graph break"        # compiled up to an instruction, which runs eagerly, then resumed
RUNS_EAGERLY = "runs eagerly"      # a break ptgo cannot resume from (in a loop, in a try): the frame runs eagerly
CACHE_LIMIT = "cache limit"        # recompiled too often: new variants run eagerly
SKIPPED = "skipped"                # library code the skip policy never captures


class BreakReason:
    """One frame that did not become one graph: why, where, what to change, and what happened
    (``kind``: graph break, runs eagerly, cache limit, skipped)."""

    __slots__ = ("reason", "user_stack", "hint", "function", "kind")

    def __init__(self, reason, where, hint, function, kind):
        self.reason = reason
        self.user_stack = where
        self.hint = hint
        self.function = function
        self.kind = kind

    @property
    def graph_break(self):
        """Whether the frame was split (compiled before and after the break)."""
        return self.kind == GRAPH_BREAK

    def __repr__(self):
        return "BreakReason(kind=%r, reason=%r, where=%r)" % (self.kind, self.reason, self.user_stack)

    def __str__(self):
        s = "%s in %s: %s\n    at %s" % (self.kind, self.function, self.reason, self.user_stack)
        if self.hint:
            s += "\n    hint: " + self.hint
        return s


class ExplainOutput:
    """What explain() found. Fields mirror torch._dynamo.explain's."""

    def __init__(self, graphs, records, out):
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = [
            BreakReason(r["break_reason"], r.get("break_where", ""), r.get("break_hint", ""), r["function"],
                        r.get("kind") or (GRAPH_BREAK if r["compiled"] else RUNS_EAGERLY))
            for r in records if r.get("break_reason")
        ]
        # Breaks: where capture stopped at an unsupported construct, whether or not the frame
        # could resume after it (a cache limit or a skipped library frame is not a break).
        self.graph_break_count = sum(1 for b in self.break_reasons if b.kind in (GRAPH_BREAK, RUNS_EAGERLY))
        self.ops_per_graph = [
            [_node_name(n) for n in gm.graph.nodes if n.op in ("call_function", "call_method")
             and n.target is not torch._C._set_grad_enabled]
            for gm in graphs
        ]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.guards = [g for r in records for g in (r.get("guards") or [])]
        self.compile_times = {r["function"] + " (%s:%d)" % (r["file"].rsplit("/", 1)[-1], r["line"]): r["seconds"]
                              for r in records if not r.get("kind")}
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
        records = []
        skipped = _runtime.skipped_reason(fn) if _C is not None else None
        if skipped:
            records.append({"function": getattr(fn, "__qualname__", type(fn).__qualname__), "compiled": False,
                            "kind": SKIPPED, "break_reason": skipped, "break_where": "",
                            "break_hint": "compile the caller instead, or move the code out of the library",
                            "file": "", "line": 0, "seconds": 0.0})
        out = _compile(fn, backend=recorder)(*args, **kwargs)
        if _C is not None and _C.go_loaded():
            records += json.loads(_C.request("compile_log", "{}")) or []
        records += _runtime.eager_frames
        return ExplainOutput(graphs, records, out)

    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run
