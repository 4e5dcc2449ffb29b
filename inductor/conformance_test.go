package inductor

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// The conformance suite runs every recorded torch case (internal/testcases: the cases of
// primtorch/decomp/testdata/cases.json, each with torch's outputs and the inputs' values after
// the call) through both implementations of prims graphs — the Go reference interpreter
// (primtorch/ref) and the C backend (Compile, then Execute) — and compares each with torch and
// with each other: dtypes, shapes, strides, values within the dtype's tolerance (NaN where
// torch has NaN, integers exactly), and the inputs (and buffers) an in-place op writes.
//
// Each case runs in the "default" variant of the C backend (the code generator's own parallel
// thresholds, one thread); the "parallel" variant (every loop nest parallel, MinParallelWork 1,
// on two threads) runs the first case of every op, the multi-node cases, and every case with a
// reduction, scan or scatter, where the OpenMP code is more than one parallel loop
// (-conformance.full: every case; parallel code takes twice as long to compile).
//
// The Go executor cannot run fallback externs (prims.fallback, prims.convolution): such cases
// are compiled (the compile must succeed) but not run, and counted as "not runnable".
//
// Runnable cases are compiled in batches: one graph holding the prims graphs of many cases side
// by side (disjoint inputs, so no kernel mixes two cases: Fuse only fuses nodes that share a
// producer or an input), one C unit, one gcc run. A case that fails in its batch is compiled
// and run again alone; its verdict is the one it gets alone (and failing only in a batch is a
// failure too).
//
//	go test ./inductor -run TestConformance -v                 per-op table and known failures
//	go test ./inductor -run TestConformance -conformance.report=/tmp/conf.md
//	go test ./inductor -run TestConformance -conformance.only='^take_along_dim/' -v   some cases

var (
	conformanceReport = flag.String("conformance.report", "", "write the conformance suite's per-op table (markdown) to this file")
	conformanceOnly   = flag.String("conformance.only", "", "run only the recorded cases whose name (op/tag) matches this regexp (known failures of the others are not checked)")
	conformanceFull   = flag.Bool("conformance.full", false, "run every recorded case in every variant (by default the parallel variant runs a selection)")
)

// knownConformanceFailures are recorded cases where the C backend disagrees with torch or with
// the reference interpreter, by case name ("op/tag", or "op/tag [parallel]" for a failure of
// the parallel variant only), each with its diagnosis. Reviewed: every
// entry is a bug in inductor or decomp (the conformance suite may not edit either) that has an
// issue-ready description in its diagnosis; the test fails when a listed case passes (remove
// the entry) and when a case fails that is not listed.
var knownConformanceFailures = map[string]string{
	// (none: take_along_dim/flat, a gather through a view that merges dims, failed to compile
	// until kgen.signature looked for indirect indices inside floordiv/mod terms too)
}

// conformanceBatch is how many cases one compiled batch holds.
const conformanceBatch = 64

// confVariant is one way of compiling and running the cases.
type confVariant struct {
	name     string
	codegen  CodegenOptions
	nthreads int
	// selected: the variant runs the cases with confCase.selected only (all with
	// -conformance.full).
	selected bool
}

var confVariants = []confVariant{
	{name: "default", nthreads: 1},
	{name: "parallel", codegen: CodegenOptions{MinParallelWork: 1}, nthreads: 2, selected: true},
}

// cStatus is what happened to a case in the C backend.
type cStatus int

const (
	cPending     cStatus = iota // not run yet
	cPass                       // agrees with torch and ref
	cFail                       // disagrees with torch or ref, or an error
	cNotRunnable                // compiled, but has externs the Go executor cannot run
	cNotSelected                // not in the selection of a selected variant
	cRefused                    // the C backend refuses the graph (it runs eagerly): Lower's error
	cSkipped                    // nothing to run: the case records a fallback, or Decompose failed
)

