package testcases

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Result is a computed tensor, elements in row-major order: F for floating dtypes, I for
// integral dtypes and bool. Each backend's tests convert their tensors to it for Compare.
type Result struct {
	DType   primtorch.DType
	Shape   []int64
	Strides []int64
	F       []float64
	I       []int64
}

// Tolerance is the (atol, rtol) a floating result of dtype dt may differ from torch's by:
// |got − want| ≤ atol + rtol·|want|. Integral dtypes and bool compare exactly.
func Tolerance(dt primtorch.DType) (atol, rtol float64) {
	switch dt {
	case primtorch.Float16:
		return 1e-3, 2e-3
	case primtorch.BFloat16:
		return 1e-2, 1.6e-2
	case primtorch.Float32:
		return 2e-5, 2e-5
	case primtorch.Float64:
		return 1e-10, 1e-10
	}
	return 0, 0
}

// within reports whether got is want within dt's tolerance; NaN matches only NaN, an infinity
// only itself.
func within(got, want float64, dt primtorch.DType) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		return got == want
	}
	atol, rtol := Tolerance(dt)
	return math.Abs(got-want) <= atol+rtol*math.Abs(want)
}

// Strides says how Compare and CompareResults check strides.
type Strides int

const (
	// NoStrides ignores strides.
	NoStrides Strides = iota
	// AllStrides compares every stride of tensors with more than one element.
	AllStrides
	// NonUnitStrides compares the strides of dims of size > 1 only (the others address
	// nothing: torch's own contiguity checks skip them).
	NonUnitStrides
)

// differ reports whether strides a and b differ for a tensor of the given shape.
func (s Strides) differ(shape, a, b []int64) bool {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	switch {
	case s == NoStrides || n <= 1:
		return false
	case s == AllStrides:
		return !slices.Equal(a, b)
	}
	if len(a) != len(b) {
		return true
	}
	for d, size := range shape {
		if size > 1 && a[d] != b[d] {
			return true
		}
	}
	return false
}

// Compare returns "" when got matches torch's recorded tensor want: dtype, shape, strides (as
// strides says), and values (with checkValues) within the dtype's tolerance, NaN exactly where
// torch has NaN, integers exactly. Otherwise it says what differs, with both tensors' values.
func Compare(got *Result, want Tensor, strides Strides, checkValues bool) string {
	if got == nil {
		return "no tensor"
	}
	dt, err := ParseDType(want.DType)
	if err != nil {
		return err.Error()
	}
	if got.DType != dt || !slices.Equal(got.Shape, want.Shape) {
		return fmt.Sprintf("got %s%v, torch gives %s%v", got.DType, got.Shape, dt, want.Shape)
	}
	if strides.differ(got.Shape, got.Strides, want.Strides) {
		return fmt.Sprintf("got strides %v, torch gives %v", got.Strides, want.Strides)
	}
	if !checkValues {
		return ""
	}
	if int64(len(want.Values)) != got.numel() {
		return fmt.Sprintf("torch recorded %d values for %d elements", len(want.Values), got.numel())
	}
	for k, w := range want.Values {
		if dt.IsFloatingPoint() {
			if g, wv := got.F[k], Number(w); !within(g, wv, dt) {
				return fmt.Sprintf("element %d: got %v, torch gives %v%s\n  got   %s\n  torch %s", k, g, wv, tolText(dt), got.valuesText(), recordedText(want.Values))
			}
		} else if g, wv := got.I[k], Int(w); g != wv {
			return fmt.Sprintf("element %d: got %d, torch gives %d\n  got   %s\n  torch %s", k, g, wv, got.valuesText(), recordedText(want.Values))
		}
	}
	return ""
}

// CompareResults returns "" when two computed tensors agree: dtype, shape, strides (as strides
// says), values within the dtype's tolerance (NaN positions equal, integers exact).
func CompareResults(got, want *Result, strides Strides) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil || want == nil:
		return fmt.Sprintf("one side has no tensor (got %v, want %v)", got != nil, want != nil)
	case got.DType != want.DType || !slices.Equal(got.Shape, want.Shape):
		return fmt.Sprintf("got %s%v, want %s%v", got.DType, got.Shape, want.DType, want.Shape)
	case strides.differ(got.Shape, got.Strides, want.Strides):
		return fmt.Sprintf("got strides %v, want %v", got.Strides, want.Strides)
	}
	for k := range got.numel() {
		if got.DType.IsFloatingPoint() {
			if g, w := got.F[k], want.F[k]; !within(g, w, got.DType) {
				return fmt.Sprintf("element %d: got %v, want %v%s\n  got  %s\n  want %s", k, g, w, tolText(got.DType), got.valuesText(), want.valuesText())
			}
		} else if g, w := got.I[k], want.I[k]; g != w {
			return fmt.Sprintf("element %d: got %d, want %d\n  got  %s\n  want %s", k, g, w, got.valuesText(), want.valuesText())
		}
	}
	return ""
}

// CompareResultsNormwise is CompareResults with the absolute tolerance scaled by the largest
// |want| (at least 1): the criterion for results of long dot products whose small elements
// come from cancellation, where two correct summation orders differ by a few ulps of the
// terms, not of the result.
func CompareResultsNormwise(got, want *Result, strides Strides) string {
	if got == nil || want == nil || !got.DType.IsFloatingPoint() || got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) {
		return CompareResults(got, want, strides)
	}
	if d := CompareResults(got, want, strides); d == "" || strides.differ(got.Shape, got.Strides, want.Strides) {
		return d
	}
	scale := 1.0
	for _, w := range want.F {
		if !math.IsInf(w, 0) && !math.IsNaN(w) {
			scale = max(scale, math.Abs(w))
		}
	}
	atol, rtol := Tolerance(got.DType)
	for k := range got.numel() {
		g, w := got.F[k], want.F[k]
		if math.IsNaN(g) || math.IsNaN(w) || math.IsInf(g, 0) || math.IsInf(w, 0) {
			if !within(g, w, got.DType) {
				return fmt.Sprintf("element %d: got %v, want %v\n  got  %s\n  want %s", k, g, w, got.valuesText(), want.valuesText())
			}
			continue
		}
		if math.Abs(g-w) > atol*scale+rtol*math.Abs(w) {
			return fmt.Sprintf("element %d: got %v, want %v (tolerance %g·%g + %g·|x|)\n  got  %s\n  want %s", k, g, w, atol, scale, rtol, got.valuesText(), want.valuesText())
		}
	}
	return ""
}

func (r *Result) numel() int64 {
	n := int64(1)
	for _, s := range r.Shape {
		n *= s
	}
	return n
}

func tolText(dt primtorch.DType) string {
	atol, rtol := Tolerance(dt)
	return fmt.Sprintf(" (tolerance %g + %g·|x|)", atol, rtol)
}

// maxShown bounds how many elements a mismatch message prints.
const maxShown = 32

func (r *Result) valuesText() string {
	var parts []string
	for k := range min(r.numel(), maxShown) {
		if r.DType.IsFloatingPoint() {
			parts = append(parts, strconv.FormatFloat(r.F[k], 'g', -1, 64))
		} else {
			parts = append(parts, strconv.FormatInt(r.I[k], 10))
		}
	}
	if r.numel() > maxShown {
		parts = append(parts, fmt.Sprintf("... %d more", r.numel()-maxShown))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func recordedText(vals []any) string {
	var parts []string
	for k, v := range vals {
		if k == maxShown {
			parts = append(parts, fmt.Sprintf("... %d more", len(vals)-k))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
