package aotautograd

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// derivative is one core op's entry: the vector-Jacobian product written as prims, or why
// the op has none.
type derivative struct {
	vjp vjpFn
	// none says why the op has no derivative: its results are never differentiable (bool and
	// integer results, factories), or a gradient reaching it makes the graph not
	// differentiable by ptgo (prims.fallback).
	none string
}

// vjpFn emits the gradients of a forward node's tensor inputs given the gradient of its result
// (c.g): it calls c.give once per input that needs one (c.needs).
type vjpFn func(c *vjpCtx)

const (
	noneBool     = "bool or integer results carry no gradient"
	noneIndex    = "integer index results carry no gradient"
	noneFactory  = "a factory: it has no tensor inputs"
	noneFallback = "a torch-level call run by torch; ptgo has no derivative for it (its inputs require grad)"
	noneCopy     = "the mutation epilogue (functionalized in-place update, e.g. BatchNorm running statistics): no gradient flows through it"
)

// derivatives is the one table of derivative formulas, keyed by OpID; every core op has an
// entry (TestDerivativeCoverage). The formulas live in d_pointwise.go, d_reduce.go,
// d_view.go, d_data.go and d_extern.go.
var derivatives = [primtorch.NumOps]derivative{
	// Elementwise, unary.
	primtorch.OpPrimAbs:        {vjp: unary(vjpAbs)},
	primtorch.OpPrimNeg:        {vjp: unary(vjpNeg)},
	primtorch.OpPrimExp:        {vjp: unary(vjpExp)},
	primtorch.OpPrimExp2:       {vjp: unary(vjpExp2)},
	primtorch.OpPrimExpm1:      {vjp: unary(vjpExpm1)},
	primtorch.OpPrimLog:        {vjp: unary(vjpLog)},
	primtorch.OpPrimLog1p:      {vjp: unary(vjpLog1p)},
	primtorch.OpPrimLog2:       {vjp: unary(vjpLog2)},
	primtorch.OpPrimLog10:      {vjp: unary(vjpLog10)},
	primtorch.OpPrimSqrt:       {vjp: unary(vjpSqrt)},
	primtorch.OpPrimRsqrt:      {vjp: unary(vjpRsqrt)},
	primtorch.OpPrimSin:        {vjp: unary(vjpSin)},
	primtorch.OpPrimCos:        {vjp: unary(vjpCos)},
	primtorch.OpPrimTan:        {vjp: unary(vjpTan)},
	primtorch.OpPrimAsin:       {vjp: unary(vjpAsin)},
	primtorch.OpPrimAcos:       {vjp: unary(vjpAcos)},
	primtorch.OpPrimAtan:       {vjp: unary(vjpAtan)},
	primtorch.OpPrimSinh:       {vjp: unary(vjpSinh)},
	primtorch.OpPrimCosh:       {vjp: unary(vjpCosh)},
	primtorch.OpPrimTanh:       {vjp: unary(vjpTanh)},
	primtorch.OpPrimSigmoid:    {vjp: unary(vjpSigmoid)},
	primtorch.OpPrimErf:        {vjp: unary(vjpErf)},
	primtorch.OpPrimErfc:       {vjp: unary(vjpErfc)},
	primtorch.OpPrimReciprocal: {vjp: unary(vjpReciprocal)},
	primtorch.OpPrimFloor:      {vjp: unary(vjpZero)},
	primtorch.OpPrimCeil:       {vjp: unary(vjpZero)},
	primtorch.OpPrimRound:      {vjp: unary(vjpZero)},
	primtorch.OpPrimTrunc:      {vjp: unary(vjpZero)},
	primtorch.OpPrimSign:       {vjp: unary(vjpZero)},
	primtorch.OpPrimBitwiseNot: {none: noneBool},
	primtorch.OpPrimLogicalNot: {none: noneBool},
	primtorch.OpPrimIsnan:      {none: noneBool},
	primtorch.OpPrimIsinf:      {none: noneBool},
	primtorch.OpPrimIsfinite:   {none: noneBool},
	primtorch.OpPrimCheck:      {none: noneBool},

	// Elementwise, binary.
	primtorch.OpPrimAdd:        {vjp: vjpAdd},
	primtorch.OpPrimSub:        {vjp: vjpSub},
	primtorch.OpPrimMul:        {vjp: vjpMul},
	primtorch.OpPrimDiv:        {vjp: vjpDiv},
	primtorch.OpPrimFloordiv:   {vjp: vjpFloordiv},
	primtorch.OpPrimRemainder:  {vjp: vjpRemainder},
	primtorch.OpPrimFmod:       {vjp: vjpFmod},
	primtorch.OpPrimPow:        {vjp: vjpPow},
	primtorch.OpPrimMaximum:    {vjp: vjpMaxMin(true)},
	primtorch.OpPrimMinimum:    {vjp: vjpMaxMin(false)},
	primtorch.OpPrimAtan2:      {vjp: vjpAtan2},
	primtorch.OpPrimHypot:      {vjp: vjpHypot},
	primtorch.OpPrimCopysign:   {vjp: vjpCopysign},
	primtorch.OpPrimBitwiseAnd: {none: noneBool},
	primtorch.OpPrimBitwiseOr:  {none: noneBool},
	primtorch.OpPrimBitwiseXor: {none: noneBool},
	primtorch.OpPrimShiftLeft:  {none: noneBool},
	primtorch.OpPrimShiftRight: {none: noneBool},
	primtorch.OpPrimEq:         {none: noneBool},
	primtorch.OpPrimNe:         {none: noneBool},
	primtorch.OpPrimLt:         {none: noneBool},
	primtorch.OpPrimLe:         {none: noneBool},
	primtorch.OpPrimGt:         {none: noneBool},
	primtorch.OpPrimGe:         {none: noneBool},
	primtorch.OpPrimLogicalAnd: {none: noneBool},
	primtorch.OpPrimLogicalOr:  {none: noneBool},
	primtorch.OpPrimLogicalXor: {none: noneBool},

	primtorch.OpPrimWhere:              {vjp: vjpWhere},
	primtorch.OpPrimFma:                {vjp: vjpFma},
	primtorch.OpPrimConvertElementType: {vjp: vjpConvert},

	// Reductions and scans.
	primtorch.OpPrimSum:     {vjp: vjpSum},
	primtorch.OpPrimProd:    {vjp: vjpProd},
	primtorch.OpPrimAmax:    {vjp: vjpAmaxAmin},
	primtorch.OpPrimAmin:    {vjp: vjpAmaxAmin},
	primtorch.OpPrimAny:     {none: noneBool},
	primtorch.OpPrimAll:     {none: noneBool},
	primtorch.OpPrimArgmax:  {none: noneIndex},
	primtorch.OpPrimArgmin:  {none: noneIndex},
	primtorch.OpPrimCumsum:  {vjp: vjpCumsum},
	primtorch.OpPrimCumprod: {vjp: vjpCumprod},

	// Views.
	primtorch.OpPrimView:      {vjp: vjpView},
	primtorch.OpPrimPermute:   {vjp: vjpPermute},
	primtorch.OpPrimExpand:    {vjp: vjpExpand},
	primtorch.OpPrimSlice:     {vjp: vjpSlice},
	primtorch.OpPrimSelect:    {vjp: vjpSelect},
	primtorch.OpPrimSqueeze:   {vjp: vjpSqueeze},
	primtorch.OpPrimUnsqueeze: {vjp: vjpUnsqueeze},
	primtorch.OpPrimAsStrided: {vjp: vjpAsStrided},

	// Copies and data movement.
	primtorch.OpPrimClone:         {vjp: vjpClone},
	primtorch.OpPrimGradAs:        {vjp: vjpGradAs},
	primtorch.OpPrimCat:           {vjp: vjpCat},
	primtorch.OpPrimConstantPadNd: {vjp: vjpPad},
	primtorch.OpPrimGather:        {vjp: vjpGather},
	primtorch.OpPrimIndexSelect:   {vjp: vjpIndexSelect},
	primtorch.OpPrimIndex:         {vjp: vjpIndex},
	primtorch.OpPrimScatter:       {vjp: vjpScatter},
	primtorch.OpPrimIndexPut:      {vjp: vjpIndexPut},

	// Factories.
	primtorch.OpPrimFull: {none: noneFactory},
	primtorch.OpPrimIota: {none: noneFactory},

	// Externs.
	primtorch.OpPrimMm:          {vjp: vjpMm},
	primtorch.OpPrimBmm:         {vjp: vjpBmm},
	primtorch.OpPrimAddmm:       {vjp: vjpAddmm},
	primtorch.OpPrimConvolution: {vjp: vjpConvolution},
	primtorch.OpPrimFallback:    {none: noneFallback},

	primtorch.OpPrimCopy: {none: noneCopy},
}

