package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Transformed code for a captured frame. Without a graph break:
//
//	COPY_FREE_VARS n; RESUME 0         (free variables only when the code has them)
//	PUSH_NULL; LOAD_CONST <graph>; <load inputs>; PRECALL k; CALL k; STORE_FAST __ptgo_out
//	<rebuild every value the rest needs into temporaries>     (before any write, so reads see
//	<replay side effects>                                       the state the trace saw)
//	<rebuild the result>; RETURN_VALUE
//
// With a graph break at instruction I, instead of the result: push the stack the frame had at
// I (re-entering an active with block), run I itself, then call the resume function for the
// instruction after I (two of them after a conditional jump) with the new stack and the live
// locals, and return what it returns.
//
// The code keeps the original's argument slots (flattened signature: every argument
// positional), globals, cells and free variables, so the shim calls it with the frame's
// localsplus directly (DESIGN D2). Extra locals (__ptgo_out, temporaries) are appended to
// co_varnames, which moves the cell and free variable slots; deref instructions are patched.

type codeGen struct {
	api    py.API
	env    *Env
	b      *Builder
	pos    Position
	consts []py.Obj
	names  []string
	nameIx map[string]int
	ci     *codeInfo
	extra  []string // extra varnames after the original ones
	outIdx map[*TensorV]int
	// attrSrc says where each get_attr tensor (a parameter or buffer) is read from: one the
	// graph did not write is loaded from there, never returned by the graph.
	attrSrc map[string]Source
	memo    map[Value]int // mutable containers already rebuilt → temporary
	derefs  []derefPatch
	codeObj py.Obj
	symSrc  []symSource
}

type derefPatch struct {
	instr int // instruction index in the builder
	slot  int // the original localsplus index
}

func (g *codeGen) constIndex(o py.Obj) int {
	for i, c := range g.consts {
		if c == o {
			return i
		}
	}
	g.consts = append(g.consts, o)
	return len(g.consts) - 1
}

func (g *codeGen) nameIndex(s string) int {
	if i, ok := g.nameIx[s]; ok {
		return i
	}
	g.names = append(g.names, s)
	g.nameIx[s] = len(g.names) - 1
	return len(g.names) - 1
}

func (g *codeGen) emit(op Opcode, arg int) int { return g.b.Add(op, arg, g.pos) }

func (g *codeGen) loadConst(o py.Obj) { g.emit(LOAD_CONST, g.constIndex(o)) }

// temp allocates a new local and returns its index.
func (g *codeGen) temp() int {
	g.extra = append(g.extra, fmt.Sprintf("__ptgo_t%d", len(g.extra)))
	return len(g.ci.code.VarNames) + len(g.extra) - 1
}

// deref emits an instruction whose argument is an original cell/free slot (patched later).
func (g *codeGen) deref(op Opcode, slot int) {
	i := g.emit(op, 0)
	g.derefs = append(g.derefs, derefPatch{i, slot})
}

// loadSource emits bytecode that pushes the value a source names.
func (g *codeGen) loadSource(s Source) error {
	switch s := s.(type) {
	case *LocalSource:
		g.emit(LOAD_FAST, s.Index)
	case *GlobalSource:
		g.emit(LOAD_GLOBAL, g.nameIndex(s.Var)<<1)
	case *BuiltinSource:
		g.emit(LOAD_GLOBAL, g.nameIndex(s.Var)<<1)
	case *ClosureSource:
		g.deref(LOAD_DEREF, g.ci.freeBase+s.Index)
	case *ConstSource:
		g.loadConst(s.Obj)
	case *CallSource:
		g.emit(PUSH_NULL, 0)
		g.loadConst(s.Fn)
		g.emit(PRECALL, 0)
		g.emit(CALL, 0)
	case *AttrSource:
		if s.Generic {
			g.emit(PUSH_NULL, 0)
			g.loadConst(g.env.Known("builtins.object.__getattribute__"))
			if err := g.loadSource(s.Base); err != nil {
				return err
			}
			g.loadConst(g.api.NewStr(s.Attr))
			g.emit(PRECALL, 2)
			g.emit(CALL, 2)
			break
		}
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.emit(LOAD_ATTR, g.nameIndex(s.Attr))
	case *DictItemSource:
		if s.Raw {
			g.emit(PUSH_NULL, 0)
			g.loadConst(g.env.Known("builtins.dict.__getitem__"))
		}
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		if s.KeySrc != nil {
			if err := g.loadSource(s.KeySrc); err != nil {
				return err
			}
		} else {
			g.loadConst(g.api.NewStr(s.Key))
		}
		if s.Raw {
			g.emit(PRECALL, 2)
			g.emit(CALL, 2)
			break
		}
		g.emit(BINARY_SUBSCR, 0)
	case *IndexSource:
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.loadConst(g.api.NewInt(int64(s.Index)))
		g.emit(BINARY_SUBSCR, 0)
	case *DictKeySource:
		g.emit(PUSH_NULL, 0)
		g.loadConst(g.env.Known("ptgo._runtime.dict_key_at"))
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.loadConst(g.api.NewInt(int64(s.Index)))
		g.emit(PRECALL, 2)
		g.emit(CALL, 2)
	default:
		return fmt.Errorf("ptgo BUG: codegen: cannot load source %T", s)
	}
	return nil
}

