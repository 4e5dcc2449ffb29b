/* ptgo._C — the CPython shim (DESIGN D1, D2).
 *
 * What it does, and nothing more:
 *   - hooks frame evaluation (PEP 523) while a compiled callable runs on this thread;
 *   - keeps, per code object (co_extra), a most-recently-used list of cache entries
 *     {guards, transformed code} and runs the guards in C on every call;
 *   - on a miss calls into Go (libptgo.so, loaded with dlopen on first use) and gives Go the
 *     callbacks it needs to inspect live objects (ptgo_abi.h);
 *   - moves data between Python and Go for the few non-per-frame requests.
 *
 * Everything that thinks (what to capture, which guards, which code to run) is Go.
 * Verified CPython 3.11 facts this file relies on: shared/reference/PEP523_311.md.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h>

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "ptgo_abi.h"
#include "ptgo_fast.h"

#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
#define PTGO_SUPPORTED 1
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>
#undef Py_BUILD_CORE
#else
#define PTGO_SUPPORTED 0
#endif

/* ------------------------------------------------------------------------------------------ */
/* Module state (one interpreter; CPython 3.11 has one GIL, every function here holds it).     */

static PyObject *runtime_module;   /* ptgo._runtime */
static PyObject *tensor_type, *param_type, *nn_module_type, *dtype_type, *device_type;
static PyObject *dtype_list;       /* tuple of torch dtypes, index = ptgo dtype code */
static PyObject *is_grad_enabled;  /* torch.is_grad_enabled */
static PyObject *unsupported_exc, *backend_failed_exc;
static PyObject *str_dtype, *str_requires_grad, *str_size, *str_stride, *str_is_cuda,
    *str_get_device, *str_storage_offset, *str_is_leaf, *str_layout, *str_device, *str_type,
    *str_index, *str_is_nested;
static PyObject *strided_layout;
static char lib_path[4096];
static int forked_child;

static const ptgo_fast_api *fast; /* ptgo._fast (C++), NULL when absent or disabled */
static PyObject *fast_capsule;

static ptgo_go_init_fn go_init;
static ptgo_go_compile_fn go_compile;
static ptgo_go_free_result_fn go_free_result;
static ptgo_go_request_fn go_request;
static ptgo_go_free_fn go_free;
static ptgo_go_compile_fx_fn go_compile_fx; /* NULL in an older libptgo.so */
static int go_state; /* 0 not loaded, 1 loaded, -1 failed */
static char go_error[8192];

static void on_fork_child(void) { forked_child = 1; }

/* ------------------------------------------------------------------------------------------ */
/* Arena: objects handed to Go during one call into Go stay alive until the call returns.      */

static PyObject *arena; /* list */

static ptgo_obj keep(PyObject *o) {
    /* Takes a new reference, stores it in the arena, returns it borrowed. */
    if (o == NULL) return NULL;
    if (arena == NULL || PyList_Append(arena, o) < 0) {
        /* Without an arena the object would die: refuse. */
        Py_DECREF(o);
        return NULL;
    }
    Py_DECREF(o);
    return o;
}

static char last_err[4096];
static PyObject *last_exc_type, *last_exc_value, *last_exc_tb;
/* A KeyboardInterrupt (or another BaseException that is no Exception: SystemExit) a callback
   raised during a compile: the compile's result is dropped and this exception raised instead,
   so Ctrl-C during a compile arrives as KeyboardInterrupt, never as BackendCompilerFailed or a
   silently eager frame. */
static PyObject *interrupt_type, *interrupt_value, *interrupt_tb;
static int compiling; /* a compile is running (one at a time, process-wide) */

static void capture_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    if (t == NULL) return;
    PyErr_NormalizeException(&t, &v, &tb);
    if (compiling && interrupt_type == NULL && !PyErr_GivenExceptionMatches(t, PyExc_Exception)) {
        interrupt_type = t;
        interrupt_value = v;
        interrupt_tb = tb;
        Py_INCREF(t);
        Py_XINCREF(v);
        Py_XINCREF(tb);
    }
    const char *tname = ((PyTypeObject *)t)->tp_name;
    PyObject *s = v ? PyObject_Str(v) : NULL;
    const char *msg = s ? PyUnicode_AsUTF8(s) : NULL;
    if (msg == NULL) {
        PyErr_Clear();
        msg = "";
    }
    const char *dot = strrchr(tname, '.');
    snprintf(last_err, sizeof last_err, "%s: %s", dot ? dot + 1 : tname, msg);
    Py_XDECREF(s);
    Py_XDECREF(last_exc_type);
    Py_XDECREF(last_exc_value);
    Py_XDECREF(last_exc_tb);
    last_exc_type = t;
    last_exc_value = v;
    last_exc_tb = tb;
}

static ptgo_obj ret(PyObject *o) {
    if (o == NULL) {
        capture_error();
        return NULL;
    }
    return keep(o);
}

/* ------------------------------------------------------------------------------------------ */
/* Callbacks for Go.                                                                            */

/* A sequence of a type made in C (collections.deque): its length and items are read without
 * running Python code, so guards may read them. */
static int builtin_sequence(PyObject *s) {
    PyTypeObject *t = Py_TYPE(s);
    return !(t->tp_flags & Py_TPFLAGS_HEAPTYPE) && t->tp_as_sequence && t->tp_as_sequence->sq_length &&
           t->tp_as_sequence->sq_item;
}

static int32_t cb_kind(ptgo_obj p) {
    PyObject *o = (PyObject *)p;
    PyTypeObject *t = Py_TYPE(o);
    if (o == Py_None) return PTGO_K_NONE;
    if (PyBool_Check(o)) return PTGO_K_BOOL;
    if (PyLong_Check(o)) return PTGO_K_INT;
    if (PyFloat_Check(o)) return PTGO_K_FLOAT;
    if (PyUnicode_Check(o)) return PTGO_K_STR;
    if (PyTuple_Check(o)) return PTGO_K_TUPLE;
    if (PyList_Check(o)) return PTGO_K_LIST;
    if (PyDict_Check(o)) return PTGO_K_DICT;
    if (PyFunction_Check(o)) return PTGO_K_FUNCTION;
    if (tensor_type && PyObject_TypeCheck(o, (PyTypeObject *)tensor_type)) return PTGO_K_TENSOR;
    if (nn_module_type && PyObject_TypeCheck(o, (PyTypeObject *)nn_module_type)) return PTGO_K_NN_MODULE;
    if (PyMethod_Check(o)) return PTGO_K_METHOD;
    if (PyCFunction_Check(o)) return PTGO_K_BUILTIN;
    if (PyType_Check(o)) return PTGO_K_TYPE;
    if (PyModule_Check(o)) return PTGO_K_MODULE;
    if (PyComplex_Check(o)) return PTGO_K_COMPLEX;
    if (PyBytes_Check(o)) return PTGO_K_BYTES;
    if (PySet_Check(o) && !PyFrozenSet_Check(o)) return PTGO_K_SET;
    if (PyFrozenSet_Check(o)) return PTGO_K_FROZENSET;
    if (PyRange_Check(o)) return PTGO_K_RANGE;
    if (PySlice_Check(o)) return PTGO_K_SLICE;
    if (o == Py_Ellipsis) return PTGO_K_ELLIPSIS;
    if (PyCode_Check(o)) return PTGO_K_CODE;
    if (PyCell_Check(o)) return PTGO_K_CELL;
    if (dtype_type && t == (PyTypeObject *)dtype_type) return PTGO_K_DTYPE;
    if (device_type && t == (PyTypeObject *)device_type) return PTGO_K_DEVICE;
    if (t == &PyMethodDescr_Type || t == &PyWrapperDescr_Type || t == &_PyMethodWrapper_Type ||
        t == &PyClassMethodDescr_Type)
        return PTGO_K_METHOD_DESCRIPTOR;
    if (PyObject_TypeCheck(o, &PyProperty_Type)) return PTGO_K_PROPERTY;
    if (PyObject_TypeCheck(o, &PyClassMethod_Type)) return PTGO_K_CLASSMETHOD;
    if (PyObject_TypeCheck(o, &PyStaticMethod_Type)) return PTGO_K_STATICMETHOD;
    return PTGO_K_OTHER;
}

static ptgo_obj cb_type_of(ptgo_obj o) {
    PyObject *t = (PyObject *)Py_TYPE((PyObject *)o);
    Py_INCREF(t);
    return keep(t);
}

static ptgo_obj cb_getattr(ptgo_obj o, const char *name) {
    return ret(PyObject_GetAttrString((PyObject *)o, name));
}

static ptgo_obj cb_getattr_static(ptgo_obj o, const char *name, int32_t *where, ptgo_obj *owner) {
    PyObject *obj = (PyObject *)o;
    PyObject *key = PyUnicode_FromString(name);
    *where = -1;
    *owner = NULL;
    if (key == NULL) return ret(NULL);
    PyObject *found = NULL;
    if (!PyType_Check(obj)) {
        PyObject **dictptr = _PyObject_GetDictPtr(obj);
        if (dictptr && *dictptr) {
            found = PyDict_GetItemWithError(*dictptr, key);
            if (found) {
                *where = 0;
                Py_INCREF(found);
                Py_DECREF(key);
                return keep(found);
            }
        }
    }
    PyTypeObject *type = PyType_Check(obj) ? (PyTypeObject *)obj : Py_TYPE(obj);
    PyObject *mro = type->tp_mro;
    if (mro) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
            PyObject *base = PyTuple_GET_ITEM(mro, i);
            PyObject *d = ((PyTypeObject *)base)->tp_dict;
            if (d == NULL) continue;
            found = PyDict_GetItemWithError(d, key);
            if (found) {
                *where = 1;
                Py_INCREF(base);
                *owner = keep(base);
                Py_INCREF(found);
                Py_DECREF(key);
                return keep(found);
            }
        }
    }
    Py_DECREF(key);
    if (PyErr_Occurred()) return ret(NULL);
    *where = 0; /* absent, no error */
    return NULL;
}

static ptgo_obj cb_call(ptgo_obj fn, const ptgo_obj *args, int64_t nargs, const char *const *kwnames, int64_t nkw) {
    if (compiling && interrupt_type != NULL) {
        /* after Ctrl-C no more Python runs for this compile (no "running eagerly" warning,
           no backend call): Go sees an error and unwinds */
        PyErr_SetString(PyExc_RuntimeError, "ptgo: the compile was interrupted");
        return ret(NULL);
    }
    PyObject *names = NULL;
    if (nkw > 0) {
        names = PyTuple_New(nkw);
        if (names == NULL) return ret(NULL);
        for (int64_t i = 0; i < nkw; i++) {
            PyObject *s = PyUnicode_InternFromString(kwnames[i]);
            if (s == NULL) {
                Py_DECREF(names);
                return ret(NULL);
            }
            PyTuple_SET_ITEM(names, i, s);
        }
    }
    PyObject *r = PyObject_Vectorcall((PyObject *)fn, (PyObject *const *)args, (size_t)nargs, names);
    Py_XDECREF(names);
    return ret(r);
}

static int32_t cb_to_int64(ptgo_obj o, int64_t *out) {
    long long v = PyLong_AsLongLong((PyObject *)o);
    if (v == -1 && PyErr_Occurred()) {
        capture_error();
        return -1;
    }
    *out = v;
    return 0;
}

static int32_t cb_to_double(ptgo_obj o, double *out) {
    double v = PyFloat_AsDouble((PyObject *)o);
    if (v == -1.0 && PyErr_Occurred()) {
        capture_error();
        return -1;
    }
    *out = v;
    return 0;
}

static const char *cb_to_utf8(ptgo_obj o, int64_t *len) {
    Py_ssize_t n = 0;
    const char *s = PyUnicode_AsUTF8AndSize((PyObject *)o, &n);
    if (s == NULL) {
        capture_error();
        return NULL;
    }
    *len = n;
    return s;
}

