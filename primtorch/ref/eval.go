package ref

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// evalFn computes one prims node: a *Tensor (or a view sharing its input's storage).
type evalFn func(c *evalCtx) (any, error)

// evals is the one table of how each core op is evaluated, keyed by OpID; every prim has an
// entry (TestEvalCoverage) and torch-level ops have none.
var evals = [primtorch.NumOps]evalFn{
	primtorch.OpPrimAbs: unaryOp, primtorch.OpPrimNeg: unaryOp, primtorch.OpPrimExp: unaryOp,
	primtorch.OpPrimExp2: unaryOp, primtorch.OpPrimExpm1: unaryOp, primtorch.OpPrimLog: unaryOp,
	primtorch.OpPrimLog1p: unaryOp, primtorch.OpPrimLog2: unaryOp, primtorch.OpPrimLog10: unaryOp,
	primtorch.OpPrimSqrt: unaryOp, primtorch.OpPrimRsqrt: unaryOp, primtorch.OpPrimSin: unaryOp,
	primtorch.OpPrimCos: unaryOp, primtorch.OpPrimTan: unaryOp, primtorch.OpPrimAsin: unaryOp,
	primtorch.OpPrimAcos: unaryOp, primtorch.OpPrimAtan: unaryOp, primtorch.OpPrimSinh: unaryOp,
	primtorch.OpPrimCosh: unaryOp, primtorch.OpPrimTanh: unaryOp, primtorch.OpPrimSigmoid: unaryOp,
	primtorch.OpPrimErf: unaryOp, primtorch.OpPrimErfc: unaryOp, primtorch.OpPrimFloor: unaryOp,
	primtorch.OpPrimCeil: unaryOp, primtorch.OpPrimRound: unaryOp, primtorch.OpPrimTrunc: unaryOp,
	primtorch.OpPrimSign: unaryOp, primtorch.OpPrimReciprocal: unaryOp, primtorch.OpPrimBitwiseNot: unaryOp,
	primtorch.OpPrimLogicalNot: unaryOp, primtorch.OpPrimIsnan: unaryOp, primtorch.OpPrimIsinf: unaryOp,
	primtorch.OpPrimIsfinite: unaryOp,

	primtorch.OpPrimAdd: binaryOp, primtorch.OpPrimSub: binaryOp, primtorch.OpPrimMul: binaryOp,
	primtorch.OpPrimDiv: binaryOp, primtorch.OpPrimFloordiv: binaryOp, primtorch.OpPrimRemainder: binaryOp,
	primtorch.OpPrimFmod: binaryOp, primtorch.OpPrimPow: binaryOp, primtorch.OpPrimMaximum: binaryOp,
	primtorch.OpPrimMinimum: binaryOp, primtorch.OpPrimAtan2: binaryOp, primtorch.OpPrimHypot: binaryOp,
	primtorch.OpPrimCopysign: binaryOp, primtorch.OpPrimBitwiseAnd: binaryOp, primtorch.OpPrimBitwiseOr: binaryOp,
	primtorch.OpPrimBitwiseXor: binaryOp, primtorch.OpPrimShiftLeft: binaryOp, primtorch.OpPrimShiftRight: binaryOp,
	primtorch.OpPrimEq: binaryOp, primtorch.OpPrimNe: binaryOp, primtorch.OpPrimLt: binaryOp,
	primtorch.OpPrimLe: binaryOp, primtorch.OpPrimGt: binaryOp, primtorch.OpPrimGe: binaryOp,
	primtorch.OpPrimLogicalAnd: binaryOp, primtorch.OpPrimLogicalOr: binaryOp, primtorch.OpPrimLogicalXor: binaryOp,

	primtorch.OpPrimWhere:              evalWhere,
	primtorch.OpPrimCheck:              evalCheck,
	primtorch.OpPrimFma:                evalFma,
	primtorch.OpPrimConvertElementType: evalConvert,

	primtorch.OpPrimSum: evalReduction, primtorch.OpPrimProd: evalReduction, primtorch.OpPrimAmax: evalReduction,
	primtorch.OpPrimAmin: evalReduction, primtorch.OpPrimAny: evalReduction, primtorch.OpPrimAll: evalReduction,
	primtorch.OpPrimArgmax: evalReduction, primtorch.OpPrimArgmin: evalReduction,
	primtorch.OpPrimCumsum: evalScan, primtorch.OpPrimCumprod: evalScan,

	primtorch.OpPrimView: evalView, primtorch.OpPrimPermute: evalView, primtorch.OpPrimExpand: evalView,
	primtorch.OpPrimSlice: evalView, primtorch.OpPrimSelect: evalView, primtorch.OpPrimSqueeze: evalView,
	primtorch.OpPrimUnsqueeze: evalView, primtorch.OpPrimAsStrided: evalView,

	primtorch.OpPrimClone:         evalClone,
	primtorch.OpPrimGradAs:        evalClone,
	primtorch.OpPrimCat:           evalCat,
	primtorch.OpPrimConstantPadNd: evalPad,
	primtorch.OpPrimGather:        evalGather,
	primtorch.OpPrimIndexSelect:   evalIndexSelect,
	primtorch.OpPrimIndex:         evalIndex,
	primtorch.OpPrimScatter:       evalScatter,
	primtorch.OpPrimIndexPut:      evalIndexPut,
	primtorch.OpPrimFull:          evalFull,
	primtorch.OpPrimIota:          evalIota,

	primtorch.OpPrimMm:          evalMm,
	primtorch.OpPrimBmm:         evalBmm,
	primtorch.OpPrimAddmm:       evalAddmm,
	primtorch.OpPrimConvolution: evalConvolution,
	primtorch.OpPrimFallback:    nil, // Run reports ErrFallback before the table is consulted
	primtorch.OpPrimCopy:        evalCopy,
}

