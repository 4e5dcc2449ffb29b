package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Matrix products become prims.mm / prims.bmm / prims.addmm (torch's kernels at run time) with
// views around them; convolutions become prims.convolution.

func dMm(c *ctx) (any, error) { return c.d.prim("mm", c.self(), c.in("mat2")), nil }

func dBmm(c *ctx) (any, error) { return c.d.prim("bmm", c.self(), c.in("mat2")), nil }

// dMatmul is matmul, mv and dot.
func dMatmul(c *ctx) (any, error) {
	return c.d.matmul(c.selfNode(), asNode(c.in(c.op.Schema.Params[1].Canon))), nil
}

// matmul is torch.matmul in every rank case: mm for 1-d and 2-d operands, an mm over folded
// rows when only the first operand has batch dims, else a bmm over the broadcast batch.
func (d *decomposer) matmul(a, b *fxgraph.Node) *fxgraph.Node {
	am, bm := metaOf(a), metaOf(b)
	as0, bs0 := am.SymSizes(), bm.SymSizes()
	na, nb := len(as0), len(bs0)
	k, one := as0[na-1], primtorch.SymConst(1)
	switch {
	case na == 1 && nb == 1:
		return d.reshape(d.prim("mm", d.view(a, []sym{one, k}), d.view(b, []sym{k, one})), nil)
	case na == 2 && nb == 1:
		return d.reshape(d.prim("mm", a, d.view(b, []sym{k, one})), []sym{as0[0]})
	case na == 1 && nb == 2:
		return d.reshape(d.prim("mm", d.view(a, []sym{one, k}), b), []sym{bs0[1]})
	case na == 2 && nb == 2:
		return d.prim("mm", a, b)
	case na >= 3 && nb <= 2:
		rows := prodSyms(as0[:na-1])
		var b2 val = b
		if nb == 1 {
			b2 = d.view(b, []sym{k, one})
		}
		r := d.prim("mm", d.reshape(a, []sym{rows, k}), b2)
		shape := append([]sym{}, as0[:na-1]...)
		if nb == 2 {
			shape = append(shape, bs0[1])
		}
		return d.reshape(r, shape)
	}
	var a2, b2 val = a, b
	if na == 1 {
		a2 = d.view(a, []sym{one, k})
	}
	if nb == 1 {
		b2 = d.view(b, []sym{k, one})
	}
	as, bs := sizesOf(a2), sizesOf(b2)
	m, n := as[len(as)-2], bs[len(bs)-1]
	batch, err := primtorch.SymBroadcastShapes(as[:len(as)-2], bs[:len(bs)-2])
	if err != nil {
		bug("matmul batch dims do not broadcast: %v", err)
	}
	nbatch := prodSyms(batch)
	A := d.batchMatrices(d.expand(a2, append(append([]sym{}, batch...), m, k)), nbatch)
	B := d.batchMatrices(d.expand(b2, append(append([]sym{}, batch...), k, n)), nbatch)
	r := d.prim("bmm", A, B)
	shape := append([]sym{}, batch...)
	if na > 1 {
		shape = append(shape, m)
	}
	if nb > 1 {
		shape = append(shape, n)
	}
	return d.reshape(r, shape)
}

func (d *decomposer) batchMatrices(x val, nbatch sym) val {
	m := metaOf(x)
	nd := len(m.Shape)
	ms := m.SymSizes()
	r, c := ms[nd-2], ms[nd-1]
	shape := []sym{nbatch, r, c}
	if viewable(x, shape) || m.Shape[nd-2] <= 1 || m.Shape[nd-1] <= 1 || m.Strides[nd-2] != 1 || m.Strides[nd-1] < m.Shape[nd-2] {
		return d.reshape(x, shape)
	}
	return d.transpose(d.reshape(d.transpose(x, nd-2, nd-1), []sym{nbatch, c, r}), 1, 2)
}

// dOuter is self[:, None] * vec2[None, :].
func dOuter(c *ctx) (any, error) {
	d := c.d
	a, b := c.selfNode(), asNode(c.in("vec2"))
	one := primtorch.SymConst(1)
	av := d.view(a, []sym{numelOf(a), one})
	bv := d.view(b, []sym{one, numelOf(b)})
	return d.ew(primtorch.PromoteDefault, func(v []val) val { return d.mul(v[0], v[1]) }, av, bv), nil
}

// dAddmm is addmm, addmv, baddbmm and addbmm: beta*self + alpha*product (self ignored when
// beta is 0); prims.addmm when beta and alpha are 1.
func dAddmm(c *ctx) (any, error) {
	d := c.d
	self := c.selfNode()
	beta, alpha := c.get("beta"), c.get("alpha")
	var p *fxgraph.Node
	switch c.op.Schema.Name {
	case "addmm", "addmm_":
		x, y := c.in("mat1"), c.in("mat2")
		if isOne(beta) && isOne(alpha) {
			return d.prim("addmm", self, x, y), nil
		}
		p = d.prim("mm", x, y)
	case "addmv":
		mat, vec := asNode(c.in("mat")), asNode(c.in("vec"))
		p = d.matmul(mat, vec)
	case "baddbmm", "baddbmm_":
		p = d.prim("bmm", c.in("batch1"), c.in("batch2"))
	case "addbmm":
		p = asNode(d.reduce("sum", d.prim("bmm", c.in("batch1"), c.in("batch2")), []int{0}, false))
	default:
		bug("dAddmm of %s", c.op.Name)
	}
	shape := sizesOf(p)
	dt := metaOf(p).DType
	var r val = p
	if !isOne(alpha) {
		r = d.mulScalar(r, alpha)
	}
	if asFloat(beta) != 0 {
		s := d.expand(d.convert(self, dt), shape)
		if !isOne(beta) {
			s = d.mulScalar(s, beta)
		}
		r = d.add(s, r)
	}
	return r, nil
}

// dLinear is x @ weight.T + bias over x's rows folded into one matrix: prims.addmm with a bias,
// prims.mm without.
func dLinear(c *ctx) (any, error) {
	d := c.d
	x, w := c.selfNode(), asNode(c.in("weight"))
	b := c.in("bias")
	xm, wm := metaOf(x), metaOf(w)
	out := c.outMeta().SymSizes()
	if len(wm.Shape) == 1 {
		r := d.matmul(x, w)
		if b != nil {
			return d.ew(primtorch.PromoteDefault, func(v []val) val { return d.add(v[0], v[1]) }, r, b), nil
		}
		return r, nil
	}
	xs := xm.SymSizes()
	k := wm.SymSizes()[1]
	rows := prodSyms(xs[:len(xs)-1])
	x2 := d.reshape(x, []sym{rows, k})
	wt := d.transpose(w, 0, 1)
	var r *fxgraph.Node
	if b != nil {
		r = d.prim("addmm", b, x2, wt)
	} else {
		r = d.prim("mm", x2, wt)
	}
	return d.reshape(r, out), nil
}

// dBilinear is sum_ij x1_i W_oij x2_j + b_o: one mm of x1 with W laid out [i, o*j], then a
// product with x2 summed over j.
func dBilinear(c *ctx) (any, error) {
	d := c.d
	x1, x2, w := asNode(c.in("input1")), asNode(c.in("input2")), asNode(c.in("weight"))
	wm := metaOf(w)
	o, i, j := wm.Shape[0], wm.Shape[1], wm.Shape[2]
	bsz := metaOf(x1).Numel() / max(i, 1)
	x1f := d.reshape(x1, []int64{bsz, i})
	x2f := d.reshape(x2, []int64{bsz, j})
	wp := d.reshape(d.permute(w, []int64{1, 0, 2}), []int64{i, o * j})
	t := d.view(d.prim("mm", x1f, wp), []int64{bsz, o, j})
	p := d.mul(t, d.expand(d.view(x2f, []int64{bsz, 1, j}), []int64{bsz, o, j}))
	y := d.reduce("sum", p, []int{2}, false)
	if b := c.in("bias"); b != nil {
		y = d.add(y, d.expand(b, []int64{bsz, o}))
	}
	return d.reshape(y, c.outMeta().Shape), nil
}

// expandK repeats a one-element list to k entries.
func expandK(v []int64, k int) []int64 {
	if len(v) == 1 && k > 1 {
		out := make([]int64, k)
		for i := range out {
			out[i] = v[0]
		}
		return out
	}
	return append([]int64{}, v...)
}

// dConv is conv1d/2d/3d and conv_transpose1d/2d/3d as prims.convolution (an unbatched input is
// unsqueezed; padding="same" with an odd total padding falls back, torch pads it unevenly).
func dConv(k int, transposed bool) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x, w := c.selfNode(), asNode(c.in("weight"))
		unbatched := len(metaOf(x).Shape) == k+1
		var xb val = x
		if unbatched {
			xb = d.unsqueeze(x, 0)
		}
		stride, dilation := expandK(c.ints("stride"), k), expandK(c.ints("dilation"), k)
		var padding []int64
		switch p := c.get("padding").(type) {
		case string:
			padding = make([]int64, k)
			if p == "same" {
				for i := range padding {
					total := dilation[i] * (metaOf(w).Shape[2+i] - 1)
					if total%2 != 0 {
						return nil, errFallback
					}
					padding[i] = total / 2
				}
			}
		case []int64:
			padding = expandK(p, k)
		}
		outPad := make([]int64, k)
		if transposed {
			outPad = expandK(c.ints("output_padding"), k)
		}
		if !transposed && !unbatched {
			if r, ok := d.pointwiseConvBiasApart(x, w, c.in("bias"), stride, padding, dilation, c.int("groups"), c.outMeta()); ok {
				return r, nil
			}
		}
		r := d.prim("convolution", xb, w, c.in("bias"), stride, padding, dilation, transposed, outPad, c.int("groups"))
		if unbatched {
			return d.squeeze(r, 0), nil
		}
		return r, nil
	}
}

