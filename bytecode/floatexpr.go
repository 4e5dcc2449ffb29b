package bytecode

import (
	"fmt"
	"math"
	"strconv"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Python arithmetic and comparisons on float arguments (A138).
//
// A float argument read at run time (symfloat.go) keeps its source, so every float computed
// from such arguments and number constants alone — 1 - alpha, alpha * 0.5, 2 ** -gamma — has
// a value the trace knows (its hint: the value in the traced call, computed by CPython itself)
// and an expression over the arguments a guard can recompute on each call. Arithmetic records
// the operator.* node of a computed float (itemfloat.go; decomposition computes it in float64 as
// Python does, with checks where Python raises), a derived float whose expression the SymF
// carries. Where the trace needs the value:
//
//   - a comparison (alpha >= 0, 1 - alpha < eps, alpha == 0.0), bool(alpha), min/max: the
//     outcome at the hints, guarded: the guard recomputes both sides with CPython's own number
//     protocol on the call's arguments and compares them the same way. A new value on the same
//     side reuses the graph; one on the other side recompiles.
//   - int(), round(), math.floor/ceil/trunc: the integer at the hints, guarded equal.
//   - anything else (an op argument that is not read at run time, formatting): the float's
//     value, guarded equal bit for bit (the expression's result, as a specialised argument is).
//
// A guard whose expression raises on a call (a division by an argument that became 0.0) fails,
// and the recompile traces that call: Python's exception where the trace needs the value there.

// floatExpr is a Python float computed from float arguments and number constants.
type floatExpr struct {
	op   string  // "arg", "const", or the operator: add sub mul truediv floordiv mod pow neg abs sqrt int floor ceil trunc round
	src  Source  // "arg": where the argument is read
	c    *ConstV // "const": an int (fitting int64), a bool or a float
	args []*floatExpr
}

var (
	floatBinOps = map[string]int64{"add": 0, "sub": 1, "mul": 2, "truediv": 3, "floordiv": 4, "mod": 5, "pow": 6}
	floatUnOps  = map[string]int64{"neg": 0, "abs": 1, "sqrt": 2, "int": 3, "floor": 4, "ceil": 5, "round": 6, "trunc": 7}
	// floatRels are the comparisons a float guard makes (Python's rich comparison codes), and
	// "is": the same float, bit for bit.
	floatRels = map[string]int64{"lt": 0, "le": 1, "eq": 2, "ne": 3, "gt": 4, "ge": 5, "is": 6}
	opSymbols = map[string]string{"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
		"lt": "<", "le": "<=", "eq": "==", "ne": "!=", "gt": ">", "ge": ">="}
	// floatUnaryPaths are the Python callables of the unary operators (their hints).
	floatUnaryPaths = map[string]string{"neg": "operator.neg", "abs": "operator.abs", "sqrt": "math.sqrt",
		"int": "builtins.int", "floor": "math.floor", "ceil": "math.ceil", "round": "builtins.round", "trunc": "math.trunc"}
)

func (e *floatExpr) String() string {
	switch e.op {
	case "arg":
		return e.src.Name()
	case "const":
		if e.c.Kind == py.KFloat {
			return pyFloatRepr(e.c.F)
		}
		if e.c.Kind == py.KBool {
			return pyBool(e.c.I != 0)
		}
		return strconv.FormatInt(e.c.I, 10)
	}
	operand := func(a *floatExpr) string {
		if a.op == "arg" || a.op == "const" || len(a.args) == 1 && a.op != "neg" {
			return a.String()
		}
		return "(" + a.String() + ")"
	}
	if len(e.args) == 1 {
		switch e.op {
		case "neg":
			return "-" + operand(e.args[0])
		case "abs", "int", "round":
			return e.op + "(" + e.args[0].String() + ")"
		}
		return "math." + e.op + "(" + e.args[0].String() + ")"
	}
	return operand(e.args[0]) + " " + opSymbols[e.op] + " " + operand(e.args[1])
}

// floatExprOf is v as a float expression: a SymF the trace knows the value of, or a number
// constant; ok=false otherwise (a float read from a tensor, anything else).
func floatExprOf(v Value) (*floatExpr, bool) {
	switch x := v.(type) {
	case *SymF:
		return x.Expr, x.Expr != nil
	case *ConstV:
		switch x.Kind {
		case py.KFloat, py.KBool:
			return &floatExpr{op: "const", c: x}, true
		case py.KInt:
			if !x.big {
				return &floatExpr{op: "const", c: x}, true
			}
		}
	}
	return nil, false
}

// hintOf is v's value in the traced call (a SymF with an expression, or a constant).
func hintOf(v Value) *ConstV {
	if s, ok := v.(*SymF); ok {
		return floatV(s.F.Hint())
	}
	return v.(*ConstV)
}

// pyNumber calls the CPython callable path on number constants: the value Python computes;
// ok=false where Python raises or the result is not an int, bool or float (a complex power).
func (t *Tracer) pyNumber(path string, args ...*ConstV) (*ConstV, bool) {
	fn, found := t.env.TryKnown(path)
	if !found {
		return nil, false
	}
	objs := make([]py.Obj, len(args))
	for i, a := range args {
		o, err := t.toObj(nil, a)
		if err != nil {
			return nil, false
		}
		objs[i] = o
	}
	r, err := t.api.Call(fn, objs, nil)
	if err != nil {
		return nil, false
	}
	v, err := t.constFromObj(r)
	if err != nil {
		return nil, false
	}
	c, ok := v.(*ConstV)
	if !ok || c.big || (c.Kind != py.KFloat && c.Kind != py.KInt && c.Kind != py.KBool) {
		return nil, false
	}
	return c, true
}

// derivedBinary is a op b where one operand is a float argument (or derived from arguments)
// and the other one too or a number: a derived float; ok=false where Python would raise or not
// give a float (the caller specialises the operands: the trace then raises Python's exception).
func (t *Tracer) derivedBinary(f *frame, op string, a, b Value) (Value, bool) {
	if _, known := floatBinOps[op]; !known {
		return nil, false
	}
	ea, okA := floatExprOf(a)
	eb, okB := floatExprOf(b)
	if !okA || !okB {
		return nil, false
	}
	h, ok := t.pyNumber("operator."+op, hintOf(a), hintOf(b))
	if !ok || h.Kind != py.KFloat {
		return nil, false
	}
	x, _ := floatOperand(a)
	y, _ := floatOperand(b)
	e := &floatExpr{op: op, args: []*floatExpr{ea, eb}}
	return t.derivedFloat(f, "operator."+op, []fxgraph.Arg{x, y}, e, h.F), true
}

// derivedUnary is -x, abs(x) or math.sqrt(x) of a float with an expression (target:
// operator.neg, operator.abs, math.sqrt); nil where Python raises.
func (t *Tracer) derivedUnary(f *frame, op string, x *SymF) Value {
	h, ok := t.pyNumber(floatUnaryPaths[op], floatV(x.F.Hint()))
	if !ok || h.Kind != py.KFloat {
		return nil
	}
	arg, _ := floatOperand(x)
	target := "operator." + op
	if op == "sqrt" {
		target = "math.sqrt"
	}
	return t.derivedFloat(f, target, []fxgraph.Arg{arg}, &floatExpr{op: op, args: []*floatExpr{x.Expr}}, h.F)
}

// derivedFloat records the node computing a derived float (meta: a new derived float symbol).
func (t *Tracer) derivedFloat(f *frame, target string, args []fxgraph.Arg, e *floatExpr, hint float64) *SymF {
	t.ensureShapes()
	sf := t.shapes.NewDerivedFloat(hint, e.String())
	t.floatSources = append(t.floatSources, floatSource{expr: e})
	node := t.addCall(f, target, args, nil, sf)
	m := primtorch.NewContiguous(primtorch.Float64, []int64{}, primtorch.CPU)
	tn := t.addCall(f, primtorch.FloatTensorTarget, []fxgraph.Arg{node}, nil, m)
	return &SymF{F: sf, Node: node, Tensor: &TensorV{Node: tn, Meta: m}, Expr: e}
}

// floatCompare decides a comparison with a float argument (or a float derived from arguments)
// on one side and such a float or a number on the other at the hints, guarding the outcome;
// ok=false when it is not one.
func (t *Tracer) floatCompare(f *frame, op string, a, b Value) (Value, bool) {
	_, sa := a.(*SymF)
	_, sb := b.(*SymF)
	if _, rel := floatRels[op]; !rel || op == "is" || !(sa || sb) {
		return nil, false
	}
	ea, okA := floatExprOf(a)
	eb, okB := floatExprOf(b)
	if !okA || !okB {
		return nil, false
	}
	r, ok := t.pyNumber("operator."+op, hintOf(a), hintOf(b))
	if !ok || r.Kind != py.KBool {
		return nil, false
	}
	t.guards.Float(ea, op, eb, r.I != 0, f.shortWhere())
	return r, true
}

// floatTruth is bool(s) of a float with an expression: s != 0 at the hint, guarded.
func (t *Tracer) floatTruth(f *frame, s *SymF) (bool, bool) {
	r, ok := t.floatCompare(f, "ne", s, intV(0))
	if !ok {
		return false, false
	}
	return r.(*ConstV).I != 0, true
}

// floatToInt is int(s), round(s), math.floor/ceil/trunc(s) of a float with an expression: the
// integer at the hint, guarded equal (Python raises for a NaN or an infinity: ok=false, and the
// caller specialises the float, so the trace raises as Python does).
func (t *Tracer) floatToInt(f *frame, op string, s *SymF) (Value, bool) {
	r, ok := t.pyNumber(floatUnaryPaths[op], floatV(s.F.Hint()))
	if !ok || r.Kind != py.KInt {
		return nil, false
	}
	t.guards.Float(&floatExpr{op: op, args: []*floatExpr{s.Expr}}, "eq", &floatExpr{op: "const", c: r}, true, f.shortWhere())
	return r, true
}

// floatMinMax is min(a, b) or max(a, b) with a float argument (or derived float) among two
// numbers: the operand Python returns at the hints, the comparison guarded.
func (t *Tracer) floatMinMax(f *frame, name string, a, b Value) (Value, bool) {
	// min returns the first of equal operands: a unless b < a; max: a unless b > a
	op := "lt"
	if name == "max" {
		op = "gt"
	}
	r, ok := t.floatCompare(f, op, b, a)
	if !ok {
		return nil, false
	}
	if r.(*ConstV).I != 0 {
		return b, true
	}
	return a, true
}

// Float guards that (left rel right) == want, both sides recomputed from the call's arguments
// with CPython's number protocol (rel "is": the same float, bit for bit). vec is
// [rel, want, program]: a postfix program computing left then right, each step a pair —
// (1, register) a float argument, (2, bits) a float, (3, n) an int, (4, op) a binary operator,
// (5, op) a unary one (floatBinOps, floatUnOps).
func (g *Guards) Float(left *floatExpr, rel string, right *floatExpr, want bool, where string) {
	vec := []int64{floatRels[rel], 0}
	if want {
		vec[1] = 1
	}
	vec = g.floatProgram(left, vec)
	vec = g.floatProgram(right, vec)
	var desc string
	switch rel {
	case "is":
		desc = fmt.Sprintf("%s == %s (bit for bit)", left, right)
	default:
		desc = fmt.Sprintf("%s %s %s", left, opSymbols[rel], right)
		if !want {
			desc = "not " + desc
		}
	}
	if where != "" {
		desc += " (assumed at " + where + ")"
	}
	g.check(Guard{Op: GFloat, Vec: vec, Desc: desc})
}

func (g *Guards) floatProgram(e *floatExpr, vec []int64) []int64 {
	switch e.op {
	case "arg":
		return append(vec, 1, int64(g.reg(e.src)))
	case "const":
		if e.c.Kind == py.KFloat {
			return append(vec, 2, int64(math.Float64bits(e.c.F)))
		}
		return append(vec, 3, e.c.I)
	}
	for _, a := range e.args {
		vec = g.floatProgram(a, vec)
	}
	if len(e.args) == 2 {
		return append(vec, 4, floatBinOps[e.op])
	}
	return append(vec, 5, floatUnOps[e.op])
}
