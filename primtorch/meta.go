package primtorch

import (
	"fmt"
	"strings"
)

// TensorMeta is everything about a tensor except its data: what meta functions compute and
// what tensor guards check.
type TensorMeta struct {
	DType        DType
	Shape        []int64
	Strides      []int64 // in elements
	Offset       int64   // storage offset in elements
	Device       Device
	RequiresGrad bool
	// Sym is the symbolic layout when sizes, strides or offset depend on size symbols (nil for
	// a static tensor); Shape, Strides and Offset then hold its values at the hints (sym.go).
	Sym *SymLayout
}

// NewContiguous returns the meta of a contiguous (row-major) tensor.
func NewContiguous(dt DType, shape []int64, dev Device) *TensorMeta {
	return &TensorMeta{DType: dt, Shape: append([]int64(nil), shape...), Strides: ContiguousStrides(shape), Device: dev}
}

// ContiguousStrides returns row-major strides for shape (size-1 and size-0 dims get the stride
// torch gives them).
func ContiguousStrides(shape []int64) []int64 {
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		if shape[i] > 1 {
			acc *= shape[i]
		}
	}
	return st
}

func (m *TensorMeta) Dim() int { return len(m.Shape) }

// Numel is the number of elements.
func (m *TensorMeta) Numel() int64 {
	n := int64(1)
	for _, s := range m.Shape {
		n *= s
	}
	return n
}

// IsContiguous reports torch's is_contiguous(): strides of dims with size > 1 are row-major.
// A tensor with no elements is contiguous.
func (m *TensorMeta) IsContiguous() bool {
	if m.Numel() == 0 {
		return true
	}
	acc := int64(1)
	for i := len(m.Shape) - 1; i >= 0; i-- {
		if m.Shape[i] == 1 {
			continue
		}
		if m.Strides[i] != acc {
			return false
		}
		acc *= m.Shape[i]
	}
	return true
}

// Clone returns a deep copy.
func (m *TensorMeta) Clone() *TensorMeta {
	c := *m
	c.Shape = append([]int64(nil), m.Shape...)
	c.Strides = append([]int64(nil), m.Strides...)
	if m.Sym != nil {
		c.Sym = &SymLayout{Sizes: append([]SymInt(nil), m.Sym.Sizes...), Strides: append([]SymInt(nil), m.Sym.Strides...), Offset: m.Sym.Offset}
	}
	return &c
}

// String prints the IR form: f32[4,16] (strides and device only when not the default).
func (m *TensorMeta) String() string {
	var b strings.Builder
	b.WriteString(m.DType.String())
	b.WriteByte('[')
	for i, s := range m.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, s)
	}
	b.WriteByte(']')
	if !m.IsContiguous() || m.Offset != 0 {
		b.WriteString("{")
		for i, s := range m.Strides {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, s)
		}
		if m.Offset != 0 {
			fmt.Fprintf(&b, "+%d", m.Offset)
		}
		b.WriteString("}")
	}
	if m.Device.Type != "" && m.Device.Type != "cpu" {
		b.WriteString("@" + m.Device.String())
	}
	if m.RequiresGrad {
		b.WriteString("!grad")
	}
	return b.String()
}
