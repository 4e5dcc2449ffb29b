//go:build cgo

package cuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <stddef.h>

// NVRTC's entry points, declared by hand (DESIGN D4): nvrtcResult is an int, nvrtcProgram a
// pointer.
typedef int (*nvrtcVersion_t)(int *, int *);
typedef int (*nvrtcCreateProgram_t)(void **, const char *, const char *, int, const char *const *, const char *const *);
typedef int (*nvrtcCompileProgram_t)(void *, int, const char *const *);
typedef int (*nvrtcGetSize_t)(void *, size_t *);
typedef int (*nvrtcGetData_t)(void *, char *);
typedef int (*nvrtcDestroyProgram_t)(void **);
typedef const char *(*nvrtcGetErrorString_t)(int);

static void *ptgo_nvrtc_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }
static const char *ptgo_nvrtc_dlerror(void) { const char *e = dlerror(); return e ? e : "unknown error"; }
static void *ptgo_nvrtc_sym(void *h, const char *name) { return dlsym(h, name); }

static int ptgo_nvrtc_version(void *f, int *maj, int *min) { return ((nvrtcVersion_t)f)(maj, min); }
static int ptgo_nvrtc_create(void *f, void **prog, const char *src, const char *name) {
	return ((nvrtcCreateProgram_t)f)(prog, src, name, 0, NULL, NULL);
}
static int ptgo_nvrtc_compile(void *f, void *prog, int n, const char *const *opts) {
	return ((nvrtcCompileProgram_t)f)(prog, n, opts);
}
static int ptgo_nvrtc_size(void *f, void *prog, size_t *n) { return ((nvrtcGetSize_t)f)(prog, n); }
static int ptgo_nvrtc_data(void *f, void *prog, char *buf) { return ((nvrtcGetData_t)f)(prog, buf); }
static int ptgo_nvrtc_destroy(void *f, void **prog) { return ((nvrtcDestroyProgram_t)f)(prog); }
static const char *ptgo_nvrtc_errstr(void *f, int rc) { return f ? ((nvrtcGetErrorString_t)f)(rc) : ""; }
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// NVRTC is a loaded libnvrtc.
type NVRTC struct {
	Path         string
	Major, Minor int

	create, compile, logSize, log, ptxSize, ptx, cubinSize, cubin, destroy, errstr unsafe.Pointer
}

var (
	nvrtcOnce sync.Map // search key -> *nvrtcLoad
)

type nvrtcLoad struct {
	once sync.Once
	n    *NVRTC
	err  error
}

// LoadNVRTC loads the first NVRTC of FindNVRTC($PTGO_NVRTC, dirs) that opens and has every entry
// point; the result is cached per search list. The error matches ErrNoNVRTC and lists what was
// tried.
func LoadNVRTC(dirs []string) (*NVRTC, error) {
	env := getenvNVRTC()
	key := env + "\x00" + strings.Join(dirs, "\x00")
	v, _ := nvrtcOnce.LoadOrStore(key, &nvrtcLoad{})
	l := v.(*nvrtcLoad)
	l.once.Do(func() { l.n, l.err = loadNVRTC(FindNVRTC(env, dirs)) })
	return l.n, l.err
}

