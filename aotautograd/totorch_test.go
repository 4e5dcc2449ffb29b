package aotautograd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
)

// TestTorchRuleCoverage: every core op has a torch target, torch-level ops none.
func TestTorchRuleCoverage(t *testing.T) {
	var missing []string
	for _, op := range primtorch.Ops() {
		target, _, ok := aotautograd.TorchTarget(op)
		switch {
		case op.IsPrim() && (!ok || target == ""):
			missing = append(missing, op.Name)
		case !op.IsPrim():
			require.False(t, ok, "torch-level op %s has a torch target", op.Name)
		}
	}
	require.Empty(t, missing, "core ops without a torch target: add them to torchRules in aotautograd/totorch.go")
	for _, c := range []struct {
		op     primtorch.OpID
		target string
		method bool
	}{
		{primtorch.OpPrimAdd, "torch.add", false},
		{primtorch.OpPrimExpand, "expand", true},
		{primtorch.OpPrimConvertElementType, "to", true},
		{primtorch.OpPrimSlice, "torch.ops.aten.slice.Tensor", false},
		{primtorch.OpPrimMm, "torch.mm", false},
	} {
		target, method, ok := aotautograd.TorchTarget(c.op.Op())
		require.True(t, ok)
		require.Equal(t, c.target, target, "%s", c.op)
		require.Equal(t, c.method, method, "%s", c.op)
	}
}

// torchCase is one case handed to testdata/run_torch.py.
type torchCase struct {
	Name       string              `json:"name"`
	Forward    string              `json:"forward"`
	Backward   string              `json:"backward"`
	Inputs     []testcases.Tensor  `json:"inputs"`
	Attrs      []testcases.Tensor  `json:"attrs"`
	Tangents   []*testcases.Tensor `json:"tangents"`
	NumOutputs int                 `json:"num_outputs"`
}

type torchResult struct {
	Name    string                       `json:"name"`
	Error   string                       `json:"error"`
	Outputs []*testcases.Tensor          `json:"outputs"`
	After   map[string]*testcases.Tensor `json:"after"`
	Grads   []*testcases.Tensor          `json:"grads"`
}

// recorded turns a tensor run_torch.py wrote into a Result.
func recorded(t *testing.T, j *testcases.Tensor) *testcases.Result {
	if j == nil {
		return nil
	}
	dt, err := testcases.ParseDType(j.DType)
	require.NoError(t, err)
	r := &testcases.Result{DType: dt, Shape: j.Shape, Strides: j.Strides}
	for _, v := range j.Values {
		if dt.IsFloatingPoint() {
			r.F = append(r.F, testcases.Number(v))
		} else {
			r.I = append(r.I, testcases.Int(v))
		}
	}
	return r
}

