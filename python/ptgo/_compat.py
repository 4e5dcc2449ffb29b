"""Facts of torch's Python code that differ between torch versions, as tables keyed by version.

ptgo is built and tested against Debian's torch 1.13 and PyPI's torch 2.14. Where their Python
code differs in a way ptgo must know, the difference is a row here (or in
bytecode/torch_versions.go, setup.py's TORCH_CXX), never an ``if`` on the version in the code
that uses it. A table lists rows oldest first; a version uses the last row at or below it.
"""
import functools
import sys
import types

import torch


def torch_version(version=None):
    """(major, minor) of torch.__version__ ("2.14.1+cpu" -> (2, 14))."""
    parts = (version or torch.__version__).split("+")[0].split(".")
    out = []
    for p in parts[:2]:
        digits = ""
        for c in p:
            if not c.isdigit():
                break
            digits += c
        out.append(int(digits or 0))
    return tuple(out)


def for_torch(rows, version=None):
    """The value of the last row (since, value) at or below the running torch."""
    v = torch_version(version) if not isinstance(version, tuple) else version
    value = rows[0][1]
    for since, row in rows[1:]:
        if v < since:
            break
        value = row
    return value


#: Parts of torch captured like user code besides torch.nn's modules (_runtime.TORCH_CAPTURED):
#: torch.optim, where every optimizer's compiled step equals eager's (tests/test_optim.py; on
#: torch 2.x up to eager's own float32 sqrt, which MKL computes within one ulp). The 2.14
#: difference after load_state_dict that kept 2.x's optimizers eager was the test's (both
#: optimizers shared one state dict).
TORCH_CAPTURED_EXTRA = (
    ((1, 0), (("optim",),)),
    ((2, 0), (("optim",),)),
)

#: torch.compile's entry points, as files of the torch package: a frame that starts there runs
#: with ptgo's capture off for its whole extent (callees included) and ptgo's frame hook out of
#: the way, because torch.compile's own frame evaluator owns the frames it makes; ptgo's
#: interpreter never inlines them (a call to one is a graph break). torch._dynamo.eval_frame
#: holds the wrappers torch.compile, torch.compile(module), module.compile() and
#: torch._dynamo.disable / torch.compiler.disable return; torch._compile holds
#: torch._disable_dynamo, which torch decorates some of its own functions with.
TORCH_COMPILE_ENTRY_FILES = (
    ((1, 0), ()),  # torch 1.13 has no torch.compile
    ((2, 0), (("_dynamo", "eval_frame.py"), ("_compile.py",))),
)


#: torch functions ptgo knows only through torch's meta kernels whose meta kernel disagrees with
#: the CPU kernel: their metadata comes from a run on zero-filled CPU tensors instead.
#: torch 2's _native_multi_head_attention meta kernel returns a defined empty tensor where the
#: CPU kernel returns None (the attention weights when need_weights=False); torch 1.13 has no
#: meta kernel for it (CPU already). index_put's meta kernel (1.13 and 2.x) does not check that
#: the values' dtype is the destination's, which the CPU kernel refuses ("Index put requires the
#: source and destination dtypes match"): the error must come at capture, where ptgo runs the op
#: eagerly after a graph break with the mutations before it written back, not from inside a
#: compiled graph whose earlier in-place ops were not yet written back (fuzz seed 4061).
#: The same for the in-place random ops whose meta kernels take dtypes their CPU kernels refuse
#: ('"exponential_cpu" not implemented for 'Char'' after a training BatchNorm had updated its
#: running statistics: fuzz seed 4976): on 1.13 exponential_, cauchy_, log_normal_, normal_ of
#: integers and bool, geometric_ of bool, bernoulli_ of float16; on 2.14 uniform_ of integers
#: and bool (checked on both torches: meta accepts, CPU raises). torch 2.14's heaviside meta
#: kernel lays out a broadcast result of a permuted operand otherwise than its CPU kernel
#: ((10, 1, 5) against (1, 5, 25) for a [5, 5, 2] operand of strides (1, 5, 25): fuzz seed 30450).


