#!/usr/bin/python3
"""Records eager PyTorch's result metas for primtorch's golden tests.

Run with the torch interpreter (/usr/bin/python3), normally through
    go test ./primtorch -run TestMeta -update

For every op of primtorch's registry it builds cases (random shapes with broadcasting,
transposed, sliced, expanded and channels-last inputs, several dtypes, kwargs, wrong calls), runs
them in torch and writes, per case: the call target, the intended op, the input tensors' metas,
the arguments and either the result metas (shape, dtype, strides, storage offset,
requires_grad) or the error torch raised, to meta_cases_<major>_<minor>.json for the running
torch (one file per torch version ptgo is tested against: PTGO_PYTHON=.venv-torch2/bin/python
for torch 2's). It also writes promotion_<major>_<minor>.json: torch.promote_types and
torch.result_type over every dtype pair and operand kind.

Cases whose error is a kernel's dtype coverage ("... not implemented for 'Half'") are dropped:
that is not a property of the op's meta.

Usage: gen_meta_cases.py OUTDIR
"""
import json
import math
import operator
import random
import sys
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
# PTGO_GEN_SEED varies the random shapes and layouts (for exploring; the golden file uses the
# default).
SEED = int(__import__("os").environ.get("PTGO_GEN_SEED", "20240601"))
torch.manual_seed(SEED)
R = random.Random(SEED)

DT = {
    torch.bool: "b8", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
    torch.int64: "i64", torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32",
    torch.float64: "f64", torch.complex64: "c64", torch.complex128: "c128",
}
ALL_DTYPES = list(DT)
# complex32 is no ptgo dtype; it appears only as a promotion result (half with complex), as
# does torch 2's bcomplex32 (bfloat16 with a complex scalar).
DT[torch.complex32] = "c32"
if hasattr(torch, "bcomplex32"):
    DT[torch.bcomplex32] = "bc32"
f32, f64, f16, bf16, i64, i32, i16, i8, u8, b8, c64 = (
    torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64)

# ---------------------------------------------------------------------------------------------
# Tensors with chosen layouts.


def contiguous_strides(shape):
    st, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= max(shape[i], 1)
    return st


def perm_strides(shape, order):
    """Dense strides where order lists dims from fastest to slowest."""
    st, acc = [0] * len(shape), 1
    for d in order:
        st[d] = acc
        acc *= max(shape[d], 1)
    return st


