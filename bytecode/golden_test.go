package bytecode

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// update rewrites golden files instead of comparing with them: go test ./bytecode -update.
// Tests of this package share it through checkGolden.
var update = flag.Bool("update", false, "rewrite testdata golden files with the current output")

// checkGolden compares got with testdata/<name>, or writes it there under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./bytecode -update and review the diff")
	require.Equal(t, string(want), got, "output differs from %s; if the change is intended run go test ./bytecode -update", path)
}
