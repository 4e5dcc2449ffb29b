package primtorch

import (
	"fmt"
	"sort"
	"strings"
)

// OpID numbers the registry's ops densely from 0 to NumOps-1, so later stages keep their per-op
// behaviour in arrays: var lowerings = [primtorch.NumOps]lowerFn{primtorch.OpAdd: ..., ...}.
type OpID uint16

// Op returns the op with this ID.
func (id OpID) Op() *Op { return opsByID[id] }

func (id OpID) String() string {
	if int(id) < len(opsByID) && opsByID[id] != nil {
		return opsByID[id].Name
	}
	return fmt.Sprintf("op(%d)", uint16(id))
}

// Kind classifies what an op does, for the stages that treat classes of ops alike.
type Kind uint8

const (
	KindPointwise Kind = iota // elementwise over broadcast operands
	KindReduction             // reduces dims (sum, amax, var, argmax, ...)
	KindView                  // returns a view (or may: reshape, contiguous) of its input
	KindExtern                // matmul- and convolution-like: an external kernel (BLAS, oneDNN)
	KindFactory               // creates a tensor from sizes, scalars or another tensor's meta
	KindComposite             // normalization, softmax, losses, ...: decomposes into the others
	KindIndexing              // gathers or scatters by index (getitem, gather, index_select, cat)
	KindOther                 // scans, sorting, pooling, padding, resampling, ...
	numKinds
)

var kindNames = [numKinds]string{"pointwise", "reduction", "view", "extern", "factory", "composite", "indexing", "other"}

func (k Kind) String() string { return kindNames[k] }

// AliasKind says whether an op's output shares memory with an input.
type AliasKind uint8

const (
	AliasNone    AliasKind = iota // a new tensor
	AliasView                     // always a view of input AliasArg (view, transpose, select, ...)
	AliasMaybe                    // a view, the input itself or a copy, depending on the input (reshape, contiguous, to)
	AliasInPlace                  // the mutated input itself (add_, relu_)
	numAliasKinds
)

var aliasNames = [numAliasKinds]string{"none", "view", "maybe", "inplace"}

func (k AliasKind) String() string { return aliasNames[k] }

// metaFn computes an op's result meta from bound arguments.
type metaFn func(a *Args) (Value, error)

