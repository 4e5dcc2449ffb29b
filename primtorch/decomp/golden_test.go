package decomp_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

var update = flag.Bool("update", false, "regenerate testdata/cases.json with testdata/gen_cases.py (torch) and rewrite golden graphs")

// pythonPath is the interpreter with torch: $PTGO_PYTHON, else /usr/bin/python3.
func pythonPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PTGO_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("decomp tests: no Python interpreter with torch at %s (%v); install Debian's python3-torch or set PTGO_PYTHON", p, err)
	}
	return p
}

var regenerated bool

// loadCases reads testdata/cases.json, regenerating it first with -update.
func loadCases(t *testing.T) []jsonCase {
	t.Helper()
	path := filepath.Join("testdata", "cases.json")
	if *update && !regenerated {
		regenerated = true
		cmd := exec.Command(pythonPath(t), filepath.Join("testdata", "gen_cases.py"), path)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		require.NoError(t, cmd.Run(), "gen_cases.py failed:\n%s", errb.String())
		t.Log(strings.SplitN(errb.String(), "\n", 2)[0])
	}
	data, err := os.ReadFile(path)
	require.NoError(t, err, "read %s; regenerate it with go test ./primtorch/decomp -update", path)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cases []jsonCase
	require.NoError(t, dec.Decode(&cases))
	return cases
}

type jsonTensor struct {
	Name    string  `json:"name"`
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	Offset  int64   `json:"offset"`
	Raw     []any   `json:"storage"`
	Values  []any   `json:"values"`
}

type jsonNode struct {
	Name   string                     `json:"name"`
	Target string                     `json:"target"`
	Args   []json.RawMessage          `json:"args"`
	Kwargs map[string]json.RawMessage `json:"kwargs"`
}

type jsonCase struct {
	Op       string                `json:"op"`
	Tag      string                `json:"tag"`
	Inputs   []jsonTensor          `json:"inputs"`
	Attrs    []jsonTensor          `json:"attrs"`
	Nodes    []jsonNode            `json:"nodes"`
	Outputs  []json.RawMessage     `json:"outputs"`
	Expect   []jsonTensor          `json:"expect"`
	After    map[string]jsonTensor `json:"after"`
	Fallback bool                  `json:"fallback"`
	// NoValues: the outputs are uninitialized memory in torch (empty): compare all but values.
	NoValues bool `json:"novalues"`
}

func (c *jsonCase) name() string { return c.Op + "/" + c.Tag }

func parseDType(t *testing.T, s string) primtorch.DType {
	d, ok := primtorch.ParseDType(s)
	require.True(t, ok, "dtype %q", s)
	return d
}

