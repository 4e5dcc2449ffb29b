// The runtime of ptgo's C backend: runs a compiled graph's launch plan (inductor.Program) over
// at::Tensors with no Python per kernel. Temporaries live in the graph's arena, one block
// allocated through ATen on the first call and kept (outputs are allocated per call), generated
// kernels are called through function pointers from the library the Go side compiled, matrix
// products and convolutions are torch's own kernels (DESIGN D5; mm, bmm and addmm write into
// their planned buffers through the out= variants) except depthwise convolutions, which run
// ptgo's kernel where it is faster (ptgo_depthwise.cpp, A124), and other externs (pooling, random ops)
// call the torch function they name. Graph.profile times each plan step.
//
// ptgo._fast.Graph(plan, library_path, externs, consts, on_index_error) builds one from the plan
// decoded from its JSON (a dict; see inductor/program.go), a dict target -> Python callable for
// fallback externs, the tensors bound to the last inputs and what runs instead when a kernel
// finds an index out of range.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/convolution.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/set.h>
#include <ATen/ops/silu.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/GradMode.h>
#include <c10/util/MaybeOwned.h>
#include <torch/csrc/Exceptions.h>

#include "ptgo_depthwise.h"
#include "ptgo_runtime.h"
#include "ptgo_variable.h"

// From libtorch_python (declared here to avoid its pybind11-heavy header); its signature is a
// row of setup.py's TORCH_CXX table.
#if defined(PTGO_THPWRAP_BY_REF)
PyObject* THPVariable_Wrap(const at::TensorBase& var);
#else
PyObject* THPVariable_Wrap(at::TensorBase var);
#endif

namespace {


// StepTimer adds the time from its construction to its destruction to *out (when out is set).
struct StepTimer {
  double* out;
  std::chrono::steady_clock::time_point t0;
  explicit StepTimer(double* o) : out(o) {
    if (out) t0 = std::chrono::steady_clock::now();
  }
  ~StepTimer() {
    if (out) *out += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

typedef int (*KernelFn)(void* const* ptrs, const int64_t* ints, const double* floats, int nthreads);

// emptyBytes is how much a kernel can read of a tensor with no elements: every offset its index
// reaches with the empty dims at index 0 and the others over their sizes. A kernel reads an
// empty tensor only through an indirect index, which is then out of range: the check sends
// element 0 of the empty dim while the status makes the run fail. The kernel gets zeroed
// scratch memory of that size (emptyScratch) instead of torch's empty data pointer (often null,
// which would crash the process).
size_t emptyBytes(const at::Tensor& t) {
  int64_t span = 1;
  for (int64_t d = 0; d < t.dim(); d++) {
    if (t.size(d) > 1) span += (t.size(d) - 1) * std::abs(t.stride(d));
  }
  return static_cast<size_t>(span) * t.element_size();
}

// emptyScratch returns at least bytes of scratch memory, for this thread's kernel launches.
char* emptyScratch(size_t bytes) {
  static thread_local std::vector<max_align_t> scratch;
  size_t words = (bytes + sizeof(max_align_t) - 1) / sizeof(max_align_t);
  if (scratch.size() < words) scratch.assign(words, max_align_t{});
  return reinterpret_cast<char*>(scratch.data());
}

enum class Role { Input, Alloc, Extern, View };
enum class StepOp { Alloc, Kernel, Extern, View, Free };
enum class ExternKind { Mm, Bmm, Addmm, Convolution, Python };

// A size expression of a symbolic plan: c + Σ coef·Π symbols (inductor's SymInt, written in
// the plan as "4*s0*s1 + s2 - 3").
struct Poly {
  struct Term {
    int64_t coef;
    std::vector<int> syms;
  };
  int64_t c = 0;
  std::vector<Term> terms;
  int64_t eval(const std::vector<int64_t>& v) const {
    int64_t out = c;
    for (const Term& t : terms) {
      int64_t p = t.coef;
      for (int id : t.syms) p *= v[id];
      out += p;
    }
    return out;
  }
};

// parse_poly reads the plan's text form of a size expression; false (a Python error set) on
// anything else or a symbol beyond nsyms.
bool parse_poly(const char* text, size_t nsyms, Poly* out) {
  std::string t;
  for (const char* p = text; *p; p++)
    if (*p != ' ') t.push_back(*p);
  size_t i = 0;
  auto bad = [&]() {
    PyErr_Format(PyExc_ValueError, "ptgo runtime: bad size expression \"%s\" in a plan", text);
    return false;
  };
  if (t.empty()) return bad();
  while (i < t.size()) {
    int64_t sign = 1;
    if (t[i] == '+') i++;
    else if (t[i] == '-') sign = -1, i++;
    size_t j = i;
    while (j < t.size() && t[j] != '+' && t[j] != '-') j++;
    if (j == i) return bad();
    Poly::Term term{sign, {}};
    size_t k = i;
    while (k < j) {
      size_t e = k;
      while (e < j && t[e] != '*') e++;
      std::string f = t.substr(k, e - k);
      if (f.empty()) return bad();
      if (f[0] == 's') {
        char* end = nullptr;
        long id = strtol(f.c_str() + 1, &end, 10);
        if (*end != 0 || f.size() < 2 || id < 0 || static_cast<size_t>(id) >= nsyms) return bad();
        term.syms.push_back(static_cast<int>(id));
      } else {
        char* end = nullptr;
        long long v = strtoll(f.c_str(), &end, 10);
        if (*end != 0) return bad();
        term.coef *= v;
      }
      k = e + 1;
    }
    if (term.syms.empty()) out->c += term.coef;
    else out->terms.push_back(term);
    i = j;
  }
  return true;
}

struct Buf {
  Role role;
  c10::ScalarType dtype;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0, storage_elems = 0;
  int base = -1;
  int64_t arena = -1;  // byte offset in the graph's arena, or -1
  // Elements from the start of the torch storage to the start of this buffer's storage: the
  // arena offset of the buffer (or of a view's base), in elements of the buffer's dtype.
  int64_t arena_elems = 0;
  // A symbolic plan's buffer whose sizes depend on the symbols: sizes and storage_elems are
  // evaluated per call (sizes/storage_elems above hold the values at the hints).
  bool symbolic = false;
  std::vector<Poly> sym_sizes;
  Poly sym_storage;
  bool symbolic_layout = false;  // strides and offset too
  std::vector<Poly> sym_strides;
  Poly sym_offset;
  // A symbolic temporary in the arena's dynamic part: dyn_off is its byte offset there at this
  // call's sizes (place_dynamic), -1 for other buffers.
  bool arena_dyn = false;
  int64_t dyn_off = -1;
};

// Where a symbolic plan reads a symbol: dim `dim` of input `input` (input -1: unused); dim -2:
// input `input`'s storage offset; dim -1: the `input`-th int argument of the call; dim -3: a
// derived symbol, floor(def / div) of earlier symbols.
struct SymSource {
  int input = -1, dim = -1;
  Poly def;
  int64_t div = 1;
};
constexpr int kSymIntArg = -1, kSymOffset = -2, kSymDerived = -3;

// Python's floor division (div > 0).
inline int64_t floor_div(int64_t a, int64_t div) { return a / div - ((a % div != 0) && (a < 0)); }

// An extern argument: a buffer, or a constant Python object, or a sequence of arguments.
struct Arg {
  int buf = -1;
  PyObject* value = nullptr;  // strong; nullptr with buf < 0 and !seq means None
  bool seq = false, tuple = false;
  std::vector<Arg> items;
  // a symbolic plan's size expression ({"sym": "s0 + 1"}), passed as its int value in this call
  bool is_sym = false;
  Poly sym;
};

// A frozen graph's convolution run through oneDNN with its weight packed once (A91): the
// packed context (torch's mkldnn_prepacked::conv2d_prepack) and the weight and bias it was packed
// from, by identity, version and data pointer, so a write to either (an in-place update, `.data =`)
// packs again before the next call.
struct TensorKey {
  const c10::TensorImpl* impl = nullptr;
  int64_t version = -1;
  const void* data = nullptr;
  static TensorKey of(const at::Tensor& t) {
    TensorKey k;
    if (!t.defined()) return k;
    k.impl = t.unsafeGetTensorImpl();
    k.version = t.is_inference() ? 0 : static_cast<int64_t>(t._version());
    k.data = t.data_ptr();
    return k;
  }
  bool operator==(const TensorKey& o) const { return impl == o.impl && version == o.version && data == o.data; }
};

// A context is made for one input size: a symbolic (any batch) input keeps one per batch size it
// met, the most recent kPackedSizes.
struct Prepacked {
  struct Ctx {
    std::vector<int64_t> input_size;
    c10::IValue ctx;
  };
  std::vector<Ctx> ctxs;  // most recently used last
  TensorKey w, b;
  // A pointwise convolution runs packed only where that measured faster than its other way (A226):
  // the answer for choice_threads threads (1 packed, 2 the other way; 0 not asked yet).
  bool measured = false;
  int choice_threads = 0;
  int8_t choice = 0;
};
constexpr size_t kPackedSizes = 8;

struct Step {
  StepOp op;
  int buf = -1, reuse = -1;
  KernelFn fn = nullptr;
  std::string kernel;
  std::vector<int> ptrs;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  ExternKind ext = ExternKind::Python;
  std::string target;
  PyObject* callable = nullptr;  // strong, for Python externs
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;
  std::vector<int> outs;
  bool into = false;  // extern: write into the allocated out buffer (out= variant)
  bool once = false;  // kernel: computes constants; runs only on a fresh arena
  std::shared_ptr<Prepacked> packed;  // convolution: run through oneDNN with a packed weight
  bool depthwise = false;             // convolution: ptgo's depthwise kernel takes it (A124)
  int act = PTGO_DW_NONE;             // convolution: its activation keyword (inductor/absorb.go)
};

struct Output {
  int buf = -1;
  PyObject* value = nullptr;  // strong, when buf < 0
};

// A per-call buffer's storage kept for the next call, and the memory it had then.
struct Recycled {
  c10::Storage storage;
  const void* data = nullptr;
};

struct GraphObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  void* lib;
  std::vector<Buf>* bufs;
  std::vector<int>* inputs;
  std::vector<Step>* steps;
  std::vector<Output>* outputs;
  std::vector<PyObject*>* consts;  // tensors bound to the last inputs (parameters), strong
  std::string* name;
  int64_t arena_bytes;
  // The arena the temporaries live in, kept across calls: one tensor per arena buffer (undefined
  // for others), made on the first call. arena_fresh: its Once kernels have not completed yet.
  std::vector<at::Tensor>* arena;
  bool arena_fresh;
  bool busy;  // a call is running on the arena (a re-entrant call makes its own)
  // The storage of each buffer allocated per call (outputs, buffers externs keep) as the last
  // call left it; see alloc_per_call.
  std::vector<Recycled>* recycle;
  // A symbolic plan's size symbols (empty for a static plan): their values are read from the
  // inputs' sizes on every call, the symbolic buffers' sizes evaluated from them, and every
  // kernel gets them as its ints argument.
  std::vector<SymSource>* symbols;
  // How many Python ints a call passes among its tensors (the symbols of int arguments).
  int64_t int_inputs;
  // How many Python floats a call passes among its tensors (float arguments read at run time):
  // every kernel gets their values as its floats argument.
  int64_t float_inputs;
  // The buffers' layouts at the symbol values of the last call that held the arena (reused while
  // the values repeat; only such a call writes them).
  std::vector<int64_t>* last_syms;
  std::vector<Buf>* last_specs;
  int64_t last_dyn_bytes;
  // The arena's dynamic part (symbolic temporaries), kept across calls, grown when a call needs
  // more; a re-entrant call uses a block of its own.
  at::Tensor* dyn_block;
  // A tensor per dynamic temporary viewing dyn_block at the last symbol values (made on first
  // use, dropped when the values or the block change), as the arena's views are for the others.
  std::vector<at::Tensor>* dyn_views;
  // Called with the inputs when a kernel rejects its data (an index out of range, an integer
  // division by zero; nullptr: none): it runs
  // the captured graph with torch, which raises torch's own exception for the same inputs
  // (ptgo._runtime.torch_rerun).
  PyObject* on_index_error;
  // The kernel statuses on which on_index_error runs (the plan's "rerun_status";
  // inductor.Program.RerunStatus): 1 index, 2 integer division by zero, 4 a failed check.
  int rerun_status;
};

// make_arena allocates one block for the graph's temporaries and returns a tensor per arena
// buffer viewing its part of it (undefined for the other buffers). They are ordinary tensors
// even when the first call runs under torch.inference_mode(): out= writes into inference tensors
// would be refused on later calls outside it.
std::vector<at::Tensor> make_arena(const GraphObject* g) {
  const std::vector<Buf>& specs = *g->bufs;
  std::vector<at::Tensor> views(specs.size());
  bool any = false;
  for (const Buf& s : specs) any = any || s.arena >= 0;
  if (!any) return views;
  c10::InferenceMode not_inference(false);
  // (at least one byte: temporaries with no elements still need a storage to point into)
  at::Tensor block = at::empty({std::max<int64_t>(g->arena_bytes, 1)}, at::TensorOptions().dtype(c10::ScalarType::Byte));
  for (size_t i = 0; i < specs.size(); i++) {
    const Buf& s = specs[i];
    if (s.arena < 0) continue;
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(s.dtype));
    t.set_(block.storage(), s.arena / static_cast<int64_t>(t.element_size()) + s.offset, s.sizes, s.strides);
    views[i] = std::move(t);
  }
  return views;
}

// place_dynamic gives each dynamic arena temporary of specs (a symbolic plan's buffers at one
// call's sizes) its byte offset in the arena's dynamic part, first fit among those live at its
// alloc step, 64-byte aligned (inductor.PlaceDynamic), and returns the part's size.
int64_t place_dynamic(std::vector<Buf>& specs, const std::vector<Step>& steps);

// ArenaLease gives a call the graph's arena, or a fresh one when another call holds it.
struct ArenaLease {
  GraphObject* g;
  bool shared;
  bool fresh;
  std::vector<at::Tensor> own;
  const std::vector<at::Tensor>* views;
  explicit ArenaLease(GraphObject* graph) : g(graph), shared(!graph->busy) {
    if (shared) {
      if (g->arena->empty()) *g->arena = make_arena(g);
      g->busy = true;
      fresh = g->arena_fresh;
      views = g->arena;
    } else {
      own = make_arena(g);
      fresh = true;
      views = &own;
    }
  }
  void completed() {
    if (shared) g->arena_fresh = false;
  }
  ~ArenaLease() {
    if (shared) g->busy = false;
  }
};

// alloc_per_call allocates buffer b, which outlives the call (an output, or a buffer an extern
// keeps). The storage the previous call allocated for it is reused when nothing else holds it
// any more (the caller dropped that output): a large allocation is otherwise a fresh mmap whose
// pages fault on first touch, every call (a 4 MB output: ~1.5 ms on this machine). Reused only
// when the storage has no other strong reference (no tensor, no view), no weak one (torch's
// multiprocessing tracks storages it shared that way) and still holds the memory allocated for
// it (share_memory_() swaps in shared memory another process may still read). Only the call
// holding the graph's arena (shared) recycles; a re-entrant call allocates.
std::atomic<int64_t> recycled_outputs{0};  // storages alloc_per_call reused, for tests

bool recyclable(const Recycled& r, int64_t nbytes) {
  const c10::Storage& s = r.storage;
  if (!s || s.getWeakStorageImpl().weak_use_count() != 2 || s.data() != r.data ||
      static_cast<int64_t>(s.nbytes()) != nbytes || !s.device().is_cpu())
    return false;
#if defined(PTGO_STORAGE_PYOBJECT_PRESERVED)
  // Once Python has seen the storage (tensor.untyped_storage()), its Python object holds a
  // strong reference, and c10 keeps that object alive (one Python reference) while C++ holds
  // the storage too: besides ours, that reference alone is allowed, when no Python code holds
  // the object (the GIL is held here).
  if (PyObject* py = s.unsafeGetStorageImpl()->pyobj_slot()->load_pyobj()) {
    return s.use_count() == 2 && Py_REFCNT(py) == 1;
  }
#endif
  return s.use_count() == 1;
}

at::Tensor alloc_per_call(GraphObject* g, int b, const Buf& s, bool shared) {
  const auto opts = at::TensorOptions().dtype(s.dtype);
  const int64_t itemsize = static_cast<int64_t>(c10::elementSize(s.dtype));
  const int64_t nbytes = s.offset == 0 ? static_cast<int64_t>(at::detail::computeStorageNbytes(s.sizes, s.strides, itemsize))
                                       : s.storage_elems * itemsize;
  Recycled* old = shared ? &(*g->recycle)[b] : nullptr;
  at::Tensor t;
  if (old != nullptr && recyclable(*old, nbytes)) {
    t = at::empty({0}, opts);
    t.set_(old->storage, s.offset, s.sizes, s.strides);
    recycled_outputs.fetch_add(1, std::memory_order_relaxed);
  } else if (s.offset == 0) {
    t = at::empty_strided(s.sizes, s.strides, opts);
  } else {
    t = at::empty({s.storage_elems}, opts).as_strided(s.sizes, s.strides, s.offset);
  }
  if (old != nullptr) {
    old->storage = t.storage();
    old->data = old->storage.data();
  }
  return t;
}

const c10::ScalarType kScalarTypes[] = {
    c10::ScalarType::Bool,  c10::ScalarType::Byte,   c10::ScalarType::Char,         c10::ScalarType::Short,
    c10::ScalarType::Int,   c10::ScalarType::Long,   c10::ScalarType::Half,         c10::ScalarType::BFloat16,
    c10::ScalarType::Float, c10::ScalarType::Double, c10::ScalarType::ComplexFloat, c10::ScalarType::ComplexDouble,
};

bool parse_dtype(PyObject* s, c10::ScalarType* out) {
  static const char* names[] = {"bool",    "uint8",   "int8",    "int16",   "int32",     "int64",
                                "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
  const char* n = PyUnicode_AsUTF8(s);
  if (n == nullptr) return false;
  for (int i = 0; i < 12; i++) {
    if (strcmp(n, names[i]) == 0) {
      *out = kScalarTypes[i];
      return true;
    }
  }
  PyErr_Format(PyExc_ValueError, "ptgo runtime: unknown dtype %s in a plan", n);
  return false;
}

bool int_list(PyObject* l, std::vector<int64_t>* out) {
  if (!PyList_Check(l)) {
    PyErr_SetString(PyExc_TypeError, "ptgo runtime: expected a list of ints in the plan");
    return false;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(l); i++) {
    long long v = PyLong_AsLongLong(PyList_GET_ITEM(l, i));
    if (v == -1 && PyErr_Occurred()) return false;
    out->push_back(v);
  }
  return true;
}

PyObject* get(PyObject* d, const char* key) {  // borrowed; sets KeyError when missing
  PyObject* v = PyDict_GetItemString(d, key);
  if (v == nullptr && !PyErr_Occurred()) PyErr_Format(PyExc_KeyError, "ptgo runtime: plan entry lacks %s", key);
  return v;
}

long get_int(PyObject* d, const char* key, long def) {
  PyObject* v = PyDict_GetItemString(d, key);
  if (v == nullptr || v == Py_None) return def;
  return PyLong_AsLong(v);
}

// parse_arg turns a decoded plan argument into an Arg. Constants are already Python objects
// (ptgo._runtime decodes {"float": ...}, dtypes and devices before calling Graph()).
bool parse_arg(PyObject* a, Arg* out, size_t nsyms) {
  if (PyDict_Check(a)) {
    PyObject* b = PyDict_GetItemString(a, "buf");
    if (b) {
      out->buf = static_cast<int>(PyLong_AsLong(b));
      return !PyErr_Occurred();
    }
    if (PyObject* e = PyDict_GetItemString(a, "sym")) {
      const char* text = PyUnicode_Check(e) ? PyUnicode_AsUTF8(e) : nullptr;
      if (text == nullptr || !parse_poly(text, nsyms, &out->sym)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ptgo runtime: a bad symbolic argument");
        return false;
      }
      out->is_sym = true;
      return true;
    }
    PyObject* seq = PyDict_GetItemString(a, "list");
    bool tuple = false;
    if (seq == nullptr) {
      seq = PyDict_GetItemString(a, "tuple");
      tuple = seq != nullptr;
    }
    if (seq) {
      out->seq = true;
      out->tuple = tuple;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); i++) {
        out->items.emplace_back();
        if (!parse_arg(PyList_GET_ITEM(seq, i), &out->items.back(), nsyms)) return false;
      }
      return true;
    }
  }
  if (a != Py_None) {
    Py_INCREF(a);
    out->value = a;
  }
  return true;
}

