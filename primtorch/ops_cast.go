package primtorch

// cast is a Tensor.float()-style method.
func cast(id OpID, name string, dt DType) *def {
	return row(id, KindPointwise, PromoteNone, name+"(Tensor(a) self, MemoryFormat memory_format=preserve_format) -> Tensor(a)", "Tensor."+name, metaCastTo(dt)).with(fMayAlias)
}

// Casts, copies and in-place fills.
var castDefs = allSymbolic(
	row(OpTo, KindPointwise, PromoteNone, "to.device(Tensor(a) self, Device? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None) -> Tensor(a)", "Tensor.to", metaTo).
		alt("to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None) -> Tensor(a)",
			"to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None) -> Tensor(a)").
		with(fMayAlias),
	row(OpTypeAs, KindPointwise, PromoteNone, "type_as(Tensor(a) self, Tensor other) -> Tensor(a)", "Tensor.type_as", metaTypeAs).with(fMayAlias),
	row(OpType, KindPointwise, PromoteNone, "type(Tensor(a) self, Any dtype=None, bool non_blocking=False) -> Tensor(a)", "Tensor.type", metaType).with(fMayAlias),
	row(OpCpu, KindPointwise, PromoteNone, "cpu(Tensor(a) self) -> Tensor(a)", "Tensor.cpu", metaCpu).with(fMayAlias),
	cast(OpFloat, "float", Float32),
	cast(OpDouble, "double", Float64),
	cast(OpHalf, "half", Float16),
	cast(OpBfloat16, "bfloat16", BFloat16),
	cast(OpLong, "long", Int64),
	cast(OpInt, "int", Int32),
	cast(OpShort, "short", Int16),
	cast(OpChar, "char", Int8),
	cast(OpByte, "byte", UInt8),
	cast(OpBool, "bool", Bool).with(fNonDiff),
	row(OpClone, KindPointwise, PromoteNone, "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", "@clone", metaClone),
	row(OpCopy, KindPointwise, PromoteNone, "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)", "Tensor.copy_", metaCopy).with(fOwnGrad),
	row(OpFill, KindPointwise, PromoteNone, "fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", "Tensor.fill_ torch.fill_", metaFill).with(fNumbers|fOwnGrad),
	row(OpZero, KindPointwise, PromoteNone, "zero_(Tensor(a!) self) -> Tensor(a!)", "Tensor.zero_ torch.zero_", metaZero).with(fOwnGrad),
	row(OpRequiresGrad, KindOther, PromoteNone, "requires_grad_(Tensor(a!) self, bool requires_grad=True) -> Tensor(a!)", "Tensor.requires_grad_", metaRequiresGrad).with(fOwnGrad),
)
