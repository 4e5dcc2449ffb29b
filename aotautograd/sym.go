package aotautograd

import (
	"fmt"
	"sort"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// Symbolic sizes (dynamic shapes) in the derivative formulas and the partition.
//
// A prims graph whose metas have size symbols (Graph.Shapes; TensorMeta.Sym) splits into a
// forward and a backward that are right for every value of the symbols: the formulas read the
// sizes as SymInts (TensorMeta.SymSizes) and pass them to the prims they emit as size
// expressions (Const{SymInt}, through primtorch.SymValue, so a static graph's constants stay
// int64 and it splits exactly as before). A decision a formula cannot take for every size (is
// this dim 1?) is taken at the hints and guarded
// (SymInt.EqualHint, GeHint), as the meta functions do; a formula that needs concrete sizes
// (as_strided's storage geometry) specialises the symbols it reads (SymInt.Specialize records
// the guard). The backward's placeholders must carry every symbol it uses (Split saves a
// tensor that does, see carrySymbols): its runtime reads the symbols' values from them.

// syms is a constant shape as SymInts.
func syms(xs ...int64) []primtorch.SymInt {
	out := make([]primtorch.SymInt, len(xs))
	for i, x := range xs {
		out[i] = primtorch.SymConst(x)
	}
	return out
}

// symSizes is a tensor operand's sizes as SymInts.
func symSizes(x *fxgraph.Node) []primtorch.SymInt { return meta(x).SymSizes() }

// sameSizes reports whether two shapes are the same polynomials, dim by dim.
func sameSizes(a, b []primtorch.SymInt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// pinned reports whether s has the same value at every size the graph is valid for: a constant,
// or an expression whose symbols are all specialised to their hints.
func pinned(s primtorch.SymInt) bool {
	for _, id := range s.Symbols() {
		if !s.Env().IsSpecialized(id) {
			return false
		}
	}
	return true
}

// agree reports whether two metas have the same sizes for every symbol value: the same hints,
// and dims that are the same polynomials or differ only by specialised symbols (a meta function
// that is not symbolic specialised one of them).
func agree(a, b *primtorch.TensorMeta) bool {
	if len(a.Shape) != len(b.Shape) {
		return false
	}
	for i := range a.Shape {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	if a.Sym == nil && b.Sym == nil {
		return true
	}
	as, bs := a.SymSizes(), b.SymSizes()
	for i := range as {
		if d := as[i].Sub(bs[i]); !pinned(d) {
			return false
		}
	}
	return true
}

// isOne decides whether a size is 1: constants by value, symbolic sizes at the hints with a
// guard (a bare symbol is ≥ 2: no guard).
func isOne(s primtorch.SymInt) bool {
	if k, ok := s.IsConst(); ok {
		return k == 1
	}
	if s.GeHint(primtorch.SymConst(2)) {
		return false
	}
	return s.EqualHint(primtorch.SymConst(1))
}

// isZero decides whether a size is 0 (guarded for symbolic sizes).
func isZero(s primtorch.SymInt) bool {
	if k, ok := s.IsConst(); ok {
		return k == 0
	}
	if s.GeHint(primtorch.SymConst(1)) {
		return false
	}
	return s.EqualHint(primtorch.SymConst(0))
}

// numelIsZero decides whether m has no elements (guarded).
func numelIsZero(m *primtorch.TensorMeta) bool {
	for _, s := range m.SymSizes() {
		if isZero(s) {
			return true
		}
	}
	return false
}

// symProduct multiplies sizes.
func symProduct(xs []primtorch.SymInt) primtorch.SymInt {
	p := primtorch.SymConst(1)
	for _, x := range xs {
		p = p.Mul(x)
	}
	return p
}

// symContiguous reports whether m is contiguous for every symbol value (its strides are the
// contiguous strides of its sizes as polynomials, size-1 dims aside).
func symContiguous(m *primtorch.TensorMeta) bool {
	if m.Sym == nil {
		return m.IsContiguous()
	}
	if k, ok := m.Sym.Offset.IsConst(); !ok || k != 0 {
		return false
	}
	want := primtorch.SymContiguousStrides(m.Sym.Sizes)
	for i, s := range m.Sym.Sizes {
		if k, ok := s.IsConst(); ok && k == 1 {
			continue
		}
		if !want[i].Equal(m.Sym.Strides[i]) {
			return false
		}
	}
	return true
}

// symDense reports whether m is non-overlapping and dense for every symbol value: dense at the
// hints, and its strides, with the dims ordered by their hint strides, are the contiguous
// strides of the sizes in that order as polynomials. A layout that may be dense at some sizes
// only is reported not dense (its gradient is cloned: right at every size).
func symDense(m *primtorch.TensorMeta) bool {
	if !m.IsNonOverlappingAndDense() {
		return false
	}
	if m.Sym == nil {
		return true
	}
	var order []int
	for i, s := range m.Sym.Sizes {
		if k, ok := s.IsConst(); ok && k == 1 {
			continue
		}
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return m.Strides[order[a]] > m.Strides[order[b]] })
	sizes := make([]primtorch.SymInt, len(order))
	for k, i := range order {
		sizes[k] = m.Sym.Sizes[i]
	}
	want := primtorch.SymContiguousStrides(sizes)
	for k, i := range order {
		if !want[k].Equal(m.Sym.Strides[i]) {
			return false
		}
	}
	return true
}

// symArg is integer argument i of the forward node as a SymInt (an int64 or a size expression).
func (c *vjpCtx) symArg(i int) primtorch.SymInt {
	k, _ := c.n.Args[i].(fxgraph.Const)
	s, ok := asSym(k.V)
	if !ok {
		bug("%s: argument %d is %v, not an int", c.n.Name, i, c.n.Args[i])
	}
	return s
}

// symsArg is integer-list argument i of the forward node as SymInts.
func (c *vjpCtx) symsArg(i int) []primtorch.SymInt {
	l, ok := c.n.Args[i].(fxgraph.List)
	if !ok {
		bug("%s: argument %d is not a list", c.n.Name, i)
	}
	out := make([]primtorch.SymInt, len(l.Elems))
	for k, e := range l.Elems {
		ce, _ := e.(fxgraph.Const)
		s, ok := asSym(ce.V)
		if !ok {
			bug("%s: argument %d has a non-int element", c.n.Name, i)
		}
		out[k] = s
	}
	return out
}

func asSym(v any) (primtorch.SymInt, bool) {
	switch x := v.(type) {
	case int64:
		return primtorch.SymConst(x), true
	case primtorch.SymInt:
		return x, true
	}
	return primtorch.SymInt{}, false
}

// hints specialises sizes to their hints (why: the formula that needs them concrete), guarding
// each symbol they mention.
func hints(xs []primtorch.SymInt, why string) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x.Specialize(why)
	}
	return out
}

