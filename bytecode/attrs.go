package bytecode

import (
	"slices"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Attribute access, subscripts, nn.Module internals, context managers and imports.

// getAttr is getattr(obj, name).
func (t *Tracer) getAttr(f *frame, obj Value, name string) (Value, error) {
	obj, err := t.realize(f, obj)
	if err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *TensorV:
		return t.tensorAttr(f, o, name)
	case *ObjV:
		if v, ok := t.pendingAttr(o.Obj, name); ok {
			return v, nil
		}
		if name == "__dict__" && o.Source != nil && (o.Kind == py.KNNModule || o.Kind == py.KOther) {
			return t.liveDict(f, o)
		}
		if v, ok, err := t.liveDictAttr(f, o, name); err != nil || ok {
			return v, err
		}
		switch o.Kind {
		case py.KNNModule:
			return t.moduleAttr(f, o, name)
		case py.KModule:
			return t.pyModuleAttr(f, o, name)
		}
		return t.objAttr(f, o, name)
	case *TupleV, *ListV, *DictV, *SetV, *ConstV, *DequeV:
		if c, ok := obj.(*ConstV); ok && c.Kind == py.KOther {
			break
		}
		if tv, ok := obj.(*TupleV); ok && tv.Class != 0 {
			if v, found := t.structField(tv, name); found {
				return v, nil
			}
			if tv.Named {
				if v, found, err := t.namedTupleClassAttr(f, tv, name); found || err != nil {
					return v, err
				}
			}
		}
		if d, ok := obj.(*DictV); ok && name == "default_factory" && d.Factory != nil {
			return d.Factory, nil
		}
		if d, ok := obj.(*DequeV); ok && name == "maxlen" {
			if d.MaxLen < 0 {
				return noneV, nil
			}
			return intV(d.MaxLen), nil
		}
		if name == "shape" || name == "dtype" {
			break
		}
		return &BoundV{Self: obj, Name: name}, nil
	case *ObjectV:
		return t.objectAttr(f, o, name)
	case *ExcV:
		return t.excAttr(f, o, name)
	case *PartialV:
		return t.partialAttr(f, o, name)
	case *IterV:
		if name == "__next__" || name == "__iter__" {
			return &BoundV{Self: obj, Name: name}, nil
		}
	case *FuncV:
		if o.Obj == 0 {
			if v, found, err := t.funcAttr(f, o, name); found || err != nil {
				return v, err
			}
		}
		switch name {
		case "__name__":
			return strV(o.Name), nil
		case "__qualname__":
			return strV(o.QualName), nil
		case "__code__":
			return &ConstV{Kind: py.KCode, obj: o.Code}, nil
		case "__globals__":
			return t.objValue(o.Globals, nil), nil
		}
		if o.Obj != 0 {
			v, err := t.api.GetAttr(o.Obj, name)
			if err != nil {
				return nil, f.unsupported("", "attribute %s of function %s: %v", name, o.QualName, err)
			}
			return t.wrapLive(f, v, childSource(o.Source, name))
		}
	case *BoundV:
		switch name {
		case "__self__":
			return o.Self, nil
		case "__func__":
			if o.Fn != nil {
				return o.Fn, nil
			}
		case "__name__":
			if fn, ok := o.Fn.(*FuncV); ok {
				return strV(fn.Name), nil
			}
			return strV(o.Name), nil
		}
	case *GradModeV:
		switch {
		case name == "clone" || name == "__enter__" || name == "__exit__":
			return &BoundV{Self: o, Name: name}, nil
		case name == "__class__" && o.Class != 0:
			// torch 2's decorators call ctx_factory = self.clone, which is self.__class__()
			// (set_grad_enabled: self.__class__(self.mode)).
			return t.objValue(o.Class, nil), nil
		case name == "mode" && o.Class != 0 && o.Class == t.env.Known("torch.set_grad_enabled"):
			return boolV(o.Enabled), nil
		}
	case *SuperV:
		return t.superAttr(f, o, name)
	case *SliceV:
		switch name {
		case "start":
			return o.Start, nil
		case "stop":
			return o.Stop, nil
		case "step":
			return o.Step, nil
		}
	case *RangeV:
		switch name {
		case "start":
			return intV(o.Start), nil
		case "stop":
			return intV(o.Stop), nil
		case "step":
			return intV(o.Step), nil
		}
	}
	return nil, f.unsupported("", "attribute %q of %s", name, obj.Describe())
}

func childSource(s Source, attr string) Source {
	if s == nil {
		return nil
	}
	return &AttrSource{Base: s, Attr: attr}
}

// pyModuleAttr reads an attribute of a Python module (torch.relu, math.pi, F.gelu).
func (t *Tracer) pyModuleAttr(f *frame, m *ObjV, name string) (Value, error) {
	v, err := t.api.GetAttr(m.Obj, name)
	if err != nil {
		return nil, t.raisedFromCall(f, "module attribute "+name, err)
	}
	// A library module's attributes (torch.relu, math.pi) are constants: not guarded (A16).
	if m.Source == nil || t.env.IsLibraryModule(m.Obj) {
		return t.wrapLive(f, v, nil)
	}
	return t.lazy(v, &AttrSource{Base: m.Source, Attr: name}), nil
}

