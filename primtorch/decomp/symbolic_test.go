package decomp_test

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// The decomposition property test of dynamic shapes: every recorded case is rebuilt with its
// dense inputs given symbolic sizes (one symbol per distinct size >= 2, dynamo's duck sizing;
// parameters stay static), its torch-level metas computed symbolically by the registry, and
// decomposed. The symbolic prims graph, evaluated at other values of the symbols that satisfy
// every guard the trace and the decomposition recorded, must be the static decomposition of the
// case at those sizes: the same nodes, the same constants (sym(...) evaluated) and the same
// metas. So no decomposition bakes a hint into the graph without a guard, and every layout
// decision it took at the hints is guarded.

// symbolizeDense gives a dense meta symbolic sizes (sizes >= 2) and strides in its dim order.
func symbolizeDense(m *primtorch.TensorMeta, env *primtorch.ShapeEnv, bySize map[int64]primtorch.SymInt, batchOnly bool) *primtorch.TensorMeta {
	if !m.IsNonOverlappingAndDense() || m.Offset != 0 {
		return m
	}
	n := len(m.Shape)
	sizes := make([]primtorch.SymInt, n)
	any := false
	for i, s := range m.Shape {
		if s < 2 || batchOnly && (i > 0 || n < 3) {
			sizes[i] = primtorch.SymConst(s)
			continue
		}
		sym, ok := bySize[s]
		if !ok {
			sym = env.NewSymbol(s, fmt.Sprintf("size %d", s))
			bySize[s] = sym
		}
		sizes[i], any = sym, true
	}
	if !any {
		return m
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = n - 1 - i
	}
	sort.SliceStable(perm, func(i, j int) bool {
		a, b := perm[i], perm[j]
		if m.Shape[a] < 2 || m.Shape[b] < 2 {
			return false
		}
		return m.Strides[a] < m.Strides[b]
	})
	strides := make([]primtorch.SymInt, n)
	acc, hint := primtorch.SymConst(1), int64(1)
	for _, d := range perm {
		if m.Shape[d] < 2 {
			strides[d] = primtorch.SymConst(m.Strides[d])
			continue
		}
		if hint != m.Strides[d] {
			return m
		}
		strides[d] = acc
		acc, hint = acc.Mul(sizes[d]), hint*m.Shape[d]
	}
	c := m.Clone()
	return c.SetSymLayout(sizes, strides, primtorch.SymConst(0))
}

func evalMetaAt(m *primtorch.TensorMeta, vals []int64) *primtorch.TensorMeta {
	c := m.Clone()
	if m.Sym == nil {
		return c
	}
	c.Sym = nil
	for i := range m.Shape {
		c.Shape[i] = m.Sym.Sizes[i].Eval(vals)
		c.Strides[i] = m.Sym.Strides[i].Eval(vals)
	}
	c.Offset = m.Sym.Offset.Eval(vals)
	return c
}

func evalAt(v any, vals []int64) any {
	switch x := v.(type) {
	case primtorch.SymInt:
		return x.Eval(vals)
	case *primtorch.TensorMeta:
		if x == nil {
			return x
		}
		return evalMetaAt(x, vals)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = evalAt(e, vals)
		}
		return out
	}
	return v
}

func evalArg(a fxgraph.Arg, vals []int64, nodes map[*fxgraph.Node]*fxgraph.Node) fxgraph.Arg {
	switch x := a.(type) {
	case *fxgraph.Node:
		return nodes[x]
	case fxgraph.Const:
		if s, ok := x.V.(primtorch.SymInt); ok {
			return fxgraph.Const{V: s.Eval(vals)}
		}
		return x
	case fxgraph.List:
		out := fxgraph.List{}
		for _, e := range x.Elems {
			out.Elems = append(out.Elems, evalArg(e, vals, nodes))
		}
		return out
	case fxgraph.Tuple:
		out := fxgraph.Tuple{}
		for _, e := range x.Elems {
			out.Elems = append(out.Elems, evalArg(e, vals, nodes))
		}
		return out
	case fxgraph.Slice:
		return fxgraph.Slice{Start: evalArg(x.Start, vals, nodes), Stop: evalArg(x.Stop, vals, nodes), Step: evalArg(x.Step, vals, nodes)}
	}
	return a
}

