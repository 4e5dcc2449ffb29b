"""Fuzzer regression (seed 3980): stride with backend 'inductor'.

result[1]: strides eager (300, 1), ptgo (1, 1) (shape (256, 1))

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = x0.clamp_min(2.5)
        v2 = v1.narrow(-1, 0, 1)
        v2[v2 > 0] = -0.0
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 3980,
 'inputs': [{'name': 'x0',
             'shape': [256, 300],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0.clamp_min(2.5)'], 'defs': ['v1']},
           {'src': ['v2 = v1.narrow(-1, 0, 1)'], 'defs': ['v2']},
           {'src': ['v2[v2 > 0] = -0.0'], 'defs': []}],
 'outputs': ['v2'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
