package inductor

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/kernels/cuda"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// The CUDA conformance suite: the C backend's conformance suite (recorded torch cases, the
// multi-node graphs, fuzzed fusion graphs) run through CompileCUDA and ExecuteCUDA on a device,
// compared with torch's recorded results and with the reference interpreter, tolerance per
// dtype. Two devices run it: the CPU emulator (TestCUDAEmulated, here and in CI: the generated
// CUDA text compiled by g++ against kernels/cuda/emu/emu.h, threads as fibers) and a GPU
// (TestCUDAOnGPU: the kernels compiled by NVRTC to the device's sm_XY and run by the driver;
// it skips without a GPU, and tools/gpu-check runs it on the H200 from a test binary built
// here).

var cudaFuzzSeeds = flag.Int("cuda.fuzz", 64, "fuzzed fusion graphs the CUDA conformance suite runs")

// cudaDevice is where the suite runs CUDA programs.
type cudaDevice struct {
	name string
	drv  cuda.Driver
	gen  CUDAOptions
	// build turns a unit into the module image the driver loads.
	build func(t *testing.T, src *CUDASource) ([]byte, error)
	// parallel: how many units build at once
	parallel int
}

// cudaUnit is one compiled graph of the suite.
type cudaUnit struct {
	c     *CompiledCUDA
	image []byte
	err   error
}

func (d *cudaDevice) compileAll(t *testing.T, gs []*fxgraph.Graph) []*cudaUnit {
	out := make([]*cudaUnit, len(gs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(d.parallel, 1))
	for i, g := range gs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			u := &cudaUnit{}
			u.c, u.err = CompileCUDA(g, CUDACompileOptions{Check: true, Gen: d.gen})
			if u.err == nil && len(u.c.Source.Kernels) > 0 {
				u.image, u.err = d.build(t, u.c.Source)
			}
			out[i] = u
		})
	}
	wg.Wait()
	return out
}

func (d *cudaDevice) run(u *cudaUnit, inputs []*Tensor) ([]*Tensor, error) {
	if u.err != nil {
		return nil, u.err
	}
	return ExecuteCUDA(d.drv, 0, u.c.Program, u.image, inputs)
}

// runCUDASuite runs every part of the suite on d.
func runCUDASuite(t *testing.T, d *cudaDevice) {
	t.Run("graphs", func(t *testing.T) { cudaSuiteGraphs(t, d) })
	t.Run("cases", func(t *testing.T) { cudaSuiteCases(t, d) })
	t.Run("fuzz", func(t *testing.T) { cudaSuiteFuzz(t, d, *cudaFuzzSeeds) })
}

// cudaSuiteGraphs: the multi-node graphs against the reference interpreter.
func cudaSuiteGraphs(t *testing.T, d *cudaDevice) {
	prims := confGraphsPrims(t)
	units := d.compileAll(t, prims)
	for i, g := range prims {
		t.Run(confGraphs[i].name, func(t *testing.T) {
			u := units[i]
			require.NoError(t, u.err)
			orig := unlift(t, i)
			refIn, attrs, cIn := graphInputs(t, orig, rand.New(rand.NewSource(int64(i+1))), false)
			want, err := ref.Run(orig, refIn, attrs)
			require.NoError(t, err)
			got, err := d.run(u, cIn)
			if err != nil && strings.Contains(err.Error(), "cannot run extern") {
				t.Skipf("%s: %v", g.Name, err)
			}
			require.NoError(t, err)
			compare := testcases.CompareResults
			if normwiseGraphs[confGraphs[i].name] {
				compare = testcases.CompareResultsNormwise
			}
			for k := range want {
				require.Empty(t, compare(cResult(got[k]), refResult(want[k]), testcases.NonUnitStrides), "output %d of %s", k, g.Name)
			}
			refAfter := slices.Clone(refIn)
			for _, n := range orig.Nodes {
				if n.Op == fxgraph.GetAttr {
					refAfter = append(refAfter, attrs[n.Target])
				}
			}
			for k := range refAfter {
				require.Empty(t, testcases.CompareResults(cResult(cIn[k]), refResult(refAfter[k]), testcases.NoStrides), "input %d after the call", k)
			}
		})
	}
}

// unlift rebuilds conformance graph i's prims graph (get_attrs, as ref and graphInputs take it).
func unlift(t *testing.T, i int) *fxgraph.Graph {
	b := &graphBuilder{t: t, g: fxgraph.New(confGraphs[i].name)}
	confGraphs[i].build(b)
	pg, err := decompose(b.g)
	require.NoError(t, err)
	return pg
}