// symBound makes a slice bound that is a symbolized size, its negative or the size plus or minus
// one symbolic (x[:, :T], x[-T:], x[:T - 1]); evaluated at vals when vals is not nil.
func symBound(bySize map[int64]primtorch.SymInt, vals []int64) func(fxgraph.Const) fxgraph.Const {
	return func(c fxgraph.Const) fxgraph.Const {
		k, ok := c.V.(int64)
		if !ok {
			return c
		}
		for _, f := range []struct{ sign, off int64 }{{1, 0}, {-1, 0}, {1, -1}, {1, 1}} {
			if s, ok := bySize[f.sign*(k-f.off)]; ok && s.Hint() >= 2 {
				r := s.MulConst(f.sign).AddConst(f.off)
				if vals != nil {
					return fxgraph.Const{V: r.Eval(vals)}
				}
				return fxgraph.Const{V: r}
			}
		}
		return c
	}
}

// mapBounds applies f to the constant bounds of the slices in a.
func mapBounds(a fxgraph.Arg, f func(fxgraph.Const) fxgraph.Const) fxgraph.Arg {
	part := func(p fxgraph.Arg) fxgraph.Arg {
		if c, ok := p.(fxgraph.Const); ok {
			return f(c)
		}
		return p
	}
	switch x := a.(type) {
	case fxgraph.Slice:
		return fxgraph.Slice{Start: part(x.Start), Stop: part(x.Stop), Step: x.Step}
	case fxgraph.List:
		out := fxgraph.List{}
		for _, e := range x.Elems {
			out.Elems = append(out.Elems, mapBounds(e, f))
		}
		return out
	case fxgraph.Tuple:
		out := fxgraph.Tuple{}
		for _, e := range x.Elems {
			out.Elems = append(out.Elems, mapBounds(e, f))
		}
		return out
	}
	return a
}

func hasSlice(g *fxgraph.Graph) bool {
	var has func(a fxgraph.Arg) bool
	has = func(a fxgraph.Arg) bool {
		switch x := a.(type) {
		case fxgraph.Slice:
			return true
		case fxgraph.List:
			for _, e := range x.Elems {
				if has(e) {
					return true
				}
			}
		case fxgraph.Tuple:
			for _, e := range x.Elems {
				if has(e) {
					return true
				}
			}
		}
		return false
	}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			if has(a) {
				return true
			}
		}
	}
	return false
}

