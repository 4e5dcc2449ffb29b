package aotautograd

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestDerivativeCoverage: every core op has an entry in derivatives — a formula, or the reason
// it has none — and the registry agrees: ops it marks non-differentiable have no formula, and
// the only differentiable-looking ops without one are prims.fallback and prims.copy_.
func TestDerivativeCoverage(t *testing.T) {
	var missing, both, extra, disagree []string
	for _, op := range primtorch.Ops() {
		d := derivatives[op.ID]
		switch {
		case !op.IsPrim():
			if d.vjp != nil || d.none != "" {
				extra = append(extra, op.Name)
			}
		case d.vjp == nil && d.none == "":
			missing = append(missing, op.Name)
		case d.vjp != nil && d.none != "":
			both = append(both, op.Name)
		case op.NonDifferentiable && d.vjp != nil,
			!op.NonDifferentiable && d.vjp == nil && op.ID != primtorch.OpPrimFallback && op.ID != primtorch.OpPrimCopy:
			disagree = append(disagree, op.Name)
		}
	}
	require.Empty(t, missing, "core ops without a derivative entry: add a formula (or the reason there is none) to derivatives in aotautograd/derivatives.go")
	require.Empty(t, both, "derivative entries with both a formula and a reason (aotautograd/derivatives.go)")
	require.Empty(t, extra, "torch-level ops in derivatives (aotautograd/derivatives.go): Split differentiates prims graphs only")
	require.Empty(t, disagree, "derivative entries that disagree with the registry's NonDifferentiable flag (aotautograd/derivatives.go, primtorch/ops_prims.go)")
	for _, id := range []primtorch.OpID{primtorch.OpPrimFallback, primtorch.OpPrimCopy, primtorch.OpPrimArgmax, primtorch.OpPrimFull} {
		ok, why := HasDerivative(id.Op())
		require.False(t, ok, "%s", id)
		require.NotEmpty(t, why, "%s", id)
	}
	ok, _ := HasDerivative(primtorch.OpPrimMul.Op())
	require.True(t, ok)
	ok, why := HasDerivative(primtorch.LookupName("add.Tensor"))
	require.False(t, ok)
	require.Contains(t, why, "decompose")
}
