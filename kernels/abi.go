package kernels

import "strings"

// ABIVersion numbers the kernel calling convention below. It is part of every
// cache key.
const ABIVersion = 1

// Header is the C prelude a code generator pastes at the top of every
// translation unit: fixed-width integers, <math.h>, the PTGO_KERNEL export
// marker (units are compiled with -fvisibility=hidden, so only marked functions
// are visible to dlsym), the kernel function type, and `#pragma omp declare
// simd` declarations of the glibc libmvec functions (see VectorMath).
//
// A kernel entry point has the type ptgo_kernel_fn:
//
//	PTGO_KERNEL int cpp_fused_add_gelu_0(void *const *ptrs, const int64_t *ints,
//	                                      const double *floats, int nthreads);
//
// Its arguments and result:
//   - ptrs: tensor data pointers (inputs, then outputs, in the order of the
//     launch signature the generator emitted);
//   - ints: int64 sizes, strides, offsets and integer scalars;
//   - floats: double scalars (a float32 kernel converts them once);
//   - nthreads: the OpenMP thread count to use, ≥ 1 (torch.get_num_threads(),
//     DESIGN D6); parallel regions say num_threads(nthreads);
//   - returns 0 on success, or a nonzero status the generator defines (an
//     index out of range in gather/embedding), which callers turn into an error
//     rather than letting a kernel read out of bounds.
//
// Any pointer argument may be NULL when its array would be empty. The CPython
// shim calls this type directly from C; Go calls it through Kernel.Call.
var Header = `/* ptgo kernel ABI v1 (package kernels) */
#include <stdint.h>
#include <math.h>
#define PTGO_KERNEL __attribute__((visibility("default")))
typedef int ptgo_kernel_fn(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads);
` + vectorMathDecls()

// VectorMath lists the <math.h> functions Header declares with `#pragma omp
// declare simd notinbranch`, each in its float ("expf") and double ("exp")
// form. In a vectorised loop gcc calls glibc's libmvec variants of them
// (_ZGVdN8v_expf at avx2, _ZGVeN16v_expf at avx512), accurate to 4 ulp.
// They need glibc ≥ 2.35; the two-argument ones are listed in vectorMath2.
var VectorMath = []string{
	"acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh",
	"erf", "erfc", "exp", "exp10", "exp2", "expm1", "log", "log10", "log1p",
	"log2", "sin", "sinh", "tan", "tanh",
	"atan2", "hypot", "pow",
}

// vectorMath2 are the VectorMath entries that take two arguments.
var vectorMath2 = map[string]bool{"atan2": true, "hypot": true, "pow": true}

func vectorMathDecls() string {
	var b strings.Builder
	for _, fn := range VectorMath {
		for _, ty := range []struct{ c, suffix string }{{"float", "f"}, {"double", ""}} {
			args := ty.c
			if vectorMath2[fn] {
				args += ", " + ty.c
			}
			b.WriteString("#pragma omp declare simd notinbranch\n")
			b.WriteString("extern " + ty.c + " " + fn + ty.suffix + "(" + args + ");\n")
		}
	}
	return b.String()
}
