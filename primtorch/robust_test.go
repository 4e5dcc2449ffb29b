package primtorch

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomArg makes a value of roughly the parameter's type: plausible, often wrong.
func randomArg(r *rand.Rand, t Type) Value {
	tensor := func() *TensorMeta {
		shape := make([]int64, r.Intn(5))
		for i := range shape {
			shape[i] = int64(r.Intn(4))
		}
		m := NewContiguous(DType(r.Intn(int(NumDTypes))), shape, CPU)
		if r.Intn(3) == 0 && len(shape) >= 2 {
			m = transposeMeta(m)
		}
		return m
	}
	if r.Intn(12) == 0 {
		return nil
	}
	if t.List {
		n := r.Intn(4)
		out := make([]Value, n)
		for i := range out {
			out[i] = randomArg(r, Type{Base: t.Base})
		}
		return out
	}
	switch t.Base {
	case TTensor:
		return tensor()
	case TInt:
		return int64(r.Intn(7) - 3)
	case TFloat, TScalar:
		return []Value{int64(r.Intn(5) - 2), r.Float64()*4 - 2, r.Intn(2) == 0}[r.Intn(3)]
	case TBool:
		return r.Intn(2) == 0
	case TStr:
		return []string{"mean", "none", "sum", "tanh", "floor", "ij,jk->ik", "reflect", "bilinear", "x"}[r.Intn(9)]
	case TScalarType:
		return DType(r.Intn(int(NumDTypes)))
	case TMemoryFormat:
		return []MemoryFormat{ContiguousFormat, ChannelsLast, PreserveFormat}[r.Intn(3)]
	case TAny:
		return []Value{int64(1), Tuple{int64(0), Slice{}}, tensor(), []Value{int64(0), int64(1)}, "fro", Ellipsis{}}[r.Intn(6)]
	}
	return nil
}

// TestMetaRobust calls every op with random, mostly wrong arguments: Meta must answer with a
// result or an *Error, never a panic (which MetaArgs would report as "ptgo BUG").
func TestMetaRobust(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, op := range Ops() {
		for _, sig := range op.Sigs {
			for trial := 0; trial < 150; trial++ {
				var args []Value
				for _, p := range sig.Params {
					if p.KwOnly || (p.HasDefault && r.Intn(2) == 0) {
						continue
					}
					args = append(args, randomArg(r, p.Type))
				}
				before := describeAll(args)
				_, err := op.Meta(args, nil)
				require.Equal(t, before, describeAll(args), "%s modified its arguments", op.Name)
				if err != nil {
					if strings.Contains(err.Error(), "ptgo BUG") {
						t.Errorf("%s%v: %v", op.Name, args, err)
						continue
					}
					var e *Error
					require.ErrorAs(t, err, &e, "%s: %v", op.Name, err)
					require.NotEmpty(t, e.Op, "%s: error without op name: %v", op.Name, err)
					require.False(t, strings.HasSuffix(e.Msg, " "), "%s: %q", op.Name, e.Msg)
				}
			}
		}
	}
}

// describeAll prints every tensor among args, for checking that Meta leaves its inputs alone.
func describeAll(args []Value) string {
	var b strings.Builder
	for _, m := range tensorsIn(args) {
		b.WriteString(describe(m))
		b.WriteByte(' ')
	}
	return b.String()
}
