package aotautograd_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/primtorch"
)

// knownGaps are cases that disagree with torch because of another package, with the reason.
// TestGradAgainstTorch fails when one of them starts to agree (remove it then).
var knownGaps = map[string]string{}

// TestGradAgainstTorch decomposes every recorded case, splits it into forward and backward
// graphs (min-cut and save-all partitions), runs both with the reference interpreter and
// compares outputs, buffers and input gradients with eager torch's .backward(). Cases whose
// graphs hold a prims.fallback (convolution's backward) are checked by TestAOTEagerAgainstTorch.
func TestGradAgainstTorch(t *testing.T) {
	cs := loadCases(t)
	var checked, viaTorch int
	for i := range cs {
		c := &cs[i]
		t.Run(c.Name(), func(t *testing.T) {
			if c.NotDiff {
				_, pg, err := build(c)
				require.NoError(t, err)
				_, err = aotautograd.Split(pg, c.RequiresGrad, aotautograd.Options{Check: true})
				require.Error(t, err, "the case needs a derivative ptgo lacks")
				require.True(t, errors.Is(err, aotautograd.ErrNotDifferentiable), "%v", err)
				require.True(t, errors.Is(err, primtorch.ErrUnsupported), "%v", err)
				var nd *aotautograd.NotDifferentiableError
				require.True(t, errors.As(err, &nd))
				require.Contains(t, nd.Target, "prims.fallback")
				return
			}
			for _, p := range []aotautograd.Partition{aotautograd.MinCut, aotautograd.SaveAll} {
				r, msg := runCase(t, c, aotautograd.Options{Check: true, Partition: p})
				require.Empty(t, msg, "%s partition", p)
				if r.fallback {
					viaTorch++
					return
				}
				msg = check(c, r)
				if gap, ok := knownGaps[c.Name()]; ok {
					require.NotEmpty(t, msg, "known gap %q now agrees with torch: remove it from knownGaps", gap)
					t.Skipf("known gap: %s", gap)
				}
				if msg != "" {
					t.Fatalf("%s partition: %s\nforward:\n%s\nbackward:\n%s", p, msg, r.split.Forward, r.split.Backward)
				}
			}
			checked++
		})
	}
	t.Logf("%d cases checked with the reference interpreter, %d hold a fallback (checked through torch)", checked, viaTorch)
}