// TestAOTEagerAgainstTorch is the aot_eager path: every recorded case is split (min-cut), both
// graphs are converted with ToTorch and run by plain torch calls (testdata/run_torch.py, one
// process), and the outputs, buffers and gradients are compared with eager torch's. It covers
// what the reference interpreter cannot run: convolution's backward (a fallback of
// aten.convolution_backward), the CNN with BatchNorm in training, random fallbacks.
func TestAOTEagerAgainstTorch(t *testing.T) {
	cs := loadCases(t)
	var payload []torchCase
	byName := map[string]*gradCase{}
	splits := map[string]*aotautograd.Graphs{}
	for i := range cs {
		c := &cs[i]
		if c.NotDiff {
			continue
		}
		_, pg, err := build(c)
		require.NoError(t, err, c.Name())
		s, err := aotautograd.Split(pg, c.RequiresGrad, aotautograd.Options{Check: true})
		require.NoError(t, err, c.Name())
		tc := torchCase{Name: c.Name(), Inputs: c.Inputs, Attrs: c.Attrs, NumOutputs: s.NumOutputs, Tangents: []*testcases.Tensor{}}
		for k, x := range []*fxgraph.Graph{s.Forward, s.Backward} {
			tg, err := aotautograd.ToTorch(x)
			require.NoError(t, err, "%s\n%s", c.Name(), x)
			data, err := fxgraph.EncodeJSON(tg)
			require.NoError(t, err, "%s\n%s", c.Name(), tg)
			if k == 0 {
				tc.Forward = string(data)
			} else {
				tc.Backward = string(data)
			}
		}
		for _, k := range s.Tangents {
			tc.Tangents = append(tc.Tangents, c.Tangents[k])
		}
		payload = append(payload, tc)
		byName[c.Name()] = c
		splits[c.Name()] = s
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	data, err := json.Marshal(payload)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	cmd := exec.Command(pythonPath(t), filepath.Join("testdata", "run_torch.py"), in, out)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Run(), "run_torch.py failed:\n%s", errb.String())
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var results []torchResult
	require.NoError(t, decodeJSON(raw, &results))
	require.Len(t, results, len(payload))
	for _, r := range results {
		c, s := byName[r.Name], splits[r.Name]
		t.Run(r.Name, func(t *testing.T) {
			require.Empty(t, r.Error, "torch could not run the converted graphs:\nforward:\n%s\nbackward:\n%s", s.Forward, s.Backward)
			msg := compareTorchRun(t, c, &r)
			if gap, ok := knownGaps[c.Name()]; ok {
				require.NotEmpty(t, msg, "known gap %q now agrees with torch: remove it from knownGaps", gap)
				t.Skipf("known gap: %s", gap)
			}
			require.Empty(t, msg, "forward:\n%s\nbackward:\n%s", s.Forward, s.Backward)
		})
	}
}

func compareTorchRun(t *testing.T, c *gradCase, r *torchResult) string {
	if len(r.Outputs) != len(c.Expect) {
		return fmt.Sprintf("%d outputs, torch gives %d", len(r.Outputs), len(c.Expect))
	}
	for i, w := range c.Expect {
		if d := testcases.Compare(recorded(t, r.Outputs[i]), w, testcases.NoStrides, true); d != "" {
			return fmt.Sprintf("output %d: %s", i, d)
		}
	}
	for _, at := range c.Attrs {
		if d := testcases.Compare(recorded(t, r.After[at.Name]), c.After[at.Name], testcases.NoStrides, true); d != "" {
			return fmt.Sprintf("buffer %s after the forward: %s", at.Name, d)
		}
	}
	for i, in := range c.Inputs {
		want, rg := c.Grads[in.Name]
		got := recorded(t, r.Grads[i])
		switch {
		case !rg && got != nil, rg && (want == nil) != (got == nil):
			return fmt.Sprintf("input %s: gradient %v, torch's %v", in.Name, got != nil, want != nil)
		case rg && want != nil:
			if d := compareGrad(got, *want); d != "" {
				return fmt.Sprintf("gradient of %s: %s", in.Name, d)
			}
		}
	}
	return ""
}

// primCase is a recorded one-prim call of primtorch/testdata/prim_cases.json.
type primCase struct {
	Prim    string             `json:"prim"`
	Tag     string             `json:"tag"`
	Tensors []testcases.Tensor `json:"tensors"`
	Args    []json.RawMessage  `json:"args"`
	Out     testcases.Tensor   `json:"out"`
}

