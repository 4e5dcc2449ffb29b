package aotautograd_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/internal/testcases"
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
		t.Fatalf("aotautograd tests: no Python interpreter with torch at %s (%v); install Debian's python3-torch or set PTGO_PYTHON", p, err)
	}
	return p
}

// gradCase is a recorded case of testdata/cases.json: a torch-level graph (internal/testcases'
// format) with eager torch's gradients.
type gradCase struct {
	testcases.Case
	RequiresGrad []bool                       `json:"requires_grad"`
	Tangents     []*testcases.Tensor          `json:"tangents"`
	Grads        map[string]*testcases.Tensor `json:"grads"`
	NotDiff      bool                         `json:"notdiff"`
}

var (
	casesOnce sync.Once
	cases     []gradCase
	casesErr  error
)

// loadCases reads testdata/cases.json, regenerating it first with -update.
func loadCases(t *testing.T) []gradCase {
	t.Helper()
	casesOnce.Do(func() {
		path := filepath.Join("testdata", "cases.json")
		if *update {
			cmd := exec.Command(pythonPath(t), filepath.Join("testdata", "gen_cases.py"), path)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Run(); err != nil {
				casesErr = fmt.Errorf("gen_cases.py failed: %v\n%s", err, errb.String())
				return
			}
			t.Log(strings.TrimSpace(errb.String()))
		}
		data, err := os.ReadFile(path)
		if err != nil {
			casesErr = fmt.Errorf("%v; regenerate with go test ./aotautograd -update", err)
			return
		}
		casesErr = decodeJSON(data, &cases)
	})
	require.NoError(t, casesErr)
	require.NotEmpty(t, cases)
	return cases
}

// refTensor rebuilds a recorded input (its storage and exact layout) as a ref tensor.
func refTensor(t *testing.T, j testcases.Tensor) *ref.Tensor {
	t.Helper()
	dt, err := testcases.ParseDType(j.DType)
	require.NoError(t, err)
	f, n, err := j.Storage()
	require.NoError(t, err)
	var data any = n
	if f != nil {
		data = f
	}
	r, err := ref.FromStorage(dt, j.Shape, j.Strides, j.Offset, data)
	require.NoError(t, err)
	return r
}

func result(r *ref.Tensor) *testcases.Result {
	if r == nil {
		return nil
	}
	res := &testcases.Result{DType: r.DType, Shape: r.Shape, Strides: r.Strides}
	if r.DType.IsFloatingPoint() {
		res.F = r.Floats()
	} else {
		res.I = r.Ints()
	}
	return res
}

// gradTolerance widens float32 comparisons of gradients: eager torch and ptgo's formulas
// round differently (torch's fused backward kernels, different summation orders).
func compareGrad(got *testcases.Result, want testcases.Tensor) string {
	if got != nil && got.DType == primtorch.Float32 {
		// Compare in float64 with a float32-gradient tolerance of 1e-4 relative + absolute.
		return compareLoose(got, want, 1e-4)
	}
	return testcases.Compare(got, want, testcases.NoStrides, true)
}

func compareLoose(got *testcases.Result, want testcases.Tensor, tol float64) string {
	if d := testcases.Compare(got, testcases.Tensor{DType: want.DType, Shape: want.Shape}, testcases.NoStrides, false); d != "" {
		return d
	}
	if len(want.Values) != len(got.F) {
		return fmt.Sprintf("torch recorded %d values for %d elements", len(want.Values), len(got.F))
	}
	for k, w := range want.Values {
		wv, g := testcases.Number(w), got.F[k]
		if wv != wv || g != g {
			if (wv != wv) != (g != g) {
				return fmt.Sprintf("element %d: got %v, torch gives %v", k, g, wv)
			}
			continue
		}
		if d := g - wv; d > tol*(1+abs(wv)) || -d > tol*(1+abs(wv)) {
			return fmt.Sprintf("element %d: got %v, torch gives %v (tolerance %g·(1+|x|))\n  got   %v\n  torch %v", k, g, wv, tol, got.F, want.Values)
		}
	}
	return ""
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// build returns the case's torch-level graph with the requires_grad flags the capture stage
// would record (inputs as the case marks them, results as the registry says), and the prims
// graph.
func build(c *gradCase) (*fxgraph.Graph, *fxgraph.Graph, error) {
	g, ops, err := c.Build()
	if err != nil {
		return nil, nil, err
	}
	k, opIdx := 0, 0
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			n.TensorMeta().RequiresGrad = c.RequiresGrad[k]
			k++
		case fxgraph.CallFunction, fxgraph.CallMethod:
			if src, ok := n.Args[0].(*fxgraph.Node); ok && n.Target == "operator.getitem" && isTuple(src.Meta) {
				continue // an item of a tuple result: set with the tuple
			}
			var ins []*primtorch.TensorMeta
			for _, in := range n.Inputs() {
				if m := in.TensorMeta(); m != nil {
					ins = append(ins, m)
				} else if tup, ok := in.Meta.([]any); ok {
					for _, e := range tup {
						if m, ok := e.(*primtorch.TensorMeta); ok {
							ins = append(ins, m)
						}
					}
				}
			}
			op := ops[opIdx]
			opIdx++
			setRG(n.Meta, ins, op)
		}
	}
	pg, err := decomp.Decompose(g, decomp.Options{Check: true})
	return g, pg, err
}

