package primtorch

// Torch kernels that decompositions and derivative formulas call by name through
// prims.fallback, with their argument lists spelled out (the registry does not know these
// targets: the node carries its meta). One table, so the stage that emits a call and the stage
// that differentiates it agree on the name.
const (
	// FallbackMaxPool2dWithIndices is aten::max_pool2d_with_indices(Tensor self, int[2]
	// kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode) -> (Tensor,
	// Tensor), with every list given: a training graph's max pooling, its values read with
	// operator.getitem 0; the indices (item 1) are saved for FallbackMaxPool2dBackward, as
	// eager autograd saves them.
	FallbackMaxPool2dWithIndices = "torch.ops.aten.max_pool2d_with_indices"
	// FallbackMaxPool2dBackward is aten::max_pool2d_with_indices_backward(Tensor grad_output,
	// Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool
	// ceil_mode, Tensor indices) -> Tensor, the kernel eager autograd runs.
	FallbackMaxPool2dBackward = "torch.ops.aten.max_pool2d_with_indices_backward"
	// FallbackAvgPool2d is aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride,
	// int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor,
	// with every argument given: a training graph's average pooling (its derivative is
	// FallbackAvgPool2dBackward's).
	FallbackAvgPool2d = "torch.ops.aten.avg_pool2d"
	// FallbackAvgPool2dBackward is aten::avg_pool2d_backward(Tensor grad_output, Tensor self,
	// the six arguments above) -> Tensor, the kernel eager autograd runs.
	FallbackAvgPool2dBackward = "torch.ops.aten.avg_pool2d_backward"
)
