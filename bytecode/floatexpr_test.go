package bytecode

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// A float guard's program recomputes both sides in postfix order from registers and
// constants; its description prints the expression as Python would read it.
func TestFloatGuardProgram(t *testing.T) {
	alpha := &floatExpr{op: "arg", src: &LocalSource{Index: 2, Var: "alpha"}}
	gamma := &floatExpr{op: "arg", src: &LocalSource{Index: 3, Var: "gamma"}}
	one := &floatExpr{op: "const", c: intV(1)}
	half := &floatExpr{op: "const", c: floatV(0.5)}
	oneMinus := &floatExpr{op: "sub", args: []*floatExpr{one, alpha}}
	tests := []struct {
		name        string
		left, right *floatExpr
		rel         string
		want        bool
		desc        string
		vec         []int64
	}{
		{"argument", alpha, &floatExpr{op: "const", c: intV(0)}, "ge", true, "L['alpha'] >= 0",
			[]int64{5, 1, 1, 0, 3, 0}},
		{"false side", alpha, &floatExpr{op: "const", c: intV(0)}, "ge", false, "not L['alpha'] >= 0",
			[]int64{5, 0, 1, 0, 3, 0}},
		{"derived", oneMinus, &floatExpr{op: "mul", args: []*floatExpr{gamma, half}}, "lt", true,
			"1 - L['alpha'] < L['gamma'] * 0.5",
			[]int64{0, 1, 3, 1, 1, 0, 4, 1, 1, 1, 2, int64(math.Float64bits(0.5)), 4, 2}},
		{"integer", &floatExpr{op: "int", args: []*floatExpr{&floatExpr{op: "mul", args: []*floatExpr{alpha, &floatExpr{op: "const", c: intV(10)}}}}},
			&floatExpr{op: "const", c: intV(3)}, "eq", true, "int(L['alpha'] * 10) == 3",
			[]int64{2, 1, 1, 0, 3, 10, 4, 2, 5, 3, 3, 3}},
		{"specialised", &floatExpr{op: "neg", args: []*floatExpr{oneMinus}}, &floatExpr{op: "const", c: floatV(-0.75)}, "is", true,
			"-(1 - L['alpha']) == -0.75 (bit for bit)",
			[]int64{6, 1, 3, 1, 1, 0, 4, 1, 5, 0, 2, int64(math.Float64bits(-0.75))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := newGuards()
			g.reg(alpha.src) // register 0
			g.reg(gamma.src) // register 1
			g.Float(tc.left, tc.rel, tc.right, tc.want, "")
			last := g.List[len(g.List)-1]
			require.Equal(t, GFloat, last.Op)
			require.Equal(t, tc.desc, last.Desc)
			require.Equal(t, tc.vec, last.Vec)
		})
	}
}
