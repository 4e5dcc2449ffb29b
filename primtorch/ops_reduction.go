package primtorch

// Reductions, scans and softmax.
var reductionDefs = allSymbolic(
	row(OpSum, KindReduction, PromoteIntToLong, "sum.dim_IntList(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "@sum", metaSum).with(fOut),
	row(OpNansum, KindReduction, PromoteIntToLong, "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "@nansum", metaSum).with(fOut),
	row(OpMean, KindReduction, PromoteNone, "mean.dim(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "@mean", metaMean).with(fOut),
	row(OpProd, KindReduction, PromoteIntToLong, "prod.dim_int(Tensor self, int? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "@prod", metaProdDim).with(fOut),
	row(OpAmax, KindReduction, PromoteNone, "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", "@amax", metaAmax).with(fOut),
	row(OpAmin, KindReduction, PromoteNone, "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", "@amin", metaAmax).with(fOut),
	row(OpMax, KindReduction, PromoteNone, "max(Tensor self) -> Tensor", "@max", metaMaxAll),
	row(OpMaxDim, KindReduction, PromoteNone, "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", "@max", metaMaxDim),
	row(OpMaxOther, KindPointwise, PromoteDefault, "max.other(Tensor self, Tensor other) -> Tensor", "@max", metaPointwise),
	row(OpMin, KindReduction, PromoteNone, "min(Tensor self) -> Tensor", "@min", metaMaxAll),
	row(OpMinDim, KindReduction, PromoteNone, "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", "@min", metaMaxDim),
	row(OpMinOther, KindPointwise, PromoteDefault, "min.other(Tensor self, Tensor other) -> Tensor", "@min", metaPointwise),
	row(OpArgmax, KindReduction, PromoteNone, "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "@argmax", metaArgmax).with(fNonDiff|fOut),
	row(OpArgmin, KindReduction, PromoteNone, "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "@argmin", metaArgmax).with(fNonDiff|fOut),
	row(OpVar, KindReduction, PromoteComplexToFloat, "var.correction(Tensor self, int[1]? dim=None, *, int? correction=None, bool keepdim=False) -> Tensor", "@var", metaVar(false)).
		alt("var(Tensor self, bool unbiased=True) -> Tensor", "var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor").with(fOut),
	row(OpStd, KindReduction, PromoteComplexToFloat, "std.correction(Tensor self, int[1]? dim=None, *, int? correction=None, bool keepdim=False) -> Tensor", "@std", metaVar(false)).
		alt("std(Tensor self, bool unbiased=True) -> Tensor", "std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor").with(fOut),
	row(OpVarMean, KindReduction, PromoteComplexToFloat, "var_mean.correction(Tensor self, int[1]? dim=None, *, int? correction=None, bool keepdim=False) -> (Tensor, Tensor)", "torch.var_mean", metaVar(true)).
		alt("var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", "var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"),
	row(OpStdMean, KindReduction, PromoteComplexToFloat, "std_mean.correction(Tensor self, int[1]? dim=None, *, int? correction=None, bool keepdim=False) -> (Tensor, Tensor)", "torch.std_mean", metaVar(true)).
		alt("std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", "std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)"),
	row(OpLogsumexp, KindReduction, PromoteIntToFloat, "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", "@logsumexp torch.special.logsumexp", metaLogsumexp).with(fOut),
	row(OpNorm, KindReduction, PromoteComplexToFloat, "norm(Tensor self, Any p='fro', int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "@norm", metaNorm).with(fOut),
	row(OpVectorNorm, KindReduction, PromoteComplexToFloat, "linalg_vector_norm(Tensor x:self, Scalar ord:p=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "torch.linalg.vector_norm", metaNorm).with(fOut),
	row(OpAll, KindReduction, PromoteNone, "all.dim(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "@all", metaAllAny).with(fNonDiff|fOut),
	row(OpAny, KindReduction, PromoteNone, "any.dim(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", "@any", metaAllAny).with(fNonDiff|fOut),
	row(OpCountNonzero, KindReduction, PromoteNone, "count_nonzero(Tensor self, int[1]? dim=None) -> Tensor", "@count_nonzero", metaCountNonzero).with(fNonDiff),
	row(OpCumsum, KindOther, PromoteIntToLong, "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", "@cumsum", metaScan).
		with(fOut).inplace(OpCumsumInplace, "Tensor.cumsum_"),
	row(OpCumprod, KindOther, PromoteIntToLong, "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", "@cumprod", metaScan).
		with(fOut).inplace(OpCumprodInplace, "Tensor.cumprod_"),
	row(OpLogcumsumexp, KindOther, PromoteNone, "logcumsumexp(Tensor self, int dim) -> Tensor", "@logcumsumexp", metaScan).with(fOut),
	row(OpCummax, KindOther, PromoteNone, "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", "@cummax", metaCummax),
	row(OpCummin, KindOther, PromoteNone, "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", "@cummin", metaCummax),
	row(OpSoftmax, KindComposite, PromoteNone, "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", "@softmax F.softmax torch.special.softmax", metaSoftmax).
		py("F.softmax", "softmax(Tensor input:self, int? dim=None, int _stacklevel=3, ScalarType? dtype=None) -> Tensor"),
	row(OpLogSoftmax, KindComposite, PromoteNone, "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", "@log_softmax F.log_softmax torch.special.log_softmax", metaSoftmax).
		py("F.log_softmax", "log_softmax(Tensor input:self, int? dim=None, int _stacklevel=3, ScalarType? dtype=None) -> Tensor"),
)
