package main

import (
	"errors"
	"fmt"
	"strings"

	"ptgo/aotautograd"
	"ptgo/bytecode"
	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/logs"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// Graphs autograd must see (a result requires grad): decompose, lift parameters, split into a
// forward and a backward prims graph with aotautograd (min-cut partition), then either compile
// both to C (backend "inductor") or turn both back into torch calls (backend "aot_eager"). The
// Python runtime wraps them in one torch.autograd.Function per compiled region
// (ptgo._runtime.make_autograd_graph); parameters are passed as inputs so their gradients flow.

// needsAutograd reports whether a graph's results require grad on CPU tensors only.
func needsAutograd(g *fxgraph.Graph) bool {
	grad := false
	for _, n := range g.Nodes {
		for _, m := range metasOf(n.Meta) {
			if m.Device.Type != "cpu" {
				return false
			}
			if m.RequiresGrad && n.Op != fxgraph.Placeholder && n.Op != fxgraph.GetAttr {
				grad = true
			}
		}
	}
	return grad
}

// compileAutograd builds the autograd.Function-backed callable; ok=false: run with torch.
func compileAutograd(api py.API, cap *bytecode.Capture, qual string, toC bool) (py.Obj, bool, error) {
	pg, err := decomp.Decompose(cap.Graph, decomp.Options{Check: state.config.CheckIR, NoGrad: !cap.GradEnabled})
	if err != nil {
		if errors.Is(err, primtorch.ErrUnsupported) {
			noteFallback(qual, err.Error())
			return 0, false, nil
		}
		return 0, false, err
	}
	if len(decomp.OutputAliases(pg)) > 0 {
		noteFallback(qual, "an output is a view of an input (autograd must see the view)")
		return 0, false, nil
	}
	if why := savedValueWritten(api, cap); why != "" {
		noteFallback(qual, why)
		return 0, false, nil
	}
	lifted, attrPaths := liftAttrs(pg)
	var requires []bool
	for _, p := range lifted.Placeholders() {
		m := p.TensorMeta()
		requires = append(requires, m != nil && m.RequiresGrad)
	}
	split, err := aotautograd.Split(lifted, requires, aotautograd.Options{Check: state.config.CheckIR})
	if err != nil {
		if errors.Is(err, primtorch.ErrUnsupported) || errors.Is(err, aotautograd.ErrNotDifferentiable) {
			noteFallback(qual, err.Error())
			return 0, false, nil
		}
		return 0, false, err
	}
	// Every output eager autograd would track must get a gradient from the split (a
	// decomposition that drops requires_grad would otherwise lose gradients silently).
	if why := lostGradient(cap.Graph, split); why != "" {
		noteFallback(qual, why)
		return 0, false, nil
	}
	logs.Printf(logs.AOTGraphs, "%s: %s", qual, split.Summary())
	var fwd, bwd py.Obj
	if toC {
		if fwd, err = compileToRuntime(api, split.Forward, qual+" (forward)"); err != nil {
			return 0, false, err
		}
		if bwd, err = compileToRuntime(api, split.Backward, qual+" (backward)"); err != nil {
			return 0, false, err
		}
		if fwd == 0 || bwd == 0 {
			return 0, false, nil
		}
	} else {
		if fwd, err = torchGraph(api, split.Forward, cap); err != nil {
			return 0, false, err
		}
		if bwd, err = torchGraph(api, split.Backward, cap); err != nil {
			return 0, false, err
		}
	}
	var consts []py.Obj
	for _, p := range attrPaths {
		consts = append(consts, cap.Attrs[p])
	}
	tangents := make([]py.Obj, len(split.Tangents))
	for i, k := range split.Tangents {
		tangents[i] = api.NewInt(int64(k))
	}
	deps := make([]py.Obj, len(split.GradDeps))
	for i, ks := range split.GradDeps {
		if ks == nil {
			deps[i] = api.None()
			continue
		}
		items := make([]py.Obj, len(ks))
		for j, k := range ks {
			items[j] = api.NewInt(int64(k))
		}
		deps[i] = api.NewList(items)
	}
	g, err := runtimeCall(api, "make_autograd_graph", fwd, bwd, api.NewInt(int64(split.NumOutputs)),
		api.NewList(tangents), api.NewList(consts), torchRerun(api, cap, pg), api.NewList(deps))
	if err != nil {
		return 0, false, err
	}
	return g, true, nil
}

// savedValueWritten says why eager's backward would refuse a graph that writes in place: torch's
// autograd saved a value the graph then overwrites (ptgo's functional backward would not notice
// and return gradients). Which values torch's ops save is torch's knowledge, so torch answers
// (ptgo._runtime.autograd_probe, on dummy data); "" for graphs without writes.
func savedValueWritten(api py.API, cap *bytecode.Capture) string {
	writes := false
	for _, n := range cap.Graph.Nodes {
		writes = writes || fxgraph.CallEffects(n)&primtorch.EffectWrites != 0
	}
	if !writes {
		return ""
	}
	js, attrs, err := graphForPython(api, cap)
	if err != nil {
		return ""
	}
	r, err := runtimeCall(api, "autograd_probe", js, attrs, api.NewBool(cap.GradEnabled))
	if err != nil || r == api.None() {
		return ""
	}
	msg, _ := api.Str(r)
	return "the graph writes in place to a value torch's autograd needs, so its backward raises: " + msg
}

// compileToRuntime compiles a prims graph to C and returns the runtime object; 0 when the C
// backend cannot run it (the reason is logged).
func compileToRuntime(api py.API, g *fxgraph.Graph, qual string) (py.Obj, error) {
	comp, err := inductor.Compile(g, inductor.Options{Check: state.config.CheckIR})
	if err != nil {
		if strings.Contains(err.Error(), "ptgo BUG") {
			return 0, err
		}
		noteFallback(qual, err.Error())
		return 0, nil
	}
	plan, err := comp.Program.JSON()
	if err != nil {
		return 0, err
	}
	lib := ""
	if comp.Library != nil {
		lib = comp.Library.Path
	}
	return runtimeCall(api, "make_compiled_graph", api.NewStr(string(plan)), api.NewStr(lib), api.NewList(nil))
}

// torchGraph turns a prims graph back into torch calls and builds its GraphModule's forward.
func torchGraph(api py.API, g *fxgraph.Graph, cap *bytecode.Capture) (py.Obj, error) {
	tg, err := aotautograd.ToTorch(g)
	if err != nil {
		return 0, fmt.Errorf("aot_eager: %w", err)
	}
	js, err := fxgraph.EncodeJSON(tg)
	if err != nil {
		return 0, err
	}
	return runtimeCall(api, "make_torch_graph", api.NewStr(string(js)))
}

// lostGradient compares which captured outputs require grad with the split's tangents.
func lostGradient(g *fxgraph.Graph, split *aotautograd.Graphs) string {
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
