package inductor

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// confGraphs are the multi-node graphs of the decomp tests (MLP block, softmax and layer-norm
// chains, attention, batch norm training with running statistics, RMS norm, an in-place chain,
// conv+bn+relu+pool) and a few more, at sizes the recorded cases do not reach: odd sizes
// (vector remainders), rows past ParallelMinWork (the OpenMP paths at their real thresholds),
// reductions over middle and leading dims (column reductions), transposed and sliced inputs.
// There is no torch result: TestConformanceGraphs compares ref with the C backend.
// normwiseGraphs compare with the absolute tolerance scaled by the output's largest element
// (testcases.CompareResultsNormwise): their outputs are dot products of 64 terms of magnitude
// ~10 whose small elements come from cancellation, so the reference interpreter's addmm
// (bias added in float64) and the C backend's mm followed by a float32 bias add differ by ulps
// of the terms.
var normwiseGraphs = map[string]bool{"attention": true}

var confGraphs = []struct {
	name  string
	build func(b *graphBuilder)
}{
	{"mlp_block", func(b *graphBuilder) {
		x := b.in("x", f32t(64, 96))
		h := b.call("torch.nn.functional.linear", x, b.attr("fc1.weight", f32t(160, 96)), b.attr("fc1.bias", f32t(160)))
		h = b.call("torch.nn.functional.gelu", h)
		y := b.call("torch.nn.functional.linear", h, b.attr("fc2.weight", f32t(96, 160)), b.attr("fc2.bias", f32t(96)))
		b.out(b.call("operator.add", y, x))
	}},
	{"softmax_chain", func(b *graphBuilder) {
		x := b.in("x", f32t(24, 17, 129))
		s := b.call("torch.softmax", b.call("operator.mul", x, 0.5), -1)
		l := b.call("torch.log", b.call("operator.add", s, 0.001))
		b.out(l, b.call("torch.sum", s, -1), b.call("torch.softmax", x, 1), b.call("torch.log_softmax", x, 0))
	}},
	{"layer_norm_residual", func(b *graphBuilder) {
		x := b.in("x", f32t(16, 33, 256))
		n := b.call("torch.nn.functional.layer_norm", x, fxgraph.Tuple{Elems: []fxgraph.Arg{fxgraph.Const{V: int64(256)}}}, b.attr("ln.weight", f32t(256)), b.attr("ln.bias", f32t(256)))
		b.out(b.call("operator.add", b.call("torch.relu", n), x))
	}},
	{"attention", func(b *graphBuilder) {
		const batch, seq, dim, heads = 2, 37, 64, 4
		x := b.in("x", f32t(batch, seq, dim))
		qkv := b.call("torch.nn.functional.linear", x, b.attr("qkv.weight", f32t(3*dim, dim)), b.attr("qkv.bias", f32t(3*dim)))
		parts := b.call("Tensor.split", qkv, int64(dim), kw{"dim": int64(-1)})
		head := func(i int64) *fxgraph.Node {
			v := b.call("Tensor.view", b.item(parts, i), int64(batch), int64(seq), int64(heads), int64(dim/heads))
			return b.call("Tensor.transpose", v, int64(1), int64(2))
		}
		q, k, v := head(0), head(1), head(2)
		att := b.call("operator.mul", b.call("operator.matmul", q, b.call("Tensor.transpose", k, int64(-2), int64(-1))), 0.25)
		mask := b.call("operator.invert", b.call("torch.tril", b.call("torch.ones", int64(seq), int64(seq), kw{"dtype": primtorch.Bool})))
		att = b.call("torch.nn.functional.softmax", b.call("Tensor.masked_fill", att, mask, -1e9), kw{"dim": int64(-1)})
		y := b.call("Tensor.transpose", b.call("operator.matmul", att, v), int64(1), int64(2))
		y = b.call("Tensor.reshape", b.call("Tensor.contiguous", y), int64(batch), int64(seq), int64(dim))
		b.out(b.call("torch.nn.functional.linear", y, b.attr("proj.weight", f32t(dim, dim))))
	}},
	{"batch_norm_train_buffers", func(b *graphBuilder) {
		x := b.in("x", f32t(8, 16, 9, 9))
		nbt := b.attr("bn.num_batches_tracked", primtorch.NewContiguous(primtorch.Int64, nil, primtorch.CPU))
		b.call("Tensor.add_", nbt, int64(1))
		y := b.call("torch.nn.functional.batch_norm", x, b.attr("bn.running_mean", f32t(16)), b.attr("bn.running_var", f32t(16)),
			b.attr("bn.weight", f32t(16)), b.attr("bn.bias", f32t(16)), true, 0.1, 1e-5)
		b.out(y)
	}},
	{"rms_norm", func(b *graphBuilder) {
		x := b.in("x", f32t(4, 65, 512))
		r := b.call("torch.rsqrt", b.call("operator.add", b.call("Tensor.mean", b.call("Tensor.pow", x, int64(2)), int64(-1), kw{"keepdim": true}), 1e-6))
		b.out(b.call("operator.mul", b.call("operator.mul", x, r), b.attr("norm.weight", f32t(512))))
	}},
	{"inplace_chain", func(b *graphBuilder) {
		x := b.in("x", f32t(300, 257))
		c := b.call("torch.clone", x)
		b.call("Tensor.mul_", c, 2.0)
		b.call("Tensor.add_", x, c)
		b.call("operator.setitem", c, fxgraph.Tuple{Elems: []fxgraph.Arg{fxgraph.Slice{Start: none, Stop: none, Step: none}, fxgraph.Const{V: int64(0)}}}, 0.0)
		b.out(c, b.call("torch.sum", x))
	}},
	{"reduce_middle_and_leading", func(b *graphBuilder) {
		x := b.in("x", f32t(64, 300, 40))
		b.out(b.call("torch.sum", x, int64(1)), b.call("torch.amax", x, int64(0)), b.call("torch.argmax", x, int64(1)),
			b.call("torch.cumsum", x, int64(1)), b.call("torch.mean", x, []any{int64(0), int64(2)}), b.call("torch.var", x, int64(1)))
	}},
	{"transposed_and_sliced_inputs", func(b *graphBuilder) {
		xt := b.in("xt", &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{129, 96}, Strides: []int64{1, 129}, Device: primtorch.CPU})
		ys := b.in("ys", &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{129, 96}, Strides: []int64{2 * 193, 2}, Offset: 1, Device: primtorch.CPU})
		s := b.call("torch.tanh", b.call("operator.add", xt, ys))
		b.out(s, b.call("torch.sum", s, int64(0)), b.call("torch.softmax", xt, int64(1)), b.call("torch.max", ys, int64(0)))
	}},
	{"int_and_bool", func(b *graphBuilder) {
		x := b.in("x", primtorch.NewContiguous(primtorch.Int64, []int64{70, 1001}, primtorch.CPU))
		m := b.in("m", primtorch.NewContiguous(primtorch.Bool, []int64{70, 1001}, primtorch.CPU))
		r := b.call("operator.mod", x, int64(7))
		z := b.call("operator.eq", r, int64(0))
		w := b.call("torch.where", b.call("operator.and_", z, m), x, b.call("operator.neg", x))
		b.out(b.call("torch.sum", z, int64(1)), w, b.call("torch.cumsum", w, int64(1)), b.call("torch.any", m, int64(0)),
			b.call("torch.prod", b.call("operator.add", r, int64(1)), int64(0)), b.call("torch.amin", x, int64(1)))
	}},
	{"conv_bn_relu_pool", func(b *graphBuilder) {
		x := b.in("x", f32t(2, 3, 16, 16))
		c := b.call("torch.nn.functional.conv2d", x, b.attr("conv.weight", f32t(8, 3, 3, 3)), none, int64(1), int64(1))
		n := b.call("torch.nn.functional.batch_norm", c, b.attr("bn.running_mean", f32t(8)), b.attr("bn.running_var", f32t(8)),
			b.attr("bn.weight", f32t(8)), b.attr("bn.bias", f32t(8)), false, 0.1, 1e-5)
		p := b.call("torch.nn.functional.adaptive_avg_pool2d", b.call("torch.relu", n), int64(1))
		b.out(b.call("torch.flatten", p, int64(1)))
	}},
	// channels-last images (strides C·H·W, 1, W·C, C): BatchNorm statistics, a per-channel
	// broadcast and a sum over H and W per (n, c) — a column reduction under the loop over n —
	// with odd C (vector remainders) and a C past ColumnBlock (several blocks)
	{"channels_last_norm_pool", func(b *graphBuilder) {
		shapes := [][]int64{{3, 37, 5, 7}, {2, 300, 4, 3}}
		var xs []*fxgraph.Node
		for _, sh := range shapes {
			c, h, w := sh[1], sh[2], sh[3]
			xs = append(xs, b.in(fmt.Sprintf("x%d", c), &primtorch.TensorMeta{DType: primtorch.Float32, Shape: sh, Strides: []int64{c * h * w, 1, w * c, c}, Device: primtorch.CPU}))
		}
		var outs []*fxgraph.Node
		for i, sh := range shapes {
			x := xs[i]
			y := b.call("torch.relu", b.call("torch.nn.functional.batch_norm", x, none, none, none, none, true, 0.1, 1e-5))
			p := b.call("torch.nn.functional.adaptive_avg_pool2d", y, int64(1))
			g := b.call("operator.mul", b.call("Tensor.expand", b.call("torch.exp", p), sh[0], sh[1], sh[2], sh[3]), y)
			outs = append(outs, p, g, b.call("torch.sum", x, []any{int64(2), int64(3)}))
		}
		b.out(outs...)
	}},
}

