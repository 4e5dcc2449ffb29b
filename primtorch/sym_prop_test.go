package primtorch

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The property test of symbolic meta functions: every golden call (torch-level and prims) of an
// op whose meta is symbolic is replayed with its dense tensors given symbolic sizes (one symbol
// per distinct size >= 2, as dynamo's duck sizing does); the symbolic result, evaluated at other
// values of the symbols that satisfy the guards the call recorded, must equal the static meta of
// the same call on concrete tensors of those sizes.

// symbolize returns a symbolic copy of a dense tensor (sizes >= 2 become the env's symbol for
// that size; strides dense in the same dim order), or m itself when it is not dense.
func symbolize(m *TensorMeta, env *ShapeEnv, bySize map[int64]SymInt, batchOnly bool) *TensorMeta {
	if !m.IsNonOverlappingAndDense() || m.Sym != nil {
		return m
	}
	sizes := make([]SymInt, len(m.Shape))
	any := false
	for i, s := range m.Shape {
		if s < 2 || batchOnly && (i > 0 || len(m.Shape) < 3) {
			sizes[i] = SymConst(s)
			continue
		}
		sym, ok := bySize[s]
		if !ok {
			sym = env.NewSymbol(s, fmt.Sprintf("size %d", s))
			bySize[s] = sym
		}
		sizes[i], any = sym, true
	}
	if !any {
		return m
	}
	// dense strides in m's dim order (fastest first)
	perm := make([]int, len(m.Shape))
	for i := range perm {
		perm[i] = len(perm) - 1 - i
	}
	sort.SliceStable(perm, func(i, j int) bool {
		a, b := perm[i], perm[j]
		if m.Shape[a] < 2 || m.Shape[b] < 2 {
			return false
		}
		return m.Strides[a] < m.Strides[b]
	})
	strides := make([]SymInt, len(m.Shape))
	acc, accHint := SymConst(1), int64(1)
	for _, d := range perm {
		if m.Shape[d] < 2 {
			continue
		}
		strides[d] = acc
		if accHint != m.Strides[d] {
			return m
		}
		acc, accHint = acc.Mul(sizes[d]), accHint*m.Shape[d]
	}
	for d := range strides {
		if m.Shape[d] < 2 {
			strides[d] = SymConst(m.Strides[d]) // any stride is valid for a size-1 dim
		}
	}
	c := m.Clone()
	c.SetSymLayout(sizes, strides, SymConst(m.Offset))
	return c
}

// evalMeta evaluates a (possibly symbolic) meta at symbol values vals.
func evalMeta(m *TensorMeta, vals []int64) *TensorMeta {
	c := m.Clone()
	if m.Sym == nil {
		return c
	}
	c.Sym = nil
	c.Shape, c.Strides = make([]int64, len(m.Shape)), make([]int64, len(m.Shape))
	for i := range m.Shape {
		c.Shape[i] = m.Sym.Sizes[i].Eval(vals)
		c.Strides[i] = m.Sym.Strides[i].Eval(vals)
	}
	c.Offset = m.Sym.Offset.Eval(vals)
	return c
}

// evalValue evaluates every symbolic size in v.
func evalValue(v Value, vals []int64) Value {
	switch x := v.(type) {
	case *TensorMeta:
		if x == nil {
			return x
		}
		return evalMeta(x, vals)
	case SymInt:
		return x.Eval(vals)
	case []Value:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = evalValue(e, vals)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = evalValue(e, vals)
		}
		return out
	case []*TensorMeta:
		out := make([]*TensorMeta, len(x))
		for i, e := range x {
			out[i] = evalMeta(e, vals)
		}
		return out
	case Slice:
		r := x.Static()
		if x.SymStart != nil {
			k := x.SymStart.Eval(vals)
			r.Start = &k
		}
		if x.SymStop != nil {
			k := x.SymStop.Eval(vals)
			r.Stop = &k
		}
		return r
	}
	return v
}

