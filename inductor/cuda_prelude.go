package inductor

import (
	"strings"

	"ptgo/primtorch"
)

// The CUDA dialect of the kernel bodies. Bodies are rendered by the C backend's walk (kgen.val,
// kgen.expr, kgen.convert, the ops table of ops.go, the literals and types of dtype.go): the same
// text, so the same semantics, that the conformance suite checks for the C backend against the
// reference interpreter. What differs is supplied here, under the same names:
//
//   - the C types: fixed-width integer typedefs, INFINITY/NAN/INT64_MIN macros (NVRTC has no
//     libc headers, and none are included: compiles stay fast, as in D3);
//   - float16: the C code's _Float16 is a macro for ptgo_half, a 2-byte struct converting to
//     and from float with the PTX cvt instructions (round to nearest even), so `(float)x`,
//     `(_Float16)y` and `(float)(_Float16)z` mean what they mean in C;
//   - bfloat16: ptgo_bf2f/ptgo_f2bf, the same bit manipulation as the C helpers;
//   - helpers (floordiv, remainder, pow of integers, float→int conversions) are the C text
//     with `static __device__ __forceinline__` for `static inline`; exp_float, the C backend's
//     branch-free exp for masked softmax (a libmvec workaround), is plain expf on a GPU.
//
// libm names (expf, tanhf, erff, fmodf, rintf, ...) are CUDA's device functions of the same
// names and precision class; NVRTC compiles with --fmad=false, IEEE division and square root and
// no flush to zero (kernels/cuda.DefaultOpts), as the C backend compiles with
// -ffp-contract=off and without -ffast-math.

// CUDAHeader starts every CUDA translation unit.
const CUDAHeader = `/* ptgo CUDA prelude: no headers (NVRTC, compiled without includes) */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fc00000)
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
struct ptgo_half {
    unsigned short x;
    __device__ __forceinline__ ptgo_half() {}
    __device__ __forceinline__ ptgo_half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(x) : "f"(f)); }
    template <typename T> __device__ __forceinline__ ptgo_half(T v) : ptgo_half((float)v) {}
    __device__ __forceinline__ operator float() const {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(x));
        return f;
    }
};
#define _Float16 ptgo_half
template <typename T, int N> struct alignas(sizeof(T) * N) ptgo_vec { T v[N]; };
template <typename V, typename T> static __device__ __forceinline__ V ptgo_vld(const T *p) { return *reinterpret_cast<const V *>(p); }
template <typename V, typename T> static __device__ __forceinline__ void ptgo_vst(T *p, const V &v) { *reinterpret_cast<V *>(p) = v; }
template <typename T> static __device__ __forceinline__ T ptgo_shfl(T v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
`

// cudaHelperText turns a C helper of ops.go into its device definition.
func cudaHelperText(name string, dt primtorch.DType, text string) string {
	if name == "exp" {
		// The C backend's branch-free exp exists because glibc's vector expf goes scalar for a
		// whole vector with one infinite lane; a GPU's expf has no such cliff.
		return "static __device__ __forceinline__ float ptgo_exp_float(float x) { return expf(x); }"
	}
	// C++ overloads copysign: an int literal matches no single one
	text = strings.ReplaceAll(text, "copysignf(0, ", "copysignf(0.0f, ")
	text = strings.ReplaceAll(text, "copysign(0, ", "copysign(0.0, ")
	return deviceText(text)
}

// cudaRawText turns a named C helper block (codegen.go's tu.raw) into device code.
func cudaRawText(name, text string) string {
	if name == "bf16" {
		return cudaBF16Helpers
	}
	return deviceText(text)
}

func deviceText(text string) string {
	text = strings.ReplaceAll(text, "static inline __attribute__((always_inline))", "static __device__ __forceinline__")
	return strings.ReplaceAll(text, "static inline ", "static __device__ __forceinline__ ")
}

// cudaBF16Helpers are bf16Helpers (codegen.go) in device code: the same rounding (to nearest
// even, NaN to the quiet 0x7fc0).
const cudaBF16Helpers = `static __device__ __forceinline__ float ptgo_bf2f(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }
static __device__ __forceinline__ uint16_t ptgo_f2bf(float f) {
    uint32_t u = __float_as_uint(f);
    if (f != f) return 0x7fc0;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}`
