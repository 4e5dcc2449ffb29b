package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// kwArg is one keyword argument of a call.
type kwArg struct {
	Name string
	Val  Value
}

// call calls callee(*args, **kw): inlines Python functions, records torch ops in the graph,
// evaluates builtins and container methods.
func (t *Tracer) call(f *frame, callee Value, args []Value, kw []kwArg) (Value, error) {
	callee, err := t.realize(f, callee)
	if err != nil {
		return nil, err
	}
	switch c := callee.(type) {
	case *FuncV:
		if c.Obj != 0 {
			if v, handled, err := t.callKnownFunction(f, c, args, kw); handled {
				return v, err
			}
		}
		return t.inline(f, c, args, kw)
	case *BoundV:
		if c.Fn != nil {
			return t.call(f, c.Fn, append([]Value{c.Self}, args...), kw)
		}
		if c.Desc != 0 && c.Desc == t.env.Known("builtins.object.__getattribute__") {
			return t.objectGetAttribute(f, append([]Value{c.Self}, args...), kw)
		}
		if o, ok := c.Self.(*ObjV); ok && c.Desc != 0 && t.isSubclass(t.api.TypeOf(o.Obj), t.env.Known("builtins.dict")) {
			return t.liveDictMethod(f, o, c.Name, c.Desc, args, kw)
		}
		return t.callMethod(f, c.Self, c.Name, args, kw)
	case *ObjV:
		if h := t.env.special(c.Obj); h != nil {
			return h(t, f, args, kw)
		}
		switch c.Kind {
		case py.KNNModule:
			return t.callModule(f, c, args, kw)
		case py.KType:
			return t.callClass(f, c, args, kw)
		case py.KBuiltin, py.KMethodDescriptor:
			return t.callBuiltin(f, c, args, kw)
		}
		if fn, onType, _, found, _ := t.api.GetAttrStatic(t.api.TypeOf(c.Obj), "__call__"); found && onType && t.api.Kind(fn) == py.KFunction {
			fv, err := t.funcFromObj(f, fn, nil)
			if err != nil {
				return nil, err
			}
			return t.inline(f, fv, append([]Value{c}, args...), kw)
		}
		if name := t.env.TorchName(c.Obj); name != "" {
			return t.torchCall(f, name, c.Obj, args, kw)
		}
		if v, handled, err := t.callLiveObject(f, c, args, kw); handled {
			return v, err
		}
		return nil, f.unsupported("", "calling %s", t.typeName(c.Obj))
	case *ExitV:
		return t.exitContext(f, c.Ctx)
	case *GradModeV:
		return t.gradModeDecorate(f, c, args, kw)
	case *PartialV:
		return t.callPartial(f, c, args, kw)
	case *ObjectV:
		return t.callObject(f, c, args, kw)
	case *CtxFuncV:
		return t.callInMode(f, c, args, kw)
	case *builtinFnV:
		return c.fn(t, f, args, kw)
	}
	return nil, f.unsupported("", "calling %s", callee.Describe())
}

// callKnownFunction handles Python functions that ptgo treats specially instead of inlining:
// torch functions with a registry entry become graph ops, ptgo's own helpers are answered.
func (t *Tracer) callKnownFunction(f *frame, fn *FuncV, args []Value, kw []kwArg) (Value, bool, error) {
	switch fn.Obj {
	case t.env.Known("ptgo.eval_frame.is_compiling"):
		return trueV, true, nil
	}
	if d, _, _, found, _ := t.api.GetAttrStatic(fn.Obj, "_ptgo_disabled"); found && d != 0 {
		return nil, true, f.unsupported("ptgo.disable runs it eagerly; that needs a graph break", "a call to %s, which is ptgo.disable'd", fn.QualName)
	}
	if h := t.env.special(fn.Obj); h != nil {
		v, err := h(t, f, args, kw)
		return v, true, err
	}
	name := t.env.TorchName(fn.Obj)
	if name == "" {
		return nil, false, nil
	}
	if primtorch.Lookup(name) != nil {
		v, err := t.torchCall(f, name, fn.Obj, args, kw)
		return v, true, err
	}
	return nil, false, nil
}

