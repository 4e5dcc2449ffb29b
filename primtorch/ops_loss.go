package primtorch

const legacyReduction = "bool? size_average=None, bool? reduce=None, str reduction='mean'"

// Loss functions (torch.nn.functional).
var lossDefs = allSymbolic(
	row(OpMseLoss, KindComposite, PromoteNone, "mse_loss(Tensor input:self, Tensor target, "+legacyReduction+") -> Tensor", "F.mse_loss", metaPointwiseLoss),
	row(OpL1Loss, KindComposite, PromoteNone, "l1_loss(Tensor input:self, Tensor target, "+legacyReduction+") -> Tensor", "F.l1_loss", metaPointwiseLoss),
	row(OpSmoothL1Loss, KindComposite, PromoteNone, "smooth_l1_loss(Tensor input:self, Tensor target, "+legacyReduction+", float beta=1.0) -> Tensor", "F.smooth_l1_loss", metaPointwiseLoss),
	row(OpHuberLoss, KindComposite, PromoteNone, "huber_loss(Tensor input:self, Tensor target, str reduction='mean', float delta=1.0) -> Tensor", "F.huber_loss", metaPointwiseLoss),
	row(OpKlDiv, KindComposite, PromoteNone, "kl_div(Tensor input:self, Tensor target, "+legacyReduction+", bool log_target=False) -> Tensor", "F.kl_div", metaPointwiseLoss),
	row(OpBinaryCrossEntropy, KindComposite, PromoteNone, "binary_cross_entropy(Tensor input:self, Tensor target, Tensor? weight=None, "+legacyReduction+") -> Tensor", "F.binary_cross_entropy", metaBCE),
	row(OpBinaryCrossEntropyWithLogits, KindComposite, PromoteNone,
		"binary_cross_entropy_with_logits(Tensor input:self, Tensor target, Tensor? weight=None, "+legacyReduction+", Tensor? pos_weight=None) -> Tensor",
		"F.binary_cross_entropy_with_logits", metaBCEWithLogits),
	row(OpNllLoss, KindComposite, PromoteNone, "nll_loss(Tensor input:self, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean') -> Tensor", "F.nll_loss", metaNllLoss),
	row(OpCrossEntropy, KindComposite, PromoteNone,
		"cross_entropy(Tensor input:self, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean', float label_smoothing=0.0) -> Tensor",
		"F.cross_entropy", metaCrossEntropy),
)
