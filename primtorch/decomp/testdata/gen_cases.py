#!/usr/bin/python3
"""Records eager PyTorch's results for the decomposition tests of primtorch/decomp.

Run with the torch interpreter (/usr/bin/python3), normally through
    go test ./primtorch/decomp -update

Every case is a small torch-level graph: input tensors (values and exact layouts: storage,
shape, strides, storage offset), get_attr buffers, a list of calls (target, arguments with
references to inputs and earlier calls, keyword arguments) and the outputs. The script runs the
calls eagerly and writes torch's outputs and the inputs' and buffers' values after the calls
(in-place ops, running statistics). The Go test builds the same graph with metas from the op
registry, decomposes it, runs it with the reference interpreter and compares.

A case tagged "fallback" is expected to keep a prims.fallback (dropout in training, ...): the
Go test checks the fallback is there and skips the values. Calls torch rejects are dropped
(reported on stderr), so a case list can try dtypes freely.

Usage: gen_cases.py OUTDIR (writes cases_<major>_<minor>.json for the running torch: one file
per torch version ptgo is tested against, PTGO_PYTHON=.venv-torch2/bin/python for torch 2's)
"""
import json
import math
import os
import operator
import sys
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(1234)

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, i16, i8, u8, b8 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool
DT = {b8: "b8", u8: "u8", i8: "i8", i16: "i16", i32: "i32", i64: "i64", f16: "f16", bf16: "bf16",
      f32: "f32", f64: "f64"}

# ---------------------------------------------------------------------------------------------
# Inputs: a tensor is its storage values plus a geometry, so Python and Go build the same one.


class Inp:
    """An input tensor: values of a storage and the view of it the graph receives."""

    def __init__(self, storage, shape, strides, offset, dtype):
        self.storage, self.shape, self.strides, self.offset, self.dtype = storage, shape, strides, offset, dtype

    def make(self):
        base = torch.tensor(self.storage, dtype=self.dtype) if self.storage else torch.zeros(0, dtype=self.dtype)
        return base.as_strided(self.shape, self.strides, self.offset)


def values(n, dtype, lo=-3.0, hi=3.0):
    if dtype == b8:
        return torch.rand(n) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(n, dtype=f64) * (hi - lo) + lo).to(dtype)
    return torch.randint(int(lo), int(hi) + 1, (n,)).to(dtype)


def contig(shape):
    st, acc = [0] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        st[i] = acc
        acc *= max(shape[i], 1)
    return st


def T(*shape, dtype=f32, layout="c", lo=-3.0, hi=3.0, vals=None):
    """A tensor of shape with layout "c" (contiguous), "t" (last two dims transposed in memory),
    "s" (every other element of a twice-larger last dim, storage offset 1) or "e" (first dim
    expanded from size 1, stride 0)."""
    shape = list(shape)
    n = 1
    for s in shape:
        n *= s
    if layout == "c":
        st, off, size = contig(shape), 0, n
    elif layout == "t":
        sw = shape[:-2] + [shape[-1], shape[-2]]
        st = contig(sw)
        st[-1], st[-2] = st[-2], st[-1]
        off, size = 0, n
    elif layout == "s":
        big = shape[:-1] + [2 * shape[-1] + 1]
        st = contig(big)
        st[-1] = 2
        off, size = 1, 1
        for s in big:
            size *= s
    elif layout == "e":
        st = contig([1] + shape[1:])
        st[0] = 0
        off, size = 0, n // max(shape[0], 1) if shape[0] else 0
    else:
        raise ValueError(layout)
    v = vals if vals is not None else values(size, dtype, lo, hi).tolist()
    return Inp(v, shape, st, off, dtype)


def S(v, dtype=f32):
    """A tensor built from a (nested) list."""
    t = torch.tensor(v, dtype=dtype)
    return Inp(t.reshape(-1).tolist(), list(t.shape), contig(list(t.shape)), 0, dtype)


# ---------------------------------------------------------------------------------------------
# Graphs.


class Ref:
    def __init__(self, name, index=None):
        self.name, self.index = name, index

    def __getitem__(self, i):
        return Ref(self.name, i)


class G:
    def __init__(self, op, tag=""):
        self.op, self.tag = op, tag
        self.inputs, self.attrs, self.nodes, self.outs = [], [], [], []
        self.fallback = False
        self.novalues = False

    def inp(self, t):
        name = "x%d" % len(self.inputs)
        self.inputs.append((name, t))
        return Ref(name)

    def attr(self, path, t):
        self.attrs.append((path, t))
        return Ref(path)

    def call(self, target, *args, **kwargs):
        name = "n%d" % len(self.nodes)
        self.nodes.append((name, target, args, kwargs))
        return Ref(name)

    def out(self, *refs):
        self.outs.extend(refs)
        return self


CASES = []
DROPPED = []


def resolve(target):
    if target.startswith("Tensor."):
        name = target[len("Tensor."):]
        return lambda *a, **k: getattr(a[0], name)(*a[1:], **k)
    if target.startswith("operator."):
        return getattr(operator, target[len("operator."):])
    obj = torch
    for part in target.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def enc_float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def enc_tensor(t):
    t = t.detach()
    vals = t.reshape(-1).tolist() if t.dim() else [t.item()]
    if t.dtype.is_floating_point:
        vals = [enc_float(float(v)) for v in vals]
    elif t.dtype == b8:
        vals = [1 if v else 0 for v in vals]
    return {"dtype": DT[t.dtype], "shape": list(t.shape), "strides": list(t.stride()), "values": vals}


def enc_inp(name, i):
    vals = i.storage
    if i.dtype.is_floating_point:
        vals = [enc_float(float(v)) for v in vals]
    elif i.dtype == b8:
        vals = [1 if v else 0 for v in vals]
    return {"name": name, "dtype": DT[i.dtype], "shape": i.shape, "strides": i.strides, "offset": i.offset, "storage": vals}


def enc_arg(a):
    if isinstance(a, Ref):
        r = {"ref": a.name}
        if a.index is not None:
            r["index"] = a.index
        return r
    if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
        return a
    if isinstance(a, float):
        v = enc_float(a)
        return {"f": v} if isinstance(v, str) else v
    if isinstance(a, torch.dtype):
        return {"dtype": DT[a]}
    if isinstance(a, torch.memory_format):
        return {"mf": str(a).replace("torch.", "")}
    if isinstance(a, tuple):
        return {"tuple": [enc_arg(e) for e in a]}
    if isinstance(a, list):
        return [enc_arg(e) for e in a]
    if isinstance(a, slice):
        return {"slice": [a.start, a.stop, a.step]}
    if a is Ellipsis:
        return {"ellipsis": True}
    raise TypeError(type(a))


def run(g):
    env = {}
    made = {}
    for name, i in g.inputs:
        made[name] = i.make()
        env[name] = made[name]
    for path, i in g.attrs:
        made[path] = i.make()
        env[path] = made[path]

    def val(a):
        if isinstance(a, Ref):
            v = env[a.name]
            return v[a.index] if a.index is not None else v
        if isinstance(a, tuple):
            return tuple(val(e) for e in a)
        if isinstance(a, list):
            return [val(e) for e in a]
        return a

    torch.manual_seed(0)
    for name, target, args, kwargs in g.nodes:
        env[name] = resolve(target)(*[val(a) for a in args], **{k: val(v) for k, v in kwargs.items()})
    outs = []
    for r in g.outs:
        v = val(r)
        if isinstance(v, (tuple, list)):
            outs.extend(v)
        else:
            outs.append(v)
    return outs, made


def add(g):
    try:
        outs, made = run(g)
    except Exception as e:  # torch rejects the call: not a case
        DROPPED.append("%s[%s]: %s" % (g.op, g.tag, str(e).split("\n")[0][:100]))
        return
    c = {
        "op": g.op, "tag": g.tag,
        "inputs": [enc_inp(n, i) for n, i in g.inputs],
        "attrs": [enc_inp(p, i) for p, i in g.attrs],
        "nodes": [{"name": n, "target": t, "args": [enc_arg(a) for a in args],
                   "kwargs": {k: enc_arg(v) for k, v in kw.items()}} for n, t, args, kw in g.nodes],
        "outputs": [enc_arg(r) for r in g.outs],
        "expect": [enc_tensor(o) for o in outs],
        "after": {n: enc_tensor(made[n]) for n, _ in g.inputs + g.attrs},
    }
    if g.fallback:
        c["fallback"] = True
    if g.novalues or g.op in ("empty", "empty_like", "new_empty", "empty_strided"):
        c["novalues"] = True  # uninitialized memory: keep the metas, not the values
        for e in c["expect"]:
            e["values"] = []
    CASES.append(c)


