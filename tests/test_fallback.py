"""Unsupported code runs eagerly with a logged reason (file:line); fullgraph=True raises."""
import os

import pytest
import torch

import ptgo
from conftest import assert_same

HERE = os.path.basename(__file__)


def with_print(x):
    y = x * 2
    print("value computed")
    return y + 1


def with_item(x):
    return x * x.sum().item()


def with_branch(x):
    if x.sum() > 0:
        return x + 1
    return x - 1


SEEN = []


def with_global_mutation(x):
    SEEN.append(1)
    return x + 1


def helper(x):
    return torch.relu(x) * 3


def calls_helper_after_print(x):
    print("hello")
    return helper(x)


@pytest.mark.parametrize("fn,reason", [
    (with_print, "print"),
    (with_item, "item"),
    (with_branch, "tensor"),
    (with_global_mutation, "side effect"),
])
def test_falls_back_to_eager(fn, reason, counter, capsys, ptgo_log):
    ptgo.set_logs("graph_breaks")
    x = torch.randn(4)
    SEEN.clear()
    expected = fn(x)
    expected_out = capsys.readouterr().out
    n_seen = len(SEEN)
    SEEN.clear()
    out = ptgo.compile(fn, backend=counter)(x)
    assert_same(out, expected)
    assert capsys.readouterr().out == expected_out
    assert len(SEEN) == n_seen
    assert counter.frame_count == 0
    text = ptgo_log.text
    assert reason in text, text
    assert HERE + ":" in text, "graph break message should name the user's file:line: " + text


@pytest.mark.parametrize("fn", [with_print, with_item, with_branch, with_global_mutation])
def test_fullgraph_raises_unsupported(fn, counter):
    with pytest.raises(ptgo.Unsupported) as e:
        ptgo.compile(fn, backend=counter, fullgraph=True)(torch.randn(3))
    assert HERE + ":" in str(e.value), str(e.value)


def test_fallback_is_cached(counter, ptgo_log):
    ptgo.set_logs("graph_breaks")
    cf = ptgo.compile(with_item, backend=counter)
    for _ in range(3):
        cf(torch.randn(2))
    assert ptgo_log.text.count("Graph break") == 1


def test_inner_frames_still_captured(counter, capsys):
    x = torch.randn(4)
    out = ptgo.compile(calls_helper_after_print, backend=counter)(x)
    assert_same(out, helper(x))
    assert counter.frame_count == 1, "helper() is captured as its own frame"


def test_generator_function_runs_eagerly(counter):
    def gen(x):
        for i in range(3):
            yield x * i

    def f(x):
        return sum(gen(x))

    x = torch.randn(3)
    assert_same(ptgo.compile(f, backend=counter)(x), f(x))


def test_unsupported_argument_kind(counter):
    class Box:
        def __init__(self, t):
            self.t = t

    def f(b):
        return b.t * 2

    b = Box(torch.ones(2))
    assert_same(ptgo.compile(f, backend=counter)(b), f(b))
