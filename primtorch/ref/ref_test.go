package ref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// TestEvalCoverage: every core op (but prims.fallback, which needs torch) has an evaluation,
// and torch-level ops have none.
func TestEvalCoverage(t *testing.T) {
	var missing, extra []string
	for _, op := range primtorch.Ops() {
		switch {
		case op.IsPrim() && op.ID != primtorch.OpPrimFallback && evals[op.ID] == nil:
			missing = append(missing, op.Name)
		case !op.IsPrim() && evals[op.ID] != nil:
			extra = append(extra, op.Name)
		}
	}
	require.Empty(t, missing, "core ops the reference interpreter cannot evaluate: add them to evals in primtorch/ref/eval.go")
	require.Empty(t, extra, "torch-level ops in evals (primtorch/ref/eval.go): ref runs prims graphs only")
	for id, fn := range floatUnary {
		require.NotNil(t, evals[id], "floatUnary has %s", id)
		require.NotNil(t, fn)
	}
}

type jsonT struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Strides []int64 `json:"strides"`
	Offset  int64   `json:"offset"`
	Storage []any   `json:"storage"`
	Values  []any   `json:"values"`
}

type primCase struct {
	Prim    string            `json:"prim"`
	Tag     string            `json:"tag"`
	Tensors []jsonT           `json:"tensors"`
	Args    []json.RawMessage `json:"args"`
	Out     jsonT             `json:"out"`
}

func num(v any) float64 {
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
	}
	return 0
}

func dtypeOf(t *testing.T, s string) primtorch.DType {
	d, ok := primtorch.ParseDType(s)
	require.True(t, ok, s)
	return d
}

func (j jsonT) tensor(t *testing.T) *Tensor {
	dt := dtypeOf(t, j.DType)
	f := make([]float64, len(j.Storage))
	for i, v := range j.Storage {
		f[i] = num(v)
	}
	var data any = f
	if !dt.IsFloatingPoint() {
		n := make([]int64, len(f))
		for i, v := range f {
			n[i] = int64(v)
		}
		data = n
	}
	r, err := FromStorage(dt, j.Shape, j.Strides, j.Offset, data)
	require.NoError(t, err)
	return r
}

// primGraph builds a one-node prims graph from a recorded case: its tensors become placeholders.
func primGraph(t *testing.T, c *primCase) (*fxgraph.Graph, []*Tensor) {
	g := fxgraph.New("prim")
	var ins []*Tensor
	var nodes []*fxgraph.Node
	for i, jt := range c.Tensors {
		tt := jt.tensor(t)
		ins = append(ins, tt)
		nodes = append(nodes, g.AddPlaceholder(fmt.Sprintf("t%d", i), tt.Meta()))
	}
	var conv func(v any) fxgraph.Arg
	conv = func(v any) fxgraph.Arg {
		switch x := v.(type) {
		case json.Number:
			if strings.ContainsAny(x.String(), ".eE") {
				f, _ := x.Float64()
				return fxgraph.Const{V: f}
			}
			i, _ := x.Int64()
			return fxgraph.Const{V: i}
		case []any:
			l := fxgraph.List{Elems: []fxgraph.Arg{}}
			for _, e := range x {
				l.Elems = append(l.Elems, conv(e))
			}
			return l
		case map[string]any:
			switch {
			case x["T"] != nil:
				i, _ := x["T"].(json.Number).Int64()
				return nodes[i]
			case x["f"] != nil:
				return fxgraph.Const{V: num(x["f"])}
			case x["dtype"] != nil:
				return fxgraph.Const{V: dtypeOf(t, x["dtype"].(string))}
			}
		}
		return fxgraph.Const{V: v}
	}
	args := make([]fxgraph.Arg, len(c.Args))
	vals := make([]primtorch.Value, len(c.Args))
	var toVal func(a fxgraph.Arg) primtorch.Value
	toVal = func(a fxgraph.Arg) primtorch.Value {
		switch x := a.(type) {
		case *fxgraph.Node:
			return x.Meta
		case fxgraph.Const:
			return x.V
		case fxgraph.List:
			out := make([]primtorch.Value, len(x.Elems))
			for i, e := range x.Elems {
				out[i] = toVal(e)
			}
			return out
		}
		return nil
	}
	for i, raw := range c.Args {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v))
		args[i] = conv(v)
		vals[i] = toVal(args[i])
	}
	meta, err := primtorch.Lookup(c.Prim).Meta(vals, nil)
	require.NoError(t, err, "%s[%s]", c.Prim, c.Tag)
	n := g.AddCall(c.Prim, args, nil, meta)
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{n}})
	return g, ins
}

