package bytecode

import (
	"math"
	"sort"

	"ptgo/bytecode/py"
)

// builtinHandlers evaluates Python builtins on symbolic values, by name. A builtin missing here
// stops capture with "builtin X()".
var builtinHandlers map[string]func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error)

func init() {
	builtinHandlers = map[string]func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error){
		"len": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) != 1 {
				return nil, f.unsupported("", "len() takes exactly one argument")
			}
			n, err := t.length(f, args[0])
			return intV(int64(n)), err
		},
		"isinstance": biIsInstance,
		"issubclass": biIsSubclass,
		"hasattr":    biHasAttr,
		"getattr":    biGetAttr,
		"range":      biRange,
		"enumerate":  biEnumerate,
		"zip":        biZip,
		"reversed": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			items, err := t.unpack(f, args[0])
			if err != nil {
				return nil, err
			}
			for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
				items[i], items[j] = items[j], items[i]
			}
			return &IterV{Items: items}, nil
		},
		"iter": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) != 1 {
				return nil, f.unsupported("", "iter() with a sentinel")
			}
			return t.iter(f, args[0])
		},
		"next": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			it, err := t.realize(f, args[0])
			if err != nil {
				return nil, err
			}
			iv, ok := it.(*IterV)
			if !ok {
				return nil, f.unsupported("", "next() of %s", it.Describe())
			}
			if iv.Pos >= len(iv.Items) {
				if len(args) > 1 {
					return args[1], nil
				}
				return nil, f.unsupported("eager raises StopIteration", "next() of an exhausted iterator")
			}
			iv.Pos++
			return iv.Items[iv.Pos-1], nil
		},
		"tuple": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) == 0 {
				return &TupleV{}, nil
			}
			items, err := t.unpack(f, args[0])
			return &TupleV{Items: items}, err
		},
		"list": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) == 0 {
				return &ListV{}, nil
			}
			items, err := t.unpack(f, args[0])
			return &ListV{Items: items}, err
		},
		"set": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			s := &SetV{}
			if len(args) > 0 {
				items, err := t.unpack(f, args[0])
				if err != nil {
					return nil, err
				}
				for _, it := range items {
					if err := t.setAdd(f, s, it); err != nil {
						return nil, err
					}
				}
			}
			return s, nil
		},
		"dict": biDict,
		"min": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return biMinMax(t, f, args, kw, "lt")
		},
		"max": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return biMinMax(t, f, args, kw, "gt")
		},
		"sum":       biSum,
		"all":       func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return biAllAny(t, f, args, true) },
		"any":       func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return biAllAny(t, f, args, false) },
		"abs":       biAbs,
		"int":       biNumberCast("int"),
		"float":     biNumberCast("float"),
		"bool":      biBool,
		"str":       biPure("str"),
		"repr":      biPure("repr"),
		"format":    biPure("format"),
		"round":     biRound,
		"divmod":    biPure("divmod"),
		"pow":       biPure("pow"),
		"chr":       biPure("chr"),
		"ord":       biPure("ord"),
		"hash":      biPure("hash"),
		"callable":  biCallable,
		"type":      biType,
		"super":     biSuper,
		"sorted":    biSorted,
		"map":       biMap,
		"filter":    biFilter,
		"slice":     func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return biSlice(t, f, args) },
		"frozenset": biPure("frozenset"),
		"object": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return nil, f.unsupported("", "creating object()")
		},
	}
}

