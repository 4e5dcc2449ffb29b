package primtorch

import (
	"fmt"
	"strings"
)

// broadcastPair is torch's infer_size: a is the shape so far, b the next operand's.
func broadcastPair(a, b []int64) ([]int64, error) {
	n := max(len(a), len(b))
	out := make([]int64, n)
	for i := n - 1; i >= 0; i-- {
		off := n - 1 - i
		sa, sb := int64(1), int64(1)
		if da := len(a) - 1 - off; da >= 0 {
			sa = a[da]
		}
		if db := len(b) - 1 - off; db >= 0 {
			sb = b[db]
		}
		if sa != sb && sa != 1 && sb != 1 {
			return nil, runtimeErrorf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", sa, sb, i)
		}
		if sa == 1 {
			out[i] = sb
		} else {
			out[i] = sa
		}
	}
	return out, nil
}

// BroadcastShapes broadcasts shapes left to right, with torch's error message.
func BroadcastShapes(shapes ...[]int64) ([]int64, error) {
	var out []int64
	for i, s := range shapes {
		if i == 0 {
			out = append([]int64(nil), s...)
			continue
		}
		var err error
		if out, err = broadcastPair(out, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func shapeEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fmtShape prints a shape as torch's messages do: [2, 3].
func fmtShape(s []int64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// iterStrides returns the strides TensorIterator gives the output of a pointwise op with
// common shape shape over inputs (0-dim tensors and Python numbers included as 0-dim metas):
//   - all inputs the same shape and all contiguous → contiguous; all channels-last →
//     channels-last; all non-overlapping and dense with equal strides → those strides;
//   - otherwise dims are sorted by the inputs' strides (broadcast dims ignored) and the output
//     is dense in that order.
func iterStrides(shape []int64, inputs []*TensorMeta) []int64 {
	if s, ok := iterFastStrides(inputs); ok {
		return s
	}
	n := len(shape)
	strides := make([][]int64, 0, len(inputs))
	for _, in := range inputs {
		st := make([]int64, n)
		off := n - len(in.Shape)
		for i := range in.Shape {
			if in.Shape[i] == 1 && shape[off+i] != 1 {
				st[off+i] = 0
			} else {
				st[off+i] = in.Strides[i]
			}
		}
		strides = append(strides, st)
	}
	perm := sortDimsByStride(shape, strides)
	inverted := true
	for j, d := range perm {
		if d != n-j-1 {
			inverted = false
			break
		}
	}
	if inverted {
		return ContiguousStrides(shape)
	}
	out := make([]int64, n)
	acc := int64(1)
	for _, d := range perm {
		out[d] = acc
		acc *= shape[d]
	}
	return out
}

// iterFastStrides is TensorIterator's fast set-up: it applies only when every input has the
// same shape (0-dim inputs next to dimensioned ones rule it out).
func iterFastStrides(inputs []*TensorMeta) ([]int64, bool) {
	if len(inputs) == 0 {
		return nil, false
	}
	first := inputs[0]
	for _, in := range inputs[1:] {
		if !shapeEqual(in.Shape, first.Shape) {
			return nil, false
		}
	}
	contig, cl, dense := true, true, true
	for _, in := range inputs {
		contig = contig && in.IsContiguous()
		cl = cl && isChannelsLastContiguous(in)
		dense = dense && in.IsNonOverlappingAndDense()
	}
	switch {
	case contig:
		return ContiguousStrides(first.Shape), true
	case cl:
		return ChannelsLastStrides(first.Shape), true
	case dense:
		for _, in := range inputs[1:] {
			if !shapeEqual(in.Strides, first.Strides) {
				return nil, false
			}
		}
		return append([]int64(nil), inputs[len(inputs)-1].Strides...), true
	}
	return nil, false
}

// scalarMeta is the 0-dim meta a Python number takes as a TensorIterator operand.
func scalarMeta(v Value) *TensorMeta {
	d, _ := scalarDType(v)
	return &TensorMeta{DType: d, Shape: []int64{}, Strides: []int64{}, Device: CPU}
}

// operandMeta returns v as a tensor meta: the tensor itself, or a 0-dim meta for a number.
func operandMeta(v Value) *TensorMeta {
	if m, ok := v.(*TensorMeta); ok {
		return m
	}
	return scalarMeta(v)
}

// commonDevice returns the device of the operands: that of the tensors which are not 0-dim CPU
// tensors (those may join tensors on any device), else CPU.
func commonDevice(ops []Value) (Device, error) {
	dev, have := CPU, false
	for _, v := range ops {
		m, ok := v.(*TensorMeta)
		if !ok || m == nil {
			continue
		}
		d := m.Device
		if d.Type == "" {
			d = CPU
		}
		if len(m.Shape) == 0 && d.Type == "cpu" {
			continue
		}
		if !have {
			dev, have = d, true
			continue
		}
		if d != dev {
			return dev, runtimeErrorf("Expected all tensors to be on the same device, but found at least two devices, %s and %s!", dev, d)
		}
	}
	return dev, nil
}

// pointwise computes the output of an elementwise op over operands (tensors or Python
// numbers; nil entries are skipped): broadcast shape, dtype by promotion kind p (or dt when
// override is set), TensorIterator strides, common device.
func pointwise(ops []Value, p Promotion, dt DType, override bool) (*TensorMeta, error) {
	var metas []*TensorMeta
	var vals []Value
	for _, v := range ops {
		if v == nil {
			continue
		}
		if m, ok := v.(*TensorMeta); ok && m == nil {
			continue
		}
		vals = append(vals, v)
		metas = append(metas, operandMeta(v))
	}
	shapes := make([][]SymInt, len(metas))
	for i, m := range metas {
		shapes[i] = m.SymSizes()
	}
	shape, err := SymBroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	dev, err := commonDevice(vals)
	if err != nil {
		return nil, err
	}
	if !override {
		var s promoteState
		for _, v := range vals {
			s.add(v)
		}
		if s.halfComplex() {
			return nil, unsupportedf("the result is torch's complex32 or bcomplex32 (a float16 or bfloat16 tensor with a complex number), which ptgo has no dtype for")
		}
		dt = p.Apply(ResultType(vals...))
	}
	return (&TensorMeta{DType: dt, Device: dev}).SetSymLayout(shape, symIterStrides(shape, metas), SymConst(0)), nil
}
