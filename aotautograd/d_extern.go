package aotautograd

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Derivatives of externs: matrix products through matrix products of the transposes (still
// externs, run by torch's BLAS), convolution through torch's own convolution_backward kernel.

func vjpMm(c *vjpCtx) {
	a, b := c.x(0), c.x(1)
	if c.needs(0) {
		c.give(a, mmGradA(c, a, b))
	}
	if c.needs(1) {
		c.give(b, mmGradB(c, a, b))
	}
}

// mmGradA is the gradient of a in mm(a, b): g @ bᵀ, laid out like a. When a is column-major
// (the transposed weight of a linear layer) it is computed as (b @ gᵀ)ᵀ, so that the gradient
// flowing back through the transpose is contiguous — as torch's mm_mat1_backward does; a
// transposed gradient would make autograd's accumulation into .grad slow and its strides differ
// from eager's.
func mmGradA(c *vjpCtx, a, b *fxgraph.Node) *fxgraph.Node {
	if columnMajor(a) {
		return c.transpose(c.emit("mm", b, c.transpose(c.g, 0, 1)), 0, 1)
	}
	return c.emit("mm", c.g, c.transpose(b, 0, 1))
}

// mmGradB is the gradient of b in mm(a, b): aᵀ @ g, or (gᵀ @ a)ᵀ when b is column-major
// (torch's mm_mat2_backward).
func mmGradB(c *vjpCtx, a, b *fxgraph.Node) *fxgraph.Node {
	if columnMajor(b) {
		return c.transpose(c.emit("mm", c.transpose(c.g, 0, 1), a), 0, 1)
	}
	return c.emit("mm", c.transpose(a, 0, 1), c.g)
}

// columnMajor reports a 2-d tensor laid out column by column (and not also row by row).
func columnMajor(n *fxgraph.Node) bool {
	m := n.TensorMeta()
	if m == nil || len(m.Shape) != 2 {
		return false
	}
	sz, st := m.SymSizes(), m.SymStrides()
	if isZero(sz[0]) || isOne(sz[0]) || isZero(sz[1]) || isOne(sz[1]) {
		return false
	}
	k, ok := st[0].IsConst()
	return ok && k == 1 && st[1].Equal(sz[0])
}

func vjpBmm(c *vjpCtx) {
	a, b := c.x(0), c.x(1)
	if c.needs(0) {
		c.give(a, c.emit("bmm", c.g, c.transpose(b, 1, 2)))
	}
	if c.needs(1) {
		c.give(b, c.emit("bmm", c.transpose(a, 1, 2), c.g))
	}
}

// addmm(bias, a, b): bias gets the gradient summed to its shape.
func vjpAddmm(c *vjpCtx) {
	bias, a, b := c.x(0), c.x(1), c.x(2)
	if c.needs(0) {
		c.give(bias, c.sumTo(c.g, symSizes(bias)))
	}
	if c.needs(1) {
		c.give(a, mmGradA(c, a, b))
	}
	if c.needs(2) {
		c.give(b, mmGradB(c, a, b))
	}
}

// ConvolutionBackward is the fallback target of convolution's derivative: torch 1.13's
// aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, SymInt[]?
// bias_sizes, int[] stride, int[] padding, int[] dilation, bool transposed, int[]
// output_padding, int groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor), the kernel
// eager autograd runs. Entries of output_mask that are false come back as None.
const ConvolutionBackward = "torch.ops.aten.convolution_backward"

// convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups): one
// prims.fallback of ConvolutionBackward computing the gradients that are needed, read with
// operator.getitem. Its meta is set here (the registry does not know the target): each
// gradient has its input's shape and dtype in the layout torch's kernel gives it
// (primtorch.BackwardGradLike), the bias's is [C_out].
func vjpConvolution(c *vjpCtx) {
	x, w, bias := c.x(0), c.x(1), c.x(2)
	mask := []bool{c.needs(0), c.needs(1), c.needs(2)}
	if !mask[0] && !mask[1] && !mask[2] {
		return
	}
	var biasSizes fxgraph.Arg = fxgraph.Const{V: nil}
	if bias != nil {
		biasSizes, _ = toArg(symSizes(bias))
	}
	metas := make([]any, 3)
	for i, t := range []*fxgraph.Node{x, w, bias} {
		if !mask[i] {
			continue
		}
		// torch's kernels give the input's and the weight's gradients the layout the
		// convolution ran in (channels-last when x or w is), the bias's is contiguous
		switch i {
		case 0, 1:
			metas[i] = primtorch.BackwardGradLike(t.TensorMeta(), x.TensorMeta(), w.TensorMeta())
		default:
			metas[i] = contiguousLike(t.TensorMeta())
		}
	}
	maskArg, _ := toArg(mask)
	args := []fxgraph.Arg{fxgraph.Const{V: ConvolutionBackward}, c.g, x, w, biasSizes}
	args = append(args, c.n.Args[3:9]...)
	args = append(args, maskArg)
	fb := c.builder.g.AddCall("prims.fallback", args, nil, metas)
	fb.Where = c.loc
	for i, t := range []*fxgraph.Node{x, w, bias} {
		if !mask[i] {
			continue
		}
		item := c.builder.g.AddCall("operator.getitem", []fxgraph.Arg{fb, fxgraph.Const{V: int64(i)}}, nil, metas[i])
		item.Where = c.loc
		c.give(t, item)
	}
}

// fallbackDerivatives are the derivatives of the torch kernels decompositions call through
// prims.fallback by name (primtorch's Fallback* targets), keyed by target; any other fallback
// whose inputs require grad makes the graph not differentiable by ptgo.
var fallbackDerivatives = map[string]vjpFn{
	primtorch.FallbackAvgPool2d: vjpAvgPool2d,
}

// fallbackDerivative is the derivative of a prims.fallback node's target, or nil.
func fallbackDerivative(n *fxgraph.Node) vjpFn {
	if len(n.Args) == 0 {
		return nil
	}
	target, _ := n.Args[0].(fxgraph.Const).V.(string)
	return fallbackDerivatives[target]
}

// itemDerivatives are the derivatives of one item of a tuple-valued prims.fallback, keyed by
// the fallback's target: c.n is the fallback, c.g the gradient of the item.
var itemDerivatives = map[string]func(c *vjpCtx, item int64){
	primtorch.FallbackMaxPool2dWithIndices: vjpMaxPool2dValues,
}

// itemDerivative is the derivative of item n (operator.getitem) of a tuple-valued fallback, or
// nil.
func itemDerivative(n *fxgraph.Node) (src *fxgraph.Node, item int64, vjp func(*vjpCtx, int64)) {
	src, _ = n.Args[0].(*fxgraph.Node)
	k, _ := n.Args[1].(fxgraph.Const).V.(int64)
	if src == nil || src.Target != "prims.fallback" || len(src.Args) == 0 {
		return nil, 0, nil
	}
	target, _ := src.Args[0].(fxgraph.Const).V.(string)
	return src, k, itemDerivatives[target]
}

// max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil)'s values (item 0): torch's
// max_pool2d_with_indices_backward at the forward's indices (item 1, saved: items of a fallback
// are never recomputed), the kernel eager autograd runs.
func vjpMaxPool2dValues(c *vjpCtx, item int64) {
	x := c.x(1)
	if item != 0 || !c.needs(1) {
		return
	}
	out := c.n.Meta.([]any)
	idx := c.builder.g.AddCall("operator.getitem", []fxgraph.Arg{c.n, fxgraph.Const{V: int64(1)}}, nil, out[1].(*primtorch.TensorMeta).Clone())
	idx.Where = c.loc
	args := append([]fxgraph.Arg{fxgraph.Const{V: primtorch.FallbackMaxPool2dBackward}, c.g, x}, c.n.Args[2:7]...)
	gx := c.builder.g.AddCall("prims.fallback", append(args, idx), nil, primtorch.BackwardGradLike(x.TensorMeta(), x.TensorMeta()))
	gx.Where = c.loc
	c.give(x, gx)
}

// avg_pool2d(x, kernel, stride, padding, ceil, count_include_pad, divisor)
// (primtorch.FallbackAvgPool2d): torch's avg_pool2d_backward, which reads x's sizes.
func vjpAvgPool2d(c *vjpCtx) {
	x := c.x(1)
	if !c.needs(1) {
		return
	}
	args := append([]fxgraph.Arg{fxgraph.Const{V: primtorch.FallbackAvgPool2dBackward}, c.g, x}, c.n.Args[2:8]...)
	gx := c.builder.g.AddCall("prims.fallback", args, nil, primtorch.BackwardGradLike(x.TensorMeta(), x.TensorMeta()))
	gx.Where = c.loc
	c.give(x, gx)
}
