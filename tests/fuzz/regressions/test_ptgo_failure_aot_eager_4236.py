"""Fuzzer regression (seed 4236): ptgo-failure with backend 'aot_eager'.

eager returns, ptgo raises BackendCompilerFailed: ptgo BUG: the compiler panicked: ptgo BUG:
meta function of batch_norm reads argument "cudnn_enabled", which signature "batch_norm(Tensor
input:self, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None,
bool training=False, float momentum=0.1, float eps=1e-05) -> Tensor" lacks

The program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Prog(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn0 = nn.BatchNorm1d(0, affine=False)

    def fn(m, x2):
        v1 = m.bn0(x2)
        return (v1,)
"""
import pytest

from fuzz.regress import check

PROGRAM = {'seed': 4236,
 'inputs': [{'name': 'x2',
             'shape': [2, 0],
             'dtype': 'float32',
             'grad': 'nonleaf',
             'layout': 'contig',
             'values': 'normal'}],
 'modules': [['bn0', 'nn.BatchNorm1d(0, affine=False)']],
 'train': False,
 'as_module': False,
 'stmts': [{'src': ['v1 = M.bn0(x2)'], 'defs': ['v1']}],
 'outputs': ['v1'],
 'backward': False,
 'calls': 1}


# An empty result's shortcut (emptyResult) read every parameter of batch_norm's canonical schema,
# cudnn_enabled included, from a call bound to the short signature that lacks it: Args.Get
# panicked. It reads them with Args.Opt.
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_program(backend):
    check(PROGRAM, backend)
