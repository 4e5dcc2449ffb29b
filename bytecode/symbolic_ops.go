package bytecode

import (
	"ptgo/bytecode/py"
)

// Opcode handlers of the symbolic interpreter, one per CPython 3.11 opcode it supports. An
// opcode with no handler stops capture with "bytecode X is not supported".

func init() {
	for op, h := range map[Opcode]handler{
		NOP: opNop, RESUME: opNop, PRECALL: opNop, EXTENDED_ARG: opNop, CACHE: opNop,
		POP_TOP:   func(t *Tracer, f *frame, in *Instr) error { f.pop(); return nil },
		PUSH_NULL: func(t *Tracer, f *frame, in *Instr) error { f.push(nullV); return nil },
		COPY:      func(t *Tracer, f *frame, in *Instr) error { f.push(f.peek(in.Arg - 1)); return nil },
		SWAP: func(t *Tracer, f *frame, in *Instr) error {
			n := len(f.stack)
			f.stack[n-1], f.stack[n-in.Arg] = f.stack[n-in.Arg], f.stack[n-1]
			return nil
		},
		LOAD_CONST: func(t *Tracer, f *frame, in *Instr) error {
			v, err := t.constant(f.ci, in.Arg)
			if err != nil {
				return err
			}
			f.push(v)
			return nil
		},
		LOAD_FAST: opLoadFast, STORE_FAST: opStoreFast, DELETE_FAST: opDeleteFast,
		LOAD_GLOBAL: opLoadGlobal, STORE_GLOBAL: opStoreGlobal,
		MAKE_CELL: opMakeCell, COPY_FREE_VARS: opCopyFreeVars, LOAD_CLOSURE: opLoadClosure,
		LOAD_DEREF: opLoadDeref, STORE_DEREF: opStoreDeref, LOAD_CLASSDEREF: opLoadDeref,
		LOAD_ATTR: opLoadAttr, LOAD_METHOD: opLoadMethod, STORE_ATTR: opStoreAttr,
		DELETE_ATTR: opDeleteAttr,
		BINARY_OP:   opBinaryOp, BINARY_SUBSCR: opBinarySubscr, STORE_SUBSCR: opStoreSubscr,
		DELETE_SUBSCR:  opDeleteSubscr,
		UNARY_POSITIVE: opUnary, UNARY_NEGATIVE: opUnary, UNARY_INVERT: opUnary, UNARY_NOT: opUnaryNot,
		COMPARE_OP: opCompare, IS_OP: opIs, CONTAINS_OP: opContains,
		BUILD_TUPLE: opBuildTuple, BUILD_LIST: opBuildList, BUILD_SET: opBuildSet,
		BUILD_MAP: opBuildMap, BUILD_CONST_KEY_MAP: opBuildConstKeyMap, BUILD_SLICE: opBuildSlice,
		BUILD_STRING: opBuildString, FORMAT_VALUE: opFormatValue,
		LIST_APPEND: opListAppend, SET_ADD: opSetAdd, MAP_ADD: opMapAdd,
		LIST_EXTEND: opListExtend, SET_UPDATE: opSetUpdate, DICT_UPDATE: opDictUpdate,
		DICT_MERGE: opDictUpdate, LIST_TO_TUPLE: opListToTuple,
		UNPACK_SEQUENCE: opUnpackSequence, UNPACK_EX: opUnpackEx,
		GET_ITER: opGetIter, FOR_ITER: opForIter, GET_LEN: opGetLen,
		JUMP_FORWARD: opJump, JUMP_BACKWARD: opJump, JUMP_BACKWARD_NO_INTERRUPT: opJump,
		POP_JUMP_FORWARD_IF_FALSE: opPopJumpIf, POP_JUMP_FORWARD_IF_TRUE: opPopJumpIf,
		POP_JUMP_BACKWARD_IF_FALSE: opPopJumpIf, POP_JUMP_BACKWARD_IF_TRUE: opPopJumpIf,
		POP_JUMP_FORWARD_IF_NONE: opPopJumpIfNone, POP_JUMP_FORWARD_IF_NOT_NONE: opPopJumpIfNone,
		POP_JUMP_BACKWARD_IF_NONE: opPopJumpIfNone, POP_JUMP_BACKWARD_IF_NOT_NONE: opPopJumpIfNone,
		JUMP_IF_FALSE_OR_POP: opJumpOrPop, JUMP_IF_TRUE_OR_POP: opJumpOrPop,
		KW_NAMES: opKwNames, CALL: opCall, CALL_FUNCTION_EX: opCallFunctionEx,
		MAKE_FUNCTION: opMakeFunction,
		RETURN_VALUE:  opReturn, RETURN_GENERATOR: opReturnGenerator, YIELD_VALUE: opYield,
		BEFORE_WITH: opBeforeWith,
		IMPORT_NAME: opImportName, IMPORT_FROM: opImportFrom,
	} {
		handlers[op] = h
	}
}

