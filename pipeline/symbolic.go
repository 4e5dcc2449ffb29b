package pipeline

import (
	"sync"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// decompKeepsSymbols reports whether decomp.Decompose keeps size symbols symbolic (or
// specialises them with guards) rather than baking a hint into the graph without a guard, as a
// decomposer written for static graphs does: mean over a symbolic batch must divide by the
// symbolic element count, not by its value at the hint. The aot_eager training path takes a
// symbolic graph only when it does (a baked size would give wrong results at other sizes); it
// is asked once per process.
var decompKeepsSymbols = sync.OnceValue(func() bool {
	g, err := fxgraph.Parse(`graph probe[s0=2](x: f32[s0,8]!grad):
  %mean : f32[]!grad = torch.mean(%x)
  return (%mean,)
`)
	if err != nil {
		return false
	}
	pg, err := decomp.Decompose(g, decomp.Options{})
	if err != nil {
		return false
	}
	if _, ok := g.Shapes.Specialized()[0]; ok {
		return true // specialised, hence guarded: right at the hint only, as the guard says
	}
	for _, n := range pg.Nodes {
		for _, a := range n.Args {
			if c, ok := a.(fxgraph.Const); ok && primtorch.HasSymbols(c.V) {
				return true // the divisor is a size expression
			}
		}
	}
	return false
})
