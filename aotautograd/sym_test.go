package aotautograd_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/internal/testcases"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// symCases are prims graphs with symbolic sizes (a batch of s0 rows, a feature dim of s0). Each
// is split once with symbolic metas; the split, evaluated at several values of the symbols,
// must compute what the static split of the graph at those sizes computes.
var symCases = []struct {
	name string
	text string
	// at lists symbol values (one per symbol) to check besides the hints.
	at [][]int64
	// carried names the saved values the split adds only so that the backward gets a symbol.
	carried []string
}{
	{name: "linear_relu_sum", text: `graph case[s0=8](x0: f32[s0,16], x1: f32[32,16]!grad, x2: f32[32]!grad):
  %permute : f32[16,32]{1,16}!grad = prims.permute(%x1, [1, 0])
  %addmm   : f32[s0,32]!grad       = prims.addmm(%x2, %x0, %permute)
  %maximum : f32[s0,32]!grad       = prims.maximum(%addmm, 0.0)
  %total     : f32[]!grad            = prims.sum(%maximum, [0, 1], False)
  return (%total,)
`, at: [][]int64{{2}, {5}, {13}}},
	{name: "linear_relu_input_grad", text: `graph case[s0=8](x0: f32[s0,16]!grad, x1: f32[32,16]!grad, x2: f32[32]!grad):
  %permute : f32[16,32]{1,16}!grad = prims.permute(%x1, [1, 0])
  %addmm   : f32[s0,32]!grad       = prims.addmm(%x2, %x0, %permute)
  %maximum : f32[s0,32]!grad       = prims.maximum(%addmm, 0.0)
  %total     : f32[]!grad            = prims.sum(%maximum, [0, 1], False)
  return (%total, %maximum)
`, at: [][]int64{{2}, {3}, {11}}},
	{name: "scale_sum", text: `graph case[s0=8](x0: f32[s0,16]!grad):
  %mul : f32[s0,16]!grad = prims.mul(%x0, 2.0)
  %total : f32[]!grad      = prims.sum(%mul, [0, 1], False)
  return (%total,)
`, at: [][]int64{{2}, {3}, {17}}, carried: []string{"x0"}},
	{name: "bias_broadcast", text: `graph case[s0=8](x0: f32[s0,16]!grad, x1: f32[16]!grad, x2: f32[1,16]!grad):
  %expand   : f32[s0,16]{0,1}!grad = prims.expand(%x1, [sym("s0"), 16])
  %add      : f32[s0,16]!grad      = prims.add(%x0, %expand)
  %expand_1 : f32[s0,16]{0,1}!grad = prims.expand(%x2, [sym("s0"), 16])
  %mul      : f32[s0,16]!grad      = prims.mul(%add, %expand_1)
  %mul_1    : f32[s0,16]!grad      = prims.mul(%mul, %mul)
  %total      : f32[]!grad           = prims.sum(%mul_1, [0, 1], False)
  return (%total,)
`, at: [][]int64{{2}, {4}, {9}}},
	{name: "mean_batch", text: `graph case[s0=8](x0: f32[s0,16]!grad):
  %total : f32[16]!grad = prims.sum(%x0, [0], False)
  %div : f32[16]!grad = prims.div(%total, sym("s0"))
  %mul : f32[16]!grad = prims.mul(%div, %div)
  return (%mul,)
`, at: [][]int64{{2}, {3}, {31}}, carried: []string{"x0"}},
	{name: "layer_norm_features", text: `graph case[s0=8](x0: f32[4,s0]!grad, x1: f32[s0]!grad, x2: f32[s0]!grad):
  %sum_1    : f32[4,1]!grad        = prims.sum(%x0, [1], True)
  %div      : f32[4,1]!grad        = prims.div(%sum_1, sym("s0"))
  %expand   : f32[4,s0]{1,0}!grad  = prims.expand(%div, [4, sym("s0")])
  %sub      : f32[4,s0]!grad       = prims.sub(%x0, %expand)
  %mul_3    : f32[4,s0]!grad       = prims.mul(%sub, %sub)
  %sum_2    : f32[4,1]!grad        = prims.sum(%mul_3, [1], True)
  %div_1    : f32[4,1]!grad        = prims.div(%sum_2, sym("s0"))
  %add_1    : f32[4,1]!grad        = prims.add(%div_1, 1e-05)
  %rsqrt    : f32[4,1]!grad        = prims.rsqrt(%add_1)
  %expand_1 : f32[4,s0]{1,0}!grad  = prims.expand(%rsqrt, [4, sym("s0")])
  %mul_4    : f32[4,s0]!grad       = prims.mul(%sub, %expand_1)
  %expand_2 : f32[4,s0]{0,1}!grad  = prims.expand(%x1, [4, sym("s0")])
  %mul_5    : f32[4,s0]!grad       = prims.mul(%mul_4, %expand_2)
  %expand_3 : f32[4,s0]{0,1}!grad  = prims.expand(%x2, [4, sym("s0")])
  %add_2    : f32[4,s0]!grad       = prims.add(%mul_5, %expand_3)
  return (%add_2,)
`, at: [][]int64{{2}, {5}, {24}}},
	{name: "mlp_layer_norm_cross_entropy", text: `graph case[s0=8](x0: f32[s0,16]!grad, x1: f32[32,16]!grad, x2: f32[32]!grad, x3: f32[32]!grad, x4: f32[32]!grad, x5: f32[10,32]!grad, x6: f32[10]!grad, x7: i64[s0]):
  %permute              : f32[16,32]{1,16}!grad = prims.permute(%x1, [1, 0])
  %addmm                : f32[s0,32]!grad       = prims.addmm(%x2, %x0, %permute)
  %mul                  : f32[s0,32]!grad       = prims.mul(%addmm, 0.5)
  %mul_1                : f32[s0,32]!grad       = prims.mul(%addmm, 0.7071067811865476)
  %erf                  : f32[s0,32]!grad       = prims.erf(%mul_1)
  %mul_2                : f32[s0,32]!grad       = prims.mul(%mul, %erf)
  %add                  : f32[s0,32]!grad       = prims.add(%mul, %mul_2)
  %sum_1                : f32[s0,1]!grad        = prims.sum(%add, [1], True)
  %div                  : f32[s0,1]!grad        = prims.div(%sum_1, 32.0)
  %expand               : f32[s0,32]{1,0}!grad  = prims.expand(%div, [sym("s0"), 32])
  %sub                  : f32[s0,32]!grad       = prims.sub(%add, %expand)
  %mul_3                : f32[s0,32]!grad       = prims.mul(%sub, %sub)
  %sum_2                : f32[s0,1]!grad        = prims.sum(%mul_3, [1], True)
  %div_1                : f32[s0,1]!grad        = prims.div(%sum_2, 32.0)
  %add_1                : f32[s0,1]!grad        = prims.add(%div_1, 1e-05)
  %rsqrt                : f32[s0,1]!grad        = prims.rsqrt(%add_1)
  %expand_1             : f32[s0,32]{1,0}!grad  = prims.expand(%rsqrt, [sym("s0"), 32])
  %mul_4                : f32[s0,32]!grad       = prims.mul(%sub, %expand_1)
  %expand_2             : f32[s0,32]{0,1}!grad  = prims.expand(%x3, [sym("s0"), 32])
  %mul_5                : f32[s0,32]!grad       = prims.mul(%mul_4, %expand_2)
  %expand_3             : f32[s0,32]{0,1}!grad  = prims.expand(%x4, [sym("s0"), 32])
  %add_2                : f32[s0,32]!grad       = prims.add(%mul_5, %expand_3)
  %permute_1            : f32[32,10]{1,32}!grad = prims.permute(%x5, [1, 0])
  %addmm_1              : f32[s0,10]!grad       = prims.addmm(%x6, %add_2, %permute_1)
  %amax                 : f32[s0,1]!grad        = prims.amax(%addmm_1, [1], True)
  %expand_4             : f32[s0,10]{1,0}!grad  = prims.expand(%amax, [sym("s0"), 10])
  %sub_1                : f32[s0,10]!grad       = prims.sub(%addmm_1, %expand_4)
  %exp                  : f32[s0,10]!grad       = prims.exp(%sub_1)
  %sum_3                : f32[s0,1]!grad        = prims.sum(%exp, [1], True)
  %log                  : f32[s0,1]!grad        = prims.log(%sum_3)
  %expand_5             : f32[s0,10]{1,0}!grad  = prims.expand(%log, [sym("s0"), 10])
  %sub_2                : f32[s0,10]!grad       = prims.sub(%sub_1, %expand_5)
  %ne                   : b8[s0]                = prims.ne(%x7, -100)
  %where                : i64[s0]               = prims.where(%ne, %x7, 0)
  %unsqueeze            : i64[s0,1]             = prims.unsqueeze(%where, 1)
  %gather               : f32[s0,1]!grad        = prims.gather(%sub_2, 1, %unsqueeze)
  %squeeze              : f32[s0]!grad          = prims.squeeze(%gather, [1])
  %convert_element_type : f32[s0]               = prims.convert_element_type(%ne, torch.float32)
  %neg                  : f32[s0]!grad          = prims.neg(%squeeze)
  %mul_6                : f32[s0]!grad          = prims.mul(%neg, %convert_element_type)
  %sum_4                : f32[]!grad            = prims.sum(%mul_6, [0], False)
  %sum_5                : f32[]                 = prims.sum(%convert_element_type, [0], False)
  %div_2                : f32[]!grad            = prims.div(%sum_4, %sum_5)
  return (%div_2,)
`, at: [][]int64{{2}, {3}, {13}}},
	{name: "softmax_features", text: `graph case[s0=8](x0: f32[4,s0]!grad):
  %amax     : f32[4,1]!grad       = prims.amax(%x0, [1], True)
  %expand   : f32[4,s0]{1,0}!grad = prims.expand(%amax, [4, sym("s0")])
  %sub      : f32[4,s0]!grad      = prims.sub(%x0, %expand)
  %exp      : f32[4,s0]!grad      = prims.exp(%sub)
  %total      : f32[4,1]!grad       = prims.sum(%exp, [1], True)
  %expand_1 : f32[4,s0]{1,0}!grad = prims.expand(%total, [4, sym("s0")])
  %div      : f32[4,s0]!grad      = prims.div(%exp, %expand_1)
  return (%div,)
`, at: [][]int64{{2}, {3}, {20}}},
	{name: "view_slice_cat", text: `graph case[s0=8](x0: f32[s0,4,16]!grad, x1: f32[2,16]!grad):
  %view  : f32[sym("4*s0"),16]!grad                = prims.view(%x0, [sym("4*s0"), 16])
  %sliced : f32[sym("4*s0 - 1"),16]{16,1+16}!grad   = prims.slice(%view, 0, 1, sym("4*s0"), 1)
  %cat   : f32[sym("4*s0 + 1"),16]!grad            = prims.cat([%sliced, %x1], 0)
  %exp   : f32[sym("4*s0 + 1"),16]!grad            = prims.exp(%cat)
  %total   : f32[16]!grad                            = prims.sum(%exp, [0], False)
  return (%total,)
`, at: [][]int64{{2}, {3}, {6}}, carried: []string{"x0"}},
	{name: "prod_features", text: `graph case[s0=8](x0: f32[3,s0]!grad):
  %prod : f32[3]!grad = prims.prod(%x0, [1], False)
  return (%prod,)
`, at: [][]int64{{2}, {3}, {7}}},
	{name: "prod_all", text: `graph case[s0=6](x0: f32[s0,3]!grad):
  %prod : f32[]!grad = prims.prod(%x0, [], False)
  return (%prod,)
`, at: [][]int64{{2}, {3}, {5}}, carried: []string{"x0"}},
	{name: "cumprod_features", text: `graph case[s0=6](x0: f32[2,s0]!grad):
  %cumprod : f32[2,s0]!grad = prims.cumprod(%x0, 1)
  return (%cumprod,)
`, at: [][]int64{{2}, {3}, {9}}},
	{name: "select_last_slice_step_pad", text: `graph case[s0=8](x0: f32[s0,5]!grad):
  %select          : f32[5]{1+sym("5*s0 - 5")}!grad   = prims.select(%x0, 0, sym("s0 - 1"))
  %sliced          : f32[s0,3]{5,2}!grad              = prims.slice(%x0, 1, 0, 5, 2)
  %constant_pad_nd : f32[sym("s0 + 2"),3]!grad        = prims.constant_pad_nd(%sliced, [0, 0, 1, 1], 0.0)
  %exp             : f32[sym("s0 + 2"),3]!grad        = prims.exp(%constant_pad_nd)
  return (%select, %exp)
`, at: [][]int64{{2}, {3}, {10}}, carried: []string{"x0"}},
	{name: "two_symbols", text: `graph case[s0=8, s1=6](x0: f32[s0,s1]!grad, x1: f32[s1]!grad, x2: f32[s0,s1]!grad):
  %expand  : f32[s0,s1]{0,1}!grad = prims.expand(%x1, [sym("s0"), sym("s1")])
  %mul     : f32[s0,s1]!grad      = prims.mul(%x0, %expand)
  %maximum : f32[s0,s1]!grad      = prims.maximum(%mul, %x2)
  %total   : f32[]!grad           = prims.sum(%maximum, [], False)
  return (%total,)
`, at: [][]int64{{2, 3}, {5, 2}, {3, 7}}},
	{name: "attention_bmm", text: `graph case[s0=6](x0: f32[2,s0,8]!grad):
  %permute  : f32[2,8,s0]{sym("8*s0"),1,8}!grad = prims.permute(%x0, [0, 2, 1])
  %bmm      : f32[2,s0,s0]!grad                = prims.bmm(%x0, %permute)
  %amax     : f32[2,s0,1]!grad                 = prims.amax(%bmm, [2], True)
  %expand   : f32[2,s0,s0]{s0,1,0}!grad        = prims.expand(%amax, [2, sym("s0"), sym("s0")])
  %sub      : f32[2,s0,s0]!grad                = prims.sub(%bmm, %expand)
  %exp      : f32[2,s0,s0]!grad                = prims.exp(%sub)
  %sum_1    : f32[2,s0,1]!grad                 = prims.sum(%exp, [2], True)
  %expand_1 : f32[2,s0,s0]{s0,1,0}!grad        = prims.expand(%sum_1, [2, sym("s0"), sym("s0")])
  %div      : f32[2,s0,s0]!grad                = prims.div(%exp, %expand_1)
  %bmm_1    : f32[2,s0,8]!grad                 = prims.bmm(%div, %x0)
  return (%bmm_1,)
`, at: [][]int64{{2}, {3}, {11}}},
	{name: "index_ops", text: `graph case[s0=8](x0: f32[s0,4]!grad, x1: i64[3], x2: f32[3,4]!grad):
  %index_select : f32[3,4]!grad  = prims.index_select(%x0, 0, %x1)
  %index_put    : f32[s0,4]!grad = prims.index_put(%x0, [%x1], %x2, True)
  %exp          : f32[s0,4]!grad = prims.exp(%index_put)
  return (%index_select, %exp)
`, at: [][]int64{{2}, {3}, {9}}},
	{name: "cumsum_features", text: `graph case[s0=8](x0: f32[3,s0]!grad):
  %cumsum : f32[3,s0]!grad = prims.cumsum(%x0, 1)
  %mul    : f32[3,s0]!grad = prims.mul(%cumsum, %cumsum)
  return (%mul,)
`, at: [][]int64{{2}, {3}, {9}}},
}