static const char *cb_bytes_data(ptgo_obj o, int64_t *len) {
    char *s = NULL;
    Py_ssize_t n = 0;
    if (PyBytes_AsStringAndSize((PyObject *)o, &s, &n) < 0) {
        capture_error();
        return NULL;
    }
    *len = n;
    return s;
}

static ptgo_obj cb_from_int64(int64_t v) { return ret(PyLong_FromLongLong(v)); }
static ptgo_obj cb_from_double(double v) { return ret(PyFloat_FromDouble(v)); }
static ptgo_obj cb_from_utf8(const char *s, int64_t n) { return ret(PyUnicode_FromStringAndSize(s, n)); }
static ptgo_obj cb_from_bytes(const char *s, int64_t n) { return ret(PyBytes_FromStringAndSize(s, n)); }
static ptgo_obj cb_from_bool(int32_t v) { return ret(PyBool_FromLong(v)); }
static ptgo_obj cb_none(void) { return Py_None; }

static ptgo_obj cb_new_tuple(const ptgo_obj *items, int64_t n) {
    PyObject *t = PyTuple_New(n);
    if (t == NULL) return ret(NULL);
    for (int64_t i = 0; i < n; i++) {
        Py_INCREF((PyObject *)items[i]);
        PyTuple_SET_ITEM(t, i, (PyObject *)items[i]);
    }
    return keep(t);
}

static ptgo_obj cb_new_list(const ptgo_obj *items, int64_t n) {
    PyObject *l = PyList_New(n);
    if (l == NULL) return ret(NULL);
    for (int64_t i = 0; i < n; i++) {
        Py_INCREF((PyObject *)items[i]);
        PyList_SET_ITEM(l, i, (PyObject *)items[i]);
    }
    return keep(l);
}

static ptgo_obj cb_new_dict(const ptgo_obj *keys, const ptgo_obj *vals, int64_t n) {
    PyObject *d = PyDict_New();
    if (d == NULL) return ret(NULL);
    for (int64_t i = 0; i < n; i++) {
        if (PyDict_SetItem(d, (PyObject *)keys[i], (PyObject *)vals[i]) < 0) {
            Py_DECREF(d);
            return ret(NULL);
        }
    }
    return keep(d);
}

static int64_t cb_length(ptgo_obj o) {
    Py_ssize_t n = PyObject_Length((PyObject *)o);
    if (n < 0) capture_error();
    return n;
}

static ptgo_obj cb_getitem_int(ptgo_obj o, int64_t i) {
    return ret(PySequence_GetItem((PyObject *)o, (Py_ssize_t)i));
}

static ptgo_obj cb_getitem(ptgo_obj o, ptgo_obj key) {
    return ret(PyObject_GetItem((PyObject *)o, (PyObject *)key));
}

static int32_t cb_dict_next(ptgo_obj d, int64_t *pos, ptgo_obj *key, ptgo_obj *val) {
    Py_ssize_t p = (Py_ssize_t)*pos;
    PyObject *k, *v;
    int r = PyDict_Next((PyObject *)d, &p, &k, &v);
    *pos = p;
    if (r) {
        /* Dict entries are borrowed; the dict is in the arena or reachable from the frame, but a
         * later mutation could drop them: keep them. */
        Py_INCREF(k);
        Py_INCREF(v);
        *key = keep(k);
        *val = keep(v);
    }
    return r;
}

static ptgo_obj cb_repr(ptgo_obj o) { return ret(PyObject_Repr((PyObject *)o)); }

static int32_t cb_is_instance(ptgo_obj o, ptgo_obj cls) {
    int r = PyObject_IsInstance((PyObject *)o, (PyObject *)cls);
    if (r < 0) capture_error();
    return r;
}

static int32_t cb_rich_eq(ptgo_obj a, ptgo_obj b) {
    int r = PyObject_RichCompareBool((PyObject *)a, (PyObject *)b, Py_EQ);
    if (r < 0) capture_error();
    return r;
}

static int dtype_code(PyObject *dt) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dtype_list); i++)
        if (PyTuple_GET_ITEM(dtype_list, i) == dt) return (int)i;
    return -1;
}

/* Reads a tensor's metadata through its Python attributes. */
static int32_t tensor_meta_slow(PyObject *t, ptgo_tensor_meta *m);

static int32_t cb_tensor_meta(ptgo_obj p, ptgo_tensor_meta *m) {
    PyObject *t = (PyObject *)p;
    if (fast && tensor_type && PyObject_TypeCheck(t, (PyTypeObject *)tensor_type)) {
        if (fast->tensor_meta(t, m) == 0) {
            m->is_parameter = param_type && PyObject_TypeCheck(t, (PyTypeObject *)param_type);
            m->is_plain = Py_TYPE(t) == (PyTypeObject *)tensor_type || Py_TYPE(t) == (PyTypeObject *)param_type;
            return 0;
        }
    }
    return tensor_meta_slow(t, m);
}

/* Reads a tensor's metadata through its Python attributes. */
static int32_t tensor_meta_slow(PyObject *t, ptgo_tensor_meta *m) {
    PyObject *size = NULL, *stride = NULL, *dt = NULL, *rg = NULL, *leaf = NULL, *off = NULL, *dev = NULL,
             *devtype = NULL, *devidx = NULL, *layout = NULL, *nested = NULL;
    int rc = -1;
    memset(m, 0, sizeof *m);
    /* A nested tensor reports the strided layout but has no sizes (size() raises): it is
       reported as not strided, with no dimensions, and capture refuses it. */
    if (!(nested = PyObject_GetAttr(t, str_is_nested))) goto done;
    if (nested == Py_True) {
        size = PyTuple_New(0);
    } else if (!(size = PyObject_CallMethodNoArgs(t, str_size))) {
        goto done;
    }
    if (size == NULL || !(layout = PyObject_GetAttr(t, str_layout))) goto done;
    m->strided = layout == strided_layout && nested != Py_True;
    if (m->strided) {
        if (!(stride = PyObject_CallMethodNoArgs(t, str_stride))) goto done;
        if (!(off = PyObject_CallMethodNoArgs(t, str_storage_offset))) goto done;
        m->storage_offset = PyLong_AsLongLong(off);
    }
    if (!(dt = PyObject_GetAttr(t, str_dtype))) goto done;
    if (!(rg = PyObject_GetAttr(t, str_requires_grad))) goto done;
    if (!(leaf = PyObject_GetAttr(t, str_is_leaf))) goto done;
    if (!(dev = PyObject_GetAttr(t, str_device))) goto done;
    if (!(devtype = PyObject_GetAttr(dev, str_type))) goto done;
    if (!(devidx = PyObject_GetAttr(dev, str_index))) goto done;
    Py_ssize_t nd = PyTuple_GET_SIZE(size);
    if (nd > PTGO_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "ptgo supports tensors of at most %d dimensions, got %zd", PTGO_MAX_DIMS, nd);
        goto done;
    }
    m->ndim = (int32_t)nd;
    for (Py_ssize_t i = 0; i < nd; i++) {
        m->sizes[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(size, i));
        m->strides[i] = stride ? PyLong_AsLongLong(PyTuple_GET_ITEM(stride, i)) : 0;
    }
    m->dtype = dtype_code(dt);
    m->requires_grad = rg == Py_True;
    m->is_leaf = leaf == Py_True;
    m->is_parameter = param_type && PyObject_TypeCheck(t, (PyTypeObject *)param_type);
    m->is_plain = Py_TYPE(t) == (PyTypeObject *)tensor_type || Py_TYPE(t) == (PyTypeObject *)param_type;
    const char *ty = PyUnicode_AsUTF8(devtype);
    if (ty == NULL) goto done;
    m->device_type = strcmp(ty, "cpu") == 0 ? 0 : strcmp(ty, "cuda") == 0 ? 1 : strcmp(ty, "meta") == 0 ? 2 : 3;
    m->device_index = devidx == Py_None ? -1 : (int32_t)PyLong_AsLong(devidx);
    if (PyErr_Occurred()) goto done;
    rc = 0;
done:
    if (rc < 0) capture_error();
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(dt);
    Py_XDECREF(rg);
    Py_XDECREF(leaf);
    Py_XDECREF(off);
    Py_XDECREF(dev);
    Py_XDECREF(devtype);
    Py_XDECREF(devidx);
    Py_XDECREF(layout);
    Py_XDECREF(nested);
    return rc;
}

static const char *cb_last_error(void) { return last_err; }
static ptgo_obj cb_runtime(void) { return runtime_module; }
static ptgo_obj cb_builtins(void) { return PyEval_GetBuiltins(); }

static const ptgo_api api = {
    .abi_version = PTGO_ABI_VERSION,
    .kind = cb_kind,
    .type_of = cb_type_of,
    .getattr = cb_getattr,
    .getattr_static = cb_getattr_static,
    .call = cb_call,
    .to_int64 = cb_to_int64,
    .to_double = cb_to_double,
    .to_utf8 = cb_to_utf8,
    .bytes_data = cb_bytes_data,
    .from_int64 = cb_from_int64,
    .from_double = cb_from_double,
    .from_utf8 = cb_from_utf8,
    .from_bytes = cb_from_bytes,
    .from_bool = cb_from_bool,
    .none = cb_none,
    .new_tuple = cb_new_tuple,
    .new_list = cb_new_list,
    .new_dict = cb_new_dict,
    .length = cb_length,
    .getitem_int = cb_getitem_int,
    .getitem = cb_getitem,
    .dict_next = cb_dict_next,
    .repr = cb_repr,
    .is_instance = cb_is_instance,
    .rich_eq = cb_rich_eq,
    .tensor_meta = cb_tensor_meta,
    .last_error = cb_last_error,
    .runtime = cb_runtime,
    .builtins = cb_builtins,
};

/* ------------------------------------------------------------------------------------------ */
/* Embedding: Go tests link this file into a test binary with an embedded interpreter        */
/* (pybridge/embed) and call Go's capture directly with this callback table.                   */

#define PTGO_EXPORT __attribute__((visibility("default")))

PTGO_EXPORT const ptgo_api *ptgo_shim_api(void) { return &api; }

static PyObject *arena_stack[64];
static int arena_depth;

/* Starts an arena for objects handed out by callbacks outside a compile; 0 on success. */
PTGO_EXPORT int ptgo_shim_arena_push(void) {
    if (arena_depth >= 64) return -1;
    PyObject *a = PyList_New(0);
    if (a == NULL) return -1;
    arena_stack[arena_depth++] = arena;
    arena = a;
    return 0;
}

/* Ends the innermost arena, releasing every object it kept. */
PTGO_EXPORT void ptgo_shim_arena_pop(void) {
    if (arena_depth == 0) return;
    Py_CLEAR(arena);
    arena = arena_stack[--arena_depth];
}

/* ------------------------------------------------------------------------------------------ */
/* Loading the Go library (lazily: importing ptgo starts no Go runtime; DESIGN D8).            */

