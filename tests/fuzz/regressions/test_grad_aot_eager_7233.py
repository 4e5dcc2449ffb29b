"""Fuzzer regression (seed 7233): grad with backend 'aot_eager'.

x0.base.grad: NaN positions differ at [2, 0, 0]: eager inf, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin0 = nn.Linear(8, 3, bias=False)

    def fn(m, x0):
        v1 = torch.logaddexp(x0, x0)
        v2 = v1.select(1, 0)
        v8 = v2
        for i in range(2):
            v8 = v8 * 0.5 + i
        v11 = m.lin0(v8)
        v12 = torch.exp(v11)
        return (v12,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 7233,
 'inputs': [{'name': 'x0',
             'shape': [4, 1, 8],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'special'}],
 'modules': [['lin0', 'nn.Linear(8, 3, bias=False)']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.logaddexp(x0, x0)'], 'defs': ['v1']},
           {'src': ['v2 = v1.select(1, 0)'], 'defs': ['v2']},
           {'src': ['v8 = v2', 'for i in range(2):', '    v8 = v8 * 0.5 + i'], 'defs': ['v8']},
           {'src': ['v11 = M.lin0(v8)'], 'defs': ['v11']},
           {'src': ['v12 = torch.exp(v11)'], 'defs': ['v12']}],
 'outputs': ['v12'],
 'backward': True,
 'calls': 1}


# logaddexp(x, x) under an infinite incoming gradient (exp of a huge linear output): torch's
# gradient grad / (1 + exp(other - self)) is inf; the chain rule through |a - b| gave 0 * inf.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
