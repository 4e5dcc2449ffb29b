package ref

import (
	"errors"
	"fmt"
	"math"

	"ptgo/primtorch"
)

// Elementwise ops compute in float64 for floating dtypes and in int64 for integral dtypes and
// bool; every store rounds (or wraps) to the result dtype.

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

var floatUnary = map[primtorch.OpID]func(float64) float64{
	primtorch.OpPrimAbs:        math.Abs,
	primtorch.OpPrimNeg:        func(x float64) float64 { return -x },
	primtorch.OpPrimExp:        math.Exp,
	primtorch.OpPrimExp2:       math.Exp2,
	primtorch.OpPrimExpm1:      math.Expm1,
	primtorch.OpPrimLog:        math.Log,
	primtorch.OpPrimLog1p:      math.Log1p,
	primtorch.OpPrimLog2:       math.Log2,
	primtorch.OpPrimLog10:      math.Log10,
	primtorch.OpPrimSqrt:       math.Sqrt,
	primtorch.OpPrimRsqrt:      func(x float64) float64 { return 1 / math.Sqrt(x) },
	primtorch.OpPrimSin:        math.Sin,
	primtorch.OpPrimCos:        math.Cos,
	primtorch.OpPrimTan:        math.Tan,
	primtorch.OpPrimAsin:       math.Asin,
	primtorch.OpPrimAcos:       math.Acos,
	primtorch.OpPrimAtan:       math.Atan,
	primtorch.OpPrimSinh:       math.Sinh,
	primtorch.OpPrimCosh:       math.Cosh,
	primtorch.OpPrimTanh:       math.Tanh,
	primtorch.OpPrimSigmoid:    func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	primtorch.OpPrimErf:        math.Erf,
	primtorch.OpPrimErfc:       math.Erfc,
	primtorch.OpPrimFloor:      math.Floor,
	primtorch.OpPrimCeil:       math.Ceil,
	primtorch.OpPrimRound:      math.RoundToEven,
	primtorch.OpPrimTrunc:      math.Trunc,
	primtorch.OpPrimSign:       signF,
	primtorch.OpPrimReciprocal: func(x float64) float64 { return 1 / x },
	primtorch.OpPrimLogicalNot: func(x float64) float64 { return b2f(x == 0) },
	primtorch.OpPrimIsnan:      func(x float64) float64 { return b2f(math.IsNaN(x)) },
	primtorch.OpPrimIsinf:      func(x float64) float64 { return b2f(math.IsInf(x, 0)) },
	primtorch.OpPrimIsfinite:   func(x float64) float64 { return b2f(!math.IsNaN(x) && !math.IsInf(x, 0)) },
}

