package decomp

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// val is an operand of the builders: a *fxgraph.Node of the prims graph (a tensor) or a Go
// number (bool, int64, float64) meaning a 0-d value of the op's dtype.
type val = any

// asNode returns a tensor operand's node; a number is a decomposition bug here.
func asNode(v val) *fxgraph.Node {
	n, ok := v.(*fxgraph.Node)
	if !ok {
		bug("expected a tensor, got %T %v", v, v)
	}
	return n
}

// metaOf is a tensor operand's meta, nil for a number.
func metaOf(v val) *primtorch.TensorMeta {
	if n, ok := v.(*fxgraph.Node); ok {
		return n.TensorMeta()
	}
	return nil
}

// requiresGrad says whether operand v is a tensor that requires grad.
func requiresGrad(v val) bool {
	m := metaOf(v)
	return m != nil && m.RequiresGrad
}

// dtypeOf is an operand's dtype (a number's: bool, int64 or the default float dtype).
func dtypeOf(v val) primtorch.DType {
	if m := metaOf(v); m != nil {
		return m.DType
	}
	return primtorch.ResultType(v)
}

// toArg converts a builder argument to a graph argument and the value meta functions see.
func toArg(x any) (fxgraph.Arg, primtorch.Value) {
	switch v := x.(type) {
	case *fxgraph.Node:
		return v, v.Meta
	case nil:
		return fxgraph.Const{V: nil}, nil
	case bool, int64, float64, string, primtorch.DType, primtorch.SymFloat:
		return fxgraph.Const{V: v}, v
	case int:
		return fxgraph.Const{V: int64(v)}, int64(v)
	case primtorch.SymInt:
		sv := primtorch.SymValue(v)
		return fxgraph.Const{V: sv}, sv
	case []primtorch.SymInt:
		elems := make([]fxgraph.Arg, len(v))
		vals := make([]primtorch.Value, len(v))
		for i, e := range v {
			vals[i] = primtorch.SymValue(e)
			elems[i] = fxgraph.Const{V: vals[i]}
		}
		return fxgraph.List{Elems: elems}, vals
	case []int64:
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

// emit appends a call of target (a prims target, or operator.getitem of a tuple-valued
// fallback) with the meta its meta function computes; an invalid call is a decomposition bug.
func (d *decomposer) emit(target string, args []any, kwargs []fxgraph.Kwarg) *fxgraph.Node {
	if n := d.substituteComputed(target, args); n != nil {
		return n
	}
	fargs := make([]fxgraph.Arg, len(args))
	vals := make([]primtorch.Value, len(args))
	for i, a := range args {
		fargs[i], vals[i] = toArg(a)
	}
	op := primtorch.Lookup(target)
	if op == nil || !op.IsPrim() {
		bug("emit of %s, which is not a core op", target)
	}
	meta, err := op.Meta(vals, nil)
	if err != nil {
		bug("%s(%s): %v", target, describeArgs(vals), err)
	}
	m, ok := meta.(*primtorch.TensorMeta)
	if !ok {
		bug("%s gave a %T meta", target, meta)
	}
	d.setRequiresGrad(m, args)
	n := d.g.AddCall(target, fargs, kwargs, m)
	n.Where = d.cur.Where
	if op.Kind == primtorch.KindView {
		d.viewSrc[n] = asNode(args[0])
	}
	return n
}

// setRequiresGrad: a new node requires grad when the torch-level result does, it is floating
// point, and one of its tensor inputs requires grad.
func (d *decomposer) setRequiresGrad(m *primtorch.TensorMeta, args []any) {
	m.RequiresGrad = false
	if !d.rg || !m.DType.IsFloatingPoint() {
		return
	}
	var walk func(x any) bool
	walk = func(x any) bool {
		switch v := x.(type) {
		case *fxgraph.Node:
			tm := v.TensorMeta()
			return tm != nil && tm.RequiresGrad
		case []*fxgraph.Node:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	for _, a := range args {
		if walk(a) {
			m.RequiresGrad = true
			return
		}
	}
}

func describeArgs(vals []primtorch.Value) string {
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

// substituteComputed replaces the computed floats (pyfloat.go) among a prim's arguments by
// their tensors, in the dtype and shape of the prim's first tensor operand; for prims.full of
// one it returns the tensor itself, broadcast (nil otherwise).
func (d *decomposer) substituteComputed(target string, args []any) *fxgraph.Node {
	var ref *primtorch.TensorMeta
	any := false
	for _, a := range args {
		if m := metaOf(a); m != nil && ref == nil {
			ref = m
		}
		if f, ok := a.(primtorch.SymFloat); ok && f.IsComputed() {
			any = true
		}
	}
	if !any {
		return nil
	}
	if target == "prims.full" && len(args) == 3 {
		dt, _ := args[2].(primtorch.DType)
		v := d.computedOperand(args[1], nil)
		return asNode(d.prim("clone", d.expand(d.convert(v, dt), args[0])))
	}
	if ref == nil {
		bug("%s of a computed float with no tensor operand", target)
	}
	for i, a := range args {
		if v := d.computedOperand(a, ref); v != nil {
			args[i] = v
		}
	}
	return nil
}

// prim emits prims.<name>(args...).
func (d *decomposer) prim(name string, args ...any) *fxgraph.Node {
	return d.emit("prims."+name, args, nil)
}

// un applies a unary prim.
func (d *decomposer) un(name string, x val) val { return d.prim(name, x) }

// bin applies a binary prim (operands already of one dtype and shape).
func (d *decomposer) bin(name string, x, y val) val {
	if metaOf(x) == nil && metaOf(y) == nil {
		bug("prims.%s of two numbers (%v, %v)", name, x, y)
	}
	return d.prim(name, x, y)
}

// scalarAs converts a Go number to the Python number a prim of dtype dt reads.
func scalarAs(v val, dt primtorch.DType) val {
	var f float64
	var i int64
	switch x := v.(type) {
	case bool:
		if x {
			f, i = 1, 1
		}
	case int64:
		f, i = float64(x), x
	case float64:
		f, i = x, int64(x)
	case int:
		f, i = float64(x), int64(x)
	case primtorch.SymInt:
		if k, c := x.IsConst(); c {
			return scalarAs(k, dt)
		}
		if dt == primtorch.Bool {
			// an int symbol (an int argument, an .item() passed on after a graph break)
			// written into a bool tensor: its truth, decided at the hint and guarded (fuzz
			// seed 42816: v[0] = s with v bool)
			return !x.EqualHint(primtorch.SymConst(0))
		}
		return x // a size: a Python int, which prims take for any numeric dtype
	case primtorch.SymFloat:
		if dt.IsFloatingPoint() {
			return x // a float argument: the kernel converts it to dt when it runs
		}
		return scalarAs(x.Specialize("a float argument converted to "+dt.String()), dt)
	default:
		bug("scalarAs of %T", v)
	}
	switch {
	case dt == primtorch.Bool:
		return f != 0
	case dt.IsFloatingPoint():
		return f
	}
	return i
}

// convert casts an operand to dt (a no-op when it has that dtype).
func (d *decomposer) convert(x val, dt primtorch.DType) val {
	m := metaOf(x)
	if m == nil {
		return scalarAs(x, dt)
	}
	if m.DType == dt {
		return x
	}
	return d.prim("convert_element_type", x, dt)
}

// expand broadcasts a tensor operand to shape (numbers stay numbers).
func (d *decomposer) expand(x val, sizes any) val {
	shape := toSyms(sizes)
	m := metaOf(x)
	if m == nil || sameSyms(m.SymSizes(), shape) {
		return x
	}
	return d.prim("expand", x, append([]sym{}, shape...))
}

// materialize returns x as a tensor of shape and dtype dt: numbers become prims.full.
func (d *decomposer) materialize(x val, sizes any, dt primtorch.DType) *fxgraph.Node {
	shape := toSyms(sizes)
	if metaOf(x) == nil {
		return d.prim("full", append([]sym{}, shape...), scalarAs(x, dt), dt)
	}
	return asNode(d.expand(d.convert(x, dt), shape))
}

// view views a tensor as shape (a no-op when it has that shape).
func (d *decomposer) view(x val, sizes any) val {
	shape := toSyms(sizes)
	if sameSyms(metaOf(x).SymSizes(), shape) {
		return x
	}
	return d.prim("view", x, append([]sym{}, shape...))
}

// viewable reports whether x can be viewed as shape without a copy.
func viewable(x val, sizes any) bool {
	shape := toSyms(sizes)
	m := metaOf(x)
	vals := make([]primtorch.Value, len(shape))
	for i, s := range shape {
		vals[i] = primtorch.SymValue(s)
	}
	_, err := primtorch.OpPrimView.Op().Meta([]primtorch.Value{m, vals}, nil)
	return err == nil
}

// reshape is torch's reshape: a view when x is viewable as shape, else a contiguous clone
// viewed.
func (d *decomposer) reshape(x val, sizes any) *fxgraph.Node {
	shape := toSyms(sizes)
	if sameSyms(metaOf(x).SymSizes(), shape) {
		return asNode(x)
	}
	if !viewable(x, shape) {
		x = d.prim("clone", x)
	}
	return d.prim("view", x, append([]sym{}, shape...))
}

func (d *decomposer) permute(x val, dims []int64) val {
	id := true
	for i, p := range dims {
		id = id && p == int64(i)
	}
	if id {
		return x
	}
	return d.prim("permute", x, append([]int64{}, dims...))
}

// transpose swaps two dims.
func (d *decomposer) transpose(x val, a, b int) val {
	nd := len(metaOf(x).Shape)
	perm := make([]int64, nd)
	for i := range perm {
		perm[i] = int64(i)
	}
	perm[a], perm[b] = perm[b], perm[a]
	return d.permute(x, perm)
}

func (d *decomposer) unsqueeze(x val, dim int) val { return d.prim("unsqueeze", x, int64(dim)) }

func (d *decomposer) squeeze(x val, dims ...int) val {
	if len(dims) == 0 {
		return x
	}
	ds := make([]int64, len(dims))
	for i, k := range dims {
		ds[i] = int64(k)
	}
	return d.prim("squeeze", x, ds)
}

// slice takes [start, end) with step along dim (a no-op for the whole dim).
func (d *decomposer) slice(x val, dim int, from, to any, step int64) val {
	start, end := toSym(from), toSym(to)
	size := metaOf(x).SymSizes()[dim]
	if k, c := start.IsConst(); c && k == 0 && sameSyms([]sym{end}, []sym{size}) && step == 1 {
		return x
	}
	return d.prim("slice", x, int64(dim), start, end, step)
}

func (d *decomposer) selectDim(x val, dim int, index any) val {
	return d.prim("select", x, int64(dim), toSym(index))
}

// reduce applies a reduction prim over dims (sorted, non-negative).
func (d *decomposer) reduce(name string, x val, dims []int, keepdim bool) val {
	ds := make([]int64, len(dims))
	for i, k := range dims {
		ds[i] = int64(k)
	}
	if len(ds) == 0 && len(metaOf(x).Shape) > 0 {
		// prims read [] as every dim; reducing no dim is the identity.
		return x
	}
	return d.prim(name, x, ds, keepdim)
}

func (d *decomposer) full(sizes any, v val, dt primtorch.DType) *fxgraph.Node {
	return d.prim("full", toSyms(sizes), scalarAs(v, dt), dt)
}

func (d *decomposer) iota(length any, start, step val, dt primtorch.DType) *fxgraph.Node {
	return d.prim("iota", toSym(length), scalarAs(start, dt), scalarAs(step, dt), dt)
}

// Symbolic sizes: a decomposition reads sizes as SymInts (m.SymSizes(), constants for a static
// tensor) and passes them to the builders, which emit them as sym(...) constants, so a graph
// with size symbols decomposes without baking their values in.

type sym = primtorch.SymInt

// toSyms reads a size list builders take: []SymInt, or []int64 (constant sizes: those of a call
// whose arguments were specialised, or sizes that do not depend on the input's).
func toSyms(v any) []sym {
	switch x := v.(type) {
	case []sym:
		return append([]sym{}, x...)
	case []int64:
		return syms(x...)
	case nil:
		return []sym{}
	}
	bug("a size list of type %T", v)
	return nil
}

// toSym reads one size a builder takes: a SymInt or an int64.
func toSym(v any) sym {
	switch x := v.(type) {
	case sym:
		return x
	case int64:
		return primtorch.SymConst(x)
	case int:
		return primtorch.SymConst(int64(x))
	}
	bug("a size of type %T", v)
	return sym{}
}

// syms is a list of constant sizes.
func syms(xs ...int64) []sym {
	out := make([]sym, len(xs))
	for i, x := range xs {
		out[i] = primtorch.SymConst(x)
	}
	return out
}

// sizesOf is a tensor operand's sizes.
func sizesOf(x val) []sym { return metaOf(x).SymSizes() }

// sameSyms reports whether two size lists are the same polynomials, a specialised symbol
// counting as its value (no guard).
func sameSyms(a, b []sym) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) && !(a[i].Hint() == b[i].Hint() && specialized(a[i]) && specialized(b[i])) {
			return false
		}
	}
	return true
}

// specialized reports whether every symbol s mentions is specialised to its hint.
func specialized(s sym) bool {
	for _, id := range s.Symbols() {
		if !s.Env().IsSpecialized(id) {
			return false
		}
	}
	return true
}

// prodSyms is the product of sizes.
func prodSyms(xs []sym) sym {
	p := primtorch.SymConst(1)
	for _, x := range xs {
		p = p.Mul(x)
	}
	return p
}

// numelOf is a tensor operand's element count.
func numelOf(x val) sym { return metaOf(x).SymNumel() }

// symNumber is a size as a Python number operand: an int64 when constant, else the SymInt.
func symNumber(s sym) val {
	if k, c := s.IsConst(); c {
		return k
	}
	return s
}

// allDims is [0, nd).
func allDims(nd int) []int {
	out := make([]int, nd)
	for i := range out {
		out[i] = i
	}
	return out
}

// sizeFloat is the Python float num / den of two sizes (torch computes it in float64: the
// running variance's n / (n - 1), label smoothing's eps / classes): a number when both are
// constants, else a 0-d float64 tensor of prims.full([], sym(...)) values, so no hint is baked
// in. scale multiplies the numerator (eps).
func (d *decomposer) sizeFloat(scale float64, num, den sym) val {
	kn, cn := num.IsConst()
	kd, cd := den.IsConst()
	if cn && cd {
		return scale * float64(kn) / float64(kd)
	}
	n := d.full([]sym{}, num, primtorch.Float64)
	var r val = n
	if scale != 1 {
		r = d.mul(n, scale)
	}
	return d.div(r, d.full([]sym{}, den, primtorch.Float64))
}

// operandLike makes a number or 0-d tensor f an operand of x's arithmetic: converted to x's
// dtype and broadcast to its shape (a number stays a number).
func (d *decomposer) operandLike(f val, x val) val {
	if metaOf(f) == nil {
		return f
	}
	m := metaOf(x)
	return d.expand(d.convert(f, m.DType), m.SymSizes())
}
