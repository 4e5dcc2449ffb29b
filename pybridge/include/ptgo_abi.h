/* ptgo_abi.h — the C ABI between the CPython shim (ptgo._C) and the Go library (libptgo.so).
 *
 * No Python headers here (DESIGN D1): one Go build serves every CPython version. Python objects
 * cross the boundary as opaque pointers (ptgo_obj). Every ptgo_obj the shim hands to Go during a
 * call into Go is kept alive by the shim until that call returns (a per-call arena), so Go never
 * owns references and never frees objects. Anything that must outlive the call (constants of
 * transformed code, guard objects) is handed back to the shim, which takes its own references.
 *
 * All callbacks run with the GIL held, on the thread that called into Go. Go must call them only
 * from that goroutine (never from goroutines it starts).
 */
#ifndef PTGO_ABI_H
#define PTGO_ABI_H

#include <stddef.h>
#include <stdint.h>

#define PTGO_ABI_VERSION 1

typedef void *ptgo_obj;

/* What kind of Python object a ptgo_obj is (ptgo_api.kind). Subclasses count as their base
 * (a bool is PTGO_K_BOOL, not PTGO_K_INT; an nn.Parameter is PTGO_K_TENSOR). */
enum ptgo_kind {
    PTGO_K_OTHER = 0,
    PTGO_K_NONE,
    PTGO_K_BOOL,
    PTGO_K_INT,
    PTGO_K_FLOAT,
    PTGO_K_COMPLEX,
    PTGO_K_STR,
    PTGO_K_BYTES,
    PTGO_K_TUPLE,
    PTGO_K_LIST,
    PTGO_K_DICT,
    PTGO_K_SET,
    PTGO_K_FROZENSET,
    PTGO_K_RANGE,
    PTGO_K_SLICE,
    PTGO_K_ELLIPSIS,
    PTGO_K_FUNCTION,         /* Python function */
    PTGO_K_METHOD,           /* bound method of a Python function */
    PTGO_K_BUILTIN,          /* builtin_function_or_method (C function, maybe bound) */
    PTGO_K_METHOD_DESCRIPTOR,/* method_descriptor, wrapper_descriptor, method-wrapper */
    PTGO_K_TYPE,
    PTGO_K_MODULE,           /* a Python module object */
    PTGO_K_CODE,
    PTGO_K_CELL,
    PTGO_K_TENSOR,           /* torch.Tensor or subclass */
    PTGO_K_NN_MODULE,        /* torch.nn.Module or subclass */
    PTGO_K_DTYPE,            /* torch.dtype */
    PTGO_K_DEVICE,           /* torch.device */
    PTGO_K_PROPERTY,
    PTGO_K_CLASSMETHOD,
    PTGO_K_STATICMETHOD,
    PTGO_K_NUM_KINDS
};

/* Tensor metadata read by ptgo_api.tensor_meta. */
#define PTGO_MAX_DIMS 16
typedef struct {
    int32_t ndim;
    int32_t dtype;         /* index into the dtype list given at init (torch.bool, torch.uint8, ...) */
    int32_t device_type;   /* 0 cpu, 1 cuda, 2 meta, 3 other */
    int32_t device_index;  /* -1 when none */
    int32_t requires_grad;
    int32_t is_leaf;
    int32_t is_parameter;  /* an nn.Parameter */
    int32_t is_plain;      /* exactly torch.Tensor or nn.Parameter (no other subclass) */
    int32_t strided;       /* layout is torch.strided */
    int32_t pad;
    int64_t storage_offset;
    int64_t sizes[PTGO_MAX_DIMS];
    int64_t strides[PTGO_MAX_DIMS];
} ptgo_tensor_meta;

/* Callbacks the shim gives Go. Functions returning ptgo_obj return NULL on a Python exception;
 * the exception is cleared and kept: last_error() describes it ("TypeError: ..."). */
