"""Fuzzer regression (seed 24384): missing-exception with backend 'aot_eager'.

backward: eager raises RuntimeError: one of the variables needed for gradient computation has
been modified by an inplace operation: [torch.FloatTensor [256, 300]], which is output 0 of
Tanh, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the
operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True,
check_nan=False)., ptgo succeeds

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.act0 = nn.Tanh()

    def fn(m, x0, x1):
        v2 = F.leaky_relu(x0, 0.2)
        s4 = x1.sum().item()
        v3 = x1 * s4
        v5 = m.act0(v2)
        v6 = v5.diagonal()
        v10 = torch.randperm(3)
        if v10.max() > 0.5:
            v12 = torch.sin(v10)
        else:
            v12 = v10 + v10
        v6.relu_()
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 24384,
 'inputs': [{'name': 'x0',
             'shape': [256, 300],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'normal'},
            {'name': 'x1',
             'shape': [4, 4],
             'dtype': 'int64',
             'grad': 'none',
             'layout': 'contig',
             'values': 'int'}],
 'modules': [['act0', 'nn.Tanh()']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v2 = F.leaky_relu(x0, 0.2)'], 'defs': ['v2']},
           {'src': ['s4 = x1.sum().item()', 'v3 = x1 * s4'], 'defs': ['s4', 'v3']},
           {'src': ['v5 = M.act0(v2)'], 'defs': ['v5']},
           {'src': ['v6 = v5.diagonal()'], 'defs': ['v6']},
           {'src': ['v10 = torch.randperm(3)'], 'defs': ['v10']},
           {'src': ['if v10.max() > 0.5:',
                    '    v12 = torch.sin(v10)',
                    'else:',
                    '    v12 = v10 + v10'],
            'defs': ['v12']},
           {'src': ['v6.relu_()'], 'defs': []}],
 'outputs': ['v6'],
 'backward': True,
 'calls': 3}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
