package main

import (
	"errors"
	"fmt"

	"ptgo/bytecode"
	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/pipeline"
)

// pyHost is the pipeline's Host over ptgo._runtime: the Python helpers that build the runtime
// objects (the C++ plan runner, the autograd.Function, torch graphs) and fold tensors.
type pyHost struct {
	api py.API
	// rerun, when set, is the torch re-run to hand out (an FX graph's own gm.forward) instead of
	// one built from the graph's JSON.
	rerun py.Obj
}

var _ pipeline.Host = (*pyHost)(nil)

func (h *pyHost) orNone(o py.Obj) py.Obj {
	if o == 0 {
		return h.api.None()
	}
	return o
}

func (h *pyHost) orEmpty(o py.Obj) py.Obj {
	if o == 0 {
		return h.api.NewList(nil)
	}
	return o
}

func (h *pyHost) Warn(msg string) { _, _ = runtimeCall(h.api, "warn", h.api.NewStr(msg)) }

func (h *pyHost) TensorVersion(t py.Obj) (int64, error) {
	v, err := h.api.GetAttr(t, "_version")
	if err != nil {
		return 0, err
	}
	return h.api.Int(v)
}

func (h *pyHost) FoldConvBN(w, b, mean, variance, gamma, beta py.Obj, eps float64) (py.Obj, py.Obj, error) {
	api := h.api
	res, err := runtimeCall(api, "fold_conv_bn", h.orNone(w), h.orNone(b), h.orNone(mean), h.orNone(variance),
		h.orNone(gamma), h.orNone(beta), api.NewFloat(eps))
	if err != nil {
		return 0, 0, err
	}
	nw, _ := api.Index(res, 0)
	nb, _ := api.Index(res, 1)
	return nw, nb, nil
}

func (h *pyHost) CompiledGraph(plan []byte, lib string, consts []py.Obj, rerun py.Obj) (py.Obj, error) {
	api := h.api
	return runtimeCall(api, "make_compiled_graph", api.NewStr(string(plan)), api.NewStr(lib), api.NewList(consts), h.orNone(rerun))
}

func (h *pyHost) AutogradGraph(r *pipeline.Region) (py.Obj, error) {
	api := h.api
	ints := func(xs []int) py.Obj {
		out := make([]py.Obj, len(xs))
		for i, k := range xs {
			out[i] = api.NewInt(int64(k))
		}
		return api.NewList(out)
	}
	deps := make([]py.Obj, len(r.GradDeps))
	for i, ks := range r.GradDeps {
		if ks == nil {
			deps[i] = api.None()
		} else {
			deps[i] = ints(ks)
		}
	}
	return runtimeCall(api, "make_autograd_graph", r.Forward, r.Backward, api.NewInt(int64(r.NumOutputs)), ints(r.Tangents),
		api.NewList(r.Consts), h.orNone(r.Rerun), api.NewStr(r.Name), h.orNone(r.Recompute), ints(r.Written),
		api.NewBool(r.Random), api.NewStr(r.NoRecompute), api.NewList(deps), ints(r.Floats), h.orEmpty(r.Guards),
		ints(r.BumpAfter))
}

func (h *pyHost) AutogradProbe(g *fxgraph.Graph, attrs map[string]py.Obj, gradEnabled, backward bool) (pipeline.Probe, error) {
	api := h.api
	js, dict, err := graphForPython(api, g, attrs)
	if err != nil {
		return pipeline.Probe{}, err
	}
	r, err := runtimeCall(api, "autograd_probe", js, dict, api.NewBool(gradEnabled), api.NewBool(backward))
	if err != nil || r == api.None() {
		return pipeline.Probe{}, err
	}
	var p pipeline.Probe
	if msg, _ := api.Index(r, 0); msg != 0 && msg != api.None() {
		if p.Refusal, err = api.Str(msg); err != nil {
			return pipeline.Probe{}, err
		}
	}
	if guards, _ := api.Index(r, 1); guards != 0 {
		if n, _ := api.Len(guards); n > 0 {
			p.Guards = guards
		}
	}
	return p, nil
}

func (h *pyHost) TorchGraph(g *fxgraph.Graph) (py.Obj, error) {
	js, err := fxgraph.EncodeJSON(g)
	if err != nil {
		return 0, err
	}
	return runtimeCall(h.api, "make_torch_graph", h.api.NewStr(string(js)))
}

func (h *pyHost) TorchRerun(g *fxgraph.Graph, attrs map[string]py.Obj) (py.Obj, error) {
	if h.rerun != 0 {
		return h.rerun, nil
	}
	js, dict, err := graphForPython(h.api, g, attrs)
	if err != nil {
		return 0, err
	}
	return runtimeCall(h.api, "torch_rerun", js, dict)
}

func (h *pyHost) AliasChecked(compiled, fallback py.Obj, written []int, inputs []string, name string, bumps []int) (py.Obj, error) {
	api := h.api
	ws := make([]py.Obj, len(written))
	for i, k := range written {
		ws[i] = api.NewInt(int64(k))
	}
	ns := make([]py.Obj, len(inputs))
	for i, n := range inputs {
		ns[i] = api.NewStr(n)
	}
	bs := make([]py.Obj, len(bumps))
	for i, k := range bumps {
		bs[i] = api.NewInt(int64(k))
	}
	return runtimeCall(api, "alias_checked", compiled, fallback, api.NewList(ws), api.NewList(ns), api.NewStr(name), api.NewList(bs))
}