// vjpCtx is what a derivative formula sees: the builder of the backward nodes, the forward
// node n, the gradient g of its result (n's shape and dtype), and the accumulation of input
// gradients.
type vjpCtx struct {
	*builder
	n *fxgraph.Node
	g *fxgraph.Node
	j *jointBuilder
}

// in is argument i: a *fxgraph.Node, or a constant's Go value.
func (c *vjpCtx) in(i int) any {
	switch a := c.n.Args[i].(type) {
	case *fxgraph.Node:
		return a
	case fxgraph.Const:
		// Integer numbers in floating elementwise ops (pow(x, 2)) read as floats in the
		// formulas.
		if v, ok := a.V.(int64); ok {
			if m := c.n.TensorMeta(); m != nil && m.DType.IsFloatingPoint() && primtorch.Lookup(c.n.Target).Kind == primtorch.KindPointwise {
				return float64(v)
			}
		}
		return a.V
	}
	return c.n.Args[i]
}

// num is argument i for formulas that compute with a number operand in Go (pow, atan2): a size
// expression (a Python number that was x.size(0)) is specialised to its hint, as a float.
func (c *vjpCtx) num(i int) any {
	v := c.in(i)
	if s, ok := v.(primtorch.SymInt); ok {
		return float64(s.Specialize(c.n.Target + "'s gradient with a size as an operand (aotautograd)"))
	}
	return v
}

