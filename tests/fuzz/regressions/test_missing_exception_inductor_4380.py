"""Fuzzer regression (seed 4380): missing-exception with backend 'inductor'.

eager raises RuntimeError: value cannot be converted to type int64_t without overflow, ptgo
returns

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0, x1):
        v1 = torch.stack([x1, x1], 0)
        v2 = v1.bitwise_not()
        v4 = torch.fmin(v1, v2)
        v7 = v4.index_fill(-1, (v2.flatten().abs() % 4), 0.5)
        v8 = F.dropout(v7, 1.0, training=True)
        v11 = torch.full_like(v8, float('nan'))
        return (x0,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4380,
 'inputs': [{'name': 'x0',
             'shape': [3],
             'dtype': 'int32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'index:2'},
            {'name': 'x1',
             'shape': [5, 4],
             'dtype': 'int64',
             'grad': 'none',
             'layout': 'contig',
             'values': 'int'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = torch.stack([x1, x1], 0)'], 'defs': ['v1']},
           {'src': ['v2 = v1.bitwise_not()'], 'defs': ['v2']},
           {'src': ['v4 = torch.fmin(v1, v2)'], 'defs': ['v4']},
           {'src': ['v7 = v4.index_fill(-1, (v2.flatten().abs() % 4), 0.5)'], 'defs': ['v7']},
           {'src': ['v8 = F.dropout(v7, 1.0, training=True)'], 'defs': ['v8']},
           {'src': ["v11 = torch.full_like(v8, float('nan'))"], 'defs': ['v11']}],
 'outputs': ['x0'],
 'backward': False,
 'calls': 1}


# full_like of an int64 tensor with NaN: eager's c10 checked_convert raises (value cannot be
# converted to type int64_t without overflow); the C kernel converted NaN silently. The meta
# functions of full, full_like, new_full and fill_ check the value (checkFillValue).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
