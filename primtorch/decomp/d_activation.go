package decomp

import (
	"math"

	"github.com/klauspost/cpuid/v2"

	"ptgo/primtorch"
)

// Activation functions, with torch's formulas (computed in float32 for float16/bfloat16).

func dRelu(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val { return d.bin("maximum", x, zero(x)) }), nil
}

func dRelu6(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val {
		return d.bin("minimum", d.bin("maximum", x, zero(x)), scalarAs(int64(6), dtypeOf(x)))
	}), nil
}

func dHardtanh(c *ctx) (any, error) {
	d := c.d
	lo, hi := c.get("min_val"), c.get("max_val")
	return c.unary(func(x val) val {
		dt := dtypeOf(x)
		return d.bin("minimum", d.bin("maximum", x, scalarAs(lo, dt)), scalarAs(hi, dt))
	}), nil
}

// dGelu is x/2 * (1 + erf(x/√2)), or with approximate="tanh" x/2 * (1 + tanh(√(2/π) (x +
// 0.044715 x³))). Where torch's CPU gelu runs oneDNN's kernel instead (mkldnnGelu) it is
// x/2 + x/2 * erf(x/√2), as that kernel computes it: the two differ in the sign of zero
// results (-0.0 and large negative x give +0.0 with oneDNN, -0.0 with ATen's kernel).
func dGelu(c *ctx) (any, error) {
	d := c.d
	tanh := c.str("approximate") == "tanh"
	onednn := !tanh && mkldnnGelu(metaOf(c.selfNode()))
	return c.unary(func(x val) val {
		half := d.mul(x, 0.5)
		if tanh {
			inner := d.mul(d.add(x, d.mul(d.mul(d.mul(x, x), x), 0.044715)), math.Sqrt(2/math.Pi))
			return d.mul(half, d.add(d.un("tanh", inner), 1.0))
		}
		erf := d.un("erf", d.mul(x, 1/math.Sqrt2))
		if onednn {
			return d.add(half, d.mul(half, erf))
		}
		return d.mul(half, d.add(erf, 1.0))
	}), nil
}

// mkldnnGelu reports whether torch's CPU gelu (erf form) takes oneDNN's kernel for an input:
// on a torch whose gelu can (GeluOneDNN, probed at start: torch 1.13's, and 2.14's on an AVX2
// CPU; 2.14's on an AVX-512 CPU runs ATen's own kernel for every dtype, size and layout), a
// contiguous float32 tensor of more than one
// element, or bfloat16 on a CPU with AVX-512 BW, VL and DQ (mkldnn_bf16_device_check); other
// inputs take ATen's own kernel.
func mkldnnGelu(m *primtorch.TensorMeta) bool {
	if m == nil || m.Device.Type != "cpu" || !primtorch.Behavior().GeluOneDNN {
		return false
	}
	if m.IsSymbolic() {
		// a size symbol is at least 2: more than one element
		sizes, strides, want := m.SymSizes(), m.SymStrides(), primtorch.SymContiguousStrides(m.SymSizes())
		for i := range sizes {
			if k, ok := sizes[i].IsConst(); !(ok && k == 1) && !strides[i].Equal(want[i]) {
				return false
			}
		}
	} else if !m.IsContiguous() || m.Numel() == 1 {
		return false
	}
	switch m.DType {
	case primtorch.Float32:
		return true
	case primtorch.BFloat16:
		return cpuid.CPU.Supports(cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512DQ)
	}
	return false
}

// dSilu is x / (1 + exp(-x)).
func dSilu(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val {
		r := d.div(x, d.add(d.un("exp", d.un("neg", x)), 1.0))
		if !d.rg {
			return r
		}
		// torch's derivative, sigmoid·(1 + x·(1 − sigmoid)) with sigmoid = 1/(1 + exp(−x)):
		// the chain rule through x/(exp(−x) + 1) is inf/inf = NaN where exp(−x) overflows
		// (x = −100: eager −0; fuzz seed 19294)
		xs := noGrad(d.prim("clone", x))
		sig := d.div(1.0, d.add(d.un("exp", d.un("neg", xs)), 1.0))
		der := noGrad(d.mul(sig, d.add(d.mul(xs, d.sub(1.0, sig)), 1.0)))
		return d.withGradient(r, d.mul(x, der))
	}), nil
}

// dMish is x * tanh(log1p(exp(x))).
func dMish(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val { return d.mul(x, d.un("tanh", d.un("log1p", d.un("exp", x)))) }), nil
}

