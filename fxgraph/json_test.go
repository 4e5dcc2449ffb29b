package fxgraph

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestExportGolden writes testdata/export/*.json, which tests/test_fx_export.py turns into
// torch.fx GraphModules and runs against eager torch.
func TestExportGolden(t *testing.T) {
	var names []string
	for _, tc := range exportGraphs {
		names = append(names, tc.name)
		t.Run(tc.name, func(t *testing.T) {
			g := tc.build()
			require.NoError(t, Verify(g, nil))
			data, err := EncodeJSON(g)
			require.NoError(t, err)
			golden(t, filepath.Join("testdata", "export", tc.name+".json"), data)
		})
	}
	if !*update {
		requireNoStaleGoldens(t, filepath.Join("testdata", "export"), ".json", names)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, tc := range allGraphs() {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.build()
			data, err := EncodeJSON(g)
			require.NoError(t, err)
			back, err := DecodeJSON(data)
			require.NoError(t, err)
			require.Empty(t, Diff(g, back))
			again, err := EncodeJSON(back)
			require.NoError(t, err)
			require.Equal(t, string(data), string(again))
		})
	}
}

func TestJSONDecodeReservesNames(t *testing.T) {
	data, err := EncodeJSON(mlpGraph())
	require.NoError(t, err)
	g, err := DecodeJSON(data)
	require.NoError(t, err)
	require.Equal(t, "relu_1", g.AddCall("torch.relu", []Arg{g.Nodes[0]}, nil, f32(4, 8)).Name)
}

var encodeErrorTests = []struct {
	name   string
	mutate func(g *Graph)
	want   string
}{
	{"Go int", func(g *Graph) { node(g, "relu").Args = append(node(g, "relu").Args, c(3)) }, "node %relu: argument 1: constant of Go type int; use int64 or float64"},
	{"nil arg", func(g *Graph) { node(g, "relu").Kwargs = []Kwarg{{"k", nil}} }, "node %relu: keyword argument k: argument of Go type <nil> is not an fxgraph Arg"},
	{"later node", func(g *Graph) { node(g, "relu").Args[0] = node(g, "linear_1") }, "node %relu: argument 0: %linear_1 is not defined before this node"},
	{"meta type", func(g *Graph) { node(g, "relu").Meta = "f32" }, "node %relu: meta: meta of Go type string is not a tensor meta, tuple or scalar"},
	{"meta device", func(g *Graph) { node(g, "relu").TensorMeta().Device = primtorch.Device{} }, "node %relu: meta: device type is empty"},
	{"nested dict", func(g *Graph) {
		g.OutputNode().Args[0] = Dict{[]DictEntry{{"k", list(Const{uint8(1)})}}}
	}, `node %output: argument 0: dict key "k": constant of Go type uint8`},
}

func TestEncodeJSONErrors(t *testing.T) {
	for _, tt := range encodeErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			g := mlpGraph()
			tt.mutate(g)
			_, err := EncodeJSON(g)
			require.ErrorContains(t, err, "fxgraph: cannot encode graph forward as JSON: "+tt.want)
		})
	}
}

const okNodes = `{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [2]}}}`

var decodeErrorTests = []struct {
	name, json, want string
}{
	{"not json", `{"version": 1,`, "unexpected EOF"},
	{"no version", `{"name": "f", "nodes": []}`, "version is not 1"},
	{"future version", `{"version": 2, "name": "f", "nodes": []}`, "version is not 1"},
	{"trailing data", `{"version": 1, "name": "f", "nodes": []} {}`, "data after the graph object"},
	{"unknown field", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "targ": "x"}]}`, `unknown field "targ"`},
	{"unknown op", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "call", "target": "x"}]}`, `node 0 ("x"): unknown op "call"`},
	{"duplicate name", `{"version": 1, "name": "f", "nodes": [` + okNodes + `, ` + okNodes + `]}`, `node 1 ("x"): name is used twice`},
	{"undefined node", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"node": "y"}]}]}`, `args[0]: node "y" is not defined before this node`},
	{"bare float", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [1.5]}]}`, `number 1.5 is not an int64; floats are written {"float": "1.5"}`},
	{"bare list", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [[1]]}]}`, "bare JSON array"},
	{"two tags", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"list": [], "tuple": []}]}]}`, "object with 2 keys"},
	{"unknown tag", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"set": []}]}]}`, `unknown tag "set"`},
	{"bad float", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"float": "one"}]}]}`, `bad float "one"`},
	{"float not string", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"float": 1.5}]}]}`, "float value 1.5 is not a string"},
	{"bad dtype", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"dtype": "float31"}]}]}`, "unknown dtype float31"},
	{"bad device", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"device": "tpu"}]}]}`, "ptgo knows cpu, cuda and meta"},
	{"short slice", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"slice": [1, 2]}]}]}`, "slice has 2 parts"},
	{"bad kwarg", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "kwargs": [["a"]]}]}`, `kwargs[0] is not a ["name", ARG] pair`},
	{"bad dict", `{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"dict": [[1, 2]]}]}]}`, `dict entry 0 is not a ["key", ARG] pair`},
	{"meta field", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [2], "size": [2]}}}]}`, `unknown tensor meta field "size"`},
	{"meta shape", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [2.5]}}}]}`, "shape[0] = 2.5 is not an int64"},
	{"meta no dtype", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"shape": [2]}}}]}`, "tensor meta needs dtype and shape"},
	{"meta string", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "target": "x", "meta": "f32"}]}`, "a string is not a meta"},
	{"meta tag", `{"version": 1, "name": "f", "nodes": [{"name": "x", "op": "placeholder", "target": "x", "meta": {"list": []}}]}`, `unknown meta tag "list"`},
}

func TestDecodeJSONErrors(t *testing.T) {
	for _, tt := range decodeErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeJSON([]byte(tt.json))
			require.ErrorContains(t, err, "fxgraph: cannot decode graph JSON")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestDecodeJSONDefaults(t *testing.T) {
	g, err := DecodeJSON([]byte(`{"version": 1, "name": "f", "nodes": [` + okNodes + `,
		{"name": "output", "op": "output", "target": "output", "args": [{"tuple": [{"node": "x"}]}]}]}`))
	require.NoError(t, err)
	require.Equal(t, "graph f(x: f32[2]):\n  return (%x,)\n", g.String())
	require.NoError(t, Verify(g, nil))
}

func FuzzDecodeJSON(f *testing.F) {
	for _, tc := range allGraphs() {
		data, err := EncodeJSON(tc.build())
		require.NoError(f, err)
		f.Add(data)
	}
	for _, tt := range decodeErrorTests {
		f.Add([]byte(tt.json))
	}
	f.Add([]byte(symbolicJSON))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := DecodeJSON(data)
		if err != nil {
			return
		}
		if g.Shapes != nil {
			// symbolic metas are encoded at their hints (the example metas fx_export reads), so a
			// symbolic graph does not decode back to itself; it must still encode
			_, err := EncodeJSON(g)
			if err != nil && !strings.Contains(err.Error(), "no graph input that carries it") {
				t.Fatalf("a decoded symbolic graph must encode: %v", err)
			}
			return
		}
		again, err := EncodeJSON(g)
		require.NoError(t, err, "a decoded graph must encode")
		back, err := DecodeJSON(again)
		require.NoError(t, err)
		require.Empty(t, Diff(g, back))
	})
}

// symbolicJSON is a torch.fx graph with dynamic shapes as python/ptgo/fx_import.py writes it: an
// int placeholder carrying s0, a tensor whose dim 1 is s1, a view to s0*s1.
const symbolicJSON = `{"version": 1, "name": "f", "symbols": [{"input": 0, "dim": -1, "hint": 5}, {"input": 1, "dim": 1, "hint": 8}], "nodes": [
	{"name": "s77", "op": "placeholder", "target": "s77", "meta": {"sym": {"c": 0, "terms": [[1, [0]]]}}},
	{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [{"sym": {"c": 0, "terms": [[1, [0]]]}}, {"sym": {"c": 0, "terms": [[1, [1]]]}}], "stride": [{"sym": {"c": 0, "terms": [[1, [1]]]}}, 1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "v", "op": "call_method", "target": "view", "args": [{"node": "x"}, {"sym": {"c": 0, "terms": [[1, [0, 1]]]}}], "meta": {"tensor": {"dtype": "float32", "shape": [{"sym": {"c": 0, "terms": [[1, [0, 1]]]}}], "stride": [1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "output", "op": "output", "target": "output", "args": [{"tuple": [{"node": "v"}]}]}]}`

func TestDecodeJSONSymbols(t *testing.T) {
	g, err := DecodeJSON([]byte(symbolicJSON))
	require.NoError(t, err)
	require.NotNil(t, g.Shapes)
	require.Equal(t, []int64{5, 8}, g.Shapes.Hints())
	require.Equal(t, "x.size(1)", g.Shapes.SourceOf(1))
	require.Equal(t, []SymbolBinding{{Input: 0, Dim: -1}, {Input: 1, Dim: 1}}, SymbolBindings(g))
	x := g.Nodes[1].TensorMeta()
	require.Equal(t, "f32[s0,s1]", x.SymString())
	require.Equal(t, []int64{5, 8}, x.Shape, "the concrete fields hold the hints")
	require.Equal(t, []int64{8, 1}, x.Strides)
	require.Equal(t, "s0*s1", g.Nodes[2].Args[1].(Const).V.(primtorch.SymInt).String())
	require.Equal(t, "f32[s0*s1]", g.Nodes[2].TensorMeta().SymString())
	require.NoError(t, Verify(g, nil))
	require.NoError(t, CheckSymbols(g))
}

func TestDecodeJSONSymbolErrors(t *testing.T) {
	for _, tt := range []struct{ name, from, to, want string }{
		{"binding", `{"input": 1, "dim": 1, "hint": 8}`, `{"input": 1, "dim": 0, "hint": 8}`, "symbols[1] says placeholder 1 dim 0 carries s1, but the placeholders' metas bind it to placeholder 1 dim 1"},
		{"unknown symbol", `[[1, [0, 1]]]}}]`, `[[1, [0, 2]]]}}]`, `names symbol s2, which the graph's "symbols" do not list`},
		{"no placeholder", `{"input": 0, "dim": -1, "hint": 5}`, `{"input": 7, "dim": -1, "hint": 5}`, "symbols[0] names placeholder 7 of 2"},
		{"bad dim", `{"input": 0, "dim": -1, "hint": 5}`, `{"input": 0, "dim": -4, "hint": 5}`, "symbols[0] has dim -4"},
		{"bad entry", `"stride": [{"sym": {"c": 0, "terms": [[1, [1]]]}}, 1]`, `"stride": [{"float": "1.0"}, 1]`, "stride[0] is neither an integer nor a {\"sym\": ...} size expression"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			js := strings.Replace(symbolicJSON, tt.from, tt.to, 1)
			require.NotEqual(t, symbolicJSON, js)
			_, err := DecodeJSON([]byte(js))
			require.ErrorContains(t, err, tt.want)
		})
	}
	_, err := DecodeJSON([]byte(`{"version": 1, "name": "f", "nodes": [{"name": "output", "op": "output", "target": "output", "args": [{"sym": {"c": 0, "terms": [[1, [0]]]}}]}]}`))
	require.ErrorContains(t, err, `names symbol s0, which the graph's "symbols" do not list`)
}

func TestDerivedSymbolEncodings(t *testing.T) {
	g := New("f")
	env := primtorch.NewShapeEnv()
	s0 := env.NewSymbol(7, "x.size(0)")
	q, ok := s0.AddConst(1).FloorDiv(2)
	require.True(t, ok)
	g.Shapes = env
	x := g.AddPlaceholder("x", primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{s0}, primtorch.CPU))
	y := g.AddCall("prims.slice", []Arg{x, Const{V: int64(0)}, Const{V: int64(0)}, Const{V: s0}, Const{V: int64(2)}}, nil,
		primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{q}, primtorch.CPU))
	g.AddOutput(y)
	require.NoError(t, CheckSymbols(g))
	data, err := EncodeJSON(g)
	require.NoError(t, err)
	require.Contains(t, string(data), `{"input": -1, "dim": -3, "hint": 4, "def": {"c":1,"terms":[[1,[0]]]}, "div": 2}`, string(data))
	vals := []int64{9, 0}
	env.FillDerived(vals)
	require.Equal(t, int64(5), vals[1])
	// the text form keeps the definition
	parsed, err := Parse(g.String())
	require.NoError(t, err, g.String())
	d, ok := parsed.Shapes.Derived(1)
	require.True(t, ok, g.String())
	require.Equal(t, "(s0 + 1)//2", d.String())
}

// A backward graph shares the forward's ShapeEnv: a symbol that only an input of the forward
// carries (an unused argument's size) is neither bound nor used in it, and encodes; a used
// one that no input carries does not.
func TestUnusedUnboundSymbolEncodes(t *testing.T) {
	env := primtorch.NewShapeEnv()
	s0 := env.NewSymbol(5, "x.size(0)")
	s1 := env.NewSymbol(4, "y.size(0)")
	g := New("backward")
	g.Shapes = env
	x := g.AddPlaceholder("x", primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{s0}, primtorch.CPU))
	g.AddOutput(g.AddCall("prims.neg", []Arg{x}, nil, primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{s0}, primtorch.CPU)))
	require.NoError(t, CheckSymbols(g))
	data, err := EncodeJSON(g)
	require.NoError(t, err)
	require.Contains(t, string(data), `"symbols": [{"input": 0, "dim": 0, "hint": 5}, {"input": -1, "dim": -1, "hint": 4}]`)

	h := New("backward")
	h.Shapes = env
	y := h.AddPlaceholder("y", primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{s0}, primtorch.CPU))
	h.AddOutput(h.AddCall("prims.expand", []Arg{y, Const{V: []any{s1, s0}}}, nil,
		primtorch.NewSymContiguous(primtorch.Float32, []primtorch.SymInt{s1, s0}, primtorch.CPU)))
	require.Error(t, CheckSymbols(h))
	_, err = EncodeJSON(h)
	require.ErrorContains(t, err, "size symbol s1 has no graph input that carries it")
}
