package inductor

import (
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

var symHeader = regexp.MustCompile(`^graph (\w+)\[([^\]]*)\]`)

// withHints rewrites a symbolic graph text's header to give the symbols the hints vals.
func withHints(text string, vals []int64) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprintf("s%d=%d", i, v)
	}
	return symHeader.ReplaceAllString(text, "graph $1["+strings.Join(parts, ", ")+"]")
}

// staticAt parses a symbolic graph text at symbol values vals and specialises it: the static
// graph the symbolic one stands for at those sizes.
func staticAt(t testing.TB, text string, vals []int64) *fxgraph.Graph {
	t.Helper()
	g := parseGraph(t, withHints(text, vals))
	var conv func(a fxgraph.Arg) fxgraph.Arg
	conv = func(a fxgraph.Arg) fxgraph.Arg {
		switch a := a.(type) {
		case fxgraph.Const:
			if s, ok := a.V.(primtorch.SymInt); ok {
				return fxgraph.Const{V: s.Hint()}
			}
		case fxgraph.List:
			out := fxgraph.List{}
			for _, e := range a.Elems {
				out.Elems = append(out.Elems, conv(e))
			}
			return out
		case fxgraph.Tuple:
			out := fxgraph.Tuple{}
			for _, e := range a.Elems {
				out.Elems = append(out.Elems, conv(e))
			}
			return out
		}
		return a
	}
	for _, n := range g.Nodes {
		n.Meta = primtorch.SpecializeValue(n.Meta, "test")
		for i, a := range n.Args {
			n.Args[i] = conv(a)
		}
		for i := range n.Kwargs {
			n.Kwargs[i].Value = conv(n.Kwargs[i].Value)
		}
	}
	g.Shapes = nil
	require.False(t, IsSymbolic(g))
	return g
}

// symCase is a symbolic graph and the symbol values to run it at.
type symCase struct {
	name string
	text string
	vals [][]int64
}

