package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Floats the graph computes (bytecode/itemfloat.go, A136): tensor.item() of a floating-point
// tensor and Python float arithmetic on it. Each defining node's meta is a computed float
// symbol; here it becomes a 0-d float64 tensor (d.computed) holding exactly the double Python
// holds: + - * / and unary - and abs are IEEE operations in float64 either way, ** is libm's
// pow as CPython calls it, math.sqrt is the correctly rounded sqrt. Where Python raises instead
// (a division by zero, 0.0 to a negative power, an overflowing power, the square root of a
// negative number) or gives a complex number (a negative number to a fractional power), a
// prims.check flags the value: the compiled graph then stops before writing or drawing anything
// (inductor orders checks first) and torch runs the captured graph, in which these nodes are
// Python's own operators, so the user sees eager's exception and effects. Consumers read the
// float as a SymFloat (a Python float for type promotion); emit substitutes the tensor, in the
// operand's dtype and shape, where a prim takes it.

// pyFloatNode decomposes a node defining a computed float.
func (d *decomposer) pyFloatNode(n *fxgraph.Node, f primtorch.SymFloat) error {
	if d.computed == nil {
		d.computed = map[int]*fxgraph.Node{}
	}
	operand := func(i int) (val, error) {
		switch a := n.Args[i].(type) {
		case *fxgraph.Node:
			switch v := d.env[a].(type) {
			case primtorch.SymFloat:
				if v.IsComputed() {
					return d.computed[v.ID], nil
				}
				return v, nil
			case *tstate:
				return d.read(v), nil
			}
		case fxgraph.Const:
			switch x := a.V.(type) {
			case float64:
				return x, nil
			case int64:
				return float64(x), nil
			case bool:
				if x {
					return 1.0, nil
				}
				return 0.0, nil
			case primtorch.SymFloat:
				if x.IsComputed() {
					return d.computed[x.ID], nil
				}
				return x, nil
			}
		}
		return nil, d.unsupportedf("operand %d of %s is not a float", i, n.Target)
	}
	args := make([]val, len(n.Args))
	for i := range n.Args {
		v, err := operand(i)
		if err != nil {
			return err
		}
		args[i] = v
	}
	f64 := primtorch.Float64
	// every operand as a 0-d float64 tensor
	scalar := func(v val) val {
		if metaOf(v) != nil {
			return v
		}
		if a, ok := v.(primtorch.SymFloat); ok {
			// a float argument read at run time: 1.0 * a is a, signed zeros and NaNs included
			return d.mul(d.full([]sym{}, 1.0, f64), a)
		}
		return d.full([]sym{}, v, f64)
	}
	lt := func(x val, y float64) val { return d.prim("lt", scalar(x), y) }
	var r val
	switch {
	case n.Op == fxgraph.CallMethod && n.Target == "item":
		x := args[0]
		if metaOf(x) == nil || metaOf(x).Numel() != 1 {
			return d.unsupportedf("item() of %v", metaOf(x))
		}
		r = d.convert(d.view(x, []sym{}), f64)
		r = d.prim("clone", r) // (a value of its own, never a view of the tensor)
	case n.Target == "operator.add":
		r = d.add(scalar(args[0]), args[1])
	case n.Target == "operator.sub":
		r = d.sub(scalar(args[0]), args[1])
	case n.Target == "operator.mul":
		r = d.mul(scalar(args[0]), args[1])
	case n.Target == "operator.neg":
		r = d.un("neg", scalar(args[0]))
	case n.Target == "operator.abs":
		r = d.un("abs", scalar(args[0]))
	case n.Target == "operator.truediv":
		// ZeroDivisionError: float division by zero
		d.check(d.prim("eq", scalar(args[1]), 0.0))
		r = d.div(scalar(args[0]), args[1])
	case n.Target == "operator.floordiv":
		d.check(d.prim("eq", scalar(args[1]), 0.0))
		r, _ = d.pyDivMod(scalar(args[0]), scalar(args[1]))
	case n.Target == "operator.mod":
		d.check(d.prim("eq", scalar(args[1]), 0.0))
		_, r = d.pyDivMod(scalar(args[0]), scalar(args[1]))
	case n.Target == "math.sqrt":
		// ValueError: math domain error (sqrt(-0.0) is -0.0, sqrt(nan) nan)
		d.check(lt(args[0], 0))
		r = d.un("sqrt", scalar(args[0]))
	case n.Target == "operator.pow":
		r = d.pyPow(scalar(args[0]), scalar(args[1]))
	default:
		return d.unsupportedf("a float computed by %s", n.Target)
	}
	node := asNode(r)
	d.computed[f.ID] = node
	d.env[n] = f
	return nil
}

