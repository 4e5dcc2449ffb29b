package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
)

// Instances of Python classes created while tracing (ObjectV): a user's helper class, a
// dataclass, a torch.distributions object, an nn.Module built inside forward. The class's own
// Python code runs (its __init__, __setattr__, properties, methods, dunders) on an object whose
// attributes live in the trace, as Dynamo's user-defined object variables do; the object is
// rebuilt only if it escapes (codegen's rebuild). Objects of classes whose instances ptgo cannot
// model (C base types, custom __new__ or __getattribute__, metaclasses) are refused by
// constructible with the reason.

// pyTpflagsHeaptype is Py_TPFLAGS_HEAPTYPE: the class was made by a class statement.
const pyTpflagsHeaptype = 1 << 9

// constructible says why instances of cls cannot be created while tracing ("" when they can).
func (t *Tracer) constructible(cls py.Obj) string {
	api := t.api
	meta := api.TypeOf(cls)
	if meta != t.env.Known("builtins.type") && meta != t.env.Known("abc.ABCMeta") {
		return "its metaclass is " + t.qualName(meta)
	}
	if meta == t.env.Known("abc.ABCMeta") {
		if am, err := api.GetAttr(cls, "__abstractmethods__"); err == nil {
			if n, _ := api.Len(am); n > 0 {
				return "it is an abstract class (eager raises TypeError)"
			}
		}
	}
	mro, err := api.GetAttr(cls, "__mro__")
	if err != nil {
		return "it has no __mro__"
	}
	n, _ := api.Len(mro)
	object := t.env.Known("builtins.object")
	for i := 0; i < n; i++ {
		base, _ := api.Index(mro, i)
		if base == object || t.dictBase(base) {
			continue
		}
		flags, err := api.GetAttr(base, "__flags__")
		if err != nil {
			return "its base " + t.qualName(base) + " has no __flags__"
		}
		fl, _ := api.Int(flags)
		if fl&pyTpflagsHeaptype == 0 {
			return "its base class " + t.qualName(base) + " is a builtin type ptgo does not model"
		}
		d, err := api.GetAttr(base, "__dict__")
		if err != nil {
			return "its base " + t.qualName(base) + " has no __dict__"
		}
		for _, name := range []string{"__new__", "__getattribute__"} {
			if _, err := api.GetItem(d, api.NewStr(name)); err == nil {
				return t.qualName(base) + " defines " + name
			}
		}
	}
	return ""
}

// dictBase reports the dict types an ObjectV can derive from (their items live in Dict).
func (t *Tracer) dictBase(c py.Obj) bool {
	return c == t.env.Known("builtins.dict") || c == t.env.Known("collections.OrderedDict")
}

// newObject is cls(*args, **kw) for a class constructible accepts: a new ObjectV whose
// __init__ runs in the trace.
func (t *Tracer) newObject(f *frame, cls py.Obj, args []Value, kw []kwArg) (Value, error) {
	o, err := t.allocObject(cls)
	if err != nil {
		return nil, err
	}
	init, _, owner, found, err := t.api.GetAttrStatic(cls, "__init__")
	if err != nil {
		return nil, err
	}
	switch {
	case found && t.api.Kind(init) == py.KFunction:
		fn, err := t.funcFromObj(f, init, nil)
		if err != nil {
			return nil, err
		}
		r, err := t.inline(f, fn, append([]Value{o}, args...), kw)
		if err != nil {
			return nil, err
		}
		if r, err = t.realize(f, r); err != nil {
			return nil, err
		}
		if !isNone(r) {
			return nil, f.unsupported("eager raises TypeError", "__init__() of %s returned %s, not None", t.qualName(cls), r.Describe())
		}
	case o.Dict != nil && t.dictBase(owner):
		if _, err := t.objectMethod(f, o, "__object_init__", args, kw); err != nil {
			return nil, err
		}
	case len(args) > 0 || len(kw) > 0:
		return nil, f.unsupported("eager raises TypeError", "%s() takes no arguments", t.qualName(cls))
	}
	return o, nil
}

// allocObject is cls.__new__(cls) for a constructible class: an instance without attributes.
func (t *Tracer) allocObject(cls py.Obj) (*ObjectV, error) {
	o := &ObjectV{Class: cls, Attrs: &DictV{}, Module: t.isSubclass(cls, t.env.Known("torch.nn.Module"))}
	if t.isSubclass(cls, t.env.Known("builtins.dict")) {
		o.Dict = &DictV{}
	}
	return o, nil
}

