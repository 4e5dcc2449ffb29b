package aotautograd

import (
	"errors"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Partition chooses which forward values the backward reads from the forward (saved) and which
// it computes again.
type Partition uint8

const (
	// MinCut saves the set of tensors of fewest bytes from which the backward can compute
	// everything it needs, recomputing cheap ops (pointwise, views, casts, copies, data
	// movement, factories; reductions and scans with Options.RecomputeReductions) but never
	// externs (mm, bmm, addmm, convolution) or fallbacks (random ops, torch-level calls): a
	// minimum cut of the joint graph (see the package documentation).
	MinCut Partition = iota
	// SaveAll saves every forward value the backward reads (the bases of views), recomputing
	// nothing the forward computes but views: the baseline MinCut is measured against.
	SaveAll
)

func (p Partition) String() string {
	if p == SaveAll {
		return "save-all"
	}
	return "min-cut"
}

// sets classifies the joint graph's nodes.
type sets struct {
	tangent  map[*fxgraph.Node]bool // depends on a tangent: must run in the backward
	backward map[*fxgraph.Node]bool // an ancestor of a gradient output
	forward  map[*fxgraph.Node]bool // an ancestor of a user output or of the copy_ epilogue
	mutated  map[*fxgraph.Node]bool // inputs the copy_ epilogue writes
	users    map[*fxgraph.Node][]*fxgraph.Node
}

func isGradAs(n *fxgraph.Node) bool {
	return n.Op == fxgraph.CallFunction && n.Target == "prims.grad_as" && len(n.Args) > 0
}

// ancestors is roots and the nodes their values are computed from (not past a node stop
// accepts). A grad_as(x, e, f) node's value is x's: e and f only carry its gradient, which the
// joint graph's derivative nodes route to e, so they are ancestors only where something else
// reads them (a softmax's gradient term, a max pool's gather, computed in neither graph).
func ancestors(roots []*fxgraph.Node, stop func(*fxgraph.Node) bool) map[*fxgraph.Node]bool {
	seen := map[*fxgraph.Node]bool{}
	stack := append([]*fxgraph.Node(nil), roots...)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n == nil || seen[n] {
			continue
		}
		seen[n] = true
		if stop != nil && stop(n) {
			continue
		}
		stack = append(stack, valueInputs(n)...)
	}
	return seen
}

// valueInputs are the nodes n's value is computed from: its inputs, a grad_as node's x only.
func valueInputs(n *fxgraph.Node) []*fxgraph.Node {
	if isGradAs(n) {
		if x, ok := n.Args[0].(*fxgraph.Node); ok {
			return []*fxgraph.Node{x}
		}
		return nil
	}
	return n.Inputs()
}

// valueOnly makes a clone of a grad_as node what computes its value: clone(x).
func valueOnly(c *fxgraph.Node) *fxgraph.Node {
	if isGradAs(c) {
		c.Target, c.Args, c.Kwargs = "prims.clone", c.Args[:1], nil
	}
	return c
}

func (jt *joint) classify() *sets {
	s := &sets{tangent: map[*fxgraph.Node]bool{}, mutated: map[*fxgraph.Node]bool{}, users: jt.g.Users()}
	for _, t := range jt.tangents {
		s.tangent[t] = true
	}
	for _, n := range jt.g.Nodes {
		for _, in := range n.Inputs() {
			if s.tangent[in] {
				s.tangent[n] = true
			}
		}
	}
	s.backward = ancestors(jt.gradIns, nil)
	var roots []*fxgraph.Node
	for _, o := range jt.outs {
		if n, ok := o.(*fxgraph.Node); ok {
			roots = append(roots, n)
		}
	}
	s.forward = ancestors(append(append(roots, jt.epilogue...), jt.effectful(s)...), nil)
	for _, e := range jt.epilogue {
		if dst, ok := e.Args[0].(*fxgraph.Node); ok {
			s.mutated[dst] = true
		}
	}
	return s
}