// evalCtx is one node being evaluated: its op, its arguments bound to the op's schema (tensor
// arguments stand as metas, mapped back to their tensors), the meta the op's meta function
// computes and the layout the node's meta asks for.
type evalCtx struct {
	n       *fxgraph.Node
	op      *primtorch.Op
	a       *primtorch.Args
	tensors map[*primtorch.TensorMeta]*Tensor
	meta    *primtorch.TensorMeta // from the op's meta function
	layout  *primtorch.TensorMeta // the node's meta, nil when it has none
}

// value converts an argument to a primtorch.Value; tensors become fresh metas, remembered.
func (c *evalCtx) value(r *runner, a fxgraph.Arg) (primtorch.Value, error) {
	switch a := a.(type) {
	case *fxgraph.Node:
		t, ok := r.env[a].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("ref: node %s reads %s, which is not a tensor (%T)", c.n.Name, a.Name, r.env[a])
		}
		m := t.Meta()
		c.tensors[m] = t
		return m, nil
	case fxgraph.Const:
		if s, ok := a.V.(primtorch.SymInt); ok {
			return s.Eval(r.syms), nil
		}
		return a.V, nil
	case fxgraph.List:
		out := make([]primtorch.Value, len(a.Elems))
		for i, e := range a.Elems {
			v, err := c.value(r, e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case fxgraph.Tuple:
		out := make(primtorch.Tuple, len(a.Elems))
		for i, e := range a.Elems {
			v, err := c.value(r, e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("ref: node %s has an argument of type %T", c.n.Name, a)
}

// tensor returns the tensor bound to parameter name (nil for None or a number).
func (c *evalCtx) tensor(name string) *Tensor {
	m, _ := c.a.Get(name).(*primtorch.TensorMeta)
	if m == nil {
		return nil
	}
	return c.tensors[m]
}

// tensorList returns a tensor-list argument (nil entries for None).
func (c *evalCtx) tensorList(name string) []*Tensor {
	ms := c.a.Tensors(name)
	out := make([]*Tensor, len(ms))
	for i, m := range ms {
		if m != nil {
			out[i] = c.tensors[m]
		}
	}
	return out
}

// newOutput allocates the node's result: the node's layout when it is dense, else contiguous.
func (c *evalCtx) newOutput() *Tensor {
	m := c.meta
	if l := c.layout; l != nil && l.Offset == 0 && l.IsNonOverlappingAndDense() {
		return Empty(m.DType, m.Shape, l.Strides)
	}
	return Empty(m.DType, m.Shape, nil)
}

func (c *evalCtx) errorf(format string, args ...any) error {
	where := ""
	if c.n.Where != "" {
		where = " (" + c.n.Where + ")"
	}
	return fmt.Errorf("ref: node %s%s, %s: %s", c.n.Name, where, c.n.Target, fmt.Sprintf(format, args...))
}
