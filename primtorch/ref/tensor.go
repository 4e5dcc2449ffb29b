package ref

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Tensor is a strided tensor on the CPU. Views share their storage. Floating dtypes are stored
// as float64 values rounded to the dtype on every store (float16 and bfloat16 included);
// integral dtypes and bool as int64 values wrapped to the dtype (bool is 0 or 1).
type Tensor struct {
	DType   primtorch.DType
	Shape   []int64
	Strides []int64
	Offset  int64
	st      *storage
}

type storage struct {
	f []float64 // floating dtypes
	i []int64   // integral dtypes and bool
}

// isFloat reports whether dt is stored as floats.
func isFloat(dt primtorch.DType) bool { return dt.IsFloatingPoint() }

func checkDType(dt primtorch.DType) error {
	if dt >= primtorch.NumDTypes || dt.IsComplex() {
		return fmt.Errorf("ref: dtype %v is not supported (complex tensors are not part of the prims contract)", dt)
	}
	return nil
}

// storageSize is the number of storage elements a tensor of this geometry reaches.
func storageSize(shape, strides []int64, offset int64) int64 {
	end := offset + 1
	for i, s := range shape {
		if s == 0 {
			return offset
		}
		end += (s - 1) * strides[i]
	}
	return end
}

// Empty returns a tensor of zeros with the given layout (nil strides: contiguous).
func Empty(dt primtorch.DType, shape, strides []int64) *Tensor {
	if strides == nil {
		strides = primtorch.ContiguousStrides(shape)
	}
	t := &Tensor{DType: dt, Shape: append([]int64{}, shape...), Strides: append([]int64{}, strides...), st: &storage{}}
	n := storageSize(shape, strides, 0)
	if isFloat(dt) {
		t.st.f = make([]float64, n)
	} else {
		t.st.i = make([]int64, n)
	}
	return t
}

// FromFloats returns a contiguous tensor holding vals (row-major), converted to dt as
// prims.convert_element_type converts.
func FromFloats(dt primtorch.DType, shape []int64, vals []float64) *Tensor {
	t := Empty(dt, shape, nil)
	if int64(len(vals)) != t.Numel() {
		panic(fmt.Sprintf("ref.FromFloats: %d values for shape %v", len(vals), shape))
	}
	for k, v := range vals {
		t.setF(int64(k), v)
	}
	return t
}

// FromInts returns a contiguous integral (or bool, or floating) tensor holding vals.
func FromInts(dt primtorch.DType, shape []int64, vals []int64) *Tensor {
	t := Empty(dt, shape, nil)
	if int64(len(vals)) != t.Numel() {
		panic(fmt.Sprintf("ref.FromInts: %d values for shape %v", len(vals), shape))
	}
	for k, v := range vals {
		t.setI(int64(k), v)
	}
	return t
}

// FromStorage returns a tensor viewing a storage of the given values (float64 for floating
// dtypes, int64 otherwise, as []float64 or []int64) with the given geometry: how tests rebuild
// non-contiguous torch tensors exactly.
func FromStorage(dt primtorch.DType, shape, strides []int64, offset int64, data any) (*Tensor, error) {
	if err := checkDType(dt); err != nil {
		return nil, err
	}
	if len(strides) != len(shape) {
		return nil, fmt.Errorf("ref.FromStorage: %d strides for %d dims", len(strides), len(shape))
	}
	t := &Tensor{DType: dt, Shape: append([]int64{}, shape...), Strides: append([]int64{}, strides...), Offset: offset, st: &storage{}}
	need := storageSize(shape, strides, offset)
	switch d := data.(type) {
	case []float64:
		if isFloat(dt) {
			t.st.f = make([]float64, len(d))
			for k, v := range d {
				t.st.f[k] = roundFloat(dt, v)
			}
		} else {
			t.st.i = make([]int64, len(d))
			for k, v := range d {
				t.st.i[k] = floatToInt(dt, v)
			}
		}
	case []int64:
		if isFloat(dt) {
			t.st.f = make([]float64, len(d))
			for k, v := range d {
				t.st.f[k] = roundFloat(dt, float64(v))
			}
		} else {
			t.st.i = make([]int64, len(d))
			for k, v := range d {
				t.st.i[k] = wrapInt(dt, v)
			}
		}
	default:
		return nil, fmt.Errorf("ref.FromStorage: data of type %T; give []float64 or []int64", data)
	}
	if int64(max(len(t.st.f), len(t.st.i))) < need {
		return nil, fmt.Errorf("ref.FromStorage: a storage of %d elements is too small for shape %v strides %v offset %d", max(len(t.st.f), len(t.st.i)), shape, strides, offset)
	}
	return t, nil
}

