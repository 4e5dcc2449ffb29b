"""Fuzzer regression (seed 2383): grad with backend 'aot_eager'.

x0.base.grad: NaN positions differ at [0, 0, 0, 0]: eager 0.0, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v4 = torch.std_mean(x0, 0)[0]
        return (v4,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 2383,
 'inputs': [{'name': 'x0',
             'shape': [4, 8, 8, 4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'expand',
             'values': 'normal'}],
 'modules': [],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v4 = torch.std_mean(x0, 0)[0]'], 'defs': ['v4']}],
 'outputs': ['v4'],
 'backward': True,
 'calls': 1}


# std of constant slices (an expanded input): torch's std_backward is 0 where the std is 0;
# differentiating sqrt(var) gave inf * 0 = NaN. The root is taken as normRoot takes a norm's.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