// inline runs a Python function's bytecode in a new frame of the same trace.
func (t *Tracer) inline(f *frame, fn *FuncV, args []Value, kw []kwArg) (Value, error) {
	depth := 0
	if f != nil {
		depth = f.depth + 1
	}
	if depth > t.maxDepth {
		return nil, f.unsupported("", "calls nested deeper than %d levels (recursion?)", t.maxDepth)
	}
	ci, err := t.env.code(fn.Code)
	if err != nil {
		return nil, err
	}
	c := ci.code
	if err := t.refuseTorchCompileEntry(f, fn, c.Filename); err != nil {
		return nil, err
	}
	if c.Flags&(CO_COROUTINE|CO_ASYNC_GENERATOR|CO_ITERABLE_COROUTINE) != 0 {
		return nil, f.unsupported("", "calling async function %s", fn.QualName)
	}
	nf := &frame{t: t, ci: ci, fn: fn, locals: make([]Value, len(ci.lpNames)), parent: f, depth: depth,
		globals: fn.Globals, globSrc: fn.GlobalsSrc, gen: c.Flags&CO_GENERATOR != 0}
	if err := t.bindArgs(f, nf, fn, args, kw); err != nil {
		return nil, err
	}
	r, err := t.runFrame(nf)
	if err != nil {
		return nil, err
	}
	if nf.gen {
		return &IterV{Items: nf.yields}, nil
	}
	return r, nil
}

// bindArgs fills a new frame's argument slots from positional and keyword arguments, the way
// CPython does (defaults, keyword-only, *args, **kwargs), with the same errors.
func (t *Tracer) bindArgs(caller, nf *frame, fn *FuncV, args []Value, kw []kwArg) error {
	c := nf.ci.code
	nPos := c.ArgCount
	where := caller
	if where == nil {
		where = nf
	}
	fail := func(format string, a ...any) error {
		return where.userError("TypeError", "%s() "+format, append([]any{fn.Name}, a...)...)
	}
	slot := 0
	for i := 0; i < len(args) && i < nPos; i++ {
		nf.locals[i] = args[i]
	}
	var extra []Value
	if len(args) > nPos {
		if c.Flags&CO_VARARGS == 0 {
			return fail("takes %d positional arguments but %d were given", nPos, len(args))
		}
		extra = args[nPos:]
	}
	slot = nPos + c.KwOnlyArgCount
	varargsSlot, kwargsSlot := -1, -1
	if c.Flags&CO_VARARGS != 0 {
		varargsSlot = slot
		slot++
	}
	if c.Flags&CO_VARKEYWORDS != 0 {
		kwargsSlot = slot
	}
	var kwargs *DictV
	if kwargsSlot >= 0 {
		kwargs = &DictV{}
	}
	for _, k := range kw {
		idx := -1
		for i := c.PosOnlyArgCount; i < nPos+c.KwOnlyArgCount; i++ {
			if c.VarNames[i] == k.Name {
				idx = i
				break
			}
		}
		if idx < 0 {
			if kwargs == nil {
				return fail("got an unexpected keyword argument '%s'", k.Name)
			}
			kwargs.Keys = append(kwargs.Keys, strV(k.Name))
			kwargs.Vals = append(kwargs.Vals, k.Val)
			continue
		}
		if nf.locals[idx] != nil {
			return fail("got multiple values for argument '%s'", k.Name)
		}
		nf.locals[idx] = k.Val
	}
	// Defaults for positional parameters.
	nDef := len(fn.Defaults)
	for i := 0; i < nPos; i++ {
		if nf.locals[i] != nil {
			continue
		}
		if d := i - (nPos - nDef); d >= 0 {
			nf.locals[i] = fn.Defaults[d]
			continue
		}
		return fail("missing required positional argument: '%s'", c.VarNames[i])
	}
	for i := nPos; i < nPos+c.KwOnlyArgCount; i++ {
		if nf.locals[i] != nil {
			continue
		}
		if fn.KwDefaults != nil {
			if v, ok, err := t.dictGet(nf, fn.KwDefaults, strV(c.VarNames[i])); err != nil {
				return err
			} else if ok {
				nf.locals[i] = v
				continue
			}
		}
		return fail("missing required keyword-only argument: '%s'", c.VarNames[i])
	}
	if varargsSlot >= 0 {
		nf.locals[varargsSlot] = &TupleV{Items: append([]Value(nil), extra...)}
	}
	if kwargsSlot >= 0 {
		nf.locals[kwargsSlot] = kwargs
	}
	return nil
}

