package pipeline

import (
	"errors"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/kernels"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// The inference path: decompose the torch-level graph into prims, lift parameters to inputs,
// compile to C (inductor, kernels) and hand the launch plan to the Host's C++ runtime, which
// binds the parameters as the last inputs. Graphs the C backend cannot run — non-CPU tensors,
// writes through views of inputs, ops with no lowering — run with torch instead (counted and
// named on perf_hints); coverage gaps cost speed, never correctness.

// Unsuitable says why a graph cannot run on the C backend's inference path ("" when it can).
// gradEnabled is the grad mode the graph starts in.
func Unsuitable(g *fxgraph.Graph, gradEnabled bool) string {
	for _, n := range g.Nodes {
		for _, m := range metasOf(n.Meta) {
			if m.Device.Type != "cpu" {
				return "a tensor on " + m.Device.String()
			}
		}
	}
	if gradTracked(g, gradEnabled) {
		return "autograd needs the graph (a result requires grad); the C backend compiles inference graphs"
	}
	return ""
}

func metasOf(meta any) []*primtorch.TensorMeta {
	switch m := meta.(type) {
	case *primtorch.TensorMeta:
		return []*primtorch.TensorMeta{m}
	case []any:
		var out []*primtorch.TensorMeta
		for _, x := range m {
			out = append(out, metasOf(x)...)
		}
		return out
	}
	return nil
}

// decompose is the captured graph in core ops; nil (and a nil error) when a decomposition is
// unsupported: the graph then runs with torch, named on perf_hints.
func (c *compiler) decompose() (*fxgraph.Graph, error) {
	pg, err := decomp.Decompose(c.r.Graph, decomp.Options{Check: c.cfg.CheckIR, NoGrad: !c.r.GradEnabled})
	if err != nil {
		if isUnsupported(err) {
			NoteFallback(c.r.Name, err.Error())
			return nil, nil
		}
		return nil, err
	}
	c.written, c.bumps, c.inputs = WrittenInputs(pg), InputBumps(pg), nil
	for _, p := range pg.Placeholders() {
		c.inputs = append(c.inputs, p.Name)
	}
	return pg, nil
}

// inference compiles an inference graph for the C backend; 0 means it runs with torch.
func (c *compiler) inference() (py.Obj, error) {
	r := c.r
	if dev, mixed := GraphDevice(r.Graph); mixed == "" && (dev.Type == "cuda" || dev.Type == "cpu" && emulateCUDA()) {
		if inductor.IsSymbolic(r.Graph) {
			// the CUDA renderer compiles static shapes only
			return 0, symbolicUnsupported(&inductor.SymbolicUnsupported{Graph: r.Name, Reason: "a CUDA graph"})
		}
		return c.cudaInference(dev, dev.Type == "cpu")
	}
	if reason := Unsuitable(r.Graph, r.GradEnabled); reason != "" {
		NoteFallback(r.Name, reason)
		return 0, nil
	}
	pg, err := c.decompose()
	if pg == nil {
		return 0, err
	}
	lifted, attrPaths := LiftAttrs(pg)
	opts := inductor.Options{Check: c.cfg.CheckIR, DebugDir: c.debugDir()}
	comp, err := c.compileC(lifted, opts)
	if err != nil {
		var ce *kernels.CompileError
		switch {
		case errors.Is(err, kernels.ErrNoCompiler):
			noCompilerOnce.Do(func() {
				c.h.Warn("ptgo: no C compiler found (" + err.Error() + "); compiled graphs run with torch instead of generated C kernels")
			})
			NoteFallback(r.Name, "no C compiler")
			return 0, nil
		case errors.As(err, &ce):
			return 0, err
		case strings.Contains(err.Error(), "ptgo BUG"):
			return 0, err
		case inductor.IsSymbolicUnsupported(err):
			// the caller compiles the graph again with static shapes
			return 0, symbolicUnsupported(err)
		}
		NoteFallback(r.Name, err.Error())
		return 0, nil
	}
	comp.Program.Frozen = c.frozen
	comp.Program.RerunStatus = rerunStatus(r.Graph, pg)
	plan, err := comp.Program.JSON()
	if err != nil {
		return 0, err
	}
	lib := ""
	if comp.Library != nil {
		lib = comp.Library.Path
		defer comp.Library.Release() // the runtime graph loads its own reference
	}
	g, err := c.h.CompiledGraph(plan, lib, c.consts(attrPaths), c.rerun(pg))
	if err != nil {
		if c.noRuntime(err, r.Name) {
			return 0, nil
		}
		return 0, err
	}
	count(&stats.compiled)
	return g, nil
}

// LiftAttrs turns get_attr nodes into placeholders after the graph's own inputs (the C backend
// takes every tensor as an input); it returns the attribute paths in that order.
func LiftAttrs(g *fxgraph.Graph) (*fxgraph.Graph, []string) {
	g = fxgraph.Clone(g)
	var ph, attrs, rest []*fxgraph.Node
	var paths []string
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			ph = append(ph, n)
		case fxgraph.GetAttr:
			paths = append(paths, n.Target)
			n.Op, n.Target = fxgraph.Placeholder, n.Name
			attrs = append(attrs, n)
		default:
			rest = append(rest, n)
		}
	}
	g.Nodes = append(append(ph, attrs...), rest...)
	g.Renumber()
	return g, paths
}

