package inductor

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// FuzzFusion builds a random prims graph (pointwise chains, broadcasts, reductions expanded back,
// reshapes, permutes and cat over inputs that are contiguous, transposed, sliced or expanded;
// f32, f64 or i64), compiles it fused, and compares with the reference evaluator. `go test`
// runs the seeds; `go test -fuzz FuzzFusion ./inductor` explores, keeping failures under
// testdata/fuzz/FuzzFusion.
func FuzzFusion(f *testing.F) {
	for seed := int64(1); seed <= 16; seed++ {
		f.Add(seed, uint8(seed*7))
	}
	f.Fuzz(func(t *testing.T, seed int64, knobs uint8) {
		g := randomGraph(rand.New(rand.NewSource(seed)), knobs)
		if testing.Verbose() {
			t.Logf("graph:\n%s", g)
		}
		require.NoError(t, fxgraph.Verify(g, nil))
		threads := 1 + int(knobs%2)
		opts := Options{}
		if knobs&4 != 0 {
			opts.Codegen.MinParallelWork = 1
		}
		c := compileGraph(t, g, opts)
		inputs := randomInputs(g, rand.New(rand.NewSource(seed^0x5eed)))
		want, err := refEval(g, inputs)
		require.NoError(t, err)
		got, err := c.Run(inputs, threads)
		require.NoError(t, err, "graph:\n%s", g)
		requireFuzzMatch(t, got, want, g)
	})
}

// requireFuzzMatch compares with a tolerance scaled by magnitude (random chains amplify the
// few-ulp differences of vector math).
func requireFuzzMatch(t *testing.T, got []*Tensor, want []*dense, g *fxgraph.Graph) {
	t.Helper()
	require.Equal(t, len(want), len(got))
	for i, w := range want {
		gt := got[i]
		require.Equal(t, w.shape, gt.Sizes)
		for k := int64(0); k < w.n(); k++ {
			if w.f == nil {
				require.Equal(t, w.i[k], gt.AtInt(k), "output %d element %d\ngraph:\n%s", i, k, g)
				continue
			}
			a, b := gt.At(k), w.f[k]
			tol := 2e-4
			if w.dt == primtorch.Float64 {
				tol = 1e-9
			}
			ok := (math.IsNaN(a) && math.IsNaN(b)) || a == b || math.Abs(a-b) <= tol*(1+math.Abs(b))
			require.True(t, ok, "output %d element %d: got %v want %v\ngraph:\n%s", i, k, a, b, g)
		}
	}
}

// graphGen builds a random graph whose tensors all have the base shape (reductions are expanded
// back to it), so any two can be combined.
type graphGen struct {
	rng   *rand.Rand
	g     *fxgraph.Graph
	dt    primtorch.DType
	shape []int64
	pool  []*fxgraph.Node // base-shaped tensors
	outs  []fxgraph.Arg
	n     int
}

func (gg *graphGen) name(prefix string) string {
	gg.n++
	return fmt.Sprintf("%s_%d", prefix, gg.n)
}

func (gg *graphGen) meta(dt primtorch.DType, shape []int64) *primtorch.TensorMeta {
	return primtorch.NewContiguous(dt, shape, primtorch.CPU)
}

func (gg *graphGen) call(target string, m *primtorch.TensorMeta, args ...fxgraph.Arg) *fxgraph.Node {
	n := gg.g.AddCall(target, args, nil, m)
	n.Name = gg.name(target[len("prims."):])
	return n
}

func (gg *graphGen) pick() *fxgraph.Node { return gg.pool[gg.rng.Intn(len(gg.pool))] }

func randomGraph(rng *rand.Rand, knobs uint8) *fxgraph.Graph {
	gg := &graphGen{rng: rng, g: fxgraph.New("fuzz")}
	gg.dt = []primtorch.DType{primtorch.Float32, primtorch.Float64, primtorch.Int64, primtorch.Float32}[rng.Intn(4)]
	dims := []int64{1, 2, 3, 5, 8, 16, 33}
	nd := 1 + rng.Intn(3)
	for k := 0; k < nd; k++ {
		gg.shape = append(gg.shape, dims[rng.Intn(len(dims))])
	}
	// inputs
	nin := 1 + rng.Intn(3)
	var expands []func()
	for k := 0; k < nin; k++ {
		if e := gg.input(k); e != nil {
			expands = append(expands, e)
		}
	}
	for _, e := range expands {
		e()
	}
	steps := 2 + rng.Intn(8) + int(knobs%4)
	for s := 0; s < steps; s++ {
		gg.step()
	}
	// outputs: the last tensor and one or two others
	gg.outs = append(gg.outs, gg.pool[len(gg.pool)-1])
	for k := rng.Intn(3); k > 0; k-- {
		if n := gg.pick(); n.Op != fxgraph.Placeholder && n.TensorMeta().IsContiguous() {
			gg.outs = append(gg.outs, n)
		}
	}
	gg.g.AddOutput(fxgraph.Tuple{Elems: gg.outs})
	return gg.g
}

