"""``ptgo.compile`` and friends: the user-facing surface of frame capture (DESIGN §3).

A compiled callable sets this thread's compile context in the shim and calls the original;
the shim's PEP 523 hook then captures the frames that run under it (DESIGN D2).
"""
import functools
import inspect
import itertools
import sys
import threading
import warnings
import weakref

import torch

from . import backends as _backends
from . import config

try:
    from . import _C
except ImportError as e:  # not built (or built for another Python): eager only
    _C = None
    _C_IMPORT_ERROR = e
else:
    _C_IMPORT_ERROR = None

_warned_unsupported = False
_warn_lock = threading.Lock()


def _capture_available():
    """Whether frame capture works in this interpreter; warns once when it does not."""
    global _warned_unsupported
    ok = _C is not None and _C.SUPPORTED and sys.version_info[:2] == (3, 11)
    if not ok:
        with _warn_lock:
            if not _warned_unsupported:
                _warned_unsupported = True
                if _C is None:
                    why = "ptgo's extension ptgo._C is not built (%s); run `make setup`" % _C_IMPORT_ERROR
                else:
                    why = "ptgo captures CPython 3.11 only, this is %d.%d" % sys.version_info[:2]
                warnings.warn("ptgo.compile: %s; running eagerly" % why, RuntimeWarning, stacklevel=3)
    else:
        from . import _runtime

        _runtime.ensure_initialized()
    return ok


class _Context:
    """What a compiled callable runs under: the backend and options. Cache entries are tagged
    with ``tag``: equal configurations share compiled code, different ones never do."""

    __slots__ = ("backend", "backend_name", "fullgraph", "dynamic", "mode", "options", "tag", "ptgo_inductor",
                 "ptgo_aot_eager", "freezing", "root", "__weakref__")

    _tags = {}  # (id(backend), options...) -> tag, while the backend lives
    _next_tag = itertools.count(1)  # tags are never reused
    _watched = {}  # id(backend) -> weak reference whose callback forgets the backend's tags
    _kept = []  # backends that cannot be weakly referenced stay alive, so their ids are never reused

    def __init__(self, backend, fullgraph, dynamic, mode, options):
        self.backend = _backends.lookup_backend(backend)
        # ptgo's own backend compiles in Go without a torch.fx round trip.
        self.ptgo_inductor = self.backend is _backends.inductor
        self.ptgo_aot_eager = self.backend is _backends.aot_eager
        self.backend_name = backend if isinstance(backend, str) else getattr(backend, "__name__", repr(backend))
        self.fullgraph = bool(fullgraph)
        if dynamic is not None and not isinstance(dynamic, bool):
            raise TypeError("ptgo.compile: dynamic must be None, True or False, got %r" % (dynamic,))
        if dynamic is None and config.assume_dynamic:
            dynamic = True
        self.dynamic = dynamic
        self.mode = mode
        self.options = dict(options or {})
        unknown = set(self.options) - {"freezing"}
        if unknown:
            raise ValueError("ptgo.compile: unknown options %s; ptgo knows: freezing" % ", ".join(sorted(unknown)))
        # 0 off, 1 on, 2 (no option given) where it is safe: an inference graph of a module in
        # eval mode (pipeline.Request.AutoFreeze).
        freezing = self.options.get("freezing")
        self.freezing = 2 if freezing is None else int(bool(freezing))
        # The module ptgo.compile was given (a weak reference; None for functions): captures
        # specialise to its identity, other modules reached from frame arguments go by class.
        self.root = None
        key = (id(self.backend), self.fullgraph, dynamic, mode, tuple(sorted(self.options.items(), key=repr)))
        tag = _Context._tags.get(key)
        if tag is None:
            tag = next(_Context._next_tag)
            _Context._tags[key] = tag
            _Context._watch(self.backend)
        self.tag = tag

    @staticmethod
    def _watch(backend):
        """Forget the backend's tags when it dies (before its id can be reused). Keeping every
        backend alive instead kept what it holds — explain()'s recorder holds GraphModules, which
        hold the user's parameters — for the life of the process."""
        bid = id(backend)
        if bid in _Context._watched:
            return
        try:
            _Context._watched[bid] = weakref.ref(backend, lambda _ref, bid=bid: _Context._forget(bid))
        except TypeError:
            _Context._kept.append(backend)
            _Context._watched[bid] = None

    @staticmethod
    def _forget(bid):
        _Context._watched.pop(bid, None)
        for key in [k for k in _Context._tags if k[0] == bid]:
            del _Context._tags[key]


_run_only = threading.local()


def _call_with_context(ctx, fn, args, kwargs):
    prev = _C.set_context(ctx, ctx.tag)
    try:
        return fn(*args, **kwargs)
    finally:
        _C.set_context(*prev)


class _DisabledContext:
    tag = 0


def _call_disabled(fn, args, kwargs):
    prev = _C.set_context(None, 0)
    try:
        return fn(*args, **kwargs)
    finally:
        _C.set_context(*prev)


def _log_if_skipped(model):
    from . import _logging, _runtime

    if _logging.enabled("graph_breaks"):
        why = _runtime.skipped_reason(model)
        if why:
            _logging.emit("graph_breaks", "ptgo.compile: %s" % why)


