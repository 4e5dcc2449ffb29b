package inductor

import (
	"fmt"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// The ops table: every op a loop body can apply, with its arity, result kind, cost (for fusion
// decisions) and C rendering. Semantics are torch 1.13's on CPU (DESIGN, primtorch doc.go):
// floordiv and remainder follow Python's signs, fmod C's; maximum/minimum propagate NaN; round
// is half-to-even; integer add/sub/mul/neg wrap; shifts use the shift count modulo the width,
// as x86 does (torch 1.13 does not check it); integer division by zero, which torch reports as an
// error before running the kernel, gives 0.

// cOperands is what a C rendering knows about its operands.
type cOperands struct {
	dt     primtorch.DType // dtype of the operands (of the first value operand for where)
	ct     string          // C compute type of the operands
	f      string          // libm suffix: "f" when computing in float, "" in double
	fl     bool            // floating dtype
	helper func(name string) string
	// infinite: an operand is computed from an infinite constant (a masked_fill with -inf), so
	// infinite lanes are expected rather than exceptional
	infinite bool
}

type opInfo struct {
	arity   int
	boolOut bool // result is bool whatever the operands' dtype
	cost    int
	c       func(o cOperands, a []string) string
}

// opTable is keyed by op name.
var opTable = map[string]*opInfo{}

func init() {
	unaryMath := []string{"exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan",
		"asin", "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc"}
	for _, name := range unaryMath {
		name := name
		cost := 6
		if name == "sqrt" {
			cost = 2
		}
		opTable[name] = &opInfo{arity: 1, cost: cost, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s)%s((double)%s)", o.ct, name, a[0])
			}
			if fastFloatMath[name] && o.ct == "float" && o.infinite {
				return o.helper(name) + "(" + a[0] + ")"
			}
			return name + o.f + "(" + a[0] + ")"
		}}
	}
	rounding := map[string]string{"floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc"}
	for name, fn := range rounding {
		fn := fn
		opTable[name] = &opInfo{arity: 1, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return a[0]
			}
			return fn + o.f + "(" + a[0] + ")"
		}}
	}
	simple := map[string]*opInfo{
		"abs": {arity: 1, cost: 1, c: func(o cOperands, a []string) string {
			if o.fl {
				return "fabs" + o.f + "(" + a[0] + ")"
			}
			if o.dt == primtorch.Bool || o.dt == primtorch.UInt8 {
				return a[0]
			}
			return fmt.Sprintf("(%s < 0 ? %s : %s)", a[0], wrapNeg(o, a[0]), a[0])
		}},
		"neg": {arity: 1, cost: 1, c: func(o cOperands, a []string) string {
			if o.fl {
				return floatNeg(o, a[0])
			}
			return wrapNeg(o, a[0])
		}},
		"rsqrt": {arity: 1, cost: 3, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s)(1.0 / sqrt((double)%s))", o.ct, a[0])
			}
			return fmt.Sprintf("(%s / sqrt%s(%s))", one(o), o.f, a[0])
		}},
		"sigmoid": {arity: 1, cost: 6, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s)(1.0 / (1.0 + exp(-(double)%s)))", o.ct, a[0])
			}
			return fmt.Sprintf("(%s / (%s + exp%s(-%s)))", one(o), one(o), o.f, a[0])
		}},
		"reciprocal": {arity: 1, cost: 2, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s)(1.0 / (double)%s)", o.ct, a[0])
			}
			return fmt.Sprintf("(%s / %s)", one(o), a[0])
		}},
		"sign": {arity: 1, cost: 1, c: func(o cOperands, a []string) string {
			return fmt.Sprintf("(%s)((%s > 0) - (%s < 0))", o.ct, a[0], a[0])
		}},
		"bitwise_not": {arity: 1, cost: 1, c: func(o cOperands, a []string) string {
			if o.dt == primtorch.Bool {
				return "(!" + a[0] + ")"
			}
			return fmt.Sprintf("(%s)(~%s)", o.ct, a[0])
		}},
		"logical_not": {arity: 1, boolOut: true, cost: 1, c: func(o cOperands, a []string) string { return "(" + a[0] + " == 0)" }},
		// check(cond) is cond; where it holds the kernel's status gets StatusCheck (a statement
		// the emitter writes before the value: statusCheck)
		"check": {arity: 1, boolOut: true, cost: 1, c: func(o cOperands, a []string) string { return "(" + a[0] + " != 0)" }},
		"isnan": {arity: 1, boolOut: true, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return "0"
			}
			return "(" + a[0] + " != " + a[0] + ")"
		}},
		"isinf": {arity: 1, boolOut: true, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return "0"
			}
			return fmt.Sprintf("(%s == %s || %s == -%s)", a[0], inf(o), a[0], inf(o))
		}},
		"isfinite": {arity: 1, boolOut: true, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return "1"
			}
			return fmt.Sprintf("(%s == %s && %s != %s && %s != -%s)", a[0], a[0], a[0], inf(o), a[0], inf(o))
		}},

		"add": {arity: 2, cost: 1, c: func(o cOperands, a []string) string { return arith(o, "+", a) }},
		"sub": {arity: 2, cost: 1, c: func(o cOperands, a []string) string { return arith(o, "-", a) }},
		"mul": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			// x·(-1) is a negation (gcc folds it into one): floatNeg says why it is spelt so
			if o.fl && isMinusOne(a[1]) {
				return floatNeg(o, a[0])
			}
			if o.fl && isMinusOne(a[0]) {
				return floatNeg(o, a[1])
			}
			return arith(o, "*", a)
		}},
		"div": {arity: 2, cost: 2, c: func(o cOperands, a []string) string {
			if !o.fl {
				return o.helper("div_trunc") + "(" + a[0] + ", " + a[1] + ")"
			}
			if isMinusOne(a[1]) {
				return floatNeg(o, a[0])
			}
			return "(" + a[0] + " / " + a[1] + ")"
		}},
		"floordiv":  {arity: 2, cost: 4, c: helperCall("floordiv")},
		"remainder": {arity: 2, cost: 4, c: helperCall("remainder")},
		"fmod": {arity: 2, cost: 4, c: func(o cOperands, a []string) string {
			if !o.fl {
				return o.helper("fmod") + "(" + a[0] + ", " + a[1] + ")"
			}
			return "fmod" + o.f + "(" + a[0] + ", " + a[1] + ")"
		}},
		"pow": {arity: 2, cost: 8, c: func(o cOperands, a []string) string {
			if !o.fl {
				return o.helper("pow") + "(" + a[0] + ", " + a[1] + ")"
			}
			return "pow" + o.f + "(" + a[0] + ", " + a[1] + ")"
		}},
		"maximum": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s > %s ? %s : %s)", a[0], a[1], a[0], a[1])
			}
			return o.helper("maximum") + "(" + a[0] + ", " + a[1] + ")"
		}},
		"minimum": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			if !o.fl {
				return fmt.Sprintf("(%s < %s ? %s : %s)", a[0], a[1], a[0], a[1])
			}
			return o.helper("minimum") + "(" + a[0] + ", " + a[1] + ")"
		}},
		"atan2":    {arity: 2, cost: 6, c: floatFn2("atan2")},
		"hypot":    {arity: 2, cost: 4, c: floatFn2("hypot")},
		"copysign": {arity: 2, cost: 1, c: floatFn2("copysign")},
		"bitwise_and": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			return fmt.Sprintf("(%s)(%s & %s)", o.ct, a[0], a[1])
		}},
		"bitwise_or": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			return fmt.Sprintf("(%s)(%s | %s)", o.ct, a[0], a[1])
		}},
		"bitwise_xor": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			return fmt.Sprintf("(%s)(%s ^ %s)", o.ct, a[0], a[1])
		}},
		"shift_left": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			if primtorch.Behavior().ShiftCountBounded {
				// torch 2: a negative count or one of the dtype's width or more gives 0
				ut := map[bool]string{true: "uint64_t", false: "uint32_t"}[o.dt == primtorch.Int64]
				return fmt.Sprintf("((uint64_t)(int64_t)(%s) >= %dULL ? (%s)0 : (%s)((%s)%s << (%s)))", a[1], 8*o.dt.ItemSize(), o.ct, o.ct, ut, a[0], a[1])
			}
			switch o.dt {
			case primtorch.Int64:
				return fmt.Sprintf("(int64_t)((uint64_t)%s << (%s & 63))", a[0], a[1])
			case primtorch.Int32:
				return fmt.Sprintf("(int32_t)((uint32_t)%s << (%s & 31))", a[0], a[1])
			}
			return fmt.Sprintf("(%s)((uint32_t)%s << (%s & 31))", o.ct, a[0], a[1])
		}},
		"shift_right": {arity: 2, cost: 1, c: func(o cOperands, a []string) string {
			if primtorch.Behavior().ShiftCountBounded {
				// torch 2: a negative count or one of the dtype's width or more gives the sign
				fill := "0"
				if o.dt != primtorch.UInt8 {
					fill = fmt.Sprintf("(%s < 0 ? -1 : 0)", a[0])
				}
				return fmt.Sprintf("((uint64_t)(int64_t)(%s) >= %dULL ? (%s)%s : (%s)(%s >> (%s)))", a[1], 8*o.dt.ItemSize(), o.ct, fill, o.ct, a[0], a[1])
			}
			if o.dt == primtorch.Int64 {
				return fmt.Sprintf("(int64_t)(%s >> (%s & 63))", a[0], a[1])
			}
			return fmt.Sprintf("(%s)(%s >> (%s & 31))", o.ct, a[0], a[1])
		}},
		"eq":          {arity: 2, boolOut: true, cost: 1, c: cmp("==")},
		"ne":          {arity: 2, boolOut: true, cost: 1, c: cmp("!=")},
		"lt":          {arity: 2, boolOut: true, cost: 1, c: cmp("<")},
		"le":          {arity: 2, boolOut: true, cost: 1, c: cmp("<=")},
		"gt":          {arity: 2, boolOut: true, cost: 1, c: cmp(">")},
		"ge":          {arity: 2, boolOut: true, cost: 1, c: cmp(">=")},
		"logical_and": {arity: 2, boolOut: true, cost: 1, c: logical("&")},
		"logical_or":  {arity: 2, boolOut: true, cost: 1, c: logical("|")},
		"logical_xor": {arity: 2, boolOut: true, cost: 1, c: logical("!=")},
		// an integer (bool) select is rendered as a bit select: gcc 12 does not vectorise a
		// loop with `c ? a : b` on int64 under a float comparison (max pooling's chain of
		// window positions: a scalar loop whose branches mispredict on random data, 13x slower
		// measured), and the operands are computed values either way (masked loads are VMasked)
		"where": {arity: 3, cost: 1, c: func(o cOperands, a []string) string {
			if o.dt.IsIntegral(true) {
				return fmt.Sprintf("((%s) ^ (((%s) ^ (%s)) & -(%s)((%s) != 0)))", a[2], a[1], a[2], o.ct, a[0])
			}
			return fmt.Sprintf("(%s ? %s : %s)", a[0], a[1], a[2])
		}},
		// one rounding (gcc inlines fmaf/fma as vfmadd under -mfma, a libm call without it)
		"fma": {arity: 3, cost: 1, c: func(o cOperands, a []string) string {
			return fmt.Sprintf("fma%s(%s, %s, %s)", o.f, a[0], a[1], a[2])
		}},
	}
	for k, v := range simple {
		opTable[k] = v
	}
}

