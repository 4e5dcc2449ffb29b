"""Fuzzer regression (seed 269): ptgo-failure with backend 'aot_eager'.

eager returns, ptgo raises BackendCompilerFailed: ptgo BUG: the compiler panicked: runtime
error: index out of range [0] with length 0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x2):
        v1 = x2.std()
        v3 = F.normalize(v1, dim=0)
        return (v3,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 269,
 'inputs': [{'name': 'x2',
             'shape': [2, 3, 3, 5],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x2.std()'], 'defs': ['v1']},
           {'src': ['v3 = F.normalize(v1, dim=0)'], 'defs': ['v3']}],
 'outputs': ['v3'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
