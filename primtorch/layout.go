package primtorch

import "sort"

// Memory formats (torch.memory_format values).
const (
	ContiguousFormat MemoryFormat = "contiguous_format"
	ChannelsLast     MemoryFormat = "channels_last"
	ChannelsLast3d   MemoryFormat = "channels_last_3d"
	PreserveFormat   MemoryFormat = "preserve_format"
)

// channelsLastOrder lists dims from fastest to slowest for channels_last (4-d) and
// channels_last_3d (5-d).
func channelsLastOrder(ndim int) []int {
	switch ndim {
	case 4:
		return []int{1, 3, 2, 0}
	case 5:
		return []int{1, 4, 3, 2, 0}
	}
	return nil
}

// ChannelsLastStrides returns the strides torch gives a channels_last (4-d) or
// channels_last_3d (5-d) tensor of this shape; sizes are multiplied as they are, zeros included.
func ChannelsLastStrides(shape []int64) []int64 {
	order := channelsLastOrder(len(shape))
	st := make([]int64, len(shape))
	acc := int64(1)
	for _, d := range order {
		st[d] = acc
		acc *= shape[d]
	}
	return st
}

// StridesFor returns the strides of a new tensor of shape in memory format mf (contiguous
// unless mf is channels_last and the rank fits).
func StridesFor(shape []int64, mf MemoryFormat) []int64 {
	if (mf == ChannelsLast && len(shape) == 4) || (mf == ChannelsLast3d && len(shape) == 5) {
		return ChannelsLastStrides(shape)
	}
	return ContiguousStrides(shape)
}

// isChannelsLastContiguous is torch's is_contiguous(memory_format=channels_last[_3d]) for a
// 4-d (5-d) tensor: strides are exactly channels-last, ignoring size-1 dims.
func isChannelsLastContiguous(m *TensorMeta) bool {
	order := channelsLastOrder(len(m.Shape))
	if order == nil {
		return false
	}
	expected := int64(1)
	for _, d := range order {
		if m.Shape[d] != 1 {
			if m.Strides[d] != expected {
				return false
			}
			expected *= m.Shape[d]
		}
	}
	return true
}

// IsContiguousAs is torch's is_contiguous(memory_format=mf): channels-last needs a 4-d tensor,
// channels-last-3d a 5-d one.
func (m *TensorMeta) IsContiguousAs(mf MemoryFormat) bool {
	switch mf {
	case ChannelsLast:
		return len(m.Shape) == 4 && isChannelsLastContiguous(m)
	case ChannelsLast3d:
		return len(m.Shape) == 5 && isChannelsLastContiguous(m)
	}
	return m.IsContiguous()
}

// DenseOrder is the order of the dims, innermost first, in which strides are exactly dense:
// each dim's stride is the product of the sizes (at least 1) of the dims before it. Row-major's
// is the dims reversed, channels-last's C, W, H, N. Ties (a size-1 dim's stride equal to its
// neighbour's) put the size-1 dim first, then row-major's order. ok=false for strides no order
// gives (a slice, an expand, an overlap, a size-1 dim with an arbitrary stride). A guard that
// checks strides as such products (the symbolic input's: bytecode's makeSymbolic) holds for
// exactly the tensors laid out the same way.
func DenseOrder(shape, strides []int64) ([]int, bool) {
	n := len(shape)
	order := make([]int, n)
	for i := range order {
		order[i] = n - 1 - i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if strides[a] != strides[b] {
			return strides[a] < strides[b]
		}
		return shape[a] == 1 && shape[b] != 1
	})
	want := int64(1)
	for _, d := range order {
		if strides[d] != want {
			return nil, false
		}
		want *= max(shape[d], 1)
	}
	return order, true
}

// SymStridesInOrder are the dense strides of sizes laid out in order (DenseOrder's: innermost
// first); SymContiguousStrides for row-major's.
func SymStridesInOrder(sizes []SymInt, order []int) []SymInt {
	st := make([]SymInt, len(sizes))
	acc := SymConst(1)
	for _, d := range order {
		st[d] = acc
		if k, ok := sizes[d].IsConst(); !ok || k > 1 {
			acc = acc.Mul(sizes[d])
		}
	}
	return st
}

// IsNonOverlappingAndDense reports whether the tensor's elements fill a contiguous block of
// memory exactly once, in some dim order.
func (m *TensorMeta) IsNonOverlappingAndDense() bool {
	if m.IsContiguous() || isChannelsLastContiguous(m) {
		return true
	}
	n := len(m.Shape)
	if n == 1 {
		return m.Shape[0] < 2 || m.Strides[0] == 1
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	sort.SliceStable(perm, func(i, j int) bool {
		a, b := perm[i], perm[j]
		if m.Shape[a] < 2 {
			return false
		}
		if m.Shape[b] < 2 {
			return true
		}
		return m.Strides[a] < m.Strides[b]
	})
	require := int64(1)
	for _, d := range perm {
		if m.Shape[d] < 2 {
			return true
		}
		if m.Strides[d] != require {
			return false
		}
		require *= m.Shape[d]
	}
	return true
}

// stridesLikeChannelsLast is torch's is_strides_like_channels_last[_3d] heuristic: strides
// decrease in channels-last dim order (it does not require density).
func stridesLikeChannelsLast(shape, strides []int64) bool {
	order := channelsLastOrder(len(shape))
	if order == nil || strides[1] == 0 {
		return false
	}
	min := int64(0)
	for _, d := range order {
		if shape[d] == 0 {
			return false
		}
		if strides[d] < min {
			return false
		}
		if d == 0 && min == strides[1] {
			return false
		}
		min = strides[d]
		if shape[d] > 1 {
			min *= shape[d]
		}
	}
	return true
}

// SuggestMemoryFormat is torch's Tensor.suggest_memory_format(): channels_last[_3d] when the
// strides look channels-last, else contiguous.
func (m *TensorMeta) SuggestMemoryFormat() MemoryFormat {
	if stridesLikeChannelsLast(m.Shape, m.Strides) {
		if len(m.Shape) == 4 {
			return ChannelsLast
		}
		return ChannelsLast3d
	}
	return ContiguousFormat
}

// emptyLike returns the meta of empty_like(m, dtype) in memory format mf.
func emptyLike(m *TensorMeta, dt DType, mf MemoryFormat) *TensorMeta { return symEmptyLike(m, dt, mf) }
