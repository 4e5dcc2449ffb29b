package bytecode

import (
	"fmt"
	"strings"

	"ptgo/bytecode/py"
)

// Resume functions continue a frame after a graph break (PT2_INTERNALS §1): a copy of the
// frame's code whose prologue takes the stack values and live locals as arguments, re-enters
// the context managers active at the break, and jumps to the instruction after the break. They
// are ordinary functions, so the frame hook captures them in turn (each may break again).
//
// The code object is built once per (code, break target, layout) and cached in
// ptgo._runtime.resume_cache; the transformed code makes a function of it with MAKE_FUNCTION
// (the frame's globals and closure), like a nested def.

// resumeSlot is one value of the stack at the resume point.
type resumeSlot struct {
	// exit is set for the __exit__ of an active with block: the prologue re-enters ctx, a
	// class called with ctxArgs (torch.set_grad_enabled(False)).
	exit    bool
	ctx     py.Obj
	ctxArgs []py.Obj
	// null is the NULL CPython keeps below a callable being set up (PUSH_NULL in the prologue).
	null bool
}

// resumeLayout describes a resume function's arguments.
type resumeLayout struct {
	target int          // instruction index (in the decoded code) to continue at
	stack  []resumeSlot // the stack at target, bottom first
	locals []int        // localsplus indices of the live locals passed, in order
}

func (l *resumeLayout) key(ci *codeInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d|", ci.instrs[l.target].Offset)
	for _, s := range l.stack {
		switch {
		case s.exit:
			fmt.Fprintf(&b, "E%x/%d,", uintptr(s.ctx), len(s.ctxArgs))
		case s.null:
			b.WriteString("N,")
		default:
			b.WriteString("v,")
		}
	}
	b.WriteString("|")
	for _, i := range l.locals {
		fmt.Fprintf(&b, "%d,", i)
	}
	return b.String()
}

// resumeArgs is the number of arguments a resume function with this layout takes.
func (l *resumeLayout) nargs() int {
	n := len(l.locals)
	for _, s := range l.stack {
		if !s.exit && !s.null {
			n++
		}
	}
	return n
}

// resumeCode returns the code object of the resume function for layout (cached).
func resumeCode(env *Env, codeObj py.Obj, ci *codeInfo, l *resumeLayout) (py.Obj, error) {
	api := env.API
	key := api.NewStr(l.key(ci))
	if c, err := env.callRuntime("get_resume", codeObj, key); err == nil && api.Kind(c) == py.KCode {
		return c, nil
	}
	c, err := buildResumeCode(env, codeObj, ci, l)
	if err != nil {
		return 0, err
	}
	if _, err := env.callRuntime("put_resume", codeObj, key, c); err != nil {
		return 0, err
	}
	return c, nil
}

// localArgOps are the opcodes whose argument is a localsplus index.
var localArgOps = map[Opcode]bool{LOAD_FAST: true, STORE_FAST: true, DELETE_FAST: true, MAKE_CELL: true,
	LOAD_CLOSURE: true, LOAD_DEREF: true, STORE_DEREF: true, DELETE_DEREF: true, LOAD_CLASSDEREF: true}