def one(op, target, *args, tag="", **kwargs):
    """A one-call case: Inp arguments become graph inputs (also inside lists)."""
    g = G(op, tag)

    def conv(a):
        if isinstance(a, Inp):
            return g.inp(a)
        if isinstance(a, list):
            return [conv(e) for e in a]
        if isinstance(a, tuple):
            return tuple(conv(e) for e in a)
        return a

    r = g.call(target, *[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
    add(g.out(r))


def inplace(op, target, *args, tag="", **kwargs):
    """An in-place call on an input (functionalized with a copy_ epilogue) returning a clone,
    and the same call on a clone of the input (an intermediate)."""
    for on_input in (True, False):
        g = G(op, tag + ("input" if on_input else "intermediate"))
        ins = [g.inp(a) if isinstance(a, Inp) else a for a in args]
        if not on_input:
            ins[0] = g.call("torch.clone", ins[0])
        r = g.call(target, *ins, **kwargs)
        add(g.out(g.call("torch.clone", r)) if on_input else g.out(r))


# ---------------------------------------------------------------------------------------------
# Cases by group.

UNARY_FLOAT = ["exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos",
               "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
               "sigmoid", "erf", "erfc", "reciprocal"]
POSITIVE = {"log", "log1p", "log2", "log10", "sqrt", "rsqrt", "acosh"}
UNIT = {"asin", "acos", "atanh"}


def unary_inputs(name):
    lo, hi = -3.0, 3.0
    if name in POSITIVE:
        lo, hi = (1.0, 4.0) if name == "acosh" else (0.1, 4.0)
    if name in UNIT:
        lo, hi = -0.95, 0.95
    return lo, hi


def gen_unary():
    for name in UNARY_FLOAT:
        lo, hi = unary_inputs(name)
        op = name
        one(op, "torch." + name, T(3, 4, lo=lo, hi=hi), tag="f32")
        one(op, "Tensor." + name, T(2, 3, dtype=f64, layout="t", lo=lo, hi=hi), tag="f64t")
        one(op, "torch." + name, T(5, dtype=bf16, lo=lo, hi=hi), tag="bf16")
        if name not in POSITIVE | UNIT:
            one(op, "torch." + name, T(2, 3, dtype=i64, lo=-2, hi=2), tag="int")
        inplace(name + "_", "Tensor." + name + "_", T(2, 3, layout="s", lo=lo, hi=hi))
    for name in ["abs", "neg", "floor", "ceil", "trunc", "frac", "sign", "sgn", "square", "round"]:
        one(name, "torch." + name, T(3, 4, layout="s"), tag="f32s")
        one(name, "torch." + name, T(2, 3, dtype=i32), tag="i32")
        one(name, "Tensor." + name, T(4, dtype=f64, vals=[-2.5, -0.5, 0.5, 1.5]), tag="half")
        if name not in ("sgn",):
            inplace(name + "_", "Tensor." + name + "_", T(2, 3))
    one("sign", "torch.sign", S([float("nan"), -0.0, 3.0, -1.0]), tag="nan")
    one("abs", "operator.abs", T(3), tag="operator")
    one("neg", "operator.neg", T(3, dtype=i64), tag="operator")
    one("round", "torch.round", T(3, 4, lo=-100, hi=100), decimals=2, tag="decimals")
    one("round", "torch.round", T(3, 4, lo=-1000, hi=1000), decimals=-2, tag="negdecimals")
    one("signbit", "torch.signbit", S([-0.0, 0.0, -1.0, 2.0, float("-inf")]), tag="f32")
    one("signbit", "torch.signbit", T(4, dtype=i64), tag="int")
    one("positive", "torch.positive", T(2, 3), tag="f32")
    for name in ["logical_not", "isnan", "isinf", "isfinite", "isposinf", "isneginf"]:
        one(name, "torch." + name, S([1.0, float("nan"), float("inf"), -float("inf"), 0.0]), tag="special")
        one(name, "torch." + name, T(2, 3, dtype=i32), tag="int")
    inplace("logical_not_", "Tensor.logical_not_", T(2, 3, dtype=b8))
    one("bitwise_not", "torch.bitwise_not", T(2, 3, dtype=i32), tag="i32")
    one("bitwise_not", "operator.invert", T(2, 3, dtype=b8), tag="bool")
    inplace("bitwise_not_", "Tensor.bitwise_not_", T(4, dtype=i64))
    one("nan_to_num", "torch.nan_to_num", S([1.0, float("nan"), float("inf"), -float("inf")]), tag="default")
    one("nan_to_num", "torch.nan_to_num", S([1.0, float("nan"), float("inf"), -float("inf")], dtype=f64), nan=0.5, posinf=9.0, neginf=-9.0, tag="given")
    inplace("nan_to_num_", "Tensor.nan_to_num_", S([1.0, float("nan")]))
    one("logit", "torch.logit", T(3, 4, lo=0.05, hi=0.95), tag="plain")
    one("logit", "torch.logit", T(3, 4, lo=0.0, hi=1.0), eps=0.1, tag="eps")
    inplace("logit_", "Tensor.logit_", T(3, lo=0.1, hi=0.9))
    one("clamp", "torch.clamp", T(3, 4), min=-1.0, max=0.5, tag="numbers")
    one("clamp", "torch.clamp", T(3, 4, dtype=i64), min=-1, tag="int_min")
    one("clamp", "torch.clamp", T(3, 4), T(4), T(3, 1), tag="tensors")
    one("clamp", "torch.clip", T(3, 4, dtype=i32), max=1.5, tag="int_float_max")
    inplace("clamp_", "Tensor.clamp_", T(2, 3), min=0.0)
    one("clamp_min", "torch.clamp_min", T(3, 4), 0.25, tag="number")
    one("clamp_max", "torch.clamp_max", T(3, 4), T(4), tag="tensor")
    inplace("clamp_min_", "Tensor.clamp_min_", T(3), -0.5)
    inplace("clamp_max_", "Tensor.clamp_max_", T(3), 0.5)


ACTS = {
    "relu": ("torch.nn.functional.relu", {}), "relu6": ("torch.nn.functional.relu6", {}),
    "gelu": ("torch.nn.functional.gelu", {}), "silu": ("torch.nn.functional.silu", {}),
    "mish": ("torch.nn.functional.mish", {}), "elu": ("torch.nn.functional.elu", {"alpha": 0.7}),
    "selu": ("torch.selu", {}), "celu": ("torch.celu", {"alpha": 1.3}),
    "leaky_relu": ("torch.nn.functional.leaky_relu", {"negative_slope": 0.2}),
    "hardtanh": ("torch.nn.functional.hardtanh", {"min_val": -0.5, "max_val": 2.0}),
    "hardsigmoid": ("torch.nn.functional.hardsigmoid", {}), "hardswish": ("torch.nn.functional.hardswish", {}),
    "softplus": ("torch.nn.functional.softplus", {"beta": 2, "threshold": 3}),
    "log_sigmoid": ("torch.nn.functional.logsigmoid", {}), "softsign": ("torch.nn.functional.softsign", {}),
    "tanhshrink": ("torch.nn.functional.tanhshrink", {}), "hardshrink": ("torch.nn.functional.hardshrink", {"lambd": 0.7}),
    "softshrink": ("torch.nn.functional.softshrink", {"lambd": 0.7}),
    "threshold": ("torch.nn.functional.threshold", {"threshold": 0.3, "value": -2.0}),
}


def gen_activations():
    for op, (target, kw) in ACTS.items():
        one(op, target, T(3, 5, lo=-5, hi=5), tag="f32", **kw)
        one(op, target, T(2, 3, dtype=f64, layout="t", lo=-5, hi=5), tag="f64t", **kw)
        one(op, target, T(4, dtype=bf16, lo=-4, hi=4), tag="bf16", **kw)
    one("relu", "torch.relu", T(2, 3, dtype=i64), tag="int")
    one("relu", "Tensor.relu", T(2, 3, layout="e"), tag="method")
    one("gelu", "torch.nn.functional.gelu", T(3, 5, lo=-5, hi=5), approximate="tanh", tag="tanh")
    one("elu", "torch._C._nn.elu", T(3, 5), 0.5, 2.0, 1.5, tag="scales")
    one("softplus", "torch.nn.functional.softplus", T(8, lo=-30, hi=30), tag="default")
    for op, target, ip in [("relu_", "torch.relu_", None), ("silu_", "torch._C._nn.silu_", None),
                           ("mish_", "torch._C._nn.mish_", None), ("elu_", "torch.nn.functional.elu_", None),
                           ("selu_", "torch.selu_", None), ("celu_", "torch.celu_", None),
                           ("leaky_relu_", "torch.nn.functional.leaky_relu_", None),
                           ("hardtanh_", "torch.nn.functional.hardtanh_", None),
                           ("hardsigmoid_", "torch._C._nn.hardsigmoid_", None),
                           ("hardswish_", "torch._C._nn.hardswish_", None),
                           ("threshold_", "torch.threshold_", None)]:
        extra = (0.1, 5.0) if op == "threshold_" else ()
        inplace(op, target, T(2, 4, lo=-4, hi=4), *extra)
    g = G("relu", "inplace=True")
    x = g.inp(T(2, 3))
    y = g.call("torch.clone", x)
    add(g.out(g.call("torch.nn.functional.relu", y, inplace=True)))
    one("glu", "torch.nn.functional.glu", T(3, 6), tag="last")
    one("glu", "torch.nn.functional.glu", T(4, 3, layout="t"), dim=0, tag="dim0")
    one("prelu", "torch.nn.functional.prelu", T(2, 3, 4, lo=-2, hi=2), T(3, lo=0, hi=1), tag="channels")
    one("prelu", "torch.prelu", T(2, 3), T(1), tag="single")


BINARY = {
    "add.Tensor": "torch.add", "sub.Tensor": "torch.sub", "mul.Tensor": "torch.mul",
    "div.Tensor_mode": "torch.div", "floor_divide": "torch.floor_divide", "remainder.Tensor": "torch.remainder",
    "fmod.Tensor": "torch.fmod", "maximum": "torch.maximum", "minimum": "torch.minimum", "fmax": "torch.fmax",
    "fmin": "torch.fmin", "atan2": "torch.atan2", "hypot": "torch.hypot", "copysign.Tensor": "torch.copysign",
    "xlogy.Tensor": "torch.xlogy", "logaddexp": "torch.logaddexp", "eq.Tensor": "torch.eq", "ne.Tensor": "torch.ne",
    "lt.Tensor": "torch.lt", "le.Tensor": "torch.le", "gt.Tensor": "torch.gt", "ge.Tensor": "torch.ge",
    "logical_and": "torch.logical_and", "logical_or": "torch.logical_or", "logical_xor": "torch.logical_xor",
}


def gen_binary():
    for op, target in BINARY.items():
        one(op, target, T(3, 4), T(4), tag="broadcast")
        one(op, target, T(2, 3, layout="t"), T(2, 3, dtype=f64, layout="s"), tag="promote")
        one(op, target, T(2, 3, dtype=i64), T(2, 3, dtype=i32, lo=1, hi=4), tag="int")
        one(op, target, T(4, dtype=bf16), T(4, dtype=bf16), tag="bf16")
        one(op, target, T(3, dtype=b8), T(3, dtype=b8), tag="bool")
    for op, target in [("add.Tensor", "operator.add"), ("sub.Tensor", "operator.sub"), ("mul.Tensor", "operator.mul"),
                       ("div.Tensor_mode", "operator.truediv"), ("floor_divide", "operator.floordiv"),
                       ("remainder.Tensor", "operator.mod"), ("pow.Tensor_Tensor", "operator.pow"),
                       ("eq.Tensor", "operator.eq"), ("lt.Tensor", "operator.lt")]:
        one(op, target, T(2, 3, dtype=i64, lo=1, hi=5), 2.5, tag="int_float_number")
        one(op, target, T(2, 3), 3, tag="float_int_number")
        one(op, target, 2, T(3, dtype=i32, lo=1, hi=4), tag="reflected")
    one("add.Tensor", "torch.add", T(2, 3), T(3), alpha=2.5, tag="alpha")
    one("add.Tensor", "torch.add", T(2, 3, dtype=i64), T(3, dtype=i64), alpha=3, tag="int_alpha")
    one("sub.Tensor", "torch.sub", T(2, 3), T(2, 1), alpha=-0.5, tag="alpha")
    one("rsub.Tensor", "torch.rsub", T(2, 3), T(3), alpha=2, tag="alpha")
    one("rsub.Tensor", "torch.rsub", T(2, 3), 1.5, tag="number")
    one("div.Tensor_mode", "torch.div", T(3, 4, lo=-9, hi=9), T(4, lo=0.5, hi=3), rounding_mode="trunc", tag="trunc")
    one("div.Tensor_mode", "torch.div", T(3, 4, lo=-9, hi=9), T(4, lo=-3, hi=-0.5), rounding_mode="floor", tag="floor")
    one("div.Tensor_mode", "torch.div", T(3, 4, dtype=i64, lo=-9, hi=9), T(4, dtype=i64, lo=1, hi=3), rounding_mode="trunc", tag="int_trunc")
    one("div.Tensor_mode", "torch.div", T(3, 4, dtype=i64, lo=-9, hi=9), T(4, dtype=i64, lo=-3, hi=-1), rounding_mode="floor", tag="int_floor")
    one("remainder.Tensor", "torch.remainder", T(3, 4, dtype=i64, lo=-9, hi=9), T(4, dtype=i64, lo=-3, hi=-1), tag="int_neg")
    one("fmod.Tensor", "torch.fmod", T(3, 4, dtype=i64, lo=-9, hi=9), T(4, dtype=i64, lo=-3, hi=-1), tag="int_neg")
    one("pow.Tensor_Tensor", "torch.pow", T(3, 4, lo=0.5, hi=2), T(4, lo=-2, hi=2), tag="f32")
    one("pow.Tensor_Tensor", "torch.pow", T(3, 4, dtype=i64, lo=-3, hi=3), T(4, dtype=i64, lo=0, hi=3), tag="int")
    for e in [2, 3, 0.5, -0.5, -1, -2, 1.7]:
        one("pow.Tensor_Tensor", "torch.pow", T(2, 3, lo=0.2, hi=3), e, tag="exp%s" % e)
    one("pow.Tensor_Tensor", "torch.pow", 2, T(2, 3), tag="number_base")
    one("pow.Tensor_Tensor", "torch.pow", T(4, dtype=b8), 2, tag="bool")
    one("xlogy.Tensor", "torch.xlogy", S([0.0, 1.0, 2.0, 0.0]), S([float("nan"), 2.0, 0.0, 0.0]), tag="special")
    one("fmax", "torch.fmax", S([float("nan"), 1.0, float("nan")]), S([2.0, float("nan"), float("nan")]), tag="nan")
    one("maximum", "torch.maximum", S([float("nan"), 1.0]), S([2.0, float("nan")]), tag="nan")
    one("logaddexp", "torch.logaddexp", S([float("inf"), -float("inf"), 1.0]), S([float("inf"), -float("inf"), 2.0]), tag="inf")
    for name, target in [("bitwise_and.Tensor", "torch.bitwise_and"), ("bitwise_or.Tensor", "torch.bitwise_or"),
                         ("bitwise_xor.Tensor", "torch.bitwise_xor"), ("bitwise_left_shift.Tensor", "torch.bitwise_left_shift"),
                         ("bitwise_right_shift.Tensor", "torch.bitwise_right_shift")]:
        one(name, target, T(3, 4, dtype=i32, lo=-20, hi=20), T(4, dtype=i32, lo=0, hi=4), tag="i32")
        one(name, target, T(3, dtype=u8, lo=0, hi=200), 2, tag="u8_number")
    one("bitwise_and.Tensor", "operator.and_", T(3, dtype=b8), T(3, dtype=b8), tag="bool")
    one("bitwise_or.Tensor", "operator.or_", T(3, dtype=i64), 6, tag="number")
    for op, target, b in [("add_.Tensor", "Tensor.add_", T(4)), ("sub_.Tensor", "Tensor.sub_", T(1)),
                          ("mul_.Tensor", "Tensor.mul_", 1.5), ("div_.Tensor_mode", "Tensor.div_", T(3, 4, lo=1, hi=2)),
                          ("floor_divide_", "Tensor.floor_divide_", T(4, lo=1, hi=2)),
                          ("remainder_.Tensor", "Tensor.remainder_", 0.7), ("fmod_.Tensor", "Tensor.fmod_", 0.7),
                          ("pow_.Tensor_Tensor", "Tensor.pow_", 2), ("atan2_", "Tensor.atan2_", T(4)),
                          ("hypot_", "Tensor.hypot_", T(4)), ("copysign_.Tensor", "Tensor.copysign_", T(4)),
                          ("logical_and_", "Tensor.logical_and_", T(4)), ("logical_or_", "Tensor.logical_or_", T(4)),
                          ("logical_xor_", "Tensor.logical_xor_", T(4))]:
        inplace(op, target, T(3, 4, lo=0.5, hi=3), b)
    for op, target in [("bitwise_and_.Tensor", "Tensor.bitwise_and_"), ("bitwise_or_.Tensor", "Tensor.bitwise_or_"),
                       ("bitwise_xor_.Tensor", "Tensor.bitwise_xor_"), ("bitwise_left_shift_.Tensor", "Tensor.bitwise_left_shift_"),
                       ("bitwise_right_shift_.Tensor", "Tensor.bitwise_right_shift_")]:
        inplace(op, target, T(3, 4, dtype=i64, lo=-9, hi=9), T(4, dtype=i64, lo=0, hi=3))
    g = G("add_.Tensor", "iadd")
    x = g.inp(T(2, 3))
    add(g.out(g.call("operator.iadd", g.call("torch.clone", x), 1.5)))


def gen_ternary():
    one("where.self", "torch.where", T(3, 4, dtype=b8), T(3, 4), T(4, dtype=f64), tag="promote")
    one("where.self", "torch.where", T(3, 1, dtype=b8), 1.0, T(4), tag="number")
    one("where.self", "torch.where", T(2, 3, dtype=u8, lo=0, hi=1), T(2, 3, dtype=i64), 7, tag="u8cond")
    one("where.method", "Tensor.where", T(3, 4, layout="t"), T(3, 4, dtype=b8), T(4), tag="method")
    one("masked_fill", "Tensor.masked_fill", T(3, 4), T(4, dtype=b8), -1.5, tag="number")
    one("masked_fill", "torch.masked_fill", T(3, 4, dtype=i64), T(3, 1, dtype=b8), S(9, dtype=i64), tag="tensor")
    inplace("masked_fill_", "Tensor.masked_fill_", T(3, 4), T(3, 4, dtype=b8), 0.0)
    one("lerp.Tensor", "torch.lerp", T(3, 4), T(4), T(3, 4, lo=-0.5, hi=1.5), tag="tensor")
    one("lerp.Tensor", "torch.lerp", T(3, 4), T(3, 4), 0.3, tag="small")
    one("lerp.Tensor", "torch.lerp", T(3, 4), T(3, 4), 0.8, tag="large")
    inplace("lerp_.Tensor", "Tensor.lerp_", T(3, 4), T(4), 0.25)
    one("addcmul", "torch.addcmul", T(3, 4), T(4), T(3, 1), value=0.5, tag="value")
    one("addcmul", "torch.addcmul", T(3, 4, dtype=i64), T(4, dtype=i64), T(3, 4, dtype=i64), tag="int")
    one("addcdiv", "torch.addcdiv", T(3, 4), T(4), T(3, 1, lo=1, hi=2), value=-2, tag="value")
    inplace("addcmul_", "Tensor.addcmul_", T(3, 4), T(4), T(4))
    inplace("addcdiv_", "Tensor.addcdiv_", T(3, 4), T(4), T(4, lo=1, hi=2))


def gen_reductions():
    x34, x234 = T(3, 4), T(2, 3, 4, layout="t")
    for op, target in [("sum.dim_IntList", "torch.sum"), ("nansum", "torch.nansum"), ("mean.dim", "torch.mean"),
                       ("amax", "torch.amax"), ("amin", "torch.amin")]:
        one(op, target, T(3, 4), tag="all")
        one(op, target, T(2, 3, 4, layout="t"), dim=1, tag="dim1")
        one(op, target, T(2, 3, 4), dim=(0, 2), keepdim=True, tag="dims_keep")
        one(op, target, T(2, 3, 4, layout="s"), dim=-1, tag="neg")
        one(op, target, T(3, 5, dtype=bf16), dim=1, tag="bf16")
    # a floating nansum stays torch's (its cascade drops NaN partial sums: decomp dNansum)
    for c in CASES:
        if c.get("op") == "nansum":
            c["fallback"] = True
    one("sum.dim_IntList", "torch.sum", T(3, 4, dtype=i32), dim=0, tag="int")
    one("sum.dim_IntList", "torch.sum", T(3, 4, dtype=b8), tag="bool")
    one("sum.dim_IntList", "torch.sum", T(3, 4), dim=1, dtype=f64, tag="dtype")
    one("sum.dim_IntList", "Tensor.sum", T(3, 4, dtype=f16), tag="f16")
    one("nansum", "torch.nansum", S([[1.0, float("nan")], [2.0, 3.0]]), dim=1, tag="nan")
    CASES[-1]["fallback"] = True
    one("nansum", "torch.nansum", S([[1, -2, 7], [2, 3, 5]], dtype=i32), dim=1, tag="int")
    one("mean.dim", "torch.mean", T(3, 4, dtype=f16), dim=1, tag="f16")
    one("mean.dim", "torch.mean", T(3, 4, dtype=i64), dim=1, dtype=f32, tag="int_dtype")
    one("amax", "torch.amax", T(3, 4, dtype=i64), dim=0, tag="int")
    one("amax", "torch.amax", S([[1.0, float("nan")], [2.0, 3.0]]), dim=1, tag="nan")
    one("prod.dim_int", "torch.prod", T(3, 4, lo=0.5, hi=1.5), tag="all")
    one("prod.dim_int", "torch.prod", T(3, 4, dtype=i32, lo=-2, hi=2), dim=1, keepdim=True, tag="int")
    one("max", "torch.max", T(3, 4), tag="all")
    one("max.dim", "torch.max", T(3, 4), 1, tag="dim")
    one("max.dim", "torch.max", S([[1.0, 3.0, 3.0, float("nan")], [2.0, 2.0, 1.0, 0.0]]), dim=1, keepdim=True, tag="ties_nan")
    one("max.other", "torch.max", T(3, 4), T(4), tag="other")
    one("min", "torch.min", T(3, 4, dtype=i64), tag="all")
    one("min.dim", "torch.min", T(2, 3, 4, layout="t"), dim=0, tag="dim")
    one("min.other", "torch.min", T(3, 4), T(3, 1), tag="other")
    one("argmax", "torch.argmax", T(3, 4), tag="all")
    one("argmax", "torch.argmax", T(3, 4, layout="t"), dim=0, keepdim=True, tag="dim")
    one("argmin", "torch.argmin", S([[1.0, 0.0, 0.0], [float("nan"), 2.0, -1.0]]), dim=1, tag="ties")
    one("argmin", "torch.argmin", T(3, 4, dtype=i32), tag="all")
    for op, target in [("var.correction", "torch.var"), ("std.correction", "torch.std")]:
        one(op, target, T(3, 5), tag="all")
        one(op, target, T(3, 5, layout="t"), dim=1, tag="dim")
        one(op, target, T(2, 3, 4), dim=(0, 2), unbiased=False, keepdim=True, tag="biased")
        one(op, target, T(3, 5), dim=1, correction=2, tag="correction")
        one(op, target, T(4, 6, dtype=bf16), dim=0, tag="bf16")
    one("var_mean.correction", "torch.var_mean", T(3, 5), dim=1, tag="dim")
    one("std_mean.correction", "torch.std_mean", T(3, 5, dtype=f64), unbiased=False, tag="all")
    one("logsumexp", "torch.logsumexp", T(3, 5, lo=-20, hi=20), 1, tag="dim")
    one("logsumexp", "torch.logsumexp", S([[float("inf"), 1.0], [-float("inf"), -float("inf")]]), 1, keepdim=True, tag="inf")
    one("logsumexp", "torch.logsumexp", T(3, 4, dtype=i64), 0, tag="int")
    for p in [2, 1, float("inf"), float("-inf"), 0, 3, "fro"]:
        one("norm", "torch.norm", T(3, 4), p, dim=1, tag="p%s" % p)
    one("norm", "torch.norm", T(3, 4, layout="t"), tag="default")
    one("linalg_vector_norm", "torch.linalg.vector_norm", T(3, 4), 2, dim=(0, 1), keepdim=True, tag="all")
    one("linalg_vector_norm", "torch.linalg.vector_norm", T(3, 4, dtype=bf16), 1.5, tag="bf16")
    for op, target in [("all.dim", "torch.all"), ("any.dim", "torch.any")]:
        one(op, target, T(3, 4, dtype=b8), tag="all")
        one(op, target, T(3, 4, dtype=b8), dim=1, tag="dim")
        one(op, target, T(3, 4, dtype=i64, lo=0, hi=1), dim=0, keepdim=True, tag="int")
        one(op, target, T(3, 4, dtype=u8, lo=0, hi=2), tag="u8")
    one("count_nonzero", "torch.count_nonzero", T(3, 4, dtype=i64, lo=0, hi=1), tag="all")
    one("count_nonzero", "torch.count_nonzero", T(3, 4, lo=-1, hi=1, dtype=i32), dim=1, tag="dim")
    for op, target in [("cumsum", "torch.cumsum"), ("cumprod", "torch.cumprod")]:
        one(op, target, T(3, 4, lo=0.5, hi=1.5), 1, tag="f32")
        one(op, target, T(3, 4, dtype=i32, lo=-2, hi=2), 0, tag="int")
        one(op, target, T(3, 4, layout="t"), -1, dtype=f64, tag="dtype")
        inplace(op + "_", "Tensor." + op + "_", T(3, 4, lo=0.5, hi=1.5), 0)
    for op, target in [("softmax.int", "torch.softmax"), ("log_softmax.int", "torch.log_softmax")]:
        one(op, target, T(3, 5, lo=-10, hi=10), 1, tag="dim1")
        one(op, target, T(2, 3, 4, layout="t", lo=-10, hi=10), 0, tag="dim0")
        one(op, "torch.nn.functional." + op.split(".")[0], T(2, 3, 4), tag="legacy_dim")
        one(op, "torch.nn.functional." + op.split(".")[0], T(3, 5), dim=-1, dtype=f64, tag="dtype")
        one(op, target, T(4, 6, dtype=bf16, lo=-5, hi=5), 1, tag="bf16")
        one(op, target, S([[1.0, float("-inf"), 2.0]]), 1, tag="neginf")


def gen_norm():
    one("layer_norm", "torch.nn.functional.layer_norm", T(3, 8), [8], T(8), T(8), tag="affine")
    one("layer_norm", "torch.nn.functional.layer_norm", T(2, 3, 4, layout="t"), [3, 4], tag="plain")
    one("layer_norm", "torch.nn.functional.layer_norm", T(4, 6, dtype=bf16), [6], T(6, dtype=bf16), T(6, dtype=bf16), eps=1e-3, tag="bf16")
    if not hasattr(torch, "compile"):
        # torch 1.13's reduced-float layer_norm kernel computes other values than its float32
        # statistics would give: torch runs it (torch_behavior.go, LayerNormReducedFloatOpmath)
        CASES[-1]["fallback"] = True
    one("group_norm", "torch.nn.functional.group_norm", T(2, 6, 5), 3, T(6), T(6), tag="affine")
    one("group_norm", "torch.nn.functional.group_norm", T(2, 4, 3, 3), 2, tag="plain")
    one("batch_norm", "torch.nn.functional.batch_norm", T(4, 3, 5), T(3), T(3, lo=0.5, hi=2), T(3), T(3), tag="eval")
    one("batch_norm", "torch.nn.functional.batch_norm", T(4, 3, 2, 2), None, None, training=True, tag="train_nostats")
    one("batch_norm", "torch.batch_norm", T(4, 3), T(3), T(3), None, None, True, 0.1, 1e-5, False, tag="train_2d")
    one("instance_norm", "torch.nn.functional.instance_norm", T(2, 3, 6), weight=T(3), bias=T(3), tag="affine")
    one("instance_norm", "torch.nn.functional.instance_norm", T(2, 3, 4), T(3), T(3, lo=0.5, hi=2), use_input_stats=False, tag="eval")
    inst = G("instance_norm", "running")
    x = inst.inp(T(2, 3, 5))
    rm, rv = inst.attr("rm", T(3)), inst.attr("rv", T(3, lo=0.5, hi=2))
    add(inst.out(inst.call("torch.nn.functional.instance_norm", x, rm, rv, momentum=0.2)))
    # BatchNorm training with running statistics as buffers (get_attr).
    for tag, shape in [("train_buffers", (4, 3, 5)), ("train_buffers_4d", (2, 3, 2, 2))]:
        g = G("batch_norm", tag)
        x = g.inp(T(*shape))
        rm, rv = g.attr("bn.running_mean", T(3)), g.attr("bn.running_var", T(3, lo=0.5, hi=2))
        w, b = g.attr("bn.weight", T(3)), g.attr("bn.bias", T(3))
        nbt = g.attr("bn.num_batches_tracked", S(0, dtype=i64))
        g.call("Tensor.add_", nbt, 1)
        add(g.out(g.call("torch.nn.functional.batch_norm", x, rm, rv, w, b, True, 0.1, 1e-5)))
    for op, target in [("dropout", "torch.nn.functional.dropout"), ("alpha_dropout", "torch.nn.functional.alpha_dropout"),
                       ("feature_dropout", "torch.nn.functional.dropout2d"), ("feature_alpha_dropout", "torch.nn.functional.feature_alpha_dropout")]:
        one(op, target, T(2, 3, 4), p=0.5, training=False, tag="eval")
    one("dropout", "torch.dropout", T(2, 3), 0.0, True, tag="p0")
    inplace("dropout_", "torch.dropout_", T(2, 3), 0.3, False)
    inplace("alpha_dropout_", "torch.alpha_dropout_", T(2, 3), 0.3, False)
    inplace("feature_dropout_", "torch.feature_dropout_", T(2, 3, 2), 0.0, True)
    g = G("dropout", "train")
    g.fallback = True
    add(g.out(g.call("torch.nn.functional.dropout", g.inp(T(4, 4)), p=0.5, training=True)))
    # Tensor.bernoulli_ draws from torch's generator: the Go tests (no probe) keep torch's call
    for tag, x, p in (("contiguous", T(4, 4), 0.3), ("transposed", T(3, 5, layout="t"), 0.8), ("f64", T(2, 3, dtype=f64), 1.0)):
        g = G("bernoulli_.float", tag)
        g.fallback = True
        add(g.out(g.call("Tensor.bernoulli_", g.call("torch.clone", g.inp(x)), p)))


def gen_linalg():
    one("matmul", "torch.matmul", T(4), T(4), tag="1x1")
    one("matmul", "torch.matmul", T(3, 4, layout="t"), T(4), tag="2x1")
    one("matmul", "torch.matmul", T(4), T(4, 5), tag="1x2")
    one("matmul", "operator.matmul", T(3, 4), T(4, 5, layout="t"), tag="2x2")
    one("matmul", "torch.matmul", T(2, 3, 4), T(4, 5), tag="3x2")
    one("matmul", "torch.matmul", T(2, 3, 4, layout="t"), T(4), tag="3x1")
    one("matmul", "torch.matmul", T(3, 4), T(2, 4, 5), tag="2x3")
    one("matmul", "torch.matmul", T(4), T(2, 4, 5), tag="1x3")
    one("matmul", "torch.matmul", T(2, 1, 3, 4), T(3, 4, 2), tag="4x3broadcast")
    one("matmul", "torch.matmul", T(2, 3, 4, dtype=f64), T(2, 4, 5, dtype=f64, layout="t"), tag="bmm_f64")
    one("mm", "torch.mm", T(3, 4), T(4, 2, layout="t"), tag="f32")
    one("mm", "torch.mm", T(3, 4, dtype=i64), T(4, 2, dtype=i64), tag="int")
    one("bmm", "torch.bmm", T(2, 3, 4), T(2, 4, 2), tag="f32")
    one("mv", "torch.mv", T(3, 4), T(4), tag="f32")
    one("dot", "torch.dot", T(5), T(5, layout="s"), tag="f32")
    one("outer", "torch.outer", T(3), T(4, dtype=f64), tag="promote")
    one("addmm", "torch.addmm", T(4), T(3, 5), T(5, 4), tag="plain")
    one("addmm", "torch.addmm", T(3, 4), T(3, 5), T(5, 4), beta=0.5, alpha=2, tag="beta_alpha")
    one("addmm", "torch.addmm", S([[float("nan")]]), T(3, 5), T(5, 4), beta=0, tag="beta0")
    inplace("addmm_", "Tensor.addmm_", T(3, 4), T(3, 5), T(5, 4))
    one("addmv", "torch.addmv", T(3), T(3, 4), T(4), alpha=0.5, tag="alpha")
    one("baddbmm", "torch.baddbmm", T(2, 3, 4), T(2, 3, 5), T(2, 5, 4), beta=2, tag="beta")
    inplace("baddbmm_", "Tensor.baddbmm_", T(2, 3, 4), T(2, 3, 5), T(2, 5, 4))
    one("addbmm", "torch.addbmm", T(3, 4), T(2, 3, 5), T(2, 5, 4), tag="plain")
    one("linear", "torch.nn.functional.linear", T(3, 5), T(4, 5), T(4), tag="2d_bias")
    one("linear", "torch.nn.functional.linear", T(2, 3, 5), T(4, 5), tag="3d_nobias")
    one("linear", "torch.nn.functional.linear", T(2, 3, 5, layout="t"), T(4, 5), T(4), tag="3d_t")
    one("linear", "torch.nn.functional.linear", T(5), T(4, 5), T(4), tag="1d")
    one("linear", "torch.nn.functional.linear", T(3, 5), T(5), tag="1d_weight")
    one("bilinear", "torch.nn.functional.bilinear", T(3, 4), T(3, 5), T(2, 4, 5), T(2), tag="bias")
    one("bilinear", "torch.nn.functional.bilinear", T(2, 3, 4), T(2, 3, 5), T(2, 4, 5), tag="3d")


def gen_conv():
    one("conv1d", "torch.nn.functional.conv1d", T(2, 4, 9), T(6, 2, 3), T(6), stride=2, padding=1, groups=2, tag="grouped")
    one("conv1d", "torch.nn.functional.conv1d", T(4, 9), T(3, 4, 3), padding="same", dilation=2, tag="same_unbatched")
    one("conv2d", "torch.nn.functional.conv2d", T(1, 3, 6, 5), T(4, 3, 3, 2), T(4), stride=(2, 1), padding=(1, 0), tag="plain")
    one("conv2d", "torch.nn.functional.conv2d", T(2, 2, 5, 5), T(2, 1, 3, 3), groups=2, dilation=2, padding="valid", tag="depthwise")
    # pointwise convolutions of one image: a matrix product plus the bias (pointwiseConvAsMm)
    one("conv2d", "torch.nn.functional.conv2d", T(1, 5, 3, 4), T(6, 5, 1, 1), T(6), tag="pointwise_mm")
    one("conv2d", "torch.nn.functional.conv2d", T(1, 5, 3, 4, dtype=f64), T(6, 5, 1, 1, dtype=f64), tag="pointwise_mm_f64")
    one("conv1d", "torch.nn.functional.conv1d", T(1, 4, 7), T(3, 4, 1), T(3), tag="pointwise_mm_1d")
    one("conv2d", "torch.nn.functional.conv2d", T(2, 5, 3, 4), T(6, 5, 1, 1), T(6), tag="pointwise_batch2")
    one("conv2d", "torch.nn.functional.conv2d", T(1, 5, 3, 4, layout="t"), T(6, 5, 1, 1), T(6), tag="pointwise_strided")
    cl = G("conv2d", "channels_last")
    x = cl.inp(T(1, 3, 4, 4))
    xc = cl.call("Tensor.contiguous", x, memory_format=torch.channels_last)
    add(cl.out(cl.call("torch.nn.functional.conv2d", xc, cl.inp(T(2, 3, 3, 3)), padding=1)))
    one("conv3d", "torch.nn.functional.conv3d", T(1, 2, 4, 4, 3), T(2, 2, 2, 2, 2), T(2), tag="plain")
    one("conv_transpose1d", "torch.nn.functional.conv_transpose1d", T(1, 4, 5), T(4, 3, 3), T(3), stride=2, padding=1, output_padding=1, tag="plain")
    one("conv_transpose2d.input", "torch.nn.functional.conv_transpose2d", T(1, 2, 3, 3), T(2, 2, 3, 3), stride=2, groups=2, tag="grouped")
    one("conv_transpose3d.input", "torch.nn.functional.conv_transpose3d", T(1, 2, 2, 2, 2), T(2, 1, 2, 2, 2), dilation=2, tag="dilated")
    one("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", T(2, 3, 4, 6), 1, tag="global")
    one("adaptive_avg_pool2d", "torch.nn.functional.adaptive_avg_pool2d", T(2, 3, 4, 6), (2, 3), tag="divisible")
    one("adaptive_avg_pool1d", "torch.nn.functional.adaptive_avg_pool1d", T(2, 3, 8), 4, tag="divisible")
    g = G("adaptive_avg_pool2d", "uneven")
    g.fallback = True
    add(g.out(g.call("torch.nn.functional.adaptive_avg_pool2d", g.inp(T(1, 2, 5, 5)), 3)))


def gen_views():
    one("view", "Tensor.view", T(2, 6), 3, -1, tag="infer")
    one("view", "Tensor.view", T(2, 3, 4, layout="s"), [2, 3, 2, 2], tag="strided")
    one("view_as", "Tensor.view_as", T(4, 3), T(2, 6), tag="plain")
    one("reshape", "torch.reshape", T(3, 4, layout="t"), (-1,), tag="copy")
    one("reshape", "Tensor.reshape", T(3, 4), 2, 6, tag="view")
    one("reshape_as", "Tensor.reshape_as", T(3, 4, layout="t"), T(12), tag="copy")
    one("flatten.using_ints", "torch.flatten", T(2, 3, 4), 1, tag="tail")
    one("flatten.using_ints", "Tensor.flatten", T(2, 3, 4, layout="t"), tag="copy")
    one("unflatten.int", "torch.unflatten", T(2, 12), 1, (3, 4), tag="plain")
    one("squeeze.dim", "torch.squeeze", T(2, 1, 3, 1), tag="all")
    one("squeeze.dim", "Tensor.squeeze", T(2, 1, 3), 1, tag="dim")
    one("squeeze.dim", "Tensor.squeeze", T(2, 3), 0, tag="noop")
    one("unsqueeze", "torch.unsqueeze", T(2, 3, layout="t"), -1, tag="last")
    one("transpose.int", "torch.transpose", T(2, 3, 4), 0, 2, tag="plain")
    one("transpose.int", "Tensor.swapaxes", T(2, 3), 0, 1, tag="swapaxes")
    one("permute", "Tensor.permute", T(2, 3, 4, layout="s"), 2, 0, 1, tag="plain")
    one("t", "torch.t", T(3, 4), tag="2d")
    one("t", "Tensor.t", T(3), tag="1d")
    one("movedim.intlist", "torch.movedim", T(2, 3, 4, 5), (0, 1), (3, 0), tag="plain")
    one("expand", "Tensor.expand", T(3, 1), 2, -1, 4, tag="plain")
    one("expand_as", "Tensor.expand_as", T(4), T(3, 4), tag="plain")
    one("broadcast_to", "torch.broadcast_to", T(1, 4, layout="s"), (3, 4), tag="plain")
    bt = G("broadcast_tensors", "plain")
    r = bt.call("torch.broadcast_tensors", bt.inp(T(3, 1)), bt.inp(T(4)))
    add(bt.out(r[0], r[1]))
    one("contiguous", "Tensor.contiguous", T(3, 4, layout="t"), tag="copy")
    one("contiguous", "Tensor.contiguous", T(3, 4), tag="noop")
    one("contiguous", "Tensor.contiguous", T(2, 3, 2, 2), memory_format=torch.channels_last, tag="channels_last")
    one("narrow", "torch.narrow", T(5, 4), 0, -3, 2, tag="plain")
    one("select.int", "torch.select", T(3, 4, layout="t"), 1, -1, tag="plain")
    for op, target, args in [("split.Tensor", "torch.split", (2,)), ("split.Tensor", "Tensor.split_with_sizes", ([1, 3, 1],)),
                             ("chunk", "torch.chunk", (3,)), ("unbind.int", "torch.unbind", ())]:
        g = G(op, target)
        r = g.call(target, g.inp(T(5, 3)), *args)
        n = {"torch.split": 3, "Tensor.split_with_sizes": 3, "torch.chunk": 3, "torch.unbind": 5}[target]
        add(g.out(*[r[i] for i in range(n)]))
    g = G("split.Tensor", "dim1")
    r = g.call("torch.split", g.inp(T(2, 5, layout="t")), 2, dim=1)
    add(g.out(r[0], r[1], r[2]))
    one("unfold", "Tensor.unfold", T(3, 7), 1, 3, 2, tag="plain")
    one("as_strided", "torch.as_strided", T(4, 4), (2, 3), (1, 2), 1, tag="plain")
    one("diagonal", "torch.diagonal", T(3, 4), 1, tag="offset")
    one("diagonal", "torch.diagonal", T(2, 3, 3, layout="t"), 0, 1, 2, tag="dims")
    one("detach", "Tensor.detach", T(3), tag="plain")


def gen_getitem():
    x = lambda: T(4, 5, 3)
    one("getitem", "operator.getitem", x(), 1, tag="int")
    one("getitem", "operator.getitem", x(), (slice(1, None, 2), -1), tag="slice_int")
    one("getitem", "operator.getitem", x(), (Ellipsis, None, slice(0, 2)), tag="ellipsis_none")
    one("getitem", "operator.getitem", x(), (slice(None), slice(-10, 10)), tag="clamped")
    one("getitem", "operator.getitem", x(), [0, 2, -1], tag="list")
    one("getitem", "operator.getitem", x(), (slice(None), S([[0, 1], [4, 3]], dtype=i64)), tag="tensor")
    one("getitem", "operator.getitem", x(), (S([0, 3], dtype=i64), slice(None), S([2, 1], dtype=i64)), tag="split_adv")
    one("getitem", "operator.getitem", T(4, 5, layout="t"), (S([1, 0], dtype=i64), S([[4], [0]], dtype=i64)), tag="broadcast_adv")
    one("getitem", "operator.getitem", x(), None, tag="none")
    one("getitem", "operator.getitem", x(), True, tag="true")
    # setitem on an input (copy_ epilogue) and on an intermediate.
    for tag, idx, v in [("int", 1, T(5, 3)), ("slice_number", (slice(None), slice(1, 3)), 2.5),
                        ("tensor_idx", (S([0, 2], dtype=i64),), T(2, 5, 3)), ("ellipsis", (Ellipsis, 0), T(5, dtype=f64)),
                        ("mask", T(4, 5, 3, dtype=b8), -1.0), ("mask_rows", (slice(None), T(5, dtype=b8)), S(7.0)),
                        ("broadcast_value", (slice(1, 3),), T(1, 1, 3))]:
        for on_input in (True, False):
            g = G("setitem", tag + ("_input" if on_input else "_intermediate"))
            xx = g.inp(T(4, 5, 3))
            vv = g.inp(v) if isinstance(v, Inp) else v
            ii = tuple(g.inp(e) if isinstance(e, Inp) else e for e in idx) if isinstance(idx, tuple) else (g.inp(idx) if isinstance(idx, Inp) else idx)
            tgt = xx if on_input else g.call("torch.clone", xx)
            g.call("operator.setitem", tgt, ii, vv)
            add(g.out(g.call("torch.mul", tgt, 2)))
    # writes through a view of an intermediate, and views read after a write.
    g = G("setitem", "view_of_intermediate")
    y = g.call("torch.clone", g.inp(T(4, 5)))
    v = g.call("Tensor.t", y)
    before = g.call("operator.getitem", y, 0)
    g.call("Tensor.add_", g.call("operator.getitem", v, (slice(1, 3),)), 10.0)
    add(g.out(y, v, before, g.call("operator.getitem", y, 0)))


def gen_join():
    one("cat", "torch.cat", [T(2, 3), T(1, 3, dtype=f64), T(0)], tag="promote_empty")
    one("cat", "torch.cat", [T(2, 3, layout="t"), T(2, 2)], dim=1, tag="dim1")
    one("stack", "torch.stack", [T(2, 3), T(2, 3)], 1, tag="dim1")
    one("hstack", "torch.hstack", [T(3), T(2)], tag="1d")
    one("hstack", "torch.hstack", [T(2, 3), T(2, 1, dtype=i64)], tag="2d")
    one("vstack", "torch.vstack", [T(3), T(2, 3)], tag="mixed")
    one("repeat", "Tensor.repeat", T(2, 3, layout="t"), 2, 1, 3, tag="lead")
    one("tile", "torch.tile", T(2, 3), (2,), tag="short")
    one("repeat_interleave.self_int", "torch.repeat_interleave", T(2, 3), 2, dim=1, tag="dim")
    one("repeat_interleave.self_int", "torch.repeat_interleave", T(2, 3, dtype=i64), 3, tag="flat")
    one("flip", "torch.flip", T(2, 3, 4, layout="t"), (0, 2), tag="plain")
    one("roll", "torch.roll", T(3, 4), (1, -5), (0, 1), tag="dims")
    one("roll", "torch.roll", T(3, 4), 5, tag="flat")
    one("tril", "torch.tril", T(3, 4), tag="plain")
    one("tril", "torch.tril", T(2, 3, 4, dtype=i64), -1, tag="batched")
    one("triu", "torch.triu", T(4, 3, layout="t"), 1, tag="plain")
    inplace("tril_", "Tensor.tril_", T(3, 3))
    inplace("triu_", "Tensor.triu_", T(3, 3), 1)


def gen_index():
    idx = S([[0, 2, 1], [1, 0, 2]], dtype=i64)
    one("gather", "torch.gather", T(2, 3), 1, idx, tag="dim1")
    one("gather", "torch.gather", T(3, 4, layout="t"), 0, S([[0, 2], [1, 1]], dtype=i64), tag="dim0")
    one("scatter.src", "torch.scatter", T(2, 3), 1, idx, T(2, 4), tag="src")
    one("scatter.src", "torch.scatter", T(3, 3), 0, S([[2, 0, 1]], dtype=i64), 9.0, tag="value")
    inplace("scatter_.src", "Tensor.scatter_", T(2, 3), 1, idx, T(2, 3))
    one("scatter_add", "torch.scatter_add", T(3, 3), 0, S([[0, 0, 1], [2, 0, 0]], dtype=i64), T(2, 3), tag="dups")
    inplace("scatter_add_", "Tensor.scatter_add_", T(2, 3), 1, idx, T(2, 3))
    one("index_select", "torch.index_select", T(3, 4), 1, S([3, 0, 0], dtype=i64), tag="i64")
    one("index_select", "torch.index_select", T(3, 4, layout="t"), 0, S([2, 1], dtype=i32), tag="i32")
    one("index_add", "torch.index_add", T(4, 3), 0, S([0, 2, 0], dtype=i64), T(3, 3), alpha=2, tag="dups")
    inplace("index_add_", "Tensor.index_add_", T(3, 4), 1, S([1, 3], dtype=i64), T(3, 2))
    one("take_along_dim", "torch.take_along_dim", T(3, 4), S([[0], [3], [1]], dtype=i64), dim=1, tag="broadcast")
    one("take_along_dim", "torch.take_along_dim", T(3, 4), S([5, 0, 11], dtype=i64), tag="flat")
    one("embedding", "torch.nn.functional.embedding", S([[1, 4], [0, 1]], dtype=i64), T(5, 3), tag="plain")
    one("embedding", "torch.nn.functional.embedding", S([2, 0], dtype=i64), T(3, 4, layout="t"), padding_idx=0, tag="padding_idx")
    one("one_hot", "torch.nn.functional.one_hot", S([[0, 3], [2, 1]], dtype=i64), 4, tag="plain")


def gen_factories():
    one("zeros", "torch.zeros", (2, 3), tag="plain")
    one("ones", "torch.ones", 2, 3, dtype=i32, tag="varargs")
    one("empty", "torch.empty", (0, 3), tag="empty")
    one("full", "torch.full", (2, 2), 2.5, tag="float")
    one("full", "torch.full", (3,), 7, dtype=i64, tag="int")
    one("arange", "torch.arange", 5, tag="end")
    one("arange", "torch.arange", 1.0, 2.0, 0.3, tag="float")
    one("arange", "torch.arange", -3, 7, 2, dtype=f64, tag="int_to_f64")
    one("linspace", "torch.linspace", -1.0, 2.0, 7, tag="plain")
    one("linspace", "torch.linspace", 0, 10, 4, dtype=f64, tag="f64")
    one("logspace", "torch.logspace", -1.0, 2.0, 5, tag="plain")
    one("logspace", "torch.logspace", 0.0, 3.0, 4, base=2.0, tag="base")
    one("eye", "torch.eye", 3, tag="square")
    one("eye", "torch.eye", 2, 4, dtype=i64, tag="rect")
    one("empty_strided", "torch.empty_strided", (2, 3), (1, 2), tag="plain")
    one("scalar_tensor", "torch.scalar_tensor", 3.5, tag="plain")
    for op, target, extra in [("zeros_like", "torch.zeros_like", ()), ("ones_like", "torch.ones_like", ()),
                              ("empty_like", "torch.empty_like", ()), ("full_like", "torch.full_like", (4,))]:
        one(op, target, T(2, 3, layout="t"), *extra, tag="transposed")
        one(op, target, T(3, dtype=i64), *extra, dtype=f64, tag="dtype")
    for op, target, extra in [("new_zeros", "Tensor.new_zeros", ()), ("new_ones", "Tensor.new_ones", ()),
                              ("new_empty", "Tensor.new_empty", ()), ("new_full", "Tensor.new_full", (1.5,))]:
        one(op, target, T(2, dtype=f64), (2, 2), *extra, tag="plain")
    g = G("rand", "random")
    g.fallback = True
    add(g.out(g.call("torch.rand", 3)))


def gen_casts():
    one("to.dtype", "Tensor.to", T(2, 3, layout="t"), f64, tag="dtype")
    one("to.dtype", "Tensor.to", T(2, 3), f32, tag="same")
    one("to.dtype", "Tensor.to", T(2, 3), f32, copy=True, tag="copy")
    one("to.dtype", "Tensor.to", T(4, lo=-3, hi=3), i32, tag="truncate")
    one("to.dtype", "Tensor.to", T(4, dtype=f64), f16, tag="f16")
    one("to.device", "Tensor.to", T(2, 3), "cpu", tag="device")
    one("to.other", "Tensor.to", T(2, 3, dtype=i64), T(1, dtype=f64), tag="other")
    one("type_as", "Tensor.type_as", T(3), T(1, dtype=i64), tag="plain")
    one("type", "Tensor.type", T(3), f64, tag="dtype")
    one("cpu", "Tensor.cpu", T(3), tag="plain")
    for name, dt in [("float", f64), ("double", f32), ("half", f32), ("bfloat16", f32), ("long", f32),
                     ("int", f64), ("short", f32), ("char", f32), ("byte", i64), ("bool", f32)]:
        one(name, "Tensor." + name, T(3, dtype=dt, lo=-5, hi=5), tag="plain")
    one("float", "Tensor.float", T(3), tag="noop")
    one("clone", "torch.clone", T(2, 3, layout="t"), tag="preserve")
    one("clone", "torch.clone", T(2, 3, layout="t"), memory_format=torch.contiguous_format, tag="contiguous")
    for tag, src in [("same", T(3, 4)), ("broadcast", T(4, dtype=f64)), ("int", T(3, 1, dtype=i64))]:
        inplace("copy_", "Tensor.copy_", T(3, 4), src, tag=tag)
    inplace("fill_.Tensor", "Tensor.fill_", T(3, 4), 2.5, tag="number")
    inplace("fill_.Tensor", "Tensor.fill_", T(3, 4, dtype=i64), S(3, dtype=i64), tag="tensor")
    inplace("zero_", "Tensor.zero_", T(2, 3))
    one("requires_grad_", "Tensor.requires_grad_", T(3), False, tag="plain")


def gen_losses():
    for op, target, kw in [("mse_loss", "torch.nn.functional.mse_loss", {}), ("l1_loss", "torch.nn.functional.l1_loss", {}),
                           ("smooth_l1_loss", "torch.nn.functional.smooth_l1_loss", {"beta": 0.5}),
                           ("huber_loss", "torch.nn.functional.huber_loss", {"delta": 0.7})]:
        for red in ("mean", "sum", "none"):
            one(op, target, T(3, 4), T(3, 4, layout="t"), reduction=red, tag=red, **kw)
    one("smooth_l1_loss", "torch.nn.functional.smooth_l1_loss", T(3, 4), T(3, 4), beta=0.0, tag="beta0")
    one("mse_loss", "torch.nn.functional.mse_loss", T(3, 4), T(3, 4), size_average=False, tag="legacy")
    for red in ("mean", "sum", "none", "batchmean"):
        one("kl_div", "torch.nn.functional.kl_div", T(3, 4, lo=-3, hi=0), T(3, 4, lo=0, hi=1, vals=[0.0] + values(11, f32, 0, 1).tolist()), reduction=red, tag=red)
    one("kl_div", "torch.nn.functional.kl_div", T(3, 4, lo=-3, hi=0), T(3, 4, lo=-3, hi=0), reduction="sum", log_target=True, tag="log_target")
    one("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", T(3, 4, lo=0.01, hi=0.99), T(3, 4, lo=0, hi=1), tag="mean")
    one("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", S([0.0, 1.0, 0.5]), S([1.0, 0.0, 0.5]), weight=T(3, lo=0, hi=2), reduction="none", tag="clamped_weight")
    one("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T(3, 4, lo=-5, hi=5), T(3, 4, lo=0, hi=1), tag="mean")
    one("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T(3, 4, lo=-5, hi=5), T(3, 4, lo=0, hi=1), weight=T(4), pos_weight=T(4, lo=0.5, hi=2), reduction="sum", tag="weights")
    tgt = S([1, 0, 3], dtype=i64)
    one("nll_loss", "torch.nn.functional.nll_loss", T(3, 4, lo=-3, hi=0), tgt, tag="mean")
    one("nll_loss", "torch.nn.functional.nll_loss", T(3, 4, lo=-3, hi=0), S([1, -100, 3], dtype=i64), weight=T(4, lo=0.5, hi=2), tag="weight_ignore")
    one("nll_loss", "torch.nn.functional.nll_loss", T(2, 4, 3, lo=-3, hi=0), S([[1, 0, 3], [2, 2, 1]], dtype=i64), reduction="none", tag="spatial")
    one("nll_loss", "torch.nn.functional.nll_loss", T(4, lo=-3, hi=0), S(2, dtype=i64), reduction="sum", tag="1d")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), tgt, tag="mean")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), S([1, 2, 2], dtype=i64), weight=T(4, lo=0.5, hi=2), ignore_index=2, reduction="sum", tag="weight_ignore")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), tgt, label_smoothing=0.1, tag="smoothing")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), S([1, -100, 2], dtype=i64), weight=T(4, lo=0.5, hi=2), label_smoothing=0.2, tag="smoothing_weight_ignore")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), S([1, -100, 2], dtype=i64), label_smoothing=0.2, tag="smoothing_ignore")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), T(3, 4, lo=0, hi=1), tag="probs")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(2, 3, 2), T(2, 3, 2, lo=0, hi=1), label_smoothing=0.3, weight=T(3), tag="probs_smoothing")