// symbolizeBounds makes the slice bounds in an index that are a symbolized size, its negative or
// the size plus or minus one symbolic (x[:, :T], x[-T:], x[:T - 1] with T a dim's size).
func symbolizeBounds(v Value, bySize map[int64]SymInt) Value {
	bound := func(k *int64) *SymInt {
		if k == nil {
			return nil
		}
		for _, c := range []struct{ sign, off int64 }{{1, 0}, {-1, 0}, {1, -1}, {1, 1}} {
			if s, ok := bySize[c.sign*(*k-c.off)]; ok && s.Hint() >= 2 {
				r := s.MulConst(c.sign).AddConst(c.off)
				return &r
			}
		}
		return nil
	}
	switch x := v.(type) {
	case Slice:
		x.SymStart, x.SymStop = bound(x.Start), bound(x.Stop)
		return x
	case []Value:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = symbolizeBounds(e, bySize)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = symbolizeBounds(e, bySize)
		}
		return out
	}
	return v
}

func hasSymBound(v Value) bool {
	switch x := v.(type) {
	case Slice:
		return x.IsSymbolic()
	case []Value:
		for _, e := range x {
			if hasSymBound(e) {
				return true
			}
		}
	case Tuple:
		for _, e := range x {
			if hasSymBound(e) {
				return true
			}
		}
	}
	return false
}

func symbolizeValue(v Value, env *ShapeEnv, bySize map[int64]SymInt, batchOnly bool) Value {
	switch x := v.(type) {
	case *TensorMeta:
		if x == nil {
			return x
		}
		return symbolize(x, env, bySize, batchOnly)
	case []Value:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = symbolizeValue(e, env, bySize, batchOnly)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = symbolizeValue(e, env, bySize, batchOnly)
		}
		return out
	}
	return v
}

// sameMeta compares the evaluated symbolic result with the static one.
func sameMeta(got, want Value) string {
	switch w := want.(type) {
	case *TensorMeta:
		g, ok := got.(*TensorMeta)
		if !ok {
			return fmt.Sprintf("got %T, want a tensor", got)
		}
		if g.DType != w.DType || !shapeEqual(g.Shape, w.Shape) || !shapeEqual(g.Strides, w.Strides) || g.Offset != w.Offset || g.Device != w.Device {
			return fmt.Sprintf("got %s, want %s", describe(g), describe(w))
		}
		return ""
	case []Value:
		g, ok := got.([]Value)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("got %v, want %d values", got, len(w))
		}
		for i := range w {
			if d := sameMeta(g[i], w[i]); d != "" {
				return fmt.Sprintf("element %d: %s", i, d)
			}
		}
		return ""
	}
	if fmt.Sprint(evalValue(got, nil)) != fmt.Sprint(want) {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	return ""
}

// altValues are the symbol values tried besides the hints.
func altValues(hints []int64) [][]int64 {
	fs := []func(h int64, i int) int64{
		func(h int64, i int) int64 { return h + 1 },
		func(h int64, i int) int64 { return 2 * h },
		func(h int64, i int) int64 { return h + 3 + int64(i) },
		func(h int64, i int) int64 { return 2 + int64(i) },
		func(h int64, i int) int64 { return 3*h + 5 },
	}
	var out [][]int64
	for _, f := range fs {
		v := make([]int64, len(hints))
		for i, h := range hints {
			v[i] = f(h, i)
		}
		out = append(out, v)
	}
	return out
}

type symStats struct{ checked, cases, skipped, bounds int }

// checkSymbolic replays one call symbolically; it returns what disagrees ("" when nothing).
func checkSymbolic(op *Op, args []Value, kwargs []KV, st *symStats) string {
	if msg := checkSymbolicMode(op, args, kwargs, st, false, false); msg != "" {
		return msg
	}
	// slice bounds that are sizes symbolic too (bias[:, :, :T, :T])
	if msg := checkSymbolicMode(op, args, kwargs, st, false, true); msg != "" {
		return "with symbolic slice bounds: " + msg
	}
	// only the batch (dim 0 of tensors of rank >= 3) symbolic: what convolution and pooling
	// keep symbolic
	return checkSymbolicMode(op, args, kwargs, st, true, false)
}

