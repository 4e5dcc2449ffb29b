package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
)

// ddpText: three layers of 16 KiB weights, then a write in place (relu_) that reads what
// fc2 computed, so no cut may go between fc2 and the relu_.
const ddpText = `graph forward(x: f32[4,64], w1: f32[64,64]!grad):
  %linear   : f32[4,64]!grad = torch.nn.functional.linear(%x, %w1, None)  # model.py:10
  %relu     : f32[4,64]!grad = torch.relu(%linear)  # model.py:11
  %fc2_w    : f32[64,64]!grad = get_attr[fc2.weight]
  %linear_1 : f32[4,64]!grad = torch.nn.functional.linear(%relu, %fc2_w, None)  # model.py:12
  %relu_    : f32[4,64]!grad = .relu_(%linear_1)  # model.py:13
  %fc3_w    : f32[64,64]!grad = get_attr[fc3.weight]
  %linear_2 : f32[4,64]!grad = torch.nn.functional.linear(%relu_, %fc3_w, None)  # model.py:14
  %add      : f32[4,64]!grad = operator.add(%linear_2, %relu)  # model.py:15
  return (%add, %relu)
`

func TestSplitAtBuckets(t *testing.T) {
	g := parse(t, ddpText)
	attrs := map[string]py.Obj{"fc2.weight": 2, "fc3.weight": 3}
	// w1 is a parameter DDP reduces, x is not
	b := Buckets{First: 16 << 10, Cap: 16 << 10, Params: []bool{false, true}}
	s := SplitAtBuckets(g, attrs, b)
	require.NotNil(t, s)
	require.Len(t, s.Parts, 3)
	// fc3 closes the last bucket: its part starts at linear_2, where the graph first reads it;
	// fc2's starts at linear_1; fc1's part is the rest
	var bodies []string
	for _, p := range s.Parts {
		var names []string
		for _, n := range p.Graph.Nodes {
			if n.Op == fxgraph.CallFunction || n.Op == fxgraph.CallMethod {
				names = append(names, n.Target)
			}
		}
		bodies = append(bodies, strings.Join(names, ","))
	}
	require.Equal(t, []string{"torch.nn.functional.linear,torch.relu",
		"torch.nn.functional.linear,relu_", "torch.nn.functional.linear,operator.add"}, bodies)
	require.Equal(t, []Ref{{-1, 0}, {-1, 1}}, s.Parts[0].Inputs)
	require.Equal(t, []Ref{{0, 0}}, s.Parts[1].Inputs) // relu
	require.Equal(t, []Ref{{1, 0}, {0, 0}}, s.Parts[2].Inputs)
	require.Equal(t, []Ref{{2, 0}, {0, 0}}, s.Outputs)
	require.Equal(t, map[string]py.Obj{"fc2.weight": 2}, s.Parts[1].Attrs)

	// a cut before relu_ would hand linear_1 to a part that writes it in place
	for i, n := range g.Nodes {
		switch n.Name {
		case "relu_":
			require.False(t, cutAllowed(g, i), "before relu_")
		case "linear_1", "linear_2":
			require.True(t, cutAllowed(g, i), "before %s", n.Name)
		case "linear":
			require.False(t, cutAllowed(g, i), "a first part with no work")
		}
	}

	// buckets larger than the parameters: no cut
	require.Nil(t, SplitAtBuckets(g, attrs, Buckets{First: 1 << 20, Cap: 1 << 20, Params: []bool{false, true}}))
	// not a DDP
	require.Nil(t, SplitAtBuckets(g, attrs, Buckets{}))

	// each part compiles as its own region, and Host.Chain joins them
	h := &fakeHost{}
	obj, err := Compile(h, testConfig, &Request{Name: "net", Graph: parse(t, ddpText), Attrs: attrs, Backend: Inductor, GradEnabled: true, DDP: b})
	require.NoError(t, err)
	require.NotZero(t, obj)
	require.Equal(t, []int{3}, h.chains)
	require.Len(t, h.autograd, 3)
}
