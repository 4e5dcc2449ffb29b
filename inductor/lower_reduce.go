package inductor

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// lowerReduction lowers sum/prod/amax/amin/any/all/argmax/argmin(x, dims, keepdim). dims None
// or [] reduce every dim.
func lowerReduction(kind ReduceKind) lowerFn {
	return func(l *lowerer, n *fxgraph.Node) (*lowered, error) {
		m, err := tensorMeta(n)
		if err != nil {
			return nil, err
		}
		t := l.tensorArg(n.Args[0])
		if t == nil {
			return nil, lowerError(n, "%s needs a tensor", kind)
		}
		nd := len(t.sizes)
		reduced := make([]bool, nd)
		dimsArg := arg(n, 1, "dims")
		if dimsArg == nil {
			dimsArg = arg(n, 1, "dim")
		}
		dims, ok := constInts(dimsArg)
		if !ok && !isNone(dimsArg) {
			return nil, lowerError(n, "dims must be a constant list of ints")
		}
		if len(dims) == 0 {
			for k := range reduced {
				reduced[k] = true
			}
		}
		for _, d := range dims {
			k, ok := normDim(d, nd)
			if !ok {
				return nil, lowerError(n, "dim %d is out of range for %d dims", d, nd)
			}
			if nd > 0 {
				reduced[k] = true
			}
		}
		keep := constBool(arg(n, 2, "keepdim"))
		// output dims: kept input dims (and size-1 dims for reduced ones with keepdim)
		var outSizes, redSizes []Sym
		for k, s := range t.sizes {
			if reduced[k] {
				redSizes = append(redSizes, s)
				if keep {
					outSizes = append(outSizes, symc(1))
				}
			} else {
				outSizes = append(outSizes, s)
			}
		}
		if !symsEqual(outSizes, metaSizes(m)) {
			return nil, lowerError(n, "the meta's shape %v is not the reduction's %v", symsV(metaSizes(m)), symsV(outSizes))
		}
		nO := len(outSizes)
		bounds := boundsOf(append(append([]Sym(nil), outSizes...), redSizes...))
		at := make([]Expr, nd)
		o, r := 0, 0
		for k, s := range t.sizes {
			switch {
			case reduced[k]:
				if !isOne(s) {
					at[k] = Var(nO + r)
				}
				r++
				if keep {
					o++
				}
			default:
				if !isOne(s) {
					at[k] = Var(o)
				}
				o++
			}
		}
		body := l.load(t, at, bounds)
		wantDT := m.DType
		if kind == ReduceArgmax || kind == ReduceArgmin {
			wantDT = t.dtype()
		}
		if kind == ReduceAny || kind == ReduceAll {
			body = l.g.vals.Cast(body, primtorch.Bool)
		} else {
			body = l.g.vals.Cast(body, wantDT)
		}
		red := &Reduction{Ranges: append([]Sym(nil), outSizes...), ReduceRanges: redSizes, Kind: kind, Body: body}
		b := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), red)
		l.origin(b)
		return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}, nil
	}
}

// lowerScan lowers cumsum/cumprod(x, dim).
func lowerScan(kind ScanKind) lowerFn {
	return func(l *lowerer, n *fxgraph.Node) (*lowered, error) {
		m, err := tensorMeta(n)
		if err != nil {
			return nil, err
		}
		t := l.tensorArg(n.Args[0])
		d, ok := constInt(arg(n, 1, "dim"))
		if t == nil || !ok {
			return nil, lowerError(n, "%s needs a tensor and a constant dim", kind)
		}
		dim, ok := normDim(d, len(t.sizes))
		if !ok {
			return nil, lowerError(n, "dim %d is out of range for %d dims", d, len(t.sizes))
		}
		if len(t.sizes) == 0 {
			return l.newPointwise(m, l.g.vals.Cast(l.load(t, nil, nil), m.DType)), nil
		}
		if !symsEqual(metaSizes(m), t.sizes) {
			return nil, lowerError(n, "the meta's shape %v is not the input's %v", m.Shape, symsV(t.sizes))
		}
		body := l.g.vals.Cast(l.load(t, indexVars(t.sizes, 0), boundsOf(t.sizes)), m.DType)
		b := l.g.addBuffer(m.DType, metaSizes(m), layoutOf(m), &Scan{Ranges: metaSizes(m), Dim: dim, Kind: kind, Body: body})
		l.origin(b)
		return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}, nil
	}
}

// accDType is the type a reduction or scan accumulates in: double for floating dtypes (torch
// accumulates float sums in double on CPU), int64 for integers, the dtype itself for max/min.
func accDType(dt primtorch.DType, sumLike bool) primtorch.DType {
	switch {
	case dt.IsFloatingPoint() && sumLike:
		return primtorch.Float64
	case dt.IsIntegral(true) && sumLike:
		return primtorch.Int64
	}
	return dt
}
