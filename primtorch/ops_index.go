package primtorch

// Indexing: gathers and scatters by index, and the data-dependent ops.
var indexDefs = []*def{
	row(OpGetitem, KindIndexing, PromoteNone, "getitem(Tensor(a) self, Any index) -> Tensor(a)", "operator.getitem Tensor.__getitem__", metaGetitem).raises(getitemByTensor).
		with(fMayAlias).notes("bool-mask and 0-dim tensor indices are data-dependent").with(fSymbolic),
	row(OpSetitem, KindIndexing, PromoteNone, "setitem(Tensor(a!) self, Any index, Any value) -> ()", "operator.setitem Tensor.__setitem__", metaSetitem).
		notes("a bool-mask index with a multi-element value is data-dependent").with(fSymbolic),
	row(OpGather, KindIndexing, PromoteNone, "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", "@gather", metaGather).raises(indexedByTensor).with(fOut | fSymbolic),
	row(OpScatter, KindIndexing, PromoteNone, "scatter.src(Tensor self, int dim, Tensor index, Tensor src, *, str? reduce=None) -> Tensor", "@scatter", metaScatter).raises(indexedByTensor).with(fNoOverlap).
		alt("scatter.value(Tensor self, int dim, Tensor index, Scalar value:src, *, str? reduce=None) -> Tensor").
		inplace(OpScatterInplace, "Tensor.scatter_").with(fSymbolic),
	row(OpScatterAdd, KindIndexing, PromoteNone, "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor", "@scatter_add", metaScatter).raises(indexedByTensor).with(fNoOverlap).
		inplace(OpScatterAddInplace, "Tensor.scatter_add_").with(fSymbolic),
	row(OpIndexSelect, KindIndexing, PromoteNone, "index_select(Tensor self, int dim, Tensor index) -> Tensor", "@index_select", metaIndexSelect).raises(indexedByTensor).with(fOut | fSymbolic),
	row(OpIndexAdd, KindIndexing, PromoteNone, "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor", "@index_add", metaIndexAdd).raises(indexedByTensor).with(fNoOverlap).
		inplace(OpIndexAddInplace, "Tensor.index_add_"),
	// take has no decomposition (torch runs it); the row gives its meta and its effects (it
	// raises for an index out of range, writes nothing and draws nothing: a graph with it may
	// be run again with torch, whose exception the user then sees; fuzz seed 7407)
	row(OpTake, KindIndexing, PromoteNone, "take(Tensor self, Tensor index) -> Tensor", "torch.take Tensor.take", metaTake).raises(indexedByTensor),
	row(OpTakeAlongDim, KindIndexing, PromoteNone, "take_along_dim(Tensor self, Tensor indices, int? dim=None) -> Tensor", "@take_along_dim", metaTakeAlongDim).raises(indexedByTensor).with(fSymbolic),
	row(OpEmbedding, KindIndexing, PromoteNone, "embedding(Tensor input:indices, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor", "F.embedding", metaEmbedding).raises(indexedByTensor).
		mutates(embeddingMutates).with(fSymbolic),
	row(OpOneHot, KindIndexing, PromoteNone, "one_hot(Tensor self, int num_classes=-1) -> Tensor", "F.one_hot nn.one_hot", metaOneHot).raises(indexedByTensor).with(fNonDiff).
		notes("num_classes=-1 is data-dependent"),
	row(OpNonzero, KindIndexing, PromoteNone, "nonzero(Tensor self, *, bool as_tuple=False) -> Tensor", "@nonzero", nil).with(fDataDep | fNonDiff),
	row(OpArgwhere, KindIndexing, PromoteNone, "argwhere(Tensor self) -> Tensor", "@argwhere", nil).with(fDataDep | fNonDiff),
	row(OpMaskedSelect, KindIndexing, PromoteNone, "masked_select(Tensor self, Tensor mask) -> Tensor", "@masked_select", nil).with(fDataDep),
	row(OpUnique, KindIndexing, PromoteNone, "unique(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False, int? dim=None) -> Tensor", "@unique", nil).with(fDataDep | fNonDiff),
	row(OpUniqueConsecutive, KindIndexing, PromoteNone, "unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> Tensor", "@unique_consecutive", nil).with(fDataDep | fNonDiff),
	row(OpBincount, KindIndexing, PromoteNone, "bincount(Tensor self, Tensor? weights=None, int minlength=0) -> Tensor", "@bincount", nil).with(fDataDep | fNonDiff),
	row(OpItem, KindOther, PromoteNone, "item(Tensor self) -> Scalar", "Tensor.item", nil).with(fDataDep | fNonDiff),
	row(OpTolist, KindOther, PromoteNone, "tolist(Tensor self) -> Any", "Tensor.tolist", nil).with(fDataDep | fNonDiff),
	row(OpEqual, KindOther, PromoteNone, "equal(Tensor self, Tensor other) -> bool", "@equal", nil).with(fDataDep | fNonDiff),
	row(OpAllclose, KindOther, PromoteNone, "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool", "@allclose", nil).with(fDataDep | fNonDiff),
}
