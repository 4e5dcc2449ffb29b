//go:build cgo

// Package embed runs an embedded CPython interpreter (the Debian python3.11 with torch) inside
// a Go test binary, with ptgo's shim compiled in, so Go tests can capture real Python functions
// with bytecode.CaptureFrame and check graphs and guards without going through the frame hook.
//
// All Python work happens on one OS thread that holds the GIL for the life of the process;
// Do runs a closure there.
package embed

/*
#cgo pkg-config: python-3.11-embed
#cgo CFLAGS: -I${SRCDIR}/../include
#include <Python.h>
#include <stdlib.h>
#include "ptgo_abi.h"

// From ptgo_C.c, compiled by package ptgo/pybridge/shim.
extern PyObject *PyInit__C(void);
extern const ptgo_api *ptgo_shim_api(void);
extern int ptgo_shim_arena_push(void);
extern void ptgo_shim_arena_pop(void);

static int embed_start(const char *pypath) {
    Py_InitializeEx(0);
    PyObject *sys_path = PySys_GetObject("path");
    PyObject *p = PyUnicode_FromString(pypath);
    if (sys_path == NULL || p == NULL || PyList_Insert(sys_path, 0, p) < 0) return -2;
    Py_DECREF(p);
    // The shim compiled into this binary is ptgo._C (not the extension file next to ptgo).
    PyObject *shim = PyInit__C();
    PyObject *modules = PySys_GetObject("modules");
    if (shim == NULL || modules == NULL || PyDict_SetItemString(modules, "ptgo._C", shim) < 0) { PyErr_Print(); return -1; }
    Py_DECREF(shim);
    PyObject *m = PyImport_ImportModule("ptgo._runtime");
    if (m == NULL) { PyErr_Print(); return -3; }
    PyObject *r = PyObject_CallMethod(m, "ensure_initialized", NULL);
    if (r == NULL) { PyErr_Print(); return -4; }
    Py_DECREF(r);
    Py_DECREF(m);
    return 0;
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"unsafe"

	"ptgo/bytecode/py"
	"ptgo/pybridge/capi"
	_ "ptgo/pybridge/shim" // the shim's C code
)

var (
	once     sync.Once
	startErr error
	work     chan func()
	api      *capi.API
)

// Available reports whether this build can embed Python (it needs cgo).
const Available = true

func start() {
	_, file, _, _ := runtime.Caller(0)
	pypath := filepath.Join(filepath.Dir(file), "..", "..", "python")
	work = make(chan func())
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		cs := C.CString(pypath)
		defer C.free(unsafe.Pointer(cs))
		if rc := C.embed_start(cs); rc != 0 {
			ready <- fmt.Errorf("embed: starting Python failed (step %d); is python3.11-dev with torch installed? (make setup)", int(rc))
			return
		}
		api = capi.New(unsafe.Pointer(C.ptgo_shim_api()))
		ready <- nil
		for fn := range work {
			fn()
		}
	}()
	startErr = <-ready
}

// Do runs fn on the Python thread inside an arena: objects fn gets from the API stay alive
// until fn returns.
func Do(fn func(api py.API) error) error {
	once.Do(start)
	if startErr != nil {
		return startErr
	}
	done := make(chan error)
	work <- func() {
		if C.ptgo_shim_arena_push() != 0 {
			done <- fmt.Errorf("embed: arena stack overflow")
			return
		}
		defer C.ptgo_shim_arena_pop()
		done <- fn(api)
	}
	return <-done
}

// Exec runs Python source as a module named name (filename name+".py") and returns its
// globals dict. Call it inside Do.
func Exec(api py.API, name, src string) (py.Obj, error) {
	bi := api.Builtins()
	get := func(n string) py.Obj {
		o, err := api.GetItem(bi, api.NewStr(n))
		if err != nil {
			panic("embed: builtins lacks " + n)
		}
		return o
	}
	code, err := api.Call(get("compile"), []py.Obj{api.NewStr(src), api.NewStr(name + ".py"), api.NewStr("exec")}, nil)
	if err != nil {
		return 0, err
	}
	g, err := api.NewDict([]py.Obj{api.NewStr("__name__")}, []py.Obj{api.NewStr(name)})
	if err != nil {
		return 0, err
	}
	if _, err := api.Call(get("exec"), []py.Obj{code, g}, nil); err != nil {
		return 0, err
	}
	return g, nil
}
