package decomp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestDecompCoverage checks the decomposition table against the registry: every torch-level op
// has a decomposition in decomps or a reviewed reason in fallbackOps (never both), and core ops
// have neither.
func TestDecompCoverage(t *testing.T) {
	var missing, both, prims, noReason []string
	decomposed, fallback := 0, 0
	for _, op := range primtorch.Ops() {
		has := decomps[op.ID] != nil
		reason, fb := fallbackOps[op.ID]
		switch {
		case op.IsPrim():
			if has || fb {
				prims = append(prims, op.Name)
			}
		case has && fb:
			both = append(both, op.Name)
		case !has && !fb:
			missing = append(missing, op.Name)
		case fb && strings.TrimSpace(reason) == "":
			noReason = append(noReason, op.Name)
		case has:
			decomposed++
		default:
			fallback++
		}
	}
	require.Empty(t, missing, "torch-level ops with neither a decomposition nor a reviewed fallback: add an entry to decomps in primtorch/decomp/table.go (its function in the d_*.go file of its group) or a reason to fallbackOps")
	require.Empty(t, both, "ops with a decomposition and a fallback reason: remove one of them from primtorch/decomp/table.go")
	require.Empty(t, prims, "core ops in the decomposition table: prims are not decomposed; remove them from primtorch/decomp/table.go")
	require.Empty(t, noReason, "fallbackOps entries without a reason in primtorch/decomp/table.go")
	t.Logf("%d torch-level ops decomposed, %d kept as prims.fallback", decomposed, fallback)
}

// TestInplaceEntries checks that in-place ops use inplace exactly when their functional op
// decomposes.
func TestInplaceEntries(t *testing.T) {
	for _, op := range primtorch.Ops() {
		if op.Functional == nil {
			continue
		}
		require.Equal(t, decomps[op.Functional.ID] != nil, decomps[op.ID] != nil,
			"%s: an in-place op decomposes (with inplace, primtorch/decomp/table.go) exactly when %s does", op.Name, op.Functional.Name)
	}
}

func TestStatus(t *testing.T) {
	require.Equal(t, "decomposed", Status(primtorch.OpAdd.Op()))
	require.Equal(t, "fallback", Status(primtorch.OpRand.Op()))
	require.Equal(t, "n/a", Status(primtorch.OpPrimAdd.Op()))
	require.Equal(t, "decomposed", primtorch.OpSoftmax.Op().DecompStatus())
}