// pyPow is CPython's float ** float where it gives a float: pow(x, y) (C's pow agrees with
// every special case CPython handles itself: x ** 0 and 1 ** y are 1, NaN propagates, the
// infinities); checked where CPython raises — 0.0 to a negative power (ZeroDivisionError), a
// finite result out of range (OverflowError) — or returns a complex number (a negative finite x
// to a finite non-integer power).
func (d *decomposer) pyPow(x, y val) val {
	r := d.prim("pow", x, y)
	finite := func(v val) val { return d.prim("isfinite", v) }
	and := func(a, b val) val { return d.prim("logical_and", a, b) }
	or := func(a, b val) val { return d.prim("logical_or", a, b) }
	zeroNeg := and(d.prim("eq", x, 0.0), d.prim("lt", y, 0.0))
	bothFinite := and(finite(x), finite(y))
	complexResult := and(and(d.prim("lt", x, 0.0), bothFinite), d.prim("ne", y, d.un("floor", y)))
	overflow := and(and(bothFinite, d.prim("ne", x, 0.0)), d.prim("isinf", r))
	d.check(or(or(zeroNeg, complexResult), overflow))
	return r
}

// pyDivMod is CPython's float floor division and remainder of x by y (float_floor_div,
// float_rem: _float_div_mod), for y != 0:
//
//	mod = fmod(x, y); div = (x - mod) / y
//	if mod: if (y < 0) != (mod < 0): mod += y; div -= 1
//	else: mod = copysign(0, y)
//	if div: q = floor(div); if div - q > 0.5: q += 1
//	else: q = copysign(0, x / y)
func (d *decomposer) pyDivMod(x, y val) (q, mod val) {
	zero := func(v val) val { return d.prim("eq", v, 0.0) }
	mod0 := d.bin("fmod", x, y)
	div0 := d.div(d.sub(x, mod0), y)
	flip := d.prim("ne", d.prim("lt", y, 0.0), d.prim("lt", mod0, 0.0))
	adjust := d.prim("logical_and", d.prim("logical_not", zero(mod0)), flip)
	mod = d.where(zero(mod0), d.bin("copysign", d.full([]sym{}, 0.0, primtorch.Float64), y), d.where(adjust, d.add(mod0, y), mod0))
	div := d.where(adjust, d.sub(div0, 1.0), div0)
	fl := d.un("floor", div)
	snapped := d.where(d.prim("gt", d.sub(div, fl), 0.5), d.add(fl, 1.0), fl)
	q = d.where(zero(div), d.bin("copysign", d.full([]sym{}, 0.0, primtorch.Float64), d.div(x, y)), snapped)
	return q, mod
}

// check emits prims.check(cond): the compiled graph's run is refused where cond holds (see the
// file comment).
func (d *decomposer) check(cond val) {
	d.prim("check", cond)
}

// computedOperand is the tensor standing for a computed float operand of a prim whose tensor
// operand ref fixes the dtype and shape (nil ref: a 0-d float64 tensor), or nil when v is not one.
func (d *decomposer) computedOperand(v any, ref *primtorch.TensorMeta) val {
	f, ok := v.(primtorch.SymFloat)
	if !ok || !f.IsComputed() {
		return nil
	}
	node := d.computed[f.ID]
	if node == nil {
		bug("computed float %s used before its node", f)
	}
	if ref == nil {
		return node
	}
	return d.expand(d.convert(node, ref.DType), ref.SymSizes())
}