func one(o cOperands) string {
	if o.f == "f" {
		return "1.0f"
	}
	return "1.0"
}

func inf(o cOperands) string {
	if o.f == "f" {
		return "INFINITY"
	}
	return "(double)INFINITY"
}

// unsignedOf is the unsigned type used for wrapping arithmetic of 32- and 64-bit integers.
func unsignedOf(dt primtorch.DType) string {
	switch dt {
	case primtorch.Int64:
		return "uint64_t"
	case primtorch.Int32:
		return "uint32_t"
	}
	return ""
}

// floatNeg is -a for a floating operand, as a flip of the sign bit (ptgo_neg). gcc 12 folds a
// negated fused multiply-add, -fma(x, y, z), into one fnmsub, -(x·y) - z, which gives +0 where
// x·y + z is +0 and the negation -0 (x·y = +0, z = -0, or x·y = -z): a mul/div by -1 or a neg of
// an addcmul/add-with-alpha result lost its sign of zero (fuzz seed 8589). gcc does not see
// through the bit flip, and it vectorises it as one xor, as it does -a.
func floatNeg(o cOperands, a string) string {
	return o.helper("neg") + "(" + a + ")"
}

// isMinusOne reports whether a rendered operand is the literal -1 (-1.0, -1.0f, (-1), ...).
func isMinusOne(a string) bool {
	for strings.HasPrefix(a, "(") && strings.HasSuffix(a, ")") {
		a = a[1 : len(a)-1]
	}
	a = strings.TrimSuffix(a, "f")
	v, err := strconv.ParseFloat(a, 64)
	return err == nil && v == -1
}

