"""Fuzzer regression (seed 4622): grad with backend 'aot_eager'.

x1.base.grad: NaN positions differ at [0, 0, 0, 0]: eager 0.0, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        v1 = torch.xlogy(x1, -3)
        v2 = torch.div(v1, x1, rounding_mode='floor')
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4622,
 'inputs': [{'name': 'x1',
             'shape': [2, 8, 2, 4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.xlogy(x1, -3)'], 'defs': ['v1']},
           {'src': ["v2 = torch.div(v1, x1, rounding_mode='floor')"], 'defs': ['v2']}],
 'outputs': ['v2'],
 'backward': True,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
