package primtorch

import (
	"fmt"
	"maps"
)

// Float arguments read at run time.
//
// A Python float argument of a traced frame whose value changes between calls (a learning-rate
// factor, a temperature, the float an .item() graph break hands to the resumed frame) would
// cost a compile per value. Automatic dynamic makes it a SymFloat instead: a graph input whose
// value the compiled code reads on each call. A SymFloat is opaque — nothing at compile time may
// depend on its value — so only ops whose registry row says so (fSymFloat: add, sub, rsub, mul,
// div, as self or other) take it as an operand, and they treat it exactly as the Python float
// it stands for (a weakly typed number in type promotion, converted to the computation dtype
// when the kernel runs). Every other use specialises it: Specialize returns its value at trace
// time (the hint) and records a guard that the argument equals it, so a path that does not know
// about SymFloats can never bake a value in unguarded. The ShapeEnv holds the float symbols
// beside the size symbols because the same compile-time specialisations (a decomposition, a
// derivative) must reach the guards the same way.

// SymFloat is float symbol ID of env: f0, f1, ...
type SymFloat struct {
	ID  int
	env *ShapeEnv
}

type floatSym struct {
	hint   float64
	source string
	// computed: the float is computed in the graph (a Python float read from a tensor by
	// .item(), and arithmetic on such floats), defined by the node whose meta it is; it has no
	// source and no guard can fix its value, so it is never specialised.
	computed bool
	// derived: a computed float that is Python arithmetic on float arguments only (1 - alpha):
	// its hint is its value in the traced call and a guard on the arguments can fix it, so it
	// may be specialised like an argument (capture installs the guard on the expression).
	derived bool
}

// NewDerivedFloat adds a float symbol the graph computes from float arguments alone (what says
// how), with its value in the traced call as hint: computed like NewComputedFloat's, but
// Specialize may fix it (the guard is on the arguments' expression).
func (e *ShapeEnv) NewDerivedFloat(hint float64, what string) SymFloat {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.floats = append(e.floats, floatSym{hint: hint, source: what, computed: true, derived: true})
	return SymFloat{ID: len(e.floats) - 1, env: e}
}

// IsDerived reports whether f is computed in the graph from float arguments alone.
func (f SymFloat) IsDerived() bool {
	f.env.mu.Lock()
	defer f.env.mu.Unlock()
	return f.env.floats[f.ID].derived
}

// NewComputedFloat adds a float symbol the graph computes (what says how, for messages), with
// its value in the traced call as hint.
func (e *ShapeEnv) NewComputedFloat(hint float64, what string) SymFloat {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.floats = append(e.floats, floatSym{hint: hint, source: what, computed: true})
	return SymFloat{ID: len(e.floats) - 1, env: e}
}

// IsComputed reports whether f is computed in the graph rather than read from an argument.
func (f SymFloat) IsComputed() bool {
	f.env.mu.Lock()
	defer f.env.mu.Unlock()
	return f.env.floats[f.ID].computed
}

// ComputedFloatSpecialized is what Specialize panics with for a computed float: no guard can
// fix a value the graph computes, so a path that needs it at compile time cannot take one
// (capture breaks the graph before such a path; a stage that meets one gives the graph up).
type ComputedFloatSpecialized struct {
	Float SymFloat
	Why   string
}

func (e ComputedFloatSpecialized) Error() string {
	return fmt.Sprintf("the float %s (%s) is computed by the graph and cannot be fixed at compile time: %s", e.Float, e.Float.Source(), e.Why)
}

// NewFloat adds a float symbol with a hint (its value in this call) and a source ("L['a']").
func (e *ShapeEnv) NewFloat(hint float64, source string) SymFloat {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.floats = append(e.floats, floatSym{hint: hint, source: source})
	return SymFloat{ID: len(e.floats) - 1, env: e}
}

// NumFloats is how many float symbols the env has.
func (e *ShapeEnv) NumFloats() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.floats)
}

// Float is float symbol id.
func (e *ShapeEnv) Float(id int) SymFloat { return SymFloat{ID: id, env: e} }

// SpecializedFloats maps each specialised float symbol to why.
func (e *ShapeEnv) SpecializedFloats() map[int]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.floatSpec)
}

// Hint is f's value in the traced call.
func (f SymFloat) Hint() float64 {
	f.env.mu.Lock()
	defer f.env.mu.Unlock()
	return f.env.floats[f.ID].hint
}

// Source is where the runtime reads f ("L['a']").
func (f SymFloat) Source() string {
	f.env.mu.Lock()
	defer f.env.mu.Unlock()
	return f.env.floats[f.ID].source
}

// Env is the ShapeEnv f belongs to.
func (f SymFloat) Env() *ShapeEnv { return f.env }

func (f SymFloat) String() string { return fmt.Sprintf("f%d", f.ID) }

// Specialize returns f's hint and records that the compiled code assumes it (the guard
// L['a'] == hint, installed by the trace or after the compile).
func (f SymFloat) Specialize(why string) float64 {
	if f.IsComputed() && !f.IsDerived() {
		panic(ComputedFloatSpecialized{Float: f, Why: why})
	}
	e := f.env
	e.mu.Lock()
	if e.floatSpec == nil {
		e.floatSpec = map[int]string{}
	}
	if _, done := e.floatSpec[f.ID]; !done {
		e.floatSpec[f.ID] = why
	}
	h := e.floats[f.ID].hint
	e.mu.Unlock()
	return h
}

// IsSpecialized reports whether f was specialised to its hint.
func (f SymFloat) IsSpecialized() bool {
	f.env.mu.Lock()
	defer f.env.mu.Unlock()
	_, ok := f.env.floatSpec[f.ID]
	return ok
}

// SpecializeFloat is v's value when v is a SymFloat (specialised, see Specialize) and v
// otherwise.
func SpecializeFloat(v Value, why string) Value {
	if f, ok := v.(SymFloat); ok {
		return f.Specialize(why)
	}
	return v
}

// symFloatParams are the parameters of an fSymFloat op that may hold a SymFloat.
func symFloatParam(op *Op, a *Args, canon string) bool {
	if op.SymFloatValue && canon == "value" || op.SymFloatExponent && canon == "exponent" {
		return true
	}
	if !op.SymFloats || (canon != "self" && canon != "other") {
		return false
	}
	// a rounding division's decomposition reads its operands' values
	mode, _ := a.find("rounding_mode")
	return mode == nil
}

// specializeFloats specialises the SymFloats among a's arguments that op does not take as such.
func (a *Args) specializeFloats(op *Op) {
	for i, v := range a.vals {
		if _, ok := v.(SymFloat); ok && !symFloatParam(op, a, a.Sig.Params[i].Canon) {
			a.vals[i] = SpecializeFloat(v, op.Name)
		}
	}
}

// ComputedFloatsTaken reports whether every float the graph computes among a's arguments is in
// a parameter the op takes as a SymFloat (capture breaks the graph before any other call: no
// guard can fix such a float's value).
func (a *Args) ComputedFloatsTaken() bool {
	for i, v := range a.vals {
		if f, ok := v.(SymFloat); ok && f.IsComputed() && !symFloatParam(a.Op, a, a.Sig.Params[i].Canon) {
			return false
		}
	}
	return true
}

// TakesSymFloat reports whether the call a keeps a SymFloat in parameter canon (every other
// SymFloat argument is specialised). Capture asks before recording the call's graph node, so
// the node and the meta function agree.
func (a *Args) TakesSymFloat(canon string) bool { return symFloatParam(a.Op, a, canon) }
