//go:build cgo

package kernels_test

import (
	"context"
	"fmt"
	"os"
	"unsafe"

	"ptgo/kernels"
)

func ExampleCompiler_Compile() {
	dir, err := os.MkdirTemp("", "ptgo-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	c, err := kernels.New(context.Background(), kernels.Config{CacheDir: dir})
	if err != nil {
		fmt.Println("no compiler, run eagerly:", err)
		return
	}
	lib, err := c.Compile(context.Background(), kernels.Source{
		Name: "scale",
		Text: kernels.Header + `
PTGO_KERNEL int scale(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const float *x = ptrs[0];
	float *out = ptrs[1];
#pragma omp parallel for simd num_threads(nthreads)
	for (int64_t i = 0; i < ints[0]; i++)
		out[i] = x[i] * (float)floats[0];
	return 0;
}
`})
	if err != nil {
		panic(err)
	}
	k, err := lib.Kernel("scale")
	if err != nil {
		panic(err)
	}
	x, out := []float32{1, 2, 3}, make([]float32, 3)
	err = k.Call([]unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&out[0])}, []int64{3}, []float64{2.5}, 2)
	fmt.Println(out, err)
	// Output: [2.5 5 7.5] <nil>
}