def gen_misc():
    one("pad", "torch.nn.functional.pad", T(2, 3, 4), (1, 2), tag="constant")
    one("pad", "torch.nn.functional.pad", T(2, 3, 4, dtype=i64), (1, -1, 0, 2), value=5.0, tag="crop_value")
    for mode in ("reflect", "replicate", "circular"):
        one("pad", "torch.nn.functional.pad", T(1, 2, 4, layout="t"), (2, 1), mode=mode, tag=mode)
        one("pad", "torch.nn.functional.pad", T(1, 2, 3, 4), (1, 2, 2, 1), mode=mode, tag=mode + "2d")
    one("constant_pad_nd", "torch.constant_pad_nd", T(3, 4), (1, 1), 2.5, tag="plain")
    one("interpolate", "torch.nn.functional.interpolate", T(1, 2, 3, 4), scale_factor=2, tag="nearest2x")
    one("interpolate", "torch.nn.functional.interpolate", T(1, 2, 5), size=3, tag="nearest_down")
    one("interpolate", "torch.nn.functional.interpolate", T(1, 2, 3, 5), size=(4, 7), mode="nearest-exact", tag="exact")
    g = G("interpolate", "bilinear")
    g.fallback = True
    add(g.out(g.call("torch.nn.functional.interpolate", g.inp(T(1, 1, 3, 3)), scale_factor=2, mode="bilinear")))
    one("pixel_shuffle", "torch.nn.functional.pixel_shuffle", T(1, 8, 2, 3), 2, tag="plain")
    one("pixel_unshuffle", "torch.nn.functional.pixel_unshuffle", T(2, 1, 4, 6), 2, tag="plain")
    one("normalize", "torch.nn.functional.normalize", T(3, 4), tag="plain")
    one("normalize", "torch.nn.functional.normalize", T(3, 4, layout="t"), p=1.0, dim=0, tag="p1")
    one("cosine_similarity", "torch.nn.functional.cosine_similarity", T(3, 4), T(4), tag="broadcast")
    one("cosine_similarity", "torch.nn.functional.cosine_similarity", T(2, 3), T(2, 3), dim=0, tag="dim0")
    one("pairwise_distance", "torch.nn.functional.pairwise_distance", T(3, 4), T(3, 4), tag="plain")
    one("pairwise_distance", "torch.nn.functional.pairwise_distance", T(3, 4), T(4), p=1.0, keepdim=True, tag="p1")
    one("diff", "torch.diff", T(3, 5), tag="plain")
    one("diff", "torch.diff", T(3, 5), n=2, dim=0, prepend=T(1, 5), append=T(2, 5), tag="prepend_append")
    one("diff", "torch.diff", T(6, dtype=b8), tag="bool")
    one("trace", "torch.trace", T(3, 4), tag="f32")
    one("trace", "torch.trace", T(3, 3, dtype=i32, layout="t"), tag="int")


