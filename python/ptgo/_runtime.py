"""Python helpers the shim and the Go library call by name. Not a public API.

Everything here is data movement: building a torch.fx GraphModule from Go's JSON, calling the
backend, running meta kernels Go has no meta function for, forwarding log records.
"""
import contextlib
import itertools
import json
import os
import re
import sys
import sysconfig
import threading
import types
import warnings
import weakref

import torch

from . import _compat, _logging, _native, config
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


# Packages whose code is never captured and whose globals are never guarded, by top-level module
# name, besides the standard library, torch and ptgo: numerical and test-runner libraries a
# model's forward may call but that ptgo has no reason to trace (their frames would only add
# graphs of nothing). Located by their resolved import path, never by a substring of it.
SKIPPED_PACKAGES = ("numpy", "sympy", "typing_extensions", "pytest", "_pytest", "pluggy", "functorch",
                    "triton", "setuptools", "pkg_resources", "_distutils_hack", "IPython", "ipykernel")

# Parts of torch that are captured like user code: frames that start there are compiled and the
# globals they read are guarded. torch.nn's module files hold the forwards of every built-in
# layer (a compiled nn.Sequential or a layer reached on its own has a forward worth compiling);
# torch/nn/modules/module.py is not among them (Module.__call__ runs hooks eagerly and calls
# forward). torch.optim holds the optimizers' steps: `ptgo.compile(opt.step)`, or a compiled
# training step that calls opt.step(), compiles the per-parameter update loop into fused kernels
# (torch.compile traces torch.optim too); its profiler wrapper around step runs eagerly. Which
# torches: _compat.TORCH_CAPTURED_EXTRA.
TORCH_CAPTURED = (("nn", "modules"),) + _compat.for_torch(_compat.TORCH_CAPTURED_EXTRA)
TORCH_SKIPPED_FILES = (("nn", "modules", "module.py"),)

# Rule kinds (ptgo_C.c's policy_rule): a directory skipped, a directory captured, a file skipped,
# a file whose frames run with capture off for their whole extent (torch.compile's entry points,
# _compat.TORCH_COMPILE_ENTRY_FILES). Each rule also names the library its files belong to (""
# for the user's own code).
RULE_SKIP_DIR, RULE_CAPTURE_DIR, RULE_SKIP_FILE, RULE_UNCAPTURED_FILE = 0, 1, 2, 3


def _resolved(path):
    return os.path.realpath(path)


def _package_location(name):
    """(path, is_dir) where the top-level module `name` lives, found without importing it."""
    m = sys.modules.get(name)
    origin = None
    if m is not None:
        origin = getattr(m, "__file__", None)
        paths = list(getattr(m, "__path__", None) or ())
        if origin is None and paths:
            return _resolved(paths[0]), True
    if origin is None:
        import importlib.util

        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None:
            return None
        if spec.submodule_search_locations:
            return _resolved(list(spec.submodule_search_locations)[0]), True
        origin = spec.origin
    if not origin or not os.path.isabs(origin):
        return None  # built-in or frozen: no file of its own
    if os.path.basename(origin).startswith("__init__."):
        return _resolved(os.path.dirname(origin)), True
    return _resolved(origin), False


def _base_vars():
    """sysconfig variables of the interpreter itself (not of the virtualenv it runs in)."""
    return {"base": sys.base_prefix, "platbase": sys.base_exec_prefix, "installed_base": sys.base_prefix,
            "installed_platbase": sys.base_exec_prefix}


def _site_dirs():
    """Every directory installed packages live in: they are never skipped as a whole."""
    import site

    dirs = set()
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # some virtualenvs' site module
        pass
    try:
        dirs.add(site.getusersitepackages())
    except AttributeError:
        pass
    for key in ("purelib", "platlib"):
        dirs.update({sysconfig.get_path(key), sysconfig.get_path(key, vars=_base_vars())})
    dirs.update(p for p in sys.path if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"))
    return {_resolved(d) for d in dirs if d}


def _skip_policy():
    """The one skip policy (DESIGN: a skip policy like Dynamo's): rules (path, kind, owner).

    The longest rule that matches a code object's resolved file decides two facts. Its *owner*
    says whether it is library code: the trace does not guard the globals library code reads
    (libraries do not rebind them) and messages point past it to the user's line. Its *kind*
    says whether the hook captures frames that start there. Skipped: the standard library
    (resolved from this interpreter, without the site-packages directories inside it), torch
    except ``TORCH_CAPTURED``, ptgo itself, and ``SKIPPED_PACKAGES``. Never a whole
    site-packages or dist-packages directory: torchvision, a venv's packages, a user's folder
    named ``torch`` or ``ptgo`` are captured and guarded like the user's own code.
    ``_C.library_reason(filename)`` answers from these rules for the hook, Go and messages."""
    rules = []
    # The interpreter's own library, not a virtualenv's lib/pythonX.Y (which holds only its
    # site-packages).
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_path(key, vars=_base_vars())
        if path:
            rules.append((_resolved(path), RULE_SKIP_DIR, "the standard library"))
    for d in _site_dirs():
        rules.append((d, RULE_CAPTURE_DIR, ""))
    torch_dir = _resolved(os.path.dirname(torch.__file__))
    rules.append((torch_dir, RULE_SKIP_DIR, "torch"))
    for parts in TORCH_CAPTURED:
        rules.append((os.path.join(torch_dir, *parts), RULE_CAPTURE_DIR, "torch"))
    for parts in TORCH_SKIPPED_FILES:
        rules.append((os.path.join(torch_dir, *parts), RULE_SKIP_FILE, "torch"))
    for parts in _compat.for_torch(_compat.TORCH_COMPILE_ENTRY_FILES):
        rules.append((os.path.join(torch_dir, *parts), RULE_UNCAPTURED_FILE, "torch"))
    rules.append((_resolved(os.path.dirname(os.path.abspath(__file__))), RULE_SKIP_DIR, "ptgo"))
    for name in SKIPPED_PACKAGES:
        loc = _package_location(name)
        if loc is not None:
            rules.append((loc[0], RULE_SKIP_DIR if loc[1] else RULE_SKIP_FILE, name))
    # Longest path first: the most specific rule decides. A directory rule matches its own
    # files only (the path ends in a separator).
    out, seen = [], set()
    for path, kind, reason in rules:
        if kind not in (RULE_SKIP_FILE, RULE_UNCAPTURED_FILE) and not path.endswith(os.sep):
            path += os.sep
        if path not in seen:
            seen.add(path)
            out.append((path, kind, reason))
    out.sort(key=lambda r: -len(r[0]))
    return tuple(out)


def dict_key_at(d, i):
    """The i-th key of dict d in its storage order (the order guards read keys in): how the
    transformed code loads a tensor key, such as a parameter keying torch.optim's state."""
    return next(itertools.islice(dict.keys(d), i, None))


def ensure_initialized():
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if _initialized:
            return
        from . import _C

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
            skip_rules=_skip_policy(),
        )
        _enable_fast(_C)
        _initialized = True


def _enable_fast(_C):
    """Use ptgo._fast's C++ tensor checks when it is built and agrees with the attribute path."""
    _fast = _native.fast()
    if _fast is None:
        return False
    _C.set_fast(_fast.api)
    # (no random tensors: the first compile must not advance the user's random stream)
    samples = [
        torch.zeros(()), torch.arange(12.0).reshape(3, 4).t(), torch.arange(10)[2::3], torch.ones(2, 3, dtype=torch.float64),
        torch.zeros(1, 2, dtype=torch.bool).requires_grad_(False), torch.ones(2, requires_grad=True) * 2,
        torch.nn.Parameter(torch.ones(2, 2)), torch.empty(0, 5, dtype=torch.int32),
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
        "blas_on_openmp": _compat.blas_on_openmp(),
        "kernels_fma": _compat.kernels_fuse_multiply_add(),
        "dropout_mt19937": _compat.dropout_draws_mt19937(),
        "sqrt_inexact": _compat.sqrt_inexact_dtypes(),
        "behavior": _compat.probe_behavior(),
    })


def push_log_config():
    from . import _C

    if _C is not None and getattr(_C, "go_loaded", lambda: False)():
        _C.request("set_logs", json.dumps(_logging.channels_json()))


def cache_size_limit():
    return int(config.cache_size_limit)


def accumulated_cache_size_limit():
    return int(config.accumulated_cache_size_limit)


_limit_warned = set()


def warn_cache_limit(code, ctx, failed_guard, accumulated=False):
    """Called once per code object when it reaches config.cache_size_limit at one call site, or
    config.accumulated_cache_size_limit over all."""
    if accumulated:
        limit = "ptgo.config.accumulated_cache_size_limit (%d) entries over all its call sites" % (
            config.accumulated_cache_size_limit)
        knob = "ptgo.config.accumulated_cache_size_limit"
    else:
        limit = "ptgo.config.cache_size_limit (%d) recompilations" % config.cache_size_limit
        knob = "ptgo.config.cache_size_limit"
    msg = (
        "ptgo: %s (%s:%d) reached %s; new variants run eagerly from now on. Last guard that failed: "
        "%s. Hint: if that value changes on every call, pass it as a tensor or make it constant; "
        "raise %s if the variants are few."
        % (code.co_name, code.co_filename, code.co_firstlineno, limit, failed_guard, knob)
    )
    warnings.warn(msg, RuntimeWarning, stacklevel=2)
    _logging.emit("recompiles", msg)
    record_eager_frame(code, "reached %s; last guard that failed: %s" % (limit, failed_guard),
                       "if that value changes on every call, pass it as a tensor or make it constant; raise %s "
                       "if the variants are few" % knob, "cache limit")


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


