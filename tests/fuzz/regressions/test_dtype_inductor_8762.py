"""Fuzzer regression (seed 8762): dtype with backend 'inductor'.

result[0]: dtype eager torch.int64, ptgo torch.int32

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = F.l1_loss(x0, x0, reduction='sum')
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 8762,
 'inputs': [{'name': 'x0',
             'shape': [8, 2],
             'dtype': 'int32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'index:3'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ["v1 = F.l1_loss(x0, x0, reduction='sum')"], 'defs': ['v1']}],
 'outputs': ['v1'],
 'backward': False,
 'calls': 1}


# l1_loss(reduction='sum') of integer tensors is an int64 (torch.sum promotes integers): the
# meta function kept the input's dtype, and the decomposition summed in it (wrapping).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