// rebuild emits bytecode that pushes a value of the frame's state.
func (g *codeGen) rebuild(v Value) error {
	if slot, ok := g.memo[v]; ok {
		g.emit(LOAD_FAST, slot)
		return nil
	}
	switch x := v.(type) {
	case *TensorV:
		idx, ok := g.outIdx[x]
		if !ok {
			for o, i := range g.outIdx {
				if o.Node == x.Node {
					idx, ok = i, true
					break
				}
			}
		}
		if !ok {
			if x.Source != nil {
				return g.loadSource(x.Source)
			}
			if x.Node.Op == fxgraph.GetAttr {
				if src, ok := g.attrSrc[x.Node.Target]; ok {
					return g.loadSource(src)
				}
			}
			return fmt.Errorf("ptgo BUG: codegen: tensor %s is neither a graph output nor read from a source", x.Node.Name)
		}
		g.emit(LOAD_FAST, len(g.ci.code.VarNames)) // __ptgo_out
		g.loadConst(g.api.NewInt(int64(idx)))
		g.emit(BINARY_SUBSCR, 0)
	case *ConstV:
		o, err := constObj(g.api, x)
		if err != nil {
			return err
		}
		g.loadConst(o)
	case *LazyV:
		return g.loadSource(x.Source)
	case NullV:
		g.emit(PUSH_NULL, 0)
	case *TupleV:
		if x.Source != nil && x.Named {
			return g.loadSource(x.Source)
		}
		class := x.Class
		if x.Size {
			class = g.env.Known("torch.Size")
		}
		if x.Named {
			make_, err := g.api.GetAttr(x.Class, "_make")
			if err != nil {
				return err
			}
			class = make_
		}
		if class != 0 {
			g.emit(PUSH_NULL, 0)
			g.loadConst(class)
		}
		for _, it := range x.Items {
			if err := g.rebuild(it); err != nil {
				return err
			}
		}
		g.emit(BUILD_TUPLE, len(x.Items))
		if class != 0 {
			g.emit(PRECALL, 1)
			g.emit(CALL, 1)
		}
	case *ListV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		for _, it := range x.Items {
			if err := g.rebuild(it); err != nil {
				return err
			}
		}
		g.emit(BUILD_LIST, len(x.Items))
		g.remember(v)
	case *DictV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		nargs := 1
		if x.Class != 0 {
			g.emit(PUSH_NULL, 0)
			g.loadConst(x.Class)
			if x.Factory != nil {
				// defaultdict(factory, {...})
				if err := g.rebuild(x.Factory); err != nil {
					return err
				}
				nargs = 2
			}
		}
		for i := range x.Keys {
			if err := g.rebuild(x.Keys[i]); err != nil {
				return err
			}
			if err := g.rebuild(x.Vals[i]); err != nil {
				return err
			}
		}
		g.emit(BUILD_MAP, len(x.Keys))
		if x.Class != 0 {
			g.emit(PRECALL, nargs)
			g.emit(CALL, nargs)
		}
		g.remember(v)
	case *DequeV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.emit(PUSH_NULL, 0)
		g.loadConst(g.env.Known("collections.deque"))
		for _, it := range x.Items {
			if err := g.rebuild(it); err != nil {
				return err
			}
		}
		g.emit(BUILD_LIST, len(x.Items))
		if x.MaxLen >= 0 {
			g.loadConst(g.api.NewInt(x.MaxLen))
		} else {
			g.loadConst(g.api.None())
		}
		g.emit(PRECALL, 2)
		g.emit(CALL, 2)
		g.remember(v)
	case *PartialV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.emit(PUSH_NULL, 0)
		g.loadConst(g.env.Known("functools.partial"))
		if err := g.rebuild(x.Func); err != nil {
			return err
		}
		for _, a := range x.Args {
			if err := g.rebuild(a); err != nil {
				return err
			}
		}
		if err := g.callKw(1+len(x.Args), x.Kw); err != nil {
			return err
		}
		g.remember(v)
	case *ObjectV:
		return g.rebuildObject(x)
	case *ExcV:
		// A new exception of the class with the same arguments (an exception caught while
		// tracing is never the object eager made).
		g.emit(PUSH_NULL, 0)
		g.loadConst(x.Class)
		n := len(x.Args)
		if x.Obj != 0 {
			args, err := g.api.GetAttr(x.Obj, "args")
			if err != nil {
				return err
			}
			n, _ = g.api.Len(args)
			for i := 0; i < n; i++ {
				it, err := g.api.Index(args, i)
				if err != nil {
					return err
				}
				g.loadConst(it)
			}
		} else {
			for _, a := range x.Args {
				if err := g.rebuild(a); err != nil {
					return err
				}
			}
		}
		g.emit(PRECALL, n)
		g.emit(CALL, n)
	case *NoopCtxV:
		g.emit(PUSH_NULL, 0)
		g.loadConst(x.Class)
		for _, a := range x.Args {
			if err := g.rebuild(a); err != nil {
				return err
			}
		}
		return g.callKw(len(x.Args), x.Kw)
	case *CtxFuncV:
		// torch.no_grad()(fn) / torch.enable_grad()(fn)
		g.emit(PUSH_NULL, 0)
		g.emit(PUSH_NULL, 0)
		g.loadConst(gradModeClass(g.env, x.Mode.Enabled))
		g.emit(PRECALL, 0)
		g.emit(CALL, 0)
		if err := g.rebuild(x.Fn); err != nil {
			return err
		}
		g.emit(PRECALL, 1)
		g.emit(CALL, 1)
	case *ObjV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.loadConst(x.Obj)
	case *FuncV:
		if x.Obj == 0 {
			return &Unsupported{Reason: "a function defined inside the compiled code is still live", RootPC: -1}
		}
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.loadConst(x.Obj)
	case *BoundV:
		if x.Fn == nil && x.Desc != 0 {
			// A C method super() found: its descriptor bound to the receiver.
			g.emit(PUSH_NULL, 0)
			g.loadConst(g.env.Known("types.MethodType"))
			g.loadConst(x.Desc)
			if err := g.rebuild(x.Self); err != nil {
				return err
			}
			g.emit(PRECALL, 2)
			g.emit(CALL, 2)
			return nil
		}
		if x.Fn == nil {
			// A builtin method: getattr on the rebuilt receiver.
			if err := g.rebuild(x.Self); err != nil {
				return err
			}
			g.emit(LOAD_ATTR, g.nameIndex(x.Name))
			return nil
		}
		fn, ok := x.Fn.(*FuncV)
		if !ok || fn.Obj == 0 {
			return &Unsupported{Reason: "a bound method of a function defined inside the compiled code is live", RootPC: -1}
		}
		g.emit(PUSH_NULL, 0)
		g.loadConst(g.env.Known("types.MethodType"))
		g.loadConst(fn.Obj)
		if err := g.rebuild(x.Self); err != nil {
			return err
		}
		g.emit(PRECALL, 2)
		g.emit(CALL, 2)
	case *SymV:
		return g.rebuildSym(x.S)
	case *SymF:
		if x.Node != nil {
			// a float the graph computed: its 0-d float64 output, read back as the float
			if err := g.rebuild(x.Tensor); err != nil {
				return err
			}
			g.emit(LOAD_METHOD, g.nameIndex("item"))
			g.emit(PRECALL, 0)
			g.emit(CALL, 0)
			return nil
		}
		return g.loadSource(x.Source)
	case *RangeV, *SliceV, *SetV:
		o, err := materialize(g, v)
		if err != nil {
			return err
		}
		g.loadConst(o)
	case *GradModeV:
		// Only as a value (a with block's manager object is consumed by BEFORE_WITH): a fresh
		// torch.no_grad() or torch.enable_grad(), which changes nothing until entered.
		// torch.set_grad_enabled(b) changes grad mode when it is made, so one of those (or a
		// manager that is active) has no rebuild that leaves grad mode as eager does.
		if x.Applied || len(x.Prev) > 0 {
			return &Unsupported{Reason: "an active grad-mode context manager is live where the compiled code hands over to Python", RootPC: -1}
		}
		g.emit(PUSH_NULL, 0)
		g.loadConst(gradModeClass(g.env, x.Enabled))
		g.emit(PRECALL, 0)
		g.emit(CALL, 0)
	default:
		return &Unsupported{Reason: v.Describe() + " is live where the compiled code hands over to Python", RootPC: -1}
	}
	return nil
}

