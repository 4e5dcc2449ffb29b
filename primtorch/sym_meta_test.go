package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func symF32(env *ShapeEnv, sizes ...any) *TensorMeta {
	ss := make([]SymInt, len(sizes))
	for i, s := range sizes {
		switch x := s.(type) {
		case SymInt:
			ss[i] = x
		case int:
			ss[i] = SymConst(int64(x))
		}
	}
	return NewSymContiguous(Float32, ss, CPU)
}

func meta(t *testing.T, target string, args ...Value) *TensorMeta {
	t.Helper()
	r, err := Lookup(target).Meta(args, nil)
	require.NoError(t, err)
	return r.(*TensorMeta)
}

func TestSymBroadcastRecordsNoGuard(t *testing.T) {
	env := NewShapeEnv()
	s0, s1 := env.NewSymbol(8, "x.size(0)"), env.NewSymbol(16, "x.size(1)")
	x, y := symF32(env, s0, s1), symF32(env, s0, s1)
	r := meta(t, "torch.add", x, y)
	require.Equal(t, "f32[s0,s1]", r.SymString())
	// a size-1 dim and a missing dim broadcast without a guard too
	r = meta(t, "torch.mul", x, symF32(env, 1, s1))
	require.Equal(t, "f32[s0,s1]", r.SymString())
	r = meta(t, "torch.sub", x, symF32(env, s1))
	require.Equal(t, "f32[s0,s1]", r.SymString())
	require.Empty(t, env.Guards())
	require.Empty(t, env.Specialized())
	// the layout follows the symbolic strides: x.t() + x.t() keeps the transposed layout
	tt := meta(t, "Tensor.t", x)
	r = meta(t, "torch.add", tt, tt)
	require.Equal(t, "f32[s1,s0]{1,s1}", r.SymString())
	require.Empty(t, env.Guards())
}

func TestSymBroadcastAgainstConstantSpecializes(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(0)")
	r := meta(t, "torch.add", symF32(env, s0, 4), symF32(env, 8, 4))
	require.Equal(t, []int64{8, 4}, r.Shape)
	require.True(t, env.IsSpecialized(0), "s0 compared equal to 8 is specialised")
	require.Equal(t, "s0 == 8", env.Guards()[0].String())

	// two symbols with equal hints are guarded equal, not specialised
	env = NewShapeEnv()
	a, b := env.NewSymbol(8, "x.size(0)"), env.NewSymbol(8, "y.size(0)")
	meta(t, "torch.add", symF32(env, a), symF32(env, b))
	require.Equal(t, []string{"s0 == s1"}, guardStrings(env))
	require.Empty(t, env.Specialized())

	// a mismatch is torch's error, at the hints
	env = NewShapeEnv()
	a = env.NewSymbol(8, "x.size(0)")
	_, err := Lookup("torch.add").Meta([]Value{symF32(env, a), symF32(env, 5)}, nil)
	require.ErrorContains(t, err, "The size of tensor a (8) must match the size of tensor b (5) at non-singleton dimension 0")
}

func guardStrings(env *ShapeEnv) []string {
	var out []string
	for _, g := range env.Guards() {
		out = append(out, g.String())
	}
	return out
}

func TestSymViewInference(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(0)")
	x := symF32(env, s0, 4, 16)
	// -1 is the exact quotient: 64*s0 / 64
	r := meta(t, "Tensor.view", x, int64(-1), int64(64))
	require.Equal(t, "f32[s0,64]", r.SymString())
	r = meta(t, "Tensor.view", x, int64(4), int64(-1))
	require.Equal(t, "f32[4,16*s0]", r.SymString())
	r = meta(t, "Tensor.reshape", x, []Value{s0, int64(-1)})
	require.Equal(t, "f32[s0,64]", r.SymString())
	r = meta(t, "Tensor.flatten", x)
	require.Equal(t, "f32[64*s0]", r.SymString())
	r = meta(t, "Tensor.view", meta(t, "Tensor.view", x, int64(-1)), s0, int64(4), int64(16))
	require.Equal(t, "f32[s0,4,16]", r.SymString())
	require.Empty(t, env.Guards(), "exact divisions need no guard")

	// 64*s0 / 3 is no polynomial: the inference specialises s0
	_, err := Lookup("Tensor.view").Meta([]Value{x, int64(-1), int64(3)}, nil)
	require.Error(t, err) // 512 is not a multiple of 3
	require.True(t, env.IsSpecialized(0))
	env = NewShapeEnv()
	s0 = env.NewSymbol(6, "x.size(0)")
	r = meta(t, "Tensor.view", symF32(env, s0, 4), int64(-1), int64(8))
	require.Equal(t, []int64{3, 8}, r.Shape)
	require.True(t, env.IsSpecialized(0))
}