func requiresGrad(g *fxgraph.Graph) []bool {
	var rg []bool
	for _, p := range g.Placeholders() {
		m := p.TensorMeta()
		rg = append(rg, m != nil && m.RequiresGrad)
	}
	return rg
}

// symInputs are deterministic inputs for g's placeholders: floats in [-1, 1], integers 0 and 1
// (class labels, indices valid at every size).
func symInputs(g *fxgraph.Graph) []*ref.Tensor {
	var ins []*ref.Tensor
	for k, p := range g.Placeholders() {
		m := p.TensorMeta()
		n := m.Numel()
		if m.DType.IsFloatingPoint() {
			v := make([]float64, n)
			for i := range v {
				v[i] = -1 + 2*math.Mod(0.37+float64(i)*0.618034+float64(k)*0.1234, 1)
			}
			ins = append(ins, ref.FromFloats(m.DType, m.Shape, v))
			continue
		}
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(i*7+k) % 2
		}
		ins = append(ins, ref.FromInts(m.DType, m.Shape, v))
	}
	return ins
}

func tangentFor(m *primtorch.TensorMeta) *ref.Tensor {
	w := make([]float64, m.Numel())
	for i := range w {
		w[i] = 1 + math.Mod(float64(i)*0.3819, 1)
	}
	return ref.FromFloats(m.DType, m.Shape, w)
}