// objAttr reads an attribute of an arbitrary object following Python's lookup: data descriptors
// on the type, the instance dict, then other class attributes (functions become bound methods,
// properties run their getter).
func (t *Tracer) objAttr(f *frame, o *ObjV, name string) (Value, error) {
	api := t.api
	if o.Kind == py.KType {
		return t.classAttr(f, o, name)
	}
	if o.Kind == py.KDType || o.Kind == py.KDevice {
		v, err := api.GetAttr(o.Obj, name)
		if err != nil {
			return nil, f.unsupported("", "attribute %s of %s: %v", name, t.shortRepr(o.Obj), err)
		}
		return t.wrapLive(f, v, nil)
	}
	typ := api.TypeOf(o.Obj)
	cls, onType, _, found, err := api.GetAttrStatic(typ, name)
	if err != nil {
		return nil, err
	}
	if found && onType {
		switch api.Kind(cls) {
		case py.KProperty:
			return t.callProperty(f, cls, o)
		case py.KFunction:
			if _, inInst, _, instFound, _ := api.GetAttrStatic(o.Obj, name); !(instFound && !inInst) {
				if o.Source != nil {
					t.guards.NotInDict(o.Source, name)
				}
				t.guardClassMember(typ, name, cls)
				fn, err := t.funcFromObj(f, cls, nil)
				if err != nil {
					return nil, err
				}
				return &BoundV{Self: o, Fn: fn}, nil
			}
		case py.KClassMethod:
			inner, err := api.GetAttr(cls, "__func__")
			if err != nil {
				return nil, err
			}
			fn, err := t.wrapLive(f, inner, nil)
			if err != nil {
				return nil, err
			}
			return &BoundV{Self: t.objValue(typ, nil), Fn: fn}, nil
		case py.KStaticMethod:
			inner, err := api.GetAttr(cls, "__func__")
			if err != nil {
				return nil, err
			}
			return t.wrapLive(f, inner, nil)
		}
	}
	if found && onType && api.Kind(cls) == py.KMethodDescriptor && t.liveDictMethodDesc(typ, name) == cls {
		if _, inInst, _, instFound, _ := api.GetAttrStatic(o.Obj, name); !(instFound && !inInst) {
			// dict's own method of a live dict subclass (Hugging Face's ModelOutput.keys()):
			// liveDictMethod reads the object's items.
			if o.Source != nil {
				t.guards.NotInDict(o.Source, name)
			}
			return &BoundV{Self: o, Name: name, Desc: cls}, nil
		}
	}
	v, err := api.GetAttr(o.Obj, name)
	if err != nil {
		return nil, f.unsupported("", "attribute %s of %s: %v", name, t.typeName(o.Obj), err)
	}
	if inst, inInst, _, instFound, _ := api.GetAttrStatic(o.Obj, name); instFound && !inInst && inst == v {
		return t.lazy(v, childSource(o.Source, name)), nil
	}
	if found && onType && api.Kind(cls) != py.KFunction && api.Kind(cls) != py.KOther {
		// A plain class attribute (a constant of the class): read through the class, so a new
		// value set on the class, or one set on the instance later, recompiles.
		if o.Source != nil {
			t.guards.NotInDict(o.Source, name)
		}
		return t.classMember(f, typ, name, v)
	}
	if api.Kind(v) == py.KBuiltin || api.Kind(v) == py.KMethodDescriptor {
		// A C method bound to the object (e.g. a dict's .get): call it live, by name.
		return &BoundV{Self: o, Name: name}, nil
	}
	return t.lazy(v, childSource(o.Source, name)), nil
}

// classMemberSource is where guards re-read attribute name of class cls: cls.name, one source
// per class (every instance shares its guards); nil for library classes (torch's, the standard
// library's: A16, they do not rebind their attributes).
func (t *Tracer) classMemberSource(cls py.Obj, name string) Source {
	if t.isLibraryClass(cls) {
		return nil
	}
	return &AttrSource{Base: &ConstSource{Obj: cls, Desc: "class " + t.qualName(cls)}, Attr: name}
}

// classMember wraps v = getattr(cls, name), a constant or object of a class, guarded through
// the class (classMemberSource).
func (t *Tracer) classMember(f *frame, cls py.Obj, name string, v py.Obj) (Value, error) {
	src := t.classMemberSource(cls, name)
	if src == nil {
		return t.wrapLive(f, v, nil)
	}
	return t.realize(f, t.lazy(v, src))
}

// guardClassMember guards that a method (or other object) found on a class stays that object:
// a class attribute replaced after compiling (MyModel.forward = other) recompiles.
func (t *Tracer) guardClassMember(cls py.Obj, name string, v py.Obj) {
	if src := t.classMemberSource(cls, name); src != nil {
		t.guards.ID(src, v, t.shortRepr(v))
	}
}

// isLibraryClass reports whether cls is defined by library code (its __module__ is a library
// module, or a built-in type).
func (t *Tracer) isLibraryClass(cls py.Obj) bool {
	m, err := t.api.GetAttr(cls, "__module__")
	if err != nil || t.api.Kind(m) != py.KStr {
		return false
	}
	name, _ := t.api.Str(m)
	if name == "builtins" {
		return true
	}
	mods, ok := t.env.TryKnown("sys.modules")
	if !ok {
		return false
	}
	mod, err := t.api.GetItem(mods, m)
	if err != nil {
		return false
	}
	return t.env.IsLibraryModule(mod)
}

// classAttr reads an attribute of a class (a class constant, a method, a static method).
func (t *Tracer) classAttr(f *frame, o *ObjV, name string) (Value, error) {
	api := t.api
	raw, _, _, found, err := api.GetAttrStatic(o.Obj, name)
	if err != nil {
		return nil, err
	}
	if found {
		switch api.Kind(raw) {
		case py.KFunction:
			t.guardClassMember(o.Obj, name, raw)
			return t.wrapLive(f, raw, nil)
		case py.KStaticMethod:
			inner, err := api.GetAttr(raw, "__func__")
			if err != nil {
				return nil, err
			}
			t.guardClassMember(o.Obj, name, inner)
			return t.wrapLive(f, inner, nil)
		case py.KClassMethod:
			inner, err := api.GetAttr(raw, "__func__")
			if err != nil {
				return nil, err
			}
			fn, err := t.wrapLive(f, inner, nil)
			if err != nil {
				return nil, err
			}
			return &BoundV{Self: o, Fn: fn}, nil
		}
	}
	v, err := api.GetAttr(o.Obj, name)
	if err != nil {
		return nil, f.unsupported("", "attribute %s of class %s: %v", name, t.qualName(o.Obj), err)
	}
	return t.classMember(f, o.Obj, name, v)
}

func (t *Tracer) callProperty(f *frame, prop py.Obj, self Value) (Value, error) {
	getter, err := t.api.GetAttr(prop, "fget")
	if err != nil {
		return nil, err
	}
	if t.api.Kind(getter) != py.KFunction {
		return nil, f.unsupported("", "a property whose getter is not a Python function")
	}
	fn, err := t.funcFromObj(f, getter, nil)
	if err != nil {
		return nil, err
	}
	return t.inline(f, fn, []Value{self}, nil)
}

