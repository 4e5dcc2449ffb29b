package primtorch

import (
	"fmt"
	"strings"
)

// Args are a call's arguments bound to one of its op's signatures: positional and keyword
// arguments matched to parameters, defaults filled in, values converted to the parameter types
// (int lists to []int64, float lists to []float64, tensor lists to []*TensorMeta, ...).
// Meta functions read them by canonical parameter name.
type Args struct {
	Op  *Op
	Sig *Schema // the signature the call matched (Op.Sigs[i])
	// Out is the out= tensor of the call, nil when none was given.
	Out   *TensorMeta
	vals  []Value
	given []bool
}

// sigOf reports whether the call matched a signature only target uses (a row's py).
func (a *Args) sigOf(target string) bool {
	for _, t := range a.Op.sigTargets[a.Sig] {
		if t == target {
			return true
		}
	}
	return false
}

// sequence returns v's elements when v is a list or tuple.
func sequence(v Value) ([]Value, bool) {
	switch s := v.(type) {
	case []Value:
		return s, true
	case Tuple:
		return s, true
	}
	return nil, false
}

// pyTypeName is the Python type name of a value, as torch's TypeErrors print it.
func pyTypeName(v Value) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case *TensorMeta:
		return "Tensor"
	case bool:
		return "bool"
	case int64, int, SymInt:
		return "int"
	case float64, SymFloat:
		return "float"
	case complex128:
		return "complex"
	case string:
		return "str"
	case DType:
		return "torch.dtype"
	case Device:
		return "torch.device"
	case MemoryFormat:
		return "torch.memory_format"
	case Layout:
		return "torch.layout"
	case Ellipsis:
		return "ellipsis"
	case Slice:
		return "slice"
	case Tuple:
		return "tuple"
	case []Value:
		return "list"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// expectedName is how torch's TypeErrors name a parameter type.
func expectedName(t Type) string {
	if t.List {
		switch t.Base {
		case TInt:
			return "tuple of ints"
		case TFloat:
			return "tuple of floats"
		case TBool:
			return "tuple of bools"
		case TTensor:
			return "tuple of Tensors"
		}
		return "tuple of " + t.Base.String()
	}
	switch t.Base {
	case TScalar:
		return "Number"
	case TScalarType:
		return "torch.dtype"
	case TDevice:
		return "torch.device"
	case TMemoryFormat:
		return "torch.memory_format"
	case TLayout:
		return "torch.layout"
	case TGenerator:
		return "torch.Generator"
	}
	return t.Base.String()
}

func isIntValue(v Value) bool {
	switch v.(type) {
	case int64, int:
		return true
	}
	return false
}