// rerunStatus is the kernel statuses on which a compiled graph's failed run may be handed to
// torch's run of the captured graph (inductor.Program.RerunStatus): every one when the graph
// writes nothing and draws nothing (Rerunnable), a failed check alone when the graph has checks
// (they run before its writes and draws: inductor's orderChecks), none otherwise.
func rerunStatus(g, pg *fxgraph.Graph) int {
	if Rerunnable(g, pg) {
		return inductor.StatusIndex | inductor.StatusZeroDiv | inductor.StatusCheck
	}
	if HasChecks(pg) {
		return inductor.StatusCheck
	}
	return 0
}

// HasChecks reports a prims.check in the prims graph (a float computed from tensor data that
// Python raises for at some values: decomp/pyfloat.go).
func HasChecks(pg *fxgraph.Graph) bool {
	for _, n := range pg.Nodes {
		if n.Op == fxgraph.CallFunction && n.Target == "prims.check" {
			return true
		}
	}
	return false
}

// Rerunnable reports whether a compiled graph whose kernels reject their data (an index out of
// range) may be run again with torch on the same inputs: g (the torch-level graph) and pg (its
// decomposition) write no input or buffer (prims.copy_, out= or inplace=True into one) and draw
// no random numbers, so the failed run left nothing the user can see. A write into a tensor
// the graph made itself (v[0] = 7 on a std's result) is redone by the rerun from scratch (fuzz
// seed 8771: eager's IndexError names the index and the size, ptgo's kernel cannot).
func Rerunnable(g, pg *fxgraph.Graph) bool {
	writes, draws := rerunEffects(g, pg)
	return !writes && !draws
}

// RerunnableAfterRNG reports a graph that writes nothing (as Rerunnable) but draws random
// numbers: its failed run may be handed to torch once torch's CPU generator is back at the
// state the run started from, and the rerun then draws what eager draws (an autograd region's
// wrapper restores it: _runtime.make_autograd_graph; fuzz seed 15623: an embedding index out of
// range beside a randperm gave ptgo's index message instead of embedding's).
func RerunnableAfterRNG(g, pg *fxgraph.Graph) bool {
	writes, draws := rerunEffects(g, pg)
	return !writes && draws
}

// rerunEffects reports whether g (the torch-level graph) or pg (its decomposition) writes an
// input or buffer and whether it draws random numbers.
func rerunEffects(g, pg *fxgraph.Graph) (writes, draws bool) {
	for _, gr := range []*fxgraph.Graph{g, pg} {
		for _, n := range gr.Nodes {
			// The registry's facts (fxgraph.CallEffects): a write or a random draw would be seen
			// twice; an unknown call counts as both. A prims.fallback has its torch-level
			// target's effects (torch.tensor([2]) has none; Tensor.uniform_ writes and draws).
			draws = draws || fxgraph.CallEffects(n)&primtorch.EffectRandom != 0
			writes = writes || writesOutside(n)
		}
	}
	return writes, draws
}

// writesOutside reports whether n writes memory its graph did not compute: an input's, a
// buffer's, a parameter's (the registry's effects; an unknown call counts as writing).
func writesOutside(n *fxgraph.Node) bool {
	return fxgraph.CallEffects(n)&primtorch.EffectWrites != 0 && !writesOwnTensor(n)
}

// writesOwnTensor reports whether the write n is certainly into a tensor its graph computed
// (a registry op that returns a new tensor, reached from the written argument through views,
// getitem and in-place ops), not into an input's or a buffer's memory. Unknown ops, out= and
// writes whose target is not the first argument count as writing an input.
func writesOwnTensor(n *fxgraph.Node) bool {
	op := registryOp(n)
	if op == nil || len(n.Args) == 0 || fxgraph.CallEffects(n)&primtorch.EffectRandom != 0 ||
		len(op.Mutates) > 0 && op.Mutates[0] != 0 {
		return false
	}
	for _, kw := range n.Kwargs {
		if kw.Name == "out" {
			return false
		}
	}
	dst, ok := n.Args[0].(*fxgraph.Node)
	for ok {
		op := registryOp(dst)
		if op == nil {
			return false // an input, an attribute, a fallback's result, an unknown call
		}
		if op.Alias == primtorch.AliasNone && dst.Target != "operator.getitem" {
			return true // a new tensor the graph computed
		}
		if len(dst.Args) == 0 {
			return false
		}
		dst, ok = dst.Args[0].(*fxgraph.Node)
	}
	return false
}

// registryOp is the registry's op a call node runs (callOp); nil for other nodes,
// prims.fallback and unknown targets.
func registryOp(n *fxgraph.Node) *primtorch.Op {
	if n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod || n.Target == "prims.fallback" {
		return nil
	}
	return callOp(n)
}
