package fxgraph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSymbolicTextRoundTrip(t *testing.T) {
	text := `graph f[s0=8, s1=16](x: f32[s0,64], y: f32[s0,s1], n: sym("s1")):
  %view : f32[s0,4,16]        = .view(%x, sym("s0"), 4, 16)
  %t    : f32[s1,s0]{1,s1}    = .t(%y)
  %mul  : f32[sym("4*s0"),16] = .reshape(%view, sym("4*s0"), 16)
  return (%view, %t, %mul)
`
	g, err := Parse(text)
	require.NoError(t, err)
	require.Equal(t, text, g.String())
	m := g.Nodes[4].TensorMeta()
	require.Equal(t, []int64{16, 8}, m.Shape)
	require.Equal(t, []int64{1, 16}, m.Strides)
	b := SymbolBindings(g)
	require.Equal(t, []SymbolBinding{{Input: 0, Dim: 0}, {Input: 1, Dim: 1}}, b)
	require.NoError(t, CheckSymbols(g))
	c := Clone(g)
	require.True(t, Equal(g, c))
}

func TestSymbolicTextErrors(t *testing.T) {
	_, err := Parse("graph f(x: f32[s0,64]):\n")
	require.ErrorContains(t, err, "declare symbols in the header")
	_, err = Parse("graph f[s1=3](x: f32[s0,64]):\n")
	require.ErrorContains(t, err, "expected size symbol s0")
}
