package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
)

// Transformed code for a captured frame: call the compiled graph with the inputs read from
// their sources, then rebuild the frame's return value from the graph's outputs and constants.
//
//	RESUME 0
//	COPY_FREE_VARS n          (when the code has free variables)
//	PUSH_NULL
//	LOAD_CONST <compiled graph>
//	<load input 0> ... <load input k-1>
//	PRECALL k; CALL k
//	STORE_FAST __ptgo_out
//	<rebuild the result>
//	RETURN_VALUE
//
// The code keeps the original's argument slots (flattened signature: every argument
// positional), globals, cells and free variables, so the shim calls it with the frame's
// localsplus directly (DESIGN D2).

// codeGen accumulates an assembly plus the constant and name tables of the new code object.
type codeGen struct {
	api    py.API
	b      *Builder
	pos    Position
	consts []py.Obj
	names  []string
	nameIx map[string]int
	ci     *codeInfo
	outVar int // localsplus index of __ptgo_out
	nvars  int // co_varnames of the new code
	outIdx map[*TensorV]int
	env    *Env
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

func (g *codeGen) emit(op Opcode, arg int) { g.b.Add(op, arg, g.pos) }

func (g *codeGen) loadConst(o py.Obj) { g.emit(LOAD_CONST, g.constIndex(o)) }

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
		g.emit(LOAD_DEREF, g.ci.freeBase+s.Index)
	case *ConstSource:
		g.loadConst(s.Obj)
	case *AttrSource:
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.emit(LOAD_ATTR, g.nameIndex(s.Attr))
	case *DictItemSource:
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.loadConst(g.api.NewStr(s.Key))
		g.emit(BINARY_SUBSCR, 0)
	case *IndexSource:
		if err := g.loadSource(s.Base); err != nil {
			return err
		}
		g.loadConst(g.api.NewInt(int64(s.Index)))
		g.emit(BINARY_SUBSCR, 0)
	default:
		return fmt.Errorf("ptgo BUG: codegen: cannot load source %T", s)
	}
	return nil
}

// rebuild emits bytecode that pushes a value of the frame's result.
func (g *codeGen) rebuild(v Value) error {
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
			return fmt.Errorf("ptgo BUG: codegen: result tensor %s is not a graph output", x.Node.Name)
		}
		g.emit(LOAD_FAST, g.outVar)
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
	case *TupleV:
		class := x.Class
		if x.Size {
			class = g.env.Known("torch.Size")
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
	case *DictV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		if x.Class != 0 {
			g.emit(PUSH_NULL, 0)
			g.loadConst(x.Class)
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
			g.emit(PRECALL, 1)
			g.emit(CALL, 1)
		}
	case *ObjV:
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.loadConst(x.Obj)
	case *FuncV:
		if x.Obj == 0 {
			return &Unsupported{Reason: "returning a function defined inside the compiled function"}
		}
		if x.Source != nil {
			return g.loadSource(x.Source)
		}
		g.loadConst(x.Obj)
	case *RangeV, *SliceV, *SetV:
		o, err := materialize(g, v)
		if err != nil {
			return err
		}
		g.loadConst(o)
	default:
		return &Unsupported{Reason: "returning " + v.Describe() + " from a compiled function"}
	}
	return nil
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
				return 0, &Unsupported{Reason: "returning a slice of non-constants"}
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
				return 0, &Unsupported{Reason: "returning a set of non-constants"}
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

// TransformedCode builds the code object that replaces a captured frame: it calls compiled
// (the backend's callable for cap.Graph) and rebuilds the return value.
func TransformedCode(env *Env, codeObj py.Obj, cap *Capture, compiled py.Obj) (py.Obj, *Assembly, error) {
	api := env.API
	ci, err := env.code(codeObj)
	if err != nil {
		return 0, nil, err
	}
	c := ci.code
	g := &codeGen{api: api, b: NewBuilder(c.FirstLineNo), pos: Position{Line: c.FirstLineNo, EndLine: c.FirstLineNo, Col: -1, EndCol: -1},
		nameIx: map[string]int{}, ci: ci, outIdx: map[*TensorV]int{}, env: env}
	// Extra local for the graph's outputs: appended to co_varnames, which shifts the cell and
	// free variable slots by one; argument slots are unchanged.
	varnames := append(append([]string(nil), c.VarNames...), "__ptgo_out")
	g.outVar = len(c.VarNames)
	g.ci = &codeInfo{freeBase: ci.freeBase + 1}
	for i, o := range cap.Outputs {
		g.outIdx[o] = i
	}
	g.emit(RESUME, 0)
	if n := len(c.FreeVars); n > 0 {
		g.emit(COPY_FREE_VARS, n)
	}
	g.emit(PUSH_NULL, 0)
	g.loadConst(compiled)
	for _, in := range cap.Inputs {
		if err := g.loadSource(in.Source); err != nil {
			return 0, nil, err
		}
	}
	g.emit(PRECALL, len(cap.Inputs))
	g.emit(CALL, len(cap.Inputs))
	g.emit(STORE_FAST, g.outVar)
	if err := g.rebuild(cap.Result); err != nil {
		return 0, nil, err
	}
	g.emit(RETURN_VALUE, 0)
	asm, err := g.b.Assembly()
	if err != nil {
		return 0, nil, err
	}
	out, err := Assemble(asm)
	if err != nil {
		return 0, nil, err
	}
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
		return 0, nil, err
	}
	kw := []string{"co_code", "co_consts", "co_names", "co_varnames", "co_nlocals", "co_argcount",
		"co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_stacksize", "co_linetable", "co_exceptiontable",
		"co_name"}
	vals := []py.Obj{
		api.NewBytes(out.Bytecode), api.NewTuple(g.consts), strs(g.names), strs(varnames),
		api.NewInt(int64(len(varnames))), api.NewInt(int64(c.NArgs())), api.NewInt(0), api.NewInt(0),
		api.NewInt(int64(flags)), api.NewInt(int64(out.StackSize)), api.NewBytes(out.LineTable),
		api.NewBytes(out.ExceptionTable), api.NewStr(c.Name),
	}
	code, err := api.Call(replace, vals, kw)
	if err != nil {
		return 0, nil, fmt.Errorf("ptgo BUG: building transformed code for %s: %v", c.QualName, err)
	}
	return code, asm, nil
}
