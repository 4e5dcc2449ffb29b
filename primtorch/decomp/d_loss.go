package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Loss functions: an elementwise loss, then the reduction ("none", "sum", "mean").

// reduction reads the reduction, honouring the legacy size_average/reduce arguments.
func (c *ctx) reduction() string {
	sa, hasSA := c.a.Opt("size_average")
	rd, hasRd := c.a.Opt("reduce")
	if (hasSA && sa != nil) || (hasRd && rd != nil) {
		sizeAvg, red := true, true
		if b, ok := sa.(bool); ok {
			sizeAvg = b
		}
		if b, ok := rd.(bool); ok {
			red = b
		}
		switch {
		case !red:
			return "none"
		case sizeAvg:
			return "mean"
		}
		return "sum"
	}
	return c.str("reduction")
}

// reduceLoss applies a reduction to an elementwise loss l.
func (d *decomposer) reduceLoss(l val, red string) val {
	nd := len(metaOf(l).Shape)
	switch red {
	case "sum":
		return d.reduce("sum", l, allDims(nd), false)
	case "mean":
		return d.div(d.reduce("sum", l, allDims(nd), false), divisor(numelOf(l)))
	}
	return l
}

// dPointwiseLoss is mse_loss, l1_loss, smooth_l1_loss, huber_loss and kl_div.
func dPointwiseLoss(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta().DType
	red := c.reduction()
	name := c.op.Schema.Name
	t := ewDTypes(primtorch.PromoteDefault, c.self(), c.in("target"))
	cdt := opmath(t.result)
	l := d.ewIn(cdt, cdt, func(v []val) val {
		x, y := v[0], v[1]
		switch name {
		case "mse_loss":
			diff := d.sub(x, y)
			return d.mul(diff, diff)
		case "l1_loss":
			return d.un("abs", d.sub(x, y))
		case "smooth_l1_loss", "huber_loss":
			a := d.un("abs", d.sub(x, y))
			var l val
			var lim, slope float64 // the derivative: ±slope beyond ±lim, diff*slope/lim inside
			if name == "smooth_l1_loss" {
				beta := c.float("beta")
				if beta == 0 {
					return a
				}
				l = d.where(d.bin("lt", a, beta), d.div(d.mul(d.mul(a, a), 0.5), beta), d.sub(a, 0.5*beta))
				lim, slope = beta, 1
			} else {
				delta := c.float("delta")
				l = d.where(d.bin("lt", a, delta), d.mul(d.mul(a, a), 0.5), d.mul(d.sub(a, 0.5*delta), delta))
				lim, slope = delta, delta
			}
			if !d.rg {
				return l
			}
			// torch's smooth_l1_loss_backward / huber_loss_backward (the target's is its
			// negative): the chain rule through the where gave 0 * inf = NaN at an infinite
			// difference, from the quadratic branch it does not take
			diff := d.sub(x, y)
			inner := d.mul(diff, slope/lim)
			if lim == slope {
				inner = d.sub(x, y)
			}
			f := d.where(d.bin("lt", diff, -lim), -slope, d.where(d.bin("gt", diff, lim), slope, inner))
			return d.withGradient(l, d.mul(d.sub(x, y), noGrad(f)))
		}
		// kl_div
		if c.bool("log_target") {
			return d.mul(d.un("exp", y), d.sub(y, x))
		}
		xlogy := d.where(d.bin("eq", y, 0.0), 0.0, d.mul(y, d.un("log", y)))
		xlogy = d.where(d.un("isnan", y), y, xlogy)
		return d.sub(xlogy, d.mul(y, x))
	}, c.self(), c.in("target"))
	var r val
	if red == "batchmean" {
		s := d.reduce("sum", l, allDims(len(metaOf(l).Shape)), false)
		r = s
		if shape := sizesOf(l); len(shape) > 0 {
			r = d.div(s, divisor(shape[0]))
		}
	} else {
		if red == "sum" && out == primtorch.Int64 {
			l = asNode(d.convert(l, out)) // an integer l1_loss sums in int64 (torch.sum), not wrapping
		}
		r = d.reduceLoss(l, red)
	}
	return d.convert(r, out), nil
}

