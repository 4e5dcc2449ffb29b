"""Fuzzer regression (seed 3281): value with backend 'aot_eager'.

result[1]: values differ at [0, 0, 1, 0] (4 of 8 elements, max abs diff 0.421): eager
0.6193819642066956, ptgo 0.9650870561599731

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn0 = nn.BatchNorm2d(2)

    def fn(m, x1):
        v1 = m.bn0(x1)
        v5 = v1.exp2()
        v6 = torch.rand_like(v5)
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 3281,
 'inputs': [{'name': 'x1',
             'shape': [2, 2, 2, 1],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 't',
             'values': 'normal'}],
 'modules': [['bn0', 'nn.BatchNorm2d(2)']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = M.bn0(x1)'], 'defs': ['v1']},
           {'src': ['v5 = v1.exp2()'], 'defs': ['v5']},
           {'src': ['v6 = torch.rand_like(v5)'], 'defs': ['v6']}],
 'outputs': ['v6'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