var none = fxgraph.Const{V: nil}

func f32t(shape ...int64) *primtorch.TensorMeta {
	return primtorch.NewContiguous(primtorch.Float32, shape, primtorch.CPU)
}

// kw is a call's keyword arguments (last argument of graphBuilder.call).
type kw map[string]any

// graphBuilder builds torch-level graphs in Go with the registry's metas.
type graphBuilder struct {
	t     *testing.T
	g     *fxgraph.Graph
	items map[string]*fxgraph.Node
}

func (b *graphBuilder) in(name string, m *primtorch.TensorMeta) *fxgraph.Node {
	return b.g.AddPlaceholder(name, m)
}

func (b *graphBuilder) attr(path string, m *primtorch.TensorMeta) *fxgraph.Node {
	return b.g.AddGetAttr(path, m)
}

func goConst(x any) fxgraph.Arg {
	switch v := x.(type) {
	case fxgraph.Arg:
		return v
	case int:
		return fxgraph.Const{V: int64(v)}
	case []any:
		l := fxgraph.List{Elems: []fxgraph.Arg{}}
		for _, e := range v {
			l.Elems = append(l.Elems, goConst(e))
		}
		return l
	}
	return fxgraph.Const{V: x}
}

func (b *graphBuilder) call(target string, args ...any) *fxgraph.Node {
	b.t.Helper()
	var fargs []fxgraph.Arg
	var kwargs []fxgraph.Kwarg
	for _, a := range args {
		if k, ok := a.(kw); ok {
			var names []string
			for name := range k {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				kwargs = append(kwargs, fxgraph.Kwarg{Name: name, Value: goConst(k[name])})
			}
			continue
		}
		fargs = append(fargs, goConst(a))
	}
	n, _, err := testcases.AddNode(b.g, target, fargs, kwargs)
	require.NoError(b.t, err)
	n.Where = fmt.Sprintf("graph.py:%d", len(b.g.Nodes))
	return n
}