// confCase is one recorded case on its way through both implementations.
type confCase struct {
	tc    *testcases.Case
	torch *fxgraph.Graph
	prims *fxgraph.Graph // decomposed
	// lifted is prims with its get_attr nodes turned into placeholders after the inputs (as
	// pybridge's liftAttrs does: the C backend takes every tensor as an input).
	lifted *fxgraph.Graph

	refMsg   string // "" when ref agrees with torch
	refSkip  string // why ref did not run ("" when it did)
	refOuts  []*testcases.Result
	refAfter []*testcases.Result // inputs, then attrs, after the call

	externs []string // externs the Go executor cannot run
	// selected: the case runs in selected variants too (see confVariant.selected).
	selected bool
	c        []cRun // per variant
}

// cRun is a case's verdict in one variant of the C backend.
type cRun struct {
	status cStatus
	msg    string // what disagrees (with torch or ref), or the error
}

// TestConformance runs every recorded case through ref and the C backend; see the comment at
// the top of this file.
func TestConformance(t *testing.T) {
	testcases.ForEachTorch(t, func(t *testing.T, _ primtorch.TorchVersion, cases []testcases.Case) {
		testConformance(t, cases)
	})
}

// testConformance runs one recorded torch's cases.
func testConformance(t *testing.T, cases []testcases.Case) {
	require.NotEmpty(t, cases)
	only, err := regexp.Compile(*conformanceOnly)
	require.NoError(t, err, "-conformance.only")
	var ccs []*confCase
	for i := range cases {
		if only.MatchString(cases[i].Name()) {
			ccs = append(ccs, prepareCase(t, &cases[i]))
		}
	}
	require.NotEmpty(t, ccs, "no case matches -conformance.only=%s", *conformanceOnly)
	var runnable, compileOnly []*confCase
	for _, cc := range ccs {
		switch {
		case cc.c[0].status != cPending:
		case len(cc.externs) > 0:
			compileOnly = append(compileOnly, cc)
		default:
			runnable = append(runnable, cc)
		}
	}
	firstOfOp := map[string]bool{}
	for _, cc := range ccs {
		if !firstOfOp[cc.tc.Op] {
			firstOfOp[cc.tc.Op] = true
			cc.selected = true
		}
	}
	for v, vr := range confVariants {
		runnable, compileOnly := runnable, compileOnly
		if vr.selected && !*conformanceFull {
			keep := func(ccs []*confCase) []*confCase {
				var out []*confCase
				for _, cc := range ccs {
					if cc.selected {
						out = append(out, cc)
					} else {
						cc.c[v] = cRun{status: cNotSelected}
					}
				}
				return out
			}
			runnable, compileOnly = keep(runnable), keep(compileOnly)
		}
		var batches []*confBatch
		for start := 0; start < len(runnable); start += conformanceBatch {
			batches = append(batches, &confBatch{cases: runnable[start:min(start+conformanceBatch, len(runnable))], run: true})
		}
		for start := 0; start < len(compileOnly); start += conformanceBatch {
			batches = append(batches, &confBatch{cases: compileOnly[start:min(start+conformanceBatch, len(compileOnly))]})
		}
		compileBatches(t, batches, v)
		for _, b := range batches {
			b.check(t, v)
		}
	}
	reportConformance(t, ccs)
}

