"""torch.autocast under ptgo: the state is traced and guarded, ops get torch 1.13's CPU casting
policy (primtorch/autocast.go), dtypes and values equal eager's; what ptgo cannot match runs with
torch and says so on perf_hints."""
import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C
from conftest import assert_same

bf16 = torch.bfloat16


def autocast():
    return torch.autocast("cpu", dtype=bf16)


# ptgo has torch 1.13's CPU policy table; under another torch, ops under autocast run with torch
# (test_without_a_table_autocast_regions_run_with_torch)
HAS_TABLE = torch.__version__.startswith("1.13")
needs_table = pytest.mark.skipif(not HAS_TABLE, reason="ptgo has torch 1.13's autocast table only")


def ptgo_table():
    return json.loads(_C.request("autocast_table", json.dumps({"device": "cpu", "torch": torch.__version__})))


@pytest.mark.skipif(not torch.__version__.startswith("1.13"), reason="the table checked is torch 1.13's")
def test_table_is_torchs_autocast_cpu_registrations():
    ptgo.compile(lambda x: x + 1)(torch.ones(1))  # loads Go
    table = ptgo_table()
    registered = set()
    for s in torch._C._jit_get_all_schemas():
        name = s.name + ("." + s.overload_name if s.overload_name else "")
        try:
            if name.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCPU"):
                registered.add(name[len("aten::"):])
        except RuntimeError:  # a schema the dispatcher does not register (aten::center)
            pass
    assert set(table) == registered, (sorted(set(table) - registered), sorted(registered - set(table)))


def _z(*shape):
    return torch.randn(*shape)


# (name in the table, call) for one op of each policy kind: the dtype torch gives under autocast
# for float32 operands is the policy's.
POLICY_CASES = [
    ("linear", lambda: F.linear(_z(2, 3), _z(4, 3), _z(4))),
    ("mm", lambda: torch.mm(_z(2, 3), _z(3, 4))),
    ("bmm", lambda: torch.bmm(_z(2, 2, 3), _z(2, 3, 4))),
    ("addmm", lambda: torch.addmm(_z(4), _z(2, 3), _z(3, 4))),
    ("baddbmm", lambda: torch.baddbmm(_z(2, 2, 4), _z(2, 2, 3), _z(2, 3, 4))),
    ("addbmm", lambda: torch.addbmm(_z(2, 4), _z(2, 2, 3), _z(2, 3, 4))),
    ("matmul", lambda: torch.matmul(_z(2, 3), _z(3, 4))),
    ("conv1d", lambda: F.conv1d(_z(1, 2, 5), _z(3, 2, 2))),
    ("conv2d", lambda: F.conv2d(_z(1, 2, 5, 5), _z(3, 2, 2, 2))),
    ("conv_transpose2d.input", lambda: F.conv_transpose2d(_z(1, 2, 5, 5).to(bf16), _z(2, 3, 2, 2))),
    ("mse_loss", lambda: F.mse_loss(_z(3).to(bf16), _z(3).to(bf16))),
    ("l1_loss", lambda: F.l1_loss(_z(3).to(bf16), _z(3).to(bf16))),
    ("cross_entropy_loss", lambda: F.cross_entropy(_z(3, 4).to(bf16), torch.tensor([0, 1, 2]))),
    ("nll_loss", lambda: F.nll_loss(_z(3, 4).to(bf16), torch.tensor([0, 1, 2]))),
    ("binary_cross_entropy_with_logits", lambda: F.binary_cross_entropy_with_logits(_z(3).to(bf16), _z(3).to(bf16))),
    ("prod.dim_int", lambda: torch.prod(_z(3, 2).to(bf16), 1)),
    ("cat", lambda: torch.cat([_z(2).to(bf16), _z(2)])),
    ("stack", lambda: torch.stack([_z(2).to(bf16), _z(2).to(bf16)])),
]
EXPECTED = {"lower_precision_fp": bf16, "fp32": torch.float32}


