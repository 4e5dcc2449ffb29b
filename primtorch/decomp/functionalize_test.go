package decomp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// tg builds small torch-level graphs in Go: call arguments are *fxgraph.Node, Go numbers,
// []any (lists), fxgraph.Arg values, or kw (keyword arguments, last).
type tg struct {
	t    *testing.T
	g    *fxgraph.Graph
	line int
}

type kw map[string]any

func newTG(t *testing.T) *tg { return &tg{t: t, g: fxgraph.New("f")} }

func f32(shape ...int64) *primtorch.TensorMeta {
	return primtorch.NewContiguous(primtorch.Float32, shape, primtorch.CPU)
}

func (b *tg) in(name string, m *primtorch.TensorMeta) *fxgraph.Node {
	return b.g.AddPlaceholder(name, m)
}

func (b *tg) attr(path string, m *primtorch.TensorMeta) *fxgraph.Node { return b.g.AddGetAttr(path, m) }

func goArg(x any) fxgraph.Arg {
	switch v := x.(type) {
	case fxgraph.Arg:
		return v
	case int:
		return fxgraph.Const{V: int64(v)}
	case []any:
		l := fxgraph.List{}
		for _, e := range v {
			l.Elems = append(l.Elems, goArg(e))
		}
		return l
	}
	return fxgraph.Const{V: x}
}

// call appends a call at line "f.py:<k>" (k counting calls from 1).
func (b *tg) call(target string, args ...any) *fxgraph.Node {
	var fargs []fxgraph.Arg
	var kwargs []fxgraph.Kwarg
	for _, a := range args {
		if k, ok := a.(kw); ok {
			for name, v := range k {
				kwargs = append(kwargs, fxgraph.Kwarg{Name: name, Value: goArg(v)})
			}
			continue
		}
		fargs = append(fargs, goArg(a))
	}
	n, _ := addNode(b.t, b.g, target, fargs, kwargs)
	b.line++
	n.Where = "f.py:" + string(rune('0'+b.line))
	return n
}

func (b *tg) out(outs ...*fxgraph.Node) *fxgraph.Graph {
	tup := fxgraph.Tuple{}
	for _, o := range outs {
		tup.Elems = append(tup.Elems, o)
	}
	b.g.AddOutput(tup)
	return b.g
}

func decompose(t *testing.T, g *fxgraph.Graph) *fxgraph.Graph {
	t.Helper()
	pg, err := decomp.Decompose(g, decomp.Options{Check: true})
	require.NoError(t, err, "%s", g)
	return pg
}

var unsupportedTests = []struct {
	name  string
	build func(b *tg) *fxgraph.Graph
	msg   string
}{
	{"write through a view of an input", func(b *tg) *fxgraph.Graph {
		x := b.in("x", f32(3, 4))
		v := b.call("Tensor.t", x)
		b.call("Tensor.add_", v, 1.0)
		return b.out(b.call("torch.sum", x))
	}, "writes into a view of graph input x (node add = Tensor.add_ at f.py:2)"},
	{"setitem through a view of an input", func(b *tg) *fxgraph.Graph {
		x := b.in("x", f32(3, 4))
		row := b.call("operator.getitem", x, int64(0))
		b.call("operator.setitem", row, int64(1), 5.0)
		return b.out(b.call("torch.sum", x))
	}, "writes into a view of graph input x (node setitem = operator.setitem at f.py:2)"},
	{"an output aliases a written input", func(b *tg) *fxgraph.Graph {
		x := b.in("x", f32(3))
		return b.out(b.call("Tensor.mul_", x, 2.0))
	}, "an output aliases graph input x, which the graph mutates"},
	{"a view output of a written input", func(b *tg) *fxgraph.Graph {
		x := b.in("x", f32(3, 2))
		v := b.call("Tensor.t", x)
		b.call("Tensor.zero_", x)
		return b.out(v)
	}, "an output aliases graph input x, which the graph mutates"},
}