static int load_go(void) {
    if (go_state != 0) return go_state;
    if (lib_path[0] == 0) {
        /* before ptgo._runtime.ensure_initialized: not a failure to remember */
        snprintf(go_error, sizeof go_error, "ptgo is not initialized yet (ptgo._runtime.ensure_initialized)");
        return -1;
    }
    go_state = -1;
    if (forked_child) {
        snprintf(go_error, sizeof go_error,
                 "ptgo cannot start its compiler in a process forked after ptgo was imported (DESIGN D8); "
                 "compile in the parent before forking, or use the 'spawn' start method");
        return -1;
    }
    void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        snprintf(go_error, sizeof go_error, "cannot load %s: %s; rebuild ptgo (make setup)", lib_path, dlerror());
        return -1;
    }
    go_init = (ptgo_go_init_fn)dlsym(h, "ptgo_go_init");
    go_compile = (ptgo_go_compile_fn)dlsym(h, "ptgo_go_compile");
    go_free_result = (ptgo_go_free_result_fn)dlsym(h, "ptgo_go_free_result");
    go_request = (ptgo_go_request_fn)dlsym(h, "ptgo_go_request");
    go_free = (ptgo_go_free_fn)dlsym(h, "ptgo_go_free");
    go_compile_fx = (ptgo_go_compile_fx_fn)dlsym(h, "ptgo_go_compile_fx");
    if (!go_init || !go_compile || !go_free_result || !go_request || !go_free) {
        snprintf(go_error, sizeof go_error, "%s lacks ptgo's exports; rebuild ptgo (make setup)", lib_path);
        return -1;
    }
    PyObject *cfg = PyObject_CallMethod(runtime_module, "init_config_json", NULL);
    if (cfg == NULL) return -1;
    const char *cfgs = PyUnicode_AsUTF8(cfg);
    char *err = NULL;
    PyObject *saved_arena = arena;
    arena = PyList_New(0);
    int32_t rc = go_init(&api, cfgs ? cfgs : "{}", &err);
    Py_CLEAR(arena);
    arena = saved_arena;
    Py_DECREF(cfg);
    if (rc != 0) {
        snprintf(go_error, sizeof go_error, "ptgo's Go library failed to start: %s", err ? err : "unknown error");
        if (err) go_free(err);
        return -1;
    }
    go_state = 1;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Cache entries and guards.                                                                   */

typedef struct {
    int32_t op, dst, src, nvec;
    int64_t i;
    PyObject *obj;  /* strong, or borrowed when weak is set */
    PyObject *weak; /* weak reference to obj for identity guards (the entry must not keep modules
                     * and parameters alive); its callback marks the entry dead */
    PyObject *name; /* interned str, strong */
    int64_t *vec;
    char *desc;
} guard_t;

typedef struct entry {
    struct entry *next;
    long tag;
    int status;          /* PTGO_OK or PTGO_EAGER */
    PyObject *code;      /* transformed code (strong), NULL for eager entries */
    PyObject *fn;        /* cached replacement function: no free variables, a module's globals */
    int fn_uncached;     /* globals that are no module's dict: a function is made per call */
    guard_t *guards;
    int nguards, nregs;
    long hits;
    int dead;            /* an object an identity guard names has died: never matches again */
    PyObject *on_death;  /* the weakref callback (bound to this entry) */
    /* The call site the entry was compiled for: the argument slots holding an object guarded by
     * identity or an nn.Module guarded by class, and weak references to those objects.
     * ptgo.config.cache_size_limit counts the entries of one call site; entries for other
     * objects (another layer whose forward runs as a frame of its own) count only towards
     * ptgo.config.accumulated_cache_size_limit. */
    int nkeys;
    int *key_slots;
    PyObject **key_refs;
} entry_t;

typedef struct cache {
    struct cache *prev_all, *next_all;
    PyObject *code; /* borrowed: the cache lives in the code's co_extra */
    entry_t *head;
    int nentries;
    int limit_warned;
    int skip;            /* compile refused for this code (PTGO_SKIP_CODE); cleared by reset() */
    char *last_failure;  /* description of the guard that failed most recently */
} cache_t;

static Py_ssize_t extra_index = -1;
static char skip_file_marker; /* co_extra value for code never to capture (stdlib, torch, ptgo) */
#define SKIP_FILE ((void *)&skip_file_marker)
static char uncaptured_marker; /* co_extra value for code that runs with capture off, callees included */
#define UNCAPTURED ((void *)&uncaptured_marker)
static cache_t *all_caches;
/* The skip policy (ptgo._runtime._skip_policy): resolved paths, longest first; the first rule
 * that matches a code object's resolved file decides. */
enum { RULE_SKIP_DIR = 0, RULE_CAPTURE_DIR = 1, RULE_SKIP_FILE = 2, RULE_UNCAPTURED_FILE = 3 };
/* What a rule says of frames that start in a file (code_owner_of's *skipped). */
enum { POLICY_CAPTURE = 0, POLICY_SKIP = 1, POLICY_UNCAPTURED = 2 };
typedef struct {
    char *path;
    size_t len;
    int kind;
    PyObject *reason; /* str naming the library the code belongs to ("torch"), "" for the user's */
} policy_rule;
static policy_rule *policy;
static Py_ssize_t npolicy;

static char *dupstr(const char *s);

/* code_owner_of: what library a file belongs to ("torch", "the standard library", "numpy"), or
 * NULL for the user's own code (torchvision and other installed packages included); *skipped
 * says whether frames that start there are never captured (POLICY_SKIP), or run with capture
 * off for their whole extent, callees included (POLICY_UNCAPTURED: torch.compile's entry
 * points, whose frames torch.compile's own frame evaluator owns). The one answer to "is this library
 * code": the frame hook asks it for skipping, the trace (through _C.code_owner) for which
 * globals need guards and which line is the user's in messages. torch.nn's module files belong
 * to torch and are captured. Frozen modules ("<frozen os>") are the standard library; other
 * names in angle brackets (exec'd code, "<stdin>") are the user's. Files are compared by their
 * resolved path. */
static PyObject *code_owner_of(const char *fn, int *skipped) {
    static PyObject *stdlib_reason;
    *skipped = POLICY_CAPTURE;
    if (strncmp(fn, "<frozen ", 8) == 0) {
        if (stdlib_reason == NULL) stdlib_reason = PyUnicode_InternFromString("the standard library");
        *skipped = POLICY_SKIP;
        return stdlib_reason;
    }
    if (fn[0] == '<' || npolicy == 0) return NULL;
    char buf[PATH_MAX];
    const char *path = realpath(fn, buf) ? buf : fn;
    size_t n = strlen(path);
    for (Py_ssize_t i = 0; i < npolicy; i++) {
        const policy_rule *r = &policy[i];
        int file = r->kind == RULE_SKIP_FILE || r->kind == RULE_UNCAPTURED_FILE;
        int match = file ? (n == r->len && memcmp(path, r->path, n) == 0)
                         : (n > r->len && memcmp(path, r->path, r->len) == 0);
        if (match) {
            *skipped = r->kind == RULE_CAPTURE_DIR ? POLICY_CAPTURE
                       : r->kind == RULE_UNCAPTURED_FILE ? POLICY_UNCAPTURED
                                                         : POLICY_SKIP;
            return PyUnicode_GET_LENGTH(r->reason) ? r->reason : NULL;
        }
    }
    return NULL;
}

static void free_policy(void) {
    for (Py_ssize_t i = 0; i < npolicy; i++) {
        PyMem_Free(policy[i].path);
        Py_XDECREF(policy[i].reason);
    }
    PyMem_Free(policy);
    policy = NULL;
    npolicy = 0;
}

/* set_policy(rules): rules is a tuple of (path, kind, reason), longest path first. */
static int set_policy(PyObject *rules) {
    Py_ssize_t n = PyTuple_GET_SIZE(rules);
    policy_rule *p = PyMem_Calloc(n ? n : 1, sizeof *p);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *path;
        int kind;
        PyObject *reason;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(rules, i), "siU", &path, &kind, &reason)) goto fail;
        p[i].path = dupstr(path);
        p[i].len = strlen(path);
        p[i].kind = kind;
        Py_INCREF(reason);
        p[i].reason = reason;
        if (p[i].path == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    free_policy();
    policy = p;
    npolicy = n;
    return 0;
fail:
    for (Py_ssize_t i = 0; i < n; i++) {
        PyMem_Free(p[i].path);
        Py_XDECREF(p[i].reason);
    }
    PyMem_Free(p);
    return -1;
}

/* code_owner(filename) -> (owner or None, skipped) */
static PyObject *py_code_owner(PyObject *self, PyObject *filename) {
    const char *fn = PyUnicode_AsUTF8(filename);
    if (fn == NULL) return NULL;
    int skipped;
    PyObject *owner = code_owner_of(fn, &skipped);
    return Py_BuildValue("(OO)", owner ? owner : Py_None, skipped ? Py_True : Py_False);
}

/* code_policy(filename) -> (owner or None, skipped, uncaptured) */
static PyObject *py_code_policy(PyObject *self, PyObject *filename) {
    const char *fn = PyUnicode_AsUTF8(filename);
    if (fn == NULL) return NULL;
    int skipped;
    PyObject *owner = code_owner_of(fn, &skipped);
    return Py_BuildValue("(OOO)", owner ? owner : Py_None, skipped ? Py_True : Py_False,
                         skipped == POLICY_UNCAPTURED ? Py_True : Py_False);
}

static void free_entry(entry_t *e) {
    for (int i = 0; i < e->nguards; i++) {
        if (e->guards[i].weak) {
            Py_CLEAR(e->guards[i].weak); /* a freed weakref never calls its callback */
            e->guards[i].obj = NULL;
        }
        Py_XDECREF(e->guards[i].obj);
        Py_XDECREF(e->guards[i].name);
        PyMem_Free(e->guards[i].vec);
        PyMem_Free(e->guards[i].desc);
    }
    PyMem_Free(e->guards);
    for (int i = 0; i < e->nkeys; i++) Py_XDECREF(e->key_refs[i]);
    PyMem_Free(e->key_slots);
    PyMem_Free(e->key_refs);
    Py_XDECREF(e->code);
    Py_XDECREF(e->fn);
    Py_XDECREF(e->on_death);
    PyMem_Free(e);
}

static PyObject *entry_died(PyObject *capsule, PyObject *wr) {
    entry_t *e = PyCapsule_GetPointer(capsule, "ptgo.entry");
    if (e) {
        /* Release the compiled code (and the graph and parameters it holds) now; the entry
         * itself is unlinked at the next lookup of its code object. */
        e->dead = 1;
        Py_CLEAR(e->code);
        Py_CLEAR(e->fn);
    }
    PyErr_Clear();
    Py_RETURN_NONE;
}

static PyMethodDef entry_died_def = {"entry_died", entry_died, METH_O, NULL};

/* Unlinks and frees the entries of c whose identity-guarded objects died. */
static void purge_dead(cache_t *c) {
    entry_t **link = &c->head;
    while (*link) {
        entry_t *e = *link;
        if (e->dead) {
            *link = e->next;
            c->nentries--;
            free_entry(e);
        } else {
            link = &e->next;
        }
    }
}

static void clear_cache(cache_t *c) {
    entry_t *e = c->head;
    c->head = NULL;
    c->nentries = 0;
    c->limit_warned = 0;
    c->skip = 0;
    while (e) {
        entry_t *n = e->next;
        free_entry(e);
        e = n;
    }
    PyMem_Free(c->last_failure);
    c->last_failure = NULL;
}

static void free_cache(void *p) {
    if (p == NULL || p == SKIP_FILE || p == UNCAPTURED) return;
    cache_t *c = (cache_t *)p;
    if (c->prev_all) c->prev_all->next_all = c->next_all;
    else all_caches = c->next_all;
    if (c->next_all) c->next_all->prev_all = c->prev_all;
    clear_cache(c);
    PyMem_Free(c);
}

