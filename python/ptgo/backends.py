"""Backends: ``backend(gm: torch.fx.GraphModule, example_inputs: list[Tensor]) -> callable``.

The callable takes the graph's inputs positionally, like ``gm.forward``, and returns what the
graph returns. Backends are called once per captured graph, at torch-function level (before
ptgo's decompositions), exactly as torch.compile calls them.
"""
_BACKENDS = {}


def register_backend(name=None, compiler_fn=None):
    """Register ``compiler_fn`` under ``name``; usable as ``@register_backend`` too."""
    if compiler_fn is None and callable(name):
        compiler_fn, name = name, name.__name__
    if compiler_fn is None:
        return lambda fn: register_backend(name or fn.__name__, fn)
    if not isinstance(name, str) or not name:
        raise TypeError("ptgo.register_backend: name must be a non-empty str, got %r" % (name,))
    if not callable(compiler_fn):
        raise TypeError("ptgo.register_backend: compiler_fn must be callable, got %r" % (compiler_fn,))
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise ValueError("ptgo.register_backend: a backend named %r is already registered" % name)
    _BACKENDS[name] = compiler_fn
    return compiler_fn


def list_backends(exclude_tags=None):
    """Names of the registered backends, sorted."""
    return sorted(_BACKENDS)


def lookup_backend(backend):
    """A backend name or callable → the callable; unknown names raise with the known ones."""
    if callable(backend):
        return backend
    if isinstance(backend, str):
        try:
            return _BACKENDS[backend]
        except KeyError:
            raise ValueError(
                "ptgo.compile: unknown backend %r; known backends: %s (or pass a callable "
                "backend(gm, example_inputs))" % (backend, ", ".join(list_backends()))
            ) from None
    raise TypeError("ptgo.compile: backend must be a str or a callable, got %r" % (backend,))


@register_backend("eager")
def eager(gm, example_inputs):
    """Runs the captured graph with torch (through the torch.fx GraphModule)."""
    return gm.forward


@register_backend("inductor")
def inductor(gm, example_inputs):
    """ptgo's default backend: fused C kernels generated in Go (ptgo.compile calls Go directly).

    Called with a GraphModule only for graphs the C backend cannot run (autograd needs them, or
    an op has no lowering); those run with torch."""
    return gm.forward


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """Graphs through ptgo's autograd (decomposition, forward/backward split), run by torch.

    ptgo.compile handles it in Go; called with a GraphModule only for graphs ptgo's autograd
    cannot split (they run as captured)."""
    return gm.forward


def torch_entry_point(gm, example_inputs, *, options=None, mode=None):
    """The ``torch_dynamo_backends: ptgo`` entry point: ``torch.compile(m, backend="ptgo")``.

    ``gm`` (from torch 2's Dynamo, ptgo's own capture, or anyone) goes through ptgo's pipeline
    as ptgo.compile's graphs do: imported into ptgo's graph IR (ptgo.fx_import), decomposed,
    split for autograd when its inputs require grad, compiled to C. Graphs ptgo cannot take
    (symbolic shapes, callables it cannot name, metas it disagrees with) run with
    ``gm.forward``, named on ``PTGO_LOGS=perf_hints``. ``options={"freezing": True}`` folds
    BatchNorms into convolutions in inference graphs (parameters are then assumed frozen, as
    torch.compile's own freezing assumes); ``mode`` is accepted and ignored."""
    from .fx_import import compile_fx

    return compile_fx(gm, example_inputs, options=options)
