package primtorch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

var schemaTests = []struct {
	text    string
	name    string
	params  []string // Name:Type[=default]
	kwOnly  []bool
	returns int
}{
	{"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "add.Tensor",
		[]string{"self:Tensor", "other:Tensor", "alpha:Scalar=1"}, []bool{false, false, true}, 1},
	{"sum.dim_IntList(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", "sum.dim_IntList",
		[]string{"self:Tensor", "dim:int[1]?=<nil>", "keepdim:bool=false", "dtype:ScalarType?=<nil>"}, []bool{false, false, false, true}, 1},
	{"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", "max.dim",
		[]string{"self:Tensor", "dim:int", "keepdim:bool=false"}, []bool{false, false, false}, 2},
	{"conv2d(Tensor input:self, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0) -> Tensor", "conv2d",
		[]string{"input:Tensor", "weight:Tensor", "bias:Tensor?=<nil>", "stride:int[2]=[1 1]", "padding:int[2]=[0 0]"}, nil, 1},
	{"einsum(str equation, Tensor... operands) -> Tensor", "einsum",
		[]string{"equation:str", "operands:Tensor..."}, nil, 1},
	{"index(Tensor self, Tensor?[] indices) -> Tensor", "index", []string{"self:Tensor", "indices:Tensor?[]"}, nil, 1},
	{"setitem(Tensor(a!) self, Any index, Any value) -> ()", "setitem", []string{"self:Tensor", "index:Any", "value:Any"}, nil, 0},
	{"gelu(Tensor self, *, str approximate='none') -> Tensor", "gelu", []string{"self:Tensor", "approximate:str=none"}, nil, 1},
	{"layer_norm(Tensor input:self, int[] normalized_shape, float eps=1e-05) -> Tensor", "layer_norm",
		[]string{"input:Tensor", "normalized_shape:int[]", "eps:float=1e-05"}, nil, 1},
	{"amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", "amax", []string{"self:Tensor", "dim:int[1]=[]", "keepdim:bool=false"}, nil, 1},
}

func TestParseSchema(t *testing.T) {
	for _, tt := range schemaTests {
		s, err := ParseSchema(tt.text)
		require.NoError(t, err, tt.text)
		require.Equal(t, tt.name, s.FullName())
		var got []string
		for _, p := range s.Params {
			d := p.Name + ":" + p.Type.String()
			if p.HasDefault {
				d += "=" + fmtValue(p.Default)
			}
			got = append(got, d)
		}
		require.Equal(t, tt.params, got, tt.text)
		for i, k := range tt.kwOnly {
			require.Equal(t, k, s.Params[i].KwOnly, "%s: param %d kw-only", tt.text, i)
		}
		require.Len(t, s.Returns, tt.returns, tt.text)
		require.Equal(t, tt.text, s.String())
	}
}

func fmtValue(v Value) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case []int64:
		if len(v) == 0 {
			return "[]"
		}
	}
	return fmt.Sprint(v)
}

var schemaAnnotationTests = []struct {
	text    string
	mutates []int
	alias   AliasKind
}{
	{"add_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)", []int{0}, AliasInPlace},
	{"view(Tensor(a) self, int[] size) -> Tensor(a)", nil, AliasView},
	{"add.Tensor(Tensor self, Tensor other) -> Tensor", nil, AliasNone},
}

func TestSchemaAnnotations(t *testing.T) {
	for _, tt := range schemaAnnotationTests {
		s := MustParseSchema(tt.text)
		var mut []int
		for i, p := range s.Params {
			if p.Writes {
				mut = append(mut, i)
			}
		}
		require.Equal(t, tt.mutates, mut, tt.text)
		if tt.alias == AliasNone {
			require.Empty(t, s.Returns[0].Alias, tt.text)
		} else {
			require.Equal(t, "a", s.Returns[0].Alias, tt.text)
		}
	}
}

var badSchemaTests = []string{
	"add(Tensor self",
	"add(Tensor self) Tensor",
	"add(Foo self) -> Tensor",
	"add(Tensor self, Tensor self) -> Tensor",
	"add(Tensor) -> Tensor",
	"add(int x=abc) -> Tensor",
}

func TestParseSchemaErrors(t *testing.T) {
	for _, text := range badSchemaTests {
		_, err := ParseSchema(text)
		require.Error(t, err, text)
		require.Contains(t, err.Error(), "fix the registry row", text)
	}
}

func TestInplaceSchema(t *testing.T) {
	require.Equal(t, "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
		inplaceSchema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"))
	require.Equal(t, "dropout_(Tensor(a!) input:self, float p, bool train) -> Tensor(a!)",
		inplaceSchema("dropout(Tensor(a) input:self, float p, bool train) -> Tensor(a)"))
}