// usedSymbols lists the unspecialised symbols g's metas and size-expression constants mention.
func usedSymbols(g *fxgraph.Graph) map[int]bool {
	used := map[int]bool{}
	if g.Shapes == nil {
		return used
	}
	note := func(s primtorch.SymInt) {
		for _, id := range s.Symbols() {
			if !g.Shapes.IsSpecialized(id) {
				used[id] = true
			}
		}
	}
	for _, n := range g.Nodes {
		primtorch.VisitSymbols(n.Meta, note)
		fxgraph.VisitArgSymbols(n, note)
	}
	return used
}

// unboundSymbols lists, ascending, the symbols g uses that none of its placeholders carries
// (fxgraph.SymbolBindings): its runtime could not know their values.
func unboundSymbols(g *fxgraph.Graph) []int {
	used := usedSymbols(g)
	if len(used) == 0 {
		return nil
	}
	b := fxgraph.SymbolBindings(g)
	// a derived symbol is computed from the symbols it is defined by: they need binding
	for id := len(b) - 1; id >= 0; id-- {
		if d, ok := g.Shapes.Derived(id); ok && used[id] {
			delete(used, id)
			for _, x := range d.Num.Resolve().Symbols() {
				used[x] = true
			}
		}
	}
	var out []int
	for id := range used {
		if id >= len(b) || b[id].Input < 0 {
			out = append(out, id)
		}
	}
	sort.Ints(out)
	return out
}

