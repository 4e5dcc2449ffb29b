#!/usr/bin/python3
"""Records eager PyTorch's gradients for the tests of aotautograd (ptgo's joint graphs).

Run with the torch interpreter (/usr/bin/python3), normally through
    go test ./aotautograd -update

Every case is a small torch-level graph in the format of primtorch/decomp/testdata/cases.json
(internal/testcases builds it on the Go side): input tensors with their exact layouts, get_attr
buffers, calls, outputs, torch's outputs and the inputs' and buffers' values after the calls.
Gradient cases add:
  requires_grad  one flag per input (floating-point inputs require grad unless the case says)
  tangents       per output, the gradient fed to backward (a contiguous tensor, same dtype and
                 shape), or null for outputs that do not require grad
  grads          per input, its .grad after torch.autograd.backward(outputs, tangents), or null
  notdiff        the graph needs a derivative ptgo lacks (a prims.fallback): Split must refuse it
Tensors are small so the file stays well under 2 MB.

Usage: gen_cases.py OUT.json
"""
import json
import math
import operator
import sys
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(4321)

f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, b8 = torch.int64, torch.int32, torch.bool
DT = {b8: "b8", torch.uint8: "u8", torch.int8: "i8", torch.int16: "i16", i32: "i32", i64: "i64", f16: "f16",
      bf16: "bf16", f32: "f32", f64: "f64"}


class Inp:
    """An input tensor: the values of a storage and the view of it the graph receives."""

    def __init__(self, storage, shape, strides, offset, dtype, rg=None):
        self.storage, self.shape, self.strides, self.offset, self.dtype = storage, shape, strides, offset, dtype
        self.rg = dtype.is_floating_point if rg is None else rg

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


def T(*shape, dtype=f32, layout="c", lo=-3.0, hi=3.0, vals=None, rg=None):
    """A tensor of shape with layout "c" (contiguous) or "t" (last two dims transposed)."""
    shape = list(shape)
    n = 1
    for s in shape:
        n *= s
    st = contig(shape)
    if layout == "t":
        sw = shape[:-2] + [shape[-1], shape[-2]]
        st = contig(sw)
        st[-1], st[-2] = st[-2], st[-1]
    v = vals if vals is not None else values(n, dtype, lo, hi).tolist()
    return Inp(v, shape, st, 0, dtype, rg)


def S(v, dtype=f32, rg=None):
    """A tensor from a (nested) list."""
    t = torch.tensor(v, dtype=dtype)
    return Inp(t.reshape(-1).tolist(), list(t.shape), contig(list(t.shape)), 0, dtype, rg)


class Ref:
    def __init__(self, name, index=None):
        self.name, self.index = name, index

    def __getitem__(self, i):
        return Ref(self.name, i)


class G:
    def __init__(self, op, tag=""):
        self.op, self.tag = op, tag
        self.inputs, self.attrs, self.nodes, self.outs = [], [], [], []
        self.notdiff = False

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


def enc_vals(t):
    vals = t.reshape(-1).tolist() if t.dim() else [t.item()]
    if t.dtype.is_floating_point:
        return [enc_float(float(v)) for v in vals]
    if t.dtype == b8:
        return [1 if v else 0 for v in vals]
    return vals


def enc_tensor(t):
    t = t.detach()
    return {"dtype": DT[t.dtype], "shape": list(t.shape), "strides": list(t.stride()), "values": enc_vals(t)}


def enc_storage(name, t):
    """A contiguous tensor in the input format (storage + geometry)."""
    t = t.detach().contiguous()
    return {"name": name, "dtype": DT[t.dtype], "shape": list(t.shape), "strides": contig(list(t.shape)),
            "offset": 0, "storage": enc_vals(t)}


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
    if isinstance(a, tuple):
        return {"tuple": [enc_arg(e) for e in a]}
    if isinstance(a, list):
        return [enc_arg(e) for e in a]
    if isinstance(a, slice):
        return {"slice": [a.start, a.stop, a.step]}
    if a is Ellipsis:
        return {"ellipsis": True}
    raise TypeError(type(a))


