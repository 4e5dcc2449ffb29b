package aotautograd

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Derivatives of copies and data movement: gathers become accumulating index_puts into zeros
// (scatter-add), scatters become gathers.

func vjpClone(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.g)
	}
}

// grad_as(x, e): the gradient is e's, none goes to x. grad_as(x, e, f): e's gradient is
// xlogy(g, f): g·log(f), but 0 where g is 0 and f is not NaN (also where log(f) is NaN or
// infinite: torch's gradient of xlogy's self).
func vjpGradAs(c *vjpCtx) {
	if c.needs(2) {
		c.give(c.x(2), nil) // (f is a factor of the gradient; its own comes another way)
	}
	if !c.needs(1) {
		return
	}
	if len(c.n.Args) > 2 {
		if f := c.x(2); f != nil {
			keep := c.emit("logical_and", c.emit("eq", c.g, 0.0), c.emit("logical_not", c.emit("isnan", f)))
			c.give(c.x(1), c.where(keep, c.zerosLike(c.g.TensorMeta()), c.mul(c.g, c.emit("log", f))))
			return
		}
	}
	c.give(c.x(1), c.g)
}

// slice takes [start, end) along dim (x itself for the whole dim).
func (b *builder) slice(x *fxgraph.Node, dim int, start, end primtorch.SymInt) *fxgraph.Node {
	if k, ok := start.IsConst(); ok && k == 0 && end.Equal(symSizes(x)[dim]) {
		return x
	}
	return b.emit("slice", x, int64(dim), start, end, int64(1))
}

// cat: each input gets its slice of the gradient.
func vjpCat(c *vjpCtx) {
	l, ok := c.n.Args[0].(fxgraph.List)
	if !ok {
		bug("%s: cat of %T", c.n.Name, c.n.Args[0])
	}
	dim := normDim(c.intArg(1), c.outMeta().Dim())
	off := primtorch.SymConst(0)
	for _, e := range l.Elems {
		t, ok := e.(*fxgraph.Node)
		if !ok {
			bug("%s: cat of a non-tensor", c.n.Name)
		}
		size := symSizes(t)[dim]
		if c.j.rg[t] {
			c.give(t, c.slice(c.g, dim, off, off.Add(size)))
		}
		off = off.Add(size)
	}
}

// constant_pad_nd: the gradient padded by the negated pads (cropped where the forward padded,
// zero-filled where it cropped).
func vjpPad(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	pads := c.symsArg(1)
	neg := make([]primtorch.SymInt, len(pads))
	nonzero := false
	for i, p := range pads {
		neg[i] = p.Neg()
		k, ok := p.IsConst()
		nonzero = nonzero || !ok || k != 0
	}
	if !nonzero {
		c.give(c.x(0), c.g)
		return
	}
	c.give(c.x(0), c.emit("constant_pad_nd", c.g, neg, 0.0))
}

// gather(x, dim, index): the gradient added into zeros at the gathered positions (each
// position of index names one element of x: iotas for the other dims).
func vjpGather(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x, index := c.x(0), c.x(2)
	m := x.TensorMeta()
	isz := symSizes(index)
	if m.Dim() == 0 {
		c.give(x, c.reshape(c.g, nil))
		return
	}
	dim := normDim(c.intArg(1), m.Dim())
	indices := make([]any, m.Dim())
	for d := range m.Dim() {
		if d == dim {
			indices[d] = index
			continue
		}
		one := make([]primtorch.SymInt, m.Dim())
		for k := range one {
			one[k] = primtorch.SymConst(1)
		}
		one[d] = isz[d]
		indices[d] = c.expand(c.reshape(c.iota(isz[d], primtorch.SymConst(0), 1), one), isz)
	}
	c.give(x, c.emit("index_put", c.zerosLike(m), indices, c.g, true))
}

// index_select(x, dim, index): the gradient added into zeros at x[..., index, ...].
func vjpIndexSelect(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x, index := c.x(0), c.x(2)
	m := x.TensorMeta()
	if m.Dim() == 0 {
		c.give(x, c.reshape(c.g, nil))
		return
	}
	if index.TensorMeta().Dim() == 0 {
		index = c.reshape(index, syms(1))
	}
	dim := normDim(c.intArg(1), m.Dim())
	indices := make([]any, dim+1)
	indices[dim] = index
	c.give(x, c.emit("index_put", c.zerosLike(m), indices, c.g, true))
}

// index(x, indices): the gradient added into zeros at x[indices] (duplicates accumulate).
func vjpIndex(c *vjpCtx) {
	if c.needs(0) {
		x := c.x(0)
		c.give(x, c.emit("index_put", c.zerosLike(x.TensorMeta()), c.n.Args[1], c.g, true))
	}
}

// scatter(x, dim, index, src): x gets the gradient with the overwritten positions zeroed; src
// gets the gradient gathered at index.
func vjpScatter(c *vjpCtx) {
	dim, index := c.in(1), c.x(2)
	if c.needs(0) {
		c.give(c.x(0), c.emit("scatter", c.g, dim, index, 0.0))
	}
	if c.needs(3) {
		c.give(c.x(3), c.emit("gather", c.g, dim, index))
	}
}

// index_put(x, indices, values, accumulate): x gets the gradient (zeroed at the written
// positions unless accumulating); values get the gradient read at those positions, summed over
// the dims values broadcast along.
func vjpIndexPut(c *vjpCtx) {
	indices, accumulate := c.n.Args[1], c.boolArg(3)
	if c.needs(0) {
		if accumulate {
			c.give(c.x(0), c.g)
		} else {
			c.give(c.x(0), c.emit("index_put", c.g, indices, 0.0, false))
		}
	}
	if c.needs(2) {
		v := c.x(2)
		c.give(v, c.sumTo(c.emit("index", c.g, indices), symSizes(v)))
	}
}
