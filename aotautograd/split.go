package aotautograd

import (
	"fmt"
	"strings"

	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Options tunes Split.
type Options struct {
	// Partition is MinCut (the default) or SaveAll.
	Partition Partition
	// RecomputeReductions lets the partition recompute reductions and scans (sum, amax, ...,
	// cumsum) in the backward. Off by default: softmax and norms are made of them, their results
	// are small to save, and recomputing them reads their whole input (PT2's
	// ban_recompute_reductions).
	RecomputeReductions bool
	// Check verifies the joint, forward and backward graphs with decomp.Verify (tests,
	// PTGO_CHECK=1).
	Check bool
	// ModuleState marks, per placeholder, a module's parameter or buffer (the pipeline's lifted
	// attributes): the partition may save those in place of values computed from them, since
	// user code writes them in place only outside a forward and its backward (an optimizer
	// step). Other inputs are saved only where the backward reads them itself (A115). nil:
	// the inputs that require grad count as module state.
	ModuleState []bool
}

// Graphs is a prims graph differentiated and partitioned into a forward and a backward graph.
type Graphs struct {
	// Forward takes the prims graph's placeholders (the same names, metas and order) and
	// returns a flat tuple: the NumOutputs user outputs (the prims graph's output structure
	// flattened in order), then the Saved values. It keeps the prims graph's copy_ epilogue.
	Forward *fxgraph.Graph
	// Backward takes the Saved values then one tangent per entry of Tangents (contiguous
	// tensors of the output's shape and dtype) and returns one entry per placeholder of the
	// prims graph: its gradient, or None (a Python None constant) when it does not require grad
	// or no output depends on it.
	Backward   *fxgraph.Graph
	NumOutputs int
	Saved      []Saved
	// Tangents lists, for each tangent placeholder of Backward, the index of the user output
	// it is the gradient of. Outputs that do not require grad (integers, bools, values that do
	// not depend on an input requiring grad) have no tangent.
	Tangents []int
	// GradDeps lists, for each placeholder of the prims graph, the user outputs its gradient
	// depends on (those whose value depends on it through values that require grad: eager's
	// autograd graph); nil for placeholders that get no gradient. An input none of whose
	// outputs the caller differentiates gets None from eager (.grad stays None), not zeros.
	GradDeps [][]int
	// BackwardFloats lists, for each float placeholder of Backward (after the tangents), the
	// index of the forward placeholder whose value it takes (a Python float read at run time,
	// floats.go).
	BackwardFloats []int
	// Recomputed names the forward nodes Backward computes again instead of reading them.
	Recomputed []string
	// SavedBytes is the size of Saved; SaveAllBytes that of the SaveAll partition's.
	SavedBytes, SaveAllBytes int64
	// Joint is the joint forward+backward graph the partition cut.
	Joint *fxgraph.Graph
}

// Saved is one value the forward returns for the backward.
type Saved struct {
	Name  string // its node's name, in Forward and as Backward's placeholder
	Meta  *primtorch.TensorMeta
	Input int // the index of the forward placeholder it is, -1 for a computed value
	Bytes int64
}

// Split differentiates a prims graph (decomp.Decompose's result, parameters lifted to
// placeholders) with respect to the placeholders whose requiresGrad flag is set and partitions
// the joint graph into a forward and a backward graph. Errors wrap primtorch.ErrUnsupported
// when the graph is valid but ptgo cannot differentiate it (ErrNotDifferentiable: a gradient
// reaches a prims.fallback; inputs the graph writes that require grad or that the backward
// reads): the caller runs it with torch. "ptgo BUG" errors are aotautograd's own bugs.
func Split(g *fxgraph.Graph, requiresGrad []bool, opts Options) (s *Graphs, err error) {
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(bugError)
			if !ok {
				panic(r)
			}
			s, err = nil, fmt.Errorf("aotautograd: ptgo BUG: %s (graph %s); report it with the graph printed by PTGO_LOGS=aot_graphs", be.msg, g.Name)
		}
	}()
	jt, err := buildJoint(g, requiresGrad)
	if err != nil {
		return nil, err
	}
	if opts.Check {
		if err := verify(jt.g); err != nil {
			return nil, fmt.Errorf("aotautograd: ptgo BUG: the joint graph of %s is invalid: %w", g.Name, err)
		}
	}
	sets := jt.classify()
	all := jt.saveAll(sets, opts.RecomputeReductions)
	saved := all
	if opts.Partition == MinCut {
		state := map[string]bool{}
		for i, p := range g.Placeholders() {
			m := p.TensorMeta()
			if opts.ModuleState == nil && m != nil && m.RequiresGrad || i < len(opts.ModuleState) && opts.ModuleState[i] {
				state[p.Name] = true
			}
		}
		if saved, err = jt.minCut(sets, opts.RecomputeReductions, state); err != nil {
			return nil, err
		}
	}
	fw, bw, recomputed, err := jt.extract(saved, sets, opts.RecomputeReductions)
	if err != nil {
		return nil, err
	}
	if g.Shapes != nil {
		// The backward reads its size symbols from its inputs' sizes: save what carries them.
		more, changed, err := jt.carrySymbols(bw, saved, sets)
		if err != nil {
			return nil, err
		}
		if changed {
			// The values saved only for their sizes count for save-all too.
			inAll := map[*fxgraph.Node]bool{}
			for _, n := range all {
				inAll[n] = true
			}
			wasSaved := map[*fxgraph.Node]bool{}
			for _, n := range saved {
				wasSaved[n] = true
			}
			for _, n := range more {
				if !wasSaved[n] && !inAll[n] {
					all = append(all, n)
				}
			}
			saved = more
			if fw, bw, recomputed, err = jt.extract(saved, sets, opts.RecomputeReductions); err != nil {
				return nil, err
			}
		}
		if err := checkSymbols(bw); err != nil {
			return nil, err
		}
	}
	floats, err := addBackwardFloats(bw, fw)
	if err != nil {
		return nil, err
	}
	if opts.Check {
		for _, x := range []*fxgraph.Graph{fw, bw} {
			if err := verify(x); err != nil {
				return nil, fmt.Errorf("aotautograd: ptgo BUG: the %s graph of %s is invalid: %w", x.Name, g.Name, err)
			}
		}
	}
	for _, n := range saved {
		if n.TensorMeta() == nil {
			// (an int input a recomputed node reads: the runtime saves tensors only)
			return nil, unsupportedf("the backward of %s reads %s (%v), which is not a tensor", g.Name, n.Name, n.Meta)
		}
	}
	s = &Graphs{Forward: fw, Backward: bw, NumOutputs: len(jt.outs), Tangents: jt.tangentOf, Joint: jt.g,
		SavedBytes: savedBytes(saved), SaveAllBytes: savedBytes(all), GradDeps: jt.gradDeps(), BackwardFloats: floats}
	primal := map[*fxgraph.Node]int{}
	for i, p := range jt.primals {
		primal[p] = i
	}
	for _, n := range saved {
		in := -1
		if i, ok := primal[n]; ok {
			in = i
		}
		s.Saved = append(s.Saved, Saved{Name: n.Name, Meta: n.TensorMeta(), Input: in, Bytes: bytesOf(n.Meta)})
	}
	for _, n := range recomputed {
		s.Recomputed = append(s.Recomputed, n.Name)
	}
	s.log(g.Name, opts.Partition)
	return s, nil
}

