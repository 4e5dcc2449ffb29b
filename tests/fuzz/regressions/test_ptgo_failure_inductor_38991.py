"""Fuzzer regression (seed 38991): ptgo-failure with backend 'inductor'.

eager returns, ptgo raises BackendCompilerFailed: ptgo: compiling the forward and backward of fn
(/tmp/ptgo-fuzz-yk0_gxkp/fuzzprog_38991_3.py:11) failed: ptgo BUG: compiling the forward
panicked: ptgo BUG: inductor: graph forward: 4 of 6 kernel groups have no order to run in

The embedding's index check must run before both draws (orderChecks: a failed check reruns the
graph with torch), an edge pointing back to buffers earlier in the graph; the fuser's cycle test
looked only at groups placed so far and grouped the check's index computation with work that
reads a draw. One test now follows every edge, placed or not (fuser.wouldCycle).

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb1 = nn.Embedding(5, 4)

    def fn(m, x0):
        v1 = x0.std()
        v2 = F.dropout(v1, 0.3, training=True)
        v4 = x0.view(2, -1)
        v5 = F.dropout(v4, 0.0, training=True)
        v6 = torch.ge(v5, v2)
        v15 = v4.to(torch.int32)
        v17 = m.emb1(v15.abs() % 5)
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 38991,
 'inputs': [{'name': 'x0',
             'shape': [2, 1],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['emb1', 'nn.Embedding(5, 4)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0.std()'], 'defs': ['v1']},
           {'src': ['v2 = F.dropout(v1, 0.3, training=True)'], 'defs': ['v2']},
           {'src': ['v4 = x0.view(2, -1)'], 'defs': ['v4']},
           {'src': ['v5 = F.dropout(v4, 0.0, training=True)'], 'defs': ['v5']},
           {'src': ['v6 = torch.ge(v5, v2)'], 'defs': ['v6']},
           {'src': ['v15 = v4.to(torch.int32)'], 'defs': ['v15']},
           {'src': ['v17 = M.emb1(v15.abs() % 5)'], 'defs': ['v17']}],
 'outputs': ['v6'],
 'backward': False,
 'calls': 1}


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
