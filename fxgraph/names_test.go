package fxgraph

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// uniqueNameTests give the hints the Add* methods pass: the last part of a call target, the
// whole path of a get_attr.
var uniqueNameTests = []struct {
	hints []string
	want  []string
}{
	{[]string{"relu", "relu", "relu"}, []string{"relu", "relu_1", "relu_2"}},
	{[]string{"max", "max", "sum"}, []string{"max_1", "max_2", "sum_1"}},
	{[]string{"self", "torch", "getattr", "slice", "inf", "device"}, []string{"self_1", "torch_1", "getattr_1", "slice_1", "inf_1", "device_1"}},
	{[]string{"output", "class", "__add__"}, []string{"output_", "class_", "add"}},
	{[]string{"fc1.weight", "layers.0.bias", "0.weight", ""}, []string{"fc1_weight", "layers_0_bias", "_0_weight", "v"}},
	{[]string{"x_01", "x_1", "x_0"}, []string{"x_01_", "x_1", "x_0"}},
	{[]string{"relu_1", "relu", "relu", "relu"}, []string{"relu_1", "relu", "relu_2", "relu_3"}},
}

func TestUniqueNameIsKeptByTorchFX(t *testing.T) {
	for _, tt := range uniqueNameTests {
		g := New("f")
		var got []string
		for _, h := range tt.hints {
			name := g.uniqueName(h)
			require.Empty(t, nameProblem(name), "name %q from hint %q", name, h)
			got = append(got, name)
		}
		require.Equal(t, tt.want, got, "hints %q", tt.hints)
	}
}

func TestAddNamesFromTargets(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(2))
	require.Equal(t, "relu", g.AddCall("torch.nn.functional.relu", []Arg{x}, nil, f32(2)).Name)
	require.Equal(t, "add", g.AddCall("operator.__add__", []Arg{x, x}, nil, f32(2)).Name)
	require.Equal(t, "max_1", g.AddMethod("max", []Arg{x}, nil, f32()).Name)
	require.Equal(t, "layers_0_weight", g.AddGetAttr("layers.0.weight", f32(2)).Name)
}

var pathTests = []struct {
	s                       string
	ident, dotted, attrPath bool
}{
	{"relu", true, true, true},
	{"torch.nn.functional.linear", false, true, true},
	{"layers.0.weight", false, false, true},
	{"0", false, false, true},
	{"a..b", false, false, false},
	{"", false, false, false},
	{".a", false, false, false},
	{"a b", false, false, false},
	{"é", false, false, false},
}

func TestPathPredicates(t *testing.T) {
	for _, tt := range pathTests {
		require.Equal(t, tt.ident, isIdent(tt.s), "isIdent(%q)", tt.s)
		require.Equal(t, tt.dotted, isDottedIdent(tt.s), "isDottedIdent(%q)", tt.s)
		require.Equal(t, tt.attrPath, isAttrPath(tt.s), "isAttrPath(%q)", tt.s)
	}
}
