package pipeline

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
)

// fakeHost records what the pipeline asks of Python; objects are numbered handles.
type fakeHost struct {
	chains   []int // parts per Chain call
	next     py.Obj
	warnings []string
	plans    []fakePlan
	autograd []fakeAutograd
	torch    []*fxgraph.Graph
	reruns   int
	// aliasChecked lists the written inputs of each AliasChecked call.
	aliasChecked [][]int
	folds        int
	versions     map[py.Obj]int64
	cuda         []fakeCUDA
	// runtimeErr is what CompiledGraph fails with, when set.
	runtimeErr error
	// versionErr is what TensorVersion fails with, when set (an inference tensor).
	versionErr error
	// probes counts AutogradProbe calls, backwardProbes those that run the backward;
	// probeRefusal is what they answer.
	probes         int
	backwardProbes int
	probeRefusal   string
}

type fakePlan struct {
	plan   map[string]any
	lib    string
	consts []py.Obj
	rerun  py.Obj
	obj    py.Obj
}

type fakeCUDA struct {
	plan    map[string]any
	kernels *inductor.CUDAKernels
	consts  []py.Obj
	rerun   py.Obj
	obj     py.Obj
}

type fakeAutograd struct {
	fwd, bwd   py.Obj
	numOutputs int
	tangents   []int
	consts     []py.Obj
	region     *Region
	obj        py.Obj
}

func (h *fakeHost) obj() py.Obj { h.next++; return 1000 + h.next }

func (h *fakeHost) Warn(msg string) { h.warnings = append(h.warnings, msg) }

func (h *fakeHost) TensorVersion(t py.Obj) (int64, error) {
	if h.versionErr != nil {
		return 0, h.versionErr
	}
	return h.versions[t], nil
}

func (h *fakeHost) FoldConvBN(w, b, mean, variance, gamma, beta py.Obj, eps float64) (py.Obj, py.Obj, error) {
	h.folds++
	return h.obj(), h.obj(), nil
}

func (h *fakeHost) CompiledGraph(plan []byte, lib string, consts []py.Obj, rerun py.Obj) (py.Obj, error) {
	if h.runtimeErr != nil {
		return 0, h.runtimeErr
	}
	var p map[string]any
	if err := json.Unmarshal(plan, &p); err != nil {
		return 0, err
	}
	fp := fakePlan{plan: p, lib: lib, consts: consts, rerun: rerun, obj: h.obj()}
	h.plans = append(h.plans, fp)
	return fp.obj, nil
}

func (h *fakeHost) CUDAGraph(plan []byte, ks *inductor.CUDAKernels, consts []py.Obj, rerun py.Obj) (py.Obj, error) {
	var p map[string]any
	if err := json.Unmarshal(plan, &p); err != nil {
		return 0, err
	}
	fp := fakeCUDA{plan: p, kernels: ks, consts: consts, rerun: rerun, obj: h.obj()}
	h.cuda = append(h.cuda, fp)
	return fp.obj, nil
}

func (h *fakeHost) SearchPath() []string { return nil }

func (h *fakeHost) AutogradGraph(r *Region) (py.Obj, error) {
	a := fakeAutograd{fwd: r.Forward, bwd: r.Backward, numOutputs: r.NumOutputs, tangents: r.Tangents, consts: r.Consts,
		region: r, obj: h.obj()}
	h.autograd = append(h.autograd, a)
	return a.obj, nil
}

func (h *fakeHost) AutogradProbe(g *fxgraph.Graph, attrs map[string]py.Obj, gradEnabled, backward bool) (Probe, error) {
	h.probes++
	if backward {
		h.backwardProbes++
		return Probe{Refusal: h.probeRefusal}, nil
	}
	return Probe{}, nil
}

func (h *fakeHost) TorchGraph(g *fxgraph.Graph) (py.Obj, error) {
	h.torch = append(h.torch, g)
	return h.obj(), nil
}