void clear_arg(Arg* a) {
  Py_CLEAR(a->value);
  for (auto& it : a->items) clear_arg(&it);
}

at::Tensor& unpack(PyObject* obj) { return ptgo::unpack(obj); }

// Converts an extern argument to a Python object (new reference).
PyObject* arg_to_py(const Arg& a, std::vector<at::Tensor>& bufs, const std::vector<int64_t>& syms) {
  if (a.buf >= 0) return THPVariable_Wrap(bufs[a.buf]);
  if (a.is_sym) return PyLong_FromLongLong(a.sym.eval(syms));
  if (a.seq) {
    PyObject* l = a.tuple ? PyTuple_New(a.items.size()) : PyList_New(a.items.size());
    if (l == nullptr) return nullptr;
    for (size_t i = 0; i < a.items.size(); i++) {
      PyObject* v = arg_to_py(a.items[i], bufs, syms);
      if (v == nullptr) {
        Py_DECREF(l);
        return nullptr;
      }
      if (a.tuple) PyTuple_SET_ITEM(l, i, v);
      else PyList_SET_ITEM(l, i, v);
    }
    return l;
  }
  PyObject* v = a.value ? a.value : Py_None;
  Py_INCREF(v);
  return v;
}

std::vector<int64_t> ints_of(const Arg& a, const std::vector<int64_t>& syms) {
  std::vector<int64_t> out;
  for (auto& it : a.items) out.push_back(it.is_sym ? it.sym.eval(syms) : PyLong_AsLongLong(it.value));
  return out;
}

// bind_extern stores an extern's result in buffer b, copied into the plan's layout if torch
// returned another one (kernels index the buffer with the plan's strides).
void bind_extern(std::vector<at::Tensor>& bufs, const std::vector<Buf>& specs, int b, const at::Tensor& t) {
  const Buf& s = specs[b];
  if (t.sizes().vec() == s.sizes && t.strides().vec() == s.strides && t.storage_offset() == s.offset) {
    bufs[b] = t;
    return;
  }
  at::Tensor dst = at::empty({s.storage_elems}, t.options().dtype(s.dtype)).as_strided(s.sizes, s.strides, s.offset);
  dst.copy_(t);
  bufs[b] = dst;
}