def fill(n, dtype, lo, hi):
    if dtype == torch.bool:
        if lo is not None and lo >= 1:
            return torch.ones(n, dtype=torch.bool)
        return torch.randint(0, 2, (n,)).bool()
    if dtype.is_floating_point or dtype.is_complex:
        if lo is not None:
            return (torch.rand(n, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
        return torch.randn(n, dtype=torch.float64).to(dtype)
    lo = 0 if lo is None else lo
    hi = 5 if hi is None else hi
    return torch.randint(lo, hi, (n,)).to(dtype)


def T(shape, dtype=f32, layout="c", rg=False, lo=None, hi=None):
    """A tensor of shape in layout: c contiguous, t last two dims transposed, p permuted,
    s sliced (every other element of a larger tensor, at an offset), e expanded (stride 0 in a
    dim), cl channels-last (4-d/5-d)."""
    shape = list(shape)
    nd = len(shape)
    offset = 0
    if layout == "c" or nd == 0:
        strides = contiguous_strides(shape)
    elif layout == "t":
        order = list(range(nd - 1, -1, -1))
        if nd >= 2:
            order[0], order[1] = order[1], order[0]
        strides = perm_strides(shape, order)
    elif layout == "p":
        order = list(range(nd))
        R.shuffle(order)
        strides = perm_strides(shape, order)
    elif layout == "s":
        d = R.randrange(nd)
        big = list(shape)
        big[d] = shape[d] * 2
        strides = contiguous_strides(big)
        strides[d] *= 2
        offset = R.choice([0, 1, 3])
    elif layout == "e":
        strides = contiguous_strides(shape)
        d = R.randrange(nd)
        strides[d] = 0
    elif layout == "w":
        # Dense in a random dim order, with arbitrary strides on size-1 dims (as_strided allows it).
        order = list(range(nd))
        R.shuffle(order)
        strides = perm_strides(shape, order)
        for d in range(nd):
            if shape[d] == 1:
                strides[d] = R.choice([1, 2, 7, 100])
    elif layout == "cl":
        order = [1, 3, 2, 0] if nd == 4 else [1, 4, 3, 2, 0]
        strides = perm_strides(shape, order)
    else:
        raise ValueError(layout)
    n = offset + 1 + sum((s - 1) * st for s, st in zip(shape, strides) if s > 0)
    if any(s == 0 for s in shape):
        n = offset + 1
    storage = fill(n, dtype, lo, hi)
    if rg:
        storage = storage.requires_grad_() * 1
    return storage.as_strided(shape, strides, offset)


def rshape(nd, lo=1, hi=5):
    return [R.randint(lo, hi) for _ in range(nd)]


def bshape(shape):
    """A shape broadcastable with shape: some dims set to 1, maybe fewer leading dims."""
    out = [1 if R.random() < 0.4 else s for s in shape]
    if out and R.random() < 0.3:
        out = out[R.randrange(len(out)):]
    return out


# ---------------------------------------------------------------------------------------------
# Encoding.

def enc_meta(t):
    return {"dtype": DT[t.dtype], "shape": list(t.shape), "strides": list(t.stride()),
            "offset": t.storage_offset(), "rg": t.requires_grad}


class Enc:
    def __init__(self):
        self.tensors = []

    def val(self, v):
        if isinstance(v, torch.Tensor):
            self.tensors.append(enc_meta(v))
            return {"T": len(self.tensors) - 1}
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            if math.isinf(v) or math.isnan(v):
                return {"f": repr(v)}
            return v
        if isinstance(v, complex):
            return {"complex": [v.real, v.imag]}
        if isinstance(v, torch.dtype):
            return {"dtype": DT[v]}
        if isinstance(v, torch.device):
            return {"device": str(v)}
        if isinstance(v, torch.memory_format):
            return {"mf": str(v).replace("torch.", "")}
        if isinstance(v, torch.layout):
            return {"layout": str(v).replace("torch.", "")}
        if isinstance(v, slice):
            return {"slice": [v.start, v.stop, v.step]}
        if v is Ellipsis:
            return {"ellipsis": True}
        if isinstance(v, tuple):
            return {"tuple": [self.val(x) for x in v]}
        if isinstance(v, list):
            return [self.val(x) for x in v]
        raise TypeError("cannot encode %r" % (v,))


def enc_out(v):
    if isinstance(v, torch.Tensor):
        return {"meta": enc_meta(v)}
    if isinstance(v, (tuple, list)):
        return {"tuple": [enc_out(x) for x in v]}
    if v is None or isinstance(v, (bool, int, float, str)):
        return {"value": v}
    raise TypeError("cannot encode result %r" % (v,))


def resolve(target):
    if target.startswith("Tensor."):
        return getattr(torch.Tensor, target[len("Tensor."):])
    if target.startswith("operator."):
        return getattr(operator, target[len("operator."):])
    obj = torch
    for part in target.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


CASES = []
DROPPED = [0]


def case(op, target, *args, **kwargs):
    """Runs target(*args, **kwargs) in torch and records it as a case of op."""
    enc = Enc()
    eargs = [enc.val(a) for a in args]
    ekw = {k: enc.val(v) for k, v in kwargs.items()}
    rec = {"op": op, "target": target, "tensors": enc.tensors, "args": eargs, "kwargs": ekw}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = resolve(target)(*args, **kwargs)
        rec["out"] = enc_out(out)
    except Exception as e:  # noqa: BLE001 - every torch error is a recorded outcome
        msg = str(e).strip()
        if "not implemented for" in msg or "not supported for" in msg and "Half" in msg:
            DROPPED[0] += 1
            return
        rec["error"] = {"type": type(e).__name__, "msg": msg.split("\n")[0][:400]}
    CASES.append(rec)


def layouts(nd):
    out = ["c", "p", "s", "e"]
    if nd >= 2:
        out.append("t")
    if nd in (4, 5):
        out.append("cl")
    return out


# ---------------------------------------------------------------------------------------------
# Elementwise ops.

UNARY = [
    # name, targets, in-place targets
    ("abs", ["torch.abs", "Tensor.abs", "operator.abs", "torch.absolute"], ["Tensor.abs_", "torch.abs_"]),
    ("neg", ["torch.neg", "operator.neg", "Tensor.negative"], ["Tensor.neg_"]),
    ("exp", ["torch.exp", "Tensor.exp"], ["Tensor.exp_"]),
    ("exp2", ["torch.exp2", "torch.special.exp2"], ["Tensor.exp2_"]),
    ("expm1", ["torch.expm1"], ["Tensor.expm1_"]),
    ("log", ["torch.log", "Tensor.log"], ["Tensor.log_"]),
    ("log1p", ["torch.log1p"], ["Tensor.log1p_"]),
    ("log2", ["torch.log2"], ["Tensor.log2_"]),
    ("log10", ["torch.log10"], ["Tensor.log10_"]),
    ("sqrt", ["torch.sqrt", "Tensor.sqrt"], ["Tensor.sqrt_"]),
    ("rsqrt", ["torch.rsqrt"], ["Tensor.rsqrt_"]),
    ("sin", ["torch.sin", "Tensor.sin"], ["Tensor.sin_", "torch.sin_"]),
    ("cos", ["torch.cos"], ["Tensor.cos_"]),
    ("tan", ["torch.tan"], ["Tensor.tan_"]),
    ("asin", ["torch.asin", "torch.arcsin"], ["Tensor.asin_"]),
    ("acos", ["torch.acos"], ["Tensor.acos_"]),
    ("atan", ["torch.atan"], ["Tensor.atan_"]),
    ("sinh", ["torch.sinh"], ["Tensor.sinh_"]),
    ("cosh", ["torch.cosh"], ["Tensor.cosh_"]),
    ("tanh", ["torch.tanh", "Tensor.tanh", "torch.nn.functional.tanh"], ["Tensor.tanh_"]),
    ("asinh", ["torch.asinh"], ["Tensor.asinh_"]),
    ("acosh", ["torch.acosh"], ["Tensor.acosh_"]),
    ("atanh", ["torch.atanh"], ["Tensor.atanh_"]),
    ("sigmoid", ["torch.sigmoid", "Tensor.sigmoid", "torch.nn.functional.sigmoid"], ["Tensor.sigmoid_"]),
    ("erf", ["torch.erf", "torch.special.erf"], ["Tensor.erf_"]),
    ("erfc", ["torch.erfc"], ["Tensor.erfc_"]),
    ("erfinv", ["torch.erfinv"], ["Tensor.erfinv_"]),
    ("lgamma", ["torch.lgamma"], ["Tensor.lgamma_"]),
    ("digamma", ["torch.digamma"], ["Tensor.digamma_"]),
    ("reciprocal", ["torch.reciprocal"], ["Tensor.reciprocal_"]),
    ("floor", ["torch.floor", "Tensor.floor"], ["Tensor.floor_"]),
    ("ceil", ["torch.ceil"], ["Tensor.ceil_"]),
    ("trunc", ["torch.trunc", "torch.fix"], ["Tensor.trunc_"]),
    ("frac", ["torch.frac"], ["Tensor.frac_"]),
    ("sign", ["torch.sign"], ["Tensor.sign_"]),
    ("sgn", ["torch.sgn"], []),
    ("signbit", ["torch.signbit"], []),
    ("square", ["torch.square"], ["Tensor.square_"]),
    ("round", ["torch.round"], ["Tensor.round_"]),
    ("logical_not", ["torch.logical_not"], ["Tensor.logical_not_"]),
    ("bitwise_not", ["torch.bitwise_not", "operator.invert"], ["Tensor.bitwise_not_"]),
    ("isnan", ["torch.isnan"], []),
    ("isinf", ["torch.isinf"], []),
    ("isfinite", ["torch.isfinite"], []),
    ("isposinf", ["torch.isposinf"], []),
    ("isneginf", ["torch.isneginf"], []),
    ("nan_to_num", ["torch.nan_to_num"], ["Tensor.nan_to_num_"]),
    ("logit", ["torch.logit"], ["Tensor.logit_"]),
    ("positive", ["torch.positive", "operator.pos"], []),
    ("relu", ["torch.relu", "Tensor.relu", "torch.nn.functional.relu"], ["Tensor.relu_", "torch.relu_", "torch.nn.functional.relu_"]),
    ("relu6", ["torch.nn.functional.relu6"], []),
    ("gelu", ["torch.nn.functional.gelu"], []),
    ("silu", ["torch.nn.functional.silu"], ["torch._C._nn.silu_"]),
    ("mish", ["torch.nn.functional.mish"], ["torch._C._nn.mish_"]),
    ("elu", ["torch.nn.functional.elu"], ["torch.nn.functional.elu_"]),
    ("selu", ["torch.selu", "torch.nn.functional.selu"], ["torch.selu_"]),
    ("celu", ["torch.celu", "torch.nn.functional.celu"], ["torch.celu_"]),
    ("leaky_relu", ["torch.nn.functional.leaky_relu"], ["torch.nn.functional.leaky_relu_"]),
    ("hardtanh", ["torch.nn.functional.hardtanh"], ["torch.nn.functional.hardtanh_"]),
    ("hardsigmoid", ["torch.nn.functional.hardsigmoid"], ["torch._C._nn.hardsigmoid_"]),
    ("hardswish", ["torch.nn.functional.hardswish"], ["torch._C._nn.hardswish_"]),
    ("softplus", ["torch.nn.functional.softplus"], []),
    ("log_sigmoid", ["torch.nn.functional.logsigmoid"], []),
    ("softsign", ["torch.nn.functional.softsign"], []),
    ("tanhshrink", ["torch.nn.functional.tanhshrink"], []),
    ("hardshrink", ["torch.nn.functional.hardshrink", "Tensor.hardshrink"], []),
    ("softshrink", ["torch.nn.functional.softshrink"], []),
]

ACT_INPLACE_KW = {"relu", "relu6", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh",
                  "hardsigmoid", "hardswish"}
ACT_FUNC_INPLACE = {"silu", "mish", "hardsigmoid", "hardswish"}


def inplace_name(name):
    return name + "_"


def gen_unary():
    for name, targets, ip in UNARY:
        for i, tg in enumerate(targets):
            nd = R.randint(0, 4)
            case(name, tg, T(rshape(nd)))
        for lay in ["p", "s", "e", "t", "cl"]:
            nd = 4 if lay == "cl" else R.randint(2, 4)
            case(name, targets[0], T(rshape(nd), layout=lay))
        for dt in [i64, b8, f64, i32, u8, c64, bf16]:
            case(name, targets[0], T(rshape(2), dtype=dt))
        case(name, targets[0], T(rshape(3), rg=True))
        case(name, targets[0], T([]))
        case(name, targets[0], T([3, 0, 2]))
        for tg in ip:
            case(inplace_name(name), tg, T(rshape(3)))
            case(inplace_name(name), tg, T(rshape(3), layout="p", rg=True))
        if ip:
            case(inplace_name(name), ip[0], T(rshape(2), dtype=i64))
            case(inplace_name(name), ip[0], T(rshape(2), dtype=b8))
        if name in ACT_INPLACE_KW:
            tg = "torch.nn.functional." + name
            case(name, tg, T(rshape(3), layout="p"), inplace=True)
            case(name, tg, T(rshape(2), rg=True), inplace=False)
        if name in ACT_FUNC_INPLACE:
            case(name, "torch.nn.functional." + name, T(rshape(3), layout="t"), inplace=True)
    # Ops with parameters.
    x = lambda: T(rshape(3), layout=R.choice(["c", "p"]))
    case("gelu", "torch.nn.functional.gelu", x(), approximate="tanh")
    case("gelu", "torch.nn.functional.gelu", x(), approximate="bad")
    case("elu", "torch.nn.functional.elu", x(), 0.5, True)
    case("leaky_relu", "torch.nn.functional.leaky_relu", x(), 0.2)
    case("hardtanh", "torch.nn.functional.hardtanh", x(), -2.0, 2.0)
    case("softplus", "torch.nn.functional.softplus", x(), beta=2, threshold=10)
    case("round", "torch.round", x(), decimals=2)
    case("round", "torch.round", T([3], dtype=i64), decimals=2)
    case("nan_to_num", "torch.nan_to_num", x(), nan=0.0, posinf=1.0)
    case("logit", "torch.logit", x(), eps=1e-6)
    case("celu", "torch.celu", x(), alpha=2.0)
    case("threshold", "torch.nn.functional.threshold", x(), 0.5, 2.0)
    case("threshold", "torch.threshold", T(rshape(2), dtype=i64), 1, 0)
    case("threshold", "torch.nn.functional.threshold", T(rshape(3), layout="p"), 0.5, 2.0, inplace=True)
    case("threshold_", "torch.threshold_", x(), 0.5, 2.0)
    case("glu", "torch.nn.functional.glu", T([4, 6, 2], layout="p"))
    case("glu", "torch.nn.functional.glu", T([4, 6, 2]), 1)
    case("glu", "torch.nn.functional.glu", T([4, 5]))
    case("prelu", "torch.nn.functional.prelu", T([2, 3, 4], layout="p"), T([3]))
    case("prelu", "torch.prelu", T([2, 3, 4]), T([1]))
    case("prelu", "torch.prelu", T([2, 3, 4]), T([4]))
    case("relu", "torch.relu", T([2, 3]), T([2, 3]))
    case("relu", "torch.relu", T([2, 3]), foo=1)
    case("relu", "torch.relu", "x")
    case("neg", "torch.neg", T([2], dtype=b8))
    case("positive", "torch.positive", T([2], dtype=b8))
    for name in ["clamp", "clamp_min", "clamp_max"]:
        pass
    case("clamp", "torch.clamp", x(), 0.0, 1.0)
    case("clamp", "torch.clamp", T([3], dtype=i64), 0.5)
    case("clamp", "torch.clamp", T([3], dtype=i64), max=2)
    case("clamp", "Tensor.clamp", T([2, 3], layout="t"), T([3]), T([2, 1]))
    case("clamp", "torch.clip", T([2, 3]), min=T([], dtype=f64))
    case("clamp", "torch.clamp", T([2, 3]))
    case("clamp", "torch.clamp", T([2, 3], dtype=i64), T([3]))
    case("clamp_", "Tensor.clamp_", T([2, 3], layout="t"), 0, 1)
    case("clamp_", "Tensor.clamp_", T([2, 3], dtype=i64), 0.5)
    case("clamp_min", "torch.clamp_min", T([2, 3]), 0.5)
    case("clamp_min", "torch.clamp_min", T([2, 3], dtype=i32), T([3], dtype=i64))
    case("clamp_min_", "Tensor.clamp_min_", T([2, 3]), 0.5)
    case("clamp_max", "Tensor.clamp_max", T([2, 3], layout="p"), 0.5)
    case("clamp_max_", "Tensor.clamp_max_", T([2, 3]), T([2, 3]))


BINARY = [
    # name, targets, promotion-relevant, in-place name, in-place targets
    ("add.Tensor", ["torch.add", "Tensor.add", "operator.add"], "add_.Tensor", ["Tensor.add_", "operator.iadd"]),
    ("sub.Tensor", ["torch.sub", "operator.sub", "torch.subtract"], "sub_.Tensor", ["Tensor.sub_", "operator.isub"]),
    ("rsub.Tensor", ["torch.rsub"], None, []),
    ("mul.Tensor", ["torch.mul", "Tensor.mul", "operator.mul", "torch.multiply"], "mul_.Tensor", ["Tensor.mul_", "operator.imul"]),
    ("div.Tensor_mode", ["torch.div", "operator.truediv", "torch.true_divide", "Tensor.divide"], "div_.Tensor_mode", ["Tensor.div_", "operator.itruediv"]),
    ("floor_divide", ["torch.floor_divide", "operator.floordiv"], "floor_divide_", ["Tensor.floor_divide_", "operator.ifloordiv"]),
    ("remainder.Tensor", ["torch.remainder", "operator.mod"], "remainder_.Tensor", ["Tensor.remainder_", "operator.imod"]),
    ("fmod.Tensor", ["torch.fmod"], "fmod_.Tensor", ["Tensor.fmod_"]),
    ("pow.Tensor_Tensor", ["torch.pow", "Tensor.pow", "operator.pow"], "pow_.Tensor_Tensor", ["Tensor.pow_", "operator.ipow"]),
    ("maximum", ["torch.maximum"], None, []),
    ("minimum", ["torch.minimum"], None, []),
    ("fmax", ["torch.fmax"], None, []),
    ("fmin", ["torch.fmin"], None, []),
    ("atan2", ["torch.atan2", "torch.arctan2"], "atan2_", ["Tensor.atan2_"]),
    ("hypot", ["torch.hypot"], "hypot_", ["Tensor.hypot_"]),
    ("copysign.Tensor", ["torch.copysign"], "copysign_.Tensor", ["Tensor.copysign_"]),
    ("xlogy.Tensor", ["torch.xlogy"], None, []),
    ("logaddexp", ["torch.logaddexp"], None, []),
    ("eq.Tensor", ["torch.eq", "operator.eq"], None, []),
    ("ne.Tensor", ["torch.ne", "operator.ne"], None, []),
    ("lt.Tensor", ["torch.lt", "operator.lt"], None, []),
    ("le.Tensor", ["torch.le", "operator.le"], None, []),
    ("gt.Tensor", ["torch.gt", "operator.gt", "torch.greater"], None, []),
    ("ge.Tensor", ["torch.ge", "operator.ge"], None, []),
    ("logical_and", ["torch.logical_and"], "logical_and_", ["Tensor.logical_and_"]),
    ("logical_or", ["torch.logical_or"], "logical_or_", ["Tensor.logical_or_"]),
    ("logical_xor", ["torch.logical_xor"], "logical_xor_", ["Tensor.logical_xor_"]),
    ("bitwise_and.Tensor", ["torch.bitwise_and", "operator.and_"], "bitwise_and_.Tensor", ["Tensor.bitwise_and_", "operator.iand"]),
    ("bitwise_or.Tensor", ["torch.bitwise_or", "operator.or_"], "bitwise_or_.Tensor", ["Tensor.bitwise_or_", "operator.ior"]),
    ("bitwise_xor.Tensor", ["torch.bitwise_xor", "operator.xor"], "bitwise_xor_.Tensor", ["Tensor.bitwise_xor_", "operator.ixor"]),
    ("bitwise_left_shift.Tensor", ["torch.bitwise_left_shift", "operator.lshift"], "bitwise_left_shift_.Tensor", ["Tensor.bitwise_left_shift_", "operator.ilshift"]),
    ("bitwise_right_shift.Tensor", ["torch.bitwise_right_shift", "operator.rshift"], "bitwise_right_shift_.Tensor", ["Tensor.bitwise_right_shift_", "operator.irshift"]),
]
NO_NUMBERS = {"maximum", "minimum", "fmax", "fmin", "logaddexp", "atan2.", "hypot", "logical_and",
              "logical_or", "logical_xor", "atan2"}
DIVLIKE = {"floor_divide", "remainder.Tensor", "fmod.Tensor", "div.Tensor_mode"}
INTEGRAL_ONLY = {"bitwise_and.Tensor", "bitwise_or.Tensor", "bitwise_xor.Tensor",
                 "bitwise_left_shift.Tensor", "bitwise_right_shift.Tensor"}


def gen_binary():
    global T
    plain_T = T
    for name, targets, ipname, iptargets in BINARY:
        dts = [i64, i32, u8, b8] if name in INTEGRAL_ONLY else [f32, f64, i64, b8, f16, i32]
        base = dts[0]
        # Integer division by zero raises in torch: keep divisors (and all operands) non-zero.
        T = (lambda *a, **k: plain_T(*a, **dict(k, lo=k.get("lo", 1), hi=k.get("hi", 5)))) if name in DIVLIKE else plain_T
        for tg in targets:
            s = rshape(R.randint(1, 3))
            case(name, tg, T(s, dtype=base), T(bshape(s), dtype=base))
        for _ in range(3):
            s = rshape(R.randint(2, 4))
            case(name, targets[0], T(s, dtype=base, layout=R.choice(layouts(len(s)))),
                 T(bshape(s), dtype=base, layout=R.choice(["c", "p", "e"])))
        s = rshape(4)
        case(name, targets[0], T(s, dtype=base, layout="cl"), T(s, dtype=base, layout="cl"))
        case(name, targets[0], T(s, dtype=base, layout="cl"), T(s, dtype=base))
        s = rshape(3)
        case(name, targets[0], T(s, dtype=base, layout="p"), T(s, dtype=base, layout="p"))
        case(name, targets[0], T(bshape(s), dtype=base), T(s, dtype=base, layout="t"))
        for a in dts:
            b = R.choice(dts)
            case(name, targets[0], T([2, 3], dtype=a), T([3], dtype=b))
            case(name, targets[0], T([2, 3], dtype=a), T([], dtype=R.choice(dts)))
            case(name, targets[0], T([], dtype=a), T([], dtype=b))
        case(name, targets[0], T([2, 3], dtype=base, rg=base.is_floating_point), T([2, 3], dtype=base))
        case(name, targets[0], T([2, 3], dtype=base), T([4, 3], dtype=base))
        case(name, targets[0], T([2, 0, 3], dtype=base), T([1, 3], dtype=base))
        if name in NO_NUMBERS:
            case(name, targets[0], T([2, 3], dtype=base), 2)
            case(name, targets[0], 2, T([2, 3], dtype=base))
        else:
            case(name, targets[0], 2 if name not in INTEGRAL_ONLY else 3, T([2, 3], dtype=base))
            for sc in ([1, True, 3] if name in INTEGRAL_ONLY else [2, 2.5, True, -1]):
                t = T([2, 3], dtype=R.choice(dts), layout=R.choice(["c", "t"]))
                case(name, targets[0], t, sc)
            op_tg = [t for t in targets if t.startswith("operator.")]
            if op_tg:
                case(name, op_tg[0], 2, T([2, 3], dtype=base, layout="t"))
                case(name, op_tg[0], 1.5 if name not in INTEGRAL_ONLY else 3, T([2, 3], dtype=i64))
        if ipname:
            for tg in iptargets:
                s = rshape(3)
                case(ipname, tg, T(s, dtype=base, layout=R.choice(["c", "p", "t"])), T(bshape(s), dtype=base))
            case(ipname, iptargets[0], T([2, 1], dtype=base), T([2, 3], dtype=base))
            case(ipname, iptargets[0], T([2, 3], dtype=i64 if name not in INTEGRAL_ONLY else b8), T([3], dtype=dts[1] if name in INTEGRAL_ONLY else f32))
            case(ipname, iptargets[0], T([2, 3], dtype=base), T([3], dtype=base, rg=base.is_floating_point))
            if name not in NO_NUMBERS:
                case(ipname, iptargets[0], T([2, 3], dtype=base, layout="t"), 2)
    T = plain_T
    # add/sub alpha.
    case("add.Tensor", "torch.add", T([2, 3]), T([3]), alpha=2)
    case("add.Tensor", "torch.add", T([2, 3], dtype=i64), T([3], dtype=i64), alpha=0.5)
    case("add.Tensor", "torch.add", T([2, 3], dtype=i64), T([3], dtype=i64), alpha=True)
    case("add.Tensor", "torch.add", T([2, 3], dtype=b8), T([3], dtype=b8), alpha=True)
    case("sub.Tensor", "torch.sub", T([2, 3], dtype=b8), T([3], dtype=b8))
    case("sub.Tensor", "torch.sub", T([2, 3]), T([3], dtype=b8))
    case("rsub.Tensor", "torch.rsub", T([2, 3]), 2.0, alpha=3)
    case("add.Tensor", "torch.add", T([2, 3]), "x")
    case("add.Tensor", "Tensor.add", T([2, 3]), other=T([3]))
    case("add.Tensor", "torch.add", input=T([2, 3]), other=T([3]))
    case("add.Tensor", "torch.add", T([2, 3]), T([3]), beta=2)
    case("add.Tensor", "torch.add", T([2, 3]))
    case("div.Tensor_mode", "torch.div", T([2, 3], dtype=i64), T([3], dtype=i64, lo=1), rounding_mode="floor")
    case("div.Tensor_mode", "torch.div", T([2, 3], dtype=i64), 2, rounding_mode="trunc")
    case("div.Tensor_mode", "torch.div", T([2, 3]), 2, rounding_mode="bad")
    case("div_.Tensor_mode", "Tensor.div_", T([2, 3], dtype=i64), 2, rounding_mode="floor")
    case("pow.Tensor_Tensor", "torch.pow", 2, T([2, 3]))
    case("pow.Tensor_Tensor", "torch.pow", 2.5, T([2, 3], dtype=i64))
    case("pow.Tensor_Tensor", "torch.pow", T([2, 3], dtype=i64), -1)
    case("pow.Tensor_Tensor", "torch.pow", T([2, 3], dtype=i64), 0.5)
    case("pow.Tensor_Tensor", "Tensor.pow", T([2, 3], dtype=i32), exponent=T([], dtype=i64))


def gen_ternary():
    for lay in ["c", "p", "t"]:
        s = rshape(3)
        case("where.self", "torch.where", T(bshape(s), dtype=b8), T(s, layout=lay), T(bshape(s)))
    case("where.self", "torch.where", T([2, 3], dtype=b8), T([2, 3], dtype=i64), T([3]))
    case("where.self", "torch.where", T([2, 3], dtype=b8), T([2, 3], dtype=i64), 1.5)
    case("where.self", "torch.where", T([2, 3], dtype=b8), 1, 1.5)
    case("where.self", "torch.where", True, T([2, 3]), T([2, 3]))
    case("where.self", "torch.where", T([2, 3], dtype=b8), T([2, 3], dtype=f16), T([], dtype=f64))
    case("where.self", "torch.where", T([2, 3]), T([2, 3]), T([2, 3]))
    case("where.self", "torch.where", T([2, 3], dtype=b8), T([4, 3]), T([2, 3]))
    case("where.self", "torch.where", T([2, 3], dtype=u8), T([2, 3]), T([2, 3]))
    case("where", "torch.where", T([2, 3], dtype=b8))
    case("where.method", "Tensor.where", T([2, 3], layout="t"), T([2, 3], dtype=b8), T([3]))
    case("where.method", "Tensor.where", T([2, 3]), T([2, 3], dtype=b8), 0.0)
    for lay in ["c", "p", "t"]:
        s = rshape(3)
        case("masked_fill", "Tensor.masked_fill", T(s, layout=lay), T(bshape(s), dtype=b8), 0.5)
        case("masked_fill_", "Tensor.masked_fill_", T(s, layout=lay), T(bshape(s), dtype=b8), -1.0)
    case("masked_fill", "torch.masked_fill", T([3]), T([2, 3], dtype=b8), T([]))
    case("masked_fill", "torch.masked_fill", T([2, 3], dtype=i64), T([2, 3], dtype=b8), 2.5)
    case("masked_fill", "torch.masked_fill", T([2, 3]), T([2, 3], dtype=b8), T([2]))
    case("masked_fill", "torch.masked_fill", T([2, 3]), T([2, 3], dtype=f32), 1.0)
    case("masked_fill", "torch.masked_fill", T([2, 3], rg=True), T([3], dtype=b8), T([], rg=True))
    case("masked_fill_", "Tensor.masked_fill_", T([2, 1]), T([2, 3], dtype=b8), 1.0)
    for name, tg, ipn, ipt in [("lerp.Tensor", "torch.lerp", "lerp_.Tensor", "Tensor.lerp_"),
                               ("addcmul", "torch.addcmul", "addcmul_", "Tensor.addcmul_"),
                               ("addcdiv", "torch.addcdiv", "addcdiv_", "Tensor.addcdiv_")]:
        for lay in ["c", "p", "t"]:
            s = rshape(3)
            case(name, tg, T(s, layout=lay), T(bshape(s)), T(bshape(s)))
        case(name, tg, T([2, 3]), T([2, 3], dtype=f64), T([3]))
        case(name, tg, T([2, 3]), T([4, 3]), T([3]))
        case(name, tg, T([2, 3], dtype=i64), T([3], dtype=i64), T([3], dtype=i64))
        case(ipn, ipt, T([2, 3], layout="t"), T([3]), T([2, 3]))
        case(ipn, ipt, T([1, 3]), T([2, 3]), T([2, 3]))
    case("lerp.Tensor", "torch.lerp", T([2, 3]), T([3]), 0.5)
    case("addcmul", "torch.addcmul", T([2, 3]), T([3]), T([2, 1]), value=2)


# ---------------------------------------------------------------------------------------------
# Reductions.

def gen_reductions():
    def rt(nd=None, dtype=f32, **kw):
        nd = R.randint(1, 4) if nd is None else nd
        return T(rshape(nd), dtype=dtype, layout=R.choice(layouts(nd)), **kw)

    for name, tg, dts in [("sum.dim_IntList", "torch.sum", [f32, i32, b8, f16]),
                          ("nansum", "torch.nansum", [f32, f64]),
                          ("mean.dim", "torch.mean", [f32, i64, f64]),
                          ("amax", "torch.amax", [f32, i64]),
                          ("amin", "torch.amin", [f32, b8]),
                          ("logsumexp", "torch.logsumexp", [f32, i64])]:
        for dt in dts:
            x = rt(3, dt)
            case(name, tg, x, [0, 2])
            case(name, tg, x, -1, True)
        x = rt(4)
        case(name, tg, x, dim=(1,), keepdim=True)
        case(name, "Tensor." + tg[6:], x, 1)
        case(name, tg, T(rshape(4), layout="cl"), [1], keepdim=True)
        case(name, tg, x, 5)
        case(name, tg, x, [0, 0])
        case(name, tg, T([2, 0, 3]), 1)
        case(name, tg, T([], rg=True), 0)
        if name != "logsumexp":
            case(name, tg, rt(3, rg=True))
            case(name, tg, T([3, 4]), dim=[])
    case("sum.dim_IntList", "torch.sum", T([2, 3], dtype=i64), dtype=f32)
    case("sum.dim_IntList", "torch.sum", T([2, 3]), 1, dtype=f64)
    case("mean.dim", "torch.mean", T([2, 3], dtype=i64), dtype=f64)
    for dt in [f32, i32, b8]:
        case("prod.dim_int", "torch.prod", rt(3, dt))
        case("prod.dim_int", "torch.prod", rt(3, dt), 1, keepdim=True)
    case("prod.dim_int", "Tensor.prod", rt(2), dtype=f64)
    for name in ["max", "min"]:
        x = rt(3)
        case(name, "torch." + name, x)
        case(name, "Tensor." + name, rt(2, i64))
        case(name, "torch." + name, T([0, 3]))
        case(name + ".dim", "torch." + name, x, 1)
        case(name + ".dim", "Tensor." + name, rt(3, rg=True), dim=-1, keepdim=True)
        case(name + ".dim", "torch." + name, T([2, 0]), 1)
        case(name + ".dim", "torch." + name, T([2, 3]), 2)
        case(name + ".other", "torch." + name, T([2, 3], layout="t"), T([3]))
        case(name + ".other", "torch." + name, T([2, 3]), T([3], dtype=f64))
        case(name, "torch." + name, T([2, 3]), "x")
    for name in ["argmax", "argmin"]:
        case(name, "torch." + name, rt(3))
        case(name, "torch." + name, rt(3), 1)
        case(name, "Tensor." + name, rt(3), dim=-1, keepdim=True)
        case(name, "torch." + name, rt(3), keepdim=True)
        case(name, "torch." + name, T([0, 2]))
        case(name, "torch." + name, T([2, 0]), 1)
    for name in ["var.correction", "std.correction"]:
        tg = "torch." + name.split(".")[0]
        case(name, tg, rt(3))
        case(name, tg, rt(3), 1)
        case(name, tg, rt(3), 1, True)
        case(name, tg, rt(3), True)
        case(name, tg, rt(3), dim=[0, 1], unbiased=False, keepdim=True)
        case(name, tg, rt(3, rg=True), dim=1, correction=0)
        case(name, "Tensor." + tg[6:], rt(2, c64), 0)
        case(name, tg, rt(2, i64))
    for name in ["var_mean.correction", "std_mean.correction"]:
        tg = "torch." + name.split(".")[0]
        case(name, tg, rt(3))
        case(name, tg, rt(3), 1, keepdim=True)
        case(name, tg, rt(3), [0, 1], False)
    for p in [2, 1, "fro", float("inf"), 3.5]:
        case("norm", "torch.norm", rt(3), p)
    case("norm", "torch.norm", rt(3), 2, 1)
    case("norm", "Tensor.norm", rt(3), dim=(0, 1), keepdim=True)
    case("norm", "torch.norm", T([3, 4]), "nuc")
    case("norm", "torch.norm", rt(2, i64))
    case("norm", "torch.norm", rt(2, c64))
    case("norm", "torch.norm", rt(2, rg=True), dtype=f64)
    case("linalg_vector_norm", "torch.linalg.vector_norm", rt(3))
    case("linalg_vector_norm", "torch.linalg.vector_norm", rt(3), 1, [0, 1], True)
    case("linalg_vector_norm", "torch.linalg.vector_norm", rt(3), ord=float("inf"), dim=-1)
    for name in ["all.dim", "any.dim"]:
        tg = "torch." + name.split(".")[0]
        for dt in [b8, f32, u8, i64]:
            case(name, tg, rt(3, dt))
        case(name, tg, rt(3, b8), 1)
        case(name, "Tensor." + tg[6:], rt(3, b8), dim=-1, keepdim=True)
    case("count_nonzero", "torch.count_nonzero", rt(3))
    case("count_nonzero", "torch.count_nonzero", rt(3), dim=(0, 1))
    for name, dts in [("cumsum", [f32, i32, b8]), ("cumprod", [f32, i64]), ("logcumsumexp", [f32])]:
        for dt in dts:
            case(name, "torch." + name, rt(3, dt), 1)
        case(name, "torch." + name, T(rshape(3), layout="p"), -1)
        case(name, "torch." + name, T(rshape(4), layout="cl"), 1)
        case(name, "torch." + name, rt(2), 3)
        case(name, "torch." + name, T([]), 0)
    case("cumsum", "torch.cumsum", rt(2, i64), 0, dtype=f32)
    case("cumsum_", "Tensor.cumsum_", T([3, 4], layout="t"), 1)
    case("cumprod_", "Tensor.cumprod_", T([3, 4]), 0)
    for name in ["cummax", "cummin"]:
        case(name, "torch." + name, rt(3), 1)
        case(name, "torch." + name, T(rshape(3), layout="p", rg=True), 0)
    for name in ["softmax.int", "log_softmax.int"]:
        short = name.split(".")[0]
        for lay in ["c", "p", "t", "cl"]:
            nd = 4 if lay == "cl" else 3
            case(name, "torch." + short, T(rshape(nd), layout=lay), 1)
        case(name, "Tensor." + short, rt(3, rg=True), -1)
        case(name, "torch.nn.functional." + short, rt(3), dim=0)
        case(name, "torch.nn.functional." + short, rt(2))
        case(name, "torch.nn.functional." + short, rt(4), 1, dtype=f64)
        case(name, "torch." + short, rt(3), 1, f64)
        case(name, "torch." + short, rt(2), 2)
        case(name, "torch." + short, T([]), 0)


# ---------------------------------------------------------------------------------------------
# Normalization and dropout.

def gen_norm():
    for lay in ["c", "p", "t"]:
        x = T([2, 3, 4], layout=lay)
        case("layer_norm", "torch.nn.functional.layer_norm", x, [4], T([4]), T([4]))
    case("layer_norm", "torch.nn.functional.layer_norm", T([2, 3, 4], rg=True), (3, 4))
    case("layer_norm", "torch.layer_norm", T([2, 3, 4]), [4], None, None, 1e-5, True)
    case("layer_norm", "torch.nn.functional.layer_norm", T([2, 3, 4]), [3])
    case("layer_norm", "torch.nn.functional.layer_norm", T([2, 3, 4]), [4], T([3]))
    case("layer_norm", "torch.nn.functional.layer_norm", T([2, 3, 4], dtype=bf16), [4], T([4]))
    for lay in ["c", "cl", "p"]:
        case("group_norm", "torch.nn.functional.group_norm", T([2, 6, 3, 3], layout=lay), 3, T([6]), T([6]))
    case("group_norm", "torch.group_norm", T([2, 6, 5]), 2)
    case("group_norm", "torch.nn.functional.group_norm", T([2, 6, 5]), 4)
    case("group_norm", "torch.nn.functional.group_norm", T([6]), 2)
    for lay in ["c", "cl", "p"]:
        x = T([2, 3, 4, 4], layout=lay)
        case("batch_norm", "torch.nn.functional.batch_norm", x, T([3]), T([3]), T([3]), T([3]), False)
        case("batch_norm", "torch.nn.functional.batch_norm", x, T([3]), T([3]), training=True)
    case("batch_norm", "torch.nn.functional.batch_norm", T([4, 3], rg=True), None, None, training=True)
    case("batch_norm", "torch.nn.functional.batch_norm", T([1, 3]), None, None, training=True)
    case("batch_norm", "torch.nn.functional.batch_norm", T([4, 3]), T([4]), T([4]))
    case("batch_norm", "torch.batch_norm", T([4, 3, 5]), T([3]), T([3]), T([3]), T([3]), True, 0.1, 1e-5, True)
    case("batch_norm", "torch.batch_norm", T([4, 3, 5], layout="t"), None, None, T([3]), T([3]), False, 0.1, 1e-5, True)
    for lay in ["c", "cl"]:
        case("instance_norm", "torch.nn.functional.instance_norm", T([2, 3, 4, 4], layout=lay))
    case("instance_norm", "torch.nn.functional.instance_norm", T([2, 3, 5]), weight=T([3]), bias=T([3]))
    case("instance_norm", "torch.nn.functional.instance_norm", T([2, 3, 1]))
    case("instance_norm", "torch.instance_norm", T([2, 3, 5]), None, None, None, None, True, 0.1, 1e-5, False)
    for lay in ["c", "p", "t", "e"]:
        s = rshape(3)
        case("dropout", "torch.nn.functional.dropout", T(s, layout=lay), 0.3)
        case("dropout", "torch.nn.functional.dropout", T(s, layout=lay), 0.3, False)
    case("dropout", "torch.dropout", T([2, 3], rg=True), 0.5, True)
    case("dropout", "torch.dropout", T([2, 3]), 1.0, True)
    case("dropout", "torch.nn.functional.dropout", T([2, 3]), 1.5)
    case("dropout", "torch.nn.functional.dropout", T([2, 3], layout="t"), p=0.2, training=True, inplace=True)
    case("dropout", "torch.nn.functional.dropout", T([2, 3]), 0.0)
    case("dropout_", "torch.dropout_", T([2, 3], layout="t"), 0.5, True)
    case("alpha_dropout", "torch.nn.functional.alpha_dropout", T([4, 3], layout="p"), 0.2, True)
    case("alpha_dropout", "torch.alpha_dropout", T([4, 3]), 0.2, False)
    case("alpha_dropout_", "torch.alpha_dropout_", T([4, 3]), 0.2, True)
    for tg, s in [("torch.nn.functional.dropout2d", [2, 3, 4, 4]), ("torch.nn.functional.dropout1d", [2, 3, 4]),
                  ("torch.nn.functional.dropout3d", [2, 3, 2, 2, 2]), ("torch.feature_dropout", [2, 3, 4])]:
        if tg == "torch.feature_dropout":
            case("feature_dropout", tg, T(s, layout="p"), 0.5, True)
        else:
            case("feature_dropout", tg, T(s, layout="p"), 0.5)
            case("feature_dropout", tg, T(s), 0.5, False)
    case("feature_dropout", "torch.nn.functional.dropout1d", T([2, 3, 4, 5]), 0.5)
    case("feature_dropout", "torch.nn.functional.dropout2d", T([2, 3, 4, 4], layout="cl"), 0.5)
    case("feature_dropout_", "torch.feature_dropout_", T([2, 3, 4]), 0.5, True)
    case("feature_alpha_dropout", "torch.nn.functional.feature_alpha_dropout", T([2, 3, 4, 4]), 0.5, True)


# ---------------------------------------------------------------------------------------------
# Matrix products, convolution, pooling.

def gen_linalg():
    shapes = [([3], [3]), ([2, 3], [3]), ([3], [3, 4]), ([2, 3], [3, 4]), ([5, 2, 3], [3]),
              ([5, 2, 3], [3, 4]), ([2, 3], [5, 3, 4]), ([3], [5, 3, 4]), ([5, 2, 3], [5, 3, 4]),
              ([2, 1, 2, 3], [5, 3, 4]), ([5, 2, 3], [4]), ([2, 3], [4, 5]), ([4, 5, 2, 3], [3, 5, 3, 2]),
              ([], [3])]
    for a, b in shapes:
        case("matmul", "torch.matmul", T(a, layout=R.choice(layouts(len(a)) if a else ["c"])),
             T(b, layout=R.choice(layouts(len(b)))))
    case("matmul", "operator.matmul", T([2, 3], rg=True), T([3, 2], layout="t"))
    case("matmul", "Tensor.matmul", T([2, 3]), T([3, 2], dtype=f64))
    case("matmul", "torch.matmul", T([2, 3], dtype=i64), T([3, 2], dtype=i64))
    case("mm", "torch.mm", T([2, 3], layout="t"), T([3, 4], layout="t"))
    case("mm", "torch.mm", T([2, 3]), T([4, 5]))
    case("mm", "torch.mm", T([2, 3]), T([3]))
    case("mm", "Tensor.mm", T([2, 3], rg=True), T([3, 5]))
    case("mm", "torch.mm", T([2, 3]), T([3, 5], dtype=f64))
    case("bmm", "torch.bmm", T([4, 2, 3], layout="p"), T([4, 3, 5], layout="t"))
    case("bmm", "torch.bmm", T([4, 2, 3]), T([3, 3, 5]))
    case("bmm", "torch.bmm", T([2, 3]), T([3, 5]))
    case("mv", "torch.mv", T([2, 3], layout="t"), T([3]))
    case("mv", "torch.mv", T([2, 3]), T([4]))
    case("dot", "torch.dot", T([3]), T([3], layout="s"))
    case("dot", "torch.dot", T([3]), T([4]))
    case("dot", "torch.dot", T([3]), T([3], dtype=f64))
    case("outer", "torch.outer", T([3]), T([4], layout="s"))
    case("outer", "torch.outer", T([3], dtype=i64), T([4]))
    case("outer", "torch.ger", T([3]), T([4]))
    case("addmm", "torch.addmm", T([4]), T([2, 3]), T([3, 4]))
    case("addmm", "torch.addmm", T([2, 4], layout="t"), T([2, 3], layout="t"), T([3, 4]), beta=0.5, alpha=2)
    case("addmm", "torch.addmm", T([3]), T([2, 3]), T([3, 4]))
    case("addmm", "torch.addmm", T([2, 4], rg=True), T([2, 3]), T([3, 4]))
    case("addmm_", "Tensor.addmm_", T([2, 4]), T([2, 3]), T([3, 4]))
    case("addmv", "torch.addmv", T([2]), T([2, 3]), T([3]))
    case("baddbmm", "torch.baddbmm", T([4, 2, 5]), T([4, 2, 3]), T([4, 3, 5]))
    case("baddbmm", "torch.baddbmm", T([5]), T([4, 2, 3], layout="p"), T([4, 3, 5]))
    case("baddbmm_", "Tensor.baddbmm_", T([4, 2, 5]), T([4, 2, 3]), T([4, 3, 5]))
    case("addbmm", "torch.addbmm", T([2, 5]), T([4, 2, 3]), T([4, 3, 5]))
    for s in [[2, 3], [4, 2, 3], [3], [2, 2, 2, 3]]:
        case("linear", "torch.nn.functional.linear", T(s, layout=R.choice(layouts(len(s)))), T([5, 3]), T([5]))
    case("linear", "torch.nn.functional.linear", T([4, 3], rg=True), T([5, 3], layout="t"))
    case("linear", "torch.nn.functional.linear", T([4, 3]), T([5, 4]))
    case("linear", "torch.nn.functional.linear", T([4, 3]), T([3]))
    case("linear", "torch.nn.functional.linear", T([4, 3]), T([5, 3]), T([4]))
    case("bilinear", "torch.nn.functional.bilinear", T([4, 2]), T([4, 3]), T([5, 2, 3]), T([5]))
    case("bilinear", "torch.bilinear", T([6, 4, 2]), T([6, 4, 3]), T([5, 2, 3]))
    case("bilinear", "torch.nn.functional.bilinear", T([4, 2]), T([4, 3]), T([5, 3, 3]))
    for eq, shapes in [("ij,jk->ik", [[2, 3], [3, 4]]), ("bij,bjk->bik", [[5, 2, 3], [5, 3, 4]]),
                       ("ij->ji", [[2, 3]]), ("ii->i", [[3, 3]]), ("i,j->ij", [[2], [3]]),
                       ("bhqd,bhkd->bhqk", [[2, 3, 4, 5], [2, 3, 6, 5]]), ("ij,ij->", [[2, 3], [2, 3]]),
                       ("...ij,...jk", [[5, 2, 3], [3, 4]]), ("ij,jk", [[2, 3], [3, 4]]),
                       ("ij,jk->ik", [[2, 3], [4, 4]]), ("ijk->", [[2, 3, 4]]), ("bn,anm,bm->ba", [[2, 3], [4, 3, 5], [2, 5]])]:
        case("einsum", "torch.einsum", eq, *[T(s) for s in shapes])
    case("einsum", "torch.einsum", "ij,jk->ik", [T([2, 3]), T([3, 4])])


def gen_conv():
    for k, name in [(1, "conv1d"), (2, "conv2d"), (3, "conv3d")]:
        sp = [R.randint(5, 7) for _ in range(k)]
        tg = "torch.nn.functional." + name
        case(name, tg, T([2, 4] + sp), T([6, 4] + [3] * k), T([6]))
        case(name, tg, T([2, 4] + sp, layout="cl" if k > 1 else "t"), T([6, 4] + [3] * k), None, 2, 1)
        case(name, tg, T([2, 4] + sp), T([6, 2] + [3] * k), None, 1, 0, 2, 2)
        case(name, tg, T([4] + sp), T([6, 4] + [3] * k))
        case(name, tg, T([2, 4] + sp, rg=True), T([6, 4] + [1] * k), padding="same")
        case(name, tg, T([2, 4] + sp), T([6, 4] + [3] * k), padding="valid", stride=1)
        case(name, tg, T([2, 3] + sp), T([6, 4] + [3] * k))
        case(name, tg, T([2, 4] + [2] * k), T([6, 4] + [3] * k))
        case(name, tg, T([2, 4] + sp), T([6, 4] + [3] * k), T([5]))
        case(name, "torch." + name, T([2, 4] + sp), T([6, 4] + [3] * k), None, [1] * k, [1] * k)
    case("conv2d", "torch.nn.functional.conv2d", T([2, 4, 6, 6]), T([6, 4, 3, 3], layout="cl"))
    case("conv2d", "torch.nn.functional.conv2d", T([1, 4, 6, 6], layout="cl"), T([6, 4, 1, 1]))
    case("conv2d", "torch.nn.functional.conv2d", T([2, 4, 6, 6]), T([6, 4, 3, 3], dtype=f64))
    case("conv2d", "torch.nn.functional.conv2d", T([2, 4, 6, 6]), T([6, 4, 3, 3]), stride=(1, 2, 3))
    for k, name in [(1, "conv_transpose1d"), (2, "conv_transpose2d.input"), (3, "conv_transpose3d.input")]:
        short = name.split(".")[0]
        tg = "torch.nn.functional." + short
        sp = [R.randint(3, 5) for _ in range(k)]
        case(name, tg, T([2, 4] + sp), T([4, 3] + [3] * k), T([3]))
        case(name, tg, T([2, 4] + sp), T([4, 3] + [3] * k), None, 2, 1, 1)
        case(name, tg, T([2, 4] + sp, layout="cl" if k > 1 else "c"), T([4, 3] + [3] * k), groups=2)
        case(name, tg, T([2, 4] + sp), T([5, 3] + [3] * k))
        case(name, tg, T([2, 4] + sp), T([4, 3] + [3] * k), stride=1, output_padding=1)
    for k, name in [(1, "max_pool1d"), (2, "max_pool2d"), (3, "max_pool3d")]:
        tg = "torch.nn.functional." + name
        sp = [R.randint(5, 8) for _ in range(k)]
        case(name, tg, T([2, 3] + sp), 2)
        case(name, tg, T([2, 3] + sp, layout="cl" if k > 1 else "t"), 3, 2, 1)
        case(name, tg, T([3] + sp), 3, 1, 1, 2, True)
        case(name, tg, T([2, 3] + sp, rg=True), 2, return_indices=True)
        case(name, tg, T([2, 3] + sp), 3, padding=2)
        case(name, tg, T([2, 3] + [1] * k), 2)
        case(name, "torch." + name, T([2, 3] + sp), [2] * k, [], [0] * k, [1] * k, True)
    case("max_pool2d_with_indices", "torch.nn.functional.max_pool2d_with_indices", T([2, 3, 6, 6], layout="cl"), 2)
    case("max_pool2d_with_indices", "torch.nn.functional.max_pool2d_with_indices", T([2, 3, 6, 6]), 3, 2, 1)
    for k, name, tg in [(1, "avg_pool1d", "torch.nn.functional.avg_pool1d"), (2, "avg_pool2d", "torch.nn.functional.avg_pool2d"),
                        (3, "avg_pool3d", "torch.nn.functional.avg_pool3d")]:
        sp = [R.randint(5, 8) for _ in range(k)]
        case(name, tg, T([2, 3] + sp), 2)
        case(name, tg, T([2, 3] + sp, layout="cl" if k > 1 else "t"), 3, 2, 1, True)
        case(name, tg, T([3] + sp), 2, count_include_pad=False)
        case(name, tg, T([2, 3] + sp), 3, padding=2)
        case(name, tg, T([2, 3] + [1] * k), 2)
    case("avg_pool1d", "torch.avg_pool1d", T([2, 3, 7]), [3])
    for name, tg, k in [("adaptive_avg_pool1d", "torch.nn.functional.adaptive_avg_pool1d", 1),
                        ("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", 2),
                        ("adaptive_max_pool1d", "torch.nn.functional.adaptive_max_pool1d", 1),
                        ("adaptive_max_pool2d", "torch.nn.functional.adaptive_max_pool2d", 2)]:
        sp = [R.randint(5, 8) for _ in range(k)]
        case(name, tg, T([2, 3] + sp), 3)
        case(name, tg, T([2, 3] + sp, layout="cl" if k > 1 else "t"), 1)
        case(name, tg, T([2, 3] + sp, layout="cl" if k > 1 else "t"), [2] * k)
        case(name, tg, T([3] + sp), 4)
        case(name, tg, T([2, 3, 4] + sp), 2)
        if k == 2:
            case(name, tg, T([2, 3] + sp), (None, 2))
        if "max" in name:
            case(name, tg, T([2, 3] + sp), 2, True)
    case("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", T([2, 3, 5, 5], layout="p"), 1)


# ---------------------------------------------------------------------------------------------
# Views.

def gen_views():
    def vt(nd=None):
        nd = R.randint(1, 4) if nd is None else nd
        return T(rshape(nd), layout=R.choice(layouts(nd)))

    for lay in ["c", "t", "s", "p", "e"]:
        x = T([2, 3, 4], layout=lay)
        case("view", "Tensor.view", x, -1)
        case("view", "Tensor.view", x, 6, 4)
        case("view", "Tensor.view", x, (2, 12))
        case("view", "Tensor.view", x, [2, 3, 2, 2])
        case("view", "Tensor.view", x, 1, 2, 1, 3, 4, 1)
        case("reshape", "torch.reshape", x, (-1,))
        case("reshape", "Tensor.reshape", x, 6, 4)
        case("reshape", "Tensor.reshape", x, 2, 12)
        case("reshape", "Tensor.reshape", x, 4, -1, 2)
        case("flatten.using_ints", "torch.flatten", x)
        case("flatten.using_ints", "torch.flatten", x, 1)
        case("flatten.using_ints", "Tensor.flatten", x, 0, 1)
    x = T([2, 3, 4])
    case("view", "Tensor.view", x, 5, -1)
    case("view", "Tensor.view", x, -1, -1)
    case("view", "Tensor.view", x, 2, -2)
    case("view", "Tensor.view", T([0, 3]), -1, 0)
    case("view", "Tensor.view", T([]), 1)
    case("view", "Tensor.view", T([1]), [])
    case("view", "Tensor.view", T([2, 3], rg=True), 6)
    case("view.dtype", "Tensor.view", T([2, 4]), torch.int32)
    case("view.dtype", "Tensor.view", T([2, 4]), torch.float16)
    case("view.dtype", "Tensor.view", T([2, 4], dtype=f16), torch.float32)
    case("view.dtype", "Tensor.view", T([2, 3], dtype=f16), torch.float32)
    case("view_as", "Tensor.view_as", T([2, 3, 4], layout="s"), T([6, 4]))
    case("view_as", "Tensor.view_as", T([2, 3, 4], layout="t"), T([4, 6]))
    case("view_as", "Tensor.view_as", T([2, 3, 4]), T([6, 4]))
    case("reshape_as", "Tensor.reshape_as", T([2, 3, 4], layout="t"), T([6, 4]))
    case("flatten.using_ints", "torch.flatten", T([]))
    case("flatten.using_ints", "torch.flatten", T([2, 3]), 1, 0)
    case("flatten.using_ints", "torch.flatten", T([2, 3]), 2)
    case("unflatten.int", "torch.unflatten", T([2, 12], layout="t"), 1, (3, 4))
    case("unflatten.int", "Tensor.unflatten", T([2, 12]), -1, (-1, 2))
    case("unflatten.int", "Tensor.unflatten", T([2, 12]), 1, (5, 2))
    for x in [T([2, 1, 3, 1], layout="p"), T([1, 1]), T([]), T([3])]:
        case("squeeze.dim", "torch.squeeze", x)
        case("squeeze.dim", "Tensor.squeeze", x, 0)
    case("squeeze.dim", "torch.squeeze", T([2, 1, 3]), -2)
    case("squeeze.dim", "torch.squeeze", T([2, 1, 3]), 3)
    for d in [0, 1, -1, 3, 4]:
        case("unsqueeze", "torch.unsqueeze", T([2, 3, 4], layout="s"), d)
    case("unsqueeze", "Tensor.unsqueeze", T([]), 0)
    for x in [vt(3), vt(2), T([])]:
        case("transpose.int", "torch.transpose", x, 0, -1)
    case("transpose.int", "torch.swapaxes", vt(3), 0, 1)
    case("transpose.int", "Tensor.transpose", vt(2), 0, 2)
    case("permute", "Tensor.permute", vt(3), 2, 0, 1)
    case("permute", "torch.permute", vt(3), (1, 0, 2))
    case("permute", "Tensor.permute", vt(3), [1, 0])
    case("permute", "Tensor.permute", vt(3), 0, 0, 1)
    case("t", "torch.t", vt(2))
    case("t", "Tensor.t", vt(1))
    case("t", "torch.t", vt(3))
    case("movedim.intlist", "torch.movedim", vt(4), 0, -1)
    case("movedim.intlist", "torch.movedim", vt(4), (0, 1), (2, 0))
    case("movedim.intlist", "torch.moveaxis", vt(3), [0, 0], [1, 2])
    for x in [T([3, 1], layout="s"), T([1, 4]), T([])]:
        case("expand", "Tensor.expand", x, 2, 3, 4)
    case("expand", "Tensor.expand", T([3, 1]), -1, 5)
    case("expand", "Tensor.expand", T([3, 1]), (2, -1, 5))
    case("expand", "Tensor.expand", T([3, 2]), 3, 5)
    case("expand", "Tensor.expand", T([3, 2]), 2)
    case("expand", "Tensor.expand", T([3, 1]), -1, 3, 5)
    case("expand_as", "Tensor.expand_as", T([3, 1], layout="t"), T([2, 3, 4]))
    case("broadcast_to", "torch.broadcast_to", T([3, 1]), (2, 3, 4))
    case("broadcast_tensors", "torch.broadcast_tensors", T([3, 1]), T([2, 1, 4]), T([]))
    case("broadcast_tensors", "torch.broadcast_tensors", T([3, 1]), T([2, 4]))
    for lay in ["c", "t", "s", "e", "cl"]:
        x = T([2, 3, 4, 5], layout=lay)
        case("contiguous", "Tensor.contiguous", x)
        case("contiguous", "Tensor.contiguous", x, memory_format=torch.channels_last)
    case("contiguous", "Tensor.contiguous", T([2, 3]), memory_format=torch.channels_last)
    for x in [vt(3), T([5, 4], layout="s")]:
        case("narrow", "torch.narrow", x, 0, 1, 1)
        case("narrow", "Tensor.narrow", x, -1, -2, 2)
        case("narrow", "torch.narrow", x, 0, 0, 9)
    case("narrow", "torch.narrow", T([]), 0, 0, 1)
    for x in [vt(3), T([5, 4], layout="s")]:
        case("select.int", "torch.select", x, 0, 1)
        case("select.int", "Tensor.select", x, -1, -1)
        case("select.int", "torch.select", x, 1, 7)
    for x in [T([7, 4], layout="t"), T([6, 5, 2], layout="s")]:
        case("split.Tensor", "torch.split", x, 2)
        case("split.Tensor", "torch.split", x, [1, 2, 3])
        case("split.Tensor", "Tensor.split", x, 3, 1)
        case("split.Tensor", "torch.split", x, split_size_or_sections=4, dim=0)
        case("chunk", "torch.chunk", x, 3)
        case("chunk", "Tensor.chunk", x, 2, -1)
        case("unbind.int", "torch.unbind", x)
        case("unbind.int", "Tensor.unbind", x, 1)
    case("split.Tensor", "Tensor.split_with_sizes", T([5, 2]), [2, 3])
    case("split.Tensor", "torch.split", T([5, 2]), [2, 2])
    case("split.Tensor", "torch.split", T([0, 2]), 0)
    case("chunk", "torch.chunk", T([0, 2]), 3)
    case("chunk", "torch.chunk", T([5, 2]), 0)
    case("chunk", "torch.chunk", T([5, 2], rg=True), 2)
    case("unbind.int", "torch.unbind", T([]))
    for x in [T([7, 4], layout="t"), T([6], layout="s")]:
        case("unfold", "Tensor.unfold", x, 0, 3, 2)
    case("unfold", "Tensor.unfold", T([]), 0, 1, 1)
    case("unfold", "Tensor.unfold", T([3, 4]), 1, 5, 1)
    case("as_strided", "torch.as_strided", T([4, 5]), (2, 3), (1, 2))
    case("as_strided", "Tensor.as_strided", T([4, 5], layout="s"), (2, 2), (5, 1), 3)
    for x in [T([4, 5], layout="t"), T([3, 4, 5], layout="s")]:
        case("diagonal", "torch.diagonal", x)
        case("diagonal", "torch.diagonal", x, 1)
        case("diagonal", "torch.diagonal", x, -1, 0, -1)
    case("diagonal", "torch.diagonal", T([4, 5]), 9)
    case("diagonal", "torch.diagonal", T([4]))
    case("detach", "Tensor.detach", T([2, 3], layout="s", rg=True))
    case("detach", "torch.detach", T([2, 3]))


def gen_getitem():
    x = lambda: T([4, 5, 6], layout=R.choice(["c", "t", "s", "p"]))
    idxs = [0, -1, slice(1, 3), slice(None, None, 2), (0, 1), (slice(None), 2), (Ellipsis, 1), None,
            (None, slice(1, None), None), (1, Ellipsis, None), (slice(-3, -1), slice(None), slice(4, 1)),
            True, False, (0, True), [0, 2], [[0, 1], [2, 3]], ([0, 2], [1, 3]), (slice(None), [0, 2, 1]),
            ([0, 1], slice(None), [2, 3]), (0, [1, 2]), (Ellipsis, [0, 1]), (slice(None), None, [0, 1]),
            (slice(1, None), [[0], [1]], [2, 3]), 7, (0, 0, 0, 0), (slice(None, None, -1),), ("a",),
            ([0, 1], [0, 1, 2]), ([True, False, True, False],)]
    for ix in idxs:
        case("getitem", "operator.getitem", x(), ix)
    for tix in [T([2], dtype=i64, lo=0, hi=4), T([2, 3], dtype=i64, lo=0, hi=4, layout="t"), T([3], dtype=i32, lo=0, hi=4)]:
        case("getitem", "operator.getitem", x(), tix)
        case("getitem", "operator.getitem", x(), (slice(None), tix))
        case("getitem", "operator.getitem", x(), (tix, slice(None), T([1], dtype=i64, lo=0, hi=4)))
    case("getitem", "operator.getitem", x(), T([4, 5], dtype=b8))
    case("getitem", "operator.getitem", x(), T([3], dtype=b8))
    case("getitem", "operator.getitem", x(), T([], dtype=i64, lo=0, hi=3))
    case("getitem", "operator.getitem", x(), T([2], dtype=f32))
    case("getitem", "operator.getitem", T([], rg=True), None)
    case("getitem", "operator.getitem", T([]), 0)
    case("getitem", "operator.getitem", T([4, 5], rg=True), (slice(None), 1))
    case("getitem", "Tensor.__getitem__", T([4, 5]), (slice(None), [1, 2]))
    for ix, v in [((0,), T([6])), (slice(1, 3), 2.0), ((slice(None), 1), T([4, 1])), ([0, 2], T([6])),
                  ((slice(None), [0, 1]), T([2, 3])), (1, T([2, 6])), (T([4, 5], dtype=b8), 0.0),
                  (T([4, 5], dtype=b8), T([6])), (T([4], dtype=b8), T([1, 6])), (0, "a"),
                  ((slice(None), [0, 1]), T([4, 2, 6])), ((slice(None), [0, 1]), T([5, 6]))]:
        case("setitem", "operator.setitem", T([4, 5, 6], layout="t"), ix, v)


def gen_join():
    for lay in ["c", "t", "cl", "p"]:
        s = [2, 3, 4, 5]
        case("cat", "torch.cat", [T(s, layout=lay), T(s, layout=lay)], 1)
        case("cat", "torch.cat", (T(s, layout=lay), T(s)), -1)
    case("cat", "torch.cat", [T([2, 3]), T([2, 3], dtype=f64), T([2, 3], dtype=i64)])
    case("cat", "torch.cat", [T([2, 3]), T([0])])
    case("cat", "torch.cat", [T([0]), T([0])])
    case("cat", "torch.cat", [T([2, 3]), T([2, 4])])
    case("cat", "torch.cat", [T([2, 3]), T([2, 3, 1])])
    case("cat", "torch.cat", [])
    case("cat", "torch.cat", [T([])])
    case("cat", "torch.concat", [T([2, 3], rg=True), T([4, 3])], dim=0)
    case("cat", "torch.cat", T([2, 3]), T([2, 3]))
    for lay in ["c", "t", "p"]:
        case("stack", "torch.stack", [T([2, 3, 4], layout=lay), T([2, 3, 4], layout=lay)])
        case("stack", "torch.stack", [T([2, 3, 4], layout=lay), T([2, 3, 4])], 2)
    case("stack", "torch.stack", [T([2, 3]), T([2, 4])])
    case("stack", "torch.stack", [T([2, 3]), T([2, 3], dtype=f64)], -1)
    case("stack", "torch.stack", [T([]), T([])])
    case("hstack", "torch.hstack", [T([2, 3]), T([2, 1])])
    case("hstack", "torch.hstack", [T([3]), T([2])])
    case("hstack", "torch.hstack", [T([]), T([2])])
    case("vstack", "torch.vstack", [T([3]), T([3])])
    case("vstack", "torch.vstack", [T([2, 3]), T([1, 3], layout="t")])
    case("vstack", "torch.row_stack", [T([2, 3, 4]), T([1, 3, 4])])
    for x in [T([2, 3], layout="t"), T([3]), T([])]:
        case("repeat", "Tensor.repeat", x, 2, 1, 3)
    case("repeat", "Tensor.repeat", T([2, 3]), (2, 2))
    case("repeat", "Tensor.repeat", T([2, 3]), 2)
    case("tile", "torch.tile", T([2, 3]), (2,))
    case("tile", "Tensor.tile", T([2, 3], layout="t"), (2, 1, 2))
    case("repeat_interleave.self_int", "torch.repeat_interleave", T([2, 3]), 2)
    case("repeat_interleave.self_int", "torch.repeat_interleave", T([2, 3], layout="t"), 2, 1)
    case("repeat_interleave.self_int", "Tensor.repeat_interleave", T([2, 3]), 3, dim=0)
    case("repeat_interleave.self_int", "torch.repeat_interleave", T([2, 3]), T([2], dtype=i64, lo=1, hi=3), dim=0)
    case("repeat_interleave.self_int", "torch.repeat_interleave", T([2, 3]), T([2], dtype=i64, lo=2, hi=3), dim=0, output_size=4)
    for x in [T([2, 3, 4], layout="t"), T([2, 3, 4], layout="s"), T([2, 3, 4, 5], layout="cl")]:
        case("flip", "torch.flip", x, [0, 2])
        case("flip", "Tensor.flip", x, 1)
        case("roll", "torch.roll", x, 1, 0)
        case("roll", "torch.roll", x, 2)
        case("roll", "Tensor.roll", x, (1, 2), (0, 1))
    case("roll", "torch.roll", T([2, 3]), (1, 2), 0)
    case("flip", "torch.flip", T([2, 3]), [0, 0])
    for name in ["tril", "triu"]:
        case(name, "torch." + name, T([3, 4], layout="t"))
        case(name, "torch." + name, T([2, 3, 4], layout="s"), 1)
        case(name, "torch." + name, T([3]))
        case(name + "_", "Tensor." + name + "_", T([3, 4], layout="t"), -1)


def gen_index():
    for x in [T([3, 4], layout="t"), T([3, 4, 5], layout="s")]:
        nd = x.dim()
        case("gather", "torch.gather", x, 1, T([3, 2] + [2] * (nd - 2), dtype=i64, lo=0, hi=3))
        case("gather", "Tensor.gather", x, 0, T([2, 4] + [5] * (nd - 2), dtype=i64, lo=0, hi=3, layout="t"))
    case("gather", "torch.gather", T([3, 4]), 1, T([3, 2], dtype=i32, lo=0, hi=3))
    case("gather", "torch.gather", T([3, 4]), 1, T([3], dtype=i64, lo=0, hi=3))
    case("gather", "torch.gather", T([3, 4]), 1, T([4, 2], dtype=i64, lo=0, hi=3))
    for x in [T([3, 4], layout="t"), T([3, 4], layout="cl" if False else "s"), T([3, 4])]:
        case("scatter.src", "torch.scatter", x, 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]))
        case("scatter.src", "Tensor.scatter", x, 0, T([2, 2], dtype=i64, lo=0, hi=3), 1.5)
        case("scatter_add", "torch.scatter_add", x, 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]))
    case("scatter.src", "torch.scatter", T([3, 4]), 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3], dtype=f64))
    case("scatter.src", "torch.scatter", T([3, 4]), 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]), reduce="add")
    case("scatter.src", "torch.scatter", T([3, 4]), 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]), reduce="max")
    case("scatter.src", "torch.scatter", T([3, 4]), 1, T([2], dtype=i64, lo=0, hi=3), T([2, 3]))
    case("scatter_.src", "Tensor.scatter_", T([3, 4]), 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]))
    case("scatter_add_", "Tensor.scatter_add_", T([3, 4]), 1, T([2, 2], dtype=i64, lo=0, hi=3), T([2, 3]))
    for x in [T([3, 4], layout="t"), T([3, 4, 5], layout="cl" if False else "p")]:
        case("index_select", "torch.index_select", x, 1, T([5], dtype=i64, lo=0, hi=3))
        case("index_select", "Tensor.index_select", x, 0, T([], dtype=i64, lo=0, hi=3))
    case("index_select", "torch.index_select", T([3, 4]), 0, T([2, 2], dtype=i64, lo=0, hi=3))
    case("index_select", "torch.index_select", T([3, 4]), 0, T([2], dtype=f32))
    case("index_add", "torch.index_add", T([3, 4], layout="t"), 0, T([2], dtype=i64, lo=0, hi=3), T([2, 4]))
    case("index_add", "torch.index_add", T([3, 4]), 1, T([2], dtype=i64, lo=0, hi=3), T([3, 2]), alpha=2)
    case("index_add", "torch.index_add", T([3, 4]), 0, T([2], dtype=i64, lo=0, hi=3), T([3, 4]))
    case("index_add_", "Tensor.index_add_", T([3, 4]), 0, T([2], dtype=i64, lo=0, hi=3), T([2, 4]))
    case("take_along_dim", "torch.take_along_dim", T([3, 4], layout="t"), T([3, 2], dtype=i64, lo=0, hi=3), 1)
    case("take_along_dim", "torch.take_along_dim", T([3, 4]), T([5], dtype=i64, lo=0, hi=10))
    case("take_along_dim", "torch.take_along_dim", T([3, 4]), T([1, 2], dtype=i64, lo=0, hi=3), 1)
    case("take", "torch.take", T([3, 4]), T([2, 3], dtype=i64, lo=0, hi=12))
    case("take", "torch.take", T([3, 4]), T([2], dtype=torch.int32, lo=0, hi=12))
    case("take", "torch.take", T([0, 4]), T([1], dtype=i64, lo=0, hi=1))
    for s in [[5], [2, 3], []]:
        case("embedding", "torch.nn.functional.embedding", T(s, dtype=i64, lo=0, hi=10), T([10, 4], rg=True))
    case("embedding", "torch.nn.functional.embedding", T([2, 3], dtype=i32, lo=0, hi=10), T([10, 4]), padding_idx=0)
    case("embedding", "torch.nn.functional.embedding", T([2, 3], dtype=f32), T([10, 4]))
    case("embedding", "torch.nn.functional.embedding", T([2, 3], dtype=i64, lo=0, hi=10), T([10, 4]), max_norm=1.0)
    case("embedding", "torch.nn.functional.embedding", input=T([2], dtype=i64, lo=0, hi=10), weight=T([10, 4]))
    case("one_hot", "torch.nn.functional.one_hot", T([2, 3], dtype=i64, lo=0, hi=4), 5)
    case("one_hot", "torch.nn.functional.one_hot", T([2, 3], dtype=i64, lo=0, hi=4))
    case("one_hot", "torch.nn.functional.one_hot", T([2, 3], dtype=i32, lo=0, hi=4), 5)
    for name, tg, args in [("nonzero", "torch.nonzero", [T([3, 4])]), ("argwhere", "torch.argwhere", [T([3, 4])]),
                           ("masked_select", "torch.masked_select", [T([3, 4]), T([3, 4], dtype=b8)]),
                           ("unique", "torch.unique", [T([5], dtype=i64)]),
                           ("unique_consecutive", "torch.unique_consecutive", [T([5], dtype=i64)]),
                           ("bincount", "torch.bincount", [T([5], dtype=i64)]),
                           ("item", "Tensor.item", [T([])]), ("tolist", "Tensor.tolist", [T([2])]),
                           ("equal", "torch.equal", [T([2]), T([2])]),
                           ("allclose", "torch.allclose", [T([2]), T([2])])]:
        case(name, tg, *args)