func checkSymbolicMode(op *Op, args []Value, kwargs []KV, st *symStats, batchOnly, bounds bool) string {
	resolved, _, err := op.Resolve(args, kwargs)
	if err != nil || !resolved.Symbolic {
		return ""
	}
	env := NewShapeEnv()
	bySize := map[int64]SymInt{}
	sargs := make([]Value, len(args))
	for i, a := range args {
		if batchOnly && i > 0 { // only the first argument's batch: weights stay static
			sargs[i] = a
			continue
		}
		sargs[i] = symbolizeValue(a, env, bySize, batchOnly)
	}
	if bounds {
		changed := false
		for i, a := range sargs {
			sargs[i] = symbolizeBounds(a, bySize)
			changed = changed || hasSymBound(sargs[i])
		}
		if !changed {
			return ""
		}
		st.bounds++
	}
	skw := make([]KV, len(kwargs))
	for i, kv := range kwargs {
		skw[i] = KV{kv.Name, kv.Value}
		if !batchOnly {
			skw[i].Value = symbolizeValue(kv.Value, env, bySize, batchOnly)
		}
	}
	if env.NumSymbols() == 0 {
		return ""
	}
	st.cases++
	got, err := op.Meta(sargs, skw)
	if err != nil {
		if isDataDependent(err) {
			return ""
		}
		return fmt.Sprintf("the symbolic call failed: %v", err)
	}
	guards := env.Guards()
	for _, vals := range altValues(env.Hints()) {
		env.FillDerived(vals) // a derived symbol (floor(s0/2)) follows the symbols it is defined by
		ok := true
		for _, g := range guards {
			if !g.Holds(vals) {
				ok = false
				break
			}
		}
		if !ok {
			st.skipped++
			continue
		}
		cargs := make([]Value, len(sargs))
		for i, a := range sargs {
			cargs[i] = evalValue(a, vals)
		}
		ckw := make([]KV, len(skw))
		for i, kv := range skw {
			ckw[i] = KV{kv.Name, evalValue(kv.Value, vals)}
		}
		want, err := op.Meta(cargs, ckw)
		if err != nil {
			return fmt.Sprintf("at %v (guards %v) the static call fails: %v", vals, guards, err)
		}
		if d := sameMeta(evalValue(got, vals), want); d != "" {
			return fmt.Sprintf("at %v (guards %v): %s", vals, guards, d)
		}
		st.checked++
	}
	return ""
}

func TestSymbolicMetaProperty(t *testing.T) {
	stats := map[string]*symStats{}
	stat := func(name string) *symStats {
		if stats[name] == nil {
			stats[name] = &symStats{}
		}
		return stats[name]
	}
	forEachGoldenTorch(t, func(t *testing.T, v TorchVersion) {
		cases := loadJSONLines[metaCase](t, goldenFile("meta_cases", v))
		for i := range cases {
			c := &cases[i]
			if c.Error != nil {
				continue
			}
			tensors := make([]*TensorMeta, len(c.Tensors))
			for i, j := range c.Tensors {
				tensors[i] = j.meta(t)
			}
			args := make([]Value, len(c.Args))
			for i, a := range c.Args {
				args[i] = decodeValue(t, a, tensors)
			}
			var kwargs []KV
			for _, k := range sortedKeys(c.Kwargs) {
				kwargs = append(kwargs, KV{k, decodeValue(t, c.Kwargs[k], tensors)})
			}
			op := Lookup(c.Target)
			if op == nil {
				continue
			}
			if msg := checkSymbolic(op, args, kwargs, stat(c.Op)); msg != "" {
				t.Errorf("case %d: %s\n    %s", i, c.String(), msg)
			}
		}
	})
	t.Run("prims", func(t *testing.T) {
		for _, c := range loadPrimCases(t) {
			tensors := make([]*TensorMeta, len(c.Tensors))
			for i, j := range c.Tensors {
				tensors[i] = j.meta(t)
			}
			args := make([]Value, len(c.Args))
			for i, a := range c.Args {
				args[i] = decodeValue(t, a, tensors)
			}
			op := Lookup(c.Prim)
			require.NotNil(t, op)
			if msg := checkSymbolic(op, args, nil, stat(op.Name)); msg != "" {
				raw, _ := json.Marshal(c.Args)
				t.Errorf("%s[%s] args %s: %s", c.Prim, c.Tag, raw, msg)
			}
		}
	})
	var lines []string
	total := 0
	for _, op := range Ops() {
		if !op.Symbolic {
			continue
		}
		s := stats[op.Name]
		if s == nil {
			s = &symStats{}
		}
		total += s.checked
		lines = append(lines, fmt.Sprintf("%s: %d calls (%d with symbolic slice bounds), %d checks, %d value sets ruled out by guards", op.Name, s.cases, s.bounds, s.checked, s.skipped))
	}
	t.Logf("symbolic metas checked at other sizes:\n%s", strings.Join(lines, "\n"))
	require.Positive(t, total)
}

