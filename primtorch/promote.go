package primtorch

// DefaultFloat is the dtype torch gives Python floats and integer→float results
// (torch.get_default_dtype()). ptgo assumes the default; the capture stage guards on it.
const DefaultFloat = Float32

// DefaultComplex is the dtype of Python complex numbers (torch's default complex dtype).
const DefaultComplex = Complex64

// category orders dtypes as torch's type promotion does: bool < integral < floating < complex.
func category(d DType) int {
	switch {
	case d == Bool:
		return 0
	case d.IsIntegral(false):
		return 1
	case d.IsFloatingPoint():
		return 2
	}
	return 3
}

// toReal maps complex dtypes to their component dtype; others unchanged.
func toReal(d DType) DType {
	switch d {
	case Complex64:
		return Float32
	case Complex128:
		return Float64
	}
	return d
}

// toComplex maps floating dtypes to the complex dtype with that component type.
func toComplex(d DType) DType {
	switch d {
	case Float64:
		return Complex128
	case Complex64, Complex128:
		return d
	}
	return Complex64
}

// PromoteTypes is torch.promote_types: the smallest dtype both a and b convert to without
// losing their category.
func PromoteTypes(a, b DType) DType {
	if a == b {
		return a
	}
	if a == Bool {
		return b
	}
	if b == Bool {
		return a
	}
	if a.IsComplex() || b.IsComplex() {
		return toComplex(PromoteTypes(toReal(a), toReal(b)))
	}
	fa, fb := a.IsFloatingPoint(), b.IsFloatingPoint()
	switch {
	case fa && fb:
		if (a == Float16 && b == BFloat16) || (a == BFloat16 && b == Float16) {
			return Float32
		}
		return max(a, b) // Float16 < BFloat16 < Float32 < Float64 in the enum
	case fa:
		return a
	case fb:
		return b
	}
	// Both integral.
	if a == UInt8 || b == UInt8 {
		other := b
		if b == UInt8 {
			other = a
		}
		if other == Int8 {
			return Int16
		}
		return other
	}
	return max(a, b)
}

// scalarDType is the dtype a Python number takes in type promotion; ok is false for non-numbers.
func scalarDType(v Value) (DType, bool) {
	switch v.(type) {
	case bool:
		return Bool, true
	case int64, int, SymInt:
		return Int64, true
	case float64, SymFloat:
		return DefaultFloat, true
	case complex128:
		return DefaultComplex, true
	}
	return 0, false
}

// promoteState is torch's ResultTypeState: dtypes of dimensioned tensors, zero-dim tensors and
// Python numbers ("wrapped numbers") promote separately and combine by category.
type promoteState struct {
	dim, zero, wrapped          DType
	hasDim, hasZero, hasWrapped bool
}

func (s *promoteState) add(v Value) {
	switch x := v.(type) {
	case *TensorMeta:
		if x == nil {
			return
		}
		if len(x.Shape) > 0 {
			s.dim, s.hasDim = promoteSkip(s.dim, s.hasDim, x.DType), true
		} else {
			s.zero, s.hasZero = promoteSkip(s.zero, s.hasZero, x.DType), true
		}
	default:
		if d, ok := scalarDType(v); ok {
			s.wrapped, s.hasWrapped = promoteSkip(s.wrapped, s.hasWrapped, d), true
		}
	}
}

func promoteSkip(acc DType, has bool, d DType) DType {
	if !has {
		return d
	}
	return PromoteTypes(acc, d)
}

// combineCategories is torch's combine_categories: the higher-priority dtype wins unless the
// lower-priority one is of a higher category.
func combineCategories(higher DType, hasHigher bool, lower DType, hasLower bool) (DType, bool) {
	if !hasHigher {
		return lower, hasLower
	}
	if !hasLower {
		return higher, true
	}
	if higher.IsComplex() {
		return higher, true
	}
	if lower.IsComplex() {
		if higher.IsFloatingPoint() {
			return toComplex(higher), true
		}
		return lower, true
	}
	if higher.IsFloatingPoint() {
		return higher, true
	}
	if higher == Bool || lower.IsFloatingPoint() {
		return PromoteTypes(higher, lower), true
	}
	return higher, true
}

