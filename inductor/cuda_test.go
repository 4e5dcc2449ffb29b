package inductor

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/kernels/cuda"
	"ptgo/primtorch/decomp"
)

// The CUDA renderer's tests that need no GPU: every conformance graph (the recorded torch cases,
// the multi-node graphs, fuzzed fusion graphs) renders to CUDA C that NVRTC compiles to sm_90
// machine code; golden files of the generated CUDA; the plan's CUDA section round-trips.
// TestCUDAEmulated (cuda_emu_test.go) runs the generated kernels on the CPU; the GPU run is
// tools/gpu-check.

var (
	nvrtcOnce sync.Once
	nvrtcLib  *cuda.NVRTC
	nvrtcDir  string
	nvrtcErr  error
)

// TestMain removes the NVRTC cache directory the CUDA tests made (6 MB a run, left in the
// temporary folder otherwise).
func TestMain(m *testing.M) {
	code := m.Run()
	if nvrtcDir != "" {
		os.RemoveAll(nvrtcDir)
	}
	os.Exit(code)
}

// testNVRTC is a compiler for compute_90 (PTX, NVRTC's front end and optimiser) or sm_90
// (cubin: ptxas too, about 2.4 times slower) into a fresh cache directory, or a skip naming why
// none exists: no NVRTC found (make setup unpacks PyPI's nvidia-cuda-nvrtc into build/nvrtc).
func testNVRTC(t testing.TB, kind cuda.Kind) *cuda.Compiler {
	t.Helper()
	nvrtcOnce.Do(func() {
		nvrtcLib, nvrtcErr = cuda.LoadNVRTC(cuda.RepoSearchDirs(".."))
		if nvrtcErr == nil {
			nvrtcDir, nvrtcErr = os.MkdirTemp("", "ptgo-cuda-test-")
		}
	})
	if nvrtcErr == nil {
		c, err := cuda.NewCompiler(nvrtcLib, filepath.Join(nvrtcDir, kind.String()), kind, 90)
		require.NoError(t, err)
		return c
	}
	if nvrtcErr != nil {
		if os.Getenv("PTGO_REQUIRE_NVRTC") != "" {
			t.Fatalf("PTGO_REQUIRE_NVRTC is set and no NVRTC works: %v", nvrtcErr)
		}
		t.Skipf("no NVRTC, so no CUDA compile test (make setup puts PyPI's nvidia-cuda-nvrtc into build/nvrtc): %v", nvrtcErr)
	}
	return nil
}

// cudaCompileAll compiles every graph for CUDA, GOMAXPROCS at a time, and returns the results.
func cudaCompileAll(t *testing.T, gs []*fxgraph.Graph, comp *cuda.Compiler) []*CompiledCUDA {
	t.Helper()
	out := make([]*CompiledCUDA, len(gs))
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, g := range gs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = CompileCUDA(g, CUDACompileOptions{Compiler: comp, Check: true})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "graph %s", gs[i].Name)
	}
	return out
}

// confGraphsPrims builds the multi-node conformance graphs (conformance_graphs_test.go), lifted.
func confGraphsPrims(t *testing.T) []*fxgraph.Graph {
	var out []*fxgraph.Graph
	for _, cg := range confGraphs {
		b := &graphBuilder{t: t, g: fxgraph.New(cg.name)}
		cg.build(b)
		pg, err := decomp.Decompose(b.g, decomp.Options{Check: true})
		require.NoError(t, err)
		out = append(out, liftGetAttrs(pg))
	}
	return out
}