def tangent_for(o):
    """The gradient fed to backward for output o: values of a few distinct magnitudes."""
    return values(o.numel(), f64, -1.0, 1.0).to(o.dtype).reshape(o.shape)


def run(g):
    env, made = {}, {}
    for name, i in g.inputs:
        t = i.make()
        if i.rg:
            t.requires_grad_(True)
        made[name] = env[name] = t
    for path, i in g.attrs:
        made[path] = env[path] = i.make()

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
        outs.extend(v if isinstance(v, (tuple, list)) else [v])
    tangents = [tangent_for(o) if isinstance(o, torch.Tensor) and o.requires_grad else None for o in outs]
    diff = [(o, t) for o, t in zip(outs, tangents) if t is not None]
    if diff and not g.notdiff:
        torch.autograd.backward([o for o, _ in diff], [t for _, t in diff])
    return outs, tangents, made


def add(g):
    try:
        outs, tangents, made = run(g)
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
        "requires_grad": [i.rg for _, i in g.inputs],
        "tangents": [None if t is None else enc_storage("tangent%d" % k, t) for k, t in enumerate(tangents)],
        "grads": {n: (None if made[n].grad is None else enc_tensor(made[n].grad)) for n, i in g.inputs if i.rg},
    }
    if g.notdiff:
        c["notdiff"] = True
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


# ---------------------------------------------------------------------------------------------
# Single ops.

UNARY = ["exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc",
         "reciprocal", "abs", "neg", "floor", "ceil", "trunc", "round", "frac", "sign", "square", "logit", "relu"]
POSITIVE = {"log", "log1p", "log2", "log10", "sqrt", "rsqrt", "acosh", "logit"}
UNIT = {"asin", "acos", "atanh"}


def gen_unary():
    for name in UNARY:
        lo, hi = -3.0, 3.0
        if name in POSITIVE:
            lo, hi = (1.2, 4.0) if name == "acosh" else (0.1, 4.0)
        if name in UNIT or name == "logit":
            lo, hi = (0.05, 0.95) if name == "logit" else (-0.9, 0.9)
        one(name, "torch." + name, T(3, 4, lo=lo, hi=hi), tag="f32")
        one(name, "Tensor." + name, T(2, 3, dtype=f64, layout="t", lo=lo, hi=hi), tag="f64t")
    one("abs", "torch.abs", S([-1.0, 0.0, 2.0]), tag="zero")
    one("relu", "torch.relu", S([-1.0, 0.0, 2.0]), tag="zero")
    one("sqrt", "torch.sqrt", T(4, dtype=bf16, lo=0.5, hi=2), tag="bf16")
    one("tanh", "torch.tanh", T(4, dtype=bf16), tag="bf16")


