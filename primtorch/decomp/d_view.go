package decomp

import (
	"ptgo/primtorch"
)

// Views stay views: each becomes view prims of its input (the result state then views the
// input's, see state.go). reshape and flatten copy (prims.clone) only when torch does.

// dView is view / view_as / unflatten: a prims.view to the result's shape.
func dView(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shape := c.outMeta().SymSizes()
	if !viewable(x, shape) {
		return nil, d.unsupportedf("view of %s as %v, which this graph's layout of it does not allow", metaOf(x), shape)
	}
	return d.view(x, shape), nil
}

// dReshape is reshape / reshape_as / flatten: a view when possible, else clone + view.
func dReshape(c *ctx) (any, error) {
	return c.d.reshape(c.selfNode(), c.outMeta().SymSizes()), nil
}

func dSqueeze(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shape := metaOf(x).Shape
	var dims []int
	if k, ok := c.optInt("dim"); ok {
		if len(shape) > 0 {
			if w := wrap(k, len(shape)); shape[w] == 1 {
				dims = []int{w}
			}
		}
	} else {
		for i, s := range shape {
			if s == 1 {
				dims = append(dims, i)
			}
		}
	}
	return d.squeeze(x, dims...), nil
}

func dUnsqueeze(c *ctx) (any, error) {
	x := c.selfNode()
	return c.d.unsqueeze(x, wrap(c.int("dim"), len(metaOf(x).Shape)+1)), nil
}

// dTranspose is transpose(dim0, dim1) and t().
func dTranspose(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	nd := len(metaOf(x).Shape)
	if c.op.ID == primtorch.OpT {
		if nd < 2 {
			return x, nil
		}
		return d.transpose(x, 0, 1), nil
	}
	if nd == 0 {
		return x, nil
	}
	return d.transpose(x, wrap(c.int("dim0"), nd), wrap(c.int("dim1"), nd)), nil
}

func dPermute(c *ctx) (any, error) {
	x := c.selfNode()
	nd := len(metaOf(x).Shape)
	dims := c.ints("dims")
	perm := make([]int64, len(dims))
	for i, k := range dims {
		perm[i] = int64(wrap(k, nd))
	}
	return c.d.permute(x, perm), nil
}

// dMovedim moves dims source to destination, the others keeping their order.
func dMovedim(c *ctx) (any, error) {
	x := c.selfNode()
	nd := len(metaOf(x).Shape)
	src, dst := c.ints("source"), c.ints("destination")
	perm := make([]int64, nd)
	used := make([]bool, nd)
	placed := make([]bool, nd)
	for i := range src {
		s, t := wrap(src[i], nd), wrap(dst[i], nd)
		perm[t] = int64(s)
		used[s], placed[t] = true, true
	}
	var rest []int64
	for k := 0; k < nd; k++ {
		if !used[k] {
			rest = append(rest, int64(k))
		}
	}
	j := 0
	for t := 0; t < nd; t++ {
		if !placed[t] {
			perm[t] = rest[j]
			j++
		}
	}
	return c.d.permute(x, perm), nil
}

// dExpand is expand / expand_as / broadcast_to.
func dExpand(c *ctx) (any, error) {
	return c.d.expand(c.selfNode(), c.outMeta().SymSizes()), nil
}

func dBroadcastTensors(c *ctx) (any, error) {
	d := c.d
	ts := c.tensors("tensors")
	vals := make([]val, len(ts))
	for i, t := range ts {
		vals[i] = t
	}
	shape := broadcastShape(vals...)
	out := make([]any, len(ts))
	for i, t := range ts {
		out[i] = d.expand(t, shape)
	}
	return out, nil
}

// dContiguous returns its input when it is laid out as asked, else a clone (whose layout the
// result meta gives).
func dContiguous(c *ctx) (any, error) {
	x := c.selfNode()
	m, want := metaOf(x), c.outMeta()
	if sameSyms(m.SymStrides(), want.SymStrides()) && m.SymOffset().Equal(want.SymOffset()) {
		return x, nil
	}
	return c.d.prim("clone", x), nil
}

func dNarrow(c *ctx) (any, error) {
	x := c.selfNode()
	shape := sizesOf(x)
	dim := wrap(c.int("dim"), len(shape))
	start := c.a.SymInt("start")
	if k, cst := start.IsConst(); cst && k < 0 {
		start = start.Add(shape[dim])
	}
	return c.d.slice(x, dim, start, start.Add(c.a.SymInt("length")), 1), nil
}

func dSelect(c *ctx) (any, error) {
	x := c.selfNode()
	shape := sizesOf(x)
	dim := wrap(c.int("dim"), len(shape))
	i := c.a.SymInt("index")
	if k, cst := i.IsConst(); cst && k < 0 {
		i = i.Add(shape[dim])
	}
	return c.d.selectDim(x, dim, i), nil
}

// dSplit is split / split_with_sizes / chunk: slices of the sizes torch's results have.
func dSplit(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shape := metaOf(x).Shape
	dim := wrap(c.int("dim"), len(shape))
	metas := c.outMetas()
	out := make([]any, len(metas))
	off := primtorch.SymConst(0)
	for i, m := range metas {
		n := m.SymSizes()[dim]
		out[i] = d.slice(x, dim, off, off.Add(n), 1)
		off = off.Add(n)
	}
	return out, nil
}

func dUnbind(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	shape := metaOf(x).Shape
	dim := wrap(c.int("dim"), len(shape))
	out := make([]any, shape[dim])
	for i := range out {
		out[i] = d.selectDim(x, dim, int64(i))
	}
	return out, nil
}

// dAsStridedLike is unfold and diagonal: prims.as_strided with the geometry torch computes
// from the input's layout in this graph.
func dAsStridedLike(c *ctx) (any, error) {
	x := c.selfNode()
	r, err := c.op.MetaArgs(c.a)
	if err != nil {
		bug("%s meta: %v", c.op.Name, err)
	}
	m := r.(*primtorch.TensorMeta)
	return c.d.prim("as_strided", x, m.Shape, m.Strides, m.Offset), nil
}

func dAsStrided(c *ctx) (any, error) {
	x := c.selfNode()
	off := metaOf(x).SymOffset()
	if c.a.Get("storage_offset") != nil {
		off = c.a.SymInt("storage_offset")
	}
	return c.d.prim("as_strided", x, c.a.SymInts("size"), c.a.SymInts("stride"), off), nil
}

// dDetach is a view of its input (a new tensor that does not require grad).
func dDetach(c *ctx) (any, error) { return c.selfNode(), nil }
