"""Fuzzer regression (seed 42816): ptgo-failure with backend 'inductor'.

eager returns, ptgo raises BackendCompilerFailed: ptgo: compiling the graph of
fn.__resume_at_678 (/tmp/ptgo-fuzz-obriitjl/fuzzprog_42816_3.py:11) to C failed: decomp: ptgo
BUG: a size s0 as a bool (node setitem = operator.setitem at fuzzprog_42816_3.py:28); report it
with the graph printed by PTGO_LOGS=graph_code

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        s3 = x1.sum().item()
        v2 = x1 * s3
        v10 = x1[:, None]
        v10[0] = s3
        return (v10,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 42816,
 'inputs': [{'name': 'x1',
             'shape': [5, 2],
             'dtype': 'bool',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['s3 = x1.sum().item()', 'v2 = x1 * s3'], 'defs': ['s3', 'v2']},
           {'src': ['v10 = x1[:, None]'], 'defs': ['v10']},
           {'src': ['v10[0] = s3'], 'defs': []}],
 'outputs': ['v10'],
 'backward': False,
 'calls': 3}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
