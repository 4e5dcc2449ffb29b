"""Fuzzer regression (seed 1470): extra-exception with backend 'aot_eager'.

backward: eager succeeds, ptgo raises RuntimeError: one of the variables needed for gradient
computation has been modified by an inplace operation: [torch.FloatTensor [1, 1]], which is
output 0 of DivBackward0, is at version 1; expected version 0 instead. Hint: enable anomaly
detection to find the operation that failed to compute its gradient, with
torch.autograd.set_detect_anomaly(True).

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()

    def fn(m, x0):
        s2 = x0.sum().item()
        v1 = x0 * s2
        v3 = F.mish(v1)
        print('shape', v1.shape, v1.dtype)
        v6 = v1 + 1
        x0.div_(s2)
        return (v6,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 1470,
 'inputs': [{'name': 'x0',
             'shape': [1, 1],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['s2 = x0.sum().item()', 'v1 = x0 * s2'], 'defs': ['s2', 'v1']},
           {'src': ['v3 = F.mish(v1)'], 'defs': ['v3']},
           {'src': ["print('shape', v1.shape, v1.dtype)", 'v6 = v1 + 1'], 'defs': ['v6']},
           {'src': ['x0.div_(s2)'], 'defs': []}],
 'outputs': ['v6'],
 'backward': True,
 'calls': 1}


# The class of seed 1483 (A115) for an input that requires grad: the region after .item() gets
# x0 (an activation) as an input; the min-cut partition saved x0 and recomputed x0 * s2 in the
# backward, where eager's mish saves x0 * s2; x0.div_ after the print then wrote x0, and ptgo's
# backward raised where eager succeeds. Only module state may stand in for values computed
# from it (aotautograd.Options.ModuleState).
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