def log_graph_code(graph_json, attrs, title):
    """PTGO_LOGS=graph_code: the captured graph as torch.fx code, for every backend."""
    from .fx_export import graph_module_from_json

    gm = graph_module_from_json(graph_json, None, attrs)
    _logging.emit("graph_code", "TRACED GRAPH %s\n%s" % (title, gm.code.strip()))


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
            if not callable(v) or isinstance(v, type):
                continue
            # A callable's own name wins over a module global that happens to hold it (torch
            # 1.13's torch/__init__.py leaves its loop variable `obj` = torch.zeros_like).
            if id(v) not in names or k == getattr(v, "__name__", None) != names[id(v)][0].rsplit(".", 1)[1]:
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


def code_owner(filename):
    """(library, skipped) for a file: the library it belongs to ("torch", "the standard
    library"; None for the user's own code) and whether the frame hook skips it
    (``_C.code_owner``: the one answer, from ``_skip_policy``)."""
    from . import _C

    return _C.code_owner(filename)


def code_policy(filename):
    """code_owner, and whether frames that start in the file run with capture off, callees
    included (torch.compile's entry points): (library, skipped, uncaptured)."""
    from . import _C

    return _C.code_policy(filename)


def resolve_loaded(path):
    from ._compat import resolve_loaded

    return resolve_loaded(path)


def module_owner(mod):
    """The library a Python module object belongs to, or None: by its file; modules built into
    the interpreter (math, itertools, builtins) are the standard library; a namespace package
    goes by its first directory."""
    f = getattr(mod, "__file__", None)
    if not isinstance(f, str):
        paths = list(getattr(mod, "__path__", None) or ())
        if paths and isinstance(paths[0], str):
            f = os.path.join(paths[0], "__init__.py")
        elif getattr(mod, "__name__", None) in sys.builtin_module_names or getattr(mod, "__spec__", None) is not None:
            return "the standard library"
        else:
            return None
    return code_owner(f)[0]


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
    ("scalar", value); ("rejected", exception class name, message) when torch's CPU kernel
    rejects the call (eager raises for it). Raises when only the meta kernel fails."""
    fn = None if is_method else resolve(target)

    def run(device):
        margs = _to_meta(tuple(args), device)
        mkwargs = {k: _to_meta(v, device) for k, v in kwargs.items()}
        with torch.no_grad():
            if is_method:
                return getattr(margs[0], target)(*margs[1:], **mkwargs)
            return fn(*margs, **mkwargs)

    # Every run keeps the random generator's state: a random op must not advance the user's
    # random stream (a factory without tensor arguments, torch.rand([2, 3]), runs on the CPU
    # even in the "meta" run).
    try:
        if target in _compat.for_torch(_compat.META_KERNEL_DIFFERS_FROM_CPU):
            raise NotImplementedError(target)
        with _rng_kept():
            return _from_meta(run("meta"))
    except NotImplementedError:
        pass  # no meta kernel (or a wrong one): the CPU kernel's result has the metadata
    except Exception as meta_error:  # noqa: BLE001 - does the CPU kernel refuse too?
        try:
            with _rng_kept():
                run("cpu")
        except Exception as e:  # noqa: BLE001
            return _rejected(e)
        # The meta kernel is stricter than the CPU kernel (or needs data): not a user error, and
        # the CPU result is no meta (its shape may depend on the zeros).
        raise meta_error
    try:
        with _rng_kept():
            r = run("cpu")
    except Exception as e:  # noqa: BLE001
        return _rejected(e)
    return _from_meta(r)


_EFFECT_WRITES, _EFFECT_RANDOM, _EFFECT_RAISES = 1, 2, 4  # primtorch.Effects' bits


def schema_effects(target, is_method):
    """What a torch function the registry does not hold does besides computing its result,
    read from the running torch's ATen schemas of the op it binds to (a builtin function or a
    C++ Tensor method; a Python function may call anything: None): (effects, out), effects the
    bits of primtorch.Effects: writes (an in-place method, a schema argument written that is
    not keyword-only), draws random numbers (an overload tagged nondeterministic_seeded or
    taking a Generator), and may raise (always: the schema does not say); out the names of the
    keyword-only arguments an overload writes (out=), which write when the call passes them."""
    fn = getattr(torch.Tensor, target, None) if is_method else resolve(target)
    if not isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType)):
        return None
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name.startswith("__"):
        return None
    schemas = torch._C._jit_get_schemas_for_operator("aten::" + name)
    if not schemas:
        return None
    effects, out = _EFFECT_RAISES, set()
    if name.endswith("_"):
        effects |= _EFFECT_WRITES
    for sc in schemas:
        for a in sc.arguments:
            if a.alias_info is not None and a.alias_info.is_write:
                if a.kwarg_only:
                    out.add(a.name)
                else:
                    effects |= _EFFECT_WRITES
            if "Generator" in str(a.type):
                effects |= _EFFECT_RANDOM
    packet = getattr(torch.ops.aten, name, None)
    seeded = getattr(torch, "Tag", None) and getattr(torch.Tag, "nondeterministic_seeded", None)
    if packet is None or seeded is None:
        effects |= _EFFECT_RANDOM  # cannot read the tags: assume the worst
    else:
        for o in packet.overloads():
            if seeded in getattr(getattr(packet, o), "tags", ()):
                effects |= _EFFECT_RANDOM
    return effects, sorted(out)


def _rejected(e):
    return ("rejected", type(e).__name__, str(e).strip().split("\n")[0])


class _rng_kept:
    """Restores the CPU random generator's state on exit."""

    def __enter__(self):
        self.state = torch.get_rng_state()

    def __exit__(self, *exc):
        torch.set_rng_state(self.state)
        return False


#: kernel_probe's answers by call: torch's kernels answer the same for the same metadata.
_probe_cache = {}


def _probe_key(v):
    if isinstance(v, TensorSpec):
        return ("T", tuple(v.shape), tuple(v.stride), v.offset, v.dtype, v.requires_grad)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_probe_key(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _probe_key(x)) for k, x in v.items())
    hash(v)
    return (type(v).__name__, v)


