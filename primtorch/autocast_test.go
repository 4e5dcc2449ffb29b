package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A torch version gets the newest autocast row at or below it; only its own row is tested.
func TestAutocastForPicksTheRowByVersion(t *testing.T) {
	row113, _, _ := AutocastFor("cpu", "1.13.0a0+git49444c3")
	row214, _, _ := AutocastFor("cpu", "2.14.1+cu130")
	require.NotSame(t, row113, row214)
	for _, c := range []struct {
		version    string
		want       *AutocastRow
		tested, ok bool
	}{
		{"1.12.1", nil, false, false}, // older than the first row: no table
		{"1.13.0a0+git49444c3", row113, true, true},
		{"1.13.1", row113, true, true},
		{"2.0.0", row113, false, true}, // between: the older row, every op checked against torch
		{"2.13.0+cpu", row113, false, true},
		{"2.14.0", row214, true, true},
		{"2.14.1+cu130", row214, true, true},
		{"2.15.0.dev20270101", row214, false, true},
		{"3.0.0", row214, false, true},
		{"nonsense", nil, false, false},
	} {
		row, tested, ok := AutocastFor("cpu", c.version)
		require.Equal(t, c.ok, ok, c.version)
		require.Equal(t, c.tested, tested, c.version)
		require.Same(t, c.want, row, c.version)
	}
	_, _, ok := AutocastFor("cuda", "2.14.1")
	require.False(t, ok, "ptgo has no CUDA autocast rows")
}

// Rows as torch's dispatchers list them (tests/test_autocast.py checks the installed torch's
// row name by name); here the differences between the rows, which are the point of having two.
func TestAutocastRowsDiffer(t *testing.T) {
	row113, _, _ := AutocastFor("cpu", "1.13.0")
	row214, _, _ := AutocastFor("cpu", "2.14.1")
	require.Len(t, row113.Policy, 126)
	require.Len(t, row214.Policy, 126)
	for name, want := range map[string][2]CastPolicy{
		"mm":                           {CastLowerPrecision, CastLowerPrecision},
		"conv_transpose2d.input":       {CastFP32, CastLowerPrecision},
		"scaled_dot_product_attention": {CastNone, CastLowerPrecision},
		"prelu":                        {CastNone, CastLowerPrecision},
		"linalg_matrix_norm":           {CastFP32, CastNone},
		"linalg_matrix_sqrth":          {CastNone, CastFP32},
		"cross_entropy":                {CastFP32, CastFP32},       // the alias of cross_entropy_loss
		"index_copy.dimname":           {CastPromote, CastPromote}, // by its base name on 2.14
		"cat":                          {CastPromote, CastPromote},
		"softmax":                      {CastNone, CastNone},
	} {
		require.Equal(t, want[0], AutocastPolicy(row113.Policy, name), "1.13 "+name)
		require.Equal(t, want[1], AutocastPolicy(row214.Policy, name), "2.14 "+name)
	}
	require.Equal(t, []DType{BFloat16}, row113.DTypes)
	require.Equal(t, []DType{BFloat16, Float16}, row214.DTypes)
}