// remember keeps a rebuilt mutable container in a temporary so that later references to the
// same container are the same object (the value stays on the stack).
func (g *codeGen) remember(v Value) {
	slot := g.temp()
	g.emit(COPY, 1)
	g.emit(STORE_FAST, slot)
	g.memo[v] = slot
}

// toTemp rebuilds v into a fresh temporary.
func (g *codeGen) toTemp(v Value) (int, error) {
	if err := g.rebuild(v); err != nil {
		return 0, err
	}
	slot := g.temp()
	g.emit(STORE_FAST, slot)
	return slot, nil
}

// gradModeClass is torch.enable_grad or torch.no_grad.
func gradModeClass(env *Env, enabled bool) py.Obj {
	if enabled {
		return env.Known("torch.enable_grad")
	}
	return env.Known("torch.no_grad")
}

// callKw emits the call of the callable below n positional arguments already pushed, after
// pushing the keyword arguments' values.
func (g *codeGen) callKw(n int, kw []kwArg) error {
	if len(kw) > 0 {
		names := make([]py.Obj, len(kw))
		for i, k := range kw {
			if err := g.rebuild(k.Val); err != nil {
				return err
			}
			names[i] = g.api.NewStr(k.Name)
		}
		g.emit(KW_NAMES, g.constIndex(g.api.NewTuple(names)))
	}
	g.emit(PRECALL, n+len(kw))
	g.emit(CALL, n+len(kw))
	return nil
}

