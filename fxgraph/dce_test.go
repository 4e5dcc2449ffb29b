package fxgraph

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// inPlace is the side-effect test of these tests: Tensor methods ending in "_".
func inPlace(n *Node) bool { return n.Op == CallMethod && strings.HasSuffix(n.Target, "_") }

var dceTests = []struct {
	name       string
	sideEffect func(*Node) bool
	in, want   string
	removed    int
}{
	{"unused chain and get_attr", inPlace, `graph f(x: f32[2], unused: f32[2]):
  %w    : f32[2] = get_attr[w]
  %b    : f32[2] = get_attr[b]
  %mul  : f32[2] = torch.mul(%x, %w)
  %relu : f32[2] = torch.relu(%mul)
  %neg  : f32[2] = torch.neg(%relu)
  %add  : f32[2] = torch.add(%x, %b)
  return (%add,)
`, `graph f(x: f32[2], unused: f32[2]):
  %b   : f32[2] = get_attr[b]
  %add : f32[2] = torch.add(%x, %b)
  return (%add,)
`, 4},
	{"in-place kept with its inputs", inPlace, `graph f(x: f32[2]):
  %one  : f32[2] = torch.ones_like(%x)
  %add_ : f32[2] = .add_(%x, %one)
  %relu : f32[2] = torch.relu(%x)
  return {"x": %x}
`, `graph f(x: f32[2]):
  %one  : f32[2] = torch.ones_like(%x)
  %add_ : f32[2] = .add_(%x, %one)
  return {"x": %x}
`, 1},
	{"nil sideEffect removes in-place", nil, `graph f(x: f32[2]):
  %add_ : f32[2] = .add_(%x, 1)
  return [%x]
`, `graph f(x: f32[2]):
  return [%x]
`, 1},
	{"uses through structures and kwargs", nil, `graph f(x: f32[2]):
  %a : f32[2] = torch.relu(%x)
  %b : f32[2] = torch.neg(%x)
  %c : f32[2] = torch.add(%x, other=%b)
  %d : f32[2] = operator.getitem(%x, (slice(%a, None, None),))
  return [{"k": (%c,)}, %d]
`, `graph f(x: f32[2]):
  %a : f32[2] = torch.relu(%x)
  %b : f32[2] = torch.neg(%x)
  %c : f32[2] = torch.add(%x, other=%b)
  %d : f32[2] = operator.getitem(%x, (slice(%a, None, None),))
  return [{"k": (%c,)}, %d]
`, 0},
}

func TestEliminateDeadCode(t *testing.T) {
	for _, tt := range dceTests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.removed, EliminateDeadCode(g, tt.sideEffect))
			require.Equal(t, tt.want, g.String())
			require.NoError(t, Verify(g, nil))
		})
	}
}

func TestEliminateDeadCodeFreesNames(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(2))
	require.Equal(t, "sigmoid", g.AddCall("torch.sigmoid", []Arg{x}, nil, f32(2)).Name)
	g.AddOutput(x)
	require.Equal(t, 1, EliminateDeadCode(g, nil))
	require.Equal(t, []int{0, 1}, []int{g.Nodes[0].Index(), g.Nodes[1].Index()})
	// The removed name is free again: the graph names nodes as a freshly parsed copy would.
	require.Equal(t, "sigmoid", g.AddCall("torch.sigmoid", []Arg{x}, nil, f32(2)).Name)
}
