"""Python helpers the shim and the Go library call by name. Not a public API.

Everything here is data movement: building a torch.fx GraphModule from Go's JSON, calling the
backend, running meta kernels Go has no meta function for, forwarding log records.
"""
import json
import os
import sys
import sysconfig
import threading
import warnings

import torch

from . import _logging, config
from .exc import BackendCompilerFailed, Unsupported

_init_lock = threading.Lock()
_initialized = False

# Order matters: it is primtorch.DType's order (Bool, UInt8, Int8, Int16, Int32, Int64, Float16,
# BFloat16, Float32, Float64, Complex64, Complex128).
DTYPES = (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)


def _lib_path():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "libptgo.so")


def _skip_policy():
    """Which files the frame hook never captures (DESIGN: a skip policy like Dynamo's).

    The standard library, torch's internals and ptgo itself are skipped; torch.nn's module
    files are captured (a compiled nn.Sequential has a forward worth compiling), but not
    torch/nn/modules/module.py (Module.__call__ runs hooks eagerly and calls forward)."""
    paths = sysconfig.get_paths()
    skip = {paths["stdlib"], paths["platstdlib"]}
    torch_dir = os.path.dirname(torch.__file__)
    ptgo_dir = os.path.dirname(os.path.abspath(__file__))
    skip.update({torch_dir + os.sep, ptgo_dir + os.sep})
    for mod in ("numpy", "typing_extensions", "_pytest", "pytest", "pluggy", "sympy"):
        m = sys.modules.get(mod)
        if m is not None and getattr(m, "__file__", None):
            skip.add(os.path.dirname(m.__file__) + os.sep)
    skip_prefixes = tuple(sorted(p if p.endswith(os.sep) else p + os.sep for p in skip))
    allow = (os.path.join(torch_dir, "nn", "modules") + os.sep,)
    skip_files = (os.path.join(torch_dir, "nn", "modules", "module.py"),)
    return skip_prefixes, allow, skip_files


def ensure_initialized():
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if _initialized:
            return
        from . import _C

        skip, allow, skip_files = _skip_policy()
        _C.init(
            runtime=sys.modules[__name__],
            lib_path=_lib_path(),
            tensor_type=torch.Tensor,
            param_type=torch.nn.Parameter,
            module_type=torch.nn.Module,
            dtype_type=torch.dtype,
            device_type=torch.device,
            dtypes=DTYPES,
            is_grad_enabled=torch.is_grad_enabled,
            strided=torch.strided,
            unsupported=Unsupported,
            backend_failed=BackendCompilerFailed,
            skip_prefixes=skip,
            allow_prefixes=allow,
            skip_files=skip_files,
        )
        _enable_fast(_C)
        _initialized = True


def _enable_fast(_C):
    """Use ptgo._fast's C++ tensor checks when it is built and agrees with the attribute path."""
    try:
        from . import _fast
    except ImportError:
        return False
    _C.set_fast(_fast.api)
    samples = [
        torch.zeros(()), torch.randn(3, 4).t(), torch.arange(10)[2::3], torch.ones(2, 3, dtype=torch.float64),
        torch.zeros(1, 2, dtype=torch.bool).requires_grad_(False), torch.randn(2, requires_grad=True) * 2,
        torch.nn.Parameter(torch.randn(2, 2)), torch.empty(0, 5, dtype=torch.int32),
    ]
    for t in samples:
        if _C.tensor_meta(t) != _C.tensor_meta(t, True):
            _C.set_fast(None)
            warnings.warn("ptgo: the C++ tensor-guard fast path disagrees with torch %s; using the slow path "
                          "(rebuild ptgo against this torch)" % torch.__version__, RuntimeWarning)
            return False
    return True


def init_config_json():
    """Configuration Go reads once when it starts."""
    return json.dumps({
        "logs": _logging.channels_json(),
        "debug_dir": config.debug_dir or "",
        "check_ir": bool(config.check_ir),
        "python": "%d.%d.%d" % sys.version_info[:3],
        "torch": torch.__version__,
        "num_threads": torch.get_num_threads(),
    })


def push_log_config():
    from . import _C

    if _C is not None and getattr(_C, "go_loaded", lambda: False)():
        _C.request("set_logs", json.dumps(_logging.channels_json()))


def cache_size_limit():
    return int(config.cache_size_limit)


_limit_warned = set()


def warn_cache_limit(code, ctx, failed_guard):
    """Called once per code object when it reaches config.cache_size_limit."""
    msg = (
        "ptgo: %s (%s:%d) reached ptgo.config.cache_size_limit (%d) recompilations; it runs eagerly "
        "from now on. Last guard that failed: %s. Hint: if that value changes on every call, pass it "
        "as a tensor or make it constant; raise ptgo.config.cache_size_limit if the variants are few."
        % (code.co_name, code.co_filename, code.co_firstlineno, config.cache_size_limit, failed_guard)
    )
    warnings.warn(msg, RuntimeWarning, stacklevel=2)
    _logging.emit("recompiles", msg)


