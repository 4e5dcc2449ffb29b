package inductor

import (
	"fmt"
	"math"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// A reference evaluator of prims graphs, independent of the lowering: every node is computed
// eagerly into a dense row-major array, one op at a time, with torch 1.13's semantics written
// out in Go (values round to the node's dtype after every op, as eager torch does). Views copy.
// The differential tests compare compiled kernels against it.

// dense is a row-major tensor value: f for floating dtypes, i for integers and bools.
type dense struct {
	dt    primtorch.DType
	shape []int64
	f     []float64
	i     []int64
}

func newDense(dt primtorch.DType, shape []int64) *dense {
	n := numel(shape)
	d := &dense{dt: dt, shape: append([]int64(nil), shape...)}
	if dt.IsFloatingPoint() {
		d.f = make([]float64, n)
	} else {
		d.i = make([]int64, n)
	}
	return d
}

func (d *dense) n() int64 { return numel(d.shape) }

func (d *dense) getF(k int64) float64 {
	if d.f != nil {
		return d.f[k]
	}
	return float64(d.i[k])
}

func (d *dense) getI(k int64) int64 {
	if d.i != nil {
		return d.i[k]
	}
	return int64(d.f[k])
}

// set stores a value rounded/wrapped to the dtype.
func (d *dense) setF(k int64, v float64) {
	if d.f != nil {
		d.f[k] = roundToDType(d.dt, v)
		return
	}
	d.i[k] = castFloatToInt(d.dt, v)
}

func (d *dense) setI(k int64, v int64) {
	if d.f != nil {
		d.f[k] = roundToDType(d.dt, float64(v))
		return
	}
	if d.dt == primtorch.Bool && v != 0 {
		v = 1
	}
	d.i[k] = wrapInt(d.dt, v)
}

// castFloatToInt converts like C on x86 (torch's static_cast): truncation; NaN/out of range give
// the "integer indefinite" value of the conversion gcc uses.
func castFloatToInt(dt primtorch.DType, v float64) int64 {
	if dt == primtorch.Bool {
		if v != 0 {
			return 1
		}
		return 0
	}
	if math.IsNaN(v) || v >= 9.3e18 || v <= -9.3e18 {
		if dt == primtorch.Int32 {
			return math.MinInt32
		}
		return wrapInt(dt, math.MinInt64)
	}
	if dt == primtorch.Int32 && (v >= 2147483648 || v < -2147483648) {
		return math.MinInt32
	}
	return wrapInt(dt, int64(v))
}

// unravel returns the multi-index of row-major position k.
func unravel(k int64, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = k % shape[d]
		k /= shape[d]
	}
	return idx
}

func ravel(idx, shape []int64) int64 {
	k := int64(0)
	for d, s := range shape {
		k = k*s + idx[d]
	}
	return k
}

func denseFromTensor(t *Tensor) *dense {
	d := newDense(t.DType, t.Sizes)
	for k := int64(0); k < d.n(); k++ {
		if d.f != nil {
			d.f[k] = t.At(k)
		} else {
			d.i[k] = t.AtInt(k)
		}
	}
	return d
}

type refEnv struct {
	vals   map[*fxgraph.Node]any // *dense, []any, or a scalar
	inputs map[*fxgraph.Node]*Tensor
}

// refEval evaluates g on inputs and returns its outputs (flattened; nil for constants).
// refZeroDivisions counts the integer divisions by zero refEval met (the results are 0; eager
// raises, and the kernels return StatusZeroDiv).
var refZeroDivisions int

func refEval(g *fxgraph.Graph, inputs []*Tensor) ([]*dense, error) {
	env := &refEnv{vals: map[*fxgraph.Node]any{}, inputs: map[*fxgraph.Node]*Tensor{}}
	k := 0
	var outs []*dense
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			if n.TensorMeta() == nil {
				env.vals[n] = n.Meta
				continue
			}
			env.vals[n] = denseFromTensor(inputs[k])
			env.inputs[n] = inputs[k]
			k++
		case fxgraph.CallFunction:
			v, err := env.call(n)
			if err != nil {
				return nil, fmt.Errorf("refEval %%%s = %s: %w", n.Name, n.Target, err)
			}
			env.vals[n] = v
		case fxgraph.Output:
			var walk func(a fxgraph.Arg)
			walk = func(a fxgraph.Arg) {
				switch a := a.(type) {
				case fxgraph.Tuple:
					for _, e := range a.Elems {
						walk(e)
					}
				case fxgraph.List:
					for _, e := range a.Elems {
						walk(e)
					}
				case *fxgraph.Node:
					d, _ := env.vals[a].(*dense)
					outs = append(outs, d)
				default:
					outs = append(outs, nil)
				}
			}
			walk(n.Args[0])
		}
	}
	return outs, nil
}

