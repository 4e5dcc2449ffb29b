package inductor

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// lowerPointwise lowers an elementwise prims op to a Pointwise buffer applying value op op.
// Operands are read at the output index (broadcasting right-aligned size-1 dims, although the
// contract makes shapes identical); Python scalars become constants of the operands' dtype.
func lowerPointwise(op string) lowerFn {
	return func(l *lowerer, n *fxgraph.Node) (*lowered, error) {
		m, err := tensorMeta(n)
		if err != nil {
			return nil, err
		}
		info := opTable[op]
		if len(n.Args) != info.arity {
			return nil, lowerError(n, "%s takes %d arguments, got %d", op, info.arity, len(n.Args))
		}
		// the operands' dtype: the output's, or for bool-valued ops the first tensor operand's
		operandDT := m.DType
		if info.boolOut {
			operandDT = 0
			found := false
			for _, a := range n.Args {
				if t := l.tensorArg(a); t != nil {
					operandDT, found = t.dtype(), true
					break
				}
			}
			if !found {
				operandDT = scalarDType(n.Args)
			}
		}
		idx := indexVars(metaSizes(m), 0)
		b := boundsOf(metaSizes(m))
		args := make([]*Value, len(n.Args))
		for i, a := range n.Args {
			want := operandDT
			if op == "where" && i == 0 {
				want = primtorch.Bool
			}
			if t := l.tensorArg(a); t != nil {
				at, ok := broadcastIndex(idx, metaSizes(m), t.sizes)
				if !ok {
					return nil, lowerError(n, "operand %d has shape %v, which does not broadcast to %v", i, symsV(t.sizes), symsV(metaSizes(m)))
				}
				args[i] = l.g.vals.Cast(l.load(t, at, b), want)
				continue
			}
			if sz, ok := symArg(a); ok {
				// a size expression (sym("s0")): the symbols' value at run time
				args[i] = l.g.vals.Cast(l.g.vals.SizeValue(sz), want)
				continue
			}
			if v, ok := l.floatArg(a); ok {
				// a float argument: its value at run time, converted as a constant would be
				args[i] = l.g.vals.Cast(v, want)
				continue
			}
			s, ok := l.scalarArg(a)
			if !ok {
				return nil, lowerError(n, "operand %d is neither a tensor nor a Python scalar", i)
			}
			args[i] = l.g.vals.Const(want, s)
		}
		v := l.g.vals.Op(op, args...)
		return l.newPointwise(m, l.g.vals.Cast(v, m.DType)), nil
	}
}

// scalarDType is the dtype of an all-scalar comparison (float64 if any float, else int64).
func scalarDType(args []fxgraph.Arg) primtorch.DType {
	for _, a := range args {
		if c, ok := a.(fxgraph.Const); ok {
			if _, isF := c.V.(float64); isF {
				return primtorch.Float64
			}
		}
	}
	return primtorch.Int64
}

// lowerConvert lowers convert_element_type(x, dtype).
func lowerConvert(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	if t == nil {
		s, ok := l.scalarArg(n.Args[0])
		if !ok {
			return nil, lowerError(n, "convert_element_type needs a tensor or a scalar")
		}
		return l.newPointwise(m, l.g.vals.Const(m.DType, s)), nil
	}
	return l.newPointwise(m, l.g.vals.Cast(l.load(t, indexVars(metaSizes(m), 0), boundsOf(metaSizes(m))), m.DType)), nil
}

// lowerClone materializes x into the node's meta layout.
func lowerClone(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	t := l.tensorArg(n.Args[0])
	if t == nil {
		return nil, lowerError(n, "clone needs a tensor")
	}
	return l.newPointwise(m, l.g.vals.Cast(l.load(t, indexVars(metaSizes(m), 0), boundsOf(metaSizes(m))), m.DType)), nil
}