// rebuildObject rebuilds an object created while tracing without running its __init__ again:
// obj = cls.__new__(cls), then object.__setattr__(obj, k, v) for each attribute and the base
// dict type's __setitem__ for each item of a dict subclass. The object is remembered before its
// attributes are rebuilt, so attributes referring back to it get the same object.
func (g *codeGen) rebuildObject(o *ObjectV) error {
	api := g.api
	newFn, err := api.GetAttr(o.Class, "__new__")
	if err != nil {
		return err
	}
	g.emit(PUSH_NULL, 0)
	g.loadConst(newFn)
	g.loadConst(o.Class)
	g.emit(PRECALL, 1)
	g.emit(CALL, 1)
	slot := g.temp()
	g.emit(STORE_FAST, slot)
	g.memo[o] = slot
	setattr := g.env.Known("builtins.object.__setattr__")
	for i, k := range o.Attrs.Keys {
		g.emit(PUSH_NULL, 0)
		g.loadConst(setattr)
		g.emit(LOAD_FAST, slot)
		if err := g.rebuild(k); err != nil {
			return err
		}
		if err := g.rebuild(o.Attrs.Vals[i]); err != nil {
			return err
		}
		g.emit(PRECALL, 3)
		g.emit(CALL, 3)
		g.emit(POP_TOP, 0)
	}
	if o.Dict != nil {
		setitem, err := api.GetAttr(g.dictBaseOf(o.Class), "__setitem__")
		if err != nil {
			return err
		}
		for i, k := range o.Dict.Keys {
			g.emit(PUSH_NULL, 0)
			g.loadConst(setitem)
			g.emit(LOAD_FAST, slot)
			if err := g.rebuild(k); err != nil {
				return err
			}
			if err := g.rebuild(o.Dict.Vals[i]); err != nil {
				return err
			}
			g.emit(PRECALL, 3)
			g.emit(CALL, 3)
			g.emit(POP_TOP, 0)
		}
	}
	g.emit(LOAD_FAST, slot)
	return nil
}

// dictBaseOf is the C dict type a dict subclass derives from (OrderedDict or dict).
func (g *codeGen) dictBaseOf(cls py.Obj) py.Obj {
	od := g.env.Known("collections.OrderedDict")
	if r, err := g.api.Call(g.env.Known("builtins.issubclass"), []py.Obj{cls, od}, nil); err == nil && r == g.api.NewBool(true) {
		return od
	}
	return g.env.Known("builtins.dict")
}

// gradModeCtor is the class (and its argument) that re-creates a grad-mode context manager.
func gradModeCtor(env *Env, api py.API, gm *GradModeV) (py.Obj, []py.Obj) {
	return env.Known("torch.set_grad_enabled"), []py.Obj{api.NewBool(gm.Enabled)}
}

func constObj(api py.API, c *ConstV) (py.Obj, error) {
	if c.obj != 0 {
		return c.obj, nil
	}
	switch c.Kind {
	case py.KNone:
		return api.None(), nil
	case py.KBool:
		return api.NewBool(c.I != 0), nil
	case py.KInt:
		return api.NewInt(c.I), nil
	case py.KFloat:
		return api.NewFloat(c.F), nil
	case py.KStr:
		return api.NewStr(c.S), nil
	}
	return 0, fmt.Errorf("ptgo BUG: codegen: constant %s has no object", c.Describe())
}

func materialize(g *codeGen, v Value) (py.Obj, error) {
	api := g.api
	switch x := v.(type) {
	case *RangeV:
		return api.Call(g.env.Known("builtins.range"), []py.Obj{api.NewInt(x.Start), api.NewInt(x.Stop), api.NewInt(x.Step)}, nil)
	case *SliceV:
		parts := make([]py.Obj, 3)
		for i, p := range []Value{x.Start, x.Stop, x.Step} {
			c, ok := p.(*ConstV)
			if !ok {
				return 0, &Unsupported{Reason: "a slice of non-constants is live", RootPC: -1}
			}
			o, err := constObj(api, c)
			if err != nil {
				return 0, err
			}
			parts[i] = o
		}
		return api.Call(g.env.Known("builtins.slice"), parts, nil)
	case *SetV:
		items := make([]py.Obj, len(x.Items))
		for i, it := range x.Items {
			c, ok := it.(*ConstV)
			if !ok {
				return 0, &Unsupported{Reason: "a set of non-constants is live", RootPC: -1}
			}
			o, err := constObj(api, c)
			if err != nil {
				return 0, err
			}
			items[i] = o
		}
		typ := "builtins.set"
		if x.Frozen {
			typ = "builtins.frozenset"
		}
		return api.Call(g.env.Known(typ), []py.Obj{api.NewTuple(items)}, nil)
	}
	return 0, fmt.Errorf("ptgo BUG: cannot materialize %s", v.Describe())
}