def _zero_call_probe(kind, target, is_method, args, kwargs, body):
    """What body answers about a call of ``target`` on zero-filled CPU tensors with its
    arguments' metadata (body(call): call() makes the tensors and runs the call), cached per
    probe kind and call signature."""
    try:
        key = (kind, target, is_method, _probe_key(tuple(args)), _probe_key(kwargs))
    except TypeError:  # an unhashable argument: no caching
        key = None
    if key is not None and key in _probe_cache:
        return _probe_cache[key]

    def call():
        fn = None if is_method else resolve(target)
        margs = _to_meta(tuple(args), "cpu")
        mkwargs = {k: _to_meta(v, "cpu") for k, v in kwargs.items()}
        return getattr(margs[0], target)(*margs[1:], **mkwargs) if is_method else fn(*margs, **mkwargs)

    with _rng_kept(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = body(call)
    if key is not None:
        _probe_cache[key] = result
    return result


def _first_line(e):
    return (type(e).__name__, str(e).strip().split("\n")[0])


def kernel_probe(target, is_method, args, kwargs):
    """Runs ``target`` once on zero-filled CPU tensors with its arguments' metadata, to learn
    whether torch's CPU kernels accept their dtypes (ptgo's meta functions, like torch's, do not
    know which dtypes a kernel implements). Returns None, or (exception class name, message)."""
    def body(call):
        try:
            with torch.no_grad():
                call()
        except Exception as e:  # noqa: BLE001 - what torch raises is the answer
            return _first_line(e)
        return None

    return _zero_call_probe("kernel", target, is_method, args, kwargs, body)


def backward_probe(target, is_method, args, kwargs):
    """Runs ``target`` once with autograd on zero-filled CPU tensors with its arguments'
    metadata (those marked requires_grad requiring it) and its backward, to learn whether
    eager's backward accepts the call: torch 1.13's mse_loss backward refuses a target of
    another floating dtype than the input ("Found dtype Double but expected Float") where the
    forward accepts it. Returns None, or (exception class name, message) of the backward."""
    def body(call):
        try:
            with torch.enable_grad():
                outs = [o for o in _flatten(call()) if isinstance(o, torch.Tensor) and o.requires_grad]
        except Exception:  # noqa: BLE001 - the forward's answer is kernel_probe's
            return None
        if not outs:
            return None
        try:
            torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        except Exception as e:  # noqa: BLE001 - what torch raises is the answer
            return _first_line(e)
        return None

    return _zero_call_probe("backward", target, is_method, args, kwargs, body)


def group_by_device_and_dtype(specs):
    """How torch 2's ``torch._C._group_tensors_by_device_and_dtype`` (torch.optim's foreach
    paths) groups tensors described by (device, dtype code, ndim), None for a missing one: run on
    empty tensors of those devices, dtypes and ranks, so torch's own checks and its order of
    groups decide. Returns each group's indices in torch's order, or (exception class name,
    message) when torch rejects the lists."""
    lists = [[None if s is None else torch.empty((0,) * s[2], dtype=DTYPES[s[1]], device=s[0]) for s in specs_list]
             for specs_list in specs]
    try:
        groups = torch._C._group_tensors_by_device_and_dtype(lists, True)
    except Exception as e:  # noqa: BLE001 - what torch raises is the answer
        return _first_line(e)
    return [list(indices) for _, indices in groups.values()]


#: autocast_probe's answers by call and autocast state.
_autocast_cache = {}


def _dtypes_of(r):
    if isinstance(r, torch.Tensor):
        return str(r.dtype)
    if isinstance(r, (tuple, list)):
        return "(" + ",".join(_dtypes_of(x) for x in r) + ")"
    return "-"


def autocast_probe(target, is_method, args, kwargs, dtype, cache_enabled):
    """The dtypes torch's result has for ``target`` called under ``torch.autocast("cpu", dtype)``,
    run once on zero-filled CPU tensors with the arguments' metadata (ptgo checks its autocast
    policy against it, ARCHITECTURE A71): "torch.bfloat16", "(torch.float32,torch.int64)", "-"
    for a non-tensor; "error: ..." when torch raises."""
    try:
        key = (target, is_method, _probe_key(tuple(args)), _probe_key(kwargs), dtype, cache_enabled)
    except TypeError:
        key = None
    if key is not None and key in _autocast_cache:
        return _autocast_cache[key]
    try:
        fn = None if is_method else resolve(target)
        margs = _to_meta(tuple(args), "cpu")
        mkwargs = {k: _to_meta(v, "cpu") for k, v in kwargs.items()}
        with _rng_kept(), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast("cpu", dtype=dtype, enabled=True, cache_enabled=cache_enabled):
                r = getattr(margs[0], target)(*margs[1:], **mkwargs) if is_method else fn(*margs, **mkwargs)
        result = _dtypes_of(r)
    except Exception as e:  # noqa: BLE001 - what torch raises is the answer
        result = "error: %s: %s" % (type(e).__name__, str(e).strip().split("\n")[0])
    if key is not None:
        _autocast_cache[key] = result
    return result


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
    del eager_frames[:]
    _probe_cache.clear()
    _autocast_cache.clear()


# Frames the shim ran eagerly without asking Go (a cache limit reached), for explain(): records
# shaped like Go's compile log.
eager_frames = []


def record_eager_frame(code, reason, hint, kind):
    eager_frames.append({
        "function": code.co_qualname, "file": code.co_filename, "line": code.co_firstlineno,
        "compiled": False, "kind": kind, "break_reason": reason,
        "break_where": "%s:%d" % (code.co_filename, code.co_firstlineno), "break_hint": hint, "seconds": 0.0,
    })
    del eager_frames[:-10000]


def skipped_reason(fn):
    """Why the frame of fn (a function, or a module's forward) is never captured, or None: the
    skip policy's answer for its code (for ptgo.compile's log and explain())."""
    import torch

    target = type(fn).forward if isinstance(fn, torch.nn.Module) else fn
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if code is None:
        return None
    ensure_initialized()
    owner, skipped = code_owner(code.co_filename)
    if not skipped:
        return None
    return ("%s (%s:%d) is %s code, which ptgo never captures; the functions it calls from outside %s are "
            "captured" % (code.co_qualname, code.co_filename, code.co_firstlineno,
                          owner if owner != "the standard library" else "standard-library", owner))


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
        if "memory_format" in a:
            return getattr(torch, a["memory_format"])
        if "layout" in a:
            return getattr(torch, a["layout"])
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


def tensor_data_ptr(t):
    """t.data_ptr(): version guards also check it (`p.data = t` swaps the storage, not the version)."""
    return t.data_ptr()


# The tensors freezing made constants from (A182): id -> weakref. Their `.data` aliases share
# their version counter (_fast.share_version), so a write through `p.data` bumps p's version as a
# write through `p.detach()` does, and the version guards and the packed-weight cache see it.
# torch gives `.data` a fresh version counter ("changes to .data are not tracked"): without this a
# frozen graph served the old weights after `p.data.mul_(2)` (an EMA update, a pruning mask).
_WATCHED = {}  # type: dict
_TENSOR_DATA = None  # torch's own Tensor.data descriptor, once the hook is installed


def watch_data(*tensors):
    """Makes later `t.data` aliases of each tensor share its version counter (see _WATCHED).
    The one place that knows it: fold_conv_bn's sources and a frozen graph's constants come here."""
    global _TENSOR_DATA
    _fast = _native.fast()
    if _fast is None or not hasattr(_fast, "share_version"):
        return
    if _TENSOR_DATA is None:
        base = getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
        _TENSOR_DATA = desc = base.__dict__["data"]
        share, watched = _fast.share_version, _WATCHED

        def _get(self):
            d = desc.__get__(self, type(self))
            r = watched.get(id(self))
            if r is not None and r() is self:
                share(d, self)
            return d

        def _set(self, value):
            desc.__set__(self, value)

        torch.Tensor.data = property(_get, _set, doc=desc.__doc__)
    for t in tensors:
        if isinstance(t, torch.Tensor) and id(t) not in _WATCHED:
            key = id(t)
            _WATCHED[key] = weakref.ref(t, lambda _r, key=key: _WATCHED.pop(key, None))


def _dense_format(t):
    """The memory format t is dense in: channels-last (3d) where it is and is not also
    contiguous, else contiguous."""
    for dim, fmt in ((4, torch.channels_last), (5, torch.channels_last_3d)):
        if t.dim() == dim and not t.is_contiguous() and t.is_contiguous(memory_format=fmt):
            return fmt
    return torch.contiguous_format


def fold_conv_bn(w, b, mean, var, gamma, beta, eps):
    """Folds an eval-mode BatchNorm after a convolution into the convolution's weight and bias."""
    watch_data(w, b, mean, var, gamma, beta)
    with torch.no_grad():
        scale = torch.rsqrt(var + eps)
        if gamma is not None:
            scale = scale * gamma
        shape = (-1,) + (1,) * (w.dim() - 1)
        # the folded weight keeps the weight's layout (its get_attr's meta is the weight's): a
        # channels-last model's weight made contiguous was copied back to channels-last by every
        # convolution of a channels-last input
        nw = (w * scale.reshape(shape).to(w.dtype)).contiguous(memory_format=_dense_format(w))
        nb = -mean * scale
        if b is not None:
            nb = nb + b * scale
        if beta is not None:
            nb = nb + beta
        return nw, nb.to(w.dtype).contiguous()


def torch_rerun(graph_json, attrs):
    """The captured graph run by torch (its GraphModule is built on first use): when compiled
    code rejects its data (a kernel finds an index out of range), the same inputs through torch
    raise torch's own exception, or give torch's result. ptgo's driver passes it only for graphs
    that write no input and draw no random numbers, so the failed run left nothing to see."""
    from . import _C
    from .fx_export import graph_module_from_json

    gm = []

    def rerun(*args):
        if not gm:
            gm.append(graph_module_from_json(graph_json, None, attrs))
        return gm[0].forward(*args)

    return _C.Disabled(rerun)


def _saved_sharing(saved, user, args, written, ninputs):
    """Which saved values share memory with an output or an input of the region (not one it
    writes: its version moves after the forward), by the tensor each is a view of (its _base,
    or itself): (saved indices, output indices, input indices), or None when none does. Read
    before _unview_temporaries, while outputs over the plan's temporaries are still views of
    them. Parameters (the args after ninputs) are compared by identity only: they are no
    views, and a lookup per parameter is all a training step pays for them."""
    if not saved:
        return None
    roots = {}
    for k, t in enumerate(saved):
        if isinstance(t, torch.Tensor):
            b = t._base
            roots.setdefault(id(t if b is None else b), []).append(k)
    hit_saved, hit_user, hit_args = set(), [], []
    for i, o in enumerate(user):
        if isinstance(o, torch.Tensor):
            b = o._base
            ks = roots.get(id(o if b is None else b))
            if ks:
                hit_saved.update(ks)
                hit_user.append(i)
    for i, a in enumerate(args):
        if i in written or not isinstance(a, torch.Tensor):
            continue
        ks = roots.get(id(a))
        if ks is None and i < ninputs and a._base is not None:
            ks = roots.get(id(a._base))
        if ks:
            hit_saved.update(ks)
            hit_args.append(i)
    for i in written:
        a = args[i] if i < len(args) else None
        if isinstance(a, torch.Tensor):
            b = a._base
            for k in roots.get(id(a if b is None else b), ()):
                hit_saved.discard(k)  # saved as before: its version moves after the forward
    if not hit_saved:
        return None
    return hit_saved, hit_user, hit_args


def _saved_out_of_sight(saved, user, args, shared):
    """The values to save_for_backward and the tensors to watch (_saved_sharing's): a saved
    value sharing memory with an output or an input is saved as a tensor of its own version
    counter, so that torch does not check it (eager's autograd may save other values: fuzz
    seed 11713, threshold's result written after the region), and those outputs (detached: no
    cycle through the region's node) and inputs are watched (_watched_written) with their
    versions now."""
    hit_saved, hit_user, hit_args = shared
    out = [_fresh_on_storage(t) if k in hit_saved else t for k, t in enumerate(saved)]
    watch = [(user[i].detach(), user[i]._version) for i in hit_user]
    watch += [(args[i], args[i]._version) for i in hit_args]
    return out, watch


def _watched_written(watch):
    return any(t._version != v for t, v in watch)


def _span(t):
    """The bytes t's elements lie in, [first, end); None when it has none."""
    if not t.numel():
        return None
    lo = t.data_ptr()
    return lo, lo + (sum((n - 1) * st for n, st in zip(t.shape, t.stride())) + 1) * t.element_size()


def _input_name(names, i):
    return names[i] if i < len(names) else "input %d" % i


def alias_checked(compiled, fallback, written, inputs, name, bumps=()):
    """compiled, for a graph that writes its inputs at positions `written`, behind a check that
    none of them shares memory with another input: ptgo's decomposition made the writes
    functional assuming no input aliases another (AOTAutograd assumes the same and checks it
    on every call), so with x0 = base[:-1], x1 = base[1:], a read of x0 after x1.neg_() would
    see x0's old values. Such a call runs `fallback` (the captured graph with torch), and
    perf_hints says so once (inputs: the graph inputs' names). Each call bumps the version
    counters of the inputs at positions `bumps` after compiled (whose kernels write raw memory),
    each position once per bump eager's ops make (pipeline.InputBumps: two for x.add_(1);
    x.mul_(2), none for batch_norm's running statistics); a torch graph's own copy_ bumps them
    already (no bumps)."""
    from . import _C

    written = tuple(written)
    bumps = tuple(bumps)
    inputs = list(inputs)
    hinted = []

    _fast = _native.fast()
    written_overlap = _fast.written_overlap if _fast else None
    bump_versions = _version_bumper()

    def overlap(args):
        """(i, j): written input i shares memory with input j; (i, -1): written input i is an
        inference tensor outside inference mode (eager's first in-place op on it writes, then
        raises); None when neither."""
        if written_overlap is not None:
            return written_overlap(args, written)
        if not torch.is_inference_mode_enabled():
            for i in written:
                if isinstance(args[i], torch.Tensor) and args[i].is_inference():
                    return i, -1
        spans = None
        for i in written:
            w = args[i]
            if not isinstance(w, torch.Tensor):
                continue
            if spans is None:
                spans = [_span(a) if isinstance(a, torch.Tensor) else None for a in args]
            sw = spans[i]
            if sw is None:
                continue
            for j, s in enumerate(spans):
                if j != i and s is not None and s[0] < sw[1] and sw[0] < s[1]:
                    return i, j
        return None

    def run(*args):
        hit = overlap(args)
        if hit is not None:
            i, j = hit
            if j >= 0 and not hinted:
                hinted.append(True)
                _logging.emit("perf_hints", "%s: %s, which the graph writes, shares memory with %s: "
                              "the call runs with torch (the compiled graph assumes inputs that do not "
                              "alias)" % (name, _input_name(inputs, i), _input_name(inputs, j)))
            return fallback(*args)
        out = compiled(*args)
        if bumps:
            bump_versions(args, bumps)
        return out

    return _C.Disabled(run)


def _version_bumper():
    """bump_versions(args, written): ptgo._fast's, or _bump_versions_slow without ptgo._fast."""
    fast = _native.fast()
    return fast.bump_versions if fast is not None else _bump_versions_slow


def _bump_versions_slow(args, written):
    """bump_versions without ptgo._fast: copying a tensor onto itself (under no_grad, so autograd
    records nothing) changes no value and bumps its version counter."""
    with torch.no_grad():
        for i in written:
            t = args[i]
            if isinstance(t, torch.Tensor) and not (t.is_inference() and torch.is_inference_mode_enabled()):
                t.copy_(t)


def autograd_probe(graph_json, attrs, grad_enabled, backward=True):
    """Runs a captured graph once with torch on dummy tensors of its inputs' metadata (copies of
    its parameters and buffers) to learn what eager's autograd does with the graph's structure.
    Returns (refusal, guards), or None when the dummy data makes the forward itself fail:

    - refusal (only when backward is set): the first line of the error the backward of some
      output raises, or None: an in-place write to a value an op saved for its backward ("one of
      the variables needed for gradient computation has been modified by an inplace operation"),
      to a view of a multi-view function's output;
    - guards: the graph inputs and top-level outputs whose memory an op of the graph saved for
      its backward, as [kind (0 input, 1 output), index, version, outputs, node]: version is,
      for an input, how many times the graph bumped its version counter, for an output its
      version at the graph's end; outputs lists the top-level outputs whose backward reaches the
      op that saved it; node is what eager's error names: for an output only its own op saves,
      that op's name and the output_nr, for another output its output_nr (the error names its
      grad_fn at the backward), for an input None (the input's output_nr and grad_fn then).
      Kind 2 (index: an input) and 3 (node: a parameter or buffer that requires grad) say which
      outputs' backward reaches that input in eager's graph (outputs): eager gives it a
      gradient (zeros, where the graph overwrote the value computed from it: a copy_ into a
      linear's result) when one of them is differentiated. Eager's backward checks that version counter, so user code after the graph
      that writes one of them in place makes eager's backward raise; the compiled region checks
      the same (make_autograd_graph's guards), where ptgo's own derivatives save other values
      (ARCHITECTURE A152).

    Which values torch's ops save is what its autograd knows (the grad_fn._saved_* of the nodes
    the forward made); ptgo's own derivatives save others. The random generator's state is
    kept."""
    from .fx_export import graph_module_from_json

    copies = {k: v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, torch.Tensor) else v
              for k, v in attrs.items()}
    gm = graph_module_from_json(graph_json, None, copies)
    specs = [n.meta.get("ptgo_meta") for n in gm.graph.nodes if n.op == "placeholder"]
    # an int input of a symbolic graph (an .item() result, an unspecialised int) has no value
    # in its meta: the symbol's hint stands for it (without it no guard was made: seed 24384)
    hints = {s["input"]: s["hint"] for s in json.loads(graph_json).get("symbols") or ()
             if s.get("dim") == -1 and s.get("input", -1) >= 0}
    for fill in (0, 1):  # zeros are valid indices, ones valid divisors
        args = []
        for i, m in enumerate(specs):
            if m is None and i in hints:
                m = hints[i]
            if isinstance(m, (int, float)) and not isinstance(m, bool):
                args.append(m)  # a Python number input (a float read at run time): its value
                continue
            if not isinstance(m, dict):
                return None
            shape, stride, offset = list(m["shape"]), list(m["stride"]), m["storage_offset"]
            size = offset + sum((n - 1) * st for n, st in zip(shape, stride)) + 1 if all(shape) else 0
            base = torch.full((size,), fill, dtype=m["dtype"])
            if m["requires_grad"]:
                base = base.requires_grad_() * 1  # not a leaf: the graph may write it in place
            args.append(base.as_strided(shape, stride, offset))
        versions = [a._version if isinstance(a, torch.Tensor) else 0 for a in args]
        # what eager's backward reaches: an input's grad_fn before the graph, a parameter's leaf
        ends = {}
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.grad_fn is not None:
                ends[a.grad_fn] = i  # the node objects are held here, so their ids stay theirs
        leaves = {id(v): attrs[k] for k, v in copies.items() if isinstance(v, torch.Tensor) and v.requires_grad}
        with _rng_kept(), warnings.catch_warnings(), torch.set_grad_enabled(bool(grad_enabled)):
            warnings.simplefilter("ignore")
            try:
                outs = gm.forward(*args)
            except RuntimeError as e:
                if backward and any(m in str(e) for m in _STRUCTURAL_INPLACE_ERRORS):
                    # autograd refuses the write itself, whatever the data (an in-place op on
                    # an unbind output: fuzz seed 35787): torch's run raises eager's error
                    return str(e).split("\n")[0], []
                continue  # the dummy data, not the structure
            except Exception:  # noqa: BLE001 - the dummy data, not the structure
                continue
            top = list(outs) if isinstance(outs, (tuple, list)) else [outs]
            for o in _flatten(outs):
                try:
                    o.grad_fn if isinstance(o, torch.Tensor) else None
                except RuntimeError as e:
                    # a view of a multi-view function's output whose base the graph wrote in
                    # place: autograd refuses to rebuild its grad_fn, in eager at the first use
                    # that needs it (the backward: fuzz seed 42844): torch's run does the same
                    return str(e).split("\n")[0], []
            readers, own, reach, shapes, first = _saved_storage_readers(top, {id(fn): i for fn, i in ends.items()}, leaves)
            guards, checks = [], []  # checks: (rank, guard) of saved memory, in the backward's order
            for target, ks in reach.items():
                if isinstance(target, int):
                    guards.append([2, target, 0, sorted(ks), None, None])
                else:
                    guards.append([3, 0, 0, sorted(ks), target, None])
            for i, a in enumerate(args):
                key = _storage_key(a)
                ks = readers.get(key)
                if ks:
                    checks.append((first.get(key, 0),
                                   [0, i, a._version - versions[i], sorted(ks), None, _saved_shape(shapes, a)]))
            for k, o in enumerate(top):
                if isinstance(o, torch.Tensor) and o._version > 0:
                    guards.append([4, k, o._version, [], None, None])  # eager's count: _match_versions
                key = _storage_key(o)
                ks = readers.get(key)
                if ks and isinstance(o, torch.Tensor):
                    # saved only by the op that made it (relu's result): eager's error names that
                    # op; saved by a later op too (which fails first in the backward): the
                    # output's grad_fn at the backward
                    fn = o.grad_fn
                    checks.append((first.get(key, 0),
                                   [1, k, o._version, sorted(ks), (fn.name(), o.output_nr) if own.get(k) else o.output_nr,
                                    _saved_shape(shapes, o)]))
            # the first one eager's backward unpacks raises (fuzz seed 19652: gather's saved
            # input, written by copy_, before linear's, written by nan_to_num_)
            guards += [g for _, g in sorted(checks, key=lambda c: c[0])]
            refusal = None
            if backward:
                # each output on its own: the caller may differentiate any of them
                for o in _flatten(outs):
                    if isinstance(o, torch.Tensor) and o.requires_grad:
                        try:
                            torch.autograd.backward([o], [torch.ones_like(o)], retain_graph=True)
                        except RuntimeError as e:
                            refusal = str(e).split("\n")[0]
                            break
            return refusal, guards
    return None


