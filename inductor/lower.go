package inductor

import (
	"errors"
	"fmt"
	"slices"

	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Lower turns a prims graph (see doc.go for the contract) into the loop IR. Every call node
// becomes a buffer (Pointwise, Reduction, Scan or Extern) or a view, which is folded into the
// index of the loads that read it; nothing is fused yet (Inline and Fuse do that). A target
// with no row in the lowerings table (lowerings.go) becomes an Extern that calls the op, logged
// on logs.PerfHints.
func Lower(g *fxgraph.Graph) (ir *Graph, err error) {
	defer recoverSym(g.Name, &err)
	g = specializeSymbols(g)
	l := &lowerer{fx: g, g: NewGraph(g.Name), env: map[*fxgraph.Node]*lowered{}}
	for _, n := range g.Placeholders() {
		if f, ok := n.Meta.(primtorch.SymFloat); ok {
			if l.g.floatArg == nil {
				l.g.floatArg = map[int]int{}
			}
			l.g.floatArg[f.ID] = l.g.FloatInputs
			l.g.FloatInputs++
		}
	}
	if IsSymbolic(g) {
		if err := l.symbolic(); err != nil {
			return nil, err
		}
	} else {
		// int placeholders whose symbols were all specialised (a torch.fx graph's SymInt input
		// that ptgo specialised under a guard): the caller still passes them
		for _, n := range g.Placeholders() {
			switch n.Meta.(type) {
			case primtorch.SymInt, int64:
				l.g.IntInputs++
			}
		}
	}
	for _, n := range g.Nodes {
		if err := l.node(n); err != nil {
			return nil, err
		}
	}
	return l.g, nil
}

// lowerError is an error about one node: what failed, where, and (in the message) what to do.
func lowerError(n *fxgraph.Node, format string, args ...any) error {
	where := ""
	if n.Where != "" {
		where = " at " + n.Where
	}
	return fmt.Errorf("inductor: lowering %%%s = %s(...)%s: %s", n.Name, n.Target, where, fmt.Sprintf(format, args...))
}

// errNoLowering makes a node an extern call instead of failing the compile.
var errNoLowering = errors.New("no lowering")

type lowerer struct {
	fx  *fxgraph.Graph
	g   *Graph
	env map[*fxgraph.Node]*lowered
	// cur is the node being lowered: buffers created for it record it as their origin.
	cur *fxgraph.Node
}

// lowered is what a graph node lowered to: a tensor, a tuple of them, or a Python scalar.
type lowered struct {
	t      *tensor
	tuple  []*lowered
	scalar any
}

// tensor is a tensor during lowering: buffer buf read through an index map. idx gives buf's
// logical index in terms of variables 0..len(sizes)-1; nil means the identity (a buffer read
// as it is).
type tensor struct {
	buf   *Buffer
	sizes []Sym
	idx   []Expr
}

func (t *tensor) dtype() primtorch.DType { return t.buf.DType }

// at returns buf's logical index for the view index at (expressions in a consumer's variables,
// whose ranges are b). A dim of size 1 reads index 0 — unless the index is indirect, whose
// range check must still run (x[tensor([2])] of a size-1 dim raises IndexError).
func (t *tensor) at(at []Expr, b Bounds) []Expr {
	if t.idx == nil {
		out := make([]Expr, len(at))
		for k := range at {
			if isOne(t.buf.Sizes[k]) && !at[k].hasInd() {
				out[k] = Expr{}
			} else {
				out[k] = at[k]
			}
		}
		return out
	}
	out := make([]Expr, len(t.idx))
	for k, e := range t.idx {
		out[k] = e.Subst(func(v int) Expr { return at[v] }, b, nil)
	}
	return out
}

// load reads t at the view index at.
func (l *lowerer) load(t *tensor, at []Expr, b Bounds) *Value {
	return l.g.vals.Load(t.buf, t.at(at, b))
}

// view returns t re-indexed: m gives t's view index in terms of the new view's variables (whose
// ranges are sizes).
func (t *tensor) view(sizes []Sym, m []Expr) *tensor {
	b := boundsOf(sizes)
	return &tensor{buf: t.buf, sizes: append([]Sym(nil), sizes...), idx: t.at(m, b)}
}

func (l *lowerer) node(n *fxgraph.Node) error {
	l.cur = n
	switch n.Op {
	case fxgraph.Placeholder:
		m := n.TensorMeta()
		if m == nil {
			l.env[n] = &lowered{scalar: n.Meta}
			return nil
		}
		if !supportedDType(m.DType) {
			return lowerError(n, "input dtype %s is not supported by the C backend; run this graph eagerly", m.DType)
		}
		b := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), &InputNode{Name: n.Name, Index: len(l.g.Inputs)})
		b.Origins = []string{n.Name}
		l.g.Inputs = append(l.g.Inputs, b)
		l.env[n] = &lowered{t: &tensor{buf: b, sizes: b.Sizes}}
		return nil
	case fxgraph.Output:
		return l.outputs(n)
	case fxgraph.CallFunction:
	default:
		return lowerError(n, "%s nodes are not part of a prims graph; lift parameters to placeholders and decompose methods first", n.Op)
	}
	if n.Target == "operator.getitem" {
		src, ok := n.Args[0].(*fxgraph.Node)
		k, ok2 := constInt(n.Args[1])
		if !ok || !ok2 || l.env[src] == nil || l.env[src].tuple == nil || k < 0 || int(k) >= len(l.env[src].tuple) {
			return lowerError(n, "operator.getitem must index a tuple-valued node with a constant")
		}
		l.env[n] = l.env[src].tuple[k]
		return nil
	}
	fn := lowerings[n.Target]
	var res *lowered
	var err error
	if fn == nil {
		err = errNoLowering
	} else if bad := l.unsupportedDType(n); bad != "" && n.Target != "prims.fallback" {
		// (a fallback is torch's call whatever its dtypes: complex results too)
		err = fmt.Errorf("%w: dtype %s", errNoLowering, bad)
	} else {
		res, err = fn(l, n)
	}
	if errors.Is(err, errNoLowering) {
		reason := "no lowering"
		if fn != nil {
			reason = err.Error()
		}
		logs.Printf(logs.PerfHints, "inductor: %s (node %%%s) runs as an extern call (%s); add a lowering in inductor/lowerings.go", n.Target, n.Name, reason)
		res, err = l.extern(n, n.Target, n.Args, n.Kwargs, "no lowering")
	}
	if err != nil {
		return err
	}
	if res != nil && fxgraph.CallEffects(n)&primtorch.EffectRaises != 0 {
		markRaises(res, n.Name)
	}
	l.env[n] = res
	return nil
}

