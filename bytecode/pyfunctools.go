package bytecode

import (
	"ptgo/bytecode/py"
)

// functools: partial objects are PartialV (made here, or live ones read from outside), reduce
// folds with the interpreter's own calls, wraps/update_wrapper copy the metadata onto a
// function made while tracing, lru_cache'd helpers run their wrapped function (the cache
// changes no result of a pure function, as in Dynamo).

func fnPartial(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) < 1 {
		return nil, f.unsupported("eager raises TypeError", "type 'partial' takes at least one argument")
	}
	fn, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if !isFunctionLike(fn) {
		if _, ok := fn.(*ObjectV); !ok {
			return nil, f.unsupported("eager raises TypeError", "the first argument of partial must be callable, got %s", fn.Describe())
		}
	}
	p := &PartialV{Func: fn, Args: append([]Value(nil), args[1:]...), Kw: append([]kwArg(nil), kw...)}
	if inner, ok := fn.(*PartialV); ok && inner.Source == nil {
		// partial(partial(f, a), b) is partial(f, a, b), as CPython flattens it.
		p.Func = inner.Func
		p.Args = append(append([]Value(nil), inner.Args...), p.Args...)
		p.Kw = mergeKw(inner.Kw, p.Kw)
	}
	return p, nil
}

// mergeKw is {**a, **b} for keyword arguments.
func mergeKw(a, b []kwArg) []kwArg {
	out := append([]kwArg(nil), a...)
	for _, k := range b {
		replaced := false
		for i := range out {
			if out[i].Name == k.Name {
				out[i].Val, replaced = k.Val, true
			}
		}
		if !replaced {
			out = append(out, k)
		}
	}
	return out
}

// callPartial is p(*args, **kw).
func (t *Tracer) callPartial(f *frame, p *PartialV, args []Value, kw []kwArg) (Value, error) {
	return t.call(f, p.Func, append(append([]Value(nil), p.Args...), args...), mergeKw(p.Kw, kw))
}

// partialAttr reads func, args and keywords of a partial.
func (t *Tracer) partialAttr(f *frame, p *PartialV, name string) (Value, error) {
	switch name {
	case "func":
		return p.Func, nil
	case "args":
		return &TupleV{Items: append([]Value(nil), p.Args...)}, nil
	case "keywords":
		d := &DictV{}
		for _, k := range p.Kw {
			d.Keys = append(d.Keys, strV(k.Name))
			d.Vals = append(d.Vals, k.Val)
		}
		return d, nil
	}
	return nil, f.unsupported("", "attribute %q of functools.partial", name)
}

// wrapPartial makes the value of a live functools.partial read from src: its function and
// arguments are read lazily from its (read-only) attributes; the object is guarded by identity.
func (t *Tracer) wrapPartial(f *frame, o py.Obj, src Source) (Value, error) {
	api := t.api
	p := &PartialV{Source: src}
	child := func(name string) Source {
		if src == nil {
			return nil
		}
		return &AttrSource{Base: src, Attr: name}
	}
	fn, err := api.GetAttr(o, "func")
	if err != nil {
		return nil, err
	}
	p.Func = t.lazyOrLive(f, fn, child("func"))
	args, err := api.GetAttr(o, "args")
	if err != nil {
		return nil, err
	}
	n, _ := api.Len(args)
	for i := 0; i < n; i++ {
		a, err := api.Index(args, i)
		if err != nil {
			return nil, err
		}
		var s Source
		if src != nil {
			s = &IndexSource{Base: child("args"), Index: i}
		}
		p.Args = append(p.Args, t.lazyOrLive(f, a, s))
	}
	kws, err := api.GetAttr(o, "keywords")
	if err != nil {
		return nil, err
	}
	keys, vals := api.DictItems(kws)
	for i, k := range keys {
		name, err := api.Str(k)
		if err != nil {
			return nil, f.unsupported("", "a partial with a keyword that is not a str")
		}
		var s Source
		if src != nil {
			s = &DictItemSource{Base: child("keywords"), Key: name}
		}
		p.Kw = append(p.Kw, kwArg{name, t.lazyOrLive(f, vals[i], s)})
	}
	if src != nil {
		t.guards.ID(src, o, "functools.partial of "+t.shortRepr(fn))
		t.guards.Len(child("keywords"), len(keys))
	}
	return p, nil
}

// lazyOrLive is a lazy value when src is known, else the live object's value.
func (t *Tracer) lazyOrLive(f *frame, o py.Obj, src Source) Value {
	if src != nil {
		return t.lazy(o, src)
	}
	return &LazyV{Obj: o, Source: nil}
}

func fnReduce(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) < 2 || len(args) > 3 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "reduce() takes 2 or 3 positional arguments")
	}
	it, err := t.iter(f, args[1])
	if err != nil {
		return nil, err
	}
	var acc Value
	if len(args) == 3 {
		acc = args[2]
	} else {
		v, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, f.unsupported("eager raises TypeError", "reduce() of empty iterable with no initial value")
		}
		acc = v
	}
	for {
		v, ok, err := it.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return acc, nil
		}
		if acc, err = t.call(f, args[0], []Value{acc, v}, nil); err != nil {
			return nil, err
		}
	}
}

// wrapperAssignments are functools.WRAPPER_ASSIGNMENTS.
var wrapperAssignments = []string{"__module__", "__name__", "__qualname__", "__doc__", "__annotations__"}

