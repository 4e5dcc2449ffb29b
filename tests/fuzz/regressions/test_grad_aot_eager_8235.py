"""Fuzzer regression (seed 8235): grad with backend 'aot_eager'.

x1.base.grad: values differ at [1, 2, 1] (3 of 96 elements, max abs diff 1.86e-08): eager
-7.2251362840447975, ptgo -7.2251362755092154

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        if x1.mean() < 0:
            v1 = x1.neg()
        else:
            v1 = x1 * 2
        v2 = F.hardsigmoid(v1)
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 8235,
 'inputs': [{'name': 'x1',
             'shape': [8, 3, 4],
             'dtype': 'float64',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['if x1.mean() < 0:', '    v1 = x1.neg()', 'else:', '    v1 = x1 * 2'],
            'defs': ['v1']},
           {'src': ['v2 = F.hardsigmoid(v1)'], 'defs': ['v2']}],
 'outputs': ['v2'],
 'backward': True,
 'calls': 1}


# hardsigmoid of float64: torch's hardsigmoid_backward multiplies by 1/6 as a float32
# (0.1666666716337204), the chain rule through x / 6 by 1/6 in float64: 3e-8 relative apart.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