// input adds a placeholder of the base shape: contiguous, transposed, sliced out of a larger
// tensor, or expanded from a smaller one (then made base-shaped with prims.expand, which the
// returned function adds once every placeholder exists).
func (gg *graphGen) input(k int) func() {
	name := fmt.Sprintf("x%d", k)
	shape := gg.shape
	switch gg.rng.Intn(4) {
	case 0: // contiguous
		gg.pool = append(gg.pool, gg.g.AddPlaceholder(name, gg.meta(gg.dt, shape)))
	case 1: // transposed storage: strides of the reversed shape
		rev := make([]int64, len(shape))
		for i := range shape {
			rev[i] = shape[len(shape)-1-i]
		}
		cs := primtorch.ContiguousStrides(rev)
		st := make([]int64, len(shape))
		for i := range shape {
			st[i] = cs[len(shape)-1-i]
		}
		m := &primtorch.TensorMeta{DType: gg.dt, Shape: append([]int64(nil), shape...), Strides: st, Device: primtorch.CPU}
		gg.pool = append(gg.pool, gg.g.AddPlaceholder(name, m))
	case 2: // sliced: every dim of a tensor twice as large, step 2, offset 1 in the last dim
		big := make([]int64, len(shape))
		for i, s := range shape {
			big[i] = 2*s + 1
		}
		cs := primtorch.ContiguousStrides(big)
		st := make([]int64, len(shape))
		for i := range shape {
			st[i] = 2 * cs[i]
		}
		m := &primtorch.TensorMeta{DType: gg.dt, Shape: append([]int64(nil), shape...), Strides: st, Offset: 1, Device: primtorch.CPU}
		gg.pool = append(gg.pool, gg.g.AddPlaceholder(name, m))
	case 3: // broadcast: a smaller input expanded
		small := append([]int64(nil), shape...)
		small[gg.rng.Intn(len(small))] = 1
		p := gg.g.AddPlaceholder(name, gg.meta(gg.dt, small))
		return func() {
			e := gg.call("prims.expand", expandedMeta(p.TensorMeta(), shape), p, constList(shape))
			gg.pool = append(gg.pool, e)
		}
	}
	return nil
}

func expandedMeta(m *primtorch.TensorMeta, shape []int64) *primtorch.TensorMeta {
	st := make([]int64, len(shape))
	off := len(shape) - len(m.Shape)
	for i := range shape {
		if j := i - off; j >= 0 && m.Shape[j] == shape[i] {
			st[i] = m.Strides[j]
		}
	}
	return &primtorch.TensorMeta{DType: m.DType, Shape: append([]int64(nil), shape...), Strides: st, Offset: m.Offset, Device: primtorch.CPU}
}

func constList(xs []int64) fxgraph.List {
	l := fxgraph.List{Elems: []fxgraph.Arg{}}
	for _, x := range xs {
		l.Elems = append(l.Elems, fxgraph.Const{V: x})
	}
	return l
}

func (gg *graphGen) scalar() fxgraph.Arg {
	if gg.dt.IsFloatingPoint() {
		return fxgraph.Const{V: float64(gg.rng.Intn(9)-4) / 2}
	}
	return fxgraph.Const{V: int64(gg.rng.Intn(9) - 4)}
}