// The oneDNN convolution ops of torch's TorchScript freezing (ordinary registered ops, called
// through the dispatcher like any extern); absent from a torch built without mkldnn.
const c10::OperatorHandle* prepack_op(bool run) {
  static const c10::OperatorHandle* ops[2] = {nullptr, nullptr};
  static bool looked = false;
  if (!looked) {
    looked = true;
    if (at::hasMKLDNN()) {
      auto p = c10::Dispatcher::singleton().findSchema({"mkldnn_prepacked::conv2d_prepack", ""});
      auto r = c10::Dispatcher::singleton().findSchema({"mkldnn_prepacked::conv2d_run", ""});
      // Only the schemas this code calls (torch 1.13's; a torch that changed them packs nothing).
      auto sig = [](const c10::OperatorHandle& h) {
        std::ostringstream o;
        o << h.schema();
        return o.str();
      };
      if (p.has_value() && r.has_value() &&
          sig(*p) ==
              "mkldnn_prepacked::conv2d_prepack(Tensor W, Tensor? B, int[2] stride, int[2] padding, int[2] dilation, "
              "int groups, int[4] input_size, str attr) -> __torch__.torch.classes.mkldnn.ConvOpContext" &&
          sig(*r) ==
              "mkldnn_prepacked::conv2d_run(Tensor X, __torch__.torch.classes.mkldnn.ConvOpContext W_prepack) -> "
              "Tensor Y") {
        ops[0] = new c10::OperatorHandle(*p);
        ops[1] = new c10::OperatorHandle(*r);
      }
    }
  }
  return ops[run ? 1 : 0];
}

// run_packed runs a packed convolution step, packing first when its weight or bias changed or
// the input has a size it has no context for (a symbolic batch).
at::Tensor run_packed(const Step& st, const std::vector<at::Tensor>& bufs) {
  Prepacked& pk = *st.packed;
  const at::Tensor& x = bufs[st.args[0].buf];
  const at::Tensor& w = bufs[st.args[1].buf];
  at::Tensor b;
  if (st.args[2].buf >= 0) b = bufs[st.args[2].buf];
  TensorKey kw = TensorKey::of(w), kb = TensorKey::of(b);
  if (!(kw == pk.w) || !(kb == pk.b)) {
    pk.ctxs.clear();
    pk.w = kw;
    pk.b = kb;
  }
  const std::vector<int64_t> size = x.sizes().vec();
  size_t hit = pk.ctxs.size();
  for (size_t i = 0; i < pk.ctxs.size(); i++)
    if (pk.ctxs[i].input_size == size) hit = i;
  if (hit == pk.ctxs.size()) {
    const std::vector<int64_t> syms;  // stride, padding and dilation are static (packable)
    torch::jit::Stack stack;
    stack.emplace_back(w.contiguous());
    if (b.defined()) stack.emplace_back(b.contiguous());
    else stack.emplace_back();
    stack.emplace_back(ints_of(st.args[3], syms));
    stack.emplace_back(ints_of(st.args[4], syms));
    stack.emplace_back(ints_of(st.args[5], syms));
    stack.emplace_back(static_cast<int64_t>(PyLong_AsLongLong(st.args[8].value)));
    stack.emplace_back(size);
    // a ReLU the step applies (its activation keyword) is oneDNN's post-op; others follow the run
    stack.emplace_back(std::string(st.act == PTGO_DW_RELU ? "relu" : "none"));
    prepack_op(false)->callBoxed(&stack);
    if (pk.ctxs.size() == kPackedSizes) pk.ctxs.erase(pk.ctxs.begin());
    pk.ctxs.push_back({size, std::move(stack.back())});
  } else if (hit + 1 != pk.ctxs.size()) {
    std::rotate(pk.ctxs.begin() + hit, pk.ctxs.begin() + hit + 1, pk.ctxs.end());
  }
  torch::jit::Stack stack;
  stack.emplace_back(x);
  stack.emplace_back(pk.ctxs.back().ctx);
  prepack_op(true)->callBoxed(&stack);
  at::Tensor r = stack.back().toTensor();
  if (st.act == PTGO_DW_RELU6) r.clamp_(0, 6);
  else if (st.act == PTGO_DW_SILU) at::silu_(r);
  return r;
}

// Which frozen convolutions run packed, by torch version: the kinds measured faster packed than
// through torch's convolution at 1 thread (bench/conv_paths.py). The last row whose version is at
// most the torch this runtime is built for (PTGO_TORCH_VERSION, major·100 + minor, from setup.py)
// applies.
// Pointwise (1×1) convolutions follow no row: which way is faster depends on the shape and the
// CPU (A226: on an AVX-512 EPYC at 1 thread oneDNN's packed run takes resnet50's 1×1 convolutions
// in 41 ms where the matrix product takes 70, mobilenet_v2's [1,16,112,112]→96 in 4.7 ms where
// the product takes 0.7), so each is packed and measured against its other way on its first call
// (pointwise_packed).
struct PackRule {
  int version;           // from this torch on
  bool grouped;          // groups > 1 (depthwise ones ptgo's kernel takes stay its own, A124)
  int64_t min_channels;  // input channels at least (k×k kernels)
};
constexpr PackRule kPackRules[] = {
    // torch 1.13: ungrouped k×k (k > 1) of 16+ channels (A91); oneDNN 2.6 on a dense NCHW input
    // is slower than torch's convolution for depthwise ones and 3-channel stems
    {100, false, 16},
    // torch 2.14: k×k of any channel count (3-channel stems) and grouped ones too (A159): torch's
    // convolution reorders the weight for oneDNN on every call
    {214, true, 1},
};

#ifndef PTGO_TORCH_VERSION
#define PTGO_TORCH_VERSION 100
#endif

const PackRule& pack_rule() {
  const PackRule* r = &kPackRules[0];
  for (const PackRule& row : kPackRules)
    if (row.version <= PTGO_TORCH_VERSION) r = &row;
  return *r;
}

// packable says whether a frozen graph's convolution step runs through oneDNN with a packed
// weight: a 2-d convolution, not transposed, of a float32 input dense in NCHW or channels-last
// order (oneDNN's packed run gives the input's order back, as torch's convolution does: A231),
// weight and bias (or none) bound to constants, of a kind pack_rule() packs, not one ptgo's
// depthwise kernel takes.
bool packable(const Step& st, const std::vector<Buf>& specs, const std::vector<bool>& is_const) {
  if (prepack_op(false) == nullptr || st.ext != ExternKind::Convolution || st.depthwise) return false;
  const PackRule& rule = pack_rule();
  const int x = st.args[0].buf, w = st.args[1].buf, b = st.args[2].buf;
  if (!is_const[w] || (b >= 0 && !is_const[b]) || (b < 0 && st.args[2].value != nullptr)) return false;
  if (st.args[6].value != Py_False || st.args[8].value == nullptr || !PyLong_Check(st.args[8].value)) return false;
  const int64_t groups = PyLong_AsLongLong(st.args[8].value);
  if (groups < 1 || (groups != 1 && !rule.grouped)) return false;
  const Buf &xs = specs[x], &ws = specs[w];
  if (ws.symbolic || xs.sizes.size() != 4) return false;
  // a symbolic input may have a symbolic batch only (contiguous: checked per call, see
  // packed_input_ok); it gets a context per batch size
  if (xs.symbolic) {
    for (int d = 1; d < 4; d++)
      if (!xs.sym_sizes[d].terms.empty()) return false;
  }
  if (xs.dtype != c10::kFloat || ws.dtype != c10::kFloat || ws.sizes.size() != 4) return false;
  if (ws.sizes[2] * ws.sizes[3] > 1 && xs.sizes[1] < rule.min_channels) return false;
  for (size_t i = 0; i < 3; i++)
    if (st.args[i + 3].items.size() != 2 || st.args[i + 3].is_sym) return false;
  for (size_t i = 0; i < 3; i++)
    for (const Arg& a : st.args[i + 3].items)
      if (a.is_sym) return false;
  if (xs.symbolic_layout) return true;
  int64_t stride = 1;
  bool nchw = true;
  for (int d = 3; d >= 0; d--) {
    if (xs.sizes[d] != 1 && xs.strides[d] != stride) nchw = false;
    stride *= xs.sizes[d];
  }
  if (nchw) return true;
  // channels-last: C, W, H, N from the innermost
  stride = 1;
  for (int d : {1, 3, 2, 0}) {
    if (xs.sizes[d] != 1 && xs.strides[d] != stride) return false;
    stride *= xs.sizes[d];
  }
  return true;
}

// packed_input_ok says whether this call's input of a packed convolution is dense in NCHW or
// channels-last order (a symbolic layout's is known only per call; oneDNN's packed run reads it
// dense).
bool packed_input_ok(const at::Tensor& x) { return x.is_contiguous() || x.is_contiguous(at::MemoryFormat::ChannelsLast); }

// depthwise_shape reads a convolution step's geometry for ptgo's depthwise kernel from its plan
// specs (the input's batch may be symbolic: the kernel reads it per call); false where the step
// is no depthwise convolution the kernel takes: groups = input channels = output channels,
// a [C, 1, kh, kw] float32 weight, a float32 4-d input, dilation 1, not transposed, static
// stride and padding.
bool depthwise_shape(const Step& st, const std::vector<Buf>& specs, ptgo_dw_shape* out) {
  if (st.ext != ExternKind::Convolution || st.args.size() != 9) return false;
  const int x = st.args[0].buf, w = st.args[1].buf, b = st.args[2].buf;
  if (x < 0 || w < 0 || (b < 0 && st.args[2].value != nullptr)) return false;
  const Buf &xs = specs[x], &ws = specs[w];
  if (xs.dtype != c10::kFloat || ws.dtype != c10::kFloat || (b >= 0 && specs[b].dtype != c10::kFloat)) return false;
  if (xs.sizes.size() != 4 || ws.sizes.size() != 4 || ws.symbolic) return false;
  if (xs.symbolic) {
    for (int d = 1; d < 4; d++)
      if (!xs.sym_sizes[d].terms.empty()) return false;
  }
  if (st.args[6].value != Py_False || st.args[8].value == nullptr || !PyLong_Check(st.args[8].value)) return false;
  const int64_t groups = PyLong_AsLongLong(st.args[8].value), C = xs.sizes[1];
  if (groups != C || ws.sizes[0] != C || ws.sizes[1] != 1) return false;
  int64_t v[3][2];
  for (size_t i = 0; i < 3; i++) {
    const Arg& a = st.args[i + 3];
    if (a.is_sym || a.items.size() != 2) return false;
    for (size_t j = 0; j < 2; j++) {
      if (a.items[j].is_sym || a.items[j].value == nullptr || !PyLong_Check(a.items[j].value)) return false;
      v[i][j] = PyLong_AsLongLong(a.items[j].value);
    }
  }
  if (v[2][0] != 1 || v[2][1] != 1) return false;  // dilation
  *out = ptgo_dw_shape{xs.sizes[0], C, xs.sizes[2], xs.sizes[3], ws.sizes[2], ws.sizes[3],
                       v[0][0], v[0][1], v[1][0], v[1][1]};
  return ptgo_depthwise_supported(out) == 1;
}

