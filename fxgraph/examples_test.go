package fxgraph

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Graphs shared by the text, JSON and pass tests. exportGraphs are also exported to
// testdata/export/ and run by tests/test_fx_export.py against eager torch, so their ops and
// metas must be what torch computes.

func f32(shape ...int64) *primtorch.TensorMeta {
	return primtorch.NewContiguous(primtorch.Float32, shape, primtorch.CPU)
}

func withDType(m *primtorch.TensorMeta, dt primtorch.DType) *primtorch.TensorMeta {
	m.DType = dt
	return m
}

func grad(m *primtorch.TensorMeta) *primtorch.TensorMeta {
	m.RequiresGrad = true
	return m
}

func strided(m *primtorch.TensorMeta, offset int64, strides ...int64) *primtorch.TensorMeta {
	m.Strides = strides
	m.Offset = offset
	return m
}

func none() Const        { return Const{nil} }
func c(v any) Const      { return Const{v} }
func tup(a ...Arg) Tuple { return Tuple{Elems: a} }
func list(a ...Arg) List { return List{Elems: a} }

type exampleGraph struct {
	name  string
	build func() *Graph
}

// mlp: two linear layers with a relu, parameters read by get_attr.
func mlpGraph() *Graph {
	g := New("forward")
	x := g.AddPlaceholder("x", f32(4, 8))
	w1 := g.AddGetAttr("fc1.weight", grad(f32(16, 8)))
	b1 := g.AddGetAttr("fc1.bias", grad(f32(16)))
	h := g.AddCall("torch.nn.functional.linear", []Arg{x, w1, b1}, nil, grad(f32(4, 16)))
	h.Where = "model.py:12"
	h.Stack = `File "model.py", line 12, in forward`
	r := g.AddCall("torch.relu", []Arg{h}, nil, grad(f32(4, 16)))
	r.Where = "model.py:13"
	w2 := g.AddGetAttr("fc2.weight", grad(f32(2, 16)))
	o := g.AddCall("torch.nn.functional.linear", []Arg{r, w2, none()}, nil, grad(f32(4, 2)))
	o.Where = "model.py:14"
	g.AddOutput(tup(o))
	return g
}

// seqBuffers: nested nn.Sequential paths (seq.0.0.weight), batch-norm buffers, and a
// non-persistent buffer.
func seqBuffersGraph() *Graph {
	g := New("forward")
	x := g.AddPlaceholder("x", f32(3, 8))
	w := g.AddGetAttr("seq.0.0.weight", grad(f32(8, 8)))
	b := g.AddGetAttr("seq.0.0.bias", grad(f32(8)))
	h := g.AddCall("torch.nn.functional.linear", []Arg{x, w, b}, nil, grad(f32(3, 8)))
	mean := g.AddGetAttr("seq.1.running_mean", f32(8))
	variance := g.AddGetAttr("seq.1.running_var", f32(8))
	bw := g.AddGetAttr("seq.1.weight", grad(f32(8)))
	bb := g.AddGetAttr("seq.1.bias", grad(f32(8)))
	bn := g.AddCall("torch.nn.functional.batch_norm",
		[]Arg{h, mean, variance, bw, bb, c(false), c(0.1), c(1e-05)}, nil, grad(f32(3, 8)))
	scale := g.AddGetAttr("scale", f32(8))
	out := g.AddCall("torch.mul", []Arg{bn, scale}, nil, grad(f32(3, 8)))
	g.AddOutput(tup(out))
	return g
}

