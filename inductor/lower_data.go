package inductor

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Data movement lowered to Pointwise buffers: cat and padding read through masked branches,
// gathers through indirect index atoms.

// lowerCat lowers cat(tensors, dim): the element at position p along dim comes from the input
// whose range holds p, chosen by nested masked values (only the taken branch loads).
func lowerCat(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	var list []fxgraph.Arg
	switch a := arg(n, 0, "tensors").(type) {
	case fxgraph.List:
		list = a.Elems
	case fxgraph.Tuple:
		list = a.Elems
	default:
		return nil, lowerError(n, "cat needs a list of tensors")
	}
	d, _ := constInt(arg(n, 1, "dim"))
	dim, ok := normDim(d, len(m.Shape))
	if !ok {
		return nil, lowerError(n, "dim %d is out of range for %d dims", d, len(m.Shape))
	}
	type part struct {
		t      *tensor
		offset Sym // symbolic along a symbolic dim
	}
	var parts []part
	off := symc(0)
	for i, a := range list {
		t := l.tensorArg(a)
		if t == nil {
			return nil, lowerError(n, "cat input %d is not a tensor", i)
		}
		if len(t.sizes) == 1 && isConstSize(t.sizes[0], 0) && len(m.Shape) != 1 {
			continue // torch skips legacy empty 1-d inputs
		}
		if len(t.sizes) != len(m.Shape) {
			return nil, lowerError(n, "cat input %d has %d dims, the result %d", i, len(t.sizes), len(m.Shape))
		}
		if isConstSize(t.sizes[dim], 0) {
			continue
		}
		parts = append(parts, part{t, off})
		off = off.Add(t.sizes[dim])
	}
	if !off.Equal(metaSizes(m)[dim]) {
		return nil, lowerError(n, "inputs add up to %s along dim %d, the meta says %s", off, dim, metaSizes(m)[dim])
	}
	b := boundsOf(metaSizes(m))
	idx := indexVars(metaSizes(m), 0)
	var v *Value
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		at := append([]Expr(nil), idx...)
		if k, ok := p.offset.IsConst(); ok {
			at[dim] = idx[dim].AddConst(-k)
		} else {
			at[dim] = idx[dim].Add(symExpr(p.offset.Neg()))
		}
		load := l.g.vals.Cast(l.load(p.t, at, b), m.DType)
		if v == nil {
			v = load
			continue
		}
		end := p.offset.Add(p.t.sizes[dim])
		cond := l.g.vals.Op("lt", l.g.vals.Index(primtorch.Int64, idx[dim]), l.g.vals.SizeValue(end))
		v = l.g.vals.Masked(cond, load, v)
	}
	if v == nil {
		v = l.g.vals.ConstI(m.DType, 0)
	}
	return l.newPointwise(m, v), nil
}

// lowerConstantPad lowers constant_pad_nd(x, pad, value): pad pairs (before, after) start from
// the last dim; negative pads crop.
func lowerConstantPad(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	pad, ok := constInts(arg(n, 1, "pad"))
	if t == nil || !ok || len(pad)%2 != 0 || len(pad)/2 > len(t.sizes) {
		return nil, lowerError(n, "constant_pad_nd needs a tensor and an even list of constant pads")
	}
	value := any(int64(0))
	if a := arg(n, 2, "value"); a != nil {
		if s, ok := l.scalarArg(a); ok {
			value = s
		}
	}
	b := boundsOf(metaSizes(m))
	idx := indexVars(metaSizes(m), 0)
	at := append([]Expr(nil), idx...)
	var cond *Value
	vals := l.g.vals
	for k := 0; k < len(pad)/2; k++ {
		dim := len(t.sizes) - 1 - k
		before := pad[2*k]
		at[dim] = idx[dim].AddConst(-before)
		lo, hi, _ := at[dim].Range(b)
		iv := vals.Index(primtorch.Int64, at[dim])
		if _, static := t.sizes[dim].IsConst(); !static {
			// a symbolic dim: before its start only when padded before
			lo = -before
		}
		if lo < 0 {
			c := vals.Op("ge", iv, vals.ConstI(primtorch.Int64, 0))
			cond = and(vals, cond, c)
		}
		if _, static := t.sizes[dim].IsConst(); !static {
			// a symbolic dim: past its end only when padded after
			if pad[2*k+1] > 0 {
				c := vals.Op("lt", iv, vals.SizeValue(t.sizes[dim]))
				cond = and(vals, cond, c)
			}
		} else if hi >= staticSize(t.sizes[dim], "constant_pad_nd") {
			c := vals.Op("lt", iv, vals.ConstI(primtorch.Int64, staticSize(t.sizes[dim], "constant_pad_nd")))
			cond = and(vals, cond, c)
		}
	}
	v := vals.Cast(l.load(t, at, b), m.DType)
	if cond != nil {
		v = vals.Masked(cond, v, vals.Const(m.DType, value))
	}
	return l.newPointwise(m, v), nil
}