// dBCE is binary_cross_entropy: (t - 1)*max(log(1 - x), -100) - t*max(log(x), -100), weighted.
func dBCE(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta().DType
	x, t := c.self(), c.in("target")
	cdt := opmath(dtypeOf(x))
	l := d.ewIn(cdt, cdt, func(v []val) val {
		x, t := v[0], v[1]
		l1 := d.bin("maximum", d.un("log", d.sub(1.0, x)), -100.0)
		l0 := d.bin("maximum", d.un("log", x), -100.0)
		r := d.sub(d.mul(d.sub(t, 1.0), l1), d.mul(t, l0))
		if v[2] != nil {
			r = d.mul(r, v[2])
		}
		return r
	}, x, t, c.in("weight"))
	return d.convert(d.reduceLoss(l, c.reduction()), out), nil
}

// dBCEWithLogits is (1 - t)*x + lw*(log1p(exp(-|x|)) + max(-x, 0)) with lw = (pos_weight - 1)*t
// + 1 (1 without pos_weight), weighted. Its gradient is torch's (derivatives.yaml), not the chain
// rule of that formula: the input's is w*(lw*sigmoid(x) - pos_weight*t) (w*(sigmoid(x) - t)
// without pos_weight), the target's w*(log_sigmoid(-x) - pos_weight*log_sigmoid(x)) (-w*x). The
// chain rule differs at x = ±0, where abs and max(-x, 0) both give 0 (1 - t, not 0.5 - t), and
// at x = -inf with pos_weight (inf - inf = NaN, not inf).
func dBCEWithLogits(c *ctx) (any, error) {
	d := c.d
	out := c.outMeta().DType
	x, t := c.self(), c.in("target")
	cdt := opmath(dtypeOf(x))
	l := d.ewIn(cdt, cdt, func(v []val) val {
		x, t, w, pw := v[0], v[1], v[2], v[3]
		soft := d.add(d.un("log1p", d.un("exp", d.un("neg", d.un("abs", x)))), d.bin("maximum", d.un("neg", x), 0.0))
		if pw != nil {
			lw := d.add(d.mul(d.sub(pw, 1.0), t), 1.0)
			soft = d.mul(lw, soft)
		}
		r := d.add(d.mul(d.sub(1.0, t), x), soft)
		if w != nil {
			r = d.mul(r, w)
		}
		if !d.rg {
			return r
		}
		weighted := func(f val) val {
			if w != nil {
				f = d.mul(f, w)
			}
			return noGrad(f)
		}
		var e val
		if m := metaOf(x); m != nil && m.RequiresGrad {
			// torch's binary_cross_entropy_with_logits_backward
			sig := d.un("sigmoid", x)
			fx := d.sub(sig, t)
			if pw != nil {
				pt := d.mul(pw, t)
				fx = d.sub(d.mul(d.sub(d.add(pt, 1.0), t), sig), pt)
			}
			e = d.mul(x, weighted(fx))
		}
		if m := metaOf(t); m != nil && m.RequiresGrad {
			// torch's binary_cross_entropy_with_logits_target_backward
			ft := d.un("neg", x)
			if pw != nil {
				logSig := func(y val) val {
					return d.sub(d.bin("minimum", y, 0.0), d.un("log1p", d.un("exp", d.un("neg", d.un("abs", y)))))
				}
				ft = d.sub(logSig(d.un("neg", x)), d.mul(logSig(x), pw))
			}
			et := d.mul(t, weighted(ft))
			if e == nil {
				e = et
			} else {
				e = d.add(e, et)
			}
		}
		if e == nil {
			return r
		}
		return d.withGradient(r, e)
	}, x, t, c.in("weight"), c.in("pos_weight"))
	return d.convert(d.reduceLoss(l, c.reduction()), out), nil
}

// nll computes nll_loss of log-probabilities logp (classes along dim 1, or 0 for 1-d input)
// against class indices: the per-element loss and the per-element weights (0 where ignored).
func (d *decomposer) nll(logp, target, weight val, ignore int64) (loss, w *fxgraph.Node) {
	lm := metaOf(logp)
	cdim := 1
	if len(lm.Shape) == 1 {
		cdim = 0
	}
	mask := d.bin("ne", target, ignore)
	safe := d.where(mask, target, int64(0))
	picked := d.squeeze(d.prim("gather", logp, int64(cdim), d.unsqueeze(safe, cdim)), cdim)
	var wt val
	if weight != nil {
		wt = d.prim("index", d.convert(weight, lm.DType), []any{safe})
		wt = d.where(mask, wt, 0.0)
	} else {
		wt = d.convert(mask, lm.DType)
	}
	return asNode(d.mul(d.un("neg", picked), wt)), asNode(wt)
}