// classAttrSource is where a class attribute is read from for guards: class attributes are
// state (Distribution._validate_args changes with set_default_validate_args).
func (t *Tracer) classAttrSource(cls py.Obj, name string) Source {
	return &AttrSource{Base: &ConstSource{Obj: cls, Desc: t.qualName(cls)}, Attr: name}
}

// isDataDescriptor reports whether a class attribute is a data descriptor (its type defines
// __set__ or __delete__): it wins over the instance dict.
func (t *Tracer) isDataDescriptor(v py.Obj) bool {
	typ := t.api.TypeOf(v)
	for _, name := range []string{"__set__", "__delete__"} {
		if _, _, _, found, _ := t.api.GetAttrStatic(typ, name); found {
			return true
		}
	}
	return false
}

// objectAttr is getattr(o, name) following object.__getattribute__: data descriptors of the
// class, the instance dict, other class attributes, then the class's __getattr__.
func (t *Tracer) objectAttr(f *frame, o *ObjectV, name string) (Value, error) {
	v, found, err := t.objectLookup(f, o, name)
	if err != nil || found {
		return v, err
	}
	if ga, ok, err := t.findDunder(f, o, "__getattr__"); err != nil {
		return nil, err
	} else if ok {
		return t.inline(f, ga, []Value{o, strV(name)}, nil)
	}
	return nil, t.pyRaise(f, "AttributeError", "'%s' object has no attribute '%s'", t.qualName(o.Class), name)
}

// objectLookup is object.__getattribute__ (found=false: AttributeError, __getattr__ next).
func (t *Tracer) objectLookup(f *frame, o *ObjectV, name string) (Value, bool, error) {
	api := t.api
	switch name {
	case "__class__":
		return t.objValue(o.Class, nil), true, nil
	case "__dict__":
		return o.Attrs, true, nil
	}
	raw, _, _, onClass, err := api.GetAttrStatic(o.Class, name)
	if err != nil {
		return nil, false, err
	}
	kind := py.KOther
	if onClass {
		kind = api.Kind(raw)
		switch {
		case kind == py.KProperty:
			return t.propertyGet(f, raw, o)
		case kind == py.KOther && t.isDataDescriptor(raw):
			if t.isMemberDescriptor(raw) {
				break // a __slots__ entry: stored with the other attributes
			}
			v, err := t.descriptorGet(f, raw, o, name)
			return v, err == nil, err
		}
	}
	if v, ok, err := t.dictGet(f, o.Attrs, strV(name)); err != nil || ok {
		return v, ok, err
	}
	if !onClass {
		return nil, false, nil
	}
	switch kind {
	case py.KFunction:
		fn, err := t.funcFromObj(f, raw, nil)
		if err != nil {
			return nil, false, err
		}
		return &BoundV{Self: o, Fn: fn}, true, nil
	case py.KClassMethod:
		inner, err := api.GetAttr(raw, "__func__")
		if err != nil {
			return nil, false, err
		}
		fn, err := t.wrapLive(f, inner, nil)
		if err != nil {
			return nil, false, err
		}
		return &BoundV{Self: t.objValue(o.Class, nil), Fn: fn}, true, nil
	case py.KStaticMethod:
		inner, err := api.GetAttr(raw, "__func__")
		if err != nil {
			return nil, false, err
		}
		v, err := t.wrapLive(f, inner, nil)
		return v, err == nil, err
	case py.KMethodDescriptor, py.KBuiltin:
		// A C method of a base type (dict.keys, object.__setattr__), called by name.
		return &BoundV{Self: o, Name: name}, true, nil
	case py.KOther:
		if t.isMemberDescriptor(raw) {
			return nil, false, nil // an unset __slots__ entry: AttributeError
		}
		if get, ok, err := t.typeDunder(f, api.TypeOf(raw), "__get__"); err != nil {
			return nil, false, err
		} else if ok {
			// A Python non-data descriptor (functools.cached_property, lazy_property). Like
			// methods, descriptors are read from the class unguarded (getattr(cls, name) would
			// run their __get__, not read them).
			r, err := t.inline(f, get, []Value{t.objValue(raw, nil), o, t.objValue(o.Class, nil)}, nil)
			return r, err == nil, err
		}
	}
	if _, _, _, isDesc, _ := api.GetAttrStatic(api.TypeOf(raw), "__get__"); isDesc {
		v, err := t.wrapLive(f, raw, nil)
		return v, err == nil, err
	}
	return t.lazy(raw, t.classAttrSource(o.Class, name)), true, nil
}

