"""ptgo's CUDA runtime: runs a compiled graph's CUDA launch plan over torch tensors.

The plan is the C backend's (``inductor/program.go``) plus a ``cuda`` section
(``inductor/cuda_program.go``); the Go library loaded its kernels on the plan's device and hands
out a handle. Per call: buffers come from torch's caching allocator on the plan's device (the
temporaries from one arena kept across calls, as the C++ runtime keeps it), matrix products and
convolutions are torch's own (cuBLAS, cuDNN) and fallback externs call the torch function they
name, and every kernel step is launched by ``ptgo_go_cuda_launch`` (Go, through ctypes: no Python
object crosses) on torch's current stream, so kernels, externs and the caller's own work stay in
stream order. Nothing synchronises: like torch's own kernels, a ptgo kernel that finds an index
out of range sets the graph's status word (pinned host memory the device writes), which is read
without waiting at the next call (or at the end of this one with ``ptgo.config.cuda_sync``).

On the emulated device (``PTGO_CUDA_EMULATE=1``, the plan's device is ``cpu``) the same runner
runs over CPU tensors and the kernels run synchronously on the CPU.
"""
import ctypes
import threading

import torch

from . import _compat, config

_lib = None
_lib_lock = threading.Lock()

_DTYPES = {n: getattr(torch, n) for n in (
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
    "complex64", "complex128")}

_ERRBUF = 1024


def _library():
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                from . import _runtime

                lib = ctypes.CDLL(_runtime._lib_path())  # already loaded by ptgo._C: the same copy
                lib.ptgo_go_cuda_launch.argtypes = [ctypes.c_int64, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint64),
                                                    ctypes.c_int32, ctypes.c_uint64, ctypes.c_char_p, ctypes.c_int32]
                lib.ptgo_go_cuda_launch.restype = ctypes.c_int32
                lib.ptgo_go_cuda_release.argtypes = [ctypes.c_int64]
                lib.ptgo_go_cuda_release.restype = None
                _lib = lib
    return _lib


def _release(handle):
    lib = _lib
    if lib is not None:
        try:
            lib.ptgo_go_cuda_release(handle)
        except Exception:  # noqa: BLE001 - at interpreter exit
            pass


class _Buf:
    __slots__ = ("dtype", "itemsize", "sizes", "strides", "offset", "storage_elems", "arena", "base", "role")

    def __init__(self, b):
        self.dtype = _DTYPES[b["dtype"]]
        self.itemsize = torch.empty((), dtype=self.dtype).element_size()
        self.sizes = tuple(b["sizes"])
        self.strides = tuple(b["strides"])
        self.offset = int(b.get("offset", 0))
        self.storage_elems = int(b.get("storage_elems", 0))
        self.arena = int(b.get("arena", -1)) if b.get("arena") is not None else -1
        self.base = int(b.get("base", -1)) if b.get("base") is not None else -1
        self.role = b.get("role")


def _start(t):
    """The address of the start of t's storage (kernels index from there, as the C kernels do)."""
    return t.data_ptr() - t.storage_offset() * t.element_size()


def _storage_nbytes(t):
    return _compat.storage(t).nbytes()


