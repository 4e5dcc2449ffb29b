package pipeline

import (
	"fmt"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Region is one compiled autograd region, for the Host to wrap in a torch.autograd.Function
// (ptgo._runtime.make_autograd_graph).
//
// The compiled backward is a function of the saved values only, computed with grad mode off: its
// gradients are not differentiable. A backward that runs with grad mode on (create_graph=True:
// gradient penalties, torch.autograd.functional.hessian) therefore does not run it: the Function
// recomputes the region's forward with torch from its inputs (Recompute) and differentiates that
// with torch.autograd.grad(create_graph=True), so eager's own derivative formulas give the
// gradients and their graph (A70). What recomputing must undo or replay is described here.
type Region struct {
	// Name says whose region it is in messages ("Block.forward").
	Name string
	// Forward takes the inputs then Consts and returns NumOutputs user outputs then the values
	// Backward saves; Backward takes the saved values then one tangent per Tangents entry and
	// returns one gradient (or None) per input.
	Forward, Backward py.Obj
	NumOutputs        int
	Tangents          []int
	// GradDeps is aotautograd.Graphs.GradDeps: for each input, the outputs its gradient depends
	// on (nil: every one).
	GradDeps [][]int
	Consts   []py.Obj
	// Rerun (0: none) runs the captured graph with torch when the forward rejects its data.
	Rerun py.Obj
	// Recompute runs the captured torch-level graph with torch on the inputs (Consts are read
	// by the graph itself): the double-backward path.
	Recompute py.Obj
	// Written lists the inputs (indices into inputs then Consts) the forward writes (BatchNorm's
	// running statistics, x.add_()): their values before the forward are kept so a recompute
	// reads what the forward read, and their values after it are put back.
	Written []int
	// BumpAfter lists the graph inputs whose version counters the region's caller bumps after
	// the forward, each once per bump (AliasChecked: the compiled forward writes memory without
	// bumping; InputBumps), so the versions the forward leaves are that many more than it sees.
	BumpAfter []int
	// Random is set when the forward draws random numbers: the generator's state before the
	// forward is kept so a recompute draws the same ones.
	Random bool
	// NoRecompute, when not "", says why the forward cannot be recomputed exactly (a call
	// whose writes ptgo cannot see); a double backward then raises with it instead of
	// differing from eager.
	NoRecompute string
	// Floats lists, for each float argument Backward takes after the tangents, the input whose
	// value it is (aotautograd.Graphs.BackwardFloats: a Python float read at run time).
	Floats []int
	// Guards (0: none) is Probe.Guards: the inputs and outputs whose memory eager's ops save for
	// their backward, whose version the region's backward checks as eager's does (A152).
	Guards py.Obj
}

// Probe is what Host.AutogradProbe learned from running a graph with torch.
type Probe struct {
	// Refusal is the first line of the error eager's backward raises for the graph's own
	// structure ("" when none, or when the backward was not probed).
	Refusal string
	// Guards (0: unknown) lists, opaquely for the Host's autograd Function, the graph's inputs
	// and outputs whose memory torch's ops saved for their backward, with their versions and
	// the outputs whose backward reads them (ptgo._runtime.autograd_probe): user code after the
	// graph that writes one of them in place makes eager's backward raise, whatever ptgo's own
	// derivatives save.
	Guards py.Obj
}

// recomputeEffects fills in what a recompute of the region must undo: the placeholders of the
// lifted prims graph the forward writes (functionalization leaves every write to an input as a
// final prims.copy_ into its placeholder), whether the torch-level graph g draws random
// numbers, and writes the copy_s do not show (a torch fallback of an in-place or unknown call).
func recomputeEffects(r *Region, g, lifted *fxgraph.Graph) {
	index := map[*fxgraph.Node]int{}
	for i, p := range lifted.Placeholders() {
		index[p] = i
	}
	seen := map[int]bool{}
	for _, n := range lifted.Nodes {
		if n.Op != fxgraph.CallFunction {
			continue
		}
		switch {
		case n.Target == "prims.copy_":
			if dst, ok := n.Args[0].(*fxgraph.Node); ok {
				if i, isInput := index[dst]; isInput && !seen[i] {
					seen[i] = true
					r.Written = append(r.Written, i)
				}
			}
		case n.Target == "prims.fallback":
			e := fallbackEffects(n)
			if e&primtorch.EffectWrites != 0 && r.NoRecompute == "" {
				r.NoRecompute = fmt.Sprintf("it calls %s, which torch runs and which may write its inputs", fallbackTarget(n))
			}
			if e&primtorch.EffectRandom != 0 {
				r.Random = true
			}
		}
	}
	for _, n := range g.Nodes {
		if fxgraph.CallEffects(n)&primtorch.EffectRandom != 0 {
			r.Random = true
		}
	}
}

func fallbackTarget(n *fxgraph.Node) string {
	if len(n.Args) > 0 {
		if c, ok := n.Args[0].(fxgraph.Const); ok {
			if s, ok := c.V.(string); ok {
				return s
			}
		}
	}
	return "?"
}

// fallbackEffects are the registry's effects of the torch-level call a prims.fallback runs
// (every effect when the call is not registered).
func fallbackEffects(n *fxgraph.Node) primtorch.Effects {
	call := &fxgraph.Node{Op: fxgraph.CallFunction, Target: fallbackTarget(n), Kwargs: n.Kwargs, Meta: n.Meta}
	if len(n.Args) > 0 {
		call.Args = n.Args[1:]
	}
	if rest, isMethod := strings.CutPrefix(call.Target, "Tensor."); isMethod {
		call.Op, call.Target = fxgraph.CallMethod, rest
	}
	return fxgraph.CallEffects(call)
}
