package fxgraph

import (
	"fmt"

	"ptgo/primtorch"
)

// NodeOp is the kind of a node, as in torch.fx.
type NodeOp uint8

const (
	Placeholder NodeOp = iota
	CallFunction
	CallMethod
	GetAttr
	Output
)

var nodeOpNames = [...]string{"placeholder", "call_function", "call_method", "get_attr", "output"}

func (op NodeOp) String() string {
	if int(op) < len(nodeOpNames) {
		return nodeOpNames[op]
	}
	return fmt.Sprintf("NodeOp(%d)", uint8(op))
}

// parseNodeOp is the inverse of NodeOp.String.
func parseNodeOp(s string) (NodeOp, bool) {
	for i, name := range nodeOpNames {
		if name == s {
			return NodeOp(i), true
		}
	}
	return 0, false
}

// Node is one instruction of a graph.
//
// Target means, by Op:
//   - Placeholder: the input's name.
//   - CallFunction: the Python path of the callable ("torch.relu", "operator.add",
//     "torch.nn.functional.linear"); resolvable by importing the module and walking attributes.
//   - CallMethod: the Tensor method name ("view", "add_"); Args[0] is the tensor.
//   - GetAttr: the dotted path of a parameter or buffer under the graph's root module
//     ("fc1.weight"), the original name in the user's model.
//   - Output: "output"; Args[0] is the returned structure.
type Node struct {
	Name   string
	Op     NodeOp
	Target string
	Args   []Arg
	Kwargs []Kwarg
	// Meta is what the node produces: *primtorch.TensorMeta for a tensor, []any of metas for a
	// tuple (elements may be nil for None), or a Go scalar (int64, float64, bool, complex128) for a
	// Python number. Nil for Output.
	Meta any
	// Where is the user source line that produced the node ("model.py:12"), empty if unknown.
	Where string
	// Stack is the same place as a traceback line names it, for torch.fx's node.stack_trace
	// (`File "/path/model.py", line 12, in forward`), empty if unknown. It is metadata: the
	// text form does not print it and Equal does not compare it.
	Stack string

	index int
}

// Kwarg is one keyword argument; kwargs keep their order.
type Kwarg struct {
	Name  string
	Value Arg
}

// Arg is a node argument: *Node, Const, List, Tuple, Slice or Dict.
type Arg interface{ isArg() }

// Const is a constant argument. V is one of the scalar primtorch values: nil (None), bool,
// int64, float64, complex128, string, primtorch.DType, primtorch.Device, primtorch.Ellipsis,
// primtorch.MemoryFormat, primtorch.Layout.
type Const struct{ V any }

// List and Tuple are Python lists and tuples of arguments.
type List struct{ Elems []Arg }
type Tuple struct{ Elems []Arg }

// Slice is a Python slice; absent parts are Const{nil}.
type Slice struct{ Start, Stop, Step Arg }

// Dict is a Python dict with string keys, in insertion order (FX outputs can be dicts).
type Dict struct{ Entries []DictEntry }

// DictEntry is one key and its value.
type DictEntry struct {
	Key   string
	Value Arg
}

func (*Node) isArg() {}
func (Const) isArg() {}
func (List) isArg()  {}
func (Tuple) isArg() {}
func (Slice) isArg() {}
func (Dict) isArg()  {}

// TensorMeta returns the node's meta as a tensor meta, or nil when it is not a tensor.
func (n *Node) TensorMeta() *primtorch.TensorMeta {
	m, _ := n.Meta.(*primtorch.TensorMeta)
	return m
}

// Index is the node's position in its graph.
func (n *Node) Index() int { return n.index }

// Graph is a straight-line program over tensors: placeholders first, then calls and attribute
// reads in a valid execution order, then one Output node.
type Graph struct {
	Name  string
	Nodes []*Node
	// Shapes holds the size symbols the graph's metas and constants use (dynamic shapes), nil
	// for a graph with static shapes only. Each symbol's value at run time comes from the first
	// placeholder whose meta names it (SymbolBindings).
	Shapes *primtorch.ShapeEnv
	// Bumps is, for a decomposed graph, how many times eager's version counter of each graph
	// input (placeholder or get_attr, by name) the graph writes is bumped by its ops: one per
	// in-place op, out= or setitem, none for a kernel's own writes (batch_norm's running
	// statistics). Nil for graphs that write no input or were not decomposed.
	Bumps map[string]int
	names map[string]int
}

// New returns an empty graph.
func New(name string) *Graph { return &Graph{Name: name, names: map[string]int{}} }

func (g *Graph) add(n *Node) *Node {
	n.index = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	return n
}

// addNamed appends n under the name it already has (parsing, decoding, cloning) and reserves the
// name so later Add* calls do not reuse it. The caller has checked that the name is free.
func (g *Graph) addNamed(n *Node) *Node {
	if g.names == nil {
		g.names = map[string]int{}
	}
	if n.Op != Output {
		g.names[n.Name] = 0
	}
	return g.add(n)
}

// AddPlaceholder appends an input. Placeholders must come before every other node. Its target
// is the parameter's name in torch.fx's generated forward, so two placeholders never share one:
// a name an earlier placeholder's target has (a local stack0 and a resume function's ___stack0
// read alike) becomes the node's unique name.
func (g *Graph) AddPlaceholder(name string, meta any) *Node {
	unique := g.uniqueName(name)
	target := name
	for _, n := range g.Nodes {
		if n.Op == Placeholder && n.Target == name {
			target = unique
			break
		}
	}
	return g.add(&Node{Name: unique, Op: Placeholder, Target: target, Meta: meta})
}

