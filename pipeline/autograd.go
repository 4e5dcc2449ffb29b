package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"ptgo/aotautograd"
	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/logs"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// The autograd path, for graphs autograd must see (a result requires grad): decompose, lift
// parameters, split into a forward and a backward prims graph with aotautograd (min-cut
// partition), then either compile both to C (Inductor) or turn both back into torch calls
// (AOTEager). The Host wraps them in one torch.autograd.Function per compiled region
// (ptgo._runtime.make_autograd_graph); parameters are passed as inputs so their gradients flow.

// NeedsAutograd reports whether a graph's results require grad on CPU tensors only.
// gradEnabled is the grad mode the graph starts in.
func NeedsAutograd(g *fxgraph.Graph, gradEnabled bool) bool {
	for _, n := range g.Nodes {
		for _, m := range metasOf(n.Meta) {
			if m.Device.Type != "cpu" {
				return false
			}
		}
	}
	return gradTracked(g, gradEnabled)
}

// gradTracked reports whether a value the graph computes gets a grad_fn, which autograd must
// see: it requires grad and is computed with grad mode on. gradEnabled is the mode the graph
// starts in; its _set_grad_enabled calls change it. A value computed with grad off whose meta
// still requires grad is an input written in place (an optimizer's parameter update under
// torch.no_grad()): the input itself, with no new grad_fn.
func gradTracked(g *fxgraph.Graph, gradEnabled bool) bool {
	mode := gradEnabled
	for _, n := range g.Nodes {
		if n.Op == fxgraph.CallFunction && n.Target == setGradEnabled && len(n.Args) == 1 {
			if c, ok := n.Args[0].(fxgraph.Const); ok {
				if b, ok := c.V.(bool); ok {
					mode = b
					continue
				}
			}
		}
		if !mode || n.Op == fxgraph.Placeholder || n.Op == fxgraph.GetAttr || n.Op == fxgraph.Output {
			continue
		}
		// A write into a tensor that requires grad gives it a new grad_fn (x[mask] = v, whose
		// setitem has no tensor value: fuzz seed 9255), even when nothing the graph returns
		// requires grad.
		if len(n.Args) > 0 && fxgraph.CallEffects(n)&primtorch.EffectWrites != 0 {
			if dst, ok := n.Args[0].(*fxgraph.Node); ok {
				if m := dst.TensorMeta(); m != nil && m.RequiresGrad {
					return true
				}
			}
		}
		for _, m := range metasOf(n.Meta) {
			if m.RequiresGrad {
				return true
			}
		}
	}
	return false
}

// anyRequiresGrad reports whether any value the graph computes requires grad, whatever the
// grad mode: freezing folds only graphs that touch nothing autograd tracks.
func anyRequiresGrad(g *fxgraph.Graph) bool {
	for _, n := range g.Nodes {
		if n.Op == fxgraph.Placeholder || n.Op == fxgraph.GetAttr {
			continue
		}
		for _, m := range metasOf(n.Meta) {
			if m.RequiresGrad {
				return true
			}
		}
	}
	return false
}

