package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Functionalization. Every torch-level tensor has a state: its current value (a node of the
// prims graph) and, for a view, the base tensor it views and the chain of view prims that
// makes it from the base's value. A write (an in-place op, setitem, copy_, out=) computes the
// tensor's new value out of place:
//   - a base takes the new value; its version increases, so views of it read later replay
//     their chain on the new value (views read before keep the old value, as they should);
//   - a view scatters the new value into its base (prims.index_put at the positions the view
//     chain selects, found by replaying the chain on an iota of the base's positions), then
//     the base takes the result;
//   - a graph input (placeholder or get_attr) that was written gets a final
//     prims.copy_(input, value) in the epilogue.
// Writes through a view of a graph input, and graphs returning a graph input they write, are
// ErrUnsupported.

// tstate is one torch-level tensor's functional state.
type tstate struct {
	cur     *fxgraph.Node   // current value
	base    *tstate         // the base this tensor views (nil: a base itself)
	chain   []*fxgraph.Node // view prims making cur from the base's value (templates for replay)
	seen    int             // base.version when cur was made
	version int             // for a base: incremented by every write
	input   *fxgraph.Node   // for a graph input: its placeholder or get_attr node
	mutated bool            // for a base: written at least once
	// bumps counts the writes eager's version counter sees: one per in-place op, out= or
	// setitem, none for a kernel's own writes (batch_norm's running statistics: unversioned)
	bumps int
	// frozen names a fallback whose result aliases this tensor in torch in a way the graph
	// cannot follow: writes to it are unsupported.
	frozen string
}

// read returns s's current value, replaying its view chain when its base was written since.
func (d *decomposer) read(s *tstate) *fxgraph.Node {
	if s.base != nil && s.seen != s.base.version {
		s.cur = d.replay(d.read(s.base), s.chain)
		s.seen = s.base.version
	}
	return s.cur
}

// replay applies the view prims of chain (templates) to src. A replayed view requires grad as
// its source does, whatever node is being decomposed (the outputs' replays come after the
// last one), except where its template cut the gradient: a view that did not require grad of
// one that did (x.detach(), a view made under no_grad) stays so on the new value (fuzz seed
// 21274: v4 = v3.detach(); v3 *= k returned v4 requiring grad).
func (d *decomposer) replay(src *fxgraph.Node, chain []*fxgraph.Node) *fxgraph.Node {
	cur := src
	rg := d.rg
	d.rg = true
	defer func() { d.rg = rg }()
	for _, t := range chain {
		args := make([]any, len(t.Args))
		args[0] = cur
		for i, a := range t.Args[1:] {
			args[i+1] = a
		}
		cut := false
		if tm, sm := t.TensorMeta(), argMeta(t.Args[0]); tm != nil && sm != nil {
			cut = !tm.RequiresGrad && sm.RequiresGrad
		}
		cur = d.emit(t.Target, args, nil)
		if m := cur.TensorMeta(); m != nil && cut {
			m.RequiresGrad = false
		}
	}
	return cur
}

// argMeta is the tensor meta of a node argument (nil for anything else).
func argMeta(a fxgraph.Arg) *primtorch.TensorMeta {
	if n, ok := a.(*fxgraph.Node); ok {
		return n.TensorMeta()
	}
	return nil
}

// deriveState returns the state of result r of call c: the state of the input it is (the op
// returned its input), a view of an input it views through view prims, or a new base.
func (d *decomposer) deriveState(c *ctx, r *fxgraph.Node) *tstate {
	var parents []*tstate
	switch {
	case c.op.Alias == primtorch.AliasView || c.op.Alias == primtorch.AliasMaybe:
		if m, ok := c.a.Get(c.op.Schema.Params[c.op.AliasArg].Canon).(*primtorch.TensorMeta); ok {
			parents = append(parents, c.stateOf(m))
		}
	case c.op.Kind == primtorch.KindView: // broadcast_tensors: each result views one input
		for _, m := range c.a.AllTensors() {
			parents = append(parents, c.stateOf(m))
		}
	}
	for _, p := range parents {
		pv := d.read(p)
		if r == pv {
			return p
		}
		var steps []*fxgraph.Node
		for v := r; d.viewSrc[v] != nil; v = d.viewSrc[v] {
			steps = append(steps, v)
			if d.viewSrc[v] != pv {
				continue
			}
			for i, j := 0, len(steps)-1; i < j; i, j = i+1, j-1 {
				steps[i], steps[j] = steps[j], steps[i]
			}
			base, chain := p, steps
			if p.base != nil {
				base, chain = p.base, append(append([]*fxgraph.Node{}, p.chain...), steps...)
			}
			return &tstate{cur: r, base: base, chain: chain, seen: base.version}
		}
	}
	return &tstate{cur: r}
}

// write gives tensor s the new value v (converted to s's dtype). resize allows a new shape (out=
// tensors torch resizes).
func (d *decomposer) write(s *tstate, v *fxgraph.Node, resize bool) error {
	if s.frozen != "" || (s.base != nil && s.base.frozen != "") {
		return d.unsupportedf("writes a tensor that aliases the result of %s, which runs in torch", s.frozen+basefrozen(s))
	}
	// An in-place write of a value that requires grad into the call's self, a graph input (or
	// a view of one) that does not: eager's autograd makes the caller's tensor require grad,
	// its grad_fn the write's (x.copy_(w), x[i] = w). No compiled graph can: torch runs it.
	if d.rg && d.callSelf != nil && d.callStates[d.callSelf] == s {
		if in := rootState(s).input; in != nil {
			if m := in.TensorMeta(); m != nil && !m.RequiresGrad {
				return d.unsupportedf("writes a value that requires grad into input %s, which does not (eager's autograd then tracks the caller's tensor)", in.Name)
			}
		}
	}
	cur := d.read(s)
	if v == cur {
		return nil // the value is unchanged (dropout in eval, requires_grad_, ...)
	}
	want := cur.TensorMeta()
	// Memory a functional value cannot describe: eager's in-place kernels refuse to write a
	// tensor whose elements share memory (an expand) or that partially overlaps an argument
	// ("unsupported operation: ... refer to a single memory location"), and index_put_,
	// fill_ and masked_fill_ write through every alias. torch runs such a graph.
	if hasInternalOverlap(want) {
		return d.unsupportedf("writes a tensor whose elements share memory (stride 0)")
	}
	strict := d.callOp != nil && d.callOp.RefusesOverlap
	for m, a := range d.callStates {
		if m == d.callSelf || rootState(a) != rootState(s) || a == s && !strict {
			continue
		}
		if am := d.read(a).TensorMeta(); overlapsOtherwise(am, want) || strict && (a == s || intersects(am, want)) {
			return d.unsupportedf("writes a tensor that overlaps another argument of the call")
		}
	}
	v = d.convert(v, want.DType).(*fxgraph.Node)
	if vm := v.TensorMeta(); !equalInts(vm.Shape, want.Shape) {
		if !resize || s.base != nil || s.input != nil {
			if _, err := primtorch.BroadcastShapes(vm.Shape, want.Shape); err != nil || len(vm.Shape) > len(want.Shape) {
				return d.unsupportedf("writes a %s value into a %s tensor", vm, want)
			}
			v = d.expand(v, want.SymSizes()).(*fxgraph.Node)
		}
	}
	if vm := v.TensorMeta(); !equalInts(vm.Strides, want.Strides) && equalInts(vm.Shape, want.Shape) &&
		want.Offset == 0 && want.IsNonOverlappingAndDense() {
		// In-place ops keep the tensor's layout.
		v = d.prim("clone", v)
		setStrides(v.TensorMeta(), want)
	}
	if s.base == nil {
		s.cur = v
		s.version++
		s.mutated = true
		if !d.unversioned {
			s.bumps++
		}
		return nil
	}
	b := s.base
	if b.input != nil {
		return d.unsupportedf("writes into a view of graph input %s", b.input.Name)
	}
	old := d.read(b)
	nb, err := d.scatterBack(old, s.chain, v)
	if err != nil {
		return err
	}
	if om, nm := old.TensorMeta(), nb.TensorMeta(); nb != old && !equalInts(om.Strides, nm.Strides) &&
		equalInts(om.Shape, nm.Shape) && om.Offset == 0 && om.IsNonOverlappingAndDense() {
		// a write through a view keeps the base's layout too
		nb = d.prim("clone", nb)
		setStrides(nb.TensorMeta(), om)
	}
	b.cur = nb
	b.version++
	b.mutated = true
	s.cur, s.seen = v, b.version
	return nil
}

// rootState is the base a tensor's state views (itself for a base).
func rootState(s *tstate) *tstate {
	if s.base != nil {
		return s.base
	}
	return s
}

// hasInternalOverlap reports a layout where two elements share memory: a dim of size > 1 with
// stride 0 (torch's MemOverlap::YES).
func hasInternalOverlap(m *primtorch.TensorMeta) bool {
	for i, n := range m.Shape {
		if n > 1 && m.Strides[i] == 0 {
			return true
		}
	}
	return false
}

// overlapsOtherwise reports two views of one storage whose element ranges partially overlap
// (torch's MemOverlapStatus::PARTIAL).
func overlapsOtherwise(a, b *primtorch.TensorMeta) bool {
	if a.Numel() == 0 || b.Numel() == 0 {
		return false
	}
	if a.Offset == b.Offset && equalInts(a.Shape, b.Shape) && equalInts(a.Strides, b.Strides) {
		return false
	}
	as, ae := extent(a)
	bs, be := extent(b)
	if as == bs && ae == be {
		// the same memory: torch's FULL overlap only with equal strides; in another order or
		// with another stride for a size-1 dim it is PARTIAL, and eager raises (x.copy_(x.t()),
		// v[:, ::2].add_(v) of a [3, 1] v: fuzz seed 24663)
		return !equalInts(a.Strides, b.Strides)
	}
	return as <= be && bs <= ae
}

// intersects reports two views of one storage whose element ranges intersect.
func intersects(a, b *primtorch.TensorMeta) bool {
	if a.Numel() == 0 || b.Numel() == 0 {
		return false
	}
	as, ae := extent(a)
	bs, be := extent(b)
	return as <= be && bs <= ae
}

// extent is the first and last storage element a view reaches.
func extent(m *primtorch.TensorMeta) (int64, int64) {
	start, end := m.Offset, m.Offset
	for i, n := range m.Shape {
		if st := m.Strides[i]; st >= 0 {
			end += (n - 1) * st
		} else {
			start += (n - 1) * st
		}
	}
	return start, end
}

// scatterBack returns base with v written at the positions the view chain selects.
func (d *decomposer) scatterBack(base *fxgraph.Node, chain []*fxgraph.Node, v *fxgraph.Node) (*fxgraph.Node, error) {
	bm := base.TensorMeta()
	for _, t := range chain {
		if t.Target == "prims.as_strided" || t.Target == "prims.expand" {
			return nil, d.unsupportedf("writes through a %s view", t.Target)
		}
	}
	if v.TensorMeta().Numel() == 0 {
		return base, nil
	}
	if len(bm.Shape) == 0 {
		return d.reshape(v, nil), nil
	}
	pos := d.positions(bm.SymSizes())
	return d.indexPutAt(base, d.replay(pos, chain), v, false), nil
}

// positions is an int64 tensor of shape holding each element's row-major position.
func (d *decomposer) positions(shape []sym) *fxgraph.Node {
	n := prodSyms(shape)
	return d.view(d.prim("iota", n, int64(0), int64(1), primtorch.Int64), shape).(*fxgraph.Node)
}

// indexPutAt writes values into base at the row-major positions pos (an int64 tensor of
// values' shape) with prims.index_put.
func (d *decomposer) indexPutAt(base, pos *fxgraph.Node, values val, accumulate bool) *fxgraph.Node {
	shape := base.TensorMeta().SymSizes()
	idx := make([]any, len(shape))
	stride := primtorch.SymConst(1)
	for k := len(shape) - 1; k >= 0; k-- {
		var t val = pos
		if s, c := stride.IsConst(); !c || s != 1 {
			t = d.prim("floordiv", t, symNumber(stride))
		}
		if k > 0 {
			t = d.prim("remainder", t, symNumber(shape[k]))
		}
		idx[k] = t
		stride = stride.Mul(shape[k])
	}
	return d.prim("index_put", base, idx, values, accumulate)
}

func basefrozen(s *tstate) string {
	if s.base != nil {
		return s.base.frozen
	}
	return ""
}
