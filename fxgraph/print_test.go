package fxgraph

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTextGolden(t *testing.T) {
	var names []string
	for _, tc := range allGraphs() {
		names = append(names, tc.name)
		t.Run(tc.name, func(t *testing.T) {
			g := tc.build()
			text := g.String()
			golden(t, filepath.Join("testdata", "text", tc.name+".txt"), []byte(text))

			parsed, err := Parse(text)
			require.NoError(t, err)
			require.Empty(t, Diff(g, parsed), "parsed graph differs from the printed one")
			require.Equal(t, text, parsed.String(), "printing the parsed graph changed the text")
		})
	}
	if !*update {
		requireNoStaleGoldens(t, filepath.Join("testdata", "text"), ".txt", names)
	}
}

func TestStringExample(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(4, 8))
	w := g.AddGetAttr("fc.weight", grad(f32(16, 8)))
	l := g.AddCall("torch.nn.functional.linear", []Arg{x, w, none()}, nil, grad(f32(4, 16)))
	l.Where = "model.py:12"
	v := g.AddMethod("view", []Arg{l, c(int64(-1))}, nil, grad(f32(64)))
	g.AddOutput(tup(l, list(v, Dict{[]DictEntry{{"a", c(0.5)}}})))
	require.Equal(t, `graph f(x: f32[4,8]):
  %fc_weight : f32[16,8]!grad = get_attr[fc.weight]
  %linear    : f32[4,16]!grad = torch.nn.functional.linear(%x, %fc_weight, None)  # model.py:12
  %view      : f32[64]!grad   = .view(%linear, -1)
  return (%linear, [%view, {"a": 0.5}])
`, g.String())
}

var formatFloatTests = []struct {
	in   float64
	want string
}{
	{1, "1.0"}, {0.5, "0.5"}, {-2.25, "-2.25"}, {1e-05, "1e-05"}, {0.0001, "0.0001"},
	{1e16, "1e+16"}, {123456789012345.0, "123456789012345.0"}, {1e300, "1e+300"},
	{0.30000000000000004, "0.30000000000000004"}, {5e-324, "5e-324"},
}

func TestFormatFloatMatchesPythonRepr(t *testing.T) {
	for _, tt := range formatFloatTests {
		require.Equal(t, tt.want, formatFloat(tt.in), "formatFloat(%v)", tt.in)
	}
}

func TestStringShowsBrokenGraphs(t *testing.T) {
	g := mlpGraph()
	node(g, "relu").Args = []Arg{nil, Const{3}}
	g.Nodes[2] = nil
	text := g.String()
	require.Contains(t, text, "  <nil node>\n")
	require.Contains(t, text, "= torch.relu(<nil Arg>, <int 3>)")
}