@needs_table
@pytest.mark.parametrize("name,call", POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_policy_of_table_entries_is_torchs(name, call):
    ptgo.compile(lambda x: x + 1)(torch.ones(1))
    policy = ptgo_table()[name]
    with autocast():
        got = call().dtype
    if policy == "promote":  # the mixed cat promotes to float32, the all-bf16 stack stays bf16
        assert got == (torch.float32 if name == "cat" else bf16)
    else:
        assert got == EXPECTED[policy], (name, policy, got)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        # torch 1.13's CPU layer_norm rejects a bfloat16 input with a float32 weight, in eager too
        self.fc1, self.fc2, self.norm = nn.Linear(8, 32), nn.Linear(32, 4), nn.LayerNorm(32, elementwise_affine=False)

    def forward(self, x, target):
        h = self.norm(F.gelu(self.fc1(x)))
        logits = self.fc2(h)
        probs = F.softmax(logits, -1)
        return logits, probs, F.cross_entropy(logits, target), F.mse_loss(probs, torch.zeros_like(probs))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = F.relu(self.bn(self.conv(x)))
        return self.fc(h.mean((2, 3))), h


def _pair(make):
    torch.manual_seed(0)
    a = make()
    torch.manual_seed(0)
    return a, make()


@pytest.mark.parametrize("backend", ["inductor", "aot_eager", "eager"])
def test_mlp_under_autocast_equals_eager(backend):
    eager, model = _pair(MLP)
    compiled = ptgo.compile(model, backend=backend)
    x, target = torch.randn(6, 8), torch.tensor([0, 1, 2, 3, 0, 1])
    with autocast():
        want = eager(x, target)
        got = compiled(x, target)
    assert want[0].dtype == bf16 and want[2].dtype == torch.float32  # eager's policy, for the record
    assert_same(got, want)
    # backward through the casts: float32 gradients of float32 parameters
    sum(o.float().sum() for o in got).backward()
    sum(o.float().sum() for o in want).backward()
    for pc, pe in zip(model.parameters(), eager.parameters()):
        assert_same(pc.grad, pe.grad)


def test_conv_net_under_autocast_equals_eager():
    eager, model = _pair(ConvNet)
    compiled = ptgo.compile(model)
    x = torch.randn(2, 3, 8, 8)
    with torch.cpu.amp.autocast():
        assert_same(compiled(x), eager(x))
    for bc, be in zip(model.buffers(), eager.buffers()):
        assert_same(bc, be)


@needs_table
def test_autocast_state_is_guarded(counter):
    def f(x, w):
        return torch.relu(x @ w) + 1

    cf = ptgo.compile(f, backend=counter)
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    assert_same(cf(x, w), f(x, w))
    with autocast():
        assert_same(cf(x, w), f(x, w))  # not the float32 graph
        assert_same(cf(x, w), f(x, w))
    assert_same(cf(x, w), f(x, w))  # nor the bfloat16 one without autocast
    with torch.autocast("cpu", dtype=bf16, cache_enabled=False):
        assert_same(cf(x, w), f(x, w))
    assert counter.frame_count == 3, [g.code for g in counter.graphs]
    with torch.autocast("cpu", dtype=bf16, enabled=False):
        assert_same(cf(x, w), f(x, w))
    assert counter.frame_count == 3


@needs_table
def test_autocast_blocks_inside_the_frame(counter):
    def f(x, w):
        a = x @ w
        with torch.autocast("cpu", dtype=bf16):
            b = x @ w
            with torch.autocast("cpu", enabled=False):
                c = x @ w  # autocast off again inside
            state = (torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype())
            d = torch.cat([b, c])  # promote: float32
            e = F.log_softmax(b, -1)
        with torch.cpu.amp.autocast():
            g = torch.bmm(x[None], w[None])
        return a, b, c, d, e, g, state, torch.is_autocast_cpu_enabled()

    cf = ptgo.compile(f, backend=counter)
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    assert_same(cf(x, w), f(x, w))
    assert counter.frame_count == 1
    assert "to" in counter.targets(), counter.graphs[0].code


@needs_table
def test_parameter_casts_are_shared_as_torch_caches_them(counter):
    eager, model = _pair(lambda: nn.Linear(8, 8))

    def step(m, x):
        return (m(x) * m(x * 2)).float().sum()  # the weight is cast once per autocast region

    x = torch.randn(4, 8)
    with autocast():
        lc = ptgo.compile(step)(model, x)
        le = step(eager, x)
    with autocast():
        ptgo.compile(step, backend=counter)(model, x)
    casts = [n for n in counter.graphs[0].graph.nodes if n.op == "call_method" and n.target == "to"]
    assert len(casts) == 4, counter.graphs[0].code  # x, x * 2, and the weight and bias once each
    lc.backward()
    le.backward()
    # float32 sums of bfloat16 products: bfloat16's tolerance. The weight's gradient is summed
    # over its two uses in bfloat16 (the one cached cast's gradient), as eager sums it.
    torch.testing.assert_close(lc, le, rtol=1.6e-2, atol=1e-5)
    # Sums of bfloat16 products with cancellation: within a few bfloat16 steps of the largest.
    scale = eager.weight.grad.abs().max().item()
    torch.testing.assert_close(model.weight.grad, eager.weight.grad, rtol=1.6e-2, atol=scale * 2 ** -6)


@needs_table
def test_op_torch_autocasts_internally_runs_with_torch(ptgo_log):
    ptgo.set_logs("perf_hints")

    def f(x, w):
        y = torch.einsum("ij,jk->ik", x, w)  # not listed, but its bmm is: bfloat16 in eager
        return y * 2

    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with autocast():
        want = f(x, w)
        got = ptgo.compile(f)(x, w)
    assert want.dtype == bf16
    assert_same(got, want)
    assert "einsum under CPU autocast: torch gives dtypes torch.bfloat16" in ptgo_log.text, ptgo_log.text


@pytest.mark.skipif(HAS_TABLE, reason="applies to a torch ptgo has no autocast table for")
def test_without_a_table_autocast_regions_run_with_torch(ptgo_log, counter):
    ptgo.set_logs("perf_hints")

    def f(x, w):
        return torch.relu(x @ w) + 1

    cf = ptgo.compile(f, backend=counter)
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    assert_same(cf(x, w), f(x, w))
    with autocast():
        got, want = cf(x, w), f(x, w)
    assert got.dtype == bf16
    assert_same(got, want)
    assert "no CPU autocast table for torch" in ptgo_log.text
    assert_same(cf(x, w), f(x, w))  # the float32 graph again, not the autocast run
    assert counter.frame_count == 1
