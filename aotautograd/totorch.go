package aotautograd

import (
	"fmt"
	"math"
	"slices"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// The prims → torch mapping: ToTorch rewrites a prims graph (a forward or backward graph of
// Split, or any decomp.Decompose result) into a torch-level graph that python/ptgo/fx_export.py
// turns into a torch.fx GraphModule run by plain torch calls — the "aot_eager" backend: ptgo's
// decompositions and autograd, torch's kernels.

// numbers says where a torch function takes a Python number for a prim's tensor operand.
type numbers uint8

const (
	numNone   numbers = iota // numbers become 0-d tensors (torch.scalar_tensor) of the op's dtype
	numSecond                // the second operand may be a number (torch.add(x, 2.0))
	numBoth                  // either operand may be (torch.pow(2.0, x), torch.where(c, x, 0.0))
)

// torchRule is how one prim runs in torch: a call of target (a method of the first argument
// when method is set) with the prim's arguments, or a custom rewrite.
type torchRule struct {
	target string
	method bool
	nums   numbers
	kwargs func(t *toTorch, n *fxgraph.Node) []fxgraph.Kwarg
	custom func(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg
}

func fn(target string) torchRule                  { return torchRule{target: target} }
func fnNum(target string, nums numbers) torchRule { return torchRule{target: target, nums: nums} }

// torchRules is the one table of the prims → torch mapping, keyed by OpID; every core op has
// an entry (TestTorchRuleCoverage).
var torchRules = [primtorch.NumOps]torchRule{
	primtorch.OpPrimAbs: fn("torch.abs"), primtorch.OpPrimNeg: fn("torch.neg"), primtorch.OpPrimExp: fn("torch.exp"),
	primtorch.OpPrimExp2: fn("torch.exp2"), primtorch.OpPrimExpm1: fn("torch.expm1"), primtorch.OpPrimLog: fn("torch.log"),
	primtorch.OpPrimLog1p: fn("torch.log1p"), primtorch.OpPrimLog2: fn("torch.log2"), primtorch.OpPrimLog10: fn("torch.log10"),
	primtorch.OpPrimSqrt: fn("torch.sqrt"), primtorch.OpPrimRsqrt: fn("torch.rsqrt"), primtorch.OpPrimSin: fn("torch.sin"),
	primtorch.OpPrimCos: fn("torch.cos"), primtorch.OpPrimTan: fn("torch.tan"), primtorch.OpPrimAsin: fn("torch.asin"),
	primtorch.OpPrimAcos: fn("torch.acos"), primtorch.OpPrimAtan: fn("torch.atan"), primtorch.OpPrimSinh: fn("torch.sinh"),
	primtorch.OpPrimCosh: fn("torch.cosh"), primtorch.OpPrimTanh: fn("torch.tanh"), primtorch.OpPrimSigmoid: fn("torch.sigmoid"),
	primtorch.OpPrimErf: fn("torch.erf"), primtorch.OpPrimErfc: fn("torch.erfc"), primtorch.OpPrimFloor: fn("torch.floor"),
	primtorch.OpPrimCeil: fn("torch.ceil"), primtorch.OpPrimRound: fn("torch.round"), primtorch.OpPrimTrunc: fn("torch.trunc"),
	primtorch.OpPrimSign: fn("torch.sign"), primtorch.OpPrimReciprocal: fn("torch.reciprocal"),
	primtorch.OpPrimBitwiseNot: fn("torch.bitwise_not"), primtorch.OpPrimLogicalNot: fn("torch.logical_not"),
	primtorch.OpPrimIsnan: fn("torch.isnan"), primtorch.OpPrimIsinf: fn("torch.isinf"), primtorch.OpPrimIsfinite: fn("torch.isfinite"),
	primtorch.OpPrimCheck: fn("ptgo.check"),

	primtorch.OpPrimAdd: fnNum("torch.add", numSecond), primtorch.OpPrimSub: fnNum("torch.sub", numSecond),
	primtorch.OpPrimMul: fnNum("torch.mul", numSecond), primtorch.OpPrimDiv: fnNum("torch.div", numSecond),
	primtorch.OpPrimFloordiv: {target: "torch.div", nums: numSecond, kwargs: func(*toTorch, *fxgraph.Node) []fxgraph.Kwarg {
		return []fxgraph.Kwarg{{Name: "rounding_mode", Value: fxgraph.Const{V: "floor"}}}
	}},
	primtorch.OpPrimRemainder: fnNum("torch.remainder", numSecond), primtorch.OpPrimFmod: fnNum("torch.fmod", numSecond),
	primtorch.OpPrimPow: fnNum("torch.pow", numBoth), primtorch.OpPrimMaximum: {target: "torch.maximum", custom: torchMaxMin},
	primtorch.OpPrimMinimum: {target: "torch.minimum", custom: torchMaxMin}, primtorch.OpPrimAtan2: fn("torch.atan2"), primtorch.OpPrimHypot: fn("torch.hypot"),
	primtorch.OpPrimCopysign: fnNum("torch.copysign", numSecond), primtorch.OpPrimBitwiseAnd: fnNum("torch.bitwise_and", numSecond),
	primtorch.OpPrimBitwiseOr: fnNum("torch.bitwise_or", numSecond), primtorch.OpPrimBitwiseXor: fnNum("torch.bitwise_xor", numSecond),
	primtorch.OpPrimShiftLeft: fnNum("torch.bitwise_left_shift", numSecond), primtorch.OpPrimShiftRight: fnNum("torch.bitwise_right_shift", numSecond),
	primtorch.OpPrimEq: fnNum("torch.eq", numSecond), primtorch.OpPrimNe: fnNum("torch.ne", numSecond),
	primtorch.OpPrimLt: fnNum("torch.lt", numSecond), primtorch.OpPrimLe: fnNum("torch.le", numSecond),
	primtorch.OpPrimGt: fnNum("torch.gt", numSecond), primtorch.OpPrimGe: fnNum("torch.ge", numSecond),
	primtorch.OpPrimLogicalAnd: fn("torch.logical_and"), primtorch.OpPrimLogicalOr: fn("torch.logical_or"),
	primtorch.OpPrimLogicalXor: fn("torch.logical_xor"),

	primtorch.OpPrimWhere:              {target: "torch.where", custom: torchWhere},
	primtorch.OpPrimFma:                {target: "torch.addcmul", custom: torchFma},
	primtorch.OpPrimConvertElementType: {target: "to", method: true},

	primtorch.OpPrimSum:     {target: "torch.sum", custom: torchSumLike},
	primtorch.OpPrimProd:    {target: "torch.prod", custom: torchOneDimReduction},
	primtorch.OpPrimAmax:    {target: "torch.amax", custom: torchAmaxAmin},
	primtorch.OpPrimAmin:    {target: "torch.amin", custom: torchAmaxAmin},
	primtorch.OpPrimAny:     {target: "torch.any", custom: torchOneDimReduction},
	primtorch.OpPrimAll:     {target: "torch.all", custom: torchOneDimReduction},
	primtorch.OpPrimArgmax:  {target: "torch.argmax", custom: torchArgReduction},
	primtorch.OpPrimArgmin:  {target: "torch.argmin", custom: torchArgReduction},
	primtorch.OpPrimCumsum:  {target: "torch.cumsum", kwargs: dtypeKwarg},
	primtorch.OpPrimCumprod: {target: "torch.cumprod", kwargs: dtypeKwarg},

	primtorch.OpPrimView:      {target: "reshape", method: true},
	primtorch.OpPrimPermute:   {target: "permute", method: true},
	primtorch.OpPrimExpand:    {target: "expand", method: true},
	primtorch.OpPrimSlice:     fn("torch.ops.aten.slice.Tensor"),
	primtorch.OpPrimSelect:    fn("torch.select"),
	primtorch.OpPrimSqueeze:   {target: "torch.squeeze", custom: torchSqueeze},
	primtorch.OpPrimUnsqueeze: fn("torch.unsqueeze"),
	primtorch.OpPrimAsStrided: fn("torch.as_strided"),

	primtorch.OpPrimClone:         {target: "torch.clone", custom: torchClone},
	primtorch.OpPrimGradAs:        {target: "torch.clone", custom: torchGradAs},
	primtorch.OpPrimCat:           fn("torch.cat"),
	primtorch.OpPrimConstantPadNd: fn(primtorch.PadTarget),
	primtorch.OpPrimGather:        fn("torch.gather"),
	primtorch.OpPrimIndexSelect:   fn("torch.index_select"),
	primtorch.OpPrimIndex:         {target: "torch.ops.aten.index.Tensor", custom: torchIndex},
	primtorch.OpPrimScatter:       fn("torch.scatter"),
	primtorch.OpPrimIndexPut:      {target: "torch.ops.aten.index_put.default", custom: torchIndexPut},

	primtorch.OpPrimFull: {target: "torch.full", custom: torchFull},
	primtorch.OpPrimIota: {target: "torch.arange", custom: torchIota},

	primtorch.OpPrimMm:          fn("torch.mm"),
	primtorch.OpPrimBmm:         fn("torch.bmm"),
	primtorch.OpPrimAddmm:       fn("torch.addmm"),
	primtorch.OpPrimConvolution: fn("torch.convolution"),
	primtorch.OpPrimFallback:    {target: "<the fallback's target>", custom: torchFallback},

	primtorch.OpPrimCopy: {target: "copy_", method: true},
}

// TorchTarget returns the torch callable a core op runs as: a Python path ("torch.add",
// "torch.ops.aten.slice.Tensor") or, when method is set, a Tensor method name ("to",
// "expand"). ok is false for torch-level ops. Some prims need more than one torch call (prod
// over several dims, iota in float64, clone into a strided layout): ToTorch writes those.
func TorchTarget(op *primtorch.Op) (target string, method, ok bool) {
	if op == nil || !op.IsPrim() || torchRules[op.ID].target == "" {
		return "", false, false
	}
	r := torchRules[op.ID]
	return r.target, r.method, true
}

// toTorch holds one ToTorch call's state.
type toTorch struct {
	g     *fxgraph.Graph
	env   map[*fxgraph.Node]fxgraph.Arg
	named map[*fxgraph.Node]bool // nodes already standing for a prims node
	cur   *fxgraph.Node
}

// ToTorch rewrites a prims graph into a torch-level graph computing the same values with
// torch's functions (call_function targets are Python paths, call_method targets Tensor
// methods), for python/ptgo/fx_export.py. Placeholders, get_attrs and the output structure are
// kept, and every prims node becomes a node of the same name (plus helper nodes where one torch
// call is not enough: Python numbers torch does not accept become torch.scalar_tensor of the
// op's dtype). Views stay views (view becomes Tensor.reshape, a view whenever prims.view is
// valid); prims.fallback becomes its torch-level call.
//
// A graph with size symbols (Graph.Shapes) stays symbolic: size expressions stay constants of
// the torch calls (fxgraph.EncodeJSON writes them with the symbols' bindings, fx_export makes
// them size() calls on the placeholders that carry them), and the sizes and strides ToTorch
// writes itself (restride, empty_strided, keepdim reshapes, iota ends) are the metas' symbolic
// ones, so the GraphModule runs at every size the graph is valid for. Every unspecialised
// symbol must be a dim of a placeholder (Split's backward gets one: carrySymbols). A graph
// whose symbols are all specialised becomes the static graph at the hints.
func ToTorch(g *fxgraph.Graph) (out *fxgraph.Graph, err error) {
	if g.Shapes != nil {
		if len(usedSymbols(g)) == 0 {
			g = atHints(g) // every symbol specialised: the static graph at the hints
		} else if ids := unboundSymbols(g); len(ids) > 0 {
			return nil, unsupportedf("ToTorch: graph %s uses size symbol s%d (%s), which none of its inputs carries as a size", g.Name, ids[0], g.Shapes.SourceOf(ids[0]))
		}
	}
	t := &toTorch{g: fxgraph.Clone(g), env: map[*fxgraph.Node]fxgraph.Arg{}, named: map[*fxgraph.Node]bool{}}
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(bugError)
			if !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("aotautograd: ToTorch: %s", be.msg)
		}
	}()
	t.g.Nodes = nil
	bases := outputViewBases(g)
	for _, n := range g.Nodes {
		t.cur = n
		switch n.Op {
		case fxgraph.Placeholder:
			p := t.g.AddPlaceholder(n.Target, n.Meta)
			p.Name, p.Target, p.Where = n.Name, n.Target, n.Where
			t.env[n], t.named[p] = p, true
		case fxgraph.GetAttr:
			a := t.g.AddGetAttr(n.Target, n.Meta)
			a.Name, a.Where = n.Name, n.Where
			t.env[n], t.named[a] = a, true
		case fxgraph.CallFunction:
			r, err := t.call(n)
			if err != nil {
				return nil, err
			}
			if rn, ok := r.(*fxgraph.Node); ok && !t.named[rn] {
				rn.Name = n.Name
				t.named[rn] = true
			}
			if bases[n] {
				r = t.restrideOutputs(n, r) // (its views are outputs: they take its layout)
			}
			t.env[n] = r
		case fxgraph.Output:
			var res fxgraph.Arg
			if len(n.Args) > 0 {
				res = t.restrideOutputs(n.Args[0], t.arg(n.Args[0]))
			}
			t.g.AddOutput(res)
		default:
			return nil, fmt.Errorf("aotautograd: ToTorch: node %s is a %s; ToTorch takes prims graphs", n.Name, n.Op)
		}
	}
	t.g.Renumber()
	return t.g, nil
}