// TestPrimValues runs every recorded prims call with the reference interpreter and compares
// its values with torch's (exact for integers and bools; floats within 1e-5 + 1e-5·|x| for
// float32, whose sums torch accumulates in another order, 1e-12 for float64).
func TestPrimValues(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "prim_cases.json"))
	require.NoError(t, err, "regenerate with go test ./primtorch -run TestPrimMeta -update")
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var cases []primCase
	require.NoError(t, dec.Decode(&cases))
	require.NotEmpty(t, cases)
	for i := range cases {
		c := &cases[i]
		g, ins := primGraph(t, c)
		outs, err := Run(g, ins, nil)
		require.NoError(t, err, "%s[%s]\n%s", c.Prim, c.Tag, g)
		got := outs[0]
		want := c.Out
		require.Equal(t, want.DType, got.DType.String(), "%s[%s]", c.Prim, c.Tag)
		require.Equal(t, fmt.Sprint(want.Shape), fmt.Sprint(got.Shape), "%s[%s]", c.Prim, c.Tag)
		gv := got.Floats()
		for k, w := range want.Values {
			wv := num(w)
			tol := 1e-5
			if got.DType == primtorch.Float64 {
				tol = 1e-12
			}
			ok := gv[k] == wv || (math.IsNaN(wv) && math.IsNaN(gv[k])) ||
				(got.DType.IsFloatingPoint() && math.Abs(gv[k]-wv) <= tol*(1+math.Abs(wv)))
			require.True(t, ok, "%s[%s] element %d: got %v, torch %v\n  got %v\n  torch %v", c.Prim, c.Tag, k, gv[k], wv, got, want.Values)
		}
	}
}

var roundTests = []struct {
	dt       primtorch.DType
	in, want float64
}{
	{primtorch.Float16, 1 + 0x1p-11, 1},            // a tie rounds to even
	{primtorch.Float16, 1 + 3*0x1p-11, 1 + 0x1p-9}, // a tie rounds to even (up)
	{primtorch.Float16, 65519, 65504},
	{primtorch.Float16, 65520, math.Inf(1)},
	{primtorch.Float16, 1e-8, 0},
	{primtorch.Float16, 3e-8, 0x1p-24},
	{primtorch.Float16, -0.1, -0.0999755859375},
	{primtorch.BFloat16, 1 + 0x1p-8, 1},
	{primtorch.BFloat16, 1 + 3*0x1p-8, 1 + 0x1p-6},
	{primtorch.BFloat16, 0.1, 0.10009765625},
	{primtorch.Float32, 0.1, float64(float32(0.1))},
}

func TestRounding(t *testing.T) {
	for _, tt := range roundTests {
		require.Equal(t, tt.want, roundFloat(tt.dt, tt.in), "%v(%v)", tt.dt, tt.in)
	}
	require.True(t, math.IsNaN(roundFloat(primtorch.BFloat16, math.NaN())))
	require.Equal(t, int64(-128), wrapInt(primtorch.Int8, 128))
	require.Equal(t, int64(255), wrapInt(primtorch.UInt8, -1))
	require.Equal(t, int64(-2), floatToInt(primtorch.Int32, -2.7))
	require.Equal(t, int64(1), floatToInt(primtorch.Bool, math.NaN()))
}

