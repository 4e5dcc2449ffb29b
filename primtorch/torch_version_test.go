package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTorchVersion(t *testing.T) {
	for s, want := range map[string]TorchVersion{
		"1.13.0a0+git49444c3": {1, 13}, "2.14.1": {2, 14}, "2.14.1+cpu": {2, 14}, "2.0.0rc1": {2, 0},
	} {
		v, err := ParseTorchVersion(s)
		require.NoError(t, err, s)
		require.Equal(t, want, v, s)
	}
	_, err := ParseTorchVersion("nonsense")
	require.Error(t, err)
}

func TestForTorch(t *testing.T) {
	rows := []VersionRow[string]{{Torch113, "old"}, {TorchVersion{2, 0}, "two"}, {Torch214, "new"}}
	for v, want := range map[TorchVersion]string{
		{1, 10}: "old", Torch113: "old", {2, 0}: "two", {2, 13}: "two", Torch214: "new", {3, 1}: "new",
	} {
		require.Equal(t, want, ForTorch(rows, v), v.String())
	}
	require.True(t, TestedTorch(rows, Torch214))
	require.False(t, TestedTorch(rows, TorchVersion{2, 5}))
}
