"""Nothing kept alive (issue 8): the process's resident memory over compile/drop cycles and over
many calls of one compiled function. A report, not a test (tests/test_lifetime.py checks the
mechanism: a dropped function's graphs and kernel libraries are released).

Usage: .venv/bin/python bench/memory.py [--cycles 1000] [--calls 1000000]

1. compile and drop: `cycles` distinct functions (exec'd sources, so distinct kernels and a
   kernel library each) and distinct nn.Modules, each compiled, called twice and dropped; RSS
   after a warm-up of 100 cycles against RSS at the end, and how many of ptgo's kernel
   libraries are still mapped.
2. calls: one compiled function called `calls` times; RSS every tenth.
"""
import argparse
import gc
import importlib.util
import os
import re
import sys
import time

import torch

from threads import set_threads  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("ptgo") is None:
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
import ptgo  # noqa: E402


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def mapped_libraries():
    """ptgo's kernel libraries mapped in this process (its disk cache's .so files)."""
    with open("/proc/self/maps") as f:
        return len({line.split()[-1] for line in f if re.search(r"/[0-9a-f]{64}\.so$", line.rstrip())})


SRC = "def f(x):\n    return (x * %d.0 + %d.0).sin() - x\n"


def cycle(i, x):
    ns = {"torch": torch}
    exec(SRC % (i % 7 + 2, i), ns)
    f = ptgo.compile(ns["f"])
    f(x)
    f(x)
    m = ptgo.compile(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Hardtanh(-float(i % 5 + 1), 1.0)))
    m(x.reshape(4, 16))
    m(x.reshape(4, 16))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=1000000)
    opts = ap.parse_args()
    set_threads(1)
    x = torch.randn(64)
    print("torch %s, ptgo from %s" % (torch.__version__, os.path.dirname(ptgo.__file__)))
    for i in range(100):  # warm-up: ptgo's own start, allocator pools
        cycle(-1 - i, x)
    gc.collect()
    base, libs0, t0 = rss_mb(), mapped_libraries(), time.time()
    print("compile and drop: after 100 warm-up cycles RSS %.1f MB, %d kernel libraries mapped" % (base, libs0))
    for i in range(opts.cycles):
        cycle(i, x)
        if (i + 1) % max(1, opts.cycles // 5) == 0:
            gc.collect()
            print("  %5d cycles: RSS %+6.1f MB, %d libraries mapped (%.0f s)"
                  % (i + 1, rss_mb() - base, mapped_libraries(), time.time() - t0), flush=True)
    gc.collect()
    grew = rss_mb() - base
    print("compile and drop: %d cycles, RSS %+.1f MB, %d libraries mapped" % (opts.cycles, grew, mapped_libraries()))

    f = ptgo.compile(lambda x: (x * 2 + 1).relu())
    f(x)
    gc.collect()
    base = rss_mb()
    samples = []
    for i in range(opts.calls):
        f(x)
        if (i + 1) % max(1, opts.calls // 10) == 0:
            samples.append(rss_mb() - base)
    print("calls: %d calls of one compiled function, RSS every tenth: %s MB"
          % (opts.calls, " ".join("%+.1f" % s for s in samples)))


if __name__ == "__main__":
    main()