def gen_out():
    """out= writes the result into a tensor (resizing it when its shape differs)."""
    for tag, out_shape in [("same", (3, 4)), ("resize", (0,))]:
        g = G("add.Tensor", "out_" + tag)
        x, y = g.inp(T(3, 4)), g.inp(T(4))
        o = g.call("torch.empty", out_shape)
        g.call("torch.add", x, y, out=o)
        add(g.out(g.call("torch.mul", o, 2)))
    g = G("add.Tensor", "out_input")
    x, y, o = g.inp(T(3, 4)), g.inp(T(4)), g.inp(T(3, 4))
    r = g.call("torch.mul", x, y, out=o)
    add(g.out(g.call("torch.sum", r)))


def gen_edges():
    """0-d and empty tensors."""
    for name in ["exp", "abs", "sigmoid", "relu", "neg"]:
        one(name, "torch." + name, S(0.7), tag="0d")
        one(name, "torch." + name, T(0, 3), tag="empty")
    one("add.Tensor", "torch.add", S(1.5), T(2, 3), tag="0d_tensor")
    one("add.Tensor", "torch.add", S(2, dtype=i64), T(2, 3), tag="0d_int_tensor")
    one("mul.Tensor", "torch.mul", T(2, 3, dtype=i32), S(2.5, dtype=f64), tag="0d_float_int")
    one("sum.dim_IntList", "torch.sum", T(0, 3), tag="empty")
    one("sum.dim_IntList", "torch.sum", S(2.5), tag="0d")
    one("mean.dim", "torch.mean", T(2, 0), dim=1, tag="empty")
    one("prod.dim_int", "torch.prod", T(0, 2), tag="empty")
    one("softmax.int", "torch.softmax", S(1.0), 0, tag="0d")
    one("argmax", "torch.argmax", S(3.0), tag="0d")
    one("cumsum", "torch.cumsum", S(3.0), 0, tag="0d")
    one("cat", "torch.cat", [T(0, 3), T(2, 3)], tag="empty_part")
    one("matmul", "torch.matmul", T(0, 4), T(4, 3), tag="empty")
    one("var.correction", "torch.var", T(1, 3), dim=0, tag="one_sample")
    one("getitem", "operator.getitem", T(4, 3), (slice(5, None),), tag="empty_slice")