// autograd builds the autograd.Function-backed callable; 0 means it runs with torch.
func (c *compiler) autograd(toC bool) (py.Obj, error) {
	r := c.r
	pg, err := c.decompose()
	if pg == nil {
		return 0, err
	}
	if len(decomp.OutputAliases(pg)) > 0 {
		NoteFallback(r.Name, "an output is a view of an input (autograd must see the view)")
		return 0, nil
	}
	probe := c.probeAutograd()
	if probe.Refusal != "" {
		NoteFallback(r.Name, "the graph writes in place to a value torch's autograd needs, so its backward raises: "+probe.Refusal)
		return 0, nil
	}
	lifted, attrPaths := LiftAttrs(pg)
	// What a rerun or a recompute of the forward must undo: the inputs it writes, whether it
	// draws, and writes it cannot see (recomputeEffects).
	effects := &Region{}
	recomputeEffects(effects, r.Graph, lifted)
	if writes, _ := rerunEffects(r.Graph, pg); writes && HasChecks(pg) && effects.NoRecompute != "" {
		// a failed check hands the run to torch: the region's wrapper puts torch's generator
		// back where the failed forward found it and the inputs the forward writes (its
		// epilogue's prims.copy_s: a training BatchNorm's running statistics) back to their
		// values before it (A187, A208; checks run before those writes anyway: inductor's
		// orderChecks), so torch's run draws and writes as eager does. A write torch runs
		// itself (a prims.fallback that writes) has no such copy to undo it.
		NoteFallback(r.Name, "a check (an index, a float read from a tensor that Python raises for) in a graph whose forward writes an input through a call torch runs ("+effects.NoRecompute+"): a failed check could not hand the call to torch untouched")
		return 0, nil
	}
	var requires, state []bool
	phs := lifted.Placeholders()
	for i, p := range phs {
		m := p.TensorMeta()
		requires = append(requires, m != nil && m.RequiresGrad)
		state = append(state, i >= len(phs)-len(attrPaths)) // LiftAttrs puts the attributes last
	}
	split, err := aotautograd.Split(lifted, requires, aotautograd.Options{Check: c.cfg.CheckIR, ModuleState: state})
	if err != nil {
		if isUnsupported(err) || errors.Is(err, aotautograd.ErrNotDifferentiable) {
			NoteFallback(r.Name, err.Error())
			return 0, nil
		}
		return 0, err
	}
	// Every output eager autograd would track must get a gradient from the split (a
	// decomposition that drops requires_grad would otherwise lose gradients silently).
	if why := LostGradient(r.Graph, split); why != "" {
		NoteFallback(r.Name, why)
		return 0, nil
	}
	logs.Printf(logs.AOTGraphs, "%s: %s", r.Name, split.Summary())
	var fwd, bwd py.Obj
	if toC {
		// the forward and the backward compile at once (lowering, code generation and the C
		// compiler, whose runs take most of a cold compile); their runtimes are made here, on
		// the thread that holds the GIL. Symbolic halves compile one after the other: lowering
		// may specialise a size symbol both share.
		var fc, bc *inductor.Compiled
		var ferr, berr error
		fopts := inductor.Options{Check: c.cfg.CheckIR}
		bopts := fopts
		if dir := c.debugDir(); dir != "" {
			fopts.DebugDir, bopts.DebugDir = filepath.Join(dir, "forward"), filepath.Join(dir, "backward")
		}
		if inductor.IsSymbolic(split.Forward) || inductor.IsSymbolic(split.Backward) {
			fc, ferr = c.compileC(split.Forward, fopts)
			bc, berr = c.compileC(split.Backward, bopts)
		} else {
			var wg sync.WaitGroup
			wg.Go(func() {
				// a panic here would end the process (no recover up this goroutine's stack):
				// it becomes the forward's error, reported as the calling goroutine's are
				defer func() {
					if r := recover(); r != nil {
						fc, ferr = nil, fmt.Errorf("ptgo BUG: compiling the forward panicked: %v\n%s", r, debug.Stack())
					}
				}()
				fc, ferr = c.compileC(split.Forward, fopts)
			})
			bc, berr = c.compileC(split.Backward, bopts)
			wg.Wait()
		}
		if fwd, err = c.toRuntime(fc, ferr, r.Name+" (forward)"); err != nil {
			return 0, err
		}
		if bwd, err = c.toRuntime(bc, berr, r.Name+" (backward)"); err != nil {
			return 0, err
		}
		if fwd == 0 || bwd == 0 {
			return 0, nil
		}
	} else {
		if fwd, err = c.torchGraph(split.Forward); err == nil {
			bwd, err = c.torchGraph(split.Backward)
		}
		if err != nil {
			if isUnsupported(err) { // a size symbol no input of the graph carries
				NoteFallback(r.Name, err.Error())
				return 0, nil
			}
			return 0, err
		}
	}
	region := &Region{Name: r.Name, Forward: fwd, Backward: bwd, NumOutputs: split.NumOutputs,
		Tangents: append([]int(nil), split.Tangents...), GradDeps: split.GradDeps, Consts: c.consts(attrPaths), Rerun: c.regionRerun(pg),
		Floats: split.BackwardFloats, Guards: probe.Guards, BumpAfter: c.bumpsAfter()}
	if region.Recompute, err = c.h.TorchRerun(r.Graph, r.Attrs); err != nil {
		return 0, err
	}
	region.Written, region.Random, region.NoRecompute = effects.Written, effects.Random, effects.NoRecompute
	g, err := c.h.AutogradGraph(region)
	if err == nil && toC {
		count(&stats.autograd)
	}
	return g, err
}