// callModule inlines module(*args): Module.__call__ without hooks is forward(*args).
func (t *Tracer) callModule(f *frame, m *ObjV, args []Value, kw []kwArg) (Value, error) {
	api := t.api
	if m.Source == nil {
		return nil, f.unsupported("create modules in __init__, not in forward", "calling a module created while tracing")
	}
	t.guards.Eq(&AttrSource{Base: m.Source, Attr: "training"}, t.mustAttr(m.Obj, "training"), t.api.Repr(t.mustAttr(m.Obj, "training")))
	if err := t.checkNotTorchCompiled(f, m); err != nil {
		return nil, err
	}
	for _, hooks := range moduleHookNames() {
		d, err := api.GetAttr(m.Obj, hooks)
		if err != nil {
			continue
		}
		n, _ := api.Len(d)
		if n > 0 {
			return nil, f.unsupported("remove the hook, or compile the module's parent so the hook runs eagerly around it",
				"module %s has %s", t.modulePathOrType(m), hooks[1:])
		}
		t.guards.Len(&AttrSource{Base: m.Source, Attr: hooks}, 0)
	}
	if err := t.checkGlobalHooks(f); err != nil {
		return nil, err
	}
	fwd, err := t.moduleAttr(f, m, "forward")
	if err != nil {
		return nil, err
	}
	return t.call(f, fwd, args, kw)
}

func (t *Tracer) modulePathOrType(m *ObjV) string {
	if p := t.modulePath(m); p != "" {
		return p
	}
	return t.typeName(m.Obj)
}

func (t *Tracer) mustAttr(o py.Obj, name string) py.Obj {
	v, err := t.api.GetAttr(o, name)
	if err != nil {
		panic(internalError(fmt.Sprintf("attribute %s missing: %v", name, err)))
	}
	return v
}

// checkGlobalHooks refuses global module hooks and guards that none get registered later.
func (t *Tracer) checkGlobalHooks(f *frame) error {
	if t.globalHooksChecked {
		return nil
	}
	t.globalHooksChecked = true
	mod := t.env.Known("torch.nn.modules.module")
	for _, name := range globalHookNames() {
		d, err := t.api.GetAttr(mod, name)
		if err != nil {
			continue
		}
		n, _ := t.api.Len(d)
		if n > 0 {
			return f.unsupported("remove the global hook while compiling", "a global module hook is registered (%s)", name)
		}
		t.guards.Len(&ConstSource{Obj: d, Desc: "torch.nn.modules.module." + name}, 0)
	}
	return nil
}

// callClass instantiates builtin types and the torch classes ptgo models.
func (t *Tracer) callClass(f *frame, c *ObjV, args []Value, kw []kwArg) (Value, error) {
	if name := t.env.BuiltinName(c.Obj); name != "" {
		if h, ok := builtinHandlers[name]; ok {
			if v, done, err := t.symBuiltinArgs(f, name, args, kw); done || err != nil {
				return v, err
			}
			return h(t, f, args, kw)
		}
	}
	switch c.Obj {
	case t.env.Known("torch.Size"):
		if len(args) == 0 {
			return &TupleV{Size: true}, nil
		}
		items, err := t.unpack(f, args[0])
		if err != nil {
			return nil, err
		}
		return &TupleV{Items: items, Size: true}, nil
	case t.env.Known("torch.no_grad"):
		return &GradModeV{Enabled: false, Class: c.Obj}, nil
	case t.env.Known("torch.enable_grad"):
		return &GradModeV{Enabled: true, Class: c.Obj}, nil
	case t.env.Known("torch.set_grad_enabled"):
		if len(args) != 1 {
			return nil, f.unsupported("", "torch.set_grad_enabled takes one argument")
		}
		b, err := t.truthy(f, args[0])
		if err != nil {
			return nil, err
		}
		g := &GradModeV{Enabled: b, Prev: []bool{t.gradEnabled}, Applied: true, Class: c.Obj}
		t.setGradMode(f, b)
		return g, nil
	}
	if t.isSubclass(c.Obj, t.env.Known("builtins.BaseException")) || t.isPureClass(c.Obj) {
		return t.callLive(f, c.Obj, args, kw)
	}
	if t.isPlainNamedTuple(c.Obj) {
		return t.newNamedTuple(f, c.Obj, args, kw)
	}
	return t.newInstance(f, c.Obj, args, kw)
}

