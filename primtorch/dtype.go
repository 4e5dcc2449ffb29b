package primtorch

import "fmt"

// DType is a tensor element type.
type DType uint8

const (
	Bool DType = iota
	UInt8
	Int8
	Int16
	Int32
	Int64
	Float16
	BFloat16
	Float32
	Float64
	Complex64
	Complex128
	NumDTypes
)

type dtypeInfo struct {
	short, torch string
	size         int
}

var dtypeInfos = [NumDTypes]dtypeInfo{
	Bool:       {"b8", "torch.bool", 1},
	UInt8:      {"u8", "torch.uint8", 1},
	Int8:       {"i8", "torch.int8", 1},
	Int16:      {"i16", "torch.int16", 2},
	Int32:      {"i32", "torch.int32", 4},
	Int64:      {"i64", "torch.int64", 8},
	Float16:    {"f16", "torch.float16", 2},
	BFloat16:   {"bf16", "torch.bfloat16", 2},
	Float32:    {"f32", "torch.float32", 4},
	Float64:    {"f64", "torch.float64", 8},
	Complex64:  {"c64", "torch.complex64", 8},
	Complex128: {"c128", "torch.complex128", 16},
}

// String is the short form used in IR text: f32, i64, b8, ...
func (d DType) String() string {
	if d < NumDTypes {
		return dtypeInfos[d].short
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// TorchName is the dtype's Python spelling: torch.float32.
func (d DType) TorchName() string { return dtypeInfos[d].torch }

// ItemSize is the size of one element in bytes.
func (d DType) ItemSize() int { return dtypeInfos[d].size }

func (d DType) IsFloatingPoint() bool {
	return d == Float16 || d == BFloat16 || d == Float32 || d == Float64
}
func (d DType) IsComplex() bool { return d == Complex64 || d == Complex128 }

// IsIntegral reports integer dtypes; bool counts only when includeBool is set (as in torch).
func (d DType) IsIntegral(includeBool bool) bool {
	return (d >= UInt8 && d <= Int64) || (includeBool && d == Bool)
}

// ParseDType accepts the short form (f32) or the torch spelling (torch.float32, float32, float,
// long, half, ...).
func ParseDType(s string) (DType, bool) {
	for d := DType(0); d < NumDTypes; d++ {
		if s == dtypeInfos[d].short || s == dtypeInfos[d].torch || "torch."+s == dtypeInfos[d].torch {
			return d, true
		}
	}
	if d, ok := dtypeAliases[s]; ok {
		return d, true
	}
	return 0, false
}

var dtypeAliases = map[string]DType{
	"torch.float": Float32, "torch.double": Float64, "torch.half": Float16,
	"torch.long": Int64, "torch.int": Int32, "torch.short": Int16,
	"torch.cfloat": Complex64, "torch.cdouble": Complex128,
	"float": Float32, "double": Float64, "half": Float16, "long": Int64, "int": Int32, "short": Int16,
}

// Device is where a tensor lives. Index is -1 when the device has no index (plain "cpu").
type Device struct {
	Type  string
	Index int
}

var CPU = Device{Type: "cpu", Index: -1}

func (d Device) String() string {
	if d.Index < 0 {
		return d.Type
	}
	return fmt.Sprintf("%s:%d", d.Type, d.Index)
}

// ParseDevice parses "cpu", "cuda", "cuda:1", "meta".
func ParseDevice(s string) (Device, error) {
	d := Device{Index: -1}
	typ, idx, found := cut(s, ':')
	d.Type = typ
	if found {
		if _, err := fmt.Sscanf(idx, "%d", &d.Index); err != nil || d.Index < 0 {
			return d, fmt.Errorf("bad device %q: index must be a non-negative integer", s)
		}
	}
	switch d.Type {
	case "cpu", "cuda", "meta":
	default:
		return d, fmt.Errorf("bad device %q: ptgo knows cpu, cuda and meta", s)
	}
	return d, nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
