"""Fuzzer regression (seed 4784): grad with backend 'aot_eager'.

x0.grad: NaN positions differ at [1, 1, 0, 2]: eager nan, ptgo -0.37824463844299316

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v7 = torch.amax(x0, -2)
        return (v7,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4784,
 'inputs': [{'name': 'x0',
             'shape': [8, 4, 3, 4],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'special'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v7 = torch.amax(x0, -2)'], 'defs': ['v7']}],
 'outputs': ['v7'],
 'backward': True,
 'calls': 1}


# amax over a dim whose slice holds a NaN: torch's scale_grad_by_count gives (grad / count) *
# mask with count 0 — NaN for the whole slice —, ptgo gave zeros (where(mask, ...)). max() and
# min() over everything keep torch's evenly_distribute_backward (the NaNs share the gradient).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
