package inductor

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// The ops table's C renderings against eager torch 1.13, on special values (signed zeros,
// halves, infinities, NaN, negative integers, large shifts): one compiled graph per dtype with
// every op as an output; torch computes the expected values (PTGO_PYTHON, else /usr/bin/python3).

var opsFloatA = []float64{0, math.Copysign(0, -1), 1.5, -1.5, 2.5, -2.5, 0.5, 3, -7.25, 1e-3, 100, math.Inf(1), math.Inf(-1), math.NaN()}
var opsFloatB = []float64{3, 2, -2, 0.25, 0.5, -4, 2.5, -3, 2, 7, -0.5, 2, math.NaN(), 1}
var opsIntA = []int64{0, 1, -1, 7, -7, 5, -5, 100, -100, 1 << 40, 3, -3, 9, -9}
var opsInt32A = []int64{0, 1, -1, 7, -7, 5, -5, 100, -100, 1 << 20, 3, -3, 9, -9}

func intInputs(dt primtorch.DType) []int64 {
	if dt == primtorch.Int32 {
		return opsInt32A
	}
	return opsIntA
}

var opsIntB = []int64{3, -3, 2, -2, 3, 2, -2, 7, 7, 1, 64, 70, 5, -4}

// torchOps maps a prims op to the torch expression computing it from a and b.
var torchOps = map[string]string{
	"abs": "torch.abs(a)", "neg": "torch.neg(a)", "exp": "torch.exp(a)", "exp2": "torch.exp2(a)", "expm1": "torch.expm1(a)",
	"log": "torch.log(a)", "log1p": "torch.log1p(a)", "log2": "torch.log2(a)", "log10": "torch.log10(a)", "sqrt": "torch.sqrt(a)",
	"rsqrt": "torch.rsqrt(a)", "sin": "torch.sin(a)", "cos": "torch.cos(a)", "tan": "torch.tan(a)", "asin": "torch.asin(a)",
	"acos": "torch.acos(a)", "atan": "torch.atan(a)", "sinh": "torch.sinh(a)", "cosh": "torch.cosh(a)", "tanh": "torch.tanh(a)",
	"sigmoid": "torch.sigmoid(a)", "erf": "torch.erf(a)", "erfc": "torch.erfc(a)", "floor": "torch.floor(a)", "ceil": "torch.ceil(a)",
	"round": "torch.round(a)", "trunc": "torch.trunc(a)", "sign": "torch.sign(a)", "reciprocal": "torch.reciprocal(a)",
	"bitwise_not": "torch.bitwise_not(a)", "logical_not": "torch.logical_not(a)", "isnan": "torch.isnan(a)",
	"isinf": "torch.isinf(a)", "isfinite": "torch.isfinite(a)",
	"add": "torch.add(a, b)", "sub": "torch.sub(a, b)", "mul": "torch.mul(a, b)",
	"div":      "(torch.div(a, b) if a.is_floating_point() else torch.div(a, b, rounding_mode='trunc'))",
	"floordiv": "torch.div(a, b, rounding_mode='floor')", "remainder": "torch.remainder(a, b)", "fmod": "torch.fmod(a, b)",
	"pow": "torch.pow(a, b)", "maximum": "torch.maximum(a, b)", "minimum": "torch.minimum(a, b)", "atan2": "torch.atan2(a, b)",
	"hypot": "torch.hypot(a, b)", "copysign": "torch.copysign(a, b)", "bitwise_and": "torch.bitwise_and(a, b)",
	"bitwise_or": "torch.bitwise_or(a, b)", "bitwise_xor": "torch.bitwise_xor(a, b)",
	"shift_left": "torch.bitwise_left_shift(a, b)", "shift_right": "torch.bitwise_right_shift(a, b)",
	"eq": "torch.eq(a, b)", "ne": "torch.ne(a, b)", "lt": "torch.lt(a, b)", "le": "torch.le(a, b)", "gt": "torch.gt(a, b)",
	"ge": "torch.ge(a, b)", "logical_and": "torch.logical_and(a, b)", "logical_or": "torch.logical_or(a, b)",
	"logical_xor": "torch.logical_xor(a, b)", "where": "torch.where(a > b, a, b)",
}

// opsFor lists the ops that apply to dtype dt (torch would promote integers for the rest).
func opsFor(dt primtorch.DType) []string {
	intOnly := map[string]bool{"bitwise_not": true, "bitwise_and": true, "bitwise_or": true, "bitwise_xor": true, "shift_left": true, "shift_right": true}
	floatOnly := map[string]bool{}
	for _, op := range []string{"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "asin",
		"acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc", "reciprocal", "atan2", "hypot", "copysign", "isnan", "isinf", "isfinite"} {
		floatOnly[op] = true
	}
	var out []string
	for op := range torchOps {
		if (dt.IsFloatingPoint() && intOnly[op]) || (!dt.IsFloatingPoint() && floatOnly[op]) {
			continue
		}
		out = append(out, op)
	}
	sortStrings(out)
	return out
}

func sortStrings(xs []string) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

func pythonForTests(t *testing.T) string {
	t.Helper()
	py := os.Getenv("PTGO_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("this test needs Python with torch 1.13 as the oracle: %s not found; set PTGO_PYTHON", py)
	}
	return py
}

