package primtorch_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
	_ "ptgo/primtorch/decomp" // sets the decomposition status the listing prints
)

// TestListing keeps testdata/ops.txt, the reviewed list of every op, in step with the registry
// and the decomposition table.
func TestListing(t *testing.T) {
	path := filepath.Join("testdata", "ops.txt")
	got := primtorch.Listing()
	if *primtorch.UpdateGolden {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "read %s; create it with go test ./primtorch -run TestListing -update", path)
	require.Equal(t, string(want), got, "the registry or the decomposition table changed: review the diff and run go test ./primtorch -run TestListing -update")
}
