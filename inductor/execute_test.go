package inductor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRepresentativeGraphs runs every graph in testdata/graphs compiled (fused, on 1 and 2
// threads, and unfused) against the reference evaluator.
func TestRepresentativeGraphs(t *testing.T) {
	for _, name := range graphNames(t) {
		t.Run(name, func(t *testing.T) {
			g := loadGraph(t, name)
			checkAgainstReference(t, g, Options{}, 1, 1)
			checkAgainstReference(t, g, Options{}, 2, 2)
			checkAgainstReference(t, g, Options{NoFusion: true}, 3, 1)
		})
	}
}

// TestRepresentativeGraphsParallel forces every parallel loop the code generator can emit (tiny
// work threshold) and runs on 2 threads.
func TestRepresentativeGraphsParallel(t *testing.T) {
	for _, name := range graphNames(t) {
		t.Run(name, func(t *testing.T) {
			g := loadGraph(t, name)
			c := checkAgainstReference(t, g, Options{Codegen: CodegenOptions{MinParallelWork: 1}}, 4, 2)
			if len(c.Source.Kernels) > 0 {
				require.Contains(t, c.Source.Text, "#pragma omp parallel")
			}
		})
	}
}

// TestHalfPrecision runs float16 and bfloat16 graphs (stored as such, computed in float).
func TestHalfPrecision(t *testing.T) {
	g := parseGraph(t, `graph f(y: f16[4,33], z: bf16[4,33]):
  %b : f16[4,33] = prims.exp(%y)
  %c : bf16[4,33] = prims.convert_element_type(%b, torch.bfloat16)
  %d : bf16[4,33] = prims.add(%c, %z)
  %s : bf16[4,1] = prims.amax(%d, [1], True)
  %h : f16[4,33] = prims.mul(%b, 0.5)
  return (%d, %s, %h)
`)
	c := checkAgainstReference(t, g, Options{}, 5, 1)
	require.Contains(t, c.Source.Text, "ptgo_f2bf(")
	require.Contains(t, c.Source.Text, "(_Float16)")
}

// TestEdgeShapes: 0-d tensors, empty tensors, size-1 dims and full reductions.
func TestEdgeShapes(t *testing.T) {
	tests := []struct{ name, src string }{
		{"0-d", `graph f(x: f32[], y: f32[3]):
  %a : f32[] = prims.exp(%x)
  %e : f32[3]{0} = prims.expand(%a, [3])
  %b : f32[3] = prims.add(%y, %e)
  %s : f32[] = prims.sum(%b, [0], False)
  return (%a, %b, %s)
`},
		{"empty", `graph f(x: f32[0,4], y: f32[2,4]):
  %a : f32[0,4] = prims.neg(%x)
  %s : f32[4] = prims.sum(%x, [0], False)
  %c : f32[2,4] = prims.cat([%x, %y], 0)
  return (%a, %s, %c)
`},
		{"size-1 dims", `graph f(x: f32[1,5,1], w: f32[5,1]):
  %a : f32[1,5,1] = prims.mul(%x, 3.0)
  %s : f32[1,1,1] = prims.amax(%a, [0, 1, 2], True)
  %q : f32[5] = prims.squeeze(%a, [0, 2])
  %r : f32[5,1] = prims.view(%q, [5, 1])
  %m : f32[5,1] = prims.add(%r, %w)
  return (%s, %m)
`},
		{"prod and all over ints", `graph f(a: i64[3,4], m: b8[3,4]):
  %p : i64[3] = prims.prod(%a, [1], False)
  %al : b8[3] = prims.all(%m, [1], False)
  %mn : i64[4] = prims.amin(%a, [0], False)
  %cp : i64[3,4] = prims.cumprod(%a, 0)
  return (%p, %al, %mn, %cp)
`},
		{"iota and full", `graph f(x: f32[6]):
  %i : i64[6] = prims.iota(6, 2, 3, torch.int64)
  %fi : f32[6] = prims.iota(6, 0.5, 0.25, torch.float32)
  %c : f32[6] = prims.convert_element_type(%i, torch.float32)
  %fl : f32[6] = prims.full([6], 1.5, torch.float32)
  %a : f32[6] = prims.add(%c, %fl)
  %b : f32[6] = prims.mul(%a, %x)
  %d : f32[6] = prims.sub(%b, %fi)
  return (%d, %i)
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := parseGraph(t, tt.src)
			checkAgainstReference(t, g, Options{}, 13, 1)
			checkAgainstReference(t, g, Options{Codegen: CodegenOptions{MinParallelWork: 1}}, 14, 2)
		})
	}
}
