"""`make bench` (compiled DDP, issue 9): a training step of DistributedDataParallel over gloo, two
processes on 127.0.0.1 (spawned), compiled by ptgo beside eager DDP.

Contestants, each its own DDP (same initial weights, same data), interleaved step by step in
both processes:
  eager        DistributedDataParallel(model) as written
  ptgo-one     DistributedDataParallel(ptgo.compile(model)) compiled with ptgo.config.optimize_ddp
               off: one autograd region, every gradient all-reduced after the whole backward
  ptgo-split   ptgo.compile(DistributedDataParallel(model)): the training graph is split at DDP's
               gradient buckets, so each bucket's all-reduce runs while backward goes on
               (pipeline.SplitAtBuckets, ARCHITECTURE A150)
  inductor     torch 2.x only: torch.compile(DistributedDataParallel(model)) (Dynamo's
               DDPOptimizer splits at the same buckets)

The parameters after the measured steps are compared with eager's (max abs difference). Median
seconds per step (forward, loss, backward with all-reduce, SGD step) over the rounds, from rank
0; threads per process given by --threads (1: the primary figure on this 2-core machine, where
the two processes take one core each). Writes bench/results[/torch2]/ddp.md. A report, not a
test.

Usage: python bench/ddp.py [--rounds 30] [--bucket-mb 2] [--threads 1]
"""
import argparse
import copy
import importlib.util
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
if importlib.util.find_spec("ptgo") is None:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))

from threads import set_threads  # noqa: E402
from models import GPTBlock  # noqa: E402

TORCH2 = hasattr(torch, "compile")
RESULTS = os.path.join(HERE, "results", "torch2") if TORCH2 else os.path.join(HERE, "results")


class GPT(nn.Module):
    def __init__(self, vocab=512, d=256, layers=4, t=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, t, d))
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[GPTBlock(d) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.drop(self.emb(idx) + self.pos[:, :idx.shape[1]])
        return self.head(self.ln(self.blocks(x)))


def _worker(rank, world, port, args, out):
    import ptgo

    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    set_threads(args.threads)
    torch.manual_seed(0)
    base = GPT()
    names = ("eager", "ptgo-one", "ptgo-split") + (("inductor",) if TORCH2 else ())
    models = {name: copy.deepcopy(base) for name in names}
    ddp = dict(bucket_cap_mb=args.bucket_mb)
    steps = {"eager": nn.parallel.DistributedDataParallel(models["eager"], **ddp)}
    ptgo.config.optimize_ddp = False
    steps["ptgo-one"] = nn.parallel.DistributedDataParallel(ptgo.compile(models["ptgo-one"]), **ddp)
    split = ptgo.compile(nn.parallel.DistributedDataParallel(models["ptgo-split"], **ddp))
    opts = {name: torch.optim.SGD(m.parameters(), lr=0.01) for name, m in models.items()}
    torch.manual_seed(100 + rank)
    x = torch.randint(0, 512, (4, 64))
    y = torch.randint(0, 512, (4, 64))

    def step(name, fn):
        opts[name].zero_grad()
        torch.manual_seed(1000 + rank)  # the same dropout masks in every contestant
        loss = F.cross_entropy(fn(x).flatten(0, 1), y.flatten())
        loss.backward()
        opts[name].step()

    # compile ptgo-one with optimize_ddp off, then ptgo-split with it on
    step("eager", steps["eager"])
    step("ptgo-one", steps["ptgo-one"])
    ptgo.config.optimize_ddp = True
    step("ptgo-split", split)
    steps["ptgo-split"] = split
    if TORCH2:
        steps["inductor"] = torch.compile(nn.parallel.DistributedDataParallel(models["inductor"], **ddp))
        step("inductor", steps["inductor"])
    times = {name: [] for name in steps}
    for r in range(args.warm + args.rounds):
        for name, fn in steps.items():
            dist.barrier()
            t0 = time.perf_counter()
            step(name, fn)
            t = time.perf_counter() - t0
            if r >= args.warm:
                times[name].append(t)
    if rank == 0:
        diffs = {name: max((a - b).abs().max().item() for a, b in zip(models["eager"].parameters(), m.parameters()))
                 for name, m in models.items()}
        out.put({name: (statistics.median(ts), diffs[name]) for name, ts in times.items()})
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warm", type=int, default=5)
    ap.add_argument("--bucket-mb", type=float, default=2.0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.spawn(_worker, args=(2, port, args, out), nprocs=2)
    res = out.get()
    eager = res["eager"][0]
    lines = ["# Compiled DDP (gloo, 2 processes, %d thread(s) each), torch %s" % (args.threads, torch.__version__), "",
             "GPT (4 blocks, d=256, dropout 0.1), batch 4×64, SGD; bucket_cap_mb=%g; median of %d steps" % (
                 args.bucket_mb, args.rounds), "",
             "| contestant | ms/step | vs eager DDP | max param diff vs eager |", "|---|---|---|---|"]
    for name, (t, d) in res.items():
        lines.append("| %s | %.1f | %.2f× | %.1e |" % (name, t * 1e3, eager / t, d))
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "ddp.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