// replayEffects rebuilds every written value into a temporary, then applies the writes.
func (g *codeGen) replayEffects(e *sideEffects) error {
	if e == nil || e.empty() {
		return nil
	}
	type write struct {
		slot  int
		apply func(slot int) error
	}
	var writes []write
	for _, l := range e.lists {
		l := l
		slot, err := g.toTemp(&ListV{Items: l.Items})
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			g.emit(LOAD_FAST, slot)
			if err := g.loadSource(l.Source); err != nil {
				return err
			}
			g.loadConst(g.api.None())
			g.loadConst(g.api.None())
			g.emit(BUILD_SLICE, 2)
			g.emit(STORE_SUBSCR, 0)
			return nil
		}})
	}
	for _, d := range e.deques {
		d := d
		slot, err := g.toTemp(&ListV{Items: d.Items})
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			for _, m := range []string{"clear", "extend"} {
				if err := g.loadSource(d.Source); err != nil {
					return err
				}
				g.emit(LOAD_METHOD, g.nameIndex(m))
				n := 0
				if m == "extend" {
					g.emit(LOAD_FAST, slot)
					n = 1
				}
				g.emit(PRECALL, n)
				g.emit(CALL, n)
				g.emit(POP_TOP, 0)
			}
			return nil
		}})
	}
	for di, d := range e.dicts {
		d := d
		if changed, ok := dictChanges(&e.dictsBefore[di], d); ok {
			// Only what changed is stored: an optimizer step that writes each parameter's
			// state back (state['momentum_buffer'] = buf, the tensor it read there) writes
			// nothing.
			for _, i := range changed {
				kslot, err := g.toTemp(d.Keys[i])
				if err != nil {
					return err
				}
				vslot, err := g.toTemp(d.Vals[i])
				if err != nil {
					return err
				}
				writes = append(writes, write{vslot, func(slot int) error {
					g.emit(LOAD_FAST, slot)
					if err := g.loadSource(d.Source); err != nil {
						return err
					}
					g.emit(LOAD_FAST, kslot)
					g.emit(STORE_SUBSCR, 0)
					return nil
				}})
			}
			continue
		}
		slot, err := g.toTemp(&DictV{Keys: d.Keys, Vals: d.Vals})
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			for _, m := range []string{"clear", "update"} {
				if err := g.loadSource(d.Source); err != nil {
					return err
				}
				g.emit(LOAD_METHOD, g.nameIndex(m))
				n := 0
				if m == "update" {
					g.emit(LOAD_FAST, slot)
					n = 1
				}
				g.emit(PRECALL, n)
				g.emit(CALL, n)
				g.emit(POP_TOP, 0)
			}
			return nil
		}})
	}
	for _, a := range e.attrs {
		a := a
		slot, err := g.toTemp(a.value)
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			g.emit(LOAD_FAST, slot)
			if err := g.loadSource(a.obj.Source); err != nil {
				return err
			}
			g.emit(STORE_ATTR, g.nameIndex(a.name))
			return nil
		}})
	}
	for _, gw := range e.globals {
		gw := gw
		slot, err := g.toTemp(gw.value)
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			g.emit(LOAD_FAST, slot)
			if gw.src == nil {
				g.emit(STORE_GLOBAL, g.nameIndex(gw.name))
				return nil
			}
			g.loadConst(gw.globals)
			g.loadConst(g.api.NewStr(gw.name))
			g.emit(STORE_SUBSCR, 0)
			return nil
		}})
	}
	for _, cw := range e.cells {
		cw := cw
		slot, err := g.toTemp(cw.value)
		if err != nil {
			return err
		}
		writes = append(writes, write{slot, func(slot int) error {
			g.emit(LOAD_FAST, slot)
			switch src := cw.cell.Source.(type) {
			case *ClosureSource:
				g.deref(STORE_DEREF, g.ci.freeBase+src.Index)
			case *ConstSource:
				g.loadConst(src.Obj)
				g.emit(STORE_ATTR, g.nameIndex("cell_contents"))
			default:
				return fmt.Errorf("ptgo BUG: codegen: cell with source %T", src)
			}
			return nil
		}})
	}
	for _, w := range writes {
		if err := w.apply(w.slot); err != nil {
			return err
		}
	}
	return nil
}

// TransformedCode builds the code object that replaces a captured frame: it calls compiled
// (the backend's callable for cap.Graph; unused when there is no graph), replays side effects,
// and rebuilds the return value or hands over to a resume function at a graph break.
func TransformedCode(env *Env, codeObj py.Obj, cap *Capture, compiled py.Obj) (py.Obj, *Assembly, error) {
	api := env.API
	ci, err := env.code(codeObj)
	if err != nil {
		return 0, nil, err
	}
	c := ci.code
	g := &codeGen{api: api, env: env, b: NewBuilder(c.FirstLineNo),
		pos:    Position{Line: c.FirstLineNo, EndLine: c.FirstLineNo, Col: -1, EndCol: -1},
		nameIx: map[string]int{}, ci: ci, outIdx: map[*TensorV]int{}, attrSrc: cap.AttrSources, memo: map[Value]int{},
		codeObj: codeObj, symSrc: cap.SymSources}
	g.extra = []string{"__ptgo_out"}
	for i, o := range cap.Outputs {
		g.outIdx[o] = i
	}
	if n := len(c.FreeVars); n > 0 {
		g.emit(COPY_FREE_VARS, n)
	}
	g.emit(RESUME, 0)
	if cap.Graph != nil {
		g.emit(PUSH_NULL, 0)
		g.loadConst(compiled)
		for _, in := range cap.Inputs {
			if err := g.loadSource(in.Source); err != nil {
				return 0, nil, err
			}
		}
		g.emit(PRECALL, len(cap.Inputs))
		g.emit(CALL, len(cap.Inputs))
		g.emit(STORE_FAST, len(c.VarNames))
	}
	if err := g.emitAssumptionChecks(cap); err != nil {
		return 0, nil, err
	}
	if cap.Break == nil {
		slot, err := g.toTemp(cap.Result)
		if err != nil {
			return 0, nil, err
		}
		if err := g.replayEffects(cap.Effects); err != nil {
			return 0, nil, err
		}
		g.emit(LOAD_FAST, slot)
		g.emit(RETURN_VALUE, 0)
	} else if err := g.breakTail(cap); err != nil {
		return 0, nil, err
	}
	asm, err := g.b.Assembly()
	if err != nil {
		return 0, nil, err
	}
	shift := len(g.extra)
	for _, p := range g.derefs {
		slot := p.slot
		if slot >= len(c.VarNames) {
			slot += shift
		}
		asm.Instrs[p.instr].Arg = slot
	}
	out, err := Assemble(asm)
	if err != nil {
		return 0, nil, fmt.Errorf("ptgo BUG: assembling transformed code for %s: %w", c.QualName, err)
	}
	varnames := append(append([]string(nil), c.VarNames...), g.extra...)
	code, err := replaceCode(api, codeObj, c, out, g.consts, g.names, varnames, c.NArgs(), c.Name, c.QualName)
	if err != nil {
		return 0, nil, err
	}
	return code, asm, nil
}

