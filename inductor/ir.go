package inductor

import (
	"fmt"

	"ptgo/primtorch"
)

// The loop-level IR: a Graph of Buffers, each defined by one node.
//
//   - *InputNode: a graph input (placeholder); its layout is the input's meta.
//   - *Pointwise: Ranges and a Body giving the element at index (i0, i1, ...).
//   - *Reduction: Ranges (the output index), ReduceRanges and a Body over (i..., r...),
//     combined by a ReduceKind.
//   - *Scan: a cumulative sum/product along one dim of Ranges.
//   - *Extern: a call of an op the C backend does not generate (matmul, convolution, fallbacks),
//     run by torch at run time; it may define several buffers.
//   - *ScatterNode: writes Body at an indirect index of another buffer's storage (scatter,
//     index_put), after that buffer was filled by a copy.
//   - *AliasNode: a strided view of another buffer's storage (as_strided, views that leave the
//     graph or feed an extern); it computes nothing.
//
// Views inside the graph are not buffers: lowering composes them into the index of every load.

// Layout is how a buffer's logical index maps to its storage: Σ Strides[k]·i_k + Offset, in
// elements.
type Layout struct {
	Strides []Sym
	Offset  Sym
}

// Node defines a buffer.
type Node interface {
	// Reads lists the buffers the node reads (aliases as themselves), in a deterministic order.
	Reads() []*Buffer
	kindName() string
}

// Buffer is a tensor the IR computes or receives. Its Name ("buf3") is unique in the graph.
type Buffer struct {
	Name   string
	DType  primtorch.DType
	Sizes  []Sym
	Layout Layout
	Def    Node
	// Origins names the graph nodes (fx names) whose computation the buffer's definition holds;
	// inlining appends the inlined buffers' origins.
	Origins []string
	// Targets are the distinct prims targets of the origins, in first-seen order (kernel names
	// use them).
	Targets []string
	// Mutates is set on buffers written into another buffer's storage instead of memory of
	// their own: a prims.copy_ (into a graph input, the graph's mutation epilogue) and a
	// scatter (into the copy of its input it updates).
	Mutates *Buffer
	// Raises marks a buffer whose computation may raise for some input values (an index out of
	// range, primtorch.EffectRaises): it is computed even when nothing reads it, and inlined only
	// into a reader that computes every element of it once.
	Raises bool
	// raisesAt and raisesLast are the creation indices of the first and last raising buffers b
	// computes (itself, or ones inlined into it): where in eager's order it may raise. writtenAt, for a write into a graph
	// input (the mutation epilogue's copy), is the creation index of the value it writes: where
	// eager's in-place op wrote it. orderRaises keeps the two in eager's order.
	raisesAt, raisesLast, writtenAt int

	index int
}

// Numel is the number of elements.
func (b *Buffer) Numel() Sym { return symNumel(b.Sizes) }

// Storage returns the buffer whose memory b uses: b itself, the root of an alias chain, or the
// input a copy_ writes into.
func (b *Buffer) Storage() *Buffer {
	for {
		if b.Mutates != nil {
			b = b.Mutates
			continue
		}
		a, ok := b.Def.(*AliasNode)
		if !ok {
			return b
		}
		b = a.Base
	}
}

// StorageElems is the number of elements the storage must hold for the layout: offset plus the
// largest reachable index plus one (zero for an empty tensor).
func (b *Buffer) StorageElems() Sym { return storageElemsSym(b.Sizes, b.Layout) }

func storageElems(sizes, strides []int64, offset int64) int64 {
	end := offset + 1
	for k, s := range sizes {
		if s == 0 {
			return 0
		}
		end += (s - 1) * strides[k]
	}
	return end
}

// storageElemsSym is storageElems for symbolic sizes (a symbol is never 0; strides are not
// negative).
func storageElemsSym(sizes []Sym, l Layout) Sym {
	end := l.Offset.AddConst(1)
	for k, s := range sizes {
		if isConstSize(s, 0) {
			return symc(0)
		}
		end = end.Add(s.AddConst(-1).Mul(l.Strides[k]))
	}
	return end
}