// Chain hands the parts and their wiring to ptgo._runtime.chain_graphs: each Ref as a pair
// (part, index), part -1 for the graph's inputs.
func (h *pyHost) Chain(parts []py.Obj, inputs [][]pipeline.Ref, outputs []pipeline.Ref) (py.Obj, error) {
	api := h.api
	refs := func(rs []pipeline.Ref) py.Obj {
		items := make([]py.Obj, len(rs))
		for i, r := range rs {
			items[i] = api.NewTuple([]py.Obj{api.NewInt(int64(r.Part)), api.NewInt(int64(r.Index))})
		}
		return api.NewTuple(items)
	}
	ins := make([]py.Obj, len(inputs))
	for k, rs := range inputs {
		ins[k] = refs(rs)
	}
	return runtimeCall(api, "chain_graphs", api.NewTuple(parts), api.NewTuple(ins), refs(outputs))
}

// compileWithPipeline runs ptgo's pipeline on a captured graph (backends "inductor" and
// "aot_eager"); 0 means the backend's torch.fx path runs it. Errors come back as the driver
// reports them.
func compileWithPipeline(api py.API, ctx ctxInfo, cap *bytecode.Capture, qual, file string, line int) (py.Obj, error) {
	req := &pipeline.Request{Name: qual, Graph: cap.Graph, Attrs: cap.Attrs, GradEnabled: cap.GradEnabled,
		Backend: pipeline.Inductor, Freezing: ctx.freezing == 1, AutoFreeze: ctx.freezing == 2 && inEval(api, ctx.root),
		DDP: ddpBuckets(api, ctx.root, cap.Inputs)}
	if ctx.aotEager {
		req.Backend = pipeline.AOTEager
	}
	req.GuardVersion = func(path string, version int64) error {
		src, ok := cap.AttrSources[path]
		if !ok {
			return fmt.Errorf("ptgo BUG: no source for %s", path)
		}
		ptr, err := runtimeCall(api, "tensor_data_ptr", cap.Attrs[path])
		if err != nil {
			return err
		}
		p, err := api.Int(ptr)
		if err != nil {
			return err
		}
		cap.Guards.Version(src, version, p)
		return nil
	}
	obj, err := pipeline.Compile(&pyHost{api: api}, pipelineConfig(), req)
	if err == nil {
		return obj, nil
	}
	var ns *pipeline.NeedsStatic
	if errors.As(err, &ns) {
		return 0, err
	}
	pe, _ := err.(*pipeline.Error)
	stage := pipeline.StageInductor
	if pe != nil {
		stage = pe.Stage
	}
	switch stage {
	case pipeline.StageAutograd:
		return 0, fmt.Errorf("ptgo: compiling the forward and backward of %s (%s:%d) failed: %v", qual, file, line, err)
	case pipeline.StageFreeze:
		return 0, fmt.Errorf("ptgo: freezing the graph of %s (%s:%d): %v", qual, file, line, err)
	}
	return 0, fmt.Errorf("ptgo: compiling the graph of %s (%s:%d) to C failed: %v", qual, file, line, err)
}

// ddpBuckets is the gradient bucketing of the DistributedDataParallel that m is or that is
// running the forward being compiled, and which graph inputs are its parameters
// (ptgo._runtime.ddp_buckets); zero otherwise. m is 0 when a function was compiled.
func ddpBuckets(api py.API, m py.Obj, inputs []*bytecode.TensorV) pipeline.Buckets {
	if m == 0 {
		m = api.None()
	}
	objs := make([]py.Obj, len(inputs))
	for i, in := range inputs {
		objs[i] = in.Obj
	}
	v, err := runtimeCall(api, "ddp_buckets", m, api.NewTuple(objs))
	if err != nil || api.Kind(v) == py.KNone {
		return pipeline.Buckets{}
	}
	var b pipeline.Buckets
	f, err1 := api.Index(v, 0)
	c, err2 := api.Index(v, 1)
	flags, err3 := api.Index(v, 2)
	if err1 != nil || err2 != nil || err3 != nil {
		return pipeline.Buckets{}
	}
	b.First, _ = api.Int(f)
	b.Cap, _ = api.Int(c)
	for i := range inputs {
		x, err := api.Index(flags, i)
		if err != nil {
			return pipeline.Buckets{}
		}
		n, _ := api.Int(x)
		b.Params = append(b.Params, n != 0)
	}
	return b
}

// inEval reports whether m is a module in eval mode (m.training is False); false for 0.
func inEval(api py.API, m py.Obj) bool {
	if m == 0 {
		return false
	}
	v, err := api.GetAttr(m, "training")
	if err != nil {
		return false
	}
	n, err := api.Int(v)
	return err == nil && n == 0
}

func pipelineConfig() pipeline.Config {
	return pipeline.Config{CheckIR: state.config.CheckIR, DebugDir: state.config.DebugDir}
}
