package primtorch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func f32(shape ...int64) *TensorMeta { return NewContiguous(Float32, shape, CPU) }

var bindTests = []struct {
	name   string
	target string
	args   []Value
	kwargs []KV
	op     string // resolved op
	check  func(t *testing.T, a *Args)
}{
	{"view varargs", "Tensor.view", []Value{f32(6), int64(2), int64(3)}, nil, "view",
		func(t *testing.T, a *Args) { require.Equal(t, []int64{2, 3}, a.Ints("size")) }},
	{"view tuple", "Tensor.view", []Value{f32(6), Tuple{int64(3), int64(2)}}, nil, "view",
		func(t *testing.T, a *Args) { require.Equal(t, []int64{3, 2}, a.Ints("size")) }},
	{"view single int", "Tensor.view", []Value{f32(6), int64(-1)}, nil, "view",
		func(t *testing.T, a *Args) { require.Equal(t, []int64{-1}, a.Ints("size")) }},
	{"view dtype overload", "Tensor.view", []Value{f32(6), Int32}, nil, "view.dtype", nil},
	{"zeros varargs", "torch.zeros", []Value{int64(2), int64(3)}, []KV{{"dtype", Float64}}, "zeros",
		func(t *testing.T, a *Args) {
			require.Equal(t, []int64{2, 3}, a.Ints("size"))
			d, ok := a.DType("dtype")
			require.True(t, ok)
			require.Equal(t, Float64, d)
		}},
	{"permute varargs", "Tensor.permute", []Value{f32(2, 3), int64(1), int64(0)}, nil, "permute", nil},
	{"input keyword", "torch.add", nil, []KV{{"input", f32(2)}, {"other", f32(2)}}, "add.Tensor", nil},
	{"sized list from int", "torch.nn.functional.conv2d", []Value{f32(1, 1, 4, 4), f32(1, 1, 3, 3)}, []KV{{"stride", int64(2)}}, "conv2d",
		func(t *testing.T, a *Args) {
			require.Equal(t, []int64{2, 2}, a.Ints("stride"))
			require.Equal(t, []int64{1, 1}, a.Ints("dilation"))
		}},
	{"default filled", "torch.sum", []Value{f32(2, 3)}, nil, "sum.dim_IntList",
		func(t *testing.T, a *Args) {
			require.Nil(t, a.Get("dim"))
			require.False(t, a.Bool("keepdim"))
			require.False(t, a.Given("keepdim"))
		}},
	{"int list dim from int", "torch.sum", []Value{f32(2, 3), int64(1)}, nil, "sum.dim_IntList",
		func(t *testing.T, a *Args) { require.Equal(t, []int64{1}, a.Ints("dim")) }},
	{"reflected operator", "operator.sub", []Value{int64(2), f32(3)}, nil, "sub.Tensor",
		func(t *testing.T, a *Args) { require.Equal(t, int64(2), a.Get("self")) }},
	{"max overloads: dim", "torch.max", []Value{f32(2, 3), int64(1)}, nil, "max.dim", nil},
	{"max overloads: other", "torch.max", []Value{f32(2, 3), f32(3)}, nil, "max.other", nil},
	{"max overloads: all", "Tensor.max", []Value{f32(2, 3)}, nil, "max", nil},
	{"var unbiased", "torch.var", []Value{f32(2, 3), true}, nil, "var.correction",
		func(t *testing.T, a *Args) { require.Equal(t, "var", a.Sig.FullName()) }},
	{"var dim keepdim", "torch.var", []Value{f32(2, 3), int64(1), true, true}, nil, "var.correction",
		func(t *testing.T, a *Args) { require.Equal(t, "var.dim", a.Sig.FullName()) }},
	{"F.relu inplace", "torch.nn.functional.relu", []Value{f32(2)}, []KV{{"inplace", true}}, "relu",
		func(t *testing.T, a *Args) {
			require.True(t, a.Inplace())
			require.Equal(t, []string{"self"}, a.Mutated())
		}},
	{"F.batch_norm order", "torch.nn.functional.batch_norm", []Value{f32(4, 3), f32(3), f32(3)}, []KV{{"training", true}}, "batch_norm",
		func(t *testing.T, a *Args) {
			require.Equal(t, []int64{3}, a.Tensor("running_mean").Shape)
			require.Nil(t, a.Tensor("weight"))
			require.Equal(t, []string{"running_mean", "running_var"}, a.Mutated())
		}},
	{"torch.batch_norm order", "torch.batch_norm", []Value{f32(4, 3), f32(3), nil, nil, nil, false, 0.1, 1e-5, true}, nil, "batch_norm",
		func(t *testing.T, a *Args) {
			require.Equal(t, []int64{3}, a.Tensor("weight").Shape)
			require.Empty(t, a.Mutated())
		}},
	{"out=", "torch.add", []Value{f32(2), f32(2)}, []KV{{"out", f32(2)}}, "add.Tensor",
		func(t *testing.T, a *Args) { require.Equal(t, []string{"out"}, a.Mutated()) }},
	{"in-place", "operator.iadd", []Value{f32(2), f32(2)}, nil, "add_.Tensor",
		func(t *testing.T, a *Args) { require.Equal(t, []string{"self"}, a.Mutated()) }},
	{"embedding keyword input", "torch.nn.functional.embedding", nil, []KV{{"input", NewContiguous(Int64, []int64{3}, CPU)}, {"weight", f32(10, 4)}}, "embedding",
		func(t *testing.T, a *Args) { require.Equal(t, Int64, a.Tensor("indices").DType) }},
	{"einsum varargs", "torch.einsum", []Value{"ij,jk", f32(2, 3), f32(3, 4)}, nil, "einsum",
		func(t *testing.T, a *Args) { require.Len(t, a.Tensors("operands"), 2) }},
	{"einsum list", "torch.einsum", []Value{"ij,jk", []Value{f32(2, 3), f32(3, 4)}}, nil, "einsum",
		func(t *testing.T, a *Args) { require.Len(t, a.Tensors("operands"), 2) }},
}