// prepareCase builds, decomposes, runs ref and lowers one case (classifying it for the C
// backend); the C runs come later, in batches.
func prepareCase(t *testing.T, tc *testcases.Case) *confCase {
	t.Helper()
	cc := &confCase{tc: tc, c: make([]cRun, len(confVariants))}
	setAll := func(st cStatus, msg string) {
		for v := range cc.c {
			cc.c[v] = cRun{status: st, msg: msg}
		}
	}
	g, _, err := tc.Build()
	require.NoError(t, err)
	cc.torch = g
	pg, err := decomp.Decompose(g, decomp.Options{Check: true})
	if err != nil {
		cc.refMsg, cc.refSkip = "Decompose: "+err.Error(), "Decompose failed"
		setAll(cSkipped, "Decompose failed")
		return cc
	}
	cc.prims = pg
	cc.lifted = liftGetAttrs(pg)
	if tc.Fallback || strings.Contains(pg.String(), "prims.fallback") {
		cc.refSkip = "prims.fallback (torch runs the op)"
	} else {
		cc.runRef(t)
	}
	if tc.Fallback {
		setAll(cSkipped, "the case records a prims.fallback")
		return cc
	}
	ir, err := Lower(cc.lifted)
	if err != nil {
		if strings.Contains(err.Error(), "run this graph eagerly") {
			setAll(cRefused, err.Error())
		} else {
			setAll(cFail, "Lower: "+err.Error())
		}
		return cc
	}
	for _, b := range ir.Buffers {
		switch d := b.Def.(type) {
		case *Extern:
			if d.Outs[0] == b && goExterns[d.Target] == nil && !slices.Contains(cc.externs, d.Target) {
				cc.externs = append(cc.externs, d.Target)
			}
		case *Reduction, *Scan, *ScatterNode:
			cc.selected = true
		}
	}
	if len(tc.Nodes) > 1 {
		cc.selected = true
	}
	return cc
}

// runRef runs the prims graph with the reference interpreter and compares with torch.
func (cc *confCase) runRef(t *testing.T) {
	t.Helper()
	tc := cc.tc
	inputs := make([]*ref.Tensor, len(tc.Inputs))
	for i, in := range tc.Inputs {
		inputs[i] = refTensor(t, in)
	}
	attrs := map[string]*ref.Tensor{}
	for _, at := range tc.Attrs {
		attrs[at.Name] = refTensor(t, at)
	}
	outs, err := ref.Run(cc.prims, inputs, attrs)
	if err != nil {
		cc.refMsg, cc.refSkip = "Run: "+err.Error(), "error"
		return
	}
	for _, o := range outs {
		cc.refOuts = append(cc.refOuts, refResult(o))
	}
	for _, in := range inputs {
		cc.refAfter = append(cc.refAfter, refResult(in))
	}
	for _, at := range tc.Attrs {
		cc.refAfter = append(cc.refAfter, refResult(attrs[at.Name]))
	}
	cc.refMsg = cc.againstTorch(cc.refOuts, cc.refAfter, testcases.AllStrides)
}

// againstTorch compares outputs and the inputs after the call with torch's; strides says how
// the outputs' strides are checked.
func (cc *confCase) againstTorch(outs, after []*testcases.Result, strides testcases.Strides) string {
	tc := cc.tc
	if len(outs) != len(tc.Expect) {
		return fmt.Sprintf("%d outputs, torch gives %d", len(outs), len(tc.Expect))
	}
	for i, w := range tc.Expect {
		if d := testcases.Compare(outs[i], w, strides, !tc.NoValues); d != "" {
			return fmt.Sprintf("output %d: %s", i, d)
		}
	}
	for i, in := range cc.inputNames() {
		if d := testcases.Compare(after[i], tc.After[in], testcases.NoStrides, true); d != "" {
			return fmt.Sprintf("%s after the call: %s", in, d)
		}
	}
	return ""
}

// inputNames are the case's inputs, then its attrs: the order of the lifted graph's
// placeholders.
func (cc *confCase) inputNames() []string {
	var names []string
	for _, in := range cc.tc.Inputs {
		names = append(names, in.Name)
	}
	for _, at := range cc.tc.Attrs {
		names = append(names, at.Name)
	}
	return names
}

