"""``ptgo.mark_dynamic`` / ``ptgo.mark_static``: per-tensor dynamic-shape marks, as torch's.

Capture reads them (Go, ``bytecode/symint.go``) when a marked tensor becomes a graph input:
a dim marked dynamic gets a size symbol from the first compile on (sizes 0 and 1 stay
specialised, as torch does), a dim marked static never becomes symbolic, whatever ``dynamic=``
says. ``torch._dynamo.mark_dynamic``'s mark is honoured too.
"""
import torch


def _dims(t, dim, what):
    if not isinstance(t, torch.Tensor):
        raise TypeError("ptgo.%s expects a torch.Tensor, got %s" % (what, type(t).__name__))
    dims = [dim] if isinstance(dim, int) else list(dim)
    out = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError("ptgo.%s: dim must be an int or a list of ints, got %r" % (what, d))
        n = t.dim()
        if not -n <= d < n:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)" % (-n, n - 1, d))
        out.append(d % n)
    return out


def mark_dynamic(t, dim):
    """Make dim (an int or a list of ints) of t symbolic whenever t is a graph input."""
    dims = _dims(t, dim, "mark_dynamic")
    t._ptgo_dynamic_dims = set(getattr(t, "_ptgo_dynamic_dims", ())) | set(dims)
    static = set(getattr(t, "_ptgo_static_dims", ())) - set(dims)
    if hasattr(t, "_ptgo_static_dims"):
        t._ptgo_static_dims = static


def mark_static(t, dim):
    """Keep dim of t static (one compile per size) whatever dynamic= says."""
    dims = _dims(t, dim, "mark_static")
    t._ptgo_static_dims = set(getattr(t, "_ptgo_static_dims", ())) | set(dims)
    if hasattr(t, "_ptgo_dynamic_dims"):
        t._ptgo_dynamic_dims = set(t._ptgo_dynamic_dims) - set(dims)