// AddCall appends a call_function node.
func (g *Graph) AddCall(target string, args []Arg, kwargs []Kwarg, meta any) *Node {
	return g.add(&Node{Name: g.uniqueName(lastComponent(target)), Op: CallFunction, Target: target, Args: args, Kwargs: kwargs, Meta: meta})
}

// AddMethod appends a call_method node; args[0] is the receiver.
func (g *Graph) AddMethod(method string, args []Arg, kwargs []Kwarg, meta any) *Node {
	return g.add(&Node{Name: g.uniqueName(lastComponent(method)), Op: CallMethod, Target: method, Args: args, Kwargs: kwargs, Meta: meta})
}

// AddGetAttr appends a read of a parameter or buffer of the root module by its dotted path.
func (g *Graph) AddGetAttr(path string, meta any) *Node {
	return g.add(&Node{Name: g.uniqueName(path), Op: GetAttr, Target: path, Meta: meta})
}

// AddOutput appends the output node returning result.
func (g *Graph) AddOutput(result Arg) *Node {
	return g.add(&Node{Name: "output", Op: Output, Target: "output", Args: []Arg{result}})
}

// Placeholders returns the input nodes in order.
func (g *Graph) Placeholders() []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.Op == Placeholder {
			out = append(out, n)
		}
	}
	return out
}

// OutputNode returns the output node, or nil if the graph has none yet.
func (g *Graph) OutputNode() *Node {
	if len(g.Nodes) > 0 && g.Nodes[len(g.Nodes)-1].Op == Output {
		return g.Nodes[len(g.Nodes)-1]
	}
	return nil
}

// WalkArg calls f on every node referenced by a (recursively through lists, tuples, slices and
// dicts), in print order.
func WalkArg(a Arg, f func(*Node)) {
	switch a := a.(type) {
	case *Node:
		f(a)
	case List:
		for _, e := range a.Elems {
			WalkArg(e, f)
		}
	case Tuple:
		for _, e := range a.Elems {
			WalkArg(e, f)
		}
	case Slice:
		WalkArg(a.Start, f)
		WalkArg(a.Stop, f)
		WalkArg(a.Step, f)
	case Dict:
		for _, e := range a.Entries {
			WalkArg(e.Value, f)
		}
	}
}

// MapArg rebuilds a with every referenced node replaced by f(node); constants are shared, lists,
// tuples, slices and dicts are new.
func MapArg(a Arg, f func(*Node) Arg) Arg {
	switch a := a.(type) {
	case *Node:
		return f(a)
	case List:
		return List{Elems: MapArgs(a.Elems, f)}
	case Tuple:
		return Tuple{Elems: MapArgs(a.Elems, f)}
	case Slice:
		return Slice{Start: MapArg(a.Start, f), Stop: MapArg(a.Stop, f), Step: MapArg(a.Step, f)}
	case Dict:
		var entries []DictEntry
		if a.Entries != nil {
			entries = make([]DictEntry, len(a.Entries))
		}
		for i, e := range a.Entries {
			entries[i] = DictEntry{Key: e.Key, Value: MapArg(e.Value, f)}
		}
		return Dict{Entries: entries}
	}
	return a
}

// MapArgs is MapArg of each argument (nil stays nil).
func MapArgs(args []Arg, f func(*Node) Arg) []Arg {
	if args == nil {
		return nil
	}
	out := make([]Arg, len(args))
	for i, a := range args {
		out[i] = MapArg(a, f)
	}
	return out
}

// MapKwargs is MapArg of each keyword argument's value, names and order kept (nil stays nil).
func MapKwargs(kw []Kwarg, f func(*Node) Arg) []Kwarg {
	if kw == nil {
		return nil
	}
	out := make([]Kwarg, len(kw))
	for i, k := range kw {
		out[i] = Kwarg{Name: k.Name, Value: MapArg(k.Value, f)}
	}
	return out
}

// Inputs returns the nodes n reads, in argument order, each once.
func (n *Node) Inputs() []*Node {
	var out []*Node
	seen := map[*Node]bool{}
	visit := func(m *Node) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, a := range n.Args {
		WalkArg(a, visit)
	}
	for _, kw := range n.Kwargs {
		WalkArg(kw.Value, visit)
	}
	return out
}

// Users returns, for every node, the nodes that read it (in graph order).
func (g *Graph) Users() map[*Node][]*Node {
	users := map[*Node][]*Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs() {
			users[in] = append(users[in], n)
		}
	}
	return users
}

// PlaceholdersFirst moves the placeholders to the front in their order (a stable partition;
// capture discovers inputs while tracing, freezing turns some into get_attrs) and renumbers.
func (g *Graph) PlaceholdersFirst() {
	var ph, rest []*Node
	for _, n := range g.Nodes {
		if n.Op == Placeholder {
			ph = append(ph, n)
		} else {
			rest = append(rest, n)
		}
	}
	g.Nodes = append(ph, rest...)
	g.Renumber()
}

// Renumber restores node indices after Nodes was edited directly.
func (g *Graph) Renumber() {
	for i, n := range g.Nodes {
		n.index = i
	}
}
