package aotautograd_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// splitErrorTests are prims graphs Split refuses, with what the error must say.
var splitErrorTests = []struct {
	name, graph  string
	requiresGrad []bool
	notDiff      bool // ErrNotDifferentiable (else another primtorch.ErrUnsupported or a plain error)
	unsupported  bool
	contains     string
}{
	{name: "flags", requiresGrad: []bool{true}, contains: "2 placeholders",
		graph: "graph f(x: f32[3]!grad, y: f32[3]):\n  %add : f32[3]!grad = prims.add(%x, %y)\n  return (%add,)\n"},
	{name: "int input", requiresGrad: []bool{true}, contains: "only floating-point",
		graph: "graph f(x: i64[3]):\n  %add : i64[3] = prims.add(%x, 1)\n  return (%add,)\n"},
	{name: "meta without grad", requiresGrad: []bool{true}, contains: "its meta",
		graph: "graph f(x: f32[3]):\n  %exp : f32[3] = prims.exp(%x)\n  return (%exp,)\n"},
	{name: "write to a grad input", requiresGrad: []bool{true, false}, unsupported: true, contains: "writes input x",
		graph: "graph f(x: f32[3]!grad, y: f32[3]):\n  %mul : f32[3]!grad = prims.mul(%x, %y)\n  %copy : f32[3] = prims.copy_(%x, %y)\n  return (%mul,)\n"},
	{name: "backward reads a written input", requiresGrad: []bool{true, false}, unsupported: true, contains: "reads input y",
		graph: "graph f(x: f32[3]!grad, y: f32[3]):\n  %mul : f32[3]!grad = prims.mul(%x, %y)\n  %add : f32[3] = prims.add(%y, 1.0)\n  %copy : f32[3] = prims.copy_(%y, %add)\n  return (%mul,)\n"},
	{name: "fallback", requiresGrad: []bool{true}, notDiff: true, unsupported: true, contains: "prims.fallback(torch.nn.functional.dropout)",
		graph: "graph f(x: f32[3]!grad):\n  %fallback : f32[3]!grad = prims.fallback(\"torch.nn.functional.dropout\", %x, p=0.5, training=True)\n  return (%fallback,)\n"},
	{name: "torch-level op", requiresGrad: []bool{true}, unsupported: true, contains: "not a core op",
		graph: "graph f(x: f32[3]!grad):\n  %relu : f32[3]!grad = torch.relu(%x)\n  return (%relu,)\n"},
}

func TestSplitErrors(t *testing.T) {
	for _, tt := range splitErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := fxgraph.Parse(tt.graph)
			require.NoError(t, err)
			_, err = aotautograd.Split(g, tt.requiresGrad, aotautograd.Options{Check: true})
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.contains)
			require.Equal(t, tt.notDiff, errors.Is(err, aotautograd.ErrNotDifferentiable), "%v", err)
			require.Equal(t, tt.unsupported, errors.Is(err, primtorch.ErrUnsupported), "%v", err)
			require.NotContains(t, err.Error(), "BUG")
		})
	}
}

// TestFallbackWithoutGradient: a fallback whose inputs do not require grad (dropout of a
// constant mask) is a constant of the backward; a gradient never reaches it.
func TestFallbackWithoutGradient(t *testing.T) {
	g, err := fxgraph.Parse("graph f(x: f32[3], w: f32[3]!grad):\n" +
		"  %fallback : f32[3] = prims.fallback(\"torch.nn.functional.dropout\", %x, p=0.5, training=True)\n" +
		"  %mul : f32[3]!grad = prims.mul(%fallback, %w)\n  return (%mul,)\n")
	require.NoError(t, err)
	s, err := aotautograd.Split(g, []bool{false, true}, aotautograd.Options{Check: true})
	require.NoError(t, err)
	require.Equal(t, []string{"fallback"}, []string{s.Saved[0].Name}, "the random mask is saved, never recomputed")
	require.NotContains(t, s.Backward.String(), "prims.fallback")
}
