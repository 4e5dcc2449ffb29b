"""Fuzzer regression (seed 4840): nan-inf with backend 'inductor'.

result[0]: NaN positions differ at [104, 255]: eager nan, ptgo inf

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        v1 = x1.int()
        v2 = torch.special.expit(v1)
        v3 = v2.cumprod(0)
        v6 = x1 // v3
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4840,
 'inputs': [{'name': 'x1',
             'shape': [300, 256],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x1.int()'], 'defs': ['v1']},
           {'src': ['v2 = torch.special.expit(v1)'], 'defs': ['v2']},
           {'src': ['v3 = v2.cumprod(0)'], 'defs': ['v3']},
           {'src': ['v6 = x1 // v3'], 'defs': ['v6']}],
 'outputs': ['v6'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