// fnUpdateWrapper is functools.update_wrapper(wrapper, wrapped) for a wrapper made while
// tracing: the wrapped function's name, qualname, module, doc and __dict__ are copied, and
// __wrapped__ set.
func fnUpdateWrapper(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	var wrapper, wrapped Value
	if len(args) > 0 {
		wrapper = args[0]
	}
	if len(args) > 1 {
		wrapped = args[1]
	}
	for _, k := range kw {
		switch k.Name {
		case "wrapper":
			wrapper = k.Val
		case "wrapped":
			wrapped = k.Val
		case "assigned", "updated":
			return nil, f.unsupported("", "functools.update_wrapper with %s=", k.Name)
		default:
			return nil, f.unsupported("eager raises TypeError", "update_wrapper() got an unexpected keyword argument %q", k.Name)
		}
	}
	if wrapper == nil || wrapped == nil {
		return nil, f.unsupported("eager raises TypeError", "update_wrapper() missing arguments")
	}
	w, err := t.realize(f, wrapper)
	if err != nil {
		return nil, err
	}
	fn, ok := w.(*FuncV)
	if !ok || fn.Obj != 0 {
		return nil, f.unsupported("apply functools.wraps outside the compiled function", "functools.update_wrapper on %s", w.Describe())
	}
	for _, name := range wrapperAssignments {
		has, err := t.hasAttr(f, wrapped, name)
		if err != nil {
			return nil, err
		}
		if !has {
			continue
		}
		v, err := t.getAttr(f, wrapped, name)
		if err != nil {
			return nil, err
		}
		if err := t.setFuncAttr(f, fn, name, v); err != nil {
			return nil, err
		}
	}
	src, err := t.realize(f, wrapped)
	if err != nil {
		return nil, err
	}
	if inner, ok := src.(*FuncV); ok {
		for i, n := range inner.AttrNames {
			if err := t.setFuncAttr(f, fn, n, inner.AttrVals[i]); err != nil {
				return nil, err
			}
		}
	}
	if err := t.setFuncAttr(f, fn, "__wrapped__", wrapped); err != nil {
		return nil, err
	}
	return fn, nil
}

func fnWraps(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 {
		return nil, f.unsupported("", "functools.wraps with %d positional arguments", len(args))
	}
	uw, err := t.wrapLive(f, t.env.Known("functools.update_wrapper"), nil)
	if err != nil {
		return nil, err
	}
	return &PartialV{Func: uw, Kw: append([]kwArg{{"wrapped", args[0]}}, kw...)}, nil
}

// fnLRUCache is functools.lru_cache(maxsize)(fn) or lru_cache(fn) while tracing: the function
// itself (a cache made inside the frame lives for one call).
func fnLRUCache(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) == 1 {
		a, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		if isFunctionLike(a) {
			return a, nil
		}
	}
	return &builtinFnV{name: "functools.lru_cache decorator", fn: func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) != 1 || len(kw) > 0 {
			return nil, f.unsupported("eager raises TypeError", "the lru_cache decorator takes one function")
		}
		return args[0], nil
	}}, nil
}

func fnCache(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	return fnLRUCache(t, f, args, kw)
}

// setFuncAttr is fn.name = v for a function made while tracing.
func (t *Tracer) setFuncAttr(f *frame, fn *FuncV, name string, v Value) error {
	if fn.Obj != 0 {
		return t.sideEffect(f, "attribute assignment "+name+" on the function "+fn.QualName)
	}
	switch name {
	case "__name__", "__qualname__":
		r, err := t.realize(f, v)
		if err != nil {
			return err
		}
		c, ok := r.(*ConstV)
		if !ok || c.Kind != py.KStr {
			return f.unsupported("eager raises TypeError", "%s must be set to a string object", name)
		}
		if name == "__name__" {
			fn.Name = c.S
		} else {
			fn.QualName = c.S
		}
		return nil
	case "__code__", "__defaults__", "__kwdefaults__", "__closure__", "__globals__", "__dict__":
		return f.unsupported("", "assigning %s of a function made while tracing", name)
	}
	for i, n := range fn.AttrNames {
		if n == name {
			fn.AttrVals[i] = v
			return nil
		}
	}
	fn.AttrNames = append(fn.AttrNames, name)
	fn.AttrVals = append(fn.AttrVals, v)
	return nil
}

// funcAttr reads an attribute of a function made while tracing.
func (t *Tracer) funcAttr(f *frame, fn *FuncV, name string) (Value, bool, error) {
	for i, n := range fn.AttrNames {
		if n == name {
			return fn.AttrVals[i], true, nil
		}
	}
	switch name {
	case "__module__":
		m, err := t.api.GetItem(fn.Globals, t.api.NewStr("__name__"))
		if err != nil {
			return noneV, true, nil
		}
		v, err := t.constFromObj(m)
		return v, true, err
	case "__doc__":
		ci, err := t.env.code(fn.Code)
		if err != nil {
			return nil, true, err
		}
		if len(ci.consts) > 0 && t.api.Kind(ci.consts[0]) == py.KStr {
			v, err := t.constFromObj(ci.consts[0])
			return v, true, err
		}
		return noneV, true, nil
	case "__annotations__", "__dict__":
		d := &DictV{}
		if name == "__dict__" {
			for i, n := range fn.AttrNames {
				d.Keys = append(d.Keys, strV(n))
				d.Vals = append(d.Vals, fn.AttrVals[i])
			}
		}
		return d, true, nil
	case "__defaults__":
		if fn.Defaults == nil {
			return noneV, true, nil
		}
		return &TupleV{Items: fn.Defaults}, true, nil
	case "__kwdefaults__":
		if fn.KwDefaults == nil {
			return noneV, true, nil
		}
		return fn.KwDefaults, true, nil
	}
	return nil, false, nil
}

// builtinFnV is a callable implemented by the interpreter (the decorator functools.lru_cache
// returns); it has no Python value.
type builtinFnV struct {
	name string
	fn   specialFn
}

func (b *builtinFnV) Describe() string { return b.name }
