package pipeline

import (
	"errors"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
)

func importText(t *testing.T, text string, grad bool) (*fxgraph.Graph, error) {
	t.Helper()
	js, err := fxgraph.EncodeJSON(parse(t, text))
	require.NoError(t, err)
	return ImportFX(js, ImportOptions{GradEnabled: grad})
}

// A graph ptgo captured, exported and imported again is the same graph: targets, metas
// (recomputed by primtorch), source lines.
func TestImportRoundTrip(t *testing.T) {
	for _, name := range []string{"mlp", "seq_buffers", "nested_output"} {
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("..", "fxgraph", "testdata", "text", name+".txt"))
			require.NoError(t, err)
			grad := strings.Contains(string(text), "!grad =") || strings.Contains(string(text), "!grad  =")
			g, err := importText(t, string(text), grad)
			require.NoError(t, err)
			require.Equal(t, parse(t, string(text)).String(), g.String())
		})
	}
}

// Metas the graph came with are checked, not trusted; those it lacks are computed.
func TestImportRecomputesMetas(t *testing.T) {
	g, err := importText(t, mlpText, true)
	require.NoError(t, err)
	noMetas := parse(t, mlpText)
	for _, n := range noMetas.Nodes {
		if n.Op == fxgraph.CallFunction {
			n.Meta = nil
		}
	}
	js, err := fxgraph.EncodeJSON(noMetas)
	require.NoError(t, err)
	got, err := ImportFX(js, ImportOptions{GradEnabled: true})
	require.NoError(t, err)
	require.Equal(t, g.String(), got.String())

	// Under no_grad nothing computed requires grad: torch's metas would say so too.
	got, err = ImportFX(js, ImportOptions{GradEnabled: false})
	require.NoError(t, err)
	require.Equal(t, parse(t, inferenceText).String(), got.String())
}

var importRefusals = []struct {
	name, text, want string
}{
	{"wrong shape", `graph f(x: f32[3,4]):
  %relu : f32[4,3] = torch.relu(%x)
  return (%relu,)
`, "node relu: ptgo's meta for torch.relu differs from torch's: ptgo computes f32[3,4], torch f32[4,3]"},
	{"wrong dtype", `graph f(x: f32[3,4]):
  %add : f64[3,4] = operator.add(%x, 1)
  return (%add,)
`, "ptgo computes f32[3,4], torch f64[3,4]"},
	{"wrong requires_grad", `graph f(x: f32[3]!grad):
  %mul : f32[3] = torch.mul(%x, 2)
  return (%mul,)
`, "ptgo says requires_grad=true, torch false"},
	{"output strides", `graph f(x: f32[3,4]):
  %relu : f32[3,4]{1,3} = torch.relu(%x)
  return (%relu,)
`, "the graph returns it with strides [4 1]+0 in ptgo, [1 3]+0 in torch"},
	{"unknown op without meta", `graph f(x: f32[3]):
  %sinc : f32[3] = torch.sinc(%x)
  return (%sinc,)
`, "torch.sinc is not an op ptgo knows and the graph gives no meta for it"},
	{"rejected call", `graph f(x: f32[3,4], y: f32[5,6]):
  %mm : f32[3,6] = torch.mm(%x, %y)
  return (%mm,)
`, "ptgo's meta function for torch.mm rejects the call torch accepted"},
}