func (t *Tracer) isMemberDescriptor(v py.Obj) bool {
	return t.api.TypeOf(v) == t.env.Known("types.MemberDescriptorType")
}

// propertyGet runs a property's getter on self.
func (t *Tracer) propertyGet(f *frame, prop py.Obj, self Value) (Value, bool, error) {
	v, err := t.callProperty(f, prop, self)
	return v, err == nil, err
}

// descriptorGet runs a Python data descriptor's __get__ (C ones other than slots are refused).
func (t *Tracer) descriptorGet(f *frame, desc py.Obj, o *ObjectV, name string) (Value, error) {
	get, ok, err := t.typeDunder(f, t.api.TypeOf(desc), "__get__")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, f.unsupported("", "attribute %s of %s, a %s", name, t.qualName(o.Class), t.typeName(desc))
	}
	return t.inline(f, get, []Value{t.objValue(desc, nil), o, t.objValue(o.Class, nil)}, nil)
}

// typeDunder finds a Python function name on a class (its MRO).
func (t *Tracer) typeDunder(f *frame, cls py.Obj, name string) (*FuncV, bool, error) {
	fn, onType, _, found, err := t.api.GetAttrStatic(cls, name)
	if err != nil || !found || !onType || t.api.Kind(fn) != py.KFunction {
		return nil, false, err
	}
	fv, err := t.funcFromObj(f, fn, nil)
	if err != nil {
		return nil, false, err
	}
	return fv, true, nil
}

// findDunder finds a special method the class of v defines in Python (instances made while
// tracing and live objects other than classes and modules of Python code).
func (t *Tracer) findDunder(f *frame, v Value, name string) (*FuncV, bool, error) {
	switch x := v.(type) {
	case *ObjectV:
		return t.typeDunder(f, x.Class, name)
	case *ObjV:
		switch x.Kind {
		case py.KType, py.KModule, py.KBuiltin, py.KMethodDescriptor, py.KFunction, py.KDType, py.KDevice, py.KNNModule:
			// Modules from outside go through the container protocol of attrs.go (iterModule).
			return nil, false, nil
		}
		return t.typeDunder(f, t.api.TypeOf(x.Obj), name)
	}
	return nil, false, nil
}

// callDunder calls the Python special method name of v's class with v first (handled=false when
// the class defines none in Python).
func (t *Tracer) callDunder(f *frame, v Value, name string, args []Value) (Value, bool, error) {
	fn, ok, err := t.findDunder(f, v, name)
	if err != nil || !ok {
		return nil, ok, err
	}
	r, err := t.inline(f, fn, append([]Value{v}, args...), nil)
	return r, true, err
}

// lenDunder is len(v) through the class's __len__.
func (t *Tracer) lenDunder(f *frame, v Value) (int, bool, error) {
	fn, ok, err := t.findDunder(f, v, "__len__")
	if err != nil || !ok {
		return 0, ok, err
	}
	n, err := t.lenVia(f, fn, v)
	return n, true, err
}

// lenVia is len(v) through the Python __len__ fn, with CPython's check of its result.
func (t *Tracer) lenVia(f *frame, fn *FuncV, v Value) (int, error) {
	r, err := t.inline(f, fn, []Value{v}, nil)
	if err != nil {
		return 0, err
	}
	n, err := intArg(t, f, r, "__len__() result")
	if err == nil && n < 0 {
		return 0, f.unsupported("eager raises ValueError", "__len__() should return >= 0")
	}
	return int(n), err
}