func TestSymViewsAndSlices(t *testing.T) {
	env := NewShapeEnv()
	s0, s1 := env.NewSymbol(8, "x.size(0)"), env.NewSymbol(16, "x.size(1)")
	x := symF32(env, s0, s1)
	require.Equal(t, "f32[s1,s0]{1,s1}", meta(t, "Tensor.transpose", x, int64(0), int64(1)).SymString())
	require.Equal(t, "f32[s0,1,s1]", meta(t, "Tensor.unsqueeze", x, int64(1)).SymString())
	require.Equal(t, "f32[s1]{1+s1}", meta(t, "Tensor.select", x, int64(0), int64(1)).SymString())
	require.Equal(t, "f32[s1]{1+-s1+s0*s1}", meta(t, "Tensor.select", x, int64(0), int64(-1)).SymString())
	require.Equal(t, "f32[s0,s1-1]{s1,1+1}", meta(t, "operator.getitem", x, Tuple{Slice{}, Slice{Start: ptr(1)}}).SymString())
	require.Equal(t, "f32[s0,s1-1]{s1,1}", meta(t, "operator.getitem", x, Tuple{Slice{}, Slice{Stop: ptr(-1)}}).SymString())
	require.Equal(t, "f32[4,s0,s1]{0,s1,1}", meta(t, "Tensor.expand", x, int64(4), int64(-1), int64(-1)).SymString())
	require.Empty(t, env.Guards(), "these bounds follow from sizes being at least 2")
	// a slice bound past a symbolic size clamps with a guard
	r := meta(t, "operator.getitem", x, Tuple{Slice{Stop: ptr(10)}})
	require.Equal(t, "f32[s0,s1]", r.SymString())
	require.Equal(t, []string{"10 >= s0"}, guardStrings(env))
	// reductions and normalizations
	require.Equal(t, "f32[s0]", meta(t, "torch.sum", x, int64(1)).SymString())
	require.Equal(t, "f32[1,s1]", meta(t, "torch.mean", x, int64(0), true).SymString())
	require.Equal(t, "f32[s0,s1]", meta(t, "torch.softmax", x, int64(-1)).SymString())
	w := symF32(env, s1, 32)
	require.Equal(t, "f32[s0,32]", meta(t, "torch.matmul", x, w).SymString())
}

func ptr(x int64) *int64 { return &x }

func TestSymConvBatch(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(0)")
	x := NewSymContiguous(Float32, []SymInt{s0, SymConst(3), SymConst(16), SymConst(16)}, CPU)
	w := NewContiguous(Float32, []int64{4, 3, 3, 3}, CPU)
	r, err := Lookup("torch.conv2d").Meta([]Value{x, w}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,14,14]", r.(*TensorMeta).SymString(), "a symbolic batch stays symbolic")
	require.Empty(t, env.Guards())
	p, err := Lookup("torch.nn.functional.max_pool2d").Meta([]Value{r, int64(2)}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,7,7]", p.(*TensorMeta).SymString())

	// a symbolic spatial size stays symbolic: out = floor((in + 2·pad - dilation·(k - 1) - 1) /
	// stride) + 1, a derived symbol where the stride is above 1 (spatialSymbolic)
	s1 := env.NewSymbol(16, "x.size(2)")
	x = NewSymContiguous(Float32, []SymInt{s0, SymConst(3), s1, s1}, CPU)
	r, err = Lookup("torch.conv2d").Meta([]Value{x, w}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,s1-2,s1-2]", r.(*TensorMeta).SymString())
	require.True(t, !env.IsSpecialized(0) && !env.IsSpecialized(1))
	p, err = Lookup("torch.nn.functional.max_pool2d").Meta([]Value{r, int64(2)}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,s2-1,s2-1]", p.(*TensorMeta).SymString())
	d, ok := env.Derived(2)
	require.True(t, ok)
	require.Equal(t, "s1//2", d.String())
	r, err = Lookup("torch.conv2d").Meta([]Value{x, w}, []KV{{"stride", int64(2)}, {"padding", int64(1)}})
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,s3,s3]", r.(*TensorMeta).SymString())
	// at other sizes the symbolic result is the static meta's
	for _, n := range []int64{5, 6, 17, 100} {
		vals := []int64{3, n, 0, 0}
		env.FillDerived(vals)
		st, err := Lookup("torch.conv2d").Meta([]Value{NewContiguous(Float32, []int64{3, 3, n, n}, CPU), w}, []KV{{"stride", int64(2)}, {"padding", int64(1)}})
		require.NoError(t, err)
		require.Equal(t, st.(*TensorMeta).Shape[2], r.(*TensorMeta).Sym.Sizes[2].Eval(vals), "size %d", n)
	}
	// channels sized by a spatial symbol: nothing stays symbolic but the batch
	x = NewSymContiguous(Float32, []SymInt{s0, s1, s1, s1}, CPU)
	w16 := NewContiguous(Float32, []int64{4, 16, 3, 3}, CPU)
	r, err = Lookup("torch.conv2d").Meta([]Value{x, w16}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[s0,4,14,14]", r.(*TensorMeta).SymString())
	require.True(t, env.IsSpecialized(1))
}