ACTS = {
    "gelu": ("torch.nn.functional.gelu", {}), "silu": ("torch.nn.functional.silu", {}),
    "mish": ("torch.nn.functional.mish", {}), "elu": ("torch.nn.functional.elu", {"alpha": 0.7}),
    "selu": ("torch.selu", {}), "celu": ("torch.celu", {"alpha": 1.3}), "relu6": ("torch.nn.functional.relu6", {}),
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
    one("gelu", "torch.nn.functional.gelu", T(3, 5, lo=-5, hi=5), approximate="tanh", tag="tanh")
    one("glu", "torch.nn.functional.glu", T(3, 6), tag="last")
    one("prelu", "torch.nn.functional.prelu", T(2, 3, 4, lo=-2, hi=2), T(3, lo=0, hi=1), tag="channels")
    one("clamp", "torch.clamp", T(3, 4), min=-1.0, max=0.5, tag="numbers")
    one("clamp", "torch.clamp", T(3, 4), T(4), T(3, 1), tag="tensors")
    one("clamp_min", "torch.clamp_min", T(3, 4), 0.25, tag="number")
    one("nan_to_num", "torch.nan_to_num", S([1.0, float("nan"), float("inf"), -2.0]), tag="default")


BINARY = {
    "add.Tensor": "torch.add", "sub.Tensor": "torch.sub", "mul.Tensor": "torch.mul", "div.Tensor_mode": "torch.div",
    "remainder.Tensor": "torch.remainder", "fmod.Tensor": "torch.fmod", "maximum": "torch.maximum",
    "minimum": "torch.minimum", "fmax": "torch.fmax", "fmin": "torch.fmin", "atan2": "torch.atan2",
    "hypot": "torch.hypot", "copysign.Tensor": "torch.copysign", "xlogy.Tensor": "torch.xlogy",
    "logaddexp": "torch.logaddexp",
}


def gen_binary():
    for op, target in BINARY.items():
        lo = 0.5 if op in ("remainder.Tensor", "fmod.Tensor") else -3.0
        one(op, target, T(3, 4), T(4, lo=lo), tag="broadcast")
        one(op, target, T(2, 3, layout="t", dtype=f64), T(2, 3, dtype=f64, lo=lo), tag="f64")
    one("add.Tensor", "torch.add", T(2, 3), T(3), alpha=2.5, tag="alpha")
    one("sub.Tensor", "operator.sub", 2.0, T(2, 3), tag="reflected")
    one("div.Tensor_mode", "operator.truediv", 2.0, T(2, 3, lo=0.5, hi=2), tag="reflected")
    one("div.Tensor_mode", "torch.div", T(3, 4, lo=-9, hi=9), T(4, lo=0.5, hi=3), rounding_mode="floor", tag="floor")
    one("div.Tensor_mode", "torch.div", T(3, 4, lo=-9, hi=9), T(4, lo=0.5, hi=3), rounding_mode="trunc", tag="trunc")
    one("mul.Tensor", "torch.mul", T(2, 3), T(2, 3, rg=False), tag="one_grad")
    one("add.Tensor", "torch.add", T(2, 3), T(2, 3, dtype=i64), tag="int_other")
    one("maximum", "torch.maximum", S([1.0, 2.0, 3.0, float("nan")]), S([1.0, 0.0, 4.0, 1.0]), tag="ties_nan")
    one("minimum", "torch.minimum", S([1.0, 2.0, 3.0]), S([1.0, 0.0, 4.0]), tag="ties")
    one("pow.Tensor_Tensor", "torch.pow", T(3, 4, lo=0.5, hi=2), T(4, lo=-2, hi=2), tag="tensors")
    one("pow.Tensor_Tensor", "torch.pow", S([0.0, 0.0, 2.0, 1.5]), S([0.0, 2.0, 0.0, -1.0]), tag="zeros")
    for e in [2, 3, 0.5, -1.5, 0]:
        one("pow.Tensor_Tensor", "torch.pow", T(2, 3, lo=0.2, hi=3), e, tag="exp%s" % e)
    one("pow.Tensor_Tensor", "torch.pow", 2.0, T(2, 3), tag="number_base")
    one("where.self", "torch.where", T(3, 4, dtype=b8), T(3, 4), T(4), tag="broadcast")
    one("where.self", "torch.where", T(3, 1, dtype=b8), 1.0, T(4), tag="number")
    one("masked_fill", "Tensor.masked_fill", T(3, 4), T(4, dtype=b8), -1.5, tag="number")
    one("lerp.Tensor", "torch.lerp", T(3, 4), T(4), T(3, 4, lo=-0.5, hi=1.5), tag="tensor")
    one("addcmul", "torch.addcmul", T(3, 4), T(4), T(3, 1), value=0.5, tag="value")
    one("addcdiv", "torch.addcdiv", T(3, 4), T(4), T(3, 1, lo=1, hi=2), value=-2, tag="value")
    one("to.dtype", "Tensor.to", T(2, 3, layout="t"), f64, tag="f64")
    one("to.dtype", "Tensor.to", T(2, 3, dtype=f64), f16, tag="f16")
    one("to.dtype", "Tensor.to", T(4), i32, tag="int")


def gen_reductions():
    for op, target in [("sum.dim_IntList", "torch.sum"), ("mean.dim", "torch.mean"), ("amax", "torch.amax"),
                       ("amin", "torch.amin"), ("nansum", "torch.nansum")]:
        one(op, target, T(3, 4), tag="all")
        one(op, target, T(2, 3, 4, layout="t"), dim=1, tag="dim1")
        one(op, target, T(2, 3, 4), dim=(0, 2), keepdim=True, tag="dims_keep")
        if op == "nansum":  # a floating nansum stays torch's call (decomp dNansum)
            for c in CASES[-3:]:
                c["notdiff"] = True
    one("amax", "torch.amax", S([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]), dim=1, tag="ties")
    one("amin", "torch.amin", S([[1.0, 1.0, 3.0], [0.0, 2.0, 0.0]]), tag="ties_all")
    one("max.dim", "torch.max", S([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 0.0]]), 1, tag="ties")
    one("max", "torch.max", T(3, 4), tag="all")
    one("min.dim", "torch.min", T(2, 3, 4, layout="t"), dim=0, keepdim=True, tag="dim")
    one("sum.dim_IntList", "torch.sum", S(2.5), tag="0d")
    one("sum.dim_IntList", "torch.sum", T(3, 4, dtype=f16), dim=1, tag="f16")
    one("prod.dim_int", "torch.prod", T(3, 4, lo=0.5, hi=1.5), tag="all")
    one("prod.dim_int", "torch.prod", T(3, 4, lo=0.5, hi=1.5), 1, keepdim=True, tag="dim")
    one("prod.dim_int", "torch.prod", S([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [1.5, 2.0, -1.0]]), 1, tag="zeros")
    one("prod.dim_int", "torch.prod", S([[1.0, 0.0, 2.0], [3.0, 0.5, 3.0]]), tag="zeros_all")
    for op, target in [("var.correction", "torch.var"), ("std.correction", "torch.std")]:
        one(op, target, T(3, 5), tag="all")
        one(op, target, T(2, 3, 4), dim=(0, 2), unbiased=False, keepdim=True, tag="biased")
    one("var_mean.correction", "torch.var_mean", T(3, 5), dim=1, tag="dim")
    one("logsumexp", "torch.logsumexp", T(3, 5, lo=-10, hi=10), 1, tag="dim")
    for p in [2, 1, float("inf"), 3]:
        one("norm", "torch.norm", T(3, 4), p, dim=1, tag="p%s" % p)
    one("linalg_vector_norm", "torch.linalg.vector_norm", T(3, 4), 2, dim=(0, 1), keepdim=True, tag="all")
    for op, target in [("softmax.int", "torch.softmax"), ("log_softmax.int", "torch.log_softmax")]:
        one(op, target, T(3, 5, lo=-5, hi=5), 1, tag="dim1")
        one(op, target, T(2, 3, 4, layout="t"), 0, tag="dim0")
    one("cumsum", "torch.cumsum", T(3, 4), 1, tag="f32")
    one("cumsum", "torch.cumsum", T(3, 4, layout="t"), 0, tag="dim0")
    one("cumprod", "torch.cumprod", T(3, 4, lo=0.5, hi=1.5), 1, tag="f32")
    one("cumprod", "torch.cumprod", S([[1.0, 0.0, 2.0, 3.0], [0.0, 2.0, 0.0, 1.5]]), 1, tag="zeros")
    one("trace", "torch.trace", T(3, 4), tag="f32")
    one("diff", "torch.diff", T(3, 5), tag="plain")