// restrideOutputs gives each output the strides of its prims meta (eager's): torch's kernels
// lay out some results their own way (ones_like of a transposed tensor is torch.full; a softmax
// of one is contiguous in eager, its reductions and pointwise ops follow the input), so
// ptgo.restride (python/ptgo/fx_export.py) copies an output whose layout differs. Views and
// graph inputs are outputs as they are (they alias).
func (t *toTorch) restrideOutputs(orig, mapped fxgraph.Arg) fxgraph.Arg {
	switch o := orig.(type) {
	case fxgraph.Tuple:
		m, ok := mapped.(fxgraph.Tuple)
		if !ok || len(m.Elems) != len(o.Elems) {
			return mapped
		}
		out := fxgraph.Tuple{Elems: make([]fxgraph.Arg, len(o.Elems))}
		for i := range o.Elems {
			out.Elems[i] = t.restrideOutputs(o.Elems[i], m.Elems[i])
		}
		return out
	case *fxgraph.Node:
		meta := o.TensorMeta()
		if meta == nil || o.Op != fxgraph.CallFunction || !symDense(meta) || !zeroOffset(meta) || symContiguous(meta) && isContiguousProducer(o) {
			return mapped
		}
		if op := primtorch.Lookup(o.Target); op == nil || op.Alias != primtorch.AliasNone || o.Target == "prims.copy_" {
			return mapped
		}
		return t.emit("ptgo.restride", false, []fxgraph.Arg{mapped, stridesArg(meta)}, nil, meta.Clone())
	}
	return mapped
}

