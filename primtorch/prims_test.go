package primtorch

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// primCase is one core-op call recorded by testdata/gen_prim_cases.py through its torch
// equivalent.
type primCase struct {
	Prim    string            `json:"prim"`
	Tag     string            `json:"tag"`
	Tensors []jsonMeta        `json:"tensors"`
	Args    []json.RawMessage `json:"args"`
	Out     struct {
		jsonMeta
		Values []any `json:"values"`
	} `json:"out"`
	CheckStrides bool `json:"check_strides"`
}

var regeneratedPrims bool

func loadPrimCases(t *testing.T) []primCase {
	t.Helper()
	if *update && !regeneratedPrims {
		regeneratedPrims = true
		runPython(t, "", filepath.Join("testdata", "gen_prim_cases.py"), filepath.Join("testdata", "prim_cases.json"))
	}
	return loadJSONLines[primCase](t, "prim_cases.json")
}

// TestPrimMeta checks every core op's meta function against torch's result for the same call:
// dtype and shape, and strides and storage offset where the prims contract fixes them (views
// and elementwise ops).
func TestPrimMeta(t *testing.T) {
	cases := loadPrimCases(t)
	require.NotEmpty(t, cases)
	covered := map[string]bool{}
	for _, c := range cases {
		tensors := make([]*TensorMeta, len(c.Tensors))
		for i, j := range c.Tensors {
			tensors[i] = j.meta(t)
		}
		args := make([]Value, len(c.Args))
		for i, a := range c.Args {
			args[i] = decodeValue(t, a, tensors)
		}
		op := Lookup(c.Prim)
		require.NotNil(t, op, c.Prim)
		got, err := op.Meta(args, nil)
		require.NoError(t, err, "%s[%s]", c.Prim, c.Tag)
		m := got.(*TensorMeta)
		want := c.Out.jsonMeta.meta(t)
		require.Equal(t, want.DType, m.DType, "%s[%s] dtype", c.Prim, c.Tag)
		require.Equal(t, fmtShape(want.Shape), fmtShape(m.Shape), "%s[%s] shape", c.Prim, c.Tag)
		if c.CheckStrides && m.Numel() > 1 {
			require.Equal(t, fmtShape(want.Strides), fmtShape(m.Strides), "%s[%s] strides", c.Prim, c.Tag)
			require.Equal(t, want.Offset, m.Offset, "%s[%s] storage offset", c.Prim, c.Tag)
		}
		covered[c.Prim] = true
	}
	var missing []string
	for _, op := range Ops() {
		if op.IsPrim() && !covered[op.Targets[0]] && op.ID != OpPrimFallback { // fallback: TestPrimFallbackMeta
			missing = append(missing, op.Name)
		}
	}
	require.Empty(t, missing, "core ops without a case: add them to testdata/gen_prim_cases.py and run go test ./primtorch -run TestPrimMeta -update")
}

func TestPrimFallbackMeta(t *testing.T) {
	op := OpPrimFallback.Op()
	m, err := op.Meta([]Value{"torch.nn.functional.dropout", f32(2, 3), 0.5}, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 3}, m.(*TensorMeta).Shape)
	_, err = op.Meta([]Value{"torch.special.i0", f32(2)}, nil)
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = op.Meta([]Value{"prims.add", f32(2), f32(2)}, nil)
	require.ErrorIs(t, err, ErrInvalid)
}

func i64t(shape ...int64) *TensorMeta { return NewContiguous(Int64, shape, CPU) }