static char *dupstr(const char *s) {
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = PyMem_Malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static void set_failure(cache_t *c, const char *desc) {
    if (c->last_failure && desc && strcmp(c->last_failure, desc) == 0) return;
    PyMem_Free(c->last_failure);
    c->last_failure = dupstr(desc);
}

/* The size of dim d of tensor t (a PTGO_G_SYM factor); -1 on failure (never a size). */
static long long tensor_dim_size(PyObject *t, long long d) {
    if (d == -1) { /* an int argument (its type is guarded exactly) */
        if (!PyLong_CheckExact(t)) return -1;
        long long v = PyLong_AsLongLong(t);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return -1;
        }
        return v;
    }
    if (fast) {
        ptgo_tensor_meta m;
        if (fast->tensor_meta(t, &m) != 0) return -1;
        if (d == -2) return m.storage_offset;
        if (d < 0 || d >= m.ndim) return -1;
        return m.sizes[d];
    }
    if (d == -2) { /* the storage offset */
        PyObject *off = PyObject_CallMethodNoArgs(t, str_storage_offset);
        long long v = off ? PyLong_AsLongLong(off) : -1;
        Py_XDECREF(off);
        PyErr_Clear();
        return v;
    }
    PyObject *size = PyObject_CallMethodNoArgs(t, str_size);
    if (size == NULL || !PyTuple_Check(size) || d < 0 || d >= PyTuple_GET_SIZE(size)) {
        Py_XDECREF(size);
        PyErr_Clear();
        return -1;
    }
    long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(size, d));
    Py_DECREF(size);
    return v;
}

/* Checks a PTGO_G_SYM guard (see ptgo_abi.h). */
/* same_value is PTGO_G_EQ's comparison: ==, except that floats (also inside tuples, and the
   parts of complex numbers) compare by their bits, so a result specialised for -0.0 is not
   served for 0.0 (x * a has the other sign) and a NaN equals itself. Types are equal. */
static int same_value(PyObject *a, PyObject *b) {
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    if (PyComplex_CheckExact(a)) {
        Py_complex x = PyComplex_AsCComplex(a), y = PyComplex_AsCComplex(b);
        return memcmp(&x.real, &y.real, sizeof x.real) == 0 && memcmp(&x.imag, &y.imag, sizeof x.imag) == 0;
    }
    if (PyTuple_CheckExact(a)) {
        Py_ssize_t n = PyTuple_GET_SIZE(a);
        if (n != PyTuple_GET_SIZE(b)) return 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *x = PyTuple_GET_ITEM(a, i), *y = PyTuple_GET_ITEM(b, i);
            if (Py_TYPE(x) != Py_TYPE(y) || !same_value(x, y)) return 0;
        }
        return 1;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
}

/* Evaluates the polynomial of a PTGO_G_SYM guard at v[*k] (c, nterms, terms), advancing *k; a
 * factor with register -1 is a derived symbol: its divisor, then its numerator polynomial, whose
 * floor division it is. Returns 0 when the vector is malformed or a size cannot be read. */
static int sym_poly(PyObject **regs, const int64_t *v, int32_t n, int32_t *k, int depth, long long *out) {
    if (depth > 8 || *k + 2 > n) return 0;
    long long acc = v[*k];
    int64_t nterms = v[*k + 1];
    *k += 2;
    for (int64_t t = 0; t < nterms; t++) {
        if (*k + 2 > n) return 0;
        long long p = v[*k];
        int64_t nf = v[*k + 1];
        *k += 2;
        for (int64_t j = 0; j < nf; j++) {
            if (*k + 2 > n) return 0;
            long long s;
            if (v[*k] == -1) { /* floor(numerator / divisor) */
                long long div = v[*k + 1], num;
                *k += 2;
                if (div <= 0 || !sym_poly(regs, v, n, k, depth + 1, &num)) return 0;
                s = num / div - ((num % div != 0) && ((num < 0) != (div < 0)));
            } else {
                s = tensor_dim_size(regs[v[*k]], v[*k + 1]);
                if (s < 0) return 0;
                *k += 2;
            }
            p *= s;
        }
        acc += p;
    }
    *out = acc;
    return 1;
}

static int check_sym(PyObject **regs, const guard_t *g) {
    const int64_t *v = g->vec;
    int32_t n = g->nvec, k = 1;
    long long acc;
    if (n < 3 || !sym_poly(regs, v, n, &k, 0, &acc)) return 0;
    switch (v[0]) {
    case 0: return acc == 0;
    case 1: return acc != 0;
    case 2: return acc >= 0;
    case 3: return acc > 0;
    }
    return 0;
}

/* One step of a PTGO_G_FLOAT program: a unary operator of Python numbers (a new reference, or
 * NULL with an exception set). */
static PyObject *float_unary(int64_t op, PyObject *x) {
    switch (op) {
    case 0: return PyNumber_Negative(x);
    case 1: return PyNumber_Absolute(x);
    case 2: { /* math.sqrt */
        double v = PyFloat_AsDouble(x);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        if (v < 0) {
            PyErr_SetString(PyExc_ValueError, "math domain error");
            return NULL;
        }
        return PyFloat_FromDouble(sqrt(v));
    }
    case 3: return PyNumber_Long(x);
    case 4: return PyObject_CallMethod(x, "__floor__", NULL);
    case 5: return PyObject_CallMethod(x, "__ceil__", NULL);
    case 6: return PyObject_CallMethod(x, "__round__", NULL);
    case 7: return PyObject_CallMethod(x, "__trunc__", NULL);
    }
    PyErr_SetString(PyExc_SystemError, "ptgo: bad float guard");
    return NULL;
}

static PyObject *float_binary(int64_t op, PyObject *a, PyObject *b) {
    switch (op) {
    case 0: return PyNumber_Add(a, b);
    case 1: return PyNumber_Subtract(a, b);
    case 2: return PyNumber_Multiply(a, b);
    case 3: return PyNumber_TrueDivide(a, b);
    case 4: return PyNumber_FloorDivide(a, b);
    case 5: return PyNumber_Remainder(a, b);
    case 6: return PyNumber_Power(a, b, Py_None);
    }
    PyErr_SetString(PyExc_SystemError, "ptgo: bad float guard");
    return NULL;
}

/* Checks a PTGO_G_FLOAT guard (see ptgo_abi.h): Python computes both sides exactly as the traced
 * code would. Anything that raises fails the guard (the recompile traces the call). */
static int check_float(PyObject **regs, const guard_t *g) {
    PyObject *stack[32];
    int sp = 0, ok = 0;
    const int64_t *v = g->vec;
    if (g->nvec < 2) return 0;
    for (int32_t k = 2; k + 1 < g->nvec; k += 2) {
        int64_t kind = v[k], x = v[k + 1];
        PyObject *r = NULL;
        switch (kind) {
        case 1:
            r = regs[x];
            if (r == NULL || !PyFloat_CheckExact(r)) goto done;
            Py_INCREF(r);
            break;
        case 2: {
            double d;
            memcpy(&d, &x, sizeof d);
            r = PyFloat_FromDouble(d);
            break;
        }
        case 3: r = PyLong_FromLongLong(x); break;
        case 4:
            if (sp < 2) goto done;
            r = float_binary(x, stack[sp - 2], stack[sp - 1]);
            Py_DECREF(stack[--sp]);
            Py_DECREF(stack[--sp]);
            break;
        case 5:
            if (sp < 1) goto done;
            r = float_unary(x, stack[sp - 1]);
            Py_DECREF(stack[--sp]);
            break;
        default: goto done;
        }
        if (r == NULL) goto done;
        if (sp == 32) {
            Py_DECREF(r);
            goto done;
        }
        stack[sp++] = r;
    }
    if (sp != 2) goto done;
    if (v[0] == 6) {
        ok = Py_TYPE(stack[0]) == Py_TYPE(stack[1]) && same_value(stack[0], stack[1]);
    } else {
        int c = PyObject_RichCompareBool(stack[0], stack[1], (int)v[0]);
        ok = c >= 0 && c == (v[1] != 0);
    }
done:
    while (sp > 0) Py_DECREF(stack[--sp]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        ok = 0;
    }
    return ok;
}

/* Checks a tensor against a PTGO_G_TENSOR guard: i packs dtype | device_type<<8 |
 * (device_index+1)<<16 | requires_grad<<32; vec holds sizes, strides, then the storage offset. */
static int check_tensor(PyObject *t, const guard_t *g) {
    if ((PyObject *)Py_TYPE(t) != g->obj) return 0;
    if (fast) return fast->tensor_match(t, g->i, g->vec, g->nvec);
    int ndim = (g->nvec - 1) / 2;
    int want_dtype = (int)(g->i & 0xff);
    int want_devtype = (int)((g->i >> 8) & 0xff);
    int want_devidx = (int)((g->i >> 16) & 0xffff) - 1;
    int want_rg = (int)((g->i >> 32) & 1);
    int ok = 0;
    PyObject *dt = NULL, *rg = NULL, *size = NULL, *stride = NULL, *cuda = NULL, *off = NULL;
    if (!(dt = PyObject_GetAttr(t, str_dtype))) goto done;
    if (dt != PyTuple_GET_ITEM(dtype_list, want_dtype)) goto done;
    if (!(rg = PyObject_GetAttr(t, str_requires_grad))) goto done;
    if ((rg == Py_True) != want_rg) goto done;
    if (!(cuda = PyObject_GetAttr(t, str_is_cuda))) goto done;
    if (want_devtype == 1) {
        if (cuda != Py_True) goto done;
        PyObject *idx = PyObject_CallMethodNoArgs(t, str_get_device);
        if (idx == NULL) goto done;
        long v = PyLong_AsLong(idx);
        Py_DECREF(idx);
        if (v != want_devidx) goto done;
    } else if (cuda == Py_True) {
        goto done;
    }
    if (!(size = PyObject_CallMethodNoArgs(t, str_size))) goto done;
    if (PyTuple_GET_SIZE(size) != ndim) goto done;
    if (!(stride = PyObject_CallMethodNoArgs(t, str_stride))) goto done;
    {
        /* size -1: a dynamic dim (any size >= 2); stride -1: the row-major stride of the sizes;
         * stride -(2 + mask): the product of the sizes (at least 1) of the dims in mask */
        long long row = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            long long sz = PyLong_AsLongLong(PyTuple_GET_ITEM(size, d));
            long long st = PyLong_AsLongLong(PyTuple_GET_ITEM(stride, d));
            if (g->vec[d] < 0 ? sz < 2 : sz != g->vec[d]) goto done;
            long long want = g->vec[ndim + d];
            if (want == -1) {
                want = row;
            } else if (want < -1) {
                unsigned long long mask = (unsigned long long)(-want - 2);
                want = 1;
                for (int j = 0; j < ndim; j++) {
                    if (!(mask >> j & 1)) continue;
                    long long sj = PyLong_AsLongLong(PyTuple_GET_ITEM(size, j));
                    want *= sj > 1 ? sj : 1;
                }
            }
            if (st != want) goto done;
            row *= sz > 1 ? sz : 1;
        }
    }
    if (!(off = PyObject_CallMethodNoArgs(t, str_storage_offset))) goto done;
    if (g->vec[2 * ndim] >= 0 && PyLong_AsLongLong(off) != g->vec[2 * ndim]) goto done;
    ok = 1;
done:
    if (PyErr_Occurred()) {
        PyErr_Clear();
        ok = 0;
    }
    Py_XDECREF(dt);
    Py_XDECREF(rg);
    Py_XDECREF(size);
    Py_XDECREF(stride);
    Py_XDECREF(cuda);
    Py_XDECREF(off);
    return ok;
}

#if PTGO_SUPPORTED
/* Whether why (from run_guards) is the description of one of e's version guards. */
static int failed_on_version(const entry_t *e, const char *why) {
    for (int i = 0; i < e->nguards; i++)
        if (e->guards[i].desc == why) return e->guards[i].op == PTGO_G_TENSOR_VERSION;
    return 0;
}

/* Runs the guards of e against frame f. Returns 1 when all pass; otherwise 0 and *failed names
 * the first guard that failed. Never leaves a Python exception set. */
