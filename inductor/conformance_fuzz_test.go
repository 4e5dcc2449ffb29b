package inductor

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/ref"
)

// FuzzConformance is differential testing of the C backend against the reference interpreter
// (primtorch/ref): a random prims graph (fuzzPrims) — pointwise ops, reductions, scans, views,
// broadcasts, dtype conversions, cat and pad, gather, index_select, advanced indexing and
// accumulating index_put, iota and full, mm/bmm/addmm, over inputs of dtypes f32, f64, i64 and
// bool (f16 and bf16 with a knob) that are contiguous, permuted, sliced with steps and offsets,
// expanded (stride 0) or 0-d, results in permuted dense layouts, and a copy_ epilogue into an
// input — is
// run by ref and compiled by Compile, and outputs and written inputs must agree. The metas come
// from the op registry, so every graph is one ref accepts.
//
// knobs: bit 0 forces parallel loops (MinParallelWork 1) and runs on two threads, bit 1 puts
// NaN, ±inf and −0 among float inputs, bit 2 allows f16/bf16, bit 3 compiles without fusion,
// bit 4 makes the base shape large (past ParallelMinWork).
//
// `go test` runs the seeds below and testdata/fuzz/FuzzConformance (crashers found by
// `go test ./inductor -run '^$' -fuzz FuzzConformance`, kept as regression tests).
func FuzzConformance(f *testing.F) {
	for seed := int64(1); seed <= 24; seed++ {
		f.Add(seed, uint8(seed*37))
	}
	f.Fuzz(func(t *testing.T, seed int64, knobs uint8) {
		key := fmt.Sprintf("%d/%d", seed, knobs)
		g, tols := fuzzPrims(rand.New(rand.NewSource(seed)), knobs)
		require.NoError(t, fxgraph.Verify(g, nil), "%s", g)
		refIn, _, cIn := graphInputs(t, g, rand.New(rand.NewSource(seed^0x5eed)), knobs&2 != 0)
		want, err := ref.Run(g, refIn, nil)
		require.NoError(t, err, "the generator made a graph ref rejects:\n%s", g)
		opts := Options{Compiler: testCompiler(t), Check: true, NoFusion: knobs&8 != 0}
		threads := 1
		if knobs&1 != 0 {
			opts.Codegen.MinParallelWork, threads = 1, 2
		}
		msg := ""
		c, err := Compile(g, opts)
		if err == nil {
			var got []*Tensor
			if got, err = c.Run(cIn, threads); err == nil {
				msg = fuzzCompare(got, want, cIn, refIn, tols)
			}
		}
		if err != nil {
			msg = err.Error()
		}
		if why, ok := knownFuzzFailures[key]; ok {
			require.NotEmpty(t, msg, "seed %s is listed in knownFuzzFailures (%s) but passes now: remove it", key, why)
			t.Logf("known failure %s: %s\n  now: %s", key, why, msg)
			return
		}
		require.Empty(t, msg, "seed %s, graph:\n%s", key, g)
	})
}

// knownFuzzFailures are fuzz inputs ("seed/knobs") that expose a bug in inductor, with its
// diagnosis; the test fails when one passes.
var knownFuzzFailures = map[string]string{}

// fuzzTols are the tolerances of a fuzz graph's results: per output, then per input (after
// the call), the relative tolerance t of |got − want| ≤ t·(1 + |want|); 0 is exact equality.
type fuzzTols struct{ outs, ins []float64 }

// fuzzCompare compares outputs and the inputs after the call, floats within their tolerance
// (NaN where the other has NaN, infinities equal), integers and bools exactly.
func fuzzCompare(got []*Tensor, want []*ref.Tensor, cIn []*Tensor, refIn []*ref.Tensor, tols fuzzTols) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d outputs, ref gives %d", len(got), len(want))
	}
	cmp := func(what string, g *Tensor, w *ref.Tensor, tol float64) string {
		gr, wr := cResult(g), refResult(w)
		if d := testcases.CompareResults(gr, wr, testcases.NonUnitStrides); d != "" && (gr.DType != wr.DType || !slices.Equal(gr.Shape, wr.Shape) || !gr.DType.IsFloatingPoint()) {
			return what + ": " + d
		}
		for k, a := range gr.F {
			b := wr.F[k]
			var ok bool
			switch {
			case math.IsNaN(a) || math.IsNaN(b):
				ok = math.IsNaN(a) && math.IsNaN(b)
			case math.IsInf(a, 0) || math.IsInf(b, 0):
				ok = a == b
			default:
				ok = math.Abs(a-b) <= tol*(1+math.Abs(b))
			}
			if !ok {
				return fmt.Sprintf("%s element %d (index %v): got %v, ref gives %v (tolerance %g)", what, k, unravel(int64(k), gr.Shape), a, b, tol)
			}
		}
		return ""
	}
	for i := range want {
		if d := cmp(fmt.Sprintf("output %d", i), got[i], want[i], tols.outs[i]); d != "" {
			return d
		}
	}
	for i := range refIn {
		if d := cmp(fmt.Sprintf("input %d after the call", i), cIn[i], refIn[i], tols.ins[i]); d != "" {
			return d
		}
	}
	return ""
}

