"""Fuzzer regression (seed 11818): value with backend 'inductor'.

result[0]: values differ at [0] (1 of 1 elements, max abs diff 0.492): eager 3.1093215942382812,
ptgo 2.617384910583496

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        x1.normal_()
        v2 = x1.clone()
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 11818,
 'inputs': [{'name': 'x1',
             'shape': [1, 8, 3, 2],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'slice',
             'values': 'normal'}],
 'modules': [],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['x1.normal_()'], 'defs': []}, {'src': ['v2 = x1.clone()'], 'defs': ['v2']}],
 'outputs': ['v2'],
 'backward': True}


# normal_ of a stepped slice: torch fills a strided tensor element by element, a contiguous one
# 16 at a time; the fallback's copy keeps the slice's strides (cloneLike).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
