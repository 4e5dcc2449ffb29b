package primtorch

// Ops that join, repeat or rearrange whole tensors into new ones.
var joinDefs = []*def{
	row(OpCat, KindIndexing, PromoteNoOpmath, "cat(Tensor[] tensors, int dim=0) -> Tensor", "torch.cat torch.concat", metaCat).with(fOut | fSymbolic),
	row(OpStack, KindIndexing, PromoteNoOpmath, "stack(Tensor[] tensors, int dim=0) -> Tensor", "torch.stack", metaStack).with(fOut | fSymbolic),
	row(OpHstack, KindIndexing, PromoteNoOpmath, "hstack(Tensor[] tensors) -> Tensor", "torch.hstack", metaHstack).with(fOut | fSymbolic),
	row(OpVstack, KindIndexing, PromoteNoOpmath, "vstack(Tensor[] tensors) -> Tensor", "torch.vstack torch.row_stack", metaVstack).with(fOut | fSymbolic),
	row(OpRepeat, KindIndexing, PromoteNone, "repeat(Tensor self, int[] repeats) -> Tensor", "Tensor.repeat", metaRepeat).with(fSymbolic),
	row(OpTile, KindIndexing, PromoteNone, "tile(Tensor self, int[] dims) -> Tensor", "@tile", metaTile).with(fSymbolic),
	row(OpRepeatInterleave, KindIndexing, PromoteNone, "repeat_interleave.self_int(Tensor self, Any repeats, int? dim=None, *, int? output_size=None) -> Tensor", "@repeat_interleave", metaRepeatInterleave).
		notes("a tensor of repeats needs output_size (else ErrDataDependent)"),
	row(OpFlip, KindIndexing, PromoteNone, "flip(Tensor self, int[] dims) -> Tensor", "@flip", metaFlip).with(fSymbolic),
	row(OpRoll, KindIndexing, PromoteNone, "roll(Tensor self, int[1] shifts, int[1] dims=[]) -> Tensor", "@roll", metaRoll),
	row(OpTril, KindPointwise, PromoteNone, "tril(Tensor self, int diagonal=0) -> Tensor", "@tril", metaTril).with(fOut).inplace(OpTrilInplace, "Tensor.tril_").with(fSymbolic),
	row(OpTriu, KindPointwise, PromoteNone, "triu(Tensor self, int diagonal=0) -> Tensor", "@triu", metaTril).with(fOut).inplace(OpTriuInplace, "Tensor.triu_").with(fSymbolic),
}
