package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Indexing: x[index] becomes views (ints, slices, None, ...) and prims.index (tensor indices);
// x[index] = v becomes prims.index_put at the positions x[index] selects, computed by applying
// the same index to an iota of x's positions.

// indexTensor returns an index item's tensor: the argument's current value, or the constant
// tensor torch makes of a list of numbers.
func (c *ctx) indexTensor(it primtorch.IndexItem) *fxgraph.Node {
	if it.List == nil {
		return c.d.read(c.stateOf(it.Tensor))
	}
	var flat []any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case []primtorch.Value:
			for _, e := range x {
				walk(e)
			}
		case primtorch.Tuple:
			for _, e := range x {
				walk(e)
			}
		default:
			flat = append(flat, x)
		}
	}
	walk(it.List)
	return c.d.constTensor(flat, it.Tensor.DType, it.Tensor.Shape)
}

// constTensor builds a small constant tensor of dtype dt and shape from its values.
func (d *decomposer) constTensor(vals []any, dt primtorch.DType, shape []int64) *fxgraph.Node {
	if len(vals) == 0 {
		return d.full(shape, int64(0), dt)
	}
	parts := make([]*fxgraph.Node, len(vals))
	for i, v := range vals {
		parts[i] = d.full([]int64{1}, v, dt)
	}
	flat := parts[0]
	if len(parts) > 1 {
		flat = d.prim("cat", parts, int64(0))
	}
	return asNode(d.view(flat, shape))
}

func isMask(dt primtorch.DType) bool { return dt == primtorch.Bool || dt == primtorch.UInt8 }

// applyIndex applies basic indexing items to x as views and tensor items with prims.index.
func (d *decomposer) applyIndex(c *ctx, x val, items []primtorch.IndexItem) (val, error) {
	nd := len(metaOf(x).Shape)
	specified := 0
	hasTensor, hasBool := false, false
	for _, it := range items {
		switch it.Kind {
		case 'i', 's':
			specified++
		case 't':
			specified++
			hasTensor = true
			if isMask(it.Tensor.DType) {
				return nil, d.unsupportedf("indexing with a bool mask (its result's size depends on the mask's values)")
			}
		case 'b':
			hasBool = true
		}
	}
	if hasTensor && hasBool {
		return nil, d.unsupportedf("indexing with Python bools and tensors together")
	}
	adv := map[int]*fxgraph.Node{}
	last := -1
	dim := 0
	for _, it := range items {
		shape := sizesOf(x)
		switch it.Kind {
		case 'i':
			i := primtorch.SymConst(it.Int)
			if _, cst := it.IntSym.IsConst(); !cst {
				i = it.IntSym // (its sign was decided, and guarded, by getitem's meta)
			}
			if it.Int < 0 {
				i = i.Add(shape[dim])
			}
			x = d.selectDim(x, dim, i)
		case 's':
			start, end, step, err := primtorch.SymNormalizeSlice(it.Slice, shape[dim])
			if err != nil {
				return nil, d.unsupportedf("slice: %v", err)
			}
			x = d.slice(x, dim, start, end, step)
			dim++
		case 'e':
			dim += nd - specified
		case 'n':
			x = d.unsqueeze(x, dim)
			dim++
		case 'b':
			x = d.unsqueeze(x, dim)
			if !it.Bool {
				x = d.slice(x, dim, 0, 0, 1)
			}
			dim++
		case 't':
			adv[dim] = c.indexTensor(it)
			last = dim
			dim++
		}
	}
	if last < 0 {
		return x, nil
	}
	indices := make([]any, last+1)
	for k := range indices {
		if t, ok := adv[k]; ok {
			indices[k] = t
		}
	}
	return d.userIndex(d.prim("index", x, indices)), nil
}

func dGetitem(c *ctx) (any, error) {
	items, err := primtorch.ParseIndex(c.get("index"))
	if err != nil {
		return nil, c.d.unsupportedf("index: %v", err)
	}
	return c.d.applyIndex(c, c.selfNode(), items)
}