func (env *refEnv) tensor(a fxgraph.Arg) *dense {
	if n, ok := a.(*fxgraph.Node); ok {
		d, _ := env.vals[n].(*dense)
		return d
	}
	return nil
}

func (env *refEnv) scalar(a fxgraph.Arg) (any, bool) {
	switch a := a.(type) {
	case fxgraph.Const:
		return a.V, true
	case *fxgraph.Node:
		if _, ok := env.vals[a].(*dense); !ok {
			return env.vals[a], true
		}
	}
	return nil, false
}

// operand returns argument a as a dense tensor broadcast to shape and converted to dt.
func (env *refEnv) operand(a fxgraph.Arg, shape []int64, dt primtorch.DType) (*dense, error) {
	out := newDense(dt, shape)
	if t := env.tensor(a); t != nil {
		for k := int64(0); k < out.n(); k++ {
			idx := unravel(k, shape)
			src := make([]int64, len(t.shape))
			off := len(shape) - len(t.shape)
			for d := range t.shape {
				if t.shape[d] != 1 {
					src[d] = idx[off+d]
				}
			}
			j := ravel(src, t.shape)
			if t.f != nil {
				out.setF(k, t.f[j])
			} else {
				out.setI(k, t.i[j])
			}
		}
		return out, nil
	}
	s, ok := env.scalar(a)
	if !ok {
		return nil, fmt.Errorf("operand %v is neither tensor nor scalar", a)
	}
	for k := int64(0); k < out.n(); k++ {
		switch s := s.(type) {
		case float64:
			out.setF(k, s)
		case int64:
			out.setI(k, s)
		case bool:
			if s {
				out.setI(k, 1)
			} else {
				out.setI(k, 0)
			}
		}
	}
	return out, nil
}