// opTol is the tolerance an inexact op of dtype dt adds: libm and libmvec differ from Go's
// math by a few ulp, and chains amplify that.
func opTol(dt primtorch.DType) float64 {
	switch dt {
	case primtorch.Float64:
		return 1e-9
	case primtorch.Float16:
		return 4e-3
	case primtorch.BFloat16:
		return 3e-2
	}
	return 2e-4
}

// fuzzGen builds a random prims graph; every node's meta comes from the op registry.
type fuzzGen struct {
	rng   *rand.Rand
	knobs uint8
	g     *fxgraph.Graph
	pool  []*fuzzVal
	shape []int64 // the base shape most tensors have
	// idx is an int64 placeholder of the base shape that index tensors are made from
	// (remainder by the indexed size keeps them in range); nil when the graph has none.
	idx *fuzzVal
}

// fuzzVal is a tensor of the graph.
type fuzzVal struct {
	n *fxgraph.Node
	// tol is how far ref and C may differ (fuzzTols); 0: equal to the last bit (inputs, and
	// exactly rounded ops — IEEE + − × ÷ sqrt, views, copies — on exact values). Only exact
	// floats feed discontinuous ops (comparisons, floor, conversions to integers, argmax),
	// where an ulp could flip the result.
	tol float64
	// base is the placeholder this value is a view of (nil when it is computed).
	base *fxgraph.Node
}

func (v *fuzzVal) meta() *primtorch.TensorMeta { return v.n.TensorMeta() }

func (v *fuzzVal) exact() bool { return v.tol == 0 }

// inexact is the tolerance of an inexact op of dtype dt on values of tolerance tols.
func inexact(dt primtorch.DType, tols ...float64) float64 {
	return max(opTol(dt), slices.Max(append(tols, 0)))
}

func (gg *fuzzGen) pick() *fuzzVal { return gg.pool[gg.rng.Intn(len(gg.pool))] }

