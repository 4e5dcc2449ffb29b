package fxgraph

import (
	"fmt"
	"strings"
)

// Equal reports whether two graphs are structurally the same: see Diff.
func Equal(a, b *Graph) bool { return Diff(a, b) == "" }

// Diff describes the first structural difference between two graphs, or returns "" when they
// are equal: same name, and node by node the same name, op, target, source line, meta
// (MetaEqual), and arguments, where a node reference matches a reference to the node at the
// same position in the other graph. Lists, tuples, dicts and slices must match in kind; nil and
// empty slices are equal.
func Diff(a, b *Graph) string {
	if a.Name != b.Name {
		return fmt.Sprintf("graph name %q != %q", a.Name, b.Name)
	}
	pa, pb := positions(a), positions(b)
	for i := 0; i < min(len(a.Nodes), len(b.Nodes)); i++ {
		x, y := a.Nodes[i], b.Nodes[i]
		if d := nodeDiff(x, y, pa, pb); d != "" {
			return fmt.Sprintf("node %d (%%%s): %s", i, x.Name, d)
		}
	}
	if len(a.Nodes) != len(b.Nodes) {
		return fmt.Sprintf("%d nodes != %d nodes", len(a.Nodes), len(b.Nodes))
	}
	return ""
}

// positions maps each node of g to its position (not trusting Node.Index after edits).
func positions(g *Graph) map[*Node]int {
	pos := make(map[*Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	return pos
}

func nodeDiff(x, y *Node, pa, pb map[*Node]int) string {
	switch {
	case x.Name != y.Name:
		return fmt.Sprintf("name %q != %q", x.Name, y.Name)
	case x.Op != y.Op:
		return fmt.Sprintf("op %s != %s", x.Op, y.Op)
	case x.Target != y.Target:
		return fmt.Sprintf("target %q != %q", x.Target, y.Target)
	case x.Where != y.Where:
		return fmt.Sprintf("source line %q != %q", x.Where, y.Where)
	case !MetaEqual(x.Meta, y.Meta):
		return fmt.Sprintf("meta %s != %s", metaString(x.Meta), metaString(y.Meta))
	case len(x.Args) != len(y.Args):
		return fmt.Sprintf("%d args != %d args", len(x.Args), len(y.Args))
	case len(x.Kwargs) != len(y.Kwargs):
		return fmt.Sprintf("%d kwargs != %d kwargs", len(x.Kwargs), len(y.Kwargs))
	}
	for i := range x.Args {
		if !argEqual(x.Args[i], y.Args[i], pa, pb) {
			return fmt.Sprintf("arg %d: %s != %s", i, argString(x.Args[i]), argString(y.Args[i]))
		}
	}
	for i := range x.Kwargs {
		kx, ky := x.Kwargs[i], y.Kwargs[i]
		if kx.Name != ky.Name || !argEqual(kx.Value, ky.Value, pa, pb) {
			return fmt.Sprintf("kwarg %d: %s=%s != %s=%s", i, kx.Name, argString(kx.Value), ky.Name, argString(ky.Value))
		}
	}
	return ""
}

func argString(a Arg) string {
	var b strings.Builder
	writeArg(&b, a, nodeName)
	return b.String()
}

func argEqual(x, y Arg, pa, pb map[*Node]int) bool {
	switch x := x.(type) {
	case *Node:
		y, ok := y.(*Node)
		if !ok {
			return false
		}
		i, inA := pa[x]
		j, inB := pb[y]
		return inA && inB && i == j
	case Const:
		y, ok := y.(Const)
		return ok && constEqual(x.V, y.V)
	case List:
		y, ok := y.(List)
		return ok && argsEqual(x.Elems, y.Elems, pa, pb)
	case Tuple:
		y, ok := y.(Tuple)
		return ok && argsEqual(x.Elems, y.Elems, pa, pb)
	case Slice:
		y, ok := y.(Slice)
		return ok && argEqual(x.Start, y.Start, pa, pb) && argEqual(x.Stop, y.Stop, pa, pb) &&
			argEqual(x.Step, y.Step, pa, pb)
	case Dict:
		y, ok := y.(Dict)
		if !ok || len(x.Entries) != len(y.Entries) {
			return false
		}
		for i := range x.Entries {
			if x.Entries[i].Key != y.Entries[i].Key || !argEqual(x.Entries[i].Value, y.Entries[i].Value, pa, pb) {
				return false
			}
		}
		return true
	case nil:
		return y == nil
	}
	return false
}

func argsEqual(x, y []Arg, pa, pb map[*Node]int) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !argEqual(x[i], y[i], pa, pb) {
			return false
		}
	}
	return true
}
