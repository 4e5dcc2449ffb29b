"""torch.optim's optimizers as users construct them (no foreach=, no fused=): on torch 2.x their
step first asks which backends the process has (torch.utils._foreach_utils,
torch.accelerator.current_accelerator, torch.cuda.is_available) before choosing the
single-tensor path on CPU. Those questions are answered while tracing under guards that ask
again (A148), and the step compiles to one graph equal to eager to the bit."""
import copy

import pytest
import torch

import ptgo
from conftest import assert_same

DEFAULTS = {
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2),
    "nadam": lambda ps: torch.optim.NAdam(ps, lr=1e-2),
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=0.1),
    "rmsprop": lambda ps: torch.optim.RMSprop(ps, lr=1e-2),
}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_default_optimizer_step_is_one_graph(name):
    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    m2 = copy.deepcopy(m1)
    o1, o2 = DEFAULTS[name](m1.parameters()), DEFAULTS[name](m2.parameters())
    x = torch.randn(4, 6)

    def grads():
        for m in (m1, m2):
            m.zero_grad()
            m(x).square().mean().backward()

    grads()
    explained = ptgo.explain(copy.deepcopy(o2).step)()
    assert explained.graph_count == 1 and explained.graph_break_count == 0, [str(b) for b in explained.break_reasons]
    step = ptgo.compile(o2.step)
    for i in range(4):
        if i:
            grads()
        o1.step()
        step()
        for (n, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            assert_same(p2, p1, path="step %d: %s" % (i, n))
            assert torch.equal(p2, p1), "step %d: %s differs in bits" % (i, n)


def test_missing_attribute_of_a_library_object_is_guarded():
    """getattr(self, "grad_scale", None) / hasattr on an instance of a library class (torch.optim's
    step reads these): False while tracing, guarded on the instance dict, so an attribute set
    later recompiles instead of serving the stale answer."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)

    def f(x):
        scale = getattr(opt, "grad_scale", None)
        return x * 2 if scale is None else x * scale, hasattr(opt, "found_inf")

    compiled = ptgo.compile(f, fullgraph=True)
    x = torch.ones(3)
    assert_same(compiled(x), f(x))
    opt.grad_scale = 5.0
    opt.found_inf = None
    assert_same(compiled(x), f(x))
    assert compiled(x)[0][0].item() == 5.0
