"""Fuzzer regression (seed 11782): ptgo-failure with backend 'inductor'.

eager raises RuntimeError: "div_floor_cpu" not implemented for 'Bool'; ptgo raises
BackendCompilerFailed: ptgo: compiling the graph of fn (/tmp/ptgo-fuzz-
wcygoxj2/fuzzprog_11782_1.py:9) to C failed: decomp: ptgo BUG: prims.floordiv(b8[5,4], b8[5,4]):
primtorch: prims::floordiv: dtype b8 is not a num

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        v7 = x1 * 0.5
        v8 = v7 < False
        v9 = torch.div(v8, v8, rounding_mode='floor')
        return (v9,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 11782,
 'inputs': [{'name': 'x1',
             'shape': [5, 4],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v7 = x1 * 0.5'], 'defs': ['v7']},
           {'src': ['v8 = v7 < False'], 'defs': ['v8']},
           {'src': ["v9 = torch.div(v8, v8, rounding_mode='floor')"], 'defs': ['v9']}],
 'outputs': ['v9'],
 'backward': True}


# A rounding division of bools has no torch kernel: the meta raises torch's error (metaDiv),
# no decomposition is tried.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