// probeAutograd asks torch what eager's autograd does with the region's graph (Host.AutogradProbe,
// on dummy data): which values torch's ops save is torch's knowledge, and ptgo's own derivatives
// save others. Probe.Refusal: eager's backward would refuse a graph that writes in place to a
// value torch's autograd saved (ptgo's functional backward would not notice and return
// gradients); only graphs that write (the registry's effects: fxgraph.CallEffects) run the
// backward. Probe.Guards: the inputs and outputs eager saves, which user code after the graph
// may write in place (A152). A probe that fails answers nothing.
func (c *compiler) probeAutograd() Probe {
	writes := false
	for _, n := range c.r.Graph.Nodes {
		writes = writes || fxgraph.CallEffects(n)&primtorch.EffectWrites != 0
	}
	p, err := c.h.AutogradProbe(c.r.Graph, c.r.Attrs, c.r.GradEnabled, writes)
	if err != nil {
		return Probe{}
	}
	return p
}

// toRuntime makes the runtime object of a prims graph compiled to C (compileC's result);
// 0 when the C backend cannot run it (the reason is logged).
func (c *compiler) toRuntime(comp *inductor.Compiled, err error, name string) (py.Obj, error) {
	if err != nil {
		if strings.Contains(err.Error(), "ptgo BUG") || IsSymbolicUnsupported(err) {
			return 0, err // symbolic sizes the C backend cannot take: Compile answers NeedsStatic
		}
		NoteFallback(name, err.Error())
		return 0, nil
	}
	plan, err := comp.Program.JSON()
	if err != nil {
		return 0, err
	}
	lib := ""
	if comp.Library != nil {
		lib = comp.Library.Path
		defer comp.Library.Release() // the runtime graph loads its own reference
	}
	return c.h.CompiledGraph(plan, lib, nil, 0)
}

// torchGraph turns a prims graph back into torch calls (aot_eager).
func (c *compiler) torchGraph(g *fxgraph.Graph) (py.Obj, error) {
	tg, err := aotautograd.ToTorch(g)
	if err != nil {
		return 0, fmt.Errorf("aot_eager: %w", err)
	}
	return c.h.TorchGraph(tg)
}

// LostGradient compares which outputs of the torch-level graph g require grad with the split's
// tangents; "" when every output eager autograd would track has one.
func LostGradient(g *fxgraph.Graph, split *aotautograd.Graphs) string {
	out := g.OutputNode()
	if out == nil {
		return ""
	}
	tup, ok := out.Args[0].(fxgraph.Tuple)
	if !ok || len(tup.Elems) != split.NumOutputs {
		return "the split's outputs do not match the captured graph's"
	}
	tangent := map[int]bool{}
	for _, k := range split.Tangents {
		tangent[k] = true
	}
	for i, e := range tup.Elems {
		n, isNode := e.(*fxgraph.Node)
		if !isNode {
			continue
		}
		if m := n.TensorMeta(); m != nil && m.RequiresGrad && !tangent[i] {
			return fmt.Sprintf("ptgo's autograd would not differentiate output %d (%s at %s)", i, n.Name, n.Where)
		}
	}
	return ""
}