// effectful returns the forward's calls with effects (fxgraph.CallEffects: a random op, an
// index that may be out of range) whatever reads them: the forward computes them even when no
// output needs their value (a dead torch.rand still advances torch's generator).
func (jt *joint) effectful(s *sets) []*fxgraph.Node {
	var out []*fxgraph.Node
	for _, n := range jt.g.Nodes {
		if (n.Op == fxgraph.CallFunction || n.Op == fxgraph.CallMethod) && !s.tangent[n] && n.Target != "prims.copy_" &&
			fxgraph.CallEffects(n) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// isInput reports whether n is a graph input (a primal placeholder or a get_attr buffer).
func isInput(n *fxgraph.Node, s *sets) bool {
	return (n.Op == fxgraph.Placeholder && !s.tangent[n]) || n.Op == fxgraph.GetAttr
}

// banned is the package-level rule plus the values the backward compares for equality with
// results the forward computed from them (jt.exact).
func (jt *joint) banned(n *fxgraph.Node, recomputeReductions bool) bool {
	return banned(n, recomputeReductions) || jt.exact[n]
}

// banned reports whether n must never be recomputed: externs (matrix products, convolutions),
// fallbacks (random ops, torch-level calls) and the items of a fallback's tuple; reductions and
// scans too unless recomputeReductions (softmax and norms are made of them: their results are
// small to save, recomputing them reads their whole input).
func banned(n *fxgraph.Node, recomputeReductions bool) bool {
	if n.Op != fxgraph.CallFunction {
		return false
	}
	if n.Target == "operator.getitem" {
		return true
	}
	op := primtorch.Lookup(n.Target)
	if op == nil {
		return false
	}
	switch op.ID {
	case primtorch.OpPrimCumsum, primtorch.OpPrimCumprod:
		return !recomputeReductions
	}
	return op.Kind == primtorch.KindExtern || (op.Kind == primtorch.KindReduction && !recomputeReductions)
}

// weight is the capacity of n's edge in the flow network: the bytes saving n costs, inf when
// n cannot be saved (tangent-dependent values, views — saving a view keeps its base alive, so
// the base is saved instead —, tuples, inputs the forward writes).
func weight(n *fxgraph.Node, s *sets) int64 {
	switch {
	case s.tangent[n], isView(n), s.mutated[n]:
		return inf
	}
	if _, tuple := n.Meta.([]any); tuple {
		return inf
	}
	return bytesOf(n.Meta)
}

// minCut returns the saved values of the min-cut partition. The network has two vertices per
// node n of the backward's ancestors, n.in → n.out with capacity weight(n), edges u.out → n.in
// of infinite capacity for each input u of n, source → n.in for graph inputs and banned nodes
// (they are computed in the forward), and n.out → sink for tangent-dependent nodes and the
// gradients (they are computed in the backward). A node whose in is on the source side of the cut and out on the
// sink side is saved; one wholly on the sink side is computed in the backward.
func (jt *joint) minCut(s *sets, recomputeReductions bool, moduleState map[string]bool) ([]*fxgraph.Node, error) {
	saved, err := jt.cut(s, recomputeReductions, moduleState)
	if errors.Is(err, errInfiniteCut) {
		saved, err = jt.cut(s, recomputeReductions, nil)
	}
	return saved, err
}

// errInfiniteCut: no finite cut exists under the constraints asked for.
var errInfiniteCut = errors.New("aotautograd: the min-cut is infinite")

// readByBackward is the graph inputs the backward reads itself (or through views of them):
// the inputs eager's autograd saves too. An input read only through values computed from it
// (an embedding's indices from x.long() % 5, x * s from an activation after a graph break) is
// not saved in their stead: eager saves those values, and code after the graph may write the
// input in place before the backward runs, which eager allows (fuzz seeds 1483, 1470) and a
// saved input would refuse. A module's parameters and buffers stay free to be recomputed from
// (a LayerNorm's affine output from its weight): user code writes them in place only outside
// a forward and its backward (an optimizer step).
func readByBackward(nodes []*fxgraph.Node, s *sets) map[*fxgraph.Node]bool {
	read := map[*fxgraph.Node]bool{}
	for _, n := range nodes {
		if !s.tangent[n] {
			continue
		}
		for _, u := range n.Inputs() {
			if r := storageRoot(u); isInput(r, s) {
				read[r] = true
			}
		}
	}
	return read
}

// cut computes the min-cut; with moduleState non-nil, graph inputs that are not module state
// and that the backward does not read itself (readByBackward) cannot be saved.
func (jt *joint) cut(s *sets, recomputeReductions bool, moduleState map[string]bool) ([]*fxgraph.Node, error) {
	eagerInputs := moduleState != nil
	var nodes []*fxgraph.Node
	id := map[*fxgraph.Node]int{}
	for _, n := range jt.g.Nodes {
		if s.backward[n] {
			id[n] = len(nodes)
			nodes = append(nodes, n)
		}
	}
	const source, sink = 0, 1
	in := func(i int) int { return 2 + 2*i }
	out := func(i int) int { return 3 + 2*i }
	f := newFlowGraph(2 + 2*len(nodes))
	gradOut := map[*fxgraph.Node]bool{}
	for _, gi := range jt.gradIns {
		if gi != nil {
			gradOut[gi] = true
		}
	}
	var direct map[*fxgraph.Node]bool
	if eagerInputs {
		direct = readByBackward(nodes, s)
	}
	for i, n := range nodes {
		w := weight(n, s)
		if eagerInputs && isInput(n, s) && !direct[n] && !gradOut[n] && !moduleState[n.Name] {
			w = inf
		}
		f.addEdge(in(i), out(i), w)
		switch {
		case s.tangent[n] || gradOut[n]:
			// (a gradient no tangent reaches, torch's zeros_like(grad) times an input, is
			// still the backward's: it is computed there or saved)
			f.addEdge(out(i), sink, inf)
		case isInput(n, s) || jt.banned(n, recomputeReductions):
			f.addEdge(source, in(i), inf)
		}
		for _, u := range valueInputs(n) {
			f.addEdge(out(id[u]), in(i), inf)
		}
	}
	if flow := f.maxFlow(source, sink); flow >= inf {
		if eagerInputs {
			return nil, errInfiniteCut
		}
		for _, n := range nodes {
			if s.mutated[n] && !s.tangent[n] {
				return nil, unsupportedf("the backward reads input %s, which the forward's epilogue writes (prims.copy_)", n.Name)
			}
		}
		bug("the min-cut of the joint graph is infinite")
	}
	side := f.sourceSide(source)
	var saved []*fxgraph.Node
	for i, n := range nodes {
		if side[in(i)] && !side[out(i)] {
			saved = append(saved, n)
		}
	}
	return saved, nil
}

// saveAll returns the saved values of the save-everything partition: every value the forward
// computes that a backward node outside the forward reads (a view's base instead of the view),
// and banned nodes only the backward needs.
func (jt *joint) saveAll(s *sets, recomputeReductions bool) []*fxgraph.Node {
	want := map[*fxgraph.Node]bool{}
	for _, n := range jt.g.Nodes {
		if !s.backward[n] || s.tangent[n] {
			continue
		}
		if !s.forward[n] {
			if jt.banned(n, recomputeReductions) {
				want[n] = true
			}
			continue
		}
		for _, u := range s.users[n] {
			if s.backward[u] && !s.forward[u] {
				want[storageRoot(n)] = true
			}
		}
	}
	var saved []*fxgraph.Node
	for _, n := range jt.g.Nodes {
		if want[n] {
			saved = append(saved, n)
		}
	}
	return saved
}

// extract builds the forward and backward graphs for a set of saved values. It returns the
// forward nodes the backward computes again.
func (jt *joint) extract(saved []*fxgraph.Node, s *sets, recomputeReductions bool) (fw, bw *fxgraph.Graph, recomputed []*fxgraph.Node, err error) {
	isSaved := map[*fxgraph.Node]bool{}
	for _, n := range saved {
		isSaved[n] = true
	}
	bwSet := ancestors(jt.gradIns, func(n *fxgraph.Node) bool { return isSaved[n] })
	var roots []*fxgraph.Node
	for _, o := range jt.outs {
		if n, ok := o.(*fxgraph.Node); ok {
			roots = append(roots, n)
		}
	}
	fwSet := ancestors(append(append(append(roots, jt.epilogue...), saved...), jt.effectful(s)...), nil)
	for _, n := range jt.g.Nodes {
		if !bwSet[n] || isSaved[n] || s.tangent[n] {
			continue
		}
		if isInput(n, s) {
			bug("the partition leaves input %s to the backward unsaved", n.Name)
		}
		if fwSet[n] {
			if jt.banned(n, recomputeReductions) {
				bug("the partition recomputes %s = %s in the backward", n.Name, n.Target)
			}
			recomputed = append(recomputed, n)
		}
	}

	index := map[*fxgraph.Node]int{}
	for i, n := range jt.g.Nodes {
		index[n] = i
	}
	// Forward: the primals, the nodes computing outputs and saved values, the epilogue.
	fw = fxgraph.Clone(jt.g)
	fw.Name = "forward"
	var fwNodes []*fxgraph.Node
	for i, n := range jt.g.Nodes {
		if n.Op == fxgraph.Output || s.tangent[n] {
			continue
		}
		if fwSet[n] || (n.Op == fxgraph.Placeholder) {
			fwNodes = append(fwNodes, valueOnly(fw.Nodes[i]))
		}
	}
	fwOuts := make([]fxgraph.Arg, 0, len(jt.outs)+len(saved))
	for _, o := range jt.outs {
		fwOuts = append(fwOuts, remap(o, fw, index))
	}
	for _, n := range saved {
		fwOuts = append(fwOuts, fw.Nodes[index[n]])
	}
	fw.Nodes = fwNodes
	fw.AddOutput(fxgraph.Tuple{Elems: fwOuts})
	fw.Renumber()

	// Backward: the saved values and tangents as placeholders, then what computes the
	// gradients from them.
	bw = fxgraph.Clone(jt.g)
	bw.Name = "backward"
	var phs, body []*fxgraph.Node
	for _, n := range saved {
		c := bw.Nodes[index[n]]
		c.Op, c.Target, c.Args, c.Kwargs, c.Where = fxgraph.Placeholder, c.Name, nil, nil, ""
		phs = append(phs, c)
	}
	for i, n := range jt.g.Nodes {
		switch {
		case n.Op == fxgraph.Output || isSaved[n]:
		case n.Op == fxgraph.Placeholder && s.tangent[n]:
			phs = append(phs, bw.Nodes[i])
		case bwSet[n]:
			body = append(body, valueOnly(bw.Nodes[i]))
		}
	}
	bwOuts := make([]fxgraph.Arg, len(jt.gradIns))
	for i, gi := range jt.gradIns {
		if gi == nil {
			bwOuts[i] = fxgraph.Const{V: nil}
		} else {
			bwOuts[i] = bw.Nodes[index[gi]]
		}
	}
	bw.Nodes = append(phs, body...)
	bw.AddOutput(fxgraph.Tuple{Elems: bwOuts})
	bw.Renumber()
	for _, n := range bw.Nodes {
		clearRequiresGrad(n.Meta)
	}
	return fw, bw, recomputed, nil
}

// remap maps an output argument of the joint graph to the same node of a clone.
func remap(a fxgraph.Arg, c *fxgraph.Graph, index map[*fxgraph.Node]int) fxgraph.Arg {
	return fxgraph.MapArg(a, func(n *fxgraph.Node) fxgraph.Arg { return c.Nodes[index[n]] })
}

func clearRequiresGrad(m any) {
	switch v := m.(type) {
	case *primtorch.TensorMeta:
		v.RequiresGrad = false
	case []any:
		for _, e := range v {
			clearRequiresGrad(e)
		}
	}
}

// savedBytes is the total size of saved values.
func savedBytes(saved []*fxgraph.Node) int64 {
	var b int64
	for _, n := range saved {
		b += bytesOf(n.Meta)
	}
	return b
}
