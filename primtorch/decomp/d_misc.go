package decomp

import (
	"math"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Padding, resampling and composite helpers.

// dPad is F.pad and constant_pad_nd: constant padding is prims.constant_pad_nd; reflect,
// replicate and circular pick source positions with index_select per padded dim.
func dPad(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	pad := c.ints("pad")
	mode := "constant"
	if c.op.ID == primtorch.OpPad {
		mode = c.str("mode")
	}
	dt := metaOf(x).DType
	if mode != "constant" {
		c.specializeCall() // the reflect/replicate/circular positions read concrete sizes
	}
	if mode == "constant" {
		var v any = int64(0)
		if c.op.ID == primtorch.OpPad {
			if c.has("value") {
				v = c.get("value")
			}
		} else {
			v = c.get("value")
		}
		if f, ok := v.(float64); ok && !dt.IsFloatingPoint() {
			v = int64(f)
		}
		return d.prim("constant_pad_nd", x, pad, scalarAs(v, dt)), nil
	}
	var r val = x
	nd := len(metaOf(x).Shape)
	for k := 0; k < len(pad)/2; k++ {
		dim := nd - 1 - k
		before, after := pad[2*k], pad[2*k+1]
		n := metaOf(r).Shape[dim]
		total := n + before + after
		if before < 0 || after < 0 || total <= 0 {
			return nil, errFallback
		}
		p := d.iota(total, -before, int64(1), primtorch.Int64)
		var idx val
		switch mode {
		case "replicate":
			idx = d.bin("minimum", d.bin("maximum", p, int64(0)), n-1)
		case "reflect":
			if before >= n || after >= n {
				return nil, errFallback
			}
			idx = d.sub(n-1, d.un("abs", d.sub(n-1, d.un("abs", p))))
		case "circular":
			if before > n || after > n {
				return nil, errFallback
			}
			idx = d.bin("remainder", p, n)
		default:
			return nil, errFallback
		}
		r = d.prim("index_select", r, int64(dim), idx)
	}
	return r, nil
}

// dInterpolate is F.interpolate for mode "nearest" and "nearest-exact": index_select per
// spatial dim at floor(i*scale) (floor((i + 0.5)*scale)), scale computed in float32 as torch.
// Other modes fall back.
func dInterpolate(c *ctx) (any, error) {
	d := c.d
	mode := c.str("mode")
	if mode != "nearest" && mode != "nearest-exact" {
		return nil, errFallback
	}
	if c.bool("antialias") {
		return nil, errFallback
	}
	x := c.selfNode()
	in, out := metaOf(x).Shape, c.outMeta().Shape
	nsp := len(in) - 2
	scales := make([]float64, nsp)
	for i := range scales {
		scales[i] = -1
	}
	if sf := c.get("scale_factor"); sf != nil && !c.bool("recompute_scale_factor") {
		switch v := sf.(type) {
		case float64, int64:
			for i := range scales {
				scales[i] = asFloat(v)
			}
		case []primtorch.Value:
			for i := range scales {
				scales[i] = asFloat(v[i])
			}
		default:
			return nil, errFallback
		}
	}
	var r val = x
	repeated := false
	for i := 0; i < nsp; i++ {
		dim := 2 + i
		isz, osz := in[dim], out[dim]
		var scale float32
		if scales[i] > 0 {
			scale = float32(1 / scales[i])
		} else {
			scale = float32(isz) / float32(osz)
		}
		if isz == osz && scales[i] <= 0 {
			continue
		}
		if k, ok := nearestRepeat(isz, osz, scale, mode); ok {
			// each source row k times over: a broadcast view copied once, no index vector
			// (and no bounds check) per output element
			shape := sizesOf(r)
			wide := append(append(append([]sym{}, shape[:dim+1]...), toSym(k)), shape[dim+1:]...)
			outShape := append([]sym{}, shape...)
			outShape[dim] = toSym(osz)
			r = d.reshape(d.expand(d.unsqueeze(r, dim+1), wide), outShape)
			repeated = true
			continue
		}
		pos := d.iota(osz, int64(0), int64(1), primtorch.Float32)
		var src val = pos
		if mode == "nearest-exact" {
			src = d.add(pos, 0.5)
		}
		src = d.un("floor", d.mul(src, float64(scale)))
		idx := d.bin("minimum", d.convert(src, primtorch.Int64), isz-1)
		r = d.prim("index_select", r, int64(dim), idx)
	}
	if r == val(x) || repeated {
		// a computed result (the repeat's reshape is a view of its copy), which gets eager's
		// layout (channels-last in, channels-last out); the backend fuses the copies
		return d.prim("clone", r), nil
	}
	return r, nil
}

// nearestRepeat reports whether nearest interpolation from isz to osz positions with the
// float32 scale picks source index i / k for every output i (k = osz / isz): then each source
// position repeats k times in a row (a 2x upsample: F.interpolate over 8×64×28×28 took two
// gathers, 2.2 ms against eager's 0.6). Checked position by position in float32, as torch
// computes floor(i * scale).
func nearestRepeat(isz, osz int64, scale float32, mode string) (int64, bool) {
	if mode != "nearest" || isz <= 0 || osz <= isz || osz%isz != 0 {
		return 0, false
	}
	k := osz / isz
	for i := int64(0); i < osz; i++ {
		src := min(int64(math.Floor(float64(float32(i)*scale))), isz-1)
		if src != i/k {
			return 0, false
		}
	}
	return k, true
}

// dPixelShuffle moves channel blocks into space (or back, unshuffle) with view, permute and a
// contiguous copy.
func dPixelShuffle(shuffle bool) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		s := metaOf(x).Shape
		nd := len(s)
		lead := s[:nd-3]
		ch, h, w := s[nd-3], s[nd-2], s[nd-1]
		var r int64
		var shape, perm []int64
		b := int64(len(lead))
		if shuffle {
			r = c.int("upscale_factor")
			shape = append(append([]int64{}, lead...), ch/(r*r), r, r, h, w)
			perm = []int64{b, b + 3, b + 1, b + 4, b + 2}
		} else {
			r = c.int("downscale_factor")
			shape = append(append([]int64{}, lead...), ch, h/r, r, w/r, r)
			perm = []int64{b, b + 2, b + 4, b + 1, b + 3}
		}
		full := make([]int64, 0, len(shape))
		for k := int64(0); k < b; k++ {
			full = append(full, k)
		}
		full = append(full, perm...)
		v := d.permute(d.reshape(x, shape), full)
		return d.reshape(d.prim("clone", v), c.outMeta().Shape), nil
	}
}