// run_depthwise runs a depthwise convolution step with ptgo's kernel, or returns an undefined
// tensor where this call's tensors are not dense (a channels-last input keeps torch's
// convolution, and its layout, as in eager).
at::Tensor run_depthwise(const Step& st, const std::vector<at::Tensor>& bufs, const std::vector<Buf>& specs) {
  const at::Tensor& x = bufs[st.args[0].buf];
  const at::Tensor& w = bufs[st.args[1].buf];
  at::Tensor b;
  if (st.args[2].buf >= 0) b = bufs[st.args[2].buf];
  if (!x.is_contiguous() || !w.is_contiguous() || (b.defined() && !b.is_contiguous())) return at::Tensor();
  ptgo_dw_shape s;
  if (!depthwise_shape(st, specs, &s)) return at::Tensor();
  RECORD_USER_SCOPE("ptgo::depthwise_conv2d");
  s.N = x.size(0);
  const int64_t Ho = (s.H + 2 * s.ph - s.kh) / s.sh + 1, Wo = (s.W + 2 * s.pw - s.kw) / s.sw + 1;
  at::Tensor y = at::empty({s.N, s.C, Ho, Wo}, x.options());
  const float* xp = x.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  const int64_t scratch = ptgo_depthwise_scratch(&s);
  // a thread's share: at least ~16K outputs, so small layers stay on one thread
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, Ho * Wo));
  at::parallel_for(0, s.N * s.C, grain, [&](int64_t p0, int64_t p1) {
    thread_local std::vector<float> buf;
    if (static_cast<int64_t>(buf.size()) < scratch) buf.resize(scratch);
    ptgo_depthwise_conv2d(xp, wp, bp, yp, &s, st.act, p0, p1, buf.data());
  });
  return y;
}

// apply_act applies a convolution step's absorbed activation (inductor/absorb.go) to its result in
// place, where torch's convolution or the matrix product computed it (run_packed and ptgo's
// depthwise kernel apply their own).
void apply_act(const Step& st, at::Tensor& r) {
  if (st.act == PTGO_DW_RELU) r.relu_();
  else if (st.act == PTGO_DW_RELU6) r.clamp_(0, 6);
  else if (st.act == PTGO_DW_SILU) at::silu_(r);
}

// run_pointwise runs a pointwise convolution step without bias (every kernel size 1, stride 1,
// no padding, one group, not transposed) of one contiguous float image at one thread as one
// matrix product, W[Co, Ci] · x[Ci, positions]: what torch's CPU convolution computes there (its
// slow_conv2d path calls the same gemm, after zeroing the output; decomp's
// pointwiseConvBiasApart moves a frozen convolution's bias into the kernels after it). An
// undefined tensor for any other step or call: at more threads torch's convolution takes oneDNN.
// With into (a plan buffer, PStep.Into) the product is written there when it is a contiguous
// buffer of the output's sizes, and into is returned.
at::Tensor run_pointwise(const Step& st, const std::vector<at::Tensor>& bufs, const std::vector<int64_t>& syms,
                         const at::Tensor* into = nullptr) {
  if (st.args.size() != 9 || st.args[2].buf >= 0 || st.args[2].value != nullptr || st.args[6].value != Py_False ||
      st.args[8].value == nullptr || !PyLong_Check(st.args[8].value) || PyLong_AsLongLong(st.args[8].value) != 1 ||
      at::get_num_threads() != 1)
    return at::Tensor();
  const at::Tensor& x = bufs[st.args[0].buf];
  const at::Tensor& w = bufs[st.args[1].buf];
  if (x.dim() < 3 || w.dim() != x.dim() || x.size(0) != 1 || x.scalar_type() != w.scalar_type() ||
      (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble) || !x.is_contiguous() || !w.is_contiguous() ||
      w.size(1) != x.size(1))
    return at::Tensor();
  for (int64_t d = 2; d < w.dim(); d++)
    if (w.size(d) != 1) return at::Tensor();
  for (int64_t v : ints_of(st.args[3], syms))
    if (v != 1) return at::Tensor();
  for (int64_t v : ints_of(st.args[4], syms))
    if (v != 0) return at::Tensor();
  std::vector<int64_t> out_sizes = x.sizes().vec();
  out_sizes[1] = w.size(0);
  const int64_t positions = x.numel() / std::max<int64_t>(1, x.size(1));
  at::Tensor y;
  if (into != nullptr && into->sizes().vec() == out_sizes && into->is_contiguous() &&
      into->scalar_type() == x.scalar_type())
    y = *into;
  else
    y = at::empty(out_sizes, x.options());
  at::Tensor y2 = y.view({w.size(0), positions});
  at::mm_out(y2, w.view({w.size(0), w.size(1)}), x.view({x.size(1), positions}));
  return y;
}

// run_unpacked runs a convolution step the way it runs when not packed: ptgo's depthwise kernel,
// the matrix product of a pointwise one (into a planned buffer where into is set, PStep.Into, whose
// step has no bias), else torch's convolution; with the step's activation applied.
at::Tensor run_unpacked(const Step& st, const std::vector<at::Tensor>& bufs, const std::vector<Buf>& specs,
                        const std::vector<int64_t>& syms, const at::Tensor* into) {
  at::Tensor r;
  if (into == nullptr && st.depthwise) {
    r = run_depthwise(st, bufs, specs);
    if (r.defined()) return r;  // the kernel applies the activation itself
  }
  r = run_pointwise(st, bufs, syms, into);
  if (!r.defined()) {
    c10::optional<at::Tensor> bias;
    if (st.args[2].buf >= 0) bias = bufs[st.args[2].buf];
    r = at::convolution(bufs[st.args[0].buf], bufs[st.args[1].buf], bias, ints_of(st.args[3], syms),
                        ints_of(st.args[4], syms), ints_of(st.args[5], syms), st.args[6].value == Py_True,
                        ints_of(st.args[7], syms), PyLong_AsLongLong(st.args[8].value));
  }
  apply_act(st, r);
  return r;
}

// What pointwise_packed measured, by shape, activation and thread count: convolutions of one
// shape in other steps and graphs (resnet50's repeated blocks, a recompile) ask it once.
std::mutex measured_mu;
std::map<std::vector<int64_t>, int8_t> measured_choice;
// 0: measure; 1, 2: every pointwise convolution packed, or not (_fast.force_pointwise, for tests)
std::atomic<int> forced_way{0};

// pointwise_packed says whether a packed convolution step runs packed in this call: a k×k one
// always (PackRule), a pointwise one (Prepacked::measured) where its packed run measured faster
// than run_unpacked at this thread count. The first call at a thread count measures both ways
// on the call's tensors (one run each to warm up — packing, first-touch memory — then the best
// of three), outside any profiler scope of the step's own; the step then runs the chosen way.
bool pointwise_packed(const Step& st, const std::vector<at::Tensor>& bufs, const std::vector<Buf>& specs,
                      const std::vector<int64_t>& syms, const at::Tensor* into) {
  Prepacked& pk = *st.packed;
  if (!pk.measured) return true;
  if (const int f = forced_way.load(); f != 0) return f == 1;
  const int threads = at::get_num_threads();
  if (pk.choice_threads == threads) return pk.choice == 1;
  const at::Tensor& x = bufs[st.args[0].buf];
  const at::Tensor& w = bufs[st.args[1].buf];
  std::vector<int64_t> key = x.sizes().vec();
  key.insert(key.end(), w.sizes().begin(), w.sizes().end());
  key.push_back(st.args[2].buf >= 0);
  key.push_back(into != nullptr);
  key.push_back(st.act);
  key.push_back(threads);
  int8_t choice = 0;
  {
    std::lock_guard<std::mutex> lock(measured_mu);
    auto it = measured_choice.find(key);
    if (it != measured_choice.end()) choice = it->second;
  }
  if (choice == 0) {
    using clock = std::chrono::steady_clock;
    double best[2] = {1e30, 1e30};
    for (int round = 0; round < 4; round++) {
      for (int way = 0; way < 2; way++) {
        const auto t0 = clock::now();
        if (way == 0) run_packed(st, bufs);
        else run_unpacked(st, bufs, specs, syms, into);
        const double t = std::chrono::duration<double>(clock::now() - t0).count();
        if (round > 0) best[way] = std::min(best[way], t);
      }
    }
    choice = best[0] < best[1] ? 1 : 2;
    std::lock_guard<std::mutex> lock(measured_mu);
    measured_choice.emplace(key, choice);
  }
  pk.choice_threads = threads;
  pk.choice = choice;
  return choice == 1;
}