def gen_views():
    one("view", "Tensor.view", T(2, 6), 3, -1, tag="infer")
    one("reshape", "torch.reshape", T(3, 4, layout="t"), (-1,), tag="copy")
    one("flatten.using_ints", "torch.flatten", T(2, 3, 4), 1, tag="tail")
    one("squeeze.dim", "torch.squeeze", T(2, 1, 3, 1), tag="all")
    one("unsqueeze", "torch.unsqueeze", T(2, 3, layout="t"), -1, tag="last")
    one("transpose.int", "torch.transpose", T(2, 3, 4), 0, 2, tag="plain")
    one("permute", "Tensor.permute", T(2, 3, 4), 2, 0, 1, tag="plain")
    one("t", "torch.t", T(3, 4), tag="2d")
    one("movedim.intlist", "torch.movedim", T(2, 3, 4, 5), (0, 1), (3, 0), tag="plain")
    one("expand", "Tensor.expand", T(3, 1), 2, -1, 4, tag="plain")
    one("narrow", "torch.narrow", T(5, 4), 0, 1, 3, tag="plain")
    one("select.int", "torch.select", T(3, 4, layout="t"), 1, -1, tag="plain")
    one("as_strided", "torch.as_strided", T(3, 4), (2, 3), (4, 2), 1, tag="plain")
    one("as_strided", "torch.as_strided", T(6), (3, 3), (1, 1), tag="overlap")
    one("getitem", "operator.getitem", T(5, 4), (slice(None), slice(0, 4, 2)), tag="step")
    one("getitem", "operator.getitem", T(5, 4), (slice(1, None, 3), 2), tag="step_select")
    one("getitem", "operator.getitem", T(5, 4), (S([0, 2, 2], dtype=i64),), tag="index_dup")
    one("getitem", "operator.getitem", T(3, 5), (slice(None), S([4, 0], dtype=i64)), tag="index_dim1")
    for op, target, args, n in [("split.Tensor", "torch.split", (2,), 3), ("chunk", "torch.chunk", (3,), 3),
                                ("unbind.int", "torch.unbind", (), 5)]:
        g = G(op, "plain")
        r = g.call(target, g.inp(T(5, 3)), *args)
        add(g.out(*[r[i] for i in range(n)]))
    g = G("split.Tensor", "partial_grads")
    r = g.call("torch.split", g.inp(T(6, 2)), 2)
    add(g.out(r[0], r[2]))