// pyTypeOf is type(v) as a live class.
func (t *Tracer) pyTypeOf(f *frame, v Value) (py.Obj, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return 0, err
	}
	k := t.env.Known
	switch x := v.(type) {
	case *ConstV:
		o, err := t.toObj(f, x)
		if err != nil {
			return 0, err
		}
		return t.api.TypeOf(o), nil
	case *TensorV:
		if x.Class != 0 {
			return x.Class, nil
		}
		return k("torch.Tensor"), nil
	case *TupleV:
		if x.Size {
			return k("torch.Size"), nil
		}
		if x.Class != 0 {
			return x.Class, nil
		}
		return k("builtins.tuple"), nil
	case *ListV:
		return k("builtins.list"), nil
	case *DictV:
		if x.Class != 0 {
			return x.Class, nil
		}
		return k("builtins.dict"), nil
	case *SetV:
		if x.Frozen {
			return k("builtins.frozenset"), nil
		}
		return k("builtins.set"), nil
	case *RangeV:
		return k("builtins.range"), nil
	case *SliceV:
		return k("builtins.slice"), nil
	case *ObjV:
		return t.api.TypeOf(x.Obj), nil
	case *FuncV:
		return k("types.FunctionType"), nil
	case *BoundV:
		if x.Fn != nil {
			return k("types.MethodType"), nil
		}
		return k("types.BuiltinMethodType"), nil
	case *GradModeV:
		if x.Enabled {
			return k("torch.enable_grad"), nil
		}
		return k("torch.no_grad"), nil
	case *IterV:
		return k("collections.abc.Iterator"), nil
	}
	return 0, f.unsupported("", "type() of %s", v.Describe())
}

func biIsInstance(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 {
		return nil, f.unsupported("", "isinstance() takes 2 arguments")
	}
	typ, err := t.pyTypeOf(f, args[0])
	if err != nil {
		return nil, err
	}
	cls, err := t.realize(f, args[1])
	if err != nil {
		return nil, err
	}
	clsObj, err := t.toObj(f, cls)
	if err != nil {
		return nil, err
	}
	r, err := t.api.Call(t.env.Known("builtins.issubclass"), []py.Obj{typ, clsObj}, nil)
	if err != nil {
		return nil, f.unsupported("", "isinstance() raised %v", err)
	}
	// An nn.Parameter from get_attr is both a Parameter and a Tensor; for inputs the class is
	// the live one. issubclass gives the answer isinstance would.
	return t.constFromObj(r)
}

func biIsSubclass(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 {
		return nil, f.unsupported("", "issubclass() takes 2 arguments")
	}
	return t.foldPython(f, "builtins.issubclass", args[0], args[1])
}

func attrName(t *Tracer, f *frame, v Value) (string, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return "", err
	}
	c, ok := v.(*ConstV)
	if !ok || c.Kind != py.KStr {
		return "", f.unsupported("", "attribute name must be a constant str, got %s", v.Describe())
	}
	return c.S, nil
}

func biGetAttr(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, f.unsupported("", "getattr() takes 2 or 3 arguments")
	}
	name, err := attrName(t, f, args[1])
	if err != nil {
		return nil, err
	}
	if len(args) == 3 {
		has, err := t.hasAttr(f, args[0], name)
		if err != nil {
			return nil, err
		}
		if !has {
			return args[2], nil
		}
	}
	return t.getAttr(f, args[0], name)
}

func biHasAttr(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 {
		return nil, f.unsupported("", "hasattr() takes 2 arguments")
	}
	name, err := attrName(t, f, args[1])
	if err != nil {
		return nil, err
	}
	has, err := t.hasAttr(f, args[0], name)
	return boolV(has), err
}

// hasAttr answers hasattr() for values whose attributes are known.
func (t *Tracer) hasAttr(f *frame, v Value, name string) (bool, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return false, err
	}
	switch x := v.(type) {
	case *TensorV:
		return tensorHasAttr(name), nil
	case *ObjV:
		if x.Kind == py.KNNModule {
			if _, _, _, found, _ := t.api.GetAttrStatic(x.Obj, name); found {
				return true, nil
			}
			for _, table := range []string{"_parameters", "_buffers", "_modules"} {
				d, err := t.api.GetAttr(x.Obj, table)
				if err != nil {
					continue
				}
				if _, err := t.api.GetItem(d, t.api.NewStr(name)); err == nil {
					return true, nil
				}
			}
			return false, nil
		}
		if _, _, _, found, _ := t.api.GetAttrStatic(x.Obj, name); found {
			return true, nil
		}
		if x.Source != nil && x.Kind != py.KModule && x.Kind != py.KType {
			return false, f.unsupported("", "hasattr(%s, %q) on an object with dynamic attributes", readableName(x.Source), name)
		}
		_, err := t.api.GetAttr(x.Obj, name)
		return err == nil, nil
	}
	o, err := t.toObj(f, v)
	if err != nil {
		return false, err
	}
	_, err = t.api.GetAttr(o, name)
	return err == nil, nil
}

