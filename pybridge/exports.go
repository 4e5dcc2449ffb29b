// Command pybridge is libptgo.so: the Go side of ptgo, built with -buildmode=c-shared and
// loaded by the CPython shim ptgo._C with dlopen (DESIGN D1). It exports a plain C ABI
// (pybridge/include/ptgo_abi.h), drives a captured frame through capture (bytecode), the
// compile pipeline (package pipeline) and transformed code, and implements the pipeline's Host
// over ptgo._runtime.
package main

/*
#include <stdlib.h>
#include <string.h>
#include "ptgo_abi.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"unsafe"

	"ptgo/bytecode/py"
	"ptgo/inductor"
	"ptgo/logs"
	"ptgo/primtorch"
	"ptgo/pybridge/capi"
)

func main() {}

// state is the process-wide state of the library. Calls into Go hold the GIL, so at most one
// runs at a time except for requests made while a compile releases the GIL in Python code; the
// shim refuses to start a second compile meanwhile.
var state struct {
	api    *capi.API
	config initConfig
}

type initConfig struct {
	Logs       map[string]string `json:"logs"`
	DebugDir   string            `json:"debug_dir"`
	CheckIR    bool              `json:"check_ir"`
	Python     string            `json:"python"`
	Torch      string            `json:"torch"`
	NumThreads int               `json:"num_threads"`
	// BLASOnOpenMP: torch's matrix products run on its OpenMP team (ptgo._compat.blas_on_openmp).
	BLASOnOpenMP bool `json:"blas_on_openmp"`
	// KernelsFMA: torch's CPU kernels fuse multiply-adds (ptgo._compat.kernels_fuse_multiply_add;
	// absent: yes).
	KernelsFMA *bool `json:"kernels_fma"`
	// DropoutMT19937: ptgo's bernoulli_mask draws eager's dropout noise
	// (ptgo._compat.dropout_draws_mt19937; absent: no).
	DropoutMT19937 bool `json:"dropout_mt19937"`
	// SqrtInexact: the dtypes whose eager CPU sqrt is not correctly rounded
	// (ptgo._compat.sqrt_inexact_dtypes; absent: none).
	SqrtInexact []string `json:"sqrt_inexact"`
	// Behavior: torchBehavior values probed in this process (ptgo._compat.probe_behavior;
	// absent: the version's row).
	Behavior *primtorch.ProbedBehavior `json:"behavior"`
}

//export ptgo_go_init
func ptgo_go_init(api *C.ptgo_api, cfg *C.char, errOut **C.char) (rc C.int32_t) {
	defer func() {
		if r := recover(); r != nil {
			*errOut = C.CString(fmt.Sprintf("ptgo BUG: init panicked: %v", r))
			rc = 1
		}
	}()
	if api.abi_version != C.PTGO_ABI_VERSION {
		*errOut = C.CString(fmt.Sprintf("the shim speaks ABI %d, libptgo.so speaks %d; rebuild ptgo (make setup)", api.abi_version, C.PTGO_ABI_VERSION))
		return 1
	}
	state.api = capi.New(unsafe.Pointer(api))
	if err := json.Unmarshal([]byte(C.GoString(cfg)), &state.config); err != nil {
		*errOut = C.CString("bad init config: " + err.Error())
		return 1
	}
	if err := logs.Configure(state.config.Logs); err != nil {
		*errOut = C.CString(err.Error())
		return 1
	}
	// Where torch versions differ, tables keyed by version pick the running torch's row.
	v, err := primtorch.ParseTorchVersion(state.config.Torch)
	if err != nil {
		*errOut = C.CString(err.Error())
		return 1
	}
	primtorch.SetTorch(v)
	if state.config.KernelsFMA != nil {
		primtorch.SetKernelsFuseMultiplyAdd(*state.config.KernelsFMA)
	}
	primtorch.SetDropoutDrawsMT19937(state.config.DropoutMT19937)
	var inexact []primtorch.DType
	for _, name := range state.config.SqrtInexact {
		if dt, ok := primtorch.ParseDType(name); ok {
			inexact = append(inexact, dt)
		}
	}
	primtorch.SetSqrtInexact(inexact)
	primtorch.SetProbedBehavior(state.config.Behavior)
	inductor.SetBLASOnOpenMP(state.config.BLASOnOpenMP)
	return 0
}

//export ptgo_go_compile
func ptgo_go_compile(ctx, fn, code C.ptgo_obj, args *C.ptgo_obj, nargs C.int32_t, failed *C.char, out *C.ptgo_result) (rc C.int32_t) {
	api := state.api
	defer flushLogs(api)
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("ptgo BUG: the compiler panicked: %v\n%s\nPlease report it with the code that triggered it.", r, debug.Stack())
			fillError(out, C.PTGO_ERROR, msg)
			rc = C.PTGO_ERROR
		}
	}()
	argv := make([]py.Obj, int(nargs))
	if nargs > 0 {
		for i, a := range unsafe.Slice(args, int(nargs)) {
			argv[i] = capi.Obj(unsafe.Pointer(a))
		}
	}
	failedGuard := ""
	if failed != nil {
		failedGuard = C.GoString(failed)
	}
	res := compileFrame(api, capi.Obj(unsafe.Pointer(ctx)), capi.Obj(unsafe.Pointer(fn)), capi.Obj(unsafe.Pointer(code)), argv, failedGuard)
	fillResult(out, res)
	return out.status
}

func fillError(out *C.ptgo_result, status C.int32_t, msg string) {
	out.status = status
	out.message = C.CString(msg)
}

// fillResult converts a compile result into the C struct the shim reads (C memory, freed by
// ptgo_go_free_result).
func fillResult(out *C.ptgo_result, r *frameResult) {
	out.status = C.int32_t(r.status)
	if r.message != "" {
		out.message = C.CString(r.message)
	}
	if r.code != 0 {
		out.code = C.ptgo_obj(capi.Ptr(r.code))
	}
	n := len(r.guards)
	out.nguards = C.int32_t(n)
	out.nregs = C.int32_t(r.nregs)
	if n == 0 {
		return
	}
	size := C.size_t(unsafe.Sizeof(C.ptgo_guard{}))
	gs := (*C.ptgo_guard)(C.calloc(C.size_t(n), size))
	out.guards = gs
	cgs := unsafe.Slice(gs, n)
	for i, src := range r.guards {
		cg := &cgs[i]
		cg.op = C.int32_t(src.Op)
		cg.dst = C.int32_t(src.Dst)
		cg.src = C.int32_t(src.Src)
		cg.i = C.int64_t(src.I)
		cg.obj = C.ptgo_obj(capi.Ptr(src.Obj))
		if src.Name != "" {
			cg.name = C.CString(src.Name)
		}
		if len(src.Vec) > 0 {
			v := (*C.int64_t)(C.malloc(C.size_t(len(src.Vec)) * 8))
			for j, x := range src.Vec {
				unsafe.Slice(v, len(src.Vec))[j] = C.int64_t(x)
			}
			cg.vec = v
			cg.nvec = C.int32_t(len(src.Vec))
		}
		cg.desc = C.CString(src.Desc)
	}
}

//export ptgo_go_free_result
func ptgo_go_free_result(r *C.ptgo_result) {
	if r.guards != nil {
		for _, g := range unsafe.Slice(r.guards, int(r.nguards)) {
			C.free(unsafe.Pointer(g.name))
			C.free(unsafe.Pointer(g.vec))
			C.free(unsafe.Pointer(g.desc))
		}
		C.free(unsafe.Pointer(r.guards))
		r.guards = nil
	}
	C.free(unsafe.Pointer(r.message))
	r.message = nil
}

//export ptgo_go_request
func ptgo_go_request(method, in *C.char) (res *C.char) {
	api := state.api
	defer flushLogs(api)
	defer func() {
		if r := recover(); r != nil {
			b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("ptgo BUG: %v", r)})
			res = C.CString(string(b))
		}
	}()
	out, err := handleRequest(C.GoString(method), []byte(C.GoString(in)))
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		return C.CString(string(b))
	}
	return C.CString(string(out))
}

//export ptgo_go_free
func ptgo_go_free(p unsafe.Pointer) { C.free(p) }

//export ptgo_go_compile_fx
func ptgo_go_compile_fx(graphJSON *C.char, attrs C.ptgo_obj, optsJSON *C.char, rerun C.ptgo_obj, out *C.ptgo_obj, msg **C.char) (rc C.int32_t) {
	api := state.api
	defer flushLogs(api)
	defer func() {
		if r := recover(); r != nil {
			*msg = C.CString(fmt.Sprintf("ptgo BUG: the compiler panicked on a torch.fx graph: %v\n%s\nPlease report it with the graph (PTGO_LOGS=graph_code).", r, debug.Stack()))
			rc = C.PTGO_ERROR
		}
	}()
	obj, reason, err := compileFX(api, []byte(C.GoString(graphJSON)), capi.Obj(unsafe.Pointer(attrs)),
		[]byte(C.GoString(optsJSON)), capi.Obj(unsafe.Pointer(rerun)))
	switch {
	case err != nil:
		*msg = C.CString(err.Error())
		return C.PTGO_ERROR
	case obj == 0:
		*msg = C.CString(reason)
		return C.PTGO_EAGER
	}
	*out = C.ptgo_obj(capi.Ptr(obj))
	return C.PTGO_OK
}

// flushLogs hands buffered log records to Python's logging (on the GIL-holding thread).
func flushLogs(api *capi.API) {
	recs := logs.Drain()
	if len(recs) == 0 || api == nil {
		return
	}
	logFn, err := api.GetAttr(api.Runtime(), "log")
	if err != nil {
		return
	}
	for _, r := range recs {
		_, _ = api.Call(logFn, []py.Obj{api.NewStr(r.Channel.String()), api.NewStr(r.Msg), api.NewBool(r.Debug)}, nil)
	}
}