var symCases = []symCase{
	{name: "pointwise_broadcast", text: `graph f[s0=8](x: f32[s0,64], b: f32[64]):
  %e : f32[64] = prims.exp(%b)
  %bb : f32[s0,64] = prims.expand(%e, [sym("s0"), 64])
  %y : f32[s0,64] = prims.mul(%x, %bb)
  %z : f32[s0,64] = prims.tanh(%y)
  %w : f32[s0,64] = prims.add(%z, 1.5)
  return (%w,)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "layernorm_rows", text: `graph f[s0=8](x: f32[s0,96], w: f32[96], b: f32[96]):
  %s   : f32[s0,1] = prims.sum(%x, [1], True)
  %mu  : f32[s0,1] = prims.div(%s, 96.0)
  %mue : f32[s0,96] = prims.expand(%mu, [sym("s0"), 96])
  %d   : f32[s0,96] = prims.sub(%x, %mue)
  %sq  : f32[s0,96] = prims.mul(%d, %d)
  %v   : f32[s0,1] = prims.sum(%sq, [1], True)
  %var : f32[s0,1] = prims.div(%v, 96.0)
  %ve  : f32[s0,1] = prims.add(%var, 1e-05)
  %r   : f32[s0,1] = prims.rsqrt(%ve)
  %re  : f32[s0,96] = prims.expand(%r, [sym("s0"), 96])
  %n   : f32[s0,96] = prims.mul(%d, %re)
  %we  : f32[s0,96] = prims.expand(%w, [sym("s0"), 96])
  %be  : f32[s0,96] = prims.expand(%b, [sym("s0"), 96])
  %nw  : f32[s0,96] = prims.mul(%n, %we)
  %out : f32[s0,96] = prims.add(%nw, %be)
  return (%out,)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "softmax_rows", text: `graph f[s0=8](x: f32[s0,40]):
  %m  : f32[s0,1]  = prims.amax(%x, [1], True)
  %me : f32[s0,40] = prims.expand(%m, [sym("s0"), 40])
  %d  : f32[s0,40] = prims.sub(%x, %me)
  %e  : f32[s0,40] = prims.exp(%d)
  %s  : f32[s0,1]  = prims.sum(%e, [1], True)
  %se : f32[s0,40] = prims.expand(%s, [sym("s0"), 40])
  %o  : f32[s0,40] = prims.div(%e, %se)
  return (%o,)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "sum_dim0_and_mean", text: `graph f[s0=8](x: f32[s0,300]):
  %s  : f32[300] = prims.sum(%x, [0], False)
  %mu : f32[300] = prims.div(%s, sym("s0"))
  %mx : f32[300] = prims.amax(%x, [0], False)
  %t  : f32[] = prims.sum(%x, None, False)
  return (%s, %mu, %mx, %t)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "full_of_a_size", text: `graph f[s0=8](x: f32[s0,3]):
  %n  : f64[] = prims.full([], sym("3*s0"), torch.float64)
  %n1 : f64[] = prims.full([], sym("3*s0 - 1"), torch.float64)
  %c  : f64[] = prims.div(%n, %n1)
  %cf : f32[] = prims.convert_element_type(%c, torch.float32)
  %ce : f32[s0,3] = prims.expand(%cf, [sym("s0"), 3])
  %y  : f32[s0,3] = prims.mul(%x, %ce)
  return (%y,)
`, vals: [][]int64{{2}, {3}, {17}, {64}}},
	{name: "views_permute", text: `graph f[s0=8](x: f32[s0,4,16]):
  %v  : f32[s0,64] = prims.view(%x, [sym("s0"), 64])
  %t  : f32[64,s0]{1,64} = prims.permute(%v, [1, 0])
  %e  : f32[64,s0]{1,64} = prims.exp(%t)
  %m  : f32[64] = prims.amax(%t, [1], False)
  %f  : f32[sym("64*s0")] = prims.view(%v, [sym("64*s0")])
  %g  : f32[sym("64*s0")] = prims.neg(%f)
  %u  : f32[s0,1,64] = prims.unsqueeze(%v, 1)
  %q  : f32[s0,64] = prims.squeeze(%u, [1])
  %sl : f32[s0,32]{64,1} = prims.slice(%q, 1, 8, 40, 1)
  %sq : f32[s0,32] = prims.mul(%sl, %sl)
  %rg : f32[sym("4*s0"),16] = prims.view(%x, [sym("4*s0"), 16])
  %rs : f32[sym("4*s0")] = prims.sum(%rg, [1], False)
  %r2 : f32[sym("2*s0"),32] = prims.view(%v, [sym("2*s0"), 32])
  %tr : f32[32,sym("2*s0")]{1,32} = prims.permute(%r2, [1, 0])
  %ts : f32[32] = prims.sum(%tr, [1], False)
  return (%e, %m, %g, %sq, %rs, %ts)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "mm_addmm", text: `graph f[s0=8](x: f32[s0,32], w: f32[32,16], b: f32[16], y: f32[s0,16]):
  %mm : f32[s0,16] = prims.mm(%x, %w)
  %am : f32[s0,16] = prims.addmm(%b, %x, %w)
  %s  : f32[s0,16] = prims.add(%am, %y)
  return (%mm, %s)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "softmax_symbolic_rows", text: `graph f[s0=8, s1=16](x: f32[s0,s1]):
  %m  : f32[s0,1]  = prims.amax(%x, [1], True)
  %me : f32[s0,s1] = prims.expand(%m, [sym("s0"), sym("s1")])
  %d  : f32[s0,s1] = prims.sub(%x, %me)
  %e  : f32[s0,s1] = prims.exp(%d)
  %s  : f32[s0,1]  = prims.sum(%e, [1], True)
  %se : f32[s0,s1] = prims.expand(%s, [sym("s0"), sym("s1")])
  %o  : f32[s0,s1] = prims.div(%e, %se)
  return (%o,)
`, vals: [][]int64{{2, 3}, {3, 2}, {17, 5}, {64, 64}, {1000, 7}, {5, 1000}}},
	{name: "layernorm_symbolic_rows", text: `graph f[s0=8, s1=16](x: f32[s0,s1], w: f32[s1]):
  %s   : f32[s0,1] = prims.sum(%x, [1], True)
  %mu  : f32[s0,1] = prims.div(%s, sym("s1"))
  %mue : f32[s0,s1] = prims.expand(%mu, [sym("s0"), sym("s1")])
  %d   : f32[s0,s1] = prims.sub(%x, %mue)
  %sq  : f32[s0,s1] = prims.mul(%d, %d)
  %v   : f32[s0,1] = prims.sum(%sq, [1], True)
  %var : f32[s0,1] = prims.div(%v, sym("s1"))
  %ve  : f32[s0,1] = prims.add(%var, 1e-05)
  %r   : f32[s0,1] = prims.rsqrt(%ve)
  %re  : f32[s0,s1] = prims.expand(%r, [sym("s0"), sym("s1")])
  %n   : f32[s0,s1] = prims.mul(%d, %re)
  %we  : f32[s0,s1] = prims.expand(%w, [sym("s0"), sym("s1")])
  %out : f32[s0,s1] = prims.mul(%n, %we)
  return (%out,)
`, vals: [][]int64{{2, 3}, {3, 2}, {17, 5}, {64, 64}, {1000, 7}, {5, 1000}}},
	{name: "sum_symbolic_dim0", text: `graph f[s0=8, s1=16](x: f32[s0,s1]):
  %s  : f32[s1] = prims.sum(%x, [0], False)
  %mx : f32[s1] = prims.amax(%x, [0], False)
  %am : i64[s0] = prims.argmax(%x, [1], False)
  return (%s, %mx, %am)
`, vals: [][]int64{{2, 3}, {3, 2}, {17, 5}, {64, 64}, {1000, 7}, {5, 1000}}},
	{name: "transpose_symbolic", text: `graph f[s0=8, s1=16](x: f32[s0,s1], y: f32[s1,s0]):
  %t : f32[s1,s0]{1,s1} = prims.permute(%x, [1, 0])
  %a : f32[s1,s0] = prims.add(%t, %y)
  %c : f32[s0,s1]{1,s0} = prims.permute(%a, [1, 0])
  %e : f32[s0,s1] = prims.exp(%c)
  %u : f32[s1,1,s0]{s0,s0,1} = prims.unsqueeze(%y, 1)
  %w : f32[s1,1,s0] = prims.neg(%u)
  %sl : f32[s0,1]{s1,1} = prims.slice(%x, 1, 0, 1, 1)
  %z : f32[s0,1] = prims.mul(%sl, 2.0)
  return (%a, %t, %e, %w, %z)
`, vals: [][]int64{{2, 3}, {3, 2}, {17, 5}, {64, 64}, {1000, 7}, {5, 1000}}},
	{name: "mm_symbolic_mk", text: `graph f[s0=8, s1=16](x: f32[s0,s1], w: f32[s1,24], b: f32[24]):
  %mm : f32[s0,24] = prims.mm(%x, %w)
  %am : f32[s0,24] = prims.addmm(%b, %x, %w)
  %g  : f32[s0,24] = prims.tanh(%am)
  %wt : f32[24,s1]{1,24} = prims.permute(%w, [1, 0])
  %bk : f32[s0,s1] = prims.mm(%mm, %wt)
  return (%mm, %g, %bk)
`, vals: [][]int64{{2, 3}, {3, 2}, {17, 5}, {64, 64}, {1000, 7}, {5, 1000}}},
	{name: "copy_into_input", text: `graph f[s0=8, s1=16](x: f32[s0,s1], y: f32[s1]):
  %ye : f32[s0,s1] = prims.expand(%y, [sym("s0"), sym("s1")])
  %a : f32[s0,s1] = prims.add(%x, %ye)
  %c : f32[s0,s1] = prims.copy_(%x, %a)
  %s : f32[s1] = prims.sum(%a, [0], False)
  return (%s,)
`, vals: [][]int64{{2, 3}, {17, 5}, {64, 64}, {1000, 7}}},
	{name: "flatten_for_linear", text: `graph f[s0=8, s1=16](x: f32[s0,s1,8], w: f32[8,4], z: f32[2,s1,8]):
  %e  : f32[s0,s1,8] = prims.exp(%x)
  %v  : f32[sym("s0*s1"),8] = prims.view(%e, [sym("s0*s1"), 8])
  %mm : f32[sym("s0*s1"),4] = prims.mm(%v, %w)
  %b  : f32[s0,s1,4] = prims.view(%mm, [sym("s0"), sym("s1"), 4])
  %r  : f32[s0,s1,4] = prims.tanh(%b)
  %vz : f32[sym("2*s1"),8] = prims.view(%z, [sym("2*s1"), 8])
  %n  : f32[sym("2*s1"),8] = prims.neg(%vz)
  %f  : f32[sym("8*s0*s1")] = prims.view(%x, [sym("8*s0*s1")])
  %t  : f32[] = prims.sum(%f, None, False)
  return (%r, %n, %t)
`, vals: [][]int64{{2, 3}, {17, 5}, {3, 64}, {1000, 7}}},
	{name: "data_movement_static_dims", text: `graph f[s0=8](x: f32[s0,4], y: f32[s0,3], idx: i64[s0,2], sel: i64[2]):
  %c  : f32[s0,7] = prims.cat([%x, %y], 1)
  %p  : f32[s0,9] = prims.constant_pad_nd(%c, [1, 1], 0.5)
  %g  : f32[s0,2] = prims.gather(%x, 1, %idx)
  %isel : f32[s0,2] = prims.index_select(%y, 1, %sel)
  %io : i64[s0] = prims.iota(sym("s0"), 0, 2, torch.int64)
  %fl : f32[s0,3] = prims.full([sym("s0"), 3], 1.25, torch.float32)
  %ad : f32[s0,3] = prims.add(%y, %fl)
  %cs : f32[s0,4] = prims.cumsum(%x, 0)
  %cp : f32[s0,3] = prims.cumprod(%ad, 1)
  return (%p, %g, %isel, %io, %cs, %cp)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "mm_chain", text: `graph f[s0=8](x: f32[s0,16], w1: f32[16,32], w2: f32[32,16], w3: f32[16,32], w4: f32[32,8]):
  %a : f32[s0,32] = prims.mm(%x, %w1)
  %e : f32[s0,32] = prims.mm(%x, %w3)
  %ae : f32[s0,32] = prims.sub(%a, %e)
  %ta : f32[s0,32] = prims.tanh(%ae)
  %b : f32[s0,16] = prims.mm(%ta, %w2)
  %tb : f32[s0,16] = prims.tanh(%b)
  %c : f32[s0,32] = prims.mm(%tb, %w3)
  %tc : f32[s0,32] = prims.tanh(%c)
  %d : f32[s0,8] = prims.mm(%tc, %w4)
  return (%d,)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
	{name: "bmm_symbolic", text: `graph f[s0=8, s1=16](q: f32[3,s0,8], k: f32[3,s1,8]):
  %kt : f32[3,8,s1]{sym("8*s1"),1,8} = prims.permute(%k, [0, 2, 1])
  %sc : f32[3,s0,s1] = prims.bmm(%q, %kt)
  %m  : f32[3,s0,1] = prims.amax(%sc, [2], True)
  %me : f32[3,s0,s1] = prims.expand(%m, [3, sym("s0"), sym("s1")])
  %d  : f32[3,s0,s1] = prims.sub(%sc, %me)
  %e  : f32[3,s0,s1] = prims.exp(%d)
  %o  : f32[3,s0,8] = prims.bmm(%e, %k)
  return (%o,)
`, vals: [][]int64{{2, 3}, {17, 5}, {3, 64}, {100, 7}}},
	{name: "embedding_index", text: `graph f[s0=8, s1=16](wt: f32[50,8], idx: i64[s0,s1], x: f32[s0,6], sel: i64[4]):
  %e : f32[s0,s1,8] = prims.index(%wt, [%idx])
  %t : f32[s0,s1,8] = prims.tanh(%e)
  %c : f32[s0,4] = prims.index(%x, [None, %sel])
  return (%t, %c)
`, vals: [][]int64{{2, 3}, {17, 5}, {3, 64}, {100, 7}}},
	{name: "scatter_index_put", text: `graph f[s0=8](x: f32[s0,6], idx: i64[s0,2], v: f32[s0,2], sel: i64[3], w: f32[s0,3]):
  %s : f32[s0,6] = prims.scatter(%x, 1, %idx, %v)
  %p : f32[s0,6] = prims.index_put(%x, [None, %sel], %w, True)
  return (%s, %p)
`, vals: [][]int64{{2}, {3}, {17}, {64}, {1000}}},
}

// symCasesData are symbolic cases of data movement along symbolic dims (checked like symCases,
// without goldens).
var symCasesData = []symCase{
	{name: "cat_along_symbolic", text: `graph f[s0=8](x: f32[2,s0,8], c: f32[2,1,8], y: f32[2,s0,8]):
  %a : f32[2,sym("s0 + 1"),8] = prims.cat([%c, %x], 1)
  %t : f32[2,sym("s0 + 1"),8] = prims.tanh(%a)
  %b : f32[2,sym("2*s0 + 1"),8] = prims.cat([%x, %c, %y], 1)
  %n : f32[2,sym("2*s0 + 1"),8] = prims.neg(%b)
  return (%t, %n)
`, vals: [][]int64{{2}, {3}, {17}, {64}}},
	{name: "pad_symbolic", text: `graph f[s0=8](x: f32[2,s0,8]):
  %p : f32[2,sym("s0 + 3"),9] = prims.constant_pad_nd(%x, [1, 0, 1, 2], 0.5)
  %t : f32[2,sym("s0 + 3"),9] = prims.tanh(%p)
  %q : f32[2,sym("s0 - 1"),8] = prims.constant_pad_nd(%x, [0, 0, -1, 0], 0.0)
  %e : f32[2,sym("s0 - 1"),8] = prims.exp(%q)
  return (%t, %e)
`, vals: [][]int64{{2}, {3}, {17}, {64}}},
	{name: "slices_symbolic", text: `graph f[s0=8](x: f32[4,s0], b: f32[16,16], y: f32[64,4]):
  %a : f32[4,sym("s0 - 3")] = prims.slice(%x, 1, 3, sym("s0"), 1)
  %an : f32[4,sym("s0 - 3")] = prims.neg(%a)
  %t : f32[4,2] = prims.slice(%x, 1, -2, sym("s0"), 1)
  %te : f32[4,2] = prims.exp(%t)
  %m : f32[s0,16] = prims.slice(%b, 0, 0, sym("s0"), 1)
  %mm : f32[s0,s0] = prims.slice(%m, 1, 0, sym("s0"), 1)
  %mt : f32[s0,s0] = prims.tanh(%mm)
  %w : f32[4,4] = prims.slice(%y, 0, sym("s0"), sym("s0 + 4"), 1)
  %wn : f32[4,4] = prims.neg(%w)
  return (%an, %te, %mt, %wn)
`, vals: [][]int64{{3}, {5}, {12}, {16}}},
	{name: "select_symbolic", text: `graph f[s0=8](x: f32[4,s0,3], y: f32[20,3]):
  %l : f32[4,3] = prims.select(%x, 1, -1)
  %ln : f32[4,3] = prims.neg(%l)
  %p : f32[4,3] = prims.select(%x, 1, -2)
  %f : f32[4,3] = prims.select(%x, 1, 1)
  %pf : f32[4,3] = prims.add(%p, %f)
  %r : f32[3] = prims.select(%y, 0, sym("s0 - 1"))
  %rn : f32[3] = prims.exp(%r)
  return (%ln, %pf, %rn)
`, vals: [][]int64{{2}, {3}, {12}, {20}}},
	// heads merged into the batch: the copy reads x at (i // 4)·(8·s0) + (i % 4)·2 + ..., a
	// division times a symbolic stride; and back
	{name: "merge_heads_symbolic_stride", text: `graph f[s0=8](x: f32[2,s0,8]):
  %v : f32[2,s0,4,2] = prims.view(%x, [2, sym("s0"), 4, 2])
  %p : f32[2,4,s0,2]{sym("8*s0"),2,8,1} = prims.permute(%v, [0, 2, 1, 3])
  %c : f32[2,4,s0,2] = prims.clone(%p)
  %m : f32[8,s0,2] = prims.view(%c, [8, sym("s0"), 2])
  %t : f32[8,s0,2] = prims.tanh(%m)
  %b : f32[2,4,s0,2] = prims.view(%t, [2, 4, sym("s0"), 2])
  %q : f32[2,s0,4,2]{sym("8*s0"),2,sym("2*s0"),1} = prims.permute(%b, [0, 2, 1, 3])
  %y : f32[2,s0,4,2] = prims.neg(%q)
  return (%t, %y)
`, vals: [][]int64{{2}, {3}, {17}, {40}}},
	// gather, index and scatter along a symbolic dim: the indirect index wraps and checks against s0
	{name: "index_along_symbolic_dim", text: `graph f[s0=8](x: f32[4,s0], idx: i64[4,3], y: f32[s0,4], sel: i64[2], idxs: i64[1,4], v: f32[1,4]):
  %c : f32[4,3] = prims.gather(%x, 1, %idx)
  %ct : f32[4,3] = prims.tanh(%c)
  %r : f32[2,4] = prims.index(%y, [%sel])
  %rn : f32[2,4] = prims.neg(%r)
  %w : f32[s0,4] = prims.scatter(%y, 0, %idxs, %v)
  return (%ct, %rn, %w)
`, vals: [][]int64{{4}, {5}, {33}}},
	// rows picked by an index from a [4, s0] tensor: an indirect index times the row stride s0
	{name: "index_rows_symbolic_stride", text: `graph f[s0=8](x: f32[4,s0], sel: i64[3]):
  %r : f32[3,s0] = prims.index_select(%x, 0, %sel)
  %t : f32[3,s0] = prims.tanh(%r)
  return (%t,)
`, vals: [][]int64{{2}, {5}, {33}}},
}

func TestSymbolicDifferential(t *testing.T) {
	for _, sc := range append(append([]symCase(nil), symCases...), symCasesData...) {
		t.Run(sc.name, func(t *testing.T) {
			g := parseGraph(t, sc.text)
			require.True(t, IsSymbolic(g))
			c := compileGraph(t, g, Options{})
			require.NotEmpty(t, c.Program.Symbols)
			js, err := c.Program.JSON()
			require.NoError(t, err)
			dp, err := DecodeProgram(js)
			require.NoError(t, err)
			js2, err := dp.JSON()
			require.NoError(t, err)
			require.Equal(t, string(js), string(js2), "the plan's JSON round trip")
			for _, vals := range sc.vals {
				sg := staticAt(t, sc.text, vals)
				inputs := randomInputs(sg, rand.New(rand.NewSource(vals[0])))
				refIn := cloneTensors(inputs)
				want, err := refEval(sg, refIn)
				require.NoError(t, err)
				var wantIn []*dense
				for _, in := range refIn {
					wantIn = append(wantIn, denseFromTensor(in))
				}
				for _, threads := range []int{1, 2} {
					in := cloneTensors(inputs)
					got, err := c.Run(in, threads)
					require.NoError(t, err, "%s at %v", sc.name, vals)
					requireMatches(t, got, want, fmt.Sprintf("%s at %v, %d threads", sc.name, vals, threads))
					requireMatches(t, in, wantIn, fmt.Sprintf("%s at %v, inputs after the call", sc.name, vals))
				}
				got, err := Execute(dp, c.Library, cloneTensors(inputs), 1)
				require.NoError(t, err)
				requireMatches(t, got, want, fmt.Sprintf("%s at %v, decoded plan", sc.name, vals))
			}
		})
	}
}

// TestSymbolicGolden: every stage of the symbolic cases (lowered and inlined IR, schedule, plan,
// its JSON and the C) against testdata/golden/symbolic/<name>.{ir,c}.
func TestSymbolicGolden(t *testing.T) {
	for _, sc := range symCases {
		t.Run(sc.name, func(t *testing.T) {
			c := compileGraph(t, parseGraph(t, sc.text), Options{})
			js, err := c.Program.JSON()
			require.NoError(t, err)
			var b strings.Builder
			b.WriteString("# lowered\n" + c.Lowered + "\n# inlined\n" + c.Graph.String() + "\n# scheduled\n" + c.Schedule.String() +
				"\n# plan\n" + c.Program.String() + "\n# plan json\n" + string(js) + "\n")
			golden(t, "symbolic/"+sc.name+".ir", b.String())
			golden(t, "symbolic/"+sc.name+".c", c.Source.Text[c.Source.Prelude:])
		})
	}
}

// TestSymbolicRefused: what inductor cannot compile with symbolic sizes is a
// *SymbolicUnsupported error naming the reason, never a kernel for the hints.
func TestSymbolicRefused(t *testing.T) {
	for _, tc := range []struct{ name, text, reason string }{
		{"view merging transposed symbolic dims", `graph f[s0=8, s1=4](x: f32[s0,s1]):
  %t : f32[s1,s0]{1,s1} = prims.permute(%x, [1, 0])
  %v : f32[sym("s0*s1")] = prims.view(%t, [sym("s0*s1")])
  %y : f32[sym("s0*s1")] = prims.neg(%v)
  return (%y,)
`, "a view that merges a symbolic dim"},
		{"no symbolic lowering", `graph f[s0=8](x: f32[s0,4]):
  %y : f32[s0,4] = prims.as_strided(%x, [sym("s0"), 4], [4, 1], 0)
  return (%y,)
`, "prims.as_strided (node %y) has no symbolic lowering"},
		{"slice of a symbolic dim", `graph f[s0=8](x: f32[s0,4]):
  %s : f32[2,4] = prims.slice(%x, 0, 3, 5, 1)
  %y : f32[2,4] = prims.neg(%s)
  return (%y,)
`, "a slice from 3 of a symbolic dim s0"},
		{"view splitting a symbolic dim", `graph f[s0=8](x: f32[s0,4]):
  %t : f32[4,s0]{1,4} = prims.permute(%x, [1, 0])
  %e : f32[4,s0]{1,4} = prims.exp(%t)
  %f : f32[sym("4*s0")] = prims.view(%t, [sym("4*s0")])
  %v : f32[2,sym("2*s0")] = prims.view(%f, [2, sym("2*s0")])
  %y : f32[2,sym("2*s0")] = prims.neg(%v)
  return (%y, %e)
`, "a view that"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := fxgraph.Parse(tc.text)
			require.NoError(t, err)
			require.True(t, IsSymbolic(g))
			_, err = Compile(g, Options{Compiler: testCompiler(t), Check: true})
			require.Error(t, err)
			var su *SymbolicUnsupported
			require.ErrorAs(t, err, &su, "%v", err)
			require.True(t, IsSymbolicUnsupported(err))
			require.Contains(t, su.Reason, tc.reason)
			require.Contains(t, err.Error(), "compile it with static shapes")
			_, err = Lower(g)
			require.ErrorAs(t, err, &su)
		})
	}
}

