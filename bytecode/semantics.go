package bytecode

import (
	"cmp"
	"math"
	"math/bits"

	"ptgo/bytecode/py"
)

// Python semantics of operators, containers and truth on symbolic values. Tensors go to the
// graph (tensor.go); constants are folded in Go where the rules are simple and exact, and by
// calling CPython otherwise, so results always match the interpreter's own.

// binaryOpNames maps BINARY_OP's argument to the operator module function.
var binaryOpNames = [...]string{
	"add", "and_", "floordiv", "lshift", "matmul", "mul", "mod", "or_", "pow", "rshift", "sub",
	"truediv", "xor",
	"iadd", "iand", "ifloordiv", "ilshift", "imatmul", "imul", "imod", "ior", "ipow", "irshift",
	"isub", "itruediv", "ixor",
}

func (t *Tracer) binaryOp(f *frame, op int, a, b Value) (Value, error) {
	if op < 0 || op >= len(binaryOpNames) {
		return nil, internalError("bad BINARY_OP argument")
	}
	var err error
	if a, err = t.realizeNumbers(f, a); err != nil {
		return nil, err
	}
	if b, err = t.realizeNumbers(f, b); err != nil {
		return nil, err
	}
	name := binaryOpNames[op]
	inplace := op >= 13
	base := name
	if inplace {
		base = name[1:]
	}
	if v, ok := symBinary(base, a, b); ok {
		return v, nil
	}
	if v, ok := t.floatBinary(f, base, a, b); ok {
		return v, nil
	}
	_, sa := a.(*SymV)
	_, sb := b.(*SymV)
	_, fa := a.(*SymF)
	_, fb := b.(*SymF)
	_, ta0 := a.(*TensorV)
	_, tb0 := b.(*TensorV)
	if (sa || sb || fa || fb) && !ta0 && !tb0 {
		// int arithmetic whose result is not a polynomial: with the values of this call
		if a, err = t.realize(f, a); err != nil {
			return nil, err
		}
		if b, err = t.realize(f, b); err != nil {
			return nil, err
		}
	}
	_, ta := a.(*TensorV)
	_, tb := b.(*TensorV)
	if ta || tb {
		return t.tensorOperator(f, name, inplace, a, b)
	}
	if ca, ok := a.(*ConstV); ok {
		if cb, ok := b.(*ConstV); ok {
			if v, ok := foldNumbers(base, ca, cb); ok {
				return v, nil
			}
		}
	}
	switch x := a.(type) {
	case *TupleV:
		switch y := b.(type) {
		case *TupleV:
			if base == "add" {
				return &TupleV{Items: concat(x.Items, y.Items), Size: x.Size}, nil
			}
		case *ConstV:
			if base == "mul" && y.IsIntLike() {
				return &TupleV{Items: repeat(x.Items, y.I)}, nil
			}
		}
	case *ListV:
		switch y := b.(type) {
		case *ListV:
			if base == "add" {
				if inplace {
					if x.Source != nil {
						t.mutateList(x)
					}
					x.Items = append(x.Items, y.Items...)
					return x, nil
				}
				return &ListV{Items: concat(x.Items, y.Items)}, nil
			}
		case *TupleV:
			if base == "add" && inplace {
				if x.Source != nil {
					t.mutateList(x)
				}
				x.Items = append(x.Items, y.Items...)
				return x, nil
			}
		case *ConstV:
			if base == "mul" && y.IsIntLike() {
				if inplace {
					if x.Source != nil {
						t.mutateList(x)
					}
					x.Items = repeat(x.Items, y.I)
					return x, nil
				}
				return &ListV{Items: repeat(x.Items, y.I)}, nil
			}
		}
	}
	if x, ok := a.(*DictV); ok && base == "or_" {
		if y, ok := b.(*DictV); ok {
			// d | e is a copy of d updated with e (of d's class); d |= e updates d.
			out := x
			if !inplace {
				out = &DictV{Keys: append([]Value(nil), x.Keys...), Vals: append([]Value(nil), x.Vals...), Class: x.Class, Factory: x.Factory}
			} else if x.Source != nil {
				t.mutateDict(x)
			}
			for i := range y.Keys {
				if err := t.dictSet(f, out, y.Keys[i], y.Vals[i]); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	if v, handled, err := t.userDunder(f, a, b, base, inplace); handled {
		return v, err
	}
	return t.foldPython(f, "operator."+name, a, b)
}

func concat(a, b []Value) []Value {
	out := make([]Value, 0, len(a)+len(b))
	return append(append(out, a...), b...)
}

func repeat(items []Value, n int64) []Value {
	var out []Value
	for i := int64(0); i < n; i++ {
		out = append(out, items...)
	}
	return out
}

// foldNumbers evaluates simple arithmetic on bools, ints (fitting int64) and floats exactly as
// Python would; ok=false leaves the case to CPython (overflow, division by zero, pow, ...).
func foldNumbers(op string, a, b *ConstV) (Value, bool) {
	if !a.IsNumber() || !b.IsNumber() {
		return nil, false
	}
	if a.Kind != py.KFloat && b.Kind != py.KFloat {
		x, y := a.I, b.I
		switch op {
		case "add":
			if r, ok := addInt(x, y); ok {
				return intV(r), true
			}
		case "sub":
			if r, ok := addInt(x, -y); ok && y != math.MinInt64 {
				return intV(r), true
			}
		case "mul":
			hi, lo := bits.Mul64(uint64(abs64(x)), uint64(abs64(y)))
			if hi == 0 && lo <= math.MaxInt64 && x != math.MinInt64 && y != math.MinInt64 {
				r := int64(lo)
				if (x < 0) != (y < 0) {
					r = -r
				}
				return intV(r), true
			}
		case "floordiv":
			if y != 0 && !(x == math.MinInt64 && y == -1) {
				return intV(floorDiv(x, y)), true
			}
		case "mod":
			if y != 0 && !(x == math.MinInt64 && y == -1) {
				return intV(x - floorDiv(x, y)*y), true
			}
		case "truediv":
			if y != 0 && abs64(x) < 1<<53 && abs64(y) < 1<<53 {
				return floatV(float64(x) / float64(y)), true
			}
		case "and_":
			if a.Kind == py.KBool && b.Kind == py.KBool {
				return boolV(x&y != 0), true
			}
			return intV(x & y), true
		case "or_":
			if a.Kind == py.KBool && b.Kind == py.KBool {
				return boolV(x|y != 0), true
			}
			return intV(x | y), true
		case "xor":
			if a.Kind == py.KBool && b.Kind == py.KBool {
				return boolV(x^y != 0), true
			}
			return intV(x ^ y), true
		case "rshift":
			if y >= 0 {
				if y > 63 {
					y = 63
				}
				return intV(x >> uint(y)), true
			}
		case "lshift":
			if y >= 0 && y < 63 && abs64(x) < 1<<(62-uint(y)) {
				return intV(x << uint(y)), true
			}
		}
		return nil, false
	}
	x, y := a.Float(), b.Float()
	// ints beyond 2^53 lose precision as floats: leave mixed cases with such ints to CPython.
	if (a.Kind != py.KFloat && abs64(a.I) >= 1<<53) || (b.Kind != py.KFloat && abs64(b.I) >= 1<<53) {
		return nil, false
	}
	switch op {
	case "add":
		return floatV(x + y), true
	case "sub":
		return floatV(x - y), true
	case "mul":
		return floatV(x * y), true
	case "truediv":
		if y != 0 {
			return floatV(x / y), true
		}
	}
	return nil, false
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func addInt(x, y int64) (int64, bool) {
	r := x + y
	if (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0) {
		return 0, false
	}
	return r, true
}

func floorDiv(x, y int64) int64 {
	q := x / y
	if (x%y != 0) && ((x < 0) != (y < 0)) {
		q--
	}
	return q
}

// foldPython calls a CPython function (by path) on materialized constant arguments.
func (t *Tracer) foldPython(f *frame, path string, args ...Value) (Value, error) {
	objs := make([]py.Obj, len(args))
	for i, a := range args {
		o, err := t.toObj(f, a)
		if err != nil {
			return nil, err
		}
		objs[i] = o
	}
	r, err := t.api.Call(t.env.Known(path), objs, nil)
	if err != nil {
		return nil, t.raisedFromCall(f, path, err)
	}
	if k := t.api.Kind(r); k == py.KList || k == py.KDict {
		return t.wrapLive(f, r, nil) // a new container the trace goes on with
	}
	return t.constFromObj(r)
}

// toObj materializes a value as a Python object (constants, containers of them, live objects).
func (t *Tracer) toObj(f *frame, v Value) (py.Obj, error) {
	api := t.api
	switch v := v.(type) {
	case *LazyV:
		return v.Obj, nil
	case *ConstV:
		if v.obj != 0 {
			return v.obj, nil
		}
		switch v.Kind {
		case py.KNone:
			v.obj = api.None()
		case py.KBool:
			v.obj = api.NewBool(v.I != 0)
		case py.KInt:
			v.obj = api.NewInt(v.I)
		case py.KFloat:
			v.obj = api.NewFloat(v.F)
		case py.KStr:
			v.obj = api.NewStr(v.S)
		default:
			return 0, internalError("constant without an object: " + v.Describe())
		}
		return v.obj, nil
	case *TupleV:
		items, err := t.toObjs(f, v.Items)
		if err != nil {
			return 0, err
		}
		tup := api.NewTuple(items)
		if v.Size {
			return api.Call(t.env.Known("torch.Size"), []py.Obj{tup}, nil)
		}
		if v.Class != 0 {
			if v.Named {
				make_, err := api.GetAttr(v.Class, "_make")
				if err != nil {
					return 0, err
				}
				return api.Call(make_, []py.Obj{tup}, nil)
			}
			return api.Call(v.Class, []py.Obj{tup}, nil)
		}
		return tup, nil
	case *ListV:
		items, err := t.toObjs(f, v.Items)
		if err != nil {
			return 0, err
		}
		return api.NewList(items), nil
	case *DictV:
		keys, err := t.toObjs(f, v.Keys)
		if err != nil {
			return 0, err
		}
		vals, err := t.toObjs(f, v.Vals)
		if err != nil {
			return 0, err
		}
		d, err := api.NewDict(keys, vals)
		if err != nil || v.Class == 0 {
			return d, err
		}
		args := []py.Obj{d}
		if v.Factory != nil {
			fac, err := t.toObj(f, v.Factory)
			if err != nil {
				return 0, err
			}
			args = []py.Obj{fac, d}
		}
		return api.Call(v.Class, args, nil)
	case *DequeV:
		items, err := t.toObjs(f, v.Items)
		if err != nil {
			return 0, err
		}
		maxlen := api.None()
		if v.MaxLen >= 0 {
			maxlen = api.NewInt(v.MaxLen)
		}
		return api.Call(t.env.Known("collections.deque"), []py.Obj{api.NewList(items), maxlen}, nil)
	case *SetV:
		items, err := t.toObjs(f, v.Items)
		if err != nil {
			return 0, err
		}
		typ := "builtins.set"
		if v.Frozen {
			typ = "builtins.frozenset"
		}
		return api.Call(t.env.Known(typ), []py.Obj{api.NewTuple(items)}, nil)
	case *RangeV:
		return api.Call(t.env.Known("builtins.range"), []py.Obj{api.NewInt(v.Start), api.NewInt(v.Stop), api.NewInt(v.Step)}, nil)
	case *SliceV:
		parts, err := t.toObjs(f, []Value{v.Start, v.Stop, v.Step})
		if err != nil {
			return 0, err
		}
		return api.Call(t.env.Known("builtins.slice"), parts, nil)
	case *ObjV:
		return v.Obj, nil
	case *ExcV:
		return t.excObj(f, v)
	case *FuncV:
		if v.Obj != 0 {
			return v.Obj, nil
		}
	case *BoundV:
		if fn, ok := v.Fn.(*FuncV); ok && fn.Obj != 0 {
			self, err := t.toObj(f, v.Self)
			if err != nil {
				return 0, err
			}
			return api.Call(t.env.Known("types.MethodType"), []py.Obj{fn.Obj, self}, nil)
		}
		if v.Fn == nil {
			self, err := t.toObj(f, v.Self)
			if err != nil {
				return 0, err
			}
			if v.Desc != 0 {
				return api.Call(t.env.Known("types.MethodType"), []py.Obj{v.Desc, self}, nil)
			}
			return api.GetAttr(self, v.Name)
		}
	case *GradModeV:
		if v.Enabled {
			return api.Call(t.env.Known("torch.enable_grad"), nil, nil)
		}
		return api.Call(t.env.Known("torch.no_grad"), nil, nil)
	}
	return 0, f.unsupported("", "using %s as a Python value (it has no value while tracing)", v.Describe())
}

func (t *Tracer) toObjs(f *frame, vs []Value) ([]py.Obj, error) {
	out := make([]py.Obj, len(vs))
	for i, v := range vs {
		r, err := t.realize(f, v)
		if err != nil {
			return nil, err
		}
		if out[i], err = t.toObj(f, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// userDunder runs a user class's operator method (__add__/__radd__/__iadd__) by inlining it.
func (t *Tracer) userDunder(f *frame, a, b Value, base string, inplace bool) (Value, bool, error) {
	tryOn := func(self, other Value, dunder string) (Value, bool, error) {
		var cls py.Obj
		switch o := self.(type) {
		case *ObjV:
			cls = t.api.TypeOf(o.Obj)
		case *ObjectV:
			cls = o.Class
		case *TupleV:
			if !o.Named {
				return nil, false, nil
			}
			cls = o.Class
		default:
			return nil, false, nil
		}
		fn, onType, _, found, err := t.api.GetAttrStatic(cls, dunder)
		if err != nil || !found || !onType || t.api.Kind(fn) != py.KFunction {
			return nil, false, nil
		}
		fv, err := t.funcFromObj(f, fn, nil)
		if err != nil {
			return nil, true, err
		}
		r, err := t.inline(f, fv, []Value{self, other}, nil)
		if err != nil {
			return nil, true, err
		}
		if o, ok := r.(*ObjV); ok && o.Obj == t.env.Known("builtins.NotImplemented") {
			return nil, false, nil
		}
		return r, true, nil
	}
	dn := "__" + trimUnderscore(base) + "__"
	if inplace {
		if v, ok, err := tryOn(a, b, "__i"+trimUnderscore(base)+"__"); ok {
			return v, true, err
		}
	}
	if v, ok, err := tryOn(a, b, dn); ok {
		return v, true, err
	}
	return tryOn(b, a, "__r"+trimUnderscore(base)+"__")
}

func trimUnderscore(s string) string {
	for len(s) > 0 && s[len(s)-1] == '_' {
		s = s[:len(s)-1]
	}
	return s
}

func (t *Tracer) unaryOp(f *frame, op Opcode, v Value) (Value, error) {
	if s, ok := v.(*SymV); ok && op == UNARY_NEGATIVE {
		return symValue(s.S.Neg()), nil
	}
	if s, ok := v.(*SymV); ok && op == UNARY_POSITIVE {
		return s, nil
	}
	if l, ok := v.(*LazyV); ok {
		if r, err := t.realizeLazy(f, l); err == nil {
			v = r
		}
	}
	if s, ok := v.(*SymF); ok {
		switch op {
		case UNARY_NEGATIVE:
			if r, ok := t.floatUnary(f, "neg", s); ok {
				return r, nil
			}
		case UNARY_POSITIVE:
			return s, nil
		}
	}
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	name := map[Opcode]string{UNARY_NEGATIVE: "neg", UNARY_POSITIVE: "pos", UNARY_INVERT: "invert"}[op]
	switch x := v.(type) {
	case *TensorV:
		return t.tensorOperator(f, name, false, x)
	case *ConstV:
		if x.IsIntLike() && op == UNARY_NEGATIVE && x.I != math.MinInt64 {
			return intV(-x.I), nil
		}
		if x.Kind == py.KFloat && op == UNARY_NEGATIVE {
			return floatV(-x.F), nil
		}
	}
	return t.foldPython(f, "operator."+name, v)
}

// tensorAndFloat reports whether a is a tensor and b a float read at run time.
func tensorAndFloat(a, b Value) bool {
	_, isT := a.(*TensorV)
	_, isF := b.(*SymF)
	return isT && isF
}

// floatIsNotConst reports whether a is a float read at run time and b None or a bool.
// runtimeFloat reports whether v is a float read at run time (a float argument).
func runtimeFloat(v Value) bool {
	_, ok := v.(*SymF)
	return ok
}

func floatIsNotConst(a, b Value) bool {
	_, isFloat := a.(*SymF)
	c, isConst := b.(*ConstV)
	return isFloat && isConst && (c.Kind == py.KNone || c.Kind == py.KBool)
}

// truthy is bool(v) for values whose truth is known while tracing.
func (t *Tracer) truthy(f *frame, v Value) (bool, error) {
	if s, ok := v.(*SymV); ok {
		r, _ := symCompare(f, "ne", s, intV(0))
		return r.(*ConstV).I != 0, nil
	}
	if l, ok := v.(*LazyV); ok {
		if r, err := t.realizeLazy(f, l); err == nil {
			v = r
		}
	}
	if s, ok := v.(*SymF); ok {
		if b, ok := t.floatTruth(f, s); ok {
			return b, nil
		}
	}
	v, err := t.realize(f, v)
	if err != nil {
		return false, err
	}
	switch x := v.(type) {
	case *ConstV:
		switch x.Kind {
		case py.KNone:
			return false, nil
		case py.KBool, py.KInt:
			if !x.big {
				return x.I != 0, nil
			}
		case py.KFloat:
			return x.F != 0, nil
		case py.KStr:
			return x.S != "", nil
		}
		r, err := t.foldPython(f, "builtins.bool", x)
		if err != nil {
			return false, err
		}
		return r.(*ConstV).I != 0, nil
	case *TupleV:
		return len(x.Items) > 0, nil
	case *ListV:
		return len(x.Items) > 0, nil
	case *DictV:
		return len(x.Keys) > 0, nil
	case *SetV:
		return len(x.Items) > 0, nil
	case *RangeV:
		return x.Len() > 0, nil
	case *DequeV:
		return len(x.Items) > 0, nil
	case *ObjectV:
		if r, handled, err := t.callDunder(f, x, "__bool__", nil); handled {
			if err != nil {
				return false, err
			}
			return t.truthy(f, r)
		}
		if n, handled, err := t.lenDunder(f, x); handled {
			return n > 0, err
		}
		if x.Dict != nil {
			return len(x.Dict.Keys) > 0, nil
		}
		return true, nil
	case *TensorV:
		return false, f.unsupported("branching on a tensor's value needs a graph break; compute both sides with torch.where, or move the branch out of the compiled function",
			"the truth value of a tensor (data-dependent control flow)")
	case *ObjV:
		n, err := t.length(f, x)
		if err == nil {
			return n > 0, nil
		}
		if x.Kind == py.KNNModule || x.Kind == py.KModule || x.Kind == py.KType || x.Kind == py.KBuiltin ||
			x.Kind == py.KFunction || x.Kind == py.KDType || x.Kind == py.KDevice || x.Kind == py.KMethodDescriptor {
			return true, nil
		}
		if fn, onType, _, found, _ := t.api.GetAttrStatic(x.Obj, "__bool__"); found && onType {
			if t.api.Kind(fn) == py.KFunction {
				fv, err := t.funcFromObj(f, fn, nil)
				if err != nil {
					return false, err
				}
				r, err := t.inline(f, fv, []Value{x}, nil)
				if err != nil {
					return false, err
				}
				return t.truthy(f, r)
			}
			return false, f.unsupported("", "truth value of %s", t.typeName(x.Obj))
		}
		return true, nil
	}
	return true, nil
}

// identical is `a is b`.
func (t *Tracer) identical(f *frame, a, b Value) (bool, error) {
	var err error
	if a, err = t.realizeLazy(f, a); err != nil {
		return false, err
	}
	if b, err = t.realizeLazy(f, b); err != nil {
		return false, err
	}
	if floatIsNotConst(a, b) || floatIsNotConst(b, a) {
		// a float read at run time is none of None, True, False (its type is guarded)
		return false, nil
	}
	if runtimeFloat(a) && a == b {
		return true, nil // one value: one object
	}
	if runtimeFloat(a) && runtimeFloat(b) {
		// which objects two floats read at run time are is not what their values say
		return false, f.unsupported("compare numbers with ==; `is` compares the objects", "`is` between two floats read at run time")
	}
	if a, err = t.realize(f, a); err != nil {
		return false, err
	}
	if b, err = t.realize(f, b); err != nil {
		return false, err
	}
	ca, aConst := a.(*ConstV)
	cb, bConst := b.(*ConstV)
	if aConst && bConst {
		switch {
		case ca.Kind == py.KNone || cb.Kind == py.KNone:
			return ca.Kind == cb.Kind, nil
		case ca.Kind == py.KBool && cb.Kind == py.KBool:
			return ca.I == cb.I, nil
		case ca.obj != 0 && cb.obj != 0:
			// numbers and strings are guarded by value: which objects they are is another fact
			same := ca.obj == cb.obj
			t.guardIdentity(ca.src, ca.obj, cb.src, cb.obj, same)
			return same, nil
		case ca.Kind == py.KInt && cb.Kind == py.KInt && !ca.big && !cb.big:
			// ints computed while tracing (sizes, arithmetic; their values are guarded):
			// CPython gives one object for each small int, -5..256, and new ones above
			return ca == cb || ca.I == cb.I && ca.I >= -5 && ca.I <= 256, nil
		}
		return ca == cb, nil
	}
	if aConst != bConst {
		// A constant is never a tensor, container or live object ptgo tracks separately,
		// except for live objects that are constants (ObjV wrapping e.g. NotImplemented).
		if ob, ok := b.(*ObjV); ok && aConst && ca.obj != 0 {
			same := ob.Obj == ca.obj
			t.guardIdentity(ca.src, ca.obj, ob.Source, ob.Obj, same)
			return same, nil
		}
		if oa, ok := a.(*ObjV); ok && bConst && cb.obj != 0 {
			same := oa.Obj == cb.obj
			t.guardIdentity(oa.Source, oa.Obj, cb.src, cb.obj, same)
			return same, nil
		}
		return false, nil
	}
	oa, aObj := a.(*ObjV)
	ob, bObj := b.(*ObjV)
	if aObj && bObj {
		// Objects guarded by class or by value (an unspecialised module, a device) can be
		// another object next call: the answer is guarded (an identity guard makes it redundant)
		same := oa.Obj == ob.Obj
		t.guardIdentity(oa.Source, oa.Obj, ob.Source, ob.Obj, same)
		return same, nil
	}
	if ta, ok := a.(*TensorV); ok {
		if tb, ok := b.(*TensorV); ok {
			if ta.Node != tb.Node && ta.Source != nil && tb.Source != nil {
				// Two inputs read from two places are two objects for these guards only:
				// the same tensor passed twice is one input (tensorInput guards Same).
				t.guards.NotSame(ta.Source, tb.Source)
			}
			return ta.Node == tb.Node, nil
		}
		return false, nil
	}
	fa, aFn := a.(*FuncV)
	fb, bFn := b.(*FuncV)
	if aFn && bFn && fa.Obj != 0 {
		return fa.Obj == fb.Obj, nil
	}
	return a == b, nil
}

// guardIdentity guards the answer `same` of `a is b` for two objects read from sources sa and
// sb (nil: a constant of the code or a value the trace made, which is that object every call):
// one object, or two. Two sources give Same or Distinct; one gives ID or NotID of the other
// object; none needs no guard.
func (t *Tracer) guardIdentity(sa Source, a py.Obj, sb Source, b py.Obj, same bool) {
	switch {
	case sa != nil && sb != nil:
		if sourceKey(sa) == sourceKey(sb) {
			return
		}
		if same {
			t.guards.Same(sa, sb)
		} else {
			t.guards.Distinct(sa, sb)
		}
	case sa != nil || sb != nil:
		src, other := sa, b
		if src == nil {
			src, other = sb, a
		}
		if same {
			t.guards.ID(src, other, t.shortRepr(other))
		} else {
			t.guards.NotID(src, other, t.shortRepr(other))
		}
	}
}

// equal is `a == b` for non-tensor values.
func (t *Tracer) equal(f *frame, a, b Value) (bool, error) {
	r, err := t.compare(f, "eq", a, b)
	if err != nil {
		return false, err
	}
	c, ok := r.(*ConstV)
	if !ok {
		return false, f.unsupported("", "comparing %s with %s for equality", a.Describe(), b.Describe())
	}
	return t.truthy(f, c)
}

func (t *Tracer) compare(f *frame, op string, a, b Value) (Value, error) {
	var err error
	if a, err = t.realizeLazy(f, a); err != nil {
		return nil, err
	}
	if b, err = t.realizeLazy(f, b); err != nil {
		return nil, err
	}
	if v, ok := t.floatCompare(f, op, a, b); ok {
		return v, nil
	}
	if tensorAndFloat(a, b) || tensorAndFloat(b, a) {
		// tensor > alpha: the comparison op takes the float read at run time (fSymFloat)
		return t.tensorOperator(f, op, false, a, b)
	}
	if a, err = t.realizeKeepSym(f, a); err != nil {
		return nil, err
	}
	if b, err = t.realizeKeepSym(f, b); err != nil {
		return nil, err
	}
	if v, ok := symCompare(f, op, a, b); ok {
		return v, nil
	}
	_, ta0 := a.(*TensorV)
	_, tb0 := b.(*TensorV)
	if !ta0 && !tb0 {
		if a, err = t.realize(f, a); err != nil {
			return nil, err
		}
		if b, err = t.realize(f, b); err != nil {
			return nil, err
		}
	}
	_, ta := a.(*TensorV)
	_, tb := b.(*TensorV)
	if ta || tb {
		return t.tensorOperator(f, op, false, a, b)
	}
	if v, handled, err := t.compareCmpKeys(f, op, a, b); handled {
		return v, err
	}
	ca, aConst := a.(*ConstV)
	cb, bConst := b.(*ConstV)
	if aConst && bConst {
		if ca.IsNumber() && cb.IsNumber() && (ca.Kind == py.KFloat || abs64(ca.I) < 1<<53) &&
			(cb.Kind == py.KFloat || abs64(cb.I) < 1<<53) {
			x, y := ca.Float(), cb.Float()
			if ca.Kind != py.KFloat && cb.Kind != py.KFloat {
				return boolV(cmpOrdered(op, ca.I, cb.I)), nil
			}
			return boolV(cmpOrdered(op, x, y)), nil
		}
		if ca.Kind == py.KStr && cb.Kind == py.KStr {
			return boolV(cmpOrdered(op, ca.S, cb.S)), nil
		}
		if (op == "eq" || op == "ne") && ca.Kind != cb.Kind && !(ca.IsNumber() && cb.IsNumber()) &&
			ca.Kind != py.KOther && cb.Kind != py.KOther && ca.Kind != py.KComplex && cb.Kind != py.KComplex {
			return boolV(op == "ne"), nil
		}
	}
	if op == "eq" || op == "ne" {
		if same, err := t.identical(f, a, b); err == nil && same {
			if _, isFloat := a.(*ConstV); !isFloat || ca.Kind != py.KFloat || !math.IsNaN(ca.F) {
				return boolV(op == "eq"), nil
			}
		}
		if eq, handled, err := t.containerEqual(f, a, b); handled {
			if err != nil {
				return nil, err
			}
			return boolV(eq == (op == "eq")), nil
		}
	}
	if v, handled, err := t.userDunder(f, a, b, op, false); handled {
		return v, err
	}
	if v, handled, err := t.compareByIdentity(f, op, a, b); handled {
		return v, err
	}
	return t.foldPython(f, "operator."+op, a, b)
}

// compareByIdentity is == and != for values without a Python value that define no __eq__
// (object's identity comparison); ordering them raises in eager.
func (t *Tracer) compareByIdentity(f *frame, op string, a, b Value) (Value, bool, error) {
	opaque := func(v Value) bool {
		switch x := v.(type) {
		case *ObjectV:
			return x.Dict == nil
		case *DequeV, *IterV, *PartialV, *CtxFuncV, *builtinFnV:
			return true
		case *FuncV:
			return x.Obj == 0
		}
		return false
	}
	if !opaque(a) && !opaque(b) {
		return nil, false, nil
	}
	if da, ok := a.(*DequeV); ok {
		if db, ok := b.(*DequeV); ok && (op == "eq" || op == "ne") {
			eq, _, err := t.containerEqual(f, &ListV{Items: da.Items}, &ListV{Items: db.Items})
			return boolV(eq == (op == "eq")), true, err
		}
	}
	if op != "eq" && op != "ne" {
		return nil, true, f.unsupported("eager raises TypeError", "'%s' not supported between %s and %s", op, a.Describe(), b.Describe())
	}
	same, err := t.identical(f, a, b)
	return boolV(same == (op == "eq")), true, err
}

// containerEqual compares tuples and lists element-wise (elements may be symbolic values that
// cannot be materialized, e.g. modules in a list are compared by identity).
func (t *Tracer) containerEqual(f *frame, a, b Value) (bool, bool, error) {
	var xs, ys []Value
	switch x := a.(type) {
	case *TupleV:
		y, ok := b.(*TupleV)
		if !ok {
			if _, isList := b.(*ListV); isList {
				return false, true, nil
			}
			return false, false, nil
		}
		xs, ys = x.Items, y.Items
	case *ListV:
		y, ok := b.(*ListV)
		if !ok {
			if _, isTuple := b.(*TupleV); isTuple {
				return false, true, nil
			}
			return false, false, nil
		}
		xs, ys = x.Items, y.Items
	default:
		return false, false, nil
	}
	if len(xs) != len(ys) {
		return false, true, nil
	}
	for i := range xs {
		// Python compares items with identity first (PyObject_RichCompareBool): a tensor
		// equals itself without comparing values.
		same, err := t.identical(f, xs[i], ys[i])
		if err != nil {
			return false, true, err
		}
		if same {
			continue
		}
		eq, err := t.equal(f, xs[i], ys[i])
		if err != nil || !eq {
			return false, true, err
		}
	}
	return true, true, nil
}

// cmpOrdered applies a comparison operator ("lt", "le", ...) to ordered values.
func cmpOrdered[T cmp.Ordered](op string, x, y T) bool {
	switch op {
	case "lt":
		return x < y
	case "le":
		return x <= y
	case "eq":
		return x == y
	case "ne":
		return x != y
	case "gt":
		return x > y
	}
	return x >= y
}

// contains is `item in container`.
func (t *Tracer) contains(f *frame, container, item Value) (bool, error) {
	var err error
	if container, err = t.realize(f, container); err != nil {
		return false, err
	}
	if item, err = t.realize(f, item); err != nil {
		return false, err
	}
	var items []Value
	switch c := container.(type) {
	case *TupleV:
		items = c.Items
	case *ListV:
		items = c.Items
	case *SetV:
		items = c.Items
	case *DictV:
		items = c.Keys
	case *DequeV:
		items = c.Items
	case *ObjectV:
		if r, handled, err := t.callDunder(f, c, "__contains__", []Value{item}); handled {
			if err != nil {
				return false, err
			}
			return t.truthy(f, r)
		}
		if c.Dict == nil {
			its, err := t.unpack(f, c)
			if err != nil {
				return false, err
			}
			items = its
			break
		}
		items = c.Dict.Keys
	case *RangeV:
		ci, ok := item.(*ConstV)
		if !ok || !ci.IsIntLike() {
			return false, nil
		}
		x := ci.I
		if c.Step > 0 {
			return x >= c.Start && x < c.Stop && (x-c.Start)%c.Step == 0, nil
		}
		return x <= c.Start && x > c.Stop && (c.Start-x)%(-c.Step) == 0, nil
	case *ConstV:
		r, err := t.foldPython(f, "operator.contains", c, item)
		if err != nil {
			return false, err
		}
		return t.truthy(f, r)
	case *TensorV:
		return false, f.unsupported("", "`in` on a tensor (data-dependent)")
	case *ObjV:
		if v, ok, err := t.liveDictDunder(f, c, "__contains__", item); ok {
			if err != nil {
				return false, err
			}
			return t.truthy(f, v)
		}
		r, err := t.foldPython(f, "operator.contains", container, item)
		if err != nil {
			return false, err
		}
		return t.truthy(f, r)
	default:
		r, err := t.foldPython(f, "operator.contains", container, item)
		if err != nil {
			return false, err
		}
		return t.truthy(f, r)
	}
	// A set or a dict finds its item by hash first: a tensor's hash is its id, so a tensor is
	// only ever found as itself (torch's memo sets of parameters: `if p in memo`).
	hashed := false
	switch c := container.(type) {
	case *SetV, *DictV:
		hashed = true
	case *ObjectV:
		hashed = c.Dict != nil
	}
	for _, it := range items {
		it, err := t.realize(f, it)
		if err != nil {
			return false, err
		}
		same, err := t.identical(f, it, item)
		if err != nil {
			return false, err
		}
		if same {
			return true, nil
		}
		_, itTensor := it.(*TensorV)
		_, itemTensor := item.(*TensorV)
		if itTensor || itemTensor {
			if itTensor && itemTensor && !(hashed && t.idHashed(it) && t.idHashed(item)) {
				return false, f.unsupported("compare tensors by identity (is) instead", "`in` comparing tensors by value")
			}
			continue
		}
		eq, err := t.equal(f, it, item)
		if err != nil {
			return false, err
		}
		if eq {
			return true, nil
		}
	}
	return false, nil
}

// idHashed reports a tensor whose hash is its id: torch.Tensor's own __hash__ (a subclass may
// define another).
func (t *Tracer) idHashed(v Value) bool {
	x, ok := v.(*TensorV)
	if !ok {
		return false
	}
	if x.Class == 0 {
		return true
	}
	h, _, _, found, _ := t.api.GetAttrStatic(x.Class, "__hash__")
	base, _, _, _, _ := t.api.GetAttrStatic(t.env.Known("torch.Tensor"), "__hash__")
	return found && h == base
}

// dictGet finds key in d.
func (t *Tracer) dictGet(f *frame, d *DictV, key Value) (Value, bool, error) {
	key, err := t.realize(f, key)
	if err != nil {
		return nil, false, err
	}
	for i, k := range d.Keys {
		same, err := t.identical(f, k, key)
		if err != nil {
			return nil, false, err
		}
		if !same {
			_, kt := k.(*TensorV)
			_, keyT := key.(*TensorV)
			if kt || keyT {
				continue
			}
			if same, err = t.equal(f, k, key); err != nil {
				return nil, false, err
			}
		}
		if same {
			return d.Vals[i], true, nil
		}
	}
	return nil, false, nil
}

func (t *Tracer) dictSet(f *frame, d *DictV, key, val Value) error {
	key, err := t.realize(f, key)
	if err != nil {
		return err
	}
	if err := t.checkHashable(f, key); err != nil {
		return err
	}
	for i, k := range d.Keys {
		same, err := t.identical(f, k, key)
		if err != nil {
			return err
		}
		if !same {
			_, kt := k.(*TensorV)
			_, keyT := key.(*TensorV)
			if !kt && !keyT {
				if same, err = t.equal(f, k, key); err != nil {
					return err
				}
			}
		}
		if same {
			d.Vals[i] = val
			return nil
		}
	}
	d.Keys = append(d.Keys, key)
	d.Vals = append(d.Vals, val)
	return nil
}

func (t *Tracer) checkHashable(f *frame, key Value) error {
	switch key.(type) {
	case *ListV, *DictV, *SetV:
		return f.unsupported("", "unhashable type: %s", key.Describe())
	}
	return nil
}

func (t *Tracer) setAdd(f *frame, s *SetV, v Value) error {
	v, err := t.realize(f, v)
	if err != nil {
		return err
	}
	if err := t.checkHashable(f, v); err != nil {
		return err
	}
	for _, it := range s.Items {
		same, err := t.identical(f, it, v)
		if err != nil {
			return err
		}
		if !same {
			if _, isT := v.(*TensorV); !isT {
				if same, err = t.equal(f, it, v); err != nil {
					return err
				}
			}
		}
		if same {
			return nil
		}
	}
	s.Items = append(s.Items, v)
	return nil
}

// iter is iter(v) for iterables whose items are known while tracing: an iterator is its own
// iterator; containers are listed when the iteration starts.
func (t *Tracer) iter(f *frame, v Value) (*IterV, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	if it, ok := v.(*IterV); ok {
		return it, nil
	}
	if it := t.containerIter(f, v); it != nil {
		return it, nil
	}
	if r, handled, err := t.callDunder(f, v, "__iter__", nil); handled {
		if err != nil {
			return nil, err
		}
		it, ok := r.(*IterV)
		if !ok {
			// __iter__ returning a container's iterator, or self with a __next__.
			if _, self := r.(*ObjectV); self || r == v {
				return nil, f.unsupported("", "iterating over %s, an iterator class with __next__", v.Describe())
			}
			return t.iter(f, r)
		}
		return it, nil
	}
	items, err := t.unpack(f, v)
	if err != nil {
		return nil, err
	}
	return &IterV{Items: items}, nil
}

// containerIter iterates over a mutable container as CPython's iterators do: a list's reads
// the list as it is at each step (items appended in the loop are reached), a dict's and a
// deque's raise RuntimeError when the container changes size (a deque: any mutation) while
// iterating. nil for other values.
func (t *Tracer) containerIter(f *frame, v Value) *IterV {
	switch x := v.(type) {
	case *ListV:
		i := 0
		return lazyIter(0, false, func() (Value, bool, error) {
			if i >= len(x.Items) {
				return nil, false, nil
			}
			i++
			return x.Items[i-1], true, nil
		})
	case *DequeV:
		i, state := 0, x.state
		return lazyIter(0, false, func() (Value, bool, error) {
			if x.state != state {
				return nil, false, t.pyRaise(f, "RuntimeError", "deque mutated during iteration")
			}
			if i >= len(x.Items) {
				return nil, false, nil
			}
			i++
			return x.Items[i-1], true, nil
		})
	case *DictV:
		keys := append([]Value(nil), x.Keys...)
		i := 0
		return lazyIter(0, false, func() (Value, bool, error) {
			if len(x.Keys) != len(keys) {
				return nil, false, t.pyRaise(f, "RuntimeError", "dictionary changed size during iteration")
			}
			if i >= len(keys) {
				return nil, false, nil
			}
			if x.Keys[i] != keys[i] {
				return nil, false, f.unsupported("", "a dict whose keys change while it is iterated")
			}
			i++
			return keys[i-1], true, nil
		})
	}
	return nil
}

// iters is iter() of each value; infinite reports whether all of them are infinite.
func (t *Tracer) iters(f *frame, vs []Value) (its []*IterV, infinite bool, err error) {
	infinite = true
	for _, v := range vs {
		it, err := t.iter(f, v)
		if err != nil {
			return nil, false, err
		}
		its = append(its, it)
		infinite = infinite && it.Infinite
	}
	return its, infinite, nil
}

// lazyIter is an iterator whose items more produces on demand.
func lazyIter(class py.Obj, infinite bool, more func() (Value, bool, error)) *IterV {
	return &IterV{more: more, Class: class, Infinite: infinite}
}

// drain lists the rest of an iterator's items.
func (t *Tracer) drain(f *frame, it *IterV) ([]Value, error) {
	if it.Infinite {
		return nil, f.unsupported("bound it with itertools.islice or zip", "listing an infinite iterator")
	}
	var out []Value
	for {
		v, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		if out = append(out, v); len(out) > maxDrain {
			return nil, f.unsupported("", "an iterator of more than %d items", maxDrain)
		}
	}
}

// unpack lists the items of an iterable.
func (t *Tracer) unpack(f *frame, v Value) ([]Value, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *TupleV:
		return append([]Value(nil), x.Items...), nil
	case *ListV:
		return append([]Value(nil), x.Items...), nil
	case *DictV:
		return append([]Value(nil), x.Keys...), nil
	case *SetV:
		return append([]Value(nil), x.Items...), nil
	case *DequeV:
		return append([]Value(nil), x.Items...), nil
	case *IterV:
		return t.drain(f, x)
	case *RangeV:
		n := x.Len()
		if n > 1<<20 {
			return nil, f.unsupported("", "iterating over a range of %d items", n)
		}
		out := make([]Value, 0, n)
		for i := int64(0); i < n; i++ {
			out = append(out, intV(x.Start+i*x.Step))
		}
		return out, nil
	case *ConstV:
		if x.Kind == py.KStr {
			var out []Value
			for _, r := range x.S {
				out = append(out, strV(string(r)))
			}
			return out, nil
		}
	case *TensorV:
		return t.unbindTensor(f, x)
	case *ObjectV, *ObjV:
		if o, ok := x.(*ObjV); ok && o.Kind == py.KNNModule {
			return t.iterModule(f, o)
		}
		if _, handled, _ := t.findDunder(f, x, "__iter__"); handled {
			it, err := t.iter(f, x)
			if err != nil {
				return nil, err
			}
			return t.drain(f, it)
		}
		if o, ok := x.(*ObjectV); ok && o.Dict != nil {
			return append([]Value(nil), o.Dict.Keys...), nil
		}
	}
	return nil, f.unsupported("", "iterating over %s", v.Describe())
}

// length is len(v).
func (t *Tracer) length(f *frame, v Value) (int, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case *TupleV:
		return len(x.Items), nil
	case *ListV:
		return len(x.Items), nil
	case *DictV:
		return len(x.Keys), nil
	case *SetV:
		return len(x.Items), nil
	case *RangeV:
		return int(x.Len()), nil
	case *ConstV:
		if x.Kind == py.KStr {
			return len([]rune(x.S)), nil
		}
	case *TensorV:
		if len(x.Meta.Shape) == 0 {
			return 0, f.unsupported("", "len() of a 0-d tensor")
		}
		return int(staticSize(f, x.Meta, 0)), nil
	case *DequeV:
		return len(x.Items), nil
	case *ObjV:
		if x.Kind == py.KNNModule {
			if items, err := t.iterModule(f, x); err == nil {
				return len(items), nil
			}
			// a module class with a __len__ of its own (transformers' Cache, an nn.Module)
			if fn, ok, err := t.typeDunder(f, t.api.TypeOf(x.Obj), "__len__"); err != nil || ok {
				if err != nil {
					return 0, err
				}
				return t.lenVia(f, fn, x)
			}
		}
		if n, handled, err := t.lenDunder(f, x); handled {
			return n, err
		}
		if v, ok, err := t.liveDictDunder(f, x, "__len__"); ok {
			if err != nil {
				return 0, err
			}
			return int(v.(*ConstV).I), nil
		}
		if x.Source == nil && t.api.TypeOf(x.Obj) == t.env.Known("types.MappingProxyType") {
			// A read-only view read from a constant of the trace (a folded inspect.Signature's
			// parameters): its length is a constant too.
			if n, err := t.api.Len(x.Obj); err == nil {
				return n, nil
			}
		}
	case *ObjectV:
		if n, handled, err := t.lenDunder(f, x); handled {
			return n, err
		}
		if x.Dict != nil {
			return len(x.Dict.Keys), nil
		}
	}
	return 0, f.unsupported("", "len() of %s", v.Describe())
}

// format implements FORMAT_VALUE for constants.
func (t *Tracer) format(f *frame, v Value, conv string, spec Value) (Value, error) {
	if _, ok := v.(*TensorV); ok {
		return nil, f.unsupported("format the tensor outside the compiled function", "formatting a tensor as a string")
	}
	if conv != "" {
		r, err := t.foldPython(f, "builtins."+conv, v)
		if err != nil {
			return nil, err
		}
		v = r
	}
	if c, ok := v.(*ConstV); ok && c.Kind == py.KStr {
		if s, ok := spec.(*ConstV); ok && s.S == "" {
			return c, nil
		}
	}
	return t.foldPython(f, "builtins.format", v, spec)
}
