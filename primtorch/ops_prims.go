package primtorch

// Core ops ("prims"): what decompositions (package primtorch/decomp) lower torch-level graphs to,
// and what the backends (inductor, the Go reference interpreter primtorch/ref) implement. Their
// targets are "prims.<name>"; their names "prims::<name>". Unlike torch-level ops they do no
// type promotion and no broadcasting: doc_prims.go states the contract.

// dtypeClass is the set of dtypes an elementwise prim accepts.
type dtypeClass uint8

const (
	dcAny       dtypeClass = iota // every real dtype, bool included
	dcNum                         // every real dtype but bool
	dcFloat                       // floating dtypes
	dcInt                         // integral dtypes and bool
	dcIntNoBool                   // integral dtypes
	numDTypeClasses
)

var dtypeClassNames = [numDTypeClasses]string{"any real dtype", "a numeric (non-bool) dtype", "a floating dtype", "an integral or bool dtype", "an integral dtype"}

func (c dtypeClass) accepts(d DType) bool {
	switch c {
	case dcAny:
		return !d.IsComplex()
	case dcNum:
		return !d.IsComplex() && d != Bool
	case dcFloat:
		return d.IsFloatingPoint()
	case dcInt:
		return d.IsIntegral(true)
	}
	return d.IsIntegral(false)
}

// primUnary is "prims::name(Tensor self) -> Tensor" over dtypes of class c (bool results when
// boolOut).
func primUnary(id OpID, name string, c dtypeClass, boolOut bool) *def {
	d := prim(id, KindPointwise, "prims::"+name+"(Tensor self) -> Tensor", metaPrimPointwise(c, boolOut))
	if boolOut || c == dcInt || c == dcIntNoBool {
		d.with(fNonDiff)
	}
	return d
}

// primBinary is "prims::name(Tensor self, Tensor other) -> Tensor"; either operand may be a
// Python number (a 0-d value of the other operand's dtype).
func primBinary(id OpID, name string, c dtypeClass, boolOut bool) *def {
	d := prim(id, KindPointwise, "prims::"+name+"(Tensor self, Tensor other) -> Tensor", metaPrimPointwise(c, boolOut)).with(fNumbers | fNumbersSelf)
	if boolOut || c == dcInt || c == dcIntNoBool {
		d.with(fNonDiff)
	}
	return d
}

// prim is a core-op row: its one target is "prims.<name>".
func prim(id OpID, kind Kind, schema string, m metaFn) *def {
	name := schema[len("prims::"):]
	for i := 0; i < len(name); i++ {
		if name[i] == '(' || name[i] == '.' {
			name = name[:i]
			break
		}
	}
	return row(id, kind, PromoteNone, schema, "prims."+name, m)
}

func primReduction(id OpID, name string, m metaFn) *def {
	return prim(id, KindReduction, "prims::"+name+"(Tensor self, int[] dims, bool keepdim) -> Tensor", m)
}