func TestFloorDivDerivedSymbols(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(10, "x.size(0)")
	q, ok := s0.FloorDiv(3) // s1 = s0//3, guarded >= 2
	if !ok || q.String() != "s1" {
		t.Fatalf("s0 // 3 = %v", q)
	}
	r, _ := s0.Mod(3)
	if r.String() != "s0 - 3*s1" || r.Hint() != 1 {
		t.Fatalf("s0 %% 3 = %v (hint %d)", r, r.Hint())
	}
	if !r.ProvablyNonNegative() {
		t.Fatalf("s0 %% 3 is not proved >= 0")
	}
	if r.AddConst(-3).ProvablyNonNegative() {
		t.Fatalf("s0 %% 3 - 3 proved >= 0")
	}
	// equal remainders share the symbol: (s0 + 3) // 3 is s1 + 1
	if q2, _ := s0.AddConst(3).FloorDiv(3); q2.String() != "s1 + 1" {
		t.Fatalf("(s0 + 3) // 3 = %v", q2)
	}
	for _, n := range []int64{6, 7, 8, 100, 101} {
		vals := []int64{n, 0}
		env.FillDerived(vals)
		if vals[1] != n/3 || r.Eval(vals) != n%3 {
			t.Fatalf("at s0 = %d: s1 = %d, s0 %% 3 = %d", n, vals[1], r.Eval(vals))
		}
	}
	// a floor division of 0 or 1 is specialised, like a size
	env2 := NewShapeEnv()
	a := env2.NewSymbol(4, "y.size(0)")
	if k, _ := a.FloorDiv(3); k.String() != "1" {
		t.Fatalf("4 // 3 = %v, want the constant 1", k)
	}
	if g := env2.Guards(); len(g) != 1 || g[0].String() != "s1 == 1" {
		t.Fatalf("guards %v", g)
	}
	// which bounds y.size(0) below by 3: y.size(0) % 3 (s0 - 3) is provably >= 0, s0 - 4 is not
	if lb := env2.LowerBound(0); lb != 3 {
		t.Fatalf("lower bound of s0 with s0 // 3 == 1: %d, want 3", lb)
	}
	if m, _ := a.Mod(3); !m.ProvablyNonNegative() || m.AddConst(-1).ProvablyNonNegative() {
		t.Fatalf("s0 %% 3 = %v: want provably >= 0, and not once 1 less", m)
	}
	// a quotient guarded >= 2 bounds its dividend too: (s0 + 1) // 4 >= 2 gives s0 >= 7
	env3 := NewShapeEnv()
	c := env3.NewSymbol(20, "z.size(0)")
	if _, ok := c.AddConst(1).FloorDiv(4); !ok {
		t.Fatal("(s0 + 1) // 4 made no symbol")
	}
	if lb := env3.LowerBound(0); lb != 7 {
		t.Fatalf("lower bound of s0 with (s0 + 1) // 4 >= 2: %d, want 7", lb)
	}
}
