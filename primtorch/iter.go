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