// markRaises flags the buffers lowered for node name whose computation may raise (an index out
// of range): they are computed even when nothing reads them, as eager would.
func markRaises(r *lowered, name string) {
	if r.t != nil && slices.Contains(r.t.buf.Origins, name) && !r.t.buf.Raises {
		r.t.buf.Raises = true
		r.t.buf.raisesAt, r.t.buf.raisesLast = r.t.buf.index, r.t.buf.index
	}
	for _, e := range r.tuple {
		markRaises(e, name)
	}
}

// unsupportedDType names a dtype of n's inputs or result the C backend cannot compute with.
func (l *lowerer) unsupportedDType(n *fxgraph.Node) string {
	check := func(m any) string {
		if tm, ok := m.(*primtorch.TensorMeta); ok && tm != nil && !supportedDType(tm.DType) {
			return tm.DType.String()
		}
		return ""
	}
	if s := check(n.Meta); s != "" {
		return s
	}
	for _, in := range n.Inputs() {
		if s := check(in.Meta); s != "" {
			return s
		}
	}
	return ""
}

// outputs records the graph outputs: each returned tensor as a buffer with the layout of its
// node's meta (views of stored buffers become aliases).
func (l *lowerer) outputs(n *fxgraph.Node) error {
	var flat []fxgraph.Arg
	var walk func(a fxgraph.Arg) error
	walk = func(a fxgraph.Arg) error {
		switch a := a.(type) {
		case fxgraph.Tuple:
			for _, e := range a.Elems {
				if err := walk(e); err != nil {
					return err
				}
			}
		case fxgraph.List:
			for _, e := range a.Elems {
				if err := walk(e); err != nil {
					return err
				}
			}
		case *fxgraph.Node, fxgraph.Const:
			flat = append(flat, a)
		default:
			return lowerError(n, "graph outputs must be tuples or lists of nodes and constants, got %T", a)
		}
		return nil
	}
	if len(n.Args) > 0 {
		if err := walk(n.Args[0]); err != nil {
			return err
		}
	}
	for _, a := range flat {
		switch a := a.(type) {
		case fxgraph.Const:
			l.g.Outputs = append(l.g.Outputs, Output{Const: a.V})
		case *fxgraph.Node:
			lv := l.env[a]
			if lv == nil || lv.t == nil {
				var v any
				if lv != nil {
					v = lv.scalar
				}
				l.g.Outputs = append(l.g.Outputs, Output{Const: v})
				continue
			}
			l.cur = a
			m := a.TensorMeta()
			b := l.realizeAs(lv.t, m)
			l.g.Outputs = append(l.g.Outputs, Output{Buf: b})
		}
	}
	return nil
}