// cInputs makes the C backend's inputs: each recorded storage with its exact layout.
func (cc *confCase) cInputs(t *testing.T) []*Tensor {
	t.Helper()
	var out []*Tensor
	for _, j := range append(slices.Clone(cc.tc.Inputs), cc.tc.Attrs...) {
		dt, err := testcases.ParseDType(j.DType)
		require.NoError(t, err)
		f, n, err := j.Storage()
		require.NoError(t, err)
		size := int64(max(len(f), len(n)))
		data := NewStorage(size * int64(dt.ItemSize()))
		all := &Tensor{DType: dt, Sizes: []int64{size}, Strides: []int64{1}, Data: data}
		for k := range size {
			if f != nil {
				all.Set(k, f[k])
			} else {
				all.SetInt(k, n[k])
			}
		}
		out = append(out, &Tensor{DType: dt, Sizes: j.Shape, Strides: j.Strides, Offset: j.Offset, Data: data})
	}
	return out
}

// checkC compares the C backend's results with torch and with ref ("" when all agree).
func (cc *confCase) checkC(outs []*Tensor, consts []any, inputs []*Tensor) string {
	res := make([]*testcases.Result, len(outs))
	for i, o := range outs {
		if o == nil {
			res[i] = constResult(consts[i])
		} else {
			res[i] = cResult(o)
		}
	}
	var after []*testcases.Result
	for _, in := range inputs {
		after = append(after, cResult(in))
	}
	if msg := cc.againstTorch(res, after, testcases.NonUnitStrides); msg != "" {
		return "vs torch: " + msg
	}
	if msg := cc.aliasing(outs, inputs); msg != "" {
		return msg
	}
	if cc.refSkip != "" {
		return ""
	}
	if len(res) != len(cc.refOuts) {
		return fmt.Sprintf("vs ref: %d outputs, ref gives %d", len(res), len(cc.refOuts))
	}
	for i := range res {
		if cc.tc.NoValues {
			break
		}
		if d := testcases.CompareResults(res[i], cc.refOuts[i], testcases.NonUnitStrides); d != "" {
			return fmt.Sprintf("vs ref: output %d: %s", i, d)
		}
	}
	for i, name := range cc.inputNames() {
		if d := testcases.CompareResults(after[i], cc.refAfter[i], testcases.NoStrides); d != "" {
			return fmt.Sprintf("vs ref: %s after the call: %s", name, d)
		}
	}
	return ""
}

// aliasing checks that outputs which alias inputs in eager (decomp.OutputAliases) share the
// input's storage in the C backend's results, and that no other output does.
func (cc *confCase) aliasing(outs, inputs []*Tensor) string {
	ph := map[*fxgraph.Node]int{}
	k := 0
	for _, n := range cc.prims.Nodes {
		if n.Op == fxgraph.Placeholder {
			ph[n] = k
			k++
		}
	}
	attr := map[string]int{}
	for i, at := range cc.tc.Attrs {
		attr[at.Name] = len(cc.tc.Inputs) + i
	}
	aliased := map[int]int{}
	for _, a := range decomp.OutputAliases(cc.prims) {
		if i, ok := ph[a.Input]; ok {
			aliased[a.Output] = i
		} else {
			aliased[a.Output] = attr[a.Input.Target]
		}
	}
	for i, o := range outs {
		if o == nil || o.Numel() == 0 {
			continue
		}
		in, want := aliased[i]
		if want && !sameData(o, inputs[in]) {
			return fmt.Sprintf("output %d aliases input %d in eager but the C backend returns a copy", i, in)
		}
		if !want {
			for j, x := range inputs {
				if sameData(o, x) {
					return fmt.Sprintf("output %d shares the storage of input %d, which it does not alias in eager", i, j)
				}
			}
		}
	}
	return ""
}

func sameData(a, b *Tensor) bool {
	return len(a.Data) > 0 && len(b.Data) > 0 && unsafe.SliceData(a.Data) == unsafe.SliceData(b.Data)
}

// confBatch is cases compiled as one graph: run and checked (run), or only compiled (cases
// with externs the Go executor cannot run).
type confBatch struct {
	cases  []*confCase
	run    bool
	merged *fxgraph.Graph
	nouts  []int
	c      *Compiled
	err    error
}

