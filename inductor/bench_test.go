package inductor

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"ptgo/kernels"
	"ptgo/primtorch"
)

// Benchmarks are reports (go test -bench . -run '^$' ./inductor), never timed assertions.

// chain10 is a 10-op pointwise chain over n floats (cheap ops: memory bound).
func chain10(n int64) string {
	return fmt.Sprintf(`graph chain10(x: f32[%d]):
  %%a : f32[%d] = prims.mul(%%x, 1.5)
  %%b : f32[%d] = prims.add(%%a, 0.25)
  %%c : f32[%d] = prims.maximum(%%b, 0.0)
  %%d : f32[%d] = prims.sub(%%c, %%x)
  %%e : f32[%d] = prims.mul(%%d, %%d)
  %%f : f32[%d] = prims.abs(%%e)
  %%g : f32[%d] = prims.add(%%f, %%x)
  %%h : f32[%d] = prims.minimum(%%g, 4.0)
  %%i : f32[%d] = prims.mul(%%h, 0.5)
  %%j : f32[%d] = prims.neg(%%i)
  return (%%j,)
`, n, n, n, n, n, n, n, n, n, n, n)
}

// gelu10 is a 10-op chain with transcendental math (tanh-GELU and a sigmoid).
func gelu10(n int64) string {
	return fmt.Sprintf(`graph gelu10(x: f32[%d]):
  %%a : f32[%d] = prims.mul(%%x, %%x)
  %%b : f32[%d] = prims.mul(%%a, %%x)
  %%c : f32[%d] = prims.mul(%%b, 0.044715)
  %%d : f32[%d] = prims.add(%%x, %%c)
  %%e : f32[%d] = prims.mul(%%d, 0.7978845608)
  %%f : f32[%d] = prims.tanh(%%e)
  %%g : f32[%d] = prims.add(%%f, 1.0)
  %%h : f32[%d] = prims.mul(%%g, %%x)
  %%i : f32[%d] = prims.mul(%%h, 0.5)
  %%j : f32[%d] = prims.sigmoid(%%i)
  return (%%j,)
`, n, n, n, n, n, n, n, n, n, n, n)
}

func copyGraph(n int64) string {
	return fmt.Sprintf("graph copy(x: f32[%d]):\n  %%c : f32[%d] = prims.clone(%%x)\n  return (%%c,)\n", n, n)
}

// kernelTimer compiles a one-kernel graph and times direct calls of its kernel on preallocated
// buffers (no allocation, no plan interpretation).
func kernelTimer(b *testing.B, src string) func(nthreads int) time.Duration {
	return kernelTimerOpts(b, src, Options{})
}

func kernelTimerOpts(b *testing.B, src string, opts Options) func(nthreads int) time.Duration {
	g := parseGraph(b, src)
	c := compileGraph(b, g, opts)
	require.Len(b, c.Source.Kernels, 1)
	kc := c.Source.Kernels[0]
	k, err := c.Library.Kernel(kc.Name)
	require.NoError(b, err)
	ptrs := make([]unsafe.Pointer, len(kc.Args))
	for i, buf := range kc.Args {
		t := &Tensor{DType: buf.DType, Sizes: []int64{staticSize(buf.StorageElems(), "")}, Strides: []int64{1},
			Data: NewStorage(staticSize(buf.StorageElems(), "") * int64(buf.DType.ItemSize()))}
		for j := int64(0); j < t.Numel(); j++ {
			t.Set(j, 3*math.Sin(float64(j))) // ordinary values: libmvec's slow paths are for NaN/huge
		}
		ptrs[i] = unsafe.Pointer(&t.Data[0])
	}
	return func(nthreads int) time.Duration {
		start := time.Now()
		require.NoError(b, k.Call(ptrs, nil, nil, nthreads))
		return time.Since(start)
	}
}

