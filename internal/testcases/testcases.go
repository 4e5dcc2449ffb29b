// Package testcases loads the recorded torch cases of primtorch/decomp/testdata/cases_*.json
// (written by gen_cases.py with eager torch, one file per torch version ptgo is tested against) and turns each into the one-node (or few-node)
// torch-level graph the capture stage would record, so every test suite checks the same
// cases: decomp's TestAgainstTorch (decomposition + reference interpreter) and inductor's
// conformance suite (reference interpreter vs the C backend).
//
// A case holds its inputs (dtype, shape, strides, storage offset and the whole storage), the
// calls (torch-level targets with encoded arguments), the outputs, torch's results and the
// inputs' values after the call (in-place ops write them). Compare checks a result against
// torch's with the tolerance of its dtype.
package testcases

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Torches are the torch versions with a recorded file (cases_<major>_<minor>.json, written by
// gen_cases.py with that torch): each is checked with primtorch modelling that torch.
var Torches = []primtorch.TorchVersion{primtorch.Torch113, primtorch.Torch214}

// Path is the path of primtorch/decomp/testdata/cases_<major>_<minor>.json in this source tree.
// A test binary built with -trimpath (tools/gpu-check carries one to a machine where the
// source tree lives elsewhere) knows this file only as ptgo/internal/testcases/...: the tree is
// then the first directory from the working directory up that holds go.mod.
func Path(v primtorch.TorchVersion) string {
	rel := filepath.Join("primtorch", "decomp", "testdata", fmt.Sprintf("cases_%d_%d.json", v.Major, v.Minor))
	_, file, _, _ := runtime.Caller(0)
	if filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", rel)
	}
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return filepath.Join(d, rel)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return rel
}

// DefaultPath is the file of Debian's torch 1.13, the torch the Go tests model by default.
func DefaultPath() string { return Path(primtorch.Torch113) }

// ForEachTorch runs fn as a subtest per recorded torch version with its cases, primtorch
// modelling that torch (primtorch.SetTorch) meanwhile.
func ForEachTorch(t *testing.T, fn func(t *testing.T, v primtorch.TorchVersion, cases []Case)) {
	for _, v := range Torches {
		t.Run("torch"+v.String(), func(t *testing.T) {
			cases, err := Load(Path(v))
			if err != nil {
				t.Fatal(err)
			}
			defer primtorch.SetTorch(primtorch.SetTorch(v))
			fn(t, v, cases)
		})
	}
}

// Tensor is a recorded tensor: an input (Name, Raw storage) or a result (Values, row-major).
type Tensor struct {
	Name    string  `json:"name"`
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	Offset  int64   `json:"offset"`
	Raw     []any   `json:"storage"`
	Values  []any   `json:"values"`
}

// Node is one recorded call.
type Node struct {
	Name   string                     `json:"name"`
	Target string                     `json:"target"`
	Args   []json.RawMessage          `json:"args"`
	Kwargs map[string]json.RawMessage `json:"kwargs"`
}

// Case is one recorded torch call (or a short chain of calls).
type Case struct {
	Op      string            `json:"op"`
	Tag     string            `json:"tag"`
	Inputs  []Tensor          `json:"inputs"`
	Attrs   []Tensor          `json:"attrs"`
	Nodes   []Node            `json:"nodes"`
	Outputs []json.RawMessage `json:"outputs"`
	Expect  []Tensor          `json:"expect"`
	After   map[string]Tensor `json:"after"`
	// Fallback: the decomposition is expected to leave a prims.fallback (torch runs the op).
	Fallback bool `json:"fallback"`
	// NoValues: the outputs are uninitialized memory in torch (empty): compare all but values.
	NoValues bool `json:"novalues"`
}

// Name is "op/tag", unique in the file.
func (c *Case) Name() string { return c.Op + "/" + c.Tag }