func TestSymNonSymbolicOpSpecializes(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(0)")
	r, err := Lookup("torch.roll").Meta([]Value{symF32(env, s0, 4), int64(1), int64(0)}, nil)
	require.NoError(t, err)
	require.Nil(t, r.(*TensorMeta).Sym, "roll's meta is not symbolic: its arguments were specialised")
	require.True(t, env.IsSpecialized(0))
	require.Equal(t, []string{"s0 == 8"}, guardStrings(env))
}

// An int a symbolic meta reads concretely (Args.Int/Ints) is specialised, never read as 0.
func TestSymIntReadConcretelySpecializes(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(3, "n")
	x := symF32(env, 4, 6)
	r := meta(t, "Tensor.repeat", x, s0, int64(1))
	require.Equal(t, []int64{12, 6}, r.Shape)
	require.True(t, env.IsSpecialized(0))
	env = NewShapeEnv()
	s0 = env.NewSymbol(3, "n")
	rs, err := Lookup("Tensor.chunk").Meta([]Value{symF32(env, 4, 6), s0, int64(1)}, nil)
	require.NoError(t, err)
	require.Len(t, rs, 3)
	require.Equal(t, []string{"s0 == 3"}, guardStrings(env))
}

// A size as data: torch.tensor([x.size(0)]) and scalar_tensor(x.size(0)) keep the symbol in the
// call (their metas do not depend on it).
func TestSymSizeAsData(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(0)")
	r := meta(t, "torch.tensor", []Value{s0, int64(2)})
	require.Equal(t, "i64[2]", r.String())
	r = meta(t, "torch.scalar_tensor", s0)
	require.Equal(t, "f32[]", r.String())
	x := symF32(env, s0, 4)
	r = meta(t, "torch.div", x, s0)
	require.Equal(t, "f32[s0,4]", r.SymString())
	r = meta(t, "torch.add", NewContiguous(Int32, []int64{3}, CPU), s0)
	require.Equal(t, Int32, r.DType, "a size promotes as a Python int")
	require.Empty(t, env.Guards())
}

func TestSymUnbindKeepsOtherDims(t *testing.T) {
	env := NewShapeEnv()
	s0 := env.NewSymbol(8, "x.size(1)")
	r, err := Lookup("Tensor.unbind").Meta([]Value{symF32(env, 3, s0, 4)}, nil)
	require.NoError(t, err)
	require.Len(t, r, 3)
	require.Equal(t, "f32[s0,4]{4,1+8*s0}", r.([]Value)[2].(*TensorMeta).SymString())
	require.Empty(t, env.Guards())
	// unbinding a symbolic dim fixes the number of results: that symbol is specialised
	_, err = Lookup("Tensor.unbind").Meta([]Value{symF32(env, 3, s0, 4), int64(1)}, nil)
	require.NoError(t, err)
	require.True(t, env.IsSpecialized(0))
}