// recordedCaseBatches are the recorded cases the C backend compiles, merged conformanceBatch at
// a time as the C conformance suite merges them.
func recordedCaseBatches(t *testing.T) ([]*fxgraph.Graph, int) {
	cases, err := testcases.Load(testcases.DefaultPath())
	require.NoError(t, err)
	var lifted []*fxgraph.Graph
	for i := range cases {
		tc := &cases[i]
		if tc.Fallback {
			continue
		}
		g, _, err := tc.Build()
		require.NoError(t, err)
		pg, err := decomp.Decompose(g, decomp.Options{Check: true})
		if err != nil {
			continue
		}
		l := liftGetAttrs(pg)
		if _, err := Lower(l); err != nil {
			continue // the C backend refuses it too (the graph runs eagerly)
		}
		lifted = append(lifted, l)
	}
	var out []*fxgraph.Graph
	for start := 0; start < len(lifted); start += conformanceBatch {
		m, _ := mergeGraphs(fmt.Sprintf("cuda_cases_%d", start/conformanceBatch), lifted[start:min(start+conformanceBatch, len(lifted))])
		out = append(out, m)
	}
	return out, len(lifted)
}

// fuzzGraphBatches are fuzzed fusion graphs (FuzzConformance's generator), n of them in
// batches of 32.
func fuzzGraphBatches(n int) []*fxgraph.Graph {
	var gs []*fxgraph.Graph
	for seed := range n {
		g, _ := fuzzPrims(rand.New(rand.NewSource(int64(seed))), uint8(seed*37))
		gs = append(gs, g)
	}
	var out []*fxgraph.Graph
	for start := 0; start < len(gs); start += 32 {
		m, _ := mergeGraphs(fmt.Sprintf("cuda_fuzz_%d", start/32), gs[start:min(start+32, len(gs))])
		out = append(out, m)
	}
	return out
}

// TestCUDACompilesConformance: every conformance graph's kernels compile with NVRTC for
// compute_90.
func TestCUDACompilesConformance(t *testing.T) {
	comp := testNVRTC(t, cuda.PTX)
	graphs := confGraphsPrims(t)
	batches, ncases := recordedCaseBatches(t)
	fuzz := fuzzGraphBatches(64)
	all := append(append(append([]*fxgraph.Graph(nil), graphs...), batches...), fuzz...)
	res := cudaCompileAll(t, all, comp)
	kernels := 0
	scheds := map[string]int{}
	for _, c := range res {
		kernels += len(c.Source.Kernels)
		for _, k := range c.Source.Kernels {
			scheds[strings.Fields(k.Schedule)[0]]++
		}
		if len(c.Source.Kernels) > 0 {
			require.NotNil(t, c.Artifact)
			require.NotEmpty(t, c.Artifact.Binary.Data)
		}
	}
	t.Logf("NVRTC %s compiled %d conformance graphs, %d recorded cases in %d batches and 64 fuzzed graphs: %d kernels, schedules %v",
		comp.TC.Version(), len(graphs), ncases, len(batches), kernels, scheds)
}

// TestCUDAGolden compares the generated CUDA of the representative graphs with
// testdata/golden/cuda/<name>.cu (-update rewrites them), and compiles each with NVRTC to sm_90
// machine code when NVRTC is found.
func TestCUDAGolden(t *testing.T) {
	var comp *cuda.Compiler
	if _, err := cuda.LoadNVRTC(cuda.RepoSearchDirs("..")); err == nil || os.Getenv("PTGO_REQUIRE_NVRTC") != "" {
		comp = testNVRTC(t, cuda.Cubin)
	}
	for _, name := range graphNames(t) {
		t.Run(name, func(t *testing.T) {
			c, err := CompileCUDA(loadGraph(t, name), CUDACompileOptions{Check: true, Compiler: comp})
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(c.Source.Text, CUDAHeader))
			golden(t, filepath.Join("cuda", name+".cu"), c.Source.Text[c.Source.Prelude:])
			js, err := c.Program.JSON()
			require.NoError(t, err)
			back, err := DecodeProgram(js)
			require.NoError(t, err)
			js2, err := back.JSON()
			require.NoError(t, err)
			require.Equal(t, string(js), string(js2), "the CUDA plan does not round-trip through JSON")
			require.Equal(t, "cuda:0", back.Device)
			require.Len(t, back.CUDA.Kernels, len(c.Source.Kernels))
		})
	}
}
