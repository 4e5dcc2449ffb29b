"""Fuzzer regression (seed 943): grad with backend 'aot_eager'.

x0.grad: values differ at [0, 1] (2 of 6 elements, max abs diff 0.402): eager
0.19303154945373535, ptgo 0.0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = F.logsigmoid(x0)
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 943,
 'inputs': [{'name': 'x0',
             'shape': [3, 2],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'ties'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = F.logsigmoid(x0)'], 'defs': ['v1']}],
 'outputs': ['v1'],
 'backward': True,
 'calls': 1}


# log_sigmoid at 0: torch's log_sigmoid_backward gives grad / 2; differentiating min(x, 0) -
# log1p(exp(-|x|)) gave 0 (no gradient through min's tie nor abs at 0). The decomposition takes
# torch's formula as its gradient (prims.grad_as).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