func replaceCode(api py.API, codeObj py.Obj, c *Code, out *Assembled, consts []py.Obj, names, varnames []string,
	nargs int, name, qualname string) (py.Obj, error) {
	strs := func(xs []string) py.Obj {
		objs := make([]py.Obj, len(xs))
		for i, x := range xs {
			objs[i] = api.NewStr(x)
		}
		return api.NewTuple(objs)
	}
	flags := c.Flags &^ (CO_VARARGS | CO_VARKEYWORDS)
	replace, err := api.GetAttr(codeObj, "replace")
	if err != nil {
		return 0, err
	}
	kw := []string{"co_code", "co_consts", "co_names", "co_varnames", "co_nlocals", "co_argcount",
		"co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_stacksize", "co_linetable", "co_exceptiontable",
		"co_name", "co_qualname"}
	vals := []py.Obj{
		api.NewBytes(out.Bytecode), api.NewTuple(consts), strs(names), strs(varnames),
		api.NewInt(int64(len(varnames))), api.NewInt(int64(nargs)), api.NewInt(0), api.NewInt(0),
		api.NewInt(int64(flags)), api.NewInt(int64(out.StackSize)), api.NewBytes(out.LineTable),
		api.NewBytes(out.ExceptionTable), api.NewStr(name), api.NewStr(qualname),
	}
	code, err := api.Call(replace, vals, kw)
	if err != nil {
		return 0, fmt.Errorf("ptgo BUG: building transformed code for %s: %v", c.QualName, err)
	}
	return code, nil
}

// operandCounts are the (popped, pushed) stack items of the instructions a graph break may
// run eagerly.
func operandCounts(op Opcode, arg int) (int, int, bool) {
	switch op {
	case CALL:
		return arg + 2, 1, true
	case CALL_FUNCTION_EX:
		return 3 + arg&1, 1, true
	case BINARY_OP, BINARY_SUBSCR, COMPARE_OP, CONTAINS_OP, IS_OP:
		return 2, 1, true
	case STORE_SUBSCR:
		return 3, 0, true
	case STORE_ATTR:
		return 2, 0, true
	case LOAD_ATTR, UNARY_NEGATIVE, UNARY_POSITIVE, UNARY_INVERT, UNARY_NOT:
		return 1, 1, true
	case DELETE_SUBSCR:
		return 2, 0, true
	case FORMAT_VALUE:
		if arg&0x04 != 0 {
			return 2, 1, true
		}
		return 1, 1, true
	}
	return 0, 0, false
}