func requireClose(t *testing.T, want, got *ref.Tensor, what string) {
	t.Helper()
	if want == nil || got == nil {
		require.True(t, want == nil && got == nil, "%s: one of the splits gives no value", what)
		return
	}
	require.Equal(t, want.Shape, got.Shape, what)
	w, g := want.Contiguous().Floats(), got.Contiguous().Floats()
	for i := range w {
		require.InDelta(t, w[i], g[i], 2e-5*(1+math.Abs(w[i])), "%s element %d", what, i)
	}
}

// runSplit runs a split's forward then backward (tangents for its differentiable outputs).
func runSplit(t *testing.T, s *aotautograd.Graphs, fw, bw *fxgraph.Graph, ins []*ref.Tensor, outMetas []*primtorch.TensorMeta) ([]*ref.Tensor, []*ref.Tensor) {
	t.Helper()
	fo, err := ref.Run(fw, ins, nil)
	require.NoError(t, err, "%s", fw)
	bwIns := append([]*ref.Tensor(nil), fo[s.NumOutputs:]...)
	for _, k := range s.Tangents {
		bwIns = append(bwIns, tangentFor(outMetas[k]))
	}
	grads, err := ref.Run(bw, bwIns, nil)
	require.NoError(t, err, "%s", bw)
	return fo[:s.NumOutputs], grads
}

