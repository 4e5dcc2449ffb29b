// ptgo's depthwise convolution kernel (ptgo_depthwise.cpp, A124), free of torch.
#ifndef PTGO_DEPTHWISE_H
#define PTGO_DEPTHWISE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// The activation applied in the output pass, after the bias.
enum { PTGO_DW_NONE = 0, PTGO_DW_RELU = 1, PTGO_DW_RELU6 = 2, PTGO_DW_SILU = 3 };

// One convolution: input [N, C, H, W] (dense NCHW), weight [C, 1, kh, kw] (dense), stride
// sh×sw, padding ph×pw, dilation 1; the output is [N, C, Ho, Wo] (dense NCHW).
typedef struct {
  int64_t N, C, H, W, kh, kw, sh, sw, ph, pw;
} ptgo_dw_shape;

// The entry points are visible outside ptgo._fast (built with hidden visibility) so that
// bench/depthwise.py can time the kernel on its own through ctypes.
#define PTGO_DW_API __attribute__((visibility("default")))

// Whether the kernel takes this shape (1 or 0).
PTGO_DW_API int ptgo_depthwise_supported(const ptgo_dw_shape* s);

// Whether the kernel is faster than torch's convolution for this shape (measured: A124).
PTGO_DW_API int ptgo_depthwise_preferred(const ptgo_dw_shape* s);

// The floats of scratch memory one ptgo_depthwise_conv2d call needs.
PTGO_DW_API int64_t ptgo_depthwise_scratch(const ptgo_dw_shape* s);

// Computes the output planes p0 ≤ n·C + c < p1 (b may be null: no bias).
PTGO_DW_API void ptgo_depthwise_conv2d(const float* x, const float* w, const float* b, float* y, const ptgo_dw_shape* s,
                           int act, int64_t p0, int64_t p1, float* scratch);

// The vector width (floats) ptgo_depthwise_conv2d uses on this CPU: 16 (AVX-512), 8 (AVX2 and
// FMA) or 4.
PTGO_DW_API int ptgo_depthwise_width(void);

// ptgo_depthwise_conv2d with vectors of at most width floats (tests run every instruction set
// the CPU has).
PTGO_DW_API void ptgo_depthwise_conv2d_width(const float* x, const float* w, const float* b, float* y,
                                             const ptgo_dw_shape* s, int act, int64_t p0, int64_t p1,
                                             float* scratch, int width);

#ifdef __cplusplus
}
#endif

#endif
