package primtorch

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

type promotionCase struct {
	Kind string            `json:"kind"`
	A    json.RawMessage   `json:"a"`
	B    json.RawMessage   `json:"b"`
	Ops  []json.RawMessage `json:"ops"`
	Out  *string           `json:"out"`
}

// wantDType parses torch's result dtype; complex32 (half complex) and torch 2's bcomplex32
// (bfloat16 complex) are no ptgo dtypes and ptgo promotes to complex64 where torch gives them.
func wantDType(t *testing.T, s string) DType {
	t.Helper()
	if s == "c32" || s == "bc32" {
		return Complex64
	}
	d, ok := ParseDType(s)
	require.True(t, ok, "dtype %q", s)
	return d
}

// operand decodes ["f32", "dim"|"zero"] or ["scalar", value] into a Value.
func operand(t *testing.T, raw json.RawMessage) Value {
	t.Helper()
	var parts []json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &parts))
	var kind string
	require.NoError(t, json.Unmarshal(parts[0], &kind))
	if kind == "scalar" {
		return decodeValue(t, parts[1], nil)
	}
	var shape string
	require.NoError(t, json.Unmarshal(parts[1], &shape))
	d := wantDType(t, kind)
	if shape == "dim" {
		return NewContiguous(d, []int64{2}, CPU)
	}
	return NewContiguous(d, []int64{}, CPU)
}

func TestPromotion(t *testing.T) {
	regenerate(t)
	forEachGoldenTorch(t, testPromotion)
}

func testPromotion(t *testing.T, v TorchVersion) {
	cases := loadJSONLines[promotionCase](t, goldenFile("promotion", v))
	require.NotEmpty(t, cases)
	add := Lookup("operator.add")
	for i, c := range cases {
		switch c.Kind {
		case "promote_types":
			var a, b string
			require.NoError(t, json.Unmarshal(c.A, &a))
			require.NoError(t, json.Unmarshal(c.B, &b))
			require.Equal(t, wantDType(t, *c.Out), PromoteTypes(wantDType(t, a), wantDType(t, b)), "case %d: promote_types(%s, %s)", i, a, b)
		case "result_type":
			x, y := operand(t, c.A), operand(t, c.B)
			require.Equal(t, wantDType(t, *c.Out), ResultType(x, y), "case %d: result_type(%s, %s)", i, c.A, c.B)
		case "result_type3":
			var ops []Value
			for _, o := range c.Ops {
				ops = append(ops, operand(t, o))
			}
			require.Equal(t, wantDType(t, *c.Out), ResultType(ops...), "case %d: result_type(%s)", i, c.Ops)
		case "add":
			x, y := operand(t, c.A), operand(t, c.B)
			got, err := add.Meta([]Value{x, y}, nil)
			if c.Out == nil {
				require.Error(t, err, "case %d: %s + %s fails in torch", i, c.A, c.B)
				continue
			}
			if *c.Out == "c32" || *c.Out == "bc32" {
				// a dtype ptgo does not have: the call runs eagerly
				require.ErrorIs(t, err, ErrUnsupported, "case %d: %s + %s gives %s in torch", i, c.A, c.B, *c.Out)
				continue
			}
			require.NoError(t, err, "case %d: %s + %s", i, c.A, c.B)
			require.Equal(t, wantDType(t, *c.Out), got.(*TensorMeta).DType, "case %d: (%s + %s).dtype", i, c.A, c.B)
		default:
			t.Fatalf("case %d: unknown kind %q", i, c.Kind)
		}
	}
}

var promotionKindTests = []struct {
	kind   Promotion
	common DType
	want   DType
}{
	{PromoteDefault, Int32, Int32},
	{PromoteIntToFloat, Int64, Float32},
	{PromoteIntToFloat, Bool, Float32},
	{PromoteIntToFloat, Float64, Float64},
	{PromoteAlwaysBool, Float32, Bool},
	{PromoteComplexToFloat, Complex128, Float64},
	{PromoteComplexToFloat, Int8, Int8},
	{PromoteBoolToLong, Bool, Int64},
	{PromoteBoolToLong, Int8, Int8},
	{PromoteIntToLong, Int8, Int64},
	{PromoteIntToLong, Float16, Float16},
	{PromoteNoOpmath, BFloat16, BFloat16},
}

func TestPromotionKinds(t *testing.T) {
	for _, tt := range promotionKindTests {
		require.Equal(t, tt.want, tt.kind.Apply(tt.common), "%s.Apply(%s)", tt.kind, tt.common)
	}
	require.Equal(t, Float32, PromoteDefault.ComputeDType(Float16))
	require.Equal(t, Float16, PromoteNoOpmath.ComputeDType(Float16))
}

var canCastTests = []struct {
	from, to DType
	want     bool
}{
	{Float32, Int64, false},
	{Int64, Float32, true},
	{Complex64, Float64, false},
	{Int32, Bool, false},
	{Bool, Bool, true},
	{Bool, UInt8, true},
	{Float64, Float16, true},
}

func TestCanCast(t *testing.T) {
	for _, tt := range canCastTests {
		require.Equal(t, tt.want, CanCast(tt.from, tt.to), "CanCast(%s, %s)", tt.from, tt.to)
	}
}
