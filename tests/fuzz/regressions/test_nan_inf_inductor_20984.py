"""Fuzzer regression (seed 20984): nan-inf with backend 'inductor'.

result[0]: NaN positions differ at [0, 0, 0, 1]: eager nan, ptgo 0.0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x0):
            v1 = 7 << x0
            v2 = v1.log1p()
            v3 = torch.clamp(v1, max=2.5)
            v4 = torch.div(v3, v2, rounding_mode='trunc')
            v5 = torch.addcdiv(v4, v4, v1, value=0.5)
            return (v5,)

"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 20984,
 'inputs': [{'name': 'x0',
             'shape': [4, 4, 1, 2],
             'dtype': 'int32',
             'grad': 'none',
             'layout': 'slice',
             'values': 'int'}],
 'modules': [],
 'train': True,
 'as_module': True,
 'stmts': [{'src': ['v1 = 7 << x0'], 'defs': ['v1']},
           {'src': ['v2 = v1.log1p()'], 'defs': ['v2']},
           {'src': ['v3 = torch.clamp(v1, max=2.5)'], 'defs': ['v3']},
           {'src': ["v4 = torch.div(v3, v2, rounding_mode='trunc')"], 'defs': ['v4']},
           {'src': ['v5 = torch.addcdiv(v4, v4, v1, value=0.5)'], 'defs': ['v5']}],
 'outputs': ['v5'],
 'backward': False}


# torch 2's shifts by a negative count or by the dtype's width or more give 0 (or the
# sign); 1.13's mask the count (ShiftCountBounded).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
