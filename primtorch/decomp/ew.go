package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Elementwise ops with torch's semantics, made explicit: type promotion (torch.result_type of
// the operands, then the op's promotion kind), broadcasting (prims.expand), computation in
// float32 for float16/bfloat16 ("opmath", except NO_OPMATH ops), and the result converted to
// the result dtype.

// dtypes of one elementwise computation.
type ewTypes struct {
	common  primtorch.DType // torch.result_type of the operands
	result  primtorch.DType // what the op returns
	compute primtorch.DType // what the prims compute in
}

func opmath(dt primtorch.DType) primtorch.DType {
	if dt == primtorch.Float16 || dt == primtorch.BFloat16 {
		return primtorch.Float32
	}
	return dt
}

// ewDTypes computes the dtypes of an elementwise op of promotion kind p over operands.
func ewDTypes(p primtorch.Promotion, xs ...val) ewTypes {
	vals := make([]primtorch.Value, 0, len(xs))
	for _, x := range xs {
		if x != nil {
			vals = append(vals, valueOf(x))
		}
	}
	common := primtorch.ResultType(vals...)
	t := ewTypes{common: common, result: p.Apply(common)}
	switch p {
	case primtorch.PromoteAlwaysBool:
		t.compute = common
	case primtorch.PromoteNoOpmath:
		t.compute = t.result
	default:
		t.compute = opmath(t.result)
	}
	return t
}

// broadcastShape is the broadcast shape of the tensor operands.
func broadcastShape(xs ...val) []sym {
	var shapes [][]sym
	for _, x := range xs {
		if m := metaOf(x); m != nil {
			shapes = append(shapes, m.SymSizes())
		}
	}
	s, err := primtorch.SymBroadcastShapes(shapes...)
	if err != nil {
		bug("operands do not broadcast: %v", err)
	}
	return s
}

// prepare converts operands to dt and expands tensors to shape.
func (d *decomposer) prepare(dt primtorch.DType, shape []sym, xs []val) []val {
	out := make([]val, len(xs))
	for i, x := range xs {
		if x == nil {
			continue
		}
		out[i] = d.expand(d.convert(x, dt), shape)
	}
	return out
}

// ew computes f over operands xs with promotion kind p: f sees the operands converted to the
// computation dtype and broadcast; its result is converted to the result dtype.
func (d *decomposer) ew(p primtorch.Promotion, f func(x []val) val, xs ...val) *fxgraph.Node {
	t := ewDTypes(p, xs...)
	shape := broadcastShape(xs...)
	r := f(d.prepare(t.compute, shape, xs))
	if metaOf(r) == nil {
		r = d.full(shape, r, t.compute)
	}
	return asNode(d.convert(r, t.result))
}

// ewIn is ew with the computation dtype given: operands are converted to in (after promotion
// to common) and the result to out.
func (d *decomposer) ewIn(in, out primtorch.DType, f func(x []val) val, xs ...val) *fxgraph.Node {
	shape := broadcastShape(xs...)
	r := f(d.prepare(in, shape, xs))
	if metaOf(r) == nil {
		r = d.full(shape, r, in)
	}
	return asNode(d.convert(r, out))
}

// Arithmetic on prepared operands (same dtype and shape, or numbers).

func (d *decomposer) add(x, y val) val { return d.bin("add", x, y) }
func (d *decomposer) sub(x, y val) val { return d.bin("sub", x, y) }
func (d *decomposer) mul(x, y val) val { return d.bin("mul", x, y) }
func (d *decomposer) div(x, y val) val { return d.bin("div", x, y) }

// where selects with a bool condition between prepared operands, materializing a number when
// both values are numbers.
func (d *decomposer) where(cond, x, y val) val {
	if metaOf(x) == nil && metaOf(y) == nil {
		m := metaOf(cond)
		x = d.full(m.SymSizes(), x, primtorch.ResultType(x, y))
		y = scalarAs(y, metaOf(x).DType)
	}
	return d.prim("where", cond, x, y)
}

// zero is the number 0 in an operand's dtype.
func zero(x val) val { return scalarAs(int64(0), dtypeOf(x)) }