// number decodes a JSON number or the strings "nan", "inf", "-inf".
func number(v any) float64 {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case string:
		switch x {
		case "inf":
			return math.Inf(1)
		case "-inf":
			return math.Inf(-1)
		}
		return math.NaN()
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

func (j jsonTensor) meta(t *testing.T) *primtorch.TensorMeta {
	return &primtorch.TensorMeta{DType: parseDType(t, j.DType), Shape: j.Shape, Strides: j.Strides, Offset: j.Offset, Device: primtorch.CPU}
}

func (j jsonTensor) tensor(t *testing.T) *ref.Tensor {
	dt := parseDType(t, j.DType)
	var data any
	if dt.IsFloatingPoint() {
		f := make([]float64, len(j.Raw))
		for i, v := range j.Raw {
			f[i] = number(v)
		}
		data = f
	} else {
		n := make([]int64, len(j.Raw))
		for i, v := range j.Raw {
			switch x := v.(type) {
			case json.Number:
				n[i], _ = x.Int64()
			case bool:
				if x {
					n[i] = 1
				}
			}
		}
		data = n
	}
	r, err := ref.FromStorage(dt, j.Shape, j.Strides, j.Offset, data)
	require.NoError(t, err)
	return r
}

// builder makes the torch-level graph of a case, with metas from the op registry as the
// capture stage computes them.
type builder struct {
	t     *testing.T
	g     *fxgraph.Graph
	refs  map[string]*fxgraph.Node
	items map[string]*fxgraph.Node
}

func (b *builder) ref(name string, index *int64) *fxgraph.Node {
	n := b.refs[name]
	require.NotNil(b.t, n, "reference to unknown node %s", name)
	if index == nil {
		return n
	}
	key := fmt.Sprintf("%s[%d]", name, *index)
	if it, ok := b.items[key]; ok {
		return it
	}
	metas, ok := n.Meta.([]any)
	require.True(b.t, ok, "%s is not a tuple", name)
	it := b.g.AddCall("operator.getitem", []fxgraph.Arg{n, fxgraph.Const{V: *index}}, nil, metas[*index])
	b.items[key] = it
	return it
}

// arg decodes an encoded argument into a graph argument.
func (b *builder) arg(raw json.RawMessage) fxgraph.Arg {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(b.t, dec.Decode(&v))
	return b.conv(v)
}

func (b *builder) conv(v any) fxgraph.Arg {
	switch x := v.(type) {
	case nil, bool, string:
		return fxgraph.Const{V: x}
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			f, _ := x.Float64()
			return fxgraph.Const{V: f}
		}
		i, _ := x.Int64()
		return fxgraph.Const{V: i}
	case []any:
		out := fxgraph.List{Elems: make([]fxgraph.Arg, len(x))}
		for i, e := range x {
			out.Elems[i] = b.conv(e)
		}
		return out
	case map[string]any:
		if r, ok := x["ref"]; ok {
			var idx *int64
			if i, ok := x["index"]; ok {
				n, _ := i.(json.Number).Int64()
				idx = &n
			}
			return b.ref(r.(string), idx)
		}
		if f, ok := x["f"]; ok {
			return fxgraph.Const{V: number(f)}
		}
		if d, ok := x["dtype"]; ok {
			return fxgraph.Const{V: parseDType(b.t, d.(string))}
		}
		if m, ok := x["mf"]; ok {
			return fxgraph.Const{V: primtorch.MemoryFormat(m.(string))}
		}
		if _, ok := x["ellipsis"]; ok {
			return fxgraph.Const{V: primtorch.Ellipsis{}}
		}
		if tup, ok := x["tuple"]; ok {
			l := b.conv(tup).(fxgraph.List)
			return fxgraph.Tuple{Elems: l.Elems}
		}
		if s, ok := x["slice"]; ok {
			p := s.([]any)
			return fxgraph.Slice{Start: b.conv(p[0]), Stop: b.conv(p[1]), Step: b.conv(p[2])}
		}
	}
	b.t.Fatalf("unknown encoded argument %v", v)
	return nil
}

// value is the primtorch.Value a graph argument stands for (as the capture stage passes it).
func value(a fxgraph.Arg) primtorch.Value {
	switch x := a.(type) {
	case *fxgraph.Node:
		return x.Meta
	case fxgraph.Const:
		return x.V
	case fxgraph.List:
		out := make([]primtorch.Value, len(x.Elems))
		for i, e := range x.Elems {
			out[i] = value(e)
		}
		return out
	case fxgraph.Tuple:
		out := make(primtorch.Tuple, len(x.Elems))
		for i, e := range x.Elems {
			out[i] = value(e)
		}
		return out
	case fxgraph.Slice:
		var s primtorch.Slice
		for i, p := range []fxgraph.Arg{x.Start, x.Stop, x.Step} {
			if n, ok := p.(fxgraph.Const).V.(int64); ok {
				n := n
				*[]**int64{&s.Start, &s.Stop, &s.Step}[i] = &n
			}
		}
		return s
	}
	return nil
}

// addNode appends a torch-level call with the meta the op registry computes (as the capture
// stage does) and returns it with the overload its arguments select. "Tensor.x" targets are
// call_method nodes.
func addNode(t *testing.T, g *fxgraph.Graph, target string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg) (*fxgraph.Node, *primtorch.Op) {
	t.Helper()
	vals := make([]primtorch.Value, len(args))
	for i, a := range args {
		vals[i] = value(a)
	}
	var kvs []primtorch.KV
	for _, kw := range kwargs {
		kvs = append(kvs, primtorch.KV{Name: kw.Name, Value: value(kw.Value)})
	}
	op := primtorch.Lookup(target)
	require.NotNil(t, op, "target %s is not in the registry", target)
	resolved, _, err := op.Resolve(vals, kvs)
	require.NoError(t, err, "%s", target)
	meta, err := op.Meta(vals, kvs)
	require.NoError(t, err, "%s", target)
	if m, ok := meta.([]primtorch.Value); ok {
		meta = []any(m)
	}
	if method, ok := strings.CutPrefix(target, "Tensor."); ok {
		return g.AddMethod(method, args, kwargs, meta), resolved
	}
	return g.AddCall(target, args, kwargs, meta), resolved
}