// primDefs are the core ops, grouped as in doc_prims.go.
var primDefs = allSymbolic(
	primUnary(OpPrimAbs, "abs", dcNum, false),
	primUnary(OpPrimNeg, "neg", dcNum, false),
	primUnary(OpPrimExp, "exp", dcFloat, false),
	primUnary(OpPrimExp2, "exp2", dcFloat, false),
	primUnary(OpPrimExpm1, "expm1", dcFloat, false),
	primUnary(OpPrimLog, "log", dcFloat, false),
	primUnary(OpPrimLog1p, "log1p", dcFloat, false),
	primUnary(OpPrimLog2, "log2", dcFloat, false),
	primUnary(OpPrimLog10, "log10", dcFloat, false),
	primUnary(OpPrimSqrt, "sqrt", dcFloat, false),
	primUnary(OpPrimRsqrt, "rsqrt", dcFloat, false),
	primUnary(OpPrimSin, "sin", dcFloat, false),
	primUnary(OpPrimCos, "cos", dcFloat, false),
	primUnary(OpPrimTan, "tan", dcFloat, false),
	primUnary(OpPrimAsin, "asin", dcFloat, false),
	primUnary(OpPrimAcos, "acos", dcFloat, false),
	primUnary(OpPrimAtan, "atan", dcFloat, false),
	primUnary(OpPrimSinh, "sinh", dcFloat, false),
	primUnary(OpPrimCosh, "cosh", dcFloat, false),
	primUnary(OpPrimTanh, "tanh", dcFloat, false),
	primUnary(OpPrimSigmoid, "sigmoid", dcFloat, false),
	primUnary(OpPrimErf, "erf", dcFloat, false),
	primUnary(OpPrimErfc, "erfc", dcFloat, false),
	primUnary(OpPrimFloor, "floor", dcNum, false),
	primUnary(OpPrimCeil, "ceil", dcNum, false),
	primUnary(OpPrimRound, "round", dcNum, false),
	primUnary(OpPrimTrunc, "trunc", dcNum, false),
	primUnary(OpPrimSign, "sign", dcAny, false),
	primUnary(OpPrimReciprocal, "reciprocal", dcFloat, false),
	primUnary(OpPrimBitwiseNot, "bitwise_not", dcInt, false),
	primUnary(OpPrimLogicalNot, "logical_not", dcAny, true),
	primUnary(OpPrimIsnan, "isnan", dcAny, true),
	primUnary(OpPrimIsinf, "isinf", dcAny, true),
	primUnary(OpPrimIsfinite, "isfinite", dcAny, true),
	primUnary(OpPrimCheck, "check", dcAny, true).raises(func(*Args, Value) bool { return true }),

	primBinary(OpPrimAdd, "add", dcAny, false).with(fSymFloat),
	primBinary(OpPrimSub, "sub", dcNum, false).with(fSymFloat),
	primBinary(OpPrimMul, "mul", dcAny, false).with(fSymFloat),
	primBinary(OpPrimDiv, "div", dcFloat, false).with(fSymFloat),
	primBinary(OpPrimFloordiv, "floordiv", dcNum, false).raises(integerResult),
	primBinary(OpPrimRemainder, "remainder", dcNum, false).raises(integerResult),
	primBinary(OpPrimFmod, "fmod", dcNum, false).raises(integerResult),
	primBinary(OpPrimPow, "pow", dcNum, false).with(fSymFloat),
	primBinary(OpPrimMaximum, "maximum", dcAny, false),
	primBinary(OpPrimMinimum, "minimum", dcAny, false),
	primBinary(OpPrimAtan2, "atan2", dcFloat, false),
	primBinary(OpPrimHypot, "hypot", dcFloat, false),
	primBinary(OpPrimCopysign, "copysign", dcFloat, false),
	primBinary(OpPrimBitwiseAnd, "bitwise_and", dcInt, false),
	primBinary(OpPrimBitwiseOr, "bitwise_or", dcInt, false),
	primBinary(OpPrimBitwiseXor, "bitwise_xor", dcInt, false),
	primBinary(OpPrimShiftLeft, "shift_left", dcIntNoBool, false),
	primBinary(OpPrimShiftRight, "shift_right", dcIntNoBool, false),
	primBinary(OpPrimEq, "eq", dcAny, true).with(fSymFloat),
	primBinary(OpPrimNe, "ne", dcAny, true).with(fSymFloat),
	primBinary(OpPrimLt, "lt", dcAny, true).with(fSymFloat),
	primBinary(OpPrimLe, "le", dcAny, true).with(fSymFloat),
	primBinary(OpPrimGt, "gt", dcAny, true).with(fSymFloat),
	primBinary(OpPrimGe, "ge", dcAny, true).with(fSymFloat),
	primBinary(OpPrimLogicalAnd, "logical_and", dcAny, true),
	primBinary(OpPrimLogicalOr, "logical_or", dcAny, true),
	primBinary(OpPrimLogicalXor, "logical_xor", dcAny, true),

	prim(OpPrimWhere, KindPointwise, "prims::where(Tensor condition, Tensor self, Tensor other) -> Tensor", metaPrimWhere).with(fNumbers|fNumbersSelf),
	// self·other + addend rounded once (a fused multiply-add): what torch's CPU kernels compute
	// for add/sub with alpha, addcmul and lerp, whose C++ gcc contracts (decomp: fmaOr).
	prim(OpPrimFma, KindPointwise, "prims::fma(Tensor self, Tensor other, Tensor addend) -> Tensor", metaPrimPointwise(dcFloat, false)).with(fNumbers|fNumbersSelf|fSymFloat),
	prim(OpPrimConvertElementType, KindPointwise, "prims::convert_element_type(Tensor self, ScalarType dtype) -> Tensor", metaPrimConvert),

	primReduction(OpPrimSum, "sum", metaPrimReduction(dcAny, false)),
	primReduction(OpPrimProd, "prod", metaPrimReduction(dcAny, false)),
	primReduction(OpPrimAmax, "amax", metaPrimReduction(dcAny, false)),
	primReduction(OpPrimAmin, "amin", metaPrimReduction(dcAny, false)),
	primReduction(OpPrimAny, "any", metaPrimReduction(dcAny, false)).with(fNonDiff),
	primReduction(OpPrimAll, "all", metaPrimReduction(dcAny, false)).with(fNonDiff),
	primReduction(OpPrimArgmax, "argmax", metaPrimReduction(dcAny, true)).with(fNonDiff),
	primReduction(OpPrimArgmin, "argmin", metaPrimReduction(dcAny, true)).with(fNonDiff),

	prim(OpPrimCumsum, KindOther, "prims::cumsum(Tensor self, int dim) -> Tensor", metaPrimScan),
	prim(OpPrimCumprod, KindOther, "prims::cumprod(Tensor self, int dim) -> Tensor", metaPrimScan),

	prim(OpPrimView, KindView, "prims::view(Tensor(a) self, int[] shape) -> Tensor(a)", metaPrimView),
	prim(OpPrimPermute, KindView, "prims::permute(Tensor(a) self, int[] dims) -> Tensor(a)", metaPrimPermute),
	prim(OpPrimExpand, KindView, "prims::expand(Tensor(a) self, int[] shape) -> Tensor(a)", metaPrimExpand),
	prim(OpPrimSlice, KindView, "prims::slice(Tensor(a) self, int dim, int start, int end, int step) -> Tensor(a)", metaPrimSlice),
	prim(OpPrimSelect, KindView, "prims::select(Tensor(a) self, int dim, int index) -> Tensor(a)", metaPrimSelect),
	prim(OpPrimSqueeze, KindView, "prims::squeeze(Tensor(a) self, int[] dims) -> Tensor(a)", metaPrimSqueeze),
	prim(OpPrimUnsqueeze, KindView, "prims::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", metaPrimUnsqueeze),
	prim(OpPrimAsStrided, KindView, "prims::as_strided(Tensor(a) self, int[] size, int[] stride, int offset) -> Tensor(a)", metaPrimAsStrided),

	prim(OpPrimClone, KindOther, "prims::clone(Tensor self) -> Tensor", metaPrimClone),
	prim(OpPrimGradAs, KindOther, "prims::grad_as(Tensor self, Tensor grad_from, Tensor? factor=None) -> Tensor", metaPrimClone),
	prim(OpPrimCat, KindIndexing, "prims::cat(Tensor[] tensors, int dim) -> Tensor", metaPrimCat),
	prim(OpPrimConstantPadNd, KindOther, "prims::constant_pad_nd(Tensor self, int[] pad, Scalar value) -> Tensor", metaPrimPad),
	prim(OpPrimGather, KindIndexing, "prims::gather(Tensor self, int dim, Tensor index) -> Tensor", metaPrimGather).raises(indexedByTensor),
	prim(OpPrimIndexSelect, KindIndexing, "prims::index_select(Tensor self, int dim, Tensor index) -> Tensor", metaPrimIndexSelect).raises(indexedByTensor),
	prim(OpPrimIndex, KindIndexing, "prims::index(Tensor self, Tensor?[] indices) -> Tensor", metaPrimIndex).raises(indexedByTensor),
	prim(OpPrimScatter, KindIndexing, "prims::scatter(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", metaPrimScatter).raises(indexedByTensor).with(fNumbers),
	prim(OpPrimIndexPut, KindIndexing, "prims::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate) -> Tensor", metaPrimIndexPut).raises(indexedByTensor).with(fNumbers),

	prim(OpPrimFull, KindFactory, "prims::full(int[] shape, Scalar value, ScalarType dtype) -> Tensor", metaPrimFull).with(fNonDiff),
	prim(OpPrimIota, KindFactory, "prims::iota(int length, Scalar start, Scalar step, ScalarType dtype) -> Tensor", metaPrimIota).with(fNonDiff),

	prim(OpPrimMm, KindExtern, "prims::mm(Tensor self, Tensor mat2) -> Tensor", metaPrimMm),
	prim(OpPrimBmm, KindExtern, "prims::bmm(Tensor self, Tensor mat2) -> Tensor", metaPrimBmm),
	prim(OpPrimAddmm, KindExtern, "prims::addmm(Tensor self, Tensor mat1, Tensor mat2) -> Tensor", metaPrimAddmm),
	prim(OpPrimConvolution, KindExtern,
		"prims::convolution(Tensor input:self, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, bool transposed, int[] output_padding, int groups) -> Tensor",
		metaPrimConvolution),
	prim(OpPrimFallback, KindExtern, "prims::fallback(str target, Any... args) -> Any", metaPrimFallback).
		notes("keyword arguments of the torch-level call are node kwargs, which Meta does not bind; the node's meta is the torch-level op's"),

	prim(OpPrimCopy, KindOther, "prims::copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)", metaPrimCopy).with(fOwnGrad),
)

// IsPrim reports whether op is a core op (target "prims.<name>").
func (op *Op) IsPrim() bool { return op.Schema.Namespace == "prims" }
