package primtorch

// Matrix products (external BLAS kernels).
var linalgDefs = []*def{
	row(OpMatmul, KindExtern, PromoteNone, "matmul(Tensor self, Tensor other) -> Tensor", "@matmul operator.matmul", metaMatmul).with(fOut | fSymbolic),
	row(OpMm, KindExtern, PromoteNone, "mm(Tensor self, Tensor mat2) -> Tensor", "@mm", metaMm).with(fOut | fSymbolic),
	row(OpBmm, KindExtern, PromoteNone, "bmm(Tensor self, Tensor mat2) -> Tensor", "@bmm", metaBmm).with(fOut | fSymbolic),
	row(OpMv, KindExtern, PromoteNone, "mv(Tensor self, Tensor vec) -> Tensor", "@mv", metaMv).with(fOut | fSymbolic),
	row(OpDot, KindExtern, PromoteNone, "dot(Tensor self, Tensor tensor) -> Tensor", "@dot @inner", metaDot).with(fOut | fSymbolic),
	row(OpOuter, KindPointwise, PromoteDefault, "outer(Tensor self, Tensor vec2) -> Tensor", "@outer @ger", metaOuter).with(fOut | fSymbolic),
	row(OpAddmm, KindExtern, PromoteNone, "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", "@addmm", metaAddmm(addmmProduct)).
		with(fOut).inplace(OpAddmmInplace, "Tensor.addmm_").with(fSymbolic),
	row(OpAddmv, KindExtern, PromoteNone, "addmv(Tensor self, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor", "@addmv", metaAddmm(addmvProduct)).with(fOut | fSymbolic),
	row(OpBaddbmm, KindExtern, PromoteNone, "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", "@baddbmm", metaAddmm(baddbmmProduct)).
		with(fOut).inplace(OpBaddbmmInplace, "Tensor.baddbmm_").with(fSymbolic),
	row(OpAddbmm, KindExtern, PromoteNone, "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", "@addbmm", metaAddmm(baddbmmProduct)).with(fOut | fSymbolic),
	row(OpLinear, KindExtern, PromoteNone, "linear(Tensor input:self, Tensor weight, Tensor? bias=None) -> Tensor", "F.linear nn.linear", metaLinear).with(fSymbolic),
	row(OpBilinear, KindExtern, PromoteNone, "bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor", "torch.bilinear F.bilinear", metaBilinear),
	row(OpEinsum, KindExtern, PromoteNone, "einsum(str equation, Tensor... operands) -> Tensor", "torch.einsum", metaEinsum).
		notes("multi-operand outputs are laid out contiguous, as torch does for the common equations"),
}

