package fxgraph

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Constant values (Const.V, and scalar metas): their text form, equality and validity.

// memoryFormats and layouts are the torch.memory_format and torch.layout names torch 1.13 has.
var memoryFormats = map[primtorch.MemoryFormat]bool{
	"contiguous_format": true, "channels_last": true, "channels_last_3d": true, "preserve_format": true,
}

var layouts = map[primtorch.Layout]bool{
	"strided": true, "sparse_coo": true, "sparse_csr": true, "sparse_csc": true,
	"sparse_bsr": true, "sparse_bsc": true, "_mkldnn": true,
}

// formatFloat prints f the way Python's repr does, so the text is exact and reads as Python:
// 1.0, 0.5, 1e-05, 1e+16, -0.0, inf, -inf, nan.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	var s string
	if a := math.Abs(f); a == 0 || (a >= 1e-4 && a < 1e16) {
		s = strconv.FormatFloat(f, 'f', -1, 64)
	} else {
		s = strconv.FormatFloat(f, 'e', -1, 64)
	}
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// floatEqual is bit equality (so -0.0 != 0.0) except that every NaN equals every NaN.
func floatEqual(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

// writeConst appends the text form of a constant. A value of a type Const does not allow is
// written as <Go type value>, which Parse rejects and Verify reports.
func writeConst(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(formatFloat(v))
	case complex128:
		fmt.Fprintf(b, "complex(%s, %s)", formatFloat(real(v)), formatFloat(imag(v)))
	case string:
		b.WriteString(strconv.Quote(v))
	case primtorch.DType:
		if v < primtorch.NumDTypes {
			b.WriteString(v.TorchName())
		} else {
			fmt.Fprintf(b, "<bad dtype %d>", uint8(v))
		}
	case primtorch.Device:
		fmt.Fprintf(b, "torch.device(%s)", strconv.Quote(v.String()))
	case primtorch.Ellipsis:
		b.WriteString("...")
	case primtorch.MemoryFormat:
		b.WriteString("torch." + string(v))
	case primtorch.Layout:
		b.WriteString("torch." + string(v))
	case primtorch.SymInt:
		b.WriteString("sym(" + strconv.Quote(v.String()) + ")")
	case primtorch.SymFloat:
		b.WriteString("symfloat(" + strconv.Quote(v.String()) + ")")
	default:
		fmt.Fprintf(b, "<%T %v>", v, v)
	}
}

// constEqual compares two constant values exactly (floats by bits, NaN equal to NaN).
func constEqual(a, b any) bool {
	switch a := a.(type) {
	case primtorch.SymInt:
		b, ok := b.(primtorch.SymInt)
		return ok && a.Equal(b)
	case primtorch.SymFloat:
		b, ok := b.(primtorch.SymFloat)
		return ok && a == b
	case float64:
		b, ok := b.(float64)
		return ok && floatEqual(a, b)
	case complex128:
		b, ok := b.(complex128)
		return ok && floatEqual(real(a), real(b)) && floatEqual(imag(a), imag(b))
	case nil, bool, int64, string, primtorch.DType, primtorch.Device, primtorch.Ellipsis,
		primtorch.MemoryFormat, primtorch.Layout:
		return a == b
	}
	return false
}

// constProblem says what is wrong with a constant value, or "" when it is one Const allows.
func constProblem(v any) string {
	switch v := v.(type) {
	case nil, bool, int64, float64, complex128, string, primtorch.Ellipsis, primtorch.SymInt, primtorch.SymFloat:
		return ""
	case primtorch.DType:
		if v >= primtorch.NumDTypes {
			return fmt.Sprintf("dtype %d is out of range", uint8(v))
		}
	case primtorch.Device:
		return deviceProblem(v)
	case primtorch.MemoryFormat:
		if !memoryFormats[v] {
			return fmt.Sprintf("unknown memory format %q", string(v))
		}
	case primtorch.Layout:
		if !layouts[v] {
			return fmt.Sprintf("unknown layout %q", string(v))
		}
	case int, int32, float32, uint8:
		return fmt.Sprintf("constant of Go type %T; use int64 or float64", v)
	default:
		return fmt.Sprintf("constant of Go type %T is not a Python constant; use List, Tuple, Dict or Slice for containers", v)
	}
	return ""
}

// deviceProblem checks a device is one primtorch.ParseDevice accepts, so it prints and parses.
func deviceProblem(d primtorch.Device) string {
	if d == primtorch.CPU {
		return ""
	}
	if d.Index < -1 {
		return fmt.Sprintf("device index %d is negative; use -1 for no index", d.Index)
	}
	if _, err := primtorch.ParseDevice(d.String()); err != nil {
		if d.Type == "" {
			return "device type is empty; use primtorch.CPU for the CPU"
		}
		return err.Error()
	}
	return ""
}