// reduceNll reduces nll losses: "mean" divides by the total weight.
func (d *decomposer) reduceNll(loss, w *fxgraph.Node, red string) val {
	nd := len(metaOf(loss).Shape)
	switch red {
	case "sum":
		return d.reduce("sum", loss, allDims(nd), false)
	case "mean":
		return d.div(d.reduce("sum", loss, allDims(nd), false), d.reduce("sum", w, allDims(nd), false))
	}
	return loss
}

func dNllLoss(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	out := c.outMeta().DType
	cdt := opmath(metaOf(x).DType)
	loss, w := d.nll(d.convert(x, cdt), c.in("target"), c.in("weight"), c.int("ignore_index"))
	return d.convert(d.reduceNll(loss, w, c.reduction()), out), nil
}

// dCrossEntropy is nll_loss of log_softmax over the class dim, with label smoothing, or the
// soft-label form when target holds probabilities.
func dCrossEntropy(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	xm := metaOf(x)
	out := c.outMeta().DType
	cdt := opmath(xm.DType)
	cdim := 1
	if len(xm.Shape) == 1 {
		cdim = 0
	}
	ncls := xm.SymSizes()[cdim]
	xc := d.convert(x, cdt)
	shape := sizesOf(xc)
	m := d.reduce("amax", xc, []int{cdim}, true)
	shifted := d.sub(xc, d.expand(m, shape))
	logp := d.sub(shifted, d.expand(d.un("log", d.reduce("sum", d.un("exp", shifted), []int{cdim}, true)), shape))
	red := c.reduction()
	eps := c.float("label_smoothing")
	target, weight := c.in("target"), c.in("weight")
	var wview val
	if weight != nil {
		ws := syms(make([]int64, len(shape))...)
		for i := range ws {
			ws[i] = primtorch.SymConst(1)
		}
		ws[cdim] = ncls
		wview = d.expand(d.view(d.convert(weight, cdt), ws), shape)
	}
	if dtypeOf(target).IsFloatingPoint() {
		t := d.convert(target, cdt)
		if eps > 0 {
			t = d.mul(t, 1-eps)
			t = d.add(t, d.operandLike(d.sizeFloat(eps, primtorch.SymConst(1), ncls), t))
		}
		p := d.mul(logp, t)
		if wview != nil {
			p = d.mul(p, wview)
		}
		l := d.un("neg", d.reduce("sum", p, []int{cdim}, false))
		var r val = l
		switch red {
		case "sum":
			r = d.reduce("sum", l, allDims(len(metaOf(l).Shape)), false)
		case "mean":
			n := prodSyms(classFree(xm.SymSizes(), cdim)) // numel / classes
			if k, c := ncls.IsConst(); c && k == 0 {
				n = primtorch.SymConst(0) // (no elements: 0 / max(0, 1))
			}
			r = d.div(d.reduce("sum", l, allDims(len(metaOf(l).Shape)), false), divisor(n))
		}
		return d.convert(r, out), nil
	}
	ignore := c.int("ignore_index")
	loss, w := d.nll(logp, target, weight, ignore)
	r := d.reduceNll(loss, w, red)
	if eps <= 0 {
		return d.convert(r, out), nil
	}
	sp := logp
	if wview != nil {
		sp = asNode(d.mul(logp, wview))
	}
	smooth := d.un("neg", d.reduce("sum", sp, []int{cdim}, false))
	smooth = d.where(d.bin("ne", target, ignore), smooth, 0.0)
	var sr val = smooth
	nd := len(metaOf(smooth).Shape)
	switch red {
	case "sum":
		sr = d.reduce("sum", smooth, allDims(nd), false)
	case "mean": // over the total weight of the targets not ignored, as nll_loss
		sr = d.div(d.reduce("sum", smooth, allDims(nd), false), d.reduce("sum", w, allDims(nd), false))
	}
	return d.convert(d.add(d.mul(r, 1-eps), d.mul(sr, d.operandLike(d.sizeFloat(eps, primtorch.SymConst(1), ncls), sr))), out), nil
}

// classFree is sizes without the class dim.
func classFree(sizes []sym, cdim int) []sym {
	return append(append([]sym{}, sizes[:cdim]...), sizes[cdim+1:]...)
}
