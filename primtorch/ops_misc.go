package primtorch

// Padding, resampling, sorting and composite helpers.
var miscDefs = []*def{
	row(OpPad, KindOther, PromoteNone, "pad(Tensor input:self, int[] pad, str mode='constant', float? value=None) -> Tensor", "F.pad nn.pad", metaPad).with(fSymbolic),
	row(OpConstantPadNd, KindOther, PromoteNone, "constant_pad_nd(Tensor self, int[] pad, Scalar value=0) -> Tensor", "torch.constant_pad_nd", metaPad).with(fSymbolic),
	row(OpInterpolate, KindOther, PromoteNone, "interpolate(Tensor input:self, Any size=None, Any scale_factor=None, str mode='nearest', bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor",
		"F.interpolate F.upsample", batchSymbolic(metaInterpolate)).with(fSymbolic),
	row(OpPixelShuffle, KindOther, PromoteNone, "pixel_shuffle(Tensor self, int upscale_factor) -> Tensor", "torch.pixel_shuffle F.pixel_shuffle", metaPixelShuffle),
	row(OpPixelUnshuffle, KindOther, PromoteNone, "pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor", "torch.pixel_unshuffle F.pixel_unshuffle", metaPixelUnshuffle),
	row(OpNormalize, KindComposite, PromoteNone, "normalize(Tensor input:self, float p=2.0, int dim=1, float eps=1e-12, Tensor? out=None) -> Tensor", "F.normalize", metaNormalize).with(fSymbolic),
	row(OpCosineSimilarity, KindComposite, PromoteNone, "cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor", "torch.cosine_similarity F.cosine_similarity", metaCosineSimilarity).with(fSymbolic),
	row(OpPairwiseDistance, KindComposite, PromoteNone, "pairwise_distance(Tensor x1, Tensor x2, float p=2.0, float eps=1e-06, bool keepdim=False) -> Tensor", "torch.pairwise_distance F.pairwise_distance", metaPairwiseDistance).with(fSymbolic),
	row(OpTopk, KindOther, PromoteNone, "topk(Tensor self, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)", "@topk", metaTopk).with(fSymbolic),
	row(OpSort, KindOther, PromoteNone, "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)", "@sort", metaSort).
		alt("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)").with(fSymbolic),
	row(OpArgsort, KindOther, PromoteNone, "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", "@argsort", metaArgsort).with(fNonDiff).
		alt("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor").with(fSymbolic),
	row(OpKthvalue, KindOther, PromoteNone, "kthvalue(Tensor self, int k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)", "@kthvalue", metaKthvalue).with(fSymbolic),
	row(OpMedian, KindReduction, PromoteNone, "median(Tensor self) -> Tensor", "@median", metaMedianAll).with(fSymbolic),
	row(OpMedianDim, KindReduction, PromoteNone, "median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", "@median", metaKthvalue).with(fSymbolic),
	row(OpDiff, KindComposite, PromoteNone, "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor", "@diff", metaDiff),
	row(OpTrace, KindReduction, PromoteNone, "trace(Tensor self) -> Tensor", "@trace", metaTrace).with(fSymbolic),
}
