"""Fuzzer regression (seed 11713): extra-exception with backend 'aot_eager'.

backward: eager succeeds, ptgo raises RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [8, 3, 5, 2]], which
is output 0 of CompiledRegionBackward, is at version 1; expected version 0 instead. Hint: enable
anomaly detecti

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0, x1):
        v1 = F.threshold(x1, 0.1, 20.0)
        v2 = v1 ** 7
        print('shape', x0.shape, x0.dtype)
        v3 = x0 + 1
        v1[0] = 2
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 11713,
 'inputs': [{'name': 'x0',
             'shape': [5, 2, 4],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'},
            {'name': 'x1',
             'shape': [8, 3, 5, 2],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = F.threshold(x1, 0.1, 20.0)'], 'defs': ['v1']},
           {'src': ['v2 = v1 ** 7'], 'defs': ['v2']},
           {'src': ["print('shape', x0.shape, x0.dtype)", 'v3 = x0 + 1'], 'defs': ['v3']},
           {'src': ['v1[0] = 2'], 'defs': []}],
 'outputs': ['v1'],
 'backward': True}


# ptgo saved threshold's result (an output the user writes after the break) where eager saves
# the input: torch checked it and raised. Saved memory an output or input shares is watched by
# ptgo (_saved_out_of_sight) and a write to it recomputes the region with torch.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
