package primtorch

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// Symbolic slice bounds (Slice.SymStart/SymStop): x[:, :T] with T a symbolic size.

func symSlice(start, stop Value, step int64) Slice {
	var st Value
	if step != 1 {
		st = step
	}
	s, ok := SliceOf(start, stop, st)
	if !ok {
		panic(fmt.Sprint("not a slice: ", start, stop))
	}
	return s
}

// TestSymSliceBoundsOfABuffer: GPT's bias[:, :, :T, :T] of a 512x512 buffer keeps T, guarded
// T <= 512 (so T = 512 is the same graph), and needs no other guard.
func TestSymSliceBoundsOfABuffer(t *testing.T) {
	env := NewShapeEnv()
	T := env.NewSymbol(7, "x.size(1)")
	bias := NewContiguous(Float32, []int64{1, 1, 512, 512}, CPU)
	r := meta(t, "operator.getitem", bias, Tuple{Slice{}, Slice{}, symSlice(nil, T, 1), symSlice(nil, T, 1)})
	require.Equal(t, "f32[1,1,s0,s0]{262144,262144,512,1}", r.SymString())
	require.Equal(t, []string{"512 >= s0"}, guardStrings(env))
	require.False(t, env.IsSpecialized(0))

	// the other clamps: a start past a constant size, a negative symbolic start
	env = NewShapeEnv()
	T = env.NewSymbol(7, "x.size(1)")
	x := NewContiguous(Float32, []int64{10}, CPU)
	require.Equal(t, "f32[-s0+10]{1+s0}", meta(t, "operator.getitem", x, symSlice(T, nil, 1)).SymString())
	require.Equal(t, "f32[s0]{1+-s0+10}", meta(t, "operator.getitem", x, symSlice(T.Neg(), nil, 1)).SymString())
	require.Equal(t, []string{"10 >= s0"}, guardStrings(env), "one guard for both")

	// a symbolic bound of a symbolic dim: x[:T] of T rows needs nothing
	env = NewShapeEnv()
	T = env.NewSymbol(7, "x.size(0)")
	y := symF32(env, T, 3)
	require.Equal(t, "f32[s0,3]", meta(t, "operator.getitem", y, symSlice(nil, T, 1)).SymString())
	require.Equal(t, "f32[s0-1,3]{3,1+3}", meta(t, "operator.getitem", y, symSlice(int64(1), T, 1)).SymString())
	require.Equal(t, "f32[s0-1,3]", meta(t, "operator.getitem", y, symSlice(nil, T.AddConst(-1), 1)).SymString())
	require.Empty(t, guardStrings(env))

	// a symbolic index: x[T - 1]
	require.Equal(t, "f32[3]{1+3*s0-3}", meta(t, "operator.getitem", y, T.AddConst(-1)).SymString())
	require.Empty(t, guardStrings(env))

	// a meta that is not symbolic sees the hints (the slice specialised)
	s := symSlice(nil, T, 1)
	st := SpecializeValue(s, "test").(Slice)
	require.False(t, st.IsSymbolic())
	require.Equal(t, int64(7), *st.Stop)
	require.True(t, env.IsSpecialized(0))
}

// TestSymSliceBoundsProperty: random slices whose bounds are sizes, their negatives, offsets of
// them or constants, over tensors with symbolic and constant dims: the symbolic result evaluated
// at other symbol values that satisfy the guards is the static result there, getitem and
// setitem alike.
func TestSymSliceBoundsProperty(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	checked, ruledOut := 0, 0
	for iter := 0; iter < 400; iter++ {
		env := NewShapeEnv()
		nsym := 1 + rng.Intn(2)
		var syms []SymInt
		for i := 0; i < nsym; i++ {
			syms = append(syms, env.NewSymbol(int64(2+rng.Intn(20)), fmt.Sprintf("n%d", i)))
		}
		rank := 1 + rng.Intn(3)
		sizes := make([]any, rank)
		for d := range sizes {
			if rng.Intn(3) == 0 {
				sizes[d] = 1 + rng.Intn(30)
			} else {
				sizes[d] = syms[rng.Intn(nsym)]
			}
		}
		x := symF32(env, sizes...)
		bound := func() Value {
			switch rng.Intn(7) {
			case 0:
				return nil
			case 1:
				return int64(rng.Intn(25) - 12)
			case 2:
				return syms[rng.Intn(nsym)]
			case 3:
				return syms[rng.Intn(nsym)].Neg()
			case 4:
				return syms[rng.Intn(nsym)].AddConst(int64(rng.Intn(5) - 2))
			case 5:
				return syms[rng.Intn(nsym)].MulConst(2)
			}
			return SymValue(syms[rng.Intn(nsym)].Sub(syms[rng.Intn(nsym)]).AddConst(1))
		}
		var index Tuple
		for d := 0; d < rank; d++ {
			index = append(index, symSlice(bound(), bound(), int64(1+rng.Intn(2))))
		}
		target := "operator.getitem"
		args := []Value{x, index}
		if rng.Intn(4) == 0 {
			target = "operator.setitem"
			args = append(args, 1.5)
		}
		op := Lookup(target)
		got, err := op.Meta(args, nil)
		require.NoError(t, err, "%s %v", target, index)
		guards := env.Guards()
		for _, g := range guards {
			require.True(t, g.Holds(env.Hints()), "guard %s at the hints", g)
		}
		for _, vals := range append([][]int64{env.Hints()}, altValues(env.Hints())...) {
			env.FillDerived(vals)
			ok := true
			for _, g := range guards {
				ok = ok && g.Holds(vals)
			}
			if !ok {
				ruledOut++
				continue
			}
			cargs := make([]Value, len(args))
			for i, a := range args {
				cargs[i] = evalValue(a, vals)
			}
			want, err := op.Meta(cargs, nil)
			require.NoError(t, err)
			require.Empty(t, sameMeta(evalValue(got, vals), want), "%s %v at %v (guards %v)", target, index, vals, guards)
			checked++
		}
	}
	t.Logf("%d checks, %d value sets ruled out by guards", checked, ruledOut)
	require.Greater(t, checked, 1000)
}
