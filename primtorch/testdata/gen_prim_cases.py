#!/usr/bin/python3
"""Records eager PyTorch's results for the core ops ("prims") through their torch equivalents.

Run with the torch interpreter (/usr/bin/python3), normally through
    go test ./primtorch -run TestPrimMeta -update

Each case is one prims call (target, arguments, input tensors with values and layouts) and the
torch call that computes the same thing (prims.add(x, y) is torch.add(x, y), prims.slice(x, d,
a, b, s) is torch.ops.aten.slice.Tensor(x, d, a, b, s), ...). The output's meta and values are
written. primtorch's test checks the prim's meta function against them (dtype and shape;
strides where the contract fixes them: views and elementwise ops); primtorch/ref's test runs the
prim with the reference interpreter and compares values.

Usage: gen_prim_cases.py OUT.json
"""
import json
import math
import sys

import torch

torch.manual_seed(99)
f32, f64, f16, bf16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
i64, i32, i8, u8, b8 = torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool
DT = {b8: "b8", u8: "u8", i8: "i8", torch.int16: "i16", i32: "i32", i64: "i64", f16: "f16", bf16: "bf16",
      f32: "f32", f64: "f64"}
aten = torch.ops.aten


def T(*shape, dtype=f32, lo=-3.0, hi=3.0, t=False, vals=None):
    """A tensor (contiguous, or with its last two dims transposed in memory when t)."""
    shape = list(shape)
    n = 1
    for s in shape:
        n *= s
    if vals is not None:
        x = torch.tensor(vals, dtype=dtype).reshape(shape)
    elif dtype == b8:
        x = torch.rand(shape) > 0.5
    elif dtype.is_floating_point:
        x = (torch.rand(shape, dtype=f64) * (hi - lo) + lo).to(dtype)
    else:
        x = torch.randint(int(lo), int(hi) + 1, shape).to(dtype)
    if t:
        x = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    return x


def enc_float(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def enc_values(t):
    vals = t.detach().reshape(-1).tolist() if t.dim() else [t.item()]
    if t.dtype.is_floating_point:
        return [enc_float(float(v)) for v in vals]
    if t.dtype == b8:
        return [1 if v else 0 for v in vals]
    return vals


def enc_tensor(t):
    """The tensor with its whole storage (its layout is rebuilt exactly)."""
    st = t.storage()
    base = torch.tensor(st.tolist(), dtype=t.dtype) if len(st) else torch.zeros(0, dtype=t.dtype)
    return {"dtype": DT[t.dtype], "shape": list(t.shape), "strides": list(t.stride()),
            "offset": t.storage_offset(), "storage": enc_values(base)}


CASES = []


class Case:
    def __init__(self, prim):
        self.prim, self.tensors = prim, []

    def enc(self, a):
        if isinstance(a, torch.Tensor):
            for i, t in enumerate(self.tensors):
                if t is a:
                    return {"T": i}
            self.tensors.append(a)
            return {"T": len(self.tensors) - 1}
        if isinstance(a, bool) or a is None or isinstance(a, (int, str)):
            return a
        if isinstance(a, float):
            v = enc_float(a)
            return {"f": v} if isinstance(v, str) else v
        if isinstance(a, torch.dtype):
            return {"dtype": DT[a]}
        if isinstance(a, (list, tuple)):
            return [self.enc(e) for e in a]
        raise TypeError(type(a))


def prim(name, args, fn, tag="", strides=None):
    """Records prims.name(*args) computed by fn() in torch."""
    c = Case("prims." + name)
    enc = [c.enc(a) for a in args]
    try:
        out = fn()
    except Exception as e:
        sys.stderr.write("gen_prim_cases.py: prims.%s[%s] failed in torch: %s\n" % (name, tag, e))
        sys.exit(1)
    if strides is None:
        strides = name in VIEWS or name in ELEMENTWISE
    CASES.append({"prim": c.prim, "tag": tag, "tensors": [enc_tensor(t) for t in c.tensors], "args": enc,
                  "out": {"dtype": DT[out.dtype], "shape": list(out.shape), "strides": list(out.stride()),
                          "offset": out.storage_offset(), "values": enc_values(out.contiguous())},
                  "check_strides": strides})


UNARY = ["abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos",
         "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc", "floor", "ceil",
         "round", "trunc", "sign", "reciprocal", "bitwise_not", "logical_not", "isnan", "isinf", "isfinite"]
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.true_divide,
          "floordiv": torch.floor_divide, "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow,
          "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2, "hypot": torch.hypot,
          "copysign": torch.copysign, "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
          "bitwise_xor": torch.bitwise_xor, "shift_left": torch.bitwise_left_shift,
          "shift_right": torch.bitwise_right_shift, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
          "le": torch.le, "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and,
          "logical_or": torch.logical_or, "logical_xor": torch.logical_xor}
