"""round(x, decimals=d) of a bfloat16 tensor rounds as torch's kernel does: 1.13 computes
x·10^d in bfloat16 (round(3.453125, 1) is 3.40625), 2.14 in float32 (3.5); fuzz seed 5534."""
import pytest
import torch

import ptgo


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_decimals_bfloat16(backend, decimals):
    x = torch.tensor([3.453125, 2.05078125, 0.1533203125, 123.4, -7.65, 1e3, 45.5, -0.04, 3.0], dtype=torch.bfloat16)
    f = lambda x: torch.round(x, decimals=decimals) * 1  # noqa: E731 (a later op fuses with it)
    assert torch.equal(ptgo.compile(f, backend=backend)(x), f(x))