func wrapNeg(o cOperands, a string) string {
	if u := unsignedOf(o.dt); u != "" {
		return fmt.Sprintf("(%s)(0 - (%s)%s)", o.ct, u, a)
	}
	return fmt.Sprintf("(%s)(-%s)", o.ct, a)
}

func arith(o cOperands, op string, a []string) string {
	if o.fl {
		return "(" + a[0] + " " + op + " " + a[1] + ")"
	}
	if o.dt == primtorch.Bool {
		switch op {
		case "+":
			return "(" + a[0] + " | " + a[1] + ")"
		case "*":
			return "(" + a[0] + " & " + a[1] + ")"
		}
		return "(" + a[0] + " ^ " + a[1] + ")"
	}
	if u := unsignedOf(o.dt); u != "" {
		return fmt.Sprintf("(%s)((%s)%s %s (%s)%s)", o.ct, u, a[0], op, u, a[1])
	}
	return fmt.Sprintf("(%s)(%s %s %s)", o.ct, a[0], op, a[1])
}

func helperCall(name string) func(o cOperands, a []string) string {
	return func(o cOperands, a []string) string { return o.helper(name) + "(" + a[0] + ", " + a[1] + ")" }
}

func floatFn2(fn string) func(o cOperands, a []string) string {
	return func(o cOperands, a []string) string {
		if !o.fl {
			return fmt.Sprintf("(%s)%s((double)%s, (double)%s)", o.ct, fn, a[0], a[1])
		}
		return fn + o.f + "(" + a[0] + ", " + a[1] + ")"
	}
}