// objectHasAttr is hasattr(o, name): the lookup, an nn.Module's tables (Module.__getattr__).
func (t *Tracer) objectHasAttr(f *frame, o *ObjectV, name string) (bool, error) {
	if _, found, err := t.objectLookup(f, o, name); err != nil || found {
		return found, err
	}
	if o.Module {
		for _, table := range []string{"_parameters", "_buffers", "_modules"} {
			if d, ok, _ := t.dictGet(f, o.Attrs, strV(table)); ok {
				if dv, isDict := d.(*DictV); isDict {
					if _, ok, err := t.dictGet(f, dv, strV(name)); err != nil || ok {
						return ok, err
					}
				}
			}
		}
		return false, nil
	}
	if ga, ok, err := t.findDunder(f, o, "__getattr__"); err != nil {
		return false, err
	} else if ok {
		// hasattr is getattr catching AttributeError.
		_, err := t.inline(f, ga, []Value{o, strV(name)}, nil)
		if r, isRaise := err.(*raised); isRaise && t.isSubclass(r.exc.Class, t.env.Known("builtins.AttributeError")) {
			return false, nil
		}
		return err == nil, err
	}
	return false, nil
}

// setObjectAttr is o.name = v: a data descriptor of the class (a property's setter), the
// class's __setattr__ (nn.Module's included), or the instance dict.
func (t *Tracer) setObjectAttr(f *frame, o *ObjectV, name string, v Value) error {
	api := t.api
	if raw, _, _, onClass, err := api.GetAttrStatic(o.Class, name); err != nil {
		return err
	} else if onClass && api.Kind(raw) == py.KProperty {
		set, err := api.GetAttr(raw, "fset")
		if err != nil {
			return err
		}
		if api.Kind(set) != py.KFunction {
			return f.unsupported("eager raises AttributeError", "can't set attribute %s of %s", name, t.qualName(o.Class))
		}
		fn, err := t.funcFromObj(f, set, nil)
		if err != nil {
			return err
		}
		_, err = t.inline(f, fn, []Value{o, v}, nil)
		return err
	}
	if fn, ok, err := t.typeDunder(f, o.Class, "__setattr__"); err != nil {
		return err
	} else if ok {
		_, err := t.inline(f, fn, []Value{o, strV(name), v}, nil)
		return err
	}
	return t.rawSetAttr(f, o, name, v)
}

// rawSetAttr is object.__setattr__(o, name, v).
func (t *Tracer) rawSetAttr(f *frame, o *ObjectV, name string, v Value) error {
	if raw, _, _, onClass, err := t.api.GetAttrStatic(o.Class, name); err != nil {
		return err
	} else if onClass && t.api.Kind(raw) == py.KOther && t.isDataDescriptor(raw) && !t.isMemberDescriptor(raw) {
		return f.unsupported("", "setting %s of %s through a %s", name, t.qualName(o.Class), t.typeName(raw))
	}
	return t.dictSet(f, o.Attrs, strV(name), v)
}

// delObjectAttr is del o.name.
func (t *Tracer) delObjectAttr(f *frame, o *ObjectV, name string) error {
	if fn, ok, err := t.typeDunder(f, o.Class, "__delattr__"); err != nil {
		return err
	} else if ok {
		_, err := t.inline(f, fn, []Value{o, strV(name)}, nil)
		return err
	}
	return t.rawDelAttr(f, o, name)
}

func (t *Tracer) rawDelAttr(f *frame, o *ObjectV, name string) error {
	for i, k := range o.Attrs.Keys {
		if c, ok := k.(*ConstV); ok && c.Kind == py.KStr && c.S == name {
			o.Attrs.Keys = append(o.Attrs.Keys[:i:i], o.Attrs.Keys[i+1:]...)
			o.Attrs.Vals = append(o.Attrs.Vals[:i:i], o.Attrs.Vals[i+1:]...)
			return nil
		}
	}
	return t.pyRaise(f, "AttributeError", "'%s' object has no attribute '%s'", t.qualName(o.Class), name)
}

