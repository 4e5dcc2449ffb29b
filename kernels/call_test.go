package kernels

import (
	"context"
	"debug/elf"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func ptrs(xs ...any) []unsafe.Pointer {
	ps := make([]unsafe.Pointer, len(xs))
	for i, x := range xs {
		switch s := x.(type) {
		case []float32:
			ps[i] = unsafe.Pointer(&s[0])
		case []float64:
			ps[i] = unsafe.Pointer(&s[0])
		case []int32:
			ps[i] = unsafe.Pointer(&s[0])
		case []uint32:
			ps[i] = unsafe.Pointer(&s[0])
		default:
			panic("ptrs: unsupported type")
		}
	}
	return ps
}

func TestVecAdd(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), testSource(t, "vecadd.c"))
	require.NoError(t, err)
	k, err := lib.Kernel("vec_add")
	require.NoError(t, err)

	for _, n := range []int{1, 7, 8, 1000, 1027} { // scalar tails and vector bodies
		a, b, out := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(i), float32(2*i+1)
		}
		require.NoError(t, k.Call(ptrs(a, b, out), []int64{int64(n)}, []float64{0.5}, 1))
		for i := range out {
			require.Equal(t, a[i]+0.5*b[i], out[i], "n=%d i=%d", n, i)
		}
	}
}

func TestHiddenSymbolsAreNotExported(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), testSource(t, "vecadd.c"))
	require.NoError(t, err)
	require.Equal(t, []string{"vec_add"}, exportedSymbols(t, lib.Path))
	_, err = lib.Kernel("vec_add_helper")
	require.ErrorContains(t, err, "PTGO_KERNEL")
	require.ErrorContains(t, err, lib.SourcePath)
}

func TestGELUThroughLibmvec(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), testSource(t, "gelu.c"))
	require.NoError(t, err)
	want := map[string]string{"avx512": "_ZGVeN16v_expf", "avx2": "_ZGVdN8v_expf", "sse4.2": "_ZGVbN4v_expf", "baseline": "_ZGVbN4v_expf"}[c.ISA().Name]
	require.Contains(t, importedSymbols(t, lib.Path), want, "ISA %s: the exp loop must call libmvec", c.ISA().Name)

	k, err := lib.Kernel("gelu_exp")
	require.NoError(t, err)
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	// 64 values so that specials land in vector bodies, not only tails.
	x := make([]float32, 64)
	for i := range x {
		x[i] = float32(i-32) / 4
	}
	x[3], x[17], x[40], x[41] = nan, inf, -inf, -0.0
	out, e := make([]float32, len(x)), make([]float32, len(x))
	require.NoError(t, k.Call(ptrs(x, out, e), []int64{int64(len(x))}, nil, 2))

	for i, v := range x {
		xv := float64(v)
		wantE := math.Exp(xv)
		wantG := 0.5 * xv * (1 + math.Erf(xv/math.Sqrt2))
		switch {
		case math.IsNaN(xv):
			require.True(t, math.IsNaN(float64(e[i])), "exp(NaN) must be NaN, got %v", e[i])
			require.True(t, math.IsNaN(float64(out[i])), "gelu(NaN) must be NaN, got %v", out[i])
		case math.IsInf(xv, 1):
			require.Equal(t, inf, e[i])
			require.Equal(t, inf, out[i])
		case math.IsInf(xv, -1):
			require.Equal(t, float32(0), e[i])
			require.True(t, math.IsNaN(float64(out[i])), "gelu(-inf) is -inf*0 = NaN as in C, got %v", out[i])
		default:
			require.InEpsilon(t, wantE, float64(e[i]), 1e-6, "exp(%v)", v)
			require.InDelta(t, wantG, float64(out[i]), 1e-6*(1+math.Abs(wantG)), "gelu(%v)", v)
		}
	}
}

func TestOpenMPParallelLoop(t *testing.T) {
	t.Run("libgomp", func(t *testing.T) { testOpenMPParallelLoop(t, testSource(t, "omp_threads.c")) })
	t.Run("pool", func(t *testing.T) { testOpenMPParallelLoop(t, poolSource(t, "omp_threads.c")) })
}

func testOpenMPParallelLoop(t *testing.T, src Source) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), src)
	require.NoError(t, err)
	k, err := lib.Kernel("omp_scale")
	require.NoError(t, err)

	for _, nthreads := range []int{1, 2, 3} {
		n := 10000
		x, out := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i] = float64(i)
		}
		seen, team := make([]int32, 8), make([]int32, 1)
		require.NoError(t, k.Call(ptrs(x, out, seen, team), []int64{int64(n)}, nil, nthreads))
		require.Equal(t, int32(nthreads), team[0], "team size")
		for i := range nthreads {
			require.Equal(t, int32(1), seen[i], "thread %d of %d never ran", i, nthreads)
		}
		for i := range out {
			require.Equal(t, 2*x[i], out[i])
		}
	}
}

