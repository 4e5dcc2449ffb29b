package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Factories and casts.

// dFull is zeros/ones/empty/full (and the _like and new_ forms, scalar_tensor, empty_strided):
// prims.full of the result's shape and dtype (empty is filled with zeros); the result's layout
// comes from its meta.
func dFull(c *ctx) (any, error) {
	out := c.outMeta()
	if out.Offset != 0 || !out.IsNonOverlappingAndDense() {
		return nil, errFallback
	}
	var v val = int64(0)
	switch c.op.ID {
	case primtorch.OpOnes, primtorch.OpOnesLike, primtorch.OpNewOnes:
		v = int64(1)
	case primtorch.OpFull, primtorch.OpFullLike, primtorch.OpNewFull:
		v = c.get("fill_value")
	case primtorch.OpScalarTensor:
		v = c.get("s")
	}
	if _, isComplex := v.(complex128); isComplex {
		return nil, errFallback
	}
	return c.d.full(out.SymSizes(), v, out.DType), nil
}

// dArange is prims.iota (start + i*step, computed in float64 for floating dtypes as torch).
func dArange(c *ctx) (any, error) {
	out := c.outMeta()
	start, step := any(int64(0)), any(int64(1))
	if _, ok := c.a.Opt("start"); ok && c.a.Sig.Param("start") >= 0 {
		start, step = c.get("start"), c.get("step")
	}
	if !out.DType.IsFloatingPoint() {
		_, f1 := start.(float64)
		_, f2 := step.(float64)
		if f1 || f2 {
			return nil, errFallback
		}
	}
	return c.d.iota(out.SymSizes()[0], start, step, out.DType), nil
}

// dLinspace is linspace and logspace: start + i*step for the first half and end - (n-1-i)*step
// for the second, as torch's kernel (logspace: base to that power).
func dLinspace(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta()
	if !out.DType.IsFloatingPoint() {
		return nil, errFallback
	}
	n := c.int("steps")
	start, end := asFloat(c.get("start")), asFloat(c.get("end"))
	dt := out.DType
	cdt := opmath(dt)
	if n <= 1 {
		r := d.full(out.SymSizes(), start, cdt)
		return d.finishSpace(c, r, dt), nil
	}
	step := (end - start) / float64(n-1)
	if cdt == primtorch.Float32 {
		step = float64(float32(float32(end)-float32(start)) / float32(n-1))
	}
	i := d.iota(primtorch.SymConst(n), int64(0), int64(1), cdt)
	lo := d.add(d.mul(i, step), start)
	hi := d.sub(end, d.mul(d.sub(float64(n-1), i), step))
	half := d.bin("lt", i, float64(n/2))
	return d.finishSpace(c, asNode(d.where(half, lo, hi)), dt), nil
}

func (d *decomposer) finishSpace(c *ctx, r *fxgraph.Node, dt primtorch.DType) val {
	if c.op.ID == primtorch.OpLogspace {
		base := c.float("base")
		r = d.prim("pow", d.full(sizesOf(r), base, metaOf(r).DType), r)
	}
	return d.convert(r, dt)
}

// dEye is (row == col) over [n, m].
func dEye(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta()
	os := out.SymSizes()
	n, m, one := os[0], os[1], primtorch.SymConst(1)
	row := d.expand(d.view(d.iota(n, int64(0), int64(1), primtorch.Int64), []sym{n, one}), os)
	col := d.expand(d.view(d.iota(m, int64(0), int64(1), primtorch.Int64), []sym{one, m}), os)
	return d.convert(d.bin("eq", row, col), out.DType), nil
}

// dTo is to / type_as / type / cpu / float() ...: the input itself when nothing changes (as
// torch returns it), else a conversion or copy in the result's layout.
func dTo(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m, out := metaOf(x), c.outMeta()
	if out.Device != m.Device {
		return nil, errFallback // a copy between devices is torch's
	}
	copyFlag := false
	if v, ok := c.a.Opt("copy"); ok {
		copyFlag, _ = v.(bool)
	}
	same := out.DType == m.DType && sameSyms(out.SymStrides(), m.SymStrides()) && out.SymOffset().Equal(m.SymOffset())
	if same && !copyFlag {
		return x, nil
	}
	if out.DType == m.DType {
		return d.prim("clone", x), nil
	}
	return d.convert(x, out.DType), nil
}

func dClone(c *ctx) (any, error) { return c.d.prim("clone", c.selfNode()), nil }

// dCopy is self.copy_(src): self's new value is src converted and broadcast.
func dCopy(c *ctx) (any, error) {
	d := c.d
	s := c.state("self")
	m := metaOf(d.read(s))
	src := d.materialize(c.in("src"), m.SymSizes(), m.DType)
	if err := d.write(s, src, false); err != nil {
		return nil, err
	}
	c.done = true
	d.env[c.n] = s
	return nil, nil
}

// dFill is fill_ (a number or 0-d tensor) and zero_.
func dFill(c *ctx) (any, error) {
	d := c.d
	s := c.state("self")
	m := metaOf(d.read(s))
	var v val = int64(0)
	if c.op.ID == primtorch.OpFill {
		v = c.in("value")
		if metaOf(v) != nil {
			v = d.reshape(v, nil)
		}
	}
	nv := d.materialize(v, m.SymSizes(), m.DType)
	if err := d.write(s, nv, false); err != nil {
		return nil, err
	}
	c.done = true
	d.env[c.n] = s
	return nil, nil
}

// dRequiresGrad only changes autograd state: the value is the input.
func dRequiresGrad(c *ctx) (any, error) {
	s := c.state("self")
	if m := c.outMeta(); s.input != nil && m != nil && m.RequiresGrad != c.d.read(s).TensorMeta().RequiresGrad {
		// the flag of a tensor from outside the graph changes: the caller must see it
		return nil, c.d.unsupportedf("requires_grad_ changes the requires_grad of a graph input")
	}
	c.done = true
	c.d.env[c.n] = s
	return nil, nil
}
