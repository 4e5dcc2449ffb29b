// Package capi implements py.API over the callback table the CPython shim gives Go
// (pybridge/include/ptgo_abi.h). It is used by libptgo.so (package main) and by the embedded
// interpreter Go tests run Python in (pybridge/embed).
package capi

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2
#include <stdlib.h>
#include "ptgo_abi.h"

static int32_t api_kind(const ptgo_api *a, ptgo_obj o) { return a->kind(o); }
static ptgo_obj api_type_of(const ptgo_api *a, ptgo_obj o) { return a->type_of(o); }
static ptgo_obj api_getattr(const ptgo_api *a, ptgo_obj o, const char *n) { return a->getattr(o, n); }
static ptgo_obj api_getattr_static(const ptgo_api *a, ptgo_obj o, const char *n, int32_t *where, ptgo_obj *owner) {
	return a->getattr_static(o, n, where, owner);
}
static ptgo_obj api_call(const ptgo_api *a, ptgo_obj fn, const ptgo_obj *args, int64_t nargs, const char *const *kw, int64_t nkw) {
	return a->call(fn, args, nargs, kw, nkw);
}
static int32_t api_to_int64(const ptgo_api *a, ptgo_obj o, int64_t *out) { return a->to_int64(o, out); }
static int32_t api_to_double(const ptgo_api *a, ptgo_obj o, double *out) { return a->to_double(o, out); }
static const char *api_to_utf8(const ptgo_api *a, ptgo_obj o, int64_t *n) { return a->to_utf8(o, n); }
static const char *api_bytes_data(const ptgo_api *a, ptgo_obj o, int64_t *n) { return a->bytes_data(o, n); }
static ptgo_obj api_from_int64(const ptgo_api *a, int64_t v) { return a->from_int64(v); }
static ptgo_obj api_from_double(const ptgo_api *a, double v) { return a->from_double(v); }
static ptgo_obj api_from_utf8(const ptgo_api *a, const char *s, int64_t n) { return a->from_utf8(s, n); }
static ptgo_obj api_from_bytes(const ptgo_api *a, const char *s, int64_t n) { return a->from_bytes(s, n); }
static ptgo_obj api_from_bool(const ptgo_api *a, int32_t v) { return a->from_bool(v); }
static ptgo_obj api_none(const ptgo_api *a) { return a->none(); }
static ptgo_obj api_new_tuple(const ptgo_api *a, const ptgo_obj *items, int64_t n) { return a->new_tuple(items, n); }
static ptgo_obj api_new_list(const ptgo_api *a, const ptgo_obj *items, int64_t n) { return a->new_list(items, n); }
static ptgo_obj api_new_dict(const ptgo_api *a, const ptgo_obj *k, const ptgo_obj *v, int64_t n) { return a->new_dict(k, v, n); }
static int64_t api_length(const ptgo_api *a, ptgo_obj o) { return a->length(o); }
static ptgo_obj api_getitem_int(const ptgo_api *a, ptgo_obj o, int64_t i) { return a->getitem_int(o, i); }
static ptgo_obj api_getitem(const ptgo_api *a, ptgo_obj o, ptgo_obj k) { return a->getitem(o, k); }
static int32_t api_dict_next(const ptgo_api *a, ptgo_obj d, int64_t *pos, ptgo_obj *k, ptgo_obj *v) { return a->dict_next(d, pos, k, v); }
static ptgo_obj api_repr(const ptgo_api *a, ptgo_obj o) { return a->repr(o); }
static int32_t api_is_instance(const ptgo_api *a, ptgo_obj o, ptgo_obj c) { return a->is_instance(o, c); }
static int32_t api_rich_eq(const ptgo_api *a, ptgo_obj x, ptgo_obj y) { return a->rich_eq(x, y); }
static int32_t api_tensor_meta(const ptgo_api *a, ptgo_obj o, ptgo_tensor_meta *m) { return a->tensor_meta(o, m); }
static const char *api_last_error(const ptgo_api *a) { return a->last_error(); }
static ptgo_obj api_runtime(const ptgo_api *a) { return a->runtime(); }
static ptgo_obj api_builtins(const ptgo_api *a) { return a->builtins(); }
*/
import "C"

import (
	"unsafe"

	"ptgo/bytecode/py"
)

// API implements py.API over the shim's callback table.
type API struct {
	a *C.ptgo_api
	// cstrings caches C copies of attribute names: the interpreter asks for the same few hundred
	// names over and over. Never freed (bounded by the distinct names in user programs).
	cstrings map[string]*C.char
}