ELEMENTWISE = set(UNARY) | set(BINARY) | {"where", "fma", "convert_element_type"}
VIEWS = {"view", "permute", "expand", "slice", "select", "squeeze", "unsqueeze", "as_strided"}
POS = {"log", "log1p", "log2", "log10", "sqrt", "rsqrt"}
UNIT = {"asin", "acos"}
INTEGRAL = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}
FLOAT_ONLY = {"div", "atan2", "hypot", "copysign"}


def gen_elementwise():
    for name in UNARY:
        fn = getattr(torch, name)
        if name in INTEGRAL:
            x = T(3, 4, dtype=i32, lo=-9, hi=9)
            prim(name, [x], lambda: fn(x), tag="i32")
            y = T(4, dtype=b8)
            prim(name, [y], lambda: fn(y), tag="bool")
            continue
        lo, hi = (0.1, 5) if name in POS else ((-0.9, 0.9) if name in UNIT else (-4, 4))
        x = T(3, 4, lo=lo, hi=hi, t=True)
        prim(name, [x], lambda: fn(x), tag="f32t")
        y = T(5, dtype=f64, lo=lo, hi=hi)
        prim(name, [y], lambda: fn(y), tag="f64")
        if name in ("abs", "neg", "floor", "ceil", "round", "trunc", "sign", "logical_not", "isnan", "isinf", "isfinite"):
            z = T(2, 3, dtype=i64, lo=-5, hi=5)
            prim(name, [z], lambda: fn(z), tag="i64")
    s = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 2.5, -2.5, 0.5])
    for name in ("sign", "round", "isnan", "isinf", "isfinite", "floor", "abs"):
        fn = getattr(torch, name)
        prim(name, [s], lambda: fn(s), tag="special")
    for name, fn in BINARY.items():
        if name in INTEGRAL:
            x, y = T(3, 4, dtype=i64, lo=-50, hi=50), T(3, 4, dtype=i64, lo=0, hi=5)
            prim(name, [x, y], lambda: fn(x, y), tag="i64")
            prim(name, [x, 2], lambda: fn(x, torch.full_like(x, 2)), tag="number")
            continue
        x, y = T(3, 4, t=True), T(3, 4, lo=0.5, hi=3)
        prim(name, [x, y], lambda: fn(x, y), tag="f32")
        prim(name, [x, 1.5], lambda: fn(x, torch.full_like(x, 1.5)), tag="number")
        prim(name, [2.0, y], lambda: fn(torch.full_like(y, 2.0), y), tag="number_first")
        if name not in FLOAT_ONLY:
            a, b = T(3, 4, dtype=i32, lo=-9, hi=9), T(3, 4, dtype=i32, lo=1, hi=4)
            prim(name, [a, b], lambda: fn(a, b), tag="i32")
            nb = T(3, 4, dtype=i32, lo=-4, hi=-1)
            prim(name, [a, nb], lambda: fn(a, nb), tag="i32_negative")
    c = T(3, 4, dtype=b8)
    x, y = T(3, 4), T(3, 4, dtype=f32, t=True)
    prim("where", [c, x, y], lambda: torch.where(c, x, y), tag="f32")
    prim("where", [c, x, -1.0], lambda: torch.where(c, x, -1.0), tag="number")
    ok = torch.zeros(3, 4, dtype=b8)  # check(cond) is cond where no element is true (it raises otherwise)
    prim("check", [ok], lambda: ok.clone(), tag="passes")
    # fma: one rounding, as torch's AVX2/AVX-512 kernels of addcmul and add(alpha=) compute it
    y2, z = T(3, 4), T(3, 4)
    prim("fma", [x, y2, z], lambda: torch.addcmul(z, x, y2), tag="f32")
    prim("fma", [1.5, y2, z], lambda: torch.add(z, y2, alpha=1.5), tag="number")
    x64, y64, z64 = T(5, dtype=f64), T(5, dtype=f64), T(5, dtype=f64)
    prim("fma", [x64, y64, z64], lambda: torch.addcmul(z64, x64, y64), tag="f64")
    for dt in (f64, i32, b8, f16, bf16, u8):
        z = T(2, 3, lo=-300, hi=300)
        prim("convert_element_type", [z, dt], lambda: z.to(dt), tag=DT[dt])
    w = T(4, dtype=i64, lo=-3, hi=3)
    prim("convert_element_type", [w, f32], lambda: w.to(f32), tag="i64_f32")


