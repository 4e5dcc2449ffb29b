"""ptgo's CUDA path: graphs on CUDA tensors compiled to CUDA kernels rendered from the loop IR.

The cases run where there is a CUDA device to run them on:

* a GPU (tools/gpu-check on the H200): CUDA tensors through ``torch.compile(m,
  backend=ptgo.backends.torch_entry_point)`` on torch 2 (ptgo.compile on torch 1.13), kernels
  compiled by NVRTC, launched on torch's current stream, compared with eager;
* the CPU emulator (``PTGO_CUDA_EMULATE=1``, kernels/cuda/emu): CPU tensors down the same CUDA
  path, the kernels' CUDA C compiled by g++ and run with a block's threads as fibers.
  ``test_cases_on_the_emulator`` runs this file's cases in a child with it set, so CI runs
  them without a GPU.

Every case checks that the graph really went down the CUDA path (``inductor_stats["cuda"]``)
and that the C backend compiled nothing.
"""
import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C, _runtime
from conftest import assert_same

EMULATED = os.environ.get("PTGO_CUDA_EMULATE") == "1"
ON_GPU = torch.cuda.is_available() and not EMULATED
DEVICE = "cuda" if ON_GPU else "cpu"
TORCH2 = hasattr(torch, "compile")


def stats():
    _runtime.ensure_initialized()
    return json.loads(_C.request("inductor_stats", "{}"))


def compile_(m):
    if TORCH2:
        import torch._dynamo

        torch._dynamo.reset()
        return torch.compile(m, backend=ptgo.backends.torch_entry_point)
    return ptgo.compile(m)


def _rms_silu(x, w):
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return F.silu(y)


def _chain(x):
    for _ in range(6):
        x = torch.tanh(x) * 1.5 + torch.sin(x) - 0.25 * torch.exp(-x * x)
    return x


def _views(x, y):
    return x.t() + y[:, ::2], (x[1:, :] * 2).sum(0), x.transpose(0, 1).contiguous().view(-1)[3:20]


def _int_bool(a, b):
    m = (a > 0) & (b < 3)
    return torch.where(m, a // 3, -a), m, (a * b).remainder(7), m.sum()


def _inplace(x, y):
    x.mul_(2).add_(y)
    return x * 3


def _reductions(x):
    return x.sum(1), x.amax(-1), x.argmax(-1), x.mean((0, 2)), torch.cumsum(x, 1)


def _cat_gather(x, y, idx):
    z = torch.cat([x, y * 2], dim=1)
    return torch.gather(z, 1, idx), z[:, 3] + 1


def _softmax_ln(x, w, b):
    y = torch.softmax(x * 0.125, dim=-1)
    return F.layer_norm(y + x, (x.shape[-1],), w, b)


def _f16_layernorm(x, w, b):
    # f16 storage, float math (autocast's pattern; torch 1.13 has no CPU half layer_norm)
    lo = torch.float16 if x.dtype == torch.float16 else x.dtype
    return (F.layer_norm(x.float(), (96,), w.float(), b.float()) * 2).to(lo)


class GeluMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, 256), nn.Linear(256, 64)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x))) + x


class ConvBNReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        return F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)


def _dev(*ts):
    return tuple(t.to(DEVICE) for t in ts)


def case_inputs(name, g):
    r = lambda *s, dt=torch.float32: torch.randn(*s, generator=g, dtype=dt)  # noqa: E731
    if name == "gelu_mlp":
        return _dev(r(32, 64))
    if name == "softmax_layernorm":
        return _dev(r(16, 128), r(128), r(128))
    if name == "rms_norm_silu":
        return _dev(r(8, 256), r(256))
    if name == "pointwise_chain":
        return _dev(r(1000, 33))
    if name == "views":
        return _dev(r(12, 10), r(10, 24))
    if name == "int_bool":
        return _dev(torch.randint(-50, 50, (7, 9), generator=g), torch.randint(-4, 8, (7, 9), generator=g))
    if name == "inplace":
        return _dev(r(5, 6), r(5, 6))
    if name == "reductions":
        return _dev(r(6, 40, 5))
    if name == "cat_gather":
        return _dev(r(4, 5), r(4, 6), torch.randint(0, 11, (4, 7), generator=g))
    if name == "conv_bn_relu":
        return _dev(r(2, 3, 16, 16))
    if name == "bf16_pointwise":
        return _dev(r(64, 48, dt=torch.bfloat16), r(48, dt=torch.bfloat16))
    if name == "f16_layernorm":
        return _dev(r(16, 96, dt=torch.float16), r(96, dt=torch.float16), r(96, dt=torch.float16))
    raise KeyError(name)


def case_fn(name):
    if name == "gelu_mlp":
        return GeluMLP().to(DEVICE).eval()
    if name == "conv_bn_relu":
        m = ConvBNReLU().eval()
        m.bn.running_mean.uniform_(-1, 1)
        m.bn.running_var.uniform_(0.5, 2)
        return m.to(DEVICE)
    return {
        "softmax_layernorm": _softmax_ln, "rms_norm_silu": _rms_silu, "pointwise_chain": _chain, "views": _views,
        "int_bool": _int_bool, "inplace": _inplace, "reductions": _reductions, "cat_gather": _cat_gather,
        "bf16_pointwise": lambda x, w: (F.gelu(x * w) + x, (x * w).amax(-1)),
        "f16_layernorm": _f16_layernorm,
    }[name]