// signF is torch 1.13's sign: -1, 0 or 1, and 0 for NaN.
func signF(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

var intUnary = map[primtorch.OpID]func(x int64, dt primtorch.DType) int64{
	primtorch.OpPrimAbs: func(x int64, _ primtorch.DType) int64 {
		if x < 0 {
			return -x
		}
		return x
	},
	primtorch.OpPrimNeg:   func(x int64, _ primtorch.DType) int64 { return -x },
	primtorch.OpPrimFloor: func(x int64, _ primtorch.DType) int64 { return x },
	primtorch.OpPrimCeil:  func(x int64, _ primtorch.DType) int64 { return x },
	primtorch.OpPrimRound: func(x int64, _ primtorch.DType) int64 { return x },
	primtorch.OpPrimTrunc: func(x int64, _ primtorch.DType) int64 { return x },
	primtorch.OpPrimSign: func(x int64, _ primtorch.DType) int64 {
		switch {
		case x > 0:
			return 1
		case x < 0:
			return -1
		}
		return 0
	},
	primtorch.OpPrimBitwiseNot: func(x int64, dt primtorch.DType) int64 {
		if dt == primtorch.Bool {
			return 1 - x
		}
		return ^x
	},
	primtorch.OpPrimLogicalNot: func(x int64, _ primtorch.DType) int64 { return b2i(x == 0) },
	primtorch.OpPrimIsnan:      func(int64, primtorch.DType) int64 { return 0 },
	primtorch.OpPrimIsinf:      func(int64, primtorch.DType) int64 { return 0 },
	primtorch.OpPrimIsfinite:   func(int64, primtorch.DType) int64 { return 1 },
}

var floatBinary = map[primtorch.OpID]func(a, b float64) float64{
	primtorch.OpPrimAdd:        func(a, b float64) float64 { return a + b },
	primtorch.OpPrimSub:        func(a, b float64) float64 { return a - b },
	primtorch.OpPrimMul:        func(a, b float64) float64 { return a * b },
	primtorch.OpPrimDiv:        func(a, b float64) float64 { return a / b },
	primtorch.OpPrimFloordiv:   floorDivF,
	primtorch.OpPrimRemainder:  remainderF,
	primtorch.OpPrimFmod:       math.Mod,
	primtorch.OpPrimPow:        math.Pow,
	primtorch.OpPrimMaximum:    maximumF,
	primtorch.OpPrimMinimum:    minimumF,
	primtorch.OpPrimAtan2:      math.Atan2,
	primtorch.OpPrimHypot:      math.Hypot,
	primtorch.OpPrimCopysign:   math.Copysign,
	primtorch.OpPrimEq:         func(a, b float64) float64 { return b2f(a == b) },
	primtorch.OpPrimNe:         func(a, b float64) float64 { return b2f(a != b) },
	primtorch.OpPrimLt:         func(a, b float64) float64 { return b2f(a < b) },
	primtorch.OpPrimLe:         func(a, b float64) float64 { return b2f(a <= b) },
	primtorch.OpPrimGt:         func(a, b float64) float64 { return b2f(a > b) },
	primtorch.OpPrimGe:         func(a, b float64) float64 { return b2f(a >= b) },
	primtorch.OpPrimLogicalAnd: func(a, b float64) float64 { return b2f(a != 0 && b != 0) },
	primtorch.OpPrimLogicalOr:  func(a, b float64) float64 { return b2f(a != 0 || b != 0) },
	primtorch.OpPrimLogicalXor: func(a, b float64) float64 { return b2f((a != 0) != (b != 0)) },
}

// floorDivF is Python's (and torch's) floor division of floats.
func floorDivF(a, b float64) float64 {
	if b == 0 {
		return a / b
	}
	mod := math.Mod(a, b)
	div := (a - mod) / b
	if mod != 0 && (b < 0) != (mod < 0) {
		div--
	}
	if div == 0 {
		return math.Copysign(0, a/b)
	}
	fl := math.Floor(div)
	if div-fl > 0.5 {
		fl++
	}
	return fl
}

// remainderF is Python's (and torch's) modulo of floats: the result has the divisor's sign.
func remainderF(a, b float64) float64 {
	mod := math.Mod(a, b)
	if mod != 0 && (b < 0) != (mod < 0) {
		mod += b
	}
	return mod
}

// maximumF and minimumF propagate NaN; a tie keeps the first operand (max(-0.0, 0) is -0.0, as
// eager's relu and clamp with a number give).
func maximumF(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	if a >= b {
		return a
	}
	return b
}

func minimumF(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	if a <= b {
		return a
	}
	return b
}

var errIntDivZero = "ZeroDivisionError: integer division by zero"

var intBinary = map[primtorch.OpID]func(a, b int64, dt primtorch.DType) (int64, string){
	primtorch.OpPrimAdd: func(a, b int64, _ primtorch.DType) (int64, string) { return a + b, "" },
	primtorch.OpPrimSub: func(a, b int64, _ primtorch.DType) (int64, string) { return a - b, "" },
	primtorch.OpPrimMul: func(a, b int64, _ primtorch.DType) (int64, string) { return a * b, "" },
	primtorch.OpPrimFloordiv: func(a, b int64, _ primtorch.DType) (int64, string) {
		if b == 0 {
			return 0, errIntDivZero
		}
		q := a / b
		if (a%b != 0) && ((a < 0) != (b < 0)) {
			q--
		}
		return q, ""
	},
	primtorch.OpPrimRemainder: func(a, b int64, _ primtorch.DType) (int64, string) {
		if b == 0 {
			return 0, errIntDivZero
		}
		m := a % b
		if m != 0 && (m < 0) != (b < 0) {
			m += b
		}
		return m, ""
	},
	primtorch.OpPrimFmod: func(a, b int64, _ primtorch.DType) (int64, string) {
		if b == 0 {
			return 0, errIntDivZero
		}
		return a % b, ""
	},
	primtorch.OpPrimPow: func(a, b int64, _ primtorch.DType) (int64, string) { return intPow(a, b), "" },
	primtorch.OpPrimMaximum: func(a, b int64, _ primtorch.DType) (int64, string) {
		return max(a, b), ""
	},
	primtorch.OpPrimMinimum: func(a, b int64, _ primtorch.DType) (int64, string) {
		return min(a, b), ""
	},
	primtorch.OpPrimBitwiseAnd: func(a, b int64, _ primtorch.DType) (int64, string) { return a & b, "" },
	primtorch.OpPrimBitwiseOr:  func(a, b int64, _ primtorch.DType) (int64, string) { return a | b, "" },
	primtorch.OpPrimBitwiseXor: func(a, b int64, _ primtorch.DType) (int64, string) { return a ^ b, "" },
	primtorch.OpPrimShiftLeft: func(a, b int64, dt primtorch.DType) (int64, string) {
		if primtorch.Behavior().ShiftCountBounded && (b < 0 || b >= shiftWidth(dt)) {
			return 0, ""
		}
		return a << uint(b&shiftMask(dt)), ""
	},
	primtorch.OpPrimShiftRight: func(a, b int64, dt primtorch.DType) (int64, string) {
		if primtorch.Behavior().ShiftCountBounded && (b < 0 || b >= shiftWidth(dt)) {
			if a < 0 && dt != primtorch.UInt8 {
				return -1, ""
			}
			return 0, ""
		}
		if dt == primtorch.UInt8 {
			return int64(uint64(a) >> uint(b&shiftMask(dt))), ""
		}
		return a >> uint(b&shiftMask(dt)), ""
	},
	primtorch.OpPrimEq:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a == b), "" },
	primtorch.OpPrimNe:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a != b), "" },
	primtorch.OpPrimLt:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a < b), "" },
	primtorch.OpPrimLe:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a <= b), "" },
	primtorch.OpPrimGt:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a > b), "" },
	primtorch.OpPrimGe:         func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a >= b), "" },
	primtorch.OpPrimLogicalAnd: func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a != 0 && b != 0), "" },
	primtorch.OpPrimLogicalOr:  func(a, b int64, _ primtorch.DType) (int64, string) { return b2i(a != 0 || b != 0), "" },
	primtorch.OpPrimLogicalXor: func(a, b int64, _ primtorch.DType) (int64, string) { return b2i((a != 0) != (b != 0)), "" },
}