func intArg(t *Tracer, f *frame, v Value, what string) (int64, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return 0, err
	}
	c, ok := v.(*ConstV)
	if !ok || !c.IsIntLike() {
		return 0, f.unsupported("", "%s must be an int known while tracing, got %s", what, v.Describe())
	}
	return c.I, nil
}

func biRange(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	r := &RangeV{Step: 1}
	var err error
	switch len(args) {
	case 1:
		r.Stop, err = intArg(t, f, args[0], "range() argument")
	case 2, 3:
		if r.Start, err = intArg(t, f, args[0], "range() argument"); err != nil {
			return nil, err
		}
		if r.Stop, err = intArg(t, f, args[1], "range() argument"); err != nil {
			return nil, err
		}
		if len(args) == 3 {
			r.Step, err = intArg(t, f, args[2], "range() argument")
			if err == nil && r.Step == 0 {
				return nil, f.unsupported("eager raises ValueError", "range() arg 3 must not be zero")
			}
		}
	default:
		return nil, f.unsupported("", "range() takes 1 to 3 arguments")
	}
	return r, err
}

func biEnumerate(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	items, err := t.unpack(f, args[0])
	if err != nil {
		return nil, err
	}
	start := int64(0)
	if len(args) > 1 {
		if start, err = intArg(t, f, args[1], "enumerate start"); err != nil {
			return nil, err
		}
	}
	for _, k := range kw {
		if k.Name == "start" {
			if start, err = intArg(t, f, k.Val, "enumerate start"); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[i] = &TupleV{Items: []Value{intV(start + int64(i)), it}}
	}
	return &IterV{Items: out}, nil
}

func biZip(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	var lists [][]Value
	n := math.MaxInt
	for _, a := range args {
		items, err := t.unpack(f, a)
		if err != nil {
			return nil, err
		}
		lists = append(lists, items)
		if len(items) < n {
			n = len(items)
		}
	}
	if len(lists) == 0 {
		n = 0
	}
	out := make([]Value, n)
	for i := 0; i < n; i++ {
		tup := make([]Value, len(lists))
		for j := range lists {
			tup[j] = lists[j][i]
		}
		out[i] = &TupleV{Items: tup}
	}
	return &IterV{Items: out}, nil
}

func biDict(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	d := &DictV{}
	if len(args) > 0 {
		a, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		if src, ok := a.(*DictV); ok {
			for i := range src.Keys {
				if err := t.dictSet(f, d, src.Keys[i], src.Vals[i]); err != nil {
					return nil, err
				}
			}
		} else {
			pairs, err := t.unpack(f, a)
			if err != nil {
				return nil, err
			}
			for _, p := range pairs {
				kv, err := t.unpack(f, p)
				if err != nil || len(kv) != 2 {
					return nil, f.unsupported("", "dict() from a sequence that is not of pairs")
				}
				if err := t.dictSet(f, d, kv[0], kv[1]); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, k := range kw {
		if err := t.dictSet(f, d, strV(k.Name), k.Val); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func biMinMax(t *Tracer, f *frame, args []Value, kw []kwArg, better string) (Value, error) {
	items := args
	if len(args) == 1 {
		var err error
		if items, err = t.unpack(f, args[0]); err != nil {
			return nil, err
		}
	}
	var def Value
	for _, k := range kw {
		switch k.Name {
		case "default":
			def = k.Val
		default:
			return nil, f.unsupported("", "min/max with %s=", k.Name)
		}
	}
	if len(items) == 0 {
		if def != nil {
			return def, nil
		}
		return nil, f.unsupported("eager raises ValueError", "min()/max() of an empty sequence")
	}
	best, err := t.realize(f, items[0])
	if err != nil {
		return nil, err
	}
	for _, it := range items[1:] {
		it, err := t.realize(f, it)
		if err != nil {
			return nil, err
		}
		if _, isT := it.(*TensorV); isT {
			return nil, f.unsupported("use torch.maximum/torch.minimum", "min()/max() of tensors compares their values")
		}
		r, err := t.compare(f, better, it, best)
		if err != nil {
			return nil, err
		}
		b, err := t.truthy(f, r)
		if err != nil {
			return nil, err
		}
		if b {
			best = it
		}
	}
	if _, isT := best.(*TensorV); isT && len(items) > 1 {
		return nil, f.unsupported("use torch.maximum/torch.minimum", "min()/max() of tensors compares their values")
	}
	return best, nil
}

func biSum(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	items, err := t.unpack(f, args[0])
	if err != nil {
		return nil, err
	}
	var acc Value = intV(0)
	if len(args) > 1 {
		acc = args[1]
	}
	for _, k := range kw {
		if k.Name == "start" {
			acc = k.Val
		}
	}
	for _, it := range items {
		if acc, err = t.binaryOp(f, 0, acc, it); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

func biAllAny(t *Tracer, f *frame, args []Value, all bool) (Value, error) {
	items, err := t.unpack(f, args[0])
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		b, err := t.truthy(f, it)
		if err != nil {
			return nil, err
		}
		if b != all {
			return boolV(!all), nil
		}
	}
	return boolV(all), nil
}

func biAbs(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	v, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if tv, ok := v.(*TensorV); ok {
		return t.tensorOperator(f, "abs", false, tv)
	}
	if c, ok := v.(*ConstV); ok {
		if c.IsIntLike() && c.I != math.MinInt64 {
			return intV(abs64(c.I)), nil
		}
		if c.Kind == py.KFloat {
			return floatV(math.Abs(c.F)), nil
		}
	}
	return t.foldPython(f, "builtins.abs", v)
}

func biNumberCast(name string) func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) == 0 {
			if name == "int" {
				return intV(0), nil
			}
			return floatV(0), nil
		}
		v, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*TensorV); ok {
			return nil, f.unsupported("keep it a tensor, or compute the number outside the compiled function",
				"%s() of a tensor reads its value (data-dependent)", name)
		}
		return t.foldPython(f, "builtins."+name, append([]Value{v}, args[1:]...)...)
	}
}

func biBool(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) == 0 {
		return falseV, nil
	}
	b, err := t.truthy(f, args[0])
	return boolV(b), err
}

func biRound(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	v, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if tv, ok := v.(*TensorV); ok {
		return t.torchCall(f, "torch.round", 0, []Value{tv}, kw)
	}
	return t.foldPython(f, "builtins.round", append([]Value{v}, args[1:]...)...)
}

// biPure folds a pure builtin over constant arguments by calling it.
func biPure(name string) func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		for _, a := range args {
			if r, err := t.realize(f, a); err == nil {
				if _, ok := r.(*TensorV); ok {
					return nil, f.unsupported("", "%s() of a tensor reads its value (data-dependent)", name)
				}
			}
		}
		return t.callLive(f, t.env.Known("builtins."+name), args, kw)
	}
}