// item is operator.getitem(n, i) of a tuple-valued call (as the capture stage records it).
func (b *graphBuilder) item(n *fxgraph.Node, i int64) *fxgraph.Node {
	metas, ok := n.Meta.([]any)
	require.True(b.t, ok, "%s is not a tuple", n.Name)
	return b.g.AddCall("operator.getitem", []fxgraph.Arg{n, fxgraph.Const{V: i}}, nil, metas[i])
}

func (b *graphBuilder) out(outs ...*fxgraph.Node) {
	tup := fxgraph.Tuple{}
	for _, o := range outs {
		tup.Elems = append(tup.Elems, o)
	}
	b.g.AddOutput(tup)
}

// graphInputs makes the same random inputs for ref and for the C backend: the placeholders',
// then the get_attrs' (the lifted graph's order), each with its meta's exact layout and every
// storage element set. Floats are in [-2, 2), integers in [-10, 10], bools random; variances
// (attrs named *running_var) are positive. With special, one float in 8 is NaN, ±inf or −0.
func graphInputs(t *testing.T, g *fxgraph.Graph, rng *rand.Rand, special bool) ([]*ref.Tensor, map[string]*ref.Tensor, []*Tensor) {
	t.Helper()
	var refIn []*ref.Tensor
	attrs := map[string]*ref.Tensor{}
	var cIn []*Tensor
	var ordered []*fxgraph.Node
	for _, op := range []fxgraph.NodeOp{fxgraph.Placeholder, fxgraph.GetAttr} {
		for _, n := range g.Nodes {
			if n.Op == op {
				ordered = append(ordered, n)
			}
		}
	}
	for _, n := range ordered {
		m := n.TensorMeta()
		c := NewStrided(m.DType, m.Shape, m.Strides, m.Offset)
		size := int64(len(c.Data) / m.DType.ItemSize())
		all := &Tensor{DType: m.DType, Sizes: []int64{size}, Strides: []int64{1}, Data: c.Data}
		fs, is := make([]float64, size), make([]int64, size)
		for k := range size {
			switch {
			case m.DType.IsFloatingPoint():
				fs[k] = rng.Float64()*4 - 2
				if n.Op == fxgraph.GetAttr && strings.HasSuffix(n.Target, "running_var") {
					fs[k] = rng.Float64() + 0.5
				}
				if special && rng.Intn(8) == 0 {
					fs[k] = []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1)}[rng.Intn(4)]
				}
				all.Set(k, fs[k])
				fs[k] = all.At(k) // as stored
			case m.DType == primtorch.Bool:
				is[k] = rng.Int63n(2)
				all.SetInt(k, is[k])
			default:
				is[k] = rng.Int63n(21) - 10
				all.SetInt(k, is[k])
			}
		}
		var data any = is
		if m.DType.IsFloatingPoint() {
			data = fs
		}
		r, err := ref.FromStorage(m.DType, m.Shape, m.Strides, m.Offset, data)
		require.NoError(t, err)
		if n.Op == fxgraph.GetAttr {
			attrs[n.Target] = r
		} else {
			refIn = append(refIn, r)
		}
		cIn = append(cIn, c)
	}
	return refIn, attrs, cIn
}