// shiftMask is how torch 1.13's shifts (C++ << and >> on x86, int8 to int32 promoted to int)
// treat the shift count: its low 6 bits for int64, its low 5 bits for the other integral
// dtypes. A count of 64 leaves an int64 as it is, 40 shifts an int32 by 8.
func shiftMask(dt primtorch.DType) int64 {
	if dt == primtorch.Int64 {
		return 63
	}
	return 31
}

// shiftWidth is the width in bits of an integral dtype: torch 2's shifts give 0 (or the sign)
// for a count of that or more (primtorch's ShiftCountBounded).
func shiftWidth(dt primtorch.DType) int64 { return 8 * int64(dt.ItemSize()) }

// intPow is an exact integer power; negative exponents give 1/a^b truncated, as torch.
func intPow(a, b int64) int64 {
	if b < 0 {
		switch a {
		case 1:
			return 1
		case -1:
			if b%2 == 0 {
				return 1
			}
			return -1
		}
		return 0
	}
	r := int64(1)
	for b > 0 {
		if b&1 == 1 {
			r *= a
		}
		a *= a
		b >>= 1
	}
	return r
}

// operand is one elementwise input: a tensor's storage positions, or a number.
type operand struct {
	t   *Tensor
	pos []int64
	f   float64
	i   int64
}

// operand reads parameter name as an elementwise input of dtype dt.
func (c *evalCtx) operand(name string, dt primtorch.DType) operand {
	if t := c.tensor(name); t != nil {
		return operand{t: t, pos: t.positions()}
	}
	v := c.a.Get(name)
	var o operand
	switch x := v.(type) {
	case bool:
		o.f, o.i = b2f(x), b2i(x)
	case int64:
		o.f, o.i = float64(x), x
	case float64:
		o.f, o.i = x, floatToInt(primtorch.Int64, x)
	}
	if isFloat(dt) {
		o.f = roundFloat(dt, o.f)
	} else {
		o.i = wrapInt(dt, o.i)
	}
	return o
}

