package pipeline

import (
	"fmt"
	"sort"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Buckets is how DistributedDataParallel groups gradients for its all-reduce: the first bucket
// (the last layers', whose gradients backward produces first) holds First bytes, every later
// one Cap bytes (DDP's bucket_bytes_cap, bucket_cap_mb=25 by default). Params says which of the
// graph's inputs are parameters DDP reduces (the graph reads the wrapped module's parameters as
// inputs when it is not the compiled root); its get_attrs that require grad are parameters too.
type Buckets struct {
	First, Cap int64
	Params     []bool
}

// Ref says where a value of a split graph comes from: Part -1 is the whole graph's input Index,
// otherwise output Index of part Part.
type Ref struct{ Part, Index int }

// Part is one piece of a graph split at bucket boundaries (SplitAtBuckets): a graph of its own
// whose placeholders come from Inputs.
type Part struct {
	Graph  *fxgraph.Graph
	Attrs  map[string]py.Obj
	Inputs []Ref
}

// Split is a graph cut into parts run one after the other; Outputs are the whole graph's
// outputs.
type Split struct {
	Parts   []Part
	Outputs []Ref
}

// SplitAtBuckets cuts a training graph of a module DistributedDataParallel wraps so that each
// part's parameters fill about one of DDP's gradient buckets (what torch.compile's DDPOptimizer
// does, ARCHITECTURE A150). Each part is its own autograd region, so its parameters' gradients
// are final when backward leaves it: DDP's hooks fire and the bucket's all-reduce runs while
// backward goes on through the earlier parts. One region would hand every gradient over at the
// end of backward, and every all-reduce would wait for it.
//
// A parameter counts where the graph first reads it: its gradient is complete once backward has
// passed that read. The walk goes from the output back, as backward does, and closes a part once
// its parameters reach the bucket size. A cut goes only where what crosses it is tensors and
// nothing after it writes, in place, a value computed before it (the earlier part's backward may
// have saved it). Graphs with size symbols or grad-mode switches are not split. nil: no cut.
func SplitAtBuckets(g *fxgraph.Graph, attrs map[string]py.Obj, b Buckets) *Split {
	if b.Cap <= 0 || g.Shapes != nil {
		return nil
	}
	out := g.OutputNode()
	if out == nil || len(out.Args) != 1 {
		return nil
	}
	results, ok := out.Args[0].(fxgraph.Tuple)
	if !ok {
		return nil
	}
	for _, r := range results.Elems {
		if _, ok := r.(*fxgraph.Node); !ok {
			return nil
		}
	}
	for _, n := range g.Nodes {
		if n.Op == fxgraph.CallFunction && n.Target == setGradEnabled {
			return nil
		}
	}
	// bytes[i]: the bytes of the parameters the graph first reads at node i
	bytes := make([]int64, len(g.Nodes))
	phs := g.Placeholders()
	if len(b.Params) != len(phs) {
		return nil
	}
	param := map[*fxgraph.Node]bool{}
	for k, p := range phs {
		param[p] = b.Params[k]
	}
	seen := map[*fxgraph.Node]bool{}
	for i, n := range g.Nodes {
		if n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod {
			continue
		}
		for _, in := range n.Inputs() {
			if m := in.TensorMeta(); (in.Op == fxgraph.GetAttr || param[in]) && m != nil && m.RequiresGrad && !seen[in] {
				seen[in] = true
				bytes[i] += m.Numel() * int64(m.DType.ItemSize())
			}
		}
	}
	var cuts []int // node indices each later part starts at, from the last part back
	var acc int64
	limit := b.First
	if limit <= 0 {
		limit = b.Cap
	}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		acc += bytes[i]
		if acc >= limit && i > 0 && cutAllowed(g, i) {
			cuts = append(cuts, i)
			acc, limit = 0, b.Cap
		}
	}
	if len(cuts) == 0 {
		return nil
	}
	// the first part holds what is left before the last cut; drop a cut that leaves it no work
	starts := []int{0}
	for k := len(cuts) - 1; k >= 0; k-- {
		starts = append(starts, cuts[k])
	}
	return buildSplit(g, attrs, starts, results.Elems)
}