// rebuild re-adds g's calls over new placeholder metas (inputs maps each placeholder and
// get_attr to its new meta), the registry computing every torch-level meta again; bound (when
// not nil) maps the constant slice bounds of the calls' arguments.
func rebuild(g *fxgraph.Graph, inputs func(n *fxgraph.Node) any, env *primtorch.ShapeEnv, bound func(fxgraph.Const) fxgraph.Const) (*fxgraph.Graph, error) {
	ng := fxgraph.New(g.Name)
	ng.Shapes = env
	nodes := map[*fxgraph.Node]*fxgraph.Node{}
	mapArg := func(a fxgraph.Arg) fxgraph.Arg {
		return fxgraph.MapArg(a, func(n *fxgraph.Node) fxgraph.Arg { return nodes[n] })
	}
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			nodes[n] = ng.AddPlaceholder(n.Target, inputs(n))
		case fxgraph.GetAttr:
			nodes[n] = ng.AddGetAttr(n.Target, inputs(n))
		case fxgraph.Output:
			var res fxgraph.Arg
			if len(n.Args) > 0 {
				res = mapArg(n.Args[0])
			}
			ng.AddOutput(res)
		default:
			args := make([]fxgraph.Arg, len(n.Args))
			for i, a := range n.Args {
				args[i] = mapArg(a)
				if bound != nil {
					args[i] = mapBounds(args[i], bound)
				}
			}
			kwargs := make([]fxgraph.Kwarg, len(n.Kwargs))
			for i, kw := range n.Kwargs {
				kwargs[i] = fxgraph.Kwarg{Name: kw.Name, Value: mapArg(kw.Value)}
			}
			if n.Target == "operator.getitem" && len(args) == 2 {
				if src, ok := args[0].(*fxgraph.Node); ok {
					if tup, ok := src.Meta.([]any); ok {
						k := args[1].(fxgraph.Const).V.(int64)
						nodes[n] = ng.AddCall(n.Target, args, nil, tup[k])
						nodes[n].Where = n.Where
						continue
					}
				}
			}
			target := n.Target
			if n.Op == fxgraph.CallMethod {
				target = "Tensor." + target
			}
			nn, _, err := testcases.AddNode(ng, target, args, kwargs)
			if err != nil {
				return nil, err
			}
			nn.Where = n.Where
			nodes[n] = nn
		}
	}
	return ng, nil
}

// sameGraphAt compares the symbolic prims graph sg evaluated at vals with the static prims
// graph pg: node by node, targets, arguments and metas.
func sameGraphAt(sg, pg *fxgraph.Graph, vals []int64) string {
	// a float of sizes (n / (n - 1), 1/sqrt(E)) is a 0-d tensor computed from sym(...) values in
	// the symbolic graph, a number in the static one: fold it at vals
	folded := foldSizeFloats(sg, vals)
	if len(folded) > 0 {
		kept := fxgraph.New(sg.Name)
		for _, n := range sg.Nodes {
			if _, f := folded[n]; !f {
				kept.Nodes = append(kept.Nodes, n)
			}
		}
		sg = kept
	}
	foldArg := func(a fxgraph.Arg) fxgraph.Arg {
		return fxgraph.MapArg(a, func(m *fxgraph.Node) fxgraph.Arg {
			if v, ok := folded[m]; ok {
				return fxgraph.Const{V: v}
			}
			return m
		})
	}
	if len(sg.Nodes) != len(pg.Nodes) {
		return fmt.Sprintf("%d nodes, the static decomposition has %d:\n%s\nstatic:\n%s", len(sg.Nodes), len(pg.Nodes), sg, pg)
	}
	idx := map[*fxgraph.Node]*fxgraph.Node{}
	for i, n := range sg.Nodes {
		p := pg.Nodes[i]
		idx[n] = p
		if n.Op != p.Op || n.Target != p.Target {
			return fmt.Sprintf("node %d is %s %s, static %s %s", i, n.Op, n.Target, p.Op, p.Target)
		}
		got := evalAt(n.Meta, vals)
		if a, b := metaText(got), metaText(p.Meta); a != b {
			return fmt.Sprintf("node %s (%s): meta %s, static %s", n.Name, n.Target, a, b)
		}
		if len(n.Args) != len(p.Args) {
			return fmt.Sprintf("node %s: %d args, static %d", n.Name, len(n.Args), len(p.Args))
		}
		for j := range n.Args {
			a := evalArg(foldArg(n.Args[j]), vals, idx)
			if argText(a) != argText(p.Args[j]) {
				return fmt.Sprintf("node %s (%s) arg %d: %v, static %v", n.Name, n.Target, j, a, p.Args[j])
			}
		}
	}
	return ""
}