typedef struct {
    int32_t abi_version;
    int32_t (*kind)(ptgo_obj o);
    ptgo_obj (*type_of)(ptgo_obj o);
    ptgo_obj (*getattr)(ptgo_obj o, const char *name);
    /* Attribute lookup without running descriptors: the instance __dict__, then the type's MRO
     * dicts (like inspect.getattr_static). Sets *where to 0 (instance dict) or 1 (found on a type;
     * *owner_type is that type). Returns NULL with *where = 0 when absent, *where = -1 on error. */
    ptgo_obj (*getattr_static)(ptgo_obj o, const char *name, int32_t *where, ptgo_obj *owner_type);
    /* Call fn(*args[0:nargs], **{kwnames[i]: args[nargs+i]}). */
    ptgo_obj (*call)(ptgo_obj fn, const ptgo_obj *args, int64_t nargs, const char *const *kwnames, int64_t nkw);
    int32_t (*to_int64)(ptgo_obj o, int64_t *out);   /* 0 ok; -1 error (overflow, not an int) */
    int32_t (*to_double)(ptgo_obj o, double *out);
    const char *(*to_utf8)(ptgo_obj o, int64_t *len); /* str → UTF-8, borrowed from the str */
    const char *(*bytes_data)(ptgo_obj o, int64_t *len);
    ptgo_obj (*from_int64)(int64_t v);
    ptgo_obj (*from_double)(double v);
    ptgo_obj (*from_utf8)(const char *s, int64_t len);
    ptgo_obj (*from_bytes)(const char *s, int64_t len);
    ptgo_obj (*from_bool)(int32_t v);
    ptgo_obj (*none)(void);
    ptgo_obj (*new_tuple)(const ptgo_obj *items, int64_t n);
    ptgo_obj (*new_list)(const ptgo_obj *items, int64_t n);
    ptgo_obj (*new_dict)(const ptgo_obj *keys, const ptgo_obj *vals, int64_t n);
    int64_t (*length)(ptgo_obj o);                     /* -1 on error */
    ptgo_obj (*getitem_int)(ptgo_obj o, int64_t i);
    ptgo_obj (*getitem)(ptgo_obj o, ptgo_obj key);
    /* Dict iteration (PyDict_Next): returns 0 at the end. */
    int32_t (*dict_next)(ptgo_obj d, int64_t *pos, ptgo_obj *key, ptgo_obj *val);
    ptgo_obj (*repr)(ptgo_obj o);
    int32_t (*is_instance)(ptgo_obj o, ptgo_obj cls);  /* 1, 0, -1 error */
    int32_t (*rich_eq)(ptgo_obj a, ptgo_obj b);        /* a == b: 1, 0, -1 error */
    int32_t (*tensor_meta)(ptgo_obj t, ptgo_tensor_meta *out); /* 0 ok, -1 error */
    const char *(*last_error)(void);                  /* borrowed; valid until the next callback */
    /* The `ptgo._runtime` module: Python helpers Go calls by name (fx export, backends, logging). */
    ptgo_obj (*runtime)(void);
    ptgo_obj (*builtins)(void);
} ptgo_api;

/* ---- Guards: a straight-line program the shim runs on every call, before using a cache entry.
 * Registers hold borrowed objects. Load ops fail the guard when the value is missing. */
enum ptgo_guard_op {
    PTGO_G_ARG = 1,      /* r[dst] = frame argument slot i */
    PTGO_G_GLOBAL,       /* r[dst] = globals[name], then builtins[name]; i=1: builtins only */
    PTGO_G_CLOSURE,      /* r[dst] = contents of closure cell i */
    PTGO_G_ATTR,         /* r[dst] = getattr(r[src], name); i=1: object.__getattribute__(r[src], name) */
    PTGO_G_DICT_ITEM,    /* r[dst] = r[src][name] where r[src] is a dict (its own storage; str key);
                          * i >= 0: the key is r[i] (a tensor key) */
    PTGO_G_INDEX,        /* r[dst] = r[src][i] for tuples and lists (their own storage) */
    PTGO_G_TYPE,         /* type(r[src]) is obj */
    PTGO_G_ID,           /* r[src] is obj */
    PTGO_G_EQ,           /* type(r[src]) is type(obj) and r[src] == obj (floats by their bits) */
    PTGO_G_LEN,          /* len(r[src]) == i (tuple, list, dict: their own storage) */
    PTGO_G_TENSOR,       /* tensor check: type obj, dtype/device/requires_grad in i, sizes+strides in vec
                          * (then the storage offset); a size -1 is any size >= 2 (a dynamic dim), a
                          * stride -1 the row-major stride of the actual sizes, a stride -(2+mask)
                          * the product of the actual sizes (at least 1) of the dims in the bit
                          * mask (a dense layout in another order: channels-last), an offset -1 any
                          * offset (a dynamic one, checked by its PTGO_G_SYM guard) */
    PTGO_G_DICT_KEYS,    /* r[src] is a dict whose keys equal the tuple obj, in order (its own storage);
                          * the positions listed in vec are skipped (tensor keys, which the tuple
                          * does not hold: PTGO_G_DICT_KEY loads them and their own guards check them);
                          * i=1: iterating over r[src] (an OrderedDict's own order) gives the same keys */
    PTGO_G_CALL_BOOL,    /* bool(obj()) == i: global state such as torch.is_grad_enabled */
    PTGO_G_NOT_ID,       /* r[src] is not obj */
    PTGO_G_SAME,         /* r[src] is r[i] (two sources name one object) */
    PTGO_G_CONST,        /* r[dst] = obj (a dict or cell known not to change identity) */
    PTGO_G_TENSOR_VERSION, /* r[src]._version == i (a tensor whose values were folded at compile time) */
    PTGO_G_NOT_IN_DICT,  /* name is not in r[src].__dict__ (a class attribute is not shadowed) */
    PTGO_G_CALL,         /* r[dst] = obj() (global state such as torch.get_default_dtype()) */
    PTGO_G_SYM,          /* a relation of size symbols: vec = [rel (0 ==, 1 !=, 2 >=, 3 >), c, nterms,
                          * per term: coef, nfactors, per factor: register, dim]; the polynomial
                          * c + sum(coef * prod(size of dim of r[register])) rel 0, where dim -1
                          * is the int in the register and dim -2 the tensor's storage offset; a
                          * factor (-1, div) is followed by a polynomial in this form (c, nterms,
                          * ...) and stands for its floor division by div (a derived symbol) */
    PTGO_G_DICT_KEY,     /* r[dst] = the i-th key of the dict r[src] (its own storage) */
    PTGO_G_FLOAT,        /* a relation of Python numbers computed from float arguments: vec = [rel
                          * (Py_LT .. Py_GE, 6: the same float bit for bit), want, program]; the
                          * postfix program computes left then right in pairs: (1, register),
                          * (2, float bits), (3, int), (4, binary op: + - * / // % **), (5, unary
                          * op: neg abs sqrt int floor ceil round trunc), with CPython's number
                          * protocol; the guard holds when (left rel right) == want and nothing
                          * raised */
    PTGO_G_NOT_SAME,     /* the registers listed in vec hold pairwise distinct objects */
};