def _compile_function(fn, ctx):
    if not _capture_available():
        return fn
    _log_if_skipped(fn)
    # A C callable (≈50 ns): sets the context, calls fn, restores it. Binds like a function.
    compiled = _C.Compiled(fn, ctx, ctx.tag)
    try:
        functools.update_wrapper(compiled, fn)
    except (AttributeError, TypeError):
        pass
    return compiled


class OptimizedModule(torch.nn.Module):
    """The ``nn.Module`` ``ptgo.compile(module)`` returns.

    Calls run the original module under the compile context. Parameters, buffers and submodules
    are the original's (shared, not copied) and ``state_dict()`` keys are exactly the original's.
    """

    def __init__(self, mod, ctx):
        super().__init__()
        # Not registered as a child: introspection goes straight to the original, so names are
        # the original's (no "_orig_mod." prefix).
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_ptgo_context", ctx)
        ctx.root = weakref.ref(mod)
        # The original's __call__ (hooks included) runs eagerly; its forward frame is captured.
        call = _C.Compiled(mod, ctx, ctx.tag) if _capture_available() else mod
        if call is not mod:
            _log_if_skipped(mod)
        object.__setattr__(self, "_ptgo_call", call)
        self.training = mod.training

    def __call__(self, *args, **kwargs):
        return self._ptgo_call(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return object.__getattribute__(self, "_orig_mod")
        return getattr(self._orig_mod, name)

    def __dir__(self):
        return sorted(set(dir(self._orig_mod)) | {"_orig_mod"})

    def __repr__(self):
        return "OptimizedModule(%r)" % (self._orig_mod,)

    # Introspection and state go to the original, under its own names.
    def state_dict(self, *args, **kwargs):
        return self._orig_mod.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self._orig_mod.load_state_dict(*args, **kwargs)

    def parameters(self, recurse=True):
        return self._orig_mod.parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        return self._orig_mod.named_parameters(*args, **kwargs)

    def buffers(self, recurse=True):
        return self._orig_mod.buffers(recurse)

    def named_buffers(self, *args, **kwargs):
        return self._orig_mod.named_buffers(*args, **kwargs)

    def children(self):
        return self._orig_mod.children()

    def named_children(self):
        return self._orig_mod.named_children()

    def modules(self):
        return self._orig_mod.modules()

    def named_modules(self, *args, **kwargs):
        return self._orig_mod.named_modules(*args, **kwargs)

    def train(self, mode=True):
        self._orig_mod.train(mode)
        object.__setattr__(self, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def _apply(self, fn):
        self._orig_mod._apply(fn)
        return self

    def apply(self, fn):
        self._orig_mod.apply(fn)
        return self

    def zero_grad(self, set_to_none=False):
        self._orig_mod.zero_grad(set_to_none)

    def requires_grad_(self, requires_grad=True):
        self._orig_mod.requires_grad_(requires_grad)
        return self

    def __getstate__(self):
        raise TypeError(
            "ptgo: an OptimizedModule cannot be pickled; pickle its ._orig_mod (or its state_dict()) "
            "and compile again after loading"
        )


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """Compile ``model`` (an ``nn.Module`` or a function) like ``torch.compile``.

    On a module returns an ``OptimizedModule`` wrapping it; on a function returns a function;
    with ``model=None`` returns a decorator. Results are the same as eager; frames that cannot be
    captured run eagerly (or raise ``ptgo.Unsupported`` with ``fullgraph=True``).
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):
        raise TypeError(
            "ptgo.compile expects an nn.Module or a callable, got %s %r"
            % (type(model).__name__, model)
        )
    if mode is not None and mode not in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise ValueError("ptgo.compile: unknown mode %r; use one of default, reduce-overhead, max-autotune" % (mode,))
    if options is not None and not isinstance(options, dict):
        raise TypeError("ptgo.compile: options must be a dict, got %r" % (options,))
    if disable:
        return model
    ctx = _Context(backend, fullgraph, dynamic, mode, options)
    if isinstance(model, OptimizedModule):
        model = model._orig_mod
    if isinstance(model, torch.nn.Module):
        return OptimizedModule(model, ctx)
    if inspect.isclass(model):
        raise TypeError(
            "ptgo.compile expects an nn.Module instance or a function, got the class %s; "
            "instantiate it first: ptgo.compile(%s(...))" % (model.__name__, model.__name__)
        )
    return _compile_function(model, ctx)


def disable(fn=None, recursive=True):
    """Run ``fn`` eagerly even when called from compiled code (usable as a decorator)."""
    if fn is None:
        return functools.partial(disable, recursive=recursive)
    if _C is None:
        return fn

    @functools.wraps(fn)
    def disabled(*args, **kwargs):
        return _call_disabled(fn, args, kwargs)

    disabled._ptgo_disabled = True
    return disabled


def is_compiling():
    """True while ptgo is capturing the calling code (it is answered symbolically then); False
    when the code runs eagerly."""
    return False


def reset():
    """Forget every compiled frame and cache entry (like ``torch._dynamo.reset()``)."""
    if _C is not None:
        from . import _runtime

        _C.reset()
        _runtime.reset()
        if _C.go_loaded():
            _C.request("reset", "{}")