func toInt64(v Value) int64 {
	switch v := v.(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	panic(fmt.Sprintf("ptgo BUG: %T is not an int", v))
}

// convertElem converts a single (non-list) value to base type b; ok is false on a type mismatch.
func convertElem(v Value, b BaseType, numbersAsTensors bool) (Value, bool) {
	switch b {
	case TTensor:
		switch x := v.(type) {
		case *TensorMeta:
			return x, true
		case bool, int64, float64, complex128:
			return x, numbersAsTensors
		case int:
			return int64(x), numbersAsTensors
		case SymInt:
			return SymValue(x), numbersAsTensors
		case SymFloat:
			return x, numbersAsTensors
		}
	case TScalar:
		switch x := v.(type) {
		case bool, int64, float64, complex128, SymFloat:
			return x, true
		case int:
			return int64(x), true
		case SymInt:
			return SymValue(x), true
		}
	case TInt:
		if isIntValue(v) {
			return toInt64(v), true
		}
		if x, ok := v.(SymInt); ok {
			return SymValue(x), true
		}
	case TFloat:
		switch x := v.(type) {
		case float64, SymFloat:
			return x, true
		case int64:
			return float64(x), true
		case int:
			return float64(x), true
		case bool:
			if x {
				return 1.0, true
			}
			return 0.0, true
		}
	case TBool:
		if x, ok := v.(bool); ok {
			return x, true
		}
	case TStr:
		if x, ok := v.(string); ok {
			return x, true
		}
	case TScalarType:
		if x, ok := v.(DType); ok {
			return x, true
		}
	case TDevice:
		switch x := v.(type) {
		case Device:
			return x, true
		case string:
			d, err := ParseDevice(x)
			return d, err == nil
		case int64:
			return Device{Type: "cuda", Index: int(x)}, true
		}
	case TMemoryFormat:
		if x, ok := v.(MemoryFormat); ok {
			return x, true
		}
	case TLayout:
		if x, ok := v.(Layout); ok {
			return x, true
		}
	case TGenerator:
		return nil, v == nil
	case TAny:
		return v, true
	}
	return nil, false
}

// convert converts v to parameter type t.
func convert(v Value, t Type, numbersAsTensors bool) (Value, bool) {
	if v == nil {
		return nil, t.Optional || t.Base == TAny
	}
	if !t.List {
		return convertElem(v, t.Base, numbersAsTensors)
	}
	elems, isSeq := sequence(v)
	if !isSeq {
		// A sized list accepts one element, repeated: stride=2 means stride=[2, 2].
		if t.Len == 0 {
			return nil, false
		}
		e, ok := convertElem(v, t.Base, false)
		if !ok || t.Base == TTensor {
			return nil, false
		}
		elems = make([]Value, t.Len)
		for i := range elems {
			elems[i] = e
		}
	}
	switch t.Base {
	case TInt:
		out := make([]int64, len(elems))
		var syms []SymInt // set when an element is a symbolic size: the list is then []SymInt
		for i, e := range elems {
			if x, ok := e.(SymInt); ok {
				if k, c := x.IsConst(); c {
					e = k
				} else {
					if syms == nil {
						syms = constSyms(out[:i])
					}
					syms = append(syms, x)
					continue
				}
			}
			if !isIntValue(e) {
				return nil, false
			}
			out[i] = toInt64(e)
			if syms != nil {
				syms = append(syms, SymConst(out[i]))
			}
		}
		if syms != nil {
			return syms, true
		}
		return out, true
	case TFloat:
		out := make([]float64, len(elems))
		for i, e := range elems {
			f, ok := convertElem(e, TFloat, false)
			if !ok {
				return nil, false
			}
			out[i] = f.(float64)
		}
		return out, true
	case TBool:
		out := make([]bool, len(elems))
		for i, e := range elems {
			b, ok := e.(bool)
			if !ok {
				return nil, false
			}
			out[i] = b
		}
		return out, true
	case TTensor:
		out := make([]*TensorMeta, len(elems))
		for i, e := range elems {
			if e == nil && t.ElemOptional {
				continue
			}
			m, ok := e.(*TensorMeta)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	}
	out := make([]Value, len(elems))
	for i, e := range elems {
		c, ok := convertElem(e, t.Base, false)
		if !ok {
			return nil, false
		}
		out[i] = c
	}
	return out, true
}

// varargsParam reports whether params[j] may swallow the remaining positional arguments: a
// T... parameter, or (as torch's argument parser allows for view(2, 3), permute(1, 0),
// zeros(2, 3)) an int list that is the only positional parameter besides a leading self.
func varargsParam(sig *Schema, j int) bool {
	prm := sig.Params[j]
	if prm.Type.Varargs {
		return true
	}
	if !(prm.Type.List && prm.Type.Base == TInt) || prm.KwOnly {
		return false
	}
	npos := 0
	for i, q := range sig.Params {
		if q.KwOnly || (i == 0 && q.Name == "self") {
			continue
		}
		npos++
	}
	return npos == 1
}

// bind matches args and kwargs to sig's parameters and converts them.
func bind(op *Op, sig *Schema, args []Value, kwargs []KV) (*Args, error) {
	a := &Args{Op: op, Sig: sig, vals: make([]Value, len(sig.Params)), given: make([]bool, len(sig.Params))}
	fn := sig.Name + "()"
	var pos []int
	for i, prm := range sig.Params {
		if !prm.KwOnly {
			pos = append(pos, i)
		}
	}
	raw := make([]Value, len(sig.Params))
	for k := 0; k < len(args); k++ {
		if k >= len(pos) {
			return nil, typeErrorf("%s takes %d positional argument%s but %d were given", fn, len(pos), plural(len(pos)), len(args))
		}
		j := pos[k]
		prm := sig.Params[j]
		if prm.Type.Varargs && prm.Type.Base == TAny {
			// Any... (prims.fallback's arguments) takes every remaining positional argument.
			raw[j] = append([]Value{}, args[k:]...)
			a.given[j] = true
			break
		}
		if varargsParam(sig, j) {
			_, isSeq := sequence(args[k])
			elemOK := false
			if prm.Type.Base == TTensor {
				_, elemOK = args[k].(*TensorMeta)
			} else {
				_, isSym := args[k].(SymInt)
				elemOK = isIntValue(args[k]) || isSym && prm.Type.Base == TInt
			}
			if !isSeq && elemOK && (len(args)-k > 1 || prm.Type.Len == 0) {
				raw[j] = append([]Value(nil), args[k:]...)
				a.given[j] = true
				break
			}
		}
		raw[j] = args[k]
		a.given[j] = true
	}
	for _, kv := range kwargs {
		j := -1
		for i, prm := range sig.Params {
			if prm.Name == kv.Name || (prm.Name == "self" && kv.Name == "input") {
				j = i
				break
			}
		}
		if j < 0 {
			if kv.Name == "out" && op.AcceptsOut {
				m, ok := kv.Value.(*TensorMeta)
				if !ok && kv.Value != nil {
					return nil, typeErrorf("%s: argument 'out' must be Tensor, not %s", fn, pyTypeName(kv.Value))
				}
				a.Out = m
				continue
			}
			return nil, typeErrorf("%s got an unexpected keyword argument '%s'", fn, kv.Name)
		}
		if a.given[j] {
			return nil, typeErrorf("%s got multiple values for argument '%s'", fn, sig.Params[j].Name)
		}
		raw[j] = kv.Value
		a.given[j] = true
	}
	var missing []string
	for i, prm := range sig.Params {
		if !a.given[i] {
			if !prm.HasDefault {
				missing = append(missing, `"`+prm.Name+`"`)
				continue
			}
			a.vals[i] = prm.Default
			continue
		}
		v, ok := convert(raw[i], prm.Type, op.NumbersAsTensors && (i > 0 || op.selfNumbers))
		if !ok {
			where := ""
			for k, j := range pos {
				if j == i {
					n := k + 1
					if op.method {
						n--
					}
					where = fmt.Sprintf(" (position %d)", n)
				}
			}
			name := prm.Name
			if name == "self" {
				name = "input"
			}
			return nil, typeErrorf("%s: argument '%s'%s must be %s, not %s", fn, name, where, expectedName(prm.Type), pyTypeName(raw[i]))
		}
		a.vals[i] = v
	}
	if len(missing) > 0 {
		return nil, typeErrorf("%s missing %d required positional argument%s: %s", fn, len(missing), plural(len(missing)), strings.Join(missing, ", "))
	}
	return a, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// find returns the value of the parameter whose canonical name is name: from the bound
// signature, else the default of the op's canonical schema. ok is false when neither has it.
func (a *Args) find(name string) (Value, bool) {
	for i := range a.Sig.Params {
		if a.Sig.Params[i].Canon == name {
			return a.vals[i], true
		}
	}
	if a.Sig != a.Op.Schema {
		for _, prm := range a.Op.Schema.Params {
			if prm.Canon == name && prm.HasDefault {
				return prm.Default, true
			}
		}
	}
	return nil, false
}

// Get returns the argument named name (canonical name). It panics on a name no signature of
// the op has: that is a bug in the meta function, not in the call.
func (a *Args) Get(name string) Value {
	v, ok := a.find(name)
	if !ok {
		panic(fmt.Sprintf("ptgo BUG: meta function of %s reads argument %q, which signature %q lacks", a.Op.Name, name, a.Sig.Text))
	}
	return v
}

// Has reports whether the bound signature (or the canonical one, by default) has parameter
// name with a value other than None.
func (a *Args) Has(name string) bool {
	v, ok := a.find(name)
	return ok && v != nil
}

// Given reports whether the caller passed the argument (rather than it taking its default).
func (a *Args) Given(name string) bool {
	for i := range a.Sig.Params {
		if a.Sig.Params[i].Canon == name {
			return a.given[i]
		}
	}
	return false
}

// Tensor returns a tensor argument; nil for None or a Python number (see Value for numbers).
func (a *Args) Tensor(name string) *TensorMeta {
	m, _ := a.Get(name).(*TensorMeta)
	return m
}

// Tensors returns a tensor-list argument.
func (a *Args) Tensors(name string) []*TensorMeta {
	m, _ := a.Get(name).([]*TensorMeta)
	return m
}

// Int returns an int argument (0 for None). A symbolic size is read as its hint, specialised
// (guarded equal to it): a meta function or decomposition that reads an int concretely never
// sees a symbol (SymInt reads it symbolically).
func (a *Args) Int(name string) int64 {
	switch v := a.Get(name).(type) {
	case int64:
		return v
	case SymInt:
		return v.Specialize(a.Op.Name + " reads " + name + " as a concrete int")
	}
	return 0
}

// OptInt returns an optional int argument and whether it is set (a symbolic size as Int does).
func (a *Args) OptInt(name string) (int64, bool) {
	switch v := a.Get(name).(type) {
	case int64:
		return v, true
	case SymInt:
		return v.Specialize(a.Op.Name + " reads " + name + " as a concrete int"), true
	}
	return 0, false
}

// Ints returns an int-list argument (nil for None); symbolic sizes in it are specialised (see
// Int; SymInts reads them symbolically).
func (a *Args) Ints(name string) []int64 {
	switch v := a.Get(name).(type) {
	case []int64:
		return v
	case []SymInt:
		out := make([]int64, len(v))
		for i, s := range v {
			out[i] = s.Specialize(a.Op.Name + " reads " + name + " as concrete ints")
		}
		return out
	}
	return nil
}

// SymInt returns an int argument that may be a symbolic size.
func (a *Args) SymInt(name string) SymInt {
	s, _ := AsSymInt(a.Get(name))
	return s
}

// SymInts returns an int-list argument whose elements may be symbolic sizes (nil for None).
func (a *Args) SymInts(name string) []SymInt {
	switch v := a.Get(name).(type) {
	case []SymInt:
		return v
	case []int64:
		return constSyms(v)
	}
	return nil
}

// HasSymbols reports whether any argument holds a symbolic size.
func (a *Args) HasSymbols() bool {
	for _, v := range a.vals {
		if HasSymbols(v) {
			return true
		}
	}
	return a.Out != nil && a.Out.Sym != nil
}

// specialize replaces every symbolic size in the arguments by its hint, guarding each symbol
// equal to it (see sym.go: the gate for meta functions written for concrete sizes).
func (a *Args) specialize(why string) {
	for i, v := range a.vals {
		a.vals[i] = SpecializeValue(v, why)
	}
	if a.Out != nil && a.Out.Sym != nil {
		a.Out = SpecializeValue(a.Out, why).(*TensorMeta)
	}
}

// SpecializeInPlace is specialize for a caller that owns the argument metas (a decomposition's
// fresh copies): every symbol they mention is guarded equal to its hint, symbolic ints become
// int64, and the metas themselves become static in place, so maps keyed by them stay valid.
func (a *Args) SpecializeInPlace(why string) {
	for i, v := range a.vals {
		a.vals[i] = specializeInPlace(v, why)
	}
	if a.Out != nil {
		specializeInPlace(a.Out, why)
	}
}

func specializeInPlace(v Value, why string) Value {
	symbolsIn(v, func(s SymInt) { s.Specialize(why) })
	switch x := v.(type) {
	case *TensorMeta:
		if x != nil {
			x.Sym = nil
		}
		return x
	case []*TensorMeta:
		for _, e := range x {
			if e != nil {
				e.Sym = nil
			}
		}
		return x
	case []Value:
		for i, e := range x {
			x[i] = specializeInPlace(e, why)
		}
		return x
	case Tuple:
		for i, e := range x {
			x[i] = specializeInPlace(e, why)
		}
		return x
	}
	return staticValue(v)
}

// Floats returns a float-list argument (nil for None).
func (a *Args) Floats(name string) []float64 {
	v, _ := a.Get(name).([]float64)
	return v
}

// Float returns a float argument (0 for None).
func (a *Args) Float(name string) float64 {
	switch v := a.Get(name).(type) {
	case float64:
		return v
	case int64:
		return float64(v)
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

// Bool returns a bool argument (false for None).
func (a *Args) Bool(name string) bool {
	v, _ := a.Get(name).(bool)
	return v
}

// Str returns a str argument ("" for None).
func (a *Args) Str(name string) string {
	v, _ := a.Get(name).(string)
	return v
}

// DType returns a ScalarType argument and whether it is set.
func (a *Args) DType(name string) (DType, bool) {
	v, ok := a.Get(name).(DType)
	return v, ok
}

// Tensors lists every tensor argument of the call (including tensors inside lists and out=), in
// parameter order: the inputs ResultRequiresGrad looks at.
func (a *Args) AllTensors() []*TensorMeta {
	var out []*TensorMeta
	for _, v := range a.vals {
		switch v := v.(type) {
		case *TensorMeta:
			out = append(out, v)
		case []*TensorMeta:
			for _, m := range v {
				if m != nil {
					out = append(out, m)
				}
			}
		case []Value:
			out = append(out, tensorsIn(v)...)
		case Tuple:
			out = append(out, tensorsIn(v)...)
		}
	}
	return out
}

func tensorsIn(vs []Value) []*TensorMeta {
	var out []*TensorMeta
	for _, v := range vs {
		switch v := v.(type) {
		case *TensorMeta:
			out = append(out, v)
		case []Value:
			out = append(out, tensorsIn(v)...)
		case Tuple:
			out = append(out, tensorsIn(v)...)
		}
	}
	return out
}

// Mutated names the arguments this call writes to: parameters annotated (a!) in the schema,
// "out" when out= was given, and the first tensor when an F-level function is called with
// inplace=True.
func (a *Args) Mutated() []string {
	var out []string
	for _, prm := range a.Sig.Params {
		if prm.Writes {
			out = append(out, prm.Canon)
		}
	}
	if a.Out != nil {
		out = append(out, "out")
	}
	if a.Inplace() {
		out = append(out, a.Sig.Params[0].Canon)
	}
	if extra := a.Op.mutatesWhen; extra != nil {
		out = append(out, extra(a)...)
	}
	return out
}

// Inplace reports an F-level call with inplace=True (F.relu(x, inplace=True)).
func (a *Args) Inplace() bool {
	for i, prm := range a.Sig.Params {
		if prm.Name == "inplace" {
			b, _ := a.vals[i].(bool)
			return b
		}
	}
	return false
}

// Flag returns a bool argument that only some signatures have (false when absent or None).
func (a *Args) Flag(name string) bool {
	v, _ := a.find(name)
	b, _ := v.(bool)
	return b
}

// Opt returns an argument that only some signatures have, and whether the call's signature
// (or the canonical one, by default) has it.
func (a *Args) Opt(name string) (Value, bool) { return a.find(name) }

// Values returns the bound arguments in signature order, by canonical name, defaults included:
// a normalized form of the call for later stages.
func (a *Args) Values() []KV {
	out := make([]KV, len(a.vals))
	for i, p := range a.Sig.Params {
		out[i] = KV{p.Canon, a.vals[i]}
	}
	return out
}
