package fxgraph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWalkAndMapArgReachDicts(t *testing.T) {
	g := New("f")
	a := g.AddPlaceholder("a", f32(1))
	b := g.AddPlaceholder("b", f32(1))
	arg := Dict{[]DictEntry{{"x", list(a, tup(b))}, {"y", Slice{Start: b, Stop: none(), Step: a}}, {"z", c(int64(1))}}}

	var seen []string
	WalkArg(arg, func(n *Node) { seen = append(seen, n.Name) })
	require.Equal(t, []string{"a", "b", "b", "a"}, seen)

	mapped := MapArg(arg, func(n *Node) Arg {
		if n == a {
			return b
		}
		return n
	})
	seen = nil
	WalkArg(mapped, func(n *Node) { seen = append(seen, n.Name) })
	require.Equal(t, []string{"b", "b", "b", "b"}, seen)
	require.Equal(t, `{"x": [%a, (%b,)], "y": slice(%b, None, %a), "z": 1}`, argString(arg), "MapArg changed its input")

	out := g.AddOutput(arg)
	require.Equal(t, []*Node{a, b}, out.Inputs())
	require.Equal(t, []*Node{out}, g.Users()[b])
}

func TestNodeOpString(t *testing.T) {
	for op := Placeholder; op <= Output; op++ {
		back, ok := parseNodeOp(op.String())
		require.True(t, ok)
		require.Equal(t, op, back)
	}
	require.Equal(t, "NodeOp(7)", NodeOp(7).String())
}