func (t *Tracer) superAttr(f *frame, s *SuperV, name string) (Value, error) {
	api := t.api
	selfType, err := t.pyTypeOf(f, s.Self)
	if err != nil {
		return nil, err
	}
	if c, isClass := s.Self.(*ObjV); isClass && c.Kind == py.KType {
		// super(cls, subclass) in a classmethod: the MRO is the subclass's own.
		selfType = c.Obj
	}
	mro, err := api.GetAttr(selfType, "__mro__")
	if err != nil {
		return nil, err
	}
	n, _ := api.Len(mro)
	start := -1
	for i := 0; i < n; i++ {
		c, _ := api.Index(mro, i)
		if c == s.Class {
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, f.unsupported("", "super(): class not in the MRO")
	}
	for i := start; i < n; i++ {
		c, _ := api.Index(mro, i)
		v, onType, _, found, err := api.GetAttrStatic(c, name)
		if err != nil {
			return nil, err
		}
		if !found || !onType {
			continue
		}
		// GetAttrStatic on a class looks through its MRO; only accept what c itself defines.
		d, err := api.GetAttr(c, "__dict__")
		if err != nil {
			return nil, err
		}
		if _, err := api.GetItem(d, api.NewStr(name)); err != nil {
			continue
		}
		switch api.Kind(v) {
		case py.KFunction:
			fn, err := t.funcFromObj(f, v, nil)
			if err != nil {
				return nil, err
			}
			return &BoundV{Self: s.Self, Fn: fn}, nil
		case py.KProperty:
			return t.callProperty(f, v, s.Self)
		case py.KMethodDescriptor, py.KBuiltin:
			if name == "__init__" {
				return &BoundV{Self: s.Self, Name: "__object_init__"}, nil
			}
			return &BoundV{Self: s.Self, Name: name, Desc: v}, nil
		}
		return t.wrapLive(f, v, nil)
	}
	return nil, f.unsupported("", "super().%s not found", name)
}

// ---- nn.Module --------------------------------------------------------------------------------

// modulePath is the dotted name of a module for get_attr targets and messages.
func (t *Tracer) modulePath(m *ObjV) string {
	if p, ok := t.modulePaths[m.Obj]; ok {
		return p
	}
	p := ""
	if m.Source != nil {
		p = placeholderName(m.Source)
	}
	t.modulePaths[m.Obj] = p
	return p
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// moduleAttr reads an attribute of an nn.Module the way Module.__getattr__ does, without running
// it: instance attributes, parameters, buffers and submodules by name, then class attributes.
func (t *Tracer) moduleAttr(f *frame, m *ObjV, name string) (Value, error) {
	api := t.api
	if m.Source == nil {
		return nil, f.unsupported("", "attribute %s of a module created while tracing", name)
	}
	if v, onType, _, found, err := api.GetAttrStatic(m.Obj, name); err != nil {
		return nil, err
	} else if found && !onType {
		src := &AttrSource{Base: m.Source, Attr: name}
		if api.Kind(v) == py.KTensor {
			// A tensor kept as a plain attribute (not a parameter or buffer): a graph input.
			return t.lazy(v, src), nil
		}
		return t.lazy(v, src), nil
	}
	for _, table := range []string{"_parameters", "_buffers", "_modules"} {
		d, err := api.GetAttr(m.Obj, table)
		if err != nil || api.Kind(d) != py.KDict {
			continue
		}
		v, err := api.GetItem(d, api.NewStr(name))
		if err != nil {
			continue
		}
		src := &DictItemSource{Base: &AttrSource{Base: m.Source, Attr: table}, Key: name}
		path := joinPath(t.modulePath(m), name)
		if api.Kind(v) == py.KNone {
			t.guards.ID(src, v, "None")
			return noneV, nil
		}
		switch table {
		case "_modules":
			sub, err := t.wrapLive(f, v, src)
			if err != nil {
				return nil, err
			}
			if so, ok := sub.(*ObjV); ok {
				if _, named := t.modulePaths[so.Obj]; !named {
					t.modulePaths[so.Obj] = path
				}
			}
			return sub, nil
		default:
			if m.Unspec {
				// Another instance of the class may hold other tensors: a graph input.
				return t.tensorInput(f, v, src)
			}
			t.guards.ID(src, v, "the tensor at "+path)
			if _, seen := t.attrSources[path]; !seen {
				t.attrSources[path] = src
			}
			return t.paramAttr(f, v, path, src)
		}
	}
	// Class attributes: methods, properties, constants.
	cls, onType, _, found, err := api.GetAttrStatic(m.Obj, name)
	if err != nil {
		return nil, err
	}
	if found && onType {
		if api.Kind(cls) != py.KProperty {
			// Only a data descriptor wins over the instance dict: the method or constant
			// found on the class holds while no instance attribute shadows it.
			t.guards.NotInDict(m.Source, name)
		}
		typ := api.TypeOf(m.Obj)
		switch api.Kind(cls) {
		case py.KFunction:
			t.guardClassMember(typ, name, cls)
			fn, err := t.funcFromObj(f, cls, nil)
			if err != nil {
				return nil, err
			}
			return &BoundV{Self: m, Fn: fn}, nil
		case py.KProperty:
			t.guardClassMember(typ, name, cls)
			return t.callProperty(f, cls, m)
		case py.KStaticMethod, py.KClassMethod:
			return t.objAttr(f, m, name)
		}
		return t.classMember(f, typ, name, cls)
	}
	return nil, f.userError("AttributeError", "'%s' object has no attribute '%s'", t.typeName(m.Obj), name)
}

// iterModule lists the children of container modules (Sequential, ModuleList, ModuleDict
// iterates keys, ParameterList parameters).
func (t *Tracer) iterModule(f *frame, m *ObjV) ([]Value, error) {
	api := t.api
	typ := api.TypeOf(m.Obj)
	isA := func(path string) bool { return t.isSubclass(typ, t.env.Known(path)) }
	table := ""
	switch {
	case isA("torch.nn.Sequential"), isA("torch.nn.ModuleList"):
		table = "_modules"
	case isA("torch.nn.ModuleDict"):
		d, err := api.GetAttr(m.Obj, "_modules")
		if err != nil {
			return nil, err
		}
		keys, _ := api.DictItems(d)
		out := make([]Value, len(keys))
		for i, k := range keys {
			if out[i], err = t.constFromObj(k); err != nil {
				return nil, err
			}
		}
		t.guards.Len(&AttrSource{Base: m.Source, Attr: "_modules"}, len(keys))
		return out, nil
	case isA("torch.nn.ParameterList"):
		table = "_parameters"
	default:
		return nil, f.unsupported("", "iterating over module %s", t.typeName(m.Obj))
	}
	d, err := api.GetAttr(m.Obj, table)
	if err != nil {
		return nil, err
	}
	keys, _ := api.DictItems(d)
	t.guards.Len(&AttrSource{Base: m.Source, Attr: table}, len(keys))
	out := make([]Value, len(keys))
	for i, k := range keys {
		s, err := api.Str(k)
		if err != nil {
			return nil, err
		}
		if out[i], err = t.moduleAttr(f, m, s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// moduleIndex is module[i] for Sequential/ModuleList and module[key] for ModuleDict.
func (t *Tracer) moduleIndex(f *frame, m *ObjV, idx Value) (Value, error) {
	items, err := t.iterModule(f, m)
	if err != nil {
		return nil, err
	}
	c, ok := idx.(*ConstV)
	if !ok {
		if s, ok := idx.(*SliceV); ok {
			sub, err := t.sliceItems(f, items, s)
			if err != nil {
				return nil, err
			}
			return nil, f.unsupported("index the modules one by one", "slicing a module container (%d modules)", len(sub))
		}
		return nil, f.unsupported("", "indexing a module with %s", idx.Describe())
	}
	if c.Kind == py.KStr {
		return t.moduleAttr(f, m, c.S)
	}
	if !c.IsIntLike() {
		return nil, f.unsupported("", "indexing a module with %s", c.Describe())
	}
	i := c.I
	if i < 0 {
		i += int64(len(items))
	}
	if i < 0 || i >= int64(len(items)) {
		return nil, f.userError("IndexError", "index %d out of range for %d modules", c.I, len(items))
	}
	if _, isKey := items[i].(*ConstV); isKey {
		return nil, f.unsupported("", "integer index into a ModuleDict")
	}
	return items[i], nil
}

// ---- subscripts -------------------------------------------------------------------------------

func (t *Tracer) getItem(f *frame, obj, idx Value) (Value, error) {
	var err error
	if obj, err = t.realize(f, obj); err != nil {
		return nil, err
	}
	if idx, err = t.realize(f, idx); err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *TensorV:
		return t.tensorIndex(f, o, idx)
	case *TupleV:
		return t.seqIndex(f, o.Items, idx, func(items []Value) Value { return &TupleV{Items: items, Size: o.Size} })
	case *ListV:
		return t.seqIndex(f, o.Items, idx, func(items []Value) Value { return &ListV{Items: items} })
	case *DictV:
		v, found, err := t.dictGet(f, o, idx)
		if err != nil {
			return nil, err
		}
		if !found {
			if v, handled, err := t.dictMissing(f, o, idx); handled {
				return v, err
			}
			return nil, t.pyRaiseArgs(f, "KeyError", []Value{idx}, "key %s not in the dict", idx.Describe())
		}
		return v, nil
	case *DequeV:
		i, err := t.dequeIndex(f, o, idx)
		if err != nil {
			return nil, err
		}
		return o.Items[i], nil
	case *ObjectV:
		if v, handled, err := t.callDunder(f, o, "__getitem__", []Value{idx}); handled {
			return v, err
		}
		if o.Dict != nil {
			return t.getItem(f, o.Dict, idx)
		}
	case *RangeV:
		c, ok := idx.(*ConstV)
		if ok && c.IsIntLike() {
			n := o.Len()
			i := c.I
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return intV(o.Start + i*o.Step), nil
			}
		}
	case *ObjV:
		if o.Kind == py.KNNModule {
			return t.moduleIndex(f, o, idx)
		}
		if (t.isTypingConstruct(o.Obj) || t.isGenericClass(o.Obj)) && isConstantTree(idx) {
			return t.foldPython(f, "operator.getitem", o, idx)
		}
		if fn, onType, _, found, _ := t.api.GetAttrStatic(t.api.TypeOf(o.Obj), "__getitem__"); found && onType && t.api.Kind(fn) == py.KFunction {
			fv, err := t.funcFromObj(f, fn, nil)
			if err != nil {
				return nil, err
			}
			return t.inline(f, fv, []Value{o, idx}, nil)
		}
		if v, ok, err := t.liveDictDunder(f, o, "__getitem__", idx); ok {
			return v, err
		}
	case *ConstV:
		if o.Kind == py.KStr || o.Kind == py.KBytes {
			return t.foldPython(f, "operator.getitem", o, idx)
		}
	}
	return nil, f.unsupported("", "subscript of %s with %s", obj.Describe(), idx.Describe())
}

// isTypingConstruct says whether o is one of typing's (or typing_extensions') special forms
// or aliases (List, Optional, Dict[str, int], Union, ...): an object whose class is defined
// there. Subscripting one with constants builds a new alias and has no effect a trace could
// see, so the trace folds it by running it (as Dynamo's TypingVariable does) instead of
// tracing typing's __getitem__: that code reaches helpers which read their caller's frame
// through sys._getframe (typing_extensions 4.12 and later patch typing._check_generic so), a
// graph break in every forward that writes `torch.jit.annotate(List[Tensor], [])`.
func (t *Tracer) isTypingConstruct(o py.Obj) bool {
	return t.fromTypingModule(t.api.TypeOf(o))
}

// fromTypingModule says whether o (a class, a function) is defined in typing or typing_extensions.
func (t *Tracer) fromTypingModule(o py.Obj) bool {
	m, err := t.api.GetAttr(o, "__module__")
	if err != nil {
		return false
	}
	mod, _ := t.api.Str(m)
	return mod == "typing" || mod == "typing_extensions"
}

// isGenericClass says whether o is a class whose subscript builds a generic alias the way the
// builtins and typing do (tuple[float, float], list[Tensor], a typing.Generic subclass): its
// __class_getitem__ is a C method or typing's. Folded like a typing construct (A144).
func (t *Tracer) isGenericClass(o py.Obj) bool {
	if t.api.Kind(o) != py.KType {
		return false
	}
	cg, _, _, found, _ := t.api.GetAttrStatic(o, "__class_getitem__")
	if !found {
		return false
	}
	if k := t.api.Kind(cg); k == py.KBuiltin || k == py.KMethodDescriptor {
		return true
	}
	fn, err := t.api.GetAttr(cg, "__func__")
	return err == nil && t.fromTypingModule(fn)
}

// isConstantTree says whether v is a Python constant, a live object that is no tensor or
// module (a class such as torch.Tensor, a typing alias), or a tuple of these: a value a fold
// may hand to Python without losing anything the trace tracks.
func isConstantTree(v Value) bool {
	switch v := v.(type) {
	case *ConstV:
		return true
	case *ObjV:
		return v.Kind != py.KTensor && v.Kind != py.KNNModule
	case *TupleV:
		for _, it := range v.Items {
			if !isConstantTree(it) {
				return false
			}
		}
		return v.Class == 0
	}
	return false
}

func (t *Tracer) seqIndex(f *frame, items []Value, idx Value, mk func([]Value) Value) (Value, error) {
	switch i := idx.(type) {
	case *ConstV:
		if !i.IsIntLike() {
			return nil, f.unsupported("", "sequence index %s", i.Describe())
		}
		n := int64(len(items))
		k := i.I
		if k < 0 {
			k += n
		}
		if k < 0 || k >= n {
			return nil, t.pyRaise(f, "IndexError", "index %d out of range for length %d", i.I, n)
		}
		return items[k], nil
	case *SliceV:
		sub, err := t.sliceItems(f, items, i)
		if err != nil {
			return nil, err
		}
		return mk(sub), nil
	}
	return nil, f.unsupported("", "sequence index %s", idx.Describe())
}

// sliceItems applies a slice of constants to a list of values, with Python's rules.
func (t *Tracer) sliceItems(f *frame, items []Value, s *SliceV) ([]Value, error) {
	get := func(v Value) (int64, bool, error) {
		if sv, isSym := v.(*SymV); isSym {
			v = specializeSym(f, sv) // a count of Python values
		}
		c, ok := v.(*ConstV)
		if !ok || (!c.IsNone() && !c.IsIntLike()) {
			return 0, false, f.unsupported("", "slice bound %s", v.Describe())
		}
		return c.I, !c.IsNone(), nil
	}
	start, hasStart, err := get(s.Start)
	if err != nil {
		return nil, err
	}
	stop, hasStop, err := get(s.Stop)
	if err != nil {
		return nil, err
	}
	step, hasStep, err := get(s.Step)
	if err != nil {
		return nil, err
	}
	if !hasStep {
		step = 1
	}
	if step == 0 {
		return nil, f.unsupported("eager raises ValueError", "slice step cannot be zero")
	}
	n := int64(len(items))
	norm := func(x int64, has bool, def int64, lo, hi int64) int64 {
		if !has {
			return def
		}
		if x < 0 {
			x += n
			if x < lo {
				x = lo
			}
		} else if x > hi {
			x = hi
		}
		return x
	}
	var out []Value
	if step > 0 {
		a := norm(start, hasStart, 0, 0, n)
		b := norm(stop, hasStop, n, 0, n)
		for i := a; i < b; i += step {
			out = append(out, items[i])
		}
	} else {
		a := norm(start, hasStart, n-1, -1, n-1)
		b := norm(stop, hasStop, -1, -1, n-1)
		for i := a; i > b; i += step {
			out = append(out, items[i])
		}
	}
	return out, nil
}

func (t *Tracer) setItem(f *frame, obj, idx, val Value) error {
	var err error
	if obj, err = t.realize(f, obj); err != nil {
		return err
	}
	if idx, err = t.realize(f, idx); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *TensorV:
		return t.tensorSetItem(f, o, idx, val)
	case *ListV:
		if o.Source != nil {
			t.mutateList(o)
		}
		if s, ok := idx.(*SliceV); ok {
			return t.listSetSlice(f, o, s, val)
		}
		c, ok := idx.(*ConstV)
		if !ok || !c.IsIntLike() {
			return f.unsupported("", "list assignment with index %s", idx.Describe())
		}
		k := c.I
		if k < 0 {
			k += int64(len(o.Items))
		}
		if k < 0 || k >= int64(len(o.Items)) {
			return t.pyRaise(f, "IndexError", "list assignment index out of range")
		}
		o.Items[k] = val
		return nil
	case *DictV:
		if o.Source != nil {
			t.mutateDict(o)
		}
		return t.dictSet(f, o, idx, val)
	case *DequeV:
		i, err := t.dequeIndex(f, o, idx)
		if err != nil {
			return err
		}
		if o.Source != nil {
			t.mutateDeque(o)
		}
		o.Items[i] = val
		return nil
	case *ObjectV:
		if _, handled, err := t.callDunder(f, o, "__setitem__", []Value{idx, val}); handled {
			return err
		}
		if o.Dict != nil {
			return t.dictSet(f, o.Dict, idx, val)
		}
	}
	return t.sideEffect(f, "item assignment on "+obj.Describe())
}

// listSetSlice is l[a:b] = items (any length) or l[a:b:c] = items (the same length).
func (t *Tracer) listSetSlice(f *frame, l *ListV, s *SliceV, val Value) error {
	items, err := t.unpack(f, val)
	if err != nil {
		return err
	}
	n := int64(len(l.Items))
	start, stop, step, err := t.sliceIndices(f, s, n)
	if err != nil {
		return err
	}
	if step == 1 {
		if stop < start {
			stop = start
		}
		out := append(append(append([]Value(nil), l.Items[:start]...), items...), l.Items[stop:]...)
		l.Items = out
		return nil
	}
	idx := sliceRange(start, stop, step)
	if len(idx) != len(items) {
		return f.unsupported("eager raises ValueError", "attempt to assign sequence of size %d to extended slice of size %d", len(items), len(idx))
	}
	for i, k := range idx {
		l.Items[k] = items[i]
	}
	return nil
}

// sliceIndices is slice.indices(n): bounds clamped the way CPython's PySlice_AdjustIndices does.
func (t *Tracer) sliceIndices(f *frame, s *SliceV, n int64) (start, stop, step int64, err error) {
	get := func(v Value) (int64, bool, error) {
		v, err := t.realize(f, v)
		if err != nil {
			return 0, false, err
		}
		if isNone(v) {
			return 0, false, nil
		}
		x, err := intArg(t, f, v, "slice bound")
		return x, true, err
	}
	var hasStart, hasStop, hasStep bool
	if step, hasStep, err = get(s.Step); err != nil {
		return
	}
	if !hasStep {
		step = 1
	}
	if step == 0 {
		err = f.unsupported("eager raises ValueError", "slice step cannot be zero")
		return
	}
	if start, hasStart, err = get(s.Start); err != nil {
		return
	}
	if stop, hasStop, err = get(s.Stop); err != nil {
		return
	}
	adjust := func(x int64, has bool, def int64) int64 {
		if !has {
			return def
		}
		if x < 0 {
			x += n
			if x < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if x >= n {
			if step < 0 {
				return n - 1
			}
			return n
		}
		return x
	}
	if step > 0 {
		start, stop = adjust(start, hasStart, 0), adjust(stop, hasStop, n)
	} else {
		start, stop = adjust(start, hasStart, n-1), adjust(stop, hasStop, -1)
	}
	return start, stop, step, nil
}

// sliceRange lists the indices a normalized slice selects.
func sliceRange(start, stop, step int64) []int64 {
	var out []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		out = append(out, i)
	}
	return out
}

func (t *Tracer) delItem(f *frame, obj, idx Value) error {
	obj, err := t.realize(f, obj)
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *DictV:
		if o.Source != nil {
			t.mutateDict(o)
		}
		{
			for i, k := range o.Keys {
				if eq, err := t.equal(f, k, idx); err == nil && eq {
					o.Keys = append(o.Keys[:i:i], o.Keys[i+1:]...)
					o.Vals = append(o.Vals[:i:i], o.Vals[i+1:]...)
					return nil
				}
			}
			return t.pyRaiseArgs(f, "KeyError", []Value{idx}, "del of a missing key %s", idx.Describe())
		}
	case *ListV:
		if o.Source != nil {
			t.mutateList(o)
		}
		return t.delSeqItem(f, &o.Items, idx)
	case *DequeV:
		if _, isSlice := idx.(*SliceV); isSlice {
			return f.unsupported("eager raises TypeError", "sequence index must be integer, not 'slice'")
		}
		o.state++
		if o.Source != nil {
			t.mutateDeque(o)
		}
		return t.delSeqItem(f, &o.Items, idx)
	case *ObjectV:
		if _, handled, err := t.callDunder(f, o, "__delitem__", []Value{idx}); handled {
			return err
		}
		if o.Dict != nil {
			return t.delItem(f, o.Dict, idx)
		}
	}
	return t.sideEffect(f, "del of an item of "+obj.Describe())
}

// delSeqItem is del items[i] or del items[a:b:c].
func (t *Tracer) delSeqItem(f *frame, items *[]Value, idx Value) error {
	idx, err := t.realize(f, idx)
	if err != nil {
		return err
	}
	n := int64(len(*items))
	if s, ok := idx.(*SliceV); ok {
		start, stop, step, err := t.sliceIndices(f, s, n)
		if err != nil {
			return err
		}
		drop := map[int64]bool{}
		for _, k := range sliceRange(start, stop, step) {
			drop[k] = true
		}
		var out []Value
		for i, it := range *items {
			if !drop[int64(i)] {
				out = append(out, it)
			}
		}
		*items = out
		return nil
	}
	k, err := intArg(t, f, idx, "list index")
	if err != nil {
		return err
	}
	if k < 0 {
		k += n
	}
	if k < 0 || k >= n {
		return t.pyRaise(f, "IndexError", "list assignment index out of range")
	}
	*items = append((*items)[:k:k], (*items)[k+1:]...)
	return nil
}

// setAttr is obj.name = val: allowed on objects created while tracing only.
func (t *Tracer) setAttr(f *frame, obj Value, name string, val Value) error {
	obj, err := t.realize(f, obj)
	if err != nil {
		return err
	}
	switch x := obj.(type) {
	case *ObjectV:
		return t.setObjectAttr(f, x, name, val)
	case *FuncV:
		return t.setFuncAttr(f, x, name, val)
	case *TensorV:
		if name == "grad" {
			return t.setTensorGrad(f, x, val)
		}
	}
	o, ok := obj.(*ObjV)
	if !ok || o.Source == nil {
		return t.sideEffect(f, "attribute assignment "+name+" on "+obj.Describe())
	}
	switch o.Kind {
	case py.KModule, py.KType, py.KBuiltin, py.KMethodDescriptor, py.KDType, py.KDevice:
		return t.sideEffect(f, "assignment to "+readableName(o.Source)+"."+name)
	case py.KNNModule:
		// Parameters, buffers and submodules are registered by Module.__setattr__; assigning
		// them changes what the graph reads.
		for _, table := range []string{"_parameters", "_buffers", "_modules"} {
			if d, err := t.api.GetAttr(o.Obj, table); err == nil {
				if _, err := t.api.GetItem(d, t.api.NewStr(name)); err == nil {
					return t.sideEffect(f, "assignment to the registered "+table[1:len(table)-1]+" "+readableName(o.Source)+"."+name)
				}
			}
		}
		// realizeLazy: a symbolic int or float (self.step += 1) is stored as it is, not
		// specialised
		if v, err := t.realizeLazy(f, val); err == nil {
			if ov, isObj := v.(*ObjV); isObj && ov.Kind == py.KNNModule {
				return t.sideEffect(f, "assigning a module to "+readableName(o.Source)+"."+name)
			}
			if tv, isTensor := v.(*TensorV); isTensor && tv.Class != 0 && tv.Class == t.env.Known("torch.nn.Parameter") {
				return t.sideEffect(f, "assigning a parameter to "+readableName(o.Source)+"."+name)
			}
			val = v
		}
	}
	if fn, onType, _, found, _ := t.api.GetAttrStatic(t.api.TypeOf(o.Obj), "__setattr__"); found && onType &&
		t.api.Kind(fn) == py.KFunction && o.Kind != py.KNNModule {
		return t.sideEffect(f, "assignment to "+readableName(o.Source)+"."+name+" (custom __setattr__)")
	}
	t.writeAttr(o, name, val)
	return nil
}

// setTensorGrad is x.grad = val for a tensor the frame reads (an input, a parameter), as
// Optimizer.zero_grad(set_to_none=True) does: a write replayed after the graph like any
// attribute write, seen by later reads of x.grad in the trace. val is None or a tensor of x's
// sizes, dtype and device; anything else (which eager's setter refuses) runs eagerly.
func (t *Tracer) setTensorGrad(f *frame, x *TensorV, val Value) error {
	src, obj := t.tensorOrigin(x)
	if src == nil {
		return t.sideEffect(f, "assignment to .grad of a tensor the graph computes")
	}
	v, err := t.realize(f, val)
	if err != nil {
		return err
	}
	switch g := v.(type) {
	case *ConstV:
		if g.Kind != py.KNone {
			return f.unsupported("eager raises TypeError", "assigning %s to tensor.grad", g.Describe())
		}
	case *TensorV:
		if g.Meta.DType != x.Meta.DType || g.Meta.Device != x.Meta.Device ||
			!slices.EqualFunc(g.Meta.SymSizes(), x.Meta.SymSizes(), primtorch.SymInt.Equal) {
			return f.unsupported("eager raises RuntimeError", "assigning a gradient of another size, dtype or device to tensor.grad")
		}
	default:
		return f.unsupported("eager raises TypeError", "assigning %s to tensor.grad", v.Describe())
	}
	t.writeAttr(&ObjV{Obj: obj, Kind: t.api.Kind(obj), Source: src}, "grad", v)
	return nil
}

// ---- with -------------------------------------------------------------------------------------

// enterContext runs mgr.__enter__ for the context managers ptgo models (grad mode).
func (t *Tracer) enterContext(f *frame, mgr Value) (Value, error) {
	switch m := mgr.(type) {
	case *GradModeV:
		if m.Applied {
			m.Applied = false
			return noneV, nil
		}
		m.Prev = append(m.Prev, t.gradEnabled)
		t.setGradMode(f, m.Enabled)
		return noneV, nil
	case *NoopCtxV:
		if m.Autocast != nil {
			t.enterAutocast(m.Autocast)
		}
		if m.Enter != nil {
			return m.Enter, nil
		}
		return m, nil
	case *ObjV:
		fn, onType, _, found, _ := t.api.GetAttrStatic(m.Obj, "__enter__")
		if found && onType && t.api.Kind(fn) == py.KFunction {
			return nil, f.unsupported("", "the context manager %s", t.typeName(m.Obj))
		}
	}
	return nil, f.unsupported("torch.no_grad(), torch.enable_grad() and torch.set_grad_enabled() are supported", "the context manager %s", mgr.Describe())
}

// exitContext runs __exit__(None, None, None).
func (t *Tracer) exitContext(f *frame, mgr Value) (Value, error) {
	switch m := mgr.(type) {
	case *GradModeV:
		if len(m.Prev) == 0 {
			return nil, f.unsupported("", "__exit__ of a grad-mode context manager that was not entered")
		}
		prev := m.Prev[len(m.Prev)-1]
		m.Prev = m.Prev[:len(m.Prev)-1]
		t.setGradMode(f, prev)
		return noneV, nil
	case *NoopCtxV:
		if m.Autocast != nil {
			if err := t.exitAutocast(f, m.Autocast); err != nil {
				return nil, err
			}
		}
		return noneV, nil
	}
	return nil, f.unsupported("", "__exit__ of %s", mgr.Describe())
}

// setGradMode changes grad mode in the trace and in the graph (a call the graph runs).
func (t *Tracer) setGradMode(f *frame, enabled bool) {
	if enabled == t.gradEnabled {
		return
	}
	t.gradEnabled = enabled
	t.addCall(f, "torch._C._set_grad_enabled", []fxgraph.Arg{fxgraph.Const{V: enabled}}, nil, nil)
}

// ---- imports ----------------------------------------------------------------------------------

func (t *Tracer) importName(f *frame, name string, fromlist, level Value) (Value, error) {
	fl, err := t.toObj(f, fromlist)
	if err != nil {
		return nil, err
	}
	lv, err := t.toObj(f, level)
	if err != nil {
		return nil, err
	}
	imp := t.env.Known("builtins.__import__")
	m, err := t.api.Call(imp, []py.Obj{t.api.NewStr(name), f.globals, t.api.None(), fl, lv}, nil)
	if err != nil {
		return nil, t.raisedFromCall(f, "import "+name, err)
	}
	return t.objValue(m, nil), nil
}

// isSubclass is issubclass(typ, base) (false on error).
func (t *Tracer) isSubclass(typ, base py.Obj) bool {
	r, err := t.api.Call(t.env.Known("builtins.issubclass"), []py.Obj{typ, base}, nil)
	if err != nil {
		return false
	}
	n, err := t.api.Int(r)
	return err == nil && n == 1
}

// structField reads a named field of a structseq result (torch.max(x, 1).values).
func (t *Tracer) structField(tv *TupleV, name string) (Value, bool) {
	fields, err := t.api.GetAttr(tv.Class, "__match_args__")
	if err != nil {
		return nil, false
	}
	n, _ := t.api.Len(fields)
	for i := 0; i < n && i < len(tv.Items); i++ {
		fo, _ := t.api.Index(fields, i)
		if s, _ := t.api.Str(fo); s == name {
			return tv.Items[i], true
		}
	}
	return nil, false
}

// objectGetAttribute is object.__getattribute__(self, name): super().__getattribute__(key) in a
// class that overrides __getattribute__ (Hugging Face's PretrainedConfig maps key through its
// attribute_map, then asks object's lookup), or object.__getattribute__ called directly. A
// live object's attribute is read by object's lookup and guarded by it (AttrSource.Generic:
// the guard calls object.__getattribute__ again, never the override); properties, methods and
// other descriptors of the class take objAttr's paths, which never ask the override either.
func (t *Tracer) objectGetAttribute(f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "object.__getattribute__ takes 2 arguments")
	}
	self, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	name, err := attrName(t, f, args[1])
	if err != nil {
		return nil, err
	}
	switch o := self.(type) {
	case *ObjectV:
		return t.objectMethod(f, o, "__getattribute__", []Value{strV(name)}, nil)
	case *ObjV:
		if o.Kind == py.KOther {
			return t.genericLiveAttr(f, o, name)
		}
	}
	return nil, f.unsupported("", "object.__getattribute__ of %s", self.Describe())
}