def gen_factories():
    for name in ["zeros", "ones", "empty", "rand", "randn"]:
        tg = "torch." + name
        case(name, tg, 2, 3)
        case(name, tg, (2, 3, 4))
        case(name, tg, [4], dtype=f64)
        case(name, tg, 2, dtype=i64)
        case(name, tg, 2, 3, requires_grad=True)
        case(name, tg, 2, -1)
        case(name, tg, ())
        case(name, tg, size=(2, 0))
    case("empty", "torch.empty", 2, 3, 4, 5, memory_format=torch.channels_last)
    case("zeros", "torch.zeros", 2, dtype=i64, requires_grad=True)
    for fv in [1, 1.5, True, 2j]:
        case("full", "torch.full", (2, 3), fv)
    case("full", "torch.full", [2], 1, dtype=f64, requires_grad=True)
    case("randint.low", "torch.randint", 10, (2, 3))
    case("randint.low", "torch.randint", 2, 10, (3,))
    case("randint.low", "torch.randint", 2, 10, (3,), dtype=f32)
    case("randint.low", "torch.randint", 10, size=(2,))
    case("randperm", "torch.randperm", 5)
    case("randperm", "torch.randperm", 5, dtype=f32)
    for args in [(5,), (1, 5), (0, 10, 3), (0.5, 3), (0, 1, 0.1), (5, 1), (5, 1, -1), (0, 5, 0), (10.0,), (1, 2.5, 0.5)]:
        case("arange.start_step", "torch.arange", *args)
    case("arange.start_step", "torch.arange", 5, dtype=f64)
    case("arange.start_step", "torch.arange", end=4)
    case("arange.start_step", "torch.arange", 0, 7, 2, dtype=f32)
    case("linspace", "torch.linspace", 0, 1, 5)
    case("linspace", "torch.linspace", 0, 1, steps=3, dtype=f64)
    case("linspace", "torch.linspace", 0, 10, 4, dtype=i64)
    case("linspace", "torch.linspace", 0, 1, -1)
    case("logspace", "torch.logspace", 0, 1, 5)
    case("logspace", "torch.logspace", 0, 1, 5, 2.0)
    case("eye", "torch.eye", 3)
    case("eye", "torch.eye", 3, 4, dtype=i64)
    case("eye", "torch.eye", -1)
    case("empty_strided", "torch.empty_strided", (2, 3), (1, 2))
    case("empty_strided", "torch.empty_strided", (2, 3), (1,))
    for data in [1, 1.5, True, [1, 2, 3], [[1.0, 2], [3, 4]], [[True], [False]], [], [[1, 2], [3]], 2j, [[[1]]]]:
        case("tensor", "torch.tensor", data)
    case("tensor", "torch.tensor", [1, 2], dtype=f16)
    case("tensor", "torch.tensor", [1.0, 2], requires_grad=True)
    case("tensor", "torch.tensor", [1, 2], requires_grad=True)
    case("scalar_tensor", "torch.scalar_tensor", 1)
    case("scalar_tensor", "torch.scalar_tensor", 2.5, dtype=f64)
    for name in ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"]:
        tg = "torch." + name
        for lay in ["c", "t", "s", "e", "cl"]:
            nd = 4 if lay == "cl" else 3
            case(name, tg, T(rshape(nd), layout=lay, rg=lay == "c"))
        case(name, tg, T([2, 3], dtype=i64))
        case(name, tg, T([2, 3], layout="t"), dtype=f64)
        case(name, tg, T([2, 3, 4, 5]), memory_format=torch.channels_last)
        case(name, tg, T([2, 3], layout="t"), memory_format=torch.contiguous_format)
        case(name, tg, T([2, 3]), requires_grad=True)
    for lay in ["c", "t", "s", "cl"]:
        case("bernoulli_.float", "Tensor.bernoulli_", T(rshape(4 if lay == "cl" else 3), layout=lay), 0.3)
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]))
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3], dtype=f64), p=1.0)
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3], dtype=i64), 0.5)
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3], dtype=torch.bool), 0.5)
    for p in [1.5, -0.1, float("nan"), 12345678.0]:
        case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]), p)
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]), T([3], lo=0, hi=1))
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]), T([2, 3], dtype=f64, lo=0, hi=1))
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]), T([2], lo=0, hi=1))
    case("bernoulli_.float", "Tensor.bernoulli_", T([2, 3]), p=T([1, 3], lo=0, hi=1))
    case("full_like", "torch.full_like", T([2, 3], layout="t"), 2)
    case("full_like", "torch.full_like", T([2, 3], dtype=i64), 2.5)
    case("full_like", "torch.full_like", T([2, 3], layout="s"), 2, dtype=f64)
    case("randint_like.low_dtype", "torch.randint_like", T([2, 3], layout="t"), 10)
    case("randint_like.low_dtype", "torch.randint_like", T([2, 3]), 2, 10)
    for name in ["new_zeros", "new_ones", "new_empty"]:
        tg = "Tensor." + name
        case(name, tg, T([2, 3], layout="t", dtype=i64), (4, 5))
        case(name, tg, T([2, 3]), 4, 5)
        case(name, tg, T([2, 3]), [2], dtype=f64, requires_grad=True)
    case("new_full", "Tensor.new_full", T([2], dtype=i32), (2, 3), 7)
    case("new_full", "Tensor.new_full", T([2]), (2,), 7)


