package decomp_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

var update = flag.Bool("update", false, "regenerate testdata/cases_<torch version>.json with testdata/gen_cases.py (the PTGO_PYTHON torch) and rewrite golden graphs")

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

// jsonCase is a recorded case (internal/testcases loads the file and builds the graphs; the
// inductor conformance suite uses the same cases).
type jsonCase struct{ testcases.Case }

func (c *jsonCase) name() string { return c.Name() }

// loadCases reads testdata/cases_1_13.json (the torch the tests model by default),
// regenerating the running Python torch's file first with -update.
func loadCases(t *testing.T) []jsonCase {
	t.Helper()
	regenerateCases(t)
	loaded, err := testcases.Load(testcases.DefaultPath())
	require.NoError(t, err)
	return asJSONCases(loaded)
}

func regenerateCases(t *testing.T) {
	t.Helper()
	if *update && !regenerated {
		regenerated = true
		cmd := exec.Command(pythonPath(t), filepath.Join("testdata", "gen_cases.py"), "testdata")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		require.NoError(t, cmd.Run(), "gen_cases.py failed:\n%s", errb.String())
		t.Log(strings.SplitN(errb.String(), "\n", 2)[0])
	}
}

func asJSONCases(loaded []testcases.Case) []jsonCase {
	cases := make([]jsonCase, len(loaded))
	for i, c := range loaded {
		cases[i] = jsonCase{c}
	}
	return cases
}

// forEachTorch runs fn per recorded torch version (testcases.ForEachTorch).
func forEachTorch(t *testing.T, fn func(t *testing.T, v primtorch.TorchVersion, cases []jsonCase)) {
	regenerateCases(t)
	testcases.ForEachTorch(t, func(t *testing.T, v primtorch.TorchVersion, loaded []testcases.Case) {
		fn(t, v, asJSONCases(loaded))
	})
}

// refTensor rebuilds a recorded input (its whole storage and exact layout) as a ref tensor.
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

// addNode appends a torch-level call with the meta the op registry computes (as the capture
// stage does) and returns it with the overload its arguments select. "Tensor.x" targets are
// call_method nodes.
func addNode(t *testing.T, g *fxgraph.Graph, target string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg) (*fxgraph.Node, *primtorch.Op) {
	t.Helper()
	n, op, err := testcases.AddNode(g, target, args, kwargs)
	require.NoError(t, err)
	return n, op
}

// build returns the case's torch-level graph and the ops its calls resolve to.
func build(t *testing.T, c *jsonCase) (*fxgraph.Graph, []*primtorch.Op) {
	t.Helper()
	g, ops, err := c.Build()
	require.NoError(t, err)
	return g, ops
}

// result converts a ref tensor for testcases.Compare.
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

// compare returns "" when got matches torch's tensor want (dtype, shape, strides, values within
// tolerance, NaN where torch has NaN).
func compare(got *ref.Tensor, want testcases.Tensor, checkStrides, checkValues bool) string {
	strides := testcases.NoStrides
	if checkStrides {
		strides = testcases.AllStrides
	}
	return testcases.Compare(result(got), want, strides, checkValues)
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
	if c.Fallback || reducedFloatCase(c, ops) {
		if !hasFallback {
			return "the case expects a prims.fallback:\n" + pg.String(), ops
		}
		return "", nil // the fallback op is not covered by this case
	}
	inputs := make([]*ref.Tensor, len(c.Inputs))
	for i, in := range c.Inputs {
		inputs[i] = refTensor(t, in)
	}
	attrs := map[string]*ref.Tensor{}
	for _, at := range c.Attrs {
		attrs[at.Name] = refTensor(t, at)
	}
	outs, err := ref.Run(pg, inputs, attrs)
	if err != nil {
		return fmt.Sprintf("Run: %v\n%s", err, pg), ops
	}
	if len(outs) != len(c.Expect) {
		return fmt.Sprintf("%d outputs, torch gives %d\n%s", len(outs), len(c.Expect), pg), ops
	}
	for i, w := range c.Expect {
		if d := compare(outs[i], w, true, !c.NoValues); d != "" {
			return fmt.Sprintf("output %d: %s\n%s\n%s", i, d, g, pg), ops
		}
	}
	for i, in := range c.Inputs {
		if d := compare(inputs[i], c.After[in.Name], false, true); d != "" {
			return fmt.Sprintf("input %s after the call: %s\n%s", in.Name, d, pg), ops
		}
	}
	for _, at := range c.Attrs {
		if d := compare(attrs[at.Name], c.After[at.Name], false, true); d != "" {
			return fmt.Sprintf("buffer %s after the call: %s\n%s", at.Name, d, pg), ops
		}
	}
	return "", ops
}

// TestAgainstTorch decomposes every recorded case, runs it with the reference interpreter and
// compares values, dtypes, shapes and strides (and written inputs and buffers) with eager torch.
func TestAgainstTorch(t *testing.T) {
	forEachTorch(t, testAgainstTorch)
}

func testAgainstTorch(t *testing.T, _ primtorch.TorchVersion, cases []jsonCase) {
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
var goldenExempt = map[string]string{
	// its decomposition is ptgo's draw of torch's stream (a prims.fallback the reference
	// interpreter cannot run, and which Go tests, not probing torch, leave off): its cases are
	// fallback cases here; tests/test_random_fill.py compares it with eager bit for bit
	"bernoulli_.float": "draws from torch's generator",
}

// TestGoldenCoverage fails for every op with a decomposition that no passing case exercises,
// per recorded torch (ops a torch does not have, Op.Since, need none there).
func TestGoldenCoverage(t *testing.T) {
	forEachTorch(t, testGoldenCoverage)
}

func testGoldenCoverage(t *testing.T, v primtorch.TorchVersion, cases []jsonCase) {
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
		if op.DecompStatus() != "decomposed" || !op.InTorch(v) {
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

// reducedFloatCase reports a case whose call stays torch's for its 16-bit float operands or
// results (decomp.ReducedFloatTorchCalls, for the case file's torch).
func reducedFloatCase(c *jsonCase, ops []*primtorch.Op) bool {
	listed := decomp.ReducedFloatTorchCalls()
	named := false
	for _, op := range ops {
		named = named || listed[op.Schema.Name]
	}
	if !named {
		return false
	}
	for _, ts := range [][]testcases.Tensor{c.Inputs, c.Expect} {
		for _, in := range ts {
			if in.DType == "f16" || in.DType == "bf16" {
				return true
			}
		}
	}
	return false
}
