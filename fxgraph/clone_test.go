package fxgraph

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

func TestCloneIsEqualAndIndependent(t *testing.T) {
	for _, tc := range allGraphs() {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.build()
			before := g.String()
			c := Clone(g)
			require.Empty(t, Diff(g, c))
			require.Equal(t, before, c.String())
			for i, n := range c.Nodes {
				require.NotSame(t, g.Nodes[i], n)
				require.Equal(t, i, n.Index())
				for _, in := range n.Inputs() {
					require.Same(t, c.Nodes[in.Index()], in, "node %s of the clone reads a node of the original", n.Name)
				}
			}
			// Editing the clone's metas and arguments leaves the original alone.
			for _, n := range c.Nodes {
				if m := n.TensorMeta(); m != nil && len(m.Shape) > 0 {
					m.Shape[0]++
					m.Strides[0]++
				}
				if tm, ok := n.Meta.([]any); ok && len(tm) > 0 {
					tm[0] = nil
				}
				for i := range n.Args {
					n.Args[i] = Const{nil}
				}
				for i := range n.Kwargs {
					n.Kwargs[i].Value = Const{nil}
				}
			}
			require.Equal(t, before, g.String())
		})
	}
}

func TestCloneKeepsReservedNames(t *testing.T) {
	g := mlpGraph()
	c := Clone(g)
	x := c.Nodes[0]
	require.Equal(t, g.AddCall("torch.relu", []Arg{g.Nodes[0]}, nil, f32(4, 8)).Name,
		c.AddCall("torch.relu", []Arg{x}, nil, f32(4, 8)).Name)
	require.Equal(t, "relu_1", c.Nodes[len(c.Nodes)-1].Name)
}

func TestCloneCopiesNestedDictsAndSlices(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(4))
	gi := g.AddCall("operator.getitem", []Arg{x, Slice{Start: x, Stop: none(), Step: none()}}, nil, f32(4))
	g.AddOutput(Dict{[]DictEntry{{"a", list(gi, tup(x))}}})
	c := Clone(g)
	out := c.OutputNode().Args[0].(Dict)
	require.Same(t, c.Nodes[1], out.Entries[0].Value.(List).Elems[0])
	require.Same(t, c.Nodes[0], c.Nodes[1].Args[1].(Slice).Start)
	out.Entries[0].Key = "b"
	require.Equal(t, "a", g.OutputNode().Args[0].(Dict).Entries[0].Key)
	require.Equal(t, primtorch.CPU, c.Nodes[0].TensorMeta().Device)
}
