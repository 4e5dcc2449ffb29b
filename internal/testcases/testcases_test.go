package testcases

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// TestLoadAndBuild: the recorded file loads, names are unique, and every case builds a graph
// with one placeholder per input, one get_attr per attr and one call per recorded node.
func TestLoadAndBuild(t *testing.T) {
	ForEachTorch(t, testLoadAndBuild)
}

func testLoadAndBuild(t *testing.T, _ primtorch.TorchVersion, cases []Case) {
	require.NotEmpty(t, cases)
	seen := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		require.False(t, seen[c.Name()], "duplicate case %s", c.Name())
		seen[c.Name()] = true
		g, ops, err := c.Build()
		require.NoError(t, err, c.Name())
		require.Len(t, ops, len(c.Nodes), c.Name())
		require.Len(t, g.Placeholders(), len(c.Inputs), c.Name())
		attrs := 0
		for _, n := range g.Nodes {
			if n.Op == fxgraph.GetAttr {
				attrs++
			}
		}
		require.Equal(t, len(c.Attrs), attrs, c.Name())
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load("no/such/cases.json")
	require.ErrorContains(t, err, "go test ./primtorch/decomp -update")
}

func TestBuildErrors(t *testing.T) {
	c := Case{Op: "x", Tag: "bad", Nodes: []Node{{Name: "n0", Target: "torch.exp", Args: []json.RawMessage{json.RawMessage(`{"ref": "nope"}`)}}}}
	_, _, err := c.Build()
	require.ErrorContains(t, err, "case x/bad: reference to unknown node nope")
	c.Nodes[0] = Node{Name: "n0", Target: "torch.no_such_op"}
	_, _, err = c.Build()
	require.ErrorContains(t, err, "target torch.no_such_op is not in the registry")
}

func rec(dt string, shape, strides []int64, vals ...any) Tensor {
	return Tensor{DType: dt, Shape: shape, Strides: strides, Values: vals}
}

func num(s string) json.Number { return json.Number(s) }

