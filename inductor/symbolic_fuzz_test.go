package inductor

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// symFuzzGraph is a random symbolic prims graph over symbols s0, s1 and static dims: pointwise
// chains, broadcasts of row and column reductions, transposes (symbolic strides), full
// reductions, means by a symbol, matrix products. Its text form is what symCase takes.
func symFuzzGraph(rng *rand.Rand) string {
	dims := []string{"s0", "s1", "3", "5"}
	type val struct {
		name    string
		shape   []string // dims
		strides string   // "" for contiguous, else the text's {a,b}
	}
	var inputs, body []string
	var vals []val
	n := 0
	fresh := func(p string) string { n++; return fmt.Sprintf("%s%d", p, n) }
	ty := func(v val) string { return "f32[" + strings.Join(v.shape, ",") + "]" + v.strides }
	newInput := func(shape []string) val {
		v := val{name: fresh("x"), shape: shape}
		inputs = append(inputs, v.name+": "+ty(v))
		vals = append(vals, v)
		return v
	}
	add := func(v val, rhs string) val {
		body = append(body, fmt.Sprintf("  %%%s : %s = %s", v.name, ty(v), rhs))
		vals = append(vals, v)
		return v
	}
	symArg := func(d string) string {
		if d[0] == 's' {
			return `sym("` + d + `")`
		}
		return d
	}
	a, b := dims[rng.Intn(2)], dims[rng.Intn(4)]
	newInput([]string{a, b})
	pick := func() val { return vals[rng.Intn(len(vals))] }
	same := func(shape []string) []val {
		var out []val
		for _, v := range vals {
			if strings.Join(v.shape, ",") == strings.Join(shape, ",") {
				out = append(out, v)
			}
		}
		return out
	}
	for step := 0; step < 4+rng.Intn(5); step++ {
		x := pick()
		if len(x.shape) != 2 {
			continue
		}
		switch rng.Intn(10) {
		case 0, 1:
			op := []string{"exp", "tanh", "neg", "abs", "sigmoid", "sin"}[rng.Intn(6)]
			if op == "exp" {
				x = add(val{name: fresh("t"), shape: x.shape}, fmt.Sprintf("prims.tanh(%%%s)", x.name))
			}
			add(val{name: fresh("u"), shape: x.shape}, fmt.Sprintf("prims.%s(%%%s)", op, x.name))
		case 2:
			cands := same(x.shape)
			y := cands[rng.Intn(len(cands))]
			if rng.Intn(3) == 0 {
				y = newInput(x.shape)
			}
			op := []string{"add", "mul", "sub", "maximum"}[rng.Intn(4)]
			add(val{name: fresh("b"), shape: x.shape}, fmt.Sprintf("prims.%s(%%%s, %%%s)", op, x.name, y.name))
		case 3:
			// a row or column reduction broadcast back
			d := rng.Intn(2)
			red := append([]string(nil), x.shape...)
			red[d] = "1"
			kind := []string{"sum", "amax", "amin"}[rng.Intn(3)]
			r := add(val{name: fresh("r"), shape: red}, fmt.Sprintf("prims.%s(%%%s, [%d], True)", kind, x.name, d))
			e := add(val{name: fresh("e"), shape: x.shape}, fmt.Sprintf("prims.expand(%%%s, [%s, %s])", r.name, symArg(x.shape[0]), symArg(x.shape[1])))
			add(val{name: fresh("c"), shape: x.shape}, fmt.Sprintf("prims.sub(%%%s, %%%s)", x.name, e.name))
		case 4:
			if x.strides != "" {
				continue
			}
			add(val{name: fresh("p"), shape: []string{x.shape[1], x.shape[0]}, strides: "{1," + x.shape[1] + "}"},
				fmt.Sprintf("prims.permute(%%%s, [1, 0])", x.name))
		case 5:
			d := rng.Intn(2)
			s := add(val{name: fresh("s"), shape: []string{x.shape[1-d]}}, fmt.Sprintf("prims.sum(%%%s, [%d], False)", x.name, d))
			if x.shape[d][0] == 's' {
				add(val{name: fresh("m"), shape: s.shape}, fmt.Sprintf("prims.div(%%%s, sym(%q))", s.name, x.shape[d]))
			}
		case 6:
			add(val{name: fresh("f"), shape: nil}, fmt.Sprintf("prims.sum(%%%s, None, False)", x.name))
		case 8:
			// flatten a dense value and split it back (a regrouping view of symbolic dims)
			if x.strides != "" || x.shape[0] == "1" || x.shape[1] == "1" {
				continue
			}
			flat := x.shape[0] + "*" + x.shape[1]
			f := add(val{name: fresh("v"), shape: []string{`sym("` + flat + `")`}}, fmt.Sprintf("prims.view(%%%s, [sym(%q)])", x.name, flat))
			ng := add(val{name: fresh("n"), shape: f.shape}, fmt.Sprintf("prims.neg(%%%s)", f.name))
			add(val{name: fresh("w"), shape: x.shape}, fmt.Sprintf("prims.view(%%%s, [%s, %s])", ng.name, symArg(x.shape[0]), symArg(x.shape[1])))
		case 9:
			// a column slice of a dense value: a view with symbolic strides and an offset
			if x.strides != "" || x.shape[0] == "1" || x.shape[1] == "1" {
				continue
			}
			start := rng.Intn(2)
			sl := add(val{name: fresh("sl"), shape: []string{x.shape[0], "1"}, strides: fmt.Sprintf("{%s,1+%d}", x.shape[1], start)},
				fmt.Sprintf("prims.slice(%%%s, 1, %d, %d, 1)", x.name, start, start+1))
			e := add(val{name: fresh("e"), shape: x.shape}, fmt.Sprintf("prims.expand(%%%s, [%s, %s])", sl.name, symArg(x.shape[0]), symArg(x.shape[1])))
			add(val{name: fresh("c"), shape: x.shape}, fmt.Sprintf("prims.mul(%%%s, %%%s)", x.name, e.name))
		case 7:
			w := newInput([]string{x.shape[1], dims[rng.Intn(4)]})
			add(val{name: fresh("mm"), shape: []string{x.shape[0], w.shape[1]}}, fmt.Sprintf("prims.mm(%%%s, %%%s)", x.name, w.name))
		}
	}
	var outs []string
	for _, v := range vals[len(vals)-min(3, len(vals)):] {
		outs = append(outs, "%"+v.name)
	}
	return "graph f[s0=8, s1=16](" + strings.Join(inputs, ", ") + "):\n" + strings.Join(body, "\n") + "\n  return (" + strings.Join(outs, ", ") + ",)\n"
}

// TestSymbolicFuzz: random symbolic graphs, each compiled once and run at several values of its
// symbols against the reference interpreter on the graph specialised to those values (odd seeds
// with parallel loops on two threads).
func TestSymbolicFuzz(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		text := symFuzzGraph(rand.New(rand.NewSource(seed)))
		g := parseGraph(t, text)
		opts := Options{Compiler: testCompiler(t), Check: true}
		if seed%2 == 1 {
			opts.Codegen.MinParallelWork = 1 // parallel loops from the first element, on 2 threads
		}
		c, err := Compile(g, opts)
		require.NoError(t, err, "seed %d:\n%s", seed, text)
		for _, vals := range [][]int64{{2, 3}, {7, 2}, {33, 17}, {3, 130}} {
			sg := staticAt(t, text, vals)
			inputs := randomInputs(sg, rand.New(rand.NewSource(seed)))
			want, err := refEval(sg, cloneTensors(inputs))
			require.NoError(t, err)
			got, err := c.Run(inputs, 1+int(seed%2))
			require.NoError(t, err, "seed %d at %v:\n%s", seed, vals, text)
			requireMatches(t, got, want, fmt.Sprintf("seed %d at %v:\n%s", seed, vals, text))
		}
	}
}