// IndexVars returns the identity index of the buffer's dims: variable k for dim k, or 0 for a
// dim of size 1.
func indexVars(sizes []Sym, first int) []Expr {
	idx := make([]Expr, len(sizes))
	for k, s := range sizes {
		if !isOne(s) {
			idx[k] = Var(first + k)
		}
	}
	return idx
}

// InputNode defines a graph input.
type InputNode struct {
	Name  string // the placeholder's name
	Index int    // position among the graph's inputs
}

// Pointwise computes Body at every index of Ranges (which equal the buffer's Sizes).
type Pointwise struct {
	Ranges []Sym
	Body   *Value
}

// ReduceKind is a reduction's combining operation.
type ReduceKind uint8

const (
	ReduceSum ReduceKind = iota
	ReduceProd
	ReduceMax
	ReduceMin
	ReduceAny
	ReduceAll
	ReduceArgmax
	ReduceArgmin
	numReduceKinds
)

var reduceNames = [numReduceKinds]string{"sum", "prod", "amax", "amin", "any", "all", "argmax", "argmin"}

func (k ReduceKind) String() string { return reduceNames[k] }

// Reduction computes, at every index i of Ranges (the buffer's Sizes), the reduction over every
// r in ReduceRanges of Body(i, r). Body's variables are i0.. (len(Ranges) of them) then r0...
// Argmax/argmin give the flattened position of r in ReduceRanges, first on ties, NaN largest.
type Reduction struct {
	Ranges       []Sym
	ReduceRanges []Sym
	Kind         ReduceKind
	Body         *Value
}

// ScanKind is a scan's combining operation.
type ScanKind uint8

const (
	ScanSum ScanKind = iota
	ScanProd
)

func (k ScanKind) String() string { return [...]string{"cumsum", "cumprod"}[k] }

// Scan computes out[i] = combine over j ≤ i[Dim] of Body(i with dim Dim = j).
type Scan struct {
	Ranges []Sym
	Dim    int
	Kind   ScanKind
	Body   *Value
}

// Extern is an op run by torch at run time. Outs are the buffers it defines (the tuple elements
// of its result, in order); their layouts are the node's meta.
type Extern struct {
	// Target is the call: a prims target ("prims.mm") or, for prims.fallback, the torch-level
	// target it carries ("torch.nn.functional.max_pool2d").
	Target string
	Args   []ExternArg
	Kwargs []ExternKwarg
	// Outs are the results' buffers, one per tuple element; nil for an element torch returns
	// as None (a gradient convolution_backward is not asked for).
	Outs []*Buffer
	// Reason says why the op is an extern: "extern" (matmul/convolution by design), "fallback"
	// (prims.fallback) or "no lowering".
	Reason string
	// Effects are the call's effects as the op registry states them (fxgraph.CallEffects): Fuse
	// keeps the externs that draw random numbers or write in their program order.
	Effects primtorch.Effects
}

// Primary is the extern's first result buffer: the one that stands for the call (scheduling,
// fusion groups, printing).
func (e *Extern) Primary() *Buffer {
	for _, o := range e.Outs {
		if o != nil {
			return o
		}
	}
	return nil
}

// ExternArg is an extern call's argument: a tensor (Buf), None, a scalar (Value: bool, int64,
// float64, string, primtorch.DType, ...) or a list/tuple (List, Tuple true for a tuple).
type ExternArg struct {
	Buf   *Buffer
	None  bool
	Value any
	List  []ExternArg
	IsSeq bool
	Tuple bool
}

// ExternKwarg is a keyword argument of an extern call.
type ExternKwarg struct {
	Name  string
	Value ExternArg
}