// New wraps the callback table at p (a const ptgo_api*).
func New(p unsafe.Pointer) *API {
	return &API{a: (*C.ptgo_api)(p), cstrings: map[string]*C.char{}}
}

// Obj converts a C ptgo_obj (as an unsafe.Pointer) to a handle.
func Obj(p unsafe.Pointer) py.Obj { return py.Obj(uintptr(p)) }

// Ptr converts a handle back to the C pointer it holds.
func Ptr(o py.Obj) unsafe.Pointer { return unsafe.Pointer(cobj(o)) }

func (c *API) cstr(s string) *C.char {
	if p, ok := c.cstrings[s]; ok {
		return p
	}
	p := C.CString(s)
	c.cstrings[s] = p
	return p
}

func obj(o C.ptgo_obj) py.Obj { return py.Obj(uintptr(o)) }

// cobj turns a handle back into the C pointer it holds. Handles are C memory (PyObject*), never
// Go memory, so reinterpreting the bits is safe; it also keeps go vet's uintptr check quiet.
func cobj(o py.Obj) C.ptgo_obj { return *(*C.ptgo_obj)(unsafe.Pointer(&o)) }

func (c *API) err() error { return &py.Error{Msg: C.GoString(C.api_last_error(c.a))} }

func (c *API) res(o C.ptgo_obj) (py.Obj, error) {
	if o == nil {
		return 0, c.err()
	}
	return obj(o), nil
}

func (c *API) Kind(o py.Obj) py.Kind  { return py.Kind(C.api_kind(c.a, cobj(o))) }
func (c *API) TypeOf(o py.Obj) py.Obj { return obj(C.api_type_of(c.a, cobj(o))) }

func (c *API) GetAttr(o py.Obj, name string) (py.Obj, error) {
	return c.res(C.api_getattr(c.a, cobj(o), c.cstr(name)))
}

func (c *API) GetAttrStatic(o py.Obj, name string) (py.Obj, bool, py.Obj, bool, error) {
	var where C.int32_t
	var owner C.ptgo_obj
	v := C.api_getattr_static(c.a, cobj(o), c.cstr(name), &where, &owner)
	if v == nil {
		if where < 0 {
			return 0, false, 0, false, c.err()
		}
		return 0, false, 0, false, nil
	}
	return obj(v), where == 1, obj(owner), true, nil
}