// A symbol the trace specialised is its hint: the graph compiles exactly as the static one.
func TestSymbolicSpecialised(t *testing.T) {
	text := `graph f[s0=8](x: f32[s0,64], b: f32[64]):
  %bb : f32[8,64] = prims.expand(%b, [8, 64])
  %y : f32[8,64] = prims.mul(%x, %bb)
  return (%y,)
`
	g := parseGraph(t, text)
	g.Shapes.Specialize(0, "test")
	require.False(t, IsSymbolic(g))
	c := compileGraph(t, g, Options{})
	require.Empty(t, c.Program.Symbols)
	s := compileGraph(t, parseGraph(t, strings.Replace(strings.Replace(text, "[s0=8]", "", 1), "f32[s0,64]", "f32[8,64]", 1)), Options{})
	require.Equal(t, s.Source.Text, c.Source.Text)
	require.Equal(t, s.Program.String(), c.Program.String())
}

// The CUDA renderer refuses symbolic graphs.
func TestSymbolicCUDARefused(t *testing.T) {
	g := parseGraph(t, symCases[0].text)
	_, err := CompileCUDA(g, CUDACompileOptions{})
	require.True(t, IsSymbolicUnsupported(err), "%v", err)
}

// The dynamic arena: symbolic temporaries with disjoint lifetimes share its bytes, placed for
// each call's sizes.
func TestSymbolicDynamicArena(t *testing.T) {
	for _, sc := range symCases {
		if sc.name != "mm_chain" {
			continue
		}
		c := compileGraph(t, parseGraph(t, sc.text), Options{})
		n := 0
		for _, b := range c.Program.Buffers {
			if b.ArenaDyn {
				n++
			}
		}
		require.GreaterOrEqual(t, n, 5, "the matrix products' results and the tanh results are dynamic temporaries")
		for _, s0 := range []int64{3, 1000} {
			specs, _, err := concreteBuffers(c.Program, []*Tensor{{Sizes: []int64{s0, 16}}, {Sizes: []int64{16, 32}}, {Sizes: []int64{32, 16}}, {Sizes: []int64{16, 32}}, {Sizes: []int64{32, 8}}})
			require.NoError(t, err)
			offs, total := PlaceDynamic(c.Program, specs)
			sum := int64(0)
			for i, b := range specs {
				if b.ArenaDyn {
					require.GreaterOrEqual(t, offs[i], int64(0))
					require.Zero(t, offs[i]%ArenaAlign)
					sum += (b.StorageElems*4 + ArenaAlign - 1) / ArenaAlign * ArenaAlign
				}
			}
			require.Less(t, total, sum, "temporaries that are never live together share bytes")
		}
	}
}