// breakTail emits the state at the break, the break instruction, and the hand-over to the
// resume function(s). Only the instruction's operands are pushed: the stack items below them
// (and NULLs among them) go straight to the resume function, whose prologue pushes them back.
func (g *codeGen) breakTail(cap *Capture) error {
	b := cap.Break
	ci := g.ci
	c := ci.code
	in := b.Instr
	unsup := func(format string, args ...any) error {
		return &Unsupported{Reason: fmt.Sprintf(format, args...), Where: b.Reason.Where, RootPC: -1}
	}
	if in.Pos.HasLine() {
		// The eagerly run instruction (and anything it raises) is at the user's line.
		g.pos = in.Pos
	}
	// Live locals: bound variables. A cell variable is handed on as its contents (the resume
	// function's MAKE_CELL makes a new cell of it) while no closure was made with the cell; a
	// closure made before the break would keep the old cell, so that makes the frame
	// non-resumable. An empty cell is not live (MAKE_CELL makes it empty again).
	var live []int
	var liveVals []Value
	for i := 0; i < ci.freeBase; i++ {
		v := b.Locals[i]
		if v == nil {
			continue
		}
		if cell, isCell := v.(*CellV); isCell {
			if cell.Captured {
				return unsup("graph break while variable %s is captured by a closure", ci.lpNames[i])
			}
			if cell.Contents == nil {
				continue
			}
			v = cell.Contents
		} else if i >= len(c.VarNames) {
			continue
		}
		live = append(live, i)
		liveVals = append(liveVals, v)
	}
	// The exit of an active with block (at most one, at the bottom).
	var exitCtx *GradModeV
	base := 0
	for i, v := range b.Stack {
		x, ok := v.(*ExitV)
		if !ok {
			continue
		}
		gm, isGrad := x.Ctx.(*GradModeV)
		switch {
		case i != 0 || exitCtx != nil:
			return unsup("graph break inside nested with blocks")
		case !isGrad:
			return unsup("graph break inside a with block of %s", x.Ctx.Describe())
		}
		exitCtx, base = gm, 1
	}
	// Operands of the instruction: the top of the stack.
	var pops, pushes int
	switch {
	case in.Op.IsJump():
		pops = 1
	default:
		var ok bool
		if pops, pushes, ok = operandCounts(in.Op, in.Arg); !ok {
			return unsup("graph break at %s", in.Op)
		}
	}
	depth := len(b.Stack)
	if pops > depth-base {
		return fmt.Errorf("ptgo BUG: %s pops %d of a %d-item stack", in.Op, pops, depth-base)
	}
	lower := b.Stack[base : depth-pops]
	operands := b.Stack[depth-pops:]
	// Everything rebuilt before anything is written or run.
	slotOf := func(vals []Value) ([]int, error) {
		slots := make([]int, len(vals))
		for i, v := range vals {
			if _, isNull := v.(NullV); isNull {
				slots[i] = -1
				continue
			}
			slot, err := g.toTemp(v)
			if err != nil {
				return nil, err
			}
			slots[i] = slot
		}
		return slots, nil
	}
	lowerSlots, err := slotOf(lower)
	if err != nil {
		return err
	}
	operandSlots, err := slotOf(operands)
	if err != nil {
		return err
	}
	localSlots := make([]int, len(live))
	for k := range live {
		slot, err := g.toTemp(liveVals[k])
		if err != nil {
			return err
		}
		localSlots[k] = slot
	}
	if err := g.replayEffects(cap.Effects); err != nil {
		return err
	}
	if exitCtx != nil {
		cls, args := gradModeCtor(g.env, g.api, exitCtx)
		g.emit(PUSH_NULL, 0)
		g.loadConst(cls)
		for _, a := range args {
			g.loadConst(a)
		}
		g.emit(PRECALL, len(args))
		g.emit(CALL, len(args))
		g.emit(BEFORE_WITH, 0)
		g.emit(POP_TOP, 0)
	}
	for _, slot := range operandSlots {
		if slot < 0 {
			g.emit(PUSH_NULL, 0)
		} else {
			g.emit(LOAD_FAST, slot)
		}
	}
	if len(b.KwNames) > 0 {
		objs := make([]py.Obj, len(b.KwNames))
		for i, k := range b.KwNames {
			objs[i] = g.api.NewStr(k)
		}
		g.emit(KW_NAMES, g.constIndex(g.api.NewTuple(objs)))
	}
	h := &handOver{g: g, live: live, localSlots: localSlots, lower: lower, lowerSlots: lowerSlots, exitCtx: exitCtx}
	// The instruction itself, protected like the body of the with block when one is active.
	start := g.b.Here()
	var excLabel Label
	protect := func() {
		if exitCtx != nil {
			excLabel = g.b.NewLabel()
			g.b.Handle(start, g.b.Here(), excLabel, 1, true)
		}
	}
	if in.Op.IsJump() {
		taken := g.b.NewLabel()
		g.b.Jump(in.Op, taken, g.pos)
		protect()
		if err := h.emit(b.Index+1, 0); err != nil {
			return err
		}
		g.b.Bind(taken)
		target, ok := g.ci.index[in.Target]
		if !ok {
			return fmt.Errorf("ptgo BUG: jump target %d", in.Target)
		}
		kept := 0
		if in.Op == JUMP_IF_TRUE_OR_POP || in.Op == JUMP_IF_FALSE_OR_POP {
			kept = 1 // the condition stays on the stack on the jumping path
		}
		if err := h.emit(target, kept); err != nil {
			return err
		}
	} else {
		if err := g.emitOriginal(in); err != nil {
			return err
		}
		protect()
		if err := h.emit(b.Index+1, pushes); err != nil {
			return err
		}
	}
	if exitCtx != nil {
		g.withCleanup(excLabel)
	}
	return nil
}

// handOver continues a break in a resume function.
type handOver struct {
	g          *codeGen
	live       []int
	localSlots []int
	lower      []Value
	lowerSlots []int
	exitCtx    *GradModeV
}