def gen_casts():
    for lay in ["c", "t", "s", "e", "cl"]:
        nd = 4 if lay == "cl" else 3
        x = T(rshape(nd, 2, 4), layout=lay, rg=(lay == "c"))
        case("to.device", "Tensor.to", x, torch.float64)
        case("to.device", "Tensor.to", x, torch.float32)
        case("to.device", "Tensor.to", x, "cpu")
        case("to.device", "Tensor.to", x, dtype=torch.int64)
        case("to.device", "Tensor.to", x, T([2], dtype=f16))
        case("to.device", "Tensor.to", x, torch.float32, copy=True)
        case("clone", "torch.clone", x)
        case("clone", "Tensor.clone", x, memory_format=torch.contiguous_format)
        case("type_as", "Tensor.type_as", x, T([1], dtype=i32))
        case("contiguous", "Tensor.contiguous", x)
        for name in ["float", "double", "half", "long", "int", "bool"]:
            case(name, "Tensor." + name, x)
    x = T([2, 3, 4, 5])
    case("to.device", "Tensor.to", x, memory_format=torch.channels_last)
    case("to.device", "Tensor.to", x, torch.device("cpu"), torch.float16)
    case("to.device", "Tensor.to", x, "bogus")
    case("clone", "torch.clone", x, memory_format=torch.channels_last)
    case("clone", "torch.clone", T([2, 3]), memory_format=torch.channels_last)
    for name in ["bfloat16", "short", "char", "byte"]:
        case(name, "Tensor." + name, T([2, 3], layout="t"))
    case("float", "Tensor.float", T([2, 3, 4, 5], dtype=f64), memory_format=torch.channels_last)
    case("type", "Tensor.type", T([2, 3], layout="t"), torch.float64)
    case("type", "Tensor.type", T([2, 3]), "torch.LongTensor")
    case("type", "Tensor.type", T([2, 3], dtype=i32))
    case("cpu", "Tensor.cpu", T([2, 3], rg=True))
    case("copy_", "Tensor.copy_", T([2, 3], layout="t"), T([3], dtype=f64, rg=True))
    case("copy_", "Tensor.copy_", T([2, 3]), T([2, 3]))
    case("copy_", "Tensor.copy_", T([2, 3]), T([4, 3]))
    case("copy_", "Tensor.copy_", T([2, 3], dtype=i64), T([2, 3], rg=True))
    case("fill_.Tensor", "Tensor.fill_", T([2, 3], layout="t"), 1.5)
    case("fill_.Tensor", "Tensor.fill_", T([2, 3]), T([], rg=True))
    case("fill_.Tensor", "Tensor.fill_", T([2, 3]), T([2]))
    case("zero_", "Tensor.zero_", T([2, 3], layout="s"))
    case("requires_grad_", "Tensor.requires_grad_", T([2, 3]))
    case("requires_grad_", "Tensor.requires_grad_", T([2, 3], dtype=i64))
    case("requires_grad_", "Tensor.requires_grad_", T([2, 3]), False)


