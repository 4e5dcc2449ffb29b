"""Mistakes in the user's call raise exactly what eager PyTorch raises; never "ptgo BUG"."""
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same


def test_unsupported_break_message_is_not_a_bug(ptgo_log):
    """A graph break right after reading a parameter (no graph op before it) keeps the parameter
    on the stack: it is reloaded from its module, never reported as a ptgo bug."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3))

        def forward(self, x):
            w = self.w
            print(end="")
            return x * w

    ptgo.set_logs(graph_breaks=True)
    m = M()
    x = torch.randn(3)
    assert_same(ptgo.compile(m, backend="eager")(x), m(x))
    assert "ptgo BUG" not in ptgo_log.text
    assert "Graph break" in ptgo_log.text
