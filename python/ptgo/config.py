"""Runtime configuration, mirroring ``torch._dynamo.config`` where the names overlap.

Set attributes directly: ``ptgo.config.cache_size_limit = 16``. Environment variables are read
here and in ``_logging`` only.
"""
import os

#: Cache entries (distinct guard sets) per code object and call site before ptgo stops
#: recompiling it there and runs it eagerly, with one warning naming the guard that failed (torch
#: 2.2+ uses 8 too). A call site is the objects of the frame's arguments that the entries are
#: specialised to: functions and objects guarded by identity, and the module whose forward the
#: frame is (guarded by class, see accumulated_cache_size_limit).
cache_size_limit = 8

#: Cache entries per code object over all call sites: many distinct layers of one class whose
#: forwards run as frames of their own (different hyperparameters or shapes) compile one entry
#: each up to this limit (torch.compile's accumulated_cache_size_limit).
accumulated_cache_size_limit = 256

#: Treat ``dynamic=None`` (the default) as ``dynamic=True``: every dimension of size >= 2 symbolic
#: from the first compile (torch's ``assume_static_by_default = False``). For testing that
#: everything captured with static shapes works with symbolic ones (PTGO_DYNAMIC=1).
assume_dynamic = os.environ.get("PTGO_DYNAMIC", "") not in ("", "0")

#: When a backend fails, run the frame eagerly with a warning instead of raising
#: ``ptgo.BackendCompilerFailed``.
suppress_errors = os.environ.get("PTGO_SUPPRESS_ERRORS", "") not in ("", "0")

#: Write each stage's IR and generated code per compile under this directory (PTGO_DEBUG_DIR).
debug_dir = os.environ.get("PTGO_DEBUG_DIR") or None

#: Verify the IR after every pass (slow; for ptgo's own tests) (PTGO_CHECK=1).
check_ir = os.environ.get("PTGO_CHECK", "") not in ("", "0")

#: Maximum depth of inlined calls before a frame is given up (a graph break).
max_inline_depth = 64

#: Bytecode instructions a capture may interpret (unrolled loops count every iteration).
max_trace_instructions = 2_000_000

#: CUDA graphs: wait for the device after every call of a compiled CUDA graph, so that a kernel
#: finding an index out of range raises from that call (and the graph re-runs with torch where
#: that is safe) rather than from a later one (PTGO_CUDA_SYNC=1; slow, for debugging and tests).
cuda_sync = os.environ.get("PTGO_CUDA_SYNC", "") not in ("", "0")

#: ``ptgo.compile(DistributedDataParallel(model))``: split each training graph at DDP's gradient
#: bucket boundaries into regions of their own, so each bucket's all-reduce starts while backward
#: goes on through the earlier layers (torch._dynamo.config.optimize_ddp). False: one region.
optimize_ddp = True
