"""Fuzzer regression (seed 3969): grad with backend 'aot_eager'.

x0.base.grad: NaN positions differ at [0]: eager 1.221527099609375, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v5 = F.celu(x0)
        return (v5,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 3969,
 'inputs': [{'name': 'x0',
             'shape': [4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'expand',
             'values': 'special'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v5 = F.celu(x0)'], 'defs': ['v5']}],
 'outputs': ['v5'],
 'backward': True,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
