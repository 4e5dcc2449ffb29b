package aotautograd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// notExercised are core ops with a derivative that no recorded case differentiates, with the
// reason.
var notExercised = map[primtorch.OpID]string{}

// TestDerivativesExercised: every derivative formula is differentiated by at least one case
// checked against torch (TestGradAgainstTorch or TestAOTEagerAgainstTorch); add a case to
// testdata/gen_cases.py for any op it names.
func TestDerivativesExercised(t *testing.T) {
	seen := map[primtorch.OpID]bool{}
	for i := range loadCases(t) {
		c := &cases[i]
		if c.NotDiff {
			continue
		}
		if _, gap := knownGaps[c.Name()]; gap {
			continue
		}
		s := split(t, c, aotautograd.Options{})
		// a forward node is differentiated when its gradient is computed: it requires grad
		// and some tangent reaches it (the joint graph has backward nodes from its line)
		for _, n := range s.Joint.Nodes {
			if n.Op != fxgraph.CallFunction || n.TensorMeta() == nil || !n.TensorMeta().RequiresGrad || len(s.Tangents) == 0 {
				continue
			}
			if op := primtorch.Lookup(n.Target); op != nil {
				seen[op.ID] = true
			}
		}
	}
	var missing []string
	for _, op := range primtorch.Ops() {
		if ok, _ := aotautograd.HasDerivative(op); ok && !seen[op.ID] && notExercised[op.ID] == "" {
			missing = append(missing, op.Name)
		}
	}
	require.Empty(t, missing, "derivative formulas no case checks against torch: add cases to aotautograd/testdata/gen_cases.py")
}