func outputMetas(g *fxgraph.Graph) []*primtorch.TensorMeta {
	var out []*primtorch.TensorMeta
	for _, e := range g.OutputNode().Args[0].(fxgraph.Tuple).Elems {
		n, _ := e.(*fxgraph.Node)
		out = append(out, n.TensorMeta())
	}
	return out
}

// checkSymSplit evaluates the symbolic split s of gsym at the symbol values vals and compares
// it with the static split of gsym at those sizes: same user outputs and gradients. The
// evaluated graphs must also be valid prims graphs at those sizes (decomp.Verify recomputes
// every meta with the registry's static meta functions).
func checkSymSplit(t *testing.T, gsym *fxgraph.Graph, s *aotautograd.Graphs, vals []int64) {
	t.Helper()
	gs := instantiate(gsym, vals)
	ss, err := aotautograd.Split(gs, requiresGrad(gs), aotautograd.Options{Check: true})
	require.NoError(t, err, "%s", gs)
	require.Equal(t, ss.Tangents, s.Tangents)
	fwI, bwI := instantiate(s.Forward, vals), instantiate(s.Backward, vals)
	require.NoError(t, decomp.Verify(fwI), "at %v:\n%s", vals, fwI)
	require.NoError(t, decomp.Verify(bwI), "at %v:\n%s", vals, bwI)
	ins := symInputs(gs)
	metas := outputMetas(gs)
	wantOuts, wantGrads := runSplit(t, ss, ss.Forward, ss.Backward, ins, metas)
	gotOuts, gotGrads := runSplit(t, s, fwI, bwI, ins, metas)
	for i := range wantOuts {
		requireClose(t, wantOuts[i], gotOuts[i], fmt.Sprintf("output %d at %v", i, vals))
	}
	require.Len(t, gotGrads, len(wantGrads))
	for i := range wantGrads {
		requireClose(t, wantGrads[i], gotGrads[i], fmt.Sprintf("gradient of input %d at %v\nsymbolic backward:\n%s", i, vals, s.Backward))
	}
}

