package inductor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/kernels"
)

// TestGolden compiles every representative graph and compares each stage's text with
// testdata/golden/<name>.ir (lowered IR, inlined IR, schedule, plan) and <name>.c (the C after
// kernels.Header). Run with -update after reviewing a change.
func TestGolden(t *testing.T) {
	for _, name := range graphNames(t) {
		t.Run(name, func(t *testing.T) {
			c := compileGraph(t, loadGraph(t, name), Options{})
			var b strings.Builder
			b.WriteString("# lowered\n" + c.Lowered + "\n# inlined\n" + c.Graph.String() + "\n# scheduled\n" + c.Schedule.String() + "\n# plan\n" + c.Program.String())
			golden(t, name+".ir", b.String())
			require.True(t, strings.HasPrefix(c.Source.Text, kernels.Header))
			golden(t, name+".c", c.Source.Text[c.Source.Prelude:])
		})
	}
}