// emit stores the results the instruction left on the stack (results items), leaves the with
// block, and returns resume(lower..., results..., live locals...), the resume function
// continuing at instruction target.
func (h *handOver) emit(target, results int) error {
	g := h.g
	layout := &resumeLayout{target: target, locals: h.live}
	resSlots := make([]int, results)
	for i := results - 1; i >= 0; i-- {
		resSlots[i] = g.temp()
		g.emit(STORE_FAST, resSlots[i])
	}
	if h.exitCtx != nil {
		// __exit__(None, None, None), as CPython does at the end of a with block.
		for i := 0; i < 3; i++ {
			g.loadConst(g.api.None())
		}
		g.emit(PRECALL, 2)
		g.emit(CALL, 2)
		g.emit(POP_TOP, 0)
		cls, args := gradModeCtor(g.env, g.api, h.exitCtx)
		layout.stack = append(layout.stack, resumeSlot{exit: true, ctx: cls, ctxArgs: args})
	}
	var argSlots []int
	for i := range h.lower {
		if h.lowerSlots[i] < 0 {
			layout.stack = append(layout.stack, resumeSlot{null: true})
			continue
		}
		layout.stack = append(layout.stack, resumeSlot{})
		argSlots = append(argSlots, h.lowerSlots[i])
	}
	for _, s := range resSlots {
		layout.stack = append(layout.stack, resumeSlot{})
		argSlots = append(argSlots, s)
	}
	rc, err := resumeCode(g.env, g.codeObj, g.ci, layout)
	if err != nil {
		return err
	}
	g.emit(PUSH_NULL, 0)
	c := g.ci.code
	if n := len(c.FreeVars); n > 0 {
		for i := 0; i < n; i++ {
			g.deref(LOAD_CLOSURE, g.ci.freeBase+i)
		}
		g.emit(BUILD_TUPLE, n)
		g.loadConst(rc)
		g.emit(MAKE_FUNCTION, 0x08)
	} else {
		g.loadConst(rc)
		g.emit(MAKE_FUNCTION, 0)
	}
	for _, s := range argSlots {
		g.emit(LOAD_FAST, s)
	}
	for _, s := range h.localSlots {
		g.emit(LOAD_FAST, s)
	}
	n := layout.nargs()
	g.emit(PRECALL, n)
	g.emit(CALL, n)
	g.emit(RETURN_VALUE, 0)
	return nil
}

// withCleanup emits CPython's handler for an exception inside a with block: call
// __exit__(type, value, traceback) and re-raise unless it returns true.
func (g *codeGen) withCleanup(exc Label) {
	g.b.Bind(exc)
	excStart := exc
	g.emit(PUSH_EXC_INFO, 0)
	g.emit(WITH_EXCEPT_START, 0)
	suppress := g.b.NewLabel()
	g.b.Jump(POP_JUMP_FORWARD_IF_TRUE, suppress, g.pos)
	g.emit(RERAISE, 2)
	cleanup := g.b.Here()
	g.emit(COPY, 3)
	g.emit(POP_EXCEPT, 0)
	g.emit(RERAISE, 1)
	g.b.Bind(suppress)
	supStart := suppress
	g.emit(POP_TOP, 0)
	supEnd := g.b.Here()
	g.emit(POP_EXCEPT, 0)
	g.emit(POP_TOP, 0)
	g.emit(POP_TOP, 0)
	g.loadConst(g.api.None())
	g.emit(RETURN_VALUE, 0)
	g.b.Handle(excStart, cleanup, cleanup, 3, true)
	g.b.Handle(supStart, supEnd, cleanup, 3, true)
}

// emitOriginal re-emits an instruction of the captured code in the transformed code, mapping
// its constant, name and variable arguments to the new tables.
func (g *codeGen) emitOriginal(in Instr) error {
	arg := in.Arg
	switch {
	case in.Op.UsesConst():
		arg = g.constIndex(g.ci.consts[in.Arg])
	case in.Op.UsesName():
		switch in.Op {
		case LOAD_GLOBAL:
			arg = g.nameIndex(g.ci.code.Names[in.Arg>>1])<<1 | in.Arg&1
		default:
			arg = g.nameIndex(g.ci.code.Names[in.Arg])
		}
	case localArgOps[in.Op]:
		if in.Arg >= len(g.ci.code.VarNames) {
			g.deref(in.Op, in.Arg)
			return nil
		}
	}
	if in.Op == CALL {
		g.emit(PRECALL, in.Arg)
	}
	g.emit(in.Op, arg)
	return nil
}

// rebuildSym computes a dynamic size in the transformed code: c + Σ coef·Π src.size(dim), from
// the tensors each symbol is read from.
func (g *codeGen) rebuildSym(s primtorch.SymInt) error {
	c, terms := s.Terms()
	g.loadConst(g.api.NewInt(c))
	for _, t := range terms {
		g.loadConst(g.api.NewInt(t.Coef))
		for _, id := range t.Syms {
			if d, ok := s.Env().Derived(id); ok {
				// floor(num / div) of the symbols it is defined by
				if err := g.rebuildSym(d.Num.Resolve()); err != nil {
					return err
				}
				g.loadConst(g.api.NewInt(d.Div))
				g.emit(BINARY_OP, nbFloorDivide)
				g.emit(BINARY_OP, nbMultiply)
				continue
			}
			if id >= len(g.symSrc) || g.symSrc[id].src == nil {
				return &Unsupported{Reason: "a dynamic size whose source is unknown is live where the compiled code hands over to Python", RootPC: -1}
			}
			src := g.symSrc[id]
			if err := g.loadSource(src.src); err != nil {
				return err
			}
			switch {
			case src.dim >= 0:
				g.emit(LOAD_METHOD, g.nameIndex("size"))
				g.loadConst(g.api.NewInt(int64(src.dim)))
				g.emit(PRECALL, 1)
				g.emit(CALL, 1)
			case src.dim == offsetDim:
				g.emit(LOAD_METHOD, g.nameIndex("storage_offset"))
				g.emit(PRECALL, 0)
				g.emit(CALL, 0)
			}
			g.emit(BINARY_OP, nbMultiply)
		}
		g.emit(BINARY_OP, nbAdd)
	}
	return nil
}

// BINARY_OP arguments (CPython's NB_ADD, NB_MULTIPLY; dis._nb_ops).
const (
	nbAdd         = 0
	nbFloorDivide = 2
	nbMultiply    = 5
)
