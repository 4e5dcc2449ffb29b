package inductor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// C types of dtypes: how a dtype is stored in memory and which C type its values are computed
// in. float16 is stored as _Float16 and bfloat16 as its bits (uint16_t); both compute in float,
// as torch does inside a kernel. bool is stored and computed as uint8_t holding 0 or 1.

type dtypeC struct {
	storage string // element type in memory
	compute string // C type of values in a body
}

var dtypeCs = [primtorch.NumDTypes]dtypeC{
	primtorch.Bool:     {"uint8_t", "uint8_t"},
	primtorch.UInt8:    {"uint8_t", "uint8_t"},
	primtorch.Int8:     {"int8_t", "int8_t"},
	primtorch.Int16:    {"int16_t", "int16_t"},
	primtorch.Int32:    {"int32_t", "int32_t"},
	primtorch.Int64:    {"int64_t", "int64_t"},
	primtorch.Float16:  {"_Float16", "float"},
	primtorch.BFloat16: {"uint16_t", "float"},
	primtorch.Float32:  {"float", "float"},
	primtorch.Float64:  {"double", "double"},
}

// supportedDType reports whether the C backend generates code for dt (complex is not).
func supportedDType(dt primtorch.DType) bool {
	return dt < primtorch.NumDTypes && dtypeCs[dt].storage != ""
}

func cStorage(dt primtorch.DType) string { return dtypeCs[dt].storage }
func cCompute(dt primtorch.DType) string { return dtypeCs[dt].compute }

// isFloatC reports whether dt computes in a C floating type.
func isFloatC(dt primtorch.DType) bool { return dt.IsFloatingPoint() }

// mathSuffix is "f" for dtypes computed in float, "" for double.
func mathSuffix(dt primtorch.DType) string {
	if cCompute(dt) == "float" {
		return "f"
	}
	return ""
}

// cLiteral prints a constant of dtype dt as a C expression of its compute type.
func cLiteral(dt primtorch.DType, n Number) string {
	if !dt.IsFloatingPoint() {
		switch dt {
		case primtorch.Int64:
			if n.I == math.MinInt64 {
				return "INT64_MIN"
			}
			return strconv.FormatInt(n.I, 10) + "LL"
		default:
			return strconv.FormatInt(n.I, 10)
		}
	}
	f := n.F
	float := cCompute(dt) == "float"
	switch {
	case math.IsNaN(f):
		if float {
			return "NAN"
		}
		return "((double)NAN)"
	case math.IsInf(f, 1):
		if float {
			return "INFINITY"
		}
		return "((double)INFINITY)"
	case math.IsInf(f, -1):
		if float {
			return "(-INFINITY)"
		}
		return "(-(double)INFINITY)"
	}
	var s string
	if float {
		s = strconv.FormatFloat(f, 'g', -1, 32)
	} else {
		s = strconv.FormatFloat(f, 'g', -1, 64)
	}
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	if float {
		s += "f"
	}
	if strings.HasPrefix(s, "-") {
		s = "(" + s + ")"
	}
	return s
}

// pyLiteral prints a constant the way the IR text shows it (Python style).
func pyLiteral(dt primtorch.DType, n Number) string {
	if dt == primtorch.Bool {
		if n.I != 0 {
			return "True"
		}
		return "False"
	}
	if !dt.IsFloatingPoint() {
		return strconv.FormatInt(n.I, 10)
	}
	f := n.F
	if s, ok := primtorch.NonFiniteName(f); ok {
		return s
	}
	bits := 64
	if dt != primtorch.Float64 {
		bits = 32
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// floatToBF16 converts with round-to-nearest-even; NaN stays a quiet NaN (torch's rule).
func floatToBF16(f float32) uint16 {
	if f != f {
		return 0x7fc0
	}
	u := math.Float32bits(f)
	u += 0x7fff + ((u >> 16) & 1)
	return uint16(u >> 16)
}

func bf16ToFloat(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// floatToHalf converts to IEEE binary16 with round-to-nearest-even.
func floatToHalf(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int((u >> 23) & 0xff)
	man := u & 0x7fffff
	switch {
	case exp == 0xff:
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15:
		return sign | 0x7c00
	case exp-127 >= -14:
		e := uint32(exp-127+15) << 10
		m := man >> 13
		rest := man & 0x1fff
		h := uint32(sign) | e | m
		if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
			h++
		}
		return uint16(h)
	case exp-127 >= -25:
		man |= 0x800000
		shift := uint(-14 - (exp - 127) + 13)
		m := man >> shift
		rest := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

func halfToFloat(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := int(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(man) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | man<<13)
}

// dtypeName is the dtype's name in the plan's JSON: "float32", "int64", ...
func dtypeName(dt primtorch.DType) string { return strings.TrimPrefix(dt.TorchName(), "torch.") }

// parseDTypeName is the inverse of dtypeName.
func parseDTypeName(s string) (primtorch.DType, error) {
	if d, ok := primtorch.ParseDType("torch." + s); ok {
		return d, nil
	}
	return 0, fmt.Errorf("unknown dtype %q", s)
}