// primContractTests are calls that break the prims contract: each must fail, saying what to do.
var primContractTests = []struct {
	target string
	args   []Value
	msg    string
}{
	{"prims.add", []Value{f32(3), f32(4)}, "expand them with prims.expand first"},
	{"prims.add", []Value{f32(3), NewContiguous(Float64, []int64{3}, CPU)}, "convert them with prims.convert_element_type first"},
	{"prims.add", []Value{i64t(3), 2.5}, "convert the operand to a floating dtype first"},
	{"prims.add", []Value{2, 3}, "no tensor operand"},
	{"prims.div", []Value{i64t(3), i64t(3)}, "is not a floating dtype"},
	{"prims.bitwise_and", []Value{f32(3), f32(3)}, "is not an integral or bool dtype"},
	{"prims.where", []Value{f32(3), f32(3), f32(3)}, "not bool"},
	{"prims.view", []Value{transposed(3, 4), []Value{12}}, "clone it first"},
	{"prims.view", []Value{f32(3, 4), []Value{-1}}, "give every size explicitly"},
	{"prims.expand", []Value{f32(3, 1), []Value{3, -1}}, "give every size explicitly"},
	{"prims.slice", []Value{f32(5), 0, -1, 5, 1}, "normalize them"},
	{"prims.slice", []Value{f32(5), 0, 0, 9, 1}, "normalize them"},
	{"prims.select", []Value{f32(5), 0, -1}, "normalize it"},
	{"prims.squeeze", []Value{f32(2, 3), []Value{1}}, "not 1"},
	{"prims.argmax", []Value{f32(2, 3), []Value{0, 1}, false}, "view the tensor as 1-d first"},
	{"prims.cat", []Value{[]Value{f32(2), i64t(2)}, 0}, "convert them to one dtype first"},
	{"prims.index", []Value{f32(3), []Value{NewContiguous(Bool, []int64{3}, CPU)}}, "int64 or int32 tensors only"},
	{"prims.index_put", []Value{f32(3), []Value{i64t(2)}, NewContiguous(Float64, []int64{2}, CPU), false}, "convert them first"},
	{"prims.copy_", []Value{f32(3), f32(1)}, "expand and convert it first"},
	{"prims.iota", []Value{3, 0.5, 1, Int64}, "float start for dtype i64"},
}

func transposed(a, b int64) *TensorMeta {
	return &TensorMeta{DType: Float32, Shape: []int64{a, b}, Strides: []int64{1, a}, Device: CPU}
}

func TestPrimContract(t *testing.T) {
	for _, tt := range primContractTests {
		_, err := Lookup(tt.target).Meta(tt.args, nil)
		require.Error(t, err, "%s%v", tt.target, tt.args)
		require.True(t, errors.Is(err, ErrInvalid), "%s: %v", tt.target, err)
		require.Contains(t, err.Error(), tt.msg, tt.target)
	}
}

func TestPrimRegistry(t *testing.T) {
	n := 0
	for _, op := range Ops() {
		if !op.IsPrim() {
			continue
		}
		n++
		require.Equal(t, []string{"prims." + op.Schema.Name}, op.Targets, op.Name)
		require.Equal(t, "prims::"+op.Schema.Name, op.Name)
		require.Equal(t, PromoteNone, op.Promotion, op.Name)
		require.Same(t, op, Lookup(op.Targets[0]))
	}
	require.Equal(t, int(NumOps-OpPrimAbs), n, "every prim OpID has a row in ops_prims.go")
	require.False(t, OpAdd.Op().IsPrim())
	require.Equal(t, "prims::add", Lookup("prims.add").Name)
}

// TestPrimPadLayout: prims.constant_pad_nd lays its result out as torch's constant_pad_nd does
// (suggest_memory_format): channels-last for a channels-last input, so a pooling's padded input
// is read and written in its input's order.
func TestPrimPadLayout(t *testing.T) {
	op := Lookup("prims.constant_pad_nd")
	cl := &TensorMeta{DType: Float32, Shape: []int64{1, 8, 5, 5}, Strides: []int64{200, 1, 40, 8}}
	got, err := op.Meta([]Value{cl, []Value{int64(1), int64(1), int64(1), int64(1)}, 0.0}, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{392, 1, 56, 8}, got.(*TensorMeta).Strides)
	got, err = op.Meta([]Value{f32(1, 8, 5, 5), []Value{int64(1), int64(1), int64(1), int64(1)}, 0.0}, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{392, 49, 7, 1}, got.(*TensorMeta).Strides)
}