def gen_graphs():
    """Multi-call graphs: an MLP block, softmax and layer-norm chains, an attention block."""
    g = G("graph", "mlp_block")
    x = g.inp(T(4, 8))
    w1, b1 = g.attr("fc1.weight", T(16, 8, lo=-0.5, hi=0.5)), g.attr("fc1.bias", T(16))
    w2, b2 = g.attr("fc2.weight", T(8, 16, lo=-0.5, hi=0.5)), g.attr("fc2.bias", T(8))
    h = g.call("torch.nn.functional.gelu", g.call("torch.nn.functional.linear", x, w1, b1))
    add(g.out(g.call("operator.add", g.call("torch.nn.functional.linear", h, w2, b2), x)))

    g = G("graph", "softmax_chain")
    x = g.inp(T(2, 3, 5, lo=-4, hi=4))
    s = g.call("torch.softmax", g.call("operator.mul", x, 0.5), -1)
    add(g.out(g.call("torch.log", g.call("operator.add", s, 1e-3)), g.call("torch.sum", s, -1)))

    g = G("graph", "layer_norm_residual")
    x = g.inp(T(2, 4, 8))
    ln = g.call("torch.nn.functional.layer_norm", x, (8,), g.attr("ln.weight", T(8)), g.attr("ln.bias", T(8)))
    add(g.out(g.call("operator.add", g.call("torch.relu", ln), x)))

    g = G("graph", "attention")
    b, t, e, heads = 2, 5, 8, 2
    x = g.inp(T(b, t, e))
    qkv = g.call("torch.nn.functional.linear", x, g.attr("qkv.weight", T(3 * e, e, lo=-0.4, hi=0.4)), g.attr("qkv.bias", T(3 * e)))
    parts = g.call("Tensor.split", qkv, e, dim=-1)
    hd = e // heads

    def heads_of(p):
        return g.call("Tensor.transpose", g.call("Tensor.view", p, b, t, heads, hd), 1, 2)
    q, k, v = heads_of(parts[0]), heads_of(parts[1]), heads_of(parts[2])
    att = g.call("operator.mul", g.call("operator.matmul", q, g.call("Tensor.transpose", k, -2, -1)), 1.0 / math.sqrt(hd))
    mask = g.call("torch.tril", g.call("torch.ones", t, t, dtype=b8))
    att = g.call("Tensor.masked_fill", att, g.call("operator.invert", mask), float("-inf"))
    att = g.call("torch.nn.functional.softmax", att, dim=-1)
    y = g.call("Tensor.reshape", g.call("Tensor.contiguous", g.call("Tensor.transpose", g.call("operator.matmul", att, v), 1, 2)), b, t, e)
    add(g.out(g.call("torch.nn.functional.linear", y, g.attr("proj.weight", T(e, e, lo=-0.4, hi=0.4)))))

    g = G("graph", "conv_bn_relu_pool")
    x = g.inp(T(2, 3, 6, 6))
    y = g.call("torch.nn.functional.conv2d", x, g.attr("conv.weight", T(4, 3, 3, 3, lo=-0.3, hi=0.3)), None, 1, 1)
    y = g.call("torch.nn.functional.batch_norm", y, g.attr("bn.running_mean", T(4)), g.attr("bn.running_var", T(4, lo=0.5, hi=2)),
               g.attr("bn.weight", T(4)), g.attr("bn.bias", T(4)), False, 0.1, 1e-5)
    y = g.call("torch.flatten", g.call("torch.nn.functional.adaptive_avg_pool2d", g.call("torch.relu", y), 1), 1)
    add(g.out(y))

    g = G("graph", "rms_norm")
    x = g.inp(T(2, 3, 8))
    ms = g.call("Tensor.mean", g.call("Tensor.pow", x, 2), -1, keepdim=True)
    y = g.call("operator.mul", x, g.call("torch.rsqrt", g.call("operator.add", ms, 1e-6)))
    add(g.out(g.call("operator.mul", y, g.attr("norm.weight", T(8)))))

    g = G("graph", "inplace_chain")
    x = g.inp(T(3, 4))
    y = g.call("torch.clone", x)
    g.call("Tensor.mul_", y, 2.0)
    g.call("Tensor.add_", x, y)
    g.call("operator.setitem", y, (slice(None), 0), 0.0)
    add(g.out(y, g.call("torch.sum", x)))