// TestConformanceGraphs runs confGraphs through ref and the C backend (every variant of
// confVariants, on every graph) and compares outputs and written inputs. Graphs with externs the Go executor
// cannot run (convolution) are compiled only.
func TestConformanceGraphs(t *testing.T) {
	type built struct {
		name    string
		prims   *fxgraph.Graph
		lifted  *fxgraph.Graph
		runs    bool
		compile []*Compiled // per variant
		err     []error
	}
	var gs []*built
	for _, cg := range confGraphs {
		b := &graphBuilder{t: t, g: fxgraph.New(cg.name)}
		cg.build(b)
		pg, err := decomp.Decompose(b.g, decomp.Options{Check: true})
		require.NoError(t, err, "%s", b.g)
		require.NotContains(t, pg.String(), "prims.fallback", "%s decomposes to a fallback: the graph tests need graphs ref can run", cg.name)
		lifted := liftGetAttrs(pg)
		ir, err := Lower(lifted)
		require.NoError(t, err)
		runs := true
		for _, buf := range ir.Buffers {
			if e, ok := buf.Def.(*Extern); ok && goExterns[e.Target] == nil {
				runs = false
			}
		}
		gs = append(gs, &built{name: cg.name, prims: pg, lifted: lifted, runs: runs,
			compile: make([]*Compiled, len(confVariants)), err: make([]error, len(confVariants))})
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	comp := testCompiler(t)
	for _, g := range gs {
		for v := range confVariants {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				g.compile[v], g.err[v] = Compile(g.lifted, Options{Compiler: comp, Check: true, Codegen: confVariants[v].codegen})
			})
		}
	}
	wg.Wait()
	for i, g := range gs {
		t.Run(g.name, func(t *testing.T) {
			for v, vr := range confVariants {
				require.NoError(t, g.err[v], "variant %s", vr.name)
				if !g.runs {
					t.Logf("compiled only: the Go executor cannot run its externs")
					continue
				}
				// Two calls with different inputs: the second reuses the arena the first left,
				// as the CPython runtime does (constants computed once must still be intact).
				for call := range 2 {
					refIn, attrs, cIn := graphInputs(t, g.prims, rand.New(rand.NewSource(int64(i+1+1000*call))), false)
					want, err := ref.Run(g.prims, refIn, attrs)
					require.NoError(t, err)
					got, err := g.compile[v].Run(cIn, vr.nthreads)
					require.NoError(t, err, "variant %s", vr.name)
					require.Len(t, got, len(want))
					compare := testcases.CompareResults
					if normwiseGraphs[g.name] {
						compare = testcases.CompareResultsNormwise
					}
					for k := range want {
						d := compare(cResult(got[k]), refResult(want[k]), testcases.NonUnitStrides)
						require.Empty(t, d, "variant %s, call %d: output %d\n%s", vr.name, call, k, g.prims)
					}
					refAfter := slices.Clone(refIn)
					for _, n := range g.prims.Nodes {
						if n.Op == fxgraph.GetAttr {
							refAfter = append(refAfter, attrs[n.Target])
						}
					}
					require.Len(t, cIn, len(refAfter))
					for k := range refAfter {
						d := testcases.CompareResults(cResult(cIn[k]), refResult(refAfter[k]), testcases.NoStrides)
						require.Empty(t, d, "variant %s: input %s after the call\n%s", vr.name, g.lifted.Placeholders()[k].Name, g.prims)
					}
				}
			}
		})
	}
}