// outputViewBases are the nodes (not views, not inputs) that outputs which are views (chains
// of them) are views of: restrideOutputs gives such a base its meta's strides where it is
// computed (ptgo.restride copies only when torch's layout differs), so that the views the torch graph takes of it have the output's (a squeeze of a
// flip of a transposed tensor: torch.index_select's result is contiguous, the prims meta keeps
// eager's layout).
func outputViewBases(g *fxgraph.Graph) map[*fxgraph.Node]bool {
	bases := map[*fxgraph.Node]bool{}
	isView := func(n *fxgraph.Node) bool {
		op := primtorch.Lookup(n.Target)
		return n.Op == fxgraph.CallFunction && op != nil && op.Alias != primtorch.AliasNone && len(n.Args) > 0
	}
	var visit func(a fxgraph.Arg)
	visit = func(a fxgraph.Arg) {
		switch a := a.(type) {
		case fxgraph.Tuple:
			for _, e := range a.Elems {
				visit(e)
			}
		case *fxgraph.Node:
			if !isView(a) {
				return
			}
			b := a
			for isView(b) {
				next, ok := b.Args[0].(*fxgraph.Node)
				if !ok {
					return
				}
				b = next
			}
			if b.Op == fxgraph.CallFunction {
				bases[b] = true
			}
		}
	}
	for _, n := range g.Nodes {
		if n.Op == fxgraph.Output && len(n.Args) > 0 {
			visit(n.Args[0])
		}
	}
	return bases
}

