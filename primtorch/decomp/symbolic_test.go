package decomp_test

import (
	"fmt"
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
	}
	return a
}

// rebuild re-adds g's calls over new placeholder metas (inputs maps each placeholder and
// get_attr to its new meta), the registry computing every torch-level meta again.
func rebuild(g *fxgraph.Graph, inputs func(n *fxgraph.Node) any, env *primtorch.ShapeEnv) (*fxgraph.Graph, error) {
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
			a := evalArg(n.Args[j], vals, idx)
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

func TestSymbolicDecompositionProperty(t *testing.T) {
	cases := loadCases(t)
	checked, symbolic, ruledOut := 0, 0, 0
	var allSpecialized []string
	perOp := map[string]int{}
	for k := 0; k < 2*len(cases); k++ {
		c, batchOnly := &cases[k%len(cases)], k >= len(cases)
		g, _, err := c.Build()
		if err != nil {
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
		}, env)
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
		// at the hints, the symbolic prims graph is the static one
		if d := sameGraphAt(spg, static, env.Hints()); d != "" {
			t.Errorf("%s at the hints: %s", c.name(), d)
			continue
		}
		guards := env.Guards()
		for _, vals := range altSizes(env.Hints()) {
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
			}, nil)
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
	t.Logf("%d symbolic cases, %d checks at other sizes, %d value sets ruled out by guards; %d ops checked", symbolic, checked, ruledOut, len(perOp))
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
