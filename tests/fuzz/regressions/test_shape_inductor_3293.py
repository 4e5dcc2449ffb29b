"""Fuzzer regression (seed 3293): shape with backend 'inductor'.

result[0]: shape eager (40, 2), ptgo (21, 2)

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln0 = nn.LayerNorm(8)

    def fn(m, x0):
        v1 = torch.frac(x0)
        v2 = torch.softmax(v1, 1)
        v3 = v2.deg2rad()
        v4 = torch.sub(v3, v1)
        v7 = m.ln0(v4)
        if v7.mean() < 0:
            v16 = torch.relu(v7)
        else:
            v16 = v7 + v7
        v17 = v16.nonzero()
        return (v17,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 3293,
 'inputs': [{'name': 'x0',
             'shape': [5, 8],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['ln0', 'nn.LayerNorm(8)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.frac(x0)'], 'defs': ['v1']},
           {'src': ['v2 = torch.softmax(v1, 1)'], 'defs': ['v2']},
           {'src': ['v3 = v2.deg2rad()'], 'defs': ['v3']},
           {'src': ['v4 = torch.sub(v3, v1)'], 'defs': ['v4']},
           {'src': ['v7 = M.ln0(v4)'], 'defs': ['v7']},
           {'src': ['if v7.mean() < 0:', '    v16 = torch.relu(v7)', 'else:', '    v16 = v7 + v7'],
            'defs': ['v16']},
           {'src': ['v17 = v16.nonzero()'], 'defs': ['v17']}],
 'outputs': ['v17'],
 'backward': False,
 'calls': 3}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
