"""Fuzzer regression (seed 10906): ptgo-failure with backend 'inductor'.

eager returns, ptgo raises BackendCompilerFailed: ptgo: compiling the graph of
fn.__resume_at_120 (/tmp/ptgo-fuzz-itsyclm7/fuzzprog_10906_3.py:10) to C failed: decomp: ptgo
BUG: prims.amax(f32[0], [0], true): primtorch: prims::amax(): Expected reduction dim 0 to have
non-zero size. (op prims::amax); eager PyTorch rejects the same call; fix the arguments (node
logsumexp = torch.logsumexp at fuzzprog_10906_3.py:18); report it with the graph printed by
PTGO_LOGS=graph_code

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x1):
        v2 = torch.masked_select(x1, x1 != 0)
        v4 = F.dropout(v2, 1.0, training=True)
        v5 = v4[1:]
        v7 = v5.sort(-1)[0]
        v8 = torch.logsumexp(v7, 0)
        return (v8,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 10906,
 'inputs': [{'name': 'x1',
             'shape': [1, 1, 1],
             'dtype': 'int32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'index:3'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v2 = torch.masked_select(x1, x1 != 0)'], 'defs': ['v2']},
           {'src': ['v4 = F.dropout(v2, 1.0, training=True)'], 'defs': ['v4']},
           {'src': ['v5 = v4[1:]'], 'defs': ['v5']},
           {'src': ['v7 = v5.sort(-1)[0]'], 'defs': ['v7']},
           {'src': ['v8 = torch.logsumexp(v7, 0)'], 'defs': ['v8']}],
 'outputs': ['v8'],
 'backward': False,
 'calls': 1}


# logsumexp over an empty dim (eager: -inf): the decomposition's amax over that dim has no
# identity, and its meta function rejected it (a compiler panic); it is now full(-inf).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