// Load reads a cases file (DefaultPath for the recorded one).
func Load(path string) ([]Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("testcases: %w; regenerate it with go test ./primtorch/decomp -update", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cases []Case
	if err := dec.Decode(&cases); err != nil {
		return nil, fmt.Errorf("testcases: decoding %s: %w", path, err)
	}
	return cases, nil
}

// ParseDType parses a recorded dtype name ("f32", "i64", ...).
func ParseDType(s string) (primtorch.DType, error) {
	d, ok := primtorch.ParseDType(s)
	if !ok {
		return 0, fmt.Errorf("testcases: unknown dtype %q", s)
	}
	return d, nil
}

// Number decodes a recorded number: a JSON number, a bool, or the strings "nan", "inf", "-inf".
func Number(v any) float64 {
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

// Int decodes a recorded integer or bool exactly.
func Int(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return int64(f)
	case bool:
		if x {
			return 1
		}
	}
	return 0
}

// Meta is the tensor's meta (on the CPU).
func (j Tensor) Meta() (*primtorch.TensorMeta, error) {
	dt, err := ParseDType(j.DType)
	if err != nil {
		return nil, err
	}
	return &primtorch.TensorMeta{DType: dt, Shape: j.Shape, Strides: j.Strides, Offset: j.Offset, Device: primtorch.CPU}, nil
}

// Storage returns the recorded storage of an input: float64 values for floating dtypes, int64
// values (bool as 0 or 1) otherwise; the other slice is nil.
func (j Tensor) Storage() ([]float64, []int64, error) {
	dt, err := ParseDType(j.DType)
	if err != nil {
		return nil, nil, err
	}
	if dt.IsFloatingPoint() {
		f := make([]float64, len(j.Raw))
		for i, v := range j.Raw {
			f[i] = Number(v)
		}
		return f, nil, nil
	}
	n := make([]int64, len(j.Raw))
	for i, v := range j.Raw {
		n[i] = Int(v)
	}
	return nil, n, nil
}

// Build returns the case's torch-level graph, with metas from the op registry as the capture
// stage computes them, and the ops its calls resolve to. Inputs are placeholders, attrs
// get_attr nodes; each call's Where is "case.py:<node name>".
func (c *Case) Build() (g *fxgraph.Graph, ops []*primtorch.Op, err error) {
	b := &builder{g: fxgraph.New("case"), refs: map[string]*fxgraph.Node{}, items: map[string]*fxgraph.Node{}}
	defer func() {
		if p := recover(); p != nil {
			be, ok := p.(buildError)
			if !ok {
				panic(p)
			}
			g, ops, err = nil, nil, fmt.Errorf("testcases: case %s: %w", c.Name(), be.err)
		}
	}()
	for _, in := range c.Inputs {
		m, err := in.Meta()
		b.check(err)
		b.refs[in.Name] = b.g.AddPlaceholder(in.Name, m)
	}
	for _, at := range c.Attrs {
		m, err := at.Meta()
		b.check(err)
		b.refs[at.Name] = b.g.AddGetAttr(at.Name, m)
	}
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
		n, op, err := AddNode(b.g, jn.Target, args, kwargs)
		b.check(err)
		ops = append(ops, op)
		n.Where = "case.py:" + jn.Name
		b.refs[jn.Name] = n
	}
	outs := make([]fxgraph.Arg, len(c.Outputs))
	for i, o := range c.Outputs {
		outs[i] = b.arg(o)
	}
	b.g.AddOutput(fxgraph.Tuple{Elems: outs})
	return b.g, ops, nil
}

// AddNode appends a torch-level call with the meta the op registry computes (as the capture
// stage does) and returns it with the overload its arguments select. "Tensor.x" targets are
// call_method nodes.
func AddNode(g *fxgraph.Graph, target string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg) (*fxgraph.Node, *primtorch.Op, error) {
	vals := make([]primtorch.Value, len(args))
	for i, a := range args {
		vals[i] = value(a)
	}
	var kvs []primtorch.KV
	for _, kw := range kwargs {
		kvs = append(kvs, primtorch.KV{Name: kw.Name, Value: value(kw.Value)})
	}
	op := primtorch.Lookup(target)
	if op == nil {
		return nil, nil, fmt.Errorf("target %s is not in the registry", target)
	}
	resolved, _, err := op.Resolve(vals, kvs)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", target, err)
	}
	meta, err := op.Meta(vals, kvs)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", target, err)
	}
	if m, ok := meta.([]primtorch.Value); ok {
		meta = []any(m)
	}
	if method, ok := strings.CutPrefix(target, "Tensor."); ok {
		return g.AddMethod(method, args, kwargs, meta), resolved, nil
	}
	return g.AddCall(target, args, kwargs, meta), resolved, nil
}

// buildError carries an error out of the builder's recursion (Build recovers it).
type buildError struct{ err error }

type builder struct {
	g     *fxgraph.Graph
	refs  map[string]*fxgraph.Node
	items map[string]*fxgraph.Node
}

func (b *builder) check(err error) {
	if err != nil {
		panic(buildError{err})
	}
}

func (b *builder) fail(format string, args ...any) {
	panic(buildError{fmt.Errorf(format, args...)})
}

func (b *builder) ref(name string, index *int64) *fxgraph.Node {
	n := b.refs[name]
	if n == nil {
		b.fail("reference to unknown node %s", name)
	}
	if index == nil {
		return n
	}
	key := fmt.Sprintf("%s[%d]", name, *index)
	if it, ok := b.items[key]; ok {
		return it
	}
	metas, ok := n.Meta.([]any)
	if !ok {
		b.fail("%s is not a tuple", name)
	}
	it := b.g.AddCall("operator.getitem", []fxgraph.Arg{n, fxgraph.Const{V: *index}}, nil, metas[*index])
	b.items[key] = it
	return it
}

// arg decodes an encoded argument into a graph argument.
func (b *builder) arg(raw json.RawMessage) fxgraph.Arg {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	b.check(dec.Decode(&v))
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
			return fxgraph.Const{V: Number(f)}
		}
		if d, ok := x["dtype"]; ok {
			dt, err := ParseDType(d.(string))
			b.check(err)
			return fxgraph.Const{V: dt}
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
	b.fail("unknown encoded argument %v", v)
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
		s, _ := primtorch.SliceOf(value(x.Start), value(x.Stop), value(x.Step)) // (bounds may be SymInts)
		return s
	}
	return nil
}
