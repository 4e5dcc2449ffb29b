"""Random PyTorch programs for the differential fuzzer.

A program is a JSON-able dict (so a failure can be stored and replayed without the generator):

    {"seed": 17,
     "inputs": [{"name": "x0", "shape": [4, 3], "dtype": "float32", "grad": "leaf",
                 "layout": "contig", "values": "normal"}, ...],
     "modules": [["lin0", "nn.Linear(3, 5)"], ...],   # submodules of one nn.Module
     "train": true, "as_module": false,                # module mode; compile the module or a function
     "stmts": [{"src": ["v0 = torch.sin(x0)"], "defs": ["v0"]}, ...],
     "outputs": ["v0"], "backward": true}

Statements refer to the module as ``M`` (rendered as ``self`` when the program is compiled as a
module, ``m`` when the module is a function argument). The generator builds a program one
statement at a time *by running it eagerly*: a candidate statement is executed on the values so
far, so shapes, dtypes and broadcasting come from torch itself and no meta model is needed. A
statement eager rejects is dropped, except that now and then one is kept as the program's last
statement (the program then raises, and ptgo must raise the same exception).
"""
import io
import contextlib
import random
import re
import warnings

import torch
import torch.nn as nn  # noqa: F401  (used by exec'd module constructors)
import torch.nn.functional as F  # noqa: F401

# The most elements a tensor of a generated program may have (64 MiB of float32).
MAX_ELEMENTS = 1 << 24


class TooLarge(Exception):
    """A generated statement made a tensor of more than MAX_ELEMENTS elements."""


DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8, "bool": torch.bool,
}

UNARY = ["sin", "cos", "tan", "tanh", "sigmoid", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt",
         "rsqrt", "abs", "neg", "relu", "erf", "erfc", "floor", "ceil", "round", "trunc", "frac", "sign",
         "sgn", "reciprocal", "square", "atan", "asin", "acos", "sinh", "cosh", "asinh", "atanh",
         "isnan", "isinf", "isfinite", "signbit", "logical_not", "bitwise_not", "nan_to_num", "erfinv",
         "lgamma", "digamma", "i0", "sinc", "deg2rad"]
FUNCTIONAL_UNARY = ["F.gelu({a})", "F.gelu({a}, approximate='tanh')", "F.silu({a})", "F.softplus({a})",
                    "F.elu({a})", "F.leaky_relu({a}, 0.2)", "F.hardtanh({a})", "F.relu6({a})",
                    "F.hardsigmoid({a})", "F.hardswish({a})", "F.mish({a})", "F.logsigmoid({a})",
                    "F.selu({a})", "F.celu({a})", "F.softsign({a})", "F.tanhshrink({a})",
                    "F.hardshrink({a})", "F.softshrink({a}, 0.5)", "F.threshold({a}, 0.1, 20.0)",
                    "torch.clamp({a}, min={s})", "torch.clamp({a}, max={s})", "torch.clamp({a}, {s}, {s2})",
                    "{a}.clamp_min({s})", "{a}.clamp_max({s})", "torch.pow({a}, {p})", "{a} ** {p}",
                    "torch.nan_to_num({a}, nan=0.0, posinf=1.0, neginf=-1.0)", "torch.round({a}, decimals=1)",
                    "torch.logit({a}, eps=1e-6)", "torch.xlogy({a}, {s})", "-{a}", "~{a}", "abs({a})",
                    "torch.special.expit({a})", "torch.special.erfcx({a})", "torch.special.ndtr({a})",
                    "torch.special.log_ndtr({a})", "torch.float_power({a}, 2)", "torch.rad2deg({a})"]
BINARY = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum",
          "minimum", "fmax", "fmin", "atan2", "hypot", "copysign", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
          "xlogy", "nextafter", "heaviside", "ldexp", "logaddexp", "gcd", "bitwise_left_shift"]
BINARY_FORMS = ["torch.add({a}, {b}, alpha={s})", "torch.sub({a}, {b}, alpha=2)",
                "torch.div({a}, {b}, rounding_mode='floor')", "torch.div({a}, {b}, rounding_mode='trunc')",
                "torch.lerp({a}, {b}, 0.3)", "torch.where({a} > 0, {a}, {b})", "torch.where({a} > {b}, {b}, 1.5)",
                "torch.addcmul({a}, {a}, {b}, value=0.5)", "torch.addcdiv({a}, {a}, {b}, value=0.5)",
                "torch.clamp({a}, min={b})", "torch.clamp({a}, max={b})", "torch.isclose({a}, {b})",
                "F.mse_loss({a}, {b})", "F.l1_loss({a}, {b}, reduction='sum')", "F.smooth_l1_loss({a}, {b})",
                "F.binary_cross_entropy_with_logits({a}, {b}.sigmoid())", "F.cosine_similarity({a}, {b}, dim=-1)",
                "torch.dist({a}, {b})"]
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<", "<=", ">", ">=", "==", "!=", "<<", ">>"]
SCALARS = ["0", "1", "2", "-1", "0.5", "-0.5", "2.5", "3", "1e-3", "-0.0", "0.0", "1e10", "float('inf')",
           "float('nan')", "True", "False", "-3", "7"]