static int run_guards(const entry_t *e, _PyInterpreterFrame *f, const char **failed) {
    PyObject *regs_small[32];
    char owned_small[32];
    PyObject **regs = regs_small;
    char *owned = owned_small;
    if (e->nregs > 32) {
        regs = PyMem_Malloc(sizeof(PyObject *) * e->nregs);
        owned = PyMem_Malloc(e->nregs);
        if (!regs || !owned) {
            PyMem_Free(regs);
            PyMem_Free(owned);
            PyErr_Clear();
            *failed = "out of memory";
            return 0;
        }
    }
    memset(owned, 0, e->nregs);
    int ok = 1;
    int i;
    for (i = 0; i < e->nguards && ok; i++) {
        const guard_t *g = &e->guards[i];
        PyObject *v = NULL;
        switch (g->op) {
        case PTGO_G_ARG:
            regs[g->dst] = f->localsplus[g->i];
            owned[g->dst] = 0;
            ok = regs[g->dst] != NULL;
            break;
        case PTGO_G_GLOBAL:
            v = g->i ? NULL : PyDict_GetItemWithError(f->f_globals, g->name);
            if (v == NULL && !PyErr_Occurred()) v = PyDict_GetItemWithError(f->f_builtins, g->name);
            regs[g->dst] = v;
            owned[g->dst] = 0;
            ok = v != NULL;
            break;
        case PTGO_G_CLOSURE: {
            PyObject *cl = f->f_func->func_closure;
            ok = cl != NULL && g->i < PyTuple_GET_SIZE(cl);
            if (ok) {
                v = PyCell_GET(PyTuple_GET_ITEM(cl, g->i));
                regs[g->dst] = v;
                owned[g->dst] = 0;
                ok = v != NULL;
            }
            break;
        }
        case PTGO_G_ATTR:
            v = g->i == 1 ? PyObject_GenericGetAttr(regs[g->src], g->name) : PyObject_GetAttr(regs[g->src], g->name);
            if (owned[g->dst]) Py_DECREF(regs[g->dst]);
            regs[g->dst] = v;
            owned[g->dst] = v != NULL;
            ok = v != NULL;
            break;
        case PTGO_G_DICT_ITEM:
            ok = PyDict_Check(regs[g->src]) && (g->i < 0 || regs[g->i] != NULL);
            if (ok) {
                v = PyDict_GetItemWithError(regs[g->src], g->i < 0 ? g->name : regs[g->i]);
                if (owned[g->dst]) Py_DECREF(regs[g->dst]);
                /* Borrowed from a dict that a register or the frame keeps alive. */
                regs[g->dst] = v;
                owned[g->dst] = 0;
                ok = v != NULL;
            }
            break;
        case PTGO_G_INDEX: {
            PyObject *s = regs[g->src];
            if (PyTuple_Check(s) && g->i < PyTuple_GET_SIZE(s)) v = PyTuple_GET_ITEM(s, g->i);
            else if (PyList_Check(s) && g->i < PyList_GET_SIZE(s)) v = PyList_GET_ITEM(s, g->i);
            else if (builtin_sequence(s) && g->i < PySequence_Size(s)) {
                v = PySequence_GetItem(s, g->i); /* a new reference: owned below */
                if (v) Py_DECREF(v);            /* s keeps the item alive until the INCREF */
            }
            if (owned[g->dst]) Py_DECREF(regs[g->dst]);
            if (v) Py_INCREF(v); /* a list may shrink while later guards run Python code */
            regs[g->dst] = v;
            owned[g->dst] = v != NULL;
            ok = v != NULL;
            break;
        }
        case PTGO_G_TYPE:
            ok = (PyObject *)Py_TYPE(regs[g->src]) == g->obj;
            break;
        case PTGO_G_ID:
            ok = regs[g->src] == g->obj;
            break;
        case PTGO_G_NOT_ID:
            ok = regs[g->src] != g->obj;
            break;
        case PTGO_G_SAME:
            ok = regs[g->src] == regs[g->i];
            break;
        case PTGO_G_NOT_SAME:
            for (int a = 0; ok && a < g->nvec; a++)
                for (int b = a + 1; ok && b < g->nvec; b++)
                    ok = regs[g->vec[a]] != regs[g->vec[b]];
            break;
        case PTGO_G_TENSOR_VERSION: {
            PyObject *t = regs[g->src];
            if (!tensor_type || !PyObject_TypeCheck(t, (PyTypeObject *)tensor_type)) {
                ok = 0;
            } else if (fast) {
                ok = fast->tensor_version(t) == g->i;
            } else {
                PyObject *v = PyObject_GetAttrString(t, "_version");
                ok = v != NULL && PyLong_AsLongLong(v) == g->i;
                Py_XDECREF(v);
            }
            /* vec[0]: the data pointer (`p.data = t` swaps the storage and keeps the version). */
            if (ok && g->nvec == 1) {
                if (fast) {
                    int has = 0;
                    ok = fast->tensor_data_ptr(t, &has) == g->vec[0] && has;
                } else {
                    PyObject *v = PyObject_CallMethod(t, "data_ptr", NULL);
                    ok = v != NULL && PyLong_AsLongLong(v) == g->vec[0];
                    Py_XDECREF(v);
                }
            }
            break;
        }
        case PTGO_G_CALL:
            v = PyObject_CallNoArgs(g->obj);
            if (owned[g->dst]) Py_DECREF(regs[g->dst]);
            regs[g->dst] = v;
            owned[g->dst] = v != NULL;
            ok = v != NULL;
            break;
        case PTGO_G_NOT_IN_DICT: {
            PyObject **dp = _PyObject_GetDictPtr(regs[g->src]);
            ok = dp == NULL || *dp == NULL || PyDict_GetItemWithError(*dp, g->name) == NULL;
            break;
        }
        case PTGO_G_CONST:
            if (owned[g->dst]) Py_DECREF(regs[g->dst]);
            regs[g->dst] = g->obj;
            owned[g->dst] = 0;
            break;
        case PTGO_G_EQ:
            ok = Py_TYPE(regs[g->src]) == Py_TYPE(g->obj) && same_value(regs[g->src], g->obj);
            break;
        case PTGO_G_LEN: {
            PyObject *s = regs[g->src];
            Py_ssize_t n = PyTuple_Check(s) ? PyTuple_GET_SIZE(s)
                           : PyList_Check(s) ? PyList_GET_SIZE(s)
                           : PyDict_Check(s) ? PyDict_GET_SIZE(s)
                           : builtin_sequence(s) ? PySequence_Size(s)
                                                 : -1;
            ok = n == g->i;
            break;
        }
        case PTGO_G_TENSOR:
            ok = check_tensor(regs[g->src], g);
            break;
        case PTGO_G_SYM:
            ok = check_sym(regs, g);
            break;
        case PTGO_G_FLOAT:
            ok = check_float(regs, g);
            break;
        case PTGO_G_DICT_KEYS: {
            PyObject *d = regs[g->src];
            ok = PyDict_Check(d) && PyDict_GET_SIZE(d) == PyTuple_GET_SIZE(g->obj);
            Py_ssize_t pos = 0, k = 0;
            PyObject *key, *val;
            int skip = 0;
            while (ok && PyDict_Next(d, &pos, &key, &val)) {
                if (skip < g->nvec && g->vec[skip] == k) {
                    skip++, k++;
                    continue;
                }
                PyObject *want = PyTuple_GET_ITEM(g->obj, k++);
                ok = key == want || PyObject_RichCompareBool(key, want, Py_EQ) == 1;
            }
            if (ok && g->i == 1) {
                /* An OrderedDict: iteration (its own order) must visit the storage's keys in
                 * the storage's order, so both orders are the one checked above. */
                PyObject *lst = PySequence_List(d);
                ok = lst != NULL && PyList_GET_SIZE(lst) == PyDict_GET_SIZE(d);
                Py_ssize_t p2 = 0, j = 0;
                while (ok && PyDict_Next(d, &p2, &key, &val)) ok = PyList_GET_ITEM(lst, j++) == key;
                Py_XDECREF(lst);
            }
            break;
        }
        case PTGO_G_DICT_KEY: {
            PyObject *d = regs[g->src];
            v = NULL;
            if (PyDict_Check(d) && g->i < PyDict_GET_SIZE(d)) {
                Py_ssize_t pos = 0, k = 0;
                PyObject *key, *val;
                while (PyDict_Next(d, &pos, &key, &val)) {
                    if (k++ == g->i) {
                        v = key;
                        break;
                    }
                }
            }
            if (owned[g->dst]) Py_DECREF(regs[g->dst]);
            if (v) Py_INCREF(v); /* later guards may run Python code that changes the dict */
            regs[g->dst] = v;
            owned[g->dst] = v != NULL;
            ok = v != NULL;
            break;
        }
        case PTGO_G_CALL_BOOL: {
            if (fast && g->obj == is_grad_enabled) {
                ok = fast->grad_enabled() == (g->i != 0);
                break;
            }
            PyObject *r = PyObject_CallNoArgs(g->obj);
            ok = r != NULL && PyObject_IsTrue(r) == (g->i != 0);
            Py_XDECREF(r);
            break;
        }
        default:
            ok = 0;
        }
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ok = 0;
        }
    }
    if (!ok) *failed = e->guards[i - 1].desc;
    for (int r = 0; r < e->nregs; r++)
        if (owned[r]) Py_XDECREF(regs[r]);
    if (regs != regs_small) {
        PyMem_Free(regs);
        PyMem_Free(owned);
    }
    return ok;
}
#endif

#if PTGO_SUPPORTED
/* Records the call site of a new entry from the frame it was compiled for (entry_t.nkeys). */
static void set_entry_keys(entry_t *e, _PyInterpreterFrame *frame) {
    int nargs = frame->f_code->co_argcount + frame->f_code->co_kwonlyargcount;
    e->key_slots = PyMem_Calloc(e->nguards ? e->nguards : 1, sizeof(int));
    e->key_refs = PyMem_Calloc(e->nguards ? e->nguards : 1, sizeof(PyObject *));
    if (e->key_slots == NULL || e->key_refs == NULL) return;
    for (int i = 0; i < e->nguards; i++) {
        const guard_t *load = &e->guards[i];
        if (load->op != PTGO_G_ARG || load->i >= nargs) continue;
        PyObject *o = frame->localsplus[load->i];
        if (o == NULL) continue;
        int key = 0;
        for (int j = i + 1; j < e->nguards && !key; j++) {
            const guard_t *g = &e->guards[j];
            if (g->src != load->dst) continue;
            key = g->op == PTGO_G_ID ||
                  (g->op == PTGO_G_TYPE && nn_module_type && PyObject_TypeCheck(o, (PyTypeObject *)nn_module_type));
        }
        if (!key) continue;
        PyObject *ref = PyType_SUPPORTS_WEAKREFS(Py_TYPE(o)) ? PyWeakref_NewRef(o, NULL) : NULL;
        if (ref == NULL) {
            PyErr_Clear();
            continue;
        }
        e->key_slots[e->nkeys] = (int)load->i;
        e->key_refs[e->nkeys] = ref;
        e->nkeys++;
    }
}

/* Whether entry e was compiled for the objects frame holds in its key slots. */
static int same_call_site(const entry_t *e, _PyInterpreterFrame *frame) {
    for (int i = 0; i < e->nkeys; i++)
        if (PyWeakref_GET_OBJECT(e->key_refs[i]) != frame->localsplus[e->key_slots[i]]) return 0;
    return 1;
}
#endif