// elu is scale*x for x > 0, else scale*alpha*(exp(x*inputScale) - 1), computed with expm1 or
// as exp() - 1 as the running torch's kernel does (torchBehavior.EluExpm1). The negative branch
// reads 0 where x > 0, so that its derivative there (0 * exp(x): NaN at inf) is not NaN.
func (d *decomposer) elu(x val, alpha, scale, inputScale float64) val {
	pos := d.bin("gt", x, 0.0)
	if d.rg && primtorch.Behavior().EluGradNaNPositive {
		// NaN takes the positive branch, whose gradient is grad·scale (the value is NaN either way)
		pos = d.un("logical_not", d.bin("le", x, 0.0))
	}
	xn := x
	if d.rg {
		xn = d.where(pos, zero(x), x)
	}
	var em1 val
	if primtorch.Behavior().EluExpm1 {
		em1 = d.un("expm1", d.mul(xn, inputScale))
	} else {
		em1 = d.sub(d.un("exp", d.mul(xn, inputScale)), 1.0)
	}
	neg := d.mul(em1, alpha*scale)
	return d.where(pos, d.mul(x, scale), neg)
}

func dElu(c *ctx) (any, error) {
	d := c.d
	alpha, scale, inScale := c.float("alpha"), 1.0, 1.0
	if _, ok := c.a.Opt("scale"); ok {
		scale, inScale = c.float("scale"), c.float("input_scale")
	}
	return c.unary(func(x val) val { return d.elu(x, alpha, scale, inScale) }), nil
}

func dSelu(c *ctx) (any, error) {
	d := c.d
	const alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
	return c.unary(func(x val) val { return d.elu(x, alpha, scale, 1) }), nil
}

func dCelu(c *ctx) (any, error) {
	d := c.d
	alpha := c.float("alpha")
	return c.unary(func(x val) val { return d.elu(x, alpha, 1, 1/alpha) }), nil
}

func dLeakyRelu(c *ctx) (any, error) {
	d := c.d
	slope := c.get("negative_slope")
	return c.unary(func(x val) val {
		return d.where(d.bin("gt", x, zero(x)), x, d.mul(x, scalarAs(slope, dtypeOf(x))))
	}), nil
}

// hardsigmoid is min(max(x + 3, 0), 6) / 6.
func (d *decomposer) hardsigmoid(x val) val {
	return d.div(d.bin("minimum", d.bin("maximum", d.add(x, 3.0), 0.0), 6.0), 6.0)
}

// dHardsigmoid's gradient is torch's hardsigmoid_backward: grad * (1/6 as a float32, whatever
// the dtype) strictly inside (-3, 3), else 0 (NaN included).
func dHardsigmoid(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val {
		v := d.hardsigmoid(x)
		if !d.rg {
			return v
		}
		inside := d.bin("logical_and", d.bin("gt", x, -3.0), d.bin("lt", x, 3.0))
		return d.withGradient(v, d.where(inside, d.mul(x, float64(float32(1.0/6))), zero(x)))
	}), nil
}

// dHardswish is x * min(max(x + 3, 0), 6) / 6. Its gradient is torch's hardswish_backward (its
// vectorised form): 0 below -3, grad from 3 up, grad * (x/3 + 1/2) between (NaN at NaN) — the
// product rule would give inf * 0 at infinities.
func dHardswish(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val {
		v := d.div(d.mul(x, d.bin("minimum", d.bin("maximum", d.add(x, 3.0), 0.0), 6.0)), 6.0)
		if !d.rg {
			return v
		}
		// (the factor read at 0 for infinite x, where the branch is masked: 0 * inf is NaN)
		xs := d.where(d.un("isinf", x), zero(x), x)
		mid := d.mul(x, noGrad(d.add(d.div(xs, 3.0), 0.5)))
		var e val
		if primtorch.Behavior().HardswishGradOpenMid {
			e = d.where(d.bin("le", x, -3.0), zero(x), d.where(d.bin("lt", x, 3.0), mid, x))
		} else {
			e = d.where(d.bin("lt", x, -3.0), zero(x), d.where(d.bin("ge", x, 3.0), x, mid))
		}
		return d.withGradient(v, e)
	}), nil
}

// dSoftplus is x where x*beta > threshold, else log1p(exp(x*beta)) / beta. Its gradient is
// torch's: grad where x*beta > threshold, else grad * z/(z+1) with z = exp(x*beta) (read at 0
// above the threshold, so that exp(inf) does not make the masked branch NaN).
func dSoftplus(c *ctx) (any, error) {
	d := c.d
	beta, threshold := asFloat(c.get("beta")), asFloat(c.get("threshold"))
	return c.unary(func(x val) val {
		xb := d.mul(x, beta)
		soft := d.div(d.un("log1p", d.un("exp", xb)), beta)
		above := d.bin("gt", xb, threshold)
		v := d.where(above, x, soft)
		if !d.rg {
			return v
		}
		z := d.un("exp", d.where(above, zero(x), d.mul(x, beta)))
		return d.withGradient(v, d.where(above, x, d.mul(x, noGrad(d.div(z, d.add(z, 1.0))))))
	}), nil
}