// ScatterNode writes, for every index i of Ranges, Body(i) at logical index Target(i) of Into (the
// buffer it updates in place; its own buffer has Into's sizes and layout and Mutates = Into).
// Target holds indirect atoms. With Accumulate the value is added (duplicates included);
// without, one of the duplicates' values wins.
type ScatterNode struct {
	Into       *Buffer
	Ranges     []Sym
	Target     []Expr
	Body       *Value
	Accumulate bool
}

// roots are the values the node evaluates: Body and the indices inside Target.
func (n *ScatterNode) roots() []*Value {
	out := []*Value{n.Body}
	for _, e := range n.Target {
		out = append(out, indValues(e)...)
	}
	return out
}

// indValues lists the values of the indirect atoms in e (inside divisions too).
func indValues(e Expr) []*Value {
	var out []*Value
	for _, t := range e.Terms {
		switch t.Atom.Kind {
		case AtomInd:
			out = append(out, t.Atom.Val)
		case AtomDiv, AtomMod:
			out = append(out, indValues(t.Atom.X)...)
		}
	}
	return out
}

// AliasNode defines a buffer that is a strided view (the buffer's own Sizes and Layout) of
// Base's storage. Of, when set, is the value the view was taken of where that is a write into
// Base's storage (a scatter's result): the alias reads it too, so its readers run after the
// write (fuzz seed 18871: an extern reading the view of an index_put ran before the scatter).
type AliasNode struct{ Base, Of *Buffer }

func (*InputNode) kindName() string   { return "input" }
func (*Pointwise) kindName() string   { return "pointwise" }
func (*Reduction) kindName() string   { return "reduction" }
func (*Scan) kindName() string        { return "scan" }
func (*Extern) kindName() string      { return "extern" }
func (*AliasNode) kindName() string   { return "alias" }
func (*ScatterNode) kindName() string { return "scatter" }

func (*InputNode) Reads() []*Buffer   { return nil }
func (n *Pointwise) Reads() []*Buffer { return bufsRead(n.Body) }
func (n *Reduction) Reads() []*Buffer { return bufsRead(n.Body) }
func (n *Scan) Reads() []*Buffer      { return bufsRead(n.Body) }
func (n *AliasNode) Reads() []*Buffer {
	if n.Of == nil {
		return []*Buffer{n.Base}
	}
	out := []*Buffer{n.Base, n.Of}
	sortBuffers(out)
	return out
}

// Reads of a scatter include the buffer it updates (it runs after that buffer's copy).
func (n *ScatterNode) Reads() []*Buffer {
	out := bufsReadAll(n.roots())
	for _, b := range out {
		if b == n.Into {
			return out
		}
	}
	out = append(out, n.Into)
	sortBuffers(out)
	return out
}
func (n *Extern) Reads() []*Buffer {
	var out []*Buffer
	seen := map[*Buffer]bool{}
	var walk func(a ExternArg)
	walk = func(a ExternArg) {
		if a.Buf != nil && !seen[a.Buf] {
			seen[a.Buf] = true
			out = append(out, a.Buf)
		}
		for _, e := range a.List {
			walk(e)
		}
	}
	for _, a := range n.Args {
		walk(a)
	}
	for _, kw := range n.Kwargs {
		walk(kw.Value)
	}
	return out
}

// bufsRead lists the buffers loaded under v, each once, ordered by buffer index.
func bufsRead(v *Value) []*Buffer { return bufsReadAll([]*Value{v}) }

func bufsReadAll(roots []*Value) []*Buffer {
	seen := map[*Buffer]bool{}
	var out []*Buffer
	for _, l := range loadsOf(roots...) {
		if !seen[l.Buf] {
			seen[l.Buf] = true
			out = append(out, l.Buf)
		}
	}
	sortBuffers(out)
	return out
}

// bodyOf returns the body of a node that has one.
func bodyOf(n Node) *Value {
	switch n := n.(type) {
	case *Pointwise:
		return n.Body
	case *Reduction:
		return n.Body
	case *Scan:
		return n.Body
	case *ScatterNode:
		return n.Body
	}
	return nil
}

