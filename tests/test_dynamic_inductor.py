"""Dynamic shapes in inductor's C backend: graphs that used to go back to one compile per size
(fallback externs, convolution over a symbolic batch, int arguments and storage offsets as
symbols, cat and pad along a symbolic dim) compile one symbolic graph after the first size
change, and match eager at every size. `PTGO_LOGS=dynamic` names anything still compiled with
static shapes."""
import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from ptgo import _C
from conftest import assert_same


def compiled_count():
    log = (json.loads(_C.request("compile_log", "{}")) or []) if _C.go_loaded() else []
    return sum(1 for r in log if r.get("compiled"))


def sweep(fn, make, sizes, seeded=False):
    cf = ptgo.compile(fn, backend="inductor")
    for n in sizes:
        args = make(n)
        if seeded:
            torch.manual_seed(n)
        want = fn(*args)
        if seeded:
            torch.manual_seed(n)
        assert_same(cf(*args), want, "size %r" % (n,))
    return compiled_count()


SIZES = [2, 3, 5, 9, 4, 17]

lin = nn.Linear(16, 16)
conv = nn.Conv2d(3, 8, 3).eval()
cls = torch.randn(1, 1, 8)
data = torch.randn(200, 8)


def fallback_dropout(x):
    return F.dropout(lin(x), 0.5, training=True).tanh()


CASES = {
    "dropout": (fallback_dropout, lambda n: (torch.randn(n, 16),), True),
    "max_pool": (lambda x: F.max_pool2d(x, 3, 2, 1).tanh(), lambda n: (torch.randn(n, 3, 10, 10),), False),
    "conv_batch": (lambda x: conv(x).relu(), lambda n: (torch.randn(n, 3, 10, 10),), False),
    "int_argument": (lambda x, k: (x * k).sum(0) + k, lambda n: (torch.randn(4, 5), n), False),
    "storage_offset": (lambda x: (x * 2).tanh() + 1, lambda n: (data[n:n + 16],), False),
    "cat_cls_token": (lambda x: torch.cat([cls.expand(x.size(0), 1, 8), x], 1).tanh(),
                      lambda n: (torch.randn(2, n, 8),), False),
    "last_token": (lambda x: (x[:, -1] * 2).tanh(), lambda n: (torch.randn(2, n, 8),), False),
    "slice_from_3": (lambda x: x[:, 3:].tanh() + x[:, 1:4].sum(1, keepdim=True),
                     lambda n: (torch.randn(2, n + 3, 8),), False),
    "pad_sequence": (lambda x: F.pad(x, (0, 0, 1, 2), value=0.5).tanh(), lambda n: (torch.randn(2, n, 8),), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inductor_symbolic(case):
    fn, make, seeded = CASES[case]
    with torch.no_grad():
        n = sweep(fn, make, SIZES, seeded)
    assert n <= 2, "%d graphs for %d sizes" % (n, len(SIZES))
