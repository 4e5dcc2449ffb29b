"""Fuzzer regression (seed 4113): grad with backend 'aot_eager'.

x0.base.grad: values differ at [0, 0, 1] (1 of 32 elements, max abs diff 0.554): eager
2.4622509479522705, ptgo 1.908099889755249

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v4 = F.hardshrink(x0)
        return (v4,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4113,
 'inputs': [{'name': 'x0',
             'shape': [2, 8, 4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'special'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v4 = F.hardshrink(x0)'], 'defs': ['v4']}],
 'outputs': ['v4'],
 'backward': True,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