def gen_pooling():
    """max_pool2d over windows that tile the input decomposes (view + amax), overlapping or
    padded windows too (a maximum over strided views); ceil_mode's partial windows stay fallbacks. Last in main, so the other generators' random values do not move."""
    one("max_pool2d", "torch.nn.functional.max_pool2d", T(2, 3, 4, 6), 2, tag="tiled")
    one("max_pool2d", "torch.nn.functional.max_pool2d", T(1, 2, 5, 7), (2, 3), tag="floor")
    one("max_pool2d", "torch.nn.functional.max_pool2d", T(3, 4, 4, layout="t"), 2, 2, tag="unbatched_transposed")
    one("max_pool2d", "torch.max_pool2d", T(1, 1, 4, 4), [2, 2], [2, 2], tag="torch")
    nan, inf = float("nan"), float("inf")
    special = [1.0, nan, -inf, 2.0, 0.0, -0.0, -1.0, -inf, -0.0, 0.0, inf, 3.0, -inf, -inf, -inf, -inf]
    one("max_pool2d", "torch.nn.functional.max_pool2d", T(1, 1, 4, 4, vals=special), 2, tag="specials")
    g = G("max_pool2d", "overlapping")
    add(g.out(g.call("torch.nn.functional.max_pool2d", g.inp(T(1, 2, 5, 5)), 3, 2, 1)))
    g = G("graph", "bn_relu_pool")
    x = g.inp(T(2, 4, 4, 4))
    y = g.call("torch.nn.functional.batch_norm", x, g.attr("bn.running_mean", T(4)), g.attr("bn.running_var", T(4, lo=0.5, hi=2)),
               g.attr("bn.weight", T(4)), g.attr("bn.bias", T(4)), False, 0.1, 1e-5)
    add(g.out(g.call("torch.nn.functional.max_pool2d", g.call("torch.relu", y), 2)))


