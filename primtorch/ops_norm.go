package primtorch

// Normalization and dropout.
var normDefs = []*def{
	row(OpLayerNorm, KindComposite, PromoteNone,
		"layer_norm(Tensor input:self, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
		"torch.layer_norm F.layer_norm", metaLayerNorm).with(fSymbolic),
	row(OpGroupNorm, KindComposite, PromoteNone,
		"group_norm(Tensor input:self, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enabled=True) -> Tensor",
		"torch.group_norm F.group_norm", metaGroupNorm).with(fSymbolic),
	row(OpBatchNorm, KindComposite, PromoteNone,
		"batch_norm(Tensor input:self, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
		"torch.batch_norm F.batch_norm", metaBatchNorm).
		py("F.batch_norm", "batch_norm(Tensor input:self, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, bool training=False, float momentum=0.1, float eps=1e-05) -> Tensor").
		mutates(batchNormMutates).with(fSymbolic),
	row(OpInstanceNorm, KindComposite, PromoteNone,
		"instance_norm(Tensor input:self, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor",
		"torch.instance_norm F.instance_norm", metaInstanceNorm).
		py("F.instance_norm", "instance_norm(Tensor input:self, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05) -> Tensor").with(fSymbolic),
	row(OpDropout, KindComposite, PromoteNone, "dropout(Tensor(a) input:self, float p, bool train) -> Tensor(a)", "torch.dropout F.dropout", metaDropout).
		py("F.dropout", "dropout(Tensor input:self, float p=0.5, bool training:train=True, bool inplace=False) -> Tensor").
		with(fRandom|fMayAlias).inplace(OpDropoutInplace, "torch.dropout_").with(fSymbolic).returnsSelf(dropoutIsIdentity),
	row(OpAlphaDropout, KindComposite, PromoteNone, "alpha_dropout(Tensor(a) input:self, float p, bool train) -> Tensor(a)", "torch.alpha_dropout F.alpha_dropout", metaDropout).
		py("F.alpha_dropout", "alpha_dropout(Tensor input:self, float p=0.5, bool training:train=False, bool inplace=False) -> Tensor").
		with(fRandom|fMayAlias).inplace(OpAlphaDropoutInplace, "torch.alpha_dropout_").with(fSymbolic).returnsSelf(dropoutIsIdentity),
	row(OpFeatureDropout, KindComposite, PromoteNone, "feature_dropout(Tensor(a) input:self, float p, bool train) -> Tensor(a)",
		"torch.feature_dropout F.dropout1d F.dropout2d F.dropout3d", metaDropout).
		py("F.dropout1d", "dropout1d(Tensor input:self, float p=0.5, bool training:train=True, bool inplace=False) -> Tensor").
		py("F.dropout2d F.dropout3d", "dropout2d(Tensor input:self, float p=0.5, bool training:train=True, bool inplace=False) -> Tensor").
		with(fRandom|fMayAlias).inplace(OpFeatureDropoutInplace, "torch.feature_dropout_").with(fSymbolic),
	row(OpFeatureAlphaDropout, KindComposite, PromoteNone, "feature_alpha_dropout(Tensor(a) input:self, float p, bool train) -> Tensor(a)",
		"torch.feature_alpha_dropout F.feature_alpha_dropout", metaDropout).
		py("F.feature_alpha_dropout", "feature_alpha_dropout(Tensor input:self, float p=0.5, bool training:train=False, bool inplace=False) -> Tensor").
		with(fRandom | fMayAlias).with(fSymbolic),
}