// run_graph runs the plan once over the given inputs and returns the outputs as a tuple (a new
// reference), or nullptr with a Python error set. With times non-null, times[i] accumulates the
// seconds step i took (Graph.profile).
int64_t place_dynamic(std::vector<Buf>& specs, const std::vector<Step>& steps) {
  struct Span {
    int64_t off, end;
    int buf;
  };
  std::vector<Span> live;
  int64_t total = 0;
  for (const Step& st : steps) {
    if (st.op == StepOp::Alloc && specs[st.buf].arena_dyn) {
      Buf& b = specs[st.buf];
      const int64_t itemsize = static_cast<int64_t>(c10::elementSize(b.dtype));
      const int64_t size = (b.storage_elems * itemsize + 63) / 64 * 64;
      std::sort(live.begin(), live.end(), [](const Span& x, const Span& y) { return x.off < y.off; });
      int64_t off = 0;
      for (const Span& sp : live) {
        if (off + size <= sp.off) break;
        if (sp.end > off) off = sp.end;
      }
      b.dyn_off = off;
      live.push_back({off, off + size, st.buf});
      total = std::max(total, off + size);
    } else if (st.op == StepOp::Free) {
      for (size_t i = 0; i < live.size(); i++) {
        if (live[i].buf == st.buf) {
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
    }
  }
  return total;
}

PyObject* run_graph(GraphObject* g, PyObject* const* all_args, Py_ssize_t nall, double* times) {
  const std::vector<Buf>* specp = g->bufs;
  // a plan taking int arguments: the tensors and the ints, mixed in placeholder order
  std::vector<PyObject*> tensor_args;
  std::vector<int64_t> int_args;
  // a plan taking float arguments: kernels read them (one zero when there are none, as a
  // static step's floats)
  std::vector<double> float_args;
  PyObject* const* args = all_args;
  Py_ssize_t nargs = nall;
  if (g->int_inputs > 0 || g->float_inputs > 0) {
    for (Py_ssize_t i = 0; i < nall; i++) {
      if (PyLong_Check(all_args[i]) && !PyBool_Check(all_args[i])) {
        int_args.push_back(PyLong_AsLongLong(all_args[i]));
        if (PyErr_Occurred()) return nullptr;
      } else if (PyFloat_Check(all_args[i])) {
        float_args.push_back(PyFloat_AS_DOUBLE(all_args[i]));
      } else {
        tensor_args.push_back(all_args[i]);
      }
    }
    if (static_cast<int64_t>(int_args.size()) != g->int_inputs) {
      PyErr_Format(PyExc_TypeError, "ptgo compiled graph %s takes %lld int arguments, got %zu", g->name->c_str(),
                   static_cast<long long>(g->int_inputs), int_args.size());
      return nullptr;
    }
    if (static_cast<int64_t>(float_args.size()) != g->float_inputs) {
      PyErr_Format(PyExc_TypeError, "ptgo compiled graph %s takes %lld float arguments, got %zu", g->name->c_str(),
                   static_cast<long long>(g->float_inputs), float_args.size());
      return nullptr;
    }
    args = tensor_args.data();
    nargs = static_cast<Py_ssize_t>(tensor_args.size());
  }
  for (Py_ssize_t i = 0; i < nargs; i++) {
    if (!PyObject_TypeCheck(args[i], reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) {
      PyErr_Format(PyExc_TypeError, "ptgo compiled graph %s: input %zd is not a tensor", g->name->c_str(), i);
      return nullptr;
    }
  }
  const size_t nconst = g->consts->size();
  if (nargs + nconst != g->inputs->size()) {
    PyErr_Format(PyExc_TypeError, "ptgo compiled graph %s takes %zu inputs, got %zd", g->name->c_str(),
                 g->inputs->size() - nconst, nargs);
    return nullptr;
  }
  try {
    // torch.profiler sees a range per compiled graph and one per kernel (names from their ops);
    // the externs (mm, convolution) show as torch's own ops, ptgo's depthwise convolution as
    // ptgo::depthwise_conv2d. Nothing is built unless a profiler
    // is recording.
    RECORD_USER_SCOPE("ptgo." + *g->name);
    const bool caller_grad = c10::GradMode::is_enabled();
    c10::AutoGradMode no_grad(false);
    ArenaLease lease(g);
    const std::vector<at::Tensor>& arena = *lease.views;
    std::vector<at::Tensor> bufs(g->bufs->size());
    std::vector<at::Tensor> dead(g->bufs->size());
    for (Py_ssize_t i = 0; i < nargs; i++) bufs[(*g->inputs)[i]] = unpack(args[i]);
    for (size_t i = 0; i < nconst; i++) bufs[(*g->inputs)[nargs + i]] = unpack((*g->consts)[i]);
    // A symbolic plan: this call's symbol values, from the inputs' sizes, and the buffers'
    // layouts at them (the inputs checked against theirs).
    std::vector<int64_t> syms;
    std::vector<Buf> local;
    int64_t dyn_bytes = 0;
    if (!g->symbols->empty()) {
      syms.resize(g->symbols->size(), 0);
      for (size_t k = 0; k < syms.size(); k++) {
        const SymSource& src = (*g->symbols)[k];
        if (src.dim == kSymDerived) {
          syms[k] = floor_div(src.def.eval(syms), src.div);
          continue;
        }
        if (src.input < 0) continue;
        if (src.dim == kSymIntArg) {
          if (static_cast<size_t>(src.input) >= int_args.size()) {
            PyErr_Format(PyExc_ValueError, "ptgo compiled graph %s: no int argument %d (size symbol s%zu)",
                         g->name->c_str(), src.input, k);
            return nullptr;
          }
          syms[k] = int_args[src.input];
        } else {
          const at::Tensor& t = bufs[(*g->inputs)[src.input]];
          if (src.dim == kSymOffset) {
            syms[k] = t.storage_offset();
          } else if (src.dim < 0 || src.dim >= t.dim()) {
            PyErr_Format(PyExc_ValueError, "ptgo compiled graph %s: input %d has no dim %d (size symbol s%zu)",
                         g->name->c_str(), src.input, src.dim, k);
            return nullptr;
          } else {
            syms[k] = t.size(src.dim);
          }
        }
        if (syms[k] < 2) {
          PyErr_Format(PyExc_ValueError,
                       "ptgo compiled graph %s: compiled for size symbol s%zu >= 2 (dim %d of input %d), got %lld",
                       g->name->c_str(), k, src.dim, src.input, static_cast<long long>(syms[k]));
          return nullptr;
        }
      }
      if (lease.shared && *g->last_syms == syms) {
        specp = g->last_specs;
        dyn_bytes = g->last_dyn_bytes;
      } else {
        local = *g->bufs;
        for (Buf& s : local) {
          if (!s.symbolic) continue;
          for (size_t d = 0; d < s.sym_sizes.size(); d++) s.sizes[d] = s.sym_sizes[d].eval(syms);
          s.storage_elems = s.sym_storage.eval(syms);
          if (s.symbolic_layout) {
            for (size_t d = 0; d < s.sym_strides.size(); d++) s.strides[d] = s.sym_strides[d].eval(syms);
            s.offset = s.sym_offset.eval(syms);
          }
        }
        dyn_bytes = place_dynamic(local, *g->steps);
        if (lease.shared) g->dyn_views->assign(g->bufs->size(), at::Tensor());
        // a view of a dynamic temporary: its elements from the storage start to its base's
        for (Buf& s : local) {
          if (s.base >= 0 && local[s.base].arena_dyn)
            s.arena_elems = local[s.base].dyn_off / static_cast<int64_t>(c10::elementSize(s.dtype));
          if (s.arena_dyn) s.arena_elems = s.dyn_off / static_cast<int64_t>(c10::elementSize(s.dtype));
        }
        specp = &local;
        if (lease.shared) {
          *g->last_syms = syms;
          g->last_specs->swap(local);
          g->last_dyn_bytes = dyn_bytes;
          specp = g->last_specs;
        }
      }
      for (size_t i = 0; i < g->inputs->size(); i++) {
        const Buf& s = (*specp)[(*g->inputs)[i]];
        const at::Tensor& t = bufs[(*g->inputs)[i]];
        if (!s.symbolic) continue;
        bool ok = t.sizes().vec() == s.sizes;
        // an empty tensor's strides and offset are arbitrary (saved statistics of a batch of 0)
        // and no kernel reads through them
        if (ok && s.symbolic_layout && t.numel() > 0) {
          ok = t.storage_offset() == s.offset;
          for (size_t d = 0; d < s.sizes.size() && ok; d++) ok = s.sizes[d] <= 1 || t.stride(d) == s.strides[d];
        }
        if (!ok) {
          PyErr_Format(PyExc_ValueError, "ptgo compiled graph %s: input %zu does not fit its symbolic layout",
                       g->name->c_str(), i);
          return nullptr;
        }
      }
    }
    const std::vector<Buf>& specs = *specp;
    // the dynamic part of the arena: the graph's block, grown to this call's need, or (a
    // re-entrant call) a block of its own
    at::Tensor own_dyn;
    const at::Tensor* dyn = nullptr;
    if (dyn_bytes > 0) {
      c10::InferenceMode not_inference(false);
      if (lease.shared) {
        if (!g->dyn_block->defined() || g->dyn_block->numel() < dyn_bytes) {
          *g->dyn_block = at::empty({dyn_bytes}, at::TensorOptions().dtype(c10::ScalarType::Byte));
          g->dyn_views->assign(g->bufs->size(), at::Tensor());
        }
        dyn = g->dyn_block;
      } else {
        own_dyn = at::empty({dyn_bytes}, at::TensorOptions().dtype(c10::ScalarType::Byte));
        dyn = &own_dyn;
      }
    }
    const int nthreads = at::get_num_threads();
    std::vector<void*> ptrs;
    const size_t nsteps = g->steps->size();
    for (size_t si = 0; si < nsteps; si++) {
      const Step& st = (*g->steps)[si];
      StepTimer timer(times ? &times[si] : nullptr);
      switch (st.op) {
        case StepOp::Alloc: {
          const Buf& s = specs[st.buf];
          if (s.arena_dyn) {
            at::Tensor* cached = lease.shared ? &(*g->dyn_views)[st.buf] : nullptr;
            if (dyn == nullptr) {
              // this call's dynamic arena is empty (a dim of size 0): so is every buffer in it
              // (a null block here was a segfault: GroupNorm of a batch of 0 under dynamic=True)
              c10::InferenceMode not_inference(false);
              bufs[st.buf] = at::empty_strided(s.sizes, s.strides, at::TensorOptions().dtype(s.dtype));
            } else if (cached != nullptr && cached->defined()) {
              bufs[st.buf] = *cached;
            } else {
              c10::InferenceMode not_inference(false);
              at::Tensor t = at::empty({0}, at::TensorOptions().dtype(s.dtype));
              t.set_(dyn->storage(), s.arena_elems + s.offset, s.sizes, s.strides);
              if (cached != nullptr) *cached = t;
              bufs[st.buf] = std::move(t);
            }
          } else if (s.arena >= 0) {
            bufs[st.buf] = arena[st.buf];
          } else if (st.reuse >= 0 && dead[st.reuse].defined() && dead[st.reuse].scalar_type() == s.dtype) {
            bufs[st.buf] = dead[st.reuse].as_strided(s.sizes, s.strides, s.offset);
            dead[st.reuse].reset();
          } else {
            bufs[st.buf] = alloc_per_call(g, st.buf, s, lease.shared);
          }
          break;
        }
        case StepOp::Kernel: {
          if (st.once && !lease.fresh) break;
          RECORD_USER_SCOPE(st.kernel);
          ptrs.clear();
          size_t empty = 0;
          for (int b : st.ptrs) {
            if (bufs[b].numel() == 0) empty = std::max(empty, emptyBytes(bufs[b]));
          }
          char* scratch = empty > 0 ? emptyScratch(empty) : nullptr;
          for (int b : st.ptrs) {
            const at::Tensor& t = bufs[b];
            char* data = t.numel() == 0 ? scratch : static_cast<char*>(t.data_ptr());
            ptrs.push_back(data - (t.storage_offset() - specs[b].arena_elems) * static_cast<int64_t>(t.element_size()));
          }
          int rc = st.fn(ptrs.data(), syms.empty() ? st.ints.data() : syms.data(),
                         float_args.empty() ? st.floats.data() : float_args.data(), nthreads);
          if (rc != 0) {
            // rc's bits (inductor.StatusIndex, StatusZeroDiv): an index out of range, an integer
            // division by zero, in the data.
            if ((rc & ~g->rerun_status) == 0 && g->on_index_error != nullptr) {
              // The driver passes on_index_error only where the failed run left nothing the user
              // can see: graphs that write no input and draw no random numbers, or a failed check
              // (checks run before any write or draw): torch's run raises eager's exception (or,
              // should torch accept the data, gives its result).
              return PyObject_Vectorcall(g->on_index_error, all_args, nall, nullptr);
            }
            if (rc & 1)
              PyErr_Format(PyExc_IndexError, "index out of range in ptgo kernel %s (graph %s)", st.kernel.c_str(),
                           g->name->c_str());
            else if (rc == 2)
              PyErr_SetString(PyExc_RuntimeError, "ZeroDivisionError");  // torch's own exception
            else if (rc & 4)
              PyErr_Format(PyExc_RuntimeError,
                           "ptgo: a float computed from tensor data in graph %s takes a value Python raises for "
                           "(kernel %s), and the graph cannot be run again with torch",
                           g->name->c_str(), st.kernel.c_str());
            else
              PyErr_Format(PyExc_RuntimeError, "ptgo kernel %s failed with status %d", st.kernel.c_str(), rc);
            return nullptr;
          }
          break;
        }
        case StepOp::Extern: {
          at::Tensor r;
          if (st.into) {
            at::Tensor& out = bufs[st.outs[0]];
            switch (st.ext) {
              case ExternKind::Mm:
                at::mm_out(out, bufs[st.args[0].buf], bufs[st.args[1].buf]);
                break;
              case ExternKind::Bmm:
                at::bmm_out(out, bufs[st.args[0].buf], bufs[st.args[1].buf]);
                break;
              case ExternKind::Addmm:
                at::addmm_out(out, bufs[st.args[0].buf], bufs[st.args[1].buf], bufs[st.args[2].buf]);
                break;
              case ExternKind::Convolution: {
                // a pointwise convolution (inductor's isPointwiseConv): oneDNN's packed run where
                // measured faster, else the product into its buffer at one thread, torch's
                // convolution's result in its place otherwise
                at::Tensor y;
                if (st.packed && packed_input_ok(bufs[st.args[0].buf]) && pointwise_packed(st, bufs, specs, syms, &out))
                  y = run_packed(st, bufs);
                else
                  y = run_unpacked(st, bufs, specs, syms, &out);
                if (!y.is_same(out)) bind_extern(bufs, specs, st.outs[0], y);
                break;
              }
              default:
                break;
            }
            if (st.ext != ExternKind::Python) break;
          }
          switch (st.ext) {
            case ExternKind::Mm:
              r = at::mm(bufs[st.args[0].buf], bufs[st.args[1].buf]);
              break;
            case ExternKind::Bmm:
              r = at::bmm(bufs[st.args[0].buf], bufs[st.args[1].buf]);
              break;
            case ExternKind::Addmm:
              r = at::addmm(bufs[st.args[0].buf], bufs[st.args[1].buf], bufs[st.args[2].buf]);
              break;
            case ExternKind::Convolution: {
              if (st.packed && packed_input_ok(bufs[st.args[0].buf]) && pointwise_packed(st, bufs, specs, syms, nullptr))
                r = run_packed(st, bufs);
              else
                r = run_unpacked(st, bufs, specs, syms, nullptr);
              break;
            }
            case ExternKind::Python: {
              std::vector<PyObject*> call;
              bool ok = true;
              for (const Arg& a : st.args) {
                PyObject* v = arg_to_py(a, bufs, syms);
                if (v == nullptr) ok = false;
                call.push_back(v);
              }
              PyObject* names = nullptr;
              if (ok && !st.kwargs.empty()) {
                names = PyTuple_New(st.kwargs.size());
                for (size_t i = 0; i < st.kwargs.size(); i++) {
                  PyTuple_SET_ITEM(names, i, PyUnicode_FromString(st.kwargs[i].first.c_str()));
                  PyObject* v = arg_to_py(st.kwargs[i].second, bufs, syms);
                  if (v == nullptr) ok = false;
                  call.push_back(v);
                }
              }
              PyObject* res = nullptr;
              if (ok) {
                // Fallback externs may create autograd history only if grad mode were on; the
                // plan runs with it off, like the graph it replaces would under no_grad.
                res = PyObject_Vectorcall(st.callable, call.data(), st.args.size(), names);
              }
              for (PyObject* v : call) Py_XDECREF(v);
              Py_XDECREF(names);
              if (res == nullptr) return nullptr;
              if (st.outs.size() == 1) {
                if (!PyObject_TypeCheck(res, reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) {
                  Py_DECREF(res);
                  PyErr_Format(PyExc_TypeError, "ptgo: extern %s returned a non-tensor", st.target.c_str());
                  return nullptr;
                }
                if (st.into) bufs[st.outs[0]].copy_(unpack(res));
                else bind_extern(bufs, specs, st.outs[0], unpack(res));
              } else {
                PyObject* seq = PySequence_Fast(res, "extern result is not a sequence");
                if (seq == nullptr || PySequence_Fast_GET_SIZE(seq) < static_cast<Py_ssize_t>(st.outs.size())) {
                  Py_XDECREF(seq);
                  Py_DECREF(res);
                  if (!PyErr_Occurred())
                    PyErr_Format(PyExc_RuntimeError, "ptgo: extern %s returned too few results", st.target.c_str());
                  return nullptr;
                }
                for (size_t i = 0; i < st.outs.size(); i++) {
                  if (st.outs[i] < 0) continue;
                  PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
                  if (!PyObject_TypeCheck(item, reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) {
                    // the plan's meta said a tensor: a ptgo bug, never a crash
                    Py_DECREF(seq);
                    Py_DECREF(res);
                    PyErr_Format(PyExc_TypeError, "ptgo BUG: extern %s returned %s as result %d, the plan expects a tensor",
                                 st.target.c_str(), Py_TYPE(item)->tp_name, static_cast<int>(i));
                    return nullptr;
                  }
                  bind_extern(bufs, specs, st.outs[i], unpack(item));
                }
                Py_DECREF(seq);
              }
              Py_DECREF(res);
              continue;
            }
          }
          bind_extern(bufs, specs, st.outs[0], r);
          break;
        }
        case StepOp::View: {
          const Buf& s = specs[st.buf];
          {
            // made in the caller's grad mode: a view made with it off is marked so, and eager's
            // in-place write with grad on to it or its base after a graph break then raised "A
            // view was created in no_grad mode" (v5 = v1[1:]; break; v1.mul_(w))
            c10::AutoGradMode mode(caller_grad);
            bufs[st.buf] = bufs[s.base].as_strided(s.sizes, s.strides, s.offset + s.arena_elems);
          }
          if (caller_grad && bufs[st.buf].requires_grad()) {
            // Called with grad mode on, a plan is a graph none of whose outputs requires grad
            // (those go through an autograd.Function, whose forward runs with it off): a view
            // of an input that requires grad is x.detach() or a view of it, which must not
            // require grad (a view made with grad mode off still would).
            bufs[st.buf] = bufs[st.buf].detach();
          }
          break;
        }
        case StepOp::Free:
          // Its storage may go to a later allocation only when nothing else holds it: a torch
          // extern may have returned the buffer itself or a view of it (an in-place fallback,
          // x.uniform_(), returns its argument), which lives on as another buffer.
          if (bufs[st.buf].defined() && bufs[st.buf].use_count() == 1 && bufs[st.buf].storage().use_count() == 1)
            dead[st.buf] = std::move(bufs[st.buf]);
          bufs[st.buf].reset();
          break;
      }
    }
    lease.completed();
    const std::vector<Output>& outs = *g->outputs;
    PyObject* result = PyTuple_New(outs.size());
    if (result == nullptr) return nullptr;
    for (size_t i = 0; i < outs.size(); i++) {
      PyObject* v;
      if (outs[i].buf >= 0) {
        v = THPVariable_Wrap(bufs[outs[i].buf]);
      } else {
        v = outs[i].value ? outs[i].value : Py_None;
        Py_INCREF(v);
      }
      if (v == nullptr) {
        Py_DECREF(result);
        return nullptr;
      }
      PyTuple_SET_ITEM(result, i, v);
    }
    return result;
  } catch (const std::exception&) {
    // torch's own translation (what its Python bindings raise): a c10::IndexError is an
    // IndexError, a c10::Error's message is its text without the C++ backtrace (fuzz seed 3454:
    // an extern step's as_strided out of bounds raised RuntimeError with the backtrace appended).
    torch::translate_exception_to_python(std::current_exception());
    return nullptr;
  }
}

PyObject* graph_call(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (kwnames && PyTuple_GET_SIZE(kwnames) > 0) {
    PyErr_SetString(PyExc_TypeError, "a ptgo compiled graph takes positional tensors only");
    return nullptr;
  }
  return run_graph(reinterpret_cast<GraphObject*>(self), args, PyVectorcall_NARGS(nargsf), nullptr);
}

// step_label describes plan step st for Graph.profile.
std::string step_label(const GraphObject* g, const Step& st) {
  auto shape = [&](int b) {
    std::string s = "[";
    const Buf& spec = (*g->bufs)[b];
    for (size_t i = 0; i < spec.sizes.size(); i++) s += (i ? "," : "") + std::to_string(spec.sizes[i]);
    return s + "]";
  };
  switch (st.op) {
    case StepOp::Alloc: return "alloc %" + std::to_string(st.buf) + " " + shape(st.buf) + (st.reuse >= 0 ? " reusing %" + std::to_string(st.reuse) : "");
    case StepOp::Kernel: return "kernel " + st.kernel;
    case StepOp::Extern: {
      std::string s = "extern " + st.target + "(";
      bool first = true;
      for (const Arg& a : st.args) {
        if (a.buf < 0) continue;
        s += (first ? "" : ", ") + shape(a.buf);
        first = false;
      }
      return s + ")";
    }
    case StepOp::View: return "view %" + std::to_string(st.buf);
    case StepOp::Free: return "free %" + std::to_string(st.buf);
  }
  return "?";
}

// Graph.profile(inputs, reps=1) runs the graph reps times and returns [(step, seconds), ...]:
// the total time each plan step took over all runs (a report for finding where time goes).
PyObject* graph_profile(PyObject* self, PyObject* args) {
  GraphObject* g = reinterpret_cast<GraphObject*>(self);
  PyObject* inputs;
  int reps = 1;
  if (!PyArg_ParseTuple(args, "O!|i:profile", &PyTuple_Type, &inputs, &reps)) return nullptr;
  std::vector<double> times(g->steps->size(), 0.0);
  for (int r = 0; r < reps; r++) {
    PyObject* out = run_graph(g, &PyTuple_GET_ITEM(inputs, 0), PyTuple_GET_SIZE(inputs), times.data());
    if (out == nullptr) return nullptr;
    Py_DECREF(out);
  }
  PyObject* res = PyList_New(times.size());
  if (res == nullptr) return nullptr;
  for (size_t i = 0; i < times.size(); i++) {
    PyObject* item = Py_BuildValue("(sd)", step_label(g, (*g->steps)[i]).c_str(), times[i]);
    if (item == nullptr) {
      Py_DECREF(res);
      return nullptr;
    }
    PyList_SET_ITEM(res, i, item);
  }
  return res;
}

PyMethodDef graph_methods[] = {
    {"profile", graph_profile, METH_VARARGS,
     "profile(inputs: tuple, reps=1) -> [(step, seconds)]: run reps times, total seconds per plan step"},
    {nullptr, nullptr, 0, nullptr},
};

void graph_dealloc(PyObject* self) {
  GraphObject* g = reinterpret_cast<GraphObject*>(self);
  if (g->steps) {
    for (Step& st : *g->steps) {
      Py_CLEAR(st.callable);
      for (Arg& a : st.args) clear_arg(&a);
      for (auto& kw : st.kwargs) clear_arg(&kw.second);
    }
  }
  if (g->outputs)
    for (Output& o : *g->outputs) Py_CLEAR(o.value);
  if (g->consts)
    for (PyObject*& c : *g->consts) Py_CLEAR(c);
  Py_CLEAR(g->on_index_error);
  delete g->consts;
  delete g->bufs;
  delete g->inputs;
  delete g->steps;
  delete g->outputs;
  delete g->name;
  delete g->arena;
  delete g->recycle;
  delete g->symbols;
  delete g->last_syms;
  delete g->last_specs;
  delete g->dyn_block;
  delete g->dyn_views;
  // This graph's reference to its kernel library (dlopen counts them: other graphs with the
  // same kernels hold their own). No kernel of it runs now: a call holds a reference to the
  // graph, and OpenMP's workers leave the library's code when its parallel regions end.
  if (g->lib) dlclose(g->lib);
  g->lib = nullptr;
  Py_TYPE(self)->tp_free(self);
}

PyObject* graph_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  PyObject *plan, *libpath, *externs, *consts = nullptr, *on_index_error = Py_None;
  if (!PyArg_ParseTuple(args, "O!UO!|O!O:Graph", &PyDict_Type, &plan, &libpath, &PyDict_Type, &externs, &PyList_Type,
                        &consts, &on_index_error))
    return nullptr;
  GraphObject* g = reinterpret_cast<GraphObject*>(type->tp_alloc(type, 0));
  if (g == nullptr) return nullptr;
  g->vectorcall = graph_call;
  g->bufs = new std::vector<Buf>();
  g->inputs = new std::vector<int>();
  g->steps = new std::vector<Step>();
  g->outputs = new std::vector<Output>();
  g->consts = new std::vector<PyObject*>();
  g->name = new std::string("graph");
  g->arena = new std::vector<at::Tensor>();
  g->recycle = new std::vector<Recycled>();
  g->symbols = new std::vector<SymSource>();
  g->last_syms = new std::vector<int64_t>();
  g->last_specs = new std::vector<Buf>();
  g->last_dyn_bytes = 0;
  g->dyn_block = new at::Tensor();
  g->dyn_views = new std::vector<at::Tensor>();
  g->arena_bytes = 0;
  g->int_inputs = 0;
  g->float_inputs = 0;
  g->arena_fresh = true;
  g->busy = false;
  g->on_index_error = nullptr;
  if (on_index_error != Py_None) {
    Py_INCREF(on_index_error);
    g->on_index_error = on_index_error;
  }
  PyObject* self = reinterpret_cast<PyObject*>(g);
  auto fail = [&]() -> PyObject* {
    Py_DECREF(self);
    return nullptr;
  };
  if (consts) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(consts); i++) {
      PyObject* c = PyList_GET_ITEM(consts, i);
      if (!PyObject_TypeCheck(c, reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) {
        PyErr_SetString(PyExc_TypeError, "ptgo runtime: constants must be tensors");
        return fail();
      }
      Py_INCREF(c);
      g->consts->push_back(c);
    }
  }
  if (PyObject* n = PyDict_GetItemString(plan, "name")) {
    if (const char* s = PyUnicode_AsUTF8(n)) *g->name = s;
  }
  g->rerun_status = 3;
  if (PyObject* rs = PyDict_GetItemString(plan, "rerun_status")) {
    long v = PyLong_AsLong(rs);
    if (v == -1 && PyErr_Occurred()) return fail();
    g->rerun_status = static_cast<int>(v);
  }
  const char* path = PyUnicode_AsUTF8(libpath);
  if (path == nullptr) return fail();
  if (*path) {
    g->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g->lib == nullptr) {
      PyErr_Format(PyExc_RuntimeError, "ptgo runtime: cannot load %s: %s", path, dlerror());
      return fail();
    }
  }
  if (get_int(plan, "version", 0) != 2) {
    PyErr_SetString(PyExc_ValueError, "ptgo runtime: this runtime runs plans of version 2; rebuild ptgo (make setup)");
    return fail();
  }
  g->arena_bytes = get_int(plan, "arena_bytes", 0);
  g->int_inputs = get_int(plan, "int_inputs", 0);
  g->float_inputs = get_int(plan, "float_inputs", 0);
  if (PyObject* sy = PyDict_GetItemString(plan, "symbols"); sy != nullptr && PyList_Check(sy)) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(sy); i++) {
      PyObject* d = PyList_GET_ITEM(sy, i);
      SymSource src;
      src.input = static_cast<int>(get_int(d, "input", -1));
      src.dim = static_cast<int>(get_int(d, "dim", -1));
      if (src.dim == kSymDerived) {
        PyObject* e = PyDict_GetItemString(d, "def");
        const char* text = e != nullptr ? PyUnicode_AsUTF8(e) : nullptr;
        src.div = get_int(d, "div", 0);
        if (text == nullptr || src.div < 2 || !parse_poly(text, static_cast<size_t>(i), &src.def)) {
          if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ptgo runtime: a bad derived size symbol");
          return fail();
        }
      }
      g->symbols->push_back(src);
    }
  }
  PyObject* bufs = get(plan, "buffers");
  if (bufs == nullptr) return fail();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(bufs); i++) {
    PyObject* b = PyList_GET_ITEM(bufs, i);
    Buf s;
    PyObject* role = get(b, "role");
    if (role == nullptr) return fail();
    std::string r = PyUnicode_AsUTF8(role);
    s.role = r == "input" ? Role::Input : r == "alloc" ? Role::Alloc : r == "extern" ? Role::Extern : Role::View;
    PyObject* dt = get(b, "dtype");
    if (dt == nullptr || !parse_dtype(dt, &s.dtype)) return fail();
    PyObject *sz = get(b, "sizes"), *st = get(b, "strides");
    if (sz == nullptr || st == nullptr || !int_list(sz, &s.sizes) || !int_list(st, &s.strides)) return fail();
    s.offset = get_int(b, "offset", 0);
    s.storage_elems = get_int(b, "storage_elems", 0);
    s.base = static_cast<int>(get_int(b, "base", -1));
    s.arena = get_int(b, "arena", -1);
    if (PyObject* ss = PyDict_GetItemString(b, "sym_sizes"); ss != nullptr && PyList_Check(ss)) {
      s.symbolic = true;
      if (PyList_GET_SIZE(ss) != static_cast<Py_ssize_t>(s.sizes.size())) {
        PyErr_SetString(PyExc_ValueError, "ptgo runtime: sym_sizes and sizes differ in rank");
        return fail();
      }
      for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ss); j++) {
        const char* e = PyUnicode_AsUTF8(PyList_GET_ITEM(ss, j));
        s.sym_sizes.emplace_back();
        if (e == nullptr || !parse_poly(e, g->symbols->size(), &s.sym_sizes.back())) return fail();
      }
      PyObject* se = get(b, "sym_storage");
      const char* e = se ? PyUnicode_AsUTF8(se) : nullptr;
      if (e == nullptr || !parse_poly(e, g->symbols->size(), &s.sym_storage)) return fail();
      if (s.arena >= 0) {
        PyErr_SetString(PyExc_ValueError, "ptgo runtime: a symbolic buffer cannot be in the arena");
        return fail();
      }
      if (PyObject* ad = PyDict_GetItemString(b, "arena_dyn"); ad != nullptr && PyObject_IsTrue(ad) == 1) s.arena_dyn = true;
      if (PyObject* sst = PyDict_GetItemString(b, "sym_strides"); sst != nullptr && PyList_Check(sst)) {
        s.symbolic_layout = true;
        if (PyList_GET_SIZE(sst) != static_cast<Py_ssize_t>(s.strides.size())) {
          PyErr_SetString(PyExc_ValueError, "ptgo runtime: sym_strides and strides differ in rank");
          return fail();
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(sst); j++) {
          const char* e = PyUnicode_AsUTF8(PyList_GET_ITEM(sst, j));
          s.sym_strides.emplace_back();
          if (e == nullptr || !parse_poly(e, g->symbols->size(), &s.sym_strides.back())) return fail();
        }
        PyObject* so = get(b, "sym_offset");
        const char* e = so ? PyUnicode_AsUTF8(so) : nullptr;
        if (e == nullptr || !parse_poly(e, g->symbols->size(), &s.sym_offset)) return fail();
      }
    }
    g->bufs->push_back(std::move(s));
  }
  for (Buf& s : *g->bufs) {
    int64_t isz = static_cast<int64_t>(c10::elementSize(s.dtype));
    int64_t arena = s.arena;
    if (s.base >= 0 && s.base < static_cast<int>(g->bufs->size())) arena = (*g->bufs)[s.base].arena;
    if (arena > 0) s.arena_elems = arena / isz;
  }
  PyObject* inputs = get(plan, "inputs");
  if (inputs == nullptr) return fail();
  g->recycle->resize(g->bufs->size());
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(inputs); i++)
    g->inputs->push_back(static_cast<int>(PyLong_AsLong(PyList_GET_ITEM(inputs, i))));
  PyObject* steps = get(plan, "steps");
  if (steps == nullptr) return fail();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(steps); i++) {
    PyObject* d = PyList_GET_ITEM(steps, i);
    PyObject* op = get(d, "op");
    if (op == nullptr) return fail();
    std::string o = PyUnicode_AsUTF8(op);
    Step st;
    st.buf = static_cast<int>(get_int(d, "buf", -1));
    st.reuse = static_cast<int>(get_int(d, "reuse", -1));
    st.into = PyObject_IsTrue(PyDict_GetItemString(d, "into") ? PyDict_GetItemString(d, "into") : Py_False) == 1;
    st.once = PyObject_IsTrue(PyDict_GetItemString(d, "once") ? PyDict_GetItemString(d, "once") : Py_False) == 1;
    if (o == "alloc") {
      st.op = StepOp::Alloc;
    } else if (o == "view") {
      st.op = StepOp::View;
    } else if (o == "free") {
      st.op = StepOp::Free;
    } else if (o == "kernel") {
      st.op = StepOp::Kernel;
      PyObject* k = get(d, "kernel");
      if (k == nullptr) return fail();
      st.kernel = PyUnicode_AsUTF8(k);
      st.fn = g->lib ? reinterpret_cast<KernelFn>(dlsym(g->lib, st.kernel.c_str())) : nullptr;
      if (st.fn == nullptr) {
        PyErr_Format(PyExc_RuntimeError, "ptgo runtime: kernel %s not found in %s", st.kernel.c_str(), path);
        return fail();
      }
      std::vector<int64_t> p;
      PyObject *ptrs = get(d, "ptrs"), *ints = get(d, "ints"), *floats = get(d, "floats");
      if (!ptrs || !ints || !floats || !int_list(ptrs, &p) || !int_list(ints, &st.ints)) return fail();
      for (int64_t x : p) st.ptrs.push_back(static_cast<int>(x));
      for (Py_ssize_t j = 0; j < PyList_GET_SIZE(floats); j++) st.floats.push_back(PyFloat_AsDouble(PyList_GET_ITEM(floats, j)));
      if (st.ints.empty()) st.ints.push_back(0);  // never pass a null array
      if (st.floats.empty()) st.floats.push_back(0);
    } else if (o == "extern") {
      st.op = StepOp::Extern;
      PyObject* t = get(d, "target");
      if (t == nullptr) return fail();
      st.target = PyUnicode_AsUTF8(t);
      PyObject* a = get(d, "args");
      if (a == nullptr) return fail();
      for (Py_ssize_t j = 0; j < PyList_GET_SIZE(a); j++) {
        st.args.emplace_back();
        if (!parse_arg(PyList_GET_ITEM(a, j), &st.args.back(), g->symbols->size())) return fail();
      }
      if (PyObject* kws = PyDict_GetItemString(d, "kwargs")) {
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(kws); j++) {
          PyObject* pair = PyList_GET_ITEM(kws, j);
          st.kwargs.emplace_back(PyUnicode_AsUTF8(PyList_GET_ITEM(pair, 0)), Arg());
          if (!parse_arg(PyList_GET_ITEM(pair, 1), &st.kwargs.back().second, g->symbols->size())) return fail();
        }
      }
      std::vector<int64_t> outs;
      PyObject* os = get(d, "outs");
      if (os == nullptr || !int_list(os, &outs)) return fail();
      for (int64_t x : outs) st.outs.push_back(static_cast<int>(x));
      auto all_bufs = [&](size_t n) {
        if (st.args.size() != n || !st.kwargs.empty() || st.outs.size() != 1) return false;
        for (size_t j = 0; j < n; j++)
          if (st.args[j].buf < 0) return false;
        return true;
      };
      if (st.target == "prims.mm" && all_bufs(2)) {
        st.ext = ExternKind::Mm;
      } else if (st.target == "prims.bmm" && all_bufs(2)) {
        st.ext = ExternKind::Bmm;
      } else if (st.target == "prims.addmm" && all_bufs(3)) {
        st.ext = ExternKind::Addmm;
      } else if (st.target == "prims.convolution" && st.args.size() == 9 && st.outs.size() == 1 &&
                 st.args[0].buf >= 0 && st.args[1].buf >= 0) {
        st.ext = ExternKind::Convolution;
        for (const auto& kw : st.kwargs) {
          const char* v = kw.second.value && PyUnicode_Check(kw.second.value) ? PyUnicode_AsUTF8(kw.second.value) : "";
          if (kw.first == "activation" && std::string(v) == "relu") st.act = PTGO_DW_RELU;
          else if (kw.first == "activation" && std::string(v) == "relu6") st.act = PTGO_DW_RELU6;
          else if (kw.first == "activation" && std::string(v) == "silu") st.act = PTGO_DW_SILU;
          else {
            PyErr_Format(PyExc_RuntimeError, "ptgo BUG: runtime: convolution keyword %s=%s is not known",
                         kw.first.c_str(), v);
            return fail();
          }
        }
      } else {
        st.ext = ExternKind::Python;
        PyObject* c = PyDict_GetItemString(externs, st.target.c_str());
        if (c == nullptr) {
          PyErr_Format(PyExc_RuntimeError, "ptgo runtime: no callable for extern %s", st.target.c_str());
          return fail();
        }
        Py_INCREF(c);
        st.callable = c;
      }
    } else {
      PyErr_Format(PyExc_ValueError, "ptgo runtime: unknown plan step %s", o.c_str());
      return fail();
    }
    g->steps->push_back(std::move(st));
  }
  PyObject* outs = get(plan, "outputs");
  if (outs == nullptr) return fail();
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(outs); i++) {
    PyObject* o = PyList_GET_ITEM(outs, i);
    Output out;
    if (PyObject* b = PyDict_GetItemString(o, "buf")) {
      out.buf = static_cast<int>(PyLong_AsLong(b));
    } else if (PyObject* v = PyDict_GetItemString(o, "value")) {
      if (v != Py_None) {
        Py_INCREF(v);
        out.value = v;
      }
    }
    g->outputs->push_back(out);
  }
  if (PyErr_Occurred()) return fail();
  // Depthwise convolutions of the shapes where ptgo's kernel is faster than torch's (A124).
  for (Step& st : *g->steps) {
    ptgo_dw_shape s;
    if (st.op == StepOp::Extern && depthwise_shape(st, *g->bufs, &s)) st.depthwise = ptgo_depthwise_preferred(&s) == 1;
  }
  // Frozen graphs (the plan's "frozen": parameters are constants) pack convolution weights.
  if (PyObject* fz = PyDict_GetItemString(plan, "frozen"); fz != nullptr && PyObject_IsTrue(fz) == 1) {
    std::vector<bool> is_const(g->bufs->size(), false);
    const size_t nin = g->inputs->size(), nconst = g->consts->size();
    for (size_t i = nin - std::min(nin, nconst); i < nin; i++) is_const[(*g->inputs)[i]] = true;
    for (Step& st : *g->steps) {
      if (st.op == StepOp::Extern && packable(st, *g->bufs, is_const)) {
        st.packed = std::make_shared<Prepacked>();
        const Buf& ws = (*g->bufs)[st.args[1].buf];
        st.packed->measured = ws.sizes[2] * ws.sizes[3] == 1;
      }
    }
  }
  return self;
}

