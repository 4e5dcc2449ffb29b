package inductor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/logs"
)

// withFusionLog runs f with the fusion channel on and returns the lines it logged.
func withFusionLog(t *testing.T, f func()) []string {
	t.Helper()
	require.NoError(t, logs.Configure(map[string]string{"fusion": "debug", "perf_hints": "info"}))
	logs.Drain()
	defer func() {
		require.NoError(t, logs.Configure(nil))
		logs.Drain()
	}()
	f()
	var lines []string
	for _, r := range logs.Drain() {
		lines = append(lines, r.Msg)
	}
	return lines
}

func countSteps(s *Schedule) (kernels, externs int) {
	for _, st := range s.Steps {
		switch st.(type) {
		case *Kernel:
			kernels++
		case *ExternStep:
			externs++
		}
	}
	return
}

func scheduleOf(t *testing.T, name string) *Schedule {
	g, err := Lower(loadGraph(t, name))
	require.NoError(t, err)
	Inline(g)
	require.NoError(t, Verify(g))
	return Fuse(g)
}

var fusionTests = []struct {
	graph            string
	kernels, externs int
	locals           []string // buffers that must stay in registers
	logs             []string // substrings of fusion log lines
}{
	{graph: "pointwise_chain", kernels: 1, logs: []string{"fusing buf1 into [buf2]: pointwise, inlined"}},
	{graph: "broadcast_transpose", kernels: 1},
	// softmax: max-reduce, exp-sum-reduce and normalize in one kernel, both reductions local
	{graph: "softmax", kernels: 1, locals: []string{"buf1", "buf4"},
		logs: []string{"sum over [64] per outer index [16]", "ranges [16,64] split as outer [16]"}},
	{graph: "layer_norm", kernels: 1, locals: []string{"buf3", "buf7"}},
	{graph: "rms_norm", kernels: 1, locals: []string{"buf3"}},
	// mm -> +bias -> gelu: the extern and one fused epilogue kernel
	{graph: "mm_bias_gelu", kernels: 1, externs: 1},
	{graph: "reduce_middle", kernels: 1, logs: []string{"as an inner loop (it is contiguous, the reduced dims are not)"}},
	{graph: "cat", kernels: 1},
	{graph: "int_bool", kernels: 1},
	{graph: "mutation", kernels: 2, logs: []string{"not fusing buf7: it writes graph input buf1"}},
	// SGD with momentum and weight decay: the new momentum buffer reads p and buf and feeds both
	// copies; inlined into both, each copy would read the other's destination (no order), so the
	// new parameter stays a value of its own — a C variable of the one kernel that updates the
	// momentum buffer and then the parameter in place, element by element (the parameter's copy
	// joins after the buffer's, which reads the old parameter).
	{graph: "sgd_weight_decay", kernels: 1, locals: []string{"buf8"}, logs: []string{
		"the copies into graph inputs would each read what another writes",
		"fusing buf9 into buf8+buf10: it writes graph input buf0 in place, element by element"}},
	// b's copy reads a transposed: a's copy cannot run before it, nor in its loop (the elements
	// of a it reads are not the ones a's copy writes in the same iteration)
	{graph: "inplace_transposed", kernels: 2, logs: []string{"reads buf0's old value after the write", "at another element than the one written"}},
}

func TestFusion(t *testing.T) {
	for _, tt := range fusionTests {
		t.Run(tt.graph, func(t *testing.T) {
			var s *Schedule
			lines := withFusionLog(t, func() { s = scheduleOf(t, tt.graph) })
			k, e := countSteps(s)
			require.Equal(t, tt.kernels, k, "kernels\n%s", s)
			require.Equal(t, tt.externs, e, "extern calls\n%s", s)
			locals := map[string]bool{}
			for _, st := range s.Steps {
				if kr, ok := st.(*Kernel); ok {
					for _, n := range kr.Nodes {
						if n.Local {
							locals[n.Buf.Name] = true
						}
					}
				}
			}
			for _, l := range tt.locals {
				require.True(t, locals[l], "%s should be local\n%s", l, s)
			}
			all := strings.Join(lines, "\n")
			for _, want := range tt.logs {
				require.Contains(t, all, want)
			}
		})
	}
}