// build returns the case's torch-level graph and the ops its calls resolve to.
func build(t *testing.T, c *jsonCase) (*fxgraph.Graph, []*primtorch.Op) {
	t.Helper()
	b := &builder{t: t, g: fxgraph.New("case"), refs: map[string]*fxgraph.Node{}, items: map[string]*fxgraph.Node{}}
	for _, in := range c.Inputs {
		b.refs[in.Name] = b.g.AddPlaceholder(in.Name, in.meta(t))
	}
	for _, at := range c.Attrs {
		b.refs[at.Name] = b.g.AddGetAttr(at.Name, at.meta(t))
	}
	var ops []*primtorch.Op
	for _, jn := range c.Nodes {
		args := make([]fxgraph.Arg, len(jn.Args))
		for i, a := range jn.Args {
			args[i] = b.arg(a)
		}
		keys := make([]string, 0, len(jn.Kwargs))
		for k := range jn.Kwargs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kwargs []fxgraph.Kwarg
		for _, k := range keys {
			kwargs = append(kwargs, fxgraph.Kwarg{Name: k, Value: b.arg(jn.Kwargs[k])})
		}
		n, op := addNode(t, b.g, jn.Target, args, kwargs)
		ops = append(ops, op)
		n.Where = "case.py:" + jn.Name
		b.refs[jn.Name] = n
	}
	outs := make([]fxgraph.Arg, len(c.Outputs))
	for i, o := range c.Outputs {
		outs[i] = b.arg(o)
	}
	b.g.AddOutput(fxgraph.Tuple{Elems: outs})
	return b.g, ops
}

// tolerance per dtype: (atol, rtol).
func tolerance(dt primtorch.DType) (float64, float64) {
	switch dt {
	case primtorch.Float16:
		return 1e-3, 2e-3
	case primtorch.BFloat16:
		return 1e-2, 1.6e-2
	case primtorch.Float32:
		return 2e-5, 2e-5
	case primtorch.Float64:
		return 1e-10, 1e-10
	}
	return 0, 0
}

// compare returns "" when got matches torch's tensor want (dtype, shape, strides, values within
// tolerance, NaN where torch has NaN).
func compare(t *testing.T, got *ref.Tensor, want jsonTensor, checkStrides, checkValues bool) string {
	dt := parseDType(t, want.DType)
	if got == nil {
		return "no tensor"
	}
	if got.DType != dt || fmt.Sprint(got.Shape) != fmt.Sprint(want.Shape) {
		return fmt.Sprintf("got %s, torch gives %s%v", got.Meta(), dt, want.Shape)
	}
	if checkStrides && got.Numel() > 1 && fmt.Sprint(got.Strides) != fmt.Sprint(want.Strides) {
		return fmt.Sprintf("got strides %v, torch gives %v", got.Strides, want.Strides)
	}
	if !checkValues {
		return ""
	}
	vals := got.Floats()
	atol, rtol := tolerance(dt)
	for i, w := range want.Values {
		wv, gv := number(w), vals[i]
		switch {
		case math.IsNaN(wv) || math.IsNaN(gv):
			if math.IsNaN(wv) != math.IsNaN(gv) {
				return fmt.Sprintf("element %d: got %v, torch gives %v\n  got   %v\n  torch %v", i, gv, wv, got, want.Values)
			}
		case math.IsInf(wv, 0) || math.IsInf(gv, 0):
			if wv != gv {
				return fmt.Sprintf("element %d: got %v, torch gives %v\n  got   %v\n  torch %v", i, gv, wv, got, want.Values)
			}
		case math.Abs(gv-wv) > atol+rtol*math.Abs(wv):
			return fmt.Sprintf("element %d: got %v, torch gives %v (tolerance %g + %g·|x|)\n  got   %v\n  torch %v", i, gv, wv, atol, rtol, got, want.Values)
		}
	}
	return ""
}

