package fxgraph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Node metas (see Node.Meta): their exact text form, equality, copying and validity.
//
// The text form of a tensor meta is primtorch.TensorMeta.String's form, made exact:
//
//	f32[4,8]                   contiguous, offset 0, on the CPU
//	f32[8,4]{1,8}              strides when they differ from the contiguous ones
//	f32[4]{1+3}                storage offset after a plus
//	f16[2,2]@cuda:0!grad       device when not plain "cpu", !grad when requires_grad
//
// A tuple meta is (m1, m2) or (m,), a scalar meta is a literal (4, 0.5, True), nil is None.

// writeMeta appends meta's text form.
func writeMeta(b *strings.Builder, m any) {
	switch m := m.(type) {
	case nil:
		b.WriteString("None")
	case *primtorch.TensorMeta:
		if m == nil {
			b.WriteString("None")
			return
		}
		writeTensorMeta(b, m)
	case []any:
		b.WriteByte('(')
		for i, e := range m {
			if i > 0 {
				b.WriteString(", ")
			}
			writeMeta(b, e)
		}
		if len(m) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	default:
		writeConst(b, m)
	}
}

func writeTensorMeta(b *strings.Builder, m *primtorch.TensorMeta) {
	if m.DType < primtorch.NumDTypes {
		b.WriteString(m.DType.String())
	} else {
		fmt.Fprintf(b, "<bad dtype %d>", uint8(m.DType))
	}
	if m.Sym != nil {
		writeSyms(b, '[', m.Sym.Sizes, ']')
		if off, ok := m.Sym.Offset.IsConst(); !ok || off != 0 || !symsEqual(m.Sym.Strides, primtorch.SymContiguousStrides(m.Sym.Sizes)) {
			writeSyms(b, '{', m.Sym.Strides, 0)
			if !ok || off != 0 {
				b.WriteByte('+')
				writeSymInt(b, m.Sym.Offset)
			}
			b.WriteByte('}')
		}
	} else {
		writeInts(b, '[', m.Shape, ']')
		if m.Offset != 0 || !slices.Equal(m.Strides, primtorch.ContiguousStrides(m.Shape)) {
			writeInts(b, '{', m.Strides, 0)
			if m.Offset != 0 {
				b.WriteString("+" + strconv.FormatInt(m.Offset, 10))
			}
			b.WriteByte('}')
		}
	}
	if m.Device != primtorch.CPU {
		b.WriteString("@" + m.Device.String())
	}
	if m.RequiresGrad {
		b.WriteString("!grad")
	}
}

func writeInts(b *strings.Builder, open byte, xs []int64, close byte) {
	b.WriteByte(open)
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(x, 10))
	}
	if close != 0 {
		b.WriteByte(close)
	}
}

// writeSymInt writes a size expression: an integer, a bare symbol (s0), or sym("4*s0 + 1").
func writeSymInt(b *strings.Builder, s primtorch.SymInt) {
	if k, ok := s.IsConst(); ok {
		b.WriteString(strconv.FormatInt(k, 10))
		return
	}
	if id, coef, c, ok := s.Linear(); ok && coef == 1 && c == 0 {
		b.WriteString("s" + strconv.Itoa(id))
		return
	}
	b.WriteString("sym(" + strconv.Quote(s.String()) + ")")
}

func writeSyms(b *strings.Builder, open byte, xs []primtorch.SymInt, close byte) {
	b.WriteByte(open)
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		writeSymInt(b, x)
	}
	if close != 0 {
		b.WriteByte(close)
	}
}

func symsEqual(a, b []primtorch.SymInt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// metaString is writeMeta into a new string.
func metaString(m any) string {
	var b strings.Builder
	writeMeta(&b, m)
	return b.String()
}

// isNilMeta reports a nil meta, including a nil *TensorMeta.
func isNilMeta(m any) bool {
	tm, ok := m.(*primtorch.TensorMeta)
	return m == nil || (ok && tm == nil)
}

// MetaEqual reports whether two node metas are the same: tensor metas field by field (dtype,
// shape, strides, storage offset, device, requires_grad), tuples element-wise, scalars exactly
// (floats by bits, NaN equal to NaN). A nil *TensorMeta equals nil.
func MetaEqual(a, b any) bool {
	if isNilMeta(a) || isNilMeta(b) {
		return isNilMeta(a) && isNilMeta(b)
	}
	switch a := a.(type) {
	case *primtorch.TensorMeta:
		b, ok := b.(*primtorch.TensorMeta)
		return ok && a.DType == b.DType && slices.Equal(a.Shape, b.Shape) &&
			slices.Equal(a.Strides, b.Strides) && a.Offset == b.Offset && a.Device == b.Device &&
			a.RequiresGrad == b.RequiresGrad && a.SymString() == b.SymString()
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !MetaEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return constEqual(a, b)
}

// cloneMeta deep-copies a meta.
func cloneMeta(m any) any {
	switch m := m.(type) {
	case *primtorch.TensorMeta:
		if m == nil {
			return nil
		}
		return m.Clone()
	case []any:
		if m == nil {
			return []any(nil)
		}
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = cloneMeta(e)
		}
		return out
	}
	return m
}

// metaProblem says what is wrong with a meta, or "" when it is well formed. Elements of a tuple
// meta may be None (an op returning an optional tensor).
func metaProblem(m any) string {
	switch m := m.(type) {
	case *primtorch.TensorMeta:
		if m == nil {
			return "meta is a nil *primtorch.TensorMeta"
		}
		return tensorMetaProblem(m)
	case []any:
		for i, e := range m {
			if isNilMeta(e) {
				continue
			}
			if p := metaProblem(e); p != "" {
				return fmt.Sprintf("tuple meta element %d: %s", i, p)
			}
		}
		return ""
	case bool, int64, float64, complex128, primtorch.SymInt, primtorch.SymFloat:
		return ""
	case nil:
		return "meta is missing"
	}
	return fmt.Sprintf("meta of Go type %T is not *primtorch.TensorMeta, []any, int64, float64, bool or complex128", m)
}

func tensorMetaProblem(m *primtorch.TensorMeta) string {
	if m.DType >= primtorch.NumDTypes {
		return fmt.Sprintf("dtype %d is out of range", uint8(m.DType))
	}
	if len(m.Strides) != len(m.Shape) {
		return fmt.Sprintf("%d strides for %d dims in %s; strides need one entry per dim (primtorch.ContiguousStrides)",
			len(m.Strides), len(m.Shape), metaString(m))
	}
	for i, s := range m.Shape {
		if s < 0 {
			return fmt.Sprintf("negative size %d in dim %d of %s", s, i, metaString(m))
		}
	}
	for i, s := range m.Strides {
		if s < 0 {
			return fmt.Sprintf("negative stride %d in dim %d of %s", s, i, metaString(m))
		}
	}
	if m.Offset < 0 {
		return fmt.Sprintf("negative storage offset %d in %s", m.Offset, metaString(m))
	}
	return deviceProblem(m.Device)
}
