//go:build cgo

package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

// ptgo_dl_copy_error copies the current dlerror() text into buf; it runs in
// the same C call as the failing dl* function so the per-thread state is ours.
static void ptgo_dl_copy_error(char *buf, size_t n) {
	const char *e = dlerror();
	if (e == NULL) e = "unknown dynamic loader error";
	strncpy(buf, e, n - 1);
	buf[n - 1] = 0;
}

static void *ptgo_dl_open(const char *path, char *err, size_t n) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		ptgo_dl_copy_error(err, n);
		return NULL;
	}
	// A library built with kernels.PoolRuntime runs its parallel regions on ptgo's
	// pool (pool.c); one without the entry uses whatever it was linked with.
	void (*set_parallel)(ptgo_pool_run_fn *) = (void (*)(ptgo_pool_run_fn *))dlsym(h, "ptgo_set_parallel");
	if (set_parallel != NULL) set_parallel(ptgo_pool_run);
	dlerror();
	return h;
}

static void *ptgo_dl_sym(void *h, const char *name, char *err, size_t n) {
	dlerror();
	void *p = dlsym(h, name);
	if (p == NULL) ptgo_dl_copy_error(err, n);
	return p;
}

static int ptgo_dl_close(void *h, char *err, size_t n) {
	dlerror();
	int rc = dlclose(h);
	if (rc != 0) ptgo_dl_copy_error(err, n);
	return rc;
}

typedef int ptgo_kernel_fn(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads);

static int ptgo_dl_call(uintptr_t fn, void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	return ((ptgo_kernel_fn *)fn)(ptrs, ints, floats, nthreads);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Available reports whether this build can load shared libraries (cgo on).
const Available = true

const errBufSize = 1024

// Handle is an open shared library. The zero Handle is not open.
type Handle struct {
	p unsafe.Pointer
}

// Open loads the shared library at path with RTLD_NOW|RTLD_LOCAL: every
// undefined symbol is resolved now, so a missing dependency fails here rather
// than at the first call, and the library's symbols stay out of the global
// namespace. A library that exports ptgo_set_parallel (every one built with
// kernels.PoolRuntime) is handed ptgo's thread pool for its parallel regions.
func Open(path string) (Handle, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [errBufSize]C.char
	h := C.ptgo_dl_open(cpath, &buf[0], errBufSize)
	if h == nil {
		return Handle{}, fmt.Errorf("kernels/dl: dlopen failed (%s): %s; delete the file so it is rebuilt, or report a ptgo bug with it", path, C.GoString(&buf[0]))
	}
	return Handle{p: h}, nil
}

// Sym returns the address of the symbol name in the library.
func (h Handle) Sym(name string) (uintptr, error) {
	if h.p == nil {
		return 0, errors.New("kernels/dl: dlsym on a library that is not open; call Open first")
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [errBufSize]C.char
	p := C.ptgo_dl_sym(h.p, cname, &buf[0], errBufSize)
	if p == nil {
		return 0, fmt.Errorf("kernels/dl: symbol %q not found: %s; check the kernel name and that it is exported with PTGO_KERNEL", name, C.GoString(&buf[0]))
	}
	return uintptr(p), nil
}

// Close drops this reference to the library (dlclose). Symbols obtained from it
// must not be used afterwards.
func (h Handle) Close() error {
	if h.p == nil {
		return nil
	}
	var buf [errBufSize]C.char
	if C.ptgo_dl_close(h.p, &buf[0], errBufSize) != 0 {
		return fmt.Errorf("kernels/dl: dlclose failed: %s", C.GoString(&buf[0]))
	}
	return nil
}

// Call invokes the kernel at address fn through the uniform kernel ABI and
// returns its status (0 is success). ptrs may hold Go pointers: they are pinned
// for the duration of the call, as the cgo rules require for Go pointers stored
// in memory passed to C. Empty slices are passed as NULL.
func Call(fn uintptr, ptrs []unsafe.Pointer, ints []int64, floats []float64, nthreads int) int32 {
	if fn == 0 {
		panic("kernels/dl: Call with a nil kernel address")
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	var pp *unsafe.Pointer
	if len(ptrs) > 0 {
		for _, p := range ptrs {
			if p != nil {
				pin.Pin(p)
			}
		}
		pp = &ptrs[0]
	}
	var ip *C.int64_t
	if len(ints) > 0 {
		ip = (*C.int64_t)(unsafe.Pointer(&ints[0]))
	}
	var fp *C.double
	if len(floats) > 0 {
		fp = (*C.double)(unsafe.Pointer(&floats[0]))
	}
	return int32(C.ptgo_dl_call(C.uintptr_t(fn), pp, ip, fp, C.int(nthreads)))
}

// Check returns nil: this build can load libraries.
func Check() error { return nil }