PyObject* graph_repr(PyObject* self) {
  GraphObject* g = reinterpret_cast<GraphObject*>(self);
  return PyUnicode_FromFormat("<ptgo compiled graph %s: %zu steps>", g->name->c_str(), g->steps->size());
}

PyTypeObject GraphType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "ptgo._fast.Graph";
  t.tp_basicsize = sizeof(GraphObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_vectorcall_offset = offsetof(GraphObject, vectorcall);
  t.tp_call = PyVectorcall_Call;
  t.tp_new = graph_new;
  t.tp_dealloc = graph_dealloc;
  t.tp_repr = graph_repr;
  t.tp_methods = graph_methods;
  t.tp_doc = "Graph(plan, library_path, externs, consts=[], on_index_error=None): a compiled graph's launch plan, "
             "callable with its inputs; consts are bound to the plan's last inputs; on_index_error(*inputs) "
             "takes over when a kernel finds an index out of range.";
  return t;
}();

}  // namespace

PyObject* ptgo_tensor_type = nullptr;

PyObject* recycled_count(PyObject*, PyObject*) { return PyLong_FromLongLong(recycled_outputs.load()); }

// written_overlap(args, written): the first (i, j) where args[i], an input the graph writes (i in
// the tuple `written`), shares memory with another tensor args[j], or (i, -1) where args[i] is an
// inference tensor outside inference mode (eager's in-place op refuses it after writing); None
// when none is. The bytes
// each tensor's elements lie in are compared (as _runtime._span computes them), sorted by their
// start, so an optimizer step's hundreds of inputs cost O(n log n), not a Python double loop.
PyObject* written_overlap(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n != 2 || !PyTuple_Check(a[0]) || !PyTuple_Check(a[1])) {
    PyErr_SetString(PyExc_TypeError, "written_overlap(args: tuple, written: tuple)");
    return nullptr;
  }
  PyObject* args = a[0];
  Py_ssize_t nargs = PyTuple_GET_SIZE(args);
  std::vector<char> written(static_cast<size_t>(nargs), 0);
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(a[1]); k++) {
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(a[1], k));
    if (i == -1 && PyErr_Occurred()) return nullptr;
    if (i >= 0 && i < nargs) written[static_cast<size_t>(i)] = 1;
  }
  struct Span {
    uintptr_t lo, hi;
    Py_ssize_t i;
  };
  std::vector<Span> spans;
  spans.reserve(static_cast<size_t>(nargs));
  bool inference_mode = c10::InferenceMode::is_enabled();
  for (Py_ssize_t i = 0; i < nargs; i++) {
    PyObject* o = PyTuple_GET_ITEM(args, i);
    if (!PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) continue;
    const at::Tensor& t = ptgo::unpack(o);
    if (!t.defined()) continue;
    if (written[static_cast<size_t>(i)] && !inference_mode && t.is_inference()) {
      // eager's first in-place op on it writes and then raises: the call runs with torch
      return Py_BuildValue("(nn)", i, static_cast<Py_ssize_t>(-1));
    }
    if (t.numel() == 0 || !t.has_storage()) continue;
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); d++) last += (t.size(d) - 1) * t.stride(d);
    uintptr_t lo = reinterpret_cast<uintptr_t>(t.data_ptr());
    spans.push_back({lo, lo + static_cast<uintptr_t>((last + 1) * static_cast<int64_t>(t.element_size())), i});
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.lo < y.lo; });
  // Sweep in start order, keeping the furthest-reaching span so far and the furthest-reaching
  // written one: a span overlaps an earlier one exactly when it starts before that one's end,
  // and only a pair with a written input counts.
  const Span* reach = nullptr;
  const Span* reach_written = nullptr;
  for (const Span& s : spans) {
    bool w = written[static_cast<size_t>(s.i)];
    if (w && reach != nullptr && reach->hi > s.lo) return Py_BuildValue("(nn)", s.i, reach->i);
    if (reach_written != nullptr && reach_written->hi > s.lo) return Py_BuildValue("(nn)", reach_written->i, s.i);
    if (reach == nullptr || s.hi > reach->hi) reach = &s;
    if (w && (reach_written == nullptr || s.hi > reach_written->hi)) reach_written = &s;
  }
  Py_RETURN_NONE;
}