func and(vals *values, a, b *Value) *Value {
	if a == nil {
		return b
	}
	return vals.Op("logical_and", a, b)
}

// lowerGather lowers gather(x, dim, index): out[p] = x[p with dim replaced by index[p]].
func lowerGather(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	d, ok := constInt(arg(n, 1, "dim"))
	it := l.tensorArg(arg(n, 2, "index"))
	if t == nil || it == nil || !ok {
		return nil, lowerError(n, "gather needs a tensor, a constant dim and an index tensor")
	}
	dim, ok := normDim(d, len(t.sizes))
	if !ok {
		return nil, lowerError(n, "dim %d is out of range", d)
	}
	if len(t.sizes) == 0 {
		return l.newPointwise(m, l.load(t, nil, nil)), nil
	}
	b := boundsOf(metaSizes(m))
	idx := indexVars(metaSizes(m), 0)
	iv := l.g.vals.Cast(l.load(it, idx, b), primtorch.Int64)
	at := append([]Expr(nil), idx...)
	at[dim] = IndSym(iv, t.sizes[dim])
	return l.newPointwise(m, l.g.vals.Cast(l.load(t, at, b), m.DType)), nil
}

// lowerIndexSelect lowers index_select(x, dim, index).
func lowerIndexSelect(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	d, ok := constInt(arg(n, 1, "dim"))
	it := l.tensorArg(arg(n, 2, "index"))
	if t == nil || it == nil || !ok || len(it.sizes) > 1 {
		return nil, lowerError(n, "index_select needs a tensor, a constant dim and a 1-d index tensor")
	}
	if len(t.sizes) == 0 {
		return l.newPointwise(m, l.load(t, nil, nil)), nil
	}
	dim, ok := normDim(d, len(t.sizes))
	if !ok {
		return nil, lowerError(n, "dim %d is out of range", d)
	}
	b := boundsOf(metaSizes(m))
	idx := indexVars(metaSizes(m), 0)
	var iat []Expr
	if len(it.sizes) == 1 {
		iat = []Expr{idx[dim]}
	}
	iv := l.g.vals.Cast(l.load(it, iat, b), primtorch.Int64)
	at := append([]Expr(nil), idx...)
	at[dim] = IndSym(iv, t.sizes[dim])
	return l.newPointwise(m, l.g.vals.Cast(l.load(t, at, b), m.DType)), nil
}

// lowerIndex lowers index(x, indices) (advanced indexing with integer index tensors): the index
// tensors broadcast together; their dims go where the first indexed dim was when the indexed
// dims are adjacent, else first.
func lowerIndex(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	if t == nil {
		return nil, lowerError(n, "index needs a tensor")
	}
	outSizes, at, err := l.advancedIndex(n, t, arg(n, 1, "indices"))
	if err != nil {
		return nil, err
	}
	if !symsEqual(outSizes, metaSizes(m)) {
		return nil, lowerError(n, "the meta's shape %v is not the indexing result %v", m.Shape, outSizes)
	}
	b := boundsOf(metaSizes(m))
	return l.newPointwise(m, l.g.vals.Cast(l.load(t, at(indexVars(metaSizes(m), 0), b), b), m.DType)), nil
}

