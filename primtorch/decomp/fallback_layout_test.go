package decomp

import "testing"

func TestNonOverlapping(t *testing.T) {
	cases := []struct {
		shape, strides []int64
		want           bool
	}{
		{[]int64{4, 3}, []int64{3, 1}, true},         // contiguous
		{[]int64{4, 3}, []int64{1, 4}, true},         // transposed
		{[]int64{4, 6}, []int64{12, 2}, true},        // x[:, ::2] of a 4x12
		{[]int64{6, 4}, []int64{2, 12}, true},        // its transpose
		{[]int64{4, 3}, []int64{0, 1}, false},        // expanded
		{[]int64{4, 3}, []int64{2, 1}, false},        // rows overlap
		{[]int64{1, 3}, []int64{0, 1}, true},         // a size-1 dim's stride is free
		{[]int64{0, 3}, []int64{0, 0}, true},         // no elements
		{[]int64{2, 2, 2}, []int64{1, 4, 2}, true},   // permuted dense
		{[]int64{2, 3, 2}, []int64{12, 2, 4}, false}, // dim 2 lands on dim 1's elements
		{[]int64{2, 3, 2}, []int64{12, 2, 5}, true},  // interleaved, no element twice
		{[]int64{2, 3, 2}, []int64{12, 1, 3}, true},  // gaps between rows
	}
	for _, c := range cases {
		if got := nonOverlapping(c.shape, c.strides); got != c.want {
			t.Errorf("nonOverlapping(%v, %v) = %v, want %v", c.shape, c.strides, got, c.want)
		}
	}
}