// isContiguousProducer: prims whose torch call always gives a contiguous result (matrix
// products, factories, the contiguous() of an index): no check needed for a contiguous meta.
func isContiguousProducer(n *fxgraph.Node) bool {
	switch n.Target {
	case "prims.mm", "prims.bmm", "prims.addmm", "prims.full", "prims.iota", "prims.index":
		return true
	}
	return false
}

// shapeArg and stridesArg are a meta's sizes and strides as an argument list: size
// expressions where the meta is symbolic.
func shapeArg(m *primtorch.TensorMeta) fxgraph.Arg {
	a, _ := toArg(m.SymSizes())
	return a
}

// zeroOffset reports whether m's storage offset is 0 at every size.
func zeroOffset(m *primtorch.TensorMeta) bool {
	k, ok := m.SymOffset().IsConst()
	return ok && k == 0
}

func stridesArg(m *primtorch.TensorMeta) fxgraph.Arg {
	a, _ := toArg(m.SymStrides())
	return a
}

func (t *toTorch) arg(a fxgraph.Arg) fxgraph.Arg {
	return fxgraph.MapArg(a, func(n *fxgraph.Node) fxgraph.Arg {
		v, ok := t.env[n]
		if !ok {
			bug("node %s reads %s before it is defined", t.cur.Name, n.Name)
		}
		return v
	})
}

// emit appends a torch call; meta is the prims node's for the node standing for it, nil for
// helpers.
func (t *toTorch) emit(target string, method bool, args []fxgraph.Arg, kwargs []fxgraph.Kwarg, meta any) *fxgraph.Node {
	var n *fxgraph.Node
	if method {
		n = t.g.AddMethod(target, args, kwargs, meta)
	} else {
		n = t.g.AddCall(target, args, kwargs, meta)
	}
	n.Where = t.cur.Where
	return n
}

func (t *toTorch) call(n *fxgraph.Node) (fxgraph.Arg, error) {
	args := make([]fxgraph.Arg, len(n.Args))
	for i, a := range n.Args {
		args[i] = t.arg(a)
	}
	if n.Target == "operator.getitem" {
		return t.emit("operator.getitem", false, args, nil, n.Meta), nil
	}
	op := primtorch.Lookup(n.Target)
	if op == nil || !op.IsPrim() {
		return nil, fmt.Errorf("aotautograd: ToTorch: node %s calls %s, which is not a core op", n.Name, n.Target)
	}
	r := torchRules[op.ID]
	if r.custom != nil {
		return r.custom(t, n, args, r.target), nil
	}
	if op.Kind == primtorch.KindPointwise {
		args = t.numbers(n, args, r.nums)
	}
	var kwargs []fxgraph.Kwarg
	if r.kwargs != nil {
		kwargs = r.kwargs(t, n)
	}
	return t.emit(r.target, r.method, args, kwargs, n.Meta), nil
}

