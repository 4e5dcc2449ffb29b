"""Fuzzer regression (seed 1483): extra-exception with backend 'aot_eager'.

backward: eager succeeds, ptgo raises RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [4, 1, 5]] is at
version 2; expected version 0 instead. Hint: enable anomaly detection to find the operation that
failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb0 = nn.Embedding(5, 2)

    def fn(m, x0):
        v1 = m.emb0(x0.long().abs() % 5)
        v2 = torch.masked_select(v1, v1 != 0)
        x0[:, 1:] -= x0[:, :-1]
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 1483,
 'inputs': [{'name': 'x0',
             'shape': [4, 1, 5],
             'dtype': 'float32',
             'grad': 'none',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['emb0', 'nn.Embedding(5, 2)']],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v1 = M.emb0(x0.long().abs() % 5)'], 'defs': ['v1']},
           {'src': ['v2 = torch.masked_select(v1, v1 != 0)'], 'defs': ['v2']},
           {'src': ['x0[:, 1:] -= x0[:, :-1]'], 'defs': []}],
 'outputs': ['v2'],
 'backward': True,
 'calls': 1}


# The min-cut partition saved input x0 and recomputed the embedding's indices from it in the
# backward, where eager saves the indices; the code after the graph break writes x0 in place,
# so ptgo's backward found a saved tensor modified and raised where eager succeeds. Inputs that
# need no grad are saved only where the backward reads them itself (readByBackward).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
