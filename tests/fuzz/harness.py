"""Runs a fuzz program eagerly and through ptgo and compares everything eager defines.

For each backend ("eager", "aot_eager", "inductor") the program is compiled once and called three
times — fresh compile, cache hit (same values), changed input values — beside an eager twin (its
own module instance, built from the same seed; fresh inputs per call). Each call runs under the
same torch seed on both sides; after it (and after a backward pass with seeded tangents, when the
program asks for one) the two sides are compared on:

- the exception, if any: type and message (ptgo's own BackendCompilerFailed is a failure too);
- outputs: structure, Python values, tensor dtype, shape, requires_grad, strides (views of an
  input must be the same view; contiguous results contiguous; otherwise eager's strides), whether
  the output aliases an input, values (tolerance per dtype; NaN and inf positions, the sign of
  infinities and of zeros exactly);
- the inputs after the call (in-place writes), the module's state_dict and `training` flag;
- gradients: `.grad` of every leaf input and parameter (None vs a tensor, then values), the
  exception the backward raised;
- what the call printed, and torch's RNG state afterwards (`torch.get_rng_state()`).
"""
import contextlib
import copy
import hashlib
import importlib.util
import io
import os
import re
import sys
import tempfile
import traceback
import warnings

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode

from . import gen

BACKENDS = ("eager", "aot_eager", "inductor")
CALLS = 3

# (rtol, atol) per dtype: rounding differences of a different evaluation order (ptgo accumulates
# float sums in double, fuses, vectorises) stay inside them.
TOLERANCES = {
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float32: (2e-5, 2e-5),
    torch.float64: (1e-9, 1e-9),
}


class Failure(Exception):
    """One difference between eager and a backend."""

    def __init__(self, kind, detail, backend=None, call=None):
        super().__init__("%s: %s" % (kind, detail))
        self.kind, self.detail, self.backend, self.call = kind, detail, backend, call

    def as_dict(self):
        return {"kind": self.kind, "detail": self.detail[:2000], "backend": self.backend, "call": self.call}


# ---- inputs and modules ---------------------------------------------------------------------------

class Args:
    def __init__(self):
        self.inputs = []   # what the program is called with
        self.leaves = []   # (label, tensor) whose .grad is compared after backward


def _values(spec, shape, g):
    dt = gen.DTYPES[spec["dtype"]]
    kind = spec["values"]
    if dt == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    if kind.startswith("index:"):
        return torch.randint(0, int(kind[6:]), shape, generator=g).to(dt)
    if kind == "int":
        lo = 0 if dt == torch.uint8 else -5
        return torch.randint(lo, 6, shape, generator=g).to(dt)
    t = torch.randn(shape, generator=g, dtype=torch.float64)
    if kind == "special":
        specials = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 1e30, -1e-30,
                                 0.5, 88.0, -88.0], dtype=torch.float64)
        pick = torch.randint(0, len(specials), shape, generator=g)
        mask = torch.rand(shape, generator=g) < 0.25
        t = torch.where(mask, specials[pick], t)
    elif kind == "ties":
        t = (t * 2).round() / 2
    elif kind == "positive":
        t = torch.rand(shape, generator=g, dtype=torch.float64) + 0.05
    return t.to(dt)


def _raw_shape(spec):
    shape, layout = list(spec["shape"]), spec["layout"]
    if layout == "t":
        return shape[::-1]
    if layout == "slice" and shape:
        return shape[:-1] + [2 * shape[-1]]
    if layout == "expand":
        return [1] + shape[1:]
    if layout == "overlap0":
        return [shape[0] + 1] + shape[1:]
    return shape


def _view(spec, raw):
    shape, layout = list(spec["shape"]), spec["layout"]
    if layout == "t":
        return raw.permute(*reversed(range(raw.dim())))
    if layout == "slice" and shape:
        return raw[..., ::2]
    if layout == "expand":
        return raw.expand(*shape)
    if layout == "overlap0":
        return raw[:-1]
    if layout == "overlap1":
        return raw[1:]
    return raw