// checkSymStructure checks what a symbolic split must hold whatever the sizes: both graphs keep
// the ShapeEnv, the backward's placeholders carry every symbol it uses, a symbolic input's
// gradient has the input's symbolic sizes, and the saved values added for symbols are carried.
func checkSymStructure(t *testing.T, g *fxgraph.Graph, s *aotautograd.Graphs, carried []string) {
	t.Helper()
	require.Same(t, g.Shapes, s.Forward.Shapes)
	require.Same(t, g.Shapes, s.Backward.Shapes)
	require.NoError(t, fxgraph.CheckSymbols(s.Backward))
	b := fxgraph.SymbolBindings(s.Backward)
	for id, sb := range b {
		if g.Shapes.IsSpecialized(id) {
			continue
		}
		require.GreaterOrEqual(t, sb.Input, 0, "s%d is not bound by a backward input\n%s", id, s.Backward)
		require.GreaterOrEqual(t, sb.Dim, 0, "s%d is bound by an int placeholder\n%s", id, s.Backward)
	}
	outs := s.Backward.OutputNode().Args[0].(fxgraph.Tuple).Elems
	for i, p := range g.Placeholders() {
		pm := p.TensorMeta()
		if pm == nil || !pm.RequiresGrad || pm.Sym == nil {
			continue
		}
		gn, ok := outs[i].(*fxgraph.Node)
		require.True(t, ok, "input %s has no gradient", p.Name)
		gm := gn.TensorMeta()
		require.NotNil(t, gm.Sym, "the gradient of %s is static: %s\n%s", p.Name, gm, s.Backward)
		require.Equal(t, fmt.Sprint(pm.SymSizes()), fmt.Sprint(gm.SymSizes()), "the gradient of %s", p.Name)
	}
	var saved []string
	for _, v := range s.Saved {
		saved = append(saved, v.Name)
	}
	for _, c := range carried {
		require.Contains(t, saved, c, "the backward needs a symbol only %s carries", c)
	}
	for _, n := range s.Backward.Nodes {
		if n.Op == fxgraph.Placeholder {
			continue
		}
		for _, a := range n.Args {
			requireNoBakedSizes(t, g, n, a)
		}
	}
}