// realize returns a buffer holding t: t's buffer when t is not a view, an alias of its storage
// when the view is strided, else a contiguous copy.
func (l *lowerer) realize(t *tensor) *Buffer {
	if t.idx == nil {
		return t.buf
	}
	if lay, ok := stridedLayout(t); ok {
		return l.alias(t.buf, t.sizes, lay)
	}
	logs.Printf(logs.PerfHints, "inductor: a view of %s (node %%%s) is not strided over its storage; copying it", t.buf.Name, l.cur.Name)
	return l.copyTo(t, contiguousLayout(t.sizes))
}

// realizeAs is realize with the layout of meta m (a graph output or extern input must have the
// strides torch gives it): a view whose strides differ is copied into m's layout.
func (l *lowerer) realizeAs(t *tensor, m *primtorch.TensorMeta) *Buffer {
	want := layoutOf(m)
	if t.idx == nil {
		if sameLayout(t.sizes, t.buf.Layout, want, true) {
			return t.buf
		}
	} else if lay, ok := stridedLayout(t); ok && sameLayout(t.sizes, lay, want, false) {
		// a size-1 dim's stride addresses nothing: it is the one torch gives (a narrow of a
		// [1, 4] tensor with strides (1, 1) keeps them: fuzz seed 36717)
		st := append([]Sym{}, lay.Strides...)
		for k, s := range t.sizes {
			if c, ok := s.IsConst(); ok && c == 1 {
				st[k] = want.Strides[k]
			}
		}
		return l.alias(t.buf, t.sizes, Layout{Strides: st, Offset: lay.Offset})
	}
	if _, isInput := t.buf.Def.(*InputNode); !isInput || t.idx != nil {
		logs.Printf(logs.PerfHints, "inductor: %%%s needs layout %s but is computed as a view of %s; copying it", l.cur.Name, typeText(m.DType, metaSizes(m), want), t.buf.Name)
	}
	want.Offset = symc(0)
	return l.copyTo(t, want)
}

// sameLayout compares strides of dims with more than one element (and offsets when
// checkOffset).
func sameLayout(sizes []Sym, a, b Layout, checkOffset bool) bool {
	if len(a.Strides) != len(sizes) || len(b.Strides) != len(sizes) {
		return false
	}
	for k, s := range sizes {
		if c, ok := s.IsConst(); (!ok || c > 1) && !a.Strides[k].Equal(b.Strides[k]) {
			return false
		}
	}
	return !checkOffset || a.Offset.Equal(b.Offset)
}

// stridedLayout returns the layout of a view over its buffer's storage when the storage index is
// affine in the view's variables.
func stridedLayout(t *tensor) (Layout, bool) {
	flat := flatten(t.at(indexVars(t.sizes, 0), boundsOf(t.sizes)), t.buf.Layout.Strides, t.buf.Layout.Offset, boundsOf(t.sizes))
	if !flat.Affine() || !nonNegative(flat.SymConst()) {
		return Layout{}, false
	}
	lay := Layout{Strides: make([]Sym, len(t.sizes)), Offset: flat.SymConst()}
	for k := range t.sizes {
		lay.Strides[k] = flat.SymCoef(k)
		if !nonNegative(lay.Strides[k]) {
			return Layout{}, false
		}
	}
	// size-1 dims: any stride; give the contiguous one as torch usually does
	for k, s := range t.sizes {
		if isOne(s) {
			lay.Strides[k] = primtorch.SymContiguousStrides(t.sizes)[k]
		}
	}
	return lay, true
}

// alias makes a buffer viewing base's storage with the given sizes and layout.
func (l *lowerer) alias(base *Buffer, sizes []Sym, lay Layout) *Buffer {
	root := base.Storage()
	of := base // the value viewed: the latest write into root's storage it stands for
	for {
		a, ok := of.Def.(*AliasNode)
		if !ok {
			break
		}
		if a.Of != nil {
			of = a.Of
		} else {
			of = a.Base
		}
	}
	if of == root {
		of = nil
	}
	b := l.g.addBuffer(base.DType, sizes, lay, &AliasNode{Base: root, Of: of})
	l.origin(b)
	return b
}