func (env *refEnv) call(n *fxgraph.Node) (any, error) {
	m := n.TensorMeta()
	op := n.Target[len("prims."):]
	if f, ok := refUnaryF[op]; ok {
		return env.pointwise(n, m, func(a []*dense, k int64, out *dense) {
			if a[0].f != nil {
				out.setF(k, f(a[0].f[k], a[0].dt))
			} else {
				out.setI(k, refUnaryI(op, a[0].i[k], a[0].dt))
			}
		})
	}
	if f, ok := refBinary[op]; ok {
		return env.pointwise(n, m, func(a []*dense, k int64, out *dense) { f(a[0], a[1], k, out) })
	}
	switch op {
	case "bitwise_not":
		return env.pointwise(n, m, func(a []*dense, k int64, out *dense) { out.setI(k, refUnaryI(op, a[0].i[k], a[0].dt)) })
	case "logical_not", "isnan", "isinf", "isfinite":
		return env.pointwise(n, m, func(a []*dense, k int64, out *dense) {
			x := a[0].getF(k)
			var r bool
			switch op {
			case "logical_not":
				r = x == 0
			case "isnan":
				r = math.IsNaN(x)
			case "isinf":
				r = math.IsInf(x, 0)
			case "isfinite":
				r = !math.IsNaN(x) && !math.IsInf(x, 0)
			}
			out.setI(k, b2i(r))
		})
	case "where":
		return env.pointwise(n, m, func(a []*dense, k int64, out *dense) {
			src := a[2]
			if a[0].getI(k) != 0 {
				src = a[1]
			}
			if src.f != nil {
				out.setF(k, src.f[k])
			} else {
				out.setI(k, src.i[k])
			}
		})
	case "convert_element_type", "clone":
		x := env.tensor(n.Args[0])
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			if x.f != nil {
				out.setF(k, x.f[k])
			} else {
				out.setI(k, x.i[k])
			}
		}
		return out, nil
	case "sum", "prod", "amax", "amin", "any", "all", "argmax", "argmin":
		return env.reduce(n, op, m)
	case "cumsum", "cumprod":
		x := env.tensor(n.Args[0])
		d, _ := constInt(n.Args[1])
		dim, _ := normDim(d, len(x.shape))
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			idx := unravel(k, x.shape)
			acc := 0.0
			var iacc int64
			if op == "cumprod" {
				acc, iacc = 1, 1
			}
			for j := int64(0); j <= idx[dim]; j++ {
				src := append([]int64(nil), idx...)
				src[dim] = j
				p := ravel(src, x.shape)
				if op == "cumsum" {
					acc += x.getF(p)
					iacc += x.getI(p)
				} else {
					acc *= x.getF(p)
					iacc *= x.getI(p)
				}
			}
			if out.f != nil {
				out.setF(k, acc)
			} else {
				out.setI(k, iacc)
			}
		}
		return out, nil
	case "view", "permute", "expand", "slice", "select", "squeeze", "unsqueeze":
		return env.view(n, op, m)
	case "as_strided":
		in := env.inputs[n.Args[0].(*fxgraph.Node)]
		if in == nil {
			return nil, fmt.Errorf("the reference evaluates as_strided of graph inputs only")
		}
		t := &Tensor{DType: m.DType, Sizes: m.Shape, Strides: m.Strides, Offset: m.Offset, Data: in.Data}
		return denseFromTensor(t), nil
	case "cat":
		list := n.Args[0].(fxgraph.List).Elems
		d, _ := constInt(n.Args[1])
		dim, _ := normDim(d, len(m.Shape))
		out := newDense(m.DType, m.Shape)
		off := int64(0)
		for _, a := range list {
			x := env.tensor(a)
			if len(x.shape) != len(m.Shape) {
				continue
			}
			for k := int64(0); k < x.n(); k++ {
				idx := unravel(k, x.shape)
				idx[dim] += off
				copyElem(out, ravel(idx, m.Shape), x, k)
			}
			off += x.shape[dim]
		}
		return out, nil
	case "constant_pad_nd":
		x := env.tensor(n.Args[0])
		pad, _ := constInts(n.Args[1])
		val := 0.0
		if len(n.Args) > 2 {
			if s, ok := env.scalar(n.Args[2]); ok {
				val = toF(s)
			}
		}
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			idx := unravel(k, m.Shape)
			src := append([]int64(nil), idx...)
			in := true
			for p := 0; p < len(pad)/2; p++ {
				d := len(x.shape) - 1 - p
				src[d] -= pad[2*p]
				if src[d] < 0 || src[d] >= x.shape[d] {
					in = false
				}
			}
			if in {
				copyElem(out, k, x, ravel(src, x.shape))
			} else {
				out.setF(k, val)
			}
		}
		return out, nil
	case "gather", "index_select":
		x := env.tensor(n.Args[0])
		d, _ := constInt(n.Args[1])
		dim, _ := normDim(d, len(x.shape))
		ix := env.tensor(n.Args[2])
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			idx := unravel(k, m.Shape)
			var j int64
			if op == "gather" {
				j = ix.getI(k)
			} else {
				j = ix.getI(idx[dim])
			}
			if j < 0 {
				j += x.shape[dim]
			}
			idx[dim] = j
			copyElem(out, k, x, ravel(idx, x.shape))
		}
		return out, nil
	case "scatter":
		x := env.tensor(n.Args[0])
		d, _ := constInt(n.Args[1])
		dim, _ := normDim(d, len(x.shape))
		ix := env.tensor(n.Args[2])
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			copyElem(out, k, x, k)
		}
		for k := int64(0); k < ix.n(); k++ {
			idx := unravel(k, ix.shape)
			j := ix.getI(k)
			if j < 0 {
				j += x.shape[dim]
			}
			src := append([]int64(nil), idx...)
			idx[dim] = j
			o := ravel(idx, x.shape)
			if t := env.tensor(n.Args[3]); t != nil {
				copyElem(out, o, t, ravel(src, t.shape))
			} else {
				sv, _ := env.scalar(n.Args[3])
				out.setF(o, toF(sv))
			}
		}
		return out, nil
	case "index_put", "index":
		x := env.tensor(n.Args[0])
		shape, src := env.advanced(x, n.Args[1].(fxgraph.List).Elems)
		if op == "index" {
			out := newDense(m.DType, m.Shape)
			for k := int64(0); k < out.n(); k++ {
				copyElem(out, k, x, src(k))
			}
			return out, nil
		}
		acc := constBool(n.Args[3])
		out := newDense(m.DType, m.Shape)
		for k := int64(0); k < out.n(); k++ {
			copyElem(out, k, x, k)
		}
		vals := env.tensor(n.Args[2])
		for k := int64(0); k < numel(shape); k++ {
			o := src(k)
			var v float64
			var vi int64
			if vals != nil {
				idx := unravel(k, shape)
				at := make([]int64, len(vals.shape))
				off := len(shape) - len(vals.shape)
				for e := range vals.shape {
					if vals.shape[e] != 1 {
						at[e] = idx[off+e]
					}
				}
				v, vi = vals.getF(ravel(at, vals.shape)), vals.getI(ravel(at, vals.shape))
			} else {
				sv, _ := env.scalar(n.Args[2])
				v, vi = toF(sv), int64(toF(sv))
			}
			if out.f != nil {
				if acc {
					v += out.f[o]
				}
				out.setF(o, v)
			} else {
				if acc {
					vi += out.i[o]
				}
				out.setI(o, vi)
			}
		}
		return out, nil
	case "copy_":
		dstNode := n.Args[0].(*fxgraph.Node)
		dst := env.inputs[dstNode]
		src := env.tensor(n.Args[1])
		if dst == nil {
			return nil, fmt.Errorf("the reference evaluates copy_ into graph inputs only")
		}
		for k := int64(0); k < src.n(); k++ {
			if dst.DType.IsFloatingPoint() {
				dst.Set(k, src.getF(k))
			} else {
				dst.SetInt(k, src.getI(k))
			}
		}
		out := denseFromTensor(dst)
		env.vals[dstNode] = out
		return out, nil
	case "full":
		out := newDense(m.DType, m.Shape)
		s, _ := env.scalar(n.Args[1])
		for k := int64(0); k < out.n(); k++ {
			out.setF(k, toF(s))
		}
		return out, nil
	case "iota":
		out := newDense(m.DType, m.Shape)
		start, _ := env.scalar(n.Args[1])
		step, _ := env.scalar(n.Args[2])
		si, ok1 := start.(int64)
		ti, ok2 := step.(int64)
		for k := int64(0); k < out.n(); k++ {
			if ok1 && ok2 {
				out.setI(k, si+ti*k)
			} else {
				out.setF(k, toF(start)+toF(step)*float64(k))
			}
		}
		return out, nil
	case "mm", "addmm", "bmm":
		var ts []*Tensor
		for _, a := range n.Args {
			if d := env.tensor(a); d != nil {
				ts = append(ts, denseToTensor(d))
			}
		}
		var args []any
		for _, t := range ts {
			args = append(args, t)
		}
		res, err := goExterns["prims."+op](args, nil)
		if err != nil {
			return nil, err
		}
		return denseFromTensor(res[0]), nil
	}
	return nil, fmt.Errorf("the reference evaluator has no rule for %s", n.Target)
}

