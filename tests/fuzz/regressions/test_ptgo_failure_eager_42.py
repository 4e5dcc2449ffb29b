"""Fuzzer regression (seed 42): ptgo-failure with backend 'eager'.

eager returns, ptgo raises BackendCompilerFailed: ptgo: backend eager failed on the graph of
fn.__resume_at_390 (/tmp/ptgo-fuzz-myu65zym/fuzzprog_42_1.py:9): SyntaxError: duplicate argument
'stack0' in function definition (<eval_with_key>.2, line 4)

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = x0.nonzero()
        v6 = v1.as_strided([1], [1])
        v9 = v1.nonzero()
        v16 = v6.relu()
        if v16.max() > 0.5:
            v17 = torch.sin(v16)
        else:
            v17 = torch.relu(v16)
        return (v16,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 42,
 'inputs': [{'name': 'x0',
             'shape': [4],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0.nonzero()'], 'defs': ['v1']},
           {'src': ['v6 = v1.as_strided([1], [1])'], 'defs': ['v6']},
           {'src': ['v9 = v1.nonzero()'], 'defs': ['v9']},
           {'src': ['v16 = v6.relu()'], 'defs': ['v16']},
           {'src': ['if v16.max() > 0.5:',
                    '    v17 = torch.sin(v16)',
                    'else:',
                    '    v17 = torch.relu(v16)'],
            'defs': ['v17']}],
 'outputs': ['v16'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