// copyTo materializes t into a new buffer with layout lay.
func (l *lowerer) copyTo(t *tensor, lay Layout) *Buffer {
	b := boundsOf(t.sizes)
	body := l.load(t, indexVars(t.sizes, 0), b)
	out := l.g.addBuffer(t.dtype(), t.sizes, lay, &Pointwise{Ranges: append([]Sym(nil), t.sizes...), Body: body})
	l.origin(out)
	return out
}

func (l *lowerer) origin(b *Buffer) {
	if l.cur != nil {
		b.Origins = []string{l.cur.Name}
		b.Targets = []string{l.cur.Target}
	}
}

// newPointwise adds a pointwise buffer with the layout of meta m.
func (l *lowerer) newPointwise(m *primtorch.TensorMeta, body *Value) *lowered {
	b := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), &Pointwise{Ranges: metaSizes(m), Body: body})
	l.origin(b)
	return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}
}

// tensorArg returns the tensor an argument names, or nil for a constant.
func (l *lowerer) tensorArg(a fxgraph.Arg) *tensor {
	if n, ok := a.(*fxgraph.Node); ok {
		if lv := l.env[n]; lv != nil {
			return lv.t
		}
	}
	return nil
}

// scalarArg returns the Python scalar an argument holds (a constant, or a node with a scalar
// meta).
func (l *lowerer) scalarArg(a fxgraph.Arg) (any, bool) {
	switch a := a.(type) {
	case fxgraph.Const:
		switch a.V.(type) {
		case int64, float64, bool:
			return a.V, true
		}
	case *fxgraph.Node:
		if lv := l.env[a]; lv != nil && lv.t == nil && lv.tuple == nil {
			switch lv.scalar.(type) {
			case int64, float64, bool:
				return lv.scalar, true
			}
		}
	}
	return nil, false
}

// arg returns positional argument pos or keyword name of n (nil when absent).
func arg(n *fxgraph.Node, pos int, name string) fxgraph.Arg {
	if pos < len(n.Args) {
		return n.Args[pos]
	}
	for _, kw := range n.Kwargs {
		if kw.Name == name {
			return kw.Value
		}
	}
	return nil
}

func constInt(a fxgraph.Arg) (int64, bool) {
	c, ok := a.(fxgraph.Const)
	if !ok {
		return 0, false
	}
	switch v := c.V.(type) {
	case int64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// constInts reads a list or tuple of ints (or a single int as a one-element list).
func constInts(a fxgraph.Arg) ([]int64, bool) {
	var elems []fxgraph.Arg
	switch a := a.(type) {
	case fxgraph.List:
		elems = a.Elems
	case fxgraph.Tuple:
		elems = a.Elems
	case fxgraph.Const:
		if v, ok := constInt(a); ok {
			return []int64{v}, true
		}
		return nil, false
	default:
		return nil, false
	}
	out := make([]int64, len(elems))
	for i, e := range elems {
		v, ok := constInt(e)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

func constBool(a fxgraph.Arg) bool {
	if c, ok := a.(fxgraph.Const); ok {
		switch v := c.V.(type) {
		case bool:
			return v
		case int64:
			return v != 0
		}
	}
	return false
}

func isNone(a fxgraph.Arg) bool {
	c, ok := a.(fxgraph.Const)
	return a == nil || (ok && c.V == nil)
}

// normDim wraps a negative dim for a tensor of ndim dims.
func normDim(d int64, ndim int) (int, bool) {
	if ndim == 0 && (d == 0 || d == -1) {
		return 0, true
	}
	if d < 0 {
		d += int64(ndim)
	}
	return int(d), d >= 0 && d < int64(ndim)
}

// meta returns n's tensor meta or an error.
func tensorMeta(n *fxgraph.Node) (*primtorch.TensorMeta, error) {
	m := n.TensorMeta()
	if m == nil {
		return nil, lowerError(n, "the node has no tensor meta; every prims node needs one (run the meta functions)")
	}
	return m, nil
}

// broadcastIndex maps output index idx (of shape out) to the index of a tensor of shape in,
// right-aligned, size-1 dims read at 0.
func broadcastIndex(idx []Expr, out, in []Sym) ([]Expr, bool) {
	if len(in) > len(out) {
		return nil, false
	}
	res := make([]Expr, len(in))
	off := len(out) - len(in)
	for j, s := range in {
		switch {
		case s.Equal(out[off+j]):
			res[j] = idx[off+j]
		case isOne(s):
			res[j] = Expr{}
		default:
			return nil, false
		}
	}
	return res, true
}

func equalShape(a, b []Sym) bool { return symsEqual(a, b) }