func setBody(n Node, v *Value) {
	switch n := n.(type) {
	case *Pointwise:
		n.Body = v
	case *Reduction:
		n.Body = v
	case *Scan:
		n.Body = v
	case *ScatterNode:
		n.Body = v
	}
}

// Output is one graph output: a buffer, or a constant (Buf nil) such as None or a Python number.
type Output struct {
	Buf   *Buffer
	Const any
}

// Graph is a lowered graph: buffers in definition order (a valid execution order), the inputs in
// placeholder order, and the outputs in the order the prims graph returns them (flattened).
type Graph struct {
	Name    string
	Buffers []*Buffer
	Inputs  []*Buffer
	Outputs []Output
	// Symbols: where the runtime reads each size symbol (nil for a static graph).
	Symbols []SymbolSource
	// IntInputs: how many int arguments (int placeholders, symbolic) the graph takes among its
	// inputs, in placeholder order with the tensors.
	IntInputs int
	// FloatInputs: how many float arguments (float placeholders, primtorch/symfloat.go) the
	// graph takes among its inputs, in placeholder order; kernels read them from floats.
	FloatInputs int

	vals *values
	// floatArg is the float argument index of each float symbol
	floatArg map[int]int
}

// NewGraph returns an empty graph.
func NewGraph(name string) *Graph { return &Graph{Name: name, vals: newValues()} }

// Values is the graph's value constructor (every body value of the graph is built through it).
func (g *Graph) Values() *values { return g.vals }

// addBuffer appends a buffer named buf<N>.
func (g *Graph) addBuffer(dt primtorch.DType, sizes []Sym, layout Layout, def Node) *Buffer {
	b := &Buffer{Name: fmt.Sprintf("buf%d", len(g.Buffers)), DType: dt, Sizes: append([]Sym(nil), sizes...),
		Layout: Layout{Strides: append([]Sym(nil), layout.Strides...), Offset: layout.Offset}, Def: def, index: len(g.Buffers)}
	g.Buffers = append(g.Buffers, b)
	return b
}

// Users returns, for every buffer, the buffers whose definitions read it (in buffer order).
func (g *Graph) Users() map[*Buffer][]*Buffer {
	users := map[*Buffer][]*Buffer{}
	for _, b := range g.Buffers {
		if ext, ok := b.Def.(*Extern); ok && ext.Primary() != b {
			continue
		}
		for _, r := range b.Def.Reads() {
			users[r] = append(users[r], b)
		}
	}
	return users
}

// isOutput reports which buffers are graph outputs.
func (g *Graph) outputSet() map[*Buffer]bool {
	out := map[*Buffer]bool{}
	for _, o := range g.Outputs {
		if o.Buf != nil {
			out[o.Buf] = true
		}
	}
	return out
}

func sortBuffers(bs []*Buffer) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].index < bs[j-1].index; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

func numel(sizes []int64) int64 {
	n := int64(1)
	for _, s := range sizes {
		n *= s
	}
	return n
}

func contiguousLayout(sizes []Sym) Layout {
	return Layout{Strides: primtorch.SymContiguousStrides(sizes), Offset: symc(0)}
}

// staticLayout is the layout of static strides and offset.
func staticLayout(strides []int64, offset int64) Layout {
	return Layout{Strides: syms(strides), Offset: symc(offset)}
}

// layoutOf is a meta's layout (symbolic where the meta is).
func layoutOf(m *primtorch.TensorMeta) Layout {
	if m.Sym != nil {
		return Layout{Strides: append([]Sym(nil), m.Sym.Strides...), Offset: m.Sym.Offset}
	}
	return staticLayout(m.Strides, m.Offset)
}

// metaSizes is a meta's sizes, symbolic where the meta is.
func metaSizes(m *primtorch.TensorMeta) []Sym {
	if m.Sym != nil {
		return append([]Sym(nil), m.Sym.Sizes...)
	}
	return syms(m.Shape)
}