def gen_data():
    one("cat", "torch.cat", [T(2, 3), T(4, 3), T(1, 3)], tag="dim0")
    one("cat", "torch.cat", [T(2, 3), T(2, 2, rg=False)], 1, tag="dim1_partial")
    one("stack", "torch.stack", [T(2, 3), T(2, 3)], 1, tag="dim1")
    one("pad", "torch.nn.functional.pad", T(2, 3, 4), (1, 2), tag="constant")
    one("pad", "torch.nn.functional.pad", T(2, 3, 4), (1, -1, 0, 2), value=5.0, tag="crop")
    one("gather", "torch.gather", T(3, 4), 1, S([[0, 0], [3, 1], [2, 2]], dtype=i64), tag="dups")
    one("index_select", "torch.index_select", T(4, 3), 0, S([3, 0, 3], dtype=i64), tag="dups")
    one("index_select", "torch.index_select", T(3, 4), 1, S([2], dtype=i64), tag="dim1")
    one("take_along_dim", "torch.take_along_dim", T(3, 4), S([[1], [0], [3]], dtype=i64), 1, tag="plain")
    one("scatter", "torch.scatter", T(3, 4), 1, S([[0, 1], [2, 3], [1, 0]], dtype=i64), T(3, 2), tag="src")
    one("scatter", "torch.scatter", T(3, 4), 0, S([[0, 1, 2, 0]], dtype=i64), 1.5, tag="value")
    one("scatter_add", "torch.scatter_add", T(3, 4), 1, S([[0, 1], [2, 2], [1, 0]], dtype=i64), T(3, 2), tag="dups")
    one("index_add", "torch.index_add", T(4, 3), 0, S([0, 2, 0], dtype=i64), T(3, 3), alpha=2.0, tag="dups")
    g = G("setitem", "index")
    x, v = g.inp(T(4, 3)), g.inp(T(2, 3))
    y = g.call("torch.clone", x)
    g.call("operator.setitem", y, g.inp(S([3, 1], dtype=i64)), v)
    add(g.out(y))
    one("repeat", "Tensor.repeat", T(2, 3), 2, 1, 2, tag="plain")
    one("tril", "torch.tril", T(4, 4), tag="plain")
    one("flip", "torch.flip", T(3, 4), (0, 1), tag="plain")
    one("roll", "torch.roll", T(3, 4), 1, 1, tag="plain")
    one("embedding", "torch.nn.functional.embedding", S([[1, 3], [3, 0]], dtype=i64), T(5, 4), tag="dups")
    g = G("setitem", "slice")
    x, v = g.inp(T(4, 3)), g.inp(T(2, 3))
    y = g.call("torch.clone", x)
    g.call("operator.setitem", y, slice(1, 3), v)
    add(g.out(g.call("operator.mul", y, 2.0)))