def gen_versions():
    """Calls whose result depends on the torch version (primtorch/torch_behavior.go; torch 2's
    scaled_dot_product_attention); a torch that rejects one drops it. Last in main, so the other
    generators' random values do not move."""
    one("getitem", "operator.getitem", T(4, 5), T(3, dtype=i32, lo=0, hi=4), tag="int32_index")
    one("gather", "torch.gather", T(3, 4), 1, T(3, 2, dtype=i32, lo=0, hi=3), tag="int32_index")
    one("where.method", "Tensor.where", T(2, 3), T(2, 3, dtype=b8), 1.5, tag="number_other")
    one("norm", "torch.norm", T(4, 3), dtype=f64, tag="dtype")
    one("norm", "torch.norm", T(4, 3), "fro", dim=1, dtype=f64, tag="fro_dtype")
    one("layer_norm", "torch.nn.functional.layer_norm", T(3, 8, dtype=bf16), [8], T(8), T(8), tag="bf16_float_params")
    one("group_norm", "torch.nn.functional.group_norm", T(2, 4, 3, dtype=bf16), 2, T(4), T(4), tag="bf16_float_params")
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return
    sdpa = "torch.nn.functional.scaled_dot_product_attention"
    q, k, v = T(2, 3, 4, 8), T(2, 3, 5, 8), T(2, 3, 5, 6)
    one("scaled_dot_product_attention", sdpa, q, k, v, tag="plain")
    one("scaled_dot_product_attention", sdpa, q, k, v, scale=0.3, tag="scale")
    one("scaled_dot_product_attention", sdpa, T(2, 3, 5, 8), k, v, is_causal=True, tag="causal")
    one("scaled_dot_product_attention", sdpa, T(2, 3, 4, 8), k, v, is_causal=True, tag="causal_rect")
    one("scaled_dot_product_attention", sdpa, q, k, v, S([[True, False, True, True, False]] * 3 + [[False] * 5]),
        tag="bool_mask_fully_masked_row")
    one("scaled_dot_product_attention", sdpa, q, k, v, T(4, 5), tag="float_mask")
    one("scaled_dot_product_attention", sdpa, q, T(1, 3, 5, 8), T(2, 1, 5, 6), tag="broadcast_batch")
    one("scaled_dot_product_attention", sdpa, T(3, 4, 8, layout="t"), T(3, 5, 8), T(3, 5, 6, layout="t"), tag="3d_transposed")
    one("scaled_dot_product_attention", sdpa, T(2, 4, 8, dtype=f64), T(2, 5, 8, dtype=f64), T(2, 5, 6, dtype=f64), tag="f64")
    for tag, dt, kw in (("bf16", bf16, {}), ("dropout", f32, {"dropout_p": 0.5})):
        g = G("scaled_dot_product_attention", tag)
        g.fallback = True  # torch's kernel: 16-bit accumulation, random numbers
        g.novalues = "dropout_p" in kw
        add(g.out(g.call(sdpa, g.inp(T(2, 4, 8, dtype=dt)), g.inp(T(2, 5, 8, dtype=dt)), g.inp(T(2, 5, 6, dtype=dt)), **kw)))


