"""Python patterns real models use, each captured as one graph with eager's results."""
import dataclasses
import math
from collections import OrderedDict, namedtuple

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ptgo
from conftest import assert_same, clone_args


@dataclasses.dataclass
class Config:
    dim: int = 8
    heads: int = 2
    eps: float = 1e-6
    act: str = "gelu"


CFG = Config()
Pair = namedtuple("Pair", ["a", "b"])
SCALES = {"gelu": 1.0, "relu": 2.0}


def p_dataclass_config(x):
    head_dim = CFG.dim // CFG.heads
    y = x.view(x.shape[0], CFG.heads, head_dim)
    return y * SCALES[CFG.act] + CFG.eps


def p_assert_and_fstring(x):
    assert x.dim() == 2, f"expected 2-d input, got {x.dim()}-d"
    assert x.shape[-1] % 2 == 0
    return x[:, : x.shape[-1] // 2]


def p_chained_compare(x, lo, hi):
    if lo <= x.shape[0] < hi:
        return x * 2
    return x


def p_star_args(x, *shape):
    return x.reshape(*shape)


def p_kwargs_forwarding(x, **kw):
    return F.softmax(x, **kw)


def p_getattr_dynamic(x):
    out = x
    for name in ("relu", "sigmoid", "tanh"):
        out = getattr(torch, name)(out)
    return out


def p_dict_comprehension(x):
    parts = {f"p{i}": x[i] * i for i in range(x.shape[0])}
    return sum(parts.values()), sorted(parts.keys())


def p_nested_closure(x):
    scale = x.shape[-1] ** -0.5

    def attn(q, k):
        return (q @ k.transpose(-2, -1)) * scale

    return attn(x, x).softmax(-1)


def p_lambda_map(x):
    fns = [lambda t: t + 1, lambda t: t * 2, torch.neg]
    return list(map(lambda f: f(x), fns))


def p_zip_enumerate(xs, ws):
    total = 0
    for i, (x, w) in enumerate(zip(xs, ws)):
        total = total + x * w * (i + 1)
    return total


def p_tuple_star_unpack(x):
    first, *middle, last = x.unbind(0)
    return first + last + sum(middle)


def p_string_ops(x, mode):
    if mode.startswith("up") and "sample" in mode:
        return F.interpolate(x, scale_factor=2, mode="nearest")
    return x


def p_isinstance_checks(x, y):
    if isinstance(y, (int, float)):
        return x + y
    if isinstance(y, torch.Tensor):
        return x * y
    return x


def p_namedtuple_arg(p):
    return p.a * p.b + p[0]


def p_torch_size_ops(x):
    s = x.shape
    new = s[:-1] + (s[-1] * 2,)
    return x.repeat(1, 2).view(new), s == torch.Size([3, 4]), list(s)


def p_ternary_and_or(x, flag):
    y = x * 2 if flag else x
    z = flag and y
    w = (not flag) or x
    return y + z + w


def p_min_max_ints(x):
    n = min(x.shape[0], 3)
    m = max(x.shape)
    return x[:n] * m


def p_math_module(x):
    return x * math.pi / math.sqrt(x.shape[-1]) + math.log(2) + math.floor(2.7)


def p_inplace_chain(x):
    y = x.clone()
    y.mul_(2).add_(1)
    y[y > 2] = 0
    return y


def p_type_promotion(i, f):
    return i + f, i * 2, i / 2, i // 2, (i > 0).sum()


def p_no_grad_decorated_helper(x):
    return _no_grad_helper(x) + x


@torch.no_grad()
def _no_grad_helper(x):
    return x * 2


def p_torch_functional_misc(x):
    a, b = x.chunk(2, -1)
    return torch.cat([F.silu(a) * b, F.normalize(a, dim=-1)], -1)


def p_new_tensors(x):
    return x.new_zeros(x.shape) + x.new_ones(2, x.shape[1]).sum(0) + torch.full_like(x, 3.0)


def p_einsum_attention(q, k, v):
    w = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
    return torch.einsum("bhij,bhjd->bhid", w.softmax(-1), v)


def p_ordered_dict_arg(d):
    out = 0
    for k, v in d.items():
        out = out + v * len(k)
    return out


def p_rms_norm(x, w):
    var = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(var + 1e-6) * w


def p_rope_like(x):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


def p_masks(x):
    n = x.shape[-1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return x.masked_fill(mask, float("-inf")).softmax(-1)


CASES = {
    "dataclass_config": (p_dataclass_config, lambda: [torch.randn(3, 8)]),
    "assert_fstring": (p_assert_and_fstring, lambda: [torch.randn(2, 6)]),
    "chained_compare": (p_chained_compare, lambda: [torch.randn(4), 2, 5]),
    "star_args": (p_star_args, lambda: [torch.randn(2, 6), 3, 4]),
    "kwargs_forwarding": (p_kwargs_forwarding, lambda: [torch.randn(2, 3)]),
    "getattr_dynamic": (p_getattr_dynamic, lambda: [torch.randn(5)]),
    "dict_comprehension": (p_dict_comprehension, lambda: [torch.randn(3, 2)]),
    "nested_closure": (p_nested_closure, lambda: [torch.randn(2, 3, 4)]),
    "lambda_map": (p_lambda_map, lambda: [torch.randn(3)]),
    "zip_enumerate": (p_zip_enumerate, lambda: [[torch.randn(2), torch.randn(2)], (0.5, 2.0)]),
    "tuple_star_unpack": (p_tuple_star_unpack, lambda: [torch.randn(4, 2)]),
    "string_ops": (p_string_ops, lambda: [torch.randn(1, 1, 2, 2), "upsample"]),
    "isinstance_number": (p_isinstance_checks, lambda: [torch.randn(2), 3]),
    "isinstance_tensor": (p_isinstance_checks, lambda: [torch.randn(2), torch.randn(2)]),
    "namedtuple_arg": (p_namedtuple_arg, lambda: [Pair(torch.randn(2), torch.randn(2))]),
    "torch_size_ops": (p_torch_size_ops, lambda: [torch.randn(3, 4)]),
    "ternary_and_or": (p_ternary_and_or, lambda: [torch.randn(3), True]),
    "min_max_ints": (p_min_max_ints, lambda: [torch.randn(5, 2)]),
    "math_module": (p_math_module, lambda: [torch.randn(2, 4)]),
    "inplace_chain": (p_inplace_chain, lambda: [torch.randn(4)]),
    "type_promotion": (p_type_promotion, lambda: [torch.arange(4), torch.randn(4)]),
    "no_grad_decorated_helper": (p_no_grad_decorated_helper, lambda: [torch.randn(3)]),
    "torch_functional_misc": (p_torch_functional_misc, lambda: [torch.randn(2, 6)]),
    "new_tensors": (p_new_tensors, lambda: [torch.randn(2, 3)]),
    "einsum_attention": (p_einsum_attention, lambda: [torch.randn(1, 2, 3, 4)] * 3),
    "ordered_dict_arg": (p_ordered_dict_arg, lambda: [OrderedDict(a=torch.randn(2), bb=torch.randn(2))]),
    "rms_norm": (p_rms_norm, lambda: [torch.randn(2, 8), torch.randn(8)]),
    "rope_like": (p_rope_like, lambda: [torch.randn(2, 3, 8)]),
    "masks": (p_masks, lambda: [torch.randn(2, 4, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern(name, counter, ptgo_log):
    fn, make_args = CASES[name]
    ptgo.set_logs("graph_breaks")
    torch.manual_seed(0)
    args = make_args()
    expected = fn(*clone_args(args))
    actual = ptgo.compile(fn, backend=counter)(*clone_args(args))
    assert_same(actual, expected)
    assert "Graph break" not in ptgo_log.text and "eager" not in ptgo_log.text, ptgo_log.text
    assert counter.frame_count == 1, ptgo_log.text


@pytest.mark.parametrize("name", sorted(CASES))
def test_pattern_inductor(name):
    fn, make_args = CASES[name]
    torch.manual_seed(0)
    args = make_args()
    with torch.no_grad():
        expected = fn(*clone_args(args))
        actual = ptgo.compile(fn)(*clone_args(args))
    assert_same(actual, expected)
