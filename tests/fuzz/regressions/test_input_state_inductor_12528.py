"""Fuzzer regression (seed 12528): input-state with backend 'inductor'.

input 0 after the call: values differ at [0] (5 elements): eager 4, ptgo 2

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0, x1):
        v2 = torch.gather(x1, 0, torch.zeros_like(x1, dtype=torch.long))
        x0.mul_(x0)
        v3 = v2.to(torch.int16)
        v4 = x1[-1]
        v6 = torch.div(v3, v4, rounding_mode='floor')
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 12528,
 'inputs': [{'name': 'x0',
             'shape': [5],
             'dtype': 'int64',
             'grad': 'none',
             'layout': 'contig',
             'values': 'int'},
            {'name': 'x1',
             'shape': [4],
             'dtype': 'uint8',
             'grad': 'none',
             'layout': 'contig',
             'values': 'index:3'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v2 = torch.gather(x1, 0, torch.zeros_like(x1, dtype=torch.long))'],
            'defs': ['v2']},
           {'src': ['x0.mul_(x0)'], 'defs': []},
           {'src': ['v3 = v2.to(torch.int16)'], 'defs': ['v3']},
           {'src': ['v4 = x1[-1]'], 'defs': ['v4']},
           {'src': ["v6 = torch.div(v3, v4, rounding_mode='floor')"], 'defs': ['v6']}],
 'outputs': ['v6'],
 'backward': True}


# x0.mul_(x0), then a floor division by a zero the data holds: the division's kernel ran
# before the write's, so the ZeroDivisionError left x0 unwritten. Kernels keep eager's order
# of raising computations and input writes (Fuser.orderRaises).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