// Op is one torch-level op of the registry. Its fields are fixed after package init.
type Op struct {
	ID   OpID
	Name string // the canonical schema's full name: "add.Tensor", "max.dim", "relu"
	// Schema is the canonical, ATen-like signature; Sigs are the signatures calls may use, in the
	// order binding tries them: for the registry's op every signature (Schema first), for a
	// target's view only those of that target (F.relu binds (input, inplace=False)). Meta
	// functions read arguments by Schema's (canonical) names.
	Schema    *Schema
	Sigs      []*Schema
	Kind      Kind
	Promotion Promotion
	// Mutates lists the Schema.Params indices of arguments the op writes (annotated (a!)).
	// Calls can also mutate through out= or inplace=True: see Args.Mutated.
	Mutates  []int
	Alias    AliasKind
	AliasArg int // Schema.Params index of the aliased input when Alias != AliasNone
	Random   bool
	// RefusesOverlap: written in place, self must not share memory with the call's other tensor
	// arguments at all (index_add_, scatter_, scatter_add_: torch's assert_no_overlap raises
	// "unsupported operation: some elements of the input tensor and the written-to tensor refer
	// to a single memory location"); other in-place ops refuse only a partial overlap.
	RefusesOverlap bool
	// NonDifferentiable ops never give results that require grad (comparisons, detach,
	// factories without requires_grad=True, ...).
	NonDifferentiable bool
	// NumbersAsTensors: Tensor parameters also accept Python numbers (x + 2). The first parameter
	// does only through operator.* targets (reflected operators: 2 - x) and for the ops torch's
	// argument parser allows it (torch.add(2, x), torch.where(c, 1, 0.5)).
	NumbersAsTensors bool
	// AcceptsOut: the torch.* function takes out=.
	AcceptsOut bool
	// DataDependent: the output shape depends on tensor values; Meta returns ErrDataDependent.
	DataDependent bool
	// Targets are the call targets that reach the op, as the capture stage names them:
	// "torch.add", "Tensor.add", "operator.add", "torch.nn.functional.relu".
	Targets []string
	// Functional is, for an in-place variant (add_), its out-of-place op (add); Inplace is the
	// reverse link.
	Functional *Op
	Inplace    *Op
	// Note says what the meta function does not cover, "" when nothing is known missing.
	Note string
	// Since is the first torch version that has the op (zero: every version ptgo supports).
	Since TorchVersion
	// Symbolic: the meta function handles symbolic sizes (sym.go); MetaArgs specialises the
	// arguments of every other op to their hints, with guards.
	Symbolic bool
	// SymFloats: the op's operands self and other may be a SymFloat (symfloat.go); MetaArgs
	// specialises the SymFloats of every other op, and of this one's other parameters.
	SymFloats bool
	// SymFloatValue: the op's value parameter may be a SymFloat (addcmul, addcdiv: value · t1
	// scaled in the computation dtype).
	SymFloatValue bool
	// SymFloatExponent: the op's exponent may be a SymFloat (pow of a float tensor; capture
	// guards that the value is none of the exponents eager's kernel special-cases).
	SymFloatExponent bool

	meta        metaFn
	ownGrad     bool
	sigTargets  map[*Schema][]string // signatures only some targets use, with those targets
	canonical   *Op                  // for a target's view of the op (see Lookup): the registry's op
	method      bool                 // a Tensor.<method> target's view: self is not counted in argument positions
	selfNumbers bool                 // the first parameter accepts a Python number (see NumbersAsTensors)
	overloads   []*Op
	mutatesWhen func(*Args) []string
	raisesWhen  func(*Args, Value) bool // see Effects
	selfWhen    func(*Args) bool        // see ReturnsSelf
}

// InTorch reports whether torch version v has the op.
func (op *Op) InTorch(v TorchVersion) bool { return !v.Before(op.Since) }

// Canonical returns the registry's op: op itself, or the op a target's view (see Lookup) stands
// for. Compare ops by ID, or by Canonical().
func (op *Op) Canonical() *Op {
	if op.canonical != nil {
		return op.canonical
	}
	return op
}

// AliasesInput reports whether the output may share memory with an input (views, ops that may
// return their input, in-place ops); Schema.Params[AliasArg] is that input.
func (op *Op) AliasesInput() bool { return op.Alias != AliasNone }

// Overloads returns the ops that share this op's targets, in the order calls try them (the op
// itself included): max, max.dim, max.other.
func (op *Op) Overloads() []*Op { return op.overloads }

func (op *Op) String() string { return op.Name }

var (
	opsByName = map[string]*Op{}
	byTarget  = map[string][]*Op{}
	opsByID   = buildRegistry()
)

// Lookup returns the op a call target reaches, nil when ptgo does not know the target. When the
// target reaches several overloads (torch.max), it returns the first; its Meta and Resolve pick
// the overload the arguments fit. Where a target's Python signature differs from the op's
// (torch.nn.functional.relu(input, inplace=False)), the result is a view of the op that binds
// with that signature only: same ID and fields, other Sigs; Canonical() returns the registry's op.
func Lookup(target string) *Op {
	if ops := byTarget[target]; len(ops) > 0 {
		return ops[0]
	}
	return nil
}

// LookupName returns the op with canonical name name ("add.Tensor"), nil when none.
func LookupName(name string) *Op { return opsByName[name] }

