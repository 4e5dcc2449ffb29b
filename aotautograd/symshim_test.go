package aotautograd_test

import (
	"fmt"
	"slices"
	"sort"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Test scaffolding for symbolic splits: shimMeta, symbolic metas for the prims the derivative
// formulas emit while their registry rows are not symbolic yet (the registry's meta at the
// hints gives dtype and layout, the rules below the sizes as SymInts), and instantiate, which
// turns a symbolic graph into the static graph of given symbol values (sizes and size
// expressions evaluated) for the reference interpreter.

// hinted replaces every symbolic size in a value by its hint without guarding anything.
func hinted(v primtorch.Value) primtorch.Value {
	switch x := v.(type) {
	case primtorch.SymInt:
		return x.Hint()
	case *primtorch.TensorMeta:
		if x == nil || x.Sym == nil {
			return x
		}
		c := x.Clone()
		c.Sym = nil
		return c
	case []primtorch.Value:
		out := make([]primtorch.Value, len(x))
		for i, e := range x {
			out[i] = hinted(e)
		}
		return out
	}
	return v
}

func symOf(v primtorch.Value) primtorch.SymInt {
	s, ok := primtorch.AsSymInt(v)
	if !ok {
		panic(fmt.Sprintf("shim: %v (%T) is not an int", v, v))
	}
	return s
}

func symList(v primtorch.Value) []primtorch.SymInt {
	l := v.([]primtorch.Value)
	out := make([]primtorch.SymInt, len(l))
	for i, e := range l {
		out[i] = symOf(e)
	}
	return out
}

func intList(v primtorch.Value) []int64 {
	l := v.([]primtorch.Value)
	out := make([]int64, len(l))
	for i, e := range l {
		out[i] = e.(int64)
	}
	return out
}

// broadcastSym broadcasts the tensor operands' symbolic sizes (right-aligned; a constant 1
// takes the other operand's size).
func broadcastSym(vals []primtorch.Value) []primtorch.SymInt {
	var out []primtorch.SymInt
	for _, v := range vals {
		m, ok := v.(*primtorch.TensorMeta)
		if !ok || m == nil {
			continue
		}
		s := m.SymSizes()
		for len(out) < len(s) {
			out = append([]primtorch.SymInt{primtorch.SymConst(1)}, out...)
		}
		off := len(out) - len(s)
		for i, x := range s {
			if k, ok := out[off+i].IsConst(); ok && k == 1 {
				out[off+i] = x
			}
		}
	}
	return out
}

// shimMeta is the registry's meta function for symbolic ops and for calls without symbols; for
// the others it computes the symbolic result of the prims the formulas emit.
func shimMeta(op *primtorch.Op, vals []primtorch.Value) (primtorch.Value, error) {
	if op.Symbolic || !primtorch.HasSymbols(vals) {
		return op.Meta(vals, nil)
	}
	r, err := op.Meta(hinted(vals).([]primtorch.Value), nil)
	if err != nil {
		return nil, err
	}
	m, ok := r.(*primtorch.TensorMeta)
	if !ok {
		return nil, fmt.Errorf("shim: %s gave %T", op.Name, r)
	}
	sizes, strides, offset, err := shimLayout(op, vals, m)
	if err != nil {
		return nil, err
	}
	out := m.Clone()
	out.SetSymLayout(sizes, strides, offset)
	if !slices.Equal(out.Shape, m.Shape) || !slices.Equal(out.Strides, m.Strides) || out.Offset != m.Offset {
		return nil, fmt.Errorf("shim: %s: symbolic layout %s disagrees with the registry's %s", op.Name, out.SymString(), m)
	}
	return out, nil
}

func shimLayout(op *primtorch.Op, vals []primtorch.Value, m *primtorch.TensorMeta) (sizes, strides []primtorch.SymInt, offset primtorch.SymInt, err error) {
	in := func(i int) *primtorch.TensorMeta { return vals[i].(*primtorch.TensorMeta) }
	zero := primtorch.SymConst(0)
	if op.Kind == primtorch.KindView {
		x := in(0)
		xs, xt, xo := x.SymSizes(), x.SymStrides(), x.SymOffset()
		switch op.ID {
		case primtorch.OpPrimExpand:
			sizes = symList(vals[1])
			lead := len(sizes) - len(xs)
			for i := range sizes {
				switch {
				case i < lead:
					strides = append(strides, zero)
				case isConstOne(xs[i-lead]) && !isConstOne(sizes[i]):
					strides = append(strides, zero)
				default:
					strides = append(strides, xt[i-lead])
				}
			}
			return sizes, strides, xo, nil
		case primtorch.OpPrimView:
			if !symContiguousT(x) {
				return nil, nil, zero, fmt.Errorf("shim: view of a non-contiguous %s", x.SymString())
			}
			sizes = symList(vals[1])
			return sizes, primtorch.SymContiguousStrides(sizes), xo, nil
		case primtorch.OpPrimPermute:
			for _, d := range intList(vals[1]) {
				sizes, strides = append(sizes, xs[d]), append(strides, xt[d])
			}
			return sizes, strides, xo, nil
		case primtorch.OpPrimUnsqueeze:
			d := int(vals[1].(int64))
			if d < 0 {
				d += len(xs) + 1
			}
			st := primtorch.SymConst(1)
			if d < len(xs) {
				st = xs[d].Mul(xt[d])
			}
			sizes = slices.Insert(slices.Clone(xs), d, primtorch.SymConst(1))
			strides = slices.Insert(slices.Clone(xt), d, st)
			return sizes, strides, xo, nil
		case primtorch.OpPrimSqueeze:
			drop := map[int]bool{}
			for _, d := range intList(vals[1]) {
				if d < 0 {
					d += int64(len(xs))
				}
				drop[int(d)] = true
			}
			for i := range xs {
				if !drop[i] {
					sizes, strides = append(sizes, xs[i]), append(strides, xt[i])
				}
			}
			return sizes, strides, xo, nil
		case primtorch.OpPrimSlice:
			d := int(vals[1].(int64))
			start, end, step := symOf(vals[2]), symOf(vals[3]), vals[4].(int64)
			if step != 1 {
				return nil, nil, zero, fmt.Errorf("shim: slice with step %d", step)
			}
			sizes, strides = slices.Clone(xs), slices.Clone(xt)
			sizes[d] = end.Sub(start)
			return sizes, strides, xo.Add(start.Mul(xt[d])), nil
		}
		return nil, nil, zero, fmt.Errorf("shim: no symbolic rule for %s", op.Name)
	}
	switch {
	case op.Kind == primtorch.KindPointwise:
		sizes = broadcastSym(vals)
	default:
		switch op.ID {
		case primtorch.OpPrimConvertElementType, primtorch.OpPrimClone, primtorch.OpPrimCumsum, primtorch.OpPrimCumprod,
			primtorch.OpPrimIndexPut, primtorch.OpPrimScatter:
			sizes = in(0).SymSizes()
		case primtorch.OpPrimSum, primtorch.OpPrimAmax, primtorch.OpPrimAmin, primtorch.OpPrimProd:
			xs := in(0).SymSizes()
			dims := map[int]bool{}
			for _, d := range intList(vals[1]) {
				if d < 0 {
					d += int64(len(xs))
				}
				dims[int(d)] = true
			}
			if len(dims) == 0 {
				for i := range xs {
					dims[i] = true
				}
			}
			keep := vals[2].(bool)
			for i, s := range xs {
				switch {
				case !dims[i]:
					sizes = append(sizes, s)
				case keep:
					sizes = append(sizes, primtorch.SymConst(1))
				}
			}
		case primtorch.OpPrimFull:
			sizes = symList(vals[0])
		case primtorch.OpPrimIota:
			sizes = []primtorch.SymInt{symOf(vals[0])}
		case primtorch.OpPrimMm:
			sizes = []primtorch.SymInt{in(0).SymSizes()[0], in(1).SymSizes()[1]}
		case primtorch.OpPrimAddmm:
			sizes = []primtorch.SymInt{in(1).SymSizes()[0], in(2).SymSizes()[1]}
		case primtorch.OpPrimBmm:
			a, b := in(0).SymSizes(), in(1).SymSizes()
			sizes = []primtorch.SymInt{a[0], a[1], b[2]}
		case primtorch.OpPrimIndexSelect:
			sizes = in(0).SymSizes()
			sizes[int(vals[1].(int64))] = in(2).SymNumel()
		case primtorch.OpPrimIndex: // tensor indices on adjacent dims
			xs := in(0).SymSizes()
			idx := vals[1].([]primtorch.Value)
			first, last := -1, -1
			var ims []primtorch.Value
			for d, v := range idx {
				if im, ok := v.(*primtorch.TensorMeta); ok && im != nil {
					if first < 0 {
						first = d
					} else if last != d-1 {
						return nil, nil, zero, fmt.Errorf("shim: index with separated tensor indices")
					}
					last = d
					ims = append(ims, im)
				}
			}
			sizes = append(append(slices.Clone(xs[:first]), broadcastSym(ims)...), xs[last+1:]...)
		case primtorch.OpPrimGather:
			sizes = in(2).SymSizes()
		case primtorch.OpPrimConstantPadNd:
			sizes = in(0).SymSizes()
			pads := symList(vals[1])
			for k := 0; k < len(pads)/2; k++ {
				d := len(sizes) - 1 - k
				sizes[d] = sizes[d].Add(pads[2*k]).Add(pads[2*k+1])
			}
		default:
			return nil, nil, zero, fmt.Errorf("shim: no symbolic rule for %s", op.Name)
		}
	}
	return sizes, denseLike(sizes, m), zero, nil
}

func isConstOne(s primtorch.SymInt) bool {
	k, ok := s.IsConst()
	return ok && k == 1
}

func symContiguousT(m *primtorch.TensorMeta) bool {
	want := primtorch.SymContiguousStrides(m.SymSizes())
	st := m.SymStrides()
	for i, s := range m.SymSizes() {
		if !isConstOne(s) && !want[i].Equal(st[i]) {
			return false
		}
	}
	o, ok := m.SymOffset().IsConst()
	return ok && o == 0
}

// denseLike gives sizes the dense strides of the registry's static result m, in the order of
// its strides (size-1 dims keep m's stride).
func denseLike(sizes []primtorch.SymInt, m *primtorch.TensorMeta) []primtorch.SymInt {
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = len(sizes) - 1 - i
	}
	sort.SliceStable(order, func(a, b int) bool { return m.Strides[order[a]] < m.Strides[order[b]] })
	strides := make([]primtorch.SymInt, len(sizes))
	acc := primtorch.SymConst(1)
	for _, i := range order {
		if isConstOne(sizes[i]) {
			strides[i] = primtorch.SymConst(m.Strides[i])
			continue
		}
		strides[i] = acc
		acc = acc.Mul(sizes[i])
	}
	return strides
}

