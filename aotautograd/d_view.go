package aotautograd

import (
	"slices"
	"sort"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Derivatives of views: the gradient mapped back to the viewed tensor's shape.

// view: the gradient reshaped (a copy when its layout is not viewable).
func vjpView(c *vjpCtx) {
	if c.needs(0) {
		x := c.x(0)
		c.give(x, c.reshape(c.g, symSizes(x)))
	}
}

func vjpPermute(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	dims := c.intsArg(1)
	nd := int64(len(dims))
	for i, d := range dims {
		if d < 0 {
			dims[i] = d + nd
		}
	}
	c.give(c.x(0), c.permute(c.g, invertPerm(dims)))
}

// expand: the gradient summed over the broadcast dims.
func vjpExpand(c *vjpCtx) {
	if c.needs(0) {
		x := c.x(0)
		c.give(x, c.sumTo(c.g, symSizes(x)))
	}
}

// padDim returns constant_pad_nd's pad list placing before/after around dim of a rank-nd
// tensor (pairs from the last dim).
func padDim(nd, dim int, before, after primtorch.SymInt) []primtorch.SymInt {
	pads := syms(make([]int64, 2*(nd-dim))...)
	k := nd - 1 - dim
	pads[2*k], pads[2*k+1] = before, after
	return pads
}

func normDim(d int64, nd int) int {
	if d < 0 {
		d += int64(nd)
	}
	return int(d)
}

// slice: the gradient placed in zeros: constant_pad_nd for step 1, index_put at the selected
// positions otherwise.
func vjpSlice(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	m := x.TensorMeta()
	dim := normDim(c.intArg(1), m.Dim())
	start, end, step := c.symArg(2), c.symArg(3), c.intArg(4)
	size := m.SymSizes()[dim] // (prims.slice's meta holds 0 <= start <= end <= size, guarded)
	if step == 1 {
		if k, ok := start.IsConst(); ok && k == 0 && end.Equal(size) {
			c.give(x, c.g)
			return
		}
		c.give(x, c.emit("constant_pad_nd", c.g, padDim(m.Dim(), dim, start, size.Sub(end)), 0.0))
		return
	}
	n := symSizes(c.g)[dim]
	indices := make([]any, dim+1)
	indices[dim] = c.iota(n, start, step)
	c.give(x, c.emit("index_put", c.zerosLike(m), indices, c.g, false))
}

// select: the gradient unsqueezed and padded with zeros around the index.
func vjpSelect(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	m := x.TensorMeta()
	dim := normDim(c.intArg(1), m.Dim())
	size := m.SymSizes()[dim]
	index := c.symArg(2)
	if !index.GeHint(primtorch.SymConst(0)) {
		index = index.Add(size)
	}
	u := c.unsqueeze(c.g, int64(dim))
	if isOne(size) {
		c.give(x, u)
		return
	}
	c.give(x, c.emit("constant_pad_nd", u, padDim(m.Dim(), dim, index, size.Sub(index).AddConst(-1)), 0.0))
}

func vjpSqueeze(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	nd := x.TensorMeta().Dim()
	dims := c.intsArg(1)
	for i, d := range dims {
		dims[i] = int64(normDim(d, nd))
	}
	slices.Sort(dims)
	g := c.g
	for _, d := range slices.Compact(dims) {
		g = c.unsqueeze(g, d)
	}
	c.give(x, g)
}

func vjpUnsqueeze(c *vjpCtx) {
	if c.needs(0) {
		d := normDim(c.intArg(1), c.outMeta().Dim())
		c.give(c.x(0), c.emit("squeeze", c.g, []int64{int64(d)}))
	}
}

// positions is an int64 tensor of shape holding the storage position of each element of the
// geometry (shape, strides, offset), flattened to one dim.
func (b *builder) positions(shape, strides []int64, offset int64) *fxgraph.Node {
	acc := b.full(syms(shape...), float64(offset), primtorch.Int64)
	for i, s := range shape {
		if s <= 1 || strides[i] == 0 {
			continue
		}
		one := make([]int64, len(shape))
		for k := range one {
			one[k] = 1
		}
		one[i] = s
		t := b.expand(b.reshape(b.iota(primtorch.SymConst(s), primtorch.SymConst(0), strides[i]), syms(one...)), syms(shape...))
		acc = b.add(acc, t)
	}
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return b.reshape(acc, syms(n))
}

// mayOverlap reports whether two elements of a geometry can share a storage position
// (conservatively: true when not proven otherwise).
func mayOverlap(shape, strides []int64) bool {
	type dim struct{ size, stride int64 }
	var ds []dim
	for i, s := range shape {
		if s == 0 {
			return false
		}
		if s > 1 {
			if strides[i] == 0 {
				return true
			}
			ds = append(ds, dim{s, max(strides[i], -strides[i])})
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].stride < ds[j].stride })
	span := int64(0)
	for _, d := range ds {
		if d.stride <= span {
			return true
		}
		span += (d.size - 1) * d.stride
	}
	return false
}

// as_strided (torch's as_strided_backward): the gradient is added into a zero storage at the
// result's positions, then read at the input's positions; where the input's elements overlap,
// each storage element's gradient is split evenly among them.
func vjpAsStrided(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	m := x.TensorMeta()
	// The storage geometry needs concrete sizes: symbolic ones are specialised (guarded).
	const why = "as_strided's gradient (aotautograd)"
	size, stride, offset := hints(c.symsArg(1), why), hints(c.symsArg(2), why), c.symArg(3).Specialize(why)
	shape, strides, off := hints(m.SymSizes(), why), hints(m.SymStrides(), why), m.SymOffset().Specialize(why)
	numel := int64(1)
	for _, s := range shape {
		numel *= s
	}
	gNumel := symProduct(symSizes(c.g)).Specialize(why)
	if numel == 0 {
		c.give(x, nil)
		return
	}
	end := func(shape, strides []int64, off int64) int64 {
		e := off
		for i, s := range shape {
			if s == 0 {
				return 0
			}
			e += (s - 1) * strides[i]
		}
		return e + 1
	}
	storage := max(end(size, stride, offset), end(shape, strides, off))
	out := c.positions(size, stride, offset)
	in := c.positions(shape, strides, off)
	flatG := c.reshape(c.g, syms(gNumel))
	st := c.emit("index_put", c.full(syms(storage), 0, m.DType), []any{out}, flatG, true)
	gx := c.emit("index", st, []any{in})
	if mayOverlap(shape, strides) {
		ones := c.full(syms(numel), 1, m.DType)
		count := c.emit("index_put", c.full(syms(storage), 0, m.DType), []any{in}, ones, true)
		gx = c.div(gx, c.emit("index", count, []any{in}))
	}
	c.give(x, c.reshape(gx, syms(shape...)))
}
