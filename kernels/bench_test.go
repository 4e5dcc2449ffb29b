package kernels

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// Benchmarks are reports (run with -bench); nothing here asserts a time.

// BenchmarkColdCompile: a small fused kernel (GELU + exp, parallel simd loop)
// from source to a published, verified cache entry; every iteration is a miss.
func BenchmarkColdCompile(b *testing.B) {
	c, _ := newTestCompiler(b, Config{})
	src := testSource(b, "gelu.c")
	for i := 0; b.Loop(); i++ {
		s := src
		s.Text += fmt.Sprintf("/* %d */\n", i)
		art, err := c.Build(context.Background(), s)
		require.NoError(b, err)
		require.False(b, art.Cached)
	}
}

// BenchmarkWarmStartProcess: a fresh process finds the compiler (one `cc -v`),
// opens the cache, verifies and dlopens four kernels. Reported as metrics
// measured inside the child, so process start-up is not counted.
func BenchmarkWarmStartProcess(b *testing.B) {
	needLoader(b)
	dir := b.TempDir()
	runChildren(b, dir, 1) // fills the cache
	var newMs, loadMs float64
	for b.Loop() {
		r := runChildren(b, dir, 1)[0]
		require.Equal(b, []bool{true, true, true, true}, r.Cached)
		newMs += r.NewMs
		loadMs += r.CompileMs
	}
	b.ReportMetric(newMs/float64(b.N), "new-ms/op")
	b.ReportMetric(loadMs/float64(b.N), "load4-ms/op")
}

// BenchmarkVerify: checking a cache entry (read the sidecar, stat and sha256
// the .so) — the integrity cost paid on every warm load.
func BenchmarkVerify(b *testing.B) {
	c, _ := newTestCompiler(b, Config{})
	art, err := c.Build(context.Background(), Source{Name: "vector_math", Text: vectorMathSource()})
	require.NoError(b, err)
	fi, err := os.Stat(art.Path)
	require.NoError(b, err)
	b.SetBytes(fi.Size())
	e := newEntry(c.Dir(), art.Key)
	for b.Loop() {
		require.NoError(b, e.verify())
	}
}

// BenchmarkCall: Kernel.Call overhead from Go: the cgo call, plus pinning
// when the data pointers are Go memory ("go-slices") rather than memory Go
// does not manage ("mmap", like torch's tensors).
func BenchmarkCall(b *testing.B) {
	needLoader(b)
	c, _ := newTestCompiler(b, Config{})
	lib, err := c.Compile(context.Background(), testSource(b, "status.c"))
	require.NoError(b, err)
	k, err := lib.Kernel("status_of")
	require.NoError(b, err)
	x, y := make([]float32, 4), make([]float32, 4)
	m, err := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(b, err)
	defer syscall.Munmap(m)
	for _, v := range []struct {
		name string
		ptrs []unsafe.Pointer
	}{
		{"go-slices", []unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&y[0])}},
		{"mmap", []unsafe.Pointer{unsafe.Pointer(&m[0]), unsafe.Pointer(&m[64])}},
	} {
		b.Run(v.name, func(b *testing.B) {
			ints := []int64{0}
			for b.Loop() {
				if err := k.Call(v.ptrs, ints, nil, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGELU4M: GELU over 4M floats on one thread, libmvec (omp simd) vs
// scalar libm — DESIGN D3 measured 2.2 ms vs 26 ms.
func BenchmarkGELU4M(b *testing.B) {
	needLoader(b)
	c, _ := newTestCompiler(b, Config{})
	scalar := testSource(b, "gelu_scalar.c")
	scalar.ExtraFlags = []string{"-fno-tree-vectorize"}
	variants := []struct {
		name, kernel string
		src          Source
	}{
		{"libmvec", "gelu_simd", testSource(b, "gelu_simd.c")},
		{"scalar", "gelu_scalar", scalar},
	}
	const n = 4 << 20
	x, out := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(i%2000-1000) / 250
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			lib, err := c.Compile(context.Background(), v.src)
			require.NoError(b, err)
			k, err := lib.Kernel(v.kernel)
			require.NoError(b, err)
			p := []unsafe.Pointer{unsafe.Pointer(&x[0]), unsafe.Pointer(&out[0])}
			b.SetBytes(4 * n)
			for b.Loop() {
				require.NoError(b, k.Call(p, []int64{n}, nil, 1))
			}
		})
	}
}