// cutAllowed reports whether g can be cut before node i.
func cutAllowed(g *fxgraph.Graph, i int) bool {
	if k := g.Nodes[i].Op; k != fxgraph.CallFunction && k != fxgraph.CallMethod {
		return false
	}
	work := false
	for _, n := range g.Nodes[:i] {
		if n.Op == fxgraph.CallFunction || n.Op == fxgraph.CallMethod {
			work = true
		}
	}
	if !work {
		return false
	}
	computedBefore := func(n *fxgraph.Node) bool {
		return n.Index() < i && (n.Op == fxgraph.CallFunction || n.Op == fxgraph.CallMethod)
	}
	for _, n := range g.Nodes[i:] {
		for _, in := range n.Inputs() {
			if computedBefore(in) && in.TensorMeta() == nil {
				return false // a Python value or a tuple crosses: only tensors are handed over
			}
		}
		if fxgraph.CallEffects(n)&primtorch.EffectWrites == 0 {
			continue
		}
		for _, in := range n.Inputs() {
			if reachesThroughAliases(in, i, computedBefore) {
				return false
			}
		}
	}
	return true
}

// reachesThroughAliases reports whether n, a value at or after node i, is or may be a view of a
// value computed before i (following the calls at or after i whose result may alias an input:
// views, in-place calls, calls the registry does not know).
func reachesThroughAliases(n *fxgraph.Node, i int, computedBefore func(*fxgraph.Node) bool) bool {
	if computedBefore(n) {
		return true
	}
	if n.Index() < i || (n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod) {
		return false
	}
	target := n.Target
	if n.Op == fxgraph.CallMethod {
		target = "Tensor." + target
	}
	if op := primtorch.Lookup(target); op != nil && !op.AliasesInput() {
		return false
	}
	for _, in := range n.Inputs() {
		if reachesThroughAliases(in, i, computedBefore) {
			return true
		}
	}
	return false
}

