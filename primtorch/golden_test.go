package primtorch

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
)

var update = flag.Bool("update", false, "rewrite golden files under testdata and kernel_gaps_<torch version>.go (re-runs testdata/gen_meta_cases.py and gen_kernel_gaps.py with the torch interpreter)")

// pythonPath is the interpreter with torch: $PTGO_PYTHON, else /usr/bin/python3.
func pythonPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PTGO_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("primtorch tests: no Python interpreter with torch at %s (%v); install Debian's python3-torch or set PTGO_PYTHON", p, err)
	}
	return p
}

// runPython runs a script with the torch interpreter and returns its stdout.
func runPython(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(pythonPath(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("primtorch tests: %s %s failed: %v\n%s", pythonPath(t), strings.Join(args, " "), err, errb.String())
	}
	if errb.Len() > 0 {
		t.Log(strings.TrimSpace(errb.String()))
	}
	return out.String()
}

// regenerate re-runs the case generator when -update is set (once per test binary).
var regenerated bool

func regenerate(t *testing.T) {
	t.Helper()
	if !*update || regenerated {
		return
	}
	regenerated = true
	runPython(t, "", filepath.Join("testdata", "gen_meta_cases.py"), "testdata")
	runPython(t, "", filepath.Join("testdata", "gen_kernel_gaps.py"), ".")
}

// jsonMeta is a tensor meta as the generator writes it.
type jsonMeta struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	Offset  int64   `json:"offset"`
	RG      bool    `json:"rg"`
}

func (j jsonMeta) meta(t *testing.T) *TensorMeta {
	d, ok := ParseDType(j.DType)
	require.True(t, ok, "unknown dtype %q in golden file", j.DType)
	return &TensorMeta{DType: d, Shape: j.Shape, Strides: j.Strides, Offset: j.Offset, Device: CPU, RequiresGrad: j.RG}
}

func (j jsonMeta) String() string {
	m := &TensorMeta{Shape: j.Shape, Strides: j.Strides, Offset: j.Offset}
	d, _ := ParseDType(j.DType)
	m.DType = d
	return describe(m)
}

// describe prints a meta with all of its fields (String omits default strides).
func describe(m *TensorMeta) string {
	return fmt.Sprintf("%s%v{%v+%d}%s", m.DType, m.Shape, m.Strides, m.Offset, map[bool]string{true: "!grad"}[m.RequiresGrad])
}

type metaCase struct {
	Op      string                     `json:"op"`
	Target  string                     `json:"target"`
	Tensors []jsonMeta                 `json:"tensors"`
	Args    []json.RawMessage          `json:"args"`
	Kwargs  map[string]json.RawMessage `json:"kwargs"`
	Out     json.RawMessage            `json:"out"`
	Error   *struct {
		Type string `json:"type"`
		Msg  string `json:"msg"`
	} `json:"error"`
}

func (c *metaCase) String() string {
	var parts []string
	for _, a := range c.Args {
		parts = append(parts, string(a))
	}
	for _, k := range sortedKeys(c.Kwargs) {
		parts = append(parts, k+"="+string(c.Kwargs[k]))
	}
	var ts []string
	for i, m := range c.Tensors {
		ts = append(ts, fmt.Sprintf("T%d=%s", i, m))
	}
	return fmt.Sprintf("%s(%s) with %s", c.Target, strings.Join(parts, ", "), strings.Join(ts, " "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeValue turns the generator's JSON encoding of a Python value into a Value.
func decodeValue(t *testing.T, raw json.RawMessage, tensors []*TensorMeta) Value {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return convertJSON(t, v, tensors)
}

func convertJSON(t *testing.T, v any, tensors []*TensorMeta) Value {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			f, err := x.Float64()
			require.NoError(t, err)
			return f
		}
		i, err := x.Int64()
		require.NoError(t, err)
		return i
	case []any:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = convertJSON(t, e, tensors)
		}
		return out
	case map[string]any:
		for k, e := range x {
			switch k {
			case "T":
				n, _ := e.(json.Number).Int64()
				return tensors[n]
			case "f":
				switch e.(string) {
				case "inf":
					return math.Inf(1)
				case "-inf":
					return math.Inf(-1)
				}
				return math.NaN()
			case "complex":
				p := e.([]any)
				re, _ := p[0].(json.Number).Float64()
				im, _ := p[1].(json.Number).Float64()
				return complex(re, im)
			case "dtype":
				d, ok := ParseDType(e.(string))
				require.True(t, ok, "dtype %v", e)
				return d
			case "device":
				d, err := ParseDevice(e.(string))
				if err != nil {
					return e.(string) // an invalid device string, as the user wrote it
				}
				return d
			case "mf":
				return MemoryFormat(e.(string))
			case "layout":
				return Layout(e.(string))
			case "ellipsis":
				return Ellipsis{}
			case "slice":
				p := e.([]any)
				var s Slice
				for i, ptr := range []**int64{&s.Start, &s.Stop, &s.Step} {
					if p[i] != nil {
						n, _ := p[i].(json.Number).Int64()
						*ptr = &n
					}
				}
				return s
			case "tuple":
				return Tuple(convertJSON(t, e, tensors).([]Value))
			}
		}
		t.Fatalf("unknown encoded value %v", x)
	}
	t.Fatalf("unknown JSON value %T", v)
	return nil
}

