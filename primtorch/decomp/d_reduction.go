package decomp

import (
	"math"
	"sort"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Reductions, scans and softmax: reduced dims are listed explicitly (sorted, non-negative);
// sums accumulate as torch does (integers in int64, float16/bfloat16 in float32).

// reduceDims normalizes a dim argument (nil, an int or a list; nil and [] mean every dim).
func reduceDims(v any, nd int) []int {
	var ds []int64
	switch x := v.(type) {
	case int64:
		ds = []int64{x}
	case []int64:
		ds = x
	}
	if len(ds) == 0 {
		return allDims(nd)
	}
	seen := map[int]bool{}
	var out []int
	for _, k := range ds {
		w := wrap(k, nd)
		if nd == 0 || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	sort.Ints(out)
	return out
}

// symNumelOver is the number of elements of shape over dims.
func symNumelOver(shape []sym, dims []int) sym {
	n := primtorch.SymConst(1)
	for _, k := range dims {
		n = n.Mul(shape[k])
	}
	return n
}

// divisor is a count as the float a division by it takes: a float64 when constant, the size
// itself (a Python int) when symbolic.
func divisor(n sym) val {
	if k, c := n.IsConst(); c {
		return float64(k)
	}
	return n
}

// accDType is the dtype torch's sum-like reductions with result dtype out accumulate in.
func accDType(out primtorch.DType) primtorch.DType { return opmath(out) }

// sumTo sums x over dims, computing in opmath of dt (the result dtype) and returning dt.
func (d *decomposer) sumTo(x val, dims []int, keepdim bool, dt primtorch.DType) *fxgraph.Node {
	r := d.reduce("sum", d.convert(x, accDType(dt)), dims, keepdim)
	return asNode(d.convert(r, dt))
}

func dSum(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	return d.sumTo(x, dims, c.bool("keepdim"), c.outMeta().DType), nil
}

// dNansum: integer and bool inputs are a sum. A floating one stays torch's call: torch's
// kernels drop NaNs inside their cascade of partial sums, so a partial sum that is NaN from
// +inf and -inf (a sum of inf and -inf) is dropped at some levels and kept at others, by
// position and by torch version (1.13 gives NaN where 2.14 gives a finite sum of the rest, and
// 1.13 gives 0 for others: fuzz seed 17760); no sum in another order gives those.
func dNansum(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	var v val = x
	if metaOf(x).DType.IsFloatingPoint() {
		return nil, errFallback
	}
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	return d.sumTo(v, dims, c.bool("keepdim"), c.outMeta().DType), nil
}

// mean is the sum over dims divided by their element count, in opmath.
func (d *decomposer) mean(x val, dims []int, keepdim bool, dt primtorch.DType) val {
	n := symNumelOver(sizesOf(x), dims)
	s := d.reduce("sum", d.convert(x, opmath(dt)), dims, keepdim)
	return d.convert(d.div(s, divisor(n)), dt)
}

func dMean(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	dt := c.outMeta().DType
	if (dt == primtorch.Float16 || dt == primtorch.BFloat16) && !primtorch.Behavior().MeanReducedFloatOpmath {
		// torch 1.13's mean_out: a sum into the result's dtype (of the input converted to it,
		// mean(dtype=)), rounded, then divided there (the division computes in float32 and
		// rounds again)
		n := symNumelOver(sizesOf(x), dims)
		s := d.convert(d.reduce("sum", d.convert(d.convert(x, dt), opmath(dt)), dims, c.bool("keepdim")), dt)
		return d.convert(d.div(d.convert(s, opmath(dt)), divisor(n)), dt), nil
	}
	return d.mean(x, dims, c.bool("keepdim"), dt), nil
}

func dProd(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	var dims []int
	if k, ok := c.optInt("dim"); ok {
		dims = []int{wrap(k, len(metaOf(x).Shape))}
	} else {
		dims = allDims(len(metaOf(x).Shape))
	}
	dt := c.outMeta().DType
	if dt == primtorch.Float16 || dt == primtorch.BFloat16 {
		// torch multiplies in the 16-bit dtype, lane by lane: 1000 bfloat16 factors near 1 give
		// 2.74e-5 where a float product rounded once gives 2.94e-5, and an overflowing lane
		// beside a zero gives NaN where the float product is 0 (fuzz seed 25166); the call
		// stays torch's
		return nil, errFallback
	}
	r := d.reduce("prod", d.convert(x, accDType(dt)), dims, c.bool("keepdim"))
	return d.convert(r, dt), nil
}

func dAmaxAmin(name string) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		m := metaOf(x)
		if len(m.Shape) == 0 && m.DType.IsFloatingPoint() {
			// A 0-d input is its own result, but torch's gradient is amax's scale_grad_by_count:
			// (grad / count) · mask with mask = (x == result), so NaN where x is NaN (count 0;
			// fuzz seed 25816). prims.amax over [] would read as max()'s evenly_distribute
			// (vjpAmaxAmin), which gives x the whole gradient; x · (x == x ? 1 : NaN) is x
			// (NaN·NaN, ±0·1, ±inf·1) with that gradient.
			one := d.full(m.SymSizes(), 1.0, m.DType)
			return d.mul(x, d.where(d.bin("eq", x, x), one, scalarAs(math.NaN(), m.DType))), nil
		}
		dims := reduceDims(c.get("dim"), len(m.Shape))
		return d.reduce(name, x, dims, c.bool("keepdim")), nil
	}
}