func biCallable(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	v, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *FuncV, *BoundV:
		return trueV, nil
	case *TensorV, *TupleV, *ListV, *DictV, *SetV, *RangeV, *SliceV:
		return falseV, nil
	case *ObjV:
		r, err := t.api.Call(t.env.Known("builtins.callable"), []py.Obj{x.Obj}, nil)
		if err != nil {
			return nil, err
		}
		return t.constFromObj(r)
	}
	return t.foldPython(f, "builtins.callable", v)
}

func biType(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 {
		return nil, f.unsupported("", "type() with 3 arguments")
	}
	typ, err := t.pyTypeOf(f, args[0])
	if err != nil {
		return nil, err
	}
	return t.objValue(typ, nil), nil
}

// biSuper handles zero-argument super() in a method (it reads __class__ and the first argument)
// and super(cls, obj).
func biSuper(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) == 2 {
		cls, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		c, ok := cls.(*ObjV)
		if !ok || c.Kind != py.KType {
			return nil, f.unsupported("", "super() with %s", cls.Describe())
		}
		return &SuperV{Class: c.Obj, Self: args[1]}, nil
	}
	if len(args) != 0 {
		return nil, f.unsupported("", "super() with one argument")
	}
	// Zero-argument form: __class__ cell and the first local of the calling frame.
	ci := f.ci
	idx := indexOf(ci.lpNames, "__class__")
	if idx < 0 || ci.code.ArgCount == 0 {
		return nil, f.unsupported("", "super(): no arguments")
	}
	cell, ok := f.locals[idx].(*CellV)
	if !ok || cell.Contents == nil {
		return nil, f.unsupported("", "super(): __class__ cell not found")
	}
	cls, err := t.realize(f, cell.Contents)
	if err != nil {
		return nil, err
	}
	c, ok := cls.(*ObjV)
	if !ok {
		return nil, f.unsupported("", "super(): __class__ is %s", cls.Describe())
	}
	self := f.locals[0]
	if sc, isCell := self.(*CellV); isCell {
		self = sc.Contents
	}
	return &SuperV{Class: c.Obj, Self: self}, nil
}