// compileBatches merges and compiles every batch, at most GOMAXPROCS at a time (gcc runs
// dominate).
func compileBatches(t *testing.T, batches []*confBatch, v int) {
	t.Helper()
	comp := testCompiler(t)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for _, b := range batches {
		var gs []*fxgraph.Graph
		for _, cc := range b.cases {
			gs = append(gs, cc.lifted)
		}
		name := fmt.Sprintf("conformance_%s_%s", confVariants[v].name, sanitize(b.cases[0].tc.Name()))
		b.merged, b.nouts = mergeGraphs(name, gs)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			b.c, b.err = Compile(b.merged, Options{Compiler: comp, Check: true, Codegen: confVariants[v].codegen})
		})
	}
	wg.Wait()
}

// check runs a compiled batch and checks every case in it. When the batch fails as a whole
// (compile or run error), every case runs alone and gets the verdict it gets alone; a case whose
// results disagree in the batch runs alone too, and fails either way.
func (b *confBatch) check(t *testing.T, v int) {
	t.Helper()
	vr := confVariants[v]
	if !b.run {
		for _, cc := range b.cases {
			cc.c[v] = cRun{status: cNotRunnable, msg: "externs " + strings.Join(cc.externs, ", ")}
			if b.err == nil {
				continue
			}
			if _, err := Compile(cc.lifted, Options{Compiler: testCompiler(t), Check: true, Codegen: vr.codegen}); err != nil {
				cc.c[v] = cRun{status: cFail, msg: "Compile: " + err.Error()}
			}
		}
		return
	}
	var outs []*Tensor
	var consts []any
	inputs := make([][]*Tensor, len(b.cases))
	err := b.err
	if err == nil {
		var all []*Tensor
		for i, cc := range b.cases {
			inputs[i] = cc.cInputs(t)
			all = append(all, inputs[i]...)
		}
		outs, err = b.c.Run(all, vr.nthreads)
		consts = programConsts(b.c.Program)
	}
	if err != nil {
		failed := 0
		for _, cc := range b.cases {
			if cc.runAlone(t, v); cc.c[v].status != cPass {
				failed++
			}
		}
		if failed == 0 {
			t.Errorf("batch %s fails but each of its cases passes alone: %v", b.merged.Name, err)
		}
		return
	}
	off := 0
	for i, cc := range b.cases {
		msg := cc.checkC(outs[off:off+b.nouts[i]], consts[off:off+b.nouts[i]], inputs[i])
		off += b.nouts[i]
		if msg == "" {
			cc.c[v] = cRun{status: cPass}
			continue
		}
		if cc.runAlone(t, v); cc.c[v].status == cPass {
			cc.c[v] = cRun{status: cFail, msg: "fails only when compiled in a batch with other cases: " + msg}
		}
	}
}

// runAlone compiles and runs one case by itself in variant v.
func (cc *confCase) runAlone(t *testing.T, v int) {
	t.Helper()
	vr := confVariants[v]
	c, err := Compile(cc.lifted, Options{Compiler: testCompiler(t), Check: true, Codegen: vr.codegen})
	if err != nil {
		cc.c[v] = cRun{status: cFail, msg: "Compile: " + err.Error()}
		return
	}
	inputs := cc.cInputs(t)
	outs, err := c.Run(inputs, vr.nthreads)
	if err != nil {
		cc.c[v] = cRun{status: cFail, msg: "Run: " + err.Error()}
		return
	}
	if msg := cc.checkC(outs, programConsts(c.Program), inputs); msg != "" {
		cc.c[v] = cRun{status: cFail, msg: msg}
		return
	}
	cc.c[v] = cRun{status: cPass}
}

// programConsts lists, per output of p, the constant it returns (nil for buffers).
func programConsts(p *Program) []any {
	out := make([]any, len(p.Outputs))
	for i, o := range p.Outputs {
		if o.Buf < 0 {
			out[i] = o.Value
		}
	}
	return out
}