// dMaxMinAll is max(x)/min(x) over every element.
func dMaxMinAll(name string) decompFn {
	return func(c *ctx) (any, error) {
		x := c.selfNode()
		return c.d.prim(name, x, []int64{}, false), nil
	}
}

// dMaxMinDim is max.dim/min.dim: the index (argmax/argmin) over one dim, and the value gathered
// at it — not amax/amin, whose gradient torch splits among ties: max.dim's gradient goes only
// to the element the index picks.
func dMaxMinDim(red, arg string) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		// torch's argmax/argmin kernels have no bool version, max.dim's has: the index is
		// taken over the bools as uint8 (same order, same first tie)
		ix := x
		if dtypeOf(x) == primtorch.Bool {
			ix = asNode(d.convert(x, primtorch.UInt8))
		}
		if len(metaOf(x).Shape) == 0 {
			return []any{d.prim(red, x, []int64{}, false), d.prim(arg, ix, []int64{}, false)}, nil
		}
		k := wrap(c.int("dim"), len(metaOf(x).Shape))
		idx := d.prim(arg, ix, []int64{int64(k)}, true)
		val := d.prim("gather", x, int64(k), idx)
		if c.bool("keepdim") {
			return []any{val, idx}, nil
		}
		return []any{d.squeeze(val, k), d.squeeze(idx, k)}, nil
	}
}

// dArg is argmax/argmin: over one dim, or over the flattened tensor when dim is None.
func dArg(name string) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		m := metaOf(x)
		if k, ok := c.optInt("dim"); ok {
			return d.prim(name, x, []int64{int64(wrap(k, len(m.Shape)))}, c.bool("keepdim")), nil
		}
		flat := d.reshape(x, []sym{m.SymNumel()})
		r := d.prim(name, flat, []int64{0}, false)
		return d.view(r, c.outMeta().SymSizes()), nil
	}
}

// correction reads var/std's correction (or legacy unbiased) argument.
func (c *ctx) correction() float64 {
	if v, ok := c.a.Opt("correction"); ok && v != nil && c.a.Given("correction") {
		return asFloat(v)
	}
	if v, ok := c.a.Opt("unbiased"); ok && c.a.Given("unbiased") {
		if b, _ := v.(bool); !b {
			return 0
		}
	}
	return 1
}

// varAccDType is what torch's CPU var/std/var_mean/std_mean kernel accumulates a real float
// dtype in: double (its Welford ops are WelfordOps<scalar_t, double, ...>, the square root taken
// in double too), so a float32 std of values near 1e22 is finite where float32 sums of squares
// overflow (fuzz seeds 2418, 4554). Complex inputs keep their opmath.
func varAccDType(dt primtorch.DType) primtorch.DType {
	switch dt {
	case primtorch.Float32, primtorch.Float16, primtorch.BFloat16:
		return primtorch.Float64
	}
	return opmath(dt)
}