// advancedIndex describes t[indices] (a list of index tensors or None): the result's sizes and,
// for an index into the result, the index into t.
func (l *lowerer) advancedIndex(n *fxgraph.Node, t *tensor, indices fxgraph.Arg) ([]Sym, func(idx []Expr, b Bounds) []Expr, error) {
	var list []fxgraph.Arg
	switch a := indices.(type) {
	case fxgraph.List:
		list = a.Elems
	case fxgraph.Tuple:
		list = a.Elems
	}
	if len(list) == 0 || len(list) > len(t.sizes) {
		return nil, nil, lowerError(n, "indices must list 1 to %d index tensors or None", len(t.sizes))
	}
	idxT := make([]*tensor, len(t.sizes))
	var positions []int
	var bshape []Sym
	for k, a := range list {
		if isNone(a) {
			continue
		}
		it := l.tensorArg(a)
		if it == nil {
			return nil, nil, lowerError(n, "index %d is neither a tensor nor None", k)
		}
		if it.dtype() == primtorch.Bool || it.dtype() == primtorch.UInt8 {
			return nil, nil, fmt.Errorf("%w: boolean mask indices", errNoLowering)
		}
		idxT[k] = it
		positions = append(positions, k)
		var ok bool
		if bshape, ok = broadcastSizes(bshape, it.sizes); !ok {
			return nil, nil, lowerError(n, "index tensors do not broadcast")
		}
	}
	if len(positions) == 0 {
		return t.sizes, func(idx []Expr, b Bounds) []Expr { return idx }, nil
	}
	adjacent := positions[len(positions)-1]-positions[0] == len(positions)-1
	first := 0
	if adjacent {
		first = positions[0]
	}
	// the result: non-indexed dims before first, the broadcast dims, then the other non-indexed
	var outSizes []Sym
	srcDim := map[int]int{} // input dim -> result dim for non-indexed dims
	for k := 0; k < len(t.sizes); k++ {
		if (adjacent && k == first) || (!adjacent && k == 0) {
			outSizes = append(outSizes, bshape...)
		}
		if idxT[k] == nil {
			srcDim[k] = len(outSizes)
			outSizes = append(outSizes, t.sizes[k])
		}
	}
	at := func(idx []Expr, b Bounds) []Expr {
		bidx := idx[first : first+len(bshape)]
		out := make([]Expr, len(t.sizes))
		for k := range t.sizes {
			if it := idxT[k]; it != nil {
				ia, _ := broadcastIndex(bidx, bshape, it.sizes)
				iv := l.g.vals.Cast(l.load(it, ia, b), primtorch.Int64)
				out[k] = IndSym(iv, t.sizes[k])
			} else {
				out[k] = idx[srcDim[k]]
			}
		}
		return out
	}
	return outSizes, at, nil
}

// broadcastSizes is torch's broadcasting of two shapes (symbolic sizes broadcast with equal
// ones and size 1).
func broadcastSizes(a, b []Sym) ([]Sym, bool) {
	n := max(len(a), len(b))
	out := make([]Sym, n)
	for k := 0; k < n; k++ {
		x, y := symc(1), symc(1)
		if j := k - (n - len(a)); j >= 0 {
			x = a[j]
		}
		if j := k - (n - len(b)); j >= 0 {
			y = b[j]
		}
		switch {
		case x.Equal(y) || isOne(y):
			out[k] = x
		case isOne(x):
			out[k] = y
		default:
			return nil, false
		}
	}
	return out, true
}

// broadcastShapes is torch's broadcasting of two shapes.
func broadcastShapes(a, b []int64) ([]int64, bool) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for k := 0; k < n; k++ {
		x, y := int64(1), int64(1)
		if j := k - (n - len(a)); j >= 0 {
			x = a[j]
		}
		if j := k - (n - len(b)); j >= 0 {
			y = b[j]
		}
		switch {
		case x == y || y == 1:
			out[k] = x
		case x == 1:
			out[k] = y
		default:
			return nil, false
		}
	}
	return out, true
}

// lowerExtern lowers a matmul or convolution to an extern call (DESIGN D5).
func lowerExtern(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	return l.extern(n, n.Target, n.Args, n.Kwargs, "extern")
}

// lowerAddmm lowers addmm(bias, a, b) as the extern mm and a pointwise add of the broadcast
// bias, which fusion then inlines into the product's readers (a GELU, a residual add). torch's
// addmm would first copy the broadcast bias into its output on torch's OpenMP threads, whose
// idle workers then spin beside the BLAS threads of the product: at 2 threads a 64x512 @
// 512x2048 addmm took 3.4 ms against 1.3 ms for mm on this machine.
func lowerAddmm(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	if len(n.Args) != 3 {
		return nil, lowerError(n, "prims.addmm takes (bias, a, b), got %d arguments", len(n.Args))
	}
	bias := l.tensorArg(n.Args[0])
	// A 16-bit product is rounded to its dtype when stored: adding the bias afterwards would
	// round twice where torch's addmm rounds once (bias + product in float), so bfloat16 and
	// float16 addmm stay one call.
	if bias == nil || bias.dtype() != m.DType || (m.DType != primtorch.Float32 && m.DType != primtorch.Float64) {
		return l.extern(n, n.Target, n.Args, n.Kwargs, "extern")
	}
	prod, err := l.extern(n, "prims.mm", n.Args[1:], nil, "extern")
	if err != nil {
		return nil, err
	}
	idx := indexVars(metaSizes(m), 0)
	b := boundsOf(metaSizes(m))
	at, ok := broadcastIndex(idx, metaSizes(m), bias.sizes)
	if !ok {
		return nil, lowerError(n, "addmm bias of shape %v does not broadcast to %v", symsV(bias.sizes), m.Shape)
	}
	sum := l.g.vals.Op("add", l.load(prod.t, idx, b), l.load(bias, at, b))
	return l.newPointwise(m, sum), nil
}