// pointwiseConvBiasApart is a pointwise convolution (every kernel size 1, stride 1, no padding,
// one group) of one contiguous image that nothing differentiates, with a bias: the convolution
// without it plus the bias broadcast over the positions, which fuses with the convolution's
// consumers. At one thread the runtime runs such a convolution as one matrix product W[Co, Ci] ·
// x[Ci, H·W] (pybridge/fast/ptgo_runtime.cpp, run_pointwise), which torch's CPU convolution
// computes too there (its slow_conv2d path: the bias copied into the output, then the same gemm
// with beta = 1), less the copy and the call's overhead (A223); at more threads it stays torch's
// convolution (oneDNN). ok=false for any other call, which keeps its bias.
func (d *decomposer) pointwiseConvBiasApart(x, w *fxgraph.Node, b val, stride, padding, dilation []int64, groups int64, out *primtorch.TensorMeta) (val, bool) {
	xm, wm := metaOf(x), metaOf(w)
	if b == nil || d.rg || groups != 1 || out == nil || !symContiguous(out) || !symContiguous(xm) || xm.DType != wm.DType ||
		(xm.DType != primtorch.Float32 && xm.DType != primtorch.Float64) || len(wm.Shape) != len(xm.Shape) {
		return nil, false
	}
	if bm := metaOf(b); bm == nil || bm.DType != xm.DType {
		return nil, false
	}
	if n, static := xm.SymSizes()[0].IsConst(); !static || n != 1 {
		return nil, false
	}
	for i := range stride {
		if stride[i] != 1 || padding[i] != 0 || wm.Shape[2+i] != 1 {
			return nil, false
		}
	}
	k := len(stride)
	r := d.prim("convolution", x, w, nil, stride, padding, dilation, false, make([]int64, k), groups)
	bshape := make([]int64, k+1)
	bshape[0] = wm.Shape[0]
	for i := 1; i <= k; i++ {
		bshape[i] = 1
	}
	return d.add(r, d.expand(d.reshape(b, bshape), out.SymSizes())), true
}