def gen_reductions():
    x = T(2, 3, 4, t=True)
    for name, fn in [("sum", torch.sum), ("amax", torch.amax), ("amin", torch.amin)]:
        prim(name, [x, [1], False], lambda: fn(x, [1], False), tag="dim1")
        prim(name, [x, [0, 2], True], lambda: fn(x, [0, 2], True), tag="keep")
        prim(name, [x, [], False], lambda: fn(x, [0, 1, 2], False), tag="all")
    n = torch.tensor([[1.0, float("nan"), 3.0], [2.0, 5.0, -1.0]])
    prim("amax", [n, [1], False], lambda: torch.amax(n, [1], False), tag="nan")
    xi = T(3, 4, dtype=i64, lo=-9, hi=9)
    prim("sum", [xi, [0], False], lambda: torch.sum(xi, [0]), tag="i64")
    prim("prod", [x, [2], False], lambda: torch.prod(x, 2, False), tag="dim")
    prim("prod", [xi, [1], True], lambda: torch.prod(xi, 1, True), tag="i64")
    b = T(3, 4, dtype=b8)
    prim("any", [b, [1], False], lambda: torch.any(b, 1), tag="dim")
    prim("all", [b, [0], True], lambda: torch.all(b, 0, True), tag="keep")
    prim("any", [x, [], False], lambda: torch.any(x), tag="all")
    ties = torch.tensor([[1.0, 3.0, 3.0, 0.0], [float("nan"), 2.0, float("nan"), 5.0]])
    for name, fn in [("argmax", torch.argmax), ("argmin", torch.argmin)]:
        prim(name, [ties, [1], False], lambda: fn(ties, 1), tag="ties_nan")
        prim(name, [xi, [0], True], lambda: fn(xi, 0, True), tag="i64")
    for name, fn in [("cumsum", torch.cumsum), ("cumprod", torch.cumprod)]:
        y = T(3, 4, lo=0.5, hi=1.5, t=True)
        prim(name, [y, 1], lambda: fn(y, 1), tag="f32")
        prim(name, [xi, 0], lambda: fn(xi, 0), tag="i64")


def gen_views():
    x = T(2, 3, 4)
    xt = T(3, 4, t=True)
    prim("view", [x, [6, 4]], lambda: x.view(6, 4), tag="merge")
    prim("view", [xt, [3, 2, 2]], lambda: xt.view(3, 2, 2), tag="split_t")
    prim("permute", [x, [2, 0, 1]], lambda: x.permute(2, 0, 1), tag="plain")
    e = T(3, 1)
    prim("expand", [e, [2, 3, 5]], lambda: e.expand(2, 3, 5), tag="plain")
    prim("slice", [x, 2, 1, 4, 2], lambda: aten.slice.Tensor(x, 2, 1, 4, 2), tag="step")
    prim("slice", [xt, 0, 1, 1, 1], lambda: aten.slice.Tensor(xt, 0, 1, 1, 1), tag="empty")
    prim("select", [xt, 1, 2], lambda: torch.select(xt, 1, 2), tag="plain")
    s = T(2, 1, 3, 1)
    prim("squeeze", [s, [1, 3]], lambda: s.squeeze(3).squeeze(1), tag="two")
    prim("unsqueeze", [xt, 2], lambda: xt.unsqueeze(2), tag="last")
    prim("as_strided", [x, [2, 2], [5, 2], 3], lambda: torch.as_strided(x, [2, 2], [5, 2], 3), tag="plain")


