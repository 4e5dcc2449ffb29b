"""timm, as pip installs it into a virtualenv's site-packages: code ptgo's authors did not write,
with the Python real model libraries use (typing aliases built in forward, torch.jit.annotate,
register_notrace_function, drop path, layer scale, windowed attention). Each model compiles to
one graph in eval mode and equals eager; two models train (dropout and drop path on, the same
seeds) with eager's gradients and BatchNorm statistics.

Values are judged like torch's own benchmark harness judges torch.compile: a value past a tight
tolerance passes when ptgo is about as close to a float64 run of the same model as eager's float32
is (RMS error at most twice eager's). `make setup` installs timm in both environments; without it
(a checkout set up by hand) these tests are skipped, except under CI where timm is required.
"""
import copy
import os

import pytest
import torch

import ptgo

if os.environ.get("CI"):
    import timm  # CI installs it (make setup): a missing timm is a failure there, not a skip
else:
    timm = pytest.importorskip("timm")

# name -> (create_model keyword arguments, input shape)
EVAL_MODELS = {
    "crossvit_tiny_240": ({}, (1, 3, 240, 240)),
    "efficientnet_b0": ({}, (2, 3, 64, 64)),
    "convnext_atto": ({}, (2, 3, 64, 64)),
    "vit_tiny_patch16_224": ({"img_size": 64}, (2, 3, 64, 64)),
    "mobilevit_xxs": ({}, (2, 3, 64, 64)),
    "regnetx_002": ({}, (2, 3, 64, 64)),
    "poolformer_s12": ({}, (2, 3, 64, 64)),
    "levit_128s": ({"img_size": 64}, (2, 3, 64, 64)),
}
TRAIN_MODELS = {
    "efficientnet_b0": ({"drop_rate": 0.2, "drop_path_rate": 0.1}, (2, 3, 64, 64)),
    "vit_tiny_patch16_224": ({"img_size": 64, "drop_rate": 0.1, "drop_path_rate": 0.1}, (2, 3, 64, 64)),
}


def _close(actual, expected, exact, what):
    """actual (ptgo) equals expected (eager) within a float32 tolerance, or is at most twice as
    far from exact (float64) as eager is."""
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, what
    assert torch.isfinite(actual).all() == torch.isfinite(expected).all(), what
    diff = (actual - expected).abs().max().item()
    scale = expected.abs().max().item()
    if diff <= 1e-5 * scale + 1e-6:
        return
    x = exact.double()
    rms = lambda t: (t.double() - x).pow(2).mean().sqrt().item()  # noqa: E731
    assert rms(actual) <= 2 * rms(expected) + 1e-6 * scale, (
        "%s: max abs diff %.3g (max|eager| %.3g); RMS error against float64: ptgo %.3g, eager %.3g"
        % (what, diff, scale, rms(actual), rms(expected)))


def _make(name, kwargs, seed=0):
    torch.manual_seed(seed)
    return timm.create_model(name, pretrained=False, **kwargs)


@pytest.mark.parametrize("name", sorted(EVAL_MODELS))
def test_timm_eval_one_graph(name):
    kwargs, shape = EVAL_MODELS[name]
    model = _make(name, kwargs).eval()
    torch.manual_seed(1)
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = model(x)
        exact = copy.deepcopy(model).double()(x.double())
        explained = ptgo.explain(copy.deepcopy(model))(x)
        assert explained.graph_count == 1 and explained.graph_break_count == 0, [str(b) for b in explained.break_reasons]
        compiled = ptgo.compile(model)
        for _ in range(2):
            _close(compiled(x), expected, exact, name)


@pytest.mark.parametrize("name", sorted(TRAIN_MODELS))
def test_timm_train_step(name):
    kwargs, shape = TRAIN_MODELS[name]
    model = _make(name, kwargs).train()
    mine = copy.deepcopy(model)
    torch.manual_seed(1)
    x = torch.randn(*shape)
    compiled = ptgo.compile(mine)
    for step in range(2):
        for m in (model, mine):
            m.zero_grad()
        torch.manual_seed(100 + step)
        model(x).square().mean().backward()
        torch.manual_seed(100 + step)
        out = compiled(x)
        out.square().mean().backward()
        for (n, p), q in zip(mine.named_parameters(), model.parameters()):
            assert (p.grad is None) == (q.grad is None), n
            if q.grad is not None:
                # with dropout on, a float64 run draws other masks: judged against eager, with a
                # float32 tolerance over the model's depth
                diff = (p.grad - q.grad).abs().max().item()
                assert diff <= 1e-4 * q.grad.abs().max().item() + 1e-6, "%s.grad: max abs diff %.3g of %.3g" % (
                    n, diff, q.grad.abs().max().item())
        for (n, b), c in zip(mine.named_buffers(), model.buffers()):
            if b.is_floating_point():
                assert (b - c).abs().max().item() <= 1e-5 * c.abs().max().item() + 1e-6, n
            else:
                assert torch.equal(b, c), n