static entry_t *make_entry(const ptgo_result *r, long tag) {
    entry_t *e = PyMem_Calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    e->tag = tag;
    e->status = r->status;
    e->nregs = r->nregs;
    e->nguards = r->nguards;
    e->guards = PyMem_Calloc(r->nguards ? r->nguards : 1, sizeof(guard_t));
    if (e->guards == NULL) {
        PyMem_Free(e);
        return NULL;
    }
    for (int i = 0; i < r->nguards; i++) {
        const ptgo_guard *s = &r->guards[i];
        guard_t *g = &e->guards[i];
        g->op = s->op;
        g->dst = s->dst;
        g->src = s->src;
        g->i = s->i;
        g->nvec = s->nvec;
        if (s->obj) {
            g->obj = (PyObject *)s->obj;
            if (s->op == PTGO_G_ID && PyType_SUPPORTS_WEAKREFS(Py_TYPE(g->obj))) {
                if (e->on_death == NULL) {
                    PyObject *cap = PyCapsule_New(e, "ptgo.entry", NULL);
                    if (cap) {
                        e->on_death = PyCFunction_New(&entry_died_def, cap);
                        Py_DECREF(cap);
                    }
                }
                g->weak = e->on_death ? PyWeakref_NewRef(g->obj, e->on_death) : NULL;
                if (g->weak == NULL) {
                    PyErr_Clear();
                    Py_INCREF(g->obj); /* fall back to a strong reference */
                }
            } else {
                Py_INCREF(g->obj);
            }
        }
        if (s->name) {
            g->name = PyUnicode_InternFromString(s->name);
            if (g->name == NULL) PyErr_Clear();
        }
        if (s->nvec > 0) {
            g->vec = PyMem_Malloc(sizeof(int64_t) * s->nvec);
            if (g->vec) memcpy(g->vec, s->vec, sizeof(int64_t) * s->nvec);
        }
        g->desc = dupstr(s->desc ? s->desc : "?");
    }
    if (r->status == PTGO_OK && r->code) {
        e->code = (PyObject *)r->code; /* borrowed from the arena: take a reference */
        Py_INCREF(e->code);
    }
    return e;
}

/* ------------------------------------------------------------------------------------------ */
/* Thread-local state and the frame hook.                                                      */

static _Thread_local PyObject *tl_ctx;  /* current compile context (strong), NULL = off */
static _Thread_local long tl_tag;       /* ctx cache tag */
static _Thread_local int tl_busy;       /* compiling or in ptgo internals: don't capture */
static int active_contexts;             /* threads with a context set; the hook is installed when > 0 */
static void raise_compile_failure(int status, const char *message) {
    PyObject *exc_type = status == PTGO_UNSUPPORTED ? unsupported_exc : backend_failed_exc;
    PyObject *cause_t = last_exc_type, *cause_v = last_exc_value, *cause_tb = last_exc_tb;
    last_exc_type = last_exc_value = last_exc_tb = NULL;
    /* The kept exception is the cause only when the message reports it: the last Python error
       of a compile may be an expected one (a missing optional attribute) that has nothing to do
       with a failure Go found itself (a decomposition refusing a dtype). */
    int reported = 0;
    if (cause_v && message && last_err[0]) {
        char head[160];
        snprintf(head, sizeof head, "%s", last_err);
        reported = strstr(message, head) != NULL;
    }
    PyErr_SetString(exc_type, message ? message : "ptgo: compile failed");
    if (status == PTGO_ERROR && cause_v && reported) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        PyErr_NormalizeException(&t, &v, &tb);
        if (cause_tb) PyException_SetTraceback(cause_v, cause_tb);
        PyException_SetCause(v, cause_v); /* steals cause_v */
        cause_v = NULL;
        PyErr_Restore(t, v, tb);
    }
    Py_XDECREF(cause_t);
    Py_XDECREF(cause_v);
    Py_XDECREF(cause_tb);
}

static PyObject *cache_size_limit_obj;  /* read through ptgo._runtime.cache_size_limit() on a miss */

#if PTGO_SUPPORTED
static PyObject *eval_frame(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag);

/* Installs or removes ptgo's frame hook. Another PEP 523 user's evaluator found installed
 * (torch.compile's, while ptgo-compiled code runs inside a torch.compile'd function) is put back
 * when ptgo's is removed; one installed over ptgo's is left alone. */
static _PyFrameEvalFunction prev_eval;
static void set_hook(int on) {
    PyInterpreterState *interp = PyThreadState_GET()->interp;
    _PyFrameEvalFunction cur = _PyInterpreterState_GetEvalFrameFunc(interp);
    if (on) {
        if (cur != eval_frame) {
            prev_eval = cur == _PyEval_EvalFrameDefault ? NULL : cur;
            _PyInterpreterState_SetEvalFrameFunc(interp, eval_frame);
        }
    } else if (cur == eval_frame) {
        _PyInterpreterState_SetEvalFrameFunc(interp, prev_eval ? prev_eval : _PyEval_EvalFrameDefault);
        prev_eval = NULL;
    }
}

static int should_skip_code(PyCodeObject *co) {
    const char *fn = PyUnicode_AsUTF8(co->co_filename);
    if (fn == NULL) {
        PyErr_Clear();
        return 1;
    }
    int skipped;
    code_owner_of(fn, &skipped);
    return skipped;
}

/* Runs a frame of torch.compile's entry points (POLICY_UNCAPTURED) with capture off on this
 * thread and ptgo's hook out of the way, so torch.compile's own evaluator (which it installs
 * and removes around its call) owns the frames it makes; afterwards capture and the hook are
 * back for the rest of the caller's frame. */
static PyObject *run_uncaptured(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    PyObject *saved = tl_ctx;
    tl_ctx = NULL;
    if (--active_contexts == 0) set_hook(0);
    PyObject *r = _PyEval_EvalFrameDefault(ts, frame, throwflag);
    active_contexts++;
    set_hook(1);
    tl_ctx = saved;
    return r;
}

/* ptgo._runtime.<name>(): ptgo.config.cache_size_limit and accumulated_cache_size_limit. */
static long config_limit(const char *name, long def) {
    PyObject *r = PyObject_CallMethod(runtime_module, name, NULL);
    if (r == NULL) {
        PyErr_Clear();
        return def;
    }
    long v = PyLong_AsLong(r);
    Py_DECREF(r);
    if (v < 0) {
        PyErr_Clear();
        v = def;
    }
    return v;
}

static void warn_limit(cache_t *c, PyCodeObject *co, int accumulated) {
    if (c->limit_warned) return;
    c->limit_warned = 1;
    PyObject *r = PyObject_CallMethod(runtime_module, "warn_cache_limit", "OOsi", (PyObject *)co, tl_ctx,
                                      c->last_failure ? c->last_failure : "unknown", accumulated);
    if (r == NULL) PyErr_WriteUnraisable(runtime_module);
    Py_XDECREF(r);
}

/* Whether globals is the dict of the module sys.modules names by its __name__. */
static int globals_of_module(PyObject *globals) {
    PyObject *name = PyDict_GetItemString(globals, "__name__"); /* borrowed */
    if (name == NULL || !PyUnicode_Check(name)) return 0;
    PyObject *mod = PyImport_GetModule(name); /* new reference or NULL */
    if (mod == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = PyModule_Check(mod) && PyModule_GetDict(mod) == globals;
    Py_DECREF(mod);
    return ok;
}

/* Calls the transformed code with the frame's argument slots (flattened signature). */
static PyObject *run_entry(entry_t *e, _PyInterpreterFrame *frame) {
    if (e->code == NULL) /* released by entry_died while the guards ran */
        return _PyEval_EvalFrameDefault(PyThreadState_GET(), frame, 0);
    PyCodeObject *co = frame->f_code;
    int nargs = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
                ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
    PyObject *fn = e->fn;
    if (fn == NULL || ((PyFunctionObject *)fn)->func_globals != frame->f_globals) {
        fn = PyFunction_New(e->code, frame->f_globals);
        if (fn == NULL) return NULL;
        PyObject *cl = frame->f_func->func_closure;
        if (cl && PyFunction_SetClosure(fn, cl) < 0) {
            Py_DECREF(fn);
            return NULL;
        }
        if (cl == NULL && e->fn == NULL && !e->fn_uncached) {
            /* No closure: the function depends on globals only; keep it for later calls, when
             * they are a module's dict. Any other dict (exec's, a notebook cell's) may be all
             * that holds the user's function: code -> co_extra -> entry -> fn -> globals ->
             * function -> code is a cycle the garbage collector cannot see through co_extra,
             * which would keep the function, its compiled graphs and their kernel libraries
             * alive for ever (issue 8: compile and drop 1000 functions). */
            if (globals_of_module(frame->f_globals)) {
                e->fn = fn;
                Py_INCREF(fn);
            } else {
                e->fn_uncached = 1;
            }
        }
    } else {
        Py_INCREF(fn);
    }
    PyObject *r = PyObject_Vectorcall(fn, frame->localsplus, (size_t)nargs, NULL);
    Py_DECREF(fn);
    return r;
}

static PyObject *eval_frame(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    PyObject *ctx = tl_ctx;
    PyCodeObject *co = frame->f_code;
    if (ctx == NULL || tl_busy || throwflag || frame->owner != FRAME_OWNED_BY_THREAD ||
        frame->prev_instr != _PyCode_CODE(co) - 1 ||
        (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)) ||
        !(co->co_flags & CO_OPTIMIZED) || frame->f_func == NULL)
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);

    void *extra = NULL;
    if (_PyCode_GetExtra((PyObject *)co, extra_index, &extra) < 0) {
        PyErr_Clear();
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    if (extra == SKIP_FILE) return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    if (extra == UNCAPTURED) return run_uncaptured(ts, frame, throwflag);
    cache_t *c = (cache_t *)extra;
    if (c == NULL) {
        int policy_kind = should_skip_code(co);
        if (policy_kind == POLICY_UNCAPTURED) {
            _PyCode_SetExtra((PyObject *)co, extra_index, UNCAPTURED);
            return run_uncaptured(ts, frame, throwflag);
        }
        if (policy_kind) {
            _PyCode_SetExtra((PyObject *)co, extra_index, SKIP_FILE);
            return _PyEval_EvalFrameDefault(ts, frame, throwflag);
        }
        c = PyMem_Calloc(1, sizeof *c);
        if (c == NULL) return _PyEval_EvalFrameDefault(ts, frame, throwflag);
        c->code = (PyObject *)co;
        if (_PyCode_SetExtra((PyObject *)co, extra_index, c) < 0) {
            PyErr_Clear();
            PyMem_Free(c);
            return _PyEval_EvalFrameDefault(ts, frame, throwflag);
        }
        c->next_all = all_caches;
        if (all_caches) all_caches->prev_all = c;
        all_caches = c;
    }

    /* Lookup: most recently used first. Guards run with capture off (they may call Python). */
    long tag = tl_tag;
    const char *failed = NULL;
    int ntag = 0, nsite = 0;
    entry_t *prev = NULL;
    tl_busy = 1;
    purge_dead(c);
    for (entry_t *e = c->head; e; prev = e, e = e->next) {
        if (e->tag != tag || e->dead) continue;
        ntag++;
        int site = same_call_site(e, frame);
        nsite += site;
        const char *why = NULL;
        if (run_guards(e, frame, &why)) {
            tl_busy = 0;
            e->hits++;
            if (prev) { /* move to front */
                prev->next = e->next;
                e->next = c->head;
                c->head = e;
            }
            if (e->status == PTGO_EAGER) return _PyEval_EvalFrameDefault(ts, frame, throwflag);
            return run_entry(e, frame);
        }
        if (failed == NULL) failed = why;
        /* A failed version guard never passes again (version counters only grow): the entry
         * served constants folded from a tensor since written; drop it so that a recompile
         * replaces it instead of counting against cache_size_limit (a train/eval loop
         * recompiles its frozen eval graph once per evaluation). */
        if (why && failed_on_version(e, why)) {
            e->dead = 1;
            ntag--;
            nsite -= site;
        }
    }
    if (failed) set_failure(c, failed);
    if (c->skip || compiling) {
        tl_busy = 0;
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    int accumulated = ntag >= config_limit("accumulated_cache_size_limit", 256);
    if (accumulated || nsite >= config_limit("cache_size_limit", 8)) {
        warn_limit(c, co, accumulated);
        tl_busy = 0;
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }

    /* Miss: compile in Go. Never in a process forked after Go started (DESIGN D8): the Go
     * runtime's threads did not survive the fork, so the frame runs eagerly instead. */
    if (forked_child && go_state == 1) {
        static int warned;
        tl_busy = 0;
        if (!warned) {
            warned = 1;
            if (PyErr_WarnEx(PyExc_RuntimeWarning,
                             "ptgo: this process was forked after ptgo started compiling; new frames run eagerly "
                             "here (compiled code cached before the fork still runs). Use the 'spawn' start method "
                             "to compile in child processes.", 1) < 0)
                return NULL;
        }
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    if (load_go() < 0) {
        tl_busy = 0;
        PyErr_SetString(backend_failed_exc, go_error);
        return NULL;
    }
    compiling = 1;
    PyObject *saved_arena = arena;
    arena = PyList_New(0);
    ptgo_result res;
    memset(&res, 0, sizeof res);
    int nargs = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
                ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
    Py_CLEAR(interrupt_type);
    Py_CLEAR(interrupt_value);
    Py_CLEAR(interrupt_tb);
    PyThreadState_EnterTracing(ts);
    go_compile(ctx, (ptgo_obj)frame->f_func, (ptgo_obj)co, (const ptgo_obj *)frame->localsplus, nargs,
               failed ? c->last_failure : NULL, &res);
    PyThreadState_LeaveTracing(ts);
    compiling = 0;
    tl_busy = 0;
    if (PyErr_Occurred()) PyErr_Clear(); /* Go reports failures through res */
    if (interrupt_type != NULL) {
        /* Ctrl-C (or SystemExit) reached a callback: whatever Go decided then is not to be kept */
        Py_CLEAR(arena);
        arena = saved_arena;
        res.code = NULL;
        go_free_result(&res);
        PyErr_Restore(interrupt_type, interrupt_value, interrupt_tb);
        interrupt_type = interrupt_value = interrupt_tb = NULL;
        return NULL;
    }

    PyObject *result = NULL;
    int status = res.status;
    if (status == PTGO_OK || status == PTGO_EAGER) {
        entry_t *e = make_entry(&res, tag);
        if (e) set_entry_keys(e, frame);
        Py_CLEAR(arena); /* the entry holds its own references now */
        arena = saved_arena;
        if (e == NULL) {
            go_free_result(&res);
            PyErr_NoMemory();
            return NULL;
        }
        if (e->code) { /* transformed code is never captured itself */
            _PyCode_SetExtra(e->code, extra_index, SKIP_FILE);
        }
        e->next = c->head;
        c->head = e;
        c->nentries++;
        go_free_result(&res);
        if (e->status == PTGO_EAGER) return _PyEval_EvalFrameDefault(ts, frame, throwflag);
        return run_entry(e, frame);
    }
    Py_CLEAR(arena);
    arena = saved_arena;
    if (status == PTGO_SKIP_CODE) {
        c->skip = 1;
        go_free_result(&res);
        return _PyEval_EvalFrameDefault(ts, frame, throwflag);
    }
    res.code = NULL;
    raise_compile_failure(status, res.message);
    go_free_result(&res);
    (void)result;
    return NULL;
}
#endif /* PTGO_SUPPORTED */

/* ------------------------------------------------------------------------------------------ */
/* Disabled: a callable wrapper that runs its target with capture off on this thread. Compiled  */
/* graphs run under it, so the backend's own Python (a GraphModule's forward, a user backend's */
/* wrapper) is never captured again.                                                           */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    vectorcallfunc vectorcall;
} DisabledObject;

static PyObject *disabled_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    DisabledObject *d = (DisabledObject *)self;
    PyObject *saved = tl_ctx;
    tl_ctx = NULL; /* the hook stays installed and passes frames through */
    PyObject *r = PyObject_Vectorcall(d->fn, args, nargsf, kwnames);
    tl_ctx = saved;
    return r;
}