# autograd's refusals of an in-place write that depend on the graph's structure, not on its data:
# a view of a multi-output function's result (or one whose base was written), a view made in
# no_grad or inference mode written with grad on, a leaf (or a view of one) that requires grad
_STRUCTURAL_INPLACE_ERRORS = ("is a view and is being modified inplace",
                              "its base or another view of its base has been modified inplace",
                              "leaf Variable that requires grad is being used in an in-place operation")


def _saved_shape(shapes, t):
    """The shape eager's error names for t's memory when an op saved another tensor over it (a
    view: linear's [N, in] of a 4-d input); None when it saved t itself, whose shape then is
    the one at the error (a later transpose_ changes it: fuzz seed 17772)."""
    s = shapes.get(_storage_key(t))
    return None if s is None or s[1] == t._cdata else s[0]


def _storage_key(t):
    """The identity of a tensor's memory (None: not a tensor). A tensor with no elements has no
    memory (every one's data pointer is null) but a storage object its views share, and eager's
    version checks cover it all the same (fuzz seed 18701: a [0, 3] tensor clamp saved, written
    through a view): that object's address stands for it."""
    if not isinstance(t, torch.Tensor):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if t.numel() == 0:
            return ("empty", _compat.storage(t)._cdata)
        ptr = t.storage().data_ptr()
    return ptr or None