// dSetitem is x[index] = value, functionalized: x's new value is written with prims.index_put
// (a bool mask selects with prims.where).
func dSetitem(c *ctx) (any, error) {
	d := c.d
	s := c.state("self")
	items, err := primtorch.ParseIndex(c.get("index"))
	if err != nil {
		return nil, d.unsupportedf("index: %v", err)
	}
	// setitem returns None, so its meta does not say whether the written tensor requires
	// grad: in torch it does (grad mode on) when it did or the value does.
	d.rg = d.grad && (requiresGrad(d.read(s)) || requiresGrad(c.in("value")))
	nx, err := d.indexWrite(c, d.read(s), items, c.in("value"))
	if err != nil {
		return nil, err
	}
	if err := d.write(s, nx, false); err != nil {
		return nil, err
	}
	c.done = true
	d.env[c.n] = nil
	return nil, nil
}

// indexWrite returns x with value written at x[items].
func (d *decomposer) indexWrite(c *ctx, x *fxgraph.Node, items []primtorch.IndexItem, value val) (*fxgraph.Node, error) {
	xm := metaOf(x)
	mask := -1
	tensors := 0
	for i, it := range items {
		if it.Kind == 't' {
			tensors++
			if isMask(it.Tensor.DType) {
				mask = i
			}
		}
	}
	pos := d.positions(xm.SymSizes())
	if mask < 0 {
		rp, err := d.applyIndex(c, pos, items)
		if err != nil {
			return nil, err
		}
		rshape := sizesOf(rp)
		var v val
		if metaOf(value) == nil {
			v = scalarAs(value, xm.DType)
		} else {
			v = d.convert(value, xm.DType)
			vs := sizesOf(v)
			for len(vs) > len(rshape) {
				if k, c := vs[0].IsConst(); !c || k != 1 {
					break
				}
				vs = vs[1:]
			}
			v = d.expand(d.reshape(v, vs), rshape)
		}
		return d.indexPutAt(x, asNode(rp), v, false), nil
	}
	if tensors > 1 {
		return nil, d.unsupportedf("assignment through a bool mask together with other tensor indices")
	}
	m := c.indexTensor(items[mask])
	if metaOf(m).DType != primtorch.Bool {
		m = asNode(d.bin("ne", m, int64(0)))
	}
	mshape := sizesOf(m)
	var plain []primtorch.IndexItem
	plain = append(plain, items[:mask]...)
	for range mshape {
		plain = append(plain, primtorch.IndexItem{Kind: 's'})
	}
	plain = append(plain, items[mask+1:]...)
	specified := 0
	for _, it := range plain {
		if it.Kind == 'i' || it.Kind == 's' || it.Kind == 't' {
			specified++
		}
	}
	start := 0
	for _, it := range items[:mask] {
		switch it.Kind {
		case 's', 'n', 'b':
			start++
		case 'e':
			start += len(xm.Shape) - specified
		}
	}
	rp, err := d.applyIndex(c, pos, plain)
	if err != nil {
		return nil, err
	}
	rx, err := d.applyIndex(c, x, plain)
	if err != nil {
		return nil, err
	}
	rshape := sizesOf(rp)
	mview := make([]sym, len(rshape))
	for i := range mview {
		mview[i] = primtorch.SymConst(1)
	}
	copy(mview[start:], mshape)
	maskE := d.expand(d.view(m, mview), rshape)
	var v val
	if metaOf(value) == nil {
		v = scalarAs(value, xm.DType)
	} else {
		v = d.expand(d.reshape(d.convert(value, xm.DType), nil), rshape)
	}
	nr := d.where(maskE, v, rx)
	return d.indexPutAt(x, asNode(rp), nr, false), nil
}

func dGather(c *ctx) (any, error) {
	x := c.selfNode()
	return c.d.userIndex(c.d.prim("gather", x, int64(wrap(c.int("dim"), len(metaOf(x).Shape))), c.in("index"))), nil
}

// sliceTo narrows x to shape (each dim from 0).
func (d *decomposer) sliceTo(x val, sizes any) val {
	for k, s := range toSyms(sizes) {
		if !sameSyms(sizesOf(x)[k:k+1], []sym{s}) {
			x = d.slice(x, k, int64(0), s, 1)
		}
	}
	return x
}

