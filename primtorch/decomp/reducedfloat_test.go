package decomp

import (
	"testing"

	"ptgo/primtorch"
)

// Every op reducedFloatTorchCalls names is a registry op of that name, for every torch row.
func TestReducedFloatTorchCallsNameRegistryOps(t *testing.T) {
	names := map[string]bool{}
	for _, op := range primtorch.Ops() {
		names[op.Schema.Name] = true
	}
	for _, row := range reducedFloatTorchCalls {
		for n := range row.Value {
			if !names[n] {
				t.Errorf("reducedFloatTorchCalls (torch %v): no registry op is named %q", row.Since, n)
			}
		}
	}
}