def gen_losses():
    for name in ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"]:
        tg = "torch.nn.functional." + name
        for red in ["mean", "sum", "none"]:
            s = rshape(3)
            case(name, tg, T(s, layout=R.choice(["c", "p", "t"]), rg=True), T(s, layout=R.choice(["c", "t"])), reduction=red)
        case(name, tg, T([2, 3]), T([3]), reduction="none")
        case(name, tg, T([2, 3]), T([2, 3]), reduction="bogus")
        case(name, tg, T([2, 3]), T([2, 3], dtype=f64), reduction="none")
        case(name, tg, T([2, 3]), T([4, 3]))
        if name != "huber_loss":
            case(name, tg, T([2, 3]), T([2, 3]), reduce=False)
            case(name, tg, T([2, 3]), T([2, 3]), size_average=False)
    case("kl_div", "torch.nn.functional.kl_div", T([2, 3]), T([2, 3]), reduction="batchmean")
    case("smooth_l1_loss", "torch.nn.functional.smooth_l1_loss", T([2, 3]), T([2, 3]), beta=0.5)
    case("huber_loss", "torch.nn.functional.huber_loss", T([2, 3]), T([2, 3]), delta=0.5)
    for red in ["mean", "none"]:
        case("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", T([2, 3], lo=0.1, hi=0.9, layout="t"), T([2, 3], lo=0, hi=1), reduction=red)
        case("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T([2, 3], layout="t", rg=True), T([2, 3], lo=0, hi=1), reduction=red)
    case("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", T([2, 3], lo=0.1, hi=0.9), T([3], lo=0, hi=1))
    case("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", T([2, 3], lo=0.1, hi=0.9), T([2, 3], lo=0, hi=1), weight=T([3]))
    case("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T([2, 3]), T([3]))
    case("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T([2, 3]), T([2, 3]), pos_weight=T([3]), reduction="none")
    for red in ["mean", "sum", "none"]:
        case("nll_loss", "torch.nn.functional.nll_loss", T([4, 5], rg=True), T([4], dtype=i64, lo=0, hi=5), reduction=red)
        case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5], layout="t", rg=True), T([4], dtype=i64, lo=0, hi=5), reduction=red)
        case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5, 3, 2]), T([4, 3, 2], dtype=i64, lo=0, hi=5), reduction=red)
        case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5]), T([4, 5], lo=0, hi=1), reduction=red)
    case("nll_loss", "torch.nn.functional.nll_loss", T([5]), T([], dtype=i64, lo=0, hi=5), reduction="none")
    case("nll_loss", "torch.nn.functional.nll_loss", T([4, 5, 3]), T([4, 3], dtype=i64, lo=0, hi=5), reduction="none")
    case("nll_loss", "torch.nn.functional.nll_loss", T([4, 5]), T([3], dtype=i64, lo=0, hi=5))
    case("nll_loss", "torch.nn.functional.nll_loss", T([4, 5]), T([4], dtype=f32))
    case("nll_loss", "torch.nn.functional.nll_loss", T([4, 5]), T([4], dtype=i64, lo=0, hi=5), weight=T([3]))
    case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5]), T([4], dtype=i64, lo=0, hi=5), weight=T([5]), ignore_index=1, label_smoothing=0.1)
    case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5]), T([4], dtype=i64, lo=0, hi=5), label_smoothing=1.5)
    case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5]), T([3], dtype=i64, lo=0, hi=5))
    case("cross_entropy", "torch.nn.functional.cross_entropy", T([5]), T([], dtype=i64, lo=0, hi=5))
    case("cross_entropy", "torch.nn.functional.cross_entropy", T([4, 5]), T([4, 4], lo=0, hi=1))