# Relative size of the perturbation that measures how sensitive a program's results are to
# rounding (see Slack), per dtype: a few units in the last place.
PERTURB = {torch.float32: 1e-6, torch.float64: 1e-13, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def perturb(t, g, nan_sign=None):
    """t with every element moved by a few units in the last place (zeros, infinities, NaN kept;
    with nan_sign ±1, every NaN given that sign)."""
    eps = PERTURB.get(t.dtype)
    if eps is None:
        return t
    noise = torch.randn(t.shape, generator=g, dtype=torch.float64) * eps
    out = (t.double() * (1 + noise)).to(t.dtype)
    if nan_sign is not None:
        # A NaN's sign is the implementation's choice (IEEE 754 §6.3 does not interpret it),
        # and torch's kernels choose differently by path: eager's sigmoid(NaN) is -NaN in a
        # tensor of fewer than 16 elements and +NaN in a longer one (fuzz seed 1920, read by
        # signbit). One perturbed run makes every NaN positive, the other negative, so one of
        # them differs from eager wherever a result derives from a NaN's sign: that is slack
        # (Slack) like the last bits of a value.
        nan = torch.isnan(out)
        if nan.any():
            out = torch.where(nan, torch.copysign(out, torch.tensor(float(nan_sign), dtype=t.dtype)), out)
    return out


def nan_sign_of(perturbation):
    """The sign perturbed run `perturbation` (1, 2) gives every NaN (perturb)."""
    return 1 if perturbation % 2 else -1


def _zero_tensor(t):
    return getattr(t, "_is_zerotensor", lambda: False)()


SUMS = {"aten::sum", "aten::mean", "aten::var_mean", "aten::std_mean"}


class PerturbMode(TorchDispatchMode):
    """Eager with rounding noise: every float result of every aten op (forward and backward,
    random draws included; views excepted) moved by a few ulps, in place. What a program's results
    do under it is how much rounding the program amplifies (Slack)."""

    def __init__(self, seed):
        super().__init__()
        self.g = torch.Generator().manual_seed(seed)
        self.nan_sign = nan_sign_of(seed)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        schema = func._schema
        if any(r.alias_info is not None for r in schema.returns) and not schema.is_mutable:
            return out  # a view: its base is perturbed already
        if schema.name in SUMS and args and isinstance(args[0], torch.Tensor) and args[0].is_floating_point():
            # A sum's rounding error scales with its terms' magnitudes, not with the result: a
            # mean that is 0 up to rounding (of a LayerNorm's output: fuzz seed 3293) has a sign
            # the summation order decides, and moving the result by a few ulps of itself never
            # changes it. Each perturbed run moves it by a few ulps of the sum of magnitudes,
            # one run up and the other down (the sign is that run's NaN sign).
            with torch.no_grad():
                mag = func(args[0].abs(), *args[1:], **(kwargs or {}))
            r, mag = (out[1], mag[1]) if isinstance(out, tuple) else (out, mag)  # var_mean's mean
            if r.dtype in PERTURB and r.numel():
                r.add_(mag.to(r.dtype) * (PERTURB[r.dtype] * self.nan_sign))
        for t in (out if isinstance(out, (tuple, list)) else [out]):
            # (sgn's gradient is an efficient zero tensor: no storage, and reading it from
            # Python in a dispatch mode segfaults torch 2.14: fuzz seed 36727)
            if isinstance(t, torch.Tensor) and t.dtype in PERTURB and t.numel() and not _zero_tensor(t):
                try:
                    t.copy_(perturb(t, self.g, self.nan_sign))
                except RuntimeError:
                    pass  # internal overlap
        return out


# Eager's CPU kernels compute an elementwise op in two ways: vectorised, 8 or 16 elements at a
# time, and one element at a time for the tail (and for strided operands), and the two ways do
# not always agree for the same values. On the machine the fuzzer runs on (torch 1.13 and 2.14):
# celu's and hardshrink's backward at a NaN input give the gradient through in the scalar tail
# but NaN (celu) or 0 (hardshrink) in vector lanes (fuzz seeds 3969, 4113: x = full(n, nan),
# hardshrink(x).backward(ones(n)) gives x.grad 1.0 for n < 16, 0.0 for the first 16 elements of
# n = 17); fmod and floor_divide by a subnormal divisor give NaN in vector lanes and the finite
# remainder / -inf in the tail (seed 4840: fmod(-1.214, 3.4e-39)). Which element falls in which
# way depends on the tensor's size, layout and the thread split, not on its values: the
# result is eager's either way. LoopPathMode reruns each elementwise op the one way for every
# element (Slack then takes what changes as eager's own latitude, like rounding).
_INT_ARG = re.compile(r"^(Sym)?[Ii]nt(\[\d*\])?\??$")


def _elementwise_call(func, args, kwargs):
    """func is an elementwise call: no int or int-list argument (a dim, a size), one tensor
    result, every tensor argument of its shape or 0-d."""
    schema = func._schema
    if schema.is_mutable or any(r.alias_info is not None for r in schema.returns) or len(schema.returns) != 1:
        return False
    if any(_INT_ARG.match(str(a.type)) for a in schema.arguments):
        return False
    return True


class LoopPathMode(TorchDispatchMode):
    """Eager with every elementwise op computed the scalar way (path="scalar": operands copied
    into strided memory, which eager's loops walk one element at a time) or the vectorised way
    (path="vector": operands flattened and padded to a multiple of 64 elements, so that none
    falls in a scalar tail); the results keep eager's layout (see the comment above)."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def _alt(self, func, args, kwargs, out):
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        if not tensors or any(t.shape != out.shape and t.dim() for t in tensors) or out.numel() < 2:
            return None
        n = out.numel()

        def conv(a):
            if not isinstance(a, torch.Tensor) or not a.dim():
                return a
            if self.path == "scalar":
                s = torch.empty(tuple(a.shape) + (2,), dtype=a.dtype)[..., 0]
                return s.copy_(a)
            flat = a.reshape(-1)
            pad = (-n) % 64 + 64
            return torch.cat([flat, flat[:1].expand(pad)])

        alt = func(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})
        if self.path == "vector":
            alt = alt[:n].reshape(out.shape)
        return alt

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rng = torch.get_rng_state()
        out = func(*args, **kwargs)
        if not isinstance(out, torch.Tensor) or not _elementwise_call(func, args, kwargs):
            return out
        if not torch.equal(rng, torch.get_rng_state()):
            return out  # a random op: a second call would draw other numbers
        try:
            alt = self._alt(func, args, kwargs, out)
            if alt is not None and alt.shape == out.shape and alt.dtype == out.dtype:
                out.copy_(alt)
        except Exception:  # noqa: BLE001 (an op that takes no such operands keeps its result)
            pass
        return out


def make_inputs(prog, variant, perturbation=None, dense=False):
    """The program's arguments for value variant `variant` (0: first values, 1: changed); with
    perturbation=k, every float value moved by a few ulps (a different way for each k); with
    dense=True, the same values in contiguous memory of their own (see dense_layouts)."""
    key = hashlib.sha256(("%s/%d" % (prog["seed"], variant)).encode()).digest()
    g = torch.Generator().manual_seed(int.from_bytes(key[:6], "little"))
    gp = torch.Generator().manual_seed(perturbation or 0)
    args = Args()
    shared_raw = None
    for spec in prog["inputs"]:
        if spec["layout"] == "overlap1":
            raw = shared_raw
        else:
            raw = _values(spec, _raw_shape(spec), g)
            if perturbation:
                raw = perturb(raw, gp, nan_sign_of(perturbation))
        grad = spec["grad"]
        if grad == "leaf":
            x = _view(spec, raw).detach()
            x = (x.contiguous() if dense else x).requires_grad_(True)
            args.leaves.append((spec["name"], x))
        elif grad == "nonleaf":
            if spec["layout"] == "overlap1":
                leaf = None
            else:
                leaf = raw.detach().clone().requires_grad_(True)
                args.leaves.append((spec["name"] + ".base", leaf))
                raw = leaf * 1.0
            x = _view(spec, raw)
        else:
            x = _view(spec, raw)
        if spec["layout"] == "overlap0":
            shared_raw = raw
        if dense and grad != "leaf":
            x = x.contiguous()
        args.inputs.append(x)
    return args


def dense_layouts(prog):
    """Whether eager on contiguous copies of the inputs is another of eager's own answers: torch's
    kernels pick their algorithm by layout (batch_norm's statistics of a non-contiguous input are a
    float mean, of a contiguous one a float64 sum: a constant channel's normalised value is 3.8e-5
    in the one and 0 in the other, fuzz seed 14828), so a compiler may land on either. Only where
    no two inputs share memory: copies would hide what a write through one does to another."""
    return not any(spec["layout"].startswith("overlap") for spec in prog["inputs"])


def build_module(prog, cls=None):
    """The program's module (seeded so both sides get the same parameters)."""
    torch.manual_seed(int(prog["seed"]) % (2 ** 31) + 7)
    if cls is not None:
        m = cls()
    else:
        m = nn.Module()
        for name, ctor in prog["modules"]:
            setattr(m, name, eval(ctor, {"nn": nn, "torch": torch}))
    m.train(prog["train"])
    return m


_TMP = None
_LOADED = 0


def load(prog, as_module=None):
    """Writes the program's source to a file (tracebacks and ptgo's messages name real lines) and
    imports it; returns the module object."""
    global _TMP, _LOADED
    if _TMP is None:
        _TMP = tempfile.mkdtemp(prefix="ptgo-fuzz-")
    _LOADED += 1
    src = gen.render(prog, as_module)
    name = "fuzzprog_%s_%d" % (str(prog["seed"]).replace("-", "m"), _LOADED)
    path = os.path.join(_TMP, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- one call ------------------------------------------------------------------------------------------

class Outcome:
    def __init__(self):
        self.result = None
        self.exc = None
        self.stdout = ""
        self.bwd_exc = None
        self.grads = None
        self.inputs = None
        self.state = None
        self.training = None
        self.rng = None


def _flat_tensors(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for e in v for t in _flat_tensors(e)]
    return []


def call(fn, args, module, prog, seed):
    """Calls fn(*args.inputs) under torch seed `seed`, then the backward pass; returns what the
    comparison looks at."""
    o = Outcome()
    torch.manual_seed(seed)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            o.result = fn(*args.inputs)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: B902 (SystemExit from user code is compared too)
            o.exc = e
        if o.exc is None and prog["backward"]:
            outs = [t for t in _flat_tensors(o.result) if t.requires_grad and t.is_floating_point()]
            if outs:
                g = torch.Generator().manual_seed(seed + 1)
                tangents = [torch.randn(t.shape, generator=g, dtype=torch.float64).to(t.dtype) for t in outs]
                try:
                    torch.autograd.backward(outs, tangents)
                except KeyboardInterrupt:
                    raise
                except BaseException as e:  # noqa: B902
                    o.bwd_exc = e
    o.stdout = buf.getvalue()
    o.rng = torch.get_rng_state()
    o.inputs = list(args.inputs)
    grads = [(label, t.grad) for label, t in args.leaves]
    if module is not None:
        grads += [("param " + k, p.grad) for k, p in module.named_parameters()]
        o.state = {k: v for k, v in module.state_dict().items()}
        o.training = [m.training for m in module.modules()]
    o.grads = [(label, None if g is None else g.detach().clone()) for label, g in grads]
    return o


# ---- comparison -------------------------------------------------------------------------------------

def _exc_text(e):
    return "%s: %s" % (type(e).__name__, e)


# The autograd node autograd's "modified by an inplace operation" error names: ", which is
# output N of XBackward0,". A compiled region is one autograd node (CompiledRegionBackward, as
# torch.compile's are CompiledFunctionBackward) where eager has one node per op, so the node a
# saved tensor's grad_fn is (and its output number) cannot be eager's for a tensor a region made
# or wrote (ARCHITECTURE A152). Only that phrase is left out of the comparison: the tensor's
# type and shape and both version numbers must still be eager's.
_AUTOGRAD_NODE = re.compile(r", which is output \d+ of [\w:.<>]+,")


def _same_exc(a, b):
    """Whether two exceptions have the same type and message (up to _AUTOGRAD_NODE)."""
    if type(a) is not type(b):
        return False
    sa, sb = str(a), str(b)
    if sa == sb:
        return True
    if "modified by an inplace operation" in sa:
        return _AUTOGRAD_NODE.sub("", sa) == _AUTOGRAD_NODE.sub("", sb)
    return False


def _storage_ptr(t):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return t.storage().data_ptr() if t.numel() else None
    except Exception:
        return None


class Slack:
    """How much eager's own results move when every float input and parameter moves by a few ulps
    (two perturbed eager runs): per tensor (by path), the largest change of each element and the
    elements whose NaN/inf/zero-sign pattern changed. A difference between ptgo and eager within
    SLACK_FACTOR times that is rounding amplified by the program (an lgamma next to a pole, a
    cancellation), not a bug; anywhere eager itself is stable the tolerance alone applies.
    Computed only when a comparison fails."""

    def __init__(self, base, perturbed):
        self.by_path = {}
        # Tensors whose shape eager's own rounding decides: a boolean mask or a branch on values
        # that are rounding residue (fuzz seed 5173: x[x > 0] of a BatchNorm of a constant, eager's
        # residue 3e-5 where ptgo's (x - mean)·rstd is 0; seed 3293: `if v.mean() < 0` of a
        # LayerNorm's output, a mean that is 0 up to rounding), as an integer result can be
        # (below). A perturbed run that gives such a tensor another shape says so; its values
        # are then not compared (what else the branch changed is compared under the slack the
        # same runs give).
        self.shape_free = set()
        ref = tensors_by_path(base)
        for o in perturbed:
            got = tensors_by_path(o)
            for path, e in ref.items():
                p = got.get(path)
                if p is not None and p.shape != e.shape and p.dtype == e.dtype:
                    self.shape_free.add(path)
                if p is None or p.shape != e.shape or p.dtype != e.dtype:
                    continue
                if not (e.is_floating_point() or e.is_complex()):
                    # An integer or bool result that eager itself changes when the floats move by
                    # a few ulps is decided by rounding, exactly as a float result's last bits
                    # are: sort/argsort indices among values equal up to rounding (torch.sort
                    # without stable=True leaves the order of equal values undefined, and the
                    # C kernels' libmvec lanes and libm tail may round equal inputs 1 ulp apart:
                    # fuzz seeds 2457, 3375, 8032), an argmax between near-ties, a comparison or
                    # a float->int cast at a boundary. Those elements (only) are not compared.
                    pattern = e.detach() != p.detach()
                    old = self.by_path.get(path)
                    self.by_path[path] = (torch.zeros(e.shape, dtype=torch.float64),
                                          pattern if old is None else old[1] | pattern)
                    continue
                if e.is_complex():
                    e, p = torch.view_as_real(e), torch.view_as_real(p)
                ee, pp = e.detach().double(), p.detach().double()
                # (the sign of a NaN is no part of the pattern: perturbed runs set it, see perturb)
                pattern = (torch.isnan(ee) != torch.isnan(pp)) | (torch.isinf(ee) != torch.isinf(pp)) | (
                    (torch.signbit(ee) != torch.signbit(pp)) & ~(torch.isnan(ee) & torch.isnan(pp)))
                diff = torch.where(torch.isfinite(ee) & torch.isfinite(pp), (ee - pp).abs(),
                                   torch.where(pattern, torch.full_like(ee, float("inf")), torch.zeros_like(ee)))
                old = self.by_path.get(path)
                if old is None:
                    self.by_path[path] = (diff, pattern)
                else:
                    self.by_path[path] = (torch.maximum(old[0], diff), old[1] | pattern)

    def get(self, path):
        return self.by_path.get(path)

    def carry(self, earlier):
        """Adds the slack of an earlier call's Slack to what accumulates across calls (parameters'
        .grad, module state): a difference accepted there is still in them (a branch eager's
        rounding decided went the other way in ptgo at call 0: its gradient is in the .grad of
        call 1 too, where the perturbed runs start from eager's .grad)."""
        if earlier is None:
            return self
        for path, (a, p) in earlier.by_path.items():
            if not (path.startswith("param ") or path.startswith("state_dict[")):
                continue
            old = self.by_path.get(path)
            if old is None:
                self.by_path[path] = (a, p)
            elif old[0].shape == a.shape:
                self.by_path[path] = (old[0] + a, old[1] | p)
        return self


SLACK_FACTOR = 4.0


def tensors_by_path(o):
    """Every tensor an Outcome holds, by the path the comparison names it with."""
    out = {}

    def walk(path, v):
        if isinstance(v, torch.Tensor):
            out[path] = v
        elif isinstance(v, (tuple, list)):
            for i, e in enumerate(v):
                walk("%s[%d]" % (path, i), e)

    if o.exc is None:
        walk("result", o.result)
    for i, x in enumerate(o.inputs or []):
        walk("input %d after the call" % i, x)
    for label, g in o.grads or []:
        if g is not None:
            out[label + ".grad"] = g
    for k, v in (o.state or {}).items():
        out["state_dict[%r]" % k] = v
    return out


# Ops whose sign of a zero result eager's own CPU kernels leave to the vector width (the
# vectorised loop takes the second operand of a tie, the scalar tail the first): torch.maximum
# gives -0.0 for (-0.0, 0.0) on a 1-element tensor and +0.0 on a 16-element one; so do clamp
# with tensor bounds, the max/min reductions and sorts among tied zeros, and the normalisations
# (a zero from x - mean, scaled). A program using one compares zeros without their sign. (relu,
# clamp with numbers, hardtanh and relu6 are consistent in eager and compared.)
SIGN_AMBIGUOUS = re.compile(r"\.(maximum|minimum|fmax|fmin|amax|amin|aminmax|max|min|cummax|sort|argsort|topk|median|"
                            r"max_pool\dd|batch_norm|layer_norm|group_norm|normalize)\(|\bM\.(bn|ln|gn)\d+\(|"
                            r"clamp\([^)]*(min|max)=[xv]\d|clamp\([xv]\d+, [xv]\d")


def compare_tensor_values(path, e, c, kind="value", slack=None, signed_zero=True):
    """Raises Failure when the values differ beyond the dtype's tolerance (NaN and infinity
    positions, and the sign of zeros when signed_zero, exactly) — except where eager's own
    results move as much under a perturbation of the inputs (slack: Slack.get(path))."""
    e = e.detach()
    c = c.detach()
    if not e.is_floating_point() and not e.is_complex():
        if not torch.equal(e, c):
            differs = e != c
            if slack is not None and slack[1].numel() == e.numel():
                differs &= ~slack[1].reshape(e.shape)  # elements eager's own rounding decides (Slack)
                if not differs.any():
                    return
            diff = differs.nonzero()
            where = diff[0].tolist() if len(diff) else []
            raise Failure(kind, "%s: values differ at %s (%d elements): eager %s, ptgo %s" % (
                path, where, len(diff), _at(e, where), _at(c, where)))
        return
    if e.is_complex():
        compare_tensor_values(path + ".real", torch.view_as_real(e), torch.view_as_real(c), kind, slack, signed_zero)
        return
    rtol, atol = TOLERANCES.get(e.dtype, (1e-5, 1e-5))
    ee, cc = e.double(), c.double()
    if slack is not None:
        s_abs, s_pat = slack
        s_abs = s_abs.reshape(ee.shape) if s_abs.numel() == ee.numel() else torch.zeros_like(ee)
        s_pat = s_pat.reshape(ee.shape) if s_pat.numel() == ee.numel() else torch.zeros_like(ee, dtype=torch.bool)
    else:
        s_abs, s_pat = torch.zeros_like(ee), torch.zeros_like(ee, dtype=torch.bool)
    for name, fe, fc in (("NaN", torch.isnan(ee), torch.isnan(cc)),
                         ("+inf", ee == float("inf"), cc == float("inf")),
                         ("-inf", ee == float("-inf"), cc == float("-inf"))):
        bad = (fe != fc) & ~s_pat
        if bad.any():
            where = bad.nonzero()[0].tolist()
            raise Failure(kind if kind != "value" else "nan-inf", "%s: %s positions differ at %s: eager %s, ptgo %s" % (
                path, name, where, _at(e, where), _at(c, where)))
    if signed_zero:
        sz = (ee == 0) & (cc == 0) & (torch.signbit(ee) != torch.signbit(cc)) & ~s_pat
        if sz.any():
            where = sz.nonzero()[0].tolist()
            raise Failure("signed-zero" if kind == "value" else kind, "%s: sign of zero differs at %s: eager %s, ptgo %s" % (
                path, where, _at(e, where), _at(c, where)))
    fin = torch.isfinite(ee) & torch.isfinite(cc)
    bad = fin & ~s_pat & ((ee - cc).abs() > atol + rtol * ee.abs() + SLACK_FACTOR * s_abs)
    if bad.any():
        where = bad.nonzero()[0].tolist()
        d = torch.where(bad, (ee - cc).abs(), torch.zeros_like(ee)).max().item()
        raise Failure(kind, "%s: values differ at %s (%d of %d elements, max abs diff %.3g): eager %s, ptgo %s" % (
            path, where, int(bad.sum()), ee.numel(), d, _at(e, where), _at(c, where)))


def _at(t, where):
    try:
        v = t[tuple(where)] if where else t
        return repr(v.item()) if v.numel() == 1 else "%s" % v
    except Exception:
        return "?"


def compare_values(path, e, c, inputs_e, inputs_c, kind="value", slack=None, signed_zero=True):
    if isinstance(e, torch.Tensor):
        if not isinstance(c, torch.Tensor):
            raise Failure("type", "%s: eager gives a tensor, ptgo %r" % (path, type(c).__name__))
        if e.dtype != c.dtype:
            raise Failure("dtype", "%s: dtype eager %s, ptgo %s" % (path, e.dtype, c.dtype))
        if e.shape != c.shape:
            if slack is not None and path in slack.shape_free:
                return  # a shape eager's rounding decides (Slack.shape_free)
            raise Failure("shape", "%s: shape eager %s, ptgo %s" % (path, tuple(e.shape), tuple(c.shape)))
        if e.requires_grad != c.requires_grad:
            raise Failure("requires-grad", "%s: requires_grad eager %s, ptgo %s" % (path, e.requires_grad, c.requires_grad))
        if inputs_e is not None:
            pe, pc = _storage_ptr(e), _storage_ptr(c)
            ae = [i for i, x in enumerate(inputs_e) if isinstance(x, torch.Tensor) and pe is not None and _storage_ptr(x) == pe]
            ac = [i for i, x in enumerate(inputs_c) if isinstance(x, torch.Tensor) and pc is not None and _storage_ptr(x) == pc]
            if ae != ac:
                raise Failure("alias", "%s: eager's result aliases inputs %s, ptgo's %s" % (path, ae, ac))
            sig = [(n, st) for n, st in zip(e.shape, e.stride()) if n > 1]
            sigc = [(n, st) for n, st in zip(c.shape, c.stride()) if n > 1]
            if ae and (sig != sigc or e.storage_offset() != c.storage_offset()):
                raise Failure("stride", "%s: a view of an input: eager strides %s offset %d, ptgo %s offset %d" % (
                    path, e.stride(), e.storage_offset(), c.stride(), c.storage_offset()))
            if sig != sigc and e.numel() > 1:
                raise Failure("stride", "%s: strides eager %s, ptgo %s (shape %s)" % (
                    path, e.stride(), c.stride(), tuple(e.shape)))
        compare_tensor_values(path, e, c, kind, slack.get(path) if slack else None, signed_zero)
        return
    if isinstance(e, (tuple, list)):
        if type(e) is not type(c) and not (isinstance(c, tuple) and isinstance(e, tuple)):
            raise Failure("type", "%s: eager gives %s, ptgo %s" % (path, type(e).__name__, type(c).__name__))
        if len(e) != len(c):
            raise Failure("type", "%s: length eager %d, ptgo %d" % (path, len(e), len(c)))
        for i, (a, b) in enumerate(zip(e, c)):
            compare_values("%s[%d]" % (path, i), a, b, inputs_e, inputs_c, kind, slack, signed_zero)
        return
    if type(e) is not type(c):
        raise Failure("type", "%s: eager gives %r, ptgo %r" % (path, e, c))
    if isinstance(e, float):
        if e != e or c != c:
            if not (e != e and c != c):
                raise Failure("value", "%s: eager %r, ptgo %r" % (path, e, c))
            return
        if abs(e - c) > 1e-5 + 1e-5 * abs(e):
            raise Failure("value", "%s: eager %r, ptgo %r" % (path, e, c))
        return
    if e != c:
        raise Failure("value", "%s: eager %r, ptgo %r" % (path, e, c))


def compare(oe, oc, slack=None, signed_zero=True):
    """Raises Failure for the first difference between two Outcomes. Zeros' signs are compared
    in results and inputs (when signed_zero), not in gradients or module state: torch's own
    backward formulas and BatchNorm statistics give -0.0 or +0.0 depending on the order of a
    fused computation."""
    if (oe.exc is None) != (oc.exc is None):
        if oe.exc is None:
            kind = "ptgo-failure" if "ptgo" in type(oc.exc).__module__ or "ptgo BUG" in str(oc.exc) else "extra-exception"
            raise Failure(kind, "eager returns, ptgo raises %s" % _tb(oc.exc))
        raise Failure("missing-exception", "eager raises %s, ptgo returns" % _exc_text(oe.exc))
    if oe.exc is not None:
        if not _same_exc(oe.exc, oc.exc):
            kind = "ptgo-failure" if "ptgo" in type(oc.exc).__module__ or "ptgo BUG" in str(oc.exc) else "wrong-exception"
            raise Failure(kind, "eager raises %s; ptgo raises %s" % (_exc_text(oe.exc), _tb(oc.exc)))
    else:
        compare_values("result", oe.result, oc.result, oe.inputs, oc.inputs, slack=slack, signed_zero=signed_zero)
    if oe.stdout != oc.stdout:
        raise Failure("stdout", "eager printed %r, ptgo %r" % (oe.stdout[-300:], oc.stdout[-300:]))
    for i, (a, b) in enumerate(zip(oe.inputs, oc.inputs)):
        compare_values("input %d after the call" % i, a, b, None, None, kind="input-state", slack=slack,
                       signed_zero=signed_zero)
    if (oe.bwd_exc is None) != (oc.bwd_exc is None):
        if oe.bwd_exc is None:
            raise Failure("extra-exception", "backward: eager succeeds, ptgo raises %s" % _tb(oc.bwd_exc))
        raise Failure("missing-exception", "backward: eager raises %s, ptgo succeeds" % _exc_text(oe.bwd_exc))
    if oe.bwd_exc is not None and not _same_exc(oe.bwd_exc, oc.bwd_exc):
        raise Failure("wrong-exception", "backward: eager raises %s; ptgo %s" % (_exc_text(oe.bwd_exc), _exc_text(oc.bwd_exc)))
    for (label, ge), (_, gc) in zip(oe.grads, oc.grads):
        if (ge is None) != (gc is None):
            raise Failure("grad-structure", "%s.grad: eager %s, ptgo %s" % (
                label, "None" if ge is None else "a tensor", "None" if gc is None else "a tensor %s" % (gc.flatten()[:4],)))
        if ge is not None:
            if ge.shape != gc.shape or ge.dtype != gc.dtype:
                raise Failure("grad", "%s.grad: eager %s %s, ptgo %s %s" % (label, ge.dtype, tuple(ge.shape), gc.dtype, tuple(gc.shape)))
            compare_tensor_values(label + ".grad", ge, gc, "grad", slack.get(label + ".grad") if slack else None,
                                  signed_zero=False)
    if oe.state is not None:
        if list(oe.state) != list(oc.state):
            raise Failure("module-state", "state_dict keys %s vs %s" % (list(oe.state), list(oc.state)))
        for k in oe.state:
            path = "state_dict[%r]" % k
            compare_tensor_values(path, oe.state[k], oc.state[k], "module-state", slack.get(path) if slack else None,
                                  signed_zero=False)
        if oe.training != oc.training:
            raise Failure("module-state", "training flags %s vs %s" % (oe.training, oc.training))
    if not torch.equal(oe.rng, oc.rng):
        raise Failure("rng", "torch's RNG state after the call differs")


def _tb(e):
    text = _exc_text(e)
    cause = e.__cause__
    if cause is not None:
        text += " (cause: %s)" % _exc_text(cause)
    return text


# ---- one program -------------------------------------------------------------------------------------

def check_program(prog, backends=BACKENDS, calls=CALLS):
    """Runs prog eagerly and with each backend; returns the Failures (at most one per backend:
    the first difference)."""
    import ptgo

    failures = []
    for backend in backends:
        ptgo.reset()
        mod = load(prog)
        try:
            _check_backend(prog, mod, backend, calls)
        except Failure as f:
            f.backend = backend
            failures.append(f)
        finally:
            ptgo.reset()
    return failures


def copy_with_grads(m):
    """A deep copy of module m whose parameters keep their .grad (copy.deepcopy drops it): a
    perturbed run of call k starts from the gradients calls 0..k-1 accumulated, as eager's
    call k does (without them, a parameter's slack was off by those gradients)."""
    c = copy.deepcopy(m)
    for pc, pm in zip(c.parameters(), m.parameters()):
        pc.grad = None if pm.grad is None else pm.grad.detach().clone()
    return c


ROUNDING_KINDS = {"value", "nan-inf", "signed-zero", "grad", "input-state", "module-state", "shape"}


def _check_backend(prog, mod, backend, calls):
    import ptgo

    as_module = prog["as_module"]
    me = build_module(prog, mod.Prog)
    # a copy, not a second construction: a parameter whose init is a no-op (nn.Conv1d(0, 4, 3)'s
    # bias: fan_in 0, torch skips its uniform_) keeps torch.empty's undefined contents, which two
    # constructions do not share (fuzz seed 2225); every defined value is the same either way
    mc = copy.deepcopy(me)

    def eager_fn(m):
        return m if as_module else (lambda *a: mod.fn(m, *a))

    if as_module:
        fc = ptgo.compile(mc, backend=backend)
    else:
        compiled = ptgo.compile(mod.fn, backend=backend)
        fc = lambda *a: compiled(mc, *a)  # noqa: E731
    signed_zero = not SIGN_AMBIGUOUS.search("\n".join(l for st in prog["stmts"] for l in st["src"]))
    carried = None  # the last Slack a call needed (Slack.carry)
    for k in range(calls):
        variant = 0 if k < 2 else 1
        ae, ac = make_inputs(prog, variant), make_inputs(prog, variant)
        seed = 1000 + 17 * int(prog["seed"] % 100000) + k
        before = copy_with_grads(me)
        oe = call(eager_fn(me), ae, me, prog, seed)
        oc = call(fc, ac, mc, prog, seed)
        try:
            compare(oe, oc, signed_zero=signed_zero)
        except Failure as f:
            f.call = k
            if f.kind not in ROUNDING_KINDS:
                raise
            perturbed = []
            for j in (1, 2):
                mp = copy_with_grads(before)
                with torch.no_grad():
                    for t in list(mp.parameters()) + list(mp.buffers()):
                        t.copy_(perturb(t, torch.Generator().manual_seed(j * 7919 + 1)))
                with PerturbMode(j):
                    perturbed.append(call(eager_fn(mp), make_inputs(prog, variant, perturbation=j), mp, prog, seed))
            for path in ("scalar", "vector"):
                mp = copy_with_grads(before)
                with LoopPathMode(path):
                    perturbed.append(call(eager_fn(mp), make_inputs(prog, variant), mp, prog, seed))
            if dense_layouts(prog):
                mp = copy_with_grads(before)
                perturbed.append(call(eager_fn(mp), make_inputs(prog, variant, dense=True), mp, prog, seed))
            carried = Slack(oe, perturbed).carry(carried)
            try:
                compare(oe, oc, carried, signed_zero=signed_zero)
            except Failure as f2:
                f2.call = k
                raise f2 from None


def describe(prog):
    return gen.render(prog)


if __name__ == "__main__":  # python -m fuzz.harness SEED: one program, verbose
    seed = int(sys.argv[1])
    p = gen.generate(seed)
    print(describe(p))
    for f in check_program(p):
        print(f.backend, f.call, f)
    traceback.print_exc()
