package aotautograd

import (
	"fmt"
	"slices"
	"strings"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// builder emits prims calls into a graph, each with the meta its meta function computes (an
// invalid call is a bug of a derivative formula: it panics with bugError). Operands are
// *fxgraph.Node tensors or Go numbers (bool, int64, float64) meaning 0-d values of the op's
// dtype, as the prims contract says.
type builder struct {
	g   *fxgraph.Graph
	loc string // the source line new nodes get (the forward node being differentiated)
	// seen maps a call's key (target and arguments) to the node computing it: emit reuses it
	// (common subexpressions of the formulas, forward values the backward needs again).
	seen map[string]*fxgraph.Node
}

// callKey identifies a call by its target and arguments (nodes by name, constants with their
// Go types).
func callKey(target string, args []fxgraph.Arg) string {
	var b strings.Builder
	b.WriteString(target)
	var write func(a fxgraph.Arg)
	write = func(a fxgraph.Arg) {
		switch v := a.(type) {
		case *fxgraph.Node:
			b.WriteString("%" + v.Name)
		case fxgraph.Const:
			fmt.Fprintf(&b, "%T:%v", v.V, v.V)
		case fxgraph.List:
			b.WriteByte('[')
			for _, e := range v.Elems {
				write(e)
				b.WriteByte(',')
			}
			b.WriteByte(']')
		case fxgraph.Tuple:
			b.WriteByte('(')
			for _, e := range v.Elems {
				write(e)
				b.WriteByte(',')
			}
			b.WriteByte(')')
		default:
			fmt.Fprintf(&b, "?%T", a)
		}
	}
	b.WriteByte('(')
	for _, a := range args {
		write(a)
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// remember makes emit reuse n for later calls computing the same (a prims call without
// keyword arguments).
func (b *builder) remember(n *fxgraph.Node) {
	if n.Op != fxgraph.CallFunction || len(n.Kwargs) > 0 || n.Target == "prims.fallback" || n.Target == "prims.copy_" {
		return
	}
	if b.seen == nil {
		b.seen = map[string]*fxgraph.Node{}
	}
	if k := callKey(n.Target, n.Args); b.seen[k] == nil {
		b.seen[k] = n
	}
}

// toArg converts a builder argument to a graph argument and the value meta functions see.
func toArg(x any) (fxgraph.Arg, primtorch.Value) {
	switch v := x.(type) {
	case *fxgraph.Node:
		if v == nil {
			return fxgraph.Const{V: nil}, nil
		}
		return v, v.Meta
	case nil:
		return fxgraph.Const{V: nil}, nil
	case bool, int64, float64, string, primtorch.DType, primtorch.SymFloat:
		return fxgraph.Const{V: v}, v
	case primtorch.SymInt:
		sv := primtorch.SymValue(v)
		return fxgraph.Const{V: sv}, sv
	case []primtorch.SymInt:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			elems[i], vals[i] = toArg(e)
		}
		return fxgraph.List{Elems: elems}, vals
	case int:
		return fxgraph.Const{V: int64(v)}, int64(v)
	case []int64:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			elems[i], vals[i] = fxgraph.Const{V: e}, e
		}
		return fxgraph.List{Elems: elems}, vals
	case []bool:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			elems[i], vals[i] = fxgraph.Const{V: e}, e
		}
		return fxgraph.List{Elems: elems}, vals
	case []*fxgraph.Node:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			elems[i], vals[i] = toArg(e)
		}
		return fxgraph.List{Elems: elems}, vals
	case []any:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			elems[i], vals[i] = toArg(e)
		}
		return fxgraph.List{Elems: elems}, vals
	case fxgraph.Const:
		return v, v.V
	case fxgraph.List:
		vals := make([]primtorch.Value, len(v.Elems))
		for i, e := range v.Elems {
			_, vals[i] = toArg(e)
		}
		return v, vals
	case fxgraph.Tuple:
		vals := make(primtorch.Tuple, len(v.Elems))
		for i, e := range v.Elems {
			_, vals[i] = toArg(e)
		}
		return v, vals
	}
	bug("builder argument of type %T", x)
	return nil, nil
}

// metaOf computes an emitted call's meta: the registry's meta function (tests of symbolic
// splits substitute symbolic metas for ops whose registry rows are not symbolic yet).
var metaOf = func(op *primtorch.Op, vals []primtorch.Value) (primtorch.Value, error) {
	return op.Meta(vals, nil)
}

// emit appends prims.<name>(args...) with its meta (requires_grad off: backward values are
// computed without grad).
func (b *builder) emit(name string, args ...any) *fxgraph.Node {
	return b.emitCall(name, true, args)
}