// floatToIntTests are torch 1.13's results of x.to(dtype) on this machine (x86) for values
// out of the target's range: int64 gives its minimum; int32 gives its minimum for anything out
// of int32's range (the evaluator used to wrap the int64 value: 3e9 became -1294967296, inf
// became 0); int16, int8 and uint8 convert through int32 and keep its low bits.
var floatToIntTests = []struct {
	dt   primtorch.DType
	vals []float64
	want []int64
}{
	{primtorch.Int64, []float64{math.Inf(1), math.NaN(), 1e10, -1e10, 3e9, 300.7, -200.5, 1e30},
		[]int64{math.MinInt64, math.MinInt64, 10000000000, -10000000000, 3000000000, 300, -200, math.MinInt64}},
	{primtorch.Int32, []float64{math.Inf(1), math.NaN(), 1e10, -1e10, 3e9, 300.7, -200.5, 2147483647.9},
		[]int64{math.MinInt32, math.MinInt32, math.MinInt32, math.MinInt32, math.MinInt32, 300, -200, math.MaxInt32}},
	{primtorch.Int16, []float64{math.Inf(1), math.NaN(), 1e10, -1e10, 3e9, 300.7, -200.5, 40000},
		[]int64{0, 0, 0, 0, 0, 300, -200, -25536}},
	{primtorch.Int8, []float64{math.Inf(1), math.NaN(), 1e10, -1e10, 3e9, 300.7, -200.5},
		[]int64{0, 0, 0, 0, 0, 44, 56}},
	{primtorch.UInt8, []float64{math.Inf(1), math.NaN(), 1e10, -1e10, 3e9, 300.7, -200.5},
		[]int64{0, 0, 0, 0, 0, 44, 56}},
}

func TestFloatToInt(t *testing.T) {
	for _, tt := range floatToIntTests {
		t.Run(tt.dt.String(), func(t *testing.T) {
			x := FromFloats(primtorch.Float32, []int64{int64(len(tt.vals))}, tt.vals)
			if tt.dt == primtorch.Int32 || tt.dt == primtorch.Int16 {
				x = FromFloats(primtorch.Float64, []int64{int64(len(tt.vals))}, tt.vals) // 2147483647.9, 40000 exactly
			}
			g := fxgraph.New("f")
			p := g.AddPlaceholder("x", x.Meta())
			n := g.AddCall("prims.convert_element_type", []fxgraph.Arg{p, fxgraph.Const{V: tt.dt}}, nil, primtorch.NewContiguous(tt.dt, x.Shape, primtorch.CPU))
			g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{n}})
			outs, err := Run(g, []*Tensor{x}, nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, outs[0].Ints())
		})
	}
}

// shiftTests are torch 1.13's results (this machine, x86) for shift counts at and past the bit
// width: the count's low 6 bits (int64) or 5 bits (narrower dtypes, promoted to int) are used.
// The evaluator used to give 0 (left) and the sign (right) for counts of 64 and more.
var shiftTests = []struct {
	op   string
	dt   primtorch.DType
	a, b []int64
	want []int64
}{
	{"prims.shift_left", primtorch.Int64, []int64{-9, -9, 3, 1}, []int64{64, 63, 65, 2}, []int64{-9, math.MinInt64, 6, 4}},
	{"prims.shift_right", primtorch.Int64, []int64{-9, -9, 1 << 40, 7}, []int64{64, 63, 65, 1}, []int64{-9, -1, 1 << 39, 3}},
	{"prims.shift_left", primtorch.Int32, []int64{-9, -9, -7}, []int64{40, 64, 63}, []int64{-2304, -9, math.MinInt32}},
	{"prims.shift_right", primtorch.Int32, []int64{-9, 1, 256}, []int64{64, 64, 36}, []int64{-9, 1, 16}},
	{"prims.shift_left", primtorch.Int8, []int64{-9, 1, 3}, []int64{64, 33, 7}, []int64{-9, 2, -128}},
	{"prims.shift_right", primtorch.UInt8, []int64{247, 255}, []int64{64, 33}, []int64{247, 127}},
}

func TestShifts(t *testing.T) {
	for _, tt := range shiftTests {
		t.Run(tt.op+"/"+tt.dt.String(), func(t *testing.T) {
			a, b := FromInts(tt.dt, []int64{int64(len(tt.a))}, tt.a), FromInts(tt.dt, []int64{int64(len(tt.b))}, tt.b)
			outs, err := Run(callGraph(t, tt.op, a, b), []*Tensor{a, b}, nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, outs[0].Ints())
		})
	}
}