def _over(base, spec, skip):
    """A tensor of spec's layout over base's storage, skip bytes from the storage's start
    (as_strided's offset counts from the storage start, in the view's elements)."""
    if base.dtype != spec.dtype:
        whole = base.as_strided((_storage_nbytes(base) // base.element_size(),), (1,), 0)
        base = whole.view(spec.dtype) if whole.numel() else torch.empty(0, dtype=spec.dtype, device=base.device)
    if skip % spec.itemsize:
        raise RuntimeError("ptgo BUG: a buffer %d bytes into its storage is not aligned for %s" % (skip, spec.dtype))
    return base.as_strided(spec.sizes, spec.strides, skip // spec.itemsize + spec.offset)


class CUDAGraph:
    """The callable a CUDA-compiled graph is: takes the graph's inputs, returns a tuple of its
    outputs (ptgo._runtime.make_cuda_graph builds it)."""

    def __init__(self, plan, handle, externs, consts, rerun):
        self.name = plan.get("name", "graph")
        self.device = torch.device(plan.get("device") or "cuda:0")
        self.is_cuda = self.device.type == "cuda"
        self.handle = handle
        self._finalizer = __import__("weakref").finalize(self, _release, handle)
        self.bufs = [_Buf(b) for b in plan["buffers"]]
        self.inputs = list(plan["inputs"])
        self.consts = list(consts)
        self.rerun = rerun
        self.rerun_status = int(plan.get("rerun_status", 3))
        self.arena_bytes = int(plan.get("arena_bytes", 0))
        self.outputs = plan["outputs"]
        self.steps = []
        for si, st in enumerate(plan["steps"]):
            op = st["op"]
            if op == "kernel":
                self.steps.append(("kernel", si, tuple(st.get("ptrs") or ()), bool(st.get("once")), st["kernel"]))
            elif op == "extern":
                self.steps.append(("extern", st["target"], st["args"], st.get("kwargs") or [], tuple(st["outs"]),
                                   bool(st.get("into")), externs.get(st["target"])))
            elif op == "alloc":
                self.steps.append(("alloc", st["buf"]))
            elif op == "view":
                self.steps.append(("view", st["buf"]))
            elif op == "free":
                self.steps.append(("free", st["buf"]))
            else:
                raise ValueError("ptgo CUDA runtime: unknown plan step %r" % op)
        # the status word: pinned host memory the device writes (an index out of range: 1)
        if self.is_cuda:
            self.status = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        else:
            self.status = torch.zeros(1, dtype=torch.int32)
        self.status_ptr = self.status.data_ptr()
        self._arena = None
        self._arena_stream = None
        self._arena_fresh = True
        self._busy = False
        self._errbuf = ctypes.create_string_buffer(_ERRBUF)
        self.calls = 0

    def __repr__(self):
        return "<ptgo CUDA graph %s on %s: %d steps>" % (self.name, self.device, len(self.steps))

    def _check_status(self, args, synced):
        s = int(self.status[0])
        if s == 0:
            return None
        self.status[0] = 0
        # the C kernels' status bits (inductor.StatusIndex 1, StatusZeroDiv 2, StatusCheck 4),
        # as the C++ runtime reads them: torch's re-run raises eager's exception when the run
        # left nothing visible (the plan's rerun_status)
        if (s & ~self.rerun_status) == 0 and synced and self.rerun is not None:
            return ("rerun",)
        where = "" if synced else (" (in this call or an earlier one: CUDA kernels run asynchronously; "
                                   "ptgo.config.cuda_sync = True raises it from the call that caused it)")
        if s & 1:
            raise IndexError("index out of range in a ptgo CUDA kernel of graph %s%s" % (self.name, where))
        if s == 2:
            raise RuntimeError("ZeroDivisionError" + where)  # torch's own exception
        raise RuntimeError("a ptgo CUDA kernel of graph %s failed with status %d" % (self.name, s))

    def _make_arena(self):
        if self.arena_bytes <= 0:
            return None, {}
        block = torch.empty(self.arena_bytes, dtype=torch.uint8, device=self.device)
        base = block.data_ptr()
        views = {}
        for i, spec in enumerate(self.bufs):
            if spec.arena >= 0:
                views[i] = (_over(block, spec, spec.arena), base + spec.arena)
        return block, views

    def __call__(self, *args):
        if len(args) + len(self.consts) != len(self.inputs):
            raise TypeError("ptgo compiled graph %s takes %d inputs, got %d" % (
                self.name, len(self.inputs) - len(self.consts), len(args)))
        if self.is_cuda:
            stream = torch.cuda.current_stream(self.device)
            stream_handle = stream.cuda_stream
        else:
            stream, stream_handle = None, 0
        self._check_status(args, False)
        shared = not self._busy and (self._arena is None or self._arena_stream == stream)
        if shared:
            if self._arena is None:
                self._arena = self._make_arena()
                self._arena_stream = stream
                self._arena_fresh = True
            arena, fresh = self._arena, self._arena_fresh
            self._busy = True
        else:
            arena, fresh = self._make_arena(), True
        try:
            with torch.no_grad():
                out = self._run(args, arena[1], fresh, stream_handle)
            if shared:
                self._arena_fresh = False
        finally:
            if shared:
                self._busy = False
        synced = not self.is_cuda
        if self.is_cuda and config.cuda_sync:
            torch.cuda.synchronize(self.device)
            synced = True
        if synced and self._check_status(args, True) is not None:
            return self.rerun(*args)
        self.calls += 1
        return out

    def _run(self, args, arena, fresh, stream_handle):
        specs = self.bufs
        n = len(specs)
        bufs = [None] * n
        start = [0] * n
        for b, t in zip(self.inputs, list(args) + self.consts):
            bufs[b] = t
            start[b] = _start(t)
        lib = _library()
        device = self.device
        for st in self.steps:
            op = st[0]
            if op == "kernel":
                _, si, ptrs, once, kname = st
                if once and not fresh:
                    continue
                vals = [start[b] for b in ptrs]
                vals.append(self.status_ptr)
                arr = (ctypes.c_uint64 * len(vals))(*vals)
                if lib.ptgo_go_cuda_launch(self.handle, si, arr, len(vals), stream_handle, self._errbuf, _ERRBUF) != 0:
                    raise RuntimeError("ptgo: CUDA kernel %s of graph %s: %s" % (
                        kname, self.name, self._errbuf.value.decode("utf-8", "replace")))
            elif op == "alloc":
                b = st[1]
                spec = specs[b]
                if spec.arena >= 0:
                    bufs[b], start[b] = arena[b]
                else:
                    if spec.offset == 0:
                        t = torch.empty_strided(spec.sizes, spec.strides, dtype=spec.dtype, device=device)
                    else:
                        t = torch.empty(spec.storage_elems, dtype=spec.dtype, device=device).as_strided(
                            spec.sizes, spec.strides, spec.offset)
                    bufs[b], start[b] = t, _start(t)
            elif op == "view":
                b = st[1]
                spec = specs[b]
                base = bufs[spec.base]
                bstart = start[spec.base]
                bufs[b] = _over(base, spec, bstart - _start(base))
                start[b] = bstart
            elif op == "free":
                bufs[st[1]] = None
            else:
                self._extern(st, bufs, start)
        result = []
        for o in self.outputs:
            if "buf" in o and o["buf"] is not None and o["buf"] >= 0:
                result.append(bufs[o["buf"]])
            else:
                result.append(o.get("value"))
        return tuple(result)

    def _extern(self, st, bufs, start):
        _, target, args, kwargs, outs, into, fn = st

        def val(a):
            if isinstance(a, dict):
                if "buf" in a:
                    return bufs[a["buf"]]
                if "list" in a:
                    return [val(x) for x in a["list"]]
                if "tuple" in a:
                    return tuple(val(x) for x in a["tuple"])
            return a

        av = [val(a) for a in args]
        if into:
            out = bufs[outs[0]]
            if target == "prims.mm":
                torch.mm(av[0], av[1], out=out)
            elif target == "prims.bmm":
                torch.bmm(av[0], av[1], out=out)
            elif target == "prims.addmm":
                torch.addmm(av[0], av[1], av[2], out=out)
            else:
                out.copy_(self._call(target, fn, av, kwargs, val))
            return
        r = self._call(target, fn, av, kwargs, val)
        if len(outs) == 1:
            self._bind(bufs, start, outs[0], r)
        else:
            for b, t in zip(outs, r):
                if b >= 0:
                    self._bind(bufs, start, b, t)

    def _call(self, target, fn, av, kwargs, val):
        if target == "prims.mm":
            return torch.mm(av[0], av[1])
        if target == "prims.bmm":
            return torch.bmm(av[0], av[1])
        if target == "prims.addmm":
            return torch.addmm(av[0], av[1], av[2])
        if target == "prims.convolution":
            return torch.convolution(*av)
        if fn is None:
            raise RuntimeError("ptgo CUDA runtime: no callable for extern %s" % target)
        return fn(*av, **{k: val(v) for k, v in kwargs})

    def _bind(self, bufs, start, b, t):
        spec = self.bufs[b]
        if (t.device != self.device or tuple(t.shape) != spec.sizes or tuple(t.stride()) != spec.strides
                or t.storage_offset() != spec.offset):
            # kernels index it with the plan's layout, on the plan's device
            dst = torch.empty(max(spec.storage_elems, 1), dtype=spec.dtype, device=self.device).as_strided(
                spec.sizes, spec.strides, spec.offset)
            dst.copy_(t)
            t = dst
        bufs[b] = t
        start[b] = _start(t)
