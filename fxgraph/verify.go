package fxgraph

import (
	"fmt"
	"strings"

	"ptgo/primtorch"
)

// MetaChecker recomputes the meta of a call node (call_function or call_method) from its
// target, its constant arguments and its argument nodes' metas, as the op registry's meta
// functions do. It returns (nil, nil) when it has no opinion (an op it does not know), and an
// error when the arguments are invalid for the op.
type MetaChecker func(n *Node) (any, error)

// VerifyError lists every problem Verify found, each naming the node.
type VerifyError struct {
	Graph    string
	Problems []string // the first maxProblems problems
	Omitted  int      // how many more there were
}

// maxProblems bounds a report; a broken pass usually breaks every node the same way.
const maxProblems = 20

func (e *VerifyError) Error() string {
	var b strings.Builder
	total := len(e.Problems) + e.Omitted
	fmt.Fprintf(&b, "fxgraph: graph %s is invalid (%d problem", e.Graph, total)
	if total != 1 {
		b.WriteByte('s')
	}
	b.WriteString("); the stage that built or last rewrote it has a bug:")
	for _, p := range e.Problems {
		b.WriteString("\n  " + p)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more", e.Omitted)
	}
	return b.String()
}

// Verify checks g's invariants: placeholders first and one output last; node indices current;
// names unique and kept by torch.fx (valid identifiers, no keywords or builtins); targets well
// formed for each op; every argument node defined earlier in g; constants of allowed types;
// metas present and well formed (one stride per dim, no negative sizes, strides or offsets, a
// known device), nil on the output. When check is not nil, each call node's meta must equal
// what check recomputes. It costs one pass over the nodes and their arguments.
func Verify(g *Graph, check MetaChecker) error {
	v := &verifier{defined: make(map[*Node]int, len(g.Nodes)), names: make(map[string]int, len(g.Nodes))}
	seenCall := false
	for i, n := range g.Nodes {
		if n == nil {
			v.addf("node %d is nil", i)
			continue
		}
		v.node(g, i, n, &seenCall)
		if n.Op == CallFunction || n.Op == CallMethod {
			v.checkMeta(n, check)
		}
		if _, dup := v.defined[n]; dup {
			v.at(n, "appears twice in g.Nodes; a node belongs at one position")
		}
		v.defined[n] = i
	}
	if len(g.Nodes) == 0 || g.Nodes[len(g.Nodes)-1] == nil || g.Nodes[len(g.Nodes)-1].Op != Output {
		v.addf("graph does not end with an output node; finish it with AddOutput")
	}
	if v.count == 0 {
		return nil
	}
	return &VerifyError{Graph: g.Name, Problems: v.problems, Omitted: v.count - len(v.problems)}
}

type verifier struct {
	defined  map[*Node]int  // nodes seen so far → position
	names    map[string]int // names seen so far → position
	problems []string
	count    int
	badMeta  bool // the current node's meta or arguments are malformed: skip the checker
}

