package inductor

import (
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestLoweringCoverage names every prims target of the contract (doc.go) and every prims op the
// registry knows with no row in the lowerings table.
func TestLoweringCoverage(t *testing.T) {
	want := map[string]bool{}
	for _, target := range contractTargets {
		want[target] = true
	}
	for _, op := range primtorch.Ops() {
		for _, target := range op.Targets {
			if strings.HasPrefix(target, "prims.") {
				want[target] = true
			}
		}
	}
	var missing []string
	for target := range want {
		if lowerings[target] == nil {
			missing = append(missing, target)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "prims targets with no lowering; add a row to the lowerings table in inductor/lowerings.go (an elementwise op also needs a row in inductor/ops.go)")
	for op := range opTable {
		require.NotNil(t, lowerings["prims."+op], "value op %s has no prims lowering in inductor/lowerings.go", op)
	}
}

// TestLowerViewsAreIndexMaps: a chain of views makes no buffer; its reader loads through the
// composed index.
func TestLowerViewsAreIndexMaps(t *testing.T) {
	g, err := Lower(parseGraph(t, `graph f(x: f32[4,6,8]):
  %p : f32[8,4,6]{1,48,8} = prims.permute(%x, [2, 0, 1])
  %s : f32[8,2,6]{1,48,8+48} = prims.slice(%p, 1, 1, 4, 2)
  %e : f32[3,8,2,6]{0,1,48,8+48} = prims.expand(%s, [3, 8, 2, 6])
  %u : f32[3,8,2,1,6]{0,1,48,6,8+48} = prims.unsqueeze(%e, 3)
  %q : f32[3,8,2,6]{0,1,48,8+48} = prims.squeeze(%u, [3])
  %c : f32[3,8,2,6] = prims.neg(%q)
  return (%c,)
`))
	require.NoError(t, err)
	require.Len(t, g.Buffers, 2, "views must not create buffers:\n%s", g)
	require.Contains(t, g.String(), "neg(load(buf0, i1 + 96*i2 + 8*i3 + 48))")
}

// TestLowerUnknownTargetIsExtern: a target with no lowering runs as an extern call, logged as a
// perf hint naming the file to edit; a fallback keeps its torch target.
func TestLowerUnknownTargetIsExtern(t *testing.T) {
	var g *Graph
	lines := withFusionLog(t, func() {
		var err error
		g, err = Lower(parseGraph(t, `graph f(x: f32[4,4]):
  %a : f32[4,4] = prims.exp(%x)
  %b : f32[4,4] = prims.frobnicate(%a, 3)
  %c : f32[4,4] = prims.fallback("torch.nn.functional.dropout", %b, 0.5, training=True)
  %d : f32[4,4] = prims.neg(%c)
  return (%d,)
`))
		require.NoError(t, err)
	})
	text := g.String()
	require.Contains(t, text, "extern prims.frobnicate(buf1, 3)  # no lowering")
	require.Contains(t, text, `extern torch.nn.functional.dropout(buf2, 0.5, training=True)  # fallback`)
	require.Contains(t, strings.Join(lines, "\n"), "prims.frobnicate (node %b) runs as an extern call (no lowering); add a lowering in inductor/lowerings.go")
	// the plan calls them in order and the extern inputs are materialized
	c := compileGraph(t, parseGraph(t, `graph f(x: f32[4,4]):
  %a : f32[4,4] = prims.exp(%x)
  %b : f32[4,4] = prims.frobnicate(%a, 3)
  %d : f32[4,4] = prims.neg(%b)
  return (%d,)
`), Options{})
	require.Contains(t, c.Program.String(), "%2 = extern prims.frobnicate(%1, 3)")
	_, err := c.Run(randomInputs(parseGraph(t, "graph f(x: f32[4,4]):\n  return (%x,)\n"), rand.New(rand.NewSource(1))), 1)
	require.ErrorContains(t, err, "the Go executor cannot run extern prims.frobnicate")
}

// TestLowerErrors: malformed prims graphs fail with a message naming the node and what to do.
func TestLowerErrors(t *testing.T) {
	tests := []struct{ name, src, err string }{
		{"get_attr", `graph f(x: f32[4]):
  %w : f32[4] = get_attr[weight]
  %a : f32[4] = prims.add(%x, %w)
  return (%a,)
`, "lift parameters to placeholders"},
		{"bad broadcast", `graph f(x: f32[4], y: f32[3]):
  %a : f32[4] = prims.add(%x, %y)
  return (%a,)
`, "does not broadcast"},
		{"reduction meta", `graph f(x: f32[4,5]):
  %a : f32[4,5] = prims.sum(%x, [1], False)
  return (%a,)
`, "the meta's shape [4 5] is not the reduction's [4]"},
		{"bad view", `graph f(x: f32[4,5]):
  %a : f32[21] = prims.view(%x, [21])
  return (%a,)
`, "does not keep the 20 elements"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := parseGraph(t, tt.src)
			_, err := Lower(g)
			require.ErrorContains(t, err, tt.err)
			require.ErrorContains(t, err, "inductor: lowering %")
		})
	}
}

// TestLowerOutputs: outputs that are inputs, views of inputs or views of computed buffers are
// aliases with the meta's layout; a view whose strides differ from its meta is copied.
func TestLowerOutputs(t *testing.T) {
	g, err := Lower(parseGraph(t, `graph f(x: f32[4,6]):
  %t : f32[6,4]{1,6} = prims.permute(%x, [1, 0])
  %a : f32[4,6] = prims.exp(%x)
  %r : f32[2,12] = prims.view(%a, [2, 12])
  %p : f32[6,4] = prims.permute(%a, [1, 0])
  return (%x, %t, %r, %p, 3, None)
`))
	require.NoError(t, err)
	text := g.String()
	require.Contains(t, text, "buf2: f32[6,4]{1,6} = alias of buf0")
	require.Contains(t, text, "buf3: f32[2,12] = alias of buf1")
	require.Contains(t, text, "buf4: f32[6,4] = pointwise ranges=[6,4] reads=[buf1]")
	require.Contains(t, text, "return (buf0, buf2, buf3, buf4, 3, None)")
}

// TestLowerDTypes: a complex input is refused (the pipeline runs such graphs eagerly); float16
// and bfloat16 are stored as such and computed in float (numerics: TestHalfPrecision).
func TestLowerDTypes(t *testing.T) {
	_, err := Lower(parseGraph(t, `graph f(x: c64[4]):
  %a : c64[4] = prims.neg(%x)
  return (%a,)
`))
	require.ErrorContains(t, err, "input dtype c64 is not supported by the C backend; run this graph eagerly")
}