func loadJSONLines[T any](t *testing.T, name string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err, "read golden file; regenerate with go test ./primtorch -run TestMeta -update")
	var out []T
	require.NoError(t, json.Unmarshal(data, &out), "parse testdata/%s", name)
	return out
}

// compareOut compares a Meta result with torch's, returning "" when they agree.
func compareOut(t *testing.T, got Value, raw json.RawMessage) string {
	t.Helper()
	var want struct {
		Meta  *jsonMeta         `json:"meta"`
		Tuple []json.RawMessage `json:"tuple"`
		Value any               `json:"value"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	switch {
	case want.Meta != nil:
		m, ok := got.(*TensorMeta)
		if !ok {
			return fmt.Sprintf("got %T %v, want tensor %s", got, got, want.Meta)
		}
		w := want.Meta.meta(t)
		if m.DType != w.DType || !shapeEqual(m.Shape, w.Shape) || !shapeEqual(m.Strides, w.Strides) || m.Offset != w.Offset || m.RequiresGrad != w.RequiresGrad {
			return fmt.Sprintf("got %s, want %s", describe(m), describe(w))
		}
		if m.Device != CPU {
			return fmt.Sprintf("got device %v, want cpu", m.Device)
		}
		return ""
	case want.Tuple != nil:
		vs, ok := got.([]Value)
		if !ok || len(vs) != len(want.Tuple) {
			return fmt.Sprintf("got %v, want a tuple of %d", got, len(want.Tuple))
		}
		for i := range vs {
			if d := compareOut(t, vs[i], want.Tuple[i]); d != "" {
				return fmt.Sprintf("element %d: %s", i, d)
			}
		}
		return ""
	}
	if fmt.Sprint(got) != fmt.Sprint(want.Value) {
		return fmt.Sprintf("got %v, want %v", got, want.Value)
	}
	return ""
}

// messageGaps are torch messages primtorch does not reproduce word for word (it still fails the
// call): torch's argument parser has several overloads where primtorch has one signature, named
// tensor dims, and checks primtorch makes in another order. Any other torch error message must
// appear in primtorch's.
var messageGaps = []string{
	"received an invalid combination of arguments", // torch has Tensor and Scalar overloads
	"Found dtype Bool but expected Long",           // square_ on bool runs pow_
	"~ (operator.invert) is only implemented",      // operator.invert's own check
	"not found in Tensor[None",                     // named-tensor overloads
	"new(): invalid data type",                     // tuple indices holding str
	"device type at start of device string",        // device string parsing
	"and output size of (",                         // Python's tuple repr of size
}

// messagesTorch is the torch whose error messages primtorch's follow word for word. Under
// another, a call both reject is enough: a rejected call runs eagerly and torch raises its own
// exception (A43), the message only reaches ptgo's logs.
var messagesTorch = Torch113

// dataDependentForms are ops where some calls (not all) are data-dependent.
var dataDependentForms = map[string]bool{"getitem": true, "setitem": true, "repeat_interleave.self_int": true, "one_hot": true, "masked_fill": true, "masked_fill_": true}

// goldenTorches are the torch versions with golden files (meta_cases_<major>_<minor>.json,
// promotion_<major>_<minor>.json): each is replayed with primtorch modelling that torch.
var goldenTorches = []TorchVersion{Torch113, Torch214}

func goldenFile(base string, v TorchVersion) string {
	return fmt.Sprintf("%s_%d_%d.json", base, v.Major, v.Minor)
}

// forEachGoldenTorch runs fn as a subtest per golden torch version, with Torch() set to it.
func forEachGoldenTorch(t *testing.T, fn func(t *testing.T, v TorchVersion)) {
	for _, v := range goldenTorches {
		t.Run("torch"+v.String(), func(t *testing.T) {
			defer SetTorch(SetTorch(v))
			fn(t, v)
		})
	}
}

func TestMeta(t *testing.T) {
	regenerate(t)
	forEachGoldenTorch(t, func(t *testing.T, v TorchVersion) {
		cases := loadJSONLines[metaCase](t, goldenFile("meta_cases", v))
		require.NotEmpty(t, cases)
		byOp := map[string][]int{}
		var order []string
		for i, c := range cases {
			if _, ok := byOp[c.Op]; !ok {
				order = append(order, c.Op)
			}
			byOp[c.Op] = append(byOp[c.Op], i)
		}
		for _, name := range order {
			t.Run(name, func(t *testing.T) {
				for _, i := range byOp[name] {
					if msg := replay(t, &cases[i]); msg != "" {
						t.Errorf("case %d: %s\n    %s", i, cases[i].String(), msg)
					}
				}
			})
		}
	})
}

// replay runs one golden case through Lookup(...).Meta and returns what disagrees with torch.
func replay(t *testing.T, c *metaCase) string {
	t.Helper()
	tensors := make([]*TensorMeta, len(c.Tensors))
	for i, j := range c.Tensors {
		tensors[i] = j.meta(t)
	}
	args := make([]Value, len(c.Args))
	for i, a := range c.Args {
		args[i] = decodeValue(t, a, tensors)
	}
	var kwargs []KV
	for _, k := range sortedKeys(c.Kwargs) {
		kwargs = append(kwargs, KV{k, decodeValue(t, c.Kwargs[k], tensors)})
	}
	op := Lookup(c.Target)
	if op == nil {
		return "target unknown to the registry"
	}
	before := make([]string, len(tensors))
	for i, m := range tensors {
		before[i] = describe(m)
	}
	got, err := op.Meta(args, kwargs)
	for i, m := range tensors {
		if describe(m) != before[i] {
			return fmt.Sprintf("Meta modified input T%d: %s became %s", i, before[i], describe(m))
		}
	}
	if c.Error != nil {
		if err == nil {
			return fmt.Sprintf("torch raised %s: %s; primtorch returned %v", c.Error.Type, c.Error.Msg, got)
		}
		if strings.Contains(err.Error(), c.Error.Msg) || isDataDependent(err) || Torch() != messagesTorch {
			return ""
		}
		for _, g := range messageGaps {
			if strings.Contains(c.Error.Msg, g) {
				return ""
			}
		}
		return fmt.Sprintf("torch raised %s: %q\n    primtorch said: %q", c.Error.Type, c.Error.Msg, err.Error())
	}
	resolved, _, rerr := op.Resolve(args, kwargs)
	if rerr == nil && resolved.Name != c.Op {
		return fmt.Sprintf("resolved to %s, the case is for %s", resolved.Name, c.Op)
	}
	if err != nil {
		if isDataDependent(err) && rerr == nil && (resolved.DataDependent || dataDependentForms[resolved.Name]) {
			return ""
		}
		return fmt.Sprintf("torch returned %s; primtorch failed: %v", c.Out, err)
	}
	if resolved.DataDependent {
		return "a data-dependent op returned a meta"
	}
	return compareOut(t, got, c.Out)
}

// TestMetaCoverage fails for any registry op without a golden case that torch ran successfully,
// per golden torch version (an op a torch does not have, Op.Since, needs none there).
func TestMetaCoverage(t *testing.T) {
	forEachGoldenTorch(t, func(t *testing.T, v TorchVersion) {
		cases := loadJSONLines[metaCase](t, goldenFile("meta_cases", v))
		ok := map[string]bool{}
		for _, c := range cases {
			if c.Error == nil {
				ok[c.Op] = true
			}
		}
		var missing []string
		for _, op := range Ops() {
			if !ok[op.Name] && !op.IsPrim() && op.InTorch(v) { // prims: prims_test.go
				missing = append(missing, op.Name)
			}
		}
		require.Empty(t, missing, "ops without a successful golden case for torch %s: add cases for them to testdata/gen_meta_cases.py (the gen_* function of their group), then run go test ./primtorch -run TestMeta -update with that torch (PTGO_PYTHON)", v)
	})
}