def gen_misc():
    for lay in ["c", "t", "cl"]:
        x = T([2, 3, 4, 5], layout=lay)
        case("pad", "torch.nn.functional.pad", x, (1, 2))
        case("pad", "torch.nn.functional.pad", x, (1, 1, 2, 0), value=1.0)
        case("pad", "torch.nn.functional.pad", x, (-1, 0, 0, -1))
        case("pad", "torch.nn.functional.pad", x, (1, 1, 1, 1), mode="reflect")
        case("pad", "torch.nn.functional.pad", x, (1, 2, 3, 0), mode="replicate")
        case("pad", "torch.nn.functional.pad", x, (1, 1, 2, 2), mode="circular")
    case("pad", "torch.nn.functional.pad", T([2, 3, 4]), (2, 2), mode="reflect")
    case("pad", "torch.nn.functional.pad", T([2, 3, 4]), (4, 4), mode="reflect")
    case("pad", "torch.nn.functional.pad", T([2, 3]), (1,))
    case("pad", "torch.nn.functional.pad", T([2, 3]), (1, 1, 1, 1, 1, 1))
    case("pad", "torch.nn.functional.pad", T([2, 3]), (-2, -2))
    case("pad", "torch.nn.functional.pad", T([2, 3, 4]), (1, 1, 1, 1, 1, 1), mode="reflect")
    case("constant_pad_nd", "torch.constant_pad_nd", T([2, 3], layout="t"), (1, 2), 0.5)
    case("constant_pad_nd", "torch.constant_pad_nd", T([2, 3]), (1, 2, 3, 4))
    for lay in ["c", "cl", "t"]:
        x = T([2, 3, 4, 5], layout=lay)
        case("interpolate", "torch.nn.functional.interpolate", x, scale_factor=2)
        case("interpolate", "torch.nn.functional.interpolate", x, size=(7, 3), mode="bilinear", align_corners=False)
        case("interpolate", "torch.nn.functional.interpolate", x, scale_factor=(1.5, 0.5), mode="bicubic")
        case("interpolate", "torch.nn.functional.interpolate", x, size=1, mode="area")
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4]), scale_factor=2.5, mode="linear")
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4]), size=5)
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 2, 2, 2]), size=(3, 3, 3), mode="trilinear")
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4]), size=5, mode="bilinear")
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 4]), size=5, scale_factor=2)
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 4]))
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 4]), size=(5,))
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 4]), size=5, align_corners=True)
    case("interpolate", "torch.nn.functional.upsample", T([2, 3, 4, 4]), scale_factor=2)
    for lay in ["c", "cl"]:
        case("pixel_shuffle", "torch.nn.functional.pixel_shuffle", T([2, 8, 3, 3], layout=lay), 2)
        case("pixel_unshuffle", "torch.nn.functional.pixel_unshuffle", T([2, 2, 4, 6], layout=lay), 2)
    case("pixel_shuffle", "torch.pixel_shuffle", T([8, 3, 3]), 2)
    case("pixel_shuffle", "torch.pixel_shuffle", T([2, 5, 3, 3]), 2)
    case("pixel_unshuffle", "torch.pixel_unshuffle", T([2, 2, 5, 6]), 2)
    for lay in ["c", "t", "p"]:
        case("normalize", "torch.nn.functional.normalize", T([3, 4, 5], layout=lay))
        case("cosine_similarity", "torch.nn.functional.cosine_similarity", T([3, 4, 5], layout=lay), T([4, 5]))
        case("pairwise_distance", "torch.nn.functional.pairwise_distance", T([3, 4], layout=lay), T([4]))
    case("normalize", "torch.nn.functional.normalize", T([3, 4]), 1.0, 0)
    case("normalize", "torch.nn.functional.normalize", T([3, 4]), dim=3)
    case("cosine_similarity", "torch.cosine_similarity", T([3, 4]), T([3, 4], dtype=f64), dim=0)
    case("cosine_similarity", "torch.cosine_similarity", T([3, 4], dtype=i64), T([3, 4], dtype=i64))
    case("cosine_similarity", "torch.cosine_similarity", T([3, 4]), T([5, 4]))
    case("pairwise_distance", "torch.pairwise_distance", T([3, 4]), T([3, 4]), keepdim=True)
    for x in [T([4, 5], layout="t"), T([3, 4, 5], layout="s"), T([2, 3, 4, 5], layout="cl")]:
        case("topk", "torch.topk", x, 2)
        case("topk", "Tensor.topk", x, 3, 0, False, False)
        case("sort", "torch.sort", x)
        case("sort", "Tensor.sort", x, 0, True)
        case("sort", "torch.sort", x, stable=True, dim=1)
        case("argsort", "torch.argsort", x, 1)
        case("kthvalue", "torch.kthvalue", x, 2)
        case("kthvalue", "torch.kthvalue", x, 1, 0, True)
        case("median.dim", "torch.median", x, 1)
        case("median", "torch.median", x)
        case("diff", "torch.diff", x)
        case("diff", "torch.diff", x, 2, 0)
    case("topk", "torch.topk", T([4, 5]), 6)
    case("topk", "torch.topk", T([]), 1)
    case("sort", "torch.sort", T([]))
    case("argsort", "torch.argsort", T([4, 5], layout="e"))
    case("sort", "torch.sort", T([4, 5], layout="e", rg=True), -1)
    case("kthvalue", "torch.kthvalue", T([4, 5]), 9)
    case("median.dim", "torch.median", T([4, 5]), 1, keepdim=True)
    case("diff", "torch.diff", T([4, 5]), prepend=T([4, 2]), append=T([4, 1]))
    case("diff", "torch.diff", T([4, 5], dtype=b8))
    case("diff", "torch.diff", T([4, 5]), 0)
    case("diff", "torch.diff", T([]))
    case("diff", "torch.diff", T([4, 5]), prepend=T([3, 2]))
    case("trace", "torch.trace", T([3, 4], layout="t"))
    case("trace", "torch.trace", T([3, 4], dtype=i32))
    case("trace", "torch.trace", T([3]))


