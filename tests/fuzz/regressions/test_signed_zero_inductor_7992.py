"""Fuzzer regression (seed 7992): signed-zero with backend 'inductor'.

result[1]: sign of zero differs at [0, 0, 1]: eager 0.0, ptgo -0.0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v3 = F.selu(x0)
        return (v3,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 7992,
 'inputs': [{'name': 'x0',
             'shape': [2, 4, 4],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'ties'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v3 = F.selu(x0)'], 'defs': ['v3']}],
 'outputs': ['v3'],
 'backward': False,
 'calls': 1}


# selu of -0.0: torch 1.13's elu kernels compute exp(x) - 1 (+0.0 at -0.0, 0 for tiny x),
# 2.14's expm1 (-0.0); the decomposition always took expm1 (torchBehavior.EluExpm1).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
