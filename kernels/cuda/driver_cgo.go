//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>

// The CUDA driver API entry points ptgo calls, declared by hand (DESIGN D4). CUresult is an
// int, CUdevice an int, handles are pointers, CUdeviceptr is 64 bits. The _v2 names are the
// ones cuda.h maps the plain names to.
typedef int (*fn_u)(unsigned);
typedef int (*fn_pi)(int *);
typedef int (*fn_pi_i)(int *, int);
typedef int (*fn_attr)(int *, int, int);
typedef int (*fn_pp_i)(void **, int);
typedef int (*fn_p)(void *);
typedef int (*fn_pp)(void **);
typedef int (*fn_load)(void **, const void *);
typedef int (*fn_getfn)(void **, void *, const char *);
typedef int (*fn_setattr)(void *, int, int);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
typedef int (*fn_alloc)(unsigned long long *, size_t);
typedef int (*fn_free)(unsigned long long);
typedef int (*fn_htod)(unsigned long long, const void *, size_t);
typedef int (*fn_dtoh)(void *, unsigned long long, size_t);
typedef int (*fn_memset)(unsigned long long, unsigned char, size_t);
typedef int (*fn_sync)(void);
typedef int (*fn_errname)(int, const char **);

static void *ptgo_cu_open(void) {
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	return h;
}
static const char *ptgo_cu_dlerror(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
static void *ptgo_cu_sym(void *h, const char *n) { return dlsym(h, n); }

static int cu_u(void *f, unsigned a) { return ((fn_u)f)(a); }
static int cu_pi(void *f, int *a) { return ((fn_pi)f)(a); }
static int cu_pi_i(void *f, int *a, int b) { return ((fn_pi_i)f)(a, b); }
static int cu_attr(void *f, int *v, int attr, int dev) { return ((fn_attr)f)(v, attr, dev); }
static int cu_pp_i(void *f, void **a, int b) { return ((fn_pp_i)f)(a, b); }
static int cu_p(void *f, void *a) { return ((fn_p)f)(a); }
static int cu_pp(void *f, void **a) { return ((fn_pp)f)(a); }
static int cu_load(void *f, void **m, const void *img) { return ((fn_load)f)(m, img); }
static int cu_getfn(void *f, void **fn, uintptr_t m, const char *n) { return ((fn_getfn)f)(fn, (void *)m, n); }
static int cu_unload(void *f, uintptr_t m) { return ((fn_p)f)((void *)m); }
static int cu_setattr(void *f, uintptr_t fn, int a, int v) { return ((fn_setattr)f)((void *)fn, a, v); }
static int cu_launch(void *f, uintptr_t fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                     unsigned smem, uintptr_t stream, void **params) {
	return ((fn_launch)f)((void *)fn, gx, gy, gz, bx, by, bz, smem, (void *)stream, params, NULL);
}
static int cu_alloc(void *f, unsigned long long *p, size_t n) { return ((fn_alloc)f)(p, n); }
static int cu_free(void *f, unsigned long long p) { return ((fn_free)f)(p); }
static int cu_htod(void *f, unsigned long long d, const void *s, size_t n) { return ((fn_htod)f)(d, s, n); }
static int cu_dtoh(void *f, void *d, unsigned long long s, size_t n) { return ((fn_dtoh)f)(d, s, n); }
static int cu_memset(void *f, unsigned long long d, unsigned char v, size_t n) { return ((fn_memset)f)(d, v, n); }
static int cu_sync(void *f) { return ((fn_sync)f)(); }
static const char *cu_errname(void *f, int rc) {
	const char *s = NULL;
	if (f == NULL || ((fn_errname)f)(rc, &s) != 0 || s == NULL) return "";
	return s;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// driver is the CUDA driver over a dlopen'ed libcuda.so.1.
type driver struct {
	version int
	f       map[string]unsafe.Pointer
	ctxs    map[int]unsafe.Pointer
	mu      sync.Mutex
}

var (
	driverOnce sync.Once
	theDriver  *driver
	driverErr  error
)

// driverSyms are the entry points LoadDriver needs.
var driverSyms = []string{"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute",
	"cuDevicePrimaryCtxRetain", "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxSynchronize",
	"cuModuleLoadData", "cuModuleGetFunction", "cuModuleUnload", "cuFuncSetAttribute", "cuLaunchKernel",
	"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemsetD8_v2", "cuGetErrorName"}

// LoadDriver opens libcuda.so.1 and initialises it, once per process. Without a driver or a
// device the error matches ErrNoDevice (cuInit's 100 on a machine without a GPU: the process
// goes on).
func LoadDriver() (Driver, error) {
	driverOnce.Do(func() { theDriver, driverErr = loadDriver() })
	if driverErr != nil {
		return nil, driverErr
	}
	return theDriver, nil
}

func loadDriver() (*driver, error) {
	h := C.ptgo_cu_open()
	if h == nil {
		return nil, fmt.Errorf("%w: cannot load libcuda.so.1 (%s): no NVIDIA driver on this machine", ErrNoDevice, C.GoString(C.ptgo_cu_dlerror()))
	}
	d := &driver{f: map[string]unsafe.Pointer{}, ctxs: map[int]unsafe.Pointer{}}
	for _, s := range driverSyms {
		cs := C.CString(s)
		p := C.ptgo_cu_sym(h, cs)
		C.free(unsafe.Pointer(cs))
		if p == nil && s != "cuGetErrorName" {
			return nil, fmt.Errorf("%w: libcuda.so.1 has no %s (driver too old)", ErrNoDevice, s)
		}
		d.f[s] = p
	}
	if err := d.check("cuInit", C.cu_u(d.f["cuInit"], 0)); err != nil {
		return nil, err
	}
	var v C.int
	if err := d.check("cuDriverGetVersion", C.cu_pi(d.f["cuDriverGetVersion"], &v)); err != nil {
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

func (d *driver) check(call string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return &Error{Call: call, Code: Result(rc), Name: C.GoString(C.cu_errname(d.f["cuGetErrorName"], rc))}
}

func (d *driver) Version() int { return d.version }

func (d *driver) DeviceCount() (int, error) {
	var n C.int
	err := d.check("cuDeviceGetCount", C.cu_pi(d.f["cuDeviceGetCount"], &n))
	return int(n), err
}

func (d *driver) Attribute(dev int, attr DeviceAttr) (int, error) {
	var cd, v C.int
	if err := d.check("cuDeviceGet", C.cu_pi_i(d.f["cuDeviceGet"], &cd, C.int(dev))); err != nil {
		return 0, err
	}
	err := d.check("cuDeviceGetAttribute", C.cu_attr(d.f["cuDeviceGetAttribute"], &v, C.int(attr), cd))
	return int(v), err
}

// Bind pushes device dev's primary context (retained once per process, as torch's runtime
// uses it) on the calling thread; the returned function pops it. The caller holds the OS thread
// (runtime.LockOSThread) in between.
func (d *driver) Bind(dev int) (func(), error) {
	d.mu.Lock()
	ctx, ok := d.ctxs[dev]
	if !ok {
		var cd C.int
		if err := d.check("cuDeviceGet", C.cu_pi_i(d.f["cuDeviceGet"], &cd, C.int(dev))); err != nil {
			d.mu.Unlock()
			return nil, err
		}
		if err := d.check("cuDevicePrimaryCtxRetain", C.cu_pp_i(d.f["cuDevicePrimaryCtxRetain"], &ctx, cd)); err != nil {
			d.mu.Unlock()
			return nil, err
		}
		d.ctxs[dev] = ctx
	}
	d.mu.Unlock()
	runtime.LockOSThread()
	if err := d.check("cuCtxPushCurrent", C.cu_p(d.f["cuCtxPushCurrent_v2"], ctx)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		var old unsafe.Pointer
		C.cu_pp(d.f["cuCtxPopCurrent_v2"], &old)
		runtime.UnlockOSThread()
	}, nil
}

func (d *driver) LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("cuda: empty module image")
	}
	// PTX must be NUL-terminated; a copy in C memory also keeps Go memory out of the driver.
	buf := C.malloc(C.size_t(len(image) + 1))
	defer C.free(buf)
	copy(unsafe.Slice((*byte)(buf), len(image)+1), append(image, 0))
	var m unsafe.Pointer
	err := d.check("cuModuleLoadData", C.cu_load(d.f["cuModuleLoadData"], &m, buf))
	return Module(uintptr(m)), err
}

func (d *driver) Function(m Module, name string) (Function, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var f unsafe.Pointer
	if err := d.check("cuModuleGetFunction", C.cu_getfn(d.f["cuModuleGetFunction"], &f, C.uintptr_t(m), cn)); err != nil {
		err.(*Error).Detail = name
		return 0, err
	}
	return Function(uintptr(f)), nil
}

func (d *driver) UnloadModule(m Module) error {
	return d.check("cuModuleUnload", C.cu_unload(d.f["cuModuleUnload"], C.uintptr_t(m)))
}

// cuFuncAttributeMaxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
const cuFuncAttributeMaxDynamicShared = 8

func (d *driver) SetMaxDynamicShared(f Function, bytes int) error {
	return d.check("cuFuncSetAttribute", C.cu_setattr(d.f["cuFuncSetAttribute"], C.uintptr_t(f), cuFuncAttributeMaxDynamicShared, C.int(bytes)))
}

func (d *driver) Launch(f Function, grid, block Dim3, shared uint32, stream Stream, args []uint64) error {
	// cuLaunchKernel takes an array of pointers to the parameters' values; both live in C memory
	// (cgo forbids Go pointers stored in C memory).
	n := max(len(args), 1)
	vals := (*C.ulonglong)(C.malloc(C.size_t(n) * 8))
	ptrs := (*unsafe.Pointer)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(vals))
	defer C.free(unsafe.Pointer(ptrs))
	vs, ps := unsafe.Slice(vals, n), unsafe.Slice(ptrs, n)
	for i, a := range args {
		vs[i] = C.ulonglong(a)
		ps[i] = unsafe.Pointer(&vs[i])
	}
	return d.check("cuLaunchKernel", C.cu_launch(d.f["cuLaunchKernel"], C.uintptr_t(f), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), C.uint(shared), C.uintptr_t(stream), ptrs))
}

