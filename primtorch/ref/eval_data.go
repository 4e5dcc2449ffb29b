package ref

import (
	"ptgo/primtorch"
)

// forEachIndex calls f with every multi-index of shape in row-major order (f must not keep idx).
func forEachIndex(shape []int64, f func(idx []int64) error) error {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	idx := make([]int64, len(shape))
	for k := int64(0); k < n; k++ {
		if err := f(idx); err != nil {
			return err
		}
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}

// pos is the storage position of multi-index idx.
func (t *Tensor) pos(idx []int64) int64 {
	p := t.Offset
	for d, i := range idx {
		p += i * t.Strides[d]
	}
	return p
}

// narrowed is a view of t restricted to [start, start+length) along dim.
func narrowed(t *Tensor, dim int, start, length int64) *Tensor {
	v := &Tensor{DType: t.DType, Shape: append([]int64{}, t.Shape...), Strides: t.Strides, Offset: t.Offset + start*t.Strides[dim], st: t.st}
	v.Shape[dim] = length
	return v
}

func evalClone(c *evalCtx) (any, error) {
	out := c.newOutput()
	copyInto(out, c.tensor("self"))
	return out, nil
}

func evalCopy(c *evalCtx) (any, error) {
	dst := c.tensor("self")
	copyInto(dst, c.tensor("src"))
	return dst, nil
}

func evalCat(c *evalCtx) (any, error) {
	out := c.newOutput()
	dim := int(c.a.Int("dim"))
	if dim < 0 {
		dim += len(out.Shape)
	}
	off := int64(0)
	for _, t := range c.tensorList("tensors") {
		copyInto(narrowed(out, dim, off, t.Shape[dim]), t)
		off += t.Shape[dim]
	}
	return out, nil
}

func evalPad(c *evalCtx) (any, error) {
	x, pad := c.tensor("self"), c.a.Ints("pad")
	out := c.newOutput()
	fill := c.operand("value", out.DType)
	for _, p := range out.positions() {
		if isFloat(out.DType) {
			out.setF(p, fill.f)
		} else {
			out.setI(p, fill.i)
		}
	}
	src, dst := x, out
	for k := 0; k < len(pad)/2; k++ {
		d := len(x.Shape) - 1 - k
		before := pad[2*k]
		s0, d0 := max(0, -before), max(0, before)
		n := min(src.Shape[d]-s0, dst.Shape[d]-d0)
		if n <= 0 {
			return out, nil
		}
		src, dst = narrowed(src, d, s0, n), narrowed(dst, d, d0, n)
	}
	copyInto(dst, src)
	return out, nil
}

// checkIndex wraps a negative index when wrap is set and checks it is in [0, size).
func (c *evalCtx) checkIndex(i, size int64, wrap bool) (int64, error) {
	if wrap && i < 0 {
		i += size
	}
	if i < 0 || i >= size {
		return 0, c.errorf("index %d is out of bounds for a dim of size %d", i, size)
	}
	return i, nil
}

func evalGather(c *evalCtx) (any, error) {
	x, index := c.tensor("self"), c.tensor("index")
	out := c.newOutput()
	if len(x.Shape) == 0 {
		copyInto(out, x)
		return out, nil
	}
	dim := int(c.a.Int("dim"))
	if dim < 0 {
		dim += len(x.Shape)
	}
	src := make([]int64, len(x.Shape))
	err := forEachIndex(index.Shape, func(idx []int64) error {
		i, err := c.checkIndex(index.getI(index.pos(idx)), x.Shape[dim], false)
		if err != nil {
			return err
		}
		copy(src, idx)
		src[dim] = i
		moveElem(out, out.pos(idx), x, x.pos(src))
		return nil
	})
	return out, err
}

// moveElem copies one element between storage positions.
func moveElem(dst *Tensor, dp int64, src *Tensor, sp int64) {
	if isFloat(src.DType) {
		dst.setF(dp, src.getF(sp))
	} else {
		dst.setI(dp, src.getI(sp))
	}
}

func evalIndexSelect(c *evalCtx) (any, error) {
	x, index := c.tensor("self"), c.tensor("index")
	out := c.newOutput()
	if len(x.Shape) == 0 {
		copyInto(out, x)
		return out, nil
	}
	dim := int(c.a.Int("dim"))
	if dim < 0 {
		dim += len(x.Shape)
	}
	ids := index.Ints()
	src := make([]int64, len(x.Shape))
	err := forEachIndex(out.Shape, func(idx []int64) error {
		i, err := c.checkIndex(ids[idx[dim]], x.Shape[dim], false)
		if err != nil {
			return err
		}
		copy(src, idx)
		src[dim] = i
		moveElem(out, out.pos(idx), x, x.pos(src))
		return nil
	})
	return out, err
}

// advIndex maps positions of x[indices] (advanced indexing, prims.index) to positions of x.
type advIndex struct {
	x       *Tensor
	indices []*Tensor // by dim of x; nil: the whole dim
	bshape  []int64   // the index tensors' broadcast shape
	first   int       // where the broadcast dims start in the result
	shape   []int64   // the result's shape
	free    []int     // result dim of each non-indexed dim of x (-1 for indexed dims)
}

func newAdvIndex(x *Tensor, indices []*Tensor) (*advIndex, error) {
	a := &advIndex{x: x, indices: make([]*Tensor, len(x.Shape)), free: make([]int, len(x.Shape))}
	var shapes [][]int64
	var positions []int
	for d, t := range indices {
		if t != nil {
			a.indices[d] = t
			shapes = append(shapes, t.Shape)
			positions = append(positions, d)
		}
	}
	b, err := primtorch.BroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	a.bshape = b
	adjacent := positions[len(positions)-1]-positions[0] == len(positions)-1
	if adjacent {
		a.first = positions[0]
	}
	for d := 0; d < len(x.Shape); d++ {
		if (adjacent && d == a.first) || (!adjacent && d == 0) {
			a.shape = append(a.shape, b...)
		}
		a.free[d] = -1
		if a.indices[d] == nil {
			a.free[d] = len(a.shape)
			a.shape = append(a.shape, x.Shape[d])
		}
	}
	if a.shape == nil {
		a.shape = []int64{}
	}
	return a, nil
}

// source returns the storage position in x of result element idx.
func (a *advIndex) source(c *evalCtx, idx []int64) (int64, error) {
	p := a.x.Offset
	bidx := idx[a.first : a.first+len(a.bshape)]
	for d := range a.x.Shape {
		var i int64
		if t := a.indices[d]; t != nil {
			ti := make([]int64, len(t.Shape))
			off := len(a.bshape) - len(t.Shape)
			for k := range ti {
				if t.Shape[k] != 1 {
					ti[k] = bidx[off+k]
				}
			}
			var err error
			if i, err = c.checkIndex(t.getI(t.pos(ti)), a.x.Shape[d], true); err != nil {
				return 0, err
			}
		} else {
			i = idx[a.free[d]]
		}
		p += i * a.x.Strides[d]
	}
	return p, nil
}

func evalIndex(c *evalCtx) (any, error) {
	x := c.tensor("self")
	a, err := newAdvIndex(x, c.tensorList("indices"))
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	out := c.newOutput()
	if !equalInts(a.shape, out.Shape) {
		return nil, c.errorf("ptgo BUG: indexing gives %v, the meta %v", a.shape, out.Shape)
	}
	err = forEachIndex(out.Shape, func(idx []int64) error {
		sp, err := a.source(c, idx)
		if err != nil {
			return err
		}
		moveElem(out, out.pos(idx), x, sp)
		return nil
	})
	return out, err
}

func evalIndexPut(c *evalCtx) (any, error) {
	x := c.tensor("self")
	out := c.newOutput()
	copyInto(out, x)
	a, err := newAdvIndex(out, c.tensorList("indices"))
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	acc := c.a.Bool("accumulate")
	vt := c.tensor("values")
	scalar := c.operand("values", out.DType)
	var vexp *Tensor
	if vt != nil {
		vexp = broadcastView(vt, a.shape)
	}
	err = forEachIndex(a.shape, func(idx []int64) error {
		dp, err := a.source(c, idx)
		if err != nil {
			return err
		}
		if isFloat(out.DType) {
			v := scalar.f
			if vexp != nil {
				v = vexp.getF(vexp.pos(idx))
			}
			if acc {
				v += out.getF(dp)
			}
			out.setF(dp, v)
			return nil
		}
		v := scalar.i
		if vexp != nil {
			v = vexp.getI(vexp.pos(idx))
		}
		if acc {
			v += out.getI(dp)
		}
		out.setI(dp, v)
		return nil
	})
	return out, err
}

// broadcastView is t expanded to shape (stride 0 on broadcast dims).
func broadcastView(t *Tensor, shape []int64) *Tensor {
	v := &Tensor{DType: t.DType, Shape: append([]int64{}, shape...), Strides: make([]int64, len(shape)), Offset: t.Offset, st: t.st}
	off := len(shape) - len(t.Shape)
	for d := range t.Shape {
		if t.Shape[d] != 1 {
			v.Strides[off+d] = t.Strides[d]
		}
	}
	return v
}

func evalScatter(c *evalCtx) (any, error) {
	x, index, src := c.tensor("self"), c.tensor("index"), c.tensor("src")
	out := c.newOutput()
	copyInto(out, x)
	scalar := c.operand("src", out.DType)
	dim := int(c.a.Int("dim"))
	nd := len(x.Shape)
	if dim < 0 {
		dim += max(nd, 1)
	}
	dst := make([]int64, nd)
	err := forEachIndex(index.Shape, func(idx []int64) error {
		copy(dst, idx)
		if nd > 0 {
			i, err := c.checkIndex(index.getI(index.pos(idx)), x.Shape[dim], false)
			if err != nil {
				return err
			}
			dst[dim] = i
		}
		dp := out.pos(dst)
		switch {
		case src != nil:
			moveElem(out, dp, src, src.pos(idx))
		case isFloat(out.DType):
			out.setF(dp, scalar.f)
		default:
			out.setI(dp, scalar.i)
		}
		return nil
	})
	return out, err
}

func evalFull(c *evalCtx) (any, error) {
	out := c.newOutput()
	v := c.operand("value", out.DType)
	for _, p := range out.positions() {
		if isFloat(out.DType) {
			out.setF(p, v.f)
		} else {
			out.setI(p, v.i)
		}
	}
	return out, nil
}

func evalIota(c *evalCtx) (any, error) {
	out := c.newOutput()
	pos := out.positions()
	if isFloat(out.DType) {
		start, step := asFloat(c.a.Get("start")), asFloat(c.a.Get("step"))
		for k, p := range pos {
			out.setF(p, start+float64(k)*step)
		}
		return out, nil
	}
	start, step := asInt(c.a.Get("start")), asInt(c.a.Get("step"))
	for k, p := range pos {
		out.setI(p, start+int64(k)*step)
	}
	return out, nil
}

func asFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	case bool:
		return b2f(x)
	}
	return 0
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		return b2i(x)
	}
	return 0
}