// TestFusionRefusals checks the cases where fusion must not happen, with the reason logged.
func TestFusionRefusals(t *testing.T) {
	tests := []struct {
		name, src string
		kernels   int
		log       string
	}{
		{"ranges differ", `graph f(x: f32[4,16]):
  %a : f32[4,16] = prims.exp(%x)
  %v : f32[64] = prims.view(%a, [64])
  %b : f32[64] = prims.neg(%v)
  return (%a, %b)
`, 2, "not fusing buf2 into buf1: ranges differ [4,16] vs [64]"},
		{"reads another row of a reduction", `graph f(x: f32[8,16]):
  %s : f32[8,1] = prims.sum(%x, [1], True)
  %v : f32[1,8] = prims.view(%s, [1, 8])
  %e : f32[8,8]{0,1} = prims.expand(%v, [8, 8])
  %y : f32[8,8] = prims.mul(%e, 2.0)
  return (%y,)
`, 2, "reads buf1 at another outer index"},
		{"cycle through an extern", `graph f(x: f32[8,8], w: f32[8,8]):
  %a : f32[8,8] = prims.exp(%x)
  %s : f32[8,1] = prims.sum(%a, [1], True)
  %m : f32[8,8] = prims.mm(%a, %w)
  %se : f32[8,8]{1,0} = prims.expand(%s, [8, 8])
  %y : f32[8,8] = prims.add(%m, %se)
  return (%y, %s)
`, 2, "another step runs between them (fusing would make a cycle)"},
		{"a reduction is never inlined", `graph f(x: f32[8,16]):
  %s : f32[8,1] = prims.sum(%x, [1], True)
  %e : f32[8,16]{1,0} = prims.expand(%s, [8, 16])
  %a : f32[8,16] = prims.add(%x, %e)
  %b : f32[8,16] = prims.mul(%x, %e)
  return (%a, %b)
`, 1, "fusing buf3 into buf1+buf2: ranges [8,16] split as outer [8]"},
		{"broadcast recompute is refused", `graph f(x: f32[64], y: f32[256,64]):
  %a : f32[64] = prims.exp(%x)
  %b : f32[64] = prims.tanh(%a)
  %c : f32[64] = prims.sin(%b)
  %e : f32[256,64]{0,1} = prims.expand(%c, [256, 64])
  %m : f32[256,64] = prims.mul(%y, %e)
  return (%m,)
`, 2, "not fusing buf4 into [buf5]: recomputing it costs"},
		// a per-channel value broadcast over a channels-last image: under the value's outer
		// loops [N, C] the image would be stored with a stride of C per element; on its own
		// the image's kernel runs in memory order
		{"channels-last broadcast keeps its memory order", `graph f(x: f32[2,8,4,4]{128,1,32,8}, g: f32[2,8,5]):
  %s : f32[2,8] = prims.sum(%g, [2])
  %v : f32[2,8,1,1] = prims.view(%s, [2, 8, 1, 1])
  %e : f32[2,8,4,4]{8,1,0,0} = prims.expand(%v, [2, 8, 4, 4])
  %y : f32[2,8,4,4]{128,1,32,8} = prims.mul(%x, %e)
  return (%y,)
`, 2, "not fusing buf3 into buf2: under the outer loops [2,8] buf3's stores would run against its memory order"},
		// a channels-last BatchNorm's sum over N, H, W per channel does not join the kernel of a
		// per-channel value: under its outer loop [C] each channel would walk a strided column
		{"channels-last per-channel sum stays a column reduction", `graph f(x: f32[2,8,4,4]{128,1,32,8}, v: f32[1,8,1,1]):
  %r : f32[1,8,1,1] = prims.rsqrt(%v)
  %e : f32[2,8,4,4]{0,1,0,0} = prims.expand(%r, [2, 8, 4, 4])
  %m : f32[2,8,4,4]{128,1,32,8} = prims.mul(%x, %e)
  %s : f32[1,8,1,1] = prims.sum(%m, [0, 2, 3], True)
  return (%s, %r)
`, 2, "it reduces strided columns of a contiguous output dim 8, which must stay an inner loop"},
		// a channels-last image's sum over H and W accumulates blocks of C per n (a column
		// reduction inside the outer loop [N]); its broadcast joins the kernel under [N]
		{"channels-last image sum fuses under [N]", `graph f(x: f32[2,8,4,4]{128,1,32,8}):
  %s : f32[2,8] = prims.sum(%x, [2, 3])
  %v : f32[2,8,1,1] = prims.view(%s, [2, 8, 1, 1])
  %e : f32[2,8,4,4]{8,1,0,0} = prims.expand(%v, [2, 8, 4, 4])
  %y : f32[2,8,4,4]{128,1,32,8} = prims.mul(%x, %e)
  return (%y,)
`, 1, "ranges [2,8,4,4] split as outer [2]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s *Schedule
			lines := withFusionLog(t, func() {
				g, err := Lower(parseGraph(t, tt.src))
				require.NoError(t, err)
				Inline(g)
				s = Fuse(g)
			})
			k, _ := countSteps(s)
			require.Equal(t, tt.kernels, k, "%s", s)
			require.Contains(t, strings.Join(lines, "\n"), tt.log)
		})
	}
}