func TestImportRefusesWhatPtgoWouldGetWrong(t *testing.T) {
	for _, tt := range importRefusals {
		t.Run(tt.name, func(t *testing.T) {
			g := parse(t, tt.text)
			if tt.name == "unknown op without meta" {
				g.Nodes[1].Meta = nil
			}
			js, err := fxgraph.EncodeJSON(g)
			require.NoError(t, err)
			_, err = ImportFX(js, ImportOptions{GradEnabled: true})
			var u *Unsupported
			require.True(t, errors.As(err, &u), "want an Unsupported, got %v", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestImportKeepsUnknownOpsWithTorchsMeta(t *testing.T) {
	g, err := importText(t, `graph f(x: f32[3]):
  %sinc : f32[3] = torch.sinc(%x)
  %relu : f32[3] = torch.relu(%sinc)
  return (%relu,)
`, false)
	require.NoError(t, err)
	require.Equal(t, "torch.sinc", g.Nodes[1].Target)
}

func TestImportMapsATenOverloads(t *testing.T) {
	// The JSON fx_import.py writes for torch.ops.aten overloads (the text form cannot name them).
	js := []byte(`{"version": 1, "name": "forward", "nodes": [
  {"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [4, 4], "stride": [4, 1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
  {"name": "mm", "op": "call_function", "target": "torch.ops.aten.mm.default", "args": [{"node": "x"}, {"node": "x"}]},
  {"name": "add", "op": "call_function", "target": "torch.ops.aten.add.Tensor", "args": [{"node": "mm"}, {"node": "x"}], "kwargs": [["alpha", 2]]},
  {"name": "view", "op": "call_function", "target": "torch.ops.aten.view.default", "args": [{"node": "add"}, {"list": [16]}]},
  {"name": "sum_1", "op": "call_function", "target": "torch.ops.aten.sum.dim_IntList", "args": [{"node": "view"}, {"list": [0]}]},
  {"name": "odd", "op": "call_function", "target": "torch.ops.aten.special_ndtri.default", "args": [{"node": "sum_1"}], "meta": {"tensor": {"dtype": "float32", "shape": [], "stride": [], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
  {"name": "output", "op": "output", "target": "output", "args": [{"tuple": [{"node": "odd"}]}]}
]}`)
	g, err := ImportFX(js, ImportOptions{})
	require.NoError(t, err)
	want := `graph forward(x: f32[4,4]):
  %mm    : f32[4,4] = torch.mm(%x, %x)
  %add   : f32[4,4] = torch.add(%mm, %x, alpha=2)
  %view  : f32[16]  = .view(%add, [16])
  %sum_1 : f32[]    = torch.sum(%view, [0])
  %odd   : f32[]    = torch.ops.aten.special_ndtri.default(%sum_1)
  return (%odd,)
`
	require.Equal(t, want, g.String())
}

func TestImportDropsNoneResultsOfTorchCalls(t *testing.T) {
	g := parse(t, `graph f(x: f32[2,5,16]):
  %mha     : (f32[2,5,16], None) = torch.nn.functional.multi_head_attention_forward(%x)
  %getitem : f32[2,5,16]         = operator.getitem(%mha, 0)
  return (%getitem,)
`)
	js, err := fxgraph.EncodeJSON(g)
	require.NoError(t, err)
	got, err := ImportFX(js, ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, TensorsOf, got.Nodes[1].Target)
	require.Equal(t, fxgraph.Const{V: "torch.nn.functional.multi_head_attention_forward"}, got.Nodes[1].Args[0])
	require.Len(t, got.Nodes[1].Meta, 1)
	require.Equal(t, fxgraph.Const{V: int64(0)}, got.Nodes[2].Args[1])
}

// torch marks a view made under no_grad of a tensor requiring grad as requiring grad; ptgo's
// metas do not. Tolerated inside the graph, refused on an output (the user would see it).
func TestImportViewUnderNoGrad(t *testing.T) {
	inner := `graph f(p: f32[1,4]!grad):
  %expand : f32[3,4]{0,1}!grad = .expand(%p, 3, -1)
  %mul    : f32[3,4]           = torch.mul(%expand, 2)
  return (%mul,)
`
	g, err := importText(t, inner, false)
	require.NoError(t, err)
	require.False(t, g.Nodes[1].TensorMeta().RequiresGrad)
	_, err = importText(t, `graph f(p: f32[1,4]!grad):
  %expand : f32[3,4]{0,1}!grad = .expand(%p, 3, -1)
  return (%expand,)
`, false)
	require.ErrorContains(t, err, "requires_grad=false, torch true")
}

func TestCompileFXThroughThePipeline(t *testing.T) {
	js, err := fxgraph.EncodeJSON(parse(t, inferenceText))
	require.NoError(t, err)
	h := &fakeHost{}
	before := Stats()
	res, err := CompileFX(h, testConfig, &FXRequest{Name: "torch.fx graph 1", JSON: js, Attrs: mlpAttrs()})
	require.NoError(t, err)
	require.Empty(t, res.Reason)
	require.NotZero(t, res.Obj)
	require.Empty(t, res.Guards)
	require.Equal(t, [4]int{1, 0, 1, 0}, statsDelta(before, Stats()))

	bad := parse(t, importRefusals[0].text)
	js, err = fxgraph.EncodeJSON(bad)
	require.NoError(t, err)
	res, err = CompileFX(h, testConfig, &FXRequest{Name: "torch.fx graph 2", JSON: js})
	require.NoError(t, err)
	require.Zero(t, res.Obj)
	require.Contains(t, res.Reason, "differs from torch's")
}

// Imports go down the pipeline: pipeline sees Python only through bytecode/py, kernels knows no
// graph, and only pybridge drives the pipeline.
func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	imports := func(dir string) []string {
		pkg, err := build.ImportDir(filepath.Join(root, dir), 0)
		require.NoError(t, err, dir)
		return pkg.Imports
	}
	for _, imp := range imports("pipeline") {
		require.False(t, strings.HasPrefix(imp, "ptgo/pybridge"), "pipeline imports %s", imp)
		require.NotEqual(t, "ptgo/bytecode", imp, "pipeline must not depend on the capture stage")
	}
	for _, dir := range []string{"kernels", "inductor", "aotautograd", "primtorch", "primtorch/decomp", "fxgraph", "bytecode", "logs"} {
		for _, imp := range imports(dir) {
			require.NotEqual(t, "ptgo/pipeline", imp, "%s imports the pipeline", dir)
			if dir == "kernels" {
				require.True(t, !strings.HasPrefix(imp, "ptgo/") || strings.HasPrefix(imp, "ptgo/kernels"), "kernels imports %s", imp)
			}
		}
	}
}

// symFXJSON is a Dynamo graph with dynamic shapes as fx_import.py writes it: x is f32[s0,4]
// (hint 4), relu keeps it, view flattens it to the VIEW size.
const symFXJSON = `{"version": 1, "name": "forward", "symbols": [{"input": 0, "dim": 0, "hint": 4}], "nodes": [
	{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [{"sym": {"c": 0, "terms": [[1, [0]]]}}, 4], "stride": [4, 1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "relu", "op": "call_function", "target": "torch.relu", "args": [{"node": "x"}], "meta": {"tensor": {"dtype": "float32", "shape": [{"sym": {"c": 0, "terms": [[1, [0]]]}}, 4], "stride": [4, 1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "view", "op": "call_method", "target": "view", "args": [{"node": "relu"}, {"sym": {"c": 0, "terms": [[4, [0]]]}}], "meta": {"tensor": {"dtype": "float32", "shape": [VIEW], "stride": [1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "output", "op": "output", "target": "output", "args": [{"tuple": [{"node": "view"}]}]}]}`

func TestImportFXSymbolic(t *testing.T) {
	js := strings.Replace(symFXJSON, "VIEW", `{"sym": {"c": 0, "terms": [[4, [0]]]}}`, 1)
	g, err := ImportFX([]byte(js), ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, g.Shapes.NumSymbols())
	require.Equal(t, "f32[s0,4]", g.Nodes[1].TensorMeta().SymString())
	require.Equal(t, "f32[4*s0]", g.Nodes[2].TensorMeta().SymString())
	require.Empty(t, g.Shapes.Guards(), "nothing for the compiled graph to check beyond Dynamo's guards")

	// torch's size agrees at the hint (2*s0 + 8 = 16 = 4*s0 at s0 = 4) but not for other sizes
	js = strings.Replace(symFXJSON, "VIEW", `{"sym": {"c": 8, "terms": [[2, [0]]]}}`, 1)
	_, err = ImportFX([]byte(js), ImportOptions{})
	require.ErrorContains(t, err, "ptgo computes sizes f32[4*s0], torch f32[2*s0+8]")
}

func TestImportFXSpecializesSymbolicSliceBounds(t *testing.T) {
	js := `{"version": 1, "name": "forward", "symbols": [{"input": 0, "dim": -1, "hint": 3}], "nodes": [
	{"name": "n", "op": "placeholder", "target": "n", "meta": {"sym": {"c": 0, "terms": [[1, [0]]]}}},
	{"name": "x", "op": "placeholder", "target": "x", "meta": {"tensor": {"dtype": "float32", "shape": [6, 8], "stride": [8, 1], "storage_offset": 0, "device": "cpu", "requires_grad": false}}},
	{"name": "cut", "op": "call_function", "target": "operator.getitem", "args": [{"node": "x"}, {"tuple": [{"slice": [null, null, null]}, {"slice": [null, {"sym": {"c": 0, "terms": [[1, [0]]]}}, null]}]}]},
	{"name": "output", "op": "output", "target": "output", "args": [{"tuple": [{"node": "cut"}]}]}]}`
	g, err := ImportFX([]byte(js), ImportOptions{})
	require.NoError(t, err)
	require.Equal(t, "f32[6,3]{8,1}", g.Nodes[2].TensorMeta().SymString())
	guards := g.Shapes.Guards()
	require.Len(t, guards, 1)
	require.Equal(t, "s0 == 3", guards[0].String(), "the compiled graph checks it on every call")
}
