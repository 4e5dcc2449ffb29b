"""explain() and the logs account for every frame: graph breaks, frames that run eagerly (a break
ptgo cannot resume from, a cache limit, library code the skip policy never captures), each with
its reason, file:line and hint; PTGO_LOGS=graph_code prints the graph for every backend."""
import json
import warnings

import pytest
import torch
import torch.nn as nn

import ptgo
from ptgo import explain as explain_mod


def two_breaks(x):
    y = torch.relu(x)
    print(end="")
    y = y * 2
    print(end="")
    return y + 1


def loop_break(x, layers):
    for layer in layers:
        x = layer(x)
        print(end="")
    return x


def test_counts_agree_with_what_ran():
    e = ptgo.explain(two_breaks)(torch.randn(3))
    assert e.graph_count == 3
    assert e.graph_break_count == 2
    assert [b.kind for b in e.break_reasons] == ["graph break", "graph break"]
    for b in e.break_reasons:
        assert "test_explain.py:" in b.user_stack and b.hint


def test_refused_frame_is_listed_and_counted():
    layers = [nn.Linear(4, 4) for _ in range(3)]
    with torch.no_grad():
        e = ptgo.explain(loop_break)(torch.randn(2, 4), layers)
    kinds = [b.kind for b in e.break_reasons]
    assert kinds == ["runs eagerly"], e.break_reasons
    b = e.break_reasons[0]
    assert "inside a loop" in b.reason and "test_explain.py:" in b.user_stack
    assert e.graph_break_count == 1
    assert e.graph_count == 1, "the three Linear.forward frames share one graph"


def test_cache_limit_is_listed(monkeypatch):
    monkeypatch.setattr(ptgo.config, "cache_size_limit", 2)

    def f(x, n):
        return x * n

    def caller(x):
        out = []
        for n in range(4):
            out.append(f(x, n))
            print(end="")
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = ptgo.explain(caller)(torch.randn(3))
    limits = [b for b in e.break_reasons if b.kind == "cache limit"]
    assert len(limits) == 1, e.break_reasons
    assert "cache_size_limit" in limits[0].reason and "L['n'] == " in limits[0].reason
    assert "test_explain.py:" in limits[0].user_stack and limits[0].hint
    assert e.graph_count == 2


def test_skipped_library_frame_is_listed(ptgo_log):
    ptgo.set_logs("graph_breaks")
    e = ptgo.explain(torch.nn.functional.softsign)(torch.randn(3))
    assert e.graph_count == 0
    skipped = [b for b in e.break_reasons if b.kind == "skipped"]
    assert len(skipped) == 1 and "torch code" in skipped[0].reason, e.break_reasons
    assert e.graph_break_count == 0
    ptgo.compile(json.dumps)
    assert any("standard-library code" in m for m in ptgo_log), list(ptgo_log)


def test_report_text_names_every_kind(monkeypatch):
    layers = [nn.Linear(4, 4) for _ in range(2)]
    with torch.no_grad():
        text = str(ptgo.explain(loop_break)(torch.randn(2, 4), layers))
    assert "runs eagerly in loop_break" in text and "hint:" in text
    assert "Graph break count: 1" in text


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_graph_code_for_every_backend(ptgo_log, backend):
    ptgo.set_logs("graph_code")

    def g(x):
        return torch.sigmoid(x) * 3

    ptgo.compile(g, backend=backend)(torch.randn(4))
    logged = [m for m in ptgo_log if "TRACED GRAPH" in m]
    assert len(logged) == 1, list(ptgo_log)
    assert "torch.sigmoid" in logged[0] and "def forward" in logged[0]
