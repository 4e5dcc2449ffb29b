package inductor

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"ptgo/primtorch"
)

// Tensor is a strided tensor in Go-owned host memory, for Execute and tests: Data is the whole
// storage (8-byte aligned when made by NewStorage); element k of the logical index i lives at
// Offset + Σ i_d·Strides[d].
type Tensor struct {
	DType   primtorch.DType
	Sizes   []int64
	Strides []int64
	Offset  int64
	Data    []byte
}

// NewStorage returns n zeroed bytes, 8-byte aligned.
func NewStorage(n int64) []byte {
	if n <= 0 {
		return nil
	}
	words := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
}

// NewTensor returns a zeroed contiguous tensor.
func NewTensor(dt primtorch.DType, sizes []int64) *Tensor {
	return NewStrided(dt, sizes, primtorch.ContiguousStrides(sizes), 0)
}

// NewStrided returns a zeroed tensor with the given layout and a storage just large enough.
func NewStrided(dt primtorch.DType, sizes, strides []int64, offset int64) *Tensor {
	elems := storageElems(sizes, strides, offset)
	return &Tensor{DType: dt, Sizes: append([]int64(nil), sizes...), Strides: append([]int64(nil), strides...), Offset: offset,
		Data: NewStorage(elems * int64(dt.ItemSize()))}
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 { return numel(t.Sizes) }

// pos returns the storage element of the k-th element in row-major logical order.
func (t *Tensor) pos(k int64) int64 {
	p := t.Offset
	for d := len(t.Sizes) - 1; d >= 0; d-- {
		s := t.Sizes[d]
		p += (k % s) * t.Strides[d]
		k /= s
	}
	return p
}

// At returns the k-th element (row-major logical order) as a float64.
func (t *Tensor) At(k int64) float64 { return loadElem(t.DType, t.Data, t.pos(k)) }

// AtInt returns the k-th element as an int64 (integer and bool dtypes exactly).
func (t *Tensor) AtInt(k int64) int64 { return loadInt(t.DType, t.Data, t.pos(k)) }

// Set stores v (converted to the dtype as C does) as the k-th element.
func (t *Tensor) Set(k int64, v float64) { storeElem(t.DType, t.Data, t.pos(k), v) }

// SetInt stores an integer as the k-th element.
func (t *Tensor) SetInt(k int64, v int64) { storeInt(t.DType, t.Data, t.pos(k), v) }

// Values returns every element as float64, row-major.
func (t *Tensor) Values() []float64 {
	out := make([]float64, t.Numel())
	for k := range out {
		out[k] = t.At(int64(k))
	}
	return out
}

// FromValues returns a contiguous tensor holding vals (converted to dt).
func FromValues(dt primtorch.DType, sizes []int64, vals []float64) *Tensor {
	t := NewTensor(dt, sizes)
	for k, v := range vals {
		t.Set(int64(k), v)
	}
	return t
}

func (t *Tensor) String() string {
	return fmt.Sprintf("tensor %s %v", typeText(t.DType, syms(t.Sizes), staticLayout(t.Strides, t.Offset)), t.Values())
}

var le = binary.LittleEndian

func loadElem(dt primtorch.DType, d []byte, p int64) float64 {
	sz := int64(dt.ItemSize())
	b := d[p*sz : (p+1)*sz]
	switch dt {
	case primtorch.Float32:
		return float64(math.Float32frombits(le.Uint32(b)))
	case primtorch.Float64:
		return math.Float64frombits(le.Uint64(b))
	case primtorch.Float16:
		return float64(halfToFloat(le.Uint16(b)))
	case primtorch.BFloat16:
		return float64(bf16ToFloat(le.Uint16(b)))
	}
	return float64(loadInt(dt, d, p))
}

func loadInt(dt primtorch.DType, d []byte, p int64) int64 {
	sz := int64(dt.ItemSize())
	b := d[p*sz : (p+1)*sz]
	switch dt {
	case primtorch.Int64:
		return int64(le.Uint64(b))
	case primtorch.Int32:
		return int64(int32(le.Uint32(b)))
	case primtorch.Int16:
		return int64(int16(le.Uint16(b)))
	case primtorch.Int8:
		return int64(int8(b[0]))
	case primtorch.UInt8, primtorch.Bool:
		return int64(b[0])
	}
	return int64(loadElem(dt, d, p))
}

func storeElem(dt primtorch.DType, d []byte, p int64, v float64) {
	sz := int64(dt.ItemSize())
	b := d[p*sz : (p+1)*sz]
	switch dt {
	case primtorch.Float32:
		le.PutUint32(b, math.Float32bits(float32(v)))
	case primtorch.Float64:
		le.PutUint64(b, math.Float64bits(v))
	case primtorch.Float16:
		le.PutUint16(b, floatToHalf(float32(v)))
	case primtorch.BFloat16:
		le.PutUint16(b, floatToBF16(float32(v)))
	case primtorch.Bool:
		if v != 0 {
			b[0] = 1
		} else {
			b[0] = 0
		}
	default:
		storeInt(dt, d, p, int64(v))
	}
}

func storeInt(dt primtorch.DType, d []byte, p int64, v int64) {
	sz := int64(dt.ItemSize())
	b := d[p*sz : (p+1)*sz]
	switch dt {
	case primtorch.Int64:
		le.PutUint64(b, uint64(v))
	case primtorch.Int32:
		le.PutUint32(b, uint32(v))
	case primtorch.Int16:
		le.PutUint16(b, uint16(v))
	case primtorch.Int8, primtorch.UInt8:
		b[0] = byte(v)
	case primtorch.Bool:
		if v != 0 {
			b[0] = 1
		} else {
			b[0] = 0
		}
	default:
		storeElem(dt, d, p, float64(v))
	}
}