func (c *API) Call(fn py.Obj, args []py.Obj, kwnames []string) (py.Obj, error) {
	n := len(args)
	var argp *C.ptgo_obj
	var cargs []C.ptgo_obj
	if n > 0 {
		cargs = make([]C.ptgo_obj, n)
		for i, a := range args {
			cargs[i] = cobj(a)
		}
		argp = (*C.ptgo_obj)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(cargs[0]))))
		defer C.free(unsafe.Pointer(argp))
		copy(unsafe.Slice(argp, n), cargs)
	}
	var kwp **C.char
	if len(kwnames) > 0 {
		kwp = (**C.char)(C.malloc(C.size_t(len(kwnames)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
		defer C.free(unsafe.Pointer(kwp))
		ks := unsafe.Slice(kwp, len(kwnames))
		for i, k := range kwnames {
			ks[i] = c.cstr(k)
		}
	}
	return c.res(C.api_call(c.a, cobj(fn), argp, C.int64_t(n-len(kwnames)), kwp, C.int64_t(len(kwnames))))
}

func (c *API) Int(o py.Obj) (int64, error) {
	var v C.int64_t
	if C.api_to_int64(c.a, cobj(o), &v) != 0 {
		return 0, c.err()
	}
	return int64(v), nil
}

func (c *API) Float(o py.Obj) (float64, error) {
	var v C.double
	if C.api_to_double(c.a, cobj(o), &v) != 0 {
		return 0, c.err()
	}
	return float64(v), nil
}

func (c *API) Str(o py.Obj) (string, error) {
	var n C.int64_t
	p := C.api_to_utf8(c.a, cobj(o), &n)
	if p == nil {
		return "", c.err()
	}
	return C.GoStringN(p, C.int(n)), nil
}

func (c *API) Bytes(o py.Obj) ([]byte, error) {
	var n C.int64_t
	p := C.api_bytes_data(c.a, cobj(o), &n)
	if p == nil {
		return nil, c.err()
	}
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

func (c *API) NewInt(v int64) py.Obj     { return obj(C.api_from_int64(c.a, C.int64_t(v))) }
func (c *API) NewFloat(v float64) py.Obj { return obj(C.api_from_double(c.a, C.double(v))) }
func (c *API) None() py.Obj              { return obj(C.api_none(c.a)) }

func (c *API) NewBool(v bool) py.Obj {
	b := C.int32_t(0)
	if v {
		b = 1
	}
	return obj(C.api_from_bool(c.a, b))
}

func (c *API) NewStr(s string) py.Obj {
	p := C.CString(s)
	defer C.free(unsafe.Pointer(p))
	return obj(C.api_from_utf8(c.a, p, C.int64_t(len(s))))
}

func (c *API) NewBytes(b []byte) py.Obj {
	p := C.CBytes(b)
	defer C.free(p)
	return obj(C.api_from_bytes(c.a, (*C.char)(p), C.int64_t(len(b))))
}

func (c *API) objArray(items []py.Obj) (*C.ptgo_obj, func()) {
	if len(items) == 0 {
		return nil, func() {}
	}
	p := (*C.ptgo_obj)(C.malloc(C.size_t(len(items)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	s := unsafe.Slice(p, len(items))
	for i, it := range items {
		s[i] = cobj(it)
	}
	return p, func() { C.free(unsafe.Pointer(p)) }
}

func (c *API) NewTuple(items []py.Obj) py.Obj {
	p, free := c.objArray(items)
	defer free()
	return obj(C.api_new_tuple(c.a, p, C.int64_t(len(items))))
}

func (c *API) NewList(items []py.Obj) py.Obj {
	p, free := c.objArray(items)
	defer free()
	return obj(C.api_new_list(c.a, p, C.int64_t(len(items))))
}

func (c *API) NewDict(keys, vals []py.Obj) (py.Obj, error) {
	kp, kfree := c.objArray(keys)
	defer kfree()
	vp, vfree := c.objArray(vals)
	defer vfree()
	return c.res(C.api_new_dict(c.a, kp, vp, C.int64_t(len(keys))))
}

func (c *API) Len(o py.Obj) (int, error) {
	n := C.api_length(c.a, cobj(o))
	if n < 0 {
		return 0, c.err()
	}
	return int(n), nil
}

func (c *API) Index(o py.Obj, i int) (py.Obj, error) {
	return c.res(C.api_getitem_int(c.a, cobj(o), C.int64_t(i)))
}

func (c *API) GetItem(o, key py.Obj) (py.Obj, error) {
	return c.res(C.api_getitem(c.a, cobj(o), cobj(key)))
}

func (c *API) DictItems(d py.Obj) (keys, vals []py.Obj) {
	var pos C.int64_t
	var k, v C.ptgo_obj
	for C.api_dict_next(c.a, cobj(d), &pos, &k, &v) != 0 {
		keys = append(keys, obj(k))
		vals = append(vals, obj(v))
	}
	return keys, vals
}

func (c *API) Repr(o py.Obj) string {
	r := C.api_repr(c.a, cobj(o))
	if r == nil {
		return "<unrepresentable object>"
	}
	s, err := c.Str(obj(r))
	if err != nil {
		return "<unrepresentable object>"
	}
	return s
}

func (c *API) IsInstance(o, cls py.Obj) (bool, error) {
	r := C.api_is_instance(c.a, cobj(o), cobj(cls))
	if r < 0 {
		return false, c.err()
	}
	return r == 1, nil
}

func (c *API) Equal(a, b py.Obj) (bool, error) {
	r := C.api_rich_eq(c.a, cobj(a), cobj(b))
	if r < 0 {
		return false, c.err()
	}
	return r == 1, nil
}

func (c *API) TensorMeta(o py.Obj) (*py.TensorInfo, error) {
	var m C.ptgo_tensor_meta
	if C.api_tensor_meta(c.a, cobj(o), &m) != 0 {
		return nil, c.err()
	}
	n := int(m.ndim)
	t := &py.TensorInfo{
		DType: int(m.dtype), DeviceType: int(m.device_type), DeviceIndex: int(m.device_index),
		RequiresGrad: m.requires_grad != 0, IsLeaf: m.is_leaf != 0, IsParameter: m.is_parameter != 0,
		IsPlain: m.is_plain != 0, Strided: m.strided != 0, StorageOffset: int64(m.storage_offset),
		Sizes: make([]int64, n), Strides: make([]int64, n),
	}
	for i := 0; i < n; i++ {
		t.Sizes[i] = int64(m.sizes[i])
		t.Strides[i] = int64(m.strides[i])
	}
	return t, nil
}

func (c *API) Runtime() py.Obj  { return obj(C.api_runtime(c.a)) }
func (c *API) Builtins() py.Obj { return obj(C.api_builtins(c.a)) }