def log(channel, message, debug=False):
    _logging.emit(channel, message, debug)


def warn(message):
    warnings.warn(message, RuntimeWarning, stacklevel=2)


def suppress_errors():
    return bool(config.suppress_errors)


def config_value(name):
    return getattr(config, name)


# ---- graphs → torch.fx → backend ----------------------------------------------------------

def compile_graph(ctx, graph_json, attrs, example_inputs, graph_text):
    """Builds the torch.fx GraphModule for a captured graph and calls the backend on it.

    Returns the callable the transformed code calls with the graph's inputs."""
    from .fx_export import graph_module_from_json

    gm = graph_module_from_json(graph_json, None, attrs)
    if _logging.enabled("graph_code"):
        _logging.emit("graph_code", "TRACED GRAPH\n%s" % gm.code.strip())
    backend = ctx.backend
    compiled = backend(gm, list(example_inputs))
    if compiled is None or not callable(compiled):
        raise BackendCompilerFailed(
            "ptgo: backend %s returned %r, not a callable; a backend must return a callable that "
            "takes the graph's inputs (e.g. gm.forward)" % (ctx.backend_name, compiled)
        )
    from . import _C

    # The backend's code runs with capture off: its frames are never compiled again.
    return _C.Disabled(compiled)


# ---- names and meta fallback --------------------------------------------------------------

_names = None


def _build_names():
    import math
    import operator

    import torch.nn.functional as F

    names = {}

    def add_module(mod, prefix):
        for k in dir(mod):
            if k.startswith("__"):
                continue
            try:
                v = getattr(mod, k)
            except Exception:
                continue
            if callable(v) and not isinstance(v, type) and id(v) not in names:
                names[id(v)] = (prefix + "." + k, v)

    add_module(operator, "operator")
    add_module(F, "torch.nn.functional")
    add_module(torch, "torch")
    for sub in ("linalg", "fft", "special", "_C._nn", "_C._linalg", "_C._fft", "_C._special"):
        m = torch
        try:
            for part in sub.split("."):
                m = getattr(m, part)
        except AttributeError:
            continue
        add_module(m, "torch." + sub)
    add_module(math, "math")
    for k in dir(torch.Tensor):
        try:
            v = getattr(torch.Tensor, k)
        except Exception:
            continue
        if callable(v) and id(v) not in names:
            names[id(v)] = ("torch.Tensor." + k, v)
    return names


def torch_name(obj):
    """The importable path of a torch/operator/math callable ("torch.nn.functional.relu"), or None."""
    global _names
    if _names is None:
        _names = _build_names()
    hit = _names.get(id(obj))
    if hit is not None and hit[1] is obj:
        return hit[0]
    return None


def resolve(path):
    """Import-and-getattr a dotted path ("torch.nn.functional.relu")."""
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError("ptgo: cannot resolve %r" % path)


class TensorSpec:
    """What Go passes for a tensor argument of a meta call."""

    __slots__ = ("shape", "stride", "offset", "dtype", "requires_grad")

    def __init__(self, shape, stride, offset, dtype, requires_grad):
        self.shape, self.stride, self.offset = shape, stride, offset
        self.dtype, self.requires_grad = dtype, requires_grad


def _to_meta(v, device="meta"):
    if isinstance(v, TensorSpec):
        n = 1 + sum((s - 1) * abs(st) for s, st in zip(v.shape, v.stride) if s > 0) + v.offset
        base = torch.zeros(max(n, 1), dtype=DTYPES[v.dtype], device=device)
        t = base.as_strided(v.shape, v.stride, v.offset)
        if v.requires_grad:
            t = t.detach().requires_grad_(True)
        return t
    if isinstance(v, tuple):
        return tuple(_to_meta(x, device) for x in v)
    if isinstance(v, list):
        return [_to_meta(x, device) for x in v]
    return v


def _from_meta(r):
    if isinstance(r, torch.Tensor):
        return (tuple(r.shape), tuple(r.stride()), r.storage_offset(), DTYPES.index(r.dtype), r.requires_grad)
    if isinstance(r, (tuple, list)):
        return [_from_meta(x) for x in r]
    if isinstance(r, (int, float, bool)) or r is None:
        return ("scalar", r)
    raise TypeError("ptgo: meta result of type %s is not supported" % type(r).__name__)


