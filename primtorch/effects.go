package primtorch

import (
	"slices"
	"sync"
)

// Effects is what a call does besides computing its result. A call with any effect is kept by
// dead-code elimination whatever reads its result, at every stage: a training BatchNorm whose
// output is unused still updates its running statistics, a dead random op still advances torch's
// generator, a dead x[idx] still raises for an index out of range. The registry is the one
// place these facts live (Op.CallEffects).
type Effects uint8

const (
	EffectWrites Effects = 1 << iota // writes an argument: in-place, out=, inplace=True, running stats
	EffectRandom                     // draws from torch's random generator
	EffectRaises                     // may raise for some input values (an index out of range, integer division by zero)
)

// BernoulliMaskTarget is ptgo's draw of eager's dropout mask (pybridge/fast/ptgo_random.cpp,
// A135): bernoulli_mask(sizes, q), a contiguous bool tensor whose element i is whether the i-th
// random64() of torch's default CPU generator, as a double in [0, 1), is below q. Dropout's
// decomposition calls it (prims.fallback) where DropoutDrawsMT19937 holds.
const BernoulliMaskTarget = "ptgo._fast.bernoulli_mask"

// FloatTensorTarget is ptgo.float_tensor(f): the Python float f as a 0-d float64 tensor (what
// a graph break hands over for a float the graph computes; python/ptgo/fx_export.py).
const FloatTensorTarget = "ptgo.float_tensor"

// PadTarget is ptgo.constant_pad_nd(x, pad, value): torch.constant_pad_nd, and for an input
// with no elements the padded shape filled with value (torch's refuses a zero-size dim it does
// not pad: the torch graph of a slice's gradient; python/ptgo/fx_export.py).
const PadTarget = "ptgo.constant_pad_nd"

// ownCallEffects are the effects of the call targets ptgo defines itself, which torch does not
// have and the registry (torch's ops) does not hold.
var ownCallEffects = map[string]Effects{
	BernoulliMaskTarget: EffectRandom,
	"ptgo.restride":     0,
	FloatTensorTarget:   0,
	PadTarget:           0,
	"ptgo.check":        EffectRaises, // prims.check in a torch graph (aotautograd.ToTorch)
}

// ComputedFloatEffects are the effects of a node defining a float the graph computes
// (decomp/pyfloat.go): Python raises for some values of a division, a power or a square root.
func ComputedFloatEffects(target string) Effects {
	switch target {
	case "operator.truediv", "operator.floordiv", "operator.mod", "operator.pow", "math.sqrt":
		return EffectRaises
	}
	return 0
}

// OwnCallEffects are the effects of one of ptgo's own call targets; ok=false for any other.
func OwnCallEffects(target string) (Effects, bool) {
	e, ok := ownCallEffects[target]
	return e, ok
}

// CallEffects are the effects of a call bound to a (out: the call's result meta, as Meta gives it;
// nil when not known).
func (op *Op) CallEffects(a *Args, out Value) Effects {
	var e Effects
	if op.Random {
		e |= EffectRandom
	}
	if op.Alias == AliasInPlace || len(a.Mutated()) > 0 {
		e |= EffectWrites
	}
	if f := op.Canonical().raisesWhen; f != nil && f(a, out) {
		e |= EffectRaises
	}
	return e
}

// integerResult: integer division and remainder raise ZeroDivisionError for a zero divisor when
// the result is an integer tensor (floats give inf or nan).
func integerResult(a *Args, out Value) bool {
	m, ok := out.(*TensorMeta)
	if !ok {
		return true // not known: assume the worst
	}
	if m.DType.IsIntegral(true) {
		if op := a.Op; op.Canonical().ID == OpDiv {
			mode, _ := a.Opt("rounding_mode")
			return mode != nil
		}
		return true
	}
	return false
}

// indexedByTensor: gathers and scatters through an index tensor raise for an index out of range
// (constant indices are checked while tracing).
func indexedByTensor(a *Args, out Value) bool { return true }

// getitemByTensor: x[idx] raises for an out-of-range integer index tensor; bool masks and
// constant indices are checked while tracing.
func getitemByTensor(a *Args, out Value) bool {
	var walk func(v Value) bool
	walk = func(v Value) bool {
		switch x := v.(type) {
		case *TensorMeta:
			return x.DType != Bool && x.DType != UInt8
		case []Value:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case Tuple:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	idx, _ := a.Opt("index")
	return walk(idx)
}

// torchCallEffects are the effects of torch functions the registry does not hold, as the
// tracer read them from the running torch's ATen schemas (ptgo._runtime.schema_effects) when a
// call to one was traced: the registry's answer for them, where it has none of its own.
var torchCallEffects sync.Map // call target ("torch.sinc", "Tensor.index_put_") -> schemaEffects

type schemaEffects struct {
	e   Effects
	out []string // keyword-only arguments an overload writes: they write when the call passes them
}

// LearnTorchCallEffects records what the running torch's schemas say of target, a function or
// Tensor method ("Tensor." + name) the registry does not hold: its effects, and the keyword
// arguments (out=) that write when a call passes them.
func LearnTorchCallEffects(target string, e Effects, out []string) {
	torchCallEffects.Store(target, schemaEffects{e: e, out: out})
}

// TorchCallEffects are the effects LearnTorchCallEffects recorded for target, of a call passing
// the keyword arguments named kw; ok=false when nothing was recorded (the call then counts as
// having every effect).
func TorchCallEffects(target string, kw []string) (Effects, bool) {
	v, ok := torchCallEffects.Load(target)
	if !ok {
		return 0, false
	}
	s := v.(schemaEffects)
	e := s.e
	for _, k := range kw {
		if slices.Contains(s.out, k) {
			e |= EffectWrites
		}
	}
	return e, true
}