func (gg *graphGen) step() {
	m := gg.meta(gg.dt, gg.shape)
	fl := gg.dt.IsFloatingPoint()
	var n *fxgraph.Node
	switch gg.rng.Intn(13) {
	case 0, 1: // unary
		ops := []string{"neg", "abs", "sign"}
		if fl {
			ops = append(ops, "tanh", "sigmoid", "exp", "floor", "round", "sin")
		} else {
			ops = append(ops, "bitwise_not")
		}
		x := gg.pick()
		op := ops[gg.rng.Intn(len(ops))]
		if op == "exp" {
			// keep exp finite: exp(tanh(x))
			x = gg.call("prims.tanh", m, x)
		}
		n = gg.call("prims."+op, m, x)
	case 2, 3, 4: // binary
		ops := []string{"add", "sub", "mul", "maximum", "minimum"}
		if fl {
			ops = append(ops, "div", "atan2", "copysign")
		} else {
			ops = append(ops, "floordiv", "remainder", "bitwise_xor", "bitwise_and")
		}
		op := ops[gg.rng.Intn(len(ops))]
		var b fxgraph.Arg = gg.pick()
		if gg.rng.Intn(3) == 0 {
			b = gg.scalar()
		}
		n = gg.call("prims."+op, m, gg.pick(), b)
	case 5: // comparison + where
		cmps := []string{"lt", "le", "gt", "ge", "eq", "ne"}
		c := gg.call("prims."+cmps[gg.rng.Intn(len(cmps))], gg.meta(primtorch.Bool, gg.shape), gg.pick(), gg.pick())
		n = gg.call("prims.where", m, c, gg.pick(), gg.scalar())
	case 6, 7: // reduction over some dims, keepdim, expanded back (softmax/norm shapes)
		x := gg.pick()
		var dims []int64
		rshape := append([]int64(nil), gg.shape...)
		for d := range gg.shape {
			if gg.rng.Intn(2) == 0 || d == len(gg.shape)-1 && dims == nil {
				dims = append(dims, int64(d))
				rshape[d] = 1
			}
		}
		kinds := []string{"sum", "amax", "amin"}
		if !fl {
			kinds = append(kinds, "prod")
		}
		r := gg.call("prims."+kinds[gg.rng.Intn(len(kinds))], gg.meta(gg.dt, rshape), x, constList(dims), fxgraph.Const{V: true})
		if gg.rng.Intn(3) == 0 {
			// a pointwise op on the small result (mean-like), before broadcasting
			r = gg.call("prims.mul", r.TensorMeta(), r, gg.scalar())
		}
		e := gg.call("prims.expand", expandedMeta(r.TensorMeta(), gg.shape), r, constList(gg.shape))
		n = gg.call("prims.sub", m, gg.pick(), e)
		if gg.rng.Intn(4) == 0 {
			gg.outs = append(gg.outs, r)
		}
	case 8: // reshape round trip through a flat view, or a permute between equal dims
		x := gg.pick()
		flat := gg.call("prims.view", gg.meta(gg.dt, []int64{numel(gg.shape)}), x, constList([]int64{numel(gg.shape)}))
		v := gg.call("prims.view", m, flat, constList(gg.shape))
		n = gg.call("prims.add", m, v, gg.pick())
	case 9: // cat of two halves along the last dim, sliced back
		last := len(gg.shape) - 1
		big := append([]int64(nil), gg.shape...)
		big[last] *= 2
		c := gg.call("prims.cat", gg.meta(gg.dt, big), fxgraph.List{Elems: []fxgraph.Arg{gg.pick(), gg.pick()}}, fxgraph.Const{V: int64(last)})
		start := int64(gg.rng.Intn(int(gg.shape[last]) + 1))
		sm := &primtorch.TensorMeta{DType: gg.dt, Shape: append([]int64(nil), gg.shape...), Strides: primtorch.ContiguousStrides(big), Offset: start, Device: primtorch.CPU}
		s := gg.call("prims.slice", sm, c, fxgraph.Const{V: int64(last)}, fxgraph.Const{V: start}, fxgraph.Const{V: start + gg.shape[last]}, fxgraph.Const{V: int64(1)})
		n = gg.call("prims.mul", m, s, gg.pick())
	case 10: // a scan along a random dim
		d := int64(gg.rng.Intn(len(gg.shape)))
		n = gg.call("prims.cumsum", m, gg.pick(), fxgraph.Const{V: d})
	case 11: // pad the last dim, then slice the original back out
		last := len(gg.shape) - 1
		big := append([]int64(nil), gg.shape...)
		big[last] += 3
		p := gg.call("prims.constant_pad_nd", gg.meta(gg.dt, big), gg.pick(), constList([]int64{1, 2}), gg.scalar())
		sm := &primtorch.TensorMeta{DType: gg.dt, Shape: append([]int64(nil), gg.shape...), Strides: primtorch.ContiguousStrides(big), Offset: 1, Device: primtorch.CPU}
		n = gg.call("prims.slice", sm, p, fxgraph.Const{V: int64(last)}, fxgraph.Const{V: int64(1)}, fxgraph.Const{V: 1 + gg.shape[last]}, fxgraph.Const{V: int64(1)})
		n = gg.call("prims.add", m, n, gg.pick())
	case 12: // argmax/argmin of an input over the last dim, as an extra output
		var in *fxgraph.Node
		for _, c := range gg.pool {
			if c.Op == fxgraph.Placeholder {
				in = c
			}
		}
		if in == nil {
			in = gg.pool[0]
		}
		rshape := append([]int64(nil), gg.shape[:len(gg.shape)-1]...)
		kind := []string{"prims.argmax", "prims.argmin"}[gg.rng.Intn(2)]
		a := gg.call(kind, gg.meta(primtorch.Int64, rshape), in, constList([]int64{int64(len(gg.shape) - 1)}), fxgraph.Const{V: false})
		gg.outs = append(gg.outs, a)
		n = gg.call("prims.neg", m, gg.pick())
	}
	gg.pool = append(gg.pool, n)
}
