package pipeline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/inductor"
)

const symTorchText = `graph f[s0=4](x: f32[s0,8]):
  %r : f32[s0,8] = torch.relu(%x)
  %s : f32[s0,8] = torch.sigmoid(%r)
  return (%s,)
`

// A torch-level graph with a symbolic batch decomposes (symbolic metas) and compiles to one
// symbolic plan: its input sizes are size expressions, read per call.
func TestSymbolicInferenceEndToEnd(t *testing.T) {
	h := &fakeHost{}
	_, err := Compile(h, testConfig, &Request{Name: "sym", Graph: parse(t, symTorchText), Backend: Inductor})
	require.NoError(t, err)
	require.Len(t, h.plans, 1)
	syms, ok := h.plans[0].plan["symbols"].([]any)
	require.True(t, ok, "the plan is symbolic: %v", h.plans[0].plan)
	require.Len(t, syms, 1)
	b0 := h.plans[0].plan["buffers"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"s0", "8"}, b0["sym_sizes"])
}

// symbolicPrims stands in for a decomposition that keeps the symbol: the inference path hands
// inductor's symbolic plan to the runtime.
func symbolicPrims(t *testing.T, text string) func(*fxgraph.Graph, inductor.Options) (*inductor.Compiled, error) {
	pg := parse(t, text)
	return func(*fxgraph.Graph, inductor.Options) (*inductor.Compiled, error) {
		return planOnly(pg, inductor.Options{})
	}
}

func TestSymbolicInference(t *testing.T) {
	h := &fakeHost{}
	cfg := testConfig
	cfg.CompileC = symbolicPrims(t, `graph f[s0=4](x: f32[s0,8]):
  %m : f32[s0,8] = prims.maximum(%x, 0.0)
  %s : f32[s0,8] = prims.sigmoid(%m)
  return (%s,)
`)
	_, err := Compile(h, cfg, &Request{Name: "sym", Graph: parse(t, symTorchText), Backend: Inductor})
	require.NoError(t, err)
	require.Len(t, h.plans, 1)
	syms, ok := h.plans[0].plan["symbols"].([]any)
	require.True(t, ok, "the plan is symbolic: %v", h.plans[0].plan)
	require.Len(t, syms, 1)
	src := syms[0].(map[string]any)
	require.EqualValues(t, 0, src["input"])
	require.EqualValues(t, 0, src["dim"])
	b0 := h.plans[0].plan["buffers"].([]any)[0].(map[string]any)
	require.Equal(t, []any{"s0", "8"}, b0["sym_sizes"])
}

// What inductor cannot compile symbolically comes back as NeedsStatic with inductor's reason,
// nothing handed to the runtime and no fallback counted: the caller captures the frame again
// with static shapes.
func TestSymbolicInferenceRefused(t *testing.T) {
	h := &fakeHost{}
	cfg := testConfig
	cfg.CompileC = symbolicPrims(t, `graph f[s0=4](x: f32[s0,8]):
  %c : f32[s0,8] = prims.as_strided(%x, [sym("s0"), 8], [8, 1], 0)
  %d : f32[s0,8] = prims.neg(%c)
  return (%d,)
`)
	before := Stats()
	_, err := Compile(h, cfg, &Request{Name: "sym", Graph: parse(t, symTorchText), Backend: Inductor})
	var ns *NeedsStatic
	require.ErrorAs(t, err, &ns)
	require.Contains(t, ns.Reason, "prims.as_strided")
	require.Empty(t, h.plans)
	require.Empty(t, h.torch)
	require.Equal(t, [4]int{0, 0, 0, 0}, statsDelta(before, Stats()))
	require.False(t, IsSymbolicUnsupported(errors.New("other")))
}

// A fallback (dropout, run by torch) in a symbolic graph compiles symbolically: its result's
// layout is the meta's symbolic one, evaluated per call by the runtime.
func TestSymbolicInferenceFallback(t *testing.T) {
	h := &fakeHost{}
	cfg := testConfig
	cfg.CompileC = symbolicPrims(t, `graph f[s0=4](x: f32[s0,8]):
  %c : f32[s0,8] = prims.fallback("torch.nn.functional.dropout", %x, 0.5, True)
  %d : f32[s0,8] = prims.tanh(%c)
  return (%d,)
`)
	_, err := Compile(h, cfg, &Request{Name: "sym", Graph: parse(t, symTorchText), Backend: Inductor})
	require.NoError(t, err)
	require.Len(t, h.plans, 1)
	require.NotEmpty(t, h.plans[0].plan["symbols"])
	var targets []any
	for _, st := range h.plans[0].plan["steps"].([]any) {
		if st.(map[string]any)["op"] == "extern" {
			targets = append(targets, st.(map[string]any)["target"])
		}
	}
	require.Equal(t, []any{"torch.nn.functional.dropout"}, targets)
}
