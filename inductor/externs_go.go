package inductor

import (
	"fmt"
)

// goExterns are naive Go implementations of the matmul externs, for Execute (tests). The torch
// runtime calls torch's own kernels instead (DESIGN D5).
var goExterns = map[string]func(args []any, kwargs map[string]any) ([]*Tensor, error){
	"prims.mm": func(args []any, _ map[string]any) ([]*Tensor, error) {
		a, b, err := twoTensors(args, 0)
		if err != nil {
			return nil, err
		}
		return matmul(a, b, nil, 1, 1)
	},
	"prims.bmm": func(args []any, _ map[string]any) ([]*Tensor, error) {
		a, b, err := twoTensors(args, 0)
		if err != nil {
			return nil, err
		}
		if len(a.Sizes) != 3 || len(b.Sizes) != 3 || a.Sizes[0] != b.Sizes[0] || a.Sizes[2] != b.Sizes[1] {
			return nil, fmt.Errorf("bmm shapes %v and %v do not match", a.Sizes, b.Sizes)
		}
		bs, n, k, m := a.Sizes[0], a.Sizes[1], a.Sizes[2], b.Sizes[2]
		out := NewTensor(a.DType, []int64{bs, n, m})
		for x := int64(0); x < bs; x++ {
			for i := int64(0); i < n; i++ {
				for j := int64(0); j < m; j++ {
					s := 0.0
					for p := int64(0); p < k; p++ {
						s += a.At((x*n+i)*k+p) * b.At((x*k+p)*m+j)
					}
					out.Set((x*n+i)*m+j, s)
				}
			}
		}
		return []*Tensor{out}, nil
	},
	"prims.addmm": func(args []any, kwargs map[string]any) ([]*Tensor, error) {
		if len(args) < 3 {
			return nil, fmt.Errorf("addmm takes (bias, a, b), got %d arguments", len(args))
		}
		bias, ok := args[0].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("addmm bias is not a tensor")
		}
		a, b, err := twoTensors(args, 1)
		if err != nil {
			return nil, err
		}
		beta, alpha := scalarKw(kwargs, "beta", args, 3), scalarKw(kwargs, "alpha", args, 4)
		return matmul(a, b, bias, beta, alpha)
	},
}

func twoTensors(args []any, first int) (*Tensor, *Tensor, error) {
	if len(args) < first+2 {
		return nil, nil, fmt.Errorf("expected two tensor arguments")
	}
	a, ok1 := args[first].(*Tensor)
	b, ok2 := args[first+1].(*Tensor)
	if !ok1 || !ok2 {
		return nil, nil, fmt.Errorf("expected two tensor arguments")
	}
	return a, b, nil
}

func scalarKw(kw map[string]any, name string, args []any, pos int) float64 {
	v, ok := kw[name]
	if !ok && pos < len(args) {
		v, ok = args[pos], true
	}
	if !ok {
		return 1
	}
	switch v := v.(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	}
	return 1
}

// matmul computes alpha·(a@b) + beta·bias (bias broadcast to [n,m]; nil for none), accumulating
// in float64.
func matmul(a, b, bias *Tensor, beta, alpha float64) ([]*Tensor, error) {
	if len(a.Sizes) != 2 || len(b.Sizes) != 2 || a.Sizes[1] != b.Sizes[0] {
		return nil, fmt.Errorf("mm shapes %v and %v do not match", a.Sizes, b.Sizes)
	}
	n, k, m := a.Sizes[0], a.Sizes[1], b.Sizes[1]
	out := NewTensor(a.DType, []int64{n, m})
	for i := int64(0); i < n; i++ {
		for j := int64(0); j < m; j++ {
			s := 0.0
			for p := int64(0); p < k; p++ {
				s += a.At(i*k+p) * b.At(p*m+j)
			}
			s *= alpha
			if bias != nil {
				var bv float64
				switch len(bias.Sizes) {
				case 0:
					bv = bias.At(0)
				case 1:
					bv = bias.At(j % bias.Sizes[0])
				default:
					bv = bias.At((i%bias.Sizes[0])*bias.Sizes[1] + j%bias.Sizes[1])
				}
				s += beta * bv
			}
			out.Set(i*m+j, s)
		}
	}
	return []*Tensor{out}, nil
}