// mergeGraphs puts graphs side by side in one: their placeholders in order (renamed c<i>_x),
// their calls in order, every prims.copy_ (the mutation epilogues) at the end, and one output
// tuple of every graph's flattened outputs; nouts[i] is how many graph i has.
func mergeGraphs(name string, gs []*fxgraph.Graph) (*fxgraph.Graph, []int) {
	m := fxgraph.New(name)
	envs := make([]map[*fxgraph.Node]*fxgraph.Node, len(gs))
	remap := func(env map[*fxgraph.Node]*fxgraph.Node, args []fxgraph.Arg) []fxgraph.Arg {
		out := make([]fxgraph.Arg, len(args))
		for i, a := range args {
			out[i] = fxgraph.MapArg(a, func(n *fxgraph.Node) fxgraph.Arg { return env[n] })
		}
		return out
	}
	copyNode := func(env map[*fxgraph.Node]*fxgraph.Node, n *fxgraph.Node) {
		var kwargs []fxgraph.Kwarg
		for _, kw := range n.Kwargs {
			kwargs = append(kwargs, fxgraph.Kwarg{Name: kw.Name, Value: remap(env, []fxgraph.Arg{kw.Value})[0]})
		}
		nn := m.AddCall(n.Target, remap(env, n.Args), kwargs, n.Meta)
		nn.Where = n.Where
		env[n] = nn
	}
	for i, g := range gs {
		envs[i] = map[*fxgraph.Node]*fxgraph.Node{}
		for _, n := range g.Placeholders() {
			envs[i][n] = m.AddPlaceholder(fmt.Sprintf("c%d_%s", i, n.Name), n.Meta)
		}
	}
	var outs []fxgraph.Arg
	nouts := make([]int, len(gs))
	var epilogue [][2]any
	for i, g := range gs {
		users := g.Users()
		for _, n := range g.Nodes {
			switch {
			case n.Op == fxgraph.Output:
				var walk func(a fxgraph.Arg)
				walk = func(a fxgraph.Arg) {
					switch a := a.(type) {
					case fxgraph.Tuple:
						for _, e := range a.Elems {
							walk(e)
						}
					case fxgraph.List:
						for _, e := range a.Elems {
							walk(e)
						}
					default:
						outs = append(outs, remap(envs[i], []fxgraph.Arg{a})[0])
						nouts[i]++
					}
				}
				walk(n.Args[0])
			case n.Op != fxgraph.CallFunction:
			case n.Target == "prims.copy_" && len(users[n]) == 0:
				epilogue = append(epilogue, [2]any{envs[i], n})
			default:
				copyNode(envs[i], n)
			}
		}
	}
	for _, e := range epilogue {
		copyNode(e[0].(map[*fxgraph.Node]*fxgraph.Node), e[1].(*fxgraph.Node))
	}
	m.AddOutput(fxgraph.Tuple{Elems: outs})
	return m, nouts
}

// liftGetAttrs turns get_attr nodes into placeholders after the graph's own inputs, as
// pybridge's liftAttrs does for the C backend.
func liftGetAttrs(g *fxgraph.Graph) *fxgraph.Graph {
	g = fxgraph.Clone(g)
	var ph, attrs, rest []*fxgraph.Node
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			ph = append(ph, n)
		case fxgraph.GetAttr:
			n.Op, n.Target = fxgraph.Placeholder, n.Name
			attrs = append(attrs, n)
		default:
			rest = append(rest, n)
		}
	}
	g.Nodes = append(append(ph, attrs...), rest...)
	g.Renumber()
	return g
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// refTensor rebuilds a recorded tensor (its whole storage, its exact layout) for ref.
func refTensor(t *testing.T, j testcases.Tensor) *ref.Tensor {
	t.Helper()
	dt, err := testcases.ParseDType(j.DType)
	require.NoError(t, err)
	f, n, err := j.Storage()
	require.NoError(t, err)
	var data any = n
	if f != nil {
		data = f
	}
	r, err := ref.FromStorage(dt, j.Shape, j.Strides, j.Offset, data)
	require.NoError(t, err)
	return r
}

