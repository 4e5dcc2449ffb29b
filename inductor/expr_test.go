package inductor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func v(k int) Expr { return Var(k) }

var exprTests = []struct {
	name string
	got  func(b Bounds) Expr
	b    Bounds
	want string
}{
	{"affine sum is sorted and merged", func(b Bounds) Expr { return v(1).Add(v(0).Scale(16)).Add(v(1)).AddConst(3) }, nil, "16*v0 + 2*v1 + 3"},
	{"zero coefficients vanish", func(b Bounds) Expr { return v(0).Add(v(0).Scale(-1)).AddConst(2) }, nil, "2"},
	{"div of a multiple", func(b Bounds) Expr { return FloorDiv(v(0).Scale(16).Add(v(1)), 16, b) }, Bounds{4, 16}, "v0"},
	{"div keeps an unknown remainder", func(b Bounds) Expr { return FloorDiv(v(0).Scale(16).Add(v(1)), 16, b) }, Bounds{4, 32}, "v0 + (v1 // 16)"},
	{"mod drops multiples", func(b Bounds) Expr { return Mod(v(0).Scale(16).Add(v(1)), 16, b) }, Bounds{4, 16}, "v1"},
	{"mod of a small value", func(b Bounds) Expr { return Mod(v(0), 8, b) }, Bounds{8}, "v0"},
	{"nested div", func(b Bounds) Expr { return FloorDiv(FloorDiv(v(0), 4, b), 3, b) }, Bounds{100}, "(v0 // 12)"},
	{"div of mod", func(b Bounds) Expr { return FloorDiv(Mod(v(0), 32, b), 16, b) }, Bounds{100}, "((v0 // 16) % 2)"},
	{"floor semantics for negative constants", func(b Bounds) Expr { return FloorDiv(Const(-7), 2, b) }, nil, "-4"},
	{"mod of negative constant", func(b Bounds) Expr { return Mod(Const(-7), 3, b) }, nil, "2"},
	{"c*(x//c) + x%c = x", func(b Bounds) Expr {
		return FloorDiv(v(0), 16, b).Scale(16).Add(Mod(v(0), 16, b))
	}, Bounds{1000}, "v0"},
	{"c*((x//c)%s) + x%c = x%(c*s)", func(b Bounds) Expr {
		return Mod(FloorDiv(v(0), 16, b), 4, b).Scale(16).Add(Mod(v(0), 16, b))
	}, Bounds{1000}, "(v0 % 64)"},
	{"reshape [4,16]->[64] flattened back", func(b Bounds) Expr {
		idx := reshapeIndex([]int64{4, 16}, []int64{64})
		return flatten(idx, syms([]int64{16, 1}), symc(0), b)
	}, Bounds{64}, "v0"},
	{"reshape [2,3,4]->[6,4] flattened back", func(b Bounds) Expr {
		idx := reshapeIndex([]int64{2, 3, 4}, []int64{6, 4})
		return flatten(idx, syms([]int64{12, 4, 1}), symc(0), b)
	}, Bounds{6, 4}, "4*v0 + v1"},
	{"reshape of a transposed layout keeps div/mod", func(b Bounds) Expr {
		idx := reshapeIndex([]int64{4, 16}, []int64{64})
		return flatten(idx, syms([]int64{1, 4}), symc(0), b)
	}, Bounds{64}, "(v0 // 16) + 4*(v0 % 16)"},
	{"reshape with size-1 dims", func(b Bounds) Expr {
		idx := reshapeIndex([]int64{1, 4, 1, 8}, []int64{32})
		return flatten(idx, syms([]int64{32, 8, 8, 1}), symc(0), b)
	}, Bounds{32}, "v0"},
}

func TestExprSimplify(t *testing.T) {
	for _, tt := range exprTests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.got(tt.b).String())
		})
	}
}

// TestExprSemantics checks simplified div/mod expressions against direct evaluation.
func TestExprSemantics(t *testing.T) {
	b := Bounds{7, 12}
	exprs := []Expr{
		FloorDiv(v(0).Scale(12).Add(v(1)), 5, b),
		Mod(v(0).Scale(12).Add(v(1)).AddConst(-3), 7, b),
		FloorDiv(Mod(v(0).Scale(12).Add(v(1)), 24, b), 6, b),
		Mod(FloorDiv(v(0).Scale(3).Add(v(1)), 4, b), 5, b).Scale(4).Add(Mod(v(0).Scale(3).Add(v(1)), 4, b)),
	}
	direct := []func(a, c int64) int64{
		func(a, c int64) int64 { return floorDiv(12*a+c, 5) },
		func(a, c int64) int64 { return floorMod(12*a+c-3, 7) },
		func(a, c int64) int64 { return floorDiv(floorMod(12*a+c, 24), 6) },
		func(a, c int64) int64 { return 4*floorMod(floorDiv(3*a+c, 4), 5) + floorMod(3*a+c, 4) },
	}
	for i, e := range exprs {
		for a := int64(0); a < b[0]; a++ {
			for c := int64(0); c < b[1]; c++ {
				require.Equal(t, direct[i](a, c), evalExpr(e, []int64{a, c}), "expr %d = %s at (%d, %d)", i, e, a, c)
			}
		}
	}
}

// evalExpr evaluates an expression without indirect atoms.
func evalExpr(e Expr, vars []int64) int64 {
	r := e.C
	for _, t := range e.Terms {
		var x int64
		switch t.Atom.Kind {
		case AtomVar:
			x = vars[t.Atom.Var]
		case AtomDiv:
			x = floorDiv(evalExpr(t.Atom.X, vars), t.Atom.N)
		case AtomMod:
			x = floorMod(evalExpr(t.Atom.X, vars), t.Atom.N)
		}
		r += t.Coef * x
	}
	return r
}

func TestExprRange(t *testing.T) {
	e := v(0).Scale(-2).Add(v(1)).AddConst(5)
	lo, hi, ok := e.Range(Bounds{4, 3})
	require.True(t, ok)
	require.Equal(t, []int64{-1, 7}, []int64{lo, hi})
	_, _, ok = v(5).Range(Bounds{4})
	require.False(t, ok, "a variable without bounds has no range")
}
