"""Fuzzer regression (seed 7778): ptgo-failure with backend 'inductor'.

eager returns, ptgo raises BackendCompilerFailed: ptgo BUG: the compiler panicked: runtime
error: integer divide by zero

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = x0[1:]
        v2 = v1.to(torch.uint8)
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 7778,
 'inputs': [{'name': 'x0',
             'shape': [3, 0],
             'dtype': 'int64',
             'grad': 'none',
             'layout': 'expand',
             'values': 'int'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0[1:]'], 'defs': ['v1']},
           {'src': ['v2 = v1.to(torch.uint8)'], 'defs': ['v2']}],
 'outputs': ['v2'],
 'backward': False,
 'calls': 1}


# A [2, 0] kernel: merging its loops substituted x // 0 and x % 0 for the empty inner loop's
# variable (integer divide by zero in the compiler); loops with an empty inner one stay apart.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