func loadNVRTC(cands []string) (*NVRTC, error) {
	var tried []string
	for _, p := range cands {
		// NVRTC dlopens its builtins library by soname when it compiles; beside a libnvrtc found
		// by path (a pip wheel's lib directory is on no loader path), load it first so that the
		// soname is already resolved.
		if filepath.IsAbs(p) {
			bs, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "libnvrtc-builtins.so*"))
			for _, b := range bs {
				if !strings.Contains(filepath.Base(b), "alt") {
					cb := C.CString(b)
					C.ptgo_nvrtc_open(cb)
					C.free(unsafe.Pointer(cb))
				}
			}
		}
		cp := C.CString(p)
		h := C.ptgo_nvrtc_open(cp)
		C.free(unsafe.Pointer(cp))
		if h == nil {
			tried = append(tried, p+": "+C.GoString(C.ptgo_nvrtc_dlerror()))
			continue
		}
		n := &NVRTC{Path: p}
		sym := func(name string) unsafe.Pointer {
			cn := C.CString(name)
			defer C.free(unsafe.Pointer(cn))
			return C.ptgo_nvrtc_sym(h, cn)
		}
		ver := sym("nvrtcVersion")
		n.create, n.compile = sym("nvrtcCreateProgram"), sym("nvrtcCompileProgram")
		n.logSize, n.log = sym("nvrtcGetProgramLogSize"), sym("nvrtcGetProgramLog")
		n.ptxSize, n.ptx = sym("nvrtcGetPTXSize"), sym("nvrtcGetPTX")
		n.cubinSize, n.cubin = sym("nvrtcGetCUBINSize"), sym("nvrtcGetCUBIN")
		n.destroy, n.errstr = sym("nvrtcDestroyProgram"), sym("nvrtcGetErrorString")
		if ver == nil || n.create == nil || n.compile == nil || n.logSize == nil || n.log == nil || n.ptxSize == nil || n.ptx == nil || n.destroy == nil {
			tried = append(tried, p+": missing NVRTC entry points")
			continue
		}
		var maj, min C.int
		if rc := C.ptgo_nvrtc_version(ver, &maj, &min); rc != 0 {
			tried = append(tried, fmt.Sprintf("%s: nvrtcVersion failed (%d)", p, int(rc)))
			continue
		}
		n.Major, n.Minor = int(maj), int(min)
		return n, nil
	}
	return nil, fmt.Errorf("%w; tried %s; install nvidia-cuda-nvrtc (pip) or set %s to libnvrtc.so", ErrNoNVRTC, strings.Join(tried, "; "), EnvNVRTC)
}

// Version is "major.minor".
func (n *NVRTC) Version() string { return fmt.Sprintf("%d.%d", n.Major, n.Minor) }

func (n *NVRTC) fail(call string, rc C.int) error {
	return &Error{Call: call, Code: Result(rc), Name: C.GoString(C.ptgo_nvrtc_errstr(n.errstr, rc))}
}

// Compile compiles one translation unit to a cubin (-arch=sm_XY) or PTX (-arch=compute_XY).
func (n *NVRTC) Compile(name, src string, kind Kind, arch Arch, opts []string) (*Binary, error) {
	if kind == Cubin && (n.cubinSize == nil || n.cubin == nil) {
		return nil, fmt.Errorf("cuda: NVRTC %s (%s) cannot write cubins; use PTX", n.Version(), n.Path)
	}
	csrc, cname := C.CString(src), C.CString(name+".cu")
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog unsafe.Pointer
	if rc := C.ptgo_nvrtc_create(n.create, &prog, csrc, cname); rc != 0 {
		return nil, n.fail("nvrtcCreateProgram", rc)
	}
	defer C.ptgo_nvrtc_destroy(n.destroy, &prog)
	target := "-arch=sm_"
	if kind == PTX {
		target = "-arch=compute_"
	}
	all := append([]string{target + fmt.Sprint(int(arch))}, opts...)
	copts := make([]*C.char, len(all))
	for i, o := range all {
		copts[i] = C.CString(o)
	}
	defer func() {
		for _, p := range copts {
			C.free(unsafe.Pointer(p))
		}
	}()
	rc := C.ptgo_nvrtc_compile(n.compile, prog, C.int(len(copts)), (**C.char)(unsafe.Pointer(&copts[0])))
	log := n.read(prog, n.logSize, n.log)
	log = strings.TrimRight(strings.TrimSpace(strings.TrimRight(log, "\x00")), "\x00")
	if rc != 0 {
		return nil, &CompileError{Name: name, Log: log, Opts: all, Err: n.fail("nvrtcCompileProgram", rc)}
	}
	var data string
	if kind == PTX {
		data = strings.TrimRight(n.read(prog, n.ptxSize, n.ptx), "\x00")
	} else {
		data = n.read(prog, n.cubinSize, n.cubin)
	}
	if data == "" {
		return nil, errors.New("cuda: NVRTC produced no " + kind.String() + " for " + name)
	}
	return &Binary{Kind: kind, Arch: arch, Data: []byte(data), Log: log}, nil
}

func (n *NVRTC) read(prog unsafe.Pointer, sizeFn, dataFn unsafe.Pointer) string {
	var size C.size_t
	if C.ptgo_nvrtc_size(sizeFn, prog, &size) != 0 || size == 0 {
		return ""
	}
	buf := C.malloc(size)
	defer C.free(buf)
	if C.ptgo_nvrtc_data(dataFn, prog, (*C.char)(buf)) != 0 {
		return ""
	}
	return C.GoStringN((*C.char)(buf), C.int(size))
}
