// torch's CPU random stream, drawn by ptgo (A135). Eager's dropout on a CPU without MKL's
// Bernoulli (torch 1.13 as Debian builds it; any torch on an AMD CPU) draws its noise with
// bernoulli_distribution<double>: per element one random64() of the default generator — two
// 32-bit words of its mt19937, the first the high half — masked to 53 bits and scaled by 2^-53,
// compared with 1 - p, in the noise tensor's memory order, one element after another
// (cpu_serial_kernel). torch's own loop costs about 9 ns an element here; this one reads the
// same engine (under the generator's lock, as torch does), runs the same recurrence a block of
// 624 words at a time and writes the comparison as a bool mask, which ptgo's kernels turn into
// x · (mask ? 1/(1-p) : 0): the values and the generator's state after the call are eager's,
// bit for bit. Whether this machine's torch draws that way is probed at start
// (ptgo._compat.dropout_draws_mt19937), never assumed: where it does not (MKL on an Intel CPU),
// dropout's noise stays torch's.
#include <Python.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/util/irange.h>

#include <cmath>
#include <cstring>
#include <mutex>

#include "ptgo_random.h"

#if defined(PTGO_THPWRAP_BY_REF)
PyObject* THPVariable_Wrap(const at::TensorBase& var);
#else
PyObject* THPVariable_Wrap(at::TensorBase var);
#endif

namespace {

constexpr int kN = 624;
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpper = 0x80000000u;
constexpr uint32_t kLower = 0x7fffffffu;

inline uint32_t twist(uint32_t u, uint32_t v) {
  return (((u & kUpper) | (v & kLower)) >> 1) ^ ((v & 1u) ? kMatrixA : 0u);
}

// regenerate is mt19937's next_state over the whole state array (the loops are written so the
// compiler can vectorise the first two: each reads only words not yet rewritten or rewritten at
// least kN - kM words earlier).
#define PTGO_VECTOR __attribute__((target_clones("avx2", "default"), optimize("O3")))

PTGO_VECTOR void regenerate(uint32_t* s) {
  for (int j = 0; j < kN - kM; j++) s[j] = s[j + kM] ^ twist(s[j], s[j + 1]);
  for (int j = kN - kM; j < kN - 1; j++) s[j] = s[j + kM - kN] ^ twist(s[j], s[j + 1]);
  s[kN - 1] = s[kM - 1] ^ twist(s[kN - 1], s[0]);
}

inline uint32_t temper_one(uint32_t y) {
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

PTGO_VECTOR void temper(const uint32_t* s, uint32_t* out, int64_t k) {
  for (int64_t i = 0; i < k; i++) out[i] = temper_one(s[i]);
}

// below writes, per pair of words (the high half first), whether its 53 low bits are below
// the threshold: the double they make, times 2^-53 exactly, is below q exactly when that
// integer is below ceil(q * 2^53).
PTGO_VECTOR void below(const uint32_t* words, bool* dst, int64_t k, int64_t threshold) {
  constexpr uint64_t kMask = (uint64_t(1) << 53) - 1;
  for (int64_t i = 0; i < k; i++) {
    uint64_t r = (static_cast<uint64_t>(words[2 * i]) << 32) | words[2 * i + 1];
    dst[i] = static_cast<int64_t>(r & kMask) < threshold;
  }
}

// Engine is a copy of torch's mt19937 state that hands out words in blocks; left and next keep
// torch's meaning (left - 1 words remain before the next regeneration).
struct Engine {
  at::mt19937_data_pod d;

  // take writes the next n words of the stream to out.
  void take(uint32_t* out, int64_t n) {
    while (n > 0) {
      if (d.left_ == 1) {
        regenerate(d.state_.data());
        d.left_ = kN + 1;
        d.next_ = 0;
      }
      int64_t k = std::min<int64_t>(n, d.left_ - 1);
      const uint32_t* s = d.state_.data() + d.next_;
      temper(s, out, k);
      out += k;
      n -= k;
      d.next_ += static_cast<uint32_t>(k);
      d.left_ -= static_cast<int>(k);
    }
  }
};

// bernoulli_mask(sizes, q) -> a contiguous bool tensor of those sizes, element i true where the
// i-th random64() of the default CPU generator, as a double in [0, 1), is below q.
PyObject* bernoulli_mask(PyObject*, PyObject* args) {
  PyObject* sizes_obj;
  double q;
  if (!PyArg_ParseTuple(args, "Od", &sizes_obj, &q)) return nullptr;
  PyObject* seq = PySequence_Fast(sizes_obj, "bernoulli_mask: sizes must be a sequence");
  if (seq == nullptr) return nullptr;
  std::vector<int64_t> sizes;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
    int64_t v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (v == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return nullptr;
    }
    sizes.push_back(v);
  }
  Py_DECREF(seq);
  try {
    at::Tensor out = at::empty(sizes, at::TensorOptions().dtype(at::kBool));
    int64_t n = out.numel();
    bool* dst = out.data_ptr<bool>();
    Py_BEGIN_ALLOW_THREADS
    auto* gen = at::check_generator<at::CPUGeneratorImpl>(at::detail::getDefaultCPUGenerator());
    constexpr int64_t kBlock = 1024;  // elements per batch of words (two words each)
    uint32_t words[2 * kBlock];
    // q ≤ 1 (a probability); ceil(q · 2^53) is exact in double, and every 53-bit integer is
    // below it when q = 1
    int64_t threshold = static_cast<int64_t>(std::ceil(q * 9007199254740992.0));
    std::lock_guard<std::mutex> lock(gen->mutex_);
    at::mt19937 eng = gen->engine();
    Engine e{eng.data()};
    for (int64_t b = 0; b < n; b += kBlock) {
      int64_t k = std::min(kBlock, n - b);
      e.take(words, 2 * k);
      below(words, dst + b, k, threshold);
    }
    eng.set_data(e.d);
    gen->set_engine(eng);
    Py_END_ALLOW_THREADS
    return THPVariable_Wrap(out);
  } catch (const c10::Error& err) {
    PyErr_SetString(PyExc_RuntimeError, err.what_without_backtrace());
    return nullptr;
  }
}

PyMethodDef random_functions[] = {
    {"bernoulli_mask", bernoulli_mask, METH_VARARGS,
     "bernoulli_mask(sizes, q) -> bool tensor: eager's CPU Bernoulli draws (mt19937, 53-bit doubles) below q"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

int ptgo_random_add(PyObject* module) { return PyModule_AddFunctions(module, random_functions); }