// fresh emits a new node even where an equal one exists (one that must be a tensor of its own),
// and does not offer it for reuse.
func (b *builder) fresh(name string, args ...any) *fxgraph.Node {
	return b.emitCall(name, false, args)
}

func (b *builder) emitCall(name string, reuse bool, args []any) *fxgraph.Node {
	target := "prims." + name
	fargs := make([]fxgraph.Arg, len(args))
	vals := make([]primtorch.Value, len(args))
	for i, a := range args {
		fargs[i], vals[i] = toArg(a)
	}
	op := primtorch.Lookup(target)
	if op == nil || !op.IsPrim() {
		bug("emit of %s, which is not a core op", target)
	}
	if n := b.seen[callKey(target, fargs)]; reuse && n != nil {
		return n
	}
	meta, err := metaOf(op, vals)
	if err != nil {
		bug("%s(%s): %v", target, describe(vals), err)
	}
	m, ok := meta.(*primtorch.TensorMeta)
	if !ok {
		bug("%s gave a %T meta", target, meta)
	}
	m.RequiresGrad = false
	n := b.g.AddCall(target, fargs, nil, m)
	n.Where = b.loc
	if reuse {
		b.remember(n)
	}
	return n
}

func describe(vals []primtorch.Value) string {
	s := ""
	for i, v := range vals {
		if i > 0 {
			s += ", "
		}
		if m, ok := v.(*primtorch.TensorMeta); ok {
			s += m.String()
			continue
		}
		s += fmt.Sprint(v)
	}
	return s
}

// meta is a tensor operand's meta, nil for a number.
func meta(v any) *primtorch.TensorMeta {
	if n, ok := v.(*fxgraph.Node); ok && n != nil {
		return n.TensorMeta()
	}
	return nil
}

// num is the Go number a prim of dtype dt reads for the value f.
func num(f float64, dt primtorch.DType) any {
	switch {
	case dt == primtorch.Bool:
		return f != 0
	case dt.IsFloatingPoint():
		return f
	}
	return int64(f)
}

func (b *builder) neg(x *fxgraph.Node) *fxgraph.Node { return b.emit("neg", x) }
func (b *builder) add(x, y any) *fxgraph.Node        { return b.emit("add", x, y) }
func (b *builder) sub(x, y any) *fxgraph.Node        { return b.emit("sub", x, y) }
func (b *builder) mul(x, y any) *fxgraph.Node        { return b.emit("mul", x, y) }
func (b *builder) div(x, y any) *fxgraph.Node        { return b.emit("div", x, y) }
func (b *builder) where(c, x, y any) *fxgraph.Node   { return b.emit("where", c, x, y) }

// full is a new tensor of shape and dtype dt filled with f.
func (b *builder) full(shape []primtorch.SymInt, f float64, dt primtorch.DType) *fxgraph.Node {
	return b.emit("full", slices.Clone(shape), num(f, dt), dt)
}

// zerosLike is a zero tensor of m's shape and dtype.
func (b *builder) zerosLike(m *primtorch.TensorMeta) *fxgraph.Node {
	return b.full(m.SymSizes(), 0, m.DType)
}

// convert casts x to dt (x itself when it has that dtype).
func (b *builder) convert(x *fxgraph.Node, dt primtorch.DType) *fxgraph.Node {
	if meta(x).DType == dt {
		return x
	}
	return b.emit("convert_element_type", x, dt)
}

// expand broadcasts x to shape (x itself when it has that shape).
func (b *builder) expand(x *fxgraph.Node, shape []primtorch.SymInt) *fxgraph.Node {
	if sameSizes(symSizes(x), shape) {
		return x
	}
	return b.emit("expand", x, slices.Clone(shape))
}

// reshape is torch's reshape: a view when x is viewable as shape, else a contiguous clone
// viewed. With symbolic sizes, x must be viewable at every size: a contiguous x is, otherwise
// view's meta function decides when it is symbolic, and x is cloned when it is not.
func (b *builder) reshape(x *fxgraph.Node, shape []primtorch.SymInt) *fxgraph.Node {
	if shape == nil {
		shape = []primtorch.SymInt{}
	}
	m := meta(x)
	if sameSizes(m.SymSizes(), shape) {
		return x
	}
	_, sv := toArg(shape)
	view := primtorch.OpPrimView.Op()
	switch {
	case !primtorch.HasSymbols(m) && !primtorch.HasSymbols(sv):
		if _, err := view.Meta([]primtorch.Value{m, sv}, nil); err != nil {
			x = b.emit("clone", x)
		}
	case symContiguous(m):
	case view.Symbolic:
		if _, err := view.Meta([]primtorch.Value{m, sv}, nil); err != nil {
			x = b.emit("clone", x)
		}
	default:
		x = b.emit("clone", x)
	}
	return b.emit("view", x, slices.Clone(shape))
}