// Ops returns every op, sorted by name.
func Ops() []*Op {
	out := append([]*Op(nil), opsByID...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Targets returns every known call target, sorted.
func Targets() []string {
	out := make([]string, 0, len(byTarget))
	for t := range byTarget {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// ReturnsSelf reports whether torch's kernel returns the call's input tensor itself, the same
// Python object (eager's F.dropout(x, 0.0) is x): a later in-place change of one (x.t_())
// is a change of the other. False when the call does not bind or the registry says nothing.
func (op *Op) ReturnsSelf(args []Value, kwargs []KV) bool {
	may := false
	for _, o := range op.overloads {
		may = may || o.Canonical().selfWhen != nil
	}
	if !may {
		return false // no overload can: no binding (the tracer asks this of every call it records)
	}
	o, a, err := op.Resolve(args, kwargs)
	if err != nil || o.Canonical().selfWhen == nil {
		return false
	}
	return o.Canonical().selfWhen(a)
}

// Resolve binds a call to the first overload and signature that accept it, as torch's argument
// parser does, and returns that overload with the bound arguments.
func (op *Op) Resolve(args []Value, kwargs []KV) (*Op, *Args, error) {
	var errs []error
	var tried []string
	for _, o := range op.overloads {
		for _, sig := range o.Sigs {
			a, err := bind(o, sig, args, kwargs)
			if err == nil {
				return o, a, nil
			}
			errs = append(errs, err)
			tried = append(tried, sig.Text)
		}
	}
	if len(errs) == 1 {
		return nil, nil, withOp(errs[0], op.Name)
	}
	got := make([]string, 0, len(args)+len(kwargs))
	for _, v := range args {
		got = append(got, pyTypeName(v))
	}
	for _, kv := range kwargs {
		got = append(got, kv.Name+"="+pyTypeName(kv.Value))
	}
	e := typeErrorf("%s() received an invalid combination of arguments - got (%s), but expected one of:\n * %s",
		op.Schema.Name, strings.Join(got, ", "), strings.Join(tried, "\n * "))
	e.Op = op.Name
	return nil, nil, e
}

// Meta computes the result of calling the op (or the overload the arguments select) on
// arguments described by their metas: a *TensorMeta, a []Value of metas for tuple results, a
// Python scalar, or nil (for ops returning None). Errors are *Error of kind ErrInvalid (the call
// fails in torch too), ErrUnsupported or ErrDataDependent. Results require grad as they would
// with grad mode on; see ResultRequiresGrad for other modes.
func (op *Op) Meta(args []Value, kwargs []KV) (Value, error) {
	o, a, err := op.Resolve(args, kwargs)
	if err != nil {
		return nil, err
	}
	return o.MetaArgs(a)
}

// MetaArgs is Meta for arguments already bound by Resolve.
func (op *Op) MetaArgs(a *Args) (out Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &Error{Kind: ErrUnsupported, Op: op.Name, Msg: fmt.Sprintf("ptgo BUG: meta function panicked: %v", r)}
		}
	}()
	if op.DataDependent {
		return nil, &Error{Kind: ErrDataDependent, Op: op.Name, Msg: op.Name + "'s output shape depends on the values of its inputs"}
	}
	a.specializeFloats(op)
	if !op.Symbolic && a.HasSymbols() {
		a.specialize(op.Name)
	}
	r, err := op.meta(a)
	if err != nil {
		return nil, withOp(err, op.Name)
	}
	if err := checkHints(r); err != nil {
		return nil, &Error{Kind: ErrUnsupported, Op: op.Name, Msg: "ptgo BUG: " + err.Error()}
	}
	var self *TensorMeta
	switch {
	case op.Functional != nil:
		self = a.Tensor(op.Schema.Params[op.AliasArg].Canon)
	case a.Inplace():
		self = a.Tensor(a.Sig.Params[0].Canon)
	}
	if self != nil {
		m, ok := r.(*TensorMeta)
		if !ok {
			return nil, &Error{Kind: ErrUnsupported, Op: op.Name, Msg: "ptgo BUG: in-place op whose functional meta is not a tensor"}
		}
		if r, err = writeInto(self, m, op.Schema.Name == "clamp_"); err != nil {
			return nil, withOp(err, op.Name)
		}
	}
	if a.Out != nil {
		if r, err = writeOut(a, r); err != nil {
			return nil, withOp(err, op.Name)
		}
		return r, nil
	}
	if !op.ownGrad {
		setRequiresGrad(op, a, r, self)
	}
	return r, nil
}

// writeInto checks that a result r may be written into self (an in-place op) and returns the
// meta of self after the write. With typeMetaNames the cast error names self's dtype as C++
// does ("long int"), as clamp_'s check does.
func writeInto(self, r *TensorMeta, typeMetaNames bool) (*TensorMeta, error) {
	if !symShapeEq(self.SymSizes(), r.SymSizes()) {
		return nil, runtimeErrorf("output with shape %s doesn't match the broadcast shape %s", fmtShape(self.Shape), fmtShape(r.Shape))
	}
	if !CanCast(r.DType, self.DType) {
		to := scalarTypeName(self.DType)
		if typeMetaNames {
			to = torchShort(self.DType)
		}
		return nil, runtimeErrorf("result type %s can't be cast to the desired output type %s", scalarTypeName(r.DType), to)
	}
	out := self.Clone()
	out.RequiresGrad = self.RequiresGrad || r.RequiresGrad
	return out, nil
}

// writeOut applies out=: the result is written into a.Out, resized when its shape differs.
func writeOut(a *Args, r Value) (Value, error) {
	m, ok := r.(*TensorMeta)
	if !ok {
		return nil, unsupportedf("out= with a non-tensor result")
	}
	for _, t := range a.AllTensors() {
		if t.RequiresGrad && !a.Op.NonDifferentiable {
			return nil, runtimeErrorf("%s(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.", a.Op.Schema.Name)
		}
	}
	if !CanCast(m.DType, a.Out.DType) {
		return nil, runtimeErrorf("result type %s can't be cast to the desired output type %s", scalarTypeName(m.DType), scalarTypeName(a.Out.DType))
	}
	out := a.Out.Clone()
	if sizes := m.SymSizes(); !symShapeEq(out.SymSizes(), sizes) {
		out.SetSymLayout(sizes, SymContiguousStrides(sizes), a.Out.SymOffset())
	}
	return out, nil
}

// setRequiresGrad sets RequiresGrad on every tensor of result r, as torch does with grad mode on.
func setRequiresGrad(op *Op, a *Args, r Value, self *TensorMeta) {
	inputs := a.AllTensors()
	if self != nil {
		inputs = append([]*TensorMeta{self}, inputs...)
	}
	var walk func(v Value)
	walk = func(v Value) {
		switch v := v.(type) {
		case *TensorMeta:
			if self == nil && op.Alias != AliasInPlace {
				v.RequiresGrad = ResultRequiresGrad(true, inputs, v, op)
			} else {
				v.RequiresGrad = v.RequiresGrad || ResultRequiresGrad(true, inputs, v, op)
			}
		case []Value:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(r)
}

// ResultRequiresGrad reports whether a result out of op (nil: any differentiable op) requires
// grad: grad mode is on, an input requires grad, the op is differentiable and out is floating
// point or complex. The results of factories (their requires_grad= argument) and of ops that
// set the flag themselves (detach, requires_grad_, copy_, fill_, zero_) keep the requires_grad
// Meta gave them. For an in-place op, inputs[0] is the mutated tensor: a tensor that
// required grad keeps requiring it.
func ResultRequiresGrad(gradEnabled bool, inputs []*TensorMeta, out *TensorMeta, op *Op) bool {
	if out == nil {
		return false
	}
	if op != nil && (op.Kind == KindFactory || op.ownGrad) {
		return out.RequiresGrad
	}
	if op != nil && op.Alias == AliasInPlace && len(inputs) > 0 && inputs[0] != nil && inputs[0].RequiresGrad {
		return true
	}
	if !gradEnabled || (op != nil && op.NonDifferentiable) {
		return false
	}
	if !out.DType.IsFloatingPoint() && !out.DType.IsComplex() {
		return false
	}
	for _, in := range inputs {
		if in != nil && in.RequiresGrad {
			return true
		}
	}
	return false
}