// dScatter is scatter with src (a tensor, narrowed to index's shape) or a value; with reduce=
// it falls back.
func dScatter(c *ctx) (any, error) {
	d := c.d
	if v, ok := c.a.Opt("reduce"); ok && v != nil {
		return nil, errFallback
	}
	x, index := c.selfNode(), asNode(c.in("index"))
	dt := metaOf(x).DType
	src := c.in("src")
	if metaOf(src) != nil {
		src = d.sliceTo(src, sizesOf(index))
	} else {
		src = scalarAs(src, dt)
	}
	if len(metaOf(x).Shape) == 0 {
		return nil, errFallback
	}
	return d.userIndex(d.prim("scatter", x, int64(wrap(c.int("dim"), len(metaOf(x).Shape))), index, src)), nil
}

// dScatterAdd is index_put with accumulate at (position with dim replaced by index).
func dScatterAdd(c *ctx) (any, error) {
	d := c.d
	x, index := c.selfNode(), asNode(c.in("index"))
	xm, im := metaOf(x), metaOf(index)
	if len(xm.Shape) == 0 || im.Numel() == 0 {
		if im.Numel() == 0 {
			return d.prim("clone", x), nil
		}
		return nil, errFallback
	}
	dim := wrap(c.int("dim"), len(xm.Shape))
	idx := make([]any, len(xm.Shape))
	for k := range xm.Shape {
		if k == dim {
			idx[k] = index
			continue
		}
		shape := make([]int64, len(im.Shape))
		for i := range shape {
			shape[i] = 1
		}
		shape[k] = im.Shape[k]
		idx[k] = d.expand(d.view(d.iota(im.Shape[k], int64(0), int64(1), primtorch.Int64), shape), im.Shape)
	}
	src := d.sliceTo(c.in("src"), im.Shape)
	return d.userIndex(d.prim("index_put", x, idx, src, true)), nil
}

func dIndexSelect(c *ctx) (any, error) {
	x := c.selfNode()
	return c.d.userIndex(c.d.prim("index_select", x, int64(wrap(c.int("dim"), len(metaOf(x).Shape))), c.in("index"))), nil
}

// dIndexAdd is index_put with accumulate of alpha*source at x[:, ..., index].
func dIndexAdd(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	xm := metaOf(x)
	if len(xm.Shape) == 0 {
		return nil, errFallback
	}
	dim := wrap(c.int("dim"), len(xm.Shape))
	index := asNode(c.in("index"))
	if len(metaOf(index).Shape) == 0 {
		index = d.reshape(index, []int64{1})
	}
	idx := make([]any, dim+1)
	idx[dim] = index
	src := d.convert(c.in("source"), xm.DType)
	if alpha := c.get("alpha"); !isOne(alpha) {
		src = d.mulScalar(src, alpha)
	}
	want := append([]int64{}, xm.Shape...)
	want[dim] = metaOf(index).Numel()
	src = d.reshape(src, want)
	return d.userIndex(d.prim("index_put", x, idx, src, true)), nil
}

// dTakeAlongDim gathers along dim after broadcasting the other dims (or over the flattened
// tensor when dim is None).
func dTakeAlongDim(c *ctx) (any, error) {
	d := c.d
	x, idx := c.selfNode(), asNode(c.in("indices"))
	xm, im := metaOf(x), metaOf(idx)
	k, ok := c.optInt("dim")
	if !ok {
		return d.userIndex(d.prim("gather", d.reshape(x, []int64{xm.Numel()}), int64(0), d.reshape(idx, []int64{im.Numel()}))), nil
	}
	dim := wrap(k, len(xm.Shape))
	xs, is := append([]int64{}, xm.Shape...), append([]int64{}, im.Shape...)
	for i := range xs {
		if i != dim {
			b := max(xs[i], is[i])
			xs[i], is[i] = b, b
		}
	}
	return d.userIndex(d.prim("gather", d.expand(x, xs), int64(dim), d.expand(idx, is))), nil
}

// dEmbedding is weight[indices] (max_norm renormalizes weight in place: it falls back).
func dEmbedding(c *ctx) (any, error) {
	if c.has("max_norm") {
		return nil, errFallback
	}
	return c.d.userIndex(c.d.prim("index", c.in("weight"), []any{c.in("indices")})), nil
}

// dOneHot is (x[..., None] == arange(num_classes)) as int64.
func dOneHot(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	out := c.outMeta().Shape
	n := out[len(out)-1]
	xe := d.expand(d.unsqueeze(x, len(metaOf(x).Shape)), out)
	r := d.iota(n, int64(0), int64(1), metaOf(x).DType)
	return d.convert(d.bin("eq", xe, d.expand(r, out)), primtorch.Int64), nil
}
