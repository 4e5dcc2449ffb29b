package inductor

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLargeGraphCompilesInParts: a graph of many kernels is built as several translation units
// (one per core, kernels.Source.Parts) linked into one library whose kernels compute what the
// one-unit text describes.
func TestLargeGraphCompilesInParts(t *testing.T) {
	const n = 12
	var b strings.Builder
	var ins, outs []string
	for i := 0; i < n; i++ {
		ins = append(ins, fmt.Sprintf("x%d: f32[6,5]", i))
		outs = append(outs, fmt.Sprintf("%%s%d", i))
	}
	fmt.Fprintf(&b, "graph many(%s):\n", strings.Join(ins, ", "))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  %%e%d : f32[6,5] = prims.exp(%%x%d)\n", i, i)
		fmt.Fprintf(&b, "  %%s%d : f32[6] = prims.sum(%%e%d, [1], False)\n", i, i)
	}
	fmt.Fprintf(&b, "  return (%s,)\n", strings.Join(outs, ", "))
	g := parseGraph(t, b.String())
	c := compileGraph(t, g, Options{})
	require.Len(t, c.Source.Kernels, n)
	want := splitParts(n)
	if runtime.NumCPU() >= 2 {
		require.GreaterOrEqual(t, want, 2)
	}
	if want > 1 {
		require.Len(t, c.Source.Parts, want)
		found := 0
		for _, k := range c.Source.Kernels {
			for _, p := range c.Source.Parts {
				found += strings.Count(p, "PTGO_KERNEL int "+k.Name+"(")
			}
		}
		require.Equal(t, n, found, "every kernel in exactly one part")
	}
	rng := rand.New(rand.NewSource(1))
	inputs := randomInputs(g, rng)
	outsT, err := c.Run(inputs, 2)
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		for r := int64(0); r < 6; r++ {
			sum := 0.0
			for k := int64(0); k < 5; k++ {
				sum += float64(float32(math.Exp(inputs[i].At(r*5 + k))))
			}
			require.InDelta(t, sum, outsT[i].At(r), 1e-4*math.Abs(sum)+1e-5)
		}
	}
}