func cmp(op string) func(o cOperands, a []string) string {
	return func(o cOperands, a []string) string { return "(" + a[0] + " " + op + " " + a[1] + ")" }
}

func logical(op string) func(o cOperands, a []string) string {
	return func(o cOperands, a []string) string {
		return "((" + a[0] + " != 0) " + op + " (" + a[1] + " != 0))"
	}
}

// fastFloatMath are the float functions rendered as an inline helper (exp_float) instead of a
// libmvec call when an operand is computed from an infinite constant, as the exp of a masked
// softmax is (exp(where(mask, -inf, x) - max)). glibc's vector expf falls back to scalar calls
// for a whole vector when one lane is out of range: with half the lanes -inf it took 3.2-6.5 ns
// per element here against 0.58 for the helper (gpt_block's causally masked softmax kernel
// went from 400 to 172 µs). On ordinary inputs libmvec stays: alone the helper is as fast
// (0.44 vs 0.47 ns), but inside the generated kernels it was slower (a softmax kernel 73 vs
// 56 µs, pointwise_chain's 3.2 vs 2.9 ms: more constants held in registers). tanh stays on
// libmvec too (an exp-based helper took 1.05 ns against 0.90; a rational approximation 0.5 ns
// but 5 ulp off). Doubles keep libm/libmvec.
var fastFloatMath = map[string]bool{"exp": true}

// fmaMacro is PTGO_FMAF: a fused multiply-add where the ISA has one (-mfma), else a·b + c.
const fmaMacro = `#ifndef PTGO_FMAF
#ifdef __FMA__
#define PTGO_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#else
#define PTGO_FMAF(a, b, c) ((a) * (b) + (c))
#endif
#endif
`