func toF(s any) float64 {
	switch s := s.(type) {
	case float64:
		return s
	case int64:
		return float64(s)
	case bool:
		if s {
			return 1
		}
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func copyElem(out *dense, k int64, x *dense, j int64) {
	if x.f != nil {
		out.setF(k, x.f[j])
	} else {
		out.setI(k, x.i[j])
	}
}

func denseToTensor(d *dense) *Tensor {
	t := NewTensor(d.dt, d.shape)
	for k := int64(0); k < d.n(); k++ {
		if d.f != nil {
			t.Set(k, d.f[k])
		} else {
			t.SetInt(k, d.i[k])
		}
	}
	return t
}

// pointwise evaluates an elementwise node: operands broadcast to the output shape in the
// operands' dtype, f writes element k.
func (env *refEnv) pointwise(n *fxgraph.Node, m *primtorch.TensorMeta, f func(a []*dense, k int64, out *dense)) (any, error) {
	operandDT := m.DType
	info := opTable[n.Target[len("prims."):]]
	if info != nil && info.boolOut {
		for _, a := range n.Args {
			if t := env.tensor(a); t != nil {
				operandDT = t.dt
				break
			}
		}
	}
	args := make([]*dense, len(n.Args))
	for i, a := range n.Args {
		dt := operandDT
		if n.Target == "prims.where" && i == 0 {
			dt = primtorch.Bool
		}
		d, err := env.operand(a, m.Shape, dt)
		if err != nil {
			return nil, err
		}
		args[i] = d
	}
	out := newDense(m.DType, m.Shape)
	for k := int64(0); k < out.n(); k++ {
		f(args, k, out)
	}
	return out, nil
}

// refUnaryF are the unary ops on floating values.
var refUnaryF = map[string]func(x float64, dt primtorch.DType) float64{
	"abs": func(x float64, _ primtorch.DType) float64 { return math.Abs(x) },
	"neg": func(x float64, _ primtorch.DType) float64 { return -x },
	"exp": func(x float64, _ primtorch.DType) float64 { return math.Exp(x) }, "exp2": func(x float64, _ primtorch.DType) float64 { return math.Exp2(x) },
	"expm1": func(x float64, _ primtorch.DType) float64 { return math.Expm1(x) }, "log": func(x float64, _ primtorch.DType) float64 { return math.Log(x) },
	"log1p": func(x float64, _ primtorch.DType) float64 { return math.Log1p(x) }, "log2": func(x float64, _ primtorch.DType) float64 { return math.Log2(x) },
	"log10": func(x float64, _ primtorch.DType) float64 { return math.Log10(x) }, "sqrt": func(x float64, _ primtorch.DType) float64 { return math.Sqrt(x) },
	"rsqrt": func(x float64, dt primtorch.DType) float64 { return 1 / roundToDType(dt, math.Sqrt(x)) },
	"sin":   func(x float64, _ primtorch.DType) float64 { return math.Sin(x) }, "cos": func(x float64, _ primtorch.DType) float64 { return math.Cos(x) },
	"tan": func(x float64, _ primtorch.DType) float64 { return math.Tan(x) }, "asin": func(x float64, _ primtorch.DType) float64 { return math.Asin(x) },
	"acos": func(x float64, _ primtorch.DType) float64 { return math.Acos(x) }, "atan": func(x float64, _ primtorch.DType) float64 { return math.Atan(x) },
	"sinh": func(x float64, _ primtorch.DType) float64 { return math.Sinh(x) }, "cosh": func(x float64, _ primtorch.DType) float64 { return math.Cosh(x) },
	"tanh": func(x float64, _ primtorch.DType) float64 { return math.Tanh(x) },
	"sigmoid": func(x float64, dt primtorch.DType) float64 {
		return 1 / (1 + roundToDType(dt, math.Exp(-x)))
	},
	"erf": func(x float64, _ primtorch.DType) float64 { return math.Erf(x) }, "erfc": func(x float64, _ primtorch.DType) float64 { return math.Erfc(x) },
	"floor": func(x float64, _ primtorch.DType) float64 { return math.Floor(x) }, "ceil": func(x float64, _ primtorch.DType) float64 { return math.Ceil(x) },
	"round": func(x float64, _ primtorch.DType) float64 { return math.RoundToEven(x) }, "trunc": func(x float64, _ primtorch.DType) float64 { return math.Trunc(x) },
	"sign": func(x float64, _ primtorch.DType) float64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	},
	"reciprocal": func(x float64, _ primtorch.DType) float64 { return 1 / x },
}

// refUnaryI applies a unary op to an integer.
func refUnaryI(op string, x int64, dt primtorch.DType) int64 {
	switch op {
	case "abs":
		if x < 0 {
			return -x
		}
		return x
	case "neg":
		return -x
	case "sign":
		return b2i(x > 0) - b2i(x < 0)
	case "bitwise_not":
		if dt == primtorch.Bool {
			return 1 - x
		}
		return ^x
	case "floor", "ceil", "round", "trunc":
		return x
	}
	return castFloatToInt(dt, refUnaryF[op](float64(x), primtorch.Float64))
}

// refBinary are the binary ops, writing out[k] from a[k] and b[k].
var refBinary = map[string]func(a, b *dense, k int64, out *dense){}

func init() {
	arith := func(ff func(x, y float64) float64, fi func(x, y int64, dt primtorch.DType) int64) func(a, b *dense, k int64, out *dense) {
		return func(a, b *dense, k int64, out *dense) {
			if a.f != nil {
				out.setF(k, ff(a.f[k], b.f[k]))
			} else {
				out.setI(k, fi(a.i[k], b.i[k], a.dt))
			}
		}
	}
	cmp := func(f func(x, y float64) bool, fi func(x, y int64) bool) func(a, b *dense, k int64, out *dense) {
		return func(a, b *dense, k int64, out *dense) {
			if a.f != nil {
				out.setI(k, b2i(f(a.f[k], b.f[k])))
			} else {
				out.setI(k, b2i(fi(a.i[k], b.i[k])))
			}
		}
	}
	boolOr := func(x, y int64, dt primtorch.DType) int64 { return x | y }
	refBinary["add"] = arith(func(x, y float64) float64 { return x + y }, func(x, y int64, dt primtorch.DType) int64 {
		if dt == primtorch.Bool {
			return boolOr(x, y, dt)
		}
		return x + y
	})
	refBinary["sub"] = arith(func(x, y float64) float64 { return x - y }, func(x, y int64, _ primtorch.DType) int64 { return x - y })
	refBinary["mul"] = arith(func(x, y float64) float64 { return x * y }, func(x, y int64, _ primtorch.DType) int64 { return x * y })
	refBinary["div"] = arith(func(x, y float64) float64 { return x / y }, func(x, y int64, _ primtorch.DType) int64 {
		if y == 0 {
			refZeroDivisions++
			return 0
		}
		if y == -1 {
			return -x
		}
		return x / y
	})
	refBinary["floordiv"] = arith(refFloorDivF, func(x, y int64, _ primtorch.DType) int64 {
		if y == 0 {
			refZeroDivisions++
			return 0
		}
		if y == -1 {
			return -x
		}
		return floorDiv(x, y)
	})
	refBinary["remainder"] = arith(func(x, y float64) float64 {
		m := math.Mod(x, y)
		if m != 0 && (y < 0) != (m < 0) {
			m += y
		}
		return m
	}, func(x, y int64, _ primtorch.DType) int64 {
		if y == 0 {
			refZeroDivisions++
		}
		if y == 0 || y == -1 {
			return 0
		}
		return floorMod(x, y)
	})
	refBinary["fmod"] = arith(math.Mod, func(x, y int64, _ primtorch.DType) int64 {
		if y == 0 {
			refZeroDivisions++
		}
		if y == 0 || y == -1 {
			return 0
		}
		return x % y
	})
	refBinary["pow"] = arith(math.Pow, func(x, y int64, _ primtorch.DType) int64 {
		if y < 0 {
			switch x {
			case 1:
				return 1
			case -1:
				if y%2 != 0 {
					return -1
				}
				return 1
			}
			return 0
		}
		r := int64(1)
		for ; y > 0; y >>= 1 {
			if y&1 == 1 {
				r *= x
			}
			x *= x
		}
		return r
	})
	refBinary["maximum"] = arith(func(x, y float64) float64 {
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.NaN()
		}
		return math.Max(x, y)
	}, func(x, y int64, _ primtorch.DType) int64 { return max(x, y) })
	refBinary["minimum"] = arith(func(x, y float64) float64 {
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.NaN()
		}
		return math.Min(x, y)
	}, func(x, y int64, _ primtorch.DType) int64 { return min(x, y) })
	refBinary["atan2"] = arith(math.Atan2, nil)
	refBinary["hypot"] = arith(math.Hypot, nil)
	refBinary["copysign"] = arith(math.Copysign, nil)
	refBinary["bitwise_and"] = arith(nil, func(x, y int64, _ primtorch.DType) int64 { return x & y })
	refBinary["bitwise_or"] = arith(nil, func(x, y int64, _ primtorch.DType) int64 { return x | y })
	refBinary["bitwise_xor"] = arith(nil, func(x, y int64, _ primtorch.DType) int64 { return x ^ y })
	shiftMask := func(dt primtorch.DType) int64 {
		if dt == primtorch.Int64 {
			return 63
		}
		return 31
	}
	refBinary["shift_left"] = arith(nil, func(x, y int64, dt primtorch.DType) int64 { return x << uint(y&shiftMask(dt)) })
	refBinary["shift_right"] = arith(nil, func(x, y int64, dt primtorch.DType) int64 { return x >> uint(y&shiftMask(dt)) })
	refBinary["eq"] = cmp(func(x, y float64) bool { return x == y }, func(x, y int64) bool { return x == y })
	refBinary["ne"] = cmp(func(x, y float64) bool { return x != y }, func(x, y int64) bool { return x != y })
	refBinary["lt"] = cmp(func(x, y float64) bool { return x < y }, func(x, y int64) bool { return x < y })
	refBinary["le"] = cmp(func(x, y float64) bool { return x <= y }, func(x, y int64) bool { return x <= y })
	refBinary["gt"] = cmp(func(x, y float64) bool { return x > y }, func(x, y int64) bool { return x > y })
	refBinary["ge"] = cmp(func(x, y float64) bool { return x >= y }, func(x, y int64) bool { return x >= y })
	refBinary["logical_and"] = cmp(func(x, y float64) bool { return x != 0 && y != 0 }, func(x, y int64) bool { return x != 0 && y != 0 })
	refBinary["logical_or"] = cmp(func(x, y float64) bool { return x != 0 || y != 0 }, func(x, y int64) bool { return x != 0 || y != 0 })
	refBinary["logical_xor"] = cmp(func(x, y float64) bool { return (x != 0) != (y != 0) }, func(x, y int64) bool { return (x != 0) != (y != 0) })
}