// requireNoBakedSizes fails when a size list argument of a backward node holds a constant equal
// to a symbol's hint where the corresponding dim of the node's meta is symbolic (a hint baked
// into the graph).
func requireNoBakedSizes(t *testing.T, g *fxgraph.Graph, n *fxgraph.Node, a fxgraph.Arg) {
	t.Helper()
	switch n.Target {
	case "prims.expand", "prims.view", "prims.full":
	default:
		return
	}
	l, ok := a.(fxgraph.List)
	m := n.TensorMeta()
	if !ok || m == nil || m.Sym == nil || len(l.Elems) != len(m.Sym.Sizes) {
		return
	}
	for i, e := range l.Elems {
		c, _ := e.(fxgraph.Const)
		if _, isConst := m.Sym.Sizes[i].IsConst(); !isConst {
			_, isSym := c.V.(primtorch.SymInt)
			require.True(t, isSym, "%s's size %d is %v but its meta says %s", n.Name, i, c.V, m.Sym.Sizes[i])
		}
	}
}

// TestSymbolicSplit splits each symbolic case with symbolic metas for the prims the formulas
// emit (shimMeta: the registry's prims are not all symbolic yet), checks the structure, then
// compares the split at the hints and at other sizes with the static split at those sizes.
func TestSymbolicSplit(t *testing.T) {
	restore := aotautograd.SetMetaForTest(shimMeta)
	defer restore()
	for _, tc := range symCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := fxgraph.Parse(tc.text)
			require.NoError(t, err)
			require.NotNil(t, g.Shapes)
			s, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{Check: true})
			require.NoError(t, err, "%s", g)
			require.Empty(t, g.Shapes.Specialized(), "the split specialised symbols:\n%s", s.Backward)
			checkSymStructure(t, g, s, tc.carried)
			checkSymSplit(t, g, s, g.Shapes.Hints())
			for _, vals := range tc.at {
				checkSymSplit(t, g, s, vals)
			}
			for _, p := range []aotautograd.Partition{aotautograd.SaveAll} {
				s2, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{Partition: p, Check: true})
				require.NoError(t, err)
				checkSymStructure(t, g, s2, nil)
				for _, vals := range tc.at {
					checkSymSplit(t, g, s2, vals)
				}
			}
		})
	}
}

// TestSymbolicSplitAtHintsIsStatic: the symbolic split evaluated at the hints is the static
// split of the graph at the hints, node for node, when the split saves nothing only for a
// symbol.
func TestSymbolicSplitAtHintsIsStatic(t *testing.T) {
	restore := aotautograd.SetMetaForTest(shimMeta)
	defer restore()
	for _, tc := range symCases {
		if len(tc.carried) > 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			g, err := fxgraph.Parse(tc.text)
			require.NoError(t, err)
			s, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{})
			require.NoError(t, err)
			hints := g.Shapes.Hints()
			gs := instantiate(g, hints)
			ss, err := aotautograd.Split(gs, requiresGrad(gs), aotautograd.Options{})
			require.NoError(t, err)
			require.Equal(t, ss.Forward.String(), instantiate(s.Forward, hints).String())
			require.Equal(t, ss.Backward.String(), instantiate(s.Backward, hints).String())
		})
	}
}

// TestSymbolicSplitRegistryMetas is TestSymbolicSplit with the registry's own meta functions
// (what the pipeline uses): no symbol may be specialised, and the split, min-cut and save-all,
// must be right at the hints and at the case's other sizes.
func TestSymbolicSplitRegistryMetas(t *testing.T) {
	for _, tc := range symCases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := fxgraph.Parse(tc.text)
			require.NoError(t, err)
			s, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{Check: true})
			require.NoError(t, err, "%s", g)
			require.Empty(t, g.Shapes.Specialized(), "the registry's metas specialised symbols:\n%s", s.Backward)
			checkSymStructure(t, g, s, tc.carried)
			for _, vals := range append([][]int64{g.Shapes.Hints()}, tc.at...) {
				checkSymSplit(t, g, s, vals)
			}
			s2, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{Partition: aotautograd.SaveAll, Check: true})
			require.NoError(t, err)
			require.Empty(t, g.Shapes.Specialized())
			checkSymStructure(t, g, s2, nil)
			for _, vals := range tc.at {
				checkSymSplit(t, g, s2, vals)
			}
		})
	}
}