// welfordMean is the mean torch's var_mean/std_mean return: their Welford recurrence
// (mean += (x - mean)/k, chunks combined left to right) turns the mean NaN as soon as a value
// follows an infinity (inf - inf, or inf + (-inf)/k), so the mean is ±inf only when the one
// non-finite element is an infinity reached last (the last index in every reduced dim: the
// kernel visits reduced dims in some order, but always ends there) and NaN whenever any other
// element is non-finite (fuzz seeds 2867, 4747, 6872: sum/N gave inf). mk is sum/N (kept dims).
// The NaN is added, not selected: the mean's gradient is g/N whatever the values (torch's
// mean_backward), so no branch may cut it (fuzz seed 12064: a where gave 0 beside an infinity).
func (d *decomposer) welfordMean(xc, mk val, dims []int) val {
	bad := d.convert(d.un("logical_not", d.un("isfinite", xc)), primtorch.Int64)
	count := d.reduce("sum", bad, dims, true)
	last := xc
	for _, k := range dims {
		size := sizesOf(xc)[k]
		last = d.slice(last, k, size.AddConst(-1), size, 1)
	}
	lastInf := d.convert(d.un("isinf", last), primtorch.Int64)
	nanMean := d.bin("gt", d.sub(count, lastInf), int64(0))
	return d.add(mk, d.where(nanMean, d.full(sizesOf(mk), math.NaN(), dtypeOf(mk)), zero(mk)))
}

// variance returns var and mean of x over dims (in torch's accumulation dtype, varAccDType),
// var divided by max(0, N - corr), the mean as var_mean's (welfordMean).
func (d *decomposer) variance(x val, dims []int, keepdim bool, corr float64) (v, mean val) {
	cdt := varAccDType(dtypeOf(x))
	xc := d.convert(x, cdt)
	n := symNumelOver(sizesOf(x), dims)
	mk := d.div(d.reduce("sum", xc, dims, true), divisor(n))
	center := mk
	if k, c := n.IsConst(); !c || k > 0 { // (a symbolic size is at least 2)
		// The deviations are taken from the mean of the deviations from a first element, added
		// back to it: exactly 0 for a slice of equal values, as torch's Welford mean gives
		// (sum/N of equal values may be an ulp off, and the std of an expanded input was 1e-8,
		// its gradient finite garbage where torch's std_backward gives 0: fuzz seed 3362).
		// The gradient is torch's var_backward, 2*grad*(x - mean)/(N - correction): the centre
		// carries none.
		first := xc
		for _, k := range dims {
			first = d.slice(first, k, int64(0), int64(1), 1)
		}
		shift := d.reduce("sum", d.sub(xc, d.expand(first, sizesOf(xc))), dims, true)
		center = noGrad(d.add(first, d.div(shift, divisor(n))))
	}
	diff := d.sub(xc, d.expand(center, sizesOf(xc)))
	ss := d.reduce("sum", d.mul(diff, diff), dims, keepdim)
	if k, c := n.IsConst(); c {
		v = d.div(ss, math.Max(0, float64(k)-corr))
	} else if corr == math.Trunc(corr) && math.Abs(corr) < 2 {
		v = d.div(ss, n.AddConst(-int64(corr))) // a size (>= 2) less 0, 1 (or plus 1) is positive
	} else {
		v = d.div(ss, math.Max(0, float64(n.Specialize("var's correction"))-corr))
	}
	mean = mk
	if k, c := n.IsConst(); !c || k > 0 {
		mean = d.welfordMean(xc, mk, dims)
	}
	if !keepdim {
		mean = d.squeeze(mean, dims...)
	}
	return v, mean
}

// dVar is var, std, var_mean and std_mean.
func dVar(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	var dimArg any
	if v, ok := c.a.Opt("dim"); ok {
		dimArg = v
	}
	dims := reduceDims(dimArg, len(metaOf(x).Shape))
	keep := false
	if v, ok := c.a.Opt("keepdim"); ok {
		keep, _ = v.(bool)
	}
	n := symNumelOver(sizesOf(x), dims)
	k, ok := n.IsConst()
	if !ok && metaOf(x).RequiresGrad && c.correction() >= 2 {
		// a symbolic length (at least 2) may equal a correction of 2 or more: specialise (as
		// variance does for such corrections), so the guard keeps the answer below exact
		k, ok = n.Specialize("var's correction"), true
	}
	if ok && float64(k)-c.correction() <= 0 && metaOf(x).RequiresGrad {
		// No degrees of freedom: torch's var_backward has its own answers there (inf * grad
		// when reducing every dim, an invalid-gradient error for a 1-element 1-d input, NaN
		// with a dim), which differentiating the decomposition (0/0) does not give; torch runs it.
		return nil, errFallback
	}
	v, mean := d.variance(x, dims, keep, c.correction())
	name := c.op.Schema.Name
	if name == "std" || name == "std_mean" {
		v = d.normRoot(x, v, 2) // (torch's std_backward is 0 where the std is: not 0 * inf)
	}
	var out primtorch.DType
	if name == "var_mean" || name == "std_mean" {
		ms := c.outMetas()
		return []any{d.convert(v, ms[0].DType), d.convert(mean, ms[1].DType)}, nil
	}
	out = c.outMeta().DType
	return d.convert(v, out), nil
}