// refFloorDivF is torch's div_floor_floating.
func refFloorDivF(a, b float64) float64 {
	if b == 0 {
		return a / b
	}
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return math.Copysign(0, a/b)
	}
	fl := math.Floor(div)
	if div-fl > 0.5 {
		fl++
	}
	return fl
}

func (env *refEnv) reduce(n *fxgraph.Node, op string, m *primtorch.TensorMeta) (any, error) {
	x := env.tensor(n.Args[0])
	dims, _ := constInts(arg(n, 1, "dims"))
	keep := constBool(arg(n, 2, "keepdim"))
	red := make([]bool, len(x.shape))
	if len(dims) == 0 {
		for k := range red {
			red[k] = true
		}
	}
	for _, d := range dims {
		k, _ := normDim(d, len(x.shape))
		if len(x.shape) > 0 {
			red[k] = true
		}
	}
	out := newDense(m.DType, m.Shape)
	type accT struct {
		f     float64
		i     int64
		nan   bool
		best  float64
		bestI int64
		pos   int64
		seen  bool
	}
	accs := make([]accT, out.n())
	// position inside the reduction (row-major over reduced dims), per input element
	for k := int64(0); k < x.n(); k++ {
		idx := unravel(k, x.shape)
		var oidx []int64
		var rpos int64
		for d, s := range x.shape {
			if red[d] {
				rpos = rpos*s + idx[d]
				if keep {
					oidx = append(oidx, 0)
				}
			} else {
				oidx = append(oidx, idx[d])
			}
		}
		o := ravel(oidx, m.Shape)
		a := &accs[o]
		vf, vi := x.getF(k), x.getI(k)
		first := !a.seen
		a.seen = true
		switch op {
		case "sum":
			a.f += vf
			a.i += vi
		case "prod":
			if first {
				a.f, a.i = 1, 1
			}
			a.f *= vf
			a.i *= vi
		case "amax", "amin":
			if math.IsNaN(vf) {
				a.nan = true
			}
			better := vf > a.f
			if op == "amin" {
				better = vf < a.f
			}
			if first || better {
				a.f = vf
			}
			if first || (op == "amax" && vi > a.i) || (op == "amin" && vi < a.i) {
				a.i = vi
			}
		case "any":
			a.i |= b2i(vf != 0)
		case "all":
			if first {
				a.i = 1
			}
			a.i &= b2i(vf != 0)
		case "argmax", "argmin":
			better := vf > a.best
			if op == "argmin" {
				better = vf < a.best
			}
			if x.f == nil {
				better = (op == "argmax" && vi > a.bestI) || (op == "argmin" && vi < a.bestI)
			}
			if first || (!math.IsNaN(a.best) && (better || math.IsNaN(vf))) {
				a.best, a.bestI, a.pos = vf, vi, rpos
			}
		}
	}
	for o := range accs {
		a := accs[o]
		switch op {
		case "argmax", "argmin":
			out.setI(int64(o), a.pos)
		case "any", "all":
			out.setI(int64(o), a.i)
		default:
			if out.f != nil {
				v := a.f
				if a.nan {
					v = math.NaN()
				}
				if !a.seen && op == "prod" {
					v = 1
				}
				out.setF(int64(o), v)
			} else {
				if !a.seen && op == "prod" {
					a.i = 1
				}
				out.setI(int64(o), a.i)
			}
		}
	}
	return out, nil
}

