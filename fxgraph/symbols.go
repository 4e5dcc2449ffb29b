package fxgraph

import (
	"fmt"

	"ptgo/primtorch"
)

// SymbolBinding says where the runtime reads a size symbol: dim Dim of placeholder Input's
// tensor, or (Dim == -1) placeholder Input itself, an int argument, or (Dim == OffsetDim) the
// storage offset of placeholder Input's tensor.
type SymbolBinding struct {
	Input int // index among the graph's placeholders
	Dim   int
}

// OffsetDim is SymbolBinding.Dim for a symbol that is a tensor's storage offset; DerivedDim
// for a derived symbol (primtorch.SymDef: a floor division of earlier symbols), which no input
// carries: its value is computed from theirs (Input is -1).
const (
	OffsetDim  = -2
	DerivedDim = -3
)

// SymbolBindings finds, for each of g.Shapes' symbols, the first placeholder that carries it
// bare: a tensor dim whose size is exactly the symbol, or an int placeholder whose meta is the
// symbol. A symbol no placeholder carries (one the trace specialised, or a derived size) has
// Input -1; the graph may still mention it only if it is specialised.
func SymbolBindings(g *Graph) []SymbolBinding {
	if g.Shapes == nil {
		return nil
	}
	out := make([]SymbolBinding, g.Shapes.NumSymbols())
	for i := range out {
		out[i] = SymbolBinding{Input: -1, Dim: -1}
		if _, ok := g.Shapes.Derived(i); ok {
			out[i].Dim = DerivedDim
		}
	}
	set := func(s primtorch.SymInt, input, dim int) {
		if id, coef, c, ok := s.Linear(); ok && coef == 1 && c == 0 && id < len(out) && out[id].Input < 0 && out[id].Dim != DerivedDim {
			out[id] = SymbolBinding{Input: input, Dim: dim}
		}
	}
	for i, n := range g.Placeholders() {
		switch m := n.Meta.(type) {
		case *primtorch.TensorMeta:
			if m != nil && m.Sym != nil {
				for d, s := range m.Sym.Sizes {
					set(s, i, d)
				}
				set(m.Sym.Offset, i, OffsetDim)
			}
		case primtorch.SymInt:
			set(m, i, -1)
		}
	}
	return out
}

// CheckSymbols reports a symbol that the graph uses but no placeholder binds and the trace did
// not specialise: the runtime could not know its value.
func CheckSymbols(g *Graph) error {
	if g.Shapes == nil {
		return nil
	}
	b := SymbolBindings(g)
	for id := range b {
		if !Bound(g.Shapes, b, id) && symbolUsed(g, id) {
			return fmt.Errorf("fxgraph: size symbol s%d is used but no graph input carries it", id)
		}
	}
	return nil
}

// symbolUsed reports whether a node's meta mentions symbol id: a symbol of the shared ShapeEnv
// that no value of this graph has (a size of an input only the forward reads) needs no binding.
func symbolUsed(g *Graph, id int) bool {
	for _, n := range g.Nodes {
		if primtorch.HasSymbols(n.Meta) && symbolMentioned(n.Meta, id) {
			return true
		}
	}
	return false
}

// Bound reports whether the runtime knows symbol id's value from bindings b: an input carries
// it, the trace specialised it, or it is derived from symbols that are bound.
func Bound(env *primtorch.ShapeEnv, b []SymbolBinding, id int) bool {
	if b[id].Input >= 0 || env.IsSpecialized(id) {
		return true
	}
	d, ok := env.Derived(id)
	if !ok {
		return false
	}
	for _, x := range d.Num.Symbols() {
		if x >= id || !Bound(env, b, x) {
			return false
		}
	}
	return true
}

func symbolMentioned(v any, id int) bool {
	found := false
	primtorch.VisitSymbols(v, func(s primtorch.SymInt) {
		for _, x := range s.Symbols() {
			if x == id {
				found = true
			}
		}
	})
	return found
}

// ResolveSpecialized rewrites g's metas and size constants with every specialised symbol
// replaced by its hint (the trace guarded it equal), so what stays symbolic is what is.
func ResolveSpecialized(g *Graph) {
	if g.Shapes == nil || len(g.Shapes.Specialized()) == 0 {
		return
	}
	MapSymbols(g, primtorch.SymInt.Resolve)
}