def rlayout(nd):
    return R.choice(layouts(nd) + (["w"] if nd else []))


def gen_sweep():
    """Random shapes and layouts through the layout-propagating ops: TensorIterator's fast and
    slow paths, empty_like's preserve rules, views and their offsets."""
    def rs(nd):
        return [R.choice([1, 1, 2, 3, 4, 5]) for _ in range(nd)]

    def rt(nd=None, **kw):
        nd = R.randint(0, 4) if nd is None else nd
        return T(rs(nd), layout=rlayout(nd), **kw)

    for _ in range(60):
        case("sin", "torch.sin", rt())
        case("abs", "torch.abs", rt(dtype=R.choice([i64, f32])))
        case("relu", "torch.relu", rt())
    for _ in range(120):
        nd = R.randint(0, 4)
        s = rs(nd)
        a = T(s, layout=rlayout(nd))
        bs = bshape(s)
        b = T(bs, layout=rlayout(len(bs)))
        if R.random() < 0.5:
            a, b = b, a
        case("add.Tensor", "torch.add", a, b)
        case("mul.Tensor", "torch.mul", a, R.choice([2, 1.5, T([], dtype=f64)]))
    for _ in range(40):
        s = rs(R.randint(1, 4))
        c, x, y = T(bshape(s), dtype=b8, layout="p"), T(s, layout=rlayout(len(s))), T(bshape(s))
        case("where.self", "torch.where", c, x, y)
        bs = bshape(s)
        case("lerp.Tensor", "torch.lerp", x, T(bs, layout=rlayout(len(bs))), 0.3)
    for _ in range(60):
        x = rt()
        case("clone", "torch.clone", x)
        case("to.device", "Tensor.to", x, torch.float64)
        case("contiguous", "Tensor.contiguous", x)
        case("zeros_like", "torch.zeros_like", x)
        case("nan_to_num", "torch.nan_to_num", x)
    for _ in range(40):
        x = rt(R.randint(1, 4))
        nd = x.dim()
        dims = sorted(R.sample(range(nd), R.randint(1, nd)))
        case("sum.dim_IntList", "torch.sum", x, dims, R.choice([True, False]))
        case("softmax.int", "torch.softmax", x, R.randrange(nd))
        case("reshape", "torch.reshape", x, (-1,))
        case("flatten.using_ints", "torch.flatten", x, R.randrange(nd))
        case("transpose.int", "torch.transpose", x, R.randrange(nd), R.randrange(nd))
        case("unsqueeze", "torch.unsqueeze", x, R.randint(-nd - 1, nd))
        case("cumsum", "torch.cumsum", x, R.randrange(nd))
        case("flip", "torch.flip", x, dims)
    for _ in range(40):
        x = T(rs(3), layout=rlayout(3))
        ix = tuple(R.choice([slice(None), slice(1, None), slice(None, None, 2), 0, None, Ellipsis, [0]])
                   for _ in range(R.randint(1, 3)))
        if sum(1 for i in ix if i is Ellipsis) > 1:
            continue
        case("getitem", "operator.getitem", x, ix)
    for _ in range(30):
        s = rs(3)
        d = R.randrange(3)
        ts = [T(s, layout=rlayout(3)) for _ in range(R.randint(1, 3))]
        case("cat", "torch.cat", ts, d)
        case("stack", "torch.stack", ts, d)


