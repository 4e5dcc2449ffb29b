package inductor

import (
	"ptgo/fxgraph"
)

// lowerFn lowers one prims node. Returning an error wrapping errNoLowering makes the node an
// extern call instead (a case the lowering does not handle costs speed, not correctness).
type lowerFn func(l *lowerer, n *fxgraph.Node) (*lowered, error)

// lowerings is the one table of how each prims target becomes loop IR, keyed by target.
// TestLoweringCoverage names every contract target (and every prims op primtorch registers)
// missing here. Adding an op: a row here, its value op in ops.go if it is elementwise, and a
// case in the tests.
var lowerings = map[string]lowerFn{}

func init() {
	unary := []string{"abs", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
		"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc",
		"floor", "ceil", "round", "trunc", "sign", "reciprocal", "bitwise_not",
		"logical_not", "isnan", "isinf", "isfinite", "check"}
	binary := []string{"add", "sub", "mul", "div", "floordiv", "remainder", "fmod", "pow", "maximum", "minimum",
		"atan2", "hypot", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right",
		"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "where", "fma"}
	for _, op := range append(unary, binary...) {
		lowerings["prims."+op] = lowerPointwise(op)
	}
	for target, fn := range map[string]lowerFn{
		"prims.convert_element_type": lowerConvert,
		"prims.clone":                lowerClone,
		"prims.grad_as":              lowerClone, // (grad_from only carries the gradient)

		"prims.sum":    lowerReduction(ReduceSum),
		"prims.prod":   lowerReduction(ReduceProd),
		"prims.amax":   lowerReduction(ReduceMax),
		"prims.amin":   lowerReduction(ReduceMin),
		"prims.any":    lowerReduction(ReduceAny),
		"prims.all":    lowerReduction(ReduceAll),
		"prims.argmax": lowerReduction(ReduceArgmax),
		"prims.argmin": lowerReduction(ReduceArgmin),

		"prims.cumsum":  lowerScan(ScanSum),
		"prims.cumprod": lowerScan(ScanProd),

		"prims.view":       lowerView,
		"prims.permute":    lowerPermute,
		"prims.expand":     lowerExpand,
		"prims.slice":      lowerSlice,
		"prims.select":     lowerSelect,
		"prims.squeeze":    lowerSqueeze,
		"prims.unsqueeze":  lowerUnsqueeze,
		"prims.as_strided": lowerAsStrided,

		"prims.cat":             lowerCat,
		"prims.constant_pad_nd": lowerConstantPad,
		"prims.gather":          lowerGather,
		"prims.index_select":    lowerIndexSelect,
		"prims.index":           lowerIndex,
		"prims.scatter":         lowerScatter,
		"prims.index_put":       lowerIndexPut,

		"prims.copy_": lowerCopy,

		"prims.full": lowerFull,
		"prims.iota": lowerIota,

		"prims.mm":          lowerExtern,
		"prims.bmm":         lowerExtern,
		"prims.addmm":       lowerAddmm,
		"prims.convolution": lowerExtern,
		"prims.fallback":    lowerFallback,
	} {
		lowerings[target] = fn
	}
}

// contractTargets are the prims targets of the contract between decompositions and inductor
// (doc.go). TestLoweringCoverage checks each has a row in lowerings.
var contractTargets = []string{
	"prims.abs", "prims.neg", "prims.exp", "prims.exp2", "prims.expm1", "prims.log", "prims.log1p", "prims.log2",
	"prims.log10", "prims.sqrt", "prims.rsqrt", "prims.sin", "prims.cos", "prims.tan", "prims.asin", "prims.acos",
	"prims.atan", "prims.sinh", "prims.cosh", "prims.tanh", "prims.sigmoid", "prims.erf", "prims.erfc",
	"prims.floor", "prims.ceil", "prims.round", "prims.trunc", "prims.sign", "prims.reciprocal",
	"prims.bitwise_not", "prims.logical_not", "prims.isnan", "prims.isinf", "prims.isfinite", "prims.check",
	"prims.add", "prims.sub", "prims.mul", "prims.div", "prims.floordiv", "prims.remainder", "prims.fmod",
	"prims.pow", "prims.maximum", "prims.minimum", "prims.atan2", "prims.hypot", "prims.copysign",
	"prims.bitwise_and", "prims.bitwise_or", "prims.bitwise_xor", "prims.shift_left", "prims.shift_right",
	"prims.eq", "prims.ne", "prims.lt", "prims.le", "prims.gt", "prims.ge", "prims.logical_and",
	"prims.logical_or", "prims.logical_xor", "prims.where", "prims.fma", "prims.convert_element_type",
	"prims.sum", "prims.prod", "prims.amax", "prims.amin", "prims.any", "prims.all", "prims.argmax", "prims.argmin",
	"prims.cumsum", "prims.cumprod",
	"prims.view", "prims.permute", "prims.expand", "prims.slice", "prims.select", "prims.squeeze",
	"prims.unsqueeze", "prims.as_strided",
	"prims.clone", "prims.grad_as", "prims.cat", "prims.constant_pad_nd", "prims.gather", "prims.index_select", "prims.index",
	"prims.scatter", "prims.index_put",
	"prims.full", "prims.iota", "prims.copy_",
	"prims.mm", "prims.bmm", "prims.addmm", "prims.convolution", "prims.fallback",
}
