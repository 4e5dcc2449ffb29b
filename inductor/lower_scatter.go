package inductor

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Scatters: a copy of the input (a Pointwise buffer in the node's meta layout) updated in place
// by a ScatterNode that writes the values at indirect indices. The node's value is the scatter's
// buffer, so its readers run after the update.

// lowerScatter lowers scatter(x, dim, index, src): out = x, then out[i with dim = index[i]] =
// src[i] for every i of index's shape.
func lowerScatter(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	x := l.tensorArg(arg(n, 0, "self"))
	d, ok := constInt(arg(n, 1, "dim"))
	it := l.tensorArg(arg(n, 2, "index"))
	if x == nil || it == nil || !ok {
		return nil, lowerError(n, "scatter needs a tensor, a constant dim and an index tensor")
	}
	dim, ok := normDim(d, len(x.sizes))
	if !ok || len(it.sizes) != len(x.sizes) {
		return nil, lowerError(n, "scatter's dim %d or index rank %d does not fit %v", d, len(it.sizes), symsV(x.sizes))
	}
	b := boundsOf(it.sizes)
	idx := indexVars(it.sizes, 0)
	body, err := l.scatterValue(n, arg(n, 3, "src"), idx, it.sizes, m.DType, b, false)
	if err != nil {
		return nil, err
	}
	target := append([]Expr(nil), idx...)
	if len(x.sizes) > 0 {
		iv := l.g.vals.Cast(l.load(it, idx, b), primtorch.Int64)
		target[dim] = IndSym(iv, x.sizes[dim])
	}
	return l.scatterInto(m, x, &ScatterNode{Ranges: append([]Sym(nil), it.sizes...), Target: target, Body: body}), nil
}

// lowerIndexPut lowers index_put(x, indices, values, accumulate): out = x, then out[indices] =
// values (or += with accumulate), values broadcast to the indexed shape.
func lowerIndexPut(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	x := l.tensorArg(arg(n, 0, "self"))
	if x == nil {
		return nil, lowerError(n, "index_put needs a tensor")
	}
	sizes, at, err := l.advancedIndex(n, x, arg(n, 1, "indices"))
	if err != nil {
		return nil, err
	}
	b := boundsOf(sizes)
	idx := indexVars(sizes, 0)
	body, err := l.scatterValue(n, arg(n, 2, "values"), idx, sizes, m.DType, b, true)
	if err != nil {
		return nil, err
	}
	sc := &ScatterNode{Ranges: sizes, Target: at(idx, b), Body: body, Accumulate: constBool(arg(n, 3, "accumulate"))}
	return l.scatterInto(m, x, sc), nil
}

// scatterValue reads the written values: a tensor at the iteration index (broadcast
// right-aligned when allowed) or a number.
func (l *lowerer) scatterValue(n *fxgraph.Node, a fxgraph.Arg, idx []Expr, sizes []Sym, dt primtorch.DType, b Bounds, broadcast bool) (*Value, error) {
	if t := l.tensorArg(a); t != nil {
		at := idx
		if broadcast {
			var ok bool
			if at, ok = broadcastIndex(idx, sizes, t.sizes); !ok {
				return nil, lowerError(n, "values of shape %v do not broadcast to the indexed shape %v", symsV(t.sizes), symsV(sizes))
			}
		} else if len(t.sizes) != len(idx) {
			return nil, lowerError(n, "src has %d dims, index %d", len(t.sizes), len(idx))
		}
		return l.g.vals.Cast(l.load(t, at, b), dt), nil
	}
	s, ok := l.scalarArg(a)
	if !ok {
		return nil, lowerError(n, "the values must be a tensor or a number")
	}
	return l.g.vals.Const(dt, s), nil
}

// scatterInto copies x into a new buffer with meta m's layout and adds the scatter updating it.
func (l *lowerer) scatterInto(m *primtorch.TensorMeta, x *tensor, sc *ScatterNode) *lowered {
	b := boundsOf(metaSizes(m))
	cp := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), &Pointwise{Ranges: metaSizes(m),
		Body: l.g.vals.Cast(l.load(x, indexVars(metaSizes(m), 0), b), m.DType)})
	l.origin(cp)
	sc.Into = cp
	s := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), sc)
	s.Mutates = cp
	l.origin(s)
	return &lowered{t: &tensor{buf: s, sizes: s.Sizes}}
}