func biSorted(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	items, err := t.unpack(f, args[0])
	if err != nil {
		return nil, err
	}
	if len(kw) > 0 {
		return t.callLive(f, t.env.Known("builtins.sorted"), args, kw)
	}
	var sortErr error
	if err := t.realizeAll(f, items); err != nil {
		return nil, err
	}
	sort.SliceStable(items, func(i, j int) bool {
		r, err := t.compare(f, "lt", items[i], items[j])
		if err != nil {
			sortErr = err
			return false
		}
		b, err := t.truthy(f, r)
		if err != nil {
			sortErr = err
		}
		return b
	})
	return &ListV{Items: items}, sortErr
}

func biMap(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) < 2 {
		return nil, f.unsupported("", "map() needs a function and an iterable")
	}
	z, err := biZip(t, f, args[1:], nil)
	if err != nil {
		return nil, err
	}
	var out []Value
	for _, tup := range z.(*IterV).Items {
		r, err := t.call(f, args[0], tup.(*TupleV).Items, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return &IterV{Items: out}, nil
}

func biFilter(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	items, err := t.unpack(f, args[1])
	if err != nil {
		return nil, err
	}
	fn, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	var out []Value
	for _, it := range items {
		keep := it
		if c, ok := fn.(*ConstV); !ok || !c.IsNone() {
			if keep, err = t.call(f, fn, []Value{it}, nil); err != nil {
				return nil, err
			}
		}
		b, err := t.truthy(f, keep)
		if err != nil {
			return nil, err
		}
		if b {
			out = append(out, it)
		}
	}
	return &IterV{Items: out}, nil
}

func biSlice(t *Tracer, f *frame, args []Value) (Value, error) {
	s := &SliceV{Start: noneV, Stop: noneV, Step: noneV}
	switch len(args) {
	case 1:
		s.Stop = args[0]
	case 2:
		s.Start, s.Stop = args[0], args[1]
	case 3:
		s.Start, s.Stop, s.Step = args[0], args[1], args[2]
	default:
		return nil, f.unsupported("", "slice() takes 1 to 3 arguments")
	}
	for _, p := range []*Value{&s.Start, &s.Stop, &s.Step} {
		r, err := t.realize(f, *p)
		if err != nil {
			return nil, err
		}
		*p = r
	}
	return s, nil
}