func (h *fakeHost) TorchRerun(g *fxgraph.Graph, attrs map[string]py.Obj) (py.Obj, error) {
	h.reruns++
	return h.obj(), nil
}

func (h *fakeHost) AliasChecked(compiled, fallback py.Obj, written []int, inputs []string, name string, bumps []int) (py.Obj, error) {
	h.aliasChecked = append(h.aliasChecked, written)
	return compiled, nil
}

func (h *fakeHost) Chain(parts []py.Obj, inputs [][]Ref, outputs []Ref) (py.Obj, error) {
	h.chains = append(h.chains, len(parts))
	return h.obj(), nil
}

// planOnly is inductor.Compile without building or loading C (CGO_ENABLED=0 has no dlopen).
func planOnly(g *fxgraph.Graph, opts inductor.Options) (*inductor.Compiled, error) {
	ir, err := inductor.Lower(g)
	if err != nil {
		return nil, err
	}
	inductor.Inline(ir)
	s := inductor.Fuse(ir)
	src := inductor.Generate(s, opts.Codegen)
	prog, err := inductor.Plan(s, src)
	if err != nil {
		return nil, err
	}
	return &inductor.Compiled{Graph: ir, Schedule: s, Source: src, Program: prog}, nil
}

var testConfig = Config{CheckIR: true, CompileC: planOnly}

func parse(t *testing.T, text string) *fxgraph.Graph {
	t.Helper()
	g, err := fxgraph.Parse(text)
	require.NoError(t, err)
	return g
}

func statsDelta(before, after StatsSnapshot) [4]int {
	return [4]int{after.Compiled - before.Compiled, after.Autograd - before.Autograd, after.FX - before.FX, after.Fallbacks - before.Fallbacks}
}

const mlpText = `graph forward(x: f32[4,8]):
  %fc1_weight : f32[16,8]!grad = get_attr[fc1.weight]
  %fc1_bias   : f32[16]!grad   = get_attr[fc1.bias]
  %linear     : f32[4,16]!grad = torch.nn.functional.linear(%x, %fc1_weight, %fc1_bias)  # model.py:12
  %relu       : f32[4,16]!grad = torch.relu(%linear)  # model.py:13
  %fc2_weight : f32[2,16]!grad = get_attr[fc2.weight]
  %linear_1   : f32[4,2]!grad  = torch.nn.functional.linear(%relu, %fc2_weight, None)  # model.py:14
  return (%linear_1,)
`

// inference is the same MLP under no_grad: nothing but the parameters requires grad.
var inferenceText = strings.NewReplacer("f32[4,16]!grad", "f32[4,16]", "f32[4,2]!grad ", "f32[4,2]").Replace(mlpText)

func mlpAttrs() map[string]py.Obj {
	return map[string]py.Obj{"fc1.weight": 1, "fc1.bias": 2, "fc2.weight": 3}
}

func TestInferencePath(t *testing.T) {
	h := &fakeHost{}
	before := Stats()
	obj, err := Compile(h, testConfig, &Request{Name: "mlp", Graph: parse(t, inferenceText), Attrs: mlpAttrs(), Backend: Inductor})
	require.NoError(t, err)
	require.Len(t, h.plans, 1)
	require.Equal(t, h.plans[0].obj, obj)
	// The lifted parameters are bound after the inputs, in the graph's get_attr order.
	require.Equal(t, []py.Obj{1, 2, 3}, h.plans[0].consts)
	ops := map[string]int{}
	for _, st := range h.plans[0].plan["steps"].([]any) {
		ops[st.(map[string]any)["op"].(string)]++
	}
	require.Equal(t, 2, ops["extern"], "two matrix products: %v", ops)
	require.Equal(t, 1, ops["kernel"], "the bias adds and the relu fuse into one kernel: %v", ops)
	require.NotZero(t, h.plans[0].rerun, "a graph that writes nothing may be re-run with torch")
	require.Empty(t, h.autograd)
	require.Equal(t, [4]int{1, 0, 0, 0}, statsDelta(before, Stats()))
}