// Symbols read from an int argument and from an input's storage offset: the program takes the
// ints among its inputs (Program.IntInputs) and reads the offset of the tensor it is given.
func TestSymbolicIntAndOffsetSources(t *testing.T) {
	text := `graph f[s0=8, s1=5](x: f32[4,8]{8,1+s1}, n: sym("s0")):
  %y : f32[4,8] = prims.mul(%x, sym("s0"))
  %z : f32[4,8] = prims.add(%y, sym("s1"))
  return (%z,)
`
	g := parseGraph(t, text)
	require.True(t, IsSymbolic(g))
	c := compileGraph(t, g, Options{})
	require.Equal(t, 1, c.Program.IntInputs)
	require.Equal(t, []SymbolSource{{Input: 0, Dim: SymIntArg, Hint: 8}, {Input: 0, Dim: SymOffset, Hint: 5}}, c.Program.Symbols)
	js, err := c.Program.JSON()
	require.NoError(t, err)
	require.Contains(t, string(js), `"int_inputs": 1`)
	dp, err := DecodeProgram(js)
	require.NoError(t, err)
	require.Equal(t, 1, dp.IntInputs)
	for _, v := range [][2]int64{{2, 2}, {3, 7}, {100, 40}} {
		x := NewStrided(primtorch.Float32, []int64{4, 8}, []int64{8, 1}, v[1])
		for k := int64(0); k < int64(len(x.Data)/4); k++ {
			(&Tensor{DType: primtorch.Float32, Sizes: []int64{int64(len(x.Data) / 4)}, Strides: []int64{1}, Data: x.Data}).Set(k, float64(k%13)-6)
		}
		for _, run := range []func() ([]*Tensor, error){
			func() ([]*Tensor, error) { return c.RunInts([]*Tensor{x}, []int64{v[0]}, 1) },
			func() ([]*Tensor, error) { return ExecuteInts(dp, c.Library, []*Tensor{x}, []int64{v[0]}, 2) },
		} {
			got, err := run()
			require.NoError(t, err)
			for i := int64(0); i < 4; i++ {
				for j := int64(0); j < 8; j++ {
					want := x.At(8*i+j)*float64(v[0]) + float64(v[1])
					require.InDelta(t, want, got[0].At(8*i+j), 1e-4, "at %v (%d, %d)", v, i, j)
				}
			}
		}
	}
	_, err = c.RunInts([]*Tensor{NewStrided(primtorch.Float32, []int64{4, 8}, []int64{8, 1}, 2)}, nil, 1)
	require.ErrorContains(t, err, "int arguments")
}
