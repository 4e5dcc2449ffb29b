package bytecode

import (
	"fmt"
	"math"
	"strconv"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Float arguments read at run time (primtorch/symfloat.go).
//
// A Python float argument of the frame whose value changed since the last compile (automatic
// dynamic, as for ints) or any float argument under dynamic=True becomes a SymF: a float
// placeholder of the graph, guarded by type only. Passed to add, sub, mul or div (as self or
// other) it stays a graph input the kernels read on each call; every other use — Python
// arithmetic, a comparison, any other op's argument — realizes it: the value of this call, with
// the guard that the argument equals it (realize, primtorch.SymFloat.Specialize), so no path can
// bake a value in unguarded.

// SymF is a Python float read at run time.
type SymF struct {
	F      primtorch.SymFloat
	Source Source
	// Node defines a computed float (itemfloat.go): the graph node whose meta is F; Tensor is
	// it as a 0-d float64 tensor, which a graph break hands over. Both nil for an argument.
	Node   *fxgraph.Node
	Tensor *TensorV
	// Expr is the float as Python arithmetic on float arguments (floatexpr.go): the argument
	// itself, or a derived float (Node defines it); nil for a float read from a tensor and
	// arithmetic on one, whose value the trace does not know.
	Expr *floatExpr
}

func (s *SymF) Describe() string {
	if s.Node != nil {
		return fmt.Sprintf("float %s (read from a tensor: %s)", s.F, s.F.Source())
	}
	return fmt.Sprintf("float %s (a dynamic float argument, %s in this call)", s.F, strconv.FormatFloat(s.F.Hint(), 'g', -1, 64))
}

// floatSource is where float symbol k is read, and its object in the traced call; for a
// derived float (floatexpr.go) its expression instead.
type floatSource struct {
	src  Source
	obj  py.Obj
	repr string
	expr *floatExpr
}

// specializeFloat is what realize does to a SymF: its value now, guarded; a float computed in
// the graph has no value now, so using it as a plain float breaks the graph.
func specializeFloat(f *frame, s *SymF) (Value, error) {
	if s.Node != nil && s.Expr == nil {
		return nil, computedUse(f, s, "as a plain Python float")
	}
	why := "used as a plain float"
	if f != nil {
		why = "used as a plain float at " + f.shortWhere()
	}
	// (a derived float's guard is on its expression: installFloatGuards)
	return floatV(s.F.Specialize(why)), nil
}

// floatInput makes a Python float argument of the frame a float symbol when the policy says so
// (its value changed since the last compile, or dynamic=True); otherwise nil (a constant,
// guarded by value as before).
func (t *Tracer) floatInput(o py.Obj, c Value, src Source) *SymF {
	cv, ok := c.(*ConstV)
	if !ok || cv.Kind != py.KFloat || t.dynamic == DynamicStatic || t.dynamic == DynamicNever {
		return nil
	}
	if !scalarSourceDynamic(src) {
		return nil
	}
	if s, ok := t.floatByName[sourceKey(src)]; ok {
		return s
	}
	want, cd := t.scalarArgDynamic(src, "float", func(h *dimHistory) (string, bool) {
		if len(h.floats) == 1 && !sameFloat(h.floats[0], cv.F) {
			return fmt.Sprintf("%v to %v", h.floats[0], cv.F), true
		}
		return "", false
	}, func(h *dimHistory) { h.floats = []float64{cv.F} })
	dimHistories.Lock()
	refused := cd.staticOnly != "" // the backend refused symbolic inputs: static from the start
	dimHistories.Unlock()
	if !want || refused {
		return nil
	}
	t.ensureShapes()
	t.guards.Type(src, t.api.TypeOf(o), "float")
	sf := t.shapes.NewFloat(cv.F, src.Name())
	t.floatSources = append(t.floatSources, floatSource{src: src, obj: o, repr: t.api.Repr(o)})
	logs.Printf(logs.Dynamic, "%s: %s = %s (a float argument, %v in this call)", t.rootCode.code.QualName, sf, readableName(src), cv.F)
	node := t.graph.AddPlaceholder(placeholderName(src), sf)
	t.inputs = append(t.inputs, &TensorV{Node: node, Source: src, Obj: o, Meta: &primtorch.TensorMeta{}})
	s := &SymF{F: sf, Source: src, Expr: &floatExpr{op: "arg", src: src}}
	if t.floatByName == nil {
		t.floatByName = map[string]*SymF{}
	}
	t.floatByName[sourceKey(src)] = s
	return s
}

// sameFloat compares two values bit for bit (a change from 0.0 to -0.0 or between NaNs is a
// change for the guard that would specialise it).
func sameFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// installFloatGuards guards each float symbol the trace or the compile specialised equal to
// its value in the traced call.
func installFloatGuards(g *Guards, env *primtorch.ShapeEnv, sources []floatSource) {
	if env == nil {
		return
	}
	for id, why := range env.SpecializedFloats() {
		if id >= len(sources) {
			continue
		}
		if !g.floatSpecLogged(id) {
			logs.Printf(logs.Dynamic, "float %s specialised to %s: %s", env.Float(id), pyFloatRepr(env.Float(id).Hint()), why)
		}
		switch s := sources[id]; {
		case s.src != nil:
			g.Eq(s.src, s.obj, s.repr)
		case s.expr != nil:
			// a derived float: its expression recomputed from the arguments is the value
			g.Float(s.expr, "is", &floatExpr{op: "const", c: floatV(env.Float(id).Hint())}, true, "")
		}
	}
}

// floatArgsOf specialises the SymFs among an op call's arguments unless op takes float
// arguments read at run time (primtorch fSymFloat; the meta function then decides per
// parameter, and a SymF it specialises is resolved in the graph at the end of the trace).
func (t *Tracer) floatArgsOf(f *frame, op *primtorch.Op, args []Value, kw []kwArg) error {
	keep := op != nil && op.SymFloats
	accepts := floatOpAccepts(args, kw)
	if accepts && hasComputed(args, kw) {
		// the registry decides where the op takes a float the graph computes (a rounding
		// division does not)
		accepts = false
		if margs, mkw, err := t.metaArgs(f, args, kw); err == nil && op != nil {
			if _, a, err := op.Resolve(margs, mkw); err == nil {
				accepts = a.ComputedFloatsTaken()
			}
		}
	}
	expo := t.powExponent(f, op, args, kw)
	var err error
	for i, a := range args {
		if s, ok := a.(*SymF); ok && expo == s && i == 1 {
			continue
		}
		if s, ok := a.(*SymF); ok && (!keep || i > 1 || s.Node != nil && !accepts) {
			if args[i], err = specializeFloat(f, s); err != nil {
				return err
			}
		}
	}
	for i := range kw {
		s, ok := kw[i].Val.(*SymF)
		if !ok {
			continue
		}
		name := kw[i].Name
		if name == "exponent" && expo == s {
			continue
		}
		kept := keep && (name == "other" || name == "self" || name == "input") || name == "value" && op != nil && op.SymFloatValue
		if !kept || s.Node != nil && !accepts {
			if kw[i].Val, err = specializeFloat(f, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// powSpecialExponents are the exponents eager's pow kernel computes another way (fill, copy,
// x·x, x·x·x, sqrt, rsqrt, reciprocal, 1/(x·x)) and the decomposition copies (dPow).
var powSpecialExponents = []float64{0, 1, 2, 3, 0.5, -0.5, -1, -2}

// powExponent is the float argument pow (op) takes as its exponent read at run time, or nil:
// the base a float32/float64 CPU tensor outside autograd (the derivative formula reads the
// exponent's value) and the exponent none of the special ones, which each call is guarded
// against (a special exponent recompiles with the value).
func (t *Tracer) powExponent(f *frame, op *primtorch.Op, args []Value, kw []kwArg) *SymF {
	if op == nil || !op.SymFloatExponent {
		return nil
	}
	var base, expo Value
	if len(args) > 0 {
		base = args[0]
	}
	if len(args) > 1 {
		expo = args[1]
	}
	for _, k := range kw {
		switch k.Name {
		case "self", "input":
			base = k.Val
		case "exponent":
			expo = k.Val
		}
	}
	s, ok := expo.(*SymF)
	x, isT := base.(*TensorV)
	if !ok || !isT || s.Node != nil || s.Expr == nil {
		return nil
	}
	m := x.Meta
	if m.DType != primtorch.Float32 && m.DType != primtorch.Float64 || m.Device.Type != "cpu" || t.gradEnabled && m.RequiresGrad {
		return nil
	}
	h := s.F.Hint()
	for _, c := range powSpecialExponents {
		if h == c {
			return nil
		}
	}
	for _, c := range powSpecialExponents {
		t.guards.Float(s.Expr, "ne", &floatExpr{op: "const", c: floatV(c)}, true, f.shortWhere())
	}
	return s
}
