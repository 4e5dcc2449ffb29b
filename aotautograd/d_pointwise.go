package aotautograd

import (
	"math"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Derivatives of elementwise prims, written as torch 1.13's derivatives.yaml writes them
// (same formulas, so values agree to rounding): functions of the output where torch uses the
// output (exp, tanh, sigmoid, sqrt, rsqrt, reciprocal), the same tie rules for maximum and
// minimum, zero at abs(0).

// unaryFn is the gradient of a unary op's input x given its output y and gradient g.
type unaryFn func(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node

func unary(f unaryFn) vjpFn {
	return func(c *vjpCtx) {
		if c.needs(0) {
			c.give(c.x(0), f(c.builder, c.x(0), c.n, c.g))
		}
	}
}

// vjpZero: torch's zeros_like(grad) (floor, ceil, round, trunc, sign): explicit zeros, which
// flow on (through a product with an infinite input they give NaN, as in eager).
func vjpZero(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node { return b.zerosLike(x.TensorMeta()) }

func vjpAbs(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.emit("sign", x))
}

func vjpNeg(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node { return b.neg(g) }

func vjpExp(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node { return b.mul(g, y) }

func vjpExp2(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.mul(y, math.Ln2))
}

func vjpExpm1(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.add(y, 1.0))
}

func vjpLog(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node { return b.div(g, x) }

func vjpLog1p(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.div(g, b.add(x, 1.0))
}

func vjpLog2(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.div(g, b.mul(x, math.Ln2))
}

func vjpLog10(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.div(g, b.mul(x, math.Ln10))
}

// sqrt: grad / (2 * result).
func vjpSqrt(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.div(g, b.mul(y, 2.0))
}

// rsqrt: -0.5 * grad * result^3.
func vjpRsqrt(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(b.mul(g, -0.5), b.mul(b.mul(y, y), y))
}

func vjpSin(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.emit("cos", x))
}

func vjpCos(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.neg(b.emit("sin", x)))
}

// tan: grad * (1 + result^2).
func vjpTan(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.add(b.mul(y, y), 1.0))
}

// asin: grad * rsqrt(1 - x^2).
func vjpAsin(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.emit("rsqrt", b.sub(1.0, b.mul(x, x))))
}

// acos: -grad * rsqrt(1 - x^2).
func vjpAcos(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.neg(b.emit("rsqrt", b.sub(1.0, b.mul(x, x)))))
}

// atan: grad / (x^2 + 1).
func vjpAtan(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.div(g, b.add(b.mul(x, x), 1.0))
}

func vjpSinh(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.emit("cosh", x))
}

func vjpCosh(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.emit("sinh", x))
}

// tanh: grad * (1 - result^2) (tanh_backward).
func vjpTanh(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.sub(1.0, b.mul(y, y)))
}

// sigmoid: grad * (1 - result) * result (sigmoid_backward).
func vjpSigmoid(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(b.mul(g, b.sub(1.0, y)), y)
}

// erf: grad * 2/sqrt(pi) * exp(-x^2).
func vjpErf(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.mul(b.emit("exp", b.neg(b.mul(x, x))), 2/math.Sqrt(math.Pi)))
}

// erfc: -grad * 2/sqrt(pi) * exp(-x^2).
func vjpErfc(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(g, b.mul(b.emit("exp", b.neg(b.mul(x, x))), -2/math.Sqrt(math.Pi)))
}

// reciprocal: -grad * result^2.
func vjpReciprocal(b *builder, x, y, g *fxgraph.Node) *fxgraph.Node {
	return b.mul(b.neg(g), b.mul(y, y))
}

func vjpAdd(c *vjpCtx) {
	for i := range 2 {
		if c.needs(i) {
			c.give(c.x(i), c.g)
		}
	}
}

func vjpSub(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.g)
	}
	if c.needs(1) {
		c.give(c.x(1), c.neg(c.g))
	}
}

