"""Fuzzer regression (seed 12304): grad with backend 'aot_eager'.

x0.base.grad: values differ at [0, 1] (1 of 4 elements, max abs diff 0.0433): eager 0.0, ptgo
0.0432833656668663

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v1 = x0.max(-1)[0]
        v2 = v1.unsqueeze(-1)
        v3 = torch.masked_select(v2, v2 != 0)
        v1.exponential_()
        return (v2,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 12304,
 'inputs': [{'name': 'x0',
             'shape': [4, 4],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = x0.max(-1)[0]'], 'defs': ['v1']},
           {'src': ['v2 = v1.unsqueeze(-1)'], 'defs': ['v2']},
           {'src': ['v3 = torch.masked_select(v2, v2 != 0)'], 'defs': ['v3']},
           {'src': ['v1.exponential_()'], 'defs': []}],
 'outputs': ['v2'],
 'backward': True}


# Two outputs over one temporary of the plan (v1 and its unsqueeze v2) came back as unrelated
# tensors: v1.exponential_() after the break left v2's gradient flowing through the max. The
# covering output is the base of the others now (_unview_temporaries).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