func argText(a fxgraph.Arg) string {
	switch x := a.(type) {
	case *fxgraph.Node:
		return fmt.Sprintf("%%%p", x)
	case fxgraph.Const:
		switch v := x.V.(type) {
		case int64: // a size divisor (sym(...) evaluated) divides as the float does
			return fmt.Sprintf("number:%v", float64(v))
		case float64:
			return fmt.Sprintf("number:%v", v)
		}
		return fmt.Sprintf("%T:%v", x.V, x.V)
	case fxgraph.List:
		var parts []string
		for _, e := range x.Elems {
			parts = append(parts, argText(e))
		}
		return "[" + strings.Join(parts, ",") + "]"
	case fxgraph.Tuple:
		var parts []string
		for _, e := range x.Elems {
			parts = append(parts, argText(e))
		}
		return "(" + strings.Join(parts, ",") + ")"
	}
	return fmt.Sprintf("%T%v", a, a)
}

func metaText(v any) string {
	switch x := v.(type) {
	case *primtorch.TensorMeta:
		return fmt.Sprintf("%s%v{%v+%d}", x.DType, x.Shape, x.Strides, x.Offset)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, metaText(e))
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprint(v)
}

// torchKernelWhenSymbolic are the ops whose decomposition is a torch kernel when an input's
// spatial size is symbolic: adaptive average pooling to a size other than 1 (its windows are
// floor and ceil divisions of that size; torch's kernel takes any size, the static graph's
// reshape-mean only a multiple).
var torchKernelWhenSymbolic = map[string]bool{"adaptive_avg_pool1d": true, "adaptive_avg_pool2d": true}

// spatialSymbolic reports a placeholder of g with a symbolic size past its first two dims.
func spatialSymbolic(g *fxgraph.Graph) bool {
	for _, n := range g.Nodes {
		if m := n.TensorMeta(); n.Op == fxgraph.Placeholder && m != nil && m.Sym != nil {
			for _, s := range m.SymSizes()[min(2, len(m.Shape)):] {
				if _, cst := s.IsConst(); !cst {
					return true
				}
			}
		}
	}
	return false
}

// allOnesOutput reports a graph whose output's sizes past the first two are all 1.
func allOnesOutput(g *fxgraph.Graph) bool {
	out := g.Nodes[len(g.Nodes)-1].Args[0].(fxgraph.Tuple).Elems[0].(*fxgraph.Node)
	for _, k := range out.TensorMeta().Shape[2:] {
		if k != 1 {
			return false
		}
	}
	return true
}

// oneTorchKernel checks that sg is one prims.fallback call whose output at vals is the static
// graph's.
func oneTorchKernel(sg, pg *fxgraph.Graph, vals []int64) string {
	var calls []*fxgraph.Node
	for _, n := range sg.Nodes {
		if n.Op == fxgraph.CallFunction {
			calls = append(calls, n)
		}
	}
	if len(calls) != 1 || calls[0].Target != "prims.fallback" {
		return fmt.Sprintf("a symbolic size should run torch's kernel, one prims.fallback:\n%s", sg)
	}
	out := pg.Nodes[len(pg.Nodes)-1].Args[0].(fxgraph.Tuple).Elems[0].(*fxgraph.Node)
	if a, b := metaText(evalAt(calls[0].Meta, vals)), metaText(out.Meta); a != b {
		return fmt.Sprintf("torch's kernel gives %s, the static graph %s", a, b)
	}
	return ""
}

