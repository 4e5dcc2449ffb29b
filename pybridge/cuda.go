package main

/*
#include <stdint.h>
#include <string.h>
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"ptgo/bytecode/py"
	"ptgo/inductor"
	"ptgo/kernels/cuda"
)

// CUDA graphs' kernels, by the handle their Python runner (ptgo._cuda.CUDAGraph) holds. The
// runner launches through ptgo_go_cuda_launch (ctypes, no Python objects cross) and releases
// the handle when it is collected.
var cudaGraphs struct {
	sync.Mutex
	next int64
	byID map[int64]*inductor.CUDAKernels
}

func registerCUDA(ks *inductor.CUDAKernels) int64 {
	cudaGraphs.Lock()
	defer cudaGraphs.Unlock()
	if cudaGraphs.byID == nil {
		cudaGraphs.byID = map[int64]*inductor.CUDAKernels{}
	}
	cudaGraphs.next++
	cudaGraphs.byID[cudaGraphs.next] = ks
	return cudaGraphs.next
}

func lookupCUDA(h int64) *inductor.CUDAKernels {
	cudaGraphs.Lock()
	defer cudaGraphs.Unlock()
	return cudaGraphs.byID[h]
}

func (h *pyHost) CUDAGraph(plan []byte, ks *inductor.CUDAKernels, consts []py.Obj, rerun py.Obj) (py.Obj, error) {
	api := h.api
	id := registerCUDA(ks)
	obj, err := runtimeCall(api, "make_cuda_graph", api.NewStr(string(plan)), api.NewInt(id), api.NewList(consts), h.orNone(rerun))
	if err != nil {
		releaseCUDA(id)
	}
	return obj, err
}

func (h *pyHost) SearchPath() []string {
	res, err := runtimeCall(h.api, "search_path")
	if err != nil {
		return nil
	}
	n, err := h.api.Len(res)
	if err != nil {
		return nil
	}
	var out []string
	for i := range n {
		it, err := h.api.Index(res, i)
		if err != nil {
			continue
		}
		if s, err := h.api.Str(it); err == nil {
			out = append(out, s)
		}
	}
	return out
}

func releaseCUDA(id int64) {
	cudaGraphs.Lock()
	ks := cudaGraphs.byID[id]
	delete(cudaGraphs.byID, id)
	cudaGraphs.Unlock()
	if ks != nil {
		_ = ks.Unload()
	}
}

func cudaError(buf *C.char, n C.int32_t, msg string) C.int32_t {
	if buf != nil && n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		k := copy(b[:n-1], msg)
		b[k] = 0
	}
	return 1
}

// ptgo_go_cuda_launch launches kernel step `step` of CUDA graph `handle` on `stream` (a
// CUstream; 0 is the legacy default stream) with nargs 8-byte parameters (the buffers' storage
// starts, then the status word). 0 on success; else 1 with the reason in errbuf.
//
//export ptgo_go_cuda_launch
func ptgo_go_cuda_launch(handle C.int64_t, step C.int32_t, args *C.uint64_t, nargs C.int32_t, stream C.uint64_t, errbuf *C.char, errlen C.int32_t) (rc C.int32_t) {
	defer func() {
		if r := recover(); r != nil {
			rc = cudaError(errbuf, errlen, fmt.Sprintf("ptgo BUG: a CUDA launch panicked: %v", r))
		}
	}()
	ks := lookupCUDA(int64(handle))
	if ks == nil {
		return cudaError(errbuf, errlen, fmt.Sprintf("ptgo: CUDA graph %d was released", int64(handle)))
	}
	var a []uint64
	if nargs > 0 {
		a = append(a, unsafe.Slice((*uint64)(unsafe.Pointer(args)), int(nargs))...)
	}
	err := ks.Bound(func() error { return ks.Launch(int(step), a, cuda.Stream(uintptr(stream))) })
	if err != nil {
		return cudaError(errbuf, errlen, err.Error())
	}
	return 0
}

// ptgo_go_cuda_release unloads CUDA graph `handle`'s module (its runner was collected).
//
//export ptgo_go_cuda_release
func ptgo_go_cuda_release(handle C.int64_t) {
	releaseCUDA(int64(handle))
}
