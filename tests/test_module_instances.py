"""Module instances are not a recompile axis: a module whose forward runs as a frame of its own
(its caller runs eagerly, a graph break, a loop) is guarded by class and by what the trace reads
of it, its parameters and buffers are graph inputs, and distinct call sites have a limit of
their own (ptgo.config.accumulated_cache_size_limit)."""
import warnings

import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same

BACKENDS = ["counter", "eager", "inductor"]


def _backend(name, counter):
    return counter if name == "counter" else name


def _eager_loop(layers):
    def run(x):
        for layer in layers:
            x = layer(x)
            print(end="")  # a graph break inside a loop: run() runs eagerly, each forward on its own
        return x
    return run


@pytest.mark.parametrize("backend", BACKENDS)
def test_hundred_linears_compile_once(counter, backend):
    torch.manual_seed(0)
    layers = [nn.Linear(64, 64) for _ in range(100)]
    run = _eager_loop(layers)
    f = ptgo.compile(run, backend=_backend(backend, counter))
    x = torch.randn(2, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache-limit warning
        with torch.no_grad():
            got = f(x)
            again = f(x)
            expected = run(x)
    assert_same(got, expected)
    assert_same(again, expected)
    if backend == "counter":
        assert counter.frame_count == 1, "one graph for Linear.forward, shared by all 100 instances"


def test_training_through_instances_matches_eager(counter):
    torch.manual_seed(0)
    layers = [nn.Linear(16, 16) for _ in range(12)]
    ref_layers = [nn.Linear(16, 16) for _ in range(12)]
    for a, b in zip(layers, ref_layers):
        b.load_state_dict(a.state_dict())
    f = ptgo.compile(_eager_loop(layers), backend=counter)
    x = torch.randn(4, 16)
    f(x).square().sum().backward()
    _eager_loop(ref_layers)(x).square().sum().backward()
    for a, b in zip(layers, ref_layers):
        assert_same(a.weight.grad, b.weight.grad)
        assert_same(a.bias.grad, b.bias.grad)
    # inputs: x (no grad) for the first layer, a grad-requiring activation for the rest
    assert counter.frame_count == 2


def test_distinct_hyperparameters_use_the_accumulated_limit(counter):
    torch.manual_seed(0)
    convs = [nn.Conv2d(4, 4, 1 + 2 * (i % 10), padding=i % 10) for i in range(30)]

    def run(x):
        out = []
        for c in convs:
            out.append(c(x))
            print(end="")
        return out

    f = ptgo.compile(run, backend=counter)
    x = torch.randn(1, 4, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            got = f(x)
            f(x)
            expected = run(x)
    assert_same(got, expected)
    assert counter.frame_count == 10, "one entry per kernel size, more than cache_size_limit, no warning"


def test_accumulated_limit_applies(counter, monkeypatch):
    monkeypatch.setattr(ptgo.config, "accumulated_cache_size_limit", 4)
    convs = [nn.Conv2d(2, 2, 1 + 2 * i, padding=i) for i in range(6)]

    def run(x):
        out = []
        for c in convs:
            out.append(c(x))
            print(end="")
        return out

    f = ptgo.compile(run, backend=counter)
    x = torch.randn(1, 2, 6, 6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.no_grad():
            got = f(x)
            expected = run(x)
    assert_same(got, expected)
    assert len(ptgo._C.cache_info(nn.Conv2d.forward.__code__)) == 4
    # Past the limit Conv2d.forward runs eagerly; the frames it calls are still captured.
    assert len(ptgo._C.cache_info(nn.Conv2d._conv_forward.__code__)) == 2
    msgs = [str(m.message) for m in w if "accumulated_cache_size_limit" in str(m.message)]
    assert len(msgs) == 1, [str(m.message) for m in w]


def test_unspecialized_module_is_guarded_by_what_the_trace_read(counter):
    conv = nn.Conv2d(3, 4, 3, padding=1)
    f = ptgo.compile(_eager_loop([conv]), backend=counter)
    x = torch.randn(1, 3, 6, 6)
    with torch.no_grad():
        assert_same(f(x), conv(x))
        n = counter.frame_count
        conv.stride = (2, 2)  # a hyperparameter the trace read
        assert_same(f(x), conv(x))
        assert counter.frame_count == n + 1
        conv.weight.mul_(2)  # in place: the same graph sees new values
        assert_same(f(x), conv(x))
        assert counter.frame_count == n + 1
        conv.weight = nn.Parameter(torch.randn(4, 3, 3, 3))  # replaced, same shape
        assert_same(f(x), conv(x))
        conv.weight = nn.Parameter(torch.randn(4, 3, 1, 1))  # replaced, another shape
        conv.padding = (0, 0)
        assert_same(f(x), conv(x))
        # A method the forward calls, shadowed on the instance after compiling.
        conv._conv_forward = lambda inp, w, b: torch.zeros(1)
        assert_same(f(x), conv(x))


def test_module_passed_as_an_argument_is_not_specialized(counter):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return self.norm(torch.relu(self.fc(x)))

    @ptgo.compile(backend=counter)
    def apply(m, x):
        return m(x) + 1

    x = torch.randn(3, 8)
    blocks = [Block() for _ in range(10)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.no_grad():
            for b in blocks:
                assert_same(apply(b, x), b(x) + 1)
    assert counter.frame_count == 1


def test_batchnorm_statistics_in_a_frame_of_its_own(counter):
    torch.manual_seed(0)
    bns = [nn.BatchNorm1d(6) for _ in range(3)]
    ref = [nn.BatchNorm1d(6) for _ in range(3)]
    f = ptgo.compile(_eager_loop(bns), backend=counter)
    x = torch.randn(5, 6)
    for _ in range(3):
        got = f(x)
        expected = _eager_loop(ref)(x)
        assert_same(got, expected)
    for a, b in zip(bns, ref):
        assert_same(a.running_mean, b.running_mean)
        assert_same(a.running_var, b.running_var)
        assert_same(a.num_batches_tracked, b.num_batches_tracked)
    for m in bns + ref:
        m.eval()
    assert_same(f(x), _eager_loop(ref)(x))


def test_compiled_root_module_stays_specialized(counter):
    """The module the user compiled keeps identity guards: its parameters are get_attr nodes."""
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    cm = ptgo.compile(m, backend=counter)
    x = torch.randn(2, 4)
    assert_same(cm(x), m(x))
    gm = counter.graphs[-1]
    assert any(n.op == "get_attr" for n in gm.graph.nodes)
    assert not any(n.op == "placeholder" and "weight" in n.name for n in gm.graph.nodes)


class _LenCache(torch.nn.Module):
    """transformers' Cache: an nn.Module with a __len__ of its own."""

    def __init__(self):
        super().__init__()
        self.key_cache = [torch.ones(2), torch.ones(2) * 2]

    def __len__(self):
        return len(self.key_cache)


def test_len_of_a_module_with_its_own_len():
    cache = _LenCache()

    def f(x):
        return x * len(cache)

    compiled = ptgo.compile(f, fullgraph=True)
    x = torch.ones(2)
    assert torch.equal(compiled(x), f(x))
    cache.key_cache.append(torch.zeros(2))  # the list it reads is guarded: a new length recompiles
    assert torch.equal(compiled(x), f(x))