// vectorNorm is the p-norm over dims (torch.norm, linalg.vector_norm, F.normalize, ...).
func (d *decomposer) vectorNorm(x val, p float64, dims []int, keepdim bool) val {
	a := d.un("abs", x)
	switch {
	case p == 2:
		return d.normRoot(x, d.reduce("sum", d.mul(x, x), dims, keepdim), 2)
	case p == 1:
		return d.reduce("sum", a, dims, keepdim)
	case math.IsInf(p, 1):
		return d.reduce("amax", a, dims, keepdim)
	case math.IsInf(p, -1):
		return d.reduce("amin", a, dims, keepdim)
	case p == 0:
		return d.reduce("sum", d.convert(d.bin("ne", x, 0.0), dtypeOf(x)), dims, keepdim)
	}
	return d.normRoot(x, d.reduce("sum", d.bin("pow", a, p), dims, keepdim), p)
}

// normRoot is s^(1/p), the p-norm of x from its sum s of |x|^p. Where x requires grad, a zero
// sum's root is where(s == 0, 0, root(where(s == 0, 1, s))): the same values, and torch's
// gradient, which is 0 for a vector of zeros (norm_backward masks norm == 0) where the root's
// derivative is infinite (0 * inf = NaN): F.normalize of a zero row, swin_v2's attention over
// padded tokens.
func (d *decomposer) normRoot(x, s val, p float64) val {
	root := func(v val) val {
		if p == 2 {
			return d.un("sqrt", v)
		}
		return d.bin("pow", v, 1/p)
	}
	if m := metaOf(x); m == nil || !m.RequiresGrad {
		return root(s)
	}
	z := d.bin("eq", s, zero(s))
	return d.where(z, zero(s), root(d.where(z, scalarAs(int64(1), dtypeOf(s)), s)))
}

