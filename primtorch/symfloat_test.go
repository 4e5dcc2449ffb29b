package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSymFloatGate(t *testing.T) {
	x := &TensorMeta{DType: Float32, Shape: []int64{3}, Strides: []int64{1}, Device: CPU}
	xi := &TensorMeta{DType: Int64, Shape: []int64{3}, Strides: []int64{1}, Device: CPU}
	env := NewShapeEnv()
	f := env.NewFloat(0.25, "L['a']")

	// add, sub, mul, div take it as self or other: a weakly typed float, not specialised
	for _, target := range []string{"torch.mul", "torch.add", "operator.truediv", "torch.sub", "torch.rsub"} {
		r, err := Lookup(target).Meta([]Value{x, f}, nil)
		require.NoError(t, err, target)
		require.Equal(t, Float32, r.(*TensorMeta).DType, target)
	}
	r, err := Lookup("torch.mul").Meta([]Value{xi, f}, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultFloat, r.(*TensorMeta).DType, "int tensor * float: the default float dtype")
	require.False(t, f.IsSpecialized())
	require.Empty(t, env.SpecializedFloats())

	// alpha, a rounding division and every other op get its value, recorded
	_, err = Lookup("torch.add").Meta([]Value{x, x}, []KV{{Name: "alpha", Value: f}})
	require.NoError(t, err)
	require.True(t, f.IsSpecialized())
	require.Contains(t, env.SpecializedFloats()[0], "add")

	g := env.NewFloat(2, "L['b']")
	_, err = Lookup("torch.div").Meta([]Value{x, g}, []KV{{Name: "rounding_mode", Value: "floor"}})
	require.NoError(t, err)
	require.True(t, g.IsSpecialized())

	h := env.NewFloat(0.5, "L['c']")
	_, err = Lookup("torch.clamp").Meta([]Value{x, h}, nil)
	require.NoError(t, err)
	require.True(t, h.IsSpecialized())
	require.Equal(t, 0.5, h.Hint())
	require.Equal(t, "f2", h.String())
}
