package inductor

import (
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// symTorchScript runs symbolic plans in the C++ runtime (ptgo._fast.Graph over at::Tensors):
// each case's one plan at every size, against torch's own ops, then the symbolic plan against
// the static plan compiled at the same size (best of several timed runs).
const symTorchScript = `
import json, sys, time
import torch
from ptgo import _fast
from ptgo._runtime import _decode_plan

cases = json.load(open(sys.argv[1]))
torch.manual_seed(0)

def ref(name, ins, v):
    n = v[0]
    if name == "softmax_symbolic_rows":
        return [torch.softmax(ins[0], 1)]
    if name == "mm_symbolic_mk":
        x, w, b = ins
        mm = x @ w
        return [mm, torch.tanh(torch.addmm(b, x, w)), mm @ w.t()]
    if name == "transpose_symbolic":
        x, y = ins
        a = x.t() + y
        return [a, x.t(), torch.exp(a.t()), -y.unsqueeze(1), x[:, 0:1] * 2]
    if name == "embedding_index":
        wt, idx, x, sel = ins
        return [torch.tanh(wt[idx]), x[:, sel]]
    if name == "mm_chain":
        x, w1, w2, w3, w4 = ins
        ta = torch.tanh(x @ w1 - x @ w3)
        return [torch.tanh(torch.tanh(ta @ w2) @ w3) @ w4]
    if name == "pointwise_broadcast":
        x, b = ins
        return [torch.tanh(x * torch.exp(b)) + 1.5]
    if name == "softmax_rows":
        return [torch.softmax(ins[0], 1)]
    if name == "sum_dim0_and_mean":
        x = ins[0]
        return [x.sum(0), x.sum(0) / n, x.amax(0), x.sum()]
    if name == "mm_addmm":
        x, w, b, y = ins
        return [x @ w, torch.addmm(b, x, w) + y]
    raise KeyError(name)

def shapes(name, v):
    n = v[0]
    if name in ("softmax_symbolic_rows", "transpose_symbolic", "mm_symbolic_mk"):
        m = v[1]
        return {"softmax_symbolic_rows": [(n, m)], "transpose_symbolic": [(n, m), (m, n)],
                "mm_symbolic_mk": [(n, m), (m, 24), (24,)]}[name]
    return {"pointwise_broadcast": [(n, 64), (64,)], "softmax_rows": [(n, 40)], "sum_dim0_and_mean": [(n, 300)],
            "mm_addmm": [(n, 32), (32, 16), (16,), (n, 16)],
            "mm_chain": [(n, 16), (16, 32), (32, 16), (16, 32), (32, 8)]}[name]

def make(name, v):
    if name == "embedding_index":
        return [torch.randn(50, 8), torch.randint(-50, 50, (v[0], v[1])), torch.randn(v[0], 6), torch.randint(-6, 6, (4,))]
    return [torch.randn(*s) for s in shapes(name, v)]

def graph(plan_json, lib):
    plan, externs = _decode_plan(plan_json)
    return _fast.Graph(plan, lib, externs, [], None)

def best(f, reps=30):
    f()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); t.append(time.perf_counter() - t0)
    return min(t)

out = {}
with torch.no_grad():
    for c in cases:
        g = graph(c["plan"], c["lib"])
        for v in c["sizes"]:
            ins = make(c["name"], v)
            got = g(*ins)
            want = ref(c["name"], ins, v)
            assert len(got) == len(want), c["name"]
            for a, b in zip(got, want):
                assert a.shape == b.shape, (c["name"], v, a.shape, b.shape)
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
            for a, b in zip(g(*ins), want):  # again: recycled outputs, same sizes
                torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
        for n, st in c["static"].items():
            s = graph(st["plan"], st["lib"])
            ins = make(c["name"], [int(x) for x in n.split("x")])
            for a, b in zip(g(*ins), s(*ins)):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
            out[c["name"] + "@" + n] = {"symbolic_us": best(lambda: g(*ins)) * 1e6, "static_us": best(lambda: s(*ins)) * 1e6}
        try:
            g(*make(c["name"], [1] * 2))
            raise AssertionError("a size 1 for a symbol must be refused")
        except ValueError as e:
            assert ">= 2" in str(e), e
print(json.dumps(out))
`

// TestSymbolicTorchRuntime compiles symbolic graphs once and runs their plans in the C++
// runtime at several sizes (skipped without the repository's .venv: make setup-113).
func TestSymbolicTorchRuntime(t *testing.T) {
	py, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		t.Skip("no .venv (make setup-113)")
	}
	if err := exec.Command(py, "-c", "import ptgo._fast").Run(); err != nil {
		t.Skip("ptgo._fast is not built")
	}
	type staticPlan struct {
		Plan string `json:"plan"`
		Lib  string `json:"lib"`
	}
	type pyCase struct {
		Name   string                `json:"name"`
		Plan   string                `json:"plan"`
		Lib    string                `json:"lib"`
		Sizes  [][]int64             `json:"sizes"`
		Static map[string]staticPlan `json:"static"`
	}
	var cases []pyCase
	for _, sc := range symCases {
		var timed [][]int64
		switch sc.name {
		case "pointwise_broadcast", "softmax_rows", "sum_dim0_and_mean", "mm_addmm", "mm_chain":
			timed = [][]int64{{17}, {1000}, {20000}}
		case "softmax_symbolic_rows", "transpose_symbolic", "mm_symbolic_mk", "embedding_index":
			timed = [][]int64{{17, 40}, {1000, 128}, {256, 4096}}
		default:
			continue
		}
		c := compileGraph(t, parseGraph(t, sc.text), Options{})
		js, err := c.Program.JSON()
		require.NoError(t, err)
		pc := pyCase{Name: sc.name, Plan: string(js), Lib: c.Library.Path, Sizes: sc.vals, Static: map[string]staticPlan{}}
		for _, n := range timed {
			s := compileGraph(t, staticAt(t, sc.text, n), Options{})
			sj, err := s.Program.JSON()
			require.NoError(t, err)
			key := ""
			for i, x := range n {
				if i > 0 {
					key += "x"
				}
				key += strconv.FormatInt(x, 10)
			}
			pc.Static[key] = staticPlan{Plan: string(sj), Lib: s.Library.Path}
		}
		cases = append(cases, pc)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "cases.json")
	data, err := json.Marshal(cases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	script := filepath.Join(dir, "run.py")
	require.NoError(t, os.WriteFile(script, []byte(symTorchScript), 0o644))
	cmd := exec.Command(py, script, in)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("symbolic vs static plan, best of 30, 1 thread: %s", out)
}

// symFuzzTorchScript runs random symbolic graphs' plans in the C++ runtime on given inputs and
// compares with the reference interpreter's results (computed in Go at the same sizes).
const symFuzzTorchScript = `
import json, sys
import torch
from ptgo import _fast
from ptgo._runtime import _decode_plan

cases = json.load(open(sys.argv[1]))
with torch.no_grad():
    for c in cases:
        plan, externs = _decode_plan(c["plan"])
        g = _fast.Graph(plan, c["lib"], externs, [], None)
        for run in c["runs"]:
            ins = [torch.tensor(x["data"], dtype=torch.float32).reshape(x["shape"]) for x in run["inputs"]]
            got = g(*ins)
            assert len(got) == len(run["outputs"]), c["seed"]
            for k, (a, w) in enumerate(zip(got, run["outputs"])):
                want = torch.tensor(w["data"], dtype=torch.float32).reshape(w["shape"])
                assert list(a.shape) == list(want.shape), (c["seed"], run["vals"], k, a.shape, want.shape)
                torch.testing.assert_close(a, want, rtol=1e-4, atol=1e-4, msg=lambda m: "seed %s at %s, output %d: %s" % (c["seed"], run["vals"], k, m))
print("ok", len(cases))
`

// TestSymbolicFuzzTorchRuntime: the random symbolic graphs of TestSymbolicFuzz, each plan run
// by the C++ runtime at several symbol values in turn (growing and shrinking its dynamic
// arena), against the reference interpreter.
func TestSymbolicFuzzTorchRuntime(t *testing.T) {
	py, err := filepath.Abs(filepath.Join("..", ".venv", "bin", "python"))
	require.NoError(t, err)
	if _, err := os.Stat(py); err != nil {
		t.Skip("no .venv (make setup-113)")
	}
	if err := exec.Command(py, "-c", "import ptgo._fast").Run(); err != nil {
		t.Skip("ptgo._fast is not built")
	}
	type arr struct {
		Shape []int64   `json:"shape"`
		Data  []float64 `json:"data"`
	}
	type run struct {
		Vals    []int64 `json:"vals"`
		Inputs  []arr   `json:"inputs"`
		Outputs []arr   `json:"outputs"`
	}
	type fcase struct {
		Seed int64  `json:"seed"`
		Plan string `json:"plan"`
		Lib  string `json:"lib"`
		Runs []run  `json:"runs"`
	}
	var cases []fcase
	for seed := int64(1); seed <= 40; seed++ {
		text := symFuzzGraph(rand.New(rand.NewSource(seed)))
		c := compileGraph(t, parseGraph(t, text), Options{})
		if c.Library == nil {
			continue
		}
		js, err := c.Program.JSON()
		require.NoError(t, err)
		fc := fcase{Seed: seed, Plan: string(js), Lib: c.Library.Path}
		for _, vals := range [][]int64{{33, 17}, {2, 3}, {7, 40}, {2, 3}} {
			sg := staticAt(t, text, vals)
			inputs := randomInputs(sg, rand.New(rand.NewSource(seed)))
			want, err := refEval(sg, cloneTensors(inputs))
			require.NoError(t, err)
			r := run{Vals: vals}
			for _, in := range inputs {
				a := arr{Shape: in.Sizes, Data: []float64{}}
				for k := int64(0); k < in.Numel(); k++ {
					a.Data = append(a.Data, in.At(k))
				}
				r.Inputs = append(r.Inputs, a)
			}
			for _, w := range want {
				r.Outputs = append(r.Outputs, arr{Shape: append([]int64{}, w.shape...), Data: append([]float64{}, w.f...)})
			}
			fc.Runs = append(fc.Runs, r)
		}
		cases = append(cases, fc)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "cases.json")
	data, err := json.Marshal(cases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(in, data, 0o644))
	script := filepath.Join(dir, "run.py")
	require.NoError(t, os.WriteFile(script, []byte(symFuzzTorchScript), 0o644))
	out, err := exec.Command(py, script, in).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "ok")
}