func TestAutogradPath(t *testing.T) {
	for _, backend := range []Backend{Inductor, AOTEager} {
		t.Run(backend.String(), func(t *testing.T) {
			h := &fakeHost{}
			before := Stats()
			obj, err := Compile(h, testConfig, &Request{Name: "mlp", Graph: parse(t, mlpText), Attrs: mlpAttrs(), Backend: backend, GradEnabled: true})
			require.NoError(t, err)
			require.Len(t, h.autograd, 1)
			a := h.autograd[0]
			require.Equal(t, a.obj, obj)
			require.Equal(t, 1, a.numOutputs)
			require.Equal(t, []int{0}, a.tangents)
			require.Equal(t, []py.Obj{1, 2, 3}, a.consts)
			if backend == Inductor {
				require.Len(t, h.plans, 2, "the forward and the backward are compiled to C")
				require.Equal(t, []py.Obj{h.plans[0].obj, h.plans[1].obj}, []py.Obj{a.fwd, a.bwd})
				require.Equal(t, [4]int{0, 1, 0, 0}, statsDelta(before, Stats()))
			} else {
				require.Empty(t, h.plans)
				require.Len(t, h.torch, 2, "aot_eager turns both halves into torch graphs")
			}
		})
	}
}

// TestSymbolicAutogradPath: a training graph with a symbolic batch goes to aot_eager's torch
// graphs symbolic (both halves keep the ShapeEnv; the backward's placeholders carry s0), and to
// the C backend's halves symbolic too.
func TestSymbolicAutogradPath(t *testing.T) {
	text := `graph f[s0=4](x: f32[s0,8]!grad):
  %tanh : f32[s0,8]!grad = torch.tanh(%x)
  %mul  : f32[s0,8]!grad = torch.mul(%tanh, %x)
  %sum  : f32[]!grad     = torch.sum(%mul)
  return (%sum,)
`
	hc := &fakeHost{}
	_, err := Compile(hc, testConfig, &Request{Name: "f", Graph: parse(t, text), Backend: Inductor, GradEnabled: true})
	require.NoError(t, err)
	require.Len(t, hc.autograd, 1)
	h := &fakeHost{}
	_, err = Compile(h, testConfig, &Request{Name: "f", Graph: parse(t, text), Backend: AOTEager, GradEnabled: true})
	require.NoError(t, err)
	require.Len(t, h.autograd, 1)
	require.Len(t, h.torch, 2)
	for _, g := range h.torch {
		require.NotNil(t, g.Shapes, "%s", g)
		require.NoError(t, fxgraph.CheckSymbols(g))
		js, err := fxgraph.EncodeJSON(g)
		require.NoError(t, err)
		require.Contains(t, string(js), `"symbols"`)
	}
}

// TestSavedValueWritten: a graph with an in-place write asks torch whether eager's autograd
// refuses it (Host.AutogradProbe), and runs with torch when it does; graphs without writes are
// probed for the values eager saves (A152) but never run the probe's backward.
func TestSavedValueWritten(t *testing.T) {
	const writes = `graph f(x: f32[4]!grad):
  %exp  : f32[4]!grad = torch.exp(%x)
  %relu_ : f32[4]!grad = torch.relu_(%exp)
  return (%relu_,)
`
	for _, refusal := range []string{"", "one of the variables needed for gradient computation has been modified by an inplace operation"} {
		h := &fakeHost{probeRefusal: refusal}
		before := Stats()
		obj, err := Compile(h, testConfig, &Request{Name: "f", Graph: parse(t, writes), Backend: Inductor, GradEnabled: true})
		require.NoError(t, err)
		require.Equal(t, 1, h.backwardProbes)
		if refusal == "" {
			require.NotZero(t, obj)
			require.Len(t, h.autograd, 1)
			continue
		}
		require.Zero(t, obj, "eager's backward raises: the graph runs with torch")
		require.Empty(t, h.autograd)
		after := Stats()
		require.Equal(t, 1, after.Fallbacks-before.Fallbacks)
		require.Greater(t, after.Reasons["the graph writes in place to a value torch's autograd needs, so its backward raises: "+refusal], 0)
	}
	h := &fakeHost{}
	_, err := Compile(h, testConfig, &Request{Name: "mlp", Graph: parse(t, mlpText), Attrs: mlpAttrs(), Backend: Inductor, GradEnabled: true})
	require.NoError(t, err)
	require.Equal(t, 1, h.probes, "the values eager saves")
	require.Zero(t, h.backwardProbes, "no writes, no backward probe")
}

