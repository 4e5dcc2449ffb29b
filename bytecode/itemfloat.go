package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Floats read from tensors (A136).
//
// tensor.item() (or float(t)) of a one-element floating-point tensor is a Python float only
// the run knows. Capture keeps it in the graph: a computed float symbol
// (primtorch.ShapeEnv.NewComputedFloat) whose defining node reads it (Tensor.item; its meta is
// the symbol). Python float arithmetic on it (+, -, *, /, **, unary -, abs, math.sqrt) records
// operator.* / math.sqrt nodes defining new computed floats, and an op that takes floats read at
// run time (primtorch fSymFloat: add, sub, rsub, mul, div as self or other; addcmul and
// addcdiv's value) takes it as its float operand, the defining node as the argument. In the
// torch-level graph these nodes compute Python floats, so torch's run of the graph (backend
// eager, the rerun after a failed check) is eager itself; decomposition computes them as 0-d
// float64 tensors and checks for the exceptions Python raises (primtorch/decomp/pyfloat.go).
// Every other use — a comparison, int(), an op argument of another kind, a float16 operand —
// breaks the graph there, with the float a graph output (ptgo.float_tensor: a 0-d float64
// tensor) the resumed code reads back with .item(). torch.optim's Adam reads its step count
// this way each step (step_t.item()), which used to send the whole loop over parameters to
// Python.

// pyFloatOps are the Python float operators kept in the graph (BINARY_OP's names).
var pyFloatOps = map[string]bool{"add": true, "sub": true, "mul": true, "truediv": true, "pow": true, "floordiv": true, "mod": true}

// computedFloat makes the SymF a graph node defines (meta: a new computed float symbol).
func (t *Tracer) computedFloat(f *frame, method bool, target string, args []fxgraph.Arg, what string) *SymF {
	t.ensureShapes()
	sf := t.shapes.NewComputedFloat(0, what)
	t.floatSources = append(t.floatSources, floatSource{}) // (float symbol IDs index floatSources)
	var node *fxgraph.Node
	if method {
		node = t.addMethod(f, target, args, nil, sf)
	} else {
		node = t.addCall(f, target, args, nil, sf)
	}
	// the float as a 0-d float64 tensor, for a graph break to hand over (dead otherwise)
	m := primtorch.NewContiguous(primtorch.Float64, []int64{}, primtorch.CPU)
	tn := t.addCall(f, primtorch.FloatTensorTarget, []fxgraph.Arg{node}, nil, m)
	return &SymF{F: sf, Node: node, Tensor: &TensorV{Node: tn, Meta: m}}
}

// itemFloat is tensor.item() of x when it is a computed float: a floating-point tensor of one
// element (static sizes) on the CPU; nil when not (the caller breaks the graph as before).
func (t *Tracer) itemFloat(f *frame, x *TensorV) Value {
	m := x.Meta
	if !m.DType.IsFloatingPoint() || m.Sym != nil || m.Numel() != 1 || m.Device.Type != "cpu" {
		return nil
	}
	return t.computedFloat(f, true, "item", []fxgraph.Arg{x.Node}, fmt.Sprintf("%s.item() at %s", x.Node.Name, f.shortWhere()))
}

// isComputed reports whether v is a float computed in the graph.
func isComputed(v Value) bool {
	s, ok := v.(*SymF)
	return ok && s.Node != nil
}

// floatOperand is v as an operand of a Python float operator kept in the graph: a computed or
// argument float, or a number constant; ok=false otherwise.
func floatOperand(v Value) (fxgraph.Arg, bool) {
	switch x := v.(type) {
	case *SymF:
		if x.Node != nil {
			return x.Node, true
		}
		return fxgraph.Const{V: x.F}, true
	case *ConstV:
		switch x.Kind {
		case py.KFloat:
			return fxgraph.Const{V: x.F}, true
		case py.KInt:
			if !x.big {
				return fxgraph.Const{V: x.I}, true
			}
		case py.KBool:
			return fxgraph.Const{V: x.I != 0}, true
		}
	}
	return nil, false
}

// floatBinary records a Python float operator with a float operand read at run time: a derived
// float when both operands' values are known (floatexpr.go), a computed one when one is read
// from a tensor; ok=false when it is neither (the caller realizes the operands: a specialised
// argument, or a graph break for a float read from a tensor).
func (t *Tracer) floatBinary(f *frame, op string, a, b Value) (Value, bool) {
	_, sa := a.(*SymF)
	_, sb := b.(*SymF)
	if !sa && !sb {
		return nil, false
	}
	if v, ok := t.derivedBinary(f, op, a, b); ok {
		return v, true
	}
	_, knownA := floatExprOf(a)
	_, knownB := floatExprOf(b)
	if knownA && knownB || !pyFloatOps[op] {
		// values known: Python raises here (or gives a complex number), as the trace will
		return nil, false
	}
	x, okA := floatOperand(a)
	y, okB := floatOperand(b)
	if !okA || !okB {
		return nil, false
	}
	return t.computedFloat(f, false, "operator."+op, []fxgraph.Arg{x, y}, "a float computed at "+f.shortWhere()), true
}

// floatUnary records -x, abs(x) or math.sqrt(x) of a float read at run time (op: neg, abs,
// sqrt); ok=false where the trace takes its value instead (an argument whose sqrt Python
// refuses).
func (t *Tracer) floatUnary(f *frame, op string, x *SymF) (Value, bool) {
	if x.Expr != nil {
		if v := t.derivedUnary(f, op, x); v != nil {
			return v, true
		}
		return nil, false
	}
	target := "operator." + op
	if op == "sqrt" {
		target = "math.sqrt"
	}
	return t.computedFloat(f, false, target, []fxgraph.Arg{x.Node}, "a float computed at "+f.shortWhere()), true
}

// hasComputed reports a float computed in the graph among a call's arguments.
func hasComputed(args []Value, kw []kwArg) bool {
	for _, a := range args {
		if isComputed(a) {
			return true
		}
	}
	for _, k := range kw {
		if isComputed(k.Val) {
			return true
		}
	}
	return false
}

// computedUse is the graph break of a computed float used where the graph cannot keep it.
func computedUse(f *frame, s *SymF, how string) error {
	return f.unsupported("keep the value a tensor (use tensor ops instead of .item()), or read it outside the compiled function",
		"a float read from a tensor (%s) used %s", s.F.Source(), how)
}

// floatOpAccepts reports whether op may take the computed float s as an operand given the
// call's tensor arguments: not beside a float16/bfloat16 or complex tensor (where torch rounds
// a Python number to the tensor's dtype first, or computes in complex).
func floatOpAccepts(args []Value, kw []kwArg) bool {
	ok := true
	check := func(v Value) {
		if x, isT := v.(*TensorV); isT {
			dt := x.Meta.DType
			if dt == primtorch.Float16 || dt == primtorch.BFloat16 || dt.IsComplex() || x.Meta.Device.Type != "cpu" {
				ok = false
			}
		}
	}
	for _, a := range args {
		check(a)
	}
	for _, k := range kw {
		check(k.Val)
	}
	return ok
}