// cHelpers are small static inline functions the renderings call, defined once per compute
// type in a translation unit that uses them. %T is the C type, %f the libm suffix.
var cHelpers = map[string]string{
	// exp(x): Cephes' reduction x = n·ln2 + r (ln2 in two parts, so n·ln2_hi is exact), a
	// degree-6 polynomial for exp(r), and 2^n applied in two halves so that results near
	// overflow and subnormal results round once; selects give inf above 88.72 and 0 below
	// -103.97, in an order that lets NaN through. 1.01 ulp over all floats.
	"exp_float": fmaMacro + `static inline __attribute__((always_inline)) float ptgo_exp_float(float x) {
    float t = PTGO_FMAF(x, 1.44269504088896341f, 12582912.0f);
    float n = t - 12582912.0f;
    float r = PTGO_FMAF(n, -0.693359375f, x);
    r = PTGO_FMAF(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = PTGO_FMAF(p, r, 1.3981999507e-3f);
    p = PTGO_FMAF(p, r, 8.3334519073e-3f);
    p = PTGO_FMAF(p, r, 4.1665795894e-2f);
    p = PTGO_FMAF(p, r, 1.6666665459e-1f);
    p = PTGO_FMAF(p, r, 5.0000001201e-1f);
    p = PTGO_FMAF(p, r * r, r) + 1.0f;
    int32_t ni = (int32_t)n;
    int32_t n1 = ni >> 1, n2 = ni - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    __builtin_memcpy(&s1, &b1, 4);
    __builtin_memcpy(&s2, &b2, 4);
    float y = p * s1 * s2;
    y = x > 88.72283935546875f ? INFINITY : y;
    return x < -103.972084045410156f ? 0.0f : y;
}`,
	// neg(x): the sign bit flipped through an integer of the same width (floatNeg says why)
	"neg_float": `static inline %T ptgo_neg_%T(%T x) {
    if (sizeof(%T) == 4) {
        union { %T f; uint32_t u; } v;
        v.f = x;
        v.u ^= 0x80000000u;
        return v.f;
    } else {
        union { %T f; uint64_t u; } v;
        v.f = x;
        v.u ^= 0x8000000000000000ull;
        return v.f;
    }
}
`,
	"floordiv_float": `static inline %T ptgo_floordiv_%T(%T a, %T b) {
    if (b == 0) return a / b;
    %T mod = fmod%f(a, b);
    %T div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return copysign%f(0, a / b);
    %T fl = floor%f(div);
    if (div - fl > (%T)0.5) fl += 1;
    return fl;
}`,
	"floordiv_int": `static inline %T ptgo_floordiv_%T(%T a, %T b) {
    if (b == 0) return 0;
    if (b == -1) return (%T)(0 - (%U)a);
    %T q = a / b, r = a % b;
    return (r != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}`,
	// NaN-propagating max/min as two selects, the second on a's NaN: gcc vectorizes these where
	// the one-expression form ((a != a || a >= b) ? a : b) became branches whenever the loads are
	// strided (a 3×3 stride-2 max pool: 13 ms scalar with mispredicted branches, 0.4 ms
	// vectorized; a contiguous ReLU 0.12 → 0.09 ms). A tie keeps the first operand: max(x, 0) of
	// -0.0 is -0.0, as eager's relu and clamp with a number give (between two tensors eager's own
	// tie depends on its vector width).
	"maximum_float": `static inline %T ptgo_maximum_%T(%T a, %T b) {
    %T m = a >= b ? a : b;
    return a != a ? a : m;
}`,
	"minimum_float": `static inline %T ptgo_minimum_%T(%T a, %T b) {
    %T m = a <= b ? a : b;
    return a != a ? a : m;
}`,
	"remainder_float": `static inline %T ptgo_remainder_%T(%T a, %T b) {
    %T mod = fmod%f(a, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
    return mod;
}`,
	"remainder_int": `static inline %T ptgo_remainder_%T(%T a, %T b) {
    if (b == 0 || b == -1) return 0;
    %T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}`,
	"fmod_int": `static inline %T ptgo_fmod_%T(%T a, %T b) {
    if (b == 0 || b == -1) return 0;
    return a % b;
}`,
	"div_trunc_int": `static inline %T ptgo_div_trunc_%T(%T a, %T b) {
    if (b == 0) return 0;
    if (b == -1) return (%T)(0 - (%U)a);
    return a / b;
}`,
	"pow_int": `static inline %T ptgo_pow_%T(%T a, %T b) {
    if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b % 2) ? -1 : 1;
        return 0;
    }
    %U r = 1, x = (%U)a;
    while (b) { if (b & 1) r *= x; b /= 2; x *= x; }
    return (%T)r;
}`,
}

// helperText returns the definition of helper name for compute type ct.
func helperText(name string, dt primtorch.DType) string {
	kind := "int"
	if dt.IsFloatingPoint() {
		kind = "float"
	}
	tmpl, ok := cHelpers[name+"_"+kind]
	if !ok {
		panic("ptgo BUG: inductor: no C helper " + name + " for " + dt.String())
	}
	u := unsignedOf(dt)
	if u == "" {
		u = "uint32_t"
	}
	r := strings.NewReplacer("%T", cCompute(dt), "%f", mathSuffix(dt), "%U", u)
	return r.Replace(tmpl)
}