// MapSymbols rewrites, in place, every size expression of g — in node metas (a tensor's
// symbolic sizes, strides and offset; a SymInt meta) and in constant arguments — as f gives it;
// a meta left with no symbols becomes static, a constant an int64.
func MapSymbols(g *Graph, f func(primtorch.SymInt) primtorch.SymInt) {
	all := func(xs []primtorch.SymInt) []primtorch.SymInt {
		out := make([]primtorch.SymInt, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		return out
	}
	var meta func(v any) any
	meta = func(v any) any {
		switch m := v.(type) {
		case *primtorch.TensorMeta:
			if m == nil || m.Sym == nil {
				return m
			}
			return m.Clone().SetSymLayout(all(m.Sym.Sizes), all(m.Sym.Strides), f(m.Sym.Offset))
		case primtorch.SymInt:
			return primtorch.SymValue(f(m))
		case []any:
			out := make([]any, len(m))
			for i, e := range m {
				out[i] = meta(e)
			}
			return out
		}
		return v
	}
	for _, n := range g.Nodes {
		n.Meta = meta(n.Meta)
		for i, a := range n.Args {
			n.Args[i] = mapSymArg(a, f)
		}
		for i := range n.Kwargs {
			n.Kwargs[i].Value = mapSymArg(n.Kwargs[i].Value, f)
		}
	}
}

func mapSymArg(a Arg, f func(primtorch.SymInt) primtorch.SymInt) Arg {
	switch x := a.(type) {
	case Const:
		if s, ok := x.V.(primtorch.SymInt); ok {
			return Const{V: primtorch.SymValue(f(s))}
		}
	case List:
		out := make([]Arg, len(x.Elems))
		for i, e := range x.Elems {
			out[i] = mapSymArg(e, f)
		}
		return List{Elems: out}
	case Tuple:
		out := make([]Arg, len(x.Elems))
		for i, e := range x.Elems {
			out[i] = mapSymArg(e, f)
		}
		return Tuple{Elems: out}
	case Slice:
		return Slice{Start: mapSymArg(x.Start, f), Stop: mapSymArg(x.Stop, f), Step: mapSymArg(x.Step, f)}
	case Dict:
		out := make([]DictEntry, len(x.Entries))
		for i, e := range x.Entries {
			out[i] = DictEntry{Key: e.Key, Value: mapSymArg(e.Value, f)}
		}
		return Dict{Entries: out}
	}
	return a
}

// VisitArgSymbols calls f with every symbolic size expression among n's constant arguments
// (nested in lists, tuples, slices and dicts too); node arguments are not entered.
func VisitArgSymbols(n *Node, f func(primtorch.SymInt)) {
	var walk func(a Arg)
	walk = func(a Arg) {
		switch x := a.(type) {
		case Const:
			primtorch.VisitSymbols(x.V, f)
		case List:
			for _, e := range x.Elems {
				walk(e)
			}
		case Tuple:
			for _, e := range x.Elems {
				walk(e)
			}
		case Slice:
			walk(x.Start)
			walk(x.Stop)
			walk(x.Step)
		case Dict:
			for _, e := range x.Entries {
				walk(e.Value)
			}
		}
	}
	for _, a := range n.Args {
		walk(a)
	}
	for _, kw := range n.Kwargs {
		walk(kw.Value)
	}
}

// ResolveSpecializedFloats replaces, in place, every float symbol constant (a Python float
// argument read at run time, primtorch/symfloat.go) that the trace specialised by its value:
// the guard makes the value fixed, and later stages then see a plain number.
func ResolveSpecializedFloats(g *Graph) {
	if g.Shapes == nil {
		return
	}
	spec := g.Shapes.SpecializedFloats()
	if len(spec) == 0 {
		return
	}
	res := func(a Arg) Arg {
		if c, ok := a.(Const); ok {
			if f, ok := c.V.(primtorch.SymFloat); ok {
				if _, done := spec[f.ID]; done {
					return Const{V: f.Hint()}
				}
			}
		}
		return a
	}
	for _, n := range g.Nodes {
		for i, a := range n.Args {
			n.Args[i] = res(a)
		}
		for i := range n.Kwargs {
			n.Kwargs[i].Value = res(n.Kwargs[i].Value)
		}
	}
}

// VisitFloatSymbols calls f with every float symbol among g's constant arguments (they are
// direct arguments of their calls), in node order.
func VisitFloatSymbols(g *Graph, f func(primtorch.SymFloat)) {
	visit := func(a Arg) {
		if c, ok := a.(Const); ok {
			if s, ok := c.V.(primtorch.SymFloat); ok {
				f(s)
			}
		}
	}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			visit(a)
		}
		for _, kw := range n.Kwargs {
			visit(kw.Value)
		}
	}
}

// HasFloatSymbols reports whether a constant of g is a float symbol not specialised.
func HasFloatSymbols(g *Graph) bool {
	found := false
	VisitFloatSymbols(g, func(s primtorch.SymFloat) { found = found || !s.IsSpecialized() })
	return found
}