func TestFallbacksRunWithTorch(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		backend Backend
		hostErr error
		reason  string // "" when the graph is left to the backend without a note
		warning string
	}{
		{"aot_eager inference", inferenceText, AOTEager, nil, "", ""},
		{"no C++ runtime", inferenceText, Inductor, errors.New("RuntimeError: ptgo._fast is not built (it needs torch's C++ headers)"),
			"ptgo._fast is not built", "the C++ runtime ptgo._fast is not built"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{runtimeErr: tt.hostErr}
			before := Stats()
			obj, err := Compile(h, testConfig, &Request{Name: "mlp", Graph: parse(t, tt.text), Attrs: mlpAttrs(), Backend: tt.backend})
			require.NoError(t, err)
			require.Zero(t, obj)
			after := Stats()
			if tt.reason == "" {
				require.Equal(t, [4]int{}, statsDelta(before, after))
				return
			}
			require.Equal(t, 1, after.Fallbacks-before.Fallbacks)
			require.Greater(t, after.Reasons[tt.reason], before.Reasons[tt.reason])
			if tt.warning != "" && len(h.warnings) > 0 { // warned once per process
				require.Contains(t, h.warnings[0], tt.warning)
			}
		})
	}
}

const convBNText = `graph forward(x: f32[1,3,8,8]):
  %conv_weight : f32[4,3,3,3]!grad = get_attr[conv.weight]
  %conv_bias   : f32[4]!grad       = get_attr[conv.bias]
  %conv2d      : f32[1,4,8,8]      = torch.conv2d(%x, %conv_weight, %conv_bias, (1, 1), (1, 1), (1, 1), 1)
  %bn_mean     : f32[4]            = get_attr[bn.running_mean]
  %bn_var      : f32[4]            = get_attr[bn.running_var]
  %bn_weight   : f32[4]!grad       = get_attr[bn.weight]
  %bn_bias     : f32[4]!grad       = get_attr[bn.bias]
  %batch_norm  : f32[1,4,8,8]      = torch.nn.functional.batch_norm(%conv2d, %bn_mean, %bn_var, %bn_weight, %bn_bias, False, 0.1, 1e-05)
  %relu        : f32[1,4,8,8]      = torch.relu(%batch_norm)
  return (%relu,)
`

func TestFreezingFoldsBatchNormAndGuardsVersions(t *testing.T) {
	h := &fakeHost{versions: map[py.Obj]int64{1: 7, 3: 2}}
	attrs := map[string]py.Obj{"conv.weight": 1, "conv.bias": 2, "bn.running_mean": 3, "bn.running_var": 4, "bn.weight": 5, "bn.bias": 6}
	guarded := map[string]int64{}
	g := parse(t, convBNText)
	obj, err := Compile(h, testConfig, &Request{Name: "cnn", Graph: g, Attrs: attrs, Backend: Inductor, Freezing: true,
		GuardVersion: func(path string, v int64) error { guarded[path] = v; return nil }})
	require.NoError(t, err)
	require.NotZero(t, obj)
	require.Equal(t, 1, h.folds)
	require.Equal(t, map[string]int64{"conv.weight": 7, "conv.bias": 0, "bn.running_mean": 2, "bn.running_var": 0, "bn.weight": 0, "bn.bias": 0}, guarded)
	require.NotContains(t, g.String(), "batch_norm", "the request's graph is rewritten in place")
	require.Contains(t, attrs, "_frozen.conv2d.weight")
	require.Len(t, h.plans[0].consts, 2, "only the folded weight and bias are left")
}

