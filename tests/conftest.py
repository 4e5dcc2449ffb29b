"""Shared fixtures: a counting backend, eager comparison with tolerances per dtype."""
import collections
import dataclasses
import functools
import os
import sys
import types

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
# The ptgo under test is the one installed in this interpreter (an editable install of this
# checkout in .venv, a built copy in .venv-torch2); the checkout's python/ is the fallback.
try:
    import ptgo  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

import ptgo  # noqa: E402
from ptgo import _runtime  # noqa: E402

# The tests read ptgo's counters through _C.request, which needs the lib path that the first
# compile would set; a test whose first act is reading them must not find ptgo uninitialised.
_runtime.ensure_initialized()

# Tolerances per dtype (rtol, atol), as torch.testing uses.
TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


class CountingBackend:
    """A backend with torch.compile's contract that records what it is given and runs the graph
    with torch (gm.forward)."""

    def __init__(self):
        self.graphs = []
        self.example_inputs = []
        self.calls = 0

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, torch.fx.GraphModule), type(gm)
        # tensors, and ints and floats for dynamic int and float arguments (torch.compile passes
        # those the same way)
        assert all(isinstance(t, (torch.Tensor, int, float)) for t in example_inputs)
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        gm.graph.lint()

        def run(*args):
            self.calls += 1
            return gm.forward(*args)

        return run

    @property
    def frame_count(self):
        return len(self.graphs)

    def op_count(self, i=-1):
        return sum(1 for n in self.graphs[i].graph.nodes if n.op in ("call_function", "call_method")
                   and not (n.target is torch._C._set_grad_enabled))

    def targets(self, i=-1):
        out = []
        for n in self.graphs[i].graph.nodes:
            if n.op == "call_function":
                out.append(getattr(n.target, "__name__", str(n.target)))
            elif n.op == "call_method":
                out.append(n.target)
        return out


@pytest.fixture
def counter():
    return CountingBackend()


@pytest.fixture(autouse=True)
def _reset():
    ptgo.reset()
    yield
    ptgo.reset()


@pytest.fixture
def pointwise_way():
    """Sets how frozen pointwise convolutions run (_fast.force_pointwise: "packed", "unpacked",
    or "measure", the default, which times both on a shape's first call): a test that counts the
    ops a compiled graph runs must not depend on a measurement. Restored after the test."""
    fast = pytest.importorskip("ptgo._fast")
    before = fast.force_pointwise("measure")
    fast.force_pointwise(before)
    yield fast.force_pointwise
    fast.force_pointwise(before)


def _strides_defined(t):
    # eager defines the strides of every strided result (torch's stride propagation); a
    # tensor of 0 or 1 elements has no layout to compare
    return t.layout == torch.strided and t.numel() > 1


def _dense_strides(t):
    # strides of the dims whose size is not 1 (a size-1 dim's stride means nothing)
    return tuple(st for sz, st in zip(t.shape, t.stride()) if sz != 1)


