package inductor

import (
	"context"
	"flag"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/kernels"
	"ptgo/primtorch"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// loadGraph parses testdata/graphs/<name>.txt.
func loadGraph(t testing.TB, name string) *fxgraph.Graph {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", "graphs", name+".txt"))
	require.NoError(t, err)
	return parseGraph(t, string(text))
}

func parseGraph(t testing.TB, text string) *fxgraph.Graph {
	t.Helper()
	g, err := fxgraph.Parse(text)
	require.NoError(t, err)
	require.NoError(t, fxgraph.Verify(g, nil))
	return g
}

// graphNames lists the representative graphs in testdata/graphs.
func graphNames(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "graphs", "*.txt"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".txt"))
	}
	require.NotEmpty(t, names)
	return names
}

// golden compares got with testdata/golden/<file>, or rewrites it with -update.
func golden(t *testing.T, file, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", file)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./inductor -run %s -update", t.Name())
	require.Equal(t, string(want), got, "%s is stale; review the diff and run go test ./inductor -update", path)
}

var (
	compilerOnce sync.Once
	compiler     *kernels.Compiler
	compilerErr  error
)

// testCompiler is one kernels.Compiler for the package's tests (the default cache directory, so
// repeated runs are warm).
func testCompiler(t testing.TB) *kernels.Compiler {
	t.Helper()
	compilerOnce.Do(func() { compiler, compilerErr = kernels.New(context.Background(), kernels.Config{}) })
	require.NoError(t, compilerErr, "inductor's tests need a C compiler (gcc)")
	return compiler
}

func compileGraph(t testing.TB, g *fxgraph.Graph, opts Options) *Compiled {
	t.Helper()
	opts.Compiler = testCompiler(t)
	opts.Check = true
	c, err := Compile(g, opts)
	require.NoError(t, err)
	return c
}

// randomInputs makes inputs for g's placeholders with their exact layouts: floats in [-2, 2),
// ints in [-10, 10] (index inputs, named idx* or sel*, in [-4, 3]), random bools.
func randomInputs(g *fxgraph.Graph, rng *rand.Rand) []*Tensor {
	var out []*Tensor
	for _, n := range g.Placeholders() {
		m := n.TensorMeta()
		t := NewStrided(m.DType, m.Shape, m.Strides, m.Offset)
		// fill the whole storage, so reads outside the view would show
		all := &Tensor{DType: m.DType, Sizes: []int64{int64(len(t.Data) / m.DType.ItemSize())}, Strides: []int64{1}, Data: t.Data}
		index := strings.HasPrefix(n.Name, "idx") || strings.HasPrefix(n.Name, "sel")
		for k := int64(0); k < all.Numel(); k++ {
			switch {
			case m.DType.IsFloatingPoint():
				all.Set(k, rng.Float64()*4-2)
			case m.DType == primtorch.Bool:
				all.SetInt(k, rng.Int63n(2))
			case index:
				all.SetInt(k, rng.Int63n(8)-4)
			default:
				all.SetInt(k, rng.Int63n(21)-10)
			}
		}
		out = append(out, t)
	}
	return out
}

// withoutIntegerZeros is inputs with every 0 of an integer (not bool) storage made 1.
func withoutIntegerZeros(inputs []*Tensor) []*Tensor {
	out := cloneTensors(inputs)
	for _, t := range out {
		if !t.DType.IsIntegral(false) {
			continue
		}
		all := &Tensor{DType: t.DType, Sizes: []int64{int64(len(t.Data) / t.DType.ItemSize())}, Strides: []int64{1}, Data: t.Data}
		for k := int64(0); k < all.Numel(); k++ {
			if all.AtInt(k) == 0 {
				all.SetInt(k, 1)
			}
		}
	}
	return out
}

// tolerance returns the absolute and relative tolerance for comparing dtype dt.
func tolerance(dt primtorch.DType) (atol, rtol float64) {
	switch dt {
	case primtorch.Float32:
		return 1e-5, 1e-5
	case primtorch.Float64:
		return 1e-12, 1e-12
	case primtorch.Float16:
		return 1e-3, 1e-3
	case primtorch.BFloat16:
		return 1e-2, 1e-2
	}
	return 0, 0
}

// closeTo reports whether got matches want within the dtype's tolerance (NaN equals NaN).
func closeTo(got, want float64, dt primtorch.DType) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if math.IsInf(want, 0) || math.IsInf(got, 0) {
		return got == want
	}
	atol, rtol := tolerance(dt)
	return math.Abs(got-want) <= atol+rtol*math.Abs(want)
}

// requireMatches compares compiled outputs with the reference's.
func requireMatches(t testing.TB, got []*Tensor, want []*dense, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: number of outputs", what)
	for i, w := range want {
		if w == nil {
			continue
		}
		g := got[i]
		require.NotNil(t, g, "%s: output %d", what, i)
		require.Equal(t, w.dt, g.DType, "%s: output %d dtype", what, i)
		require.Equal(t, w.shape, g.Sizes, "%s: output %d shape", what, i)
		for k := int64(0); k < w.n(); k++ {
			if w.f != nil {
				if !closeTo(g.At(k), w.f[k], w.dt) {
					require.Failf(t, "values differ", "%s: output %d element %d (index %v): got %v, want %v", what, i, k, unravel(k, w.shape), g.At(k), w.f[k])
				}
			} else if g.AtInt(k) != w.i[k] {
				require.Failf(t, "values differ", "%s: output %d element %d (index %v): got %d, want %d", what, i, k, unravel(k, w.shape), g.AtInt(k), w.i[k])
			}
		}
	}
}

// checkAgainstReference compiles g, runs it on random inputs with nthreads threads and compares
// with refEval.
func checkAgainstReference(t testing.TB, g *fxgraph.Graph, opts Options, seed int64, nthreads int) *Compiled {
	t.Helper()
	c := compileGraph(t, g, opts)
	inputs := randomInputs(g, rand.New(rand.NewSource(seed)))
	refZeroDivisions = 0
	if _, err := refEval(g, cloneTensors(inputs)); err == nil && refZeroDivisions > 0 {
		// an integer division by zero: the kernels must say so (eager raises); then the values
		// are compared on inputs without integer zeros
		_, err := c.Run(cloneTensors(inputs), nthreads)
		var ke *kernels.KernelError
		require.ErrorAs(t, err, &ke, "%s divides an integer by zero", g.Name)
		require.NotZero(t, ke.Status&StatusZeroDiv, "%s: status %d", g.Name, ke.Status)
		inputs = withoutIntegerZeros(inputs)
	}
	refInputs := cloneTensors(inputs)
	want, err := refEval(g, refInputs)
	require.NoError(t, err)
	got, err := c.Run(inputs, nthreads)
	require.NoError(t, err)
	requireMatches(t, got, want, g.Name)
	// inputs a copy_ wrote must hold the same values
	var wantIn []*dense
	for _, in := range refInputs {
		wantIn = append(wantIn, denseFromTensor(in))
	}
	requireMatches(t, inputs, wantIn, g.Name+" (inputs after the call)")
	return c
}

func cloneTensors(ts []*Tensor) []*Tensor {
	out := make([]*Tensor, len(ts))
	for i, t := range ts {
		c := *t
		c.Data = append(NewStorage(int64(len(t.Data)))[:0], t.Data...)
		out[i] = &c
	}
	return out
}
