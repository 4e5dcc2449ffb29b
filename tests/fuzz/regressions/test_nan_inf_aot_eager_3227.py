"""Fuzzer regression (seed 3227): nan-inf with backend 'aot_eager'.

result[2]: +inf positions differ at [0, 0, 0]: eager inf, ptgo -inf

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin0 = nn.Linear(2, 3)
            self.bn1 = nn.BatchNorm1d(4, momentum=None)

    def fn(m, x0):
        v1 = m.lin0(x0)
        v2 = v1 ** v1
        v3 = m.bn1(v1)
        v4 = torch.var_mean(v3)[1]
        v7 = v1.int()
        v8 = torch.digamma(v7)
        v9 = torch.stack([v8, v8], 1)
        v10 = torch.div(v9, v4, rounding_mode='trunc')
        return (v10,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 3227,
 'inputs': [{'name': 'x0',
             'shape': [1, 4, 2],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'slice',
             'values': 'normal'}],
 'modules': [['lin0', 'nn.Linear(2, 3)'], ['bn1', 'nn.BatchNorm1d(4, momentum=None)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = M.lin0(x0)'], 'defs': ['v1']},
           {'src': ['v2 = v1 ** v1'], 'defs': ['v2']},
           {'src': ['v3 = M.bn1(v1)'], 'defs': ['v3']},
           {'src': ['v4 = torch.var_mean(v3)[1]'], 'defs': ['v4']},
           {'src': ['v7 = v1.int()'], 'defs': ['v7']},
           {'src': ['v8 = torch.digamma(v7)'], 'defs': ['v8']},
           {'src': ['v9 = torch.stack([v8, v8], 1)'], 'defs': ['v9']},
           {'src': ["v10 = torch.div(v9, v4, rounding_mode='trunc')"], 'defs': ['v10']}],
 'outputs': ['v10'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