// isPureClass reports torch classes whose instances are immutable descriptions computed from
// constant arguments: made eagerly (torch.finfo(x.dtype).min is a constant).
func (t *Tracer) isPureClass(c py.Obj) bool {
	for _, path := range []string{"torch.device", "torch.finfo", "torch.iinfo"} {
		if c == t.env.Known(path) {
			return true
		}
	}
	return false
}

// callLive calls a pure callable with constant arguments and wraps its result.
func (t *Tracer) callLive(f *frame, fn py.Obj, args []Value, kw []kwArg) (Value, error) {
	objs, err := t.toObjs(f, args)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, k := range kw {
		r, err := t.realize(f, k.Val)
		if err != nil {
			return nil, err
		}
		o, err := t.toObj(f, r)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
		names = append(names, k.Name)
	}
	r, err := t.api.Call(fn, objs, names)
	if err != nil {
		return nil, t.raisedFromCall(f, t.qualName(fn), err)
	}
	return t.wrapLive(f, r, nil)
}

// callBuiltin calls a C function: a builtin, a torch op, or a math/operator function.
func (t *Tracer) callBuiltin(f *frame, c *ObjV, args []Value, kw []kwArg) (Value, error) {
	if name := t.env.BuiltinName(c.Obj); name != "" {
		if h, ok := builtinHandlers[name]; ok {
			if v, done, err := t.symBuiltinArgs(f, name, args, kw); done || err != nil {
				return v, err
			}
			return h(t, f, args, kw)
		}
		return nil, f.unsupported(builtinHint(name), "builtin %s()", name)
	}
	if name := t.env.TorchName(c.Obj); name != "" {
		return t.torchCall(f, name, c.Obj, args, kw)
	}
	if h := t.env.special(c.Obj); h != nil { // torch._C functions torch does not re-export (torch 2's _is_tracing)
		return h(t, f, args, kw)
	}
	return nil, f.unsupported("", "calling the C function %s", t.shortRepr(c.Obj))
}

func builtinHint(name string) string {
	switch name {
	case "print":
		return "print outside the compiled function, or accept a graph break"
	case "id":
		return "object identity is not known while tracing"
	}
	return ""
}

// callMethod calls a builtin method of a value: container methods, tensor methods, str methods.
func (t *Tracer) callMethod(f *frame, self Value, name string, args []Value, kw []kwArg) (Value, error) {
	self, err := t.realize(f, self)
	if err != nil {
		return nil, err
	}
	switch s := self.(type) {
	case *TensorV:
		return t.tensorMethod(f, s, name, args, kw)
	case *ListV:
		return t.listMethod(f, s, name, args, kw)
	case *TupleV:
		if v, handled, err := t.namedTupleMethod(f, s, name, args, kw); handled {
			return v, err
		}
		switch name {
		case "index", "count":
			return t.seqSearch(f, s.Items, name, args)
		case "numel":
			if s.Size {
				n := int64(1)
				for _, it := range s.Items {
					c, _ := it.(*ConstV)
					if c == nil {
						return nil, f.unsupported("", "numel of a symbolic size")
					}
					n *= c.I
				}
				return intV(n), nil
			}
		}
	case *DictV:
		return t.dictMethod(f, s, name, args, kw)
	case *ConstV:
		if s.Kind == py.KStr && name == "join" && len(args) == 1 {
			// str.join consumes its iterable whole: list it first.
			items, err := t.unpack(f, args[0])
			if err != nil {
				return nil, err
			}
			args = []Value{&ListV{Items: items}}
		}
		if s.Kind == py.KStr || s.Kind == py.KInt || s.Kind == py.KFloat {
			m, err := t.api.GetAttr(mustObj(t, f, s), name)
			if err != nil {
				return nil, f.unsupported("", "%s has no method %s", s.Describe(), name)
			}
			return t.callLive(f, m, args, kw)
		}
	case *GradModeV:
		switch name {
		case "clone":
			return &GradModeV{Enabled: s.Enabled, Class: s.Class}, nil
		case "__enter__":
			return t.enterContext(f, s)
		case "__exit__":
			return t.exitContext(f, s)
		}
	case *SetV:
		return t.setMethod(f, s, name, args, kw)
	case *DequeV:
		return t.dequeMethod(f, s, name, args, kw)
	case *ObjectV:
		return t.objectMethod(f, s, name, args, kw)
	case *IterV:
		if name == "__next__" && len(args) == 0 {
			return t.call(f, t.objValue(t.env.Known("builtins.next"), nil), []Value{s}, nil)
		}
		if name == "__iter__" && len(args) == 0 {
			return s, nil
		}
	case *ObjV:
		switch name {
		case "__object_init__":
			return noneV, nil
		case "__setattr__":
			// object.__setattr__ through super() in a method of a live object (an __init__
			// running on an object made outside the frame).
			if len(args) != 2 || len(kw) > 0 {
				return nil, f.unsupported("eager raises TypeError", "__setattr__ takes 2 arguments")
			}
			attr, err := attrName(t, f, args[0])
			if err != nil {
				return nil, err
			}
			return noneV, t.rawSetLiveAttr(f, s, attr, args[1])
		}
		m, err := t.api.GetAttr(s.Obj, name)
		if err == nil && (t.api.Kind(m) == py.KBuiltin || t.api.Kind(m) == py.KMethodDescriptor) {
			if tn := t.env.TorchName(m); tn != "" {
				return t.torchCall(f, tn, m, args, kw)
			}
		}
		return nil, f.unsupported("", "method %s of %s", name, t.typeName(s.Obj))
	}
	return nil, f.unsupported("", "method %s of %s", name, self.Describe())
}