func TestRerunnable(t *testing.T) {
	g := parse(t, inferenceText)
	require.True(t, Rerunnable(g, g))
	w := parse(t, `graph f(x: f32[4]):
  %relu_ : f32[4] = torch.relu_(%x)
  return (%relu_,)
`)
	require.False(t, Rerunnable(w, g), "a write to an input must not run twice")
	r := parse(t, `graph f(x: f32[4]):
  %dropout : f32[4] = torch.nn.functional.dropout(%x, 0.5, True)
  return (%dropout,)
`)
	require.False(t, Rerunnable(r, g), "random numbers must not be drawn twice")
	own := parse(t, `graph f(x: f32[4]):
  %exp : f32[4] = torch.exp(%x)
  %relu_ : f32[4] = torch.relu_(%exp)
  return (%relu_,)
`)
	require.True(t, Rerunnable(own, g), "a write into a tensor the graph made is redone by the rerun")
	view := parse(t, `graph f(x: f32[4]):
  %t : f32[4] = Tensor.view(%x, [4])
  %relu_ : f32[4] = torch.relu_(%t)
  return (%relu_,)
`)
	require.False(t, Rerunnable(view, g), "a write through a view of an input")
}

func TestAutoFreezeNeedsVersionGuards(t *testing.T) {
	attrs := func() map[string]py.Obj {
		return map[string]py.Obj{"conv.weight": 1, "conv.bias": 2, "bn.running_mean": 3, "bn.running_var": 4, "bn.weight": 5, "bn.bias": 6}
	}
	tests := []struct {
		name        string
		req         Request
		wantFolding bool
	}{
		{"auto with guards", Request{AutoFreeze: true, GuardVersion: func(string, int64) error { return nil }}, true},
		{"auto without guards (torch.fx graphs)", Request{AutoFreeze: true}, false},
		{"neither", Request{GuardVersion: func(string, int64) error { return nil }}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{versions: map[py.Obj]int64{}}
			r := tt.req
			r.Name, r.Graph, r.Attrs, r.Backend = "cnn", parse(t, convBNText), attrs(), Inductor
			_, err := Compile(h, testConfig, &r)
			require.NoError(t, err)
			require.Equal(t, tt.wantFolding, h.folds == 1)
			require.Len(t, h.plans, 1)
			require.Equal(t, tt.wantFolding, h.plans[0].plan["frozen"] == true, "the plan says its constants are frozen")
		})
	}
}

func TestFreezingFailuresFailOnlyWhenAsked(t *testing.T) {
	attrs := map[string]py.Obj{"conv.weight": 1, "conv.bias": 2, "bn.running_mean": 3, "bn.running_var": 4, "bn.weight": 5, "bn.bias": 6}
	guard := func(string, int64) error { return nil }
	for _, forced := range []bool{true, false} {
		h := &fakeHost{versions: map[py.Obj]int64{}, versionErr: errors.New("Inference tensors do not track version counter")}
		obj, err := Compile(h, testConfig, &Request{Name: "cnn", Graph: parse(t, convBNText), Attrs: attrs, Backend: Inductor,
			Freezing: forced, AutoFreeze: !forced, GuardVersion: guard})
		if forced {
			var pe *Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, StageFreeze, pe.Stage)
			continue
		}
		require.NoError(t, err)
		require.NotZero(t, obj)
		require.Len(t, h.plans, 1)
		require.Nil(t, h.plans[0].plan["frozen"], "a graph whose freezing failed is not marked frozen")
	}
}