// objectMethod calls a C method of an ObjectV's base type by name: object's __setattr__ and
// friends (super().__setattr__ in an __init__), the dict methods of a dict subclass.
func (t *Tracer) objectMethod(f *frame, o *ObjectV, name string, args []Value, kw []kwArg) (Value, error) {
	need := func(n int) error {
		if len(args) != n || len(kw) > 0 {
			return f.unsupported("eager raises TypeError", "%s() takes %d arguments", name, n)
		}
		return nil
	}
	switch name {
	case "__setattr__":
		if err := need(2); err != nil {
			return nil, err
		}
		s, err := attrName(t, f, args[0])
		if err != nil {
			return nil, err
		}
		return noneV, t.rawSetAttr(f, o, s, args[1])
	case "__delattr__":
		if err := need(1); err != nil {
			return nil, err
		}
		s, err := attrName(t, f, args[0])
		if err != nil {
			return nil, err
		}
		return noneV, t.rawDelAttr(f, o, s)
	case "__getattribute__":
		if err := need(1); err != nil {
			return nil, err
		}
		s, err := attrName(t, f, args[0])
		if err != nil {
			return nil, err
		}
		v, found, err := t.objectLookup(f, o, s)
		if err == nil && !found {
			err = t.pyRaise(f, "AttributeError", "'%s' object has no attribute '%s'", t.qualName(o.Class), s)
		}
		return v, err
	case "__object_init__", "__init__":
		if o.Dict == nil {
			return noneV, nil // object.__init__; extra arguments are __new__'s business
		}
		_, err := t.dictMethod(f, o.Dict, "update", args, kw)
		return noneV, err
	case "__eq__", "__ne__":
		if err := need(1); err != nil {
			return nil, err
		}
		if o.Dict == nil {
			other, err := t.realize(f, args[0])
			if err != nil {
				return nil, err
			}
			if other != Value(o) {
				return t.objValue(t.env.Known("builtins.NotImplemented"), nil), nil
			}
			return boolV(name == "__eq__"), nil
		}
	}
	if o.Dict != nil {
		switch name {
		case "__setitem__":
			if err := need(2); err != nil {
				return nil, err
			}
			return noneV, t.dictSet(f, o.Dict, args[0], args[1])
		case "__delitem__":
			if err := need(1); err != nil {
				return nil, err
			}
			return noneV, t.delItem(f, o.Dict, args[0])
		case "__len__":
			return intV(int64(len(o.Dict.Keys))), nil
		case "__iter__":
			return &IterV{Items: append([]Value(nil), o.Dict.Keys...)}, nil
		}
		return t.dictMethod(f, o.Dict, name, args, kw)
	}
	return nil, f.unsupported("", "method %s of %s", name, t.qualName(o.Class))
}

// callObject is o(*args, **kw): an nn.Module's forward, or the class's __call__.
func (t *Tracer) callObject(f *frame, o *ObjectV, args []Value, kw []kwArg) (Value, error) {
	if o.Module {
		return t.callNewModule(f, o, args, kw)
	}
	if fn, ok, err := t.typeDunder(f, o.Class, "__call__"); err != nil {
		return nil, err
	} else if ok {
		return t.inline(f, fn, append([]Value{o}, args...), kw)
	}
	return nil, f.unsupported("eager raises TypeError", "'%s' object is not callable", t.qualName(o.Class))
}

// callNewModule calls a module created while tracing: Module.__call__ without hooks is forward.
func (t *Tracer) callNewModule(f *frame, m *ObjectV, args []Value, kw []kwArg) (Value, error) {
	for _, hooks := range []string{"_forward_hooks", "_forward_pre_hooks", "_backward_hooks"} {
		d, ok, err := t.dictGet(f, m.Attrs, strV(hooks))
		if err != nil {
			return nil, err
		}
		if dv, isDict := d.(*DictV); ok && (!isDict || len(dv.Keys) > 0) {
			return nil, f.unsupported("register hooks on modules made in __init__", "a module created while tracing has %s", hooks[1:])
		}
	}
	if err := t.checkGlobalHooks(f); err != nil {
		return nil, err
	}
	fwd, err := t.objectAttr(f, m, "forward")
	if err != nil {
		return nil, err
	}
	return t.call(f, fwd, args, kw)
}

// newInstance is cls(*args, **kw) for classes callClass does not model otherwise.
func (t *Tracer) newInstance(f *frame, cls py.Obj, args []Value, kw []kwArg) (Value, error) {
	if t.isSubclass(cls, t.env.Known("torch.Tensor")) {
		if t.isSubclass(cls, t.env.Known("torch.nn.Parameter")) {
			return nil, f.unsupported("create modules and their parameters in __init__, not in forward",
				"creating an nn.Parameter while tracing (a module made in forward has parameters)")
		}
		return nil, f.unsupported("", "creating an instance of the tensor class %s", t.qualName(cls))
	}
	if why := t.constructible(cls); why != "" {
		return nil, f.unsupported("create the object outside the compiled function and pass it in",
			"creating an instance of %s: %s", t.qualName(cls), why)
	}
	return t.newObject(f, cls, args, kw)
}

func (o *ObjectV) String() string { return fmt.Sprintf("<%s>", o.Describe()) }