func mustObj(t *Tracer, f *frame, v Value) py.Obj {
	o, err := t.toObj(f, v)
	if err != nil {
		panic(internalError("cannot materialize " + v.Describe()))
	}
	return o
}

func (t *Tracer) seqSearch(f *frame, items []Value, name string, args []Value) (Value, error) {
	if len(args) < 1 {
		return nil, f.unsupported("", "%s() needs an argument", name)
	}
	count := int64(0)
	for i, it := range items {
		eq, err := t.equal(f, it, args[0])
		if err != nil {
			return nil, err
		}
		if eq {
			if name == "index" {
				return intV(int64(i)), nil
			}
			count++
		}
	}
	if name == "index" {
		return nil, t.pyRaise(f, "ValueError", "value not in the sequence")
	}
	return intV(count), nil
}

func (t *Tracer) listMethod(f *frame, l *ListV, name string, args []Value, kw []kwArg) (Value, error) {
	mutating := map[string]bool{"append": true, "extend": true, "insert": true, "pop": true, "remove": true,
		"clear": true, "reverse": true, "sort": true}
	if mutating[name] && l.Source != nil {
		t.mutateList(l)
	}
	switch name {
	case "append":
		l.Items = append(l.Items, args[0])
		return noneV, nil
	case "extend":
		items, err := t.unpack(f, args[0])
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, items...)
		return noneV, nil
	case "insert":
		c, ok := args[0].(*ConstV)
		if !ok || !c.IsIntLike() {
			return nil, f.unsupported("", "list.insert index")
		}
		i := c.I
		n := int64(len(l.Items))
		if i < 0 {
			i += n
			if i < 0 {
				i = 0
			}
		}
		if i > n {
			i = n
		}
		l.Items = append(l.Items[:i:i], append([]Value{args[1]}, l.Items[i:]...)...)
		return noneV, nil
	case "pop":
		if len(l.Items) == 0 {
			return nil, t.pyRaise(f, "IndexError", "pop from empty list")
		}
		i := int64(len(l.Items) - 1)
		if len(args) > 0 {
			var err error
			if i, err = intArg(t, f, args[0], "list.pop index"); err != nil {
				return nil, err
			}
			if i < 0 {
				i += int64(len(l.Items))
			}
			if i < 0 || i >= int64(len(l.Items)) {
				return nil, t.pyRaise(f, "IndexError", "pop index out of range")
			}
		}
		v := l.Items[i]
		l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
		return v, nil
	case "clear":
		l.Items = nil
		return noneV, nil
	case "reverse":
		for i, j := 0, len(l.Items)-1; i < j; i, j = i+1, j-1 {
			l.Items[i], l.Items[j] = l.Items[j], l.Items[i]
		}
		return noneV, nil
	case "copy":
		return &ListV{Items: append([]Value(nil), l.Items...)}, nil
	case "sort":
		if len(args) > 0 {
			return nil, f.unsupported("eager raises TypeError", "sort() takes no positional arguments")
		}
		items, err := t.sortValues(f, l.Items, kw)
		if err != nil {
			return nil, err
		}
		l.Items = items
		return noneV, nil
	case "index", "count":
		return t.seqSearch(f, l.Items, name, args)
	case "remove":
		for i, it := range l.Items {
			eq, err := t.equal(f, it, args[0])
			if err != nil {
				return nil, err
			}
			if eq {
				l.Items = append(l.Items[:i:i], l.Items[i+1:]...)
				return noneV, nil
			}
		}
		return nil, t.pyRaise(f, "ValueError", "list.remove(x): x not in list")
	}
	return nil, f.unsupported("", "list.%s", name)
}