// Summary says what the partition decided, in one line.
func (s *Graphs) Summary() string {
	var inputs int
	for _, v := range s.Saved {
		if v.Input >= 0 {
			inputs++
		}
	}
	line := fmt.Sprintf("saves %d tensors (%d inputs), %d bytes; saving everything the backward reads: %d bytes", len(s.Saved), inputs, s.SavedBytes, s.SaveAllBytes)
	if s.SaveAllBytes > 0 {
		line += fmt.Sprintf(" (%.0f%%)", 100*float64(s.SavedBytes)/float64(s.SaveAllBytes))
	}
	if len(s.Recomputed) > 0 {
		line += fmt.Sprintf("; recomputes %d nodes in the backward: %s", len(s.Recomputed), strings.Join(s.Recomputed, ", "))
	}
	return line
}

// log writes the decision and both graphs on the aot_graphs channel (the joint graph at debug
// level).
func (s *Graphs) log(name string, p Partition) {
	if logs.DebugOn(logs.AOTGraphs) {
		logs.Debugf(logs.AOTGraphs, "joint graph of %s:\n%s", name, s.Joint)
	}
	if !logs.On(logs.AOTGraphs) {
		return
	}
	logs.Printf(logs.AOTGraphs, "%s partition of %s: %s", p, name, s.Summary())
	logs.Printf(logs.AOTGraphs, "forward graph of %s:\n%s", name, s.Forward)
	logs.Printf(logs.AOTGraphs, "backward graph of %s:\n%s", name, s.Backward)
}