// TestSymbolicSplitCarriesSymbol: a symbol that reaches the graph through an int input and
// that the backward needs comes to the backward as the size of a saved tensor; when no forward
// tensor has it as a size, Split refuses (the caller runs the graph with torch).
func TestSymbolicSplitCarriesSymbol(t *testing.T) {
	restore := aotautograd.SetMetaForTest(shimMeta)
	defer restore()
	g, err := fxgraph.Parse(`graph case[s0=8](x0: f32[16]!grad, n: sym("s0")):
  %expand : f32[s0,16]{0,1}!grad = prims.expand(%x0, [sym("s0"), 16])
  %mul    : f32[s0,16]!grad      = prims.mul(%expand, 2.0)
  %total  : f32[]!grad           = prims.sum(%mul, [0, 1], False)
  return (%total,)
`)
	require.NoError(t, err)
	s, err := aotautograd.Split(g, []bool{true, false}, aotautograd.Options{})
	require.NoError(t, err)
	checkSymStructure(t, g, s, []string{"mul"})

	g, err = fxgraph.Parse(`graph case[s0=8](x0: f32[16]!grad, n: sym("s0")):
  %expand : f32[sym("2*s0"),16]{0,1}!grad = prims.expand(%x0, [sym("2*s0"), 16])
  %mul    : f32[sym("2*s0"),16]!grad      = prims.mul(%expand, 2.0)
  %total  : f32[]!grad                    = prims.sum(%mul, [0, 1], False)
  return (%total,)
`)
	require.NoError(t, err)
	_, err = aotautograd.Split(g, []bool{true, false}, aotautograd.Options{})
	require.ErrorIs(t, err, primtorch.ErrUnsupported)
	require.ErrorContains(t, err, "size symbol s0")
}

// TestToTorchSymbolic is the aot_eager path with symbolic sizes: each symbolic case is split
// once with the registry's metas, both graphs are converted with ToTorch, kept symbolic
// (EncodeJSON writes the symbols' bindings; fx_export reads them as size() calls) and run with
// torch (testdata/run_torch.py) at the hints and at the case's other sizes; outputs and
// gradients must be those of the static split at those sizes (the reference interpreter).
func TestToTorchSymbolic(t *testing.T) {
	var payload []torchCase
	type expect struct {
		outs, grads []*ref.Tensor
		fw, bw      string
	}
	var want []expect
	for _, tc := range symCases {
		g, err := fxgraph.Parse(tc.text)
		require.NoError(t, err)
		s, err := aotautograd.Split(g, requiresGrad(g), aotautograd.Options{Check: true})
		require.NoError(t, err, tc.name)
		var js [2]string
		for k, x := range []*fxgraph.Graph{s.Forward, s.Backward} {
			tg, err := aotautograd.ToTorch(x)
			require.NoError(t, err, "%s\n%s", tc.name, x)
			require.NotNil(t, tg.Shapes, "%s: ToTorch made the graph static", tc.name)
			data, err := fxgraph.EncodeJSON(tg)
			require.NoError(t, err, "%s\n%s", tc.name, tg)
			require.Contains(t, string(data), `"symbols"`, tc.name)
			js[k] = string(data)
		}
		for _, vals := range append([][]int64{g.Shapes.Hints()}, tc.at...) {
			gs := instantiate(g, vals)
			ss, err := aotautograd.Split(gs, requiresGrad(gs), aotautograd.Options{})
			require.NoError(t, err)
			ins := symInputs(gs)
			metas := outputMetas(gs)
			outs, grads := runSplit(t, ss, ss.Forward, ss.Backward, ins, metas)
			c := torchCase{Name: fmt.Sprintf("%s%v", tc.name, vals), Forward: js[0], Backward: js[1],
				Attrs: []testcases.Tensor{}, Tangents: []*testcases.Tensor{}, NumOutputs: s.NumOutputs}
			for i, x := range ins {
				c.Inputs = append(c.Inputs, recordTensor(fmt.Sprintf("x%d", i), x))
			}
			for _, k := range s.Tangents {
				tt := recordTensor("t", tangentFor(metas[k]))
				c.Tangents = append(c.Tangents, &tt)
			}
			payload = append(payload, c)
			want = append(want, expect{outs, grads, js[0], js[1]})
		}
	}
	for i, r := range runTorch(t, payload) {
		w := want[i]
		t.Run(r.Name, func(t *testing.T) {
			require.Empty(t, r.Error, "torch could not run the symbolic graphs:\nforward:\n%s\nbackward:\n%s", w.fw, w.bw)
			require.Len(t, r.Outputs, len(w.outs))
			for k := range w.outs {
				requireClose(t, w.outs[k], fromRecorded(t, r.Outputs[k]), fmt.Sprintf("output %d", k))
			}
			require.Len(t, r.Grads, len(w.grads))
			for k := range w.grads {
				requireClose(t, w.grads[k], fromRecorded(t, r.Grads[k]), fmt.Sprintf("gradient of input %d", k))
			}
		})
	}

	// A graph whose symbols are all specialised becomes the static graph at the hints.
	var text string
	for _, tc := range symCases {
		if tc.name == "scale_sum" {
			text = tc.text
		}
	}
	g, err := fxgraph.Parse(text)
	require.NoError(t, err)
	g.Shapes.Specialize(0, "test")
	tg, err := aotautograd.ToTorch(g)
	require.NoError(t, err)
	require.NotContains(t, tg.String(), "s0")
	require.Contains(t, tg.String(), "f32[8,16]")
}