// dLogsumexp is log(sum(exp(x - m))) + m with m the max (0 where it is infinite).
func dLogsumexp(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	keep := c.bool("keepdim")
	out := c.outMeta().DType
	if k, ok := symNumelOver(sizesOf(x), dims).IsConst(); ok && k == 0 {
		// over no elements: log(0), where amax has no identity (torch's op in a training graph)
		if d.rg {
			return nil, errFallback
		}
		return d.full(c.outMeta().SymSizes(), math.Inf(-1), out), nil
	}
	xc := d.convert(x, opmath(out))
	m := d.reduce("amax", xc, dims, true)
	m = d.where(d.un("isinf", m), zero(m), m)
	e := d.un("exp", d.sub(xc, d.expand(m, sizesOf(xc))))
	if d.rg {
		// torch's derivative, logsumexp_backward: g·exp(x − result). The chain rule through
		// this decomposition (exp(x − max)/Σ, through amax's tie mask) gives NaN where a
		// column holds +inf and torch gives 0 at its finite entries (fuzz seed 35588). The
		// linear term whose gradient that is: sum(x·exp(x − R)), R the result without gradient.
		r := d.add(d.un("log", d.reduce("sum", e, dims, true)), m)
		y := noGrad(d.prim("clone", r))
		f := noGrad(d.un("exp", d.sub(xc, d.expand(y, sizesOf(xc)))))
		r = d.withGradient(r, d.reduce("sum", d.mul(xc, f), dims, true))
		if !keep {
			r = d.squeeze(r, dims...)
		}
		return d.convert(r, out), nil
	}
	s := d.reduce("sum", e, dims, keep)
	if !keep {
		m = d.squeeze(m, dims...)
	}
	return d.convert(d.add(d.un("log", s), m), out), nil
}

// maxFloatNormElems is the most elements a float32 (bfloat16, float16) p-norm sums in C.
// torch's CPU norm kernel accumulates such sums in float32, lane by lane (and is not a
// cascade sum, as its sum is): over more elements its rounding drifts past float32's
// tolerance from the double accumulation of ptgo's kernels (a 300×300 norm by 5e-5), so
// larger norms run with torch. Max, min and count norms (p = ±inf, 0) are exact either way.
const maxFloatNormElems = 1024

// torchNormDrifts reports whether torch's p-norm of x (in its computation dtype) over dims
// sums more float32 values than maxFloatNormElems, so that its float32 accumulation drifts
// from the C kernel's (guarded on a symbolic length): every decomposition that computes a norm
// (norm, normalize, cosine_similarity, pairwise_distance: all torch's vector-norm kernel) asks
// here and runs torch's op instead.
func torchNormDrifts(x val, p float64, dims []int) bool {
	return dtypeOf(x) == primtorch.Float32 && p != 0 && !math.IsInf(p, 0) &&
		symNumelOver(sizesOf(x), dims).GtHint(primtorch.SymConst(maxFloatNormElems)) // (guarded)
}

// dNorm is torch.norm / linalg.vector_norm for p = 2, 1, ±inf, 0 and other numbers ("fro" is 2,
// "nuc" falls back).
func dNorm(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	var p float64
	switch v := c.get("p").(type) {
	case nil:
		p = 2
	case string:
		if v != "fro" {
			return nil, errFallback
		}
		p = 2
	case int64, float64, bool:
		p = asFloat(v)
	default:
		return nil, errFallback
	}
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	keep := c.bool("keepdim")
	out := c.outMeta().DType
	xc := d.convert(x, opmath(out))
	if torchNormDrifts(xc, p, dims) {
		return nil, errFallback
	}
	r := d.vectorNorm(xc, p, dims, keep)
	return d.convert(r, out), nil
}

