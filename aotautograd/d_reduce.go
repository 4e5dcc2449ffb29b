package aotautograd

import (
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

// amax/amin: the gradient split evenly among the elements equal to the result. Over listed
// dims (torch.amax/amin, and every reduction a decomposition emits) it is torch's
// scale_grad_by_count: (grad / count) * mask, so a slice whose result is NaN (no element
// equals it: count 0) gets NaN everywhere. Over dims [] — the whole tensor, as max() and min()
// decompose — it is torch's evenly_distribute_backward: the NaN elements share the gradient
// when the result is NaN, and the others get zeros.
func vjpAmaxAmin(c *vjpCtx) {
	if !c.needs(0) {
		return
	}
	whole := len(c.intsArg(1)) == 0
	x, dims, keepdim := reduceArgs(c)
	m := x.TensorMeta()
	c.exact(x)
	y := c.expand(restore(c.builder, c.n, dims, keepdim), m.SymSizes())
	mask := c.emit("eq", x, y)
	if whole {
		mask = c.where(c.emit("isnan", y), c.emit("isnan", x), mask)
	}
	count := c.sum(c.convert(mask, m.DType), dims, true)
	if len(dims) == 0 { // a 0-d input: one element, the result itself
		count = c.convert(mask, m.DType)
	}
	share := c.expand(c.div(restore(c.builder, c.g, dims, keepdim), count), m.SymSizes())
	if whole {
		c.give(x, c.where(mask, share, 0.0))
		return
	}
	c.give(x, c.mul(share, c.convert(mask, m.DType)))
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

// cumprod: torch 1.13's cumprod_backward (first-order), so that zeros, infinities and NaN give
// eager's gradients. Per row, with w = y * g (y the forward's result) and z1, z2 the first and
// second zero of x:
//   - k < z1 (every k of a row without zeros): the reversed cumulative sum of w up to z1,
//     divided by x_k;
//   - k = z1: prod(x[:z1]) * sum over z1 <= j < z2 of g_j * prod(x[z1+1..j]);
//   - k > z1: 0.
//
// Eager takes the first branch for the whole tensor when it holds no zero; it agrees with this
// one row by row. The exact n×n form (every product with x_k left out) gave NaN where eager
// masks: an inf after a zero made every product of the row 0·inf.
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
	}
	c.exact(x, c.n)
	xp, perm := moveLast(c.builder, x, d)
	gp, _ := moveLast(c.builder, c.g, d)
	yp, _ := moveLast(c.builder, c.n, d)
	sizes := symSizes(xp)
	last := int64(m.Dim() - 1)
	isZeroX := c.emit("eq", xp, 0.0)
	zeros := c.emit("cumsum", c.convert(isZeroX, primtorch.Int64), last) // zeros up to k
	before := c.emit("eq", zeros, int64(0))                              // k < z1
	span := c.emit("eq", zeros, int64(1))                                // z1 <= k < z2
	first := c.emit("logical_and", isZeroX, span)                        // k = z1
	between := c.emit("logical_and", span, c.emit("logical_not", first)) // z1 < k < z2
	w := c.mul(yp, gp)
	revcumsum := c.flip(c.emit("cumsum", c.flip(c.where(before, w, 0.0), int(last)), last), int(last))
	gBefore := c.div(revcumsum, xp)
	after := c.emit("cumprod", c.where(between, xp, 1.0), last)
	s := c.sum(c.mul(after, c.where(span, gp, 0.0)), []int64{last}, true)
	// prod(x[:z1]): the cumulative product over the elements before z1, read at the row's end
	prefix := c.emit("cumprod", c.where(before, xp, 1.0), last)
	prod := c.emit("slice", prefix, last, n.AddConst(-1), n, int64(1))
	gFirst := c.expand(c.mul(s, prod), sizes)
	gx := c.where(before, gBefore, c.where(first, gFirst, 0.0))
	c.give(x, c.permute(gx, invertPerm(perm)))
}