func TestRunErrors(t *testing.T) {
	x := FromInts(primtorch.Int64, []int64{2}, []int64{4, 5})
	z := FromInts(primtorch.Int64, []int64{2}, []int64{2, 0})
	g := fxgraph.New("f")
	a, b := g.AddPlaceholder("a", x.Meta()), g.AddPlaceholder("b", z.Meta())
	n := g.AddCall("prims.floordiv", []fxgraph.Arg{a, b}, nil, x.Meta())
	n.Where = "model.py:3"
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{n}})
	_, err := Run(g, []*Tensor{x, z}, nil)
	require.ErrorContains(t, err, "node floordiv (model.py:3), prims.floordiv: ZeroDivisionError")

	_, err = Run(g, []*Tensor{x}, nil)
	require.ErrorContains(t, err, "more placeholders than the 1 inputs")
	_, err = Run(g, []*Tensor{x, FromFloats(primtorch.Float32, []int64{2}, []float64{1, 2})}, nil)
	require.ErrorContains(t, err, "input b is f32[2] but the graph expects i64[2]")

	g2 := fxgraph.New("f")
	w := g2.AddGetAttr("w", x.Meta())
	m := g2.AddMethod("relu", []fxgraph.Arg{w}, nil, x.Meta())
	g2.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{m}})
	_, err = Run(g2, nil, nil)
	require.ErrorContains(t, err, "no tensor for get_attr[w]")
	_, err = Run(g2, nil, map[string]*Tensor{"w": x})
	require.ErrorContains(t, err, "decompose the graph first")
}

// TestViewsShareStorage: views alias their input; their metas are checked against the node.
func TestViewsShareStorage(t *testing.T) {
	x := FromFloats(primtorch.Float32, []int64{2, 3}, []float64{0, 1, 2, 3, 4, 5})
	g := fxgraph.New("f")
	p := g.AddPlaceholder("x", x.Meta())
	meta, err := primtorch.Lookup("prims.permute").Meta([]primtorch.Value{p.Meta, []primtorch.Value{int64(1), int64(0)}}, nil)
	require.NoError(t, err)
	v := g.AddCall("prims.permute", []fxgraph.Arg{p, fxgraph.List{Elems: []fxgraph.Arg{fxgraph.Const{V: int64(1)}, fxgraph.Const{V: int64(0)}}}}, nil, meta)
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{v}})
	outs, err := Run(g, []*Tensor{x}, nil)
	require.NoError(t, err)
	require.True(t, outs[0].SameStorage(x))
	require.Equal(t, []float64{0, 3, 1, 4, 2, 5}, outs[0].Floats())
	require.Equal(t, "f32[3,2]{1,3}(0, 3, 1, 4, 2, 5)", outs[0].String())

	v.Meta.(*primtorch.TensorMeta).Strides = []int64{2, 1}
	_, err = Run(g, []*Tensor{x}, nil)
	require.ErrorContains(t, err, "view node permute has meta f32[3,2] but the view is f32[3,2]{1,3}")
}

func squareMatrix(n int) *Tensor {
	vals := make([]float64, n*n)
	for i := range vals {
		vals[i] = float64(i%7) - 3
	}
	return FromFloats(primtorch.Float32, []int64{int64(n), int64(n)}, vals)
}

func mmGraph(a, b *Tensor) *fxgraph.Graph {
	g := fxgraph.New("mm")
	x, y := g.AddPlaceholder("a", a.Meta()), g.AddPlaceholder("b", b.Meta())
	n := g.AddCall("prims.mm", []fxgraph.Arg{x, y}, nil, primtorch.NewContiguous(primtorch.Float32, []int64{a.Shape[0], b.Shape[1]}, primtorch.CPU))
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{n}})
	return g
}

func TestMm(t *testing.T) {
	a := FromFloats(primtorch.Float32, []int64{2, 3}, []float64{1, 2, 3, 4, 5, 6})
	b, err := FromStorage(primtorch.Float32, []int64{3, 2}, []int64{1, 3}, 0, []float64{1, 0, -1, 2, 1, 0})
	require.NoError(t, err)
	outs, err := Run(mmGraph(a, b), []*Tensor{a, b}, nil)
	require.NoError(t, err)
	require.Equal(t, []float64{-2, 4, -2, 13}, outs[0].Floats())
}

