package decomp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
)

// goldenGraphs are cases whose prims graphs are kept in testdata/graphs/<op>_<tag>.txt: a
// reviewed record of what decompositions emit (rewrite with -update).
var goldenGraphs = []string{
	"graph/mlp_block", "graph/attention", "graph/softmax_chain", "graph/inplace_chain",
	"batch_norm/train_buffers", "setitem/slice_number_input", "setitem/mask_intermediate",
	"setitem/view_of_intermediate", "matmul/4x3broadcast", "layer_norm/affine", "getitem/split_adv",
	"cross_entropy/smoothing", "linear/3d_t", "dropout/train", "graph/rms_norm", "add.Tensor/out_input",
}

func TestGoldenGraphs(t *testing.T) {
	cases := loadCases(t)
	byName := map[string]int{}
	for i := range cases {
		byName[cases[i].name()] = i
	}
	for _, name := range goldenGraphs {
		i, ok := byName[name]
		require.True(t, ok, "no case %s in testdata/cases.json", name)
		g, _ := build(t, &cases[i])
		pg := decompose(t, g)
		parsed, err := fxgraph.Parse(pg.String())
		require.NoError(t, err, "the prims graph of %s does not parse back", name)
		require.Empty(t, fxgraph.Diff(pg, parsed), "the prims graph of %s parses back to another graph", name)
		got := "# torch-level\n" + g.String() + "\n# prims\n" + pg.String()
		path := filepath.Join("testdata", "graphs", cases[i].Op+"_"+cases[i].Tag+".txt")
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "read %s; create it with go test ./primtorch/decomp -run TestGoldenGraphs -update", path)
		require.Equal(t, string(want), got, "the decomposition of %s changed: review the diff and run go test ./primtorch/decomp -run TestGoldenGraphs -update", name)
	}
}