func TestSymbolicDecompositionProperty(t *testing.T) {
	cases := loadCases(t)
	checked, symbolic, ruledOut := 0, 0, 0
	var allSpecialized []string
	perOp := map[string]int{}
	withBounds := 0
	for k := 0; k < 3*len(cases); k++ {
		// three passes: every dense size symbolic, only the batch, and every size with the slice
		// bounds that are sizes symbolic too (x[:, :T])
		c, batchOnly, bounds := &cases[k%len(cases)], k >= len(cases) && k < 2*len(cases), k >= 2*len(cases)
		g, _, err := c.Build()
		if err != nil || bounds && !hasSlice(g) {
			continue
		}
		static, err := decomp.Decompose(g, decomp.Options{})
		if err != nil {
			continue
		}
		env := primtorch.NewShapeEnv()
		bySize := map[int64]primtorch.SymInt{}
		sym, err := rebuild(g, func(n *fxgraph.Node) any {
			m := n.TensorMeta()
			if m == nil || n.Op == fxgraph.GetAttr {
				return n.Meta
			}
			return symbolizeDense(m, env, bySize, batchOnly)
		}, env, nil)
		if bounds && err == nil {
			// again, now that the sizes have their symbols, with symbolic bounds
			before := sym.String()
			sym, err = rebuild(g, func(n *fxgraph.Node) any {
				for _, sn := range sym.Nodes {
					if sn.Op == n.Op && sn.Target == n.Target {
						return sn.Meta
					}
				}
				return n.Meta
			}, env, symBound(bySize, nil))
			if err == nil && sym.String() == before {
				continue
			}
			withBounds++
		}
		if err != nil || env.NumSymbols() == 0 {
			if err != nil {
				t.Errorf("%s: the symbolic graph does not build: %v", c.name(), err)
			}
			continue
		}
		symbolic++
		spg, err := decomp.Decompose(sym, decomp.Options{Check: true})
		if err != nil {
			t.Errorf("%s: the symbolic graph does not decompose: %v\n%s", c.name(), err, sym)
			continue
		}
		require.Same(t, env, spg.Shapes, "the prims graph keeps the graph's symbols")
		if len(env.Specialized()) == env.NumSymbols() {
			allSpecialized = append(allSpecialized, c.name())
		}
		// at the hints, the symbolic prims graph is the static one, except where a symbolic size
		// runs torch's kernel by design (torchKernelWhenSymbolic): then it is that one call, with
		// the static graph's output (to 1, a mean, the static graph's decomposition)
		if torchKernelWhenSymbolic[c.Op] && spatialSymbolic(spg) && !allOnesOutput(spg) {
			if d := oneTorchKernel(spg, static, env.Hints()); d != "" {
				t.Errorf("%s at the hints: %s", c.name(), d)
			}
			continue
		}
		if d := sameGraphAt(spg, static, env.Hints()); d != "" {
			t.Errorf("%s at the hints: %s", c.name(), d)
			continue
		}
		guards := env.Guards()
		for _, vals := range altSizes(env.Hints()) {
			env.FillDerived(vals) // derived symbols (floor(s0/2)) follow their definitions
			ok := true
			for _, gd := range guards {
				ok = ok && gd.Holds(vals)
			}
			if !ok {
				ruledOut++
				continue
			}
			cg, err := rebuild(g, func(n *fxgraph.Node) any {
				if n.Op == fxgraph.GetAttr {
					return n.Meta
				}
				for _, sn := range sym.Nodes {
					if sn.Op == n.Op && sn.Target == n.Target {
						return evalAt(sn.Meta, vals)
					}
				}
				return n.Meta
			}, nil, map[bool]func(fxgraph.Const) fxgraph.Const{true: symBound(bySize, vals)}[bounds])
			if err != nil {
				t.Errorf("%s at %v (guards %v): the static graph does not build: %v", c.name(), vals, guards, err)
				break
			}
			cpg, err := decomp.Decompose(cg, decomp.Options{})
			if err != nil {
				t.Errorf("%s at %v (guards %v): the static graph does not decompose: %v", c.name(), vals, guards, err)
				break
			}
			if d := sameGraphAt(spg, cpg, vals); d != "" {
				t.Errorf("%s at %v (guards %v): %s", c.name(), vals, guards, d)
				break
			}
			checked++
			perOp[c.Op]++
		}
	}
	t.Logf("%d symbolic cases (%d with symbolic slice bounds), %d checks at other sizes, %d value sets ruled out by guards; %d ops checked", symbolic, withBounds, checked, ruledOut, len(perOp))
	t.Logf("%d cases with every symbol specialised: %s", len(allSpecialized), strings.Join(allSpecialized, " "))
	require.Positive(t, checked)
}