def meta_call(target, is_method, args, kwargs):
    """Runs ``target`` on meta tensors to learn its output metadata; for ops torch has no meta
    kernel for, on zero-filled CPU tensors of the same shapes (once per compile).

    Returns a nested list of (shape, stride, offset, dtype_code, requires_grad) tuples, or
    ("scalar", value)."""
    fn = None if is_method else resolve(target)

    def run(device):
        margs = _to_meta(tuple(args), device)
        mkwargs = {k: _to_meta(v, device) for k, v in kwargs.items()}
        with torch.no_grad():
            if is_method:
                return getattr(margs[0], target)(*margs[1:], **mkwargs)
            return fn(*margs, **mkwargs)

    try:
        r = run("meta")
    except NotImplementedError:
        r = run("cpu")
    return _from_meta(r)


def make_size(items):
    return torch.Size(items)


# ---- resume functions (graph breaks) --------------------------------------------------------

#: code object -> {layout key: resume code object}; cleared by ptgo.reset().
resume_cache = {}


def get_resume(code, key):
    return resume_cache.get(code, {}).get(key)


def put_resume(code, key, resume):
    resume_cache.setdefault(code, {})[key] = resume


def reset():
    resume_cache.clear()


# ---- the C backend's runtime ------------------------------------------------------------------

def _decode_plan_arg(a):
    """Turns a plan argument's JSON form (inductor/program.go) into Python values in place."""
    if isinstance(a, dict):
        if "float" in a:
            return float(a["float"])
        if "dtype" in a:
            return getattr(torch, a["dtype"])
        if "device" in a:
            return torch.device(a["device"])
        if "list" in a:
            return {"list": [_decode_plan_arg(x) for x in a["list"]]}
        if "tuple" in a:
            return {"tuple": [_decode_plan_arg(x) for x in a["tuple"]]}
        if "value" in a:
            raise ValueError("ptgo runtime: the plan has an argument Python cannot represent: %r" % (a,))
    return a


def _extern_callable(target):
    if target.startswith("Tensor."):
        return getattr(torch.Tensor, target[len("Tensor."):])
    if target.startswith("prims."):
        return None  # run by the C++ runtime itself
    return resolve(target)


def fold_conv_bn(w, b, mean, var, gamma, beta, eps):
    """Folds an eval-mode BatchNorm after a convolution into the convolution's weight and bias."""
    with torch.no_grad():
        scale = torch.rsqrt(var + eps)
        if gamma is not None:
            scale = scale * gamma
        shape = (-1,) + (1,) * (w.dim() - 1)
        nw = (w * scale.reshape(shape).to(w.dtype)).contiguous()
        nb = -mean * scale
        if b is not None:
            nb = nb + b * scale
        if beta is not None:
            nb = nb + beta
        return nw, nb.to(w.dtype).contiguous()


def make_compiled_graph(plan_json, lib_path, consts):
    """Builds the C++ runtime object (ptgo._fast.Graph) for a compiled graph's launch plan."""
    try:
        from . import _fast
    except ImportError:
        raise RuntimeError("ptgo._fast is not built (it needs torch's C++ headers: libtorch-dev)") from None
    plan = json.loads(plan_json)
    externs = {}
    for st in plan["steps"]:
        if st["op"] != "extern":
            continue
        st["args"] = [_decode_plan_arg(a) for a in st["args"]]
        st["kwargs"] = [[k, _decode_plan_arg(v)] for k, v in st.get("kwargs") or []]
        fn = _extern_callable(st["target"])
        if fn is not None:
            externs[st["target"]] = fn
    for out in plan["outputs"]:
        if "value" in out:
            out["value"] = _decode_plan_arg(out["value"])
    from . import _C

    return _C.Disabled(_fast.Graph(plan, lib_path, externs, list(consts)))


# ---- autograd: one torch.autograd.Function per compiled region ------------------------------

def make_torch_graph(graph_json):
    """A prims graph ptgo turned back into torch calls (aot_eager), as a callable."""
    from .fx_export import graph_module_from_json

    from . import _C

    return _C.Disabled(graph_module_from_json(graph_json, None, {}).forward)


def make_autograd_graph(fwd, bwd, num_outputs, tangents, consts):
    """Wraps a forward and a backward graph (aotautograd.Split) in a torch.autograd.Function.

    fwd(*inputs, *params) returns num_outputs user outputs then the tensors to save;
    bwd(*saved, *tangents) returns one gradient (or None) per input and parameter."""
    from torch.autograd.function import once_differentiable

    tangents = list(tangents)
    diff = set(tangents)
    consts = list(consts)

    class CompiledRegion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            outs = fwd(*args)
            user, saved = outs[:num_outputs], outs[num_outputs:]
            ctx.save_for_backward(*saved)
            ctx.mark_non_differentiable(*[user[i] for i in range(num_outputs)
                                          if i not in diff and isinstance(user[i], torch.Tensor)])
            return tuple(user)

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            tang = [grads[k].contiguous() for k in tangents]
            return tuple(bwd(*ctx.saved_tensors, *tang))

    apply = CompiledRegion.apply

    def run(*inputs):
        return apply(*inputs, *consts)

    return run
