package primtorch

import "strings"

// noInplace marks a unary op without an in-place variant.
const noInplace OpID = 0xffff

// unary is a row for "name(Tensor self) -> Tensor" reached as torch.name and Tensor.name (plus
// targets), with an in-place variant name_ unless ip is noInplace.
func unary(id, ip OpID, name string, p Promotion, targets string, m metaFn) *def {
	d := row(id, KindPointwise, p, name+"(Tensor self) -> Tensor", "@"+name+" "+targets, m).with(fOut)
	if ip != noInplace {
		ipTargets := "Tensor." + name + "_"
		if !noTorchInplace[name] {
			ipTargets += " torch." + name + "_"
		}
		d.inplace(ip, ipTargets)
	}
	return d
}

// noTorchInplace lists unary ops whose in-place form is only a Tensor method (no torch.name_).
var noTorchInplace = map[string]bool{
	"bitwise_not": true, "digamma": true, "erfinv": true, "lgamma": true, "logical_not": true,
	"sign": true, "square": true, "logit": true, "nan_to_num": true, "round": true,
}

// Elementwise ops of one tensor.
var unaryDefs = allSymbolic(
	unary(OpAbs, OpAbsInplace, "abs", PromoteComplexToFloat, "operator.abs @absolute", metaPointwise),
	unary(OpNeg, OpNegInplace, "neg", PromoteDefault, "operator.neg @negative", metaNeg),
	row(OpPositive, KindView, PromoteNone, "positive(Tensor(a) self) -> Tensor(a)", "@positive operator.pos", metaPositive),
	unary(OpExp, OpExpInplace, "exp", PromoteIntToFloat, "", metaPointwise),
	unary(OpExp2, OpExp2Inplace, "exp2", PromoteIntToFloat, "torch.special.exp2", metaPointwise),
	unary(OpExpm1, OpExpm1Inplace, "expm1", PromoteIntToFloat, "torch.special.expm1", metaPointwise),
	unary(OpLog, OpLogInplace, "log", PromoteIntToFloat, "", metaPointwise),
	unary(OpLog1p, OpLog1pInplace, "log1p", PromoteIntToFloat, "torch.special.log1p", metaPointwise),
	unary(OpLog2, OpLog2Inplace, "log2", PromoteIntToFloat, "", metaPointwise),
	unary(OpLog10, OpLog10Inplace, "log10", PromoteIntToFloat, "", metaPointwise),
	unary(OpSqrt, OpSqrtInplace, "sqrt", PromoteIntToFloat, "", metaPointwise),
	unary(OpRsqrt, OpRsqrtInplace, "rsqrt", PromoteIntToFloat, "", metaPointwise),
	unary(OpSin, OpSinInplace, "sin", PromoteIntToFloat, "", metaPointwise),
	unary(OpCos, OpCosInplace, "cos", PromoteIntToFloat, "", metaPointwise),
	unary(OpTan, OpTanInplace, "tan", PromoteIntToFloat, "", metaPointwise),
	unary(OpAsin, OpAsinInplace, "asin", PromoteIntToFloat, "@arcsin", metaPointwise),
	unary(OpAcos, OpAcosInplace, "acos", PromoteIntToFloat, "@arccos", metaPointwise),
	unary(OpAtan, OpAtanInplace, "atan", PromoteIntToFloat, "@arctan", metaPointwise),
	unary(OpSinh, OpSinhInplace, "sinh", PromoteIntToFloat, "", metaPointwise),
	unary(OpCosh, OpCoshInplace, "cosh", PromoteIntToFloat, "", metaPointwise),
	unary(OpTanh, OpTanhInplace, "tanh", PromoteIntToFloat, "F.tanh", metaPointwise),
	unary(OpAsinh, OpAsinhInplace, "asinh", PromoteIntToFloat, "@arcsinh", metaPointwise),
	unary(OpAcosh, OpAcoshInplace, "acosh", PromoteIntToFloat, "@arccosh", metaPointwise),
	unary(OpAtanh, OpAtanhInplace, "atanh", PromoteIntToFloat, "@arctanh", metaPointwise),
	unary(OpSigmoid, OpSigmoidInplace, "sigmoid", PromoteIntToFloat, "F.sigmoid torch.special.expit", metaPointwise),
	unary(OpErf, OpErfInplace, "erf", PromoteIntToFloat, "torch.special.erf", metaPointwise),
	unary(OpErfc, OpErfcInplace, "erfc", PromoteIntToFloat, "torch.special.erfc", metaPointwise),
	unary(OpErfinv, OpErfinvInplace, "erfinv", PromoteIntToFloat, "torch.special.erfinv", metaPointwise),
	unary(OpLgamma, OpLgammaInplace, "lgamma", PromoteIntToFloat, "torch.special.gammaln", metaPointwise),
	unary(OpDigamma, OpDigammaInplace, "digamma", PromoteIntToFloat, "torch.special.digamma", metaPointwise),
	unary(OpReciprocal, OpReciprocalInplace, "reciprocal", PromoteIntToFloat, "", metaPointwise),
	unary(OpFloor, OpFloorInplace, "floor", PromoteDefault, "", noComplex("floor")),
	unary(OpCeil, OpCeilInplace, "ceil", PromoteDefault, "", noComplex("ceil")),
	unary(OpTrunc, OpTruncInplace, "trunc", PromoteDefault, "@fix", noComplex("trunc")),
	unary(OpFrac, OpFracInplace, "frac", PromoteDefault, "", metaPointwise),
	unary(OpSign, OpSignInplace, "sign", PromoteDefault, "", rejectDType(isComplex, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead.", metaPointwise)),
	unary(OpSgn, noInplace, "sgn", PromoteDefault, "", metaPointwise),
	unary(OpSignbit, noInplace, "signbit", PromoteAlwaysBool, "", metaPointwise).with(fNonDiff),
	unary(OpSquare, OpSquareInplace, "square", PromoteBoolToLong, "", metaPointwise),
	row(OpRound, KindPointwise, PromoteDefault, "round(Tensor self, *, int decimals=0) -> Tensor", "@round", metaRound).
		with(fOut).inplace(OpRoundInplace, "torch.round_ Tensor.round_"),
	unary(OpLogicalNot, OpLogicalNotInplace, "logical_not", PromoteAlwaysBool, "", metaPointwise).with(fNonDiff),
	unary(OpBitwiseNot, OpBitwiseNotInplace, "bitwise_not", PromoteDefault, "operator.invert", metaIntegral("bitwise_not_cpu")).with(fNonDiff),
	unary(OpIsnan, noInplace, "isnan", PromoteAlwaysBool, "", metaPointwise).with(fNonDiff),
	unary(OpIsinf, noInplace, "isinf", PromoteAlwaysBool, "", metaPointwise).with(fNonDiff),
	unary(OpIsfinite, noInplace, "isfinite", PromoteAlwaysBool, "", metaPointwise).with(fNonDiff),
	unary(OpIsposinf, noInplace, "isposinf", PromoteAlwaysBool, "", rejectDType(isComplex, "isposinf does not support complex inputs.", metaPointwise)).with(fNonDiff),
	unary(OpIsneginf, noInplace, "isneginf", PromoteAlwaysBool, "", rejectDType(isComplex, "isneginf does not support complex inputs.", metaPointwise)).with(fNonDiff),
	row(OpNanToNum, KindPointwise, PromoteDefault,
		"nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor", "@nan_to_num", metaLikeSelf).
		with(fOut).inplace(OpNanToNumInplace, "torch.nan_to_num_ Tensor.nan_to_num_"),
	row(OpLogit, KindPointwise, PromoteIntToFloat, "logit(Tensor self, float? eps=None) -> Tensor", "@logit torch.special.logit", metaPointwise).
		with(fOut).inplace(OpLogitInplace, "torch.logit_ Tensor.logit_"),
	row(OpClamp, KindPointwise, PromoteDefault, "clamp(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", "@clamp @clip", metaClampTensor).
		with(fOut|fNumbers).inplace(OpClampInplace, "torch.clamp_ Tensor.clamp_ torch.clip_ Tensor.clip_"),
	row(OpClampMin, KindPointwise, PromoteDefault, "clamp_min(Tensor self, Tensor min) -> Tensor", "@clamp_min", metaPointwise).
		with(fOut|fNumbers).inplace(OpClampMinInplace, "torch.clamp_min_ Tensor.clamp_min_"),
	row(OpClampMax, KindPointwise, PromoteDefault, "clamp_max(Tensor self, Tensor max) -> Tensor", "@clamp_max", metaPointwise).
		with(fOut|fNumbers).inplace(OpClampMaxInplace, "torch.clamp_max_ Tensor.clamp_max_"),
)

// act is an activation row: "name(Tensor self<params>) -> Tensor" with an F-level signature
// that adds inplace=False (when fsig is not empty) and an in-place variant reached by ipTargets.
func act(id, ip OpID, name, params, fsig, targets, ipTargets string, m metaFn) *def {
	d := row(id, KindPointwise, PromoteDefault, name+"(Tensor self"+params+") -> Tensor", targets, m)
	if fsig != "" {
		d.py("F."+name, name+"(Tensor input:self"+fsig+") -> Tensor")
	}
	if ip != noInplace {
		d.inplace(ip, ipTargets)
	}
	return d
}

// Activation functions (torch.nn.functional).
var activationDefs = allSymbolic(
	act(OpRelu, OpReluInplace, "relu", "", ", bool inplace=False", "@relu F.relu", "Tensor.relu_ torch.relu_ F.relu_", clampLike("Boolean inputs not supported for relu", metaPointwise)),
	act(OpRelu6, noInplace, "relu6", "", ", bool inplace=False", "F.relu6 nn.relu6", "", clampLike("Bool inputs not supported for hardtanh", metaHardtanh)),
	act(OpGelu, noInplace, "gelu", ", *, str approximate='none'", "", "F.gelu nn.gelu", "", metaGelu),
	act(OpSilu, OpSiluInplace, "silu", "", ", bool inplace=False", "F.silu nn.silu", "nn.silu_", metaPointwise),
	act(OpMish, OpMishInplace, "mish", "", ", bool inplace=False", "F.mish nn.mish", "nn.mish_", metaPointwise),
	act(OpElu, OpEluInplace, "elu", ", Scalar alpha=1, Scalar scale=1, Scalar input_scale=1", ", float alpha=1.0, bool inplace=False", "F.elu nn.elu", "F.elu_ nn.elu_", metaPointwise),
	act(OpSelu, OpSeluInplace, "selu", "", ", bool inplace=False", "torch.selu F.selu", "torch.selu_ F.selu_", metaPointwise),
	act(OpCelu, OpCeluInplace, "celu", ", Scalar alpha=1.0", ", float alpha=1.0, bool inplace=False", "torch.celu F.celu", "torch.celu_ F.celu_", metaPointwise),
	act(OpLeakyRelu, OpLeakyReluInplace, "leaky_relu", ", Scalar negative_slope=0.01", ", float negative_slope=0.01, bool inplace=False", "F.leaky_relu nn.leaky_relu", "F.leaky_relu_ nn.leaky_relu_", metaPointwise),
	act(OpHardtanh, OpHardtanhInplace, "hardtanh", ", Scalar min_val=-1, Scalar max_val=1", ", float min_val=-1.0, float max_val=1.0, bool inplace=False", "F.hardtanh nn.hardtanh", "F.hardtanh_ nn.hardtanh_", clampLike("Bool inputs not supported for hardtanh", metaHardtanh)),
	act(OpHardsigmoid, OpHardsigmoidInplace, "hardsigmoid", "", ", bool inplace=False", "F.hardsigmoid nn.hardsigmoid", "nn.hardsigmoid_", metaPointwise),
	act(OpHardswish, OpHardswishInplace, "hardswish", "", ", bool inplace=False", "F.hardswish nn.hardswish", "nn.hardswish_", metaPointwise),
	act(OpSoftplus, noInplace, "softplus", ", Scalar beta=1, Scalar threshold=20", "", "F.softplus nn.softplus", "", metaPointwise),
	act(OpLogSigmoid, noInplace, "log_sigmoid", "", "", "F.logsigmoid nn.log_sigmoid", "", metaContiguousOut),
	row(OpSoftsign, KindComposite, PromoteIntToFloat, "softsign(Tensor input:self) -> Tensor", "F.softsign", metaPointwise),
	row(OpTanhshrink, KindComposite, PromoteIntToFloat, "tanhshrink(Tensor input:self) -> Tensor", "F.tanhshrink", rejectDType(isBool, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.", metaPointwise)),
	act(OpHardshrink, noInplace, "hardshrink", ", Scalar lambd=0.5", "", "@hardshrink F.hardshrink", "", metaPointwise),
	act(OpSoftshrink, noInplace, "softshrink", ", Scalar lambd=0.5", "", "F.softshrink nn.softshrink", "", metaPointwise),
	act(OpThreshold, OpThresholdInplace, "threshold", ", Scalar threshold, Scalar value", ", float threshold, float value, bool inplace=False", "torch.threshold F.threshold", "torch.threshold_ F.threshold_", metaPointwise),
	row(OpGlu, KindComposite, PromoteNone, "glu(Tensor self, int dim=-1) -> Tensor", "F.glu nn.glu", metaGluHalves),
	row(OpPrelu, KindPointwise, PromoteNone, "prelu(Tensor self, Tensor weight) -> Tensor", "@prelu F.prelu", metaPrelu),
)

// bin is "name(Tensor self, Tensor other<params>) -> Tensor" taking Python numbers as operands.
func bin(id, ip OpID, schemaName, params string, p Promotion, targets, ipTargets string, m metaFn) *def {
	d := row(id, KindPointwise, p, schemaName+"(Tensor self, Tensor other"+params+") -> Tensor", targets, m).with(fOut)
	switch name := strings.SplitN(schemaName, ".", 2)[0]; {
	case noNumbers[name]:
	case numbersSelf[name]:
		d.with(fNumbers | fNumbersSelf)
	default:
		d.with(fNumbers)
	}
	if ip != noInplace {
		d.inplace(ip, ipTargets)
	}
	return d
}

// noNumbers are binary ops whose operands must be tensors (torch.maximum(x, 1) is a TypeError).
var noNumbers = map[string]bool{
	"maximum": true, "minimum": true, "fmax": true, "fmin": true, "logaddexp": true, "atan2": true,
	"hypot": true, "logical_and": true, "logical_or": true, "logical_xor": true,
}

// numbersSelf are binary ops whose torch.* function takes a number as first operand too.
var numbersSelf = map[string]bool{
	"add": true, "sub": true, "mul": true, "div": true, "floor_divide": true, "remainder": true,
	"xlogy": true, "bitwise_and": true, "bitwise_or": true, "bitwise_xor": true,
	"bitwise_left_shift": true, "bitwise_right_shift": true,
}

// Elementwise ops of two tensors.
var binaryDefs = allSymbolic(
	bin(OpAdd, OpAddInplace, "add.Tensor", ", *, Scalar alpha=1", PromoteDefault, "@add operator.add", "Tensor.add_ operator.iadd", metaAddSub).with(fSymFloat),
	bin(OpSub, OpSubInplace, "sub.Tensor", ", *, Scalar alpha=1", PromoteDefault, "@sub @subtract operator.sub", "Tensor.sub_ Tensor.subtract_ operator.isub", metaAddSub).with(fSymFloat),
	bin(OpRsub, noInplace, "rsub.Tensor", ", *, Scalar alpha=1", PromoteDefault, "torch.rsub", "", metaRsub).with(fSymFloat),
	bin(OpMul, OpMulInplace, "mul.Tensor", "", PromoteDefault, "@mul @multiply operator.mul", "Tensor.mul_ Tensor.multiply_ operator.imul", metaPointwise).with(fSymFloat),
	bin(OpDiv, OpDivInplace, "div.Tensor_mode", ", *, str? rounding_mode=None", PromoteIntToFloat, "@div @divide @true_divide operator.truediv",
		"Tensor.div_ Tensor.divide_ Tensor.true_divide_ operator.itruediv", metaDiv).notes("with rounding_mode the promotion is DEFAULT").raises(integerResult).with(fSymFloat),
	bin(OpFloorDivide, OpFloorDivideInplace, "floor_divide", "", PromoteDefault, "@floor_divide operator.floordiv", "Tensor.floor_divide_ operator.ifloordiv", metaPointwise).raises(integerResult),
	bin(OpRemainder, OpRemainderInplace, "remainder.Tensor", "", PromoteDefault, "@remainder operator.mod", "Tensor.remainder_ operator.imod", metaPointwise).raises(integerResult),
	bin(OpFmod, OpFmodInplace, "fmod.Tensor", "", PromoteDefault, "@fmod", "Tensor.fmod_", metaPointwise).raises(integerResult),
	row(OpPow, KindPointwise, PromoteBoolToLong, "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", "@pow operator.pow", metaPow).
		// number ** tensor runs Tensor.__rpow__, whose layout differs from torch.pow's (metaPow)
		py("operator.pow", "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor").
		with(fNumbers|fNumbersSelf|fOut|fSymFloatExponent).inplace(OpPowInplace, "Tensor.pow_ operator.ipow"),
	bin(OpMaximum, noInplace, "maximum", "", PromoteDefault, "@maximum", "", metaPointwise),
	bin(OpMinimum, noInplace, "minimum", "", PromoteDefault, "@minimum", "", metaPointwise),
	bin(OpFmax, noInplace, "fmax", "", PromoteDefault, "@fmax", "", metaPointwise),
	bin(OpFmin, noInplace, "fmin", "", PromoteDefault, "@fmin", "", metaPointwise),
	bin(OpAtan2, OpAtan2Inplace, "atan2", "", PromoteIntToFloat, "@atan2 @arctan2", "Tensor.atan2_", metaPointwise),
	bin(OpHypot, OpHypotInplace, "hypot", "", PromoteDefault, "@hypot", "Tensor.hypot_", metaPointwise),
	bin(OpCopysign, OpCopysignInplace, "copysign.Tensor", "", PromoteIntToFloat, "@copysign", "Tensor.copysign_", metaPointwise),
	row(OpComplex, KindPointwise, PromoteNone, "complex(Tensor real, Tensor imag) -> Tensor", "torch.complex", metaComplex).with(fOut),
	bin(OpXlogy, noInplace, "xlogy.Tensor", "", PromoteIntToFloat, "@xlogy torch.special.xlogy", "", metaPointwise),
	bin(OpLogaddexp, noInplace, "logaddexp", "", PromoteDefault, "@logaddexp", "", metaPointwise),
	bin(OpEq, noInplace, "eq.Tensor", "", PromoteAlwaysBool, "@eq operator.eq", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpNe, noInplace, "ne.Tensor", "", PromoteAlwaysBool, "@ne @not_equal operator.ne", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpLt, noInplace, "lt.Tensor", "", PromoteAlwaysBool, "@lt @less operator.lt", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpLe, noInplace, "le.Tensor", "", PromoteAlwaysBool, "@le @less_equal operator.le", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpGt, noInplace, "gt.Tensor", "", PromoteAlwaysBool, "@gt @greater operator.gt", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpGe, noInplace, "ge.Tensor", "", PromoteAlwaysBool, "@ge @greater_equal operator.ge", "", metaPointwise).with(fNonDiff|fSymFloat),
	bin(OpLogicalAnd, OpLogicalAndInplace, "logical_and", "", PromoteAlwaysBool, "@logical_and", "Tensor.logical_and_", metaPointwise).with(fNonDiff),
	bin(OpLogicalOr, OpLogicalOrInplace, "logical_or", "", PromoteAlwaysBool, "@logical_or", "Tensor.logical_or_", metaPointwise).with(fNonDiff),
	bin(OpLogicalXor, OpLogicalXorInplace, "logical_xor", "", PromoteAlwaysBool, "@logical_xor", "Tensor.logical_xor_", metaPointwise).with(fNonDiff),
	bin(OpBitwiseAnd, OpBitwiseAndInplace, "bitwise_and.Tensor", "", PromoteDefault, "@bitwise_and operator.and_", "Tensor.bitwise_and_ operator.iand", metaIntegral("bitwise_and_cpu")).with(fNonDiff),
	bin(OpBitwiseOr, OpBitwiseOrInplace, "bitwise_or.Tensor", "", PromoteDefault, "@bitwise_or operator.or_", "Tensor.bitwise_or_ operator.ior", metaIntegral("bitwise_or_cpu")).with(fNonDiff),
	bin(OpBitwiseXor, OpBitwiseXorInplace, "bitwise_xor.Tensor", "", PromoteDefault, "@bitwise_xor operator.xor", "Tensor.bitwise_xor_ operator.ixor", metaIntegral("bitwise_xor_cpu")).with(fNonDiff),
	bin(OpBitwiseLeftShift, OpBitwiseLeftShiftInplace, "bitwise_left_shift.Tensor", "", PromoteDefault, "@bitwise_left_shift operator.lshift", "Tensor.bitwise_left_shift_ operator.ilshift", metaShift("lshift_cpu")).with(fNonDiff),
	bin(OpBitwiseRightShift, OpBitwiseRightShiftInplace, "bitwise_right_shift.Tensor", "", PromoteDefault, "@bitwise_right_shift operator.rshift", "Tensor.bitwise_right_shift_ operator.irshift", metaShift("rshift_cpu")).with(fNonDiff),
)

// Elementwise ops of three tensors.
var ternaryDefs = allSymbolic(
	row(OpWhere, KindPointwise, PromoteNoOpmath, "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", "torch.where", metaWhere).with(fNumbers|fOut),
	row(OpWhereCond, KindIndexing, PromoteNone, "where(Tensor condition) -> Tensor[]", "torch.where", nil).with(fDataDep|fNonDiff),
	// torch 2 takes a number as other (metaWhere checks the running torch)
	row(OpWhereMethod, KindPointwise, PromoteNoOpmath, "where.method(Tensor self, Tensor condition, Tensor other) -> Tensor", "Tensor.where", metaWhere).with(fNumbers),
	row(OpMaskedFill, KindPointwise, PromoteNone, "masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor", "@masked_fill", metaMaskedFill).
		with(fNumbers).notes("a non-bool mask is data-dependent (valid only when it holds 0s and 1s)").inplace(OpMaskedFillInplace, "Tensor.masked_fill_"),
	row(OpLerp, KindPointwise, PromoteDefault, "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", "@lerp", metaSameDTypes).
		with(fNumbers|fOut).inplace(OpLerpInplace, "Tensor.lerp_"),
	row(OpAddcmul, KindPointwise, PromoteDefault, "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", "@addcmul", metaPointwise).
		with(fOut|fSymFloatValue).inplace(OpAddcmulInplace, "Tensor.addcmul_"),
	row(OpAddcdiv, KindPointwise, PromoteDefault, "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", "@addcdiv", metaAddcdiv).
		with(fOut|fSymFloatValue).inplace(OpAddcdivInplace, "Tensor.addcdiv_"),
)

func metaPositive(a *Args) (Value, error) {
	self := selfTensor(a)
	if self.DType == Bool {
		return nil, runtimeErrorf("The `+` operator, on a bool tensor is not supported.")
	}
	return self.Clone(), nil
}
