package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Joins and rearrangements: cat, stack, repeat, flip, roll, tril/triu.

// catAll concatenates tensors along dim in dtype dt, skipping legacy empty 1-d tensors as torch
// does; shape is the result's.
func (d *decomposer) catAll(ts []*fxgraph.Node, dim int, dt primtorch.DType, shape []sym) *fxgraph.Node {
	var parts []*fxgraph.Node
	for _, t := range ts {
		m := metaOf(t)
		if len(m.Shape) == 1 && m.Shape[0] == 0 && len(shape) != 1 { // (a constant 0: symbols are >= 2)
			continue
		}
		parts = append(parts, asNode(d.convert(t, dt)))
	}
	if len(parts) == 0 {
		return d.full(shape, int64(0), dt)
	}
	return d.prim("cat", parts, int64(dim))
}

func dCat(c *ctx) (any, error) {
	out := c.outMeta()
	return c.d.catAll(c.tensors("tensors"), wrap(c.int("dim"), len(out.Shape)), out.DType, out.SymSizes()), nil
}

func dStack(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta()
	dim := wrap(c.int("dim"), len(out.Shape))
	ts := c.tensors("tensors")
	parts := make([]*fxgraph.Node, len(ts))
	for i, t := range ts {
		parts[i] = asNode(d.unsqueeze(t, dim))
	}
	return d.catAll(parts, dim, out.DType, out.SymSizes()), nil
}

// dHVStack is hstack (cat along dim 1, dim 0 for 1-d tensors) and vstack (cat along dim 0 of
// the tensors made at least 2-d).
func dHVStack(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta()
	ts := c.tensors("tensors")
	parts := make([]*fxgraph.Node, len(ts))
	v := c.op.ID == primtorch.OpVstack
	for i, t := range ts {
		shape := sizesOf(t)
		switch {
		case len(shape) == 0 && v:
			parts[i] = d.reshape(t, []int64{1, 1})
		case len(shape) == 0:
			parts[i] = d.reshape(t, []int64{1})
		case len(shape) == 1 && v:
			parts[i] = d.reshape(t, []sym{primtorch.SymConst(1), shape[0]})
		default:
			parts[i] = t
		}
	}
	dim := 0
	if !v && len(metaOf(parts[0]).Shape) > 1 {
		dim = 1
	}
	return d.catAll(parts, dim, out.DType, out.SymSizes()), nil
}

// dRepeat is repeat and tile: x viewed as [1, s0, 1, s1, ...], expanded to [r0, s0, r1, s1,
// ...], cloned and viewed as the result.
func dRepeat(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shape := sizesOf(x)
	var reps []int64
	if c.op.ID == primtorch.OpTile {
		reps = c.ints("dims")
		for len(reps) < len(shape) {
			reps = append([]int64{1}, reps...)
		}
	} else {
		reps = c.ints("repeats")
	}
	padded := syms(make([]int64, len(reps))...)
	for i := range padded {
		padded[i] = primtorch.SymConst(1)
	}
	copy(padded[len(reps)-len(shape):], shape)
	inter := make([]sym, 0, 2*len(reps))
	target := make([]sym, 0, 2*len(reps))
	for i, s := range padded {
		inter = append(inter, primtorch.SymConst(1), s)
		target = append(target, primtorch.SymConst(reps[i]), s)
	}
	e := d.expand(d.reshape(x, inter), target)
	return d.reshape(d.prim("clone", e), c.outMeta().SymSizes()), nil
}

// dRepeatInterleave with an int repeats: x[..., i, None] expanded r times along a new dim,
// cloned and flattened into dim (the flattened tensor when dim is None). Tensor repeats fall
// back.
func dRepeatInterleave(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	r, ok := c.get("repeats").(int64)
	if !ok {
		return nil, errFallback
	}
	var xs val = x
	var dim int
	if k, ok := c.optInt("dim"); ok {
		dim = wrap(k, len(metaOf(x).Shape))
	} else {
		xs = d.reshape(x, []int64{metaOf(x).Numel()})
	}
	shape := metaOf(xs).Shape
	if len(shape) == 0 {
		xs, shape = d.reshape(xs, []int64{1}), []int64{1}
	}
	target := append(append(append([]int64{}, shape[:dim+1]...), r), shape[dim+1:]...)
	e := d.expand(d.unsqueeze(xs, dim+1), target)
	return d.reshape(d.prim("clone", e), c.outMeta().Shape), nil
}

// reversed is index_select along dim with n-1, ..., 0.
func (d *decomposer) reversed(x val, dim int) val {
	n := sizesOf(x)[dim]
	if k, c := n.IsConst(); c && k <= 1 {
		return x
	}
	return d.prim("index_select", x, int64(dim), d.iota(n, symNumber(n.AddConst(-1)), int64(-1), primtorch.Int64))
}

func dFlip(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	var r val = x
	for _, k := range c.ints("dims") {
		if len(metaOf(x).Shape) == 0 {
			break // a 0-dim tensor flips over dim 0 or -1 as over a size-1 dim
		}
		r = d.reversed(r, wrap(k, len(metaOf(x).Shape)))
	}
	if r == val(x) {
		return d.prim("clone", x), nil
	}
	return r, nil
}

// dRoll rotates along each dim by cat of two slices (the flattened tensor when dims is empty).
func dRoll(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shifts, dims := c.ints("shifts"), c.ints("dims")
	out := c.outMeta().Shape
	var r val = x
	if len(dims) == 0 {
		r, dims = d.reshape(x, []int64{metaOf(x).Numel()}), []int64{0}
	}
	for i, k := range dims {
		dim := wrap(k, len(metaOf(r).Shape))
		n := metaOf(r).Shape[dim]
		if n == 0 {
			continue
		}
		s := ((shifts[i] % n) + n) % n
		if s == 0 {
			continue
		}
		r = d.prim("cat", []any{d.slice(r, dim, n-s, n, 1), d.slice(r, dim, 0, n-s, 1)}, int64(dim))
	}
	if r == val(x) {
		return d.prim("clone", x), nil
	}
	return d.reshape(r, out), nil
}

// dTri is tril (lower) / triu: x where (col - row) <= diagonal (>= for triu), else 0.
func dTri(lower bool) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		shape := sizesOf(x)
		nd := len(shape)
		rows, cols, one := shape[nd-2], shape[nd-1], primtorch.SymConst(1)
		row := d.expand(d.view(d.iota(rows, int64(0), int64(1), primtorch.Int64), []sym{rows, one}), []sym{rows, cols})
		col := d.expand(d.view(d.iota(cols, int64(0), int64(1), primtorch.Int64), []sym{one, cols}), []sym{rows, cols})
		diff := d.sub(col, row)
		k := c.int("diagonal")
		var mask val
		if lower {
			mask = d.bin("le", diff, k)
		} else {
			mask = d.bin("ge", diff, k)
		}
		return d.where(d.expand(mask, shape), x, zero(x)), nil
	}
}