// constants: every kind of constant argument, strided and offset inputs, tuple and scalar metas,
// call_method, torch.Tensor.add, a nested output.
func constantsGraph() *Graph {
	g := New("forward")
	x := g.AddPlaceholder("x", f32(4, 6))
	y := g.AddPlaceholder("y", strided(withDType(f32(6), primtorch.Float64), 1, 2))
	head := g.AddCall("operator.getitem", []Arg{x, tup(Slice{none(), c(int64(2)), none()}, c(primtorch.Ellipsis{}))}, nil, f32(2, 6))
	every := g.AddCall("operator.getitem", []Arg{x, tup(c(primtorch.Ellipsis{}), Slice{c(int64(0)), c(int64(4)), c(int64(2))})}, nil, strided(f32(4, 2), 0, 6, 2))
	to := g.AddMethod("to", []Arg{x}, []Kwarg{{"dtype", c(primtorch.Float64)}}, withDType(f32(4, 6), primtorch.Float64))
	sum := g.AddCall("torch.add", []Arg{to, y}, []Kwarg{{"alpha", c(2.5)}}, withDType(f32(4, 6), primtorch.Float64))
	full := g.AddCall("torch.full", []Arg{tup(c(int64(2)), c(int64(3))), c(math.Inf(1))}, []Kwarg{
		{"dtype", c(primtorch.Float32)}, {"device", c(primtorch.CPU)}, {"layout", c(primtorch.Layout("strided"))},
	}, f32(2, 3))
	nan := g.AddCall("torch.full", []Arg{list(c(int64(2))), c(math.NaN())}, nil, f32(2))
	negz := g.AddCall("torch.mul", []Arg{x, c(math.Copysign(0, -1))}, nil, f32(4, 6))
	gelu := g.AddCall("torch.nn.functional.gelu", []Arg{x}, []Kwarg{{"approximate", c("tanh")}}, f32(4, 6))
	ein := g.AddCall("torch.einsum", []Arg{c("ij,j->i"), to, y}, nil, withDType(f32(4), primtorch.Float64))
	r := g.AddCall("torch.reshape", []Arg{x, list(c(int64(1)), c(int64(4)), c(int64(2)), c(int64(3)))}, nil, f32(1, 4, 2, 3))
	cl := g.AddMethod("contiguous", []Arg{r}, []Kwarg{{"memory_format", c(primtorch.MemoryFormat("channels_last"))}}, strided(f32(1, 4, 2, 3), 0, 24, 1, 12, 4))
	mx := g.AddCall("torch.max", []Arg{x, c(int64(1))}, []Kwarg{{"keepdim", c(true)}},
		[]any{f32(4, 1), withDType(f32(4, 1), primtorch.Int64)})
	values := g.AddCall("operator.getitem", []Arg{mx, c(int64(0))}, nil, f32(4, 1))
	size := g.AddMethod("size", []Arg{x, c(int64(0))}, nil, int64(4))
	scaled := g.AddCall("operator.mul", []Arg{size, c(2.5)}, nil, 10.0)
	add := g.AddCall("torch.Tensor.add", []Arg{x, c(int64(1))}, nil, f32(4, 6))
	cx := g.AddCall("torch.mul", []Arg{x, c(complex(1, -2))}, nil, withDType(f32(4, 6), primtorch.Complex64))
	z := g.AddCall("torch.zeros", []Arg{tup(c(int64(2)))}, []Kwarg{{"dtype", c(primtorch.Float16)}}, withDType(f32(2), primtorch.Float16))
	g.AddOutput(tup(head, list(every, Dict{[]DictEntry{{"sum", sum}, {"none", none()}, {"n", c(int64(3))}}}),
		full, nan, negz, gelu, ein, cl, values, scaled, add, cx, z))
	return g
}

// nestedOutput: an output that is a dict of lists of tuples, with constants.
func nestedOutputGraph() *Graph {
	g := New("forward")
	a := g.AddPlaceholder("a", f32(3))
	b := g.AddPlaceholder("b", f32(3))
	s := g.AddCall("operator.add", []Arg{a, b}, nil, f32(3))
	v := g.AddMethod("view", []Arg{s, c(int64(-1)), c(int64(1))}, nil, f32(3, 1))
	neg := g.AddCall("torch.neg", []Arg{a}, nil, f32(3))
	g.AddOutput(Dict{[]DictEntry{
		{"sum", s},
		{"pair", list(tup(v, neg), tup())},
		{"meta", tup(c(int64(1)), c(0.5), c("s"), none())},
	}})
	return g
}