// dAdaptiveAvgPool is a mean over windows when every output size divides its input size
// (output size 1: a mean over the whole spatial dims); other sizes fall back.
func dAdaptiveAvgPool(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	out := c.outMeta().Shape
	nsp := 1
	if c.op.ID == primtorch.OpAdaptiveAvgPool2d {
		nsp = 2
	}
	lead := len(m.Shape) - nsp
	var shape []sym
	var dims []int
	shape = append(shape, m.SymSizes()[:lead]...) // (the batch may be symbolic)
	for i := 0; i < nsp; i++ {
		in, o := m.Shape[lead+i], out[lead+i]
		if o == 1 { // a mean over the whole dim, symbolic or not (globalPoolSymbolic)
			shape = append(shape, primtorch.SymConst(1), m.SymSizes()[lead+i])
			dims = append(dims, lead+2*i+1)
			continue
		}
		if _, cst := m.SymSizes()[lead+i].IsConst(); !cst || o == 0 || in%o != 0 {
			return nil, errFallback // (a symbolic size's windows are torch's kernel's)
		}
		shape = append(shape, syms(o, in/o)...)
		dims = append(dims, lead+2*i+1)
	}
	y := d.mean(d.reshape(x, shape), dims, false, m.DType)
	return d.reshape(y, c.outMeta().SymSizes()), nil
}