func buildResumeCode(env *Env, codeObj py.Obj, ci *codeInfo, l *resumeLayout) (py.Obj, error) {
	api := env.API
	c := ci.code
	asm, err := Disassemble(c)
	if err != nil {
		return 0, err
	}
	// The decoded instruction at l.target is the assembly instruction at the same offset.
	target := -1
	k := 0
	for i, in := range ci.instrs {
		if in.Op == EXTENDED_ARG {
			continue
		}
		if i == l.target {
			target = k
		}
		k++
	}
	if target < 0 {
		return 0, internalError("resume target is an EXTENDED_ARG prefix")
	}
	// New variable names: stack arguments, live locals, then the other variables. A stack
	// argument's name is none of the code's own (a resume function resumed again has a
	// ___stack0 of its own, live or not).
	var varnames []string
	taken := map[string]bool{}
	for _, name := range ci.lpNames {
		taken[name] = true
	}
	for i, s := range l.stack {
		if !s.exit && !s.null {
			name := fmt.Sprintf("___stack%d", i)
			for k := 1; taken[name]; k++ {
				name = fmt.Sprintf("___stack%d_%d", i, k)
			}
			taken[name] = true
			varnames = append(varnames, name)
		}
	}
	used := map[string]bool{}
	for _, idx := range l.locals {
		name := ci.lpNames[idx]
		varnames = append(varnames, name)
		used[name] = true
	}
	nargs := len(varnames)
	for _, v := range c.VarNames {
		if !used[v] {
			varnames = append(varnames, v)
		}
	}
	newLP := (&Code{VarNames: varnames, CellVars: c.CellVars, FreeVars: c.FreeVars}).LocalsPlusNames()
	remap := make([]int, len(ci.lpNames))
	for old, name := range ci.lpNames {
		remap[old] = -1
		// Free variables come last in both layouts; names may repeat between a cell and a free
		// variable only in class bodies, which are never captured.
		for n, nn := range newLP {
			if nn == name {
				remap[old] = n
				break
			}
		}
		if remap[old] < 0 {
			return 0, internalError("resume: variable " + name + " lost in the new layout")
		}
	}
	for i := range asm.Instrs {
		in := &asm.Instrs[i]
		if localArgOps[in.Op] {
			in.Arg = remap[in.Arg]
		}
	}
	// Prologue.
	consts := append([]py.Obj(nil), ci.consts...)
	constIdx := func(o py.Obj) int {
		consts = append(consts, o)
		return len(consts) - 1
	}
	pos := asm.Instrs[target].Pos
	var pro []AsmInstr
	add := func(op Opcode, arg int) { pro = append(pro, AsmInstr{Op: op, Arg: arg, Target: -1, Pos: pos}) }
	for _, cv := range c.CellVars {
		add(MAKE_CELL, indexOf(newLP, cv))
	}
	if n := len(c.FreeVars); n > 0 {
		add(COPY_FREE_VARS, n)
	}
	add(RESUME, 0)
	argi := 0
	for _, s := range l.stack {
		if s.exit {
			add(PUSH_NULL, 0)
			add(LOAD_CONST, constIdx(s.ctx))
			for _, a := range s.ctxArgs {
				add(LOAD_CONST, constIdx(a))
			}
			add(PRECALL, len(s.ctxArgs))
			add(CALL, len(s.ctxArgs))
			add(BEFORE_WITH, 0)
			add(POP_TOP, 0)
			continue
		}
		if s.null {
			add(PUSH_NULL, 0)
			continue
		}
		add(LOAD_FAST, argi)
		argi++
	}
	if argi > 0 && c.ArgCount > 0 && len(l.locals) > 0 && l.locals[0] == 0 && indexOf(c.FreeVars, "__class__") >= 0 {
		// Zero-argument super() reads local slot 0 as the method's self; here slot 0 is the
		// first stack argument, pushed above and dead from now on: self goes there.
		add(LOAD_FAST, remap[0])
		add(STORE_FAST, 0)
	}
	pro = append(pro, AsmInstr{Op: JUMP_FORWARD, Target: -1, Pos: pos})
	asm.Insert(0, pro...)
	asm.Instrs[len(pro)-1].Target = target + len(pro)
	out, err := Assemble(asm)
	if err != nil {
		return 0, fmt.Errorf("ptgo BUG: assembling the resume function of %s at offset %d: %w", c.QualName, ci.instrs[l.target].Offset, err)
	}
	strs := func(xs []string) py.Obj {
		objs := make([]py.Obj, len(xs))
		for i, x := range xs {
			objs[i] = api.NewStr(x)
		}
		return api.NewTuple(objs)
	}
	name := fmt.Sprintf("__resume_at_%d", ci.instrs[l.target].Offset)
	qual := c.QualName
	if i := strings.Index(qual, ".__resume_at_"); i >= 0 {
		qual = qual[:i] // a resume function of a resume function is named after the original
	}
	flags := c.Flags &^ (CO_VARARGS | CO_VARKEYWORDS)
	replace, err := api.GetAttr(codeObj, "replace")
	if err != nil {
		return 0, err
	}
	kw := []string{"co_code", "co_consts", "co_varnames", "co_nlocals", "co_argcount", "co_posonlyargcount",
		"co_kwonlyargcount", "co_flags", "co_stacksize", "co_linetable", "co_exceptiontable", "co_name", "co_qualname"}
	vals := []py.Obj{api.NewBytes(out.Bytecode), api.NewTuple(consts), strs(varnames), api.NewInt(int64(len(varnames))),
		api.NewInt(int64(nargs)), api.NewInt(0), api.NewInt(0), api.NewInt(int64(flags)), api.NewInt(int64(out.StackSize)),
		api.NewBytes(out.LineTable), api.NewBytes(out.ExceptionTable), api.NewStr(name), api.NewStr(qual + "." + name)}
	code, err := api.Call(replace, vals, kw)
	if err != nil {
		return 0, fmt.Errorf("ptgo BUG: making the resume function of %s: %v", c.QualName, err)
	}
	return code, nil
}