def gen_data():
    x = T(3, 4, t=True)
    prim("clone", [x], lambda: torch.clone(x, memory_format=torch.contiguous_format), tag="transposed")
    # (fixed values: no draw from the generator, so the cases after keep theirs)
    v, e = T(2, 3, vals=[0.5, -1.0, 2.0, -0.0, 3.5, 1e30]), T(2, 3, vals=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    prim("grad_as", [v, e], lambda: torch.clone(v, memory_format=torch.contiguous_format), tag="plain")
    a, b = T(2, 3), T(4, 3)
    prim("cat", [[a, b], 0], lambda: torch.cat([a, b], 0), tag="dim0")
    c = T(2, 1)
    prim("cat", [[a, c], 1], lambda: torch.cat([a, c], 1), tag="dim1")
    prim("constant_pad_nd", [x, [1, 2, 0, 1], 0.5], lambda: torch.constant_pad_nd(x, [1, 2, 0, 1], 0.5), tag="pad")
    prim("constant_pad_nd", [x, [-1, 1], 0.0], lambda: torch.constant_pad_nd(x, [-1, 1], 0.0), tag="crop")
    idx = torch.tensor([[0, 3], [2, 2], [1, 0]])
    prim("gather", [x, 1, idx], lambda: torch.gather(x, 1, idx), tag="dim1")
    iv = torch.tensor([2, 0, 2])
    prim("index_select", [x, 1, iv], lambda: torch.index_select(x, 1, iv), tag="dim1")
    iv32 = torch.tensor([1, 0], dtype=i32)
    prim("index_select", [x, 0, iv32], lambda: torch.index_select(x, 0, iv32), tag="i32")
    y = T(3, 4, 5)
    i1, i2 = torch.tensor([[0, 2], [1, -1]]), torch.tensor([4, 0])
    prim("index", [y, [None, i1, i2]], lambda: aten.index.Tensor(y, [None, i1, i2]), tag="adjacent", strides=False)
    prim("index", [y, [i1, None, i2]], lambda: aten.index.Tensor(y, [i1, None, i2]), tag="split", strides=False)
    s = T(2, 4)
    si = torch.tensor([[0, 2, 1, 3], [3, 1, 0, 2]])
    src = T(2, 4)
    prim("scatter", [s, 1, si, src], lambda: torch.scatter(s, 1, si, src), tag="src")
    prim("scatter", [s, 0, torch.tensor([[1, 0, 1, 0]]), 7.0], lambda: torch.scatter(s, 0, torch.tensor([[1, 0, 1, 0]]), 7.0), tag="value")
    pi = torch.tensor([0, 2, 0])
    v = T(3, 4)
    prim("index_put", [x, [pi], v, True], lambda: torch.index_put(x, [pi], v, True), tag="accumulate")
    pj = torch.tensor([1, 2])
    prim("index_put", [x, [None, pj], 5.0, False], lambda: torch.index_put(x, [torch.arange(3)[:, None], pj], torch.tensor(5.0)), tag="none_index")
    prim("full", [[2, 3], 1.5, f32], lambda: torch.full([2, 3], 1.5, dtype=f32), tag="f32")
    prim("full", [[4], 3, i64], lambda: torch.full([4], 3, dtype=i64), tag="i64")
    prim("full", [[2], True, b8], lambda: torch.full([2], True, dtype=b8), tag="bool")
    prim("iota", [5, 2, 3, i64], lambda: torch.arange(2, 17, 3, dtype=i64), tag="i64")
    prim("iota", [4, 0.5, 0.1, f32], lambda: (0.5 + torch.arange(4, dtype=f64) * 0.1).to(f32), tag="f32")
    d, s2 = T(3, 3), T(3, 3)
    prim("copy_", [d, s2], lambda: d.clone().copy_(s2), tag="plain", strides=True)


def gen_extern():
    a, b = T(3, 4), T(4, 5, t=True)
    prim("mm", [a, b], lambda: torch.mm(a, b), tag="f32")
    c, d = T(2, 3, 4), T(2, 4, 2)
    prim("bmm", [c, d], lambda: torch.bmm(c, d), tag="f32")
    bias = T(5)
    prim("addmm", [bias, a, b], lambda: torch.addmm(bias, a, b), tag="row_bias")
    x, w, bb = T(1, 4, 5, 5), T(6, 2, 3, 3), T(6)
    prim("convolution", [x, w, bb, [2, 1], [1, 0], [1, 2], False, [0, 0], 2],
         lambda: torch.convolution(x, w, bb, [2, 1], [1, 0], [1, 2], False, [0, 0], 2), tag="conv2d")
    x1, w1 = T(2, 3, 6), T(3, 2, 3)
    prim("convolution", [x1, w1, None, [2], [1], [1], True, [1], 1],
         lambda: torch.convolution(x1, w1, None, [2], [1], [1], True, [1], 1), tag="transposed1d")
    x3, w3 = T(1, 2, 3, 3, 3), T(2, 2, 2, 2, 2)
    prim("convolution", [x3, w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1],
         lambda: torch.convolution(x3, w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], False, [0, 0, 0], 1), tag="conv3d")


def main():
    for g in (gen_elementwise, gen_reductions, gen_views, gen_data, gen_extern):
        g()
    with open(sys.argv[1], "w") as f:
        json.dump(CASES, f, separators=(",", ":"))
        f.write("\n")
    sys.stderr.write("gen_prim_cases.py: %d cases\n" % len(CASES))


if __name__ == "__main__":
    main()
