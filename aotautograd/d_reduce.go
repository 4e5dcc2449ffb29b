package aotautograd

import (
	"fmt"
	"slices"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Derivatives of reductions (x, dims, keepdim) and scans (x, dim).

// restore gives a reduction's gradient (or result) the reduced dims back as size-1 dims.
func restore(b *builder, g *fxgraph.Node, dims []int64, keepdim bool) *fxgraph.Node {
	if keepdim {
		return g
	}
	for _, d := range dims {
		g = b.unsqueeze(g, d)
	}
	return g
}

// reduceArgs returns a reduction's input, its reduced dims (sorted, non-negative) and keepdim.
func reduceArgs(c *vjpCtx) (*fxgraph.Node, []int64, bool) {
	x := c.x(0)
	return x, normDims(c.intsArg(1), x.TensorMeta().Dim()), c.boolArg(2)
}

// sum: the gradient broadcast back over the reduced dims.
func vjpSum(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x, dims, keepdim := reduceArgs(c)
	c.give(x, c.expand(restore(c.builder, c.g, dims, keepdim), symSizes(x)))
}

// amax/amin: the gradient split evenly among the elements equal to the result (torch's
// scale_grad_by_count over restore_reduced_dims(result) == self); none where the result is NaN.
func vjpAmaxAmin(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x, dims, keepdim := reduceArgs(c)
	m := x.TensorMeta()
	c.exact(x)
	y := c.expand(restore(c.builder, c.n, dims, keepdim), m.SymSizes())
	mask := c.emit("eq", x, y)
	count := c.sum(c.convert(mask, m.DType), dims, true)
	if len(dims) == 0 { // a 0-d input: one element, the result itself
		count = c.convert(mask, m.DType)
	}
	share := c.div(restore(c.builder, c.g, dims, keepdim), count)
	c.give(x, c.where(mask, c.expand(share, m.SymSizes()), 0.0))
}

// prod: the gradient times the product of the other elements of each reduced group, computed
// without dividing by the element (correct with zeros, as torch's prod_safe_zeros_backward):
// the reduced dims are moved last and flattened, and each element's cofactor is the exclusive
// cumulative product from the left times the one from the right.
func vjpProd(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x, dims, keepdim := reduceArgs(c)
	m := x.TensorMeta()
	sizes := m.SymSizes()
	gk := c.expand(restore(c.builder, c.g, dims, keepdim), sizes)
	if numelIsZero(m) {
		c.give(x, nil)
		return
	}
	var perm []int64
	var keepShape []primtorch.SymInt
	reduced := map[int64]bool{}
	k := primtorch.SymConst(1)
	for _, d := range dims {
		reduced[d] = true
		k = k.Mul(sizes[d])
	}
	for d := range int64(m.Dim()) {
		if !reduced[d] {
			perm = append(perm, d)
			keepShape = append(keepShape, sizes[d])
		}
	}
	perm = append(perm, dims...)
	if isOne(k) {
		c.give(x, gk)
		return
	}
	last := len(keepShape)
	xr := c.reshape(c.permute(x, perm), append(slices.Clone(keepShape), k))
	pads := []int64{1, 0}
	exclusive := func(v *fxgraph.Node) *fxgraph.Node {
		head := c.emit("slice", v, int64(last), int64(0), k.AddConst(-1), int64(1))
		return c.emit("cumprod", c.emit("constant_pad_nd", head, pads, 1.0), int64(last))
	}
	left := exclusive(xr)
	right := c.flip(exclusive(c.flip(xr, last)), last)
	others := c.mul(left, right)
	permShape := make([]primtorch.SymInt, len(perm))
	for i, d := range perm {
		permShape[i] = sizes[d]
	}
	o := c.permute(c.reshape(others, permShape), invertPerm(perm))
	c.give(x, c.mul(gk, o))
}

// moveLast moves dim d of x last; it returns the view and the permutation.
func moveLast(b *builder, x *fxgraph.Node, d int) (*fxgraph.Node, []int64) {
	nd := x.TensorMeta().Dim()
	var perm []int64
	for i := range nd {
		if i != d {
			perm = append(perm, int64(i))
		}
	}
	perm = append(perm, int64(d))
	return b.permute(x, perm), perm
}

func scanDim(c *vjpCtx) int {
	d := int(c.intArg(1))
	if nd := c.x(0).TensorMeta().Dim(); d < 0 {
		d += max(nd, 1)
	}
	return d
}

// cumsum: the reversed cumulative sum of the gradient.
func vjpCumsum(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	if x.TensorMeta().Dim() == 0 {
		c.give(x, c.g)
		return
	}
	d := scanDim(c)
	c.give(x, c.flip(c.emit("cumsum", c.flip(c.g, d), int64(d)), d))
}

// maxCumprodLen bounds the scan length cumprod's exact gradient handles: it builds an n×n
// matrix per scanned row.
const maxCumprodLen = 256

// cumprod: dL/dx_k = sum_{j>=k} g_j * prod_{i<=j, i!=k} x_i, computed exactly (zeros
// included) as the cumulative product of a matrix whose row k has x_k replaced by 1, masked to
// j >= k and summed; O(n^2) per row, so scans longer than maxCumprodLen are not differentiated
// by ptgo.
func vjpCumprod(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	x := c.x(0)
	m := x.TensorMeta()
	if m.Dim() == 0 {
		c.give(x, c.g)
		return
	}
	d := scanDim(c)
	n := m.SymSizes()[d]
	switch {
	case isZero(n) || numelIsZero(m):
		c.give(x, nil)
		return
	case isOne(n):
		c.give(x, c.g)
		return
	case n.GtHint(primtorch.SymConst(maxCumprodLen)):
		panic(abort{notDifferentiable(c.n, fmt.Sprintf("cumprod over %s elements (ptgo's exact gradient builds an n×n matrix per row; at most %d)", n, maxCumprodLen))})
	}
	xp, perm := moveLast(c.builder, x, d)
	gp, _ := moveLast(c.builder, c.g, d)
	rows := slices.Clone(symSizes(xp)[:m.Dim()-1])
	r := int64(len(rows))
	square := append(slices.Clone(rows), n, n)
	zero := primtorch.SymConst(0)
	kIdx := c.expand(c.reshape(c.iota(n, zero, 1), []primtorch.SymInt{n, primtorch.SymConst(1)}), []primtorch.SymInt{n, n})
	jIdx := c.expand(c.reshape(c.iota(n, zero, 1), []primtorch.SymInt{primtorch.SymConst(1), n}), []primtorch.SymInt{n, n})
	eye := c.expand(c.emit("eq", kIdx, jIdx), square)
	upper := c.expand(c.emit("ge", jIdx, kIdx), square)
	xs := c.expand(c.unsqueeze(xp, r), square)
	p := c.emit("cumprod", c.where(eye, 1.0, xs), r+1)
	gs := c.expand(c.unsqueeze(gp, r), square)
	terms := c.where(upper, c.mul(p, gs), 0.0)
	gx := c.emit("sum", terms, []int64{r + 1}, false)
	c.give(x, c.permute(gx, invertPerm(perm)))
}