// lowerFallback lowers prims.fallback(target, args...): the torch-level call, run by torch.
func lowerFallback(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	c, ok := arg(n, 0, "target").(fxgraph.Const)
	target, ok2 := c.V.(string)
	if !ok || !ok2 {
		return nil, lowerError(n, "prims.fallback needs the torch target as its first argument (a string)")
	}
	return l.extern(n, target, n.Args[1:], n.Kwargs, "fallback")
}

// extern makes n an extern call of target; tensor arguments are realized as buffers with the
// layout of their meta.
func (l *lowerer) extern(n *fxgraph.Node, target string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg, reason string) (*lowered, error) {
	e := &Extern{Target: target, Reason: reason, Effects: fxgraph.CallEffects(n)}
	for _, a := range args {
		ea, err := l.externArg(n, a)
		if err != nil {
			return nil, err
		}
		e.Args = append(e.Args, ea)
	}
	for _, kw := range kwargs {
		ea, err := l.externArg(n, kw.Value)
		if err != nil {
			return nil, err
		}
		e.Kwargs = append(e.Kwargs, ExternKwarg{Name: kw.Name, Value: ea})
	}
	l.cur = n
	out := &lowered{}
	addOut := func(m *primtorch.TensorMeta) *lowered {
		b := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), e)
		l.origin(b)
		e.Outs = append(e.Outs, b)
		return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}
	}
	switch meta := n.Meta.(type) {
	case *primtorch.TensorMeta:
		out = addOut(meta)
	case []any:
		for _, el := range meta {
			tm, ok := el.(*primtorch.TensorMeta)
			if el == nil || (ok && tm == nil) { // torch returns None there
				e.Outs = append(e.Outs, nil)
				out.tuple = append(out.tuple, &lowered{})
				continue
			}
			if !ok {
				return nil, lowerError(n, "extern results must be tensors or None; a tuple element is %T", el)
			}
			out.tuple = append(out.tuple, addOut(tm))
		}
	default:
		return nil, lowerError(n, "extern call with a %T result is not supported; its meta must be a tensor or a tuple of tensors", n.Meta)
	}
	if e.Primary() == nil {
		return nil, lowerError(n, "extern call with no tensor result")
	}
	return out, nil
}

func (l *lowerer) externArg(n *fxgraph.Node, a fxgraph.Arg) (ExternArg, error) {
	switch a := a.(type) {
	case *fxgraph.Node:
		lv := l.env[a]
		if lv == nil {
			return ExternArg{}, lowerError(n, "argument %%%s was not lowered", a.Name)
		}
		if lv.t != nil {
			l.cur = n
			return ExternArg{Buf: l.realizeAs(lv.t, extMeta(a, lv.t))}, nil
		}
		if lv.tuple != nil {
			var list []ExternArg
			for _, e := range lv.tuple {
				list = append(list, ExternArg{Buf: l.realize(e.t)})
			}
			return ExternArg{List: list, IsSeq: true, Tuple: true}, nil
		}
		return ExternArg{Value: lv.scalar, None: lv.scalar == nil}, nil
	case fxgraph.Const:
		return ExternArg{Value: a.V, None: a.V == nil}, nil
	case fxgraph.List, fxgraph.Tuple:
		var elems []fxgraph.Arg
		_, tuple := a.(fxgraph.Tuple)
		if tuple {
			elems = a.(fxgraph.Tuple).Elems
		} else {
			elems = a.(fxgraph.List).Elems
		}
		out := ExternArg{IsSeq: true, Tuple: tuple, List: []ExternArg{}}
		for _, e := range elems {
			ea, err := l.externArg(n, e)
			if err != nil {
				return ExternArg{}, err
			}
			out.List = append(out.List, ea)
		}
		return out, nil
	}
	return ExternArg{}, lowerError(n, "extern argument %T is not supported", a)
}

// extMeta is the layout an extern input gets: its node's meta.
func extMeta(n *fxgraph.Node, t *tensor) *primtorch.TensorMeta {
	if m := n.TensorMeta(); m != nil {
		return m
	}
	return primtorch.NewSymContiguous(t.dtype(), t.sizes, primtorch.CPU)
}
