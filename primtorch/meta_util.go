package primtorch

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// wrapDim is torch's maybe_wrap_dim: a dim in [-ndim, ndim) as a non-negative index. A 0-dim
// tensor accepts dims -1 and 0.
func wrapDim(dim int64, ndim int) (int, error) {
	n := int64(ndim)
	if n <= 0 {
		n = 1
	}
	if dim < -n || dim >= n {
		return 0, indexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n-1, dim)
	}
	if dim < 0 {
		dim += n
	}
	return int(dim), nil
}

// wrapDims wraps a list of dims and rejects repeats ("dim 1 appears multiple times in the list
// of dims").
func wrapDims(dims []int64, ndim int) ([]bool, error) {
	mask := make([]bool, max(ndim, 1))
	for _, d := range dims {
		w, err := wrapDim(d, ndim)
		if err != nil {
			return nil, err
		}
		if mask[w] {
			return nil, runtimeErrorf("dim %d appears multiple times in the list of dims", w)
		}
		mask[w] = true
	}
	return mask[:ndim], nil
}

// newTensor returns a contiguous tensor meta.
func newTensor(dt DType, shape []int64, dev Device) *TensorMeta {
	if dev.Type == "" {
		dev = CPU
	}
	return NewContiguous(dt, shape, dev)
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, s := range shape {
		n *= s
	}
	return n
}

// tensorParams returns the values of the op's (non-list) Tensor parameters in schema order:
// the operands of a pointwise op.
func tensorParams(a *Args) []Value {
	var ops []Value
	for _, p := range a.Sig.Params {
		if p.Type.Base == TTensor && !p.Type.List {
			ops = append(ops, a.Get(p.Canon))
		}
	}
	return ops
}

// dtypeOf is the dtype of a tensor or the promotion dtype of a Python number.
func dtypeOf(v Value) DType {
	if m, ok := v.(*TensorMeta); ok {
		return m.DType
	}
	d, _ := scalarDType(v)
	return d
}

func isFloatOrComplex(d DType) bool { return d.IsFloatingPoint() || d.IsComplex() }

// selfTensor returns the op's first parameter as a tensor (self / input).
func selfTensor(a *Args) *TensorMeta { return a.Tensor(a.Op.Schema.Params[0].Canon) }

// notImplementedFor is the error torch's kernels give for a dtype they do not handle.
func notImplementedFor(kernel string, d DType) *Error {
	return runtimeErrorf("\"%s\" not implemented for '%s'", kernel, scalarTypeName(d))
}

func deviceOf(m *TensorMeta) Device {
	if m == nil || m.Device.Type == "" {
		return CPU
	}
	return m.Device
}

// fmtFloat prints a float as Python's repr does: 2.0, 0.5, 1e-05, inf.
// NonFiniteName is how Python's repr and C++'s ostream both write a float that is not finite
// ("nan", "inf", "-inf"); ok=false for a finite one.
func NonFiniteName(f float64) (string, bool) {
	switch {
	case math.IsNaN(f):
		return "nan", true
	case math.IsInf(f, 1):
		return "inf", true
	case math.IsInf(f, -1):
		return "-inf", true
	}
	return "", false
}

// fmtCppDouble is a double as C++'s ostream writes it by default (TORCH_CHECK messages): %g with
// 6 significant digits, "nan", "inf".
func fmtCppDouble(f float64) string {
	if s, ok := NonFiniteName(f); ok {
		return s
	}
	return fmt.Sprintf("%.6g", f)
}

func fmtFloat(f float64) string {
	if s, ok := NonFiniteName(f); ok {
		return s
	}
	if abs := math.Abs(f); abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