func altSizes(hints []int64) [][]int64 {
	var out [][]int64
	for _, f := range []func(h int64, i int) int64{
		func(h int64, i int) int64 { return h + 1 },
		func(h int64, i int) int64 { return 2 * h },
		func(h int64, i int) int64 { return h + 3 + int64(i) },
	} {
		v := make([]int64, len(hints))
		for i, h := range hints {
			v[i] = f(h, i)
		}
		out = append(out, v)
	}
	return out
}

func symIn(b *tg, name string, env *primtorch.ShapeEnv, sizes ...any) *fxgraph.Node {
	ss := make([]primtorch.SymInt, len(sizes))
	for i, s := range sizes {
		switch x := s.(type) {
		case primtorch.SymInt:
			ss[i] = x
		case int:
			ss[i] = primtorch.SymConst(int64(x))
		}
	}
	return b.in(name, primtorch.NewSymContiguous(primtorch.Float32, ss, primtorch.CPU))
}

// TestSymbolicDecompositions pins what symbolic graphs decompose to: sizes stay symbols (mean
// divides by sym("s0")), nothing is guarded or specialised, and the text parses back.
func TestSymbolicDecompositions(t *testing.T) {
	env := primtorch.NewShapeEnv()
	s0 := env.NewSymbol(8, "L['x'].size(0)")
	b := newTG(t)
	b.g.Shapes = env
	x := symIn(b, "x", env, s0, 4, 16)
	w := b.in("w", f32(32, 64))
	v := b.call("Tensor.view", x, -1, 64)
	y := b.call("torch.nn.functional.linear", v, w)
	m0 := b.call("torch.mean", y, 0)
	sm := b.call("torch.softmax", y, -1)
	vr := b.call("torch.var", y, 0)
	ln := b.call("torch.nn.functional.layer_norm", y, []any{32})
	g := b.out(m0, sm, vr, ln)
	require.Empty(t, env.Guards())
	pg := decompose(t, g)
	text := pg.String()
	require.Empty(t, env.Guards(), "the decompositions guard nothing:\n%s", text)
	require.Empty(t, env.Specialized())
	require.Contains(t, text, `prims.view(%x, [sym("s0"), 64])`)
	require.Contains(t, text, `sym("s0"))`, "mean and var divide by the symbolic count")
	require.Contains(t, text, `sym("s0 - 1")`, "var's unbiased divisor")
	require.Contains(t, text, `prims.div(%sum_`, "layer_norm's divisor is the constant 32")
	require.NotContains(t, text, "8.0", "no hint of s0 is baked in")
	for _, o := range pg.OutputNode().Inputs() {
		require.NotNil(t, o.TensorMeta())
	}
	require.Equal(t, "f32[32]", pg.OutputNode().Inputs()[0].TensorMeta().SymString())
	require.Equal(t, "f32[s0,32]", pg.OutputNode().Inputs()[1].TensorMeta().SymString())
	parsed, err := fxgraph.Parse(text)
	require.NoError(t, err, "%s", text)
	require.Empty(t, fxgraph.Diff(pg, parsed))
	t.Log(text)
}

// TestSymbolicSpecializingDecomposition: a decomposition that reads concrete sizes specialises
// the symbols its call mentions (with guards) rather than baking their hints in silently.
func TestSymbolicSpecializingDecomposition(t *testing.T) {
	env := primtorch.NewShapeEnv()
	s0 := env.NewSymbol(6, "L['x'].size(0)")
	b := newTG(t)
	b.g.Shapes = env
	x := symIn(b, "x", env, s0, 5)
	idx := b.in("idx", primtorch.NewSymContiguous(primtorch.Int64, []primtorch.SymInt{s0, primtorch.SymConst(5)}, primtorch.CPU))
	r := b.call("torch.scatter_add", x, 0, idx, x)
	g := b.out(r)
	require.Empty(t, env.Specialized(), "scatter_add's meta is symbolic")
	pg := decompose(t, g)
	require.True(t, env.IsSpecialized(0), "scatter_add's decomposition specialises s0:\n%s", pg)
	require.Equal(t, []string{"s0 == 6"}, func() []string {
		var out []string
		for _, gd := range env.Guards() {
			out = append(out, gd.String())
		}
		return out
	}())
}