// dAllAny is all/any over one dim or every dim, in the dtype torch returns (uint8 for uint8).
func dAllAny(name string) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		var dims []int
		if k, ok := c.optInt("dim"); ok {
			dims = []int{wrap(k, len(metaOf(x).Shape))}
		} else {
			dims = allDims(len(metaOf(x).Shape))
		}
		r := d.reduce(name, x, dims, c.bool("keepdim"))
		return d.convert(r, c.outMeta().DType), nil
	}
}

// dCountNonzero is the sum of x != 0 as int64.
func dCountNonzero(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	dims := reduceDims(c.get("dim"), len(metaOf(x).Shape))
	nz := d.convert(d.bin("ne", x, zero(x)), primtorch.Int64)
	return d.reduce("sum", nz, dims, false), nil
}

// dScan is cumsum/cumprod in the result dtype's opmath.
func dScan(name string) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		out := c.outMeta().DType
		dim := int64(wrap(c.int("dim"), len(metaOf(x).Shape)))
		if len(metaOf(x).Shape) == 0 {
			dim = 0
		}
		r := d.prim(name, d.convert(x, opmath(out)), dim)
		return d.convert(r, out), nil
	}
}

// softmaxDim is softmax's dim, with F.softmax's legacy choice when it is None.
func softmaxDim(c *ctx, nd int) int {
	if k, ok := c.optInt("dim"); ok {
		return wrap(k, nd)
	}
	if nd == 0 || nd == 1 || nd == 3 {
		return 0
	}
	return 1
}

// dSoftmax is exp(x - max) / sum(exp(x - max)); log_softmax is (x - max) - log(sum(exp(x -
// max))). dtype= converts the input first.
func dSoftmax(log bool) decompFn {
	return func(c *ctx) (any, error) {
		d := c.d
		x := c.selfNode()
		out := c.outMeta().DType
		nd := len(metaOf(x).Shape)
		dims := []int{softmaxDim(c, nd)}
		if nd == 0 {
			dims = nil
		}
		xc := d.convert(d.convert(x, out), opmath(out))
		shape := sizesOf(xc)
		m := d.reduceKeep("amax", xc, dims)
		shifted := d.sub(xc, d.expand(m, shape))
		e := d.un("exp", shifted)
		s := d.reduceKeep("sum", e, dims)
		var r val
		if log {
			r = d.sub(shifted, d.expand(d.un("log", s), shape))
		} else {
			r = d.div(e, d.expand(s, shape))
		}
		if d.rg {
			r = d.softmaxGradient(r, xc, dims, log)
		}
		return d.convert(r, out), nil
	}
}

// softmaxGradient gives softmax's (log_softmax's) result r of xc torch's derivative, the one
// _softmax_backward_data computes: y·(g - sum(g·y)) (g - exp(y)·sum(g)), y the result. The
// chain rule through the decomposition recomputed the exponentials and went through amax's
// tie mask: an attention's softmax backward was one kernel with three expf per element, 3.4x
// eager's time, and rounded differently. The linear terms whose gradients these are:
// Y·(x - sum(Y·x)) and x - sum(exp(Y)·x), Y the result without gradient.
func (d *decomposer) softmaxGradient(r, xc val, dims []int, log bool) val {
	shape := sizesOf(xc)
	y := noGrad(d.prim("clone", r))
	if log {
		p := noGrad(d.un("exp", y))
		return d.withGradient(r, d.sub(xc, d.expand(d.reduceKeep("sum", d.mul(p, xc), dims), shape)))
	}
	return d.withGradient(r, d.mul(y, d.sub(xc, d.expand(d.reduceKeep("sum", d.mul(y, xc), dims), shape))))
}

// reduceKeep reduces over dims keeping them (a 0-d x is reduced over no dim: itself).
func (d *decomposer) reduceKeep(name string, x val, dims []int) val {
	if len(metaOf(x).Shape) == 0 {
		return d.prim(name, x, []int64{}, true)
	}
	return d.reduce(name, x, dims, true)
}
