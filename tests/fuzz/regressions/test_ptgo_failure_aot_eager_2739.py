"""Fuzzer regression (seed 2739): ptgo-failure with backend 'aot_eager'.

eager returns, ptgo raises BackendCompilerFailed: ptgo BUG: the compiler panicked: runtime
error: index out of range [0] with length 0

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin0 = nn.Linear(5, 4)

    def fn(m, x1):
        v1 = m.lin0(x1)
        v2 = torch.zeros_like(x1)
        v3 = v2.min()
        v4 = v3.prod()
        v5 = F.cosine_similarity(v4, v3, dim=-1)
        v6 = v5 ** 0.5
        if v6.mean() < 0:
            v7 = v6.abs()
        else:
            v7 = torch.sin(v6)
        return (v7,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 2739,
 'inputs': [{'name': 'x1',
             'shape': [5],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['lin0', 'nn.Linear(5, 4)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = M.lin0(x1)'], 'defs': ['v1']},
           {'src': ['v2 = torch.zeros_like(x1)'], 'defs': ['v2']},
           {'src': ['v3 = v2.min()'], 'defs': ['v3']},
           {'src': ['v4 = v3.prod()'], 'defs': ['v4']},
           {'src': ['v5 = F.cosine_similarity(v4, v3, dim=-1)'], 'defs': ['v5']},
           {'src': ['v6 = v5 ** 0.5'], 'defs': ['v6']},
           {'src': ['if v6.mean() < 0:', '    v7 = v6.abs()', 'else:', '    v7 = torch.sin(v6)'],
            'defs': ['v7']}],
 'outputs': ['v7'],
 'backward': False,
 'calls': 1}


# cosine_similarity of 0-d operands: the decomposition took the norm over dim 0 of a 0-d
# shape and indexed past it (the compiler panicked); like normalize it runs torch's kernel there.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