func (o operand) fAt(k int) float64 {
	if o.t == nil {
		return o.f
	}
	return o.t.getF(o.pos[k])
}

func (o operand) iAt(k int) int64 {
	if o.t == nil {
		return o.i
	}
	return o.t.getI(o.pos[k])
}

// inputDType is the dtype of the elementwise op's tensor operands.
func (c *evalCtx) inputDType(names ...string) primtorch.DType {
	for _, n := range names {
		if t := c.tensor(n); t != nil {
			return t.DType
		}
	}
	return c.meta.DType
}

func unaryOp(c *evalCtx) (any, error) {
	dt := c.inputDType("self")
	x := c.operand("self", dt)
	out := c.newOutput()
	pos := out.positions()
	if isFloat(dt) {
		f := floatUnary[c.op.ID]
		for k, p := range pos {
			out.setF(p, f(x.fAt(k)))
		}
		return out, nil
	}
	f := intUnary[c.op.ID]
	if f == nil {
		return nil, c.errorf("not defined for dtype %s", dt)
	}
	for k, p := range pos {
		out.setI(p, f(x.iAt(k), dt))
	}
	return out, nil
}

func binaryOp(c *evalCtx) (any, error) {
	dt := c.inputDType("self", "other")
	x, y := c.operand("self", dt), c.operand("other", dt)
	out := c.newOutput()
	pos := out.positions()
	if isFloat(dt) {
		f := floatBinary[c.op.ID]
		if f == nil {
			return nil, c.errorf("not defined for dtype %s", dt)
		}
		for k, p := range pos {
			out.setF(p, f(x.fAt(k), y.fAt(k)))
		}
		return out, nil
	}
	f := intBinary[c.op.ID]
	if f == nil {
		return nil, c.errorf("not defined for dtype %s", dt)
	}
	for k, p := range pos {
		v, bad := f(x.iAt(k), y.iAt(k), dt)
		if bad != "" {
			return nil, c.errorf("%s", bad)
		}
		out.setI(p, v)
	}
	return out, nil
}

// ErrCheckFailed is what a prims.check whose condition holds somewhere gives (errors.Is): the
// run is refused, as the compiled graph's is (where Python raises for a float the graph
// computes; decomp/pyfloat.go).
var ErrCheckFailed = errors.New("a check failed (Python raises here for these values)")

func evalCheck(c *evalCtx) (any, error) {
	cond := c.operand("self", primtorch.Bool)
	out := c.newOutput()
	for k, p := range out.positions() {
		if cond.iAt(k) != 0 {
			return nil, fmt.Errorf("%w: %w", c.errorf("element %d", k), ErrCheckFailed)
		}
		out.setI(p, 0)
	}
	return out, nil
}

func evalWhere(c *evalCtx) (any, error) {
	dt := c.meta.DType
	cond := c.operand("condition", primtorch.Bool)
	x, y := c.operand("self", dt), c.operand("other", dt)
	out := c.newOutput()
	for k, p := range out.positions() {
		src := y
		if cond.iAt(k) != 0 {
			src = x
		}
		if isFloat(dt) {
			out.setF(p, src.fAt(k))
		} else {
			out.setI(p, src.iAt(k))
		}
	}
	return out, nil
}

// evalFma is self·other + addend rounded once in float64 (then to the result's dtype: for
// float32 that can differ from one float32 rounding in the last bit, within tolerance).
func evalFma(c *evalCtx) (any, error) {
	dt := c.inputDType("self", "other", "addend")
	x, y, z := c.operand("self", dt), c.operand("other", dt), c.operand("addend", dt)
	out := c.newOutput()
	for k, p := range out.positions() {
		out.setF(p, math.FMA(x.fAt(k), y.fAt(k), z.fAt(k)))
	}
	return out, nil
}

func evalConvert(c *evalCtx) (any, error) {
	out := c.newOutput()
	copyInto(out, c.tensor("self"))
	return out, nil
}