def fitting_layout(layout, shape):
    """layout, or "contig" where shape cannot have it: a transpose needs two dims, an expand a
    first dim of at least 2 (from a raw first dim of 1)."""
    if len(shape) < 2 and layout == "t":
        return "contig"
    if layout == "expand" and (not shape or shape[0] < 2):
        return "contig"
    return layout


def dims_of(t):
    return list(range(-t.dim(), t.dim())) if t.dim() else [0]


class Generator:
    """Builds one program from a seed (see the module docstring)."""

    def __init__(self, seed, max_stmts=None):
        self.seed = seed
        self.r = random.Random(seed)
        r = self.r
        self.max_stmts = max_stmts or r.choice([3, 5, 8, 8, 12, 16])
        self.prog = {"seed": seed, "inputs": [], "modules": [], "train": r.random() < 0.6,
                     "as_module": r.random() < 0.3, "stmts": [], "outputs": [], "backward": False}
        self.counter = 0
        self.env = None
        self.module = None

    # ---- names and values --------------------------------------------------------------------

    def fresh(self, prefix="v"):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def tensors(self, pred=None):
        return [k for k, v in self.env.items() if isinstance(v, torch.Tensor) and (pred is None or pred(v))]

    def pick(self, pred=None, prefer_recent=True):
        names = self.tensors(pred)
        if not names:
            return None
        if prefer_recent and self.r.random() < 0.5:
            return names[-1]
        return self.r.choice(names)

    def pick_other(self, a):
        """A second operand for a: a tensor that broadcasts with it (often the same shape)."""
        ta = self.env[a]
        names = self.tensors()
        r = self.r
        same = [n for n in names if self.env[n].shape == ta.shape and n != a]
        if same and r.random() < 0.6:
            return r.choice(same)
        ok = []
        for n in names:
            try:
                torch.broadcast_shapes(ta.shape, self.env[n].shape)
                ok.append(n)
            except RuntimeError:
                pass
        if ok and r.random() < 0.85:
            return r.choice(ok)
        return r.choice(names)

    def scalar(self):
        names = [k for k, v in self.env.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if names and self.r.random() < 0.3:
            return self.r.choice(names)
        return self.r.choice(SCALARS)

    # ---- inputs and modules --------------------------------------------------------------------

    def random_shape(self):
        r = self.r
        u = r.random()
        if u < 0.05:
            return []
        if u < 0.10:
            return [r.choice([256, 300]), r.choice([256, 300])]  # > 64K elements: parallel kernels
        if u < 0.13:
            return [r.choice([2, 3]), 0] if r.random() < 0.5 else [0, 3]
        nd = r.choice([1, 2, 2, 2, 3, 3, 4])
        return [r.choice([1, 2, 3, 4, 4, 5, 8]) for _ in range(nd)]

    def make_input_specs(self):
        r = self.r
        n = r.choice([1, 1, 2, 2, 3])
        base_shape = self.random_shape()
        specs = []
        for i in range(n):
            shape = list(base_shape) if (i > 0 and r.random() < 0.6) else self.random_shape()
            if i > 0 and r.random() < 0.2 and shape:
                shape = shape[1:]  # broadcasts against the first
            u = r.random()
            if u < 0.62:
                dtype = "float32"
            elif u < 0.72:
                dtype = "float64"
            elif u < 0.82:
                dtype = r.choice(["int64", "int32", "int64"])
            elif u < 0.87:
                dtype = "bool"
            elif u < 0.92:
                dtype = "float16"
            elif u < 0.96:
                dtype = "bfloat16"
            else:
                dtype = "uint8"
            floating = dtype.startswith("float") or dtype == "bfloat16"
            values = "normal"
            if floating:
                values = r.choice(["normal", "normal", "normal", "special", "ties", "positive"])
            elif dtype != "bool":
                values = r.choice(["int", "int", "index:%d" % r.choice([2, 3, 4, 5])])
            layout = fitting_layout(r.choice(["contig"] * 6 + ["t", "slice", "expand"]), shape)
            grad = "none"
            if floating and dtype in ("float32", "float64") and r.random() < 0.45:
                grad = r.choice(["leaf", "leaf", "nonleaf"])
            if layout == "expand" and grad == "leaf":
                grad = "nonleaf"
            specs.append({"name": "x%d" % i, "shape": shape, "dtype": dtype, "grad": grad, "layout": layout,
                          "values": values})
        if n >= 2 and r.random() < 0.06:
            # two overlapping views of one base (x0 = base[:-1], x1 = base[1:])
            a, b = specs[0], specs[1]
            b.update(shape=list(a["shape"]), dtype=a["dtype"], values=a["values"], grad="none")
            # (b's layout was chosen for its old shape: seed 6852 gave a 0-d x1 the layout "expand")
            b["layout"] = fitting_layout(b["layout"], b["shape"])
            if a["shape"] and a["shape"][0] > 0:
                a["layout"], b["layout"] = "overlap0", "overlap1"
                a["grad"] = "none" if a["grad"] == "none" else "nonleaf"
                b["grad"] = a["grad"]
        return specs

    # ---- statements ------------------------------------------------------------------------------

    def add_module(self, name_prefix, ctor):
        name = "%s%d" % (name_prefix, len(self.prog["modules"]))
        mod = eval(ctor, {"nn": nn, "torch": torch})
        mod.train(self.prog["train"])
        self.prog["modules"].append([name, ctor])
        setattr(self.module, name, mod)
        return name

    def stmt_unary(self):
        a = self.pick()
        if a is None:
            return None
        v = self.fresh()
        r = self.r
        if r.random() < 0.55:
            op = r.choice(UNARY)
            return ["%s = torch.%s(%s)" % (v, op, a) if r.random() < 0.6 else "%s = %s.%s()" % (v, a, op)], [v]
        form = r.choice(FUNCTIONAL_UNARY)
        return ["%s = %s" % (v, form.format(a=a, s=self.scalar(), s2=r.choice(["1", "2.5", "0.5"]),
                                            p=r.choice(["2", "3", "0.5", "-1", "-2", "1.5", "0"])))], [v]

    def stmt_binary(self):
        a = self.pick()
        if a is None:
            return None
        r = self.r
        v = self.fresh()
        u = r.random()
        if u < 0.35:
            b = self.pick_other(a)
            op = r.choice(BINARY)
            return ["%s = torch.%s(%s, %s)" % (v, op, a, b)], [v]
        if u < 0.55:
            b = self.pick_other(a)
            return ["%s = %s" % (v, r.choice(BINARY_FORMS).format(a=a, b=b, s=r.choice(["2", "0.5", "-1"])))], [v]
        op = r.choice(OPERATORS)
        if u < 0.75:
            b = self.pick_other(a)
            return ["%s = %s %s %s" % (v, a, op, b)], [v]
        s = self.scalar()
        if r.random() < 0.5:
            return ["%s = %s %s %s" % (v, a, op, s)], [v]
        return ["%s = %s %s %s" % (v, s, op, a)], [v]

    def stmt_reduce(self):
        a = self.pick()
        if a is None:
            return None
        t = self.env[a]
        r = self.r
        v = self.fresh()
        d = r.choice(dims_of(t))
        k = r.choice(["", ", keepdim=True"])
        forms = ["{a}.sum()", "{a}.sum({d}{k})", "{a}.mean()", "{a}.mean({d}{k})", "{a}.prod({d})", "{a}.prod()",
                 "torch.amax({a}, {d}{k})", "torch.amin({a}, {d})", "{a}.amax()", "{a}.max()", "{a}.min()",
                 "{a}.max({d})[0]", "{a}.max({d}{k}).indices", "{a}.min({d}).values", "torch.max({a}, {d})[1]",
                 "{a}.argmax()", "{a}.argmin({d})", "{a}.std()", "{a}.std({d})", "{a}.var({d}, unbiased=False)",
                 "{a}.var()", "{a}.norm()", "torch.norm({a}, p=1, dim={d})", "torch.logsumexp({a}, {d})",
                 "{a}.cumsum({d})", "{a}.cumprod({d})", "torch.cummax({a}, {d})[0]", "torch.softmax({a}, {d})",
                 "F.log_softmax({a}, {d})", "F.softmin({a}, {d})", "{a}.any()", "{a}.all({d})",
                 "torch.count_nonzero({a})", "{a}.sum(dtype=torch.float64)", "torch.std_mean({a}, {d})[0]",
                 "torch.var_mean({a})[1]", "{a}.nansum()", "torch.aminmax({a})[0]", "F.normalize({a}, dim={d})",
                 "{a}.sort({d})[0]", "{a}.sort({d}, descending=True)[1]", "{a}.argsort({d})",
                 "torch.topk({a}.flatten(), 1)[0]", "{a}.median()", "{a}.logcumsumexp({d})",
                 "{a}.sum([0, -1])", "{a}.mean(0, dtype=torch.float64)"]
        return ["%s = %s" % (v, r.choice(forms).format(a=a, d=d, k=k))], [v]

    def stmt_view(self):
        a = self.pick()
        if a is None:
            return None
        t = self.env[a]
        r = self.r
        v = self.fresh()
        nd = t.dim()
        d = r.choice(dims_of(t))
        forms = ["{a}.reshape(-1)", "{a}.view(-1)", "{a}.flatten()", "{a}.unsqueeze({d})", "{a}.squeeze()",
                 "{a}.contiguous()", "{a}.flip({d})", "{a}.roll(1, {d})", "{a}.clone()", "{a}.detach()"]
        if nd >= 1:
            n = t.shape[d]
            forms += ["{a}[1:]", "{a}[::2]", "{a}[-1]", "{a}[0]", "{a}[..., 1:]", "{a}.narrow({d}, 0, %d)" % min(n, 1),
                      "{a}.select({d}, 0)", "{a}.chunk(2, {d})[0]", "{a}.split(1, {d})[-1]", "{a}.unbind({d})[0]",
                      "torch.cat([{a}, {a}], {d})", "torch.stack([{a}, {a}], {d})", "{a}.repeat(%s)" % ", ".join(
                          ["2"] + ["1"] * (nd - 1)), "{a}[None]", "{a}.unsqueeze(-1).expand(%s)" % ", ".join(
                          [str(s) for s in t.shape] + ["3"]), "{a}.squeeze({d})", "{a}[..., None]",
                      "{a}.view(%s)" % ", ".join([str(t.shape[0]), "-1"] if nd > 1 else ["-1", "1"]),
                      "{a}.movedim({d}, 0)", "{a}.as_strided(%s, %s)" % ([1], [1])]
            if n > 0:
                forms += ["{a}.index_select({d}, torch.tensor([%d, 0]))" % (n - 1), "{a}[torch.tensor([%d])]" % (
                    r.randrange(n + (1 if r.random() < 0.1 else 0))), "{a}.narrow({d}, %d, 1)" % (n - 1)]
        if nd >= 2:
            i, j = r.sample(range(nd), 2)
            forms += ["{a}.transpose(%d, %d)" % (i, j), "{a}.permute(%s)" % ", ".join(
                str(x) for x in r.sample(range(nd), nd)), "{a}.mT", "{a}[:, 1:]", "{a}[:, ::2]", "{a}[1:, -1]",
                      "{a}.diagonal()", "torch.tril({a})", "torch.triu({a}, 1)", "{a}[:, None]"]
            if nd == 2:
                forms += ["{a}.t()", "{a}.T"]
        if nd >= 1 and t.shape[0] == 1:
            forms += ["{a}.expand(%s)" % ", ".join(["3"] + ["-1"] * (nd - 1))]
        return ["%s = %s" % (v, r.choice(forms).format(a=a, d=d))], [v]

    def stmt_index(self):
        a = self.pick(lambda t: t.dim() >= 1)
        if a is None:
            return None
        t = self.env[a]
        r = self.r
        v = self.fresh()
        d = r.choice(dims_of(t))
        n = t.shape[d]
        hi = n + (1 if r.random() < 0.08 else 0)  # now and then an index out of range
        idx = "torch.tensor(%s)" % [r.randrange(max(hi, 1)) for _ in range(r.choice([1, 2, 3]))]
        ints = self.tensors(lambda u: u.dtype in (torch.int64, torch.int32) and u.dim() >= 1)
        if ints and r.random() < 0.3:
            idx = "(%s.flatten().abs() %% %d)" % (r.choice(ints), max(n, 1))
        bools = self.tensors(lambda u: u.dtype == torch.bool and u.shape == t.shape)
        forms = ["{a}[{i}]", "{a}.index_select({d}, {i})", "{a}[..., {i}]" if d == -1 else "{a}[{i}]",
                 "torch.gather({a}, {d}, torch.zeros_like({a}, dtype=torch.long))",
                 "{a}.masked_fill({a} > 0, {s})", "{a}[{a} > 0]", "torch.where({a} < 0, 0.0, {a})",
                 "{a}.masked_fill(torch.ones_like({a}, dtype=torch.bool), {s})",
                 "torch.take({a}, {i})", "{a}.scatter({d}, torch.zeros_like({a}, dtype=torch.long), {s})",
                 "{a}.index_fill({d}, {i}, {s})", "{a}.nonzero()", "torch.masked_select({a}, {a} != 0)"]
        if bools:
            forms.append("{a}[%s]" % r.choice(bools))
        return ["%s = %s" % (v, r.choice(forms).format(a=a, d=d, i=idx, s=self.scalar()))], [v]

    def stmt_inplace(self):
        a = self.pick(prefer_recent=False)
        if a is None:
            return None
        t = self.env[a]
        r = self.r
        s = self.scalar()
        forms = ["{a}.add_({b})", "{a}.mul_({s})", "{a}.sub_({b}, alpha=2)", "{a}.div_({s})", "{a}.clamp_(min={s})",
                 "{a}.clamp_(-1, 1)", "{a}.relu_()", "{a}.sigmoid_()", "{a}.exp_()", "{a}.neg_()", "{a}.abs_()",
                 "{a}.copy_({b})", "{a}.fill_({s})", "{a}.zero_()", "{a} += {b}", "{a} *= {s}", "{a} -= {b}",
                 "{a} /= {b}", "{a}.masked_fill_({a} < 0, {s})", "{a}.floor_divide_({b})", "{a}.remainder_({s})",
                 "{a}.pow_(2)", "{a}.sqrt_()", "{a}.tanh_()", "{a}.lerp_({b}, 0.5)", "{a}.addcmul_({b}, {b})",
                 "{a}.normal_()", "{a}.uniform_(-1, 1)", "{a}.bernoulli_(0.5)", "{a}.random_(0, 5)",
                 "{a}.exponential_()", "{a}.t_()" if t.dim() == 2 else "{a}.unsqueeze_(0)",
                 "{a}.transpose_(0, -1)", "{a}.squeeze_()", "torch.relu_({a})", "F.relu({a}, inplace=True)",
                 "F.dropout({a}, 0.5, True, True)", "{a}.nan_to_num_()", "{a}.round_()", "{a}.logical_not_()",
                 "{a}.bitwise_and_({b})", "{a}.mul_({b})", "{a}.requires_grad_()"]
        if t.dim() >= 1:
            n = t.shape[0]
            forms += ["{a}[0] = {s}", "{a}[1:] = {b}", "{a}[1:] += {s}", "{a}[::2] *= {s}", "{a}[-1].mul_({s})",
                      "{a}[{a} > 0] = {s}", "{a}[torch.tensor([%d])] = {s}" % r.randrange(max(n, 1) + (
                          1 if r.random() < 0.08 else 0)), "{a}.index_add_(0, torch.tensor([0, 0]), {a}[:2])",
                      "{a}.scatter_(0, torch.zeros_like({a}, dtype=torch.long), {s})",
                      "{a}.index_put_((torch.tensor([0]),), torch.tensor({s}))",
                      "{a}.index_fill_(0, torch.tensor([0]), {s})", "{a}[..., 0] = {b}[..., 0]" if t.dim() else "",
                      "{a}.view(-1)[0] = {s}", "{a}.narrow(0, 0, 1).fill_({s})", "{a}.unsqueeze(0).mul_({s})"]
        if t.dim() >= 2:
            forms += ["{a}.t()[0] = {s}", "{a}.transpose(0, 1)[0].add_({s})", "{a}[:, 0] = {s}", "{a}.diagonal().zero_()",
                      "{a}[:, 1:] -= {b}[:, :-1]", "{a}.transpose(0, -1).mul_(2)"]
        b = self.pick_other(a)
        form = r.choice([f for f in forms if f])
        return [form.format(a=a, b=b, s=s)], []

    def stmt_cast(self):
        a = self.pick()
        if a is None:
            return None
        v = self.fresh()
        b = self.pick_other(a)
        forms = ["{a}.float()", "{a}.double()", "{a}.half()", "{a}.bfloat16()", "{a}.int()", "{a}.long()",
                 "{a}.bool()", "{a}.to(torch.int32)", "{a}.to(torch.float32)", "{a}.type_as({b})", "{a}.to({b}.dtype)",
                 "{a}.to(torch.uint8)", "{a}.to(torch.int8)", "{a}.to(torch.int16)", "{a}.float().to(torch.int32).float()",
                 "{a}.char()", "torch.complex({a}.float(), {a}.float()).abs()", "torch.view_as_real(torch.complex({a}.float(), {a}.float()))",
                 "{a}.to(torch.float16).float()", "{a}.bfloat16().float()"]
        return ["%s = %s" % (v, self.r.choice(forms).format(a=a, b=b))], [v]

    def stmt_factory(self):
        a = self.pick()
        if a is None:
            return None
        v = self.fresh()
        t = self.env[a]
        shape = list(t.shape)
        forms = ["torch.zeros_like({a})", "torch.ones_like({a}) * 2", "torch.full_like({a}, {s})",
                 "torch.arange(%d)" % self.r.choice([1, 3, 4, 5]), "torch.ones(%s)" % shape,
                 "torch.zeros(%s, dtype=torch.float64)" % shape, "torch.arange(%d, dtype=torch.float32).reshape(-1, 1)"
                 % self.r.choice([2, 3, 4]), "torch.linspace(0, 1, %d)" % self.r.choice([2, 4, 5]),
                 "torch.eye(%d)" % self.r.choice([2, 3, 4]), "torch.tensor(%s)" % self.scalar(),
                 "torch.empty_like({a}).fill_(1.5)", "torch.full(%s, {s})" % shape,
                 "torch.scalar_tensor({s})", "torch.zeros_like({a}).bool()"]
        return ["%s = %s" % (v, self.r.choice(forms).format(a=a, s=self.scalar()))], [v]

    def stmt_random(self):
        a = self.pick()
        if a is None:
            return None
        v = self.fresh()
        t = self.env[a]
        forms = ["torch.rand_like({a})", "torch.randn_like({a})", "{a} + torch.rand_like({a})",
                 "torch.rand(%s)" % list(t.shape), "F.dropout({a}, 0.3, training=True)", "F.dropout({a}, 0.5)",
                 "torch.bernoulli(torch.full_like({a}, 0.5))", "torch.randint_like({a}, 0, 5)",
                 "torch.randperm(%d)" % self.r.choice([3, 4, 6]), "torch.randn(%s)" % list(t.shape),
                 "torch.normal(torch.zeros_like({a}), 1.0)", "torch.randint(0, 4, (3,))",
                 "F.dropout({a}, 0.0, training=True)", "F.dropout({a}, 1.0, training=True)",
                 "torch.multinomial(torch.tensor([0.2, 0.3, 0.5]), 2)", "F.alpha_dropout({a}, 0.2, True)"]
        return ["%s = %s" % (v, self.r.choice(forms).format(a=a))], [v]

    def stmt_module(self):
        r = self.r
        floats = self.tensors(lambda t: t.dtype in (torch.float32, torch.float64) and t.dim() >= 1)
        if not floats:
            floats = self.tensors(lambda t: t.dim() >= 1)
        if not floats:
            return None
        a = r.choice(floats)
        t = self.env[a]
        v = self.fresh()
        last = t.shape[-1]
        nd = t.dim()
        u = r.random()
        if u < 0.25 or nd < 2:
            name = self.add_module("lin", "nn.Linear(%d, %d%s)" % (last, r.choice([1, 3, 4, 8]), r.choice(["", ", bias=False"])))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if u < 0.4:
            name = self.add_module("bn", "nn.BatchNorm%dd(%d%s)" % (1 if nd in (2, 3) else 2, t.shape[1], r.choice(
                ["", ", affine=False", ", momentum=None", ", track_running_stats=False"])))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if u < 0.5:
            name = self.add_module("ln", "nn.LayerNorm(%d%s)" % (last, r.choice(["", ", elementwise_affine=False"])))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if u < 0.6:
            name = self.add_module("drop", "nn.Dropout(%s)" % r.choice(["0.5", "0.2", "0.0"]))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if u < 0.72 and nd in (3, 4):
            k = r.choice([1, 2, 3])
            name = self.add_module("conv", "nn.Conv%dd(%d, %d, %d, padding=%d%s)" % (
                nd - 2, t.shape[1], r.choice([2, 4]), k, r.choice([0, 1]), r.choice(["", ", bias=False", ", stride=2"])))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if u < 0.82:
            n = r.choice([3, 5, 10])
            name = self.add_module("emb", "nn.Embedding(%d, %d)" % (n, r.choice([2, 4])))
            ints = self.tensors(lambda t: t.dtype in (torch.int64, torch.int32))
            src = r.choice(ints) if ints and r.random() < 0.7 else "%s.long()" % a
            return ["%s = M.%s(%s.abs() %% %d)" % (v, name, src, n + (1 if r.random() < 0.05 else 0))], [v]
        if u < 0.9:
            name = self.add_module("act", r.choice(["nn.ReLU()", "nn.ReLU(inplace=True)", "nn.GELU()", "nn.Tanh()",
                                                    "nn.Softmax(dim=-1)", "nn.SiLU()", "nn.Hardswish()"]))
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        if nd in (3, 4):
            name = self.add_module("gn", "nn.GroupNorm(1, %d)" % t.shape[1])
            return ["%s = M.%s(%s)" % (v, name, a)], [v]
        fn = r.choice(["F.max_pool1d({a}, 2)" if nd == 3 else "F.max_pool2d({a}, 2)" if nd == 4 else "F.relu({a})",
                       "F.avg_pool1d({a}, 1)" if nd == 3 else "F.adaptive_avg_pool2d({a}, 1)" if nd == 4 else "F.elu({a})",
                       "F.layer_norm({a}, [%d])" % last, "F.linear({a}, torch.ones(2, %d))" % last,
                       "{a} @ {a}.transpose(-1, -2)", "torch.matmul({a}, torch.ones(%d, 2))" % last,
                       "F.batch_norm({a}, None, None, training=True)", "F.embedding(torch.tensor([0, 1]), {a}.reshape(%d, -1))"
                       % t.shape[0], "F.pad({a}, (1, 1))", "F.interpolate({a}, scale_factor=2)" if nd == 3 else "F.glu({a}, -1)",
                       "torch.einsum('...i,...i->...', {a}, {a})", "torch.bmm({a}, {a}.transpose(1, 2))" if nd == 3 else "F.softplus({a})"])
        return ["%s = %s" % (v, fn.format(a=a))], [v]

    def stmt_python(self):
        """Python scalars, graph breaks (print, .item(), .tolist()) and control flow."""
        a = self.pick()
        if a is None:
            return None
        r = self.r
        t = self.env[a]
        u = r.random()
        v = self.fresh()
        if u < 0.15:
            return ["%s = %s.shape[%d] * 2 + 1" % (v, a, r.choice(dims_of(t))) if t.dim() else "%s = %s.dim() + 1" % (v, a)], [v]
        if u < 0.27:
            s = self.fresh("s")
            return ["%s = %s.sum().item()" % (s, a), "%s = %s * %s" % (v, a, s)], [s, v]
        if u < 0.35:
            return ["print('shape', %s.shape, %s.dtype)" % (a, a), "%s = %s + 1" % (v, a)], [v]
        if u < 0.42:
            return ["%s = len(%s.tolist()) if %s.dim() else 0" % (v, a, a)], [v]
        f1, f2 = r.sample(["torch.sin({a})", "{a} * 2", "{a} - 1", "{a}.abs()", "torch.relu({a})", "{a}.neg()",
                           "{a} + {a}"], 2)
        if u < 0.62:
            cond = r.choice(["%s.sum() > 0" % a, "%s.max() > 0.5" % a, "(%s > 0).any()" % a, "%s.mean() < 0" % a,
                             "bool(%s.numel() and %s.flatten()[0] > 0)" % (a, a)])
            return ["if %s:" % cond, "    %s = %s" % (v, f1.format(a=a)), "else:", "    %s = %s" % (v, f2.format(a=a))], [v]
        if u < 0.75:
            cond = r.choice(["%s.dim() > 1" % a, "%s.shape[0] > 2" % a if t.dim() else "True", "%s.dtype == torch.float32" % a,
                             "%s.requires_grad" % a, "%s.is_contiguous()" % a, "M.training"])
            return ["if %s:" % cond, "    %s = %s" % (v, f1.format(a=a)), "else:", "    %s = %s" % (v, f2.format(a=a))], [v]
        if u < 0.9:
            n = r.choice([2, 3])
            return ["%s = %s" % (v, a), "for i in range(%d):" % n, "    %s = %s * 0.5 + i" % (v, v)], [v]
        lst = self.fresh("l")
        return ["%s = [%s, %s * 2]" % (lst, a, a), "%s.append(%s.sum())" % (lst, a),
                "%s = %s[0] + %s[1] if len(%s) > 2 else %s" % (v, lst, lst, lst, a)], [lst, v]

    KINDS = [(18, "unary"), (16, "binary"), (12, "reduce"), (12, "view"), (7, "index"), (12, "inplace"),
             (6, "cast"), (3, "factory"), (5, "random"), (8, "module"), (6, "python")]

    def next_stmt(self):
        r = self.r
        total = sum(w for w, _ in self.KINDS)
        u = r.uniform(0, total)
        for w, kind in self.KINDS:
            u -= w
            if u <= 0:
                break
        return getattr(self, "stmt_" + kind)()

    # ---- running -----------------------------------------------------------------------------------

    def replay(self):
        """Runs the program so far from scratch (fresh inputs and module)."""
        from . import harness

        self.module = harness.build_module(self.prog)
        args = harness.make_inputs(self.prog, 0)
        self.env = {spec["name"]: a for spec, a in zip(self.prog["inputs"], args.inputs)}
        torch.manual_seed(0)
        for st in self.prog["stmts"]:
            self.exec_lines(st["src"])

    def exec_lines(self, lines):
        src = "\n".join(lines)
        g = {"torch": torch, "F": F, "nn": nn, "M": self.module}
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            exec(compile(src, "<fuzz-gen>", "exec"), g, self.env)
        # A statement whose tensors are huge (sizes taken from a data-dependent count: seed
        # 37305 kept tensors of 2.7 GB each until the worker ran out of memory) is rejected
        # like one that raises.
        for v in self.env.values():
            if isinstance(v, torch.Tensor) and v.numel() > MAX_ELEMENTS:
                raise TooLarge("%s elements" % v.numel())

    def generate(self):
        r = self.r
        self.prog["inputs"] = self.make_input_specs()
        self.replay()
        tries = 0
        while len(self.prog["stmts"]) < self.max_stmts and tries < self.max_stmts * 6:
            tries += 1
            got = self.next_stmt()
            if got is None:
                continue
            lines, defs = got
            nmods = len(self.prog["modules"])
            try:
                self.exec_lines(lines)
            except TooLarge:
                del self.prog["modules"][nmods:]
                self.replay()
                continue
            except Exception:
                if r.random() < 0.06 and len(self.prog["stmts"]) >= 1:
                    # keep the failing statement as the last one: the program raises
                    self.prog["stmts"].append({"src": lines, "defs": defs})
                    break
                del self.prog["modules"][nmods:]
                self.replay()
                continue
            self.prog["stmts"].append({"src": lines, "defs": defs})
        # outputs: the last tensor defined, and a few others
        defined = [d for st in self.prog["stmts"] for d in st["defs"]]
        outs = []
        if defined:
            outs.append(defined[-1])
            for d in defined[:-1]:
                if r.random() < 0.25:
                    outs.append(d)
        if not outs or r.random() < 0.15:
            outs.append(self.prog["inputs"][0]["name"])
        self.prog["outputs"] = list(dict.fromkeys(outs))
        has_grad = any(s["grad"] != "none" for s in self.prog["inputs"]) or bool(self.prog["modules"])
        self.prog["backward"] = has_grad and r.random() < 0.6
        return self.prog


NAME_RE = re.compile(r"\b[xvsl]\d+\b")


def uses(stmt):
    """Names a statement reads (inputs x*, values v*, scalars s*, lists l*): every name it refers
    to that it does not define itself (the templates assign what they define before reading it)."""
    return set(NAME_RE.findall("\n".join(stmt["src"]))) - set(stmt["defs"])


def generate(seed, max_stmts=None):
    return Generator(seed, max_stmts).generate()


def render(prog, as_module=None):
    """The program's source: a function ``fn`` (and a class ``Prog`` when it is a module)."""
    as_module = prog["as_module"] if as_module is None else as_module
    names = [s["name"] for s in prog["inputs"]]
    body = []
    for st in prog["stmts"]:
        for line in st["src"]:
            body.append("    " + line.replace("M.", "self." if as_module else "m."))
    outs = prog["outputs"]
    body.append("    return (%s%s)" % (", ".join(outs), "," if len(outs) == 1 else ""))
    lines = ["import torch", "import torch.nn as nn", "import torch.nn.functional as F", ""]
    lines += ["class Prog(nn.Module):", "    def __init__(self):", "        super().__init__()"]
    for name, ctor in prog["modules"]:
        lines.append("        self.%s = %s" % (name, ctor))
    if as_module:
        lines.append("")
        lines.append("    def forward(self, %s):" % ", ".join(names))
        lines += ["    " + b for b in body]
    lines.append("")
    if not as_module:
        lines.append("def fn(m, %s):" % ", ".join(names))
        lines += body
    return "\n".join(lines) + "\n"
