package inductor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/logs"
)

// TestCompileDebugDir: every stage is written to the debug directory; the C goes to
// logs.OutputCode and the stage times to logs.CompileTimes.
func TestCompileDebugDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, logs.Configure(map[string]string{"output_code": "info", "compile_times": "info"}))
	logs.Drain()
	defer func() {
		require.NoError(t, logs.Configure(nil))
		logs.Drain()
	}()
	c := compileGraph(t, loadGraph(t, "softmax"), Options{DebugDir: dir})
	for _, f := range []string{"0_prims.txt", "1_lowered.txt", "2_inlined.txt", "3_schedule.txt", "4_kernels.c", "5_plan.txt", "5_plan.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err, f)
		require.NotEmpty(t, data, f)
	}
	csrc, err := os.ReadFile(filepath.Join(dir, "4_kernels.c"))
	require.NoError(t, err)
	require.Equal(t, c.Source.Text, string(csrc))
	var stages []string
	for _, st := range c.Timings {
		stages = append(stages, st.Stage)
	}
	require.Equal(t, []string{"lower", "inline", "fuse", "codegen", "plan", "cc"}, stages)
	var text []string
	for _, r := range logs.Drain() {
		text = append(text, r.Msg)
	}
	all := strings.Join(text, "\n")
	require.Contains(t, all, "PTGO_KERNEL int cpp_fused_amax_sub_exp_sum_div_0(")
	require.Contains(t, all, "inductor: graph softmax: 1 kernels; lower ")
}

// TestCompileNoKernels: a graph with nothing to generate (views and externs only) has no
// library and still runs.
func TestCompileNoKernels(t *testing.T) {
	g := parseGraph(t, `graph f(x: f32[4,8], w: f32[8,2]):
  %t : f32[8,4]{1,8} = prims.permute(%x, [1, 0])
  %m : f32[4,2] = prims.mm(%x, %w)
  return (%t, %m)
`)
	c := checkAgainstReference(t, g, Options{}, 3, 1)
	require.Nil(t, c.Library)
	require.Empty(t, c.Source.Kernels)
}
