"""Dynamic shapes in inductor's C backend: graphs that used to go back to one compile per size
(fallback externs, convolution over a symbolic batch, int arguments and storage offsets as
symbols, cat and pad along a symbolic dim) compile one symbolic graph after the first size
change, and match eager at every size. `PTGO_LOGS=dynamic` names anything still compiled with
static shapes."""
import copy
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
    # heads split out of a [B, T, H·dh] tensor and merged into the batch ([B·H, T, dh]): the copy
    # reads at (i // H)·(T·H·dh), a division times a symbolic stride
    "merge_heads_into_batch": (lambda x: x.view(2, x.size(1), 4, 2).permute(0, 2, 1, 3).reshape(8, x.size(1), 2).tanh(),
                               lambda n: (torch.randn(2, n, 8),), False),
    # the last real token of each sequence (GPT-2's sequence-classification pooling): an index
    # along the symbolic length, wrapped and checked against it (lengths n + 5: no size equals
    # another by chance, which duck shaping would guard, with dynamic=True forced on)
    "last_token_by_length": (lambda h, lengths: h[torch.arange(h.size(0)), lengths - 1].tanh(),
                             lambda n: (torch.randn(3, n + 5, 8), torch.tensor([n + 5, 1, n // 2 + 1])), False),
    "gather_along_length": (lambda x, i: torch.gather(x, 1, i).sigmoid(),
                            lambda n: (torch.randn(2, n + 5, 4), torch.randint(0, n + 5, (2, 3, 4))), False),
    "scatter_along_length": (lambda x, i, v: x.scatter(1, i, v) * 2,
                             lambda n: (torch.randn(2, n + 5), torch.tensor([[0], [n + 4]]), torch.randn(2, 1)), False),
    # rows picked from a [4, T] tensor: an indirect index times the symbolic row stride T
    "index_select_rows": (lambda x, i: x.index_select(0, i).tanh() * 2, lambda n: (torch.randn(4, n), torch.tensor([3, 0, 2])), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inductor_symbolic(case):
    fn, make, seeded = CASES[case]
    with torch.no_grad():
        n = sweep(fn, make, SIZES, seeded)
    assert n <= 2, "%d graphs for %d sizes" % (n, len(SIZES))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_fast_path_symbolic(norm_first, ptgo_log):
    # torch's fused encoder-layer kernel (eval, no grad) decomposes with a symbolic batch and
    # sequence length into kernels around the matrix products; nothing stays a call to torch
    ptgo.set_logs("perf_hints,dynamic")
    torch.manual_seed(0)
    m = nn.TransformerEncoderLayer(32, 4, 48, dropout=0.0, batch_first=True, norm_first=norm_first,
                                   activation="gelu" if norm_first else "relu").eval()
    cf = ptgo.compile(m, dynamic=True)
    with torch.no_grad():
        for b, t in ((2, 5), (3, 9), (2, 17), (4, 2), (2, 40)):
            x = torch.randn(b, t, 32)
            assert_same(cf(x), m(x), "size %r" % ((b, t),))
    assert compiled_count() == 1, ptgo_log.text
    assert "prims.fallback" not in ptgo_log.text, ptgo_log.text
    assert "static shapes" not in ptgo_log.text, ptgo_log.text


@pytest.mark.parametrize("dynamic", [False, True])
def test_column_reductions_over_symbolic_and_gathered_rows(dynamic, ptgo_log):
    # A sum over a leading dim (a bias gradient's grad.sum(0)) and an embedding's rows summed
    # over a sequence accumulate a block of outputs along the contiguous dim. With a symbolic
    # layout the stride of the reduced dim is a symbol, and the gathered rows' index is an
    # indirect load: both used to fall back to one strided column per output (10x slower than
    # the static kernel for x.sum(0) of [4096, 64]).
    ptgo.set_logs("fusion")
    emb = nn.Embedding(100, 64)

    def pool(ids, mask):
        return (emb(ids) * mask.unsqueeze(-1)).sum(1)

    colsum = ptgo.compile(lambda x: x.sum(0), dynamic=dynamic)
    pooled = ptgo.compile(pool, dynamic=dynamic)
    with torch.no_grad():
        for n in (300, 41):
            x = torch.randn(n, 64)
            assert_same(colsum(x), x.sum(0), "x.sum(0) of [%d, 64]" % n)
        assert any("as an inner loop" in m for m in ptgo_log), ptgo_log.text
        seen = len(ptgo_log)
        for n in (300, 41):
            ids, mask = torch.randint(0, 100, (3, n)), (torch.rand(3, n) > 0.3).float()
            assert_same(pooled(ids, mask), pool(ids, mask), "pooling over %d" % n)
    assert any("as an inner loop" in m for m in ptgo_log[seen:]), ptgo_log.text


def test_specialised_int_argument_still_compiles_to_c():
    """Stepped slices of a dynamic size and of a dynamic int argument (x[:n:2], x[::3]) have
    lengths that are floor divisions: derived size symbols, so after the first size change one
    symbolic graph compiled to C serves every (size, n), equal to eager (they used to specialise,
    one graph per (size, n))."""
    def f(x, n):
        return x[:n:2] * 2, x[::3] + n

    def stats():
        return json.loads(_C.request("inductor_stats", "{}"))

    cf = ptgo.compile(f, backend="inductor")
    before = stats()
    for s, n in ((8, 4), (10, 5), (10, 3), (12, 7)):
        x = torch.randn(s)
        assert_same(cf(x, n), f(x, n), "size %d, n %d" % (s, n))
    after = stats()
    assert after["fallbacks"] == before["fallbacks"]
    # static first, then symbolic (PTGO_DYNAMIC=1: symbolic from the first call)
    assert 1 <= after["compiled"] - before["compiled"] <= 2


@pytest.mark.parametrize("dynamic", [True, None])
def test_empty_batch_through_symbolic_graph(dynamic):
    """A batch of 0 through a graph compiled for symbolic sizes: the call's dynamic arena is
    empty (it was a null block, a segfault), and the empty statistics saved for backward have
    whatever strides eager gave them (they were refused as not fitting their symbolic layout).
    Groups of no element: torch 2 refuses them, 1.13 gives the weight a NaN gradient (fuzz
    seed 27847). Forward, backward and parameter gradients equal eager, also after a recompile
    of another module."""
    torch.manual_seed(0)
    first = nn.GroupNorm(1, 1)
    x1 = torch.randn(2, 1, 3, requires_grad=True)
    e1 = x1.detach().clone().requires_grad_()
    y = ptgo.compile(first, dynamic=dynamic)(x1)
    y.sum().backward()
    first(e1).sum().backward()
    assert_same(x1.grad, e1.grad, "first grad")
    m = nn.GroupNorm(2, 4)
    em = copy.deepcopy(m)
    cm = ptgo.compile(m, dynamic=dynamic)
    for shape in ((3, 4, 5), (0, 4, 3), (2, 4, 0), (4, 4, 2)):
        x = torch.randn(shape, requires_grad=True)
        e = x.detach().clone().requires_grad_()
        m.zero_grad(set_to_none=True)
        em.zero_grad(set_to_none=True)
        try:
            want = em(e)
        except RuntimeError as err:
            with pytest.raises(RuntimeError) as info:
                cm(x)
            assert str(info.value) == str(err)
            continue
        got = cm(x)
        assert_same(got, want, "forward %s" % (shape,))
        got.sum().backward()
        want.sum().backward()
        assert_same(x.grad, e.grad, "input grad %s" % (shape,))
        assert_same(m.weight.grad, em.weight.grad, "weight grad %s" % (shape,))
        assert_same(m.bias.grad, em.bias.grad, "bias grad %s" % (shape,))


@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_group_norm_of_empty_groups(channels, backend):
    """Groups of no element (an input with a spatial dim of 0), after another op: torch 1.13
    gives the weight a NaN gradient, which the rule for empty results (zeros) must not replace
    (fuzz seed 27847); torch 2 raises eager's error."""
    gn = nn.GroupNorm(1, channels)
    egn = copy.deepcopy(gn)

    def f(m, x):
        return m(torch.log1p(x).unsqueeze(-2) if channels == 1 else x * 2)

    x = torch.zeros((2, 0) if channels == 1 else (2, channels, 0))
    try:
        want = f(egn, x)
    except RuntimeError as err:
        with pytest.raises(RuntimeError) as info:
            ptgo.compile(f, backend=backend)(gn, x)
        assert str(info.value) == str(err)
        return
    got = ptgo.compile(f, backend=backend)(gn, x)
    assert_same(got, want)
    got.sum().backward()
    want.sum().backward()
    assert_same(gn.weight.grad, egn.weight.grad, "weight grad")
    assert_same(gn.bias.grad, egn.bias.grad, "bias grad")