func (d *driver) Alloc(bytes int64) (DevicePtr, error) {
	var p C.ulonglong
	err := d.check("cuMemAlloc", C.cu_alloc(d.f["cuMemAlloc_v2"], &p, C.size_t(max(bytes, 1))))
	return DevicePtr(p), err
}

func (d *driver) Free(p DevicePtr) error {
	return d.check("cuMemFree", C.cu_free(d.f["cuMemFree_v2"], C.ulonglong(p)))
}

func (d *driver) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	buf := C.CBytes(src)
	defer C.free(buf)
	return d.check("cuMemcpyHtoD", C.cu_htod(d.f["cuMemcpyHtoD_v2"], C.ulonglong(dst), buf, C.size_t(len(src))))
}

func (d *driver) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	buf := C.malloc(C.size_t(len(dst)))
	defer C.free(buf)
	if err := d.check("cuMemcpyDtoH", C.cu_dtoh(d.f["cuMemcpyDtoH_v2"], buf, C.ulonglong(src), C.size_t(len(dst)))); err != nil {
		return err
	}
	copy(dst, unsafe.Slice((*byte)(buf), len(dst)))
	return nil
}

func (d *driver) Memset(dst DevicePtr, v byte, bytes int64) error {
	return d.check("cuMemsetD8", C.cu_memset(d.f["cuMemsetD8_v2"], C.ulonglong(dst), C.uchar(v), C.size_t(bytes)))
}

func (d *driver) Synchronize() error {
	return d.check("cuCtxSynchronize", C.cu_sync(d.f["cuCtxSynchronize"]))
}