func opNop(t *Tracer, f *frame, in *Instr) error { return nil }

func opLoadFast(t *Tracer, f *frame, in *Instr) error {
	v := f.locals[in.Arg]
	if v == nil {
		return f.unsupported("", "local variable %q referenced before assignment", f.ci.lpNames[in.Arg])
	}
	f.push(v)
	return nil
}

func opStoreFast(t *Tracer, f *frame, in *Instr) error {
	f.locals[in.Arg] = f.pop()
	return nil
}

func opDeleteFast(t *Tracer, f *frame, in *Instr) error {
	f.locals[in.Arg] = nil
	return nil
}

func opLoadGlobal(t *Tracer, f *frame, in *Instr) error {
	name := f.ci.code.Names[in.Arg>>1]
	if in.Arg&1 != 0 {
		f.push(nullV)
	}
	v, err := t.loadGlobal(f, name)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opStoreGlobal(t *Tracer, f *frame, in *Instr) error {
	name := f.ci.code.Names[in.Arg]
	v := f.pop()
	switch {
	case f.root:
		t.writeGlobal(f.globals, nil, name, v)
	case f.globSrc != nil:
		t.writeGlobal(f.globals, f.globSrc, name, v)
	default:
		return t.sideEffect(f, "assignment to the global "+name+" of a library module")
	}
	return nil
}

func opMakeCell(t *Tracer, f *frame, in *Instr) error {
	f.locals[in.Arg] = &CellV{Contents: f.locals[in.Arg]}
	return nil
}

func opCopyFreeVars(t *Tracer, f *frame, in *Instr) error {
	cells, err := t.closureCells(f)
	if err != nil {
		return err
	}
	if len(cells) != in.Arg {
		return internalError("closure size mismatch in " + f.ci.code.QualName)
	}
	for i, c := range cells {
		f.locals[f.ci.freeBase+i] = c
	}
	return nil
}

func opLoadClosure(t *Tracer, f *frame, in *Instr) error {
	c, ok := f.locals[in.Arg].(*CellV)
	if !ok {
		return internalError("LOAD_CLOSURE of a non-cell in " + f.ci.code.QualName)
	}
	c.Captured = true
	f.push(c)
	return nil
}

func opLoadDeref(t *Tracer, f *frame, in *Instr) error {
	c, ok := f.locals[in.Arg].(*CellV)
	if !ok {
		return internalError("LOAD_DEREF of a non-cell in " + f.ci.code.QualName)
	}
	if c.Contents == nil {
		return f.unsupported("", "free variable %q referenced before assignment", f.ci.lpNames[in.Arg])
	}
	f.push(c.Contents)
	return nil
}

func opStoreDeref(t *Tracer, f *frame, in *Instr) error {
	c, ok := f.locals[in.Arg].(*CellV)
	if !ok {
		return internalError("STORE_DEREF of a non-cell in " + f.ci.code.QualName)
	}
	if c.Source != nil {
		t.writeCell(c, f.pop())
		return nil
	}
	c.Contents = f.pop()
	return nil
}

func opLoadAttr(t *Tracer, f *frame, in *Instr) error {
	obj := f.pop()
	v, err := t.getAttr(f, obj, f.ci.code.Names[in.Arg])
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

// opLoadMethod pushes (NULL, bound attribute): the interpreter binds methods itself, so the
// unbound-method optimisation CPython uses is not needed.
func opLoadMethod(t *Tracer, f *frame, in *Instr) error {
	obj := f.pop()
	v, err := t.getAttr(f, obj, f.ci.code.Names[in.Arg])
	if err != nil {
		return err
	}
	f.push(nullV)
	f.push(v)
	return nil
}

func opDeleteAttr(t *Tracer, f *frame, in *Instr) error {
	obj, err := t.realize(f, f.pop())
	if err != nil {
		return err
	}
	if o, ok := obj.(*ObjectV); ok {
		return t.delObjectAttr(f, o, f.ci.code.Names[in.Arg])
	}
	return f.unsupported("delete the attribute outside the compiled function", "del of an attribute of %s", obj.Describe())
}

func opStoreAttr(t *Tracer, f *frame, in *Instr) error {
	obj := f.pop()
	val := f.pop()
	return t.setAttr(f, obj, f.ci.code.Names[in.Arg], val)
}

func opBinaryOp(t *Tracer, f *frame, in *Instr) error {
	b := f.pop()
	a := f.pop()
	v, err := t.binaryOp(f, in.Arg, a, b)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opBinarySubscr(t *Tracer, f *frame, in *Instr) error {
	idx := f.pop()
	obj := f.pop()
	v, err := t.getItem(f, obj, idx)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opStoreSubscr(t *Tracer, f *frame, in *Instr) error {
	idx := f.pop()
	obj := f.pop()
	val := f.pop()
	return t.setItem(f, obj, idx, val)
}

func opDeleteSubscr(t *Tracer, f *frame, in *Instr) error {
	idx := f.pop()
	obj := f.pop()
	return t.delItem(f, obj, idx)
}

func opUnary(t *Tracer, f *frame, in *Instr) error {
	v, err := t.unaryOp(f, in.Op, f.pop())
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opUnaryNot(t *Tracer, f *frame, in *Instr) error {
	b, err := t.truthy(f, f.pop())
	if err != nil {
		return err
	}
	f.push(boolV(!b))
	return nil
}

var compareOps = [...]string{"lt", "le", "eq", "ne", "gt", "ge"}

func opCompare(t *Tracer, f *frame, in *Instr) error {
	b := f.pop()
	a := f.pop()
	if in.Arg < 0 || in.Arg >= len(compareOps) {
		return internalError("bad COMPARE_OP arg")
	}
	v, err := t.compare(f, compareOps[in.Arg], a, b)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opIs(t *Tracer, f *frame, in *Instr) error {
	b := f.pop()
	a := f.pop()
	same, err := t.identical(f, a, b)
	if err != nil {
		return err
	}
	f.push(boolV(same != (in.Arg == 1)))
	return nil
}

func opContains(t *Tracer, f *frame, in *Instr) error {
	container := f.pop()
	item := f.pop()
	in1, err := t.contains(f, container, item)
	if err != nil {
		return err
	}
	f.push(boolV(in1 != (in.Arg == 1)))
	return nil
}

func opBuildTuple(t *Tracer, f *frame, in *Instr) error {
	f.push(&TupleV{Items: f.popN(in.Arg)})
	return nil
}

func opBuildList(t *Tracer, f *frame, in *Instr) error {
	f.push(&ListV{Items: f.popN(in.Arg)})
	return nil
}

func opBuildSet(t *Tracer, f *frame, in *Instr) error {
	s := &SetV{}
	for _, it := range f.popN(in.Arg) {
		if err := t.setAdd(f, s, it); err != nil {
			return err
		}
	}
	f.push(s)
	return nil
}

func opBuildMap(t *Tracer, f *frame, in *Instr) error {
	kv := f.popN(2 * in.Arg)
	d := &DictV{}
	for i := 0; i < len(kv); i += 2 {
		if err := t.dictSet(f, d, kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	f.push(d)
	return nil
}

func opBuildConstKeyMap(t *Tracer, f *frame, in *Instr) error {
	keys, ok := f.pop().(*TupleV)
	if !ok {
		return internalError("BUILD_CONST_KEY_MAP without a key tuple")
	}
	vals := f.popN(in.Arg)
	d := &DictV{}
	for i, k := range keys.Items {
		if err := t.dictSet(f, d, k, vals[i]); err != nil {
			return err
		}
	}
	f.push(d)
	return nil
}

func opBuildSlice(t *Tracer, f *frame, in *Instr) error {
	var step Value = noneV
	if in.Arg == 3 {
		step = f.pop()
	}
	stop := f.pop()
	start := f.pop()
	s := &SliceV{Start: start, Stop: stop, Step: step}
	for _, p := range []*Value{&s.Start, &s.Stop, &s.Step} {
		r, err := t.realizeKeepSym(f, *p) // a symbolic bound stays for tensor indexing (metaVal)
		if err != nil {
			return err
		}
		*p = r
	}
	f.push(s)
	return nil
}

func opBuildString(t *Tracer, f *frame, in *Instr) error {
	parts := f.popN(in.Arg)
	s := ""
	for _, p := range parts {
		p, err := t.realize(f, p)
		if err != nil {
			return err
		}
		c, ok := p.(*ConstV)
		if !ok || c.Kind != py.KStr {
			return internalError("BUILD_STRING of a non-string")
		}
		s += c.S
	}
	f.push(strV(s))
	return nil
}

func opFormatValue(t *Tracer, f *frame, in *Instr) error {
	var spec Value = strV("")
	if in.Arg&0x04 != 0 {
		spec = f.pop()
	}
	v, err := t.realize(f, f.pop())
	if err != nil {
		return err
	}
	conv := ""
	switch in.Arg & 0x03 {
	case 1:
		conv = "str"
	case 2:
		conv = "repr"
	case 3:
		conv = "ascii"
	}
	r, err := t.format(f, v, conv, spec)
	if err != nil {
		return err
	}
	f.push(r)
	return nil
}

func opListAppend(t *Tracer, f *frame, in *Instr) error {
	v := f.pop()
	l, ok := f.peek(in.Arg - 1).(*ListV)
	if !ok {
		return internalError("LIST_APPEND to a non-list")
	}
	l.Items = append(l.Items, v)
	return nil
}

func opSetAdd(t *Tracer, f *frame, in *Instr) error {
	v := f.pop()
	s, ok := f.peek(in.Arg - 1).(*SetV)
	if !ok {
		return internalError("SET_ADD to a non-set")
	}
	return t.setAdd(f, s, v)
}

func opMapAdd(t *Tracer, f *frame, in *Instr) error {
	v := f.pop()
	k := f.pop()
	d, ok := f.peek(in.Arg - 1).(*DictV)
	if !ok {
		return internalError("MAP_ADD to a non-dict")
	}
	return t.dictSet(f, d, k, v)
}

func opListExtend(t *Tracer, f *frame, in *Instr) error {
	it := f.pop()
	l, ok := f.peek(in.Arg - 1).(*ListV)
	if !ok {
		return internalError("LIST_EXTEND to a non-list")
	}
	items, err := t.unpack(f, it)
	if err != nil {
		return err
	}
	l.Items = append(l.Items, items...)
	return nil
}

func opSetUpdate(t *Tracer, f *frame, in *Instr) error {
	it := f.pop()
	s, ok := f.peek(in.Arg - 1).(*SetV)
	if !ok {
		return internalError("SET_UPDATE to a non-set")
	}
	items, err := t.unpack(f, it)
	if err != nil {
		return err
	}
	for _, x := range items {
		if err := t.setAdd(f, s, x); err != nil {
			return err
		}
	}
	return nil
}

func opDictUpdate(t *Tracer, f *frame, in *Instr) error {
	src, err := t.realize(f, f.pop())
	if err != nil {
		return err
	}
	d, ok := f.peek(in.Arg - 1).(*DictV)
	if !ok {
		return internalError("DICT_UPDATE to a non-dict")
	}
	other, ok := src.(*DictV)
	if !ok {
		return f.unsupported("", "** unpacking of %s", src.Describe())
	}
	for i, k := range other.Keys {
		if in.Op == DICT_MERGE {
			if _, found, err := t.dictGet(f, d, k); err != nil {
				return err
			} else if found {
				return f.unsupported("", "duplicate keyword argument %s", k.Describe())
			}
		}
		if err := t.dictSet(f, d, k, other.Vals[i]); err != nil {
			return err
		}
	}
	return nil
}

func opListToTuple(t *Tracer, f *frame, in *Instr) error {
	l, ok := f.pop().(*ListV)
	if !ok {
		return internalError("LIST_TO_TUPLE of a non-list")
	}
	f.push(&TupleV{Items: append([]Value(nil), l.Items...)})
	return nil
}

func opUnpackSequence(t *Tracer, f *frame, in *Instr) error {
	items, err := t.unpack(f, f.pop())
	if err != nil {
		return err
	}
	if len(items) != in.Arg {
		return f.unsupported("", "cannot unpack %d values into %d names", len(items), in.Arg)
	}
	for i := len(items) - 1; i >= 0; i-- {
		f.push(items[i])
	}
	return nil
}

func opUnpackEx(t *Tracer, f *frame, in *Instr) error {
	items, err := t.unpack(f, f.pop())
	if err != nil {
		return err
	}
	before, after := in.Arg&0xff, in.Arg>>8
	if len(items) < before+after {
		return f.unsupported("", "not enough values to unpack (expected at least %d, got %d)", before+after, len(items))
	}
	for i := len(items) - 1; i >= len(items)-after; i-- {
		f.push(items[i])
	}
	f.push(&ListV{Items: append([]Value(nil), items[before:len(items)-after]...)})
	for i := before - 1; i >= 0; i-- {
		f.push(items[i])
	}
	return nil
}

func opGetIter(t *Tracer, f *frame, in *Instr) error {
	it, err := t.iter(f, f.pop())
	if err != nil {
		return err
	}
	f.push(it)
	return nil
}

func opForIter(t *Tracer, f *frame, in *Instr) error {
	it, ok := f.peek(0).(*IterV)
	if !ok {
		return f.unsupported("", "iterating over %s, an iterator created outside the compiled code", f.peek(0).Describe())
	}
	v, ok, err := it.next()
	if err != nil {
		return err
	}
	if !ok {
		f.pop()
		f.jump(in.Target)
		return nil
	}
	f.push(v)
	return nil
}

func opGetLen(t *Tracer, f *frame, in *Instr) error {
	n, err := t.length(f, f.peek(0))
	if err != nil {
		return err
	}
	f.push(intV(int64(n)))
	return nil
}

func opJump(t *Tracer, f *frame, in *Instr) error {
	f.jump(in.Target)
	return nil
}

func opPopJumpIf(t *Tracer, f *frame, in *Instr) error {
	v := f.pop()
	want := in.Op == POP_JUMP_FORWARD_IF_TRUE || in.Op == POP_JUMP_BACKWARD_IF_TRUE
	b, err := t.truthy(f, v)
	if err != nil {
		// A branch on a tensor's value whose other side raises: checked after the graph.
		if tv, isTensor := t.realizedTensor(f, v); isTensor {
			if jump, ok := t.assumeBranch(f, in, tv, want); ok {
				if jump {
					f.jump(in.Target)
				}
				return nil
			}
		}
		return err
	}
	if b == want {
		f.jump(in.Target)
	}
	return nil
}

func opPopJumpIfNone(t *Tracer, f *frame, in *Instr) error {
	v, err := t.realizeLazy(f, f.pop())
	if err != nil {
		return err
	}
	if _, isFloat := v.(*SymF); !isFloat { // (a float read at run time is not None)
		if v, err = t.realize(f, v); err != nil {
			return err
		}
	}
	c, isConst := v.(*ConstV)
	isNone := isConst && c.IsNone()
	want := in.Op == POP_JUMP_FORWARD_IF_NONE || in.Op == POP_JUMP_BACKWARD_IF_NONE
	if isNone == want {
		f.jump(in.Target)
	}
	return nil
}

func opJumpOrPop(t *Tracer, f *frame, in *Instr) error {
	b, err := t.truthy(f, f.peek(0))
	if err != nil {
		return err
	}
	if b == (in.Op == JUMP_IF_TRUE_OR_POP) {
		f.jump(in.Target)
	} else {
		f.pop()
	}
	return nil
}

func opKwNames(t *Tracer, f *frame, in *Instr) error {
	v, err := t.constant(f.ci, in.Arg)
	if err != nil {
		return err
	}
	tup, ok := v.(*TupleV)
	if !ok {
		return internalError("KW_NAMES without a tuple")
	}
	f.kwNames = f.kwNames[:0]
	for _, it := range tup.Items {
		f.kwNames = append(f.kwNames, it.(*ConstV).S)
	}
	return nil
}

func opCall(t *Tracer, f *frame, in *Instr) error {
	args := f.popN(in.Arg)
	a := f.pop()
	b := f.pop()
	var callee Value
	if _, isNull := b.(NullV); isNull {
		callee = a
	} else {
		callee = b
		args = append([]Value{a}, args...)
	}
	var kw []kwArg
	if n := len(f.kwNames); n > 0 {
		pos := len(args) - n
		for i, name := range f.kwNames {
			kw = append(kw, kwArg{name, args[pos+i]})
		}
		args = args[:pos]
		f.kwNames = f.kwNames[:0]
	}
	v, err := t.call(f, callee, args, kw)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opCallFunctionEx(t *Tracer, f *frame, in *Instr) error {
	var kw []kwArg
	if in.Arg&1 != 0 {
		kv, err := t.realize(f, f.pop())
		if err != nil {
			return err
		}
		d, ok := kv.(*DictV)
		if !ok {
			return f.unsupported("", "** argument of type %s", kv.Describe())
		}
		for i, k := range d.Keys {
			c, ok := k.(*ConstV)
			if !ok || c.Kind != py.KStr {
				return f.unsupported("", "keywords must be strings")
			}
			kw = append(kw, kwArg{c.S, d.Vals[i]})
		}
	}
	args, err := t.unpack(f, f.pop())
	if err != nil {
		return err
	}
	callee := f.pop()
	if _, isNull := f.peek(0).(NullV); isNull {
		f.pop()
	}
	v, err := t.call(f, callee, args, kw)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opMakeFunction(t *Tracer, f *frame, in *Instr) error {
	codeV, ok := f.pop().(*ConstV)
	if !ok || codeV.Kind != py.KCode {
		return internalError("MAKE_FUNCTION without a code object")
	}
	fn := &FuncV{Code: codeV.obj, Globals: f.globals, GlobalsSrc: f.globSrc}
	if in.Arg&0x08 != 0 {
		tup, ok := f.pop().(*TupleV)
		if !ok {
			return internalError("MAKE_FUNCTION closure is not a tuple")
		}
		for _, c := range tup.Items {
			cell, ok := c.(*CellV)
			if !ok {
				return internalError("MAKE_FUNCTION closure item is not a cell")
			}
			fn.Closure = append(fn.Closure, cell)
		}
	}
	if in.Arg&0x04 != 0 {
		f.pop() // annotations
	}
	if in.Arg&0x02 != 0 {
		kd, ok := f.pop().(*DictV)
		if !ok {
			return internalError("MAKE_FUNCTION kwdefaults is not a dict")
		}
		fn.KwDefaults = kd
	}
	if in.Arg&0x01 != 0 {
		d, err := t.realize(f, f.pop())
		if err != nil {
			return err
		}
		tup, ok := d.(*TupleV)
		if !ok {
			return internalError("MAKE_FUNCTION defaults is not a tuple")
		}
		fn.Defaults = tup.Items
	}
	ci, err := t.env.code(fn.Code)
	if err != nil {
		return err
	}
	fn.Name, fn.QualName = ci.code.Name, ci.code.QualName
	f.push(fn)
	return nil
}

func opReturn(t *Tracer, f *frame, in *Instr) error {
	f.retval = f.pop()
	f.returned = true
	return nil
}

func opReturnGenerator(t *Tracer, f *frame, in *Instr) error {
	if !f.gen {
		return f.unsupported("", "generator function")
	}
	f.push(noneV) // the value the first send() resumes with; POP_TOP follows
	return nil
}

func opYield(t *Tracer, f *frame, in *Instr) error {
	if !f.gen {
		return f.unsupported("", "yield outside an inlined generator")
	}
	f.yields = append(f.yields, f.pop())
	f.push(noneV)
	return nil
}

func opBeforeWith(t *Tracer, f *frame, in *Instr) error {
	mgr, err := t.realize(f, f.pop())
	if err != nil {
		return err
	}
	enter, err := t.enterContext(f, mgr)
	if err != nil {
		return err
	}
	f.push(&ExitV{Ctx: mgr})
	f.push(enter)
	return nil
}

func opImportName(t *Tracer, f *frame, in *Instr) error {
	fromlist := f.pop()
	level := f.pop()
	name := f.ci.code.Names[in.Arg]
	v, err := t.importName(f, name, fromlist, level)
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}

func opImportFrom(t *Tracer, f *frame, in *Instr) error {
	v, err := t.getAttr(f, f.peek(0), f.ci.code.Names[in.Arg])
	if err != nil {
		return err
	}
	f.push(v)
	return nil
}