// runCase decomposes and runs one case; it returns what disagrees with torch ("" when
// nothing) and the ops the case exercised.
func runCase(t *testing.T, c *jsonCase) (string, []*primtorch.Op) {
	g, ops := build(t, c)
	pg, err := decomp.Decompose(g, decomp.Options{Check: true})
	if err != nil {
		return fmt.Sprintf("Decompose: %v\n%s", err, g), ops
	}
	hasFallback := strings.Contains(pg.String(), "prims.fallback")
	if c.Fallback {
		if !hasFallback {
			return "the case expects a prims.fallback:\n" + pg.String(), ops
		}
		return "", nil // the fallback op is not covered by this case
	}
	inputs := make([]*ref.Tensor, len(c.Inputs))
	for i, in := range c.Inputs {
		inputs[i] = in.tensor(t)
	}
	attrs := map[string]*ref.Tensor{}
	for _, at := range c.Attrs {
		attrs[at.Name] = at.tensor(t)
	}
	outs, err := ref.Run(pg, inputs, attrs)
	if err != nil {
		return fmt.Sprintf("Run: %v\n%s", err, pg), ops
	}
	if len(outs) != len(c.Expect) {
		return fmt.Sprintf("%d outputs, torch gives %d\n%s", len(outs), len(c.Expect), pg), ops
	}
	for i, w := range c.Expect {
		if d := compare(t, outs[i], w, true, !c.NoValues); d != "" {
			return fmt.Sprintf("output %d: %s\n%s\n%s", i, d, g, pg), ops
		}
	}
	for i, in := range c.Inputs {
		if d := compare(t, inputs[i], c.After[in.Name], false, true); d != "" {
			return fmt.Sprintf("input %s after the call: %s\n%s", in.Name, d, pg), ops
		}
	}
	for _, at := range c.Attrs {
		if d := compare(t, attrs[at.Name], c.After[at.Name], false, true); d != "" {
			return fmt.Sprintf("buffer %s after the call: %s\n%s", at.Name, d, pg), ops
		}
	}
	return "", ops
}

// TestAgainstTorch decomposes every recorded case, runs it with the reference interpreter and
// compares values, dtypes, shapes and strides (and written inputs and buffers) with eager torch.
func TestAgainstTorch(t *testing.T) {
	cases := loadCases(t)
	require.NotEmpty(t, cases)
	byOp := map[string][]int{}
	var order []string
	for i, c := range cases {
		if _, ok := byOp[c.Op]; !ok {
			order = append(order, c.Op)
		}
		byOp[c.Op] = append(byOp[c.Op], i)
	}
	for _, op := range order {
		t.Run(op, func(t *testing.T) {
			for _, i := range byOp[op] {
				if msg, _ := runCase(t, &cases[i]); msg != "" {
					t.Errorf("case %s: %s", cases[i].name(), msg)
				}
			}
		})
	}
}

// goldenExempt are decomposed ops without a golden case, with the reason.
var goldenExempt = map[string]string{}

// TestGoldenCoverage fails for every op with a decomposition that no passing case exercises.
func TestGoldenCoverage(t *testing.T) {
	cases := loadCases(t)
	covered := map[primtorch.OpID]bool{}
	for i := range cases {
		if msg, ops := runCase(t, &cases[i]); msg == "" {
			for _, op := range ops {
				covered[op.ID] = true
			}
		}
	}
	var missing []string
	decomposed := 0
	for _, op := range primtorch.Ops() {
		if op.DecompStatus() != "decomposed" {
			continue
		}
		decomposed++
		if !covered[op.ID] && goldenExempt[op.Name] == "" {
			missing = append(missing, op.Name)
		}
	}
	t.Logf("%d cases; %d decomposed ops, %d exercised by a passing case", len(cases), decomposed, decomposed-len(missing))
	require.Empty(t, missing, "decomposed ops no passing case exercises: add cases to testdata/gen_cases.py and run go test ./primtorch/decomp -update")
}