static void disabled_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    Py_CLEAR(((DisabledObject *)self)->fn);
    PyObject_GC_Del(self);
}

static int disabled_traverse(PyObject *self, visitproc visit, void *arg) {
    Py_VISIT(((DisabledObject *)self)->fn);
    return 0;
}

static int disabled_clear(PyObject *self) {
    Py_CLEAR(((DisabledObject *)self)->fn);
    return 0;
}

static PyObject *disabled_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fn;
    if (!PyArg_ParseTuple(args, "O:Disabled", &fn)) return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "Disabled expects a callable, got %R", fn);
        return NULL;
    }
    DisabledObject *d = PyObject_GC_New(DisabledObject, type);
    if (d == NULL) return NULL;
    Py_INCREF(fn);
    d->fn = fn;
    d->vectorcall = disabled_vectorcall;
    PyObject_GC_Track(d);
    return (PyObject *)d;
}

static PyObject *disabled_repr(PyObject *self) {
    return PyUnicode_FromFormat("<ptgo compiled graph %R>", ((DisabledObject *)self)->fn);
}

static PyMemberDef disabled_members[] = {
    {"fn", T_OBJECT, offsetof(DisabledObject, fn), READONLY, "the wrapped callable"},
    {NULL},
};

static PyTypeObject DisabledType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptgo._C.Disabled",
    .tp_basicsize = sizeof(DisabledObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(DisabledObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = disabled_new,
    .tp_dealloc = disabled_dealloc,
    .tp_traverse = disabled_traverse,
    .tp_clear = disabled_clear,
    .tp_repr = disabled_repr,
    .tp_members = disabled_members,
    .tp_doc = "Disabled(fn): calls fn with ptgo's frame capture off on this thread.",
};

/* ------------------------------------------------------------------------------------------ */
/* Python-visible functions.                                                                   */

PyDoc_STRVAR(set_context_doc,
             "set_context(ctx, tag) -> (old_ctx, old_tag)\n\n"
             "Sets this thread's compile context (None turns capture off) and returns the previous one.");

/* Makes ctx (NULL: none) this thread's context; returns the previous one as a new reference
 * in *old. The hook is installed while any thread has a context. */
static void switch_context(PyObject *ctx, long tag, PyObject **old, long *old_tag) {
    *old = tl_ctx;
    *old_tag = tl_tag;
#if PTGO_SUPPORTED
    if (ctx && !*old) {
        if (active_contexts++ == 0) set_hook(1);
    } else if (!ctx && *old) {
        if (--active_contexts == 0) set_hook(0);
    }
#endif
    Py_XINCREF(ctx);
    tl_ctx = ctx;
    tl_tag = tag;
}

/* Restores a context switch_context returned (consumes the reference). */
static void restore_context(PyObject *old, long old_tag) {
    PyObject *cur;
    long cur_tag;
    switch_context(old, old_tag, &cur, &cur_tag);
    Py_XDECREF(cur);
    Py_XDECREF(old);
}

static PyObject *py_set_context(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_context(ctx, tag) takes 2 arguments");
        return NULL;
    }
    PyObject *ctx = args[0] == Py_None ? NULL : args[0];
    long tag = PyLong_AsLong(args[1]);
    if (tag == -1 && PyErr_Occurred()) return NULL;
    PyObject *old;
    long old_tag;
    switch_context(ctx, tag, &old, &old_tag);
    PyObject *r = Py_BuildValue("(Ol)", old ? old : Py_None, old_tag);
    Py_XDECREF(old);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Compiled: what ptgo.compile returns for a function: calls it under a compile context.       */

typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *ctx;
    long tag;
    vectorcallfunc vectorcall;
    PyObject *dict;
} CompiledObject;

static PyObject *compiled_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    CompiledObject *c = (CompiledObject *)self;
    PyObject *old;
    long old_tag;
    switch_context(c->ctx, c->tag, &old, &old_tag);
    PyObject *r = PyObject_Vectorcall(c->fn, args, nargsf, kwnames);
    restore_context(old, old_tag);
    return r;
}

static PyObject *compiled_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fn, *ctx;
    long tag;
    if (!PyArg_ParseTuple(args, "OOl:Compiled", &fn, &ctx, &tag)) return NULL;
    CompiledObject *c = PyObject_GC_New(CompiledObject, type);
    if (c == NULL) return NULL;
    Py_INCREF(fn);
    Py_INCREF(ctx);
    c->fn = fn;
    c->ctx = ctx;
    c->tag = tag;
    c->dict = NULL;
    c->vectorcall = compiled_vectorcall;
    PyObject_GC_Track(c);
    return (PyObject *)c;
}

static int compiled_traverse(PyObject *self, visitproc visit, void *arg) {
    CompiledObject *c = (CompiledObject *)self;
    Py_VISIT(c->fn);
    Py_VISIT(c->ctx);
    Py_VISIT(c->dict);
    return 0;
}

static int compiled_clear(PyObject *self) {
    CompiledObject *c = (CompiledObject *)self;
    Py_CLEAR(c->fn);
    Py_CLEAR(c->ctx);
    Py_CLEAR(c->dict);
    return 0;
}

static void compiled_dealloc(PyObject *self) {
    PyObject_GC_UnTrack(self);
    compiled_clear(self);
    PyObject_GC_Del(self);
}

/* Functions are descriptors: a compiled function stored on a class binds like a method. */
static PyObject *compiled_descr_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *compiled_repr(PyObject *self) {
    return PyUnicode_FromFormat("<ptgo compiled %R>", ((CompiledObject *)self)->fn);
}

static PyMemberDef compiled_members[] = {
    {"_ptgo_orig", T_OBJECT, offsetof(CompiledObject, fn), READONLY, "the original callable"},
    {"_ptgo_context", T_OBJECT, offsetof(CompiledObject, ctx), READONLY, "the compile context"},
    {NULL},
};

static PyTypeObject CompiledType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ptgo._C.Compiled",
    .tp_basicsize = sizeof(CompiledObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_vectorcall_offset = offsetof(CompiledObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = compiled_new,
    .tp_dealloc = compiled_dealloc,
    .tp_traverse = compiled_traverse,
    .tp_clear = compiled_clear,
    .tp_descr_get = compiled_descr_get,
    .tp_repr = compiled_repr,
    .tp_members = compiled_members,
    .tp_dictoffset = offsetof(CompiledObject, dict),
    .tp_getset = NULL,
    .tp_doc = "Compiled(fn, ctx, tag): calls fn with ptgo's compile context ctx on this thread.",
};

static PyObject *py_reset(PyObject *self, PyObject *unused) {
    for (cache_t *c = all_caches; c; c = c->next_all) clear_cache(c);
    Py_RETURN_NONE;
}

/* cache_info(code) -> list of (tag, status, hits, guard descriptions) for tests and explain(). */
static PyObject *py_cache_info(PyObject *self, PyObject *code) {
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "cache_info expects a code object");
        return NULL;
    }
    void *extra = NULL;
    if (extra_index < 0 || _PyCode_GetExtra(code, extra_index, &extra) < 0) return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL || extra == NULL || extra == SKIP_FILE || extra == UNCAPTURED) return out;
    cache_t *c = extra;
    for (entry_t *e = c->head; e; e = e->next) {
        PyObject *descs = PyList_New(e->nguards);
        if (descs == NULL) goto fail;
        for (int i = 0; i < e->nguards; i++) PyList_SET_ITEM(descs, i, PyUnicode_FromString(e->guards[i].desc));
        PyObject *item = Py_BuildValue("(lslN)", e->tag, e->status == PTGO_OK ? "compiled" : "eager", e->hits, descs);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    return out;
fail:
    Py_XDECREF(out);
    return NULL;
}