// TestPoolRuntimeNeedsNoLibgomp: a unit with PoolRuntime defines the libgomp
// entry points it needs, so its parallel regions run on ptgo's pool
// (kernels/dl/pool.c), not on the OpenMP runtime torch has loaded.
func TestPoolRuntimeNeedsNoLibgomp(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), poolSource(t, "omp_threads.c"))
	require.NoError(t, err)
	f, err := elf.Open(lib.Path)
	require.NoError(t, err)
	defer f.Close()
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	for _, l := range libs {
		require.NotContains(t, l, "gomp", "the library depends on libgomp")
	}
	require.Contains(t, exportedSymbols(t, lib.Path), "ptgo_set_parallel")
	syms, err := f.DynamicSymbols()
	require.NoError(t, err)
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF {
			require.False(t, strings.HasPrefix(s.Name, "GOMP_") || strings.HasPrefix(s.Name, "omp_"),
				"undefined OpenMP symbol %s", s.Name)
		}
	}
}

// TestPoolManyRegions runs many short regions back to back at several thread
// counts, and from several goroutines at once (a busy pool runs a caller's
// region on that caller alone), checking every result.
func TestPoolManyRegions(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), poolSource(t, "omp_threads.c"))
	require.NoError(t, err)
	k, err := lib.Kernel("omp_scale")
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 257 + g
			x, out := make([]float64, n), make([]float64, n)
			for i := range x {
				x[i] = float64(i + g)
			}
			for rep := range 300 {
				nthreads := 1 + rep%3
				seen, team := make([]int32, 8), make([]int32, 1)
				if err := k.Call(ptrs(x, out, seen, team), []int64{int64(n)}, nil, nthreads); err != nil {
					errs <- err
					return
				}
				if team[0] < 1 || int(team[0]) > nthreads {
					errs <- fmt.Errorf("team of %d for %d threads", team[0], nthreads)
					return
				}
				for i := range out {
					if out[i] != 2*x[i] {
						errs <- fmt.Errorf("goroutine %d rep %d: out[%d] = %v, want %v", g, rep, i, out[i], 2*x[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestKernelStatusAndArguments(t *testing.T) {
	needLoader(t)
	c, _ := newTestCompiler(t, Config{})
	lib, err := c.Compile(context.Background(), testSource(t, "status.c"))
	require.NoError(t, err)
	k, err := lib.Kernel("status_of")
	require.NoError(t, err)

	require.NoError(t, k.Call(nil, []int64{0}, nil, 1), "nil ptrs and floats are passed as NULL")
	err = k.Call(nil, []int64{3}, nil, 1)
	var kerr *KernelError
	require.ErrorAs(t, err, &kerr)
	require.Equal(t, int32(3), kerr.Status)
	require.ErrorContains(t, k.Call(nil, []int64{0}, nil, 0), "nthreads=0")
	require.ErrorContains(t, Kernel{Name: "x"}.Call(nil, nil, nil, 1), "no address")
}

// mxcsrBits are the x86 flush-to-zero and denormals-are-zero bits.
const mxcsrFTZ, mxcsrDAZ = 1 << 15, 1 << 6

// callMXCSR loads testdata/mxcsr.c built with extra flags, on a locked thread
// that is thrown away afterwards (the goroutine exits locked), so a library
// constructor that changes the thread's MXCSR cannot leak into other tests.
func callMXCSR(t *testing.T, c *Compiler, extra ...string) (mxcsr uint32, y float32) {
	t.Helper()
	src := testSource(t, "mxcsr.c")
	src.ExtraFlags = extra
	type result struct {
		mxcsr uint32
		y     float32
		err   error
	}
	done := make(chan result)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		lib, err := c.Compile(context.Background(), src)
		if err != nil {
			done <- result{err: err}
			return
		}
		k, err := lib.Kernel("mxcsr")
		if err != nil {
			done <- result{err: err}
			return
		}
		out, x, y := []uint32{0}, []float32{1e-30}, []float32{0}
		err = k.Call(ptrs(out, x, y), []int64{1}, nil, 1)
		done <- result{out[0], y[0], err}
	}()
	r := <-done
	require.NoError(t, r.err)
	return r.mxcsr, r.y
}

// TestLoadingKeepsDenormals guards the flag choice in doc.go: gcc 12 links
// crtfastmath.o into -ffast-math shared libraries, whose constructor turns on
// flush-to-zero for the loading thread, changing eager torch's results too.
func TestLoadingKeepsDenormals(t *testing.T) {
	needLoader(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("MXCSR is x86-only; this test runs on amd64")
	}
	c, _ := newTestCompiler(t, Config{})
	mxcsr, y := callMXCSR(t, c)
	require.Zero(t, mxcsr&(mxcsrFTZ|mxcsrDAZ), "MXCSR %#x: loading a kernel must not enable FTZ/DAZ", mxcsr)
	require.NotZero(t, y, "1e-30f * 1e-10f is a denormal and must not flush to zero")

	// The negative control: the check above does catch -ffast-math.
	mxcsr, y = callMXCSR(t, c, "-ffast-math")
	require.NotZero(t, mxcsr&mxcsrFTZ, "MXCSR %#x: expected -ffast-math's crtfastmath to set FTZ", mxcsr)
	require.Zero(t, y)
}