def _saved_storage_readers(top, ends, leaves):
    """For each storage (_storage_key) an autograd node reachable from the grad_fn of a top-level
    output in top saved for its backward (its _saved_* attributes): the indices of the outputs
    whose backward reaches that node (readers); for each top-level output index, whether its
    memory is saved only by its own grad_fn (own); and for each input (ends: id of its grad_fn
    -> its index) and parameter (leaves: id of the probe's copy -> the parameter) the backward
    of an output reaches, the indices of those outputs (reach); and for each storage the rank
    (_backward_rank) of the first node of the backward that unpacks it (first) and the shape and
    identity of the tensor that node saved, which eager's error names (shapes, _saved_shape:
    linear of a 4-d input saves the [N, in] view of it, fuzz seed 15690; atanh's input before
    a linear's view of it, seed 25506)."""
    node_keys = {}  # id(node) -> (node, the storage keys it saved)
    node_shapes = {}  # id(node) -> {storage key: (shape, _cdata) of the tensor it saved there}

    def saved_keys(fn):
        ks = node_keys.get(id(fn), (None, None))[1]
        if ks is None:
            ks = set()
            for name in dir(fn):
                if not name.startswith("_saved_"):
                    continue
                try:
                    v = getattr(fn, name)
                except Exception:  # noqa: BLE001 - a saved value overwritten since (the refusal's case)
                    continue
                for x in (v if isinstance(v, (tuple, list)) else (v,)):
                    k = _storage_key(x)
                    if k is not None:
                        ks.add(k)
                        node_shapes.setdefault(id(fn), {}).setdefault(k, (list(x.shape), x._cdata))
            node_keys[id(fn)] = (fn, ks)
        return ks

    readers, savers, reach, edges = {}, {}, {}, {}
    for k, o in enumerate(top):
        for t in _flatten(o):
            if not isinstance(t, torch.Tensor) or t.grad_fn is None:
                continue
            seen, todo = set(), [t.grad_fn]
            while todo:
                fn = todo.pop()
                if id(fn) in seen:
                    continue
                seen.add(id(fn))
                saved_keys(fn)  # holds fn: its id stays its own
                for key in saved_keys(fn):
                    readers.setdefault(key, set()).add(k)
                    savers.setdefault(key, set()).add(id(fn))
                if id(fn) in ends:
                    reach.setdefault(ends[id(fn)], set()).add(k)
                    continue  # the graph's input: what made it is not the graph's
                var = getattr(fn, "variable", None)  # an AccumulateGrad's leaf
                if var is not None and id(var) in leaves:
                    p = leaves[id(var)]
                    reach.setdefault(("attr", id(p)), (p, set()))[1].add(k)
                for nxt, _ in fn.next_functions:
                    if nxt is not None:
                        nexts = edges.setdefault(id(fn), [])
                        if id(nxt) not in nexts:
                            nexts.append(id(nxt))
                        if id(nxt) not in seen:
                            todo.append(nxt)
    # a node's Python object is made on access and kept while one is alive (node_keys holds
    # every visited one), so ids compare nodes here
    own = {}
    for k, o in enumerate(top):
        if isinstance(o, torch.Tensor) and o.grad_fn is not None:
            own[k] = savers.get(_storage_key(o)) == {id(o.grad_fn)}
    out = {}
    for t, v in reach.items():
        if isinstance(v, tuple):
            out[v[0]] = v[1]  # a parameter: keyed by the object
        else:
            out[t] = v
    rank = _backward_rank(edges)
    first, shapes = {}, {}  # storage key -> the first node of the backward that unpacks it: its rank, what it saved
    for key, ids in savers.items():
        i = min(ids, key=lambda i: rank.get(i, len(rank)))
        first[key] = rank.get(i, len(rank))
        shapes[key] = node_shapes[i][key]  # the one eager's error names (fuzz seed 25506)
    return readers, own, out, shapes, first


def _backward_rank(edges):
    """The order in which autograd's engine runs the nodes of a graph (edges: id of a node ->
    ids of its next_functions): a node runs once every node feeding it a gradient has run
    (Kahn's order). Among nodes ready together eager runs the one made last in the forward
    (its sequence number, which torch 1.13 does not show); here the order they were found in."""
    indeg = {}
    for a, bs in edges.items():
        indeg.setdefault(a, 0)
        for b in bs:
            indeg[b] = indeg.get(b, 0) + 1
    ready = [a for a, d in indeg.items() if d == 0]
    rank = {}
    while ready:
        a = ready.pop(0)
        rank[a] = len(rank)
        for b in edges.get(a, ()):
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return rank


def _flatten(v):
    if isinstance(v, (tuple, list)):
        return [x for e in v for x in _flatten(e)]
    return [v]


def _decode_plan(plan_json):
    """A launch plan (the C++ runtime's or the CUDA runner's) with its extern steps' arguments and
    constant outputs decoded, and the torch callables of its externs by target."""
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
    return plan, externs


def make_compiled_graph(plan_json, lib_path, consts, rerun=None):
    """Builds the C++ runtime object (ptgo._fast.Graph) for a compiled graph's launch plan;
    rerun (torch_rerun) takes over when a kernel finds an index out of range."""
    _fast = _native.fast()
    if _fast is None:
        raise RuntimeError("ptgo._fast is not built for this torch (it needs torch's C++ headers: libtorch-dev)")
    plan, externs = _decode_plan(plan_json)
    from . import _C

    if plan.get("frozen"):
        watch_data(*consts)
    return _C.Disabled(_fast.Graph(plan, lib_path, externs, list(consts), rerun))


def make_cuda_graph(plan_json, handle, consts, rerun=None):
    """Builds the CUDA runtime's runner (ptgo._cuda.CUDAGraph) for a CUDA launch plan whose
    kernels Go loaded under handle."""
    from . import _C, _cuda

    plan, externs = _decode_plan(plan_json)
    return _C.Disabled(_cuda.CUDAGraph(plan, handle, externs, list(consts), rerun))