// buildSplit makes the parts of g that start at the node indices starts (starts[0] == 0).
func buildSplit(g *fxgraph.Graph, attrs map[string]py.Obj, starts []int, results []fxgraph.Arg) *Split {
	partOf := func(n *fxgraph.Node) int {
		p := 0
		for k, s := range starts {
			if n.Index() >= s {
				p = k
			}
		}
		return p
	}
	inputIndex := map[*fxgraph.Node]int{}
	for k, p := range g.Placeholders() {
		inputIndex[p] = k
	}
	s := &Split{Parts: make([]Part, len(starts))}
	// the values each part must hand over (used by a later part or returned), in node order
	exported := make([][]*fxgraph.Node, len(starts))
	isExported := map[*fxgraph.Node]bool{}
	export := func(n *fxgraph.Node) {
		if isExported[n] || (n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod) {
			return
		}
		isExported[n] = true
		exported[partOf(n)] = append(exported[partOf(n)], n)
	}
	for _, n := range g.Nodes {
		if n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod {
			continue
		}
		for _, in := range n.Inputs() {
			if (in.Op == fxgraph.CallFunction || in.Op == fxgraph.CallMethod) && partOf(in) != partOf(n) {
				export(in)
			}
		}
	}
	for _, r := range results {
		export(r.(*fxgraph.Node))
	}
	// where each handed-over value is found: its part and output index, the outputs of a part
	// in node order
	produced := map[*fxgraph.Node]Ref{}
	for p := range exported {
		sort.Slice(exported[p], func(i, j int) bool { return exported[p][i].Index() < exported[p][j].Index() })
		for k, n := range exported[p] {
			produced[n] = Ref{p, k}
		}
	}
	for p := range starts {
		end := len(g.Nodes) - 1 // the output node
		if p+1 < len(starts) {
			end = starts[p+1]
		}
		pg := fxgraph.New(fmt.Sprintf("%s_part%d", g.Name, p))
		part := Part{Graph: pg, Attrs: map[string]py.Obj{}}
		local := map[*fxgraph.Node]*fxgraph.Node{}
		// inputs: the graph's placeholders and earlier parts' values this part reads, in the
		// order first read
		var body []*fxgraph.Node
		for _, n := range g.Nodes[starts[p]:end] {
			if n.Op == fxgraph.CallFunction || n.Op == fxgraph.CallMethod {
				body = append(body, n)
			}
		}
		for _, n := range body {
			for _, in := range n.Inputs() {
				if _, done := local[in]; done {
					continue
				}
				switch {
				case in.Op == fxgraph.Placeholder:
					local[in] = pg.AddPlaceholder(in.Target, in.Meta)
					part.Inputs = append(part.Inputs, Ref{-1, inputIndex[in]})
				case (in.Op == fxgraph.CallFunction || in.Op == fxgraph.CallMethod) && partOf(in) != p:
					local[in] = pg.AddPlaceholder(in.Name, in.Meta)
					part.Inputs = append(part.Inputs, produced[in])
				}
			}
		}
		for _, n := range body {
			for _, in := range n.Inputs() {
				if _, done := local[in]; !done && in.Op == fxgraph.GetAttr {
					local[in] = pg.AddGetAttr(in.Target, in.Meta)
					part.Attrs[in.Target] = attrs[in.Target]
				}
			}
			remap := func(in *fxgraph.Node) fxgraph.Arg { return local[in] }
			args, kwargs := fxgraph.MapArgs(n.Args, remap), fxgraph.MapKwargs(n.Kwargs, remap)
			if n.Op == fxgraph.CallFunction {
				local[n] = pg.AddCall(n.Target, args, kwargs, n.Meta)
			} else {
				local[n] = pg.AddMethod(n.Target, args, kwargs, n.Meta)
			}
			local[n].Where, local[n].Stack = n.Where, n.Stack
		}
		if len(exported[p]) == 0 {
			return nil // a part nothing reads: its work would be dead
		}
		outs := make([]fxgraph.Arg, len(exported[p]))
		for k, n := range exported[p] {
			outs[k] = local[n]
		}
		pg.AddOutput(fxgraph.Tuple{Elems: outs})
		s.Parts[p] = part
	}
	for _, r := range results {
		n := r.(*fxgraph.Node)
		if n.Op == fxgraph.Placeholder {
			s.Outputs = append(s.Outputs, Ref{-1, inputIndex[n]})
		} else if ref, ok := produced[n]; ok {
			s.Outputs = append(s.Outputs, ref)
		} else {
			return nil // an attribute returned as it is
		}
	}
	return s
}

// compileSplit compiles each part of a graph split at DDP's buckets as its own region and chains
// them (Host.Chain); 0 when a part would not compile as an autograd region (the whole graph
// then compiles as one).
func (c *compiler) compileSplit(s *Split, toC bool) (py.Obj, error) {
	objs := make([]py.Obj, len(s.Parts))
	for k, p := range s.Parts {
		if !NeedsAutograd(p.Graph, c.r.GradEnabled) {
			return 0, nil
		}
		r := *c.r
		r.Name = fmt.Sprintf("%s (part %d of %d, DDP bucket)", c.r.Name, k+1, len(s.Parts))
		r.Graph, r.Attrs = p.Graph, p.Attrs
		pc := &compiler{h: c.h, cfg: c.cfg, r: &r}
		obj, err := pc.autograd(toC)
		if err == nil {
			obj, err = pc.aliasChecked(obj)
		}
		if err != nil || obj == 0 {
			// the whole graph then compiles as one region (and reports its own errors)
			logs.Debugf(logs.AOTGraphs, "%s: not split at DDP's buckets: part %d does not compile alone (%v)", c.r.Name, k+1, err)
			return 0, nil
		}
		objs[k] = obj
	}
	inputs := make([][]Ref, len(s.Parts))
	for k, p := range s.Parts {
		inputs[k] = p.Inputs
	}
	logs.Printf(logs.AOTGraphs, "%s: split into %d regions at DistributedDataParallel's gradient buckets", c.r.Name, len(s.Parts))
	return c.h.Chain(objs, inputs, s.Outputs)
}