def gen_pool_windows():
    """max_pool2d over overlapping, padded and dilated windows (a maximum over strided views of
    the -inf padded input); ceil_mode stays a fallback. Last in main: the values of the cases
    before do not move."""
    mp = "torch.nn.functional.max_pool2d"
    one("max_pool2d", mp, T(1, 3, 9, 8), 3, 2, 1, tag="resnet_stem")
    one("max_pool2d", mp, T(2, 2, 7, 9), (3, 2), (1, 2), (1, 0), tag="rect")
    one("max_pool2d", mp, T(1, 2, 9, 9), 3, 1, 1, 2, tag="dilated")
    one("max_pool2d", mp, T(3, 6, 6, layout="t"), 3, 2, 1, tag="unbatched_transposed_padded")
    nan, inf = float("nan"), float("inf")
    special = [-inf, nan, -inf, 2.0, -inf, -0.0, -1.0, -inf, -0.0, 0.0, inf, 3.0, -inf, -inf, -inf, -inf]
    one("max_pool2d", mp, T(1, 1, 4, 4, vals=special), 3, 2, 1, tag="specials_padded")
    g = G("max_pool2d", "ceil_mode")
    g.fallback = True
    add(g.out(g.call(mp, g.inp(T(1, 2, 6, 6)), 3, 2, 1, ceil_mode=True)))


def gen_avg_pool():
    """avg_pool2d: a sum of strided views of the zero-padded input in the window's row-major
    order, then the divisor; count_include_pad=False over padding and ceil_mode stay fallbacks.
    Last in main: the values of the cases before do not move."""
    ap = "torch.nn.functional.avg_pool2d"
    one("avg_pool2d", ap, T(2, 3, 4, 6), 2, tag="densenet_transition")
    one("avg_pool2d", ap, T(1, 2, 5, 7), (2, 3), tag="floor")
    one("avg_pool2d", ap, T(1, 3, 6, 5), 3, 1, 1, tag="inception_branch")
    one("avg_pool2d", ap, T(2, 2, 7, 9), (3, 2), (1, 2), (1, 0), tag="rect")
    one("avg_pool2d", ap, T(3, 6, 6, layout="t"), 3, 2, 1, tag="unbatched_transposed_padded")
    one("avg_pool2d", ap, T(1, 2, 6, 6, dtype=f64), 3, 2, 1, tag="f64")
    one("avg_pool2d", ap, T(1, 2, 6, 6), 3, 2, 1, divisor_override=4, tag="divisor_override")
    one("avg_pool2d", ap, T(1, 2, 6, 6), 3, 2, 1, count_include_pad=False, divisor_override=5, tag="no_pad_count_override")
    one("avg_pool2d", ap, T(1, 2, 5, 5), 2, 2, 0, count_include_pad=False, tag="no_pad_count_unpadded")
    inf = float("inf")
    special = [-0.0, -0.0, 1.0, -0.0, -0.0, -0.0, inf, 2.0, 1e30, 3e38, 0.0, -0.0, 3e38, 3e38, -inf, 1.0]
    one("avg_pool2d", ap, T(1, 1, 4, 4, vals=special), 2, tag="specials")
    one("avg_pool2d", ap, T(1, 1, 4, 4, vals=special), 3, 1, 1, tag="specials_padded")
    for tag, kw in (("ceil_mode", {"ceil_mode": True}), ("no_pad_count", {"count_include_pad": False})):
        g = G("avg_pool2d", tag)
        g.fallback = True
        add(g.out(g.call(ap, g.inp(T(1, 2, 6, 6)), 3, 2, 1, **kw)))
    g = G("graph", "bn_relu_avg_pool")
    x = g.inp(T(2, 4, 4, 4))
    y = g.call("torch.nn.functional.batch_norm", x, g.attr("bn.running_mean", T(4)), g.attr("bn.running_var", T(4, lo=0.5, hi=2)),
               g.attr("bn.weight", T(4)), g.attr("bn.bias", T(4)), False, 0.1, 1e-5)
    add(g.out(g.call(ap, g.call("torch.relu", y), 2, 2)))



def main():
    for gen in (gen_unary, gen_activations, gen_binary, gen_ternary, gen_reductions, gen_norm, gen_linalg,
                gen_conv, gen_views, gen_getitem, gen_join, gen_index, gen_factories, gen_casts, gen_losses,
                gen_misc, gen_out, gen_edges, gen_graphs, gen_pooling, gen_versions, gen_pool_windows, gen_avg_pool):
        gen()
    major, minor = (int("".join(c for c in p if c.isdigit()) or 0) for p in torch.__version__.split("+")[0].split(".")[:2])
    with open(os.path.join(sys.argv[1], "cases_%d_%d.json" % (major, minor)), "w") as f:
        json.dump(CASES, f, separators=(",", ":"))
        f.write("\n")
    sys.stderr.write("gen_cases.py: %d cases, %d calls torch rejected (dropped)\n" % (len(CASES), len(DROPPED)))
    for d in DROPPED:
        sys.stderr.write("  dropped %s\n" % d)


if __name__ == "__main__":
    main()