def search_path():
    """Where Go looks for a pip-installed NVRTC (site-packages/nvidia/cu13/lib, ...)."""
    return [p for p in sys.path if isinstance(p, str) and p] + sorted(_site_dirs())


# ---- autograd: one torch.autograd.Function per compiled region ------------------------------

def make_torch_graph(graph_json):
    """A prims graph ptgo turned back into torch calls (aot_eager), as a callable."""
    from .fx_export import graph_module_from_json

    from . import _C

    return _C.Disabled(graph_module_from_json(graph_json, None, {}).forward)


def make_autograd_graph(fwd, bwd, num_outputs, tangents, consts, rerun=None, name="a compiled region",
                        recompute=None, written=(), random=False, no_recompute="", grad_deps=None, floats=(),
                        guards=(), bump_after=()):
    """Wraps a forward and a backward graph (aotautograd.Split) in a torch.autograd.Function.

    fwd(*inputs, *params) returns num_outputs user outputs then the tensors to save;
    bwd(*saved, *tangents) returns one gradient (or None) per input and parameter. When the
    forward rejects its data (IndexError, RuntimeError: an index out of range), rerun
    (torch_rerun, if given) runs the captured graph with torch instead, which raises torch's own
    exception for it.

    grad_deps[i] lists the outputs input i's gradient depends on (None: it gets none): an input
    none of whose outputs the caller differentiates gets None, as in eager (.grad stays None),
    not the zeros of unused outputs' materialized gradients.

    floats lists the inputs that are Python floats read at run time whose values bwd takes too,
    after the tangents (aotautograd.Graphs.BackwardFloats).

    The compiled backward runs with grad mode off: its gradients are not differentiable. A
    backward that runs with grad mode on (``create_graph=True``: gradient penalties,
    ``torch.autograd.functional.hessian``) instead recomputes the region's forward with torch
    (``recompute``: the captured graph, reading the parameters itself) from the region's
    inputs and differentiates it with ``torch.autograd.grad(create_graph=True)``, so the
    gradients are eager's and differentiable (ARCHITECTURE A70). For that the Function keeps its
    inputs and their versions, the values before the forward of the inputs it writes
    (``written``: BatchNorm's running statistics) and, when the forward draws random numbers,
    the generator's state before it.

    guards (autograd_probe's) are the inputs and outputs whose memory eager's ops save for their
    backward: the region keeps them with their versions after the forward, and its backward
    raises eager's "modified by an inplace operation" error when one was written in place since
    and a given gradient's output reaches the op that saved it, before anything else (ptgo's own
    derivatives may save other values, or none of them: ARCHITECTURE A152)."""
    tangents = list(tangents)
    written_set = set(written)
    # eager's backward reaches these inputs (by index) and parameters (by object) from these
    # outputs: they get a gradient where ptgo's derivatives see none (zeros)
    reach_in = {int(i): frozenset(ks) for kind, i, v, ks, node, _ in guards if kind == 2}
    reach_attr = [(node, frozenset(ks)) for kind, i, v, ks, node, _ in guards if kind == 3]
    reach_resolved = {}

    def eager_reach(n_args):
        """reach_in and reach_attr by argument index (the parameters follow the inputs)."""
        if n_args not in reach_resolved:
            r = dict(reach_in)
            first = n_args - len(consts)
            for obj, ks in reach_attr:
                for j, c in enumerate(consts):
                    if c is obj:
                        r[first + j] = ks
            reach_resolved[n_args] = r
        return reach_resolved[n_args]
    # an input the region writes itself is left out: eager's version count of it differs from
    # ptgo's (the write is bumped after the Function returns, alias_checked), and the probe's
    # refusal covers a write after eager saved it
    out_versions = [(int(i), int(v)) for kind, i, v, _, _, _ in guards if kind == 4]
    guards = [(int(kind), int(i), int(v), frozenset(ks), node, shape) for kind, i, v, ks, node, shape in guards
              if kind in (0, 1) and not (kind == 0 and i in written_set)]
    diff = set(tangents)
    consts = list(consts)
    deps = None if grad_deps is None else [None if d is None else frozenset(d) for d in grad_deps]
    written = list(written)
    floats = list(floats)
    hinted = []
    nan_hinted = []

    def recomputable(ctx):
        # a torch recompute exists, and no input was written in place since the forward (then
        # the compiled backward's result stands)
        return not no_recompute and recompute is not None and _inputs_unchanged(ctx)

    def differentiable_backward(ctx, grads, create_graph=True):
        if no_recompute:
            raise RuntimeError(
                "ptgo: a backward with create_graph=True (double backward) through %s is not supported: %s. "
                "Run that code eagerly (outside ptgo.compile) or with backend='eager'" % (name, no_recompute))
        if recompute is None:
            raise RuntimeError("ptgo BUG: %s has no torch recompute for a double backward" % name)
        args = ctx.ptgo_inputs
        for a, v in zip(args, ctx.ptgo_versions):
            if isinstance(a, torch.Tensor) and a._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    "operation: [%s %s] is at version %d; expected version %d instead (ptgo: the double backward "
                    "of %s recomputes its forward from its inputs)" % (a.type(), list(a.shape), a._version, v, name))
        if create_graph and not hinted:
            hinted.append(True)
            _logging.emit("perf_hints", "%s: a backward with create_graph=True recomputes the region's forward with "
                          "torch and differentiates it with torch.autograd (the compiled backward is not "
                          "differentiable)" % name)
        # The written inputs go back to their values before the forward: the recompute reads
        # what the forward read, and its own writes leave them as the forward did (torch's
        # values, which are eager's). Nothing is restored after it: the recompute's graph may
        # have saved them (BatchNorm saves its running statistics).
        with torch.no_grad():
            for i, before in zip(written, ctx.ptgo_before):
                args[i].copy_(before)
        if not create_graph:
            # A first-order recompute differentiates to the region's inputs only: leaves standing
            # for them (the same memory), so torch.autograd.grad never reaches into the graph that
            # made an input, whose saved values the outer backward still needs (fuzz seed 15196:
            # "Trying to backward through the graph a second time" from the earlier region of a
            # graph break). Written inputs stay themselves (a leaf that requires grad cannot be
            # written in place), and so do the parameters, which the recompute reads itself (a
            # stand-in for one got no gradient: fuzz seed 17236).
            n_in = len(args) - len(consts)
            args = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) and a.requires_grad and
                    i not in written and i < n_in else a for i, a in enumerate(args)]
        rng = torch.get_rng_state() if ctx.ptgo_rng is not None else None
        try:
            if rng is not None:
                torch.set_rng_state(ctx.ptgo_rng)
            with torch.enable_grad():
                outs = recompute(*args[:len(args) - len(consts)])
        finally:
            if rng is not None:
                torch.set_rng_state(rng)
            ctx.ptgo_versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        douts, dgrads = [], []
        for k in tangents:
            o = outs[k]
            if isinstance(o, torch.Tensor) and o.requires_grad and grads[k] is not None:
                douts.append(o)
                dgrads.append(grads[k])
        wrt = [i for i, need in enumerate(ctx.needs_input_grad) if need]
        res = [None] * len(args)
        if douts and wrt:
            got = torch.autograd.grad(douts, [args[i] for i in wrt], dgrads, create_graph=create_graph,
                                      allow_unused=True)
            for i, g in zip(wrt, got):
                res[i] = g if create_graph or g is None else g.detach()
        return tuple(res)

    # Parameters eager's backward reaches that ptgo's graph does not read (the graph overwrote
    # the value computed from them) enter the Function after its arguments, unused by the
    # forward, so their gradient can be eager's zeros (_zero_grads_eager_gives).
    extra = [(obj, ks) for obj, ks in reach_attr
             if isinstance(obj, torch.Tensor) and not any(c is obj for c in consts)]
    extra_args = tuple(obj for obj, _ in extra)

    class CompiledRegion(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            if extra:
                args = args[:len(args) - len(extra)]
            # What a double backward's recompute needs (differentiable_backward); the inputs are
            # kept on ctx, not saved, so a first-order backward checks only what it reads.
            ctx.ptgo_inputs = args
            ctx.ptgo_before = [args[i].clone() for i in written] if written else ()
            start_before[0] = (args, ctx.ptgo_before)
            ctx.ptgo_rng = torch.get_rng_state() if random else None
            start_rng[0] = ctx.ptgo_rng
            ctx.ptgo_floats = tuple(args[i] for i in floats)
            before = [a._version if isinstance(a, torch.Tensor) else None for a in args] if guards else None
            outs = fwd(*args)
            ctx.ptgo_versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
            # the caller bumps the written graph inputs (not parameters or buffers) when the
            # Function returns, once per bump in bump_after: a recompute's check that no input
            # changed since (_inputs_unchanged) expects that (fuzz seed 17236: x0[:, 0] = 0.5 in
            # the region kept a NaN gradient of a dead output from being recomputed)
            for i in bump_after:
                if i < len(args) - len(consts) and ctx.ptgo_versions[i] is not None:
                    ctx.ptgo_versions[i] += 1
            user, saved = list(outs[:num_outputs]), outs[num_outputs:]
            if out_versions:
                _match_versions(user, args, out_versions)
            shared = _saved_sharing(saved, user, args, written_set, len(args) - len(consts))
            _unview_temporaries(user)
            if shared:
                saved, ctx.ptgo_watch = _saved_out_of_sight(saved, user, args, shared)
            else:
                ctx.ptgo_watch = ()
            ctx.save_for_backward(*saved)
            nondiff = []
            detached = {}  # id of an output's tensor -> what it became
            # bases first: a view of another output becomes a view of what that output became,
            # so that eager's write into the base after a graph break reaches it (fuzz seed
            # 17113: v5 = v1[1:]; v1[0] = w made v5 require grad in eager only)
            order = sorted((i for i in range(num_outputs) if i not in diff and isinstance(user[i], torch.Tensor)),
                           key=lambda i: user[i]._base is not None)
            for i in order:
                # detached: a non-differentiable view of a differentiable output (x.detach()
                # is one in the runtime's plan) would otherwise require grad through it. A
                # view stays a view, of its base detached (eager's x.detach()[0] has a _base)
                u = user[i]
                if u._base is None:
                    user[i] = detached.setdefault(id(u), u.detach())
                else:
                    b = detached.get(id(u._base))
                    if b is None:
                        b = detached[id(u._base)] = u._base.detach()
                    user[i] = b.as_strided(u.size(), u.stride(), u.storage_offset())
                nondiff.append(user[i])
            ctx.mark_non_differentiable(*nondiff)
            ctx.ptgo_guards = _guarded(guards, args, before, ctx.ptgo_versions, user) if guards else ()
            ctx.set_materialize_grads(False)
            ctx.tangent_metas = [(user[k].shape, user[k].dtype, user[k].device) for k in tangents]
            return tuple(user)

        @staticmethod
        def backward(ctx, *grads):
            res = region_backward(ctx, grads)
            if extra:
                given = {k for k in tangents if grads[k] is not None}
                n = len(ctx.ptgo_inputs)
                res = tuple(res) + tuple(
                    torch.zeros_like(obj) if ctx.needs_input_grad[n + j] and ks & given else None
                    for j, (obj, ks) in enumerate(extra))
            return res

    def region_backward(ctx, grads):
        if ctx.ptgo_guards:
            _check_guards(ctx.ptgo_guards, grads)
        if ctx.ptgo_watch and _watched_written(ctx.ptgo_watch):
            # A value ptgo saved (eager's autograd does not, or the guards above would have
            # raised eager's error) shares memory with an output or input the caller wrote in
            # place since: eager's backward does not read it, so eager's gradients are the
            # torch recompute's from the unchanged inputs.
            if recomputable(ctx):
                _logging.emit("perf_hints", "%s: an output or input was written in place after the forward and "
                              "ptgo's backward had saved its memory (eager's does not): this backward recomputes "
                              "the region with torch" % name)
                with torch.enable_grad():
                    return differentiable_backward(ctx, grads, create_graph=False)
            t, v = next((t, v) for t, v in ctx.ptgo_watch if t._version != v)
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an inplace "
                "operation: [%s %s] is at version %d; expected version %d instead (ptgo: %s saved this memory "
                "for its backward where eager's autograd may not, and an input it would recompute from was "
                "written too)" % (t.type(), list(t.shape), t._version, v, name))
        if torch.is_grad_enabled():
            return differentiable_backward(ctx, grads)
        tang = [torch.zeros(m[0], dtype=m[1], device=m[2]) if grads[k] is None else grads[k].contiguous()
                for k, m in zip(tangents, ctx.tangent_metas)]
        res = tuple(bwd(*ctx.saved_tensors, *tang, *ctx.ptgo_floats))
        if deps is not None:
            given = {k for k in tangents if grads[k] is not None}
            res = tuple(None if i < len(deps) and (deps[i] is None or not deps[i] & given) else r
                        for i, r in enumerate(res))
        if reach_in or reach_attr:
            res = _zero_grads_eager_gives(res, eager_reach(len(ctx.ptgo_inputs)), grads, tangents, ctx)
        if any(grads[k] is None for k in tangents) and _non_finite(res) and recomputable(ctx):
            # An output the caller does not differentiate gets a zero tangent, which eager's
            # autograd never has: it skips that output's backward. Times an infinite or NaN
            # local derivative (reciprocal at 0, acos beyond ±1) the zero makes NaN in the
            # compiled backward where eager's gradient is finite (fuzz seeds 1186, 2782,
            # 6532, 6937, 9153). Non-finite gradients are the only sign of it, so then the
            # region's forward is recomputed with torch and differentiated by torch.autograd
            # from the given outputs only: eager's gradients (named on perf_hints).
            if not nan_hinted:
                nan_hinted.append(True)
                _logging.emit("perf_hints", "%s: an output's gradient was not given and the compiled backward "
                              "gave a non-finite gradient (a zero tangent times an infinite derivative may "
                              "make NaN where eager skips that output): this backward recomputes the region "
                              "with torch" % name)
            with torch.enable_grad():
                return differentiable_backward(ctx, grads, create_graph=False)
        return res

    region = CompiledRegion.apply
    # torch's generator as the last forward found it: a region that draws random numbers and
    # writes nothing is rerun with torch after a failed forward from that state (the driver
    # passes rerun for it: pipeline.RerunnableAfterRNG), so the rerun draws eager's numbers
    start_rng = [None]
    # and the written inputs' values before it, with the inputs (start_before): a region that
    # writes them (BatchNorm's running statistics) through its epilogue alone (no_recompute
    # empty) is rerun with torch after a failed forward from those values (fuzz seed 16808: an
    # embedding index out of range beside a training BatchNorm gave ptgo's index message)
    start_before = [None]
    if rerun is None and recompute is not None and not no_recompute:
        rerun = recompute
    # Inputs that get no gradient (grad_deps None: no output reaches them through values that
    # require grad, e.g. a resumed frame's unused local) enter the Function detached, so its
    # backward has no edge to them: in eager nothing connects them to the outputs, and an edge
    # would run their grad_fn (fuzz seed 4406: torch's NotImplemented node of a floor_divide_
    # raised "derivative for aten::floor_divide_ is not implemented" in a backward eager never
    # takes through it). detach() keeps the storage and the version counter.
    cut = [] if deps is None else [i for i, d in enumerate(deps) if d is None and i not in written and
                                   i not in eager_reach(len(deps))]

    def apply(*args):
        if cut:
            args = list(args)
            for i in cut:
                a = args[i] if i < len(args) else None
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    args[i] = a.detach()
        return _views_outside(region(*args, *extra_args))

    if rerun is None:
        def run(*inputs):
            return apply(*inputs, *consts)
    else:
        def run(*inputs):
            start_rng[0] = start_before[0] = None
            try:
                return apply(*inputs, *consts)
            except (IndexError, RuntimeError):
                pass  # torch's exception, raised below, is the one the user sees (no chaining)
            if start_rng[0] is not None:
                torch.set_rng_state(start_rng[0])
            if start_before[0] is not None:
                _restore_unversioned(*start_before[0], written)
                start_before[0] = None
            return rerun(*inputs)

    return run


