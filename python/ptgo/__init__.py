"""ptgo — PyTorch 2's compile stack as a Go library.

    model = ptgo.compile(model)

gives the same results as eager PyTorch, with eager fallback wherever capture is not possible.
The API mirrors ``torch.compile`` (DESIGN §3).
"""
from . import config
from ._logging import set_logs
from .backends import list_backends, register_backend
from .eval_frame import OptimizedModule, compile, disable, is_compiling, reset
from .exc import BackendCompilerFailed, PtgoError, Unsupported
from .explain import explain
from ._shapes import mark_dynamic, mark_static

__version__ = "0.1.0"

__all__ = [
    "compile", "reset", "disable", "is_compiling", "config", "set_logs", "list_backends",
    "register_backend", "OptimizedModule", "Unsupported", "BackendCompilerFailed", "PtgoError", "explain",
    "mark_dynamic", "mark_static",
]
