#!/usr/bin/python3
"""Writes primtorch/kernel_gaps_<major>_<minor>.go for the running torch: per op, the dtypes for which some of torch's CPU kernels
raise although the same call on float tensors succeeds ("LayerNormKernelImpl" not implemented
for 'Half', "softmax_kernel_impl" not implemented for 'Long', ...).

Run with the torch interpreter (/usr/bin/python3), normally through
    go test ./primtorch -run TestMeta -update
(PTGO_PYTHON=.venv-torch2/bin/python for torch 2's table). One table per torch version ptgo is
tested against, selected by primtorch.Torch() (kernel_gaps.go).

It replays every case of gen_meta_cases.py that torch runs successfully once per dtype, with
the case's floating-point tensors converted to that dtype. Kernel dtype coverage is not a
property of an op's meta (gen_meta_cases.py drops such cases); the capture stage uses the table
to decide when to try a call on torch's own CPU kernels while tracing (bytecode/tensor.go,
probeKernel): a call torch would reject then runs eagerly and raises torch's exception.

Usage: gen_kernel_gaps.py OUTDIR
"""
import importlib.util
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("gen_meta_cases", os.path.join(HERE, "gen_meta_cases.py"))
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

# ptgo's DType constants (primtorch/dtype.go), float32 being the reference.
GO_NAMES = {
    torch.bool: "Bool", torch.uint8: "UInt8", torch.int8: "Int8", torch.int16: "Int16",
    torch.int32: "Int32", torch.int64: "Int64", torch.float16: "Float16", torch.bfloat16: "BFloat16",
    torch.float64: "Float64", torch.complex64: "Complex64", torch.complex128: "Complex128",
}
VARIANTS = list(GO_NAMES)

gaps = {}  # base op name -> {dtype: [first message, set of operand positions]}


def base_name(op):
    """The op's schema name, without overload: softmax.int -> softmax, abs_ -> abs_."""
    return op.split(".")[0]


class Converter:
    """Converts the floating-point tensors among a call's arguments to dtype: all of them, or only
    the one at position only (positions count every tensor operand in call order: arguments,
    then keyword arguments)."""

    def __init__(self, dtype, only=None):
        self.dtype, self.only, self.pos, self.floats = dtype, only, 0, []

    def __call__(self, v):
        if isinstance(v, torch.Tensor):
            p = self.pos
            self.pos += 1
            if v.dtype.is_floating_point:
                self.floats.append(p)
                if self.only is None or self.only == p:
                    return v.detach().to(self.dtype)
            return v
        if isinstance(v, list):
            return [self(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self(x) for x in v)
        return v


def run(target, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        gen.resolve(target)(*args, **kwargs)


def attempt(target, args, kwargs, conv):
    """Runs the call with conv's conversion; returns torch's error message or None."""
    a2 = [conv(a) for a in args]
    k2 = {k: conv(v) for k, v in kwargs.items()}
    try:
        run(target, a2, k2)
    except Exception as e:  # noqa: BLE001 - any rejection is a gap
        return str(e).strip().split("\n")[0][:120]
    return None


def case(op, target, *args, **kwargs):
    try:
        run(target, args, kwargs)
    except Exception:  # noqa: BLE001 - only calls torch accepts as they are tell about dtypes
        return
    probe = Converter(torch.float32)
    [probe(a) for a in args], {k: probe(v) for k, v in kwargs.items()}
    floats = probe.floats
    if not floats:
        return
    for dt in VARIANTS:
        # Each floating-point operand alone in dt, then all of them: a gap is recorded at the
        # positions whose conversion alone fails (at all of them when only converting all fails).
        failed = {}
        for p in floats:
            msg = attempt(target, args, kwargs, Converter(dt, p))
            if msg is not None:
                failed[p] = msg
        if not failed and len(floats) > 1:
            msg = attempt(target, args, kwargs, Converter(dt))
            if msg is not None:
                failed = {p: msg for p in floats}
        if failed:
            g = gaps.setdefault(base_name(op), {}).setdefault(dt, [failed[min(failed)], set()])
            g[1].update(failed)


def main():
    major, minor = (int("".join(c for c in p if c.isdigit()) or 0) for p in torch.__version__.split("+")[0].split(".")[:2])
    out = os.path.join(sys.argv[1], "kernel_gaps_%d_%d.go" % (major, minor))
    gen.case = case
    for g in [gen.gen_unary, gen.gen_binary, gen.gen_ternary, gen.gen_reductions, gen.gen_norm, gen.gen_linalg,
              gen.gen_conv, gen.gen_views, gen.gen_getitem, gen.gen_join, gen.gen_index, gen.gen_factories,
              gen.gen_casts, gen.gen_losses, gen.gen_misc, gen.gen_out]:
        g()
    lines = [
        "// Code generated by testdata/gen_kernel_gaps.py from torch %s; DO NOT EDIT." % torch.__version__,
        "",
        "package primtorch",
        "",
        "// kernelGaps lists, per op (its schema name: without overload, in-place ops apart), the dtypes for",
        "// which a call torch's CPU kernels accept as recorded raised once a floating-point tensor operand",
        "// had the dtype: the kernel has no implementation for it, or makes a dtype check the op's meta",
        "// does not. Operands lists the positions (among the call's tensor operands, arguments then",
        "// keyword arguments) where it did. Each entry shows the first error torch gave.",
        "var kernelGaps%d_%d = map[string][]kernelGap{" % (major, minor),
    ]
    for name in sorted(gaps):
        lines.append("\t%s: {" % go_str(name))
        for dt in VARIANTS:
            if dt in gaps[name]:
                msg, positions = gaps[name][dt]
                lines.append("\t\t{%s, %s, %s}," % (GO_NAMES[dt], go_mask(positions), go_str(msg)))
        lines.append("\t},")
    lines.append("}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("gen_kernel_gaps: %d ops with dtype gaps" % len(gaps), file=sys.stderr)


def go_mask(positions):
    return "0b" + "".join("1" if p in positions else "0" for p in range(max(positions), -1, -1))


def go_str(s):
    if "`" not in s:
        return "`" + s + "`"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    main()