func refResult(r *ref.Tensor) *testcases.Result {
	if r == nil {
		return nil
	}
	res := &testcases.Result{DType: r.DType, Shape: r.Shape, Strides: r.Strides}
	if r.DType.IsFloatingPoint() {
		res.F = r.Floats()
	} else {
		res.I = r.Ints()
	}
	return res
}

func cResult(x *Tensor) *testcases.Result {
	res := &testcases.Result{DType: x.DType, Shape: x.Sizes, Strides: x.Strides}
	for k := range x.Numel() {
		if x.DType.IsFloatingPoint() {
			res.F = append(res.F, x.At(k))
		} else {
			res.I = append(res.I, x.AtInt(k))
		}
	}
	return res
}

// constResult is a constant output as ref returns it: a 0-d tensor (nil for None).
func constResult(v any) *testcases.Result {
	switch x := v.(type) {
	case bool:
		return &testcases.Result{DType: primtorch.Bool, I: []int64{b2i(x)}}
	case int64:
		return &testcases.Result{DType: primtorch.Int64, I: []int64{x}}
	case float64:
		return &testcases.Result{DType: primtorch.Float64, F: []float64{x}}
	}
	return nil
}

// opStats counts one op's cases.
type opStats struct {
	cases, refRan, refPass int
	// per variant
	cPass, cFail, cMismatch, cNotSel []int
	cNotRunnable, cRefused, cSkipped int
}

func newOpStats() *opStats {
	n := len(confVariants)
	return &opStats{cPass: make([]int, n), cFail: make([]int, n), cMismatch: make([]int, n), cNotSel: make([]int, n)}
}

func (s *opStats) add(cc *confCase) {
	s.cases++
	if cc.refSkip == "" {
		s.refRan++
		if cc.refMsg == "" {
			s.refPass++
		}
	}
	for v, r := range cc.c {
		switch r.status {
		case cPass:
			s.cPass[v]++
		case cFail:
			s.cFail[v]++
			if strings.Contains(r.msg, "vs ref:") {
				s.cMismatch[v]++
			}
		case cNotSelected:
			s.cNotSel[v]++
		}
	}
	switch cc.c[0].status {
	case cNotRunnable:
		s.cNotRunnable++
	case cRefused:
		s.cRefused++
	case cSkipped:
		s.cSkipped++
	}
}

// knownKey is a failing case's key in knownConformanceFailures: its name when the default
// variant fails (or ref), with " [variant]" when only that variant fails.
func (cc *confCase) knownKey() string {
	if cc.refMsg != "" || cc.c[0].status == cFail {
		return cc.tc.Name()
	}
	for v, r := range cc.c {
		if r.status == cFail {
			return cc.tc.Name() + " [" + confVariants[v].name + "]"
		}
	}
	return ""
}