def gen_linalg():
    one("mm", "torch.mm", T(3, 4), T(4, 2, layout="t"), tag="f32")
    one("bmm", "torch.bmm", T(2, 3, 4), T(2, 4, 2), tag="f32")
    one("matmul", "torch.matmul", T(4), T(4), tag="1x1")
    one("matmul", "torch.matmul", T(2, 3, 4), T(4, 5), tag="3x2")
    one("matmul", "torch.matmul", T(2, 1, 3, 4), T(3, 4, 2), tag="4x3broadcast")
    one("matmul", "torch.matmul", T(2, 3, 4, dtype=f64), T(2, 4, 5, dtype=f64, layout="t"), tag="bmm_f64")
    one("addmm", "torch.addmm", T(4), T(3, 5), T(5, 4), tag="plain")
    one("addmm", "torch.addmm", T(3, 4), T(3, 5), T(5, 4), beta=0.5, alpha=2, tag="beta_alpha")
    one("baddbmm", "torch.baddbmm", T(2, 3, 4), T(2, 3, 5), T(2, 5, 4), beta=2, tag="beta")
    one("linear", "torch.nn.functional.linear", T(2, 3, 5), T(4, 5), T(4), tag="3d_bias")
    one("linear", "torch.nn.functional.linear", T(3, 5), T(4, 5, rg=False), T(4), tag="frozen_weight")
    one("outer", "torch.outer", T(3), T(4), tag="plain")
    g = G("notdiff", "einsum")  # einsum stays a torch-level fallback
    g.notdiff = True
    add(g.out(g.call("torch.einsum", "bij,bjk->bik", g.inp(T(2, 3, 4)), g.inp(T(2, 4, 2)))))


def gen_conv():
    """Convolutions: their backward is a prims.fallback (aten.convolution_backward), so the Go
    test checks them through ToTorch (aot_eager), not the reference interpreter."""
    one("conv2d", "torch.nn.functional.conv2d", T(1, 3, 6, 5), T(4, 3, 3, 2), T(4), stride=(2, 1), padding=(1, 0), tag="plain")
    one("conv2d", "torch.nn.functional.conv2d", T(2, 2, 5, 5), T(2, 1, 3, 3), groups=2, dilation=2, tag="depthwise")
    one("conv1d", "torch.nn.functional.conv1d", T(2, 4, 9), T(6, 2, 3), T(6, rg=False), stride=2, padding=1, groups=2, tag="grouped_frozen_bias")
    one("conv_transpose2d.input", "torch.nn.functional.conv_transpose2d", T(1, 2, 3, 3), T(2, 2, 3, 3), T(2), stride=2, tag="transposed")


