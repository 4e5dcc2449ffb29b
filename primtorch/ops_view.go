package primtorch

// Views: outputs share their input's storage (reshape, flatten and contiguous may copy).
var viewDefs = []*def{
	row(OpView, KindView, PromoteNone, "view(Tensor(a) self, int[] size) -> Tensor(a)", "Tensor.view", metaView).with(fSymbolic),
	row(OpViewDtype, KindView, PromoteNone, "view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)", "Tensor.view", metaViewDType).with(fNonDiff),
	row(OpViewAs, KindView, PromoteNone, "view_as(Tensor(a) self, Tensor other) -> Tensor(a)", "Tensor.view_as", metaViewAs).with(fSymbolic),
	row(OpReshape, KindView, PromoteNone, "reshape(Tensor(a) self, int[] shape) -> Tensor(a)", "@reshape", metaReshape).with(fMayAlias | fSymbolic),
	row(OpReshapeAs, KindView, PromoteNone, "reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", "Tensor.reshape_as", metaReshapeAs).with(fMayAlias | fSymbolic),
	row(OpFlatten, KindView, PromoteNone, "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", "@flatten", metaFlatten).with(fMayAlias | fSymbolic),
	row(OpUnflatten, KindView, PromoteNone, "unflatten.int(Tensor(a) self, int dim, int[] sizes) -> Tensor(a)", "@unflatten", metaUnflatten).with(fSymbolic),
	row(OpSqueeze, KindView, PromoteNone, "squeeze.dim(Tensor(a) self, int? dim=None) -> Tensor(a)", "@squeeze", metaSqueeze).with(fSymbolic),
	row(OpUnsqueeze, KindView, PromoteNone, "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", "@unsqueeze", metaUnsqueeze).with(fSymbolic),
	row(OpTranspose, KindView, PromoteNone, "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", "@transpose @swapaxes @swapdims", metaTranspose).
		py("@swapaxes", "swapaxes(Tensor(a) self, int axis0:dim0, int axis1:dim1) -> Tensor(a)").with(fSymbolic),
	row(OpPermute, KindView, PromoteNone, "permute(Tensor(a) self, int[] dims) -> Tensor(a)", "@permute", metaPermute).with(fSymbolic),
	row(OpT, KindView, PromoteNone, "t(Tensor(a) self) -> Tensor(a)", "@t", metaT).with(fSymbolic),
	row(OpMovedim, KindView, PromoteNone, "movedim.intlist(Tensor(a) self, int[1] source, int[1] destination) -> Tensor(a)", "@movedim @moveaxis", metaMovedim).with(fSymbolic),
	row(OpExpand, KindView, PromoteNone, "expand(Tensor(a) self, int[] size, *, bool implicit=False) -> Tensor(a)", "Tensor.expand", metaExpand).with(fSymbolic),
	row(OpExpandAs, KindView, PromoteNone, "expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", "Tensor.expand_as", metaExpandAs).with(fSymbolic),
	row(OpBroadcastTo, KindView, PromoteNone, "broadcast_to(Tensor(a) self, int[] size) -> Tensor(a)", "@broadcast_to", metaExpand).with(fSymbolic),
	row(OpBroadcastTensors, KindView, PromoteNone, "broadcast_tensors(Tensor... tensors) -> Tensor[]", "torch.broadcast_tensors", metaBroadcastTensors).with(fSymbolic),
	row(OpContiguous, KindView, PromoteNone, "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)", "Tensor.contiguous", metaContiguous).with(fMayAlias | fSymbolic),
	row(OpNarrow, KindView, PromoteNone, "narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", "@narrow", metaNarrow).with(fSymbolic),
	row(OpSelect, KindView, PromoteNone, "select.int(Tensor(a) self, int dim, int index) -> Tensor(a)", "@select", metaSelect).with(fSymbolic),
	row(OpSplit, KindView, PromoteNone, "split.Tensor(Tensor(a) self, Any split_size, int dim=0) -> Tensor(a)[]", "@split @split_with_sizes", metaSplit).
		py("torch.split", "split(Tensor tensor:self, Any split_size_or_sections:split_size, int dim=0) -> Tensor[]").
		py("@split_with_sizes", "split_with_sizes(Tensor self, Any split_sizes:split_size, int dim=0) -> Tensor[]").with(fSymbolic),
	row(OpChunk, KindView, PromoteNone, "chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", "@chunk", metaChunk).with(fSymbolic),
	row(OpUnbind, KindView, PromoteNone, "unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]", "@unbind", metaUnbind).with(fSymbolic),
	row(OpUnfold, KindView, PromoteNone, "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", "Tensor.unfold", metaUnfold),
	row(OpAsStrided, KindView, PromoteNone, "as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)", "@as_strided", metaAsStrided).with(fSymbolic),
	row(OpDiagonal, KindView, PromoteNone, "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)", "@diagonal", metaDiagonal),
	row(OpDetach, KindView, PromoteNone, "detach(Tensor(a) self) -> Tensor(a)", "@detach", metaDetach).with(fNonDiff | fOwnGrad | fSymbolic),
}
