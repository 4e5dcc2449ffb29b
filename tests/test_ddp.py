"""Compiled DistributedDataParallel (issue 9): gloo, two processes on 127.0.0.1, spawned.

ptgo.compile(DDP(model)) splits each training graph at DDP's gradient buckets (pipeline.
SplitAtBuckets, ARCHITECTURE A150): the backward of the later parts hands their gradients to
DDP's hooks before the earlier parts' backward runs, so a bucket's all-reduce overlaps the rest
of backward. Whatever the split, the gradients, parameters and losses equal eager DDP's."""
import os
import socket
import sys

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

import ptgo

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not built")

HERE = os.path.dirname(os.path.abspath(__file__))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 512)
        self.fc2 = nn.Linear(512, 512)
        self.norm = nn.LayerNorm(512)
        self.fc3 = nn.Linear(512, 512)
        self.fc4 = nn.Linear(512, 10)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = self.norm(self.fc2(h))
        h = nn.functional.relu(h, inplace=True)  # an in-place write: no cut may separate it from fc2
        h = nn.functional.gelu(self.fc3(h))
        return self.fc4(h)


def _regions(t):
    """The compiled regions backward goes through from t (CompiledRegionBackward nodes)."""
    seen, stack, n = set(), [t.grad_fn], 0
    while stack:
        f = stack.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        n += type(f).__name__ == "CompiledRegionBackward"
        stack.extend(g for g, _ in f.next_functions)
    return n


def _worker(rank, world, port, mode, out):
    sys.path.insert(0, HERE)
    import ptgo

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ref, test = Net(), Net()
    test.load_state_dict(ref.state_dict())
    eager = nn.parallel.DistributedDataParallel(ref, bucket_cap_mb=1)
    if mode == "outer":
        compiled = ptgo.compile(nn.parallel.DistributedDataParallel(test, bucket_cap_mb=1))
    else:
        compiled = nn.parallel.DistributedDataParallel(ptgo.compile(test), bucket_cap_mb=1)
    o1 = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    o2 = torch.optim.SGD(test.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(1 + rank)  # each rank its own data: the all-reduce must average them
    regions, worst = 0, 0.0
    for _ in range(3):
        x = torch.randn(16, 64)
        for model, opt in ((eager, o1), (compiled, o2)):
            opt.zero_grad()
            y = model(x)
            if model is compiled:
                regions = _regions(y)
            y.square().mean().backward()
        for p1, p2 in zip(ref.parameters(), test.parameters()):
            worst = max(worst, (p1.grad - p2.grad).abs().max().item() / (p1.grad.abs().max().item() + 1e-12))
        o1.step()
        o2.step()
    params = max((p1 - p2).abs().max().item() for p1, p2 in zip(ref.parameters(), test.parameters()))
    if rank == 0:
        out.put((regions, worst, params))
    dist.destroy_process_group()


def _run(mode):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = mp.get_context("spawn").SimpleQueue()
    mp.spawn(_worker, args=(2, port, mode, out), nprocs=2)
    return out.get()


# 1 MiB buckets over 2.1 MB of parameters (the first bucket also 1 MiB, as DDP makes it): fc4+fc3
# (1.05 MB), then norm+fc2 (1.05 MB), then fc1 — three regions. A graph with size symbols is not
# split yet (each part would need the symbols it binds alone: pipeline.SplitAtBuckets), so with
# PTGO_DYNAMIC=1 (make test-dynamic) it is one region, still equal to eager.
REGIONS = 1 if ptgo.config.assume_dynamic else 3


def test_compiled_ddp_splits_at_buckets_and_equals_eager():
    regions, grad_diff, param_diff = _run("outer")
    assert regions == REGIONS, regions
    assert grad_diff < 1e-5, grad_diff
    assert param_diff < 1e-5, param_diff


def test_ddp_of_compiled_module():
    """DDP(ptgo.compile(model)): split at the buckets too (DDP names itself in
    DistributedDataParallel._active_ddp_module while its forward runs), equal to eager DDP."""
    regions, grad_diff, param_diff = _run("inner")
    assert regions == REGIONS, regions
    assert grad_diff < 1e-5, grad_diff
    assert param_diff < 1e-5, param_diff