var exportGraphs = []exampleGraph{
	{"mlp", mlpGraph},
	{"seq_buffers", seqBuffersGraph},
	{"constants", constantsGraph},
	{"nested_output", nestedOutputGraph},
}

// textOnlyGraphs cover what the exported ones do not: devices, requires_grad placeholders,
// offsets, None in tuple metas, scalar metas of every kind, escapes, quoted targets, placeholders
// with source lines or targets that differ from their names.
var textOnlyGraphs = []exampleGraph{
	{"metas", func() *Graph {
		g := New("metas")
		cuda := primtorch.NewContiguous(primtorch.BFloat16, []int64{2, 3}, primtorch.Device{Type: "cuda", Index: 0})
		g.AddPlaceholder("x", grad(cuda))
		g.AddPlaceholder("m", primtorch.NewContiguous(primtorch.Bool, []int64{}, primtorch.Device{Type: "meta", Index: -1}))
		g.AddPlaceholder("c", primtorch.NewContiguous(primtorch.Complex128, []int64{0, 5}, primtorch.Device{Type: "cpu", Index: 0}))
		g.AddPlaceholder("n", int64(-7))
		g.AddPlaceholder("f", math.Copysign(0, -1))
		g.AddPlaceholder("l.y", f32(1))
		p := g.AddPlaceholder("x", strided(withDType(f32(3, 1, 2), primtorch.Int8), 5, 2, 7, 1))
		p.Where = "model.py:3"
		x := g.Nodes[0]
		t := g.AddCall("torch.ops.aten.native_layer_norm.default", []Arg{x, list(c(int64(3)))}, nil,
			[]any{f32(2, 3), nil, []any{true, complex(0, math.Inf(-1)), math.Copysign(0, -1)}})
		one := g.AddCall("torch.split", []Arg{x, c(int64(2))}, nil, []any{f32(2, 3)})
		g.AddOutput(tup(t, one, tup()))
		return g
	}},
	{"strings", func() *Graph {
		g := New("weird graph")
		x := g.AddPlaceholder("x", f32(2))
		s := g.AddCall("torch.nn.functional.pad", []Arg{x, list(c(int64(1)), c(int64(1)))}, []Kwarg{
			{"mode", c("a\"b\\c\n\tü☃\x00")}, {"value", c(1e-300)},
		}, f32(4))
		s.Where = " lead space.py:1 "
		q := g.AddCall("<lambda>", []Arg{s}, []Kwarg{{"not an ident", c(1e16)}}, f32(4))
		q.Where = "line\nbreak.py:2"
		m := g.AddMethod("__getitem__", []Arg{q, c(primtorch.Ellipsis{})}, nil, f32(4))
		m.Where = `"quoted".py:3`
		a := g.AddGetAttr("blocks.0.1.weight", f32(4))
		w := g.AddGetAttr("odd path[0]", f32(4))
		d := g.AddCall("torch.stack", []Arg{list(m, a, w)}, []Kwarg{{"dim", c(int64(0))}}, f32(3, 4))
		d.Where = "é.py:4"
		g.AddOutput(d)
		return g
	}},
	{"empty", func() *Graph { return New("empty") }},
	{"output_only", func() *Graph {
		g := New("constant")
		g.AddOutput(tup(c(int64(1)), c(primtorch.Device{Type: "cuda", Index: 1}), c(primtorch.MemoryFormat("preserve_format")),
			c(primtorch.Complex64), c(primtorch.Bool), c(-1e-05), c(math.Inf(-1)), c(int64(math.MinInt64)), Dict{}, list()))
		return g
	}},
}

func allGraphs() []exampleGraph { return slices.Concat(exportGraphs, textOnlyGraphs) }

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing; run: go test ./fxgraph -update")
	require.Equal(t, string(want), string(got), "golden file %s is stale; review the diff and run: go test ./fxgraph -update", path)
}

// requireNoStaleGoldens fails when dir holds a golden file no test case writes.
func requireNoStaleGoldens(t *testing.T, dir, ext string, names []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ext)
		require.True(t, ok && slices.Contains(names, name), "%s/%s belongs to no test case; delete it", dir, e.Name())
	}
}