def _spellings(*names):
    return tuple(p + n for n in names for p in ("", "torch.", "Tensor."))


_INDEX_PUT = _spellings("index_put", "index_put_")
META_KERNEL_DIFFERS_FROM_CPU = (
    ((1, 0), _INDEX_PUT + _spellings("exponential_", "cauchy_", "log_normal_", "normal_", "geometric_", "bernoulli_")),
    ((2, 0), ("torch._native_multi_head_attention",) + _INDEX_PUT + _spellings("uniform_", "heaviside")),
)


def storage(t):
    """t's storage as ``Tensor.set_`` and ``nbytes()`` take it, without the TypedStorage
    deprecation warning torch 2.x gives for ``Tensor.storage()``: ``untyped_storage()`` where
    torch has it (2.0 on), ``storage()`` on torch 1.13, which has no other."""
    us = getattr(t, "untyped_storage", None)
    return us() if us is not None else t.storage()


def resolve_loaded(path):
    """Like _runtime.resolve, but only through modules already imported: "torch._dynamo.x" is
    None while nothing imported torch._dynamo (importing it takes seconds; code that calls its
    functions has imported it)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj = mod
        try:
            for p in parts[i:]:
                # A module's own dict only: torch 2's module __getattr__ imports its lazy
                # submodules (torch._dynamo: a second), which is what this function avoids.
                obj = vars(obj)[p] if isinstance(obj, types.ModuleType) else getattr(obj, p)
        except (AttributeError, KeyError):
            return None
        return obj
    return None


def kernels_fuse_multiply_add():
    """Whether torch's CPU kernels compute add(a, b, alpha=s) as one fused multiply-add (their
    AVX2/AVX-512 builds, which gcc contracts; primtorch.KernelsFuseMultiplyAdd). Probed on values
    where the two roundings differ: (1 + 2^-12)² - 1 is 2^-11 + 2^-24 fused and 2^-11 rounded
    twice, in float32 and float64 (2^-27 there), over 64 elements (vector lanes and remainder)."""
    out = True
    for dtype, e in ((torch.float32, 2.0 ** -12), (torch.float64, 2.0 ** -27)):
        one = torch.full((64,), -1.0, dtype=dtype)
        b = torch.full((64,), 1.0 + e, dtype=dtype)
        got = one.add(b, alpha=1.0 + e)
        out = out and bool((got == 2 * e + e * e).all())
    return out


def sqrt_inexact_dtypes():
    """The floating-point dtypes whose eager CPU sqrt is not the correctly rounded square root
    (primtorch.SqrtCorrectlyRounded, A143): PyPI's torch 2.x calls MKL's vsSqrt, within one ulp,
    for float32 at every size and float64 from 64 elements. Probed on 4096 values of [0, 0.03)
    (about 1 in 6 float32 results differ there) against float64's sqrt rounded (float32) and
    math.sqrt (float64), and on one element."""
    import math
    out = []
    gen = torch.Generator().manual_seed(20261205)
    x = torch.rand(4096, generator=gen, dtype=torch.float64) * 0.03
    for dtype in (torch.float32, torch.float64):
        v = x.to(dtype)
        want = torch.tensor([math.sqrt(e) for e in v.tolist()], dtype=torch.float64).to(dtype)
        if not (torch.equal(v.sqrt(), want) and torch.equal(v[:1].sqrt(), want[:1])):
            out.append(str(dtype).replace("torch.", ""))
    return out


def probe_behavior():
    """What the running torch's CPU kernels do where it depends on the CPU they run on, not only
    on torch's version (primtorch.ProbedBehavior): whether gelu of a contiguous float32 tensor
    takes oneDNN's kernel (+0.0 for -0.0, where ATen's gives -0.0), and whether elu's gradient
    at NaN is grad·scale at every position (else NaN where the vectorised loop takes it).

    elu's gradient is asked of the kernel eager's backward calls (`elu_backward` with F.elu's
    alpha, scale and input_scale), not through autograd: a process's first backward on a CUDA
    build of torch 2.x starts the autograd engine's device threads and CUDA's lazy init, 0.45 s
    added to the first compile of every process that never differentiates anything."""
    import torch.nn.functional as F
    with torch.inference_mode(False):
        gelu = F.gelu(torch.full((64,), -0.0, dtype=torch.float32))
        x = torch.full((64,), float("nan"), dtype=torch.float32)
        grad = torch.ops.aten.elu_backward(torch.ones(64, dtype=torch.float32), 1.0, 1, 1, False, x)
    return {"gelu_onednn": not bool(torch.signbit(gelu).any()),
            "elu_grad_nan_positive": bool((grad == 1.0).all())}


def dropout_draws_mt19937():
    """Whether ptgo's bernoulli_mask (ptgo._fast, pybridge/fast/ptgo_random.cpp) draws what
    eager's CPU dropout draws: its values and the generator's state after it, bit for bit
    (primtorch.DropoutDrawsMT19937). Probed under a generator of its own state, which is put
    back: sizes across the mt19937 block boundary, starting mid-block, two probabilities."""
    from . import _native
    _fast = _native.fast()
    if _fast is None or not hasattr(_fast, "bernoulli_mask"):
        return False
    state = torch.get_rng_state()
    try:
        torch.manual_seed(20261205)
        for n, p, skip in ((1, 0.5, 0), (700, 0.1, 5), (1300, 0.7, 311)):
            torch.rand(skip)
            before = torch.get_rng_state()
            want = torch.dropout(torch.ones(n), p, True)
            after = torch.get_rng_state()
            torch.set_rng_state(before)
            mask = _fast.bernoulli_mask((n,), 1.0 - p)
            got = mask.to(torch.float32).div_(1.0 - p)
            if not torch.equal(got, want) or not torch.equal(torch.get_rng_state(), after):
                return False
        return True
    except Exception:
        return False
    finally:
        torch.set_rng_state(state)


def blas_on_openmp():
    """Whether torch's matrix products run on its OpenMP (libgomp) team rather than on threads
    of the BLAS's own: PyPI's torch links MKL's GNU-threaded layer; Debian's uses OpenBLAS, whose
    pthread variant has its own threads (its openmp variant, openblas-openmp, does not). ptgo's
    C backend then keeps its kernels on libgomp too (inductor.usePool)."""
    if torch.backends.mkl.is_available():
        return True
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
    except OSError:
        return False
    return "openblas-openmp" in maps or "libopenblaso" in maps


#: torch's autocast queries, each a call without arguments the guards can repeat: CPU enabled,
#: CUDA enabled, CPU dtype, CUDA dtype, cache enabled. torch 2.4 deprecated the per-device
#: functions (a DeprecationWarning) for ones that take the device type.
AUTOCAST_QUERIES = (
    ((1, 0), lambda: (torch.is_autocast_cpu_enabled, torch.is_autocast_enabled, torch.get_autocast_cpu_dtype,
                      torch.get_autocast_gpu_dtype, torch.is_autocast_cache_enabled)),
    ((2, 4), lambda: (functools.partial(torch.is_autocast_enabled, "cpu"),
                      functools.partial(torch.is_autocast_enabled, "cuda"),
                      functools.partial(torch.get_autocast_dtype, "cpu"),
                      functools.partial(torch.get_autocast_dtype, "cuda"), torch.is_autocast_cache_enabled)),
)
(autocast_cpu_enabled, autocast_cuda_enabled, autocast_cpu_dtype, autocast_cuda_dtype,
 autocast_cache_enabled) = for_torch(AUTOCAST_QUERIES)()