// recordTensor is a reference tensor as run_torch.py reads one (contiguous storage).
func recordTensor(name string, x *ref.Tensor) testcases.Tensor {
	m := x.Meta()
	c := x.Contiguous()
	out := testcases.Tensor{Name: name, DType: m.DType.String(), Shape: m.Shape, Strides: primtorch.ContiguousStrides(m.Shape), Raw: []any{}}
	if m.DType.IsFloatingPoint() {
		for _, v := range c.Floats() {
			out.Raw = append(out.Raw, v)
		}
	} else {
		for _, v := range c.Ints() {
			out.Raw = append(out.Raw, v)
		}
	}
	return out
}

// fromRecorded is a tensor run_torch.py wrote as a reference tensor (nil for None).
func fromRecorded(t *testing.T, j *testcases.Tensor) *ref.Tensor {
	if j == nil {
		return nil
	}
	dt, err := testcases.ParseDType(j.DType)
	require.NoError(t, err)
	if dt.IsFloatingPoint() {
		v := make([]float64, len(j.Values))
		for i, e := range j.Values {
			v[i] = testcases.Number(e)
		}
		return ref.FromFloats(dt, j.Shape, v)
	}
	v := make([]int64, len(j.Values))
	for i, e := range j.Values {
		v[i] = testcases.Int(e)
	}
	return ref.FromInts(dt, j.Shape, v)
}

// TestSymbolicSplitGuards: what a formula cannot do for every size it specialises or guards,
// in the graph's ShapeEnv: as_strided's gradient needs the storage geometry concrete (s0 is
// specialised, the split is right at the hint), cumprod's exact gradient holds for scans of at
// most 256 elements (a guard, s0 stays symbolic).
func TestSymbolicSplitGuards(t *testing.T) {
	restore := aotautograd.SetMetaForTest(shimMeta)
	defer restore()
	g, err := fxgraph.Parse(`graph case[s0=8](x0: f32[s0,4]!grad):
  %as_strided : f32[2,2]{1,2+1}!grad = prims.as_strided(%x0, [2, 2], [1, 2], 1)
  %exp        : f32[2,2]!grad        = prims.exp(%as_strided)
  return (%exp,)
`)
	require.NoError(t, err)
	s, err := aotautograd.Split(g, []bool{true}, aotautograd.Options{Check: true})
	require.NoError(t, err)
	require.Contains(t, g.Shapes.Specialized()[0], "as_strided")
	require.Contains(t, fmt.Sprint(g.Shapes.Guards()), "s0 == 8")
	checkSymSplit(t, g, s, g.Shapes.Hints())

	g, err = fxgraph.Parse(`graph case[s0=6](x0: f32[2,s0]!grad):
  %cumprod : f32[2,s0]!grad = prims.cumprod(%x0, 1)
  return (%cumprod,)
`)
	require.NoError(t, err)
	_, err = aotautograd.Split(g, []bool{true}, aotautograd.Options{Check: true})
	require.NoError(t, err)
	require.Empty(t, g.Shapes.Specialized())
	require.Empty(t, g.Shapes.Guards()) // cumprod's gradient is O(n) per row at any length
}