// carrier finds a forward value to save so that the backward gets symbol id's value: the first
// primal with a dim of exactly that size (saving an input costs no memory the caller does not
// already hold), else the smallest forward tensor with one (not a view: a saved view keeps its
// base alive). Nil when none exists (the symbol reaches the graph only through an int input or
// inside derived sizes).
func (jt *joint) carrier(id int, s *sets) *fxgraph.Node {
	bare := func(n *fxgraph.Node) bool {
		m := n.TensorMeta()
		if m == nil || m.Sym == nil {
			return false
		}
		for _, sz := range m.Sym.Sizes {
			if sid, coef, c, ok := sz.Linear(); ok && sid == id && coef == 1 && c == 0 {
				return true
			}
		}
		return false
	}
	for _, p := range jt.primals {
		if bare(p) {
			return p
		}
	}
	var best *fxgraph.Node
	for _, n := range jt.g.Nodes {
		if !jt.forward[n] || s.tangent[n] || n.Op != fxgraph.CallFunction || isView(n) || n.Target == "prims.copy_" || !bare(n) {
			continue
		}
		if best == nil || bytesOf(n.Meta) < bytesOf(best.Meta) {
			best = n
		}
	}
	return best
}

// carrySymbols makes every symbol the backward uses reach it: for each one no saved value or
// tangent carries as a dim, it adds a forward value that does (carrier) to the saved values, in
// the joint graph's order. The backward's runtime binds symbols from its placeholders' sizes,
// so no int placeholders are needed and the runtime contract (saved tensors, then tangents) is
// unchanged.
func (jt *joint) carrySymbols(bw *fxgraph.Graph, saved []*fxgraph.Node, s *sets) ([]*fxgraph.Node, bool, error) {
	missing := unboundSymbols(bw)
	if len(missing) == 0 {
		return saved, false, nil
	}
	isSaved := map[*fxgraph.Node]bool{}
	for _, n := range saved {
		isSaved[n] = true
	}
	for _, id := range missing {
		c := jt.carrier(id, s)
		if c == nil {
			return nil, false, unsupportedf("the backward of %s uses size symbol s%d (%s), which no tensor the forward could save has as a size", jt.g.Name, id, jt.g.Shapes.SourceOf(id))
		}
		isSaved[c] = true
	}
	var out []*fxgraph.Node
	for _, n := range jt.g.Nodes {
		if isSaved[n] {
			out = append(out, n)
		}
	}
	return out, true, nil
}

// checkSymbols is the final check of a split with symbolic sizes: each graph's placeholders
// carry every symbol it uses.
func checkSymbols(gs ...*fxgraph.Graph) error {
	for _, g := range gs {
		if ids := unboundSymbols(g); len(ids) > 0 {
			return fmt.Errorf("aotautograd: ptgo BUG: the %s graph uses size symbol s%d, which none of its inputs carries", g.Name, ids[0])
		}
	}
	return nil
}

// contiguousLike is a contiguous meta of m's sizes, dtype and device (symbolic when m is).
func contiguousLike(m *primtorch.TensorMeta) *primtorch.TensorMeta {
	if m.Sym == nil {
		return primtorch.NewContiguous(m.DType, m.Shape, m.Device)
	}
	return primtorch.NewSymContiguous(m.DType, m.SymSizes(), m.Device)
}

// atHints returns g with every size expression and symbolic meta replaced by its value at the
// hints, recording no guard: the static graph a symbolic graph is at its trace's sizes (what
// decomp.Verify checks with Options.Check, and what ToTorch gets for a graph whose symbols are
// all specialised).
func atHints(g *fxgraph.Graph) *fxgraph.Graph {
	c := fxgraph.Clone(g)
	c.Shapes = nil
	fxgraph.MapSymbols(c, func(s primtorch.SymInt) primtorch.SymInt { return primtorch.SymConst(s.Hint()) })
	return c
}

// verify is decomp.Verify; a symbolic graph is verified at its hints (Verify recomputes metas
// with the registry's meta functions, which would specialise the symbols of ops that are not
// symbolic: a check must not change what the graph means).
func verify(g *fxgraph.Graph) error {
	if g.Shapes != nil {
		g = atHints(g)
	}
	return decomp.Verify(g)
}
