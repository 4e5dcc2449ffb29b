package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/bytecode/py"
)

// A training BatchNorm writes its running statistics and num_batches_tracked: the region says
// which inputs (after the inputs, the lifted parameters and buffers in get_attr order) so a
// double backward's recompute reads what the forward read.
const bnTrainText = `graph forward(x: f32[2,4,3,3]!grad):
  %bn_mean     : f32[4]      = get_attr[bn.running_mean]
  %bn_var      : f32[4]      = get_attr[bn.running_var]
  %bn_weight   : f32[4]!grad = get_attr[bn.weight]
  %bn_bias     : f32[4]!grad = get_attr[bn.bias]
  %bn_n        : i64[]       = get_attr[bn.num_batches_tracked]
  %add_        : i64[]       = .add_(%bn_n, 1)
  %batch_norm  : f32[2,4,3,3]!grad = torch.nn.functional.batch_norm(%x, %bn_mean, %bn_var, %bn_weight, %bn_bias, True, 0.1, 1e-05)
  %tanh        : f32[2,4,3,3]!grad = torch.tanh(%batch_norm)
  return (%tanh,)
`

func TestRegionRecomputeEffects(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		attrs   map[string]py.Obj
		written []int
		random  bool
	}{
		{"mlp", mlpText, mlpAttrs(), nil, false},
		{"batch norm", bnTrainText, map[string]py.Obj{"bn.running_mean": 1, "bn.running_var": 2, "bn.weight": 3, "bn.bias": 4,
			"bn.num_batches_tracked": 5}, []int{1, 2, 5}, false},
		{"dropout", strings.Replace(mlpText, "torch.relu(%linear)", "torch.nn.functional.dropout(%linear, 0.5, True)", 1),
			mlpAttrs(), nil, true},
		{"random mask", strings.Replace(mlpText, "  %relu       : f32[4,16]!grad = torch.relu(%linear)  # model.py:13\n",
			"  %noise : f32[4,16] = torch.rand_like(%linear)\n  %relu : f32[4,16]!grad = torch.mul(%linear, %noise)\n", 1),
			mlpAttrs(), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{}
			_, err := Compile(h, testConfig, &Request{Name: "m", Graph: parse(t, tt.text), Attrs: tt.attrs, Backend: AOTEager, GradEnabled: true})
			require.NoError(t, err)
			require.Len(t, h.autograd, 1)
			r := h.autograd[0].region
			require.NotZero(t, r.Recompute, "every region can be recomputed with torch for a double backward")
			require.ElementsMatch(t, tt.written, r.Written)
			require.Equal(t, tt.random, r.Random)
			require.Empty(t, r.NoRecompute)
		})
	}
}
