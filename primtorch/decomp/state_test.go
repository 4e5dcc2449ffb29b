package decomp

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestSameMemoryOtherStridesIsPartialOverlap: x.copy_(x.t()) and a view with another stride for
// a size-1 dim are torch's PARTIAL overlap (eager raises; fuzz seed 24663), the same view is FULL.
func TestSameMemoryOtherStridesIsPartialOverlap(t *testing.T) {
	f32 := func(shape, strides []int64) *primtorch.TensorMeta {
		return &primtorch.TensorMeta{DType: primtorch.Float32, Shape: shape, Strides: strides}
	}
	a, tr := f32([]int64{2, 2}, []int64{2, 1}), f32([]int64{2, 2}, []int64{1, 2})
	col, col2 := f32([]int64{3, 1}, []int64{1, 1}), f32([]int64{3, 1}, []int64{1, 2})
	require.True(t, overlapsOtherwise(a, tr))
	require.True(t, overlapsOtherwise(col, col2))
	require.False(t, overlapsOtherwise(a, f32([]int64{2, 2}, []int64{2, 1})))
	after := f32([]int64{2}, []int64{1})
	after.Offset = 4
	require.False(t, overlapsOtherwise(a, after))
}