func vjpMul(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.mul(c.g, c.in(1)))
	}
	if c.needs(1) {
		c.give(c.x(1), c.mul(c.g, c.in(0)))
	}
}

// fma (self·other + addend): self: grad·other, other: grad·self, addend: grad.
func vjpFma(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.mul(c.g, c.in(1)))
	}
	if c.needs(1) {
		c.give(c.x(1), c.mul(c.g, c.in(0)))
	}
	if c.needs(2) {
		c.give(c.x(2), c.g)
	}
}

// div: self: grad / other; other: -grad * ((self / other) / other), self / other being the
// result.
func vjpDiv(c *vjpCtx) {
	d := c.in(1)
	if c.needs(0) {
		c.give(c.x(0), c.div(c.g, d))
	}
	if c.needs(1) {
		c.give(c.x(1), c.mul(c.neg(c.g), c.div(c.n, d)))
	}
}

// floordiv is piecewise constant: zero gradients for both operands (torch 1.13's
// div(rounding_mode="floor")).
func vjpFloordiv(c *vjpCtx) {
	for i := range 2 {
		if c.needs(i) {
			c.give(c.x(i), c.zerosLike(c.x(i).TensorMeta())) // div(rounding_mode=...): zeros
		}
	}
}

// remainder: self: grad; other: -grad * floor(self / other).
func vjpRemainder(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.g)
	}
	if c.needs(1) {
		c.give(c.x(1), c.mul(c.neg(c.g), c.emit("floordiv", c.in(0), c.in(1))))
	}
}

// fmod: self: grad; other: -grad * trunc(self / other).
func vjpFmod(c *vjpCtx) {
	if c.needs(0) {
		c.give(c.x(0), c.g)
	}
	if c.needs(1) {
		c.give(c.x(1), c.mul(c.neg(c.g), c.emit("trunc", c.div(c.in(0), c.in(1)))))
	}
}

// pow (torch's pow_backward_self / pow_backward_exponent):
//
//	self:     where(exponent == 0, 0, grad * exponent * self^(exponent - 1))
//	exponent: where(self == 0 & exponent >= 0, 0, grad * result * log(self))
func vjpPow(c *vjpCtx) {
	a, e := c.num(0), c.num(1)
	if c.needs(0) {
		x := c.x(0)
		var grad *fxgraph.Node
		if ef, ok := e.(float64); ok {
			if ef != 0 {
				// torch's pow_backward: grad · (e · x^(e−1)), in that order
				grad = c.mul(c.g, c.mul(c.emit("pow", x, ef-1), ef))
			}
		} else {
			en := e.(*fxgraph.Node)
			r := c.mul(c.mul(c.g, en), c.emit("pow", x, c.sub(en, 1.0)))
			grad = c.where(c.emit("eq", en, 0.0), 0.0, r)
		}
		c.give(x, grad)
	}
	if c.needs(1) {
		en := c.x(1)
		var grad *fxgraph.Node
		if af, ok := a.(float64); ok {
			r := c.mul(c.mul(c.g, c.n), math.Log(af))
			if af == 0 {
				r = c.where(c.emit("ge", en, 0.0), 0.0, r)
			}
			grad = r
		} else {
			an := a.(*fxgraph.Node)
			r := c.mul(c.mul(c.g, c.n), c.emit("log", an))
			zero := c.emit("logical_and", c.emit("eq", an, 0.0), c.emit("ge", en, 0.0))
			grad = c.where(zero, 0.0, r)
		}
		c.give(en, grad)
	}
}