// Scalar returns a 0-d tensor of dtype dt holding v (bool, int64 or float64).
func Scalar(dt primtorch.DType, v any) *Tensor {
	t := Empty(dt, nil, nil)
	switch x := v.(type) {
	case bool:
		if x {
			t.setI(0, 1)
		} else {
			t.setI(0, 0)
		}
	case int64:
		t.setI(0, x)
	case float64:
		t.setF(0, x)
	default:
		panic(fmt.Sprintf("ref.Scalar: %T", v))
	}
	return t
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 {
	n := int64(1)
	for _, s := range t.Shape {
		n *= s
	}
	return n
}

// Meta returns the tensor's meta (on the CPU, not requiring grad).
func (t *Tensor) Meta() *primtorch.TensorMeta {
	return &primtorch.TensorMeta{DType: t.DType, Shape: append([]int64{}, t.Shape...), Strides: append([]int64{}, t.Strides...), Offset: t.Offset, Device: primtorch.CPU}
}

// SameStorage reports whether two tensors share their storage (one is a view of the other).
func (t *Tensor) SameStorage(u *Tensor) bool { return t.st == u.st }

// positions returns the storage index of every element in row-major order.
func (t *Tensor) positions() []int64 {
	n := t.Numel()
	out := make([]int64, n)
	if n == 0 {
		return out
	}
	nd := len(t.Shape)
	idx := make([]int64, nd)
	pos := t.Offset
	for k := int64(0); k < n; k++ {
		out[k] = pos
		for d := nd - 1; d >= 0; d-- {
			idx[d]++
			pos += t.Strides[d]
			if idx[d] < t.Shape[d] {
				break
			}
			pos -= idx[d] * t.Strides[d]
			idx[d] = 0
		}
	}
	return out
}

func (t *Tensor) getF(pos int64) float64 {
	if t.st.f != nil {
		return t.st.f[pos]
	}
	return float64(t.st.i[pos])
}

func (t *Tensor) getI(pos int64) int64 {
	if t.st.i != nil {
		return t.st.i[pos]
	}
	return floatToInt(primtorch.Int64, t.st.f[pos])
}

// setF stores a float at a storage position, converted to the tensor's dtype.
func (t *Tensor) setF(pos int64, v float64) {
	if t.st.f != nil {
		t.st.f[pos] = roundFloat(t.DType, v)
		return
	}
	t.st.i[pos] = floatToInt(t.DType, v)
}

// setI stores an integer at a storage position, converted to the tensor's dtype.
func (t *Tensor) setI(pos int64, v int64) {
	if t.st.i != nil {
		t.st.i[pos] = wrapInt(t.DType, v)
		return
	}
	t.st.f[pos] = roundFloat(t.DType, float64(v))
}

// Floats returns the elements in row-major order as float64.
func (t *Tensor) Floats() []float64 {
	pos := t.positions()
	out := make([]float64, len(pos))
	for k, p := range pos {
		out[k] = t.getF(p)
	}
	return out
}

// Ints returns the elements in row-major order as int64 (floats truncated).
func (t *Tensor) Ints() []int64 {
	pos := t.positions()
	out := make([]int64, len(pos))
	for k, p := range pos {
		out[k] = t.getI(p)
	}
	return out
}

// Contiguous returns a contiguous copy.
func (t *Tensor) Contiguous() *Tensor {
	out := Empty(t.DType, t.Shape, nil)
	copyInto(out, t)
	return out
}

// copyInto writes src's elements into dst (same shape), converting dtypes.
func copyInto(dst, src *Tensor) {
	if dst.st == src.st {
		src = src.Contiguous() // overlapping source: read it all before writing
	}
	dp, sp := dst.positions(), src.positions()
	if isFloat(src.DType) {
		for k := range dp {
			dst.setF(dp[k], src.getF(sp[k]))
		}
		return
	}
	for k := range dp {
		dst.setI(dp[k], src.getI(sp[k]))
	}
}

// String prints the tensor as f32[2,2]{1,2}(1, 2, 3, 4), the layout only when not contiguous.
func (t *Tensor) String() string {
	var b strings.Builder
	b.WriteString(t.Meta().String())
	b.WriteByte('(')
	pos := t.positions()
	for k, p := range pos {
		if k > 0 {
			b.WriteString(", ")
		}
		if k == 32 {
			fmt.Fprintf(&b, "... %d more", len(pos)-k)
			break
		}
		if isFloat(t.DType) {
			b.WriteString(strconv.FormatFloat(t.getF(p), 'g', -1, 64))
		} else {
			b.WriteString(strconv.FormatInt(t.getI(p), 10))
		}
	}
	b.WriteByte(')')
	return b.String()
}

// roundFloat rounds v to the precision of floating dtype dt (float64: unchanged).
func roundFloat(dt primtorch.DType, v float64) float64 {
	switch dt {
	case primtorch.Float32:
		return float64(float32(v))
	case primtorch.Float16:
		return roundHalf(v)
	case primtorch.BFloat16:
		return roundBFloat16(v)
	case primtorch.Float64:
		return v
	}
	// an integral dtype stored as floats never happens; keep the value.
	return v
}

// wrapInt wraps v to integral dtype dt as a C cast does (bool: v != 0).
func wrapInt(dt primtorch.DType, v int64) int64 {
	switch dt {
	case primtorch.Bool:
		if v != 0 {
			return 1
		}
		return 0
	case primtorch.UInt8:
		return int64(uint8(v))
	case primtorch.Int8:
		return int64(int8(v))
	case primtorch.Int16:
		return int64(int16(v))
	case primtorch.Int32:
		return int64(int32(v))
	}
	return v
}

// floatToInt converts a float to integral dtype dt as torch's casts do on x86: truncation
// toward zero; to int64, NaN and values out of int64's range become the int64 minimum; to
// int32 and narrower types (which torch converts through int32, then wraps), NaN and values
// out of int32's range become the int32 minimum; to bool, v != 0.
func floatToInt(dt primtorch.DType, v float64) int64 {
	if dt == primtorch.Bool {
		if v != 0 {
			return 1
		}
		return 0
	}
	tr := math.Trunc(v)
	if dt == primtorch.Int64 {
		if math.IsNaN(tr) || tr >= 9.223372036854775807e18 || tr < -9.223372036854775808e18 {
			return math.MinInt64
		}
		return int64(tr)
	}
	if math.IsNaN(tr) || tr > math.MaxInt32 || tr < math.MinInt32 {
		return wrapInt(dt, math.MinInt32)
	}
	return wrapInt(dt, int64(tr))
}