static PyObject *py_skip_state(PyObject *self, PyObject *code) {
    void *extra = NULL;
    if (!PyCode_Check(code) || extra_index < 0 || _PyCode_GetExtra(code, extra_index, &extra) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "skip_state expects a code object");
        return NULL;
    }
    if (extra == SKIP_FILE) return PyUnicode_FromString("skipped");
    if (extra == UNCAPTURED) return PyUnicode_FromString("uncaptured");
    if (extra == NULL) return PyUnicode_FromString("unseen");
    return PyUnicode_FromString(((cache_t *)extra)->skip ? "skip-compile" : "cached");
}

static PyObject *py_request(PyObject *self, PyObject *args) {
    const char *method, *json;
    if (!PyArg_ParseTuple(args, "ss", &method, &json)) return NULL;
    if (load_go() < 0) {
        PyErr_SetString(PyExc_RuntimeError, go_error);
        return NULL;
    }
    PyObject *saved_arena = arena;
    arena = PyList_New(0);
    int busy = tl_busy;
    tl_busy = 1;
    char *out = go_request(method, json);
    tl_busy = busy;
    Py_CLEAR(arena);
    arena = saved_arena;
    if (out == NULL) Py_RETURN_NONE;
    PyObject *r = PyUnicode_FromString(out);
    go_free(out);
    return r;
}

/* compile_fx(graph_json, attrs, opts_json, rerun) -> (True, callable) | (False, reason): a torch.fx
 * graph through ptgo's pipeline (ptgo.fx_import.compile_fx). Compiles nest inside a compile of
 * this thread (a custom backend of ptgo.compile calling the entry point); while another thread
 * compiles, the graph runs with torch. */
static PyObject *py_compile_fx(PyObject *self, PyObject *args) {
    const char *js, *opts;
    PyObject *attrs, *rerun;
    if (!PyArg_ParseTuple(args, "sO!sO", &js, &PyDict_Type, &attrs, &opts, &rerun)) return NULL;
    if (forked_child && go_state == 1)
        return Py_BuildValue("(Os)", Py_False, "this process was forked after ptgo started compiling (DESIGN D8)");
    if (load_go() < 0) {
        PyErr_SetString(backend_failed_exc ? backend_failed_exc : PyExc_RuntimeError, go_error);
        return NULL;
    }
    if (go_compile_fx == NULL) {
        PyErr_Format(backend_failed_exc, "%s lacks ptgo_go_compile_fx; rebuild ptgo (make setup)", lib_path);
        return NULL;
    }
    if (compiling && !tl_busy) return Py_BuildValue("(Os)", Py_False, "another thread is compiling");
    int saved_compiling = compiling, busy = tl_busy;
    compiling = 1;
    tl_busy = 1;
    PyObject *saved_arena = arena;
    arena = PyList_New(0);
    ptgo_obj out = NULL;
    char *msg = NULL;
    /* a compile this one nests in has had no interrupt (no Python runs after one) */
    PyObject *outer_it = interrupt_type, *outer_iv = interrupt_value, *outer_itb = interrupt_tb;
    interrupt_type = interrupt_value = interrupt_tb = NULL;
    int32_t status = go_compile_fx(js, (ptgo_obj)attrs, opts, (ptgo_obj)rerun, &out, &msg);
    compiling = saved_compiling;
    tl_busy = busy;
    if (PyErr_Occurred()) PyErr_Clear(); /* Go reports failures through status */
    PyObject *it = interrupt_type, *iv = interrupt_value, *itb = interrupt_tb;
    interrupt_type = outer_it;
    interrupt_value = outer_iv;
    interrupt_tb = outer_itb;
    if (it != NULL) {
        /* Ctrl-C (or SystemExit) reached a callback: raised as itself, the compile dropped */
        if (msg) go_free(msg);
        Py_CLEAR(arena);
        arena = saved_arena;
        PyErr_Restore(it, iv, itb);
        return NULL;
    }
    PyObject *result = NULL;
    if (status == PTGO_OK && out != NULL) {
        result = Py_BuildValue("(OO)", Py_True, (PyObject *)out);
    } else if (status == PTGO_EAGER) {
        result = Py_BuildValue("(Os)", Py_False, msg ? msg : "");
    } else {
        raise_compile_failure(PTGO_ERROR, msg ? msg : "ptgo: compiling the torch.fx graph failed");
    }
    if (msg) go_free(msg);
    Py_CLEAR(arena);
    arena = saved_arena;
    return result;
}

static PyObject *py_init(PyObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"runtime", "lib_path", "tensor_type", "param_type", "module_type", "dtype_type",
                             "device_type", "dtypes", "is_grad_enabled", "strided", "unsupported",
                             "backend_failed", "skip_rules", NULL};
    PyObject *rt, *tt, *pt, *mt, *dt, *vt, *dts, *ige, *strided, *unsup, *bfail, *rules;
    const char *path;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OsOOOOOO!OOOOO!", kwlist, &rt, &path, &tt, &pt, &mt, &dt, &vt,
                                     &PyTuple_Type, &dts, &ige, &strided, &unsup, &bfail, &PyTuple_Type, &rules))
        return NULL;
    if (PyTuple_GET_SIZE(dts) != 12) {
        PyErr_SetString(PyExc_ValueError, "ptgo._C.init: dtypes must list the 12 dtypes in primtorch order");
        return NULL;
    }
#define SET(var, val) do { Py_XDECREF(var); Py_INCREF(val); var = val; } while (0)
    SET(runtime_module, rt);
    SET(tensor_type, tt);
    SET(param_type, pt);
    SET(nn_module_type, mt);
    SET(dtype_type, dt);
    SET(device_type, vt);
    SET(dtype_list, dts);
    SET(is_grad_enabled, ige);
    SET(strided_layout, strided);
    SET(unsupported_exc, unsup);
    SET(backend_failed_exc, bfail);
#undef SET
    if (set_policy(rules) < 0) return NULL;
    snprintf(lib_path, sizeof lib_path, "%s", path);
    Py_RETURN_NONE;
}

static PyObject *py_go_loaded(PyObject *self, PyObject *unused) { return PyBool_FromLong(go_state == 1); }

/* set_fast(capsule_or_None): use ptgo._fast's C++ tensor checks, or stop using them. */
static PyObject *py_set_fast(PyObject *self, PyObject *cap) {
    if (cap == Py_None) {
        fast = NULL;
        Py_CLEAR(fast_capsule);
        Py_RETURN_NONE;
    }
    const ptgo_fast_api *f = PyCapsule_GetPointer(cap, "ptgo._fast.api");
    if (f == NULL) return NULL;
    if (f->version != PTGO_FAST_VERSION) {
        PyErr_Format(PyExc_RuntimeError, "ptgo._fast speaks version %d, the shim %d; rebuild ptgo", f->version,
                     PTGO_FAST_VERSION);
        return NULL;
    }
    Py_INCREF(cap);
    Py_XSETREF(fast_capsule, cap);
    fast = f;
    Py_RETURN_NONE;
}

/* tensor_meta(t, slow=False) -> (sizes, strides, offset, dtype code, device type, device index,
 * requires_grad, is_leaf): what Go sees of a tensor; slow=True forces the attribute path. */
static PyObject *py_tensor_meta(PyObject *self, PyObject *args) {
    PyObject *t;
    int slow = 0;
    if (!PyArg_ParseTuple(args, "O|p", &t, &slow)) return NULL;
    if (!tensor_type || !PyObject_TypeCheck(t, (PyTypeObject *)tensor_type)) {
        PyErr_SetString(PyExc_TypeError, "tensor_meta expects a tensor");
        return NULL;
    }
    ptgo_tensor_meta m;
    int rc = slow ? tensor_meta_slow(t, &m) : cb_tensor_meta(t, &m);
    if (rc != 0) {
        PyErr_SetString(PyExc_RuntimeError, last_err);
        return NULL;
    }
    PyObject *sizes = PyTuple_New(m.ndim), *strides = PyTuple_New(m.ndim);
    if (!sizes || !strides) return NULL;
    for (int i = 0; i < m.ndim; i++) {
        PyTuple_SET_ITEM(sizes, i, PyLong_FromLongLong(m.sizes[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(m.strides[i]));
    }
    return Py_BuildValue("(NNLiiiii)", sizes, strides, (long long)m.storage_offset, m.dtype, m.device_type,
                         m.device_index, m.requires_grad, m.is_leaf);
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)(void (*)(void))py_init, METH_VARARGS | METH_KEYWORDS, "Configure the shim (ptgo internal)."},
    {"set_context", (PyCFunction)(void (*)(void))py_set_context, METH_FASTCALL, set_context_doc},
    {"reset", py_reset, METH_NOARGS, "Drop every cache entry of every code object."},
    {"cache_info", py_cache_info, METH_O, "Cache entries of a code object: [(tag, status, hits, guards)]."},
    {"code_owner", py_code_owner, METH_O,
     "code_owner(filename) -> (library or None, skipped): what the skip policy says of a file."},
    {"code_policy", py_code_policy, METH_O,
     "code_policy(filename) -> (library or None, skipped, uncaptured): code_owner, and whether frames starting "
     "there run with capture off, callees included."},
    {"skip_state", py_skip_state, METH_O,
     "How the hook treats a code object: unseen, skipped, uncaptured, cached, skip-compile."},
    {"request", py_request, METH_VARARGS, "request(method, json) -> json: a non-per-frame call into Go."},
    {"compile_fx", py_compile_fx, METH_VARARGS,
     "compile_fx(graph_json, attrs, opts_json, rerun) -> (True, callable) | (False, reason): a torch.fx graph "
     "through ptgo's pipeline."},
    {"go_loaded", py_go_loaded, METH_NOARGS, "Whether the Go library has been started."},
    {"set_fast", py_set_fast, METH_O, "Use (capsule) or stop using (None) ptgo._fast's C++ tensor checks."},
    {"tensor_meta", py_tensor_meta, METH_VARARGS, "tensor_meta(t, slow=False): the tensor metadata Go sees."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "ptgo._C", "ptgo's CPython shim.", -1, methods};

#define INTERN(var, s) do { if (!(var = PyUnicode_InternFromString(s))) return NULL; } while (0)

PyMODINIT_FUNC PyInit__C(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    PyModule_AddIntConstant(m, "SUPPORTED", PTGO_SUPPORTED);
    if (PyType_Ready(&DisabledType) < 0) return NULL;
    Py_INCREF(&DisabledType);
    if (PyModule_AddObject(m, "Disabled", (PyObject *)&DisabledType) < 0) return NULL;
    if (PyType_Ready(&CompiledType) < 0) return NULL;
    Py_INCREF(&CompiledType);
    if (PyModule_AddObject(m, "Compiled", (PyObject *)&CompiledType) < 0) return NULL;
    PyModule_AddIntConstant(m, "ABI_VERSION", PTGO_ABI_VERSION);
#if PTGO_SUPPORTED
    extra_index = _PyEval_RequestCodeExtraIndex(free_cache);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_RuntimeError, "ptgo: no free co_extra slot");
        return NULL;
    }
#endif
    INTERN(str_dtype, "dtype");
    INTERN(str_requires_grad, "requires_grad");
    INTERN(str_size, "size");
    INTERN(str_stride, "stride");
    INTERN(str_is_cuda, "is_cuda");
    INTERN(str_get_device, "get_device");
    INTERN(str_storage_offset, "storage_offset");
    INTERN(str_is_leaf, "is_leaf");
    INTERN(str_layout, "layout");
    INTERN(str_is_nested, "is_nested");
    INTERN(str_device, "device");
    INTERN(str_type, "type");
    INTERN(str_index, "index");
    pthread_atfork(NULL, NULL, on_fork_child);
    (void)cache_size_limit_obj;
    return m;
}