// view evaluates a view op by copying: the value at each output index comes from the input
// index the view maps it to.
func (env *refEnv) view(n *fxgraph.Node, op string, m *primtorch.TensorMeta) (any, error) {
	x := env.tensor(n.Args[0])
	out := newDense(x.dt, m.Shape)
	for k := int64(0); k < out.n(); k++ {
		idx := unravel(k, m.Shape)
		var src []int64
		switch op {
		case "view":
			src = unravel(k, x.shape)
		case "permute":
			dims, _ := constInts(n.Args[1])
			src = make([]int64, len(x.shape))
			for j, d := range dims {
				dd, _ := normDim(d, len(dims))
				src[dd] = idx[j]
			}
		case "expand":
			src = make([]int64, len(x.shape))
			off := len(m.Shape) - len(x.shape)
			for d := range x.shape {
				if x.shape[d] != 1 {
					src[d] = idx[off+d]
				}
			}
		case "slice":
			d, _ := constInt(n.Args[1])
			dim, _ := normDim(d, len(x.shape))
			start, _ := constInt(n.Args[2])
			step := int64(1)
			if len(n.Args) > 4 {
				step, _ = constInt(n.Args[4])
			}
			if start < 0 {
				start += x.shape[dim]
			}
			start = max(0, min(start, x.shape[dim]))
			src = append([]int64(nil), idx...)
			src[dim] = start + step*idx[dim]
		case "select":
			d, _ := constInt(n.Args[1])
			dim, _ := normDim(d, len(x.shape))
			i, _ := constInt(n.Args[2])
			if i < 0 {
				i += x.shape[dim]
			}
			src = append(append(append([]int64(nil), idx[:dim]...), i), idx[dim:]...)
		case "squeeze", "unsqueeze":
			// both keep the order of the non-size-1 dims
			src = make([]int64, len(x.shape))
			var big []int64
			for d, s := range m.Shape {
				if s != 1 {
					big = append(big, idx[d])
				}
			}
			j := 0
			for d, s := range x.shape {
				if s != 1 {
					src[d] = big[j]
					j++
				}
			}
		}
		copyElem(out, k, x, ravel(src, x.shape))
	}
	return out, nil
}