func (t *Tracer) dictMethod(f *frame, d *DictV, name string, args []Value, kw []kwArg) (Value, error) {
	if v, handled, err := t.dictClassMethod(f, d, name, args, kw); handled {
		return v, err
	}
	switch name {
	case "get":
		v, ok, err := t.dictGet(f, d, args[0])
		if err != nil {
			return nil, err
		}
		if ok {
			return v, nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return noneV, nil
	case "keys":
		return &ListV{Items: append([]Value(nil), d.Keys...)}, nil
	case "values":
		return &ListV{Items: append([]Value(nil), d.Vals...)}, nil
	case "items":
		items := make([]Value, len(d.Keys))
		for i := range d.Keys {
			items[i] = &TupleV{Items: []Value{d.Keys[i], d.Vals[i]}}
		}
		return &ListV{Items: items}, nil
	case "copy":
		return &DictV{Keys: append([]Value(nil), d.Keys...), Vals: append([]Value(nil), d.Vals...), Class: d.Class, Factory: d.Factory}, nil
	case "__contains__":
		_, ok, err := t.dictGet(f, d, args[0])
		return boolV(ok), err
	case "__getitem__":
		return t.getItem(f, d, args[0])
	}
	if d.Source != nil {
		switch name {
		case "pop", "setdefault", "update", "clear", "popitem":
			t.mutateDict(d)
		}
	}
	switch name {
	case "clear":
		d.Keys, d.Vals = nil, nil
		return noneV, nil
	case "popitem":
		if len(d.Keys) == 0 {
			return nil, t.pyRaise(f, "KeyError", "popitem(): dictionary is empty")
		}
		i := len(d.Keys) - 1
		item := &TupleV{Items: []Value{d.Keys[i], d.Vals[i]}}
		d.Keys, d.Vals = d.Keys[:i:i], d.Vals[:i:i]
		return item, nil
	case "pop":
		for i, k := range d.Keys {
			eq, err := t.equal(f, k, args[0])
			if err != nil {
				return nil, err
			}
			if eq {
				v := d.Vals[i]
				d.Keys = append(d.Keys[:i:i], d.Keys[i+1:]...)
				d.Vals = append(d.Vals[:i:i], d.Vals[i+1:]...)
				return v, nil
			}
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return nil, t.pyRaiseArgs(f, "KeyError", []Value{args[0]}, "dict.pop of a missing key %s", args[0].Describe())
	case "setdefault":
		v, ok, err := t.dictGet(f, d, args[0])
		if err != nil || ok {
			return v, err
		}
		var def Value = noneV
		if len(args) > 1 {
			def = args[1]
		}
		return def, t.dictSet(f, d, args[0], def)
	case "update":
		if len(args) > 1 {
			return nil, f.unsupported("eager raises TypeError", "update expected at most 1 argument, got %d", len(args))
		}
		for _, a := range args {
			a, err := t.realize(f, a)
			if err != nil {
				return nil, err
			}
			if od, ok := a.(*ObjectV); ok && od.Dict != nil {
				a = od.Dict
			}
			if o, ok := a.(*DictV); ok {
				for i := range o.Keys {
					if err := t.dictSet(f, d, o.Keys[i], o.Vals[i]); err != nil {
						return nil, err
					}
				}
				continue
			}
			// An iterable of key/value pairs.
			pairs, err := t.unpack(f, a)
			if err != nil {
				return nil, f.unsupported("", "dict.update with %s", a.Describe())
			}
			for _, p := range pairs {
				kv, err := t.unpack(f, p)
				if err != nil || len(kv) != 2 {
					return nil, f.unsupported("eager raises an error", "dict update sequence element is not a pair")
				}
				if err := t.dictSet(f, d, kv[0], kv[1]); err != nil {
					return nil, err
				}
			}
		}
		for _, k := range kw {
			if err := t.dictSet(f, d, strV(k.Name), k.Val); err != nil {
				return nil, err
			}
		}
		return noneV, nil
	}
	return nil, f.unsupported("", "dict.%s", name)
}