def gen_norm_loss():
    one("layer_norm", "torch.nn.functional.layer_norm", T(3, 8), [8], T(8), T(8), tag="affine")
    one("layer_norm", "torch.nn.functional.layer_norm", T(2, 3, 4, layout="t"), [3, 4], tag="plain")
    one("group_norm", "torch.nn.functional.group_norm", T(2, 6, 5), 3, T(6), T(6), tag="affine")
    one("batch_norm", "torch.nn.functional.batch_norm", T(4, 3, 5), T(3, rg=False), T(3, lo=0.5, hi=2, rg=False), T(3), T(3), tag="eval")
    one("batch_norm", "torch.nn.functional.batch_norm", T(4, 3, 2, 2), None, None, T(3), T(3), training=True, tag="train_nostats")
    g = G("batch_norm", "train_buffers")
    x = g.inp(T(4, 3, 5))
    rm, rv = g.attr("bn.running_mean", T(3)), g.attr("bn.running_var", T(3, lo=0.5, hi=2))
    w, b = g.inp(T(3)), g.inp(T(3))
    nbt = g.attr("bn.num_batches_tracked", S(0, dtype=i64))
    g.call("Tensor.add_", nbt, 1)
    add(g.out(g.call("torch.nn.functional.batch_norm", x, rm, rv, w, b, True, 0.1, 1e-5)))
    one("normalize", "torch.nn.functional.normalize", T(3, 4), tag="plain")
    one("cosine_similarity", "torch.nn.functional.cosine_similarity", T(3, 4), T(4), tag="broadcast")
    one("dropout", "torch.nn.functional.dropout", T(2, 3), p=0.5, training=False, tag="eval")
    for op, target in [("mse_loss", "torch.nn.functional.mse_loss"), ("l1_loss", "torch.nn.functional.l1_loss"),
                       ("smooth_l1_loss", "torch.nn.functional.smooth_l1_loss"), ("huber_loss", "torch.nn.functional.huber_loss")]:
        one(op, target, T(3, 4), T(3, 4, layout="t"), tag="mean")
        one(op, target, T(3, 4), T(3, 4, rg=False), reduction="none", tag="none")
    one("kl_div", "torch.nn.functional.kl_div", T(3, 4, lo=-3, hi=0), T(3, 4, lo=0.1, hi=1), reduction="batchmean", tag="batchmean")
    one("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy", T(3, 4, lo=0.01, hi=0.99), T(3, 4, lo=0, hi=1, rg=False), tag="mean")
    one("binary_cross_entropy_with_logits", "torch.nn.functional.binary_cross_entropy_with_logits", T(3, 4, lo=-5, hi=5), T(3, 4, lo=0, hi=1), tag="mean")
    tgt = S([1, 0, 3], dtype=i64)
    one("nll_loss", "torch.nn.functional.nll_loss", T(3, 4, lo=-3, hi=0), tgt, tag="mean")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), tgt, tag="mean")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), S([1, -100, 2], dtype=i64), weight=T(4, lo=0.5, hi=2, rg=False), label_smoothing=0.2, tag="smoothing_weight_ignore")
    one("cross_entropy", "torch.nn.functional.cross_entropy", T(3, 4), T(3, 4, lo=0, hi=1), tag="probs")


def gen_special():
    """Outputs that alias inputs, several outputs (some without gradient), inputs that do not
    require grad, in-place updates of buffers, graphs ptgo cannot differentiate."""
    g = G("alias", "view_output")
    x = g.inp(T(3, 4))
    add(g.out(g.call("Tensor.view", x, 12), g.call("torch.mul", x, 2.0)))
    g = G("alias", "input_output")
    x = g.inp(T(3, 4))
    add(g.out(x, g.call("torch.exp", x)))
    g = G("alias", "transpose_output")
    x = g.inp(T(3, 4))
    add(g.out(g.call("Tensor.t", x)))
    g = G("multi", "int_output")
    x = g.inp(T(3, 4))
    add(g.out(g.call("torch.argmax", x, 1), g.call("torch.softmax", x, 1)))
    g = G("multi", "max_values_indices")
    x = g.inp(T(3, 4))
    r = g.call("torch.max", x, 0)
    add(g.out(r[0], r[1]))
    g = G("multi", "shared_input")
    x, y = g.inp(T(2, 3)), g.inp(T(2, 3, rg=False))
    add(g.out(g.call("torch.sin", x), g.call("torch.mul", x, y), g.call("torch.cos", y)))
    g = G("multi", "unused_input")
    x, y = g.inp(T(2, 3)), g.inp(T(2, 3))
    add(g.out(g.call("torch.tanh", x)))
    g = G("multi", "no_grad_output")
    x = g.inp(T(2, 3, rg=False))
    add(g.out(g.call("torch.exp", x)))
    g = G("multi", "detach")
    x = g.inp(T(2, 3))
    add(g.out(g.call("torch.mul", x, g.call("Tensor.detach", x))))
    g = G("multi", "inplace_intermediate")
    x = g.inp(T(3, 4))
    y = g.call("torch.mul", x, 2.0)
    g.call("Tensor.add_", y, x)
    g.call("Tensor.relu_", y)
    add(g.out(y))
    g = G("notdiff", "dropout_train_expanded")  # (dropout of a layout static strides order is noise · x)
    g.notdiff = True
    add(g.out(g.call("torch.nn.functional.dropout", g.call("Tensor.expand", g.inp(T(4, 1)), 4, 4), p=0.5, training=True)))
    g = G("fallback", "max_pool2d")  # torch's kernel both ways (max_pool2d_with_indices_backward)
    add(g.out(g.call("torch.nn.functional.max_pool2d", g.inp(T(1, 2, 4, 4)), 2)))
    g = G("fallback", "max_pool2d_overlapping_ties")  # 3x3 stride 2 windows over a ReLU's zeros
    add(g.out(g.call("torch.nn.functional.max_pool2d", g.call("torch.relu", g.inp(T(2, 3, 7, 7))), 3, 2, 1)))
    g = G("fallback", "dropout_frozen_input")  # the fallback's input does not require grad: fine
    x, y = g.inp(T(3, 3, rg=False)), g.inp(T(3, 3))
    add(g.out(g.call("torch.mul", g.call("torch.nn.functional.dropout", x, p=0.5, training=True), y)))