def gen_out():
    """out= variants."""
    case("add.Tensor", "torch.add", T([2, 3]), T([3]), out=T([2, 3], layout="t"))
    case("add.Tensor", "torch.add", T([2, 3]), T([3]), out=T([5]))
    case("add.Tensor", "torch.add", T([2, 3]), T([3]), out=T([6], dtype=i64))
    case("sin", "torch.sin", T([2, 3], dtype=i64), out=T([2, 3], dtype=f64))
    case("sum.dim_IntList", "torch.sum", T([2, 3]), 1, out=T([0]))
    case("mm", "torch.mm", T([2, 3]), T([3, 4]), out=T([2, 4]))
    case("cat", "torch.cat", [T([2, 3]), T([2, 3])], out=T([2, 2]))
    case("mul.Tensor", "torch.mul", T([2, 3], rg=True), T([3]), out=T([2, 3]))


def gen_versions():
    """Calls whose result differs between the torch versions ptgo is tested against (1.13 and
    2.14: primtorch/torch_behavior.go). Generated last so that adding them left the random
    shapes of every other case as they were."""
    for k in (2, 3):
        sp = [5] * k
        x = T([2, 4] + sp, layout="cl")
        case("conv%dd" % k, "torch.nn.functional.conv%dd" % k, x, T([6, 4] + [3] * k))
        case("conv%dd" % k, "torch.nn.functional.conv%dd" % k, T([2, 4] + sp), T([6, 4] + [3] * k, layout="cl"))
        case("conv_transpose%dd.input" % k, "torch.nn.functional.conv_transpose%dd" % k, x, T([4, 3] + [3] * k))
        case("max_pool%dd" % k, "torch.nn.functional.max_pool%dd" % k, x, 3, 2, 1)
        case("avg_pool%dd" % k, "torch.nn.functional.avg_pool%dd" % k, x, 3, 2, 1)
        if k == 2:  # adaptive_avg_pool3d is no registry op: torch's own meta kernel answers
            case("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", x, 1)
            case("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", x, 3)
        for mode in ("constant", "reflect", "replicate", "circular"):
            case("pad", "torch.nn.functional.pad", x, (1, 1) * k, mode=mode)
        case("prelu", "torch.nn.functional.prelu", x, T([4]))
        case("prelu", "torch.nn.functional.prelu", x, T([1]))
    for mode in ("nearest", "bilinear", "bicubic", "area"):
        case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 5], layout="cl"), scale_factor=1.5, mode=mode)
    case("interpolate", "torch.nn.functional.interpolate", T([2, 3, 4, 5, 3], layout="cl"), scale_factor=1.5, mode="trilinear")
    case("prelu", "torch.nn.functional.prelu", T([2, 3, 5], layout="t"), T([3]))
    case("pow.Tensor_Tensor", "operator.pow", 2, T([2, 3], layout="t"))
    case("pow.Tensor_Tensor", "torch.pow", 2, T([2, 3], layout="t"))
    case("pow.Tensor_Tensor", "operator.pow", 2.5, T([3, 4], layout="t"))
    for idt in (i32, i16):
        case("getitem", "operator.getitem", T([4, 5]), T([2], dtype=idt, lo=0, hi=4))
        case("gather", "torch.gather", T([4, 5]), 1, T([4, 2], dtype=idt, lo=0, hi=5))
        case("scatter.src", "torch.scatter", T([4, 5]), 1, T([4, 2], dtype=idt, lo=0, hi=5), 1.0)
        case("scatter_add", "torch.scatter_add", T([4, 5]), 1, T([4, 2], dtype=idt, lo=0, hi=5), T([4, 2]))
        case("index_select", "torch.index_select", T([4, 5]), 0, T([2], dtype=idt, lo=0, hi=4))
    case("where.method", "Tensor.where", T([2, 3]), T([2, 3], dtype=b8), 0)
    case("where.method", "Tensor.where", T([2, 3]), T([2, 3], dtype=b8), 1.5)
    for dt in (f64, f32, f16, c64):
        case("norm", "torch.norm", T([4, 3]), dtype=dt)
        case("norm", "torch.norm", T([4, 3]), 3, dtype=dt)
        case("norm", "torch.norm", T([4, 3]), "fro", dim=1, dtype=dt)
        case("norm", "torch.norm", T([4, 3]), "nuc", dtype=dt)
    case("norm", "torch.norm", T([4, 3], dtype=c64), dtype=torch.complex128)
    case("norm", "torch.norm", T([4, 3], dtype=c64), dtype=f32)
    for a, b in ((bf16, f32), (f16, f32), (f32, bf16), (f64, f32), (f16, bf16)):
        case("layer_norm", "torch.nn.functional.layer_norm", T([2, 4], dtype=a), [4], T([4], dtype=b))
        case("layer_norm", "torch.nn.functional.layer_norm", T([2, 4], dtype=a), [4], T([4], dtype=b), T([4], dtype=b))
        case("group_norm", "torch.nn.functional.group_norm", T([2, 4, 3], dtype=a), 2, T([4], dtype=b), T([4], dtype=b))
    case("layer_norm", "torch.nn.functional.layer_norm", T([2, 4], dtype=bf16), [4], T([4]), T([4], dtype=bf16))
    for n in (1, 2, 3):
        case("max_pool1d", "torch.nn.functional.max_pool1d", T([2, 3, n]), 2)
    # torch's fused inference kernels (nn.TransformerEncoderLayer, nn.MultiheadAttention)
    E, H, FF = 8, 2, 16
    for src in (T([2, 5, E]), T([3, 1, E]), T([2, 5, E], layout="t")):
        w = (E, H, T([3 * E, E]), T([3 * E]), T([E, E]), T([E]))
        norms = (T([E]), T([E]), T([E]), T([E]), T([FF, E]), T([FF]), T([E, FF]), T([E]))
        case("_transformer_encoder_layer_fwd", "torch._transformer_encoder_layer_fwd", src, *w, False, False, 1e-5, *norms)
        case("_transformer_encoder_layer_fwd", "torch._transformer_encoder_layer_fwd", src, *w, True, True, 1e-5, *norms)
        for nw in (True, False):
            for avg in (True, False):
                case("_native_multi_head_attention", "torch._native_multi_head_attention", src, src, src, *w, None, nw, avg)
    case("_transformer_encoder_layer_fwd", "torch._transformer_encoder_layer_fwd", T([5, E]), E, H, T([3 * E, E]), T([3 * E]),
         T([E, E]), T([E]), False, False, 1e-5, T([E]), T([E]), T([E]), T([E]), T([FF, E]), T([FF]), T([E, FF]), T([E]))
    case("_native_multi_head_attention", "torch._native_multi_head_attention", T([2, 5, E]), T([2, 5, E]), T([2, 5, E]), E, H,
         T([3 * E, E]), T([3 * E]), T([E, E]), T([E]), need_weights=False)
    if hasattr(F, "scaled_dot_product_attention"):  # torch 2
        op, sdpa = "scaled_dot_product_attention", "torch.nn.functional.scaled_dot_product_attention"
        q, k, v = T([2, 3, 4, 8]), T([2, 3, 5, 8]), T([2, 3, 5, 6])
        case(op, sdpa, q, k, v)
        case(op, sdpa, T([2, 3, 4, 8], layout="t"), k, T([2, 3, 5, 6], layout="p"))
        case(op, sdpa, q, k, v, is_causal=True)
        case(op, sdpa, q, k, v, T([4, 5], dtype=b8))
        case(op, sdpa, q, k, v, T([2, 1, 4, 5]))
        case(op, sdpa, q, k, v, T([4, 5], dtype=b8), is_causal=True)
        case(op, sdpa, q, k, v, T([4, 5], dtype=i64))
        case(op, sdpa, q, T([1, 3, 5, 8]), T([2, 1, 5, 6]))
        case(op, sdpa, T([4, 8], rg=True), T([5, 8]), T([5, 6]), scale=0.5)
        case(op, sdpa, T([3, 4, 8], dtype=f64), T([3, 5, 8], dtype=f64), T([3, 5, 6], dtype=f64))
        case(op, sdpa, T([3, 4, 8]), T([3, 5, 8], dtype=f64), T([3, 5, 6]))
        case(op, sdpa, T([3, 4, 8]), T([3, 5, 7]), T([3, 5, 6]))
        case(op, sdpa, T([3, 4, 8]), T([3, 5, 8]), T([3, 6, 6]))
        case(op, sdpa, q, k, v, dropout_p=0.5)


# ---------------------------------------------------------------------------------------------
# Type promotion.

def gen_promotion():
    cases = []
    scalars = [True, 3, 2.5, 1 + 2j]
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            cases.append({"kind": "promote_types", "a": DT[a], "b": DT[b], "out": DT[torch.promote_types(a, b)]})
            for ka in ["dim", "zero"]:
                for kb in ["dim", "zero"]:
                    x = torch.zeros([2] if ka == "dim" else [], dtype=a)
                    y = torch.zeros([2] if kb == "dim" else [], dtype=b)
                    cases.append({"kind": "result_type", "a": [DT[a], ka], "b": [DT[b], kb], "out": DT[torch.result_type(x, y)]})
        for ka in ["dim", "zero"]:
            x = torch.zeros([2] if ka == "dim" else [], dtype=a)
            for s in scalars:
                enc = Enc().val(s)
                cases.append({"kind": "result_type", "a": [DT[a], ka], "b": ["scalar", enc], "out": DT[torch.result_type(x, s)]})
                try:
                    r = DT[(x + s).dtype]
                except Exception as e:  # noqa: BLE001
                    r = None
                cases.append({"kind": "add", "a": [DT[a], ka], "b": ["scalar", enc], "out": r})
    # Three tensors (dimensioned or 0-dim) through addcmul's TensorIterator, which promotes all
    # its operands together.
    for _ in range(300):
        ops, enc_ops = [], []
        for _ in range(3):
            k = R.choice(["dim", "zero"])
            d = R.choice(ALL_DTYPES)
            ops.append(torch.zeros([2] if k == "dim" else [], dtype=d))
            enc_ops.append([DT[d], k])
        try:
            out = DT[torch.addcmul(*ops, value=1).dtype]
        except Exception:  # noqa: BLE001 - some dtype mixes have no kernel
            continue
        cases.append({"kind": "result_type3", "ops": enc_ops, "out": out})
    return cases


def gen_complex():
    # (no random layouts: the generators before keep their draws)
    for dt in [f32, f64]:
        for lay in ["c", "t"]:
            case("complex", "torch.complex", T([3, 4, 2], dt, lay), T([3, 4, 2], dt, lay))
        case("complex", "torch.complex", T([3, 1], dt), T([4], dt))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    # One golden file per torch version ptgo is tested against (primtorch.Torch113, Torch214).
    major, minor = (int("".join(c for c in p if c.isdigit()) or 0) for p in torch.__version__.split("+")[0].split(".")[:2])
    suffix = "_%d_%d" % (major, minor)
    for gen in [gen_unary, gen_binary, gen_ternary, gen_reductions, gen_norm, gen_linalg, gen_conv,
                gen_views, gen_getitem, gen_join, gen_index, gen_factories, gen_casts, gen_losses,
                gen_misc, gen_out, gen_sweep, gen_versions, gen_complex]:
        gen()
    with open(outdir + "/meta_cases%s.json" % suffix, "w") as f:
        f.write("[\n")
        for i, c in enumerate(CASES):
            f.write(json.dumps(c, sort_keys=True, separators=(",", ":"), allow_nan=False))
            f.write(",\n" if i + 1 < len(CASES) else "\n")
        f.write("]\n")
    prom = gen_promotion()
    with open(outdir + "/promotion%s.json" % suffix, "w") as f:
        f.write("[\n")
        for i, c in enumerate(prom):
            f.write(json.dumps(c, sort_keys=True, separators=(",", ":")))
            f.write(",\n" if i + 1 < len(prom) else "\n")
        f.write("]\n")
    print("gen_meta_cases: %d cases (%d dropped as kernel dtype gaps), %d promotion cases" % (
        len(CASES), DROPPED[0], len(prom)), file=sys.stderr)


if __name__ == "__main__":
    main()
