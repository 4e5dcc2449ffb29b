package primtorch

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fillValueTests are c10's checked_convert answers (eager torch.full, full_like, new_full and
// fill_ on torch 1.13 and 2.14).
var fillValueTests = []struct {
	v    Value
	dt   DType
	over bool
}{
	{math.NaN(), Int64, true},
	{math.Inf(1), Int32, true},
	{1e30, Int64, true},
	{300.0, UInt8, true},
	{-1.0, UInt8, true},
	{int64(-1), UInt8, false}, // a negative int wraps
	{int64(-300), UInt8, true},
	{int64(300), Int8, true},
	{3e9, Int32, true},
	{1e5, Int16, true},
	{70000.0, Float16, true},
	{int64(70000), Float16, true},
	{math.Inf(-1), Float16, false},
	{math.NaN(), Float16, false},
	{1e39, Float32, true},
	{1e39, BFloat16, true},
	{1e30, BFloat16, false},
	{1e300, Float64, false},
	{math.NaN(), Bool, false},
	{2.5, Int64, false},
	{true, UInt8, false},
}

func TestCheckFillValue(t *testing.T) {
	for _, tc := range fillValueTests {
		err := checkFillValue(tc.v, tc.dt)
		if !tc.over {
			assert.NoError(t, err, "%v into %s", tc.v, tc.dt)
			continue
		}
		if assert.Error(t, err, "%v into %s", tc.v, tc.dt) {
			e := err.(*Error)
			assert.Equal(t, "RuntimeError", e.PyType)
			assert.Equal(t, "value cannot be converted to type "+cppScalarName(tc.dt)+" without overflow", e.Msg)
		}
	}
}