def _restore_unversioned(args, before, written):
    """Writes the values before a failed forward back into the inputs it writes, without
    bumping their version counters (the failed forward bumped none; the torch rerun then bumps
    them as eager does)."""
    with _versions_untouched(), torch.no_grad():
        for i, b in zip(written, before):
            args[i].copy_(b)


def _match_versions(user, args, out_versions):
    """Gives the outputs the graph wrote in place eager's version count (out_versions: (output,
    eager's version at the graph's end), from autograd_probe): functionalization made them fresh
    tensors at version 0, and a later "modified by an inplace operation" error names the version
    (fuzz seed 16100: `v2.exp_()` before a graph break, `v2.pow_(2)` after it). Outputs sharing
    memory with an input keep the input's count; each memory is bumped once."""
    arg_keys = {_storage_key(a) for a in args if isinstance(a, torch.Tensor)}
    done = set()
    for k, v in out_versions:
        t = user[k] if k < len(user) else None
        key = _storage_key(t) if isinstance(t, torch.Tensor) else None
        if key is None or key in arg_keys or key in done or t._version >= v:
            continue
        done.add(key)
        _version_bumper()((t,), (0,) * (v - t._version))


def _guarded(guards, args, before, after, user):
    """The tensors a region's guards name, after its forward: (tensor, its version now, eager's version of it now, the outputs whose gradient reaches the op that saved
    it, what eager's error names: the probe's node of an output, an input's output_nr). before and
    after are the inputs' versions around the forward; eager's count of an input is its version
    before plus the bumps eager's ops make (the guard's), of an output the guard's."""
    _inplace_error_style()  # read now, not inside a backward
    out = []
    for kind, i, v, ks, node, shape in guards:
        if kind == 0:
            t = args[i] if i < len(args) else None
            if isinstance(t, torch.Tensor):
                out.append((t, after[i], before[i] + v, ks, t.output_nr, shape))  # output_nr when saved
        else:
            t = user[i] if i < len(user) else None
            if isinstance(t, torch.Tensor):
                # detached (the same memory and version counter): the output's grad_fn will be
                # this region's node, which holds the guards, and a reference cycle through it
                # would keep both alive
                out.append((t.detach(), t._version, v, ks, node, shape))
    return out