// pickWhere returns a random pool value satisfying ok, or nil.
func (gg *fuzzGen) pickWhere(ok func(v *fuzzVal) bool) *fuzzVal {
	var c []*fuzzVal
	for _, v := range gg.pool {
		if ok(v) {
			c = append(c, v)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[gg.rng.Intn(len(c))]
}

// fuzzMaxNumel bounds every tensor of a fuzz graph (testdata/fuzz/FuzzConformance/
// 8e768f1b1994052a once made a [70001, 70001] mm and ran out of memory).
const fuzzMaxNumel = 1 << 20

// call adds a prims call with the registry's meta; nil when the registry rejects the arguments
// or the result would have more than fuzzMaxNumel elements.
func (gg *fuzzGen) call(target string, args ...any) *fxgraph.Node {
	fargs := make([]fxgraph.Arg, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case *fuzzVal:
			fargs[i] = x.n
		case []int64:
			fargs[i] = constList(x)
		case []fxgraph.Arg:
			fargs[i] = fxgraph.List{Elems: x}
		case fxgraph.Arg:
			fargs[i] = x
		default:
			fargs[i] = fxgraph.Const{V: x}
		}
	}
	n, _, err := testcases.AddNode(gg.g, "prims."+target, fargs, nil)
	if err != nil {
		return nil
	}
	if m := n.TensorMeta(); m != nil && numel(m.Shape) > fuzzMaxNumel {
		gg.g.Nodes = gg.g.Nodes[:len(gg.g.Nodes)-1] // the node just added, which nothing uses
		return nil
	}
	return n
}

func (gg *fuzzGen) push(n *fxgraph.Node, tol float64, base *fxgraph.Node) *fuzzVal {
	if n == nil {
		return nil
	}
	v := &fuzzVal{n: n, tol: tol, base: base}
	gg.pool = append(gg.pool, v)
	return v
}

var fuzzDTypes = []primtorch.DType{primtorch.Float32, primtorch.Float64, primtorch.Int64, primtorch.Bool, primtorch.Float32}

func (gg *fuzzGen) dtype() primtorch.DType {
	if gg.knobs&4 != 0 && gg.rng.Intn(4) == 0 {
		return []primtorch.DType{primtorch.Float16, primtorch.BFloat16}[gg.rng.Intn(2)]
	}
	return fuzzDTypes[gg.rng.Intn(len(fuzzDTypes))]
}

// fuzzPrims builds a random prims graph from a seeded rng (see FuzzConformance) and the
// tolerances of its results.
func fuzzPrims(rng *rand.Rand, knobs uint8) (*fxgraph.Graph, fuzzTols) {
	gg := &fuzzGen{rng: rng, knobs: knobs, g: fxgraph.New("fuzz")}
	sizes := []int64{1, 2, 3, 5, 7, 8, 16, 17, 33}
	nd := rng.Intn(4) + 1
	if rng.Intn(12) == 0 {
		nd = 0
	}
	for range nd {
		gg.shape = append(gg.shape, sizes[rng.Intn(len(sizes))])
	}
	if knobs&16 != 0 {
		gg.shape = [][]int64{{70001}, {257, 260}}[rng.Intn(2)]
	}
	var expands []func()
	for k := range 1 + rng.Intn(3) {
		if e := gg.input(k); e != nil {
			expands = append(expands, e)
		}
	}
	if nd > 0 && rng.Intn(2) == 0 {
		p := gg.g.AddPlaceholder("idx", primtorch.NewContiguous(primtorch.Int64, gg.shape, primtorch.CPU))
		gg.idx = &fuzzVal{n: p, base: p}
	}
	for _, e := range expands {
		e() // after every placeholder
	}
	for range 3 + rng.Intn(10) {
		gg.step()
	}
	tols := gg.finish()
	return gg.g, tols
}

// input adds a placeholder: contiguous, permuted, sliced out of a larger storage, expanded
// from a smaller one (stride 0), or 0-d (then expanded to the base shape by the function it
// returns, to call once every placeholder exists).
func (gg *fuzzGen) input(k int) func() {
	dt := gg.dtype()
	shape := slices.Clone(gg.shape)
	m := &primtorch.TensorMeta{DType: dt, Shape: shape, Device: primtorch.CPU}
	nd := len(shape)
	switch gg.rng.Intn(6) {
	case 0, 1:
		m.Strides = primtorch.ContiguousStrides(shape)
	case 2: // permuted dense
		m.Strides = permutedStrides(gg.rng, shape)
	case 3: // sliced: every dim of a larger storage with step 2 (or 1), offset
		big := make([]int64, nd)
		steps := make([]int64, nd)
		for d, s := range shape {
			steps[d] = int64(1 + gg.rng.Intn(2))
			big[d] = s*steps[d] + int64(gg.rng.Intn(2))
		}
		cs := primtorch.ContiguousStrides(big)
		m.Strides = make([]int64, nd)
		for d := range shape {
			m.Strides[d] = cs[d] * steps[d]
		}
		m.Offset = int64(gg.rng.Intn(3))
	case 4: // expanded: some dims have stride 0
		m.Strides = primtorch.ContiguousStrides(shape)
		for d := range shape {
			if gg.rng.Intn(2) == 0 {
				m.Strides[d] = 0
			}
		}
	case 5: // 0-d, expanded to the base shape
		p := gg.g.AddPlaceholder(fmt.Sprintf("x%d", k), primtorch.NewContiguous(dt, nil, primtorch.CPU))
		v := &fuzzVal{n: p, base: p}
		return func() {
			if e := gg.call("expand", v, shape); e != nil {
				gg.push(e, 0, p)
			} else {
				gg.pool = append(gg.pool, v)
			}
		}
	}
	p := gg.g.AddPlaceholder(fmt.Sprintf("x%d", k), m)
	gg.pool = append(gg.pool, &fuzzVal{n: p, base: p})
	return nil
}

// permutedStrides returns the strides of a dense tensor of shape whose dims are stored in a
// random order.
func permutedStrides(rng *rand.Rand, shape []int64) []int64 {
	perm := rng.Perm(len(shape))
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(perm) - 1; i >= 0; i-- {
		st[perm[i]] = acc
		acc *= max(shape[perm[i]], 1)
	}
	return st
}

// convert returns v converted to dt (v itself when it has dt).
func (gg *fuzzGen) convert(v *fuzzVal, dt primtorch.DType) *fuzzVal {
	if v.meta().DType == dt {
		return v
	}
	from := v.meta().DType
	if from.IsFloatingPoint() && !dt.IsFloatingPoint() && (!v.exact() || gg.knobs&2 != 0) {
		// an ulp could flip the truncation; NaN and inf hit the known bug "convert
		// round trip" (knownBugGraphs)
		return nil
	}
	n := gg.call("convert_element_type", v, dt)
	if n == nil {
		return nil
	}
	tol := v.tol
	if tol > 0 {
		tol = inexact(dt, tol) // an inexact value may round to another neighbour of dt
	}
	return &fuzzVal{n: n, tol: tol}
}

// sameShape returns b broadcast (expand) or reduced-keepdim-expanded to a's shape, or nil.
func (gg *fuzzGen) sameShape(a, b *fuzzVal) *fuzzVal {
	if slices.Equal(a.meta().Shape, b.meta().Shape) {
		return b
	}
	n := gg.call("expand", b, a.meta().Shape)
	if n == nil {
		return nil
	}
	return &fuzzVal{n: n, tol: b.tol, base: b.base}
}

func (gg *fuzzGen) scalar(dt primtorch.DType) any {
	switch {
	case dt == primtorch.Bool:
		return gg.rng.Intn(2) == 0
	case dt.IsFloatingPoint():
		return float64(gg.rng.Intn(9)-4) / 2
	}
	return int64(gg.rng.Intn(9) - 4)
}

var (
	fuzzUnaryExact   = []string{"neg", "abs", "sqrt", "floor", "ceil", "round", "trunc", "sign"}
	fuzzUnaryInexact = []string{"sin", "cos", "tanh", "sigmoid", "atan", "erf", "exp", "log1p", "expm1", "asin"}
	fuzzBinaryFloat  = []string{"add", "sub", "mul", "div", "maximum", "minimum", "copysign", "atan2", "hypot", "pow"}
	fuzzBinaryInt    = []string{"add", "sub", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "floordiv", "remainder", "fmod", "shift_left", "shift_right"}
	fuzzBinaryBool   = []string{"add", "mul", "maximum", "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"}
	fuzzCompareOps   = []string{"eq", "ne", "lt", "le", "gt", "ge"}
	fuzzReductions   = []string{"sum", "prod", "amax", "amin", "any", "all", "argmax", "argmin"}
)

// step adds one random operation (or nothing when the registry rejects what was drawn).
func (gg *fuzzGen) step() {
	switch gg.rng.Intn(19) {
	case 16:
		gg.indexing()
	case 17:
		gg.factory()
	case 18:
		gg.matmul()
	case 0, 1, 2:
		gg.unary()
	case 3, 4, 5:
		gg.binary()
	case 6:
		gg.compareWhere()
	case 7, 8:
		gg.reduction()
	case 9, 10:
		gg.view()
	case 11:
		v := gg.pick()
		dt := gg.dtype()
		if c := gg.convert(v, dt); c != nil && c.n != v.n {
			gg.push(c.n, c.tol, nil)
		}
	case 12:
		v := gg.pick()
		if len(v.meta().Shape) == 0 {
			return
		}
		d := int64(gg.rng.Intn(len(v.meta().Shape)))
		op := "cumsum"
		if gg.rng.Intn(3) == 0 {
			op = "cumprod"
		}
		dt := v.meta().DType
		if dt == primtorch.Bool || dt == primtorch.Float16 || dt == primtorch.BFloat16 {
			return
		}
		tol := 0.0
		if dt.IsFloatingPoint() {
			tol = inexact(dt, v.tol) // summation order
		}
		gg.push(gg.call(op, v, d), tol, nil)
	case 13: // cat of two values along a dim
		a := gg.pick()
		if len(a.meta().Shape) == 0 {
			return
		}
		b := gg.pickWhere(func(v *fuzzVal) bool {
			return v.meta().DType == a.meta().DType && len(v.meta().Shape) == len(a.meta().Shape)
		})
		d := gg.rng.Intn(len(a.meta().Shape))
		gg.push(gg.call("cat", []fxgraph.Arg{a.n, b.n}, int64(d)), max(a.tol, b.tol), nil)
	case 14: // constant_pad_nd, negative pads crop
		v := gg.pick()
		nd := len(v.meta().Shape)
		if nd == 0 {
			return
		}
		var pad []int64
		for range 1 + gg.rng.Intn(min(nd, 2)) {
			pad = append(pad, int64(gg.rng.Intn(4)-1), int64(gg.rng.Intn(4)-1))
		}
		gg.push(gg.call("constant_pad_nd", v, pad, gg.scalar(v.meta().DType)), v.tol, nil)
	case 15: // clone, maybe into a permuted dense layout
		v := gg.pick()
		n := gg.call("clone", v)
		if n != nil && gg.rng.Intn(2) == 0 {
			m := *n.TensorMeta()
			m.Strides = permutedStrides(gg.rng, m.Shape)
			n.Meta = &m
		}
		gg.push(n, v.tol, nil)
	}
}

// index returns an int64 index tensor of the given shape with values in [0, size): the idx
// placeholder (or its flattened prefix, for 1-d shapes) modulo size; nil when there is none.
func (gg *fuzzGen) index(shape []int64, size int64) *fuzzVal {
	if gg.idx == nil || size <= 0 {
		return nil
	}
	src := gg.idx
	if !slices.Equal(shape, gg.shape) {
		if len(shape) != 1 {
			return nil
		}
		total := int64(1)
		for _, s := range gg.shape {
			total *= s
		}
		if shape[0] > total {
			return nil
		}
		flat := gg.call("view", src, []int64{total})
		if flat == nil {
			return nil
		}
		sl := gg.call("slice", &fuzzVal{n: flat}, int64(0), int64(0), shape[0], int64(1))
		if sl == nil {
			return nil
		}
		src = &fuzzVal{n: sl}
	}
	r := gg.call("remainder", src, size)
	if r == nil {
		return nil
	}
	return &fuzzVal{n: r}
}

// indexing adds a gather, index_select, advanced index or accumulating index_put of a
// base-shaped value, with index tensors made by index.
func (gg *fuzzGen) indexing() {
	v := gg.pickWhere(func(v *fuzzVal) bool { return slices.Equal(v.meta().Shape, gg.shape) })
	if v == nil || len(gg.shape) == 0 {
		return
	}
	dim := gg.rng.Intn(len(gg.shape))
	size := gg.shape[dim]
	switch gg.rng.Intn(4) {
	case 0:
		if ix := gg.index(gg.shape, size); ix != nil {
			gg.push(gg.call("gather", v, int64(dim), ix), v.tol, nil)
		}
	case 1:
		if ix := gg.index([]int64{int64(1 + gg.rng.Intn(5))}, size); ix != nil {
			gg.push(gg.call("index_select", v, int64(dim), ix), v.tol, nil)
		}
	case 2, 3:
		ix := gg.index([]int64{int64(1 + gg.rng.Intn(5))}, size)
		if ix == nil {
			return
		}
		list := make([]fxgraph.Arg, dim+1)
		for d := range dim {
			list[d] = fxgraph.Const{V: nil}
		}
		list[dim] = ix.n
		if gg.rng.Intn(2) == 0 {
			gg.push(gg.call("index", v, list), v.tol, nil)
			return
		}
		// index_put with accumulate (duplicate indices add up; without it one write wins)
		var vals any = gg.scalar(v.meta().DType)
		tol := v.tol
		if v.meta().DType.IsFloatingPoint() {
			tol = inexact(v.meta().DType, tol) // the order duplicates add in
		}
		gg.push(gg.call("index_put", v, list, vals, true), tol, nil)
	}
}

// factory adds iota or full, brought to the base shape.
func (gg *fuzzGen) factory() {
	dt := gg.dtype()
	var n *fxgraph.Node
	if gg.rng.Intn(2) == 0 && dt != primtorch.Bool && len(gg.shape) > 0 {
		last := gg.shape[len(gg.shape)-1]
		var start, step any = int64(gg.rng.Intn(7) - 3), int64(gg.rng.Intn(5) - 2)
		if dt.IsFloatingPoint() {
			start, step = float64(gg.rng.Intn(7)-3)/2, float64(gg.rng.Intn(5)-2)/4
		}
		n = gg.call("iota", last, start, step, dt)
		if n == nil {
			return
		}
		n = gg.call("expand", &fuzzVal{n: n}, gg.shape)
	} else {
		n = gg.call("full", gg.shape, gg.scalar(dt), dt)
	}
	gg.push(n, 0, nil)
}

// matmul adds mm(a, aᵀ) of a 2-d float value (bmm for 3-d, addmm with a bias row now and then).
func (gg *fuzzGen) matmul() {
	a := gg.pickWhere(func(v *fuzzVal) bool {
		m := v.meta()
		return (len(m.Shape) == 2 || len(m.Shape) == 3) && (m.DType == primtorch.Float32 || m.DType == primtorch.Float64)
	})
	if a == nil {
		return
	}
	nd := len(a.meta().Shape)
	if sh := a.meta().Shape; numel(sh)*sh[nd-2] > 1<<22 {
		return // the Go executor's mm is a naive loop
	}
	perm := []int64{1, 0}
	if nd == 3 {
		perm = []int64{0, 2, 1}
	}
	at := gg.call("permute", a, perm)
	if at == nil {
		return
	}
	tol := inexact(a.meta().DType, a.tol)
	switch {
	case nd == 3:
		gg.push(gg.call("bmm", a, &fuzzVal{n: at}), tol, nil)
	case gg.rng.Intn(2) == 0:
		bias := gg.call("full", []int64{a.meta().Shape[0]}, 0.5, a.meta().DType)
		if bias != nil {
			gg.push(gg.call("addmm", &fuzzVal{n: bias}, a, &fuzzVal{n: at}), tol, nil)
		}
	default:
		gg.push(gg.call("mm", a, &fuzzVal{n: at}), tol, nil)
	}
}

// relayout gives a pointwise result a random permuted dense layout now and then.
func (gg *fuzzGen) relayout(n *fxgraph.Node) *fxgraph.Node {
	if n != nil && gg.rng.Intn(5) == 0 {
		m := *n.TensorMeta()
		m.Strides = permutedStrides(gg.rng, m.Shape)
		n.Meta = &m
	}
	return n
}

func (gg *fuzzGen) unary() {
	v := gg.pick()
	dt := v.meta().DType
	var op string
	tol := v.tol
	switch {
	case dt == primtorch.Bool:
		op = []string{"bitwise_not", "logical_not", "sign"}[gg.rng.Intn(3)]
	case !dt.IsFloatingPoint():
		op = []string{"neg", "abs", "sign", "bitwise_not", "floor"}[gg.rng.Intn(5)]
	case gg.rng.Intn(2) == 0 || !v.exact():
		op = fuzzUnaryInexact[gg.rng.Intn(len(fuzzUnaryInexact))]
		tol = inexact(dt, v.tol)
		switch op {
		case "exp", "expm1", "asin":
			// keep them in range: exp(tanh(x)), asin(tanh(x))
			t := gg.call("tanh", v)
			if t == nil {
				return
			}
			v = &fuzzVal{n: t, tol: tol}
		case "log1p":
			a := gg.call("abs", v)
			if a == nil {
				return
			}
			v = &fuzzVal{n: a, tol: v.tol}
		}
	default:
		op = fuzzUnaryExact[gg.rng.Intn(len(fuzzUnaryExact))]
	}
	if dt == primtorch.Float16 || dt == primtorch.BFloat16 {
		tol = inexact(dt, tol) // computed in float, rounded: double rounding may differ
	}
	gg.push(gg.relayout(gg.call(op, v)), tol, nil)
}

func (gg *fuzzGen) binary() {
	a := gg.pick()
	dt := a.meta().DType
	var ops []string
	switch {
	case dt == primtorch.Bool:
		ops = fuzzBinaryBool
	case dt.IsFloatingPoint():
		ops = fuzzBinaryFloat
	default:
		ops = fuzzBinaryInt
	}
	op := ops[gg.rng.Intn(len(ops))]
	var b any
	bTol := 0.0
	// copysign reads the sign of NaN, which neither torch nor C defines (torch's own conversions
	// give NaNs of either sign, depending on the code path): its sign operand is a number
	// (testdata/fuzz/FuzzConformance/9484296133a01574 copied the sign of a NaN).
	if gg.rng.Intn(3) == 0 || op == "copysign" {
		b = gg.scalar(dt)
	} else {
		bv := gg.convert(gg.pick(), dt)
		if bv == nil {
			return
		}
		if bv = gg.sameShape(a, bv); bv == nil {
			return
		}
		b, bTol = bv, bv.tol
	}
	switch op {
	case "floordiv", "remainder", "fmod":
		// integer division by zero is an error: divide by where(b == 0, 1, b)
		if bv, ok := b.(*fuzzVal); ok {
			z := gg.call("eq", bv, int64(0))
			if z == nil {
				return
			}
			nz := gg.call("where", &fuzzVal{n: z}, int64(1), bv)
			if nz == nil {
				return
			}
			b = &fuzzVal{n: nz}
		} else if b == int64(0) {
			b = int64(3)
		}
	case "div":
		if bTol > 0 {
			return // dividing by a value near zero that differs by an ulp
		}
	case "pow":
		// keep pow finite and continuous: |a| ^ (scalar)
		abs := gg.call("abs", a)
		if abs == nil {
			return
		}
		a = &fuzzVal{n: abs, tol: a.tol}
		b = float64(gg.rng.Intn(5)) / 2
	}
	tol := max(a.tol, bTol)
	switch op {
	case "atan2", "hypot", "pow", "remainder", "fmod", "floordiv":
		if dt.IsFloatingPoint() {
			tol = inexact(dt, tol)
		}
	}
	if (dt == primtorch.Float16 || dt == primtorch.BFloat16) && op != "maximum" && op != "minimum" {
		tol = inexact(dt, tol)
	}
	gg.push(gg.relayout(gg.call(op, a, b)), tol, nil)
}

// compareWhere compares two exact values and selects with the result.
func (gg *fuzzGen) compareWhere() {
	a := gg.pickWhere(func(v *fuzzVal) bool { return v.exact() })
	if a == nil {
		return
	}
	b := gg.pickWhere(func(v *fuzzVal) bool { return v.exact() && v.meta().DType == a.meta().DType })
	if b = gg.sameShape(a, b); b == nil {
		return
	}
	c := gg.call(fuzzCompareOps[gg.rng.Intn(len(fuzzCompareOps))], a, b)
	if c == nil {
		return
	}
	cv := gg.push(c, 0, nil)
	x := gg.pick()
	y := gg.convert(gg.pick(), x.meta().DType)
	if y == nil {
		return
	}
	if x = gg.sameShape(cv, x); x == nil {
		return
	}
	if y = gg.sameShape(cv, y); y == nil {
		return
	}
	gg.push(gg.call("where", cv, x, y), max(x.tol, y.tol), nil)
}

// reduction reduces some dims (keepdim or not) and, now and then, expands the result back and
// combines it with another value (softmax and norm shapes).
func (gg *fuzzGen) reduction() {
	v := gg.pick()
	m := v.meta()
	nd := len(m.Shape)
	op := fuzzReductions[gg.rng.Intn(len(fuzzReductions))]
	var dims []int64
	switch {
	case op == "argmax" || op == "argmin":
		if nd == 0 || (m.DType.IsFloatingPoint() && !v.exact()) {
			return
		}
		dims = []int64{int64(gg.rng.Intn(nd))}
	default:
		for d := range nd {
			if gg.rng.Intn(2) == 0 {
				dims = append(dims, int64(d))
			}
		}
		if len(dims) == 0 && nd > 0 {
			dims = []int64{int64(nd - 1)}
		}
	}
	if op == "prod" {
		// keep integer products from overflowing: small reductions only
		n := int64(1)
		for _, d := range dims {
			n *= m.Shape[d]
		}
		if n > 8 && !m.DType.IsFloatingPoint() && m.DType != primtorch.Bool {
			return
		}
	}
	keep := gg.rng.Intn(2) == 0
	r := gg.call(op, v, dims, keep)
	if r == nil {
		return
	}
	dt := r.TensorMeta().DType
	tol := 0.0
	switch {
	case !dt.IsFloatingPoint():
	case op == "amax" || op == "amin":
		tol = v.tol
	default:
		tol = inexact(dt, v.tol) // summation order
	}
	rv := gg.push(r, tol, nil)
	if keep && gg.rng.Intn(2) == 0 && dt == m.DType {
		e := gg.call("expand", rv, m.Shape)
		if e == nil {
			return
		}
		ev := &fuzzVal{n: e, tol: tol}
		ops := []string{"sub", "add", "maximum"}
		if dt == primtorch.Bool {
			ops = []string{"bitwise_xor", "add"}
		}
		gg.push(gg.call(ops[gg.rng.Intn(len(ops))], v, ev), max(tol, v.tol), nil)
	}
}

// view adds a random view of a value: permute, slice, select, squeeze/unsqueeze, expand of a
// size-1 dim, a flattening view of a contiguous value, or as_strided over a placeholder.
func (gg *fuzzGen) view() {
	v := gg.pick()
	m := v.meta()
	nd := len(m.Shape)
	var n *fxgraph.Node
	switch gg.rng.Intn(7) {
	case 0:
		perm := gg.rng.Perm(nd)
		dims := make([]int64, nd)
		for i, p := range perm {
			dims[i] = int64(p)
		}
		n = gg.call("permute", v, dims)
	case 1:
		if nd == 0 {
			return
		}
		d := gg.rng.Intn(nd)
		size := m.Shape[d]
		start := int64(gg.rng.Intn(int(size) + 1))
		end := start + int64(gg.rng.Intn(int(size-start)+1))
		n = gg.call("slice", v, int64(d), start, end, int64(1+gg.rng.Intn(3)))
	case 2:
		if nd == 0 {
			return
		}
		d := gg.rng.Intn(nd)
		if m.Shape[d] == 0 {
			return
		}
		n = gg.call("select", v, int64(d), int64(gg.rng.Intn(int(m.Shape[d]))))
	case 3:
		n = gg.call("unsqueeze", v, int64(gg.rng.Intn(nd+1)))
	case 4:
		var ones []int64
		for d, s := range m.Shape {
			if s == 1 {
				ones = append(ones, int64(d))
			}
		}
		if len(ones) == 0 {
			return
		}
		n = gg.call("squeeze", v, ones[:1+gg.rng.Intn(len(ones))])
	case 5:
		shape := append([]int64{int64(1 + gg.rng.Intn(3))}, m.Shape...)
		n = gg.call("expand", v, shape)
	case 6:
		if !m.IsContiguous() {
			return
		}
		total := int64(1)
		for _, s := range m.Shape {
			total *= s
		}
		shape := []int64{total}
		if total%2 == 0 && gg.rng.Intn(2) == 0 {
			shape = []int64{2, total / 2}
		}
		n = gg.call("view", v, shape)
	}
	gg.push(n, v.tol, v.base)
}

// finish picks the outputs (the last value and a few more computed ones) and, now and then,
// ends with a copy_ into a dense input no output views.
func (gg *fuzzGen) finish() fuzzTols {
	var outs []fxgraph.Arg
	var outVals []*fuzzVal
	add := func(v *fuzzVal) {
		if v == nil || slices.Contains(outVals, v) {
			return
		}
		outVals = append(outVals, v)
		outs = append(outs, v.n)
	}
	add(gg.pool[len(gg.pool)-1])
	for range gg.rng.Intn(3) {
		add(gg.pickWhere(func(v *fuzzVal) bool { return v.n.Op == fxgraph.CallFunction }))
	}
	var tols fuzzTols
	for _, v := range outVals {
		tols.outs = append(tols.outs, v.tol)
	}
	tols.ins = make([]float64, len(gg.g.Placeholders()))
	if gg.rng.Intn(3) == 0 {
		for i, p := range gg.g.Placeholders() {
			m := p.TensorMeta()
			if !denseLayout(m) || slices.ContainsFunc(outVals, func(v *fuzzVal) bool { return v.base == p }) {
				continue
			}
			src := gg.pickWhere(func(v *fuzzVal) bool {
				return v.n.Op == fxgraph.CallFunction && v.base == nil && slices.Equal(v.meta().Shape, m.Shape)
			})
			if src == nil {
				continue
			}
			if src = gg.convert(src, m.DType); src == nil {
				continue
			}
			if src.n.Op != fxgraph.CallFunction {
				continue
			}
			if gg.call("copy_", &fuzzVal{n: p}, src) == nil {
				break
			}
			tols.ins[i] = src.tol
			if gg.rng.Intn(2) == 0 {
				break // else a copy_ into another input too (an optimizer step writes two)
			}
		}
	}
	gg.g.AddOutput(fxgraph.Tuple{Elems: outs})
	return tols
}

// denseLayout reports a meta whose elements occupy distinct storage positions (no stride 0
// over a dim of size > 1): writing into it is well defined.
func denseLayout(m *primtorch.TensorMeta) bool {
	for d, s := range m.Shape {
		if s > 1 && m.Strides[d] == 0 {
			return false
		}
	}
	return true
}