// lowerFull lowers full(shape, value, dtype): a constant, or a size expression computed from
// the call's sizes (BatchNorm's n / (n - 1) over a symbolic batch).
func lowerFull(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	if c, ok := arg(n, 1, "value").(fxgraph.Const); ok {
		if s, ok := c.V.(primtorch.SymInt); ok {
			return l.newPointwise(m, l.g.vals.Cast(l.g.vals.Index(primtorch.Int64, symExpr(s)), m.DType)), nil
		}
	}
	v, ok := l.scalarArg(arg(n, 1, "value"))
	if !ok {
		return nil, lowerError(n, "full needs a constant fill value")
	}
	return l.newPointwise(m, l.g.vals.Const(m.DType, v)), nil
}

// lowerIota lowers iota(length, start, step, dtype): start + step·i, computed in int64 for
// integer starts and steps, in float64 otherwise (as torch.arange).
func lowerIota(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	if len(m.Shape) != 1 {
		return nil, lowerError(n, "iota must be 1-d, the meta says %v", m.Shape)
	}
	startV, ok1 := l.scalarArg(arg(n, 1, "start"))
	stepV, ok2 := l.scalarArg(arg(n, 2, "step"))
	if !ok1 || !ok2 {
		return nil, lowerError(n, "iota needs constant start and step")
	}
	vals := l.g.vals
	i := Var(0)
	if isOne(metaSizes(m)[0]) {
		i = Expr{}
	}
	start, sInt := startV.(int64)
	step, tInt := stepV.(int64)
	if sInt && tInt {
		v := vals.Index(primtorch.Int64, i.Scale(step).AddConst(start))
		return l.newPointwise(m, vals.Cast(v, m.DType)), nil
	}
	f := vals.Cast(vals.Index(primtorch.Int64, i), primtorch.Float64)
	v := vals.Op("add", vals.Const(primtorch.Float64, startV), vals.Op("mul", f, vals.Const(primtorch.Float64, stepV)))
	return l.newPointwise(m, vals.Cast(v, m.DType)), nil
}

// lowerCopy lowers copy_(dst, src), the graph's mutation epilogue: a pointwise buffer that writes
// src into the storage of dst, a graph input. Its value is dst; nothing may read dst after it.
func lowerCopy(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	dst := l.tensorArg(arg(n, 0, "self"))
	src := l.tensorArg(arg(n, 1, "src"))
	if dst == nil || src == nil {
		return nil, lowerError(n, "copy_ needs two tensors")
	}
	if _, ok := dst.buf.Def.(*InputNode); !ok || dst.idx != nil {
		return nil, fmt.Errorf("%w: copy_ into something other than a graph input", errNoLowering)
	}
	if !equalShape(dst.sizes, src.sizes) {
		return nil, lowerError(n, "copy_ of %v into %v; expand the source first", symsV(src.sizes), symsV(dst.sizes))
	}
	body := l.g.vals.Cast(l.load(src, indexVars(dst.sizes, 0), boundsOf(dst.sizes)), dst.dtype())
	b := l.g.addBuffer(dst.dtype(), dst.sizes, dst.buf.Layout, &Pointwise{Ranges: append([]Sym(nil), dst.sizes...), Body: body})
	b.Mutates = dst.buf
	b.writtenAt = b.index
	if _, in := src.buf.Def.(*InputNode); !in {
		b.writtenAt = src.buf.index // where eager's in-place op wrote this value
	}
	l.origin(b)
	return &lowered{t: dst}, nil
}

// floatArg is a constant argument that is a float argument read at run time (a float symbol,
// primtorch/symfloat.go) as the value the kernel reads.
func (l *lowerer) floatArg(a fxgraph.Arg) (*Value, bool) {
	c, ok := a.(fxgraph.Const)
	if !ok {
		return nil, false
	}
	f, ok := c.V.(primtorch.SymFloat)
	if !ok {
		return nil, false
	}
	k, ok := l.g.floatArg[f.ID]
	if !ok {
		panic(fmt.Sprintf("ptgo BUG: inductor: float symbol %s has no placeholder in graph %s", f, l.fx.Name))
	}
	return l.g.vals.FloatArg(k), true
}
