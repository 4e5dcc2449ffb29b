package kernels

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// vectorMathRefs gives each VectorMath function a Go reference and an input
// range inside its domain.
var vectorMathRefs = map[string]struct {
	lo, hi float64
	f1     func(float64) float64
	f2     func(y, x float64) float64
}{
	"acos":  {-1, 1, math.Acos, nil},
	"acosh": {1, 20, math.Acosh, nil},
	"asin":  {-1, 1, math.Asin, nil},
	"asinh": {-20, 20, math.Asinh, nil},
	"atan":  {-20, 20, math.Atan, nil},
	"atanh": {-0.99, 0.99, math.Atanh, nil},
	"cbrt":  {-50, 50, math.Cbrt, nil},
	"cos":   {-10, 10, math.Cos, nil},
	"cosh":  {-10, 10, math.Cosh, nil},
	"erf":   {-4, 4, math.Erf, nil},
	"erfc":  {-4, 4, math.Erfc, nil},
	"exp":   {-20, 20, math.Exp, nil},
	"exp10": {-10, 10, func(x float64) float64 { return math.Pow(10, x) }, nil},
	"exp2":  {-30, 30, math.Exp2, nil},
	"expm1": {-5, 5, math.Expm1, nil},
	"log":   {0.01, 100, math.Log, nil},
	"log10": {0.01, 100, math.Log10, nil},
	"log1p": {-0.9, 100, math.Log1p, nil},
	"log2":  {0.01, 100, math.Log2, nil},
	"sin":   {-10, 10, math.Sin, nil},
	"sinh":  {-10, 10, math.Sinh, nil},
	"tan":   {-1.5, 1.5, math.Tan, nil},
	"tanh":  {-10, 10, math.Tanh, nil},
	"atan2": {-5, 5, nil, math.Atan2},
	"hypot": {-5, 5, nil, math.Hypot},
	"pow":   {0.1, 5, nil, math.Pow},
}

// libmvecPrefix is the vector-ABI mangling prefix and float/double lane counts
// gcc uses at each ISA level.
var libmvecPrefix = map[string]struct {
	isa            string
	floats, double int
}{
	"avx512": {"e", 16, 8}, "avx2": {"d", 8, 4}, "sse4.2": {"b", 4, 2}, "baseline": {"b", 4, 2},
}

// vectorMathSource has one kernel per function and type:
// vm_<fn><suffix>(x, y, out) over n elements.
func vectorMathSource() string {
	var b strings.Builder
	b.WriteString(Header)
	for _, fn := range VectorMath {
		for _, ty := range []struct{ c, suffix string }{{"float", "f"}, {"double", ""}} {
			call := fmt.Sprintf("%s%s(x[i])", fn, ty.suffix)
			if vectorMath2[fn] {
				call = fmt.Sprintf("%s%s(x[i], y[i])", fn, ty.suffix)
			}
			fmt.Fprintf(&b, `PTGO_KERNEL int vm_%[1]s%[2]s(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const %[3]s *x = ptrs[0], *y = ptrs[1];
	%[3]s *out = ptrs[2];
	(void)y; (void)floats; (void)nthreads;
#pragma omp simd
	for (int64_t i = 0; i < ints[0]; i++)
		out[i] = %[4]s;
	return 0;
}
`, fn, ty.suffix, ty.c, call)
		}
	}
	return b.String()
}

func TestVectorMathDecls(t *testing.T) {
	needLoader(t)
	require.Len(t, VectorMath, len(vectorMathRefs), "every VectorMath function needs a reference in vectorMathRefs")
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), Source{Name: "vector_math", Text: vectorMathSource()})
	require.NoError(t, err)

	imports := importedSymbols(t, lib.Path)
	p := libmvecPrefix[c.ISA().Name]
	const n = 61 // vector bodies and a tail
	for _, fn := range VectorMath {
		ref := vectorMathRefs[fn]
		v := "v"
		if ref.f2 != nil {
			v = "vv"
		}
		require.Contains(t, imports, fmt.Sprintf("_ZGV%sN%d%s_%sf", p.isa, p.floats, v, fn), "%sf is not vectorised", fn)
		require.Contains(t, imports, fmt.Sprintf("_ZGV%sN%d%s_%s", p.isa, p.double, v, fn), "%s is not vectorised", fn)

		x64, y64 := make([]float64, n), make([]float64, n)
		for i := range x64 {
			x64[i] = ref.lo + (ref.hi-ref.lo)*float64(i)/(n-1)
			y64[i] = ref.lo + (ref.hi-ref.lo)*float64((i*7)%n)/(n-1)
		}
		x32, y32 := make([]float32, n), make([]float32, n)
		for i := range x64 {
			x32[i], y32[i] = float32(x64[i]), float32(y64[i])
		}
		want := func(x, y float64) float64 {
			if ref.f2 != nil {
				return ref.f2(x, y)
			}
			return ref.f1(x)
		}

		k, err := lib.Kernel("vm_" + fn + "f")
		require.NoError(t, err)
		out32 := make([]float32, n)
		require.NoError(t, k.Call([]unsafe.Pointer{unsafe.Pointer(&x32[0]), unsafe.Pointer(&y32[0]), unsafe.Pointer(&out32[0])}, []int64{n}, nil, 1))
		for i := range out32 {
			w := want(float64(x32[i]), float64(y32[i]))
			require.InDelta(t, w, float64(out32[i]), 4e-6*math.Abs(w)+1e-6, "%sf(%v, %v)", fn, x32[i], y32[i])
		}

		k, err = lib.Kernel("vm_" + fn)
		require.NoError(t, err)
		out64 := make([]float64, n)
		require.NoError(t, k.Call([]unsafe.Pointer{unsafe.Pointer(&x64[0]), unsafe.Pointer(&y64[0]), unsafe.Pointer(&out64[0])}, []int64{n}, nil, 1))
		for i := range out64 {
			w := want(x64[i], y64[i])
			require.InDelta(t, w, out64[i], 1e-14*math.Abs(w)+1e-15, "%s(%v, %v)", fn, x64[i], y64[i])
		}
	}
}