// instantiate is g at the symbol values vals: metas and size expressions evaluated, no Shapes.
func instantiate(g *fxgraph.Graph, vals []int64) *fxgraph.Graph {
	c := fxgraph.Clone(g)
	c.Shapes = nil
	var arg func(a fxgraph.Arg) fxgraph.Arg
	arg = func(a fxgraph.Arg) fxgraph.Arg {
		switch v := a.(type) {
		case fxgraph.Const:
			if s, ok := v.V.(primtorch.SymInt); ok {
				return fxgraph.Const{V: s.Eval(vals)}
			}
		case fxgraph.List:
			out := fxgraph.List{Elems: make([]fxgraph.Arg, len(v.Elems))}
			for i, e := range v.Elems {
				out.Elems[i] = arg(e)
			}
			return out
		case fxgraph.Tuple:
			out := fxgraph.Tuple{Elems: make([]fxgraph.Arg, len(v.Elems))}
			for i, e := range v.Elems {
				out.Elems[i] = arg(e)
			}
			return out
		}
		return a
	}
	var meta func(v any) any
	meta = func(v any) any {
		switch m := v.(type) {
		case *primtorch.TensorMeta:
			if m == nil || m.Sym == nil {
				return m
			}
			out := m.Clone()
			out.Sym = nil
			for i, s := range m.Sym.Sizes {
				out.Shape[i] = s.Eval(vals)
			}
			for i, s := range m.Sym.Strides {
				out.Strides[i] = s.Eval(vals)
			}
			out.Offset = m.Sym.Offset.Eval(vals)
			return out
		case []any:
			out := make([]any, len(m))
			for i, e := range m {
				out[i] = meta(e)
			}
			return out
		}
		return v
	}
	for _, n := range c.Nodes {
		// A size in a floating pointwise prim reads as the float a static graph's formula
		// writes (div(g, 8.0)).
		floatOp := false
		if op := primtorch.Lookup(n.Target); op != nil && op.Kind == primtorch.KindPointwise {
			m := n.TensorMeta()
			floatOp = m != nil && m.DType.IsFloatingPoint()
		}
		for i, a := range n.Args {
			n.Args[i] = arg(a)
			if c, ok := a.(fxgraph.Const); ok && floatOp {
				if _, sym := c.V.(primtorch.SymInt); sym {
					n.Args[i] = fxgraph.Const{V: float64(n.Args[i].(fxgraph.Const).V.(int64))}
				}
			}
		}
		for i := range n.Kwargs {
			n.Kwargs[i].Value = arg(n.Kwargs[i].Value)
		}
		n.Meta = meta(n.Meta)
	}
	return c
}