// TestSymbolicPrimsGraphRuns runs one symbolic prims graph with the reference interpreter at
// sizes other than its hints: its results are the static decomposition's at those sizes.
func TestSymbolicPrimsGraphRuns(t *testing.T) {
	build := func(env *primtorch.ShapeEnv, n any) *fxgraph.Graph {
		b := newTG(t)
		b.g.Shapes = env
		x := symIn(b, "x", env, n, 4, 16)
		w := b.in("w", f32(32, 64))
		y := b.call("torch.nn.functional.linear", b.call("Tensor.view", x, -1, 64), w)
		return b.out(b.call("torch.mean", y, 0), b.call("torch.softmax", y, -1), b.call("torch.var", y, 0),
			b.call("torch.nn.functional.layer_norm", y, []any{32}))
	}
	env := primtorch.NewShapeEnv()
	spg := decompose(t, build(env, env.NewSymbol(8, "L['x'].size(0)")))
	for _, n := range []int{2, 5, 11} {
		static := decompose(t, build(nil, n))
		xs := make([]float64, n*64)
		for i := range xs {
			xs[i] = float64((i*37)%101)/50 - 1
		}
		ws := make([]float64, 32*64)
		for i := range ws {
			ws[i] = float64((i*17)%89)/44 - 1
		}
		in := []*ref.Tensor{ref.FromFloats(primtorch.Float32, []int64{int64(n), 4, 16}, xs), ref.FromFloats(primtorch.Float32, []int64{32, 64}, ws)}
		got, err := ref.Run(spg, in, nil)
		require.NoError(t, err)
		want, err := ref.Run(static, in, nil)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Shape, got[i].Shape, "output %d at s0=%d", i, n)
			require.Equal(t, want[i].Floats(), got[i].Floats(), "output %d at s0=%d", i, n)
		}
	}
}