// genericLiveAttr is object.__getattribute__(o, name) for a live object (see objectGetAttribute).
func (t *Tracer) genericLiveAttr(f *frame, o *ObjV, name string) (Value, error) {
	api := t.api
	typ := api.TypeOf(o.Obj)
	cls, onType, _, found, err := api.GetAttrStatic(typ, name)
	if err != nil {
		return nil, err
	}
	dataDesc := found && onType && t.isDataDescriptor(cls)
	if !dataDesc {
		if v, ok := t.pendingAttr(o.Obj, name); ok {
			return v, nil
		}
		if v, ok, err := t.liveDictAttr(f, o, name); err != nil || ok {
			return v, err
		}
	}
	_, inInst, _, instFound, _ := api.GetAttrStatic(o.Obj, name)
	inDict := instFound && !inInst
	if found && onType {
		switch api.Kind(cls) {
		case py.KProperty:
			return t.objAttr(f, o, name)
		case py.KFunction, py.KClassMethod, py.KStaticMethod:
			if !inDict {
				return t.objAttr(f, o, name)
			}
		}
		if dataDesc {
			return nil, f.unsupported("", "object.__getattribute__ of %s.%s, a %s descriptor", t.typeName(o.Obj), name, t.typeName(cls))
		}
	}
	v, err := api.Call(t.env.Known("builtins.object.__getattribute__"), []py.Obj{o.Obj, api.NewStr(name)}, nil)
	if err != nil {
		// A missing attribute would need its absence guarded (as objAttr, it breaks).
		return nil, f.unsupported("", "object.__getattribute__ of %s.%s: %v", t.typeName(o.Obj), name, err)
	}
	if o.Source == nil {
		return t.wrapLive(f, v, nil)
	}
	// The type decides which lookup answers (a data descriptor added to it would win over the
	// instance dict); the generic source re-reads the value on every call.
	t.guards.Type(o.Source, typ, t.typeName(o.Obj))
	return t.lazy(v, &AttrSource{Base: o.Source, Attr: name, Generic: true}), nil
}