def _check_guards(guarded, grads):
    """Raises eager's "modified by an inplace operation" error for the first guarded tensor
    (_guarded) written in place since the forward whose saving op a given gradient reaches, with
    eager's version numbers."""
    given = {k for k, g in enumerate(grads) if g is not None}
    for t, end, expected, ks, node, shape in guarded:
        if t._version == end or not ks & given:
            continue
        # eager names the node that made a saved output, and the current grad_fn of a saved
        # input with its output number when saved
        node_name, hint = _inplace_error_style()
        where = ""
        if isinstance(node, tuple):
            where = ", which is output %d of %s," % (node[1], node_name(node[0]))
        elif isinstance(node, int) and t.grad_fn is not None:
            where = ", which is output %d of %s," % (node, node_name(t.grad_fn.name()))
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace "
            "operation: [%s %s]%s is at version %d; expected version %d instead.%s" % (
                t.type(), list(t.shape) if shape is None else shape, where, t._version - end + expected, expected, hint))


_INPLACE_STYLE = []


def _inplace_error_style():
    """How the running torch words its "modified by an inplace operation" error, read once from
    the error itself (torch 1.13 names ReluBackward0 and hints set_detect_anomaly(True); 2.14
    names Relu and hints set_detect_anomaly(True, check_nan=False)): (the node name it prints
    for a grad_fn's name(), the text after "instead.")."""
    if not _INPLACE_STYLE:
        node_name, hint = (lambda n: n), ""
        with torch.enable_grad():
            x = torch.zeros(1, requires_grad=True) * 1
            y = torch.relu(x)
            name = y.grad_fn.name()
            y.add_(1)
            try:
                y.backward()
            except RuntimeError as e:
                msg = str(e)
                hint = msg[msg.index("instead.") + len("instead."):] if "instead." in msg else ""
                if (", which is output 0 of %s," % name) not in msg:
                    stem = re.sub(r"Backward\d*$", "", name)
                    if (", which is output 0 of %s," % stem) in msg:
                        node_name = lambda n: re.sub(r"Backward\d*$", "", n)  # noqa: E731
        _INPLACE_STYLE.append((node_name, hint))
    return _INPLACE_STYLE[0]


def _zero_grads_eager_gives(res, reach, grads, tangents, ctx):
    """A compiled backward's gradients with zeros for each input that ptgo's derivatives give
    none but eager's backward reaches from a differentiated output (reach: autograd_probe's,
    by argument index): eager's graph keeps the edge to a value the graph overwrote (a copy_
    into a linear's result: CopyBackwards gives the old value a zero gradient, so the
    parameters' .grad are zeros, not None: fuzz seed 7153)."""
    given = {k for k in tangents if grads[k] is not None}
    out = list(res)
    for i, ks in reach.items():
        if i < len(out) and out[i] is None and ctx.needs_input_grad[i] and ks & given:
            out[i] = torch.zeros_like(ctx.ptgo_inputs[i])
    return tuple(out)


def ddp_buckets(m, inputs):
    """(first bucket bytes, bucket bytes, which of a graph's inputs are parameters DDP reduces)
    of the DistributedDataParallel a graph is compiled under, when config.optimize_ddp is on,
    else None: the pipeline splits training graphs at these bucket boundaries
    (pipeline.SplitAtBuckets). The DDP is m, the module ptgo.compile was given (None for a
    function), or the DDP whose forward is running (DDP(ptgo.compile(model)): DDP names itself
    in DistributedDataParallel._active_ddp_module meanwhile, on torch 1.13 and 2.x)."""
    if not config.optimize_ddp:
        return None
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return None
    if not isinstance(m, DistributedDataParallel):
        m = getattr(DistributedDataParallel, "_active_ddp_module", None)
        if not isinstance(m, DistributedDataParallel):
            return None
    import torch.distributed as dist
    params = {id(p) for p in m.module.parameters() if p.requires_grad}
    flags = tuple(isinstance(x, torch.nn.Parameter) and id(x) in params for x in inputs)
    return (int(getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", 1024 * 1024)), int(m.bucket_bytes_cap), flags)


def chain_graphs(parts, inputs, outputs):
    """One callable running compiled parts one after the other (a graph split at DDP's bucket
    boundaries): part k takes the values inputs[k] names, each (part, index), part -1 being the
    call's own arguments; the result is the values outputs names."""
    plan = tuple(zip(parts, inputs))

    def run(*args):
        vals = []
        for part, refs in plan:
            vals.append(part(*[args[i] if p < 0 else vals[p][i] for p, i in refs]))
        return tuple(args[i] if p < 0 else vals[p][i] for p, i in outputs)

    return run


def _non_finite(res):
    """Whether a compiled backward's gradients hold a NaN or an infinity (a floating gradient)."""
    for r in res:
        if isinstance(r, torch.Tensor) and r.is_floating_point() and r.numel() and not bool(torch.isfinite(r).all()):
            return True
    return False


def _inputs_unchanged(ctx):
    """Whether no input of a compiled region was written in place since its forward."""
    for a, v in zip(ctx.ptgo_inputs, ctx.ptgo_versions):
        if isinstance(a, torch.Tensor) and a._version != v:
            return False
    return True


def _unview_temporaries(user):
    """Outputs the launch plan made as views of its own temporaries (a repeat is an expand of
    a buffer) are new tensors in eager: the same memory as a tensor that is no view, so that
    autograd lets the caller write them in place. Outputs over one temporary where one of them
    holds every element of the others (v1 = x.max(-1)[0]; v2 = v1.unsqueeze(-1), both views of
    the plan's gather buffer) keep that relation: the others become views of it, made again
    outside the Function (_views_outside), so that an in-place write to one after the region
    reaches the other's gradient as in eager (fuzz seed 12304: v1.exponential_() left v2's
    gradient flowing through the max)."""
    ids = None
    groups = {}
    for i, o in enumerate(user):
        b = getattr(o, "_base", None) if isinstance(o, torch.Tensor) else None
        if b is None:
            continue
        if ids is None:
            ids = {id(t) for t in user if isinstance(t, torch.Tensor)}
        if id(b) not in ids:
            groups.setdefault(id(b), []).append(i)
    for idxs in groups.values():
        views = {i: user[i] for i in idxs}
        root = _covering_output(views) if len(idxs) > 1 else None
        fresh = _fresh_on_storage(views[root if root is not None else idxs[0]])
        for i in idxs:
            o = views[i]
            if i == root:
                user[i] = fresh
            elif root is not None and _within(o, views[root]):
                user[i] = fresh.as_strided(o.size(), o.stride(), o.storage_offset())
            else:
                user[i] = _fresh_on_storage(o)


def _within(o, root):
    """Whether every element of o is one of root's (root is dense: its span is its elements)."""
    so, sr = _span(o), _span(root)
    return so is not None and sr is not None and sr[0] <= so[0] and so[1] <= sr[1]


def _covering_output(views):
    """The output (index) among views of one temporary that is dense and holds the most
    elements, when it holds some other's; None otherwise."""
    best = None
    for i, t in views.items():
        sp = _span(t)
        if sp is None or sp[1] - sp[0] != t.numel() * t.element_size() or any(s < 0 for s in t.stride()):
            continue  # not dense: its span has gaps or overlaps
        if best is None or t.numel() > views[best].numel():
            best = i
    if best is None or not any(_within(t, views[best]) for i, t in views.items() if i != best):
        return None
    return best


def _fresh_on_storage(o):
    """A tensor that is no view over o's memory, at version 0 as eager's new results are: set_
    bumps the version counter of the tensor it writes in ADInplaceOrView, which is skipped
    (eager's version numbers show in "modified by an inplace operation" errors: fuzz seed
    4836)."""
    with _versions_untouched():
        return torch.empty(0, dtype=o.dtype, device=o.device).set_(
            _compat.storage(o), o.storage_offset(), o.size(), o.stride())


@contextlib.contextmanager
def _versions_untouched():
    """In-place writes inside bump no version counter: ADInplaceOrView, the dispatch key that
    bumps them, is skipped."""
    guard = torch._C.ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.ADInplaceOrView))
    try:
        yield
    finally:
        del guard


def _views_outside(outs):
    """A compiled region's outputs with each view of another output made again outside the
    autograd.Function (as_strided of that output): autograd forbids in-place writes to views a
    custom Function returns, which eager allows (x = a.t(); x.zero_() after the graph)."""
    bases = None
    for i, o in enumerate(outs):
        b = getattr(o, "_base", None) if isinstance(o, torch.Tensor) else None
        if b is None:
            continue
        if bases is None:
            bases = {id(t) for t in outs if isinstance(t, torch.Tensor)}
        if id(b) in bases:
            outs = list(outs) if isinstance(outs, tuple) else outs
            outs[i] = b.as_strided(o.size(), o.stride(), o.storage_offset())
    return tuple(outs)
