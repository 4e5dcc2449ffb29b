"""Fuzzer regression (seed 2526): grad with backend 'aot_eager'.

x0.grad: NaN positions differ at [0, 0]: eager 0.0, ptgo nan

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = torch.clamp(x0, float('nan'), 2.5)
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 2526,
 'inputs': [{'name': 'x0',
             'shape': [3, 8],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ["v1 = torch.clamp(x0, float('nan'), 2.5)"], 'defs': ['v1']}],
 'outputs': ['v1'],
 'backward': True,
 'calls': 1}


# clamp with a NaN bound: torch's clamp_backward passes the gradient where min <= x <= max,
# never true against NaN, so x's gradient is zeros; ptgo's x + NaN passed it through.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
