"""Fuzzer regression (seed 20727): nan-inf with backend 'inductor'.

result[1]: NaN positions differ at [0, 0]: eager nan, ptgo 0.0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn0 = nn.BatchNorm1d(8, momentum=None)

    def fn(m, x0, x1):
        v1 = torch.sqrt(x1)
        v2 = torch.erfinv(x0)
        v3 = F.softshrink(v2, 0.5)
        v4 = torch.exp(v3)
        v5 = v1.cumprod(-2)
        v6 = F.softsign(v2)
        v7 = v6.contiguous()
        v8 = m.bn0(x0)
        return (v8, v3, v6)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 20727,
 'inputs': [{'name': 'x0',
             'shape': [8, 8],
             'dtype': 'bfloat16',
             'grad': 'none',
             'layout': 'expand',
             'values': 'special'},
            {'name': 'x1',
             'shape': [4, 8, 5],
             'dtype': 'bfloat16',
             'grad': 'none',
             'layout': 'slice',
             'values': 'normal'}],
 'modules': [['bn0', 'nn.BatchNorm1d(8, momentum=None)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.sqrt(x1)'], 'defs': ['v1']},
           {'src': ['v2 = torch.erfinv(x0)'], 'defs': ['v2']},
           {'src': ['v3 = F.softshrink(v2, 0.5)'], 'defs': ['v3']},
           {'src': ['v4 = torch.exp(v3)'], 'defs': ['v4']},
           {'src': ['v5 = v1.cumprod(-2)'], 'defs': ['v5']},
           {'src': ['v6 = F.softsign(v2)'], 'defs': ['v6']},
           {'src': ['v7 = v6.contiguous()'], 'defs': ['v7']},
           {'src': ['v8 = M.bn0(x0)'], 'defs': ['v8']}],
 'outputs': ['v8', 'v3', 'v6'],
 'backward': True}


# torch 2's softshrink of NaN is NaN (1.13's is 0): a behaviour row (SoftshrinkNaN).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
