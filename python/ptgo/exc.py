"""ptgo's exceptions (DESIGN §3)."""


class PtgoError(RuntimeError):
    """Base class of ptgo's errors."""


class Unsupported(PtgoError):
    """Raised with ``fullgraph=True`` when code cannot be captured as one graph.

    The message names the reason and the user's file:line, and says what to change.
    """


class BackendCompilerFailed(PtgoError):
    """A backend (ptgo's own or a user's) failed to compile a captured graph.

    The original exception, if any, is the ``__cause__``. Set
    ``ptgo.config.suppress_errors = True`` to run such frames eagerly with a warning instead.
    """