// cudaSuiteCases: every recorded case, batched as the C suite batches them, against torch and
// ref.
func cudaSuiteCases(t *testing.T, d *cudaDevice) {
	cases, err := testcases.Load(testcases.DefaultPath())
	require.NoError(t, err)
	var ccs []*confCase
	for i := range cases {
		cc := prepareCase(t, &cases[i])
		if cc.c[0].status == cPending && len(cc.externs) == 0 {
			ccs = append(ccs, cc)
		}
	}
	var gs []*fxgraph.Graph
	var nouts [][]int
	var groups [][]*confCase
	for start := 0; start < len(ccs); start += conformanceBatch {
		grp := ccs[start:min(start+conformanceBatch, len(ccs))]
		var lifted []*fxgraph.Graph
		for _, cc := range grp {
			lifted = append(lifted, cc.lifted)
		}
		m, n := mergeGraphs(fmt.Sprintf("cuda_conf_%d", start/conformanceBatch), lifted)
		gs, nouts, groups = append(gs, m), append(nouts, n), append(groups, grp)
	}
	units := d.compileAll(t, gs)
	pass, fail := 0, 0
	for bi, u := range units {
		require.NoError(t, u.err, "batch %s", gs[bi].Name)
		var all []*Tensor
		inputs := make([][]*Tensor, len(groups[bi]))
		for i, cc := range groups[bi] {
			inputs[i] = cc.cInputs(t)
			all = append(all, inputs[i]...)
		}
		outs, err := d.run(u, all)
		require.NoError(t, err, "batch %s", gs[bi].Name)
		consts := programConsts(u.c.Program)
		off := 0
		for i, cc := range groups[bi] {
			n := nouts[bi][i]
			msg := cc.checkC(outs[off:off+n], consts[off:off+n], inputs[i])
			off += n
			// aliasing is the plan's (shared with the C backend); on a device storages are copies
			if msg != "" && !strings.Contains(msg, "aliases input") && !strings.Contains(msg, "shares the storage") {
				t.Errorf("%s: %s", cc.tc.Name(), msg)
				fail++
			} else {
				pass++
			}
		}
	}
	t.Logf("%s: %d recorded cases agree with torch and ref, %d do not (of %d runnable)", d.name, pass, fail, len(ccs))
}

// cudaSuiteFuzz: fuzzed fusion graphs (FuzzConformance's generator) against ref, 16 graphs to
// a compiled unit.
func cudaSuiteFuzz(t *testing.T, d *cudaDevice, n int) {
	type fz struct {
		g     *fxgraph.Graph
		tols  fuzzTols
		knobs uint8
		seed  int64
	}
	var fs []fz
	for seed := 1; seed <= n; seed++ {
		knobs := uint8(seed * 37)
		g, tols := fuzzPrims(rand.New(rand.NewSource(int64(seed))), knobs)
		fs = append(fs, fz{g: g, tols: tols, knobs: knobs, seed: int64(seed)})
	}
	const per = 16
	var gs []*fxgraph.Graph
	var nouts [][]int
	for start := 0; start < len(fs); start += per {
		var part []*fxgraph.Graph
		for _, f := range fs[start:min(start+per, len(fs))] {
			part = append(part, f.g)
		}
		m, no := mergeGraphs(fmt.Sprintf("cuda_fuzz_%d", start/per), part)
		gs, nouts = append(gs, m), append(nouts, no)
	}
	units := d.compileAll(t, gs)
	for bi, u := range units {
		grp := fs[bi*per : min(bi*per+per, len(fs))]
		var all []*Tensor
		ins := make([][]*Tensor, len(grp))
		refIns := make([][]*ref.Tensor, len(grp))
		wants := make([][]*ref.Tensor, len(grp))
		for i, f := range grp {
			refIn, _, cIn := graphInputs(t, f.g, rand.New(rand.NewSource(f.seed^0x5eed)), f.knobs&2 != 0)
			want, err := ref.Run(f.g, refIn, nil)
			require.NoError(t, err)
			ins[i], refIns[i], wants[i] = cIn, refIn, want
			all = append(all, cIn...)
		}
		got, err := d.run(u, all)
		if err != nil && strings.Contains(err.Error(), "cannot run extern") {
			continue
		}
		require.NoError(t, err, "batch %s", gs[bi].Name)
		off := 0
		for i, f := range grp {
			n := nouts[bi][i]
			require.Empty(t, fuzzCompare(got[off:off+n], wants[i], ins[i], refIns[i], f.tols), "seed %d/%d, graph:\n%s", f.seed, f.knobs, f.g)
			off += n
		}
	}
}

// TestCUDAOnGPU runs the suite on GPU 0 with kernels compiled by NVRTC for its arch. It skips
// without a GPU (the CUDA driver's cuInit reports none, or there is no driver).
func TestCUDAOnGPU(t *testing.T) {
	drv, err := cuda.LoadDriver()
	if errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrUnavailable) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	arch, err := cuda.DeviceArch(drv, 0)
	require.NoError(t, err)
	sms, err := drv.Attribute(0, cuda.AttrMultiprocessorCount)
	require.NoError(t, err)
	n, err := cuda.LoadNVRTC(append(cuda.RepoSearchDirs(".."), gpuSearchDirs()...))
	require.NoError(t, err)
	comp, err := cuda.NewCompiler(n, t.TempDir(), cuda.Cubin, arch)
	require.NoError(t, err)
	t.Logf("GPU: %s, %d SMs, driver %d, NVRTC %s (%s)", arch, sms, drv.Version(), n.Version(), n.Path)
	d := &cudaDevice{name: "gpu " + arch.String(), drv: drv, gen: CUDAOptions{SMs: sms}, parallel: 8,
		build: func(t *testing.T, src *CUDASource) ([]byte, error) {
			a, err := comp.Compile("suite", src.Text)
			if err != nil {
				return nil, err
			}
			return a.Binary.Data, nil
		}}
	runCUDASuite(t, d)
}

func decompose(g *fxgraph.Graph) (*fxgraph.Graph, error) {
	return decomp.Decompose(g, decomp.Options{Check: true})
}

// gpuSearchDirs are $PTGO_SITE_PACKAGES (colon-separated), where tools/gpu-check names the
// GPU machine's Python site-packages (its nvidia-cuda-nvrtc).
func gpuSearchDirs() []string {
	var out []string
	for _, d := range strings.Split(os.Getenv("PTGO_SITE_PACKAGES"), ":") {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}