// primGraph builds the one-node prims graph of a recorded prim call.
func primGraph(t *testing.T, c *primCase) *fxgraph.Graph {
	g := fxgraph.New("prim")
	var nodes []*fxgraph.Node
	for i, jt := range c.Tensors {
		m, err := jt.Meta()
		require.NoError(t, err)
		nodes = append(nodes, g.AddPlaceholder(fmt.Sprintf("t%d", i), m))
	}
	var conv func(v any) (fxgraph.Arg, primtorch.Value)
	conv = func(v any) (fxgraph.Arg, primtorch.Value) {
		switch x := v.(type) {
		case json.Number:
			if strings.ContainsAny(x.String(), ".eE") {
				f, _ := x.Float64()
				return fxgraph.Const{V: f}, f
			}
			i, _ := x.Int64()
			return fxgraph.Const{V: i}, i
		case []any:
			l, vals := fxgraph.List{Elems: []fxgraph.Arg{}}, []primtorch.Value{}
			for _, e := range x {
				a, val := conv(e)
				l.Elems = append(l.Elems, a)
				vals = append(vals, val)
			}
			return l, vals
		case map[string]any:
			switch {
			case x["T"] != nil:
				i, _ := x["T"].(json.Number).Int64()
				return nodes[i], nodes[i].Meta
			case x["f"] != nil:
				f := testcases.Number(x["f"])
				return fxgraph.Const{V: f}, f
			case x["dtype"] != nil:
				dt, err := testcases.ParseDType(x["dtype"].(string))
				require.NoError(t, err)
				return fxgraph.Const{V: dt}, dt
			}
		}
		return fxgraph.Const{V: v}, v
	}
	args := make([]fxgraph.Arg, len(c.Args))
	vals := make([]primtorch.Value, len(c.Args))
	for i, raw := range c.Args {
		var v any
		require.NoError(t, decodeJSON(raw, &v))
		args[i], vals[i] = conv(v)
	}
	meta, err := primtorch.Lookup(c.Prim).Meta(vals, nil)
	require.NoError(t, err, "%s[%s]", c.Prim, c.Tag)
	n := g.AddCall(c.Prim, args, nil, meta)
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{n}})
	return g
}

// runTorch runs cases through testdata/run_torch.py.
func runTorch(t *testing.T, payload []torchCase) []torchResult {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "cases.json"), filepath.Join(dir, "results.json")
	data, err := json.Marshal(payload)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	cmd := exec.Command(pythonPath(t), filepath.Join("testdata", "run_torch.py"), in, out)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	require.NoError(t, cmd.Run(), "run_torch.py failed:\n%s", errb.String())
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var results []torchResult
	require.NoError(t, decodeJSON(raw, &results))
	require.Len(t, results, len(payload))
	return results
}

// TestToTorchPrimCases converts every recorded one-prim call (primtorch/testdata/
// prim_cases.json: every core op but fallback, with eager torch's result) with ToTorch, runs
// it with torch and compares: the mapping table checked op by op.
func TestToTorchPrimCases(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "primtorch", "testdata", "prim_cases.json"))
	require.NoError(t, err)
	var pcs []primCase
	require.NoError(t, decodeJSON(raw, &pcs))
	require.NotEmpty(t, pcs)
	var payload []torchCase
	covered := map[string]bool{}
	for i := range pcs {
		c := &pcs[i]
		tg, err := aotautograd.ToTorch(primGraph(t, c))
		require.NoError(t, err, c.Prim)
		data, err := fxgraph.EncodeJSON(tg)
		require.NoError(t, err, "%s\n%s", c.Prim, tg)
		payload = append(payload, torchCase{Name: c.Prim + "/" + c.Tag, Forward: string(data), Inputs: c.Tensors,
			Attrs: []testcases.Tensor{}, Tangents: []*testcases.Tensor{}, NumOutputs: 1})
		covered[c.Prim] = true
	}
	for i, r := range runTorch(t, payload) {
		c := &pcs[i]
		t.Run(r.Name, func(t *testing.T) {
			require.Empty(t, r.Error, "torch could not run\n%s", payload[i].Forward)
			require.Len(t, r.Outputs, 1)
			require.Empty(t, testcases.Compare(recorded(t, r.Outputs[0]), c.Out, testcases.NoStrides, true), "%s", payload[i].Forward)
		})
	}
	var missing []string
	for _, op := range primtorch.Ops() {
		if op.IsPrim() && op.ID != primtorch.OpPrimFallback && !covered[op.Targets[0]] {
			missing = append(missing, op.Name)
		}
	}
	require.Empty(t, missing, "core ops without a recorded call in primtorch/testdata/prim_cases.json")
}