// Convolutions (external oneDNN kernels) and pooling.
var convDefs = []*def{
	row(OpConv1d, KindExtern, PromoteNone, "conv1d(Tensor input:self, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] dilation=1, int groups=1) -> Tensor", "torch.conv1d F.conv1d", spatialSymbolic(1, metaConv(1, false), convWindow)).
		alt("conv1d.padding(Tensor input:self, Tensor weight, Tensor? bias=None, int[1] stride=1, str padding='valid', int[1] dilation=1, int groups=1) -> Tensor").with(fSymbolic),
	row(OpConv2d, KindExtern, PromoteNone, "conv2d(Tensor input:self, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor", "torch.conv2d F.conv2d", spatialSymbolic(2, metaConv(2, false), convWindow)).
		alt("conv2d.padding(Tensor input:self, Tensor weight, Tensor? bias=None, int[2] stride=1, str padding='valid', int[2] dilation=1, int groups=1) -> Tensor").with(fSymbolic),
	row(OpConv3d, KindExtern, PromoteNone, "conv3d(Tensor input:self, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, int[3] dilation=1, int groups=1) -> Tensor", "torch.conv3d F.conv3d", spatialSymbolic(3, metaConv(3, false), convWindow)).
		alt("conv3d.padding(Tensor input:self, Tensor weight, Tensor? bias=None, int[3] stride=1, str padding='valid', int[3] dilation=1, int groups=1) -> Tensor").with(fSymbolic),
	row(OpConvTranspose1d, KindExtern, PromoteNone, "conv_transpose1d(Tensor input:self, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor", "torch.conv_transpose1d F.conv_transpose1d", spatialSymbolic(1, metaConv(1, true), convWindow)).with(fSymbolic),
	row(OpConvTranspose2d, KindExtern, PromoteNone, "conv_transpose2d.input(Tensor input:self, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] output_padding=0, int groups=1, int[2] dilation=1) -> Tensor", "torch.conv_transpose2d F.conv_transpose2d", spatialSymbolic(2, metaConv(2, true), convWindow)).with(fSymbolic),
	row(OpConvTranspose3d, KindExtern, PromoteNone, "conv_transpose3d.input(Tensor input:self, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, int[3] output_padding=0, int groups=1, int[3] dilation=1) -> Tensor", "torch.conv_transpose3d F.conv_transpose3d", spatialSymbolic(3, metaConv(3, true), convWindow)).with(fSymbolic),
	row(OpMaxPool1d, KindOther, PromoteNone, "max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=0, int[1] dilation=1, bool ceil_mode=False) -> Tensor", "torch.max_pool1d F.max_pool1d", batchSymbolic(metaPool1d(true))).
		py("F.max_pool1d", "max_pool1d(Tensor input:self, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor").with(fSymbolic),
	row(OpMaxPool2d, KindOther, PromoteNone, "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor", "torch.max_pool2d F.max_pool2d", spatialSymbolic(2, metaPool(2, true), poolWindow(true))).
		py("F.max_pool2d", "max_pool2d(Tensor input:self, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor").with(fSymbolic),
	row(OpMaxPool2dWithIndices, KindOther, PromoteNone, "max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", "F.max_pool2d_with_indices nn.max_pool2d_with_indices", spatialSymbolic(2, metaPool(2, true), poolWindow(true))).
		alt("max_pool2d_with_indices(Tensor input:self, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, bool return_indices=False) -> (Tensor, Tensor)").with(fSymbolic),
	row(OpMaxPool3d, KindOther, PromoteNone, "max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> Tensor", "torch.max_pool3d F.max_pool3d", batchSymbolic(metaPool(3, true))).
		py("F.max_pool3d", "max_pool3d(Tensor input:self, int[3] kernel_size, int[3]? stride=None, int[3] padding=0, int[3] dilation=1, bool ceil_mode=False, bool return_indices=False) -> Tensor").with(fSymbolic),
	row(OpAvgPool1d, KindOther, PromoteNone, "avg_pool1d(Tensor self, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor", "torch.avg_pool1d F.avg_pool1d", batchSymbolic(metaPool1d(false))).with(fSymbolic),
	row(OpAvgPool2d, KindOther, PromoteNone, "avg_pool2d(Tensor self, int[2] kernel_size, int[2]? stride=None, int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", "F.avg_pool2d nn.avg_pool2d", spatialSymbolic(2, metaPool(2, false), poolWindow(false))).with(fSymbolic),
	row(OpAvgPool3d, KindOther, PromoteNone, "avg_pool3d(Tensor self, int[3] kernel_size, int[3]? stride=None, int[3] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor", "F.avg_pool3d nn.avg_pool3d", batchSymbolic(metaPool(3, false))).with(fSymbolic),
	row(OpAdaptiveAvgPool1d, KindOther, PromoteNone, "adaptive_avg_pool1d(Tensor self, Any output_size) -> Tensor", "torch.adaptive_avg_pool1d F.adaptive_avg_pool1d", batchSymbolic(metaAdaptivePool(1, false))).with(fSymbolic),
	row(OpAdaptiveAvgPool2d, KindOther, PromoteNone, "adaptive_avg_pool2d(Tensor self, Any output_size) -> Tensor", "F.adaptive_avg_pool2d nn.adaptive_avg_pool2d", globalPoolSymbolic(2, metaAdaptivePool(2, false))).with(fSymbolic),
	row(OpAdaptiveMaxPool1d, KindOther, PromoteNone, "adaptive_max_pool1d(Tensor self, Any output_size, bool return_indices=False) -> Tensor", "torch.adaptive_max_pool1d F.adaptive_max_pool1d", batchSymbolic(metaAdaptivePool(1, true))).with(fSymbolic),
	row(OpAdaptiveMaxPool2d, KindOther, PromoteNone, "adaptive_max_pool2d(Tensor self, Any output_size, bool return_indices=False) -> Tensor", "F.adaptive_max_pool2d", batchSymbolic(metaAdaptivePool(2, true))).with(fSymbolic),
}