// BenchmarkMm256 reports the reference interpreter's 256x256 float32 mm (a report, not a
// timed assertion; it runs in tens of milliseconds here).
func BenchmarkMm256(b *testing.B) {
	x, y := squareMatrix(256), squareMatrix(256)
	g := mmGraph(x, y)
	for i := 0; i < b.N; i++ {
		if _, err := Run(g, []*Tensor{x, y}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRunTorchLevel(t *testing.T) {
	g := fxgraph.New("f")
	x := g.AddPlaceholder("x", primtorch.NewContiguous(primtorch.Int64, []int64{3}, primtorch.CPU))
	f32 := primtorch.NewContiguous(primtorch.Float32, []int64{3}, primtorch.CPU)
	y := g.AddCall("operator.truediv", []fxgraph.Arg{x, fxgraph.Const{V: int64(2)}}, nil, f32)
	z := g.AddCall("torch.relu", []fxgraph.Arg{y}, nil, f32.Clone())
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{z}})
	outs, err := RunTorchLevel(g, []*Tensor{FromInts(primtorch.Int64, []int64{3}, []int64{-3, 1, 4})}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[3](0, 0.5, 2)", outs[0].String())
}

// callGraph is a graph of one prims call on placeholders for ins, its meta from the registry.
func callGraph(t *testing.T, target string, ins ...*Tensor) *fxgraph.Graph {
	t.Helper()
	g := fxgraph.New("f")
	var args []fxgraph.Arg
	var vals []primtorch.Value
	for i, in := range ins {
		p := g.AddPlaceholder(fmt.Sprintf("x%d", i), in.Meta())
		args, vals = append(args, p), append(vals, p.Meta)
	}
	meta, err := primtorch.Lookup(target).Meta(vals, nil)
	require.NoError(t, err)
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{g.AddCall(target, args, nil, meta)}})
	return g
}

// externTests are regressions of the matmul externs against torch's results (torch 1.13, CPU):
// every product is added, so 0·inf and 0·NaN give NaN (the evaluator used to skip zeros of
// the left matrix and returned 0 there); integral matmuls are exact in int64 (they went
// through float64 and lost the low bits past 2^53).
var externTests = []struct {
	name   string
	target string
	ins    func() []*Tensor
	want   string
}{
	{"mm 0·inf", "prims.mm", func() []*Tensor {
		return []*Tensor{FromFloats(primtorch.Float32, []int64{1, 2}, []float64{0, 1}), FromFloats(primtorch.Float32, []int64{2, 1}, []float64{math.Inf(1), 2})}
	}, "f32[1,1](NaN)"},
	{"mm 0·NaN", "prims.mm", func() []*Tensor {
		return []*Tensor{FromFloats(primtorch.Float64, []int64{2, 2}, []float64{0, 1, 1, 1}), FromFloats(primtorch.Float64, []int64{2, 2}, []float64{math.NaN(), 1, 2, 3})}
	}, "f64[2,2](NaN, 3, NaN, 4)"},
	{"bmm 0·NaN", "prims.bmm", func() []*Tensor {
		return []*Tensor{FromFloats(primtorch.Float32, []int64{1, 2, 2}, []float64{0, 1, 1, 1}), FromFloats(primtorch.Float32, []int64{1, 2, 2}, []float64{math.NaN(), 1, 2, 3})}
	}, "f32[1,2,2](NaN, 3, NaN, 4)"},
	{"addmm 0·NaN", "prims.addmm", func() []*Tensor {
		return []*Tensor{FromFloats(primtorch.Float32, []int64{2}, []float64{0, 0}), FromFloats(primtorch.Float32, []int64{2, 2}, []float64{0, 1, 1, 1}), FromFloats(primtorch.Float32, []int64{2, 2}, []float64{math.NaN(), 1, 2, 3})}
	}, "f32[2,2](NaN, 3, NaN, 4)"},
	{"mm int64 past 2^53", "prims.mm", func() []*Tensor {
		return []*Tensor{FromInts(primtorch.Int64, []int64{1, 2}, []int64{1<<62 + 1, 1}), FromInts(primtorch.Int64, []int64{2, 1}, []int64{1, 1})}
	}, "i64[1,1](4611686018427387906)"},
	{"addmm int64 past 2^53", "prims.addmm", func() []*Tensor {
		return []*Tensor{FromInts(primtorch.Int64, []int64{1}, []int64{3}), FromInts(primtorch.Int64, []int64{1, 1}, []int64{1<<60 + 1}), FromInts(primtorch.Int64, []int64{1, 1}, []int64{4})}
	}, "i64[1,1](4611686018427387911)"},
}

func TestExterns(t *testing.T) {
	for _, tt := range externTests {
		t.Run(tt.name, func(t *testing.T) {
			ins := tt.ins()
			outs, err := Run(callGraph(t, tt.target, ins...), ins, nil)
			require.NoError(t, err)
			require.Equal(t, tt.want, outs[0].String())
		})
	}
}