CASES = ["gelu_mlp", "softmax_layernorm", "rms_norm_silu", "pointwise_chain", "views", "int_bool", "inplace",
         "reductions", "cat_gather", "conv_bn_relu", "bf16_pointwise", "f16_layernorm"]

needs_device = pytest.mark.skipif(not (EMULATED or ON_GPU),
                                  reason="no CUDA device: test_cases_on_the_emulator runs these with PTGO_CUDA_EMULATE=1")


# Low-precision cases: fused kernels compute in float32 and round once, where eager rounds after
# every op, so both are compared with a float64 reference by normwise relative error (METHOD:
# bf16 between 1e-3 and 1e-2).
LOW_PRECISION = {"bf16_pointwise": 1e-2, "f16_layernorm": 2e-3}


def _flat(v):
    return [v] if isinstance(v, torch.Tensor) else [x for e in v for x in _flat(e)]


def assert_normwise(got, ref, tol, what):
    for i, (a, r) in enumerate(zip(_flat(got), _flat(ref))):
        assert a.dtype in (torch.bfloat16, torch.float16) and a.shape == r.shape, what
        a64, r64 = a.double().cpu(), r.double().cpu()
        assert not torch.isnan(a64).any(), "%s output %d has NaNs" % (what, i)
        err = ((a64 - r64).norm() / r64.norm().clamp_min(1e-30)).item()
        assert err <= tol, "%s output %d: normwise relative error %.3g > %.3g" % (what, i, err, tol)


@needs_device
@pytest.mark.parametrize("name", CASES)
def test_case(name):
    torch.manual_seed(0)
    fn = case_fn(name)
    g = torch.Generator().manual_seed(1)
    inputs = case_inputs(name, g)
    before = stats()
    cf = compile_(fn)
    with torch.no_grad():
        for call in range(2):  # the second call reuses the arena
            a, b = [t.clone() for t in inputs], [t.clone() for t in inputs]
            got = cf(*a)
            if name in LOW_PRECISION:
                ref = fn(*[t.double() for t in b])
                assert_normwise(got, ref, LOW_PRECISION[name], "%s call %d" % (name, call))
                continue
            want = fn(*b)
            assert_same(got, want, "%s call %d" % (name, call))
            assert_same(a, b, "%s inputs after call %d" % (name, call))
    after = stats()
    assert after["cuda"] > before["cuda"], "%s did not go down the CUDA path: %s" % (name, after["reasons"])
    assert after["compiled"] == before["compiled"], "the C backend compiled part of %s" % name


@pytest.mark.skipif(not EMULATED, reason="only the emulator reports an index error synchronously")
def test_index_out_of_range_raises():
    def f(x, i):
        return x[i] * 2

    cf = compile_(f)
    x = torch.randn(10)
    with torch.no_grad():
        assert_same(cf(x, torch.tensor([1, 9])), f(x, torch.tensor([1, 9])))
        with pytest.raises(IndexError):
            cf(x, torch.tensor([1, 10]))


@pytest.mark.skipif(EMULATED or ON_GPU, reason="runs the cases in a child with PTGO_CUDA_EMULATE=1")
def test_cases_on_the_emulator():
    env = dict(os.environ, PTGO_CUDA_EMULATE="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.abspath(__file__)],
                       env=env, capture_output=True, text=True, cwd=os.path.dirname(os.path.abspath(__file__)))
    tail = (r.stdout + r.stderr)[-4000:]
    assert r.returncode == 0, tail
    passed = [ln for ln in r.stdout.splitlines() if " passed" in ln]
    # the cases, the index error and the no-GPU test (this one skips there)
    assert passed and ("%d passed" % (len(CASES) + 2)) in passed[-1], tail


_NO_GPU_CHILD = r'''
import json, warnings, torch, torch.fx, ptgo
from ptgo import _C, _runtime
from ptgo.fx_import import compile_fx
warnings.simplefilter("always")
def graph():
    g = torch.fx.Graph()
    x = g.placeholder("x")
    x.meta["ptgo_meta"] = {"dtype": torch.float32, "shape": (4, 8), "stride": (8, 1), "storage_offset": 0,
                           "device": "cuda:0", "requires_grad": False}
    y = g.call_function(torch.sin, (x,))
    g.output((g.call_function(torch.add, (y, 1.0)),))
    return torch.fx.GraphModule(torch.nn.Module(), g)
with warnings.catch_warnings(record=True) as ws:
    fns = [compile_fx(graph(), [torch.randn(4, 8)]) for _ in range(2)]
x = torch.randn(4, 8)
for fn in fns:
    assert torch.equal(fn(x)[0], torch.sin(x) + 1)  # gm.forward: torch runs it
st = json.loads(_C.request("inductor_stats", "{}"))
print(json.dumps({"warnings": [str(w.message) for w in ws if "ptgo" in str(w.message)], "cuda": st["cuda"],
                  "reasons": st["reasons"]}))
'''


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_graph_without_gpu_runs_with_torch_after_one_warning():
    env = dict(os.environ)
    env.pop("PTGO_CUDA_EMULATE", None)
    r = subprocess.run([sys.executable, "-c", _NO_GPU_CHILD], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["warnings"]) == 1, out
    assert "graphs on CUDA tensors run with torch" in out["warnings"][0], out
    assert out["cuda"] == 0
    assert sum(n for k, n in out["reasons"].items() if k.startswith("no CUDA runtime")) == 2, out