// opDType is the dtype of a pointwise node's operands (its first tensor operand's).
func opDType(n *fxgraph.Node) (primtorch.DType, primtorch.Device) {
	for _, a := range n.Args {
		if m := meta(a); m != nil {
			return m.DType, m.Device
		}
	}
	m := n.TensorMeta()
	return m.DType, m.Device
}

// scalarTensor materializes a number as a 0-d tensor of dtype dt (it broadcasts like the
// prims contract's number).
func (t *toTorch) scalarTensor(v any, dt primtorch.DType, dev primtorch.Device) *fxgraph.Node {
	kw := []fxgraph.Kwarg{{Name: "dtype", Value: fxgraph.Const{V: dt}}}
	if dev != primtorch.CPU {
		kw = append(kw, fxgraph.Kwarg{Name: "device", Value: fxgraph.Const{V: dev}})
	}
	return t.emit("torch.scalar_tensor", false, []fxgraph.Arg{fxgraph.Const{V: num(toFloat(v), dt)}}, kw, nil)
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case bool:
		if x {
			return 1
		}
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// numbers replaces number operands torch does not take by 0-d tensors. Bool tensors always
// take tensors (torch.add(bool, 1) would promote to int64).
func (t *toTorch) numbers(n *fxgraph.Node, args []fxgraph.Arg, nums numbers) []fxgraph.Arg {
	dt, dev := opDType(n)
	out := slices.Clone(args)
	for i, a := range args {
		c, ok := a.(fxgraph.Const)
		if !ok {
			continue
		}
		switch c.V.(type) {
		case bool, int64, float64:
		default:
			continue
		}
		keep := dt != primtorch.Bool && (nums == numBoth || (nums == numSecond && i == 1 && meta(args[0]) != nil))
		if !keep {
			out[i] = t.scalarTensor(c.V, dt, dev)
		}
	}
	return out
}

func dtypeKwarg(t *toTorch, n *fxgraph.Node) []fxgraph.Kwarg {
	return []fxgraph.Kwarg{{Name: "dtype", Value: fxgraph.Const{V: n.TensorMeta().DType}}}
}

// torchWhere: torch.where takes numbers for either value; a constant condition becomes a
// tensor, and so does one of two number values.
func torchWhere(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	m := n.TensorMeta()
	if c, ok := args[0].(fxgraph.Const); ok {
		args[0] = t.scalarTensor(c.V, primtorch.Bool, m.Device)
	}
	if _, ok := args[1].(fxgraph.Const); ok {
		if _, ok := args[2].(fxgraph.Const); ok {
			args[1] = t.scalarTensor(args[1].(fxgraph.Const).V, m.DType, m.Device)
		}
	}
	return t.emit("torch.where", false, args, nil, n.Meta)
}

// torchFma: fma(x, y, z) is torch.addcmul(z, x, y) for two tensors and torch.add(z, y,
// alpha=x) for a number x, which torch's CPU kernels compute as one fused multiply-add where
// the prim is used (primtorch.KernelsFuseMultiplyAdd).
func torchFma(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	m := n.TensorMeta()
	if c, ok := args[2].(fxgraph.Const); ok {
		args[2] = t.scalarTensor(c.V, m.DType, m.Device)
	}
	if _, ok := args[0].(fxgraph.Const); ok {
		args[0], args[1] = args[1], args[0]
	}
	if c, ok := args[1].(fxgraph.Const); ok {
		if _, ok := args[0].(fxgraph.Const); ok {
			args[0] = t.scalarTensor(args[0].(fxgraph.Const).V, m.DType, m.Device)
		}
		return t.emit("torch.add", false, []fxgraph.Arg{args[2], args[0]}, []fxgraph.Kwarg{{Name: "alpha", Value: c}}, n.Meta)
	}
	return t.emit("torch.addcmul", false, []fxgraph.Arg{args[2], args[0], args[1]}, nil, n.Meta)
}

// torchMaxMin: maximum/minimum against a number is torch.clamp_min/clamp_max, whose ties keep
// the tensor's value (relu(-0.0) is -0.0) and which gives NaN for a NaN number, as the prim does.
func torchMaxMin(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	clamp := "torch.clamp_min"
	if target == "torch.minimum" {
		clamp = "torch.clamp_max"
	}
	if _, ok := args[0].(fxgraph.Const); ok {
		args[0], args[1] = args[1], args[0]
	}
	if _, ok := args[1].(fxgraph.Const); ok {
		return t.emit(clamp, false, args, nil, n.Meta)
	}
	return t.emit(target, false, args, nil, n.Meta)
}

// reduceDims reads a reduction's dims and keepdim.
func reduceDims(n *fxgraph.Node) ([]int64, bool) {
	l := n.Args[1].(fxgraph.List)
	dims := make([]int64, len(l.Elems))
	for i, e := range l.Elems {
		dims[i] = e.(fxgraph.Const).V.(int64)
	}
	keep, _ := n.Args[2].(fxgraph.Const).V.(bool)
	return dims, keep
}

// keepShape views a full reduction's 0-d result as the keepdim shape.
func (t *toTorch) keepShape(r *fxgraph.Node, n *fxgraph.Node) fxgraph.Arg {
	return t.emit("reshape", true, []fxgraph.Arg{r, shapeArg(n.TensorMeta())}, nil, n.Meta)
}

// torchSumLike: torch.sum(x, dims, keepdim, dtype=x's) (torch would sum integers into int64);
// prims' [] (every dim) is torch 1.13's too.
func torchSumLike(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	return t.emit("torch.sum", false, args, dtypeKwarg(t, n), n.Meta)
}

func torchAmaxAmin(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	return t.emit(target, false, args, nil, n.Meta)
}

// torchOneDimReduction: torch.prod/any/all reduce one dim per call (from the last, so dims
// stay valid); any/all of a non-bool tensor read x != 0 first (torch.any of uint8 is uint8).
func torchOneDimReduction(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	op := primtorch.Lookup(n.Target)
	x := args[0]
	xm := meta(n.Args[0])
	var kw []fxgraph.Kwarg
	if op.ID == primtorch.OpPrimProd {
		kw = dtypeKwarg(t, n)
	} else if xm.DType != primtorch.Bool {
		x = t.emit("torch.ne", false, []fxgraph.Arg{x, fxgraph.Const{V: num(0, xm.DType)}}, nil, nil)
	}
	dims, keep := reduceDims(n)
	dims = normDims(dims, xm.Dim())
	if len(dims) == xm.Dim() {
		r := t.emit(target, false, []fxgraph.Arg{x}, kw, nil)
		if keep && xm.Dim() > 0 {
			return t.keepShape(r, n)
		}
		r.Meta = n.Meta
		return r
	}
	var r *fxgraph.Node
	for i := len(dims) - 1; i >= 0; i-- {
		r = t.emit(target, false, []fxgraph.Arg{x, fxgraph.Const{V: dims[i]}, fxgraph.Const{V: keep}}, kw, nil)
		x = r
	}
	r.Meta = n.Meta
	return r
}

// torchArgReduction: argmax/argmin over their one dim.
func torchArgReduction(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	dims, keep := reduceDims(n)
	if meta(n.Args[0]).Dim() == 0 {
		return t.emit(target, false, []fxgraph.Arg{args[0]}, nil, n.Meta) // a 0-d tensor: index 0
	}
	if len(dims) != 1 {
		bug("%s over %d dims", n.Target, len(dims))
	}
	return t.emit(target, false, []fxgraph.Arg{args[0], fxgraph.Const{V: dims[0]}, fxgraph.Const{V: keep}}, nil, n.Meta)
}

// torchSqueeze: torch.squeeze takes one dim per call (from the last).
func torchSqueeze(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	l := n.Args[1].(fxgraph.List)
	nd := meta(n.Args[0]).Dim()
	var dims []int64
	for _, e := range l.Elems {
		dims = append(dims, int64(normDim(e.(fxgraph.Const).V.(int64), nd)))
	}
	slices.Sort(dims)
	dims = slices.Compact(dims)
	x := args[0]
	if len(dims) == 0 {
		return t.emit("torch.clone", false, []fxgraph.Arg{x}, nil, n.Meta) // never emitted: squeeze of no dim
	}
	var r *fxgraph.Node
	for i := len(dims) - 1; i >= 0; i-- {
		r = t.emit("torch.squeeze", false, []fxgraph.Arg{x, fxgraph.Const{V: dims[i]}}, nil, nil)
		x = r
	}
	r.Meta = n.Meta
	return r
}

// torchClone: a contiguous clone, or an empty tensor of the node's strides copied into.
func torchClone(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	m := n.TensorMeta()
	if symContiguous(m) {
		return t.emit("torch.clone", false, args, []fxgraph.Kwarg{{Name: "memory_format", Value: fxgraph.Const{V: primtorch.MemoryFormat("contiguous_format")}}}, n.Meta)
	}
	return t.emit("copy_", true, []fxgraph.Arg{t.emptyLike(m), args[0]}, nil, n.Meta)
}

// torchGradAs: grad_as(x, e) runs as clone(x) (e only carries the gradient).
func torchGradAs(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	return torchClone(t, n, args[:1], target)
}

// torchIndexPut: aten's index_put (torch.index_put rejects None indices); a number value
// becomes a 0-d tensor. The gradient of a row lookup (an embedding's, vjpIndex) runs as torch's
// embedding_dense_backward (embeddingGradient).
func torchIndexPut(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	m := n.TensorMeta()
	args[1] = t.longIndices(n.Args[1], args[1])
	if rows, ok := embeddingGradient(n); ok {
		// w[idx] may index from the end; the kernel skips a negative row (an embedding's
		// forward raises for one), so each index is taken modulo the rows (the forward
		// checked them all in [-rows, rows))
		im := meta(n.Args[1].(fxgraph.List).Elems[0]).Clone()
		im.DType = primtorch.Int64
		idx := t.emit("torch.remainder", false, []fxgraph.Arg{args[1].(fxgraph.List).Elems[0], fxgraph.Const{V: rows}}, nil, im)
		return t.emit("torch.ops.aten.embedding_dense_backward.default", false,
			[]fxgraph.Arg{args[2], idx, fxgraph.Const{V: rows}, fxgraph.Const{V: int64(-1)}, fxgraph.Const{V: false}},
			nil, n.Meta)
	}
	if c, ok := args[2].(fxgraph.Const); ok {
		args[2] = t.scalarTensor(c.V, m.DType, m.Device)
	}
	return t.emit("torch.ops.aten.index_put.default", false, args, nil, n.Meta)
}

// embeddingGradient says whether an index_put is the gradient of a row lookup of a 2-d weight
// (vjpIndex of an embedding, w[idx]): zeros [rows, D] accumulating values [*idx, D] at one
// integer index tensor, float32 or float64 on the CPU; and the rows. torch's index_put with
// accumulate adds a float32 tensor's values with atomic adds in any order at more than one
// thread, while eager's embedding backward (embedding_dense_backward) adds each row's values in
// index order: over 90 000 indices of one row the two differed by 3e-4 (fuzz seed 37408). That
// kernel gives eager's sums, and an order where eager's w[idx] has none.
func embeddingGradient(n *fxgraph.Node) (int64, bool) {
	if len(n.Args) != 4 {
		return 0, false
	}
	if acc, ok := n.Args[3].(fxgraph.Const); !ok || acc.V != true {
		return 0, false
	}
	zeros, ok := n.Args[0].(*fxgraph.Node)
	if !ok || zeros.Target != "prims.full" || len(zeros.Args) < 2 {
		return 0, false
	}
	if v, ok := zeros.Args[1].(fxgraph.Const); !ok {
		return 0, false
	} else if f, isFloat := v.V.(float64); (!isFloat || f != 0 || math.Signbit(f)) && v.V != int64(0) {
		return 0, false // the kernel starts from +0
	}
	list, ok := n.Args[1].(fxgraph.List)
	if !ok || len(list.Elems) != 1 {
		return 0, false
	}
	m, im, vm := n.TensorMeta(), meta(list.Elems[0]), meta(n.Args[2])
	if m == nil || im == nil || vm == nil || m.Sym != nil || im.Sym != nil || vm.Sym != nil || m.Device != primtorch.CPU {
		return 0, false
	}
	if len(m.Shape) != 2 || (m.DType != primtorch.Float32 && m.DType != primtorch.Float64) || vm.DType != m.DType ||
		(im.DType != primtorch.Int64 && im.DType != primtorch.Int32) {
		return 0, false
	}
	if !slices.Equal(vm.Shape, append(slices.Clone(im.Shape), m.Shape[1])) {
		return 0, false
	}
	return m.Shape[0], true
}

// torchIndex: aten.index with integer index tensors as int64 (the prim takes any integer dtype,
// as embedding and index_select do; torch's index only int64), and the prim's contiguous layout
// when it has one (torch's result follows the layout of the index tensors: an embedding of
// transposed indices; other layouts: restrideOutputs).
func torchIndex(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	args[1] = t.longIndices(n.Args[1], args[1])
	r := t.emit(target, false, args, nil, n.Meta)
	if m := n.TensorMeta(); m != nil && symContiguous(m) {
		return t.emit("contiguous", true, []fxgraph.Arg{r}, nil, m.Clone())
	}
	return r
}

// emptyLike is torch.empty_strided with meta's sizes, strides and dtype.
func (t *toTorch) emptyLike(m *primtorch.TensorMeta) *fxgraph.Node {
	return t.emit("torch.empty_strided", false, []fxgraph.Arg{shapeArg(m), stridesArg(m)}, deviceKwargs(m), nil)
}

// longIndices converts the integer index tensors of a prims index list (orig, as the prims graph
// has it; mapped, its torch-level argument) that are not int64 to int64.
func (t *toTorch) longIndices(orig, mapped fxgraph.Arg) fxgraph.Arg {
	ol, ok := orig.(fxgraph.List)
	ml, ok2 := mapped.(fxgraph.List)
	if !ok || !ok2 || len(ol.Elems) != len(ml.Elems) {
		return mapped
	}
	out := fxgraph.List{Elems: append([]fxgraph.Arg(nil), ml.Elems...)}
	for i, e := range ol.Elems {
		m := meta(e)
		if m == nil || !m.DType.IsIntegral(false) || m.DType == primtorch.Int64 || m.DType == primtorch.UInt8 {
			continue
		}
		lm := m.Clone()
		lm.DType = primtorch.Int64
		out.Elems[i] = t.emit("long", true, []fxgraph.Arg{ml.Elems[i]}, nil, lm)
	}
	return out
}

func deviceKwargs(m *primtorch.TensorMeta) []fxgraph.Kwarg {
	kw := []fxgraph.Kwarg{{Name: "dtype", Value: fxgraph.Const{V: m.DType}}}
	if m.Device != primtorch.CPU {
		kw = append(kw, fxgraph.Kwarg{Name: "device", Value: fxgraph.Const{V: m.Device}})
	}
	return kw
}

// torchFull: torch.full, or empty_strided(...).fill_ when the meta has eager's layout of a
// non-contiguous result (ones_like of a transposed tensor).
func torchFull(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	if m := n.TensorMeta(); !symContiguous(m) && symDense(m) && zeroOffset(m) {
		return t.emit("fill_", true, []fxgraph.Arg{t.emptyLike(m), args[1]}, nil, n.Meta)
	}
	return t.emit("torch.full", false, args[:2], deviceKwargs(n.TensorMeta()), n.Meta)
}

// torchIota: integer iotas are torch.arange(start, start + length*step, step); floating ones
// are computed in float64 (arange of the length, times step, plus start) and converted, as the
// prims contract says.
func torchIota(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	m := n.TensorMeta()
	length, ok := asSym(n.Args[0].(fxgraph.Const).V)
	if !ok {
		bug("%s: iota length %v", n.Name, n.Args[0])
	}
	lengthArg, _ := toArg(length)
	start, step := n.Args[1].(fxgraph.Const).V, n.Args[2].(fxgraph.Const).V
	// an integer start or step may be a size expression (a reversed scan starts at s0 - 1)
	number := func(v any) fxgraph.Arg {
		if s, ok := v.(primtorch.SymInt); ok {
			a, _ := toArg(s)
			return a
		}
		return fxgraph.Const{V: toFloat(v)}
	}
	if !m.DType.IsFloatingPoint() {
		s, ok1 := asSym(start)
		st, ok2 := asSym(step)
		if !ok1 || !ok2 {
			bug("%s: integer iota of start %v, step %v", n.Name, start, step)
		}
		begin, _ := toArg(s)
		stepArg, _ := toArg(st)
		end, _ := toArg(length.Mul(st).Add(s))
		return t.emit("torch.arange", false, []fxgraph.Arg{begin, end, stepArg}, deviceKwargs(m), n.Meta)
	}
	f64 := &primtorch.TensorMeta{DType: primtorch.Float64, Device: m.Device}
	r := t.emit("torch.arange", false, []fxgraph.Arg{lengthArg}, deviceKwargs(f64), nil)
	r = t.emit("torch.mul", false, []fxgraph.Arg{r, number(step)}, nil, nil)
	r = t.emit("torch.add", false, []fxgraph.Arg{r, number(start)}, nil, nil)
	return t.emit("to", true, []fxgraph.Arg{r, fxgraph.Const{V: m.DType}}, nil, n.Meta)
}

// torchFallback: the torch-level call itself ("Tensor.x" targets are methods).
func torchFallback(t *toTorch, n *fxgraph.Node, args []fxgraph.Arg, target string) fxgraph.Arg {
	target, _ = n.Args[0].(fxgraph.Const).V.(string)
	// torch's call sees its tensors laid out as eager's (their prims metas): torch's own
	// kernels lay some results out their way (a BatchNorm decomposed into pointwise ops of a
	// transposed input is transposed, eager's BatchNorm contiguous), and a call like rand_like
	// draws in memory order (fuzz seed 3281) or gives its result its argument's strides
	args = append([]fxgraph.Arg{}, args...)
	for i := 1; i < len(args); i++ {
		args[i] = t.restrideOutputs(n.Args[i], args[i])
	}
	var kwargs []fxgraph.Kwarg
	for _, kw := range n.Kwargs {
		kwargs = append(kwargs, fxgraph.Kwarg{Name: kw.Name, Value: t.arg(kw.Value)})
	}
	if len(target) > len("Tensor.") && target[:len("Tensor.")] == "Tensor." {
		return t.emit(target[len("Tensor."):], true, args[1:], kwargs, n.Meta)
	}
	return t.emit(target, false, args[1:], kwargs, n.Meta)
}