// TestUnsupportedWrites: writes the prims graph cannot express fail with ErrUnsupported, naming
// the op and the user's line.
func TestUnsupportedWrites(t *testing.T) {
	for _, tt := range unsupportedTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decomp.Decompose(tt.build(newTG(t)), decomp.Options{Check: true})
			require.Error(t, err)
			require.True(t, errors.Is(err, primtorch.ErrUnsupported), "%v", err)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

// TestOutputAliases: outputs that are inputs or views of them stay view chains of the
// placeholders; computed outputs do not alias.
func TestOutputAliases(t *testing.T) {
	b := newTG(t)
	x, y := b.in("x", f32(3, 4)), b.in("y", f32(4))
	w := b.attr("w", f32(4))
	row := b.call("operator.getitem", b.call("Tensor.t", x), int64(1))
	same := b.call("Tensor.contiguous", y)
	flat := b.call("torch.reshape", b.call("Tensor.t", x), []any{int64(-1)}) // a copy in eager
	sum := b.call("torch.add", y, w)
	g := b.out(row, same, flat, sum, b.call("Tensor.detach", w))
	pg := decompose(t, g)
	var got []string
	for _, a := range decomp.OutputAliases(pg) {
		got = append(got, strings.Join([]string{string(rune('0' + a.Output)), a.Input.Name, map[bool]string{true: "view", false: "itself"}[a.View]}, " "))
	}
	require.Equal(t, []string{"0 x view", "1 y itself", "4 w view"}, got, "%s", pg)

	in := []*ref.Tensor{ref.FromFloats(primtorch.Float32, []int64{3, 4}, seq(12)), ref.FromFloats(primtorch.Float32, []int64{4}, seq(4))}
	attrs := map[string]*ref.Tensor{"w": ref.FromFloats(primtorch.Float32, []int64{4}, seq(4))}
	outs, err := ref.Run(pg, in, attrs)
	require.NoError(t, err)
	require.True(t, outs[0].SameStorage(in[0]), "the view output shares the input's storage")
	require.Same(t, in[1], outs[1])
	require.False(t, outs[2].SameStorage(in[0]), "reshape of a transpose copies")
	require.Equal(t, []float64{1, 5, 9}, outs[0].Floats())
	require.Equal(t, []float64{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, outs[2].Floats())
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// TestWriteOrder: writes to two inputs read each other's old values; the epilogue reads every
// source before writing.
func TestWriteOrder(t *testing.T) {
	b := newTG(t)
	x, y := b.in("x", f32(3)), b.in("y", f32(3))
	b.call("Tensor.copy_", y, x) // y = old x
	b.call("Tensor.copy_", x, b.call("torch.mul", y, 10.0))
	b.call("Tensor.add_", y, 1.0) // y = old x + 1
	pg := decompose(t, b.out(b.call("torch.clone", y)))
	xs, ys := ref.FromFloats(primtorch.Float32, []int64{3}, []float64{1, 2, 3}), ref.FromFloats(primtorch.Float32, []int64{3}, []float64{7, 8, 9})
	outs, err := ref.Run(pg, []*ref.Tensor{xs, ys}, nil)
	require.NoError(t, err)
	require.Equal(t, []float64{10, 20, 30}, xs.Floats())
	require.Equal(t, []float64{2, 3, 4}, ys.Floats())
	require.Equal(t, []float64{2, 3, 4}, outs[0].Floats())
	require.Equal(t, 2, strings.Count(pg.String(), "prims.copy_"), "%s", pg)
}

// TestSelfCopyEpilogue: an input's new value that reads the input itself is cloned before the
// epilogue overwrites it. (x.copy_(x.t()) itself is refused by eager: the same memory in
// another order is torch's PARTIAL overlap, so that graph runs with torch.)
func TestSelfCopyEpilogue(t *testing.T) {
	b := newTG(t)
	x := b.in("x", f32(2, 2))
	b.call("Tensor.copy_", x, b.call("torch.mul", b.call("Tensor.t", x), 1.0))
	pg := decompose(t, b.out(b.call("torch.sum", x)))
	xs := ref.FromFloats(primtorch.Float32, []int64{2, 2}, []float64{1, 2, 3, 4})
	_, err := ref.Run(pg, []*ref.Tensor{xs}, nil)
	require.NoError(t, err)
	require.Equal(t, []float64{1, 3, 2, 4}, xs.Floats())
}

// TestFallbacks: unknown targets and random ops stay prims.fallback with the node's meta;
// in-place fallbacks get a clone and write their result back.
func TestFallbacks(t *testing.T) {
	b := newTG(t)
	x := b.in("x", f32(3))
	r := b.g.AddCall("torch.special.i0", []fxgraph.Arg{x}, nil, f32(3))
	u := b.g.AddMethod("uniform_", []fxgraph.Arg{x}, nil, f32(3))
	_ = u
	d := b.call("torch.nn.functional.dropout", r, kw{"p": 0.2})
	g := b.out(d)
	pg := decompose(t, g)
	text := pg.String()
	require.Contains(t, text, `prims.fallback("torch.special.i0", %x)`)
	require.Contains(t, text, `prims.fallback("Tensor.uniform_", %clone)`)
	// training dropout of a contiguous tensor: torch draws the noise (dropout of ones), ptgo multiplies
	require.Contains(t, text, `prims.fallback("torch.dropout", %full, 0.2, True)`)
	require.Contains(t, text, `prims.mul(%fallback, %fallback_2)`)
	require.Contains(t, text, "prims.copy_(%x, %fallback_1)")
	_, err := ref.Run(pg, []*ref.Tensor{ref.FromFloats(primtorch.Float32, []int64{3}, seq(3))}, nil)
	require.ErrorIs(t, err, ref.ErrFallback)
}

// TestGradModeCallsDropped: torch._C._set_grad_enabled calls leave no trace.
func TestGradModeCallsDropped(t *testing.T) {
	b := newTG(t)
	x := b.in("x", f32(3))
	b.g.AddCall("torch._C._set_grad_enabled", []fxgraph.Arg{fxgraph.Const{V: false}}, nil, nil)
	y := b.call("torch.relu", x)
	b.g.AddCall("torch._C._set_grad_enabled", []fxgraph.Arg{fxgraph.Const{V: true}}, nil, nil)
	pg := decompose(t, b.out(y))
	require.NotContains(t, pg.String(), "grad_enabled")
	require.Contains(t, pg.String(), "prims.maximum(%x, 0.0)")
}

// TestDeterministic: decomposing the same graph twice prints the same prims graph, and leaves
// the torch-level graph as it was (the caller may still run it).
func TestDeterministic(t *testing.T) {
	cases := loadCases(t)
	for i := range cases {
		g, _ := build(t, &cases[i])
		before := g.String()
		require.Equal(t, decompose(t, g).String(), decompose(t, g).String(), cases[i].name())
		require.Equal(t, before, g.String(), "Decompose changed the torch-level graph of %s", cases[i].name())
	}
}
