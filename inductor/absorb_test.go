package inductor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A depthwise convolution (8 channels) with the activation act applied to its result, then read
// by a pointwise convolution (an extern: the activation is stored).
func depthwiseGraph(act, extra string) string {
	return `graph dw(x: f32[2,8,9,7], w: f32[8,1,3,3], b: f32[8], w2: f32[16,8,1,1]):
  %c : f32[2,8,5,4] = prims.convolution(%x, %w, %b, [2, 2], [1, 1], [1, 1], False, [0, 0], 8)
` + act + `
  %o : f32[2,16,5,4] = prims.convolution(%a, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
` + extra
}

const (
	relu6Nodes = `  %m : f32[2,8,5,4] = prims.maximum(%c, 0.0)
  %a : f32[2,8,5,4] = prims.minimum(%m, 6.0)`
	reluNodes = `  %a : f32[2,8,5,4] = prims.maximum(%c, 0.0)`
	siluNodes = `  %n : f32[2,8,5,4] = prims.neg(%c)
  %e : f32[2,8,5,4] = prims.exp(%n)
  %d : f32[2,8,5,4] = prims.add(%e, 1.0)
  %a : f32[2,8,5,4] = prims.div(%c, %d)`
)

var absorbTests = []struct {
	name  string
	graph string
	want  string // the activation keyword the first convolution gets; "" when nothing is absorbed
	// the kernels left when it is absorbed (none computes any of the activation)
	kernels []string
}{
	{"relu6", depthwiseGraph(relu6Nodes, "  return (%o,)"), "relu6", nil},
	{"relu", depthwiseGraph(reluNodes, "  return (%o,)"), "relu", nil},
	{"silu", depthwiseGraph(siluNodes, "  return (%o,)"), "silu", nil},
	// the activation read twice (efficientnet's squeeze-excitation: a mean and a product)
	{"silu_read_twice", depthwiseGraph(siluNodes+"\n  %s : f32[2,8,1,1] = prims.sum(%a, [2, 3], True)\n  %p : f32[2,8,5,4] = prims.mul(%a, %s)",
		"  return (%o, %p)"), "silu", []string{"cpp_fused_sum_mul_0"}},
	{"silu_step_read_elsewhere", depthwiseGraph(siluNodes, "  return (%o, %e)"), "", nil},
	// the relu6's maximum is an output: the relu is absorbed, the minimum stays a kernel
	{"relu6_maximum_read_elsewhere", depthwiseGraph(relu6Nodes, "  return (%o, %m)"), "relu", []string{"cpp_fused_minimum_0"}},
	{"result_is_an_output", depthwiseGraph(reluNodes, "  return (%o, %c)"), "", nil},
	{"result_read_twice", depthwiseGraph(reluNodes+"\n  %d : f32[2,8,5,4] = prims.add(%c, 1.0)", "  return (%o, %d)"), "", nil},
	{"other_activation", depthwiseGraph(`  %a : f32[2,8,5,4] = prims.maximum(%c, 0.5)`, "  return (%o,)"), "", nil},
	{"clamp_below_only_six", depthwiseGraph(`  %a : f32[2,8,5,4] = prims.minimum(%c, 6.0)`, "  return (%o,)"), "", nil},
	{"ungrouped", `graph dense(x: f32[1,8,6,6], w: f32[8,8,3,3], w2: f32[4,8,1,1]):
  %c : f32[1,8,6,6] = prims.convolution(%x, %w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
  %a : f32[1,8,6,6] = prims.maximum(%c, 0.0)
  %o : f32[1,4,6,6] = prims.convolution(%a, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
  return (%o,)`, "", nil},
	{"dilated", `graph dil(x: f32[1,8,6,6], w: f32[8,1,3,3], w2: f32[4,8,1,1]):
  %c : f32[1,8,6,6] = prims.convolution(%x, %w, None, [1, 1], [2, 2], [2, 2], False, [0, 0], 8)
  %a : f32[1,8,6,6] = prims.maximum(%c, 0.0)
  %o : f32[1,4,6,6] = prims.convolution(%a, %w2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
  return (%o,)`, "", nil},
}

// TestAbsorbActivations: which activations become the depthwise convolution's keyword, and that
// the plan then has no kernel for them.
func TestAbsorbActivations(t *testing.T) {
	for _, tt := range absorbTests {
		t.Run(tt.name, func(t *testing.T) {
			c := compileGraph(t, parseGraph(t, tt.graph), Options{})
			first := c.Program.String()
			if tt.want == "" {
				require.NotContains(t, first, ActivationKwarg+"=")
				require.NotEmpty(t, c.Source.Kernels, "the activation stays a kernel")
				return
			}
			require.Contains(t, first, `, 8, activation="`+tt.want+`")`)
			var names []string
			for _, k := range c.Source.Kernels {
				names = append(names, k.Name)
			}
			require.Equal(t, tt.kernels, names, "the kernels left")
			require.Equal(t, 1, strings.Count(first, "activation="))
			// the plan round-trips through JSON with the keyword
			js, err := c.Program.JSON()
			require.NoError(t, err)
			back, err := DecodeProgram(js)
			require.NoError(t, err)
			require.Equal(t, first, back.String())
		})
	}
}

// TestAbsorbGolden pins the loop IR and the plan of a depthwise convolution with its relu6
// absorbed (testdata/golden/absorb_relu6.ir; -update rewrites it).
func TestAbsorbGolden(t *testing.T) {
	c := compileGraph(t, parseGraph(t, absorbTests[0].graph), Options{})
	golden(t, "absorb_relu6.ir", "# lowered\n"+c.Lowered+"\n# inlined and absorbed\n"+c.Graph.String()+"\n# plan\n"+c.Program.String())
}

// TestAbsorbOffWithoutFusion: NoFusion keeps every node its own step.
func TestAbsorbOffWithoutFusion(t *testing.T) {
	c := compileGraph(t, parseGraph(t, absorbTests[0].graph), Options{NoFusion: true})
	require.NotContains(t, c.Program.String(), ActivationKwarg)
}