typedef struct {
    int32_t op, dst, src, nvec;
    int64_t i;
    ptgo_obj obj;      /* borrowed during the call; the shim takes a reference */
    const char *name;  /* attribute / global name */
    const int64_t *vec;
    const char *desc;  /* the guarded source and fact, for messages: "x.size() == (4, 8)" */
} ptgo_guard;

enum ptgo_status {
    PTGO_OK = 0,          /* run `code` whenever the guards pass */
    PTGO_EAGER = 1,       /* run the original code whenever the guards pass (nothing to compile) */
    PTGO_SKIP_CODE = 2,   /* never offer this code object again */
    PTGO_ERROR = 3,       /* raise ptgo.BackendCompilerFailed(message) (from the kept exception) */
    PTGO_UNSUPPORTED = 4, /* raise ptgo.Unsupported(message) (fullgraph=True) */
};

typedef struct {
    int32_t status;
    int32_t nguards;
    int32_t nregs;
    int32_t pad;
    ptgo_obj code;       /* transformed code (PTGO_OK); borrowed like every object: the shim takes a reference */
    ptgo_guard *guards;  /* Go-allocated; freed by ptgo_go_free_result */
    char *message;       /* Go-allocated; freed by ptgo_go_free_result */
} ptgo_result;

/* ---- Exported by libptgo.so ---- */
typedef int32_t (*ptgo_go_init_fn)(const ptgo_api *api, const char *config_json, char **err);
/* Compile one frame. ctx: the compile context object (backend, options); func, code: the frame's
 * function and code; args: the frame's nargs argument slots; failed_guard: description of the
 * guard that failed on the most recent cache entry, or NULL. */
typedef int32_t (*ptgo_go_compile_fn)(ptgo_obj ctx, ptgo_obj func, ptgo_obj code, const ptgo_obj *args,
                                      int32_t nargs, const char *failed_guard, ptgo_result *out);
typedef void (*ptgo_go_free_result_fn)(ptgo_result *r);
/* A small JSON request/response channel for everything that is not per-frame (listing ops,
 * setting log channels, statistics). Returns a malloc'd string freed with ptgo_go_free. */
typedef char *(*ptgo_go_request_fn)(const char *method, const char *json_in);
typedef void (*ptgo_go_free_fn)(void *p);
/* Compile a torch.fx graph handed to ptgo's backend (ptgo.fx_import, pipeline.ImportFX):
 * graph_json is fxgraph's JSON of the GraphModule, attrs a dict of its get_attr tensors by path,
 * opts_json {"grad_enabled": bool, "freezing": bool, "name": str}, rerun the graph run by torch
 * (for data errors). Returns PTGO_OK with *out the compiled callable (borrowed like every object:
 * the shim takes a reference), PTGO_EAGER when the graph runs with torch (*message says why), or
 * PTGO_ERROR (*message; raise ptgo.BackendCompilerFailed). *message is freed with ptgo_go_free. */
typedef int32_t (*ptgo_go_compile_fx_fn)(const char *graph_json, ptgo_obj attrs, const char *opts_json, ptgo_obj rerun,
                                         ptgo_obj *out, char **message);

#endif