// bump_versions(args, written): what an in-place op does to its tensor's version counter, for
// the inputs a compiled graph wrote (its kernels write their memory directly): autograd then
// refuses a backward through a value saved before the write ("one of the variables needed for
// gradient computation has been modified by an inplace operation"), as it does in eager.
PyObject* bump_versions(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n != 2 || !PyTuple_Check(a[0]) || !PyTuple_Check(a[1])) {
    PyErr_SetString(PyExc_TypeError, "bump_versions(args: tuple, written: tuple)");
    return nullptr;
  }
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(a[1]); k++) {
    Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(a[1], k));
    if (i == -1 && PyErr_Occurred()) return nullptr;
    if (i < 0 || i >= PyTuple_GET_SIZE(a[0])) continue;
    PyObject* o = PyTuple_GET_ITEM(a[0], i);
    if (!PyObject_TypeCheck(o, reinterpret_cast<PyTypeObject*>(ptgo_tensor_type))) continue;
    const at::Tensor& t = ptgo::unpack(o);
    if (!t.defined() || (t.is_inference() && c10::InferenceMode::is_enabled())) continue;
    try {
      t.unsafeGetTensorImpl()->bump_version();
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
      return nullptr;
    }
  }
  Py_RETURN_NONE;
}

// share_version(alias, source): alias (what source.data returned) takes source's version counter,
// as source.detach() would have it, so an in-place write through the alias bumps source's version.
// _runtime.watch_data installs it for the tensors freezing made constants from: without it
// `p.data.mul_(2)` leaves p's version as it was and a frozen graph served the old weights.
PyObject* share_version(PyObject*, PyObject* const* a, Py_ssize_t n) {
  auto* tt = reinterpret_cast<PyTypeObject*>(ptgo_tensor_type);
  if (n != 2 || !PyObject_TypeCheck(a[0], tt) || !PyObject_TypeCheck(a[1], tt)) {
    PyErr_SetString(PyExc_TypeError, "share_version(alias: Tensor, source: Tensor)");
    return nullptr;
  }
  const at::Tensor& alias = ptgo::unpack(a[0]);
  const at::Tensor& source = ptgo::unpack(a[1]);
  if (alias.defined() && source.defined() && !alias.is_inference() && !source.is_inference()) {
    alias.unsafeGetTensorImpl()->set_version_counter(source.unsafeGetTensorImpl()->version_counter());
  }
  Py_RETURN_NONE;
}