def gen_graphs():
    """Model-sized graphs: the partition tests check their saved bytes."""
    g = G("graph", "mlp")  # MLP with GELU and layer norm, softmax cross-entropy loss
    x = g.inp(T(8, 16))
    w1, b1 = g.inp(T(32, 16, lo=-0.3, hi=0.3)), g.inp(T(32, lo=-0.1, hi=0.1))
    lw, lb = g.inp(T(32, lo=0.5, hi=1.5)), g.inp(T(32, lo=-0.1, hi=0.1))
    w2, b2 = g.inp(T(10, 32, lo=-0.3, hi=0.3)), g.inp(T(10, lo=-0.1, hi=0.1))
    tgt = g.inp(S([1, 0, 3, 9, 2, 2, 7, 5], dtype=i64))
    h = g.call("torch.nn.functional.gelu", g.call("torch.nn.functional.linear", x, w1, b1))
    h = g.call("torch.nn.functional.layer_norm", h, (32,), lw, lb)
    logits = g.call("torch.nn.functional.linear", h, w2, b2)
    add(g.out(g.call("torch.nn.functional.cross_entropy", logits, tgt)))

    g = G("graph", "attention")  # a causal self-attention block with a residual
    b, t, e, heads = 2, 6, 8, 2
    x = g.inp(T(b, t, e))
    wqkv, bqkv = g.inp(T(3 * e, e, lo=-0.4, hi=0.4)), g.inp(T(3 * e, lo=-0.1, hi=0.1))
    wo = g.inp(T(e, e, lo=-0.4, hi=0.4))
    qkv = g.call("torch.nn.functional.linear", x, wqkv, bqkv)
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
    add(g.out(g.call("operator.add", g.call("torch.nn.functional.linear", y, wo), x)))

    g = G("graph", "cnn_bn_train")  # conv → BN (training, running statistics) → relu → conv → mean
    x = g.inp(T(2, 3, 6, 6))
    w1 = g.inp(T(4, 3, 3, 3, lo=-0.3, hi=0.3))
    rm, rv = g.attr("bn.running_mean", T(4)), g.attr("bn.running_var", T(4, lo=0.5, hi=2))
    bw, bb = g.inp(T(4, lo=0.5, hi=1.5)), g.inp(T(4, lo=-0.1, hi=0.1))
    w2, b2 = g.inp(T(2, 4, 3, 3, lo=-0.3, hi=0.3)), g.inp(T(2, lo=-0.1, hi=0.1))
    y = g.call("torch.nn.functional.conv2d", x, w1, None, 1, 1)
    y = g.call("torch.nn.functional.batch_norm", y, rm, rv, bw, bb, True, 0.1, 1e-5)
    y = g.call("torch.nn.functional.conv2d", g.call("torch.relu", y), w2, b2, 2)
    add(g.out(g.call("torch.mean", y)))


def main():
    for gen in (gen_unary, gen_activations, gen_binary, gen_reductions, gen_views, gen_data, gen_linalg, gen_conv,
                gen_norm_loss, gen_special, gen_graphs):
        gen()
    with open(sys.argv[1], "w") as f:
        json.dump(CASES, f, separators=(",", ":"))
        f.write("\n")
    sys.stderr.write("gen_cases.py: %d cases, %d calls torch rejected (dropped)\n" % (len(CASES), len(DROPPED)))
    for d in DROPPED:
        sys.stderr.write("  dropped %s\n" % d)


if __name__ == "__main__":
    main()