// torchResults evaluates every op with torch and returns op -> values (floats as Python reprs).
func torchResults(t *testing.T, dt primtorch.DType, ops []string) map[string][]string {
	t.Helper()
	var a, b string
	if dt.IsFloatingPoint() {
		a, b = pyFloats(opsFloatA), pyFloats(opsFloatB)
	} else {
		a, b = fmt.Sprint(intInputs(dt)), fmt.Sprint(opsIntB)
		a, b = strings.ReplaceAll(a, " ", ", "), strings.ReplaceAll(b, " ", ", ")
	}
	var script strings.Builder
	script.WriteString("import torch, json\n")
	fmt.Fprintf(&script, "a = torch.tensor(%s, dtype=%s)\nb = torch.tensor(%s, dtype=%s)\nout = {}\n", a, dt.TorchName(), b, dt.TorchName())
	for _, op := range ops {
		fmt.Fprintf(&script, "out[%q] = [repr(float(v)) if r.is_floating_point() else str(int(v)) for r in [%s] for v in r.tolist()]\n", op, torchOps[op])
	}
	script.WriteString("print(json.dumps(out))\n")
	cmd := exec.Command(pythonForTests(t), "-c", script.String())
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "torch oracle failed:\n%s", outb)
	var res map[string][]string
	require.NoError(t, json.Unmarshal(outb, &res), "%s", outb)
	return res
}

func pyFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		switch {
		case math.IsNaN(x):
			parts[i] = "float('nan')"
		case math.IsInf(x, 1):
			parts[i] = "float('inf')"
		case math.IsInf(x, -1):
			parts[i] = "float('-inf')"
		case x == 0 && math.Signbit(x):
			parts[i] = "-0.0"
		default:
			parts[i] = fmt.Sprint(x)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func TestOpsAgainstTorch(t *testing.T) {
	for _, dt := range []primtorch.DType{primtorch.Float32, primtorch.Float64, primtorch.Int64, primtorch.Int32} {
		t.Run(dt.String(), func(t *testing.T) {
			ops := opsFor(dt)
			want := torchResults(t, dt, ops)
			n := len(opsIntA)
			var src strings.Builder
			fmt.Fprintf(&src, "graph ops(a: %s[%d], b: %s[%d]):\n", dt, n, dt, n)
			var outs []string
			for _, op := range ops {
				info := opTable[op]
				out := dt.String()
				if info.boolOut {
					out = "b8"
				}
				switch {
				case op == "where":
					fmt.Fprintf(&src, "  %%c_where : b8[%d] = prims.gt(%%a, %%b)\n", n)
					fmt.Fprintf(&src, "  %%r_where : %s[%d] = prims.where(%%c_where, %%a, %%b)\n", out, n)
				case info.arity == 1:
					fmt.Fprintf(&src, "  %%r_%s : %s[%d] = prims.%s(%%a)\n", op, out, n, op)
				default:
					fmt.Fprintf(&src, "  %%r_%s : %s[%d] = prims.%s(%%a, %%b)\n", op, out, n, op)
				}
				outs = append(outs, "%r_"+op)
			}
			fmt.Fprintf(&src, "  return (%s)\n", strings.Join(outs, ", "))
			g := parseGraph(t, src.String())
			c := compileGraph(t, g, Options{})
			var inputs []*Tensor
			if dt.IsFloatingPoint() {
				inputs = []*Tensor{FromValues(dt, []int64{int64(n)}, opsFloatA), FromValues(dt, []int64{int64(n)}, opsFloatB)}
			} else {
				a, b := NewTensor(dt, []int64{int64(n)}), NewTensor(dt, []int64{int64(n)})
				for k := range opsIntA {
					a.SetInt(int64(k), intInputs(dt)[k])
					b.SetInt(int64(k), opsIntB[k])
				}
				inputs = []*Tensor{a, b}
			}
			got, err := c.Run(inputs, 1)
			require.NoError(t, err)
			// the reference evaluator must agree with torch too
			ref, err := refEval(g, inputs)
			require.NoError(t, err)
			for i, op := range ops {
				for k, ws := range want[op] {
					w, err := parsePyFloat(ws)
					require.NoError(t, err)
					res := got[i]
					if res.DType.IsFloatingPoint() {
						g := res.At(int64(k))
						require.True(t, opClose(g, w, res.DType), "%s(%v, %v) = %v, torch gives %v", op, inputs[0].At(int64(k)), inputs[1].At(int64(k)), g, w)
						require.True(t, opClose(ref[i].f[k], w, res.DType), "reference %s(%v, %v) = %v, torch gives %v", op, inputs[0].At(int64(k)), inputs[1].At(int64(k)), ref[i].f[k], w)
					} else {
						wi := int64(w)
						if !res.DType.IsFloatingPoint() && len(ws) > 15 {
							fmt.Sscan(ws, &wi)
						}
						require.Equal(t, wi, res.AtInt(int64(k)), "%s(%d, %d)", op, inputs[0].AtInt(int64(k)), inputs[1].AtInt(int64(k)))
						require.Equal(t, wi, ref[i].i[k], "reference %s(%d, %d)", op, inputs[0].AtInt(int64(k)), inputs[1].AtInt(int64(k)))
					}
				}
			}
		})
	}
}

// opClose: exact for special values, a few ulps of the dtype otherwise (libmvec is 4-ulp).
func opClose(got, want float64, dt primtorch.DType) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	if math.IsInf(want, 0) || want == 0 {
		return got == want && math.Signbit(got) == math.Signbit(want) || (want == 0 && math.Abs(got) < 1e-30)
	}
	tol := 4e-7
	if dt == primtorch.Float64 {
		tol = 1e-15
	}
	return math.Abs(got-want) <= tol*math.Abs(want)*4
}
