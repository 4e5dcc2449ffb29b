package decomp

import (
	"math"
	"slices"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Normalizations (statistics in float32 for float16/bfloat16 inputs, biased variance, rsqrt of
// var + eps) and dropout.

// affine applies weight and bias (broadcast to shape, nil when absent) in dtype cdt.
func (d *decomposer) affine(y val, w, b val, shape []sym, cdt primtorch.DType) val {
	if w != nil {
		y = d.mul(y, d.expand(d.convert(w, cdt), shape))
	}
	if b != nil {
		y = d.add(y, d.expand(d.convert(b, cdt), shape))
	}
	return y
}

// normalize returns (x - mean) * rsqrt(var + eps) with mean and var over dims (kept), and the
// mean and biased variance (kept dims).
func (d *decomposer) normalize(xc val, dims []int, eps float64) (y, mean, variance val) {
	diff, mean, variance, rstd := d.moments(xc, dims, eps, false)
	return d.mul(diff, d.expand(rstd, sizesOf(xc))), mean, variance
}

// moments returns x - mean, the mean and biased variance over dims (kept) and rsqrt(var + eps).
// overflowNaN adds mean²·0 to the variance: torch's moments (a Welford cascade) start from a
// chunk whose mean they square with weight 0, so where that square overflows the variance is
// NaN (a LayerNorm over one element of magnitude > 1.8e19 is NaN in eager); +0 otherwise.
func (d *decomposer) moments(xc val, dims []int, eps float64, overflowNaN bool) (diff, mean, variance, rstd val) {
	return d.momentsIn(xc, dims, eps, overflowNaN, metaOf(xc).DType)
}

// momentsIn is moments with both sums, the mean's division and rstd taken in acc and each
// result rounded once to x's dtype (batch_norm's CPU kernel accumulates in float64:
// batchMoments); with acc x's dtype it is moments.
func (d *decomposer) momentsIn(xc val, dims []int, eps float64, overflowNaN bool, acc primtorch.DType) (diff, mean, variance, rstd val) {
	shape := sizesOf(xc)
	dt := metaOf(xc).DType
	n := divisor(symNumelOver(shape, dims))
	mean = d.convert(d.div(d.reduce("sum", d.convert(xc, acc), dims, true), n), dt)
	diff = d.sub(xc, d.expand(mean, shape))
	v := d.div(d.reduce("sum", d.convert(d.mul(diff, diff), acc), dims, true), n)
	if overflowNaN {
		v = d.add(v, d.mul(d.mul(mean, mean), 0.0))
	}
	rstd = d.convert(d.un("rsqrt", d.add(v, eps)), dt)
	return diff, mean, d.convert(v, dt), rstd
}

func dLayerNorm(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	k := len(c.ints("normalized_shape"))
	dims := allDims(len(m.Shape))[len(m.Shape)-k:]
	cdt := opmath(m.DType)
	if cdt != m.DType && !primtorch.Behavior().LayerNormReducedFloatOpmath {
		return nil, errFallback
	}
	w, b := c.in("weight"), c.in("bias")
	if cdt != m.DType || !primtorch.KernelsFuseMultiplyAdd() {
		y, _, _ := d.normalize(d.convert(x, cdt), dims, c.float("eps"))
		y = d.affine(y, w, b, m.SymSizes(), cdt)
		return d.convert(y, m.DType), nil
	}
	// float32/float64 with torch's fused multiply-adds (the ways its kernel writes them, found by
	// replaying native_layer_norm's own mean and rstd): 1.13 computes x·rstd + (−mean·rstd),
	// 2.14 (x − mean)·rstd, and both (·)·weight + bias, each as one fma. A LayerNorm over one
	// element is then eager's tiny rounding residue where (x − mean)·rstd gives 0.
	shape := m.SymSizes()
	diff, mean, _, rstd := d.moments(x, dims, c.float("eps"), true)
	var y val
	if primtorch.Behavior().LayerNormScaleShiftFMA {
		y = d.prim("fma", x, d.expand(rstd, shape), d.expand(d.un("neg", d.mul(mean, rstd)), shape))
	} else {
		y = d.mul(diff, d.expand(rstd, shape))
	}
	switch {
	case w != nil && b != nil:
		y = d.prim("fma", y, d.expand(d.convert(w, cdt), shape), d.expand(d.convert(b, cdt), shape))
	default:
		y = d.affine(y, w, b, shape, cdt)
	}
	return y, nil
}

// channelShape is [C, 1, ..., 1] for broadcasting per-channel values over an [N, C, *] tensor.
func channelShape(m *primtorch.TensorMeta) []sym {
	s := syms(make([]int64, len(m.Shape)-1)...)
	for i := range s {
		s[i] = primtorch.SymConst(1)
	}
	s[0] = m.SymSizes()[1]
	return s
}

// perChannel views a [C] tensor as [C, 1, ..., 1] (nil stays nil).
func (d *decomposer) perChannel(v val, m *primtorch.TensorMeta) val {
	if v == nil {
		return nil
	}
	return d.reshape(v, channelShape(m))
}

func dGroupNorm(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	g := c.int("num_groups")
	ms := m.SymSizes()
	n := ms[0]
	cdt := opmath(m.DType)
	// [N, G, C/G * spatial]: C/G is exact (group_norm's meta checked, or specialised, C)
	cg, ok := ms[1].DivExact(primtorch.SymConst(g))
	if !ok {
		cg = primtorch.SymConst(ms[1].Specialize("group_norm groups") / g)
	}
	size := cg.Mul(prodSyms(ms[2:]))
	if k, static := size.IsConst(); static && k == 0 && c.in("weight") != nil {
		// groups of no element (1.13; 2.14's meta refuses them): torch's backward gives the
		// weight a NaN gradient (its mean of nothing times a zero sum), the decomposition's
		// empty sum would be 0 (fuzz seed 27847): the call stays torch's
		return nil, errFallback
	}
	grouped := d.reshape(d.convert(x, cdt), []sym{n, primtorch.SymConst(g), size})
	// torch's group_norm takes each group's moments with a Welford cascade (RowwiseMoments):
	// in 1.13 a group whose mean squared overflows is NaN in eager (fuzz seeds 3319, 4050: a
	// 1e30 in a float32 group), not (x - mean)·0; in 2.14 a group of fewer than 8 elements is
	// (Behavior().GroupNormOverflowNaN, GroupNormSmallGroupNaN)
	b := primtorch.Behavior()
	overflowNaN := b.GroupNormOverflowNaN
	if k, static := size.IsConst(); static && k < b.GroupNormSmallGroupNaN {
		overflowNaN = true
	}
	diff, _, _, rstd := d.moments(grouped, []int{2}, c.float("eps"), overflowNaN)
	y := d.mul(diff, d.expand(rstd, sizesOf(grouped)))
	out := d.reshape(y, ms)
	out = asNode(d.affine(out, d.perChannel(c.in("weight"), m), d.perChannel(c.in("bias"), m), ms, cdt))
	return d.convert(out, m.DType), nil
}

// dBatchNorm normalizes over every dim but channels (dim 1): with the batch's statistics in
// training (updating running_mean/var when given: momentum-weighted, the variance unbiased),
// with the running statistics otherwise.
func dBatchNorm(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	cdt := opmath(m.DType)
	xc := d.convert(x, cdt)
	eps := c.float("eps")
	var dims []int
	for k := range m.Shape {
		if k != 1 {
			dims = append(dims, k)
		}
	}
	if m.Numel() == 0 { // (a size symbol is at least 2: only a static 0 empties a tensor)
		// torch's batch_norm of an empty input returns a copy and leaves the running
		// statistics alone (fuzz seed 956: the mean of nothing made them NaN); with a weight
		// or a bias the copy is multiplied by weight[0] and added bias[0] (their dtypes and
		// their gradients, zeros, are eager's): torch's call does that (fuzz seed 9090)
		if c.in("weight") != nil || c.in("bias") != nil {
			return nil, errFallback
		}
		return d.convert(d.prim("clone", x), c.outMeta().DType), nil
	}
	training := c.bool("training")
	rm, rv := c.in("running_mean"), c.in("running_var")
	// eager's own scale-shift form where nothing is differentiated: its gradient would take
	// Σg·(x − mean) as Σg·x − mean·Σg, which cancels where the mean is large against the spread
	fused := batchNormScaleShift(m) && !d.rg
	var y val
	if training || rm == nil {
		var mean, variance, rstd val
		if fused {
			mean, variance, rstd = d.batchMoments(xc, dims, eps)
			y = d.scaleShift(xc, mean, rstd, c.in("weight"), c.in("bias"), m, cdt)
		} else {
			y, mean, variance = d.normalize(xc, dims, eps)
		}
		if training && rm != nil {
			// the unbiased factor n/(n-1), a float of the element count (a 0-d tensor of it when
			// the count is symbolic: at least 2, so n - 1 >= 1)
			n := symNumelOver(m.SymSizes(), dims)
			mom := c.float("momentum")
			ch := []sym{m.SymSizes()[1]}
			if err := d.updateRunning(c, "running_mean", d.view(mean, ch), mom, 1.0); err != nil {
				return nil, err
			}
			if rv != nil {
				if err := d.updateRunning(c, "running_var", d.view(variance, ch), mom, d.unbiasFactor(n)); err != nil {
					return nil, err
				}
			}
		}
	} else {
		mean := d.perChannel(d.convert(rm, cdt), m)
		rstd := d.un("rsqrt", d.add(d.perChannel(d.convert(rv, cdt), m), eps))
		if fused {
			y = d.scaleShift(xc, mean, rstd, c.in("weight"), c.in("bias"), m, cdt)
		} else {
			y = d.mul(d.sub(xc, d.expand(mean, m.SymSizes())), d.expand(rstd, m.SymSizes()))
		}
	}
	if fused {
		return d.convert(y, m.DType), nil
	}
	y = d.affine(y, d.perChannel(c.in("weight"), m), d.perChannel(c.in("bias"), m), m.SymSizes(), cdt)
	return d.convert(d.zeroBias(y, c.in("bias")), m.DType), nil
}

// zeroBias is y + 0 where a batch or instance norm has no bias: torch's kernels add a bias of
// 0 then, which makes an input's −0 +0 (fuzz seed 37831: a later atan2 gave −π for π).
func (d *decomposer) zeroBias(y, bias val) val {
	if bias != nil {
		return y
	}
	return d.add(y, 0.0)
}

// batchNormScaleShift reports whether torch's batch_norm kernel applies the statistics to a
// floating-point input m as one scale and shift per channel (in float32 for bfloat16 and
// float16), fma(x, α, β) with α = rstd·weight and β = fma(−mean, α, bias): its contiguous and channels-last paths (and channels-last-3d's
// on 2.14: Behavior().BatchNormChannelsLast3dFMA) where its kernels fuse multiply-adds. Other
// layouts compute ((x − mean)·rstd)·weight + bias. The forms differ in the last bit, and where
// x is its channel's mean (a constant channel) eager's result is the rounding residue of
// the scale and shift, not 0 (fuzz seed 14413: a later `!= 0` read it).
func batchNormScaleShift(m *primtorch.TensorMeta) bool {
	if !m.DType.IsFloatingPoint() || m.DType.IsComplex() || !primtorch.KernelsFuseMultiplyAdd() {
		return false
	}
	switch {
	case m.IsContiguous():
		return true
	case len(m.Shape) == 4:
		return m.IsContiguousAs(primtorch.ChannelsLast)
	case len(m.Shape) == 5 && primtorch.Behavior().BatchNormChannelsLast3dFMA:
		return m.IsContiguousAs(primtorch.ChannelsLast3d)
	}
	return false
}

// batchMoments are batch_norm's batch statistics as torch's CPU kernel computes them (kept
// dims): the mean is the float64 sum over n, rounded once; the variance the float64 sum of the
// squared float differences over n; rstd = 1/sqrt(variance + eps) in float64, rounded once. The
// scale-shift form's result where x is its channel's mean is the rounding residue of rstd·x,
// so rstd must be eager's bits (fuzz seed 14413).
func (d *decomposer) batchMoments(xc val, dims []int, eps float64) (mean, variance, rstd val) {
	_, mean, variance, rstd = d.momentsIn(xc, dims, eps, false, primtorch.Float64)
	return mean, variance, rstd
}

// scaleShift is batch_norm's fused application of per-channel mean and rstd ([C, 1, ...]) to x:
// fma(x, α, β), α = rstd·weight, β = fma(−mean, α, bias) (−mean·α without a bias).
func (d *decomposer) scaleShift(x, mean, rstd, w, b val, m *primtorch.TensorMeta, cdt primtorch.DType) val {
	alpha := rstd
	cs := sizesOf(rstd) // [1, C, 1, ...] (batch statistics) or [C, 1, ...] (running ones)
	if w != nil {
		alpha = d.mul(rstd, d.expand(d.perChannel(d.convert(w, cdt), m), cs))
	}
	var beta val
	if b != nil {
		beta = d.prim("fma", d.un("neg", mean), alpha, d.expand(d.perChannel(d.convert(b, cdt), m), cs))
	} else {
		// torch's kernel takes a missing bias as 0: β = 0 − mean·α, +0 where the mean is 0
		// (−(mean·α) would keep an input's −0: fuzz seed 37831)
		beta = d.sub(0.0, d.mul(mean, alpha))
	}
	shape := m.SymSizes()
	return d.prim("fma", x, d.expand(alpha, shape), d.expand(beta, shape))
}

// updateRunning writes (1 - momentum)*running + momentum*scale*stat into running statistic
// name (a buffer, usually a get_attr).
func (d *decomposer) updateRunning(c *ctx, name string, stat val, momentum float64, scale val) error {
	s := c.state(name)
	cur := d.read(s)
	dt := metaOf(cur).DType
	cdt := opmath(dt)
	st := d.convert(stat, cdt)
	if k, isNum := scale.(float64); !isNum || k != 1 {
		st = d.mul(st, d.operandLike(scale, st))
	}
	nv := d.add(d.mul(d.convert(cur, cdt), 1-momentum), d.mul(st, momentum))
	// torch's kernels write the statistics through their data pointers: no version bump
	d.unversioned = true
	defer func() { d.unversioned = false }()
	return d.write(s, asNode(d.convert(nv, dt)), false)
}

// dInstanceNorm normalizes each (sample, channel) over the spatial dims with its own
// statistics (use_input_stats, updating running stats with their batch mean) or with the
// running statistics.
func dInstanceNorm(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	cdt := opmath(m.DType)
	xc := d.convert(x, cdt)
	eps := c.float("eps")
	rm, rv := c.in("running_mean"), c.in("running_var")
	var y val
	if c.bool("use_input_stats") {
		dims := allDims(len(m.Shape))[2:]
		var mean, variance val
		y, mean, variance = d.normalize(xc, dims, eps)
		if rm != nil {
			mom := c.float("momentum")
			nc := m.SymSizes()[:2]
			bm := d.mean(d.view(mean, nc), []int{0}, false, cdt)
			if err := d.updateRunning(c, "running_mean", bm, mom, 1.0); err != nil {
				return nil, err
			}
			if rv != nil {
				n := symNumelOver(m.SymSizes(), dims)
				bv := d.mean(d.view(variance, nc), []int{0}, false, cdt)
				if err := d.updateRunning(c, "running_var", bv, mom, d.unbiasFactor(n)); err != nil {
					return nil, err
				}
			}
		}
	} else {
		mean := d.expand(d.perChannel(d.convert(rm, cdt), m), m.SymSizes())
		rstd := d.un("rsqrt", d.add(d.perChannel(d.convert(rv, cdt), m), eps))
		y = d.mul(d.sub(xc, mean), d.expand(rstd, m.SymSizes()))
	}
	y = d.affine(y, d.perChannel(c.in("weight"), m), d.perChannel(c.in("bias"), m), m.SymSizes(), cdt)
	return d.convert(d.zeroBias(y, c.in("bias")), m.DType), nil
}

// dDropout is the identity (torch returns its input) unless it drops in training. Then plain
// dropout is torch's CPU dropout (aten's _dropout_impl): noise = bernoulli(1 - p) / (1 - p)
// over a contiguous tensor of x's size, then x · noise. The noise stays torch's, so the random
// stream is eager's: it is torch.dropout of a contiguous tensor of ones (1 · noise is the noise
// exactly, drawn as dropout draws it), and the product is ptgo's, fused with its neighbours and
// differentiated as a product (the gradient is g · noise). The ones are laid out as
// torch.ones_like(x) (noiseOrder). p = 1 (no draw), layouts static strides do not order and
// non-float inputs stay torch's dropout, and so do the feature and alpha variants in training (their
// noise has x's batch and channel dims only, or a mask plus an offset): a call that stays a
// fallback draws from torch's generator as eager does.
func dDropout(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	p := c.float("p")
	m := metaOf(x)
	if !c.bool("train") || p == 0 || m.Numel() == 0 {
		return x, nil
	}
	fn := c.op
	if fn.Functional != nil {
		fn = fn.Functional
	}
	if fn.ID != primtorch.OpDropout {
		return nil, errFallback
	}
	if y, ok := d.dropout(x, p); ok {
		return y, nil
	}
	return nil, errFallback
}

// dropout is x times torch's CPU dropout noise (dDropout; also scaled_dot_product_attention's
// dropout of its attention weights, at::dropout in torch's math kernel); ok=false where the
// noise stays torch's dropout (p = 1, layouts static strides do not order, non-float x).
func (d *decomposer) dropout(x val, p float64) (val, bool) {
	m := metaOf(x)
	order, ok := noiseOrder(m)
	if p >= 1 || !m.DType.IsFloatingPoint() || !ok {
		return nil, false
	}
	sizes := sizesOf(x)
	if drawsBernoulli(m) {
		// ptgo draws the mask as eager draws it (A135), in the order eager draws it: x's
		// layout (torch 2) or row-major (1.13); the noise is 1/(1-p) where it is set, the
		// quotient eager's div_ computes in x's dtype
		if !primtorch.Behavior().DropoutNoiseInInputLayout {
			for k := range order {
				order[k] = int64(k)
			}
		}
		scale := 1 / (1 - p)
		if m.DType == primtorch.Float32 {
			scale = float64(float32(1) / float32(1-p))
		}
		noise := d.mul(d.bernoulliDraw(sizes, order, 1-p, m), scale)
		return d.mul(x, noise), true
	}
	permuted, inv := permuteSizes(sizes, order)
	ones := asNode(d.permute(d.prim("full", permuted, 1.0, m.DType), inv))
	nm := metaOf(ones).Clone()
	nm.RequiresGrad = false
	noise := d.g.AddCall("prims.fallback", []fxgraph.Arg{fxgraph.Const{V: "torch.dropout"}, ones, fxgraph.Const{V: p}, fxgraph.Const{V: true}}, nil, nm)
	noise.Where = d.cur.Where
	return d.mul(x, noise), true
}

// drawsBernoulli says whether ptgo draws torch's CPU bernoulli_(q) of a tensor like m itself
// (bernoulliDraw): where the start-up probe found eager's dropout drawing as ptgo does (dropout
// is bernoulli_(1 − p) of a fresh tensor: one kernel, so one probe serves both), for float32 and
// float64.
func drawsBernoulli(m *primtorch.TensorMeta) bool {
	return primtorch.DropoutDrawsMT19937() && (m.DType == primtorch.Float32 || m.DType == primtorch.Float64)
}

// bernoulliDraw is what torch's CPU bernoulli_(q) writes into a tensor of m's dtype and the
// given sizes whose elements it visits in the order of dims order (outermost first): a
// contiguous mask over the permuted sizes, ptgo's draw of eager's stream
// (primtorch.BernoulliMaskTarget), permuted back and converted.
func (d *decomposer) bernoulliDraw(sizes []sym, order []int64, q float64, m *primtorch.TensorMeta) val {
	permuted, inv := permuteSizes(sizes, order)
	sizeArg, _ := toArg(permuted)
	mask := d.g.AddCall("prims.fallback", []fxgraph.Arg{fxgraph.Const{V: primtorch.BernoulliMaskTarget},
		sizeArg, fxgraph.Const{V: q}}, nil, primtorch.NewSymContiguous(primtorch.Bool, permuted, m.Device))
	mask.Where = d.cur.Where
	return d.convert(d.permute(mask, inv), m.DType)
}

// permuteSizes is sizes in the order of dims order, and the permutation that takes a tensor of
// those sizes back to sizes' order.
func permuteSizes(sizes []sym, order []int64) ([]sym, []int64) {
	permuted := make([]sym, len(order))
	inv := make([]int64, len(order))
	for k, dim := range order {
		permuted[k] = sizes[dim]
		inv[dim] = int64(k)
	}
	return permuted, inv
}

// dBernoulliInplace is self.bernoulli_(p) with a float p: torch's CPU kernel visits self's
// elements in memory order (probed on 1.13 and 2.14: transposed, sliced and channels-last
// tensors), drawing each as dropout's mask does. A tensor p, a generator argument, a self that
// requires grad (torch's BernoulliBackward), other dtypes or layouts whose strides do not order
// the dims stay torch's call.
func dBernoulliInplace(c *ctx) (any, error) {
	d := c.d
	p, isFloat := c.a.Get("p").(float64)
	if !isFloat || c.a.Get("generator") != nil {
		return nil, errFallback
	}
	s := c.state("self")
	cur := d.read(s)
	m := metaOf(cur)
	order, ok := noiseOrder(m)
	if !ok || m.RequiresGrad || !drawsBernoulli(m) {
		return nil, errFallback
	}
	if err := d.write(s, asNode(d.bernoulliDraw(sizesOf(cur), order, p, m)), false); err != nil {
		return nil, err
	}
	c.done = true
	d.env[c.n] = s
	return nil, nil
}

// noiseOrder is the order of x's dims, outermost first, of the tensor of ones whose dropout
// draws what eager's dropout of x draws: torch.ones_like(x), dense in x's stride order (probed on
// torch 1.13 and 2.14 for transposed, permuted, sliced, expanded and channels-last inputs: 1.13
// draws contiguous noise and 2.x noise in the input's layout, and dropout of ones_like(x) equals
// both bit for bit). Symbolic strides are ordered at their hints under guards (SymInt.GtHint).
// ok=false where the strides do not decide the order (a dim of size > 1 with stride 0, two with
// one stride).
func noiseOrder(m *primtorch.TensorMeta) ([]int64, bool) {
	order := make([]int64, len(m.Shape))
	for i := range order {
		order[i] = int64(i)
	}
	if symContiguous(m) {
		return order, true
	}
	sizes, strides := m.SymSizes(), m.SymStrides()
	one := make([]bool, len(sizes)) // a dim of size 1 goes anywhere: innermost
	for i, st := range strides {
		n, staticSize := sizes[i].IsConst()
		one[i] = staticSize && n == 1
		if k, static := st.IsConst(); !one[i] && static && k == 0 {
			return nil, false // torch orders a dim of stride 0 by where it stands: not followed here
		}
	}
	outer := func(a, b int64) bool { // a goes outside b
		if one[a] || one[b] {
			return !one[a] && one[b]
		}
		return strides[a].GtHint(strides[b])
	}
	slices.SortStableFunc(order, func(a, b int64) int {
		switch {
		case outer(a, b):
			return -1
		case outer(b, a):
			return 1
		}
		return 0
	})
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if !one[a] && !one[b] && !outer(a, b) {
			return nil, false // two dims with one stride
		}
	}
	return order, true
}

// symContiguous reports whether m is row-major contiguous for every value of its symbols.
func symContiguous(m *primtorch.TensorMeta) bool {
	sizes := m.SymSizes()
	want := primtorch.SymContiguousStrides(sizes)
	for i, st := range m.SymStrides() {
		if k, static := sizes[i].IsConst(); !(static && k == 1) && !st.Equal(want[i]) {
			return false
		}
	}
	return true
}

// poolInts reads an int[k] pooling argument (an int stands for k equal ones); ok=false for
// anything else.
func poolInts(v any, k int) ([]int64, bool) {
	switch x := v.(type) {
	case int64:
		out := make([]int64, k)
		for i := range out {
			out[i] = x
		}
		return out, true
	case []int64:
		if len(x) == 1 {
			return poolInts(x[0], k)
		}
		return x, len(x) == k
	case []primtorch.Value:
		out := make([]int64, len(x))
		for i, e := range x {
			n, ok := e.(int64)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		if len(out) == 1 {
			return poolInts(out[0], k)
		}
		return out, len(out) == k
	}
	return nil, false
}

// poolWindows reads a 2-d pooling call's input (a float tensor of 3 or 4 dims) and its
// kernel_size, stride (none or empty: the kernel) and padding, each as two ints; ok=false for
// anything else (the call stays torch's).
func poolWindows(c *ctx) (x *fxgraph.Node, m *primtorch.TensorMeta, kernel, stride, padding []int64, ok bool) {
	x = c.selfNode()
	m = metaOf(x)
	if nd := len(m.Shape); !m.DType.IsFloatingPoint() || (nd != 3 && nd != 4) {
		return nil, nil, nil, nil, nil, false
	}
	if kernel, ok = poolInts(c.get("kernel_size"), 2); !ok || len(kernel) != 2 {
		return nil, nil, nil, nil, nil, false
	}
	stride, padding = kernel, []int64{0, 0}
	if c.has("stride") && c.get("stride") != nil {
		s, ok := poolInts(c.get("stride"), 2)
		if !ok || len(s) != 0 && len(s) != 2 {
			return nil, nil, nil, nil, nil, false
		}
		if len(s) == 2 {
			stride = s
		}
	}
	if c.has("padding") {
		if padding, ok = poolInts(c.get("padding"), 2); !ok || len(padding) != 2 {
			return nil, nil, nil, nil, nil, false
		}
	}
	return x, m, kernel, stride, padding, true
}

// dMaxPool2d: windows that tile the input (stride = kernel, no padding, dilation 1) are a view
// [..., Ho, kh, Wo, kw] of the input and an amax over the window dims, which the C backend fuses
// with what produces the input (a BatchNorm/ReLU epilogue): one pass instead of torch's
// max_pool2d_with_indices. amax keeps max_pool2d's semantics: NaN propagates, and of equal
// values (signed zeros) the first in the window, in row-major order, wins. Other configurations
// (overlapping or padded windows, ceil_mode with a partial window, indices) stay fallbacks.
// A result that requires grad is maxPoolGather's (or torch's kernel): amax's gradient is shared
// among tied maxima, torch's max_pool2d gives it all to the one its index picks.
func dMaxPool2d(c *ctx) (any, error) {
	d := c.d
	if c.has("return_indices") && c.bool("return_indices") {
		return nil, errFallback
	}
	x, m, kernel, stride, padding, ok := poolWindows(c)
	if !ok {
		return nil, errFallback
	}
	nd := len(m.Shape)
	dilation := []int64{1, 1}
	if c.has("dilation") {
		if dilation, ok = poolInts(c.get("dilation"), 2); !ok {
			return nil, errFallback
		}
	}
	ceil := c.has("ceil_mode") && c.bool("ceil_mode")
	if d.rg {
		if !ceil && dilation[0] == 1 && dilation[1] == 1 {
			if v, ok := d.maxPoolGather(x, kernel, stride, padding, c.outMeta()); ok {
				return v, nil
			}
		}
		return d.maxPoolTorch(x, c.outMeta(), kernel, stride, padding, dilation, ceil), nil
	}
	h, w := m.Shape[nd-2], m.Shape[nd-1]
	for i, size := range []int64{h, w} {
		// ceil_mode takes a partial last window where size is no multiple of the kernel: torch's
		// kernel then, and for a symbolic size (whose parity the hint does not tell) always
		_, static := m.SymSizes()[nd-2+i].IsConst()
		if stride[i] != kernel[i] || padding[i] != 0 || dilation[i] != 1 || size < kernel[i] || (ceil && (size%kernel[i] != 0 || !static)) {
			if ceil || len(stride) != 2 || len(padding) != 2 || len(dilation) != 2 {
				return nil, errFallback
			}
			return d.maxPoolWindows(x, kernel, stride, padding, dilation, c.outMeta().SymSizes())
		}
	}
	// the output sizes floor(h / kh), floor(w / kw): derived symbols where h, w are symbolic
	// (spatialSymbolic). The rows and columns past the last whole window are sliced off by a
	// slice that stays even when it takes everything (a view: free): whether h is a multiple
	// of kh is then no question, which for symbolic sizes would be a guard per pooled dim and a
	// graph per combination of parities.
	out := c.outMeta().SymSizes()
	ho, wo := out[nd-2], out[nd-1]
	var v val = x
	v = d.prim("slice", v, int64(nd-2), int64(0), primtorch.SymValue(ho.MulConst(kernel[0])), int64(1))
	v = d.prim("slice", v, int64(nd-1), int64(0), primtorch.SymValue(wo.MulConst(kernel[1])), int64(1))
	shape := append(append([]sym{}, m.SymSizes()[:nd-2]...), ho, primtorch.SymConst(kernel[0]), wo, primtorch.SymConst(kernel[1]))
	r := d.reduce("amax", d.reshape(v, shape), []int{nd - 1, nd + 1}, false)
	if !sameSyms(metaOf(r).SymSizes(), out) {
		bug("max_pool2d of %v gives %v, torch %v", m.SymSizes(), metaOf(r).SymSizes(), out)
	}
	return r, nil
}

// maxPoolTorch is max_pool2d in a training graph: torch's max_pool2d_with_indices (a
// prims.fallback of primtorch.FallbackMaxPool2dWithIndices with every argument spelled out)
// and its values (operator.getitem 0), which aotautograd differentiates with torch's
// max_pool2d_with_indices_backward at the indices the forward chose, so the gradient goes to
// the window element torch picks (the first maximum, on ties after a ReLU too; a NaN) rather
// than being shared among ties as amax's is. The indices are saved for the backward as eager
// saves them (recomputing them there ran the pool twice per training step).
func (d *decomposer) maxPoolTorch(x *fxgraph.Node, out *primtorch.TensorMeta, kernel, stride, padding, dilation []int64, ceil bool) *fxgraph.Node {
	args := []fxgraph.Arg{fxgraph.Const{V: primtorch.FallbackMaxPool2dWithIndices}, x}
	for _, l := range [][]int64{kernel, stride, padding, dilation} {
		a, _ := toArg(append([]int64{}, l...))
		args = append(args, a)
	}
	args = append(args, fxgraph.Const{V: ceil})
	idx := out.Clone()
	idx.DType, idx.RequiresGrad = primtorch.Int64, false
	n := d.g.AddCall("prims.fallback", args, nil, []any{out.Clone(), idx})
	n.Where = d.cur.Where
	v := d.g.AddCall("operator.getitem", []fxgraph.Arg{n, fxgraph.Const{V: int64(0)}}, nil, out.Clone())
	v.Where = d.cur.Where
	return v
}

// maxPoolGather is max_pool2d in a training graph, on a contiguous float32/float64 input with
// dilation 1 and ceil_mode off: each window's index as torch's kernel picks it — a chain over
// the window's positions in row-major order that takes a value greater than the maximum so far,
// or NaN (so the last NaN, else the first maximum), starting from the window's first position
// inside the input with −inf (an all −inf window keeps that position; −inf padding is never
// taken) — and the chain's maximum, the value at those indices. The chain fuses with what
// produces the input; the gradient is a gather's at the indices (grad_as), an accumulating index_put of the output's
// gradient into zeros in output order, the sums torch's max_pool2d_with_indices_backward adds.
// ok=false where the chain does not apply (an output without positions, a channels-last or
// strided input: a gather over a non-view would copy it).
func (d *decomposer) maxPoolGather(x *fxgraph.Node, kernel, stride, padding []int64, out *primtorch.TensorMeta) (val, bool) {
	m := metaOf(x)
	nd := len(m.Shape)
	if (m.DType != primtorch.Float32 && m.DType != primtorch.Float64) || !m.IsContiguous() || nd < 3 {
		return nil, false
	}
	os := out.SymSizes()
	ho, wo := os[nd-2], os[nd-1]
	if ho.Hint() <= 0 || wo.Hint() <= 0 || m.Numel() == 0 {
		return nil, false
	}
	is := m.SymSizes()
	plane := []sym{ho, wo}
	one := primtorch.SymConst(1)
	// each output position's window origin, row oh·sH − pH and column ow·sW − pW
	rows := d.expand(d.reshape(d.iota(ho, -padding[0], stride[0], primtorch.Int64), []sym{ho, one}), plane)
	cols := d.expand(d.reshape(d.iota(wo, -padding[1], stride[1], primtorch.Int64), []sym{one, wo}), plane)
	var v val = x
	if padding[0] != 0 || padding[1] != 0 {
		v = d.prim("constant_pad_nd", x, []int64{padding[1], padding[1], padding[0], padding[0]}, math.Inf(-1))
	}
	acc := val(d.full(os, math.Inf(-1), m.DType))
	// the chosen position in the plane, row·W + column, from the window's first inside the input
	width := symNumber(is[nd-1])
	at := func(r, c val) val { return d.expand(d.add(d.mul(r, width), c), os) }
	idx := at(d.bin("maximum", rows, int64(0)), d.bin("maximum", cols, int64(0)))
	for ki := int64(0); ki < kernel[0]; ki++ {
		for kj := int64(0); kj < kernel[1]; kj++ {
			win := d.slice(d.slice(v, nd-2, ki, primtorch.SymValue(ho.AddConst(-1).MulConst(stride[0]).AddConst(ki+1)), stride[0]),
				nd-1, kj, primtorch.SymValue(wo.AddConst(-1).MulConst(stride[1]).AddConst(kj+1)), stride[1])
			if got := metaOf(win).SymSizes(); !sameSyms(got, os) {
				bug("max_pool2d window of %v gives %v, torch %v", is, got, os)
			}
			take := d.prim("logical_or", d.prim("gt", win, acc), d.prim("ne", win, win))
			acc = d.where(take, win, acc)
			idx = d.where(take, at(d.add(rows, ki), d.add(cols, kj)), idx)
		}
	}
	// the values indexed at (row, column): a gather over the flattened plane would need a view
	// that merges the spatial dims, which symbolic sizes do not allow
	r, col := d.prim("floordiv", idx, width), d.prim("remainder", idx, width)
	// every other dim indexed by its own position, so the index's shape is the output's
	indices := make([]any, nd)
	for k := 0; k < nd-2; k++ {
		shape := make([]sym, nd)
		for j := range shape {
			shape[j] = one
		}
		shape[k] = is[k]
		indices[k] = d.reshape(d.iota(is[k], int64(0), int64(1), primtorch.Int64), shape)
	}
	indices[nd-2], indices[nd-1] = r, col
	// The value is the chain's maximum, the element at the chosen position (the same bits:
	// NaN, ±0 and −inf included), computed in the chain's kernel; the gather at the positions
	// only carries the gradient. Gathering the values too cost a second pass over the window
	// with an integer division per element (0.7 ms of a 4.3 ms BatchNorm→ReLU→pool training
	// step at 16×32×32×32).
	return d.withGradient(acc, d.prim("index", x, indices)), true
}

// dAvgPool2d is avg_pool2d. Outside training graphs, on float32 and float64 inputs without
// ceil_mode (spatial sizes specialised, as the meta function does), it is the sum of one
// strided view of the zero-padded input per window position (windowChain, in the window's
// row-major order), divided by the divisor: the order torch's CPU kernel adds in (from 0, so a final + 0.0 gives its +0.0 for a window of
// -0.0s; padded zeros add nothing else), which the C backend fuses with what produces the input
// (densenet's BatchNorm/ReLU before each transition). count_include_pad=False over padding
// (a divisor per position) stays torch's kernel. In a training graph it is torch's kernel (a
// prims.fallback of primtorch.FallbackAvgPool2d with every argument spelled out), which
// aotautograd differentiates with torch's avg_pool2d_backward, the kernel eager autograd runs
// (densenet's transitions and inception's branches used to send the whole training graph to
// torch).
func dAvgPool2d(c *ctx) (any, error) {
	d := c.d
	x, m, kernel, stride, padding, ok := poolWindows(c)
	if !ok {
		return nil, errFallback
	}
	var divisor fxgraph.Arg = fxgraph.Const{V: nil}
	override := int64(0)
	if c.has("divisor_override") && c.get("divisor_override") != nil {
		k, ok := c.get("divisor_override").(int64)
		if !ok || k == 0 {
			return nil, errFallback
		}
		divisor, override = fxgraph.Const{V: k}, k
	}
	ceil := c.has("ceil_mode") && c.bool("ceil_mode")
	countPad := !c.has("count_include_pad") || c.bool("count_include_pad")
	if d.rg {
		args := []fxgraph.Arg{fxgraph.Const{V: primtorch.FallbackAvgPool2d}, x}
		for _, l := range [][]int64{kernel, stride, padding} {
			a, _ := toArg(append([]int64{}, l...))
			args = append(args, a)
		}
		args = append(args, fxgraph.Const{V: ceil}, fxgraph.Const{V: countPad}, divisor)
		n := d.g.AddCall("prims.fallback", args, nil, c.outMeta().Clone())
		n.Where = d.cur.Where
		return n, nil
	}
	padded := padding[0] != 0 || padding[1] != 0
	if ceil || (padded && !countPad && override == 0) || (m.DType != primtorch.Float32 && m.DType != primtorch.Float64) {
		return nil, errFallback
	}
	acc, ok := d.windowChain(x, kernel, stride, padding, []int64{1, 1}, c.outMeta().SymSizes(), 0.0, "add")
	if !ok {
		return nil, errFallback
	}
	div := override
	if div == 0 {
		div = kernel[0] * kernel[1] // without ceil_mode every window lies inside the padded input
	}
	return d.div(d.add(acc, 0.0), float64(div)), nil
}

// maxPoolWindows is max_pool2d over overlapping or padded windows (ceil_mode off): the input
// padded with -inf, one strided view per window position (kh×kw of them) and a maximum chain
// over them, which the C backend fuses into one pass over the output (resnet's 3×3 stride-2 pool
// took torch's max_pool2d_with_indices 8 ms at 224×224, A92). maximum propagates NaN as
// max_pool2d does; padded positions never win.
func (d *decomposer) maxPoolWindows(x *fxgraph.Node, kernel, stride, padding, dilation []int64, out []sym) (any, error) {
	acc, ok := d.windowChain(x, kernel, stride, padding, dilation, out, math.Inf(-1), "maximum")
	if !ok {
		return nil, errFallback
	}
	return acc, nil
}

// windowChain pads x's last two dims with the number pad and combines its kh·kw strided window
// views, in the window's row-major order, with the binary prim op: a 2-d pooling of output
// sizes out (max_pool2d's maximum, avg_pool2d's sum). ok=false for an output without
// positions.
func (d *decomposer) windowChain(x *fxgraph.Node, kernel, stride, padding, dilation []int64, out []sym, pad float64, op string) (val, bool) {
	m := metaOf(x)
	nd := len(m.Shape)
	if len(out) != nd {
		return nil, false
	}
	ho, wo := out[nd-2], out[nd-1] // symbolic where the input's spatial sizes are (spatialSymbolic)
	if ho.Hint() <= 0 || wo.Hint() <= 0 {
		return nil, false
	}
	var v val = x
	if padding[0] != 0 || padding[1] != 0 {
		v = d.prim("constant_pad_nd", x, []int64{padding[1], padding[1], padding[0], padding[0]}, scalarAs(pad, m.DType))
	}
	var acc val
	for ki := int64(0); ki < kernel[0]; ki++ {
		for kj := int64(0); kj < kernel[1]; kj++ {
			r0, c0 := ki*dilation[0], kj*dilation[1]
			win := d.slice(d.slice(v, nd-2, r0, primtorch.SymValue(ho.AddConst(-1).MulConst(stride[0]).AddConst(r0+1)), stride[0]),
				nd-1, c0, primtorch.SymValue(wo.AddConst(-1).MulConst(stride[1]).AddConst(c0+1)), stride[1])
			if acc == nil {
				acc = win
			} else {
				acc = d.bin(op, acc, win)
			}
		}
	}
	if got := metaOf(acc).SymSizes(); !sameSyms(got, out) {
		bug("pooling (%s) of %v gives %v, torch %v", op, m.SymSizes(), got, out)
	}
	return acc, true
}

// unbiasFactor is n / (n - 1) for the running variance (a count of 0 or 1 divides by 1, as
// torch's kernels do; a symbolic count is at least 2).
func (d *decomposer) unbiasFactor(n sym) val {
	if k, c := n.IsConst(); c {
		return float64(k) / float64(max(k-1, 1))
	}
	return d.sizeFloat(1, n, n.AddConst(-1))
}