// dNormalize is x / max(||x||_p over dim, eps).
func dNormalize(c *ctx) (any, error) {
	d := c.d
	if c.has("out") {
		return nil, errFallback
	}
	x := c.selfNode()
	m := metaOf(x)
	if len(m.Shape) == 0 {
		return nil, errFallback // dim 0 of a 0-d tensor is the element itself: torch's kernel
	}
	cdt := opmath(m.DType)
	xc := d.convert(x, cdt)
	dim := wrap(c.int("dim"), len(m.Shape))
	if torchNormDrifts(xc, c.float("p"), []int{dim}) {
		return nil, errFallback
	}
	n := d.bin("maximum", d.vectorNorm(xc, c.float("p"), []int{dim}, true), c.float("eps"))
	return d.convert(d.div(xc, d.expand(n, m.SymSizes())), m.DType), nil
}

// dCosineSimilarity is sum(x1/max(||x1||, eps) * x2/max(||x2||, eps)) over dim.
func dCosineSimilarity(c *ctx) (any, error) {
	d := c.d
	x1, x2 := c.in("x1"), c.in("x2")
	out := c.outMeta().DType
	cdt := opmath(out)
	shape := broadcastShape(x1, x2)
	if len(shape) == 0 {
		return nil, errFallback // dim of 0-d operands is the element itself: torch's kernel
	}
	v := d.prepare(cdt, shape, []val{x1, x2})
	dim := wrap(c.int("dim"), len(shape))
	eps := c.float("eps")
	if torchNormDrifts(v[0], 2, []int{dim}) {
		return nil, errFallback
	}
	n1 := d.expand(d.bin("maximum", d.vectorNorm(v[0], 2, []int{dim}, true), eps), shape)
	n2 := d.expand(d.bin("maximum", d.vectorNorm(v[1], 2, []int{dim}, true), eps), shape)
	r := d.reduce("sum", d.mul(d.div(v[0], n1), d.div(v[1], n2)), []int{dim}, false)
	return d.convert(r, out), nil
}

// dPairwiseDistance is ||x1 - x2 + eps||_p over the last dim.
func dPairwiseDistance(c *ctx) (any, error) {
	d := c.d
	x1, x2 := c.in("x1"), c.in("x2")
	out := c.outMeta()
	cdt := opmath(out.DType)
	shape := broadcastShape(x1, x2)
	v := d.prepare(cdt, shape, []val{x1, x2})
	diff := d.add(d.sub(v[0], v[1]), c.float("eps"))
	if len(shape) == 0 {
		diff = d.reshape(diff, []int64{1})
	}
	last := []int{len(metaOf(diff).Shape) - 1}
	if torchNormDrifts(diff, c.float("p"), last) {
		return nil, errFallback
	}
	r := d.vectorNorm(diff, c.float("p"), last, c.bool("keepdim"))
	return d.reshape(d.convert(r, out.DType), out.SymSizes()), nil
}

// dDiff is the n-th forward difference along dim (logical_xor for bools), prepend and append
// concatenated first.
func dDiff(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	dim := wrap(c.int("dim"), len(metaOf(x).Shape))
	dt := c.outMeta().DType
	parts := []*fxgraph.Node{}
	if p := c.in("prepend"); p != nil {
		parts = append(parts, asNode(p))
	}
	parts = append(parts, x)
	if a := c.in("append"); a != nil {
		parts = append(parts, asNode(a))
	}
	var r val = x
	if len(parts) > 1 {
		r = d.catAll(parts, dim, dt, nil)
	}
	for i := int64(0); i < c.int("n"); i++ {
		n := metaOf(r).Shape[dim]
		if n == 0 {
			break
		}
		hi, lo := d.slice(r, dim, 1, n, 1), d.slice(r, dim, 0, n-1, 1)
		if dt == primtorch.Bool {
			r = d.bin("logical_xor", hi, lo)
		} else {
			r = d.sub(hi, lo)
		}
	}
	if r == val(x) {
		return d.prim("clone", x), nil
	}
	return r, nil
}

// dTrace is the sum of the diagonal (int64 for integer inputs).
func dTrace(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	n := min(m.Shape[0], m.Shape[1])
	diag := d.prim("as_strided", x, []int64{n}, []int64{m.Strides[0] + m.Strides[1]}, m.Offset)
	out := c.outMeta().DType
	return d.convert(d.reduce("sum", d.convert(diag, accDType(out)), []int{0}, false), out), nil
}
