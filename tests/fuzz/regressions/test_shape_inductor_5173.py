"""Fuzzer regression (seed 5173): shape with backend 'inductor'.

result[0]: shape eager (16,), ptgo (0,)

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn0 = nn.BatchNorm1d(4)

    def fn(m, x0):
        v3 = x0.masked_fill(x0 > 0, 3)
        v5 = m.bn0(v3)
        v6 = v5 ** 0.5
        v12 = v6[v6 > 0]
        return (v12,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 5173,
 'inputs': [{'name': 'x0',
             'shape': [4, 4],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'positive'}],
 'modules': [['bn0', 'nn.BatchNorm1d(4)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v3 = x0.masked_fill(x0 > 0, 3)'], 'defs': ['v3']},
           {'src': ['v5 = M.bn0(v3)'], 'defs': ['v5']},
           {'src': ['v6 = v5 ** 0.5'], 'defs': ['v6']},
           {'src': ['v12 = v6[v6 > 0]'], 'defs': ['v12']}],
 'outputs': ['v12'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