// TestSymbolicSliceBounds: GPT's causal mask, bias[:, :, :T, :T] of a constant buffer with T a
// symbolic length, a write through a symbolic slice and a narrow of symbolic start and length
// decompose to prims over sym(...) bounds (guarded T <= 16 only), and the prims graph computes the
// static decomposition's results at other lengths.
func TestSymbolicSliceBounds(t *testing.T) {
	sl := func(start, stop any) fxgraph.Slice {
		c := func(v any) fxgraph.Arg {
			if v == nil {
				return fxgraph.Const{V: nil}
			}
			return goArg(v)
		}
		return fxgraph.Slice{Start: c(start), Stop: c(stop), Step: fxgraph.Const{V: nil}}
	}
	build := func(env *primtorch.ShapeEnv, T any, tv primtorch.SymInt) *fxgraph.Graph {
		b := newTG(t)
		b.g.Shapes = env
		x := symIn(b, "x", env, 1, 2, T, T)
		bias := b.attr("bias", f32(1, 1, 16, 16))
		all := sl(nil, nil)
		mask := b.call("operator.getitem", bias, fxgraph.Tuple{Elems: []fxgraph.Arg{all, all, sl(nil, tv), sl(nil, tv)}})
		eq := b.call("operator.eq", mask, 0)
		att := b.call("Tensor.masked_fill", x, eq, -1.0)
		y := b.call("Tensor.clone", att)
		b.call("operator.setitem", y, fxgraph.Tuple{Elems: []fxgraph.Arg{all, all, sl(tv.AddConst(-1), nil)}}, 2.0)
		n := b.call("torch.narrow", y, 3, tv.AddConst(-2), 2)
		return b.out(y, n)
	}
	env := primtorch.NewShapeEnv()
	s0 := env.NewSymbol(6, "L['x'].size(2)")
	g := build(env, s0, s0)
	spg := decompose(t, g)
	text := spg.String()
	require.Empty(t, env.Specialized(), "%s", text)
	var guards []string
	for _, gd := range env.Guards() {
		guards = append(guards, gd.String())
	}
	require.Equal(t, []string{"16 >= s0"}, guards)
	require.Contains(t, text, `sym("s0")`)
	require.NotContains(t, text, "6, 1)", "no hint of s0 is a slice bound")
	parsed, err := fxgraph.Parse(text)
	require.NoError(t, err, "%s", text)
	require.Empty(t, fxgraph.Diff(spg, parsed))

	biasVals := make([]float64, 256)
	for i := range biasVals {
		if i%16 <= i/16 {
			biasVals[i] = 1
		}
	}
	attrs := map[string]*ref.Tensor{"bias": ref.FromFloats(primtorch.Float32, []int64{1, 1, 16, 16}, biasVals)}
	for _, n := range []int{2, 5, 11, 16} {
		static := decompose(t, build(nil, n, primtorch.SymConst(int64(n))))
		xs := make([]float64, 2*n*n)
		for i := range xs {
			xs[i] = float64((i*37)%101)/50 - 1
		}
		in := []*ref.Tensor{ref.FromFloats(primtorch.Float32, []int64{1, 2, int64(n), int64(n)}, xs)}
		got, err := ref.Run(spg, in, attrs)
		require.NoError(t, err)
		want, err := ref.Run(static, in, attrs)
		require.NoError(t, err)
		require.Len(t, got, len(want))
		for i := range want {
			require.Equal(t, want[i].Shape, got[i].Shape, "output %d at T=%d", i, n)
			require.Equal(t, want[i].Floats(), got[i].Floats(), "output %d at T=%d", i, n)
		}
	}
}

// foldSizeFloats evaluates at vals the nodes that compute a number from sizes only:
// prims.full([], sym(...) or a number) and mul/div/sqrt/convert_element_type/expand of them
// (conversions kept in float64: the static graph has the float64 number).
func foldSizeFloats(g *fxgraph.Graph, vals []int64) map[*fxgraph.Node]float64 {
	out := map[*fxgraph.Node]float64{}
	num := func(a fxgraph.Arg) (float64, bool) {
		switch x := a.(type) {
		case *fxgraph.Node:
			v, ok := out[x]
			return v, ok
		case fxgraph.Const:
			switch v := x.V.(type) {
			case float64:
				return v, true
			case int64:
				return float64(v), true
			case primtorch.SymInt:
				return float64(v.Eval(vals)), true
			}
		}
		return 0, false
	}
	for _, n := range g.Nodes {
		if n.Op != fxgraph.CallFunction || len(n.Args) == 0 {
			continue
		}
		a, okA := num(n.Args[0])
		switch n.Target {
		case "prims.full":
			if l, ok := n.Args[0].(fxgraph.List); ok && len(l.Elems) == 0 {
				if v, ok := num(n.Args[1]); ok {
					out[n] = v
				}
			}
		case "prims.convert_element_type", "prims.expand":
			if okA {
				out[n] = a
			}
		case "prims.sqrt":
			if okA {
				out[n] = math.Sqrt(a)
			}
		case "prims.mul", "prims.div":
			b, okB := num(n.Args[1])
			_, an := n.Args[0].(*fxgraph.Node)
			_, bn := n.Args[1].(*fxgraph.Node)
			if okA && okB && (an || bn) {
				if n.Target == "prims.mul" {
					out[n] = a * b
				} else {
					out[n] = a / b
				}
			}
		}
	}
	return out
}
