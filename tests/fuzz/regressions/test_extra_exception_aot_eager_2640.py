"""Fuzzer regression (seed 2640): extra-exception with backend 'aot_eager'.

eager returns, ptgo raises RuntimeError: "argmax_cpu" not implemented for 'Bool'

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin0 = nn.Linear(5, 3)

    def fn(m, x0):
        v1 = x0 >= x0
        v2 = v1.max(1, keepdim=True).indices
        v4 = torch.special.ndtr(v1)
        v6 = m.lin0(v4)
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 2640,
 'inputs': [{'name': 'x0',
             'shape': [4, 5],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['lin0', 'nn.Linear(5, 3)']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0 >= x0'], 'defs': ['v1']},
           {'src': ['v2 = v1.max(1, keepdim=True).indices'], 'defs': ['v2']},
           {'src': ['v4 = torch.special.ndtr(v1)'], 'defs': ['v4']},
           {'src': ['v6 = M.lin0(v4)'], 'defs': ['v6']}],
 'outputs': ['v6'],
 'backward': False,
 'calls': 1}


# max.dim of a bool tensor decomposed to prims.argmax on the bools, and torch's argmax kernel
# has no bool version (max.dim's has): ptgo raised where eager returns. The index is taken over
# the bools as uint8 (dMaxMinDim).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