// regressionGraphs are minimal prims graphs of bugs the conformance suite found in inductor (the
// fuzzer's crashers, reduced), with torch's result (torch 1.13 on this machine) and what was
// wrong. TestConformanceRegressions checks that ref and the C backend both give torch's result.
var regressionGraphs = []struct {
	name  string
	graph string
	input []float64 // the one input's values
	torch []float64 // torch's result
	why   string
}{
	{"convert round trip", `graph f(x0: f32[4]):
  %c1 : i64[4] = prims.convert_element_type(%x0, torch.int64)
  %c2 : f32[4] = prims.convert_element_type(%c1, torch.float32)
  return (%c2,)
`, []float64{math.Inf(1), math.NaN(), 1e30, -2.5}, []float64{-9.223372036854775808e18, -9.223372036854775808e18, -9.223372036854775808e18, -2},
		"float→integer conversions were plain C casts, undefined behaviour for NaN, ±inf and out-of-range values; " +
			"gcc -O3 folded the fused round trip (float)(int64_t)x into truncf(x), giving [inf, nan, 1e30, -2] where " +
			"torch gives INT64_MIN (x86's cvttss2si). Found by FuzzConformance (seed -94, knobs 135). Fixed by " +
			"ptgo_f2i64/ptgo_f2i32 in kgen.convert."},
}

func TestConformanceRegressions(t *testing.T) {
	for _, kb := range regressionGraphs {
		t.Run(kb.name, func(t *testing.T) {
			g := parseGraph(t, kb.graph)
			m := g.Placeholders()[0].TensorMeta()
			refIn := ref.FromFloats(m.DType, m.Shape, kb.input)
			want, err := ref.Run(g, []*ref.Tensor{refIn}, nil)
			require.NoError(t, err)
			require.Empty(t, testcases.CompareResults(refResult(want[0]), &testcases.Result{DType: want[0].DType, Shape: want[0].Shape, F: kb.torch}, testcases.NoStrides), "ref differs from torch")
			c := compileGraph(t, g, Options{})
			got, err := c.Run([]*Tensor{FromValues(m.DType, m.Shape, kb.input)}, 1)
			require.NoError(t, err)
			d := testcases.CompareResults(cResult(got[0]), refResult(want[0]), testcases.NoStrides)
			require.Empty(t, d, "regression of %s: %s", kb.name, kb.why)
		})
	}
}
