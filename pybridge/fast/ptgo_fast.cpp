// ptgo._fast — optional C++ fast path for the shim's tensor guards.
//
// The shim (ptgo_C.c) is plain C and reads tensor metadata through Python attributes, about
// 1 us per tensor. This extension reads it straight from at::Tensor (tens of ns) and answers
// grad mode from c10::GradMode. It is built only when torch's C++ headers are installed
// (Debian's libtorch-dev); the shim falls back to the attribute path otherwise, and also when a
// self-check at start-up finds that this build disagrees with the attribute path.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <c10/core/GradMode.h>
#include <c10/util/MaybeOwned.h>

#include "ptgo_abi.h"
#include "ptgo_fast.h"
#include "ptgo_random.h"
#include "ptgo_runtime.h"
#include "ptgo_variable.h"

namespace {


// ptgo dtype codes (primtorch.DType order) → c10::ScalarType.
const c10::ScalarType kScalarTypes[] = {
    c10::ScalarType::Bool,  c10::ScalarType::Byte,     c10::ScalarType::Char,  c10::ScalarType::Short,
    c10::ScalarType::Int,   c10::ScalarType::Long,     c10::ScalarType::Half,  c10::ScalarType::BFloat16,
    c10::ScalarType::Float, c10::ScalarType::Double,   c10::ScalarType::ComplexFloat,
    c10::ScalarType::ComplexDouble,
};
constexpr int kNumDTypes = sizeof(kScalarTypes) / sizeof(kScalarTypes[0]);

int dtype_code(c10::ScalarType st) {
  for (int i = 0; i < kNumDTypes; i++)
    if (kScalarTypes[i] == st) return i;
  return -1;
}

int device_code(const c10::Device& d) {
  switch (d.type()) {
    case c10::DeviceType::CPU: return 0;
    case c10::DeviceType::CUDA: return 1;
    case c10::DeviceType::Meta: return 2;
    default: return 3;
  }
}

// Caller guarantees obj is a torch.Tensor (the shim checks the exact Python type first).
int tensor_match(PyObject* obj, int64_t packed, const int64_t* vec, int32_t nvec) noexcept {
  const at::Tensor& t = ptgo::unpack(obj);
  // A nested tensor reports the strided layout but throws from sizes(): never a match.
  if (!t.defined() || t.layout() != c10::kStrided || t.is_nested()) return 0;
  int want_dtype = static_cast<int>(packed & 0xff);
  int want_devtype = static_cast<int>((packed >> 8) & 0xff);
  int want_devidx = static_cast<int>((packed >> 16) & 0xffff) - 1;
  bool want_rg = ((packed >> 32) & 1) != 0;
  if (want_dtype < 0 || want_dtype >= kNumDTypes || t.scalar_type() != kScalarTypes[want_dtype]) return 0;
  const c10::Device d = t.device();
  if (device_code(d) != want_devtype) return 0;
  if (want_devtype == 1 && d.index() != want_devidx) return 0;
  if (t.requires_grad() != want_rg) return 0;
  // vec: sizes, strides, then the storage offset
  int64_t ndim = (nvec - 1) / 2;
  if (t.dim() != ndim) return 0;
  auto sizes = t.sizes();
  auto strides = t.strides();
  // a size -1 is a dynamic dim (any size >= 2); a stride -1 is the row-major stride of the
  // actual sizes (a dim left of a dynamic one); a stride -(2 + mask) the product of the actual
  // sizes (at least 1) of the dims in mask (a dense layout in another order: channels-last)
  int64_t row = 1;
  for (int64_t i = ndim - 1; i >= 0; i--) {
    if (vec[i] < 0 ? sizes[i] < 2 : sizes[i] != vec[i]) return 0;
    int64_t want = vec[ndim + i];
    if (want == -1) {
      want = row;
    } else if (want < -1) {
      uint64_t mask = static_cast<uint64_t>(-want - 2);
      want = 1;
      for (int64_t j = 0; j < ndim; j++)
        if (mask >> j & 1) want *= sizes[j] > 1 ? sizes[j] : 1;
    }
    if (strides[i] != want) return 0;
    row *= sizes[i] > 1 ? sizes[i] : 1;
  }
  // an offset -1 is a dynamic storage offset (its symbol's guards check it)
  return vec[2 * ndim] < 0 || t.storage_offset() == vec[2 * ndim] ? 1 : 0;
}

int tensor_meta(PyObject* obj, ptgo_tensor_meta* m) noexcept {
  const at::Tensor& t = ptgo::unpack(obj);
  memset(m, 0, sizeof *m);
  if (!t.defined()) return -1;
  m->strided = t.layout() == c10::kStrided;
  if (t.is_nested()) {
    // Strided layout, but sizes() and strides() throw (std::terminate from this noexcept
    // function): reported as not strided, with no dimensions, and capture refuses it.
    m->strided = 0;
    m->dtype = dtype_code(t.scalar_type());
    m->device_type = device_code(t.device());
    m->device_index = t.device().has_index() ? t.device().index() : -1;
    m->requires_grad = t.requires_grad();
    m->is_leaf = t.is_leaf();
    return 0;
  }
  int64_t nd = t.dim();
  if (nd > PTGO_MAX_DIMS) return -1;
  m->ndim = static_cast<int32_t>(nd);
  auto sizes = t.sizes();
  for (int64_t i = 0; i < nd; i++) m->sizes[i] = sizes[i];
  if (m->strided) {
    auto strides = t.strides();
    for (int64_t i = 0; i < nd; i++) m->strides[i] = strides[i];
    m->storage_offset = t.storage_offset();
  }
  m->dtype = dtype_code(t.scalar_type());
  const c10::Device d = t.device();
  m->device_type = device_code(d);
  m->device_index = d.has_index() ? d.index() : -1;
  m->requires_grad = t.requires_grad();
  m->is_leaf = t.is_leaf();
  return 0;
}

int grad_enabled() noexcept { return c10::GradMode::is_enabled(); }

int64_t tensor_version(PyObject* obj) noexcept {
  const at::Tensor& t = ptgo::unpack(obj);
  return t.defined() ? static_cast<int64_t>(t._version()) : -1;
}

// What tensor.data_ptr() returns (a version guard's data pointer: `p.data = t` swaps the storage
// and keeps the version), without a Python method call: 0.5 us of a frozen model's guards per
// parameter. A tensor without storage (or any that makes data_ptr() throw) has none.
int64_t tensor_data_ptr(PyObject* obj, int* ok) noexcept {
  const at::Tensor& t = ptgo::unpack(obj);
  *ok = 0;
  if (!t.defined() || !t.has_storage()) return 0;
  try {
    const int64_t p = reinterpret_cast<int64_t>(t.data_ptr());
    *ok = 1;
    return p;
  } catch (...) {
    return 0;
  }
}

const ptgo_fast_api kApi = {PTGO_FAST_VERSION, tensor_match, tensor_meta, grad_enabled, tensor_version,
                            tensor_data_ptr};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "ptgo._fast",
                       "C++ fast path for ptgo's tensor guards (reads at::Tensor directly).", -1};

}  // namespace

PyMODINIT_FUNC PyInit__fast(void) {
  PyObject* m = PyModule_Create(&kModule);
  if (m == nullptr) return nullptr;
  PyObject* cap = PyCapsule_New(const_cast<ptgo_fast_api*>(&kApi), "ptgo._fast.api", nullptr);
  if (cap == nullptr || PyModule_AddObject(m, "api", cap) < 0) {
    Py_XDECREF(cap);
    Py_DECREF(m);
    return nullptr;
  }
  if (ptgo_runtime_add(m) < 0 || ptgo_random_add(m) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