func (s *promoteState) result() (DType, bool) {
	zw, hasZW := combineCategories(s.zero, s.hasZero, s.wrapped, s.hasWrapped)
	return combineCategories(s.dim, s.hasDim, zw, hasZW)
}

// halfComplex reports whether torch's result is a complex dtype of a 16-bit float, which ptgo
// has no dtype for: a float16 (complex32) or, under torch 2, bfloat16 (bcomplex32) tensor
// combined with a complex operand of lower priority. ResultType says complex64 there.
func (s *promoteState) halfComplex() bool {
	zw, hasZW := combineCategories(s.zero, s.hasZero, s.wrapped, s.hasWrapped)
	higher, lower, hasLower := s.dim, zw, hasZW
	if !s.hasDim {
		higher, lower, hasLower = s.zero, s.wrapped, s.hasZero && s.hasWrapped
	}
	if !hasLower || !lower.IsComplex() {
		return false
	}
	return higher == Float16 || higher == BFloat16 && behavior().BFloat16ComplexIsBComplex32
}

// ResultType is torch.result_type over tensors (*TensorMeta) and Python numbers: tensors with
// dimensions take priority over zero-dim tensors, which take priority over numbers; a
// lower-priority operand only matters when its category is higher. Other values are ignored;
// with no operands the result is DefaultFloat.
func ResultType(args ...Value) DType {
	var s promoteState
	for _, a := range args {
		s.add(a)
	}
	d, ok := s.result()
	if !ok {
		return DefaultFloat
	}
	return d
}

// Promotion is how an elementwise op derives its result dtype from the operands' common dtype
// (torch._prims_common.ELEMENTWISE_TYPE_PROMOTION_KIND, plus IntToLong for sum-like reductions).
type Promotion uint8

const (
	// PromoteNone: not a type-promoting op; the meta function decides the dtype.
	PromoteNone Promotion = iota
	PromoteDefault
	// PromoteNoOpmath: as default, but low-precision floats are not computed in float32.
	PromoteNoOpmath
	// PromoteIntToFloat: integer and bool results become DefaultFloat (sin, div).
	PromoteIntToFloat
	// PromoteAlwaysBool: the result is bool (eq, isnan).
	PromoteAlwaysBool
	// PromoteComplexToFloat: complex results become their real dtype (abs).
	PromoteComplexToFloat
	// PromoteBoolToLong: bool results become int64 (pow).
	PromoteBoolToLong
	// PromoteIntToLong: bool and integer results become int64 (sum, prod, cumsum).
	PromoteIntToLong
	numPromotions
)

var promotionNames = [numPromotions]string{
	"NONE", "DEFAULT", "NO_OPMATH", "INT_TO_FLOAT", "ALWAYS_BOOL", "COMPLEX_TO_FLOAT", "BOOL_TO_LONG", "INT_TO_LONG",
}

func (p Promotion) String() string { return promotionNames[p] }

// Apply maps the operands' common dtype to the result dtype.
func (p Promotion) Apply(common DType) DType {
	switch p {
	case PromoteIntToFloat:
		if common.IsIntegral(true) {
			return DefaultFloat
		}
	case PromoteAlwaysBool:
		return Bool
	case PromoteComplexToFloat:
		return toReal(common)
	case PromoteBoolToLong:
		if common == Bool {
			return Int64
		}
	case PromoteIntToLong:
		if common.IsIntegral(true) {
			return Int64
		}
	}
	return common
}

// ComputeDType is the dtype the op computes in: float32 for half and bfloat16 ("opmath"),
// except for NoOpmath ops.
func (p Promotion) ComputeDType(common DType) DType {
	if p != PromoteNoOpmath && (common == Float16 || common == BFloat16) {
		return Float32
	}
	return common
}

// CanCast is torch.can_cast: whether a result of dtype from may be written into a tensor of
// dtype to (no complex→real, float→integral or non-bool→bool).
func CanCast(from, to DType) bool {
	if from.IsComplex() && !to.IsComplex() {
		return false
	}
	if from.IsFloatingPoint() && to.IsIntegral(true) {
		return false
	}
	if from != Bool && to == Bool {
		return false
	}
	return true
}

// scalarTypeName is c10's ScalarType name, as torch error messages print dtypes ("Float").
func scalarTypeName(d DType) string {
	return [...]string{"Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double", "ComplexFloat", "ComplexDouble"}[d]
}