func isTuple(m any) bool {
	_, ok := m.([]any)
	return ok
}

func setRG(m any, ins []*primtorch.TensorMeta, op *primtorch.Op) {
	switch v := m.(type) {
	case *primtorch.TensorMeta:
		v.RequiresGrad = primtorch.ResultRequiresGrad(true, ins, v, op)
	case []any:
		for _, e := range v {
			setRG(e, ins, op)
		}
	}
}

// ran is one case split and run with the reference interpreter.
type ran struct {
	split    *aotautograd.Graphs
	outs     []*ref.Tensor // the user outputs
	grads    []*ref.Tensor // one per input (nil: None)
	attrs    map[string]*ref.Tensor
	fallback bool // a graph has a prims.fallback: the reference interpreter cannot run it
}

// inputs returns the case's input tensors and buffers.
func inputs(t *testing.T, c *gradCase) ([]*ref.Tensor, map[string]*ref.Tensor) {
	ins := make([]*ref.Tensor, len(c.Inputs))
	for i, in := range c.Inputs {
		ins[i] = refTensor(t, in)
	}
	attrs := map[string]*ref.Tensor{}
	for _, at := range c.Attrs {
		attrs[at.Name] = refTensor(t, at)
	}
	return ins, attrs
}

// runCase splits the case's prims graph and runs forward then backward with the reference
// interpreter.
func runCase(t *testing.T, c *gradCase, opts aotautograd.Options) (*ran, string) {
	_, pg, err := build(c)
	if err != nil {
		return nil, "build/Decompose: " + err.Error()
	}
	s, err := aotautograd.Split(pg, c.RequiresGrad, opts)
	if err != nil {
		return nil, fmt.Sprintf("Split: %v\n%s", err, pg)
	}
	r := &ran{split: s}
	if strings.Contains(s.Forward.String(), "prims.fallback") || strings.Contains(s.Backward.String(), "prims.fallback") {
		r.fallback = true
		return r, ""
	}
	ins, attrs := inputs(t, c)
	r.attrs = attrs
	fw, err := ref.Run(s.Forward, ins, attrs)
	if err != nil {
		return nil, fmt.Sprintf("forward: %v\n%s", err, s.Forward)
	}
	r.outs = fw[:s.NumOutputs]
	bwIns := append([]*ref.Tensor(nil), fw[s.NumOutputs:]...)
	for _, k := range s.Tangents {
		tg := c.Tangents[k]
		if tg == nil {
			return nil, fmt.Sprintf("output %d has a tangent, but torch's output does not require grad\n%s", k, s.Forward)
		}
		bwIns = append(bwIns, refTensor(t, *tg))
	}
	r.grads, err = ref.Run(s.Backward, bwIns, nil)
	if err != nil {
		return nil, fmt.Sprintf("backward: %v\n%s", err, s.Backward)
	}
	return r, ""
}

// check compares a run with torch: outputs, buffers after the call, gradients.
func check(c *gradCase, r *ran) string {
	if len(r.outs) != len(c.Expect) {
		return fmt.Sprintf("%d outputs, torch gives %d", len(r.outs), len(c.Expect))
	}
	for i, w := range c.Expect {
		if d := testcases.Compare(result(r.outs[i]), w, testcases.NoStrides, true); d != "" {
			return fmt.Sprintf("output %d: %s", i, d)
		}
	}
	for _, at := range c.Attrs {
		if d := testcases.Compare(result(r.attrs[at.Name]), c.After[at.Name], testcases.NoStrides, true); d != "" {
			return fmt.Sprintf("buffer %s after the call: %s", at.Name, d)
		}
	}
	nTangents := 0
	for _, tg := range c.Tangents {
		if tg != nil {
			nTangents++
		}
	}
	if nTangents != len(r.split.Tangents) {
		return fmt.Sprintf("%d tangents, torch has %d outputs that require grad", len(r.split.Tangents), nTangents)
	}
	for i, in := range c.Inputs {
		want, rg := c.Grads[in.Name]
		got := r.grads[i]
		switch {
		case !rg && got != nil:
			return fmt.Sprintf("input %s does not require grad but gets a gradient", in.Name)
		case rg && want == nil && got != nil:
			return fmt.Sprintf("input %s: got a gradient, torch gives None", in.Name)
		case rg && want != nil && got == nil:
			return fmt.Sprintf("input %s: got None, torch gives a gradient", in.Name)
		case rg && want != nil:
			if d := compareGrad(result(got), *want); d != "" {
				return fmt.Sprintf("gradient of %s: %s", in.Name, d)
			}
		}
	}
	return ""
}