// x is tensor argument i (nil when it is a number).
func (c *vjpCtx) x(i int) *fxgraph.Node {
	n, _ := c.n.Args[i].(*fxgraph.Node)
	return n
}

// needs reports whether argument i is a tensor whose gradient is wanted.
func (c *vjpCtx) needs(i int) bool { return i < len(c.n.Args) && c.j.rg[c.x(i)] }

// give adds grad to the gradient of x (a no-op unless x requires grad). A nil grad is a zero
// gradient: x is reached by the backward pass (so an input gets zeros, not None) but nothing
// is added.
func (c *vjpCtx) give(x *fxgraph.Node, grad *fxgraph.Node) { c.j.accumulate(x, grad) }

// exact marks forward values the backward compares for equality with results computed from
// them: saved, never recomputed (joint.exact). A view is marked through its base (views move
// no values, and a view is never saved itself); an input needs no mark.
func (c *vjpCtx) exact(xs ...any) {
	for _, x := range xs {
		n, ok := x.(*fxgraph.Node)
		if !ok || n == nil {
			continue
		}
		if n = storageRoot(n); n.Op == fxgraph.CallFunction {
			c.j.exact[n] = true
		}
	}
}

func (c *vjpCtx) intArg(i int) int64 {
	k, _ := c.n.Args[i].(fxgraph.Const)
	v, ok := k.V.(int64)
	if !ok {
		bug("%s: argument %d is %v, not an int", c.n.Name, i, c.n.Args[i])
	}
	return v
}

func (c *vjpCtx) intsArg(i int) []int64 {
	l, ok := c.n.Args[i].(fxgraph.List)
	if !ok {
		bug("%s: argument %d is not a list", c.n.Name, i)
	}
	out := make([]int64, len(l.Elems))
	for k, e := range l.Elems {
		v, ok := e.(fxgraph.Const).V.(int64)
		if !ok {
			bug("%s: argument %d has a non-int element", c.n.Name, i)
		}
		out[k] = v
	}
	return out
}

func (c *vjpCtx) boolArg(i int) bool {
	v, ok := c.in(i).(bool)
	if !ok {
		bug("%s: argument %d is %v, not a bool", c.n.Name, i, c.in(i))
	}
	return v
}

// outMeta is the forward node's result meta.
func (c *vjpCtx) outMeta() *primtorch.TensorMeta { return c.n.TensorMeta() }

// HasDerivative reports whether a core op has a derivative formula; when it has none, why says
// why (its results never carry gradients, or a gradient reaching it makes the graph not
// differentiable by ptgo). Torch-level ops have none ("a torch-level op: decompose it").
func HasDerivative(op *primtorch.Op) (ok bool, why string) {
	if op == nil || !op.IsPrim() {
		return false, "a torch-level op: decompose it (primtorch/decomp) first"
	}
	d := derivatives[op.ID]
	return d.vjp != nil, d.none
}
