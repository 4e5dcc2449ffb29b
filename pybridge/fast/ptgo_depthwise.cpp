// ptgo's depthwise convolution (A124): a 2-d convolution whose groups equal its input and output
// channels, over a dense NCHW float32 input, with a bias and an activation applied in the output
// pass. No torch in here: ptgo_runtime.cpp decides which steps come here and calls
// ptgo_depthwise_conv2d over a range of (image, channel) planes.
//
// One plane at a time. Its input is copied into zero-padded *phase planes*: with strides sh×sw,
// phase (r, c) holds the padded input's rows r, r+sh, … and columns c, c+sw, …, so tap (a, b)
// of output (i, j) reads phase (a mod sh, b mod sw) at row i + a div sh, column j + b div sw:
// every tap is a dense shifted read for strides 1 and 2 alike. Outputs are computed at every
// column of a phase row's pitch Wq (Wq − Wo of them are discarded), i.e. over the flat index
// i·Wq + j, so vectors are full whatever the width (a 7-wide row would leave a 16-float vector
// mostly empty). Sums run over the taps in row-major order, in float, one accumulator per output.
#include "ptgo_depthwise.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include <immintrin.h>

namespace {

struct Geo {
  int64_t H, W, kh, kw, sh, sw, ph, pw, Ho, Wo;
  int64_t Wq, Rq;   // a phase plane's pitch and rows
  int64_t plane;    // floats per phase plane (with the slack the last vectors read)
  int64_t flat;     // outputs computed per plane: Ho·Wq rounded up to whole vector blocks
  int ntaps;
};

typedef float v16 __attribute__((vector_size(64)));
typedef float v8 __attribute__((vector_size(32)));
typedef float v4 __attribute__((vector_size(16)));

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx2,fma")
namespace avx512 {
#define PTGO_DW_MASKED
#include "ptgo_depthwise_impl.h"
#undef PTGO_DW_MASKED
}  // namespace avx512
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
#include "ptgo_depthwise_impl.h"
}  // namespace avx2
#pragma GCC pop_options

namespace sse {
#include "ptgo_depthwise_impl.h"
}  // namespace sse

int vector_width() {
  static const int width = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 8;
    return 4;
  }();
  return width;
}

// A call's geometry for vector width L.
Geo geometry(const ptgo_dw_shape* s, int64_t L) {
  Geo g;
  g.H = s->H, g.W = s->W, g.kh = s->kh, g.kw = s->kw, g.sh = s->sh, g.sw = s->sw, g.ph = s->ph, g.pw = s->pw;
  g.Ho = (g.H + 2 * g.ph - g.kh) / g.sh + 1;
  g.Wo = (g.W + 2 * g.pw - g.kw) / g.sw + 1;
  const int64_t Hp = (g.Ho - 1) * g.sh + g.kh, Wp = (g.Wo - 1) * g.sw + g.kw;
  g.Rq = (Hp + g.sh - 1) / g.sh;
  g.Wq = (Wp + g.sw - 1) / g.sw;
  g.flat = (g.Ho * g.Wq + L - 1) / L * L;
  const int64_t reach = ((g.kh - 1) / g.sh) * g.Wq + (g.kw - 1) / g.sw;
  g.plane = (std::max(g.Rq * g.Wq, g.flat + reach) + 2 * L + 15) / 16 * 16;
  g.ntaps = static_cast<int>(g.kh * g.kw);
  return g;
}

// The scratch floats a call with geometry g uses: two sets of phase planes and the results.
int64_t scratch_floats(const Geo& g) { return 2 * g.sh * g.sw * g.plane + g.flat + 16; }

}  // namespace

int ptgo_depthwise_supported(const ptgo_dw_shape* s) {
  if (s->kh < 1 || s->kw < 1 || s->kh > 7 || s->kw > 7 || s->sh < 1 || s->sw < 1 || s->sh > 2 || s->sw > 2) return 0;
  if (s->ph < 0 || s->pw < 0 || s->ph >= s->kh || s->pw >= s->kw) return 0;
  if (s->H + 2 * s->ph < s->kh || s->W + 2 * s->pw < s->kw) return 0;
  return 1;
}

// The measured rule (A124, bench/depthwise.py --shapes, 1 thread): torch's convolution (oneDNN,
// vectorised across channels) is faster for 5×5 and larger kernels on planes of at most 14×14
// outputs with more than 576 channels (efficientnet_b0's 672×14×14 and 1152×7×7 layers: 0.85–0.95×
// here); the kernel's cost per plane is about constant there, torch's falls as channels grow
// (576×7×7 5×5 with relu: 1.31× here). Everything else measured faster here (1.07–4.2×).
int ptgo_depthwise_preferred(const ptgo_dw_shape* s) {
  const int64_t Ho = (s->H + 2 * s->ph - s->kh) / s->sh + 1, Wo = (s->W + 2 * s->pw - s->kw) / s->sw + 1;
  if (s->kh * s->kw >= 25 && Ho * Wo <= 14 * 14 && s->C > 576) return 0;
  return 1;
}

// Enough for every vector width (the widest pads most).
int64_t ptgo_depthwise_scratch(const ptgo_dw_shape* s) { return scratch_floats(geometry(s, 16)); }

int ptgo_depthwise_width(void) { return vector_width(); }

void ptgo_depthwise_conv2d_width(const float* x, const float* w, const float* b, float* y, const ptgo_dw_shape* s,
                                 int act, int64_t p0, int64_t p1, float* scratch, int width) {
  if (width > vector_width()) width = vector_width();
  const Geo g = geometry(s, width >= 16 ? 16 : width >= 8 ? 8 : 4);
  std::memset(scratch, 0, sizeof(float) * scratch_floats(g));
  if (width >= 16) avx512::planes<v16, 16, 8>(x, w, b, y, g, act, s->C, p0, p1, scratch);
  else if (width >= 8) avx2::planes<v8, 8, 4>(x, w, b, y, g, act, s->C, p0, p1, scratch);
  else sse::planes<v4, 4, 4>(x, w, b, y, g, act, s->C, p0, p1, scratch);
}

void ptgo_depthwise_conv2d(const float* x, const float* w, const float* b, float* y, const ptgo_dw_shape* s,
                           int act, int64_t p0, int64_t p1, float* scratch) {
  ptgo_depthwise_conv2d_width(x, w, b, y, s, act, p0, p1, scratch, vector_width());
}