def assert_same(actual, expected, path="result", _seen=None):
    """Compiled vs eager: same structure, types, dtypes, shapes, strides (of the dims larger
    than 1), devices, and values within the dtype's tolerance (exact for integers and bools). Objects are compared by their attributes;
    an object reached again (a cycle) must be reached again on both sides."""
    if _seen is None:
        _seen = {}
    if _is_plain_object(expected) or isinstance(expected, (dict, list, collections.deque)):
        if id(expected) in _seen:
            assert _seen[id(expected)][1] is actual, "%s: the object graph differs (a shared object is not shared)" % path
            return
        _seen[id(expected)] = (expected, actual)  # expected kept alive: its id stays unique
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), "%s: expected a tensor, got %r" % (path, type(actual))
        assert actual.dtype == expected.dtype, "%s: dtype %s != %s" % (path, actual.dtype, expected.dtype)
        assert actual.shape == expected.shape, "%s: shape %s != %s" % (path, tuple(actual.shape), tuple(expected.shape))
        assert actual.device == expected.device, path
        assert actual.requires_grad == expected.requires_grad, "%s: requires_grad %s != %s" % (
            path, actual.requires_grad, expected.requires_grad)
        if _strides_defined(expected):
            assert _dense_strides(actual) == _dense_strides(expected), "%s: strides %s != %s" % (
                path, actual.stride(), expected.stride())
        if expected.dtype in TOLERANCES:
            rtol, atol = TOLERANCES[expected.dtype]
            torch.testing.assert_close(actual.detach(), expected.detach(), rtol=rtol, atol=atol, equal_nan=True,
                                       msg=lambda m: "%s: %s" % (path, m))
        else:
            assert torch.equal(actual, expected), "%s: values differ" % path
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected), "%s: %r is not a %s" % (path, type(actual), type(expected).__name__)
        assert len(actual) == len(expected), "%s: length %d != %d" % (path, len(actual), len(expected))
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, "%s[%d]" % (path, i), _seen)
    elif isinstance(expected, dict):
        assert type(actual) is type(expected), "%s: %r is not a %s" % (path, type(actual), type(expected).__name__)
        assert list(actual) == list(expected), "%s: keys %s != %s" % (path, list(actual), list(expected))
        for k in expected:
            assert_same(dict.__getitem__(actual, k), dict.__getitem__(expected, k), "%s[%r]" % (path, k), _seen)
        if isinstance(expected, collections.defaultdict):
            assert actual.default_factory is expected.default_factory, "%s: default_factory" % path
        if type(expected) not in (dict, collections.OrderedDict, collections.defaultdict, collections.Counter) \
                and hasattr(expected, "__dict__"):
            assert_same(vars(actual), vars(expected), "vars(%s)" % path, _seen)
    elif isinstance(expected, collections.deque):
        assert type(actual) is type(expected), "%s: %r is not a deque" % (path, type(actual))
        assert actual.maxlen == expected.maxlen, "%s: maxlen %s != %s" % (path, actual.maxlen, expected.maxlen)
        assert_same(list(actual), list(expected), "list(%s)" % path, _seen)
    elif isinstance(expected, functools.partial):
        assert type(actual) is type(expected), "%s: %r is not a partial" % (path, type(actual))
        assert actual.func is expected.func, "%s.func: %r is not %r" % (path, actual.func, expected.func)
        assert_same(actual.args, expected.args, "%s.args" % path, _seen)
        assert_same(actual.keywords, expected.keywords, "%s.keywords" % path, _seen)
    elif _is_plain_object(expected):
        assert type(actual) is type(expected), "%s: %r is not a %s" % (path, type(actual), type(expected).__name__)
        assert_same(vars(actual), vars(expected), "vars(%s)" % path, _seen)
    elif isinstance(expected, float) and expected != expected:
        assert actual != actual, path
    else:
        assert type(actual) is type(expected), "%s: %r != %r" % (path, actual, expected)
        assert actual == expected, "%s: %r != %r" % (path, actual, expected)


def _is_plain_object(v):
    """Instances of Python classes (a helper object, an nn.Module) compared by their attributes."""
    return (hasattr(v, "__dict__") and not isinstance(v, (type, types.FunctionType, types.MethodType, types.ModuleType))
            and (type(v).__eq__ is object.__eq__ or dataclasses.is_dataclass(v)))


def clone_args(args):
    """Independent copies of tensor arguments (leaves stay leaves), other arguments as they are."""
    return [a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]


class LogCapture(list):
    """Messages logged under the ``ptgo`` logger (which does not propagate to the root)."""

    @property
    def text(self):
        return "\n".join(self)


@pytest.fixture
def ptgo_log():
    import logging

    records = LogCapture()

    class Handler(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    h = Handler(level=logging.DEBUG)
    logger = logging.getLogger("ptgo")
    logger.addHandler(h)
    try:
        yield records
    finally:
        logger.removeHandler(h)
        ptgo.set_logs()


def pytest_configure(config):
    # `make test` runs everything (nothing deselects slow); `pytest -m "not slow"` for a quick run.
    config.addinivalue_line("markers", "slow: the zoo's slowest cases (seconds each); run by make test")