func TestBind(t *testing.T) {
	for _, tt := range bindTests {
		op := Lookup(tt.target)
		require.NotNil(t, op, tt.target)
		o, a, err := op.Resolve(tt.args, tt.kwargs)
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.op, o.Name, tt.name)
		if tt.check != nil {
			tt.check(t, a)
		}
	}
}

var bindErrorTests = []struct {
	name   string
	target string
	args   []Value
	kwargs []KV
	msg    string
}{
	{"unknown keyword", "torch.relu", []Value{f32(2)}, []KV{{"foo", int64(1)}}, "relu() got an unexpected keyword argument 'foo'"},
	{"too many", "torch.relu", []Value{f32(2), f32(2)}, nil, "relu() takes 1 positional argument but 2 were given"},
	{"missing", "torch.mm", []Value{f32(2, 2)}, nil, `mm() missing 1 required positional argument: "mat2"`},
	{"duplicate", "torch.mm", []Value{f32(2, 2), f32(2, 2)}, []KV{{"mat2", f32(2, 2)}}, "mm() got multiple values for argument 'mat2'"},
	{"type", "torch.relu", []Value{"x"}, nil, "relu(): argument 'input' (position 1) must be Tensor, not str"},
	{"method position", "Tensor.mm", []Value{f32(2, 2), "x"}, nil, "mm(): argument 'mat2' (position 1) must be Tensor, not str"},
	{"no numbers", "torch.maximum", []Value{f32(2), int64(1)}, nil, "maximum(): argument 'other' (position 2) must be Tensor, not int"},
	{"int list type", "Tensor.view", []Value{f32(6), "a"}, nil, "view() received an invalid combination of arguments - got (Tensor, str)"},
	{"overloads", "torch.max", []Value{f32(2), "a"}, nil, "max() received an invalid combination of arguments - got (Tensor, str), but expected one of:\n * max(Tensor self) -> Tensor"},
	{"bad out", "torch.add", []Value{f32(2), f32(2)}, []KV{{"out", int64(1)}}, "argument 'out' must be Tensor, not int"},
}

func TestBindErrors(t *testing.T) {
	for _, tt := range bindErrorTests {
		_, err := Lookup(tt.target).Meta(tt.args, tt.kwargs)
		require.Error(t, err, tt.name)
		require.ErrorIs(t, err, ErrInvalid, tt.name)
		var e *Error
		require.True(t, errors.As(err, &e), tt.name)
		require.Equal(t, "TypeError", e.PyType, tt.name)
		require.Contains(t, err.Error(), tt.msg, tt.name)
	}
}

var errorKindTests = []struct {
	target string
	args   []Value
	kind   error
}{
	{"torch.nonzero", []Value{f32(3)}, ErrDataDependent},
	{"torch.where", []Value{NewContiguous(Bool, []int64{3}, CPU)}, ErrDataDependent},
	{"operator.getitem", []Value{f32(3), NewContiguous(Bool, []int64{3}, CPU)}, ErrDataDependent},
	{"torch.nn.functional.one_hot", []Value{NewContiguous(Int64, []int64{3}, CPU)}, ErrDataDependent},
	{"Tensor.item", []Value{f32()}, ErrDataDependent},
	{"torch.add", []Value{f32(2), f32(3)}, ErrInvalid},
	{"torch.nn.functional.conv2d", []Value{f32(1, 1, 5, 5), f32(1, 1, 2, 2)}, nil},
	{"torch.nn.functional.layer_norm", []Value{f32(1, 1, 5, 5), Tuple{int64(5)}}, nil},
}

func TestErrorKinds(t *testing.T) {
	for _, tt := range errorKindTests {
		_, err := Lookup(tt.target).Meta(tt.args, nil)
		if tt.kind == nil {
			require.NoError(t, err, tt.target)
			continue
		}
		require.ErrorIs(t, err, tt.kind, tt.target)
		require.Regexp(t, `^primtorch: .* \(op [^)]+\); .+`, err.Error(), tt.target)
	}
	_, err := Lookup("torch.nn.functional.conv2d").Meta([]Value{f32(1, 1, 5, 5), f32(1, 1, 2, 2)}, []KV{{"padding", "same"}})
	require.ErrorIs(t, err, ErrUnsupported)
}

func TestArgsValues(t *testing.T) {
	_, a, err := Lookup("torch.nn.functional.softmax").Resolve([]Value{f32(2, 3)}, []KV{{"dim", int64(1)}})
	require.NoError(t, err)
	require.Equal(t, []KV{{"self", a.Get("self")}, {"dim", int64(1)}, {"_stacklevel", int64(3)}, {"dtype", nil}}, a.Values())
}

// TestGetitemTupleVsList: x[0, 1] (a Tuple) selects twice; x[[0, 1]] (a list) gathers rows.
func TestGetitemTupleVsList(t *testing.T) {
	x := f32(4, 5)
	got, err := Lookup("operator.getitem").Meta([]Value{x, Tuple{int64(0), int64(1)}}, nil)
	require.NoError(t, err)
	require.Equal(t, "f32[]{+1}", got.(*TensorMeta).String())
	got, err = Lookup("operator.getitem").Meta([]Value{x, []Value{int64(0), int64(1)}}, nil)
	require.NoError(t, err)
	require.Equal(t, []int64{2, 5}, got.(*TensorMeta).Shape)
}
