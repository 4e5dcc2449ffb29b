package primtorch

import "math"

// RoundToDType rounds a Python float to the nearest value of floating dtype dt, as torch's C++
// conversion of a double does (through float: c10::Half and c10::BFloat16 are built from a
// float), returned as a float64; other dtypes return f.
func RoundToDType(dt DType, f float64) float64 {
	switch dt {
	case Float32:
		return float64(float32(f))
	case Float16:
		return RoundHalf(float64(float32(f)))
	case BFloat16:
		return RoundBFloat16(f)
	}
	return f
}

// RoundHalf rounds v to the nearest float16 value (ties to even), as float64: overflow gives
// ±Inf, tiny values become float16 subnormals or zero.
func RoundHalf(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return v
	}
	a := math.Abs(v)
	var q float64 // the spacing of float16 values around a
	if a < 0x1p-14 {
		q = 0x1p-24
	} else {
		_, e := math.Frexp(a) // a = f * 2^e, f in [0.5, 1)
		q = math.Ldexp(1, e-11)
	}
	r := math.RoundToEven(a/q) * q
	if r > 65504 {
		r = math.Inf(1)
	}
	return math.Copysign(r, v)
}

// RoundBFloat16 rounds v to the nearest bfloat16 value (ties to even) as torch does from
// float32: the float32 value's low 16 bits are rounded away.
func RoundBFloat16(v float64) float64 {
	f := float32(v)
	if f != f {
		return v
	}
	b := math.Float32bits(f)
	b += 0x7fff + (b>>16)&1
	return float64(math.Float32frombits(b & 0xffff0000))
}
