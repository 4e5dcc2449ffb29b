package inductor

import (
	"errors"
	"fmt"
	"strings"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Symbolic sizes (dynamic shapes).
//
// A prims graph whose metas hold size symbols (primtorch.SymInt, fxgraph.Graph.Shapes) must be
// compiled into one library and plan that serve every value of the symbols. What inductor
// cannot compile that way it refuses with a *SymbolicUnsupported error, never by specialising
// the graph to its hints behind the caller's back: the caller then recompiles the graph with
// static shapes (the hints, guarded by the trace).

// SymbolicUnsupported is the error of a compile that met a graph with size symbols it cannot
// compile symbolically. Reason says what (an op, a layout) needed a static size. Callers detect
// it with errors.As (or IsSymbolicUnsupported) and retry with a static graph.
type SymbolicUnsupported struct {
	Graph  string
	Reason string
}

func (e *SymbolicUnsupported) Error() string {
	return fmt.Sprintf("inductor: graph %s: symbolic sizes unsupported: %s (compile it with static shapes)", e.Graph, e.Reason)
}

// IsSymbolicUnsupported reports whether err (or an error it wraps) is a *SymbolicUnsupported.
func IsSymbolicUnsupported(err error) bool {
	var su *SymbolicUnsupported
	return errors.As(err, &su)
}

// symPanic carries a SymbolicUnsupported out of the passes (they refuse deep inside with
// refuseSym; Compile recovers it into the error).
type symPanic struct{ reason string }

// refuseSym aborts the compile of a symbolic graph: reason says what needed a static size.
func refuseSym(format string, args ...any) {
	panic(symPanic{reason: fmt.Sprintf(format, args...)})
}

// recoverSym turns a refuseSym panic into *err (any other panic continues).
func recoverSym(graph string, err *error) {
	if r := recover(); r != nil {
		if sp, ok := r.(symPanic); ok {
			*err = &SymbolicUnsupported{Graph: graph, Reason: sp.reason}
			return
		}
		panic(r)
	}
}

// IsSymbolic reports whether g mentions a size symbol that was not specialised: in a node's
// meta or in a constant argument (a size expression). A specialised symbol (the trace guarded it
// equal to its hint: a meta function that is not symbolic saw it) is its hint.
func IsSymbolic(g *fxgraph.Graph) bool {
	found := false
	visitGraphSymbols(g, func(s primtorch.SymInt) {
		for _, id := range s.Symbols() {
			if g.Shapes == nil || !g.Shapes.IsSpecialized(id) {
				found = true
			}
		}
	})
	return found
}

func visitGraphSymbols(g *fxgraph.Graph, f func(primtorch.SymInt)) {
	for _, n := range g.Nodes {
		primtorch.VisitSymbols(n.Meta, f)
		walkArgs(n, func(a fxgraph.Arg) {
			if c, ok := a.(fxgraph.Const); ok {
				primtorch.VisitSymbols(c.V, f)
			}
		})
	}
}

// specializeSymbols returns g with every specialised symbol replaced by its hint (g itself when
// it mentions none): a copy whose metas and size constants mention only the symbols the graph
// is compiled for; a size mixing specialised and free symbols keeps the free ones (Resolve).
func specializeSymbols(g *fxgraph.Graph) *fxgraph.Graph {
	if g.Shapes == nil {
		return g
	}
	mentions := false
	visitGraphSymbols(g, func(s primtorch.SymInt) {
		for _, id := range s.Symbols() {
			mentions = mentions || g.Shapes.IsSpecialized(id)
		}
	})
	if !mentions {
		return g
	}
	env := g.Shapes
	fix := func(s primtorch.SymInt) primtorch.SymInt {
		ids := s.Symbols()
		spec := 0
		for _, id := range ids {
			if env.IsSpecialized(id) {
				spec++
			}
		}
		switch {
		case spec == 0:
			return s
		case spec == len(ids):
			return primtorch.SymConst(s.Hint())
		}
		// a size computed before some of its symbols were specialised: their guards hold them
		// at their hints, so they are those constants here
		return s.Resolve()
	}
	c := fxgraph.Clone(g)
	fxgraph.MapSymbols(c, fix)
	return c
}

func walkArgs(n *fxgraph.Node, f func(fxgraph.Arg)) {
	var walk func(a fxgraph.Arg)
	walk = func(a fxgraph.Arg) {
		f(a)
		switch a := a.(type) {
		case fxgraph.List:
			for _, e := range a.Elems {
				walk(e)
			}
		case fxgraph.Tuple:
			for _, e := range a.Elems {
				walk(e)
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

// Sym is a size in the loop IR: a constant, or a polynomial over the graph's size symbols
// (symbols stand for sizes ≥ 2; 0 and 1 are always specialised).
type Sym = primtorch.SymInt

// syms converts static sizes.
func syms(xs []int64) []Sym {
	out := make([]Sym, len(xs))
	for i, x := range xs {
		out[i] = primtorch.SymConst(x)
	}
	return out
}

func symc(x int64) Sym { return primtorch.SymConst(x) }

// staticSizes returns xs as integers, refusing the compile (SymbolicUnsupported) when one is
// symbolic; what names the use that needs them.
func staticSizes(xs []Sym, what string) []int64 {
	if len(xs) == 0 {
		return nil
	}
	out := make([]int64, len(xs))
	for i, x := range xs {
		k, ok := x.IsConst()
		if !ok {
			refuseSym("%s needs static sizes, got %s", what, strings.ReplaceAll(symsText(xs), ",", ", "))
		}
		out[i] = k
	}
	return out
}

// staticSize is staticSizes for one size.
func staticSize(x Sym, what string) int64 {
	k, ok := x.IsConst()
	if !ok {
		refuseSym("%s needs a static size, got %s", what, x)
	}
	return k
}

// isConstSize reports whether x is the constant k.
func isConstSize(x Sym, k int64) bool {
	c, ok := x.IsConst()
	return ok && c == k
}

// isOne reports a size-1 dim (symbols are never 1).
func isOne(x Sym) bool { return isConstSize(x, 1) }

func symsEqual(a, b []Sym) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func symNumel(xs []Sym) Sym {
	n := symc(1)
	for _, x := range xs {
		n = n.Mul(x)
	}
	return n
}

// boundsOf gives the variable ranges of sizes: a symbolic size is an unknown range (0), so no
// simplification relies on an upper bound it does not have.
func boundsOf(xs []Sym) Bounds {
	b := make(Bounds, len(xs))
	for i, x := range xs {
		if k, ok := x.IsConst(); ok {
			b[i] = k
		}
	}
	return b
}

func symsText(xs []Sym) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strings.ReplaceAll(x.String(), " ", "")
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func anySymbolic(xs []Sym) bool {
	for _, x := range xs {
		if _, ok := x.IsConst(); !ok {
			return true
		}
	}
	return false
}

// est is a size's value for heuristics only (work estimates: inlining, the shape of parallel
// loops): a symbol counts as its hint or estSymbolMin, whichever is larger (a dynamic dim is
// usually a large one; a kernel's run-time threshold is an OpenMP if clause, see
// kgen.parallelIf). Nothing that decides what the code computes uses it.
func est(x Sym) int64 {
	if k, ok := x.IsConst(); ok {
		return k
	}
	env := x.Env()
	if env == nil {
		return x.Hint()
	}
	vals := env.Hints()
	for i := range vals {
		vals[i] = max(vals[i], estSymbolMin)
	}
	return x.Eval(vals)
}

// estSymbolMin is the least value est gives a symbol.
const estSymbolMin = 1024

// symsV prints sizes as fmt's %v prints []int64 ("[4 5]"), for error messages.
func symsV(xs []Sym) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strings.ReplaceAll(x.String(), " ", "")
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// symbolicTargets are the prims targets inductor compiles with symbolic sizes; a symbolic graph
// with any other target (externs with no lowering, as_strided) is refused (SymbolicUnsupported).
// Their lowerings take sizes from the metas' symbolic layouts and refuse (refuseSym) the cases
// that need a static size: a symbolic dim that is sliced from a start the meta does not bound,
// selected or indexed, a view that regroups a symbolic dim with another one unless they are
// dense in storage.
var symbolicTargets = map[string]bool{
	"prims.convert_element_type": true, "prims.clone": true, "prims.grad_as": true,
	"prims.sum": true, "prims.prod": true, "prims.amax": true, "prims.amin": true, "prims.any": true, "prims.all": true,
	"prims.argmax": true, "prims.argmin": true,
	"prims.view": true, "prims.permute": true, "prims.expand": true, "prims.squeeze": true, "prims.unsqueeze": true,
	"prims.slice": true, "prims.select": true,
	"prims.mm": true, "prims.bmm": true, "prims.addmm": true,
	"prims.copy_": true, "operator.getitem": true,
	// cat and pad along any dim; the others along static dims (an indexed symbolic dim is refused)
	"prims.cat": true, "prims.constant_pad_nd": true, "prims.gather": true, "prims.index_select": true,
	"prims.full": true, "prims.iota": true, "prims.cumsum": true, "prims.cumprod": true,
	"prims.index": true, "prims.scatter": true, "prims.index_put": true,
	// externs run by torch: their results' layouts are the metas' symbolic ones, evaluated per
	// call (a result torch returns with another layout is copied into it); size arguments are
	// passed as their values in the call
	"prims.convolution": true, "prims.fallback": true,
}

func symbolicTarget(t string) bool {
	if symbolicTargets[t] {
		return true
	}
	// elementwise ops
	if len(t) > 6 && t[:6] == "prims." {
		_, ok := opTable[t[6:]]
		return ok && lowerings[t] != nil
	}
	return false
}

// symbolic checks a symbolic graph before lowering: every target is one inductor compiles
// symbolically, and every symbol the graph uses is read from an input (a dim or the storage
// offset of a tensor input, or an int argument). It records where the runtime reads each symbol
// (Graph.Symbols) and how many int arguments the graph takes (Graph.IntInputs).
func (l *lowerer) symbolic() error {
	g := l.fx
	if g.Shapes == nil {
		refuseSym("the graph mentions size symbols but has no ShapeEnv")
	}
	for _, n := range g.Nodes {
		if n.Op == fxgraph.CallFunction && !symbolicTarget(n.Target) {
			refuseSym("%s (node %%%s) has no symbolic lowering", n.Target, n.Name)
		}
	}
	used := map[int]bool{}
	for _, n := range g.Nodes {
		primtorch.VisitSymbols(n.Meta, func(s primtorch.SymInt) {
			for _, id := range s.Symbols() {
				used[id] = true
			}
		})
		walkArgs(n, func(a fxgraph.Arg) {
			if c, ok := a.(fxgraph.Const); ok {
				primtorch.VisitSymbols(c.V, func(s primtorch.SymInt) {
					for _, id := range s.Symbols() {
						used[id] = true
					}
				})
			}
		})
	}
	// placeholder index -> graph input index (tensor placeholders), or -> int argument index
	// (int placeholders, the symbols of Python int arguments)
	inputOf := map[int]int{}
	intOf := map[int]int{}
	k := 0
	for i, n := range g.Placeholders() {
		if n.TensorMeta() != nil {
			inputOf[i] = k
			k++
		} else {
			switch n.Meta.(type) {
			case primtorch.SymInt, int64:
				intOf[i] = l.g.IntInputs
				l.g.IntInputs++
			}
		}
	}
	binds := fxgraph.SymbolBindings(g)
	for id := len(binds) - 1; id >= 0; id-- {
		// a derived symbol's value is computed from the symbols it is defined by
		if d, ok := g.Shapes.Derived(id); ok && used[id] {
			for _, x := range d.Num.Resolve().Symbols() {
				used[x] = true
			}
		}
	}
	l.g.Symbols = make([]SymbolSource, len(binds))
	for id, b := range binds {
		l.g.Symbols[id] = SymbolSource{Input: -1, Dim: -1, Hint: g.Shapes.HintOf(id)}
		if d, ok := g.Shapes.Derived(id); ok && !g.Shapes.IsSpecialized(id) {
			if !fxgraph.Bound(g.Shapes, binds, id) {
				refuseSym("derived size symbol s%d = %s depends on a symbol no input carries", id, d)
			}
			l.g.Symbols[id] = SymbolSource{Input: -1, Dim: SymDerived, Hint: g.Shapes.HintOf(id), Def: d.Num.Resolve().String(), Div: d.Div}
			continue
		}
		if !used[id] {
			continue
		}
		var in int
		var ok bool
		switch {
		case b.Input < 0:
		case b.Dim == -1:
			in, ok = intOf[b.Input]
		case b.Dim >= 0 || b.Dim == fxgraph.OffsetDim:
			in, ok = inputOf[b.Input]
		}
		if !ok {
			refuseSym("size symbol s%d is not read from an input (a dim, a storage offset or an int argument)", id)
		}
		l.g.Symbols[id] = SymbolSource{Input: in, Dim: b.Dim, Hint: g.Shapes.HintOf(id)}
	}
	return nil
}

// symArg reads a constant argument that is a symbolic size expression.
func symArg(a fxgraph.Arg) (Sym, bool) {
	var v any
	switch a := a.(type) {
	case fxgraph.Const:
		v = a.V
	case *fxgraph.Node:
		// an int placeholder (a Python int argument that is a size symbol)
		if a.Op != fxgraph.Placeholder {
			return Sym{}, false
		}
		v = a.Meta
	default:
		return Sym{}, false
	}
	s, ok := v.(primtorch.SymInt)
	if !ok {
		return Sym{}, false
	}
	if _, isConst := s.IsConst(); isConst {
		return Sym{}, false
	}
	return s, true
}

func symStrings(xs []Sym) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}

// nonNegative reports whether s is ≥ 0 for every value of the symbols (primtorch's proof: each
// symbol at least its lower bound, a derived floor division within its bounds).
func nonNegative(s Sym) bool { return s.ProvablyNonNegative() }

// atLeastZero reports whether s is ≥ 0 for every value of the symbols (each ≥ 2): no negative
// coefficient (s grows with each symbol) and s ≥ 0 with every symbol at 2 ("s0 - 1").
func atLeastZero(s Sym) bool { return s.ProvablyNonNegative() }

type symTerm struct {
	coef int64
	mono []int
}

// symTerms splits a size expression into its constant and its terms (primtorch.SymInt.Terms:
// monomials with their symbol ids ascending).
func symTerms(s Sym) (int64, []symTerm) {
	c, terms := s.Terms()
	out := make([]symTerm, len(terms))
	for k, t := range terms {
		out[k] = symTerm{coef: t.Coef, mono: t.Syms}
	}
	return c, out
}