// measured_pointwise() -> {(input sizes, weight sizes, bias, into, activation, threads): packed}:
// what pointwise_packed measured in this process.
PyObject* measured_pointwise(PyObject*, PyObject*) {
  PyObject* d = PyDict_New();
  if (d == nullptr) return nullptr;
  std::lock_guard<std::mutex> lock(measured_mu);
  for (const auto& [key, choice] : measured_choice) {
    PyObject* k = PyTuple_New(static_cast<Py_ssize_t>(key.size()));
    if (k == nullptr) {
      Py_DECREF(d);
      return nullptr;
    }
    for (size_t i = 0; i < key.size(); i++) PyTuple_SET_ITEM(k, static_cast<Py_ssize_t>(i), PyLong_FromLongLong(key[i]));
    const int rc = PyDict_SetItem(d, k, choice == 1 ? Py_True : Py_False);
    Py_DECREF(k);
    if (rc < 0) {
      Py_DECREF(d);
      return nullptr;
    }
  }
  return d;
}

// force_pointwise(way) -> the previous way: "measure" (the default), "packed" or "unpacked" for
// every packed pointwise convolution from the next call on; for tests that count the ops a
// compiled graph runs.
PyObject* force_pointwise(PyObject*, PyObject* arg) {
  static const char* names[] = {"measure", "packed", "unpacked"};
  const char* way = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
  int v = -1;
  for (int i = 0; way != nullptr && i < 3; i++)
    if (std::string(way) == names[i]) v = i;
  if (v < 0) {
    PyErr_SetString(PyExc_ValueError, "force_pointwise(way): way is 'measure', 'packed' or 'unpacked'");
    return nullptr;
  }
  return PyUnicode_FromString(names[forced_way.exchange(v)]);
}

PyMethodDef runtime_functions[] = {
    {"measured_pointwise", measured_pointwise, METH_NOARGS,
     "measured_pointwise() -> dict: the pointwise convolutions measured packed against unpacked, and the answers"},
    {"force_pointwise", force_pointwise, METH_O,
     "force_pointwise(way) -> previous: 'measure', 'packed' or 'unpacked' for packed pointwise convolutions (tests)"},
    {"share_version", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(share_version)), METH_FASTCALL,
     "share_version(alias, source): alias shares source's version counter (see _runtime.watch_data)"},
    {"bump_versions", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(bump_versions)), METH_FASTCALL,
     "bump_versions(args, written): bumps the version counter of each written tensor input"},
    {"written_overlap", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(written_overlap)), METH_FASTCALL,
     "written_overlap(args, written) -> (i, j) or None: a written input args[i] that shares memory with args[j]"},
    {"recycled_outputs", recycled_count, METH_NOARGS,
     "recycled_outputs() -> int: per-call buffers whose storage a later call reused (see alloc_per_call)"},
    {nullptr, nullptr, 0, nullptr},
};

int ptgo_runtime_add(PyObject* module) {
  if (PyModule_AddFunctions(module, runtime_functions) < 0) return -1;
  if (PyType_Ready(&GraphType) < 0) return -1;
  Py_INCREF(&GraphType);
  if (PyModule_AddObject(module, "Graph", reinterpret_cast<PyObject*>(&GraphType)) < 0) return -1;
  PyObject* torch = PyImport_ImportModule("torch");
  if (torch == nullptr) return -1;
  ptgo_tensor_type = PyObject_GetAttrString(torch, "Tensor");
  Py_DECREF(torch);
  return ptgo_tensor_type ? 0 : -1;
}
