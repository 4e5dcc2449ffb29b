"""Which torch ptgo's C++ extension (ptgo._fast) was built for, and whether this process may load it.

ptgo._fast links against libtorch's C++ API, which has no stable ABI across torch versions: a copy
built for Debian's torch 1.13 aborts the process (std::system_error) when a torch 2.x process
imports it, before any Python check could run. setup.py writes the torch version it built against
beside the library (``_fast.torch``); ``fast()`` compares it with the running torch before importing
and is the one answer every caller asks.
"""
import importlib.util
import os
import warnings

import torch

STAMP = "_fast.torch"
_cached = []


def built_for(origin):
    """The torch version recorded beside the extension at origin, or None when there is no record."""
    try:
        with open(os.path.join(os.path.dirname(origin), STAMP)) as f:
            return f.read().strip() or None
    except OSError:
        return None


def fast():
    """The ptgo._fast module when it is built for this torch, else None (with one warning saying why)."""
    if _cached:
        return _cached[0]
    mod = None
    spec = importlib.util.find_spec("ptgo._fast")
    if spec is not None and spec.origin:
        version = built_for(spec.origin)
        if version == torch.__version__:
            try:
                from . import _fast as mod
            except ImportError as e:
                warnings.warn("ptgo: ptgo._fast does not load (%s); using the slower Python paths" % e, RuntimeWarning)
        else:
            warnings.warn(
                "ptgo: %s was built for torch %s, this is torch %s; using the slower Python paths "
                "(rebuild ptgo for this torch: make setup, or pip install . --no-build-isolation)"
                % (spec.origin, version or "an unrecorded version", torch.__version__), RuntimeWarning)
    _cached.append(mod)
    return mod