// advanced is torch's advanced indexing x[list] (index tensors or None): the result shape, and
// for a result position the position in x.
func (env *refEnv) advanced(x *dense, list []fxgraph.Arg) ([]int64, func(k int64) int64) {
	var idxs []*dense
	var pos []int
	for k, a := range list {
		if isNone(a) {
			idxs = append(idxs, nil)
			continue
		}
		idxs = append(idxs, env.tensor(a))
		pos = append(pos, k)
	}
	var bshape []int64
	for _, it := range idxs {
		if it != nil {
			bshape, _ = broadcastShapes(bshape, it.shape)
		}
	}
	first := 0
	if pos[len(pos)-1]-pos[0] == len(pos)-1 {
		first = pos[0]
	}
	var shape []int64
	var rest []int
	for k := range x.shape {
		if k == first {
			shape = append(shape, bshape...)
		}
		if k >= len(idxs) || idxs[k] == nil {
			rest = append(rest, k)
			shape = append(shape, x.shape[k])
		}
	}
	return shape, func(k int64) int64 {
		idx := unravel(k, shape)
		bidx := idx[first : first+len(bshape)]
		dst := make([]int64, len(x.shape))
		for d, it := range idxs {
			if it == nil {
				continue
			}
			src := make([]int64, len(it.shape))
			off := len(bshape) - len(it.shape)
			for e := range it.shape {
				if it.shape[e] != 1 {
					src[e] = bidx[off+e]
				}
			}
			j := it.getI(ravel(src, it.shape))
			if j < 0 {
				j += x.shape[d]
			}
			dst[d] = j
		}
		r := 0
		for i := range idx {
			if i >= first && i < first+len(bshape) {
				continue
			}
			dst[rest[r]] = idx[i]
			r++
		}
		return ravel(dst, x.shape)
	}
}