// BenchmarkBandwidth4M reports GB/s (bytes read + written) of a fused 10-op chain and of a
// copy over 4M floats, on 1 and 2 threads.
func BenchmarkBandwidth4M(b *testing.B) {
	const n = 4 << 20
	bytes := float64(2 * n * 4)
	for _, tc := range []struct{ name, src string }{{"copy", copyGraph(n)}, {"chain10", chain10(n)}, {"gelu10", gelu10(n)}} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", tc.name, threads), func(b *testing.B) {
				run := kernelTimer(b, tc.src)
				run(threads) // warm up: page faults, thread pool
				b.ResetTimer()
				var total time.Duration
				for i := 0; i < b.N; i++ {
					total += run(threads)
				}
				b.ReportMetric(bytes/(total.Seconds()/float64(b.N))/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkCompile reports the compile time of a representative graph (layer norm, a matmul
// with bias and GELU, a residual add and a softmax over the result): the Go stages alone, and
// cold (empty kernel cache) end to end.
func BenchmarkCompile(b *testing.B) {
	src := `graph block(x: f32[64,256], w: f32[256,256], bias: f32[256], g: f32[256], beta: f32[256]):
  %sum_1 : f32[64,1] = prims.sum(%x, [1], True)
  %mean  : f32[64,1] = prims.div(%sum_1, 256.0)
  %me    : f32[64,256]{1,0} = prims.expand(%mean, [64, 256])
  %xc    : f32[64,256] = prims.sub(%x, %me)
  %sq    : f32[64,256] = prims.mul(%xc, %xc)
  %ss    : f32[64,1] = prims.sum(%sq, [1], True)
  %var   : f32[64,1] = prims.div(%ss, 256.0)
  %ve    : f32[64,1] = prims.add(%var, 1e-05)
  %rs    : f32[64,1] = prims.rsqrt(%ve)
  %rse   : f32[64,256]{1,0} = prims.expand(%rs, [64, 256])
  %n     : f32[64,256] = prims.mul(%xc, %rse)
  %ge    : f32[64,256]{0,1} = prims.expand(%g, [64, 256])
  %ng    : f32[64,256] = prims.mul(%n, %ge)
  %be    : f32[64,256]{0,1} = prims.expand(%beta, [64, 256])
  %ln    : f32[64,256] = prims.add(%ng, %be)
  %mm    : f32[64,256] = prims.mm(%ln, %w)
  %bbe   : f32[64,256]{0,1} = prims.expand(%bias, [64, 256])
  %h     : f32[64,256] = prims.add(%mm, %bbe)
  %h2    : f32[64,256] = prims.mul(%h, 0.5)
  %hs    : f32[64,256] = prims.mul(%h, 0.7071067811865476)
  %er    : f32[64,256] = prims.erf(%hs)
  %e1    : f32[64,256] = prims.add(%er, 1.0)
  %gelu  : f32[64,256] = prims.mul(%h2, %e1)
  %res   : f32[64,256] = prims.add(%gelu, %x)
  %mx    : f32[64,1] = prims.amax(%res, [1], True)
  %mxe   : f32[64,256]{1,0} = prims.expand(%mx, [64, 256])
  %sb    : f32[64,256] = prims.sub(%res, %mxe)
  %ex    : f32[64,256] = prims.exp(%sb)
  %se    : f32[64,1] = prims.sum(%ex, [1], True)
  %see   : f32[64,256]{1,0} = prims.expand(%se, [64, 256])
  %sm    : f32[64,256] = prims.div(%ex, %see)
  return (%sm,)
`
	g := parseGraph(b, src)
	b.Run("go-stages", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			ir, err := Lower(g)
			require.NoError(b, err)
			Inline(ir)
			s := Fuse(ir)
			srcC := Generate(s, CodegenOptions{})
			_, err = Plan(s, srcC)
			require.NoError(b, err)
		}
	})
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			comp, err := kernels.New(context.Background(), kernels.Config{CacheDir: b.TempDir()})
			require.NoError(b, err)
			c, err := Compile(g, Options{Compiler: comp})
			require.NoError(b, err)
			b.ReportMetric(float64(len(c.Source.Kernels)), "kernels")
		}
	})
}

// TestBlockGraph runs the benchmark's block graph against the reference (so the benchmark
// measures a correct program).
func TestBlockGraph(t *testing.T) {
	_ = primtorch.Float32
	g := parseGraph(t, chain10(1000))
	checkAgainstReference(t, g, Options{}, 9, 2)
	g = parseGraph(t, gelu10(1000))
	checkAgainstReference(t, g, Options{}, 9, 2)
}

// BenchmarkChainVsCopy alternates the fused 10-op chain and the copy kernel over 4M floats on
// one thread (so machine noise hits both alike) and reports the chain's bandwidth as a
// percentage of the copy's.
func BenchmarkChainVsCopy(b *testing.B) {
	const n = 4 << 20
	runCopy, runChain := kernelTimer(b, copyGraph(n)), kernelTimer(b, chain10(n))
	runCopy(1)
	runChain(1)
	b.ResetTimer()
	var tc, tk time.Duration
	for i := 0; i < b.N; i++ {
		tc += runCopy(1)
		tk += runChain(1)
	}
	b.ReportMetric(100*tc.Seconds()/tk.Seconds(), "%ofcopy")
	b.ReportMetric(float64(2*n*4)/(tk.Seconds()/float64(b.N))/1e9, "chainGB/s")
}