func (v *verifier) addf(format string, args ...any) {
	v.count++
	if v.count <= maxProblems {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// at reports a problem of node n.
func (v *verifier) at(n *Node, format string, args ...any) {
	where := ""
	if n.Where != "" {
		where = " (" + n.Where + ")"
	}
	v.addf("node %%%s%s: %s", n.Name, where, fmt.Sprintf(format, args...))
}

func (v *verifier) node(g *Graph, i int, n *Node, seenCall *bool) {
	v.badMeta = false
	if n.index != i {
		v.at(n, "Index() is %d but the node is at position %d; call g.Renumber() after editing g.Nodes", n.index, i)
	}
	if n.Op == Output {
		if n.Name != "output" {
			v.at(n, "the output node must be named \"output\"; build it with AddOutput")
		}
	} else if p := nameProblem(n.Name); p != "" {
		v.at(n, "name %q %s; build nodes with the Add* methods, which pick safe names", n.Name, p)
	}
	if j, dup := v.names[n.Name]; dup {
		v.at(n, "name is also used by node %d; names must be unique", j)
	}
	v.names[n.Name] = i

	switch n.Op {
	case Placeholder:
		if *seenCall {
			v.at(n, "placeholder after other nodes; placeholders must come first")
		}
		if !isIdent(n.Target) || pythonKeywords[n.Target] {
			v.at(n, "placeholder target %q is not a Python identifier", n.Target)
		}
	case CallFunction:
		if !isDottedIdent(n.Target) {
			v.at(n, "call_function target %q is not a Python path such as torch.relu or operator.add", n.Target)
		}
	case CallMethod:
		if !isIdent(n.Target) {
			v.at(n, "call_method target %q is not a method name such as view or add_", n.Target)
		}
		if len(n.Args) == 0 {
			v.at(n, "call_method has no receiver; Args[0] must be the tensor")
		} else if _, ok := n.Args[0].(*Node); !ok {
			v.at(n, "call_method receiver %s is not a node", argString(n.Args[0]))
		}
	case GetAttr:
		if !isModulePath(n.Target) {
			v.at(n, "get_attr target %q is not a dotted attribute path such as fc1.weight or layers.0.bias", n.Target)
		}
	case Output:
		if n.Target != "output" {
			v.at(n, "output target is %q, must be \"output\"", n.Target)
		}
		if i != len(g.Nodes)-1 {
			v.at(n, "output node at position %d is not the last node (%d nodes); a graph has one output, last", i, len(g.Nodes))
		}
	default:
		v.at(n, "unknown op %s", n.Op)
	}
	if n.Op != Placeholder {
		*seenCall = true
	}
	v.args(n)
	v.meta(n)
}

func (v *verifier) args(n *Node) {
	switch n.Op {
	case Placeholder, GetAttr:
		if len(n.Args) > 0 || len(n.Kwargs) > 0 {
			v.at(n, "%s takes no arguments, has %d args and %d kwargs", n.Op, len(n.Args), len(n.Kwargs))
			v.badMeta = true
		}
		return
	case Output:
		if len(n.Args) != 1 || len(n.Kwargs) > 0 {
			v.at(n, "output takes exactly one argument (the returned structure), has %d args and %d kwargs", len(n.Args), len(n.Kwargs))
		}
	}
	for i, a := range n.Args {
		if path, p := v.argProblem(a); p != "" {
			v.at(n, "argument %d%s: %s", i, path, p)
			v.badMeta = true
		}
	}
	for i, kw := range n.Kwargs {
		if !isIdent(kw.Name) || pythonKeywords[kw.Name] {
			v.at(n, "keyword argument name %q is not a Python identifier", kw.Name)
		}
		for _, earlier := range n.Kwargs[:i] {
			if earlier.Name == kw.Name {
				v.at(n, "keyword argument %s is given twice", kw.Name)
			}
		}
		if path, p := v.argProblem(kw.Value); p != "" {
			v.at(n, "keyword argument %s%s: %s", kw.Name, path, p)
			v.badMeta = true
		}
	}
}

// argProblem returns the first problem in a, and where inside a it is ("[1].stop"); it
// allocates nothing when a is fine.
func (v *verifier) argProblem(a Arg) (path, problem string) {
	switch a := a.(type) {
	case nil:
		return "", "nil Arg; use Const{nil} for None"
	case *Node:
		if a == nil {
			return "", "nil *Node"
		}
		if _, ok := v.defined[a]; !ok {
			return "", fmt.Sprintf("%%%s is not defined before this node (a later node, or one of another graph); keep nodes in execution order", a.Name)
		}
	case Const:
		return "", constProblem(a.V)
	case List:
		return v.elemsProblem(a.Elems)
	case Tuple:
		return v.elemsProblem(a.Elems)
	case Slice:
		for i, part := range [3]Arg{a.Start, a.Stop, a.Step} {
			if path, p := v.argProblem(part); p != "" {
				return [3]string{".start", ".stop", ".step"}[i] + path, p
			}
		}
	case Dict:
		for i, e := range a.Entries {
			for _, earlier := range a.Entries[:i] {
				if earlier.Key == e.Key {
					return "", fmt.Sprintf("dict key %q appears twice", e.Key)
				}
			}
			if path, p := v.argProblem(e.Value); p != "" {
				return fmt.Sprintf("[%q]", e.Key) + path, p
			}
		}
	default:
		return "", fmt.Sprintf("argument of Go type %T is not an fxgraph Arg", a)
	}
	return "", ""
}

func (v *verifier) elemsProblem(elems []Arg) (path, problem string) {
	for i, e := range elems {
		if path, p := v.argProblem(e); p != "" {
			return fmt.Sprintf("[%d]", i) + path, p
		}
	}
	return "", ""
}

func (v *verifier) meta(n *Node) {
	switch {
	case n.Op == Output:
		if !isNilMeta(n.Meta) {
			v.at(n, "output has meta %s; the output node carries none", metaString(n.Meta))
		}
		return
	case n.Op == GetAttr && !isNilMeta(n.Meta):
		if _, ok := n.Meta.(*primtorch.TensorMeta); !ok {
			v.at(n, "get_attr meta %s is not a tensor meta; get_attr reads parameters and buffers", metaString(n.Meta))
			v.badMeta = true
			return
		}
	}
	if p := metaProblem(n.Meta); p != "" {
		v.at(n, "%s", p)
		v.badMeta = true
	}
}

func (v *verifier) checkMeta(n *Node, check MetaChecker) {
	if check == nil || v.badMeta {
		return
	}
	want, err := check(n)
	if err != nil {
		v.at(n, "meta check of %s failed: %v", n.Target, err)
		return
	}
	if !isNilMeta(want) && !MetaEqual(n.Meta, want) {
		v.at(n, "meta %s differs from %s computed for %s; the stage that set it is out of step with the op registry",
			metaString(n.Meta), metaString(want), n.Target)
	}
}

// isModulePath reports a dotted path of torch module and parameter names: each part non-empty
// and without whitespace or control characters. torch's add_module refuses only "" and names
// with a dot, so real models hold names that are no identifiers (regnet's "block1-0").
func isModulePath(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || strings.ContainsFunc(part, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return false
		}
	}
	return true
}