// reportConformance logs the summary and the per-op table (-v; -conformance.report writes it to
// a file) and the known failures, and fails for failures not in knownConformanceFailures and
// for listed cases that pass.
func reportConformance(t *testing.T, ccs []*confCase) {
	byOp := map[string]*opStats{}
	var ops []string
	total := newOpStats()
	externCount := map[string]int{}
	for _, cc := range ccs {
		st := byOp[cc.tc.Op]
		if st == nil {
			st = newOpStats()
			byOp[cc.tc.Op] = st
			ops = append(ops, cc.tc.Op)
		}
		st.add(cc)
		total.add(cc)
		for _, e := range cc.externs {
			externCount[e]++
		}
	}
	sort.Strings(ops)
	var b strings.Builder
	head := "| op | cases | ref ran | ref = torch |"
	line := "|---|---|---|---|"
	for _, vr := range confVariants {
		head += fmt.Sprintf(" C %s passes | C %s fails | of which C ≠ ref |", vr.name, vr.name)
		line += "---|---|---|"
	}
	fmt.Fprintf(&b, "%s not runnable | refused | skipped |\n%s---|---|---|\n", head, line)
	row := func(name string, s *opStats) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d |", name, s.cases, s.refRan, s.refPass)
		for v := range confVariants {
			fmt.Fprintf(&b, " %d | %d | %d |", s.cPass[v], s.cFail[v], s.cMismatch[v])
		}
		fmt.Fprintf(&b, " %d | %d | %d |\n", s.cNotRunnable, s.cRefused, s.cSkipped)
	}
	for _, op := range ops {
		row(op, byOp[op])
	}
	row("**total**", total)
	var ext []string
	for e, n := range externCount {
		ext = append(ext, fmt.Sprintf("%s: %d", e, n))
	}
	sort.Strings(ext)
	summary := fmt.Sprintf("conformance: %d cases (%d ops); ref ran %d and agrees with torch on %d;", total.cases, len(ops), total.refRan, total.refPass)
	for v, vr := range confVariants {
		summary += fmt.Sprintf(" C %s ran %d, agrees with torch and ref on %d, fails %d (%d disagree with ref)", vr.name, total.cPass[v]+total.cFail[v], total.cPass[v], total.cFail[v], total.cMismatch[v])
		if total.cNotSel[v] > 0 {
			summary += fmt.Sprintf(", %d not selected (-conformance.full runs them)", total.cNotSel[v])
		}
		summary += ";"
	}
	summary += fmt.Sprintf(" compiled but not runnable by the Go executor %d (%s); refused by the C backend %d; skipped %d (recorded fallbacks, Decompose errors)",
		total.cNotRunnable, strings.Join(ext, ", "), total.cRefused, total.cSkipped)
	t.Log(summary)
	if testing.Verbose() {
		t.Log("per op:\n" + b.String())
	}
	if *conformanceReport != "" {
		require.NoError(t, os.WriteFile(*conformanceReport, []byte(summary+"\n\n"+b.String()), 0o644))
	}
	for _, cc := range ccs {
		if cc.c[0].status == cRefused {
			t.Logf("refused by the C backend: %s: %s", cc.tc.Name(), cc.c[0].msg)
		}
	}
	for _, cc := range ccs {
		for v, r := range cc.c {
			if r.status == cPending {
				t.Errorf("ptgo BUG: conformance: case %s never ran in variant %s", cc.tc.Name(), confVariants[v].name)
			}
		}
	}
	seen := map[string]bool{}
	for _, cc := range ccs {
		key := cc.knownKey()
		if key == "" {
			continue
		}
		if why, ok := knownConformanceFailures[key]; ok {
			seen[key] = true
			t.Logf("known failure %s: %s\n  now: %s", key, why, cc.message())
			continue
		}
		t.Errorf("case %s: %s\n%s", key, cc.message(), cc.graphs())
	}
	var names []string
	for name := range knownConformanceFailures {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !seen[name] && *conformanceOnly == "" {
			t.Errorf("case %s is listed in knownConformanceFailures but passes (or no longer exists): remove it", name)
		}
	}
}

func (cc *confCase) message() string {
	var parts []string
	if cc.refMsg != "" {
		parts = append(parts, "ref: "+cc.refMsg)
	}
	for v, r := range cc.c {
		if r.status == cFail {
			parts = append(parts, "C "+confVariants[v].name+": "+r.msg)
		}
	}
	return strings.Join(parts, "\n")
}

func (cc *confCase) graphs() string {
	s := "torch-level:\n" + cc.torch.String()
	if cc.prims != nil {
		s += "prims:\n" + cc.prims.String()
	}
	return s
}
