"""Fuzzer regression (seed 9876): stride with backend 'aot_eager'.

result[2]: strides eager (1, 4, 8, 32), ptgo (40, 20, 5, 1) (shape (4, 2, 4, 5))

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        v3 = x0.flip(2)
        v4 = v3.squeeze()
        return (v4,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 9876,
 'inputs': [{'name': 'x0',
             'shape': [4, 2, 4, 5],
             'dtype': 'float32',
             'grad': 'leaf',
             'layout': 't',
             'values': 'normal'}],
 'modules': [],
 'train': True,
 'as_module': False,
 'stmts': [{'src': ['v3 = x0.flip(2)'], 'defs': ['v3']},
           {'src': ['v4 = v3.squeeze()'], 'defs': ['v4']}],
 'outputs': ['v4'],
 'backward': False,
 'calls': 1}


# An output that is a view (squeeze) of an intermediate: ToTorch restrided only the graph's
# outputs, so the squeeze of torch.index_select's contiguous result (flip's decomposition) kept
# that layout where eager's flip keeps the transposed input's. The bases of output views are
# restrided where they are computed (outputViewBases).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