// dLogSigmoid is min(0, x) - log1p(exp(-|x|)). Its gradient is torch's log_sigmoid_backward:
// grad * (1 - z/(1+z)) for x < 0, grad * z/(1+z) otherwise (0.5 at 0), z = exp(-|x|).
func dLogSigmoid(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val {
		v := d.sub(d.bin("minimum", x, 0.0), d.un("log1p", d.un("exp", d.un("neg", d.un("abs", x)))))
		if !d.rg {
			return v
		}
		z := d.un("exp", d.un("neg", d.un("abs", x)))
		q := d.div(z, d.add(z, 1.0))
		return d.withGradient(v, d.mul(x, noGrad(d.where(d.bin("lt", x, 0.0), d.sub(1.0, q), q))))
	}), nil
}

// dSoftsign is x / (1 + |x|).
// dSoftsign is x / (|x| + 1). torch's composite takes an integer x's |x| + 1 in x's dtype, where
// both wrap at its extremes (softsign of int64's minimum is 1.0, of int8's 127 is 127 / -128:
// fuzz seed 43224), and only then divides in the default float dtype.
func dSoftsign(c *ctx) (any, error) {
	d := c.d
	if x := c.self(); metaOf(x) != nil && metaOf(x).DType.IsIntegral(false) {
		den := d.ew(primtorch.PromoteDefault, func(v []val) val { return d.add(d.un("abs", v[0]), int64(1)) }, x)
		return d.ew(primtorch.PromoteIntToFloat, func(v []val) val { return d.div(v[0], v[1]) }, x, den), nil
	}
	return c.unary(func(x val) val { return d.div(x, d.add(d.un("abs", x), 1.0)) }), nil
}

func dTanhshrink(c *ctx) (any, error) {
	d := c.d
	return c.unary(func(x val) val { return d.sub(x, d.un("tanh", x)) }), nil
}

// dHardshrink is 0 for -lambd <= x <= lambd, else x.
func dHardshrink(c *ctx) (any, error) {
	d := c.d
	l := asFloat(c.get("lambd"))
	return c.unary(func(x val) val {
		inside := d.bin("logical_and", d.bin("ge", x, scalarAs(-l, dtypeOf(x))), d.bin("le", x, scalarAs(l, dtypeOf(x))))
		return d.where(inside, zero(x), x)
	}), nil
}

// dSoftshrink is x - lambd above lambd, x + lambd below -lambd, else 0.
func dSoftshrink(c *ctx) (any, error) {
	d := c.d
	l := asFloat(c.get("lambd"))
	nan := primtorch.Behavior().SoftshrinkNaN
	return c.unary(func(x val) val {
		var inner val = zero(x)
		if nan { // torch 2's kernel: NaN in, NaN out (a constant: its gradient there is 0, as eager's)
			inner = d.convert(d.where(d.bin("ne", x, x), math.NaN(), 0.0), dtypeOf(x))
		}
		r := d.where(d.bin("lt", x, -l), d.add(x, l), inner)
		return d.where(d.bin("gt", x, l), d.sub(x, l), r)
	}), nil
}

// dThreshold is value where x <= threshold, else x.
func dThreshold(c *ctx) (any, error) {
	d := c.d
	th, v := c.get("threshold"), c.get("value")
	return c.unary(func(x val) val {
		dt := dtypeOf(x)
		return d.where(d.bin("le", x, scalarAs(th, dt)), scalarAs(v, dt), x)
	}), nil
}

// dGlu is a * sigmoid(b) for the halves a, b of self along dim.
func dGlu(c *ctx) (any, error) {
	d := c.d
	x := c.selfNode()
	m := metaOf(x)
	dim := wrap(c.int("dim"), len(m.Shape))
	h, ok := m.SymSizes()[dim].FloorDivConst(2)
	if !ok {
		h = primtorch.SymConst(m.SymSizes()[dim].Specialize("glu halves") / 2)
	}
	a, b := d.slice(x, dim, primtorch.SymConst(0), h, 1), d.slice(x, dim, h, h.MulConst(2), 1)
	return d.ew(primtorch.PromoteDefault, func(v []val) val { return d.mul(v[0], d.un("sigmoid", v[1])) }, a, b), nil
}

// dPrelu is x where x > 0, else weight*x, weight per channel (dim 1) or one value.
func dPrelu(c *ctx) (any, error) {
	d := c.d
	x, w := c.selfNode(), c.in("weight")
	xm, wm := metaOf(x), metaOf(asNode(w))
	if wm.Numel() == 1 {
		w = d.reshape(w, []sym{})
	} else if len(xm.Shape) >= 2 {
		shape := make([]sym, len(xm.Shape)-1)
		for i := range shape {
			shape[i] = primtorch.SymConst(1)
		}
		shape[0] = wm.SymNumel()
		w = d.reshape(w, shape)
	}
	return d.ewIn(opmath(xm.DType), xm.DType, func(v []val) val {
		return d.where(d.bin("gt", v[0], 0.0), v[0], d.mul(v[1], v[0]))
	}, x, w), nil
}

// wrap normalizes a dim for ndim dims (0-d tensors take 0 and -1).
func wrap(dim int64, ndim int) int {
	if dim < 0 {
		dim += int64(max(ndim, 1))
	}
	return int(dim)
}
