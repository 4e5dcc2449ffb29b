"""Fuzzer regression (seed 6395): grad with backend 'aot_eager'.

x0.base.grad: NaN positions differ at [0, 2, 2, 1]: eager 0.3227337598800659, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.act0 = nn.Hardswish()

    def fn(m, x0):
        v1 = x0.index_select(-2, torch.tensor([2, 0, 1]))
        v2 = v1.flip(3)
        v3 = m.act0(v2)
        v4 = v3.nonzero()
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 6395,
 'inputs': [{'name': 'x0',
             'shape': [2, 4, 3, 2],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'special'}],
 'modules': [['act0', 'nn.Hardswish()']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0.index_select(-2, torch.tensor([2, 0, 1]))'], 'defs': ['v1']},
           {'src': ['v2 = v1.flip(3)'], 'defs': ['v2']},
           {'src': ['v3 = M.act0(v2)'], 'defs': ['v3']},
           {'src': ['v4 = v3.nonzero()'], 'defs': ['v4']}],
 'outputs': ['v1'],
 'backward': True,
 'calls': 1}


# hardswish at ±inf: torch's hardswish_backward gives grad (0 below -3); the product rule through
# x * clamp(x + 3, 0, 6) / 6 gave inf * 0 = NaN.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
