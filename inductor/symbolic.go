package inductor

import (
	"errors"
	"fmt"

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
// meta or in a constant argument (a size expression).
func IsSymbolic(g *fxgraph.Graph) bool {
	for _, n := range g.Nodes {
		if primtorch.HasSymbols(n.Meta) {
			return true
		}
		found := false
		walkArgs(n, func(a fxgraph.Arg) {
			if c, ok := a.(fxgraph.Const); ok && primtorch.HasSymbols(c.V) {
				found = true
			}
		})
		if found {
			return true
		}
	}
	return false
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