// vjpMaxMin is maximum (max) or minimum. Between two tensors it is torch's rule: the gradient
// goes to the larger (smaller) operand and is split evenly on ties; a NaN operand gets it all.
// Against a number (how relu, clamp, hardtanh decompose) the tensor gets the gradient where it
// is strictly larger (smaller) than the number or NaN: relu's and hardtanh's rule (torch's
// threshold_backward and hardtanh_backward give 0 on ties; clamp would give the whole gradient
// there).
func vjpMaxMin(isMax bool) vjpFn {
	loses, wins := "lt", "gt"
	if !isMax {
		loses, wins = "gt", "lt"
	}
	return func(c *vjpCtx) {
		a, b := c.in(0), c.in(1)
		if c.x(0) == nil || c.x(1) == nil {
			i, other := 0, b
			if c.x(0) == nil {
				i, other = 1, a
			}
			if c.needs(i) {
				// maximum: zero where x <= number; minimum: zero where x >= number.
				cmp := "le"
				if !isMax {
					cmp = "ge"
				}
				c.give(c.x(i), c.where(c.emit(cmp, c.x(i), other), 0.0, c.g))
			}
			return
		}
		if !c.needs(0) && !c.needs(1) {
			return
		}
		c.exact(a, b)
		shared := c.where(c.emit("eq", a, b), c.div(c.g, 2.0), c.g)
		if c.needs(0) {
			c.give(c.x(0), c.where(c.emit(loses, a, b), 0.0, shared))
		}
		if c.needs(1) {
			c.give(c.x(1), c.where(c.emit(wins, a, b), 0.0, shared))
		}
	}
}

// atan2: self: grad * other * recip; other: grad * -self * recip, recip = 1 / (self^2 +
// other^2), as torch computes them; torch 2.14 zeroes recip where the sum is 0
// (Behavior().Atan2GradZeroAtOrigin).
func vjpAtan2(c *vjpCtx) {
	a, b := c.num(0), c.num(1)
	sq := func(v any) any {
		if f, ok := v.(float64); ok {
			return f * f
		}
		return c.mul(v, v)
	}
	denom := c.add(sq(a), sq(b))
	recip := c.emit("reciprocal", denom)
	if primtorch.Behavior().Atan2GradZeroAtOrigin {
		recip = c.where(c.emit("eq", denom, 0.0), 0.0, recip)
	}
	if c.needs(0) {
		c.give(c.x(0), c.mul(c.mul(c.g, b), recip))
	}
	if c.needs(1) {
		negA := any(nil)
		if f, ok := a.(float64); ok {
			negA = -f
		} else {
			negA = c.neg(a.(*fxgraph.Node))
		}
		c.give(c.x(1), c.mul(c.mul(c.g, negA), recip))
	}
}

// hypot: self: grad * self / result; other: grad * other / result.
func vjpHypot(c *vjpCtx) {
	for i := range 2 {
		if c.needs(i) {
			c.give(c.x(i), c.mul(c.g, c.div(c.x(i), c.n)))
		}
	}
}

// copysign: self: grad * (result / self) with 0 where self == 0; other: zeros.
func vjpCopysign(c *vjpCtx) {
	if c.needs(0) {
		x := c.x(0)
		ratio := c.where(c.emit("eq", x, 0.0), 0.0, c.div(c.n, x))
		c.give(x, c.mul(c.g, ratio))
	}
	if c.needs(1) {
		c.give(c.x(1), nil)
	}
}

// where(cond, a, b): a gets the gradient where cond holds, b elsewhere.
func vjpWhere(c *vjpCtx) {
	cond := c.in(0)
	for i, pick := range []bool{true, false} {
		if !c.needs(i + 1) {
			continue
		}
		x := c.x(i + 1)
		if cv, ok := cond.(bool); ok {
			if cv == pick {
				c.give(x, c.g)
			} else {
				c.give(x, nil)
			}
			continue
		}
		if pick {
			c.give(x, c.where(cond, c.g, 0.0))
		} else {
			c.give(x, c.where(cond, 0.0, c.g))
		}
	}
}

// convert_element_type: the gradient in the input's dtype.
func vjpConvert(c *vjpCtx) {
	if c.needs(0) {
		x := c.x(0)
		c.give(x, c.convert(c.g, x.TensorMeta().DType))
	}
}