// liveDictReads are the methods of dict and OrderedDict that read a live dict subclass's items
// (liveDictMethod); its writes stay eager's (a side effect on an object made outside the frame).
var liveDictReads = map[string]bool{"keys": true, "values": true, "items": true, "get": true,
	"__getitem__": true, "__contains__": true, "__len__": true, "__iter__": true}

// liveDictMethodDesc is the C method name of typ, a subclass of dict, when dict or OrderedDict
// defines it and it is one of liveDictReads (0 otherwise): the descriptor type(o).name finds
// unless a Python class overrides it.
func (t *Tracer) liveDictMethodDesc(typ py.Obj, name string) py.Obj {
	if !liveDictReads[name] || !t.isSubclass(typ, t.env.Known("builtins.dict")) {
		return 0
	}
	base := t.env.Known("builtins.dict")
	if t.isSubclass(typ, t.env.Known("collections.OrderedDict")) {
		base = t.env.Known("collections.OrderedDict")
	}
	d, _, _, found, _ := t.api.GetAttrStatic(base, name)
	if !found {
		return 0
	}
	return d
}

// liveDictMethod calls dict's (or OrderedDict's) own method desc, found as name, on a live
// object of a dict subclass: a read (liveDictReads) sees the object's items, guarded like a
// dict argument's (dictContents: its type, its keys in order, each value read); a write is a
// side effect on an object made outside the frame and breaks.
func (t *Tracer) liveDictMethod(f *frame, o *ObjV, name string, desc py.Obj, args []Value, kw []kwArg) (Value, error) {
	typ := t.api.TypeOf(o.Obj)
	if o.Source == nil || t.liveDictMethodDesc(typ, name) != desc {
		return nil, f.unsupported("", "method %s of %s, a dict subclass made outside the compiled code", name, t.typeName(o.Obj))
	}
	d, err := t.dictContents(f, o.Obj, o.Source)
	if err != nil {
		return nil, err
	}
	lo, hi := 0, 0
	switch name {
	case "get":
		lo, hi = 1, 2
	case "__getitem__", "__contains__":
		lo, hi = 1, 1
	}
	if len(kw) > 0 || len(args) < lo || len(args) > hi {
		return nil, f.unsupported("eager raises TypeError", "%s() of %s with %d arguments", name, t.typeName(o.Obj), len(args))
	}
	switch name {
	case "__len__":
		return intV(int64(len(d.Keys))), nil
	case "__iter__":
		return &IterV{Items: append([]Value(nil), d.Keys...)}, nil
	}
	return t.dictMethod(f, d, name, args, kw)
}

// liveDictDunder runs the operator name (subscript, len, in) on a live object of a dict
// subclass whose class leaves it to dict's (or OrderedDict's) own method: liveDictMethod.
func (t *Tracer) liveDictDunder(f *frame, o *ObjV, name string, args ...Value) (Value, bool, error) {
	typ := t.api.TypeOf(o.Obj)
	desc := t.liveDictMethodDesc(typ, name)
	if desc == 0 || o.Source == nil {
		return nil, false, nil
	}
	if d, onType, _, found, _ := t.api.GetAttrStatic(typ, name); !found || !onType || d != desc {
		return nil, false, nil
	}
	v, err := t.liveDictMethod(f, o, name, desc, args, nil)
	return v, true, err
}