// permute permutes x's dims (x itself for the identity); a permute of a permute is one
// permute of the first's input (the transpose of a transposed weight is the weight).
func (b *builder) permute(x *fxgraph.Node, dims []int64) *fxgraph.Node {
	if x.Op == fxgraph.CallFunction && x.Target == "prims.permute" {
		if l, ok := x.Args[1].(fxgraph.List); ok && len(l.Elems) == len(dims) {
			inner := make([]int64, len(dims))
			for i, e := range l.Elems {
				inner[i] = e.(fxgraph.Const).V.(int64)
			}
			composed := make([]int64, len(dims))
			for i, d := range dims {
				composed[i] = inner[d]
			}
			return b.permute(x.Args[0].(*fxgraph.Node), composed)
		}
	}
	id := true
	for i, p := range dims {
		id = id && p == int64(i)
	}
	if id {
		return x
	}
	return b.emit("permute", x, slices.Clone(dims))
}

// transpose swaps dims a and b.
func (b *builder) transpose(x *fxgraph.Node, d0, d1 int) *fxgraph.Node {
	perm := identityPerm(meta(x).Dim())
	perm[d0], perm[d1] = perm[d1], perm[d0]
	return b.permute(x, perm)
}

func identityPerm(n int) []int64 {
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(i)
	}
	return p
}

// invertPerm returns the permutation undoing p.
func invertPerm(p []int64) []int64 {
	inv := make([]int64, len(p))
	for i, d := range p {
		inv[d] = int64(i)
	}
	return inv
}

func (b *builder) unsqueeze(x *fxgraph.Node, dim int64) *fxgraph.Node {
	return b.emit("unsqueeze", x, dim)
}

// sum reduces x over dims (sorted, non-negative); no dims is x itself (prims read [] as every
// dim).
func (b *builder) sum(x *fxgraph.Node, dims []int64, keepdim bool) *fxgraph.Node {
	if len(dims) == 0 {
		return x
	}
	return b.emit("sum", x, slices.Clone(dims), keepdim)
}

// sumTo reduces g, of a shape shape broadcasts to, to shape: leading dims summed away, dims
// where shape has size 1 summed keeping them (the gradient of a broadcast).
func (b *builder) sumTo(g *fxgraph.Node, shape []primtorch.SymInt) *fxgraph.Node {
	gs := symSizes(g)
	if sameSizes(gs, shape) {
		return g
	}
	lead := len(gs) - len(shape)
	if lead < 0 {
		bug("sumTo: gradient of shape %v for a tensor of shape %v", gs, shape)
	}
	var dims []int64
	for i := range gs {
		if i < lead || (isOne(shape[i-lead]) && !isOne(gs[i])) {
			dims = append(dims, int64(i))
		}
	}
	r := b.sum(g, dims, true)
	return b.reshape(r, shape)
}

// iota is [start, start+step, ...) of length n in int64.
func (b *builder) iota(n, start primtorch.SymInt, step int64) *fxgraph.Node {
	return b.emit("iota", n, start, step, primtorch.Int64)
}

// flip reverses x along dim (an index_select with a descending iota).
func (b *builder) flip(x *fxgraph.Node, dim int) *fxgraph.Node {
	n := symSizes(x)[dim]
	if isZero(n) || isOne(n) {
		return x
	}
	return b.emit("index_select", x, int64(dim), b.iota(n, n.AddConst(-1), -1))
}

// normDims returns dims of a reduction over a rank-nd tensor, sorted and non-negative; []
// means every dim.
func normDims(dims []int64, nd int) []int64 {
	if nd == 0 {
		return nil // dim 0 (or -1) of a 0-d tensor is the tensor itself: nothing is reduced
	}
	if len(dims) == 0 {
		return identityPerm(nd)
	}
	out := make([]int64, len(dims))
	for i, d := range dims {
		if d < 0 {
			d += int64(nd)
		}
		out[i] = d
	}
	slices.Sort(out)
	return out
}

// bytesOf is the size of a node's value in bytes (tensors; tuples sum their tensors). With
// symbolic sizes it is the size at the hints: the partition's capacities weigh the trace's
// sizes (any cut is right at every size; only its cost is the hints').
func bytesOf(v any) int64 {
	switch m := v.(type) {
	case *primtorch.TensorMeta:
		return m.Numel() * int64(m.DType.ItemSize())
	case []any:
		var s int64
		for _, e := range m {
			s += bytesOf(e)
		}
		return s
	}
	return 0
}