var compareTests = []struct {
	name    string
	got     *Result
	want    Tensor
	strides Strides
	values  bool
	diff    string // substring of the message; "" when they match
}{
	{"equal", &Result{DType: primtorch.Float32, Shape: []int64{2}, Strides: []int64{1}, F: []float64{1, 2}},
		rec("f32", []int64{2}, []int64{1}, num("1"), num("2")), AllStrides, true, ""},
	{"within tolerance", &Result{DType: primtorch.Float32, Shape: []int64{1}, Strides: []int64{1}, F: []float64{1 + 3e-5}},
		rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, true, ""},
	{"beyond tolerance", &Result{DType: primtorch.Float32, Shape: []int64{1}, Strides: []int64{1}, F: []float64{1 + 5e-5}},
		rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, true, "element 0"},
	{"NaN where torch has NaN", &Result{DType: primtorch.Float64, Shape: []int64{2}, Strides: []int64{1}, F: []float64{math.NaN(), math.Inf(-1)}},
		rec("f64", []int64{2}, []int64{1}, "nan", "-inf"), AllStrides, true, ""},
	{"NaN where torch has a number", &Result{DType: primtorch.Float64, Shape: []int64{1}, Strides: []int64{1}, F: []float64{math.NaN()}},
		rec("f64", []int64{1}, []int64{1}, num("0")), AllStrides, true, "element 0"},
	{"wrong infinity", &Result{DType: primtorch.Float64, Shape: []int64{1}, Strides: []int64{1}, F: []float64{math.Inf(1)}},
		rec("f64", []int64{1}, []int64{1}, "-inf"), AllStrides, true, "element 0"},
	{"integers exactly, past 2^53", &Result{DType: primtorch.Int64, Shape: []int64{1}, Strides: []int64{1}, I: []int64{1<<53 + 1}},
		rec("i64", []int64{1}, []int64{1}, num("9007199254740992")), AllStrides, true, "got 9007199254740993, torch gives 9007199254740992"},
	{"bools", &Result{DType: primtorch.Bool, Shape: []int64{2}, Strides: []int64{1}, I: []int64{1, 0}},
		rec("b8", []int64{2}, []int64{1}, true, false), AllStrides, true, ""},
	{"dtype", &Result{DType: primtorch.Float64, Shape: []int64{1}, Strides: []int64{1}, F: []float64{1}},
		rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, true, "got f64[1], torch gives f32[1]"},
	{"shape", &Result{DType: primtorch.Float32, Shape: []int64{1, 1}, Strides: []int64{1, 1}, F: []float64{1}},
		rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, true, "got f32[1 1], torch gives f32[1]"},
	{"strides", &Result{DType: primtorch.Float32, Shape: []int64{2, 2}, Strides: []int64{1, 2}, F: []float64{1, 2, 3, 4}},
		rec("f32", []int64{2, 2}, []int64{2, 1}, num("1"), num("2"), num("3"), num("4")), AllStrides, true, "got strides [1 2]"},
	{"strides not checked", &Result{DType: primtorch.Float32, Shape: []int64{2, 2}, Strides: []int64{1, 2}, F: []float64{1, 2, 3, 4}},
		rec("f32", []int64{2, 2}, []int64{2, 1}, num("1"), num("2"), num("3"), num("4")), NoStrides, true, ""},
	{"size-1 dim strides, all", &Result{DType: primtorch.Float32, Shape: []int64{2, 1}, Strides: []int64{1, 1}, F: []float64{1, 2}},
		rec("f32", []int64{2, 1}, []int64{1, 2}, num("1"), num("2")), AllStrides, true, "got strides [1 1]"},
	{"size-1 dim strides, non-unit only", &Result{DType: primtorch.Float32, Shape: []int64{2, 1}, Strides: []int64{1, 1}, F: []float64{1, 2}},
		rec("f32", []int64{2, 1}, []int64{1, 2}, num("1"), num("2")), NonUnitStrides, true, ""},
	{"values not checked", &Result{DType: primtorch.Float32, Shape: []int64{1}, Strides: []int64{1}, F: []float64{7}},
		rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, false, ""},
	{"missing tensor", nil, rec("f32", []int64{1}, []int64{1}, num("1")), AllStrides, true, "no tensor"},
}

func TestCompare(t *testing.T) {
	for _, tt := range compareTests {
		t.Run(tt.name, func(t *testing.T) {
			d := Compare(tt.got, tt.want, tt.strides, tt.values)
			if tt.diff == "" {
				require.Empty(t, d)
			} else {
				require.Contains(t, d, tt.diff)
			}
		})
	}
}

func TestCompareResults(t *testing.T) {
	f := func(strides []int64, vals ...float64) *Result {
		return &Result{DType: primtorch.Float32, Shape: []int64{int64(len(vals)), 1}, Strides: strides, F: vals}
	}
	tests := []struct {
		name      string
		got, want *Result
		strides   Strides
		diff      string
	}{
		{"equal", f([]int64{1, 1}, 1, math.NaN()), f([]int64{1, 1}, 1, math.NaN()), AllStrides, ""},
		{"NaN position", f([]int64{1, 1}, math.NaN(), 1), f([]int64{1, 1}, 1, math.NaN()), AllStrides, "element 0"},
		{"size-1 stride", f([]int64{1, 1}, 1, 2), f([]int64{1, 2}, 1, 2), AllStrides, "strides"},
		{"size-1 stride ignored", f([]int64{1, 1}, 1, 2), f([]int64{1, 2}, 1, 2), NonUnitStrides, ""},
		{"ints exact", &Result{DType: primtorch.Int64, Shape: []int64{1}, I: []int64{3}}, &Result{DType: primtorch.Int64, Shape: []int64{1}, I: []int64{4}}, NoStrides, "got 3, want 4"},
		{"nil", nil, f([]int64{1, 1}, 1), NoStrides, "one side has no tensor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := CompareResults(tt.got, tt.want, tt.strides)
			if tt.diff == "" {
				require.Empty(t, d)
			} else {
				require.Contains(t, d, tt.diff)
			}
		})
	}
}
