"""Fuzzer regression (seed 9388): grad with backend 'aot_eager'.

x0.base.grad: values differ at [0, 0, 0] (18 of 64 elements, max abs diff 0.921): eager
0.17972993850708008, ptgo 0.29276224970817566

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = torch.zeros_like(x0).bool()
        v12 = torch.atanh(v1)
        v13 = torch.fmax(v12, x0)
        return (v13,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 9388,
 'inputs': [{'name': 'x0',
             'shape': [4, 4, 4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'ties'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.zeros_like(x0).bool()'], 'defs': ['v1']},
           {'src': ['v12 = torch.atanh(v1)'], 'defs': ['v12']},
           {'src': ['v13 = torch.fmax(v12, x0)'], 'defs': ['v13']}],
 'outputs': ['v13'],
 'backward': True,
 'calls': 1}


# fmax on ties: torch 1.13 gives self the whole gradient where self >= other (2.14 splits it),
# the decomposition through maximum split it on torch 1.13 too.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
