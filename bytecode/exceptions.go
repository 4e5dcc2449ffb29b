package bytecode

import (
	"errors"
	"fmt"
	"strings"

	"ptgo/bytecode/py"
)

// Exceptions raised and caught inside the traced code. An exception eager would raise — a raise
// statement, a failed assert, a missing key, an exhausted iterator, an import that fails, a
// Python call that raises — travels up the interpreter's frames as a *raised error, as CPython
// unwinds: each frame looks its current instruction up in its exception table, and a handler
// there takes it (the stack cut to the handler's depth, the exception pushed, the jump taken:
// except clauses, with blocks' cleanups and finally blocks then run as bytecode). An exception no
// frame of the trace handles reaches the captured frame as Unsupported — the frame runs eagerly
// and eager raises it — exactly as before exceptions could be caught.
//
//	try:                                  transformers' is_torchdynamo_compiling():
//	    import torch._dynamo as dynamo        ImportError on torch 1.13, caught: False
//	    return dynamo.is_compiling()
//	except Exception:
//	    return False

// ExcV is an exception object: a live instance (raise ValueError("x")), or a class and a
// message for one ptgo detected (made live when the code looks at it).
type ExcV struct {
	Class py.Obj
	Obj   py.Obj // live instance, 0 until needed
	Args  []Value
}

func (e *ExcV) Describe() string { return "exception" }

// raised is an exception unwinding the interpreter's frames. u is what capture reports when no
// frame of the trace handles it.
type raised struct {
	exc *ExcV
	u   *Unsupported
}

func (r *raised) Error() string { return r.u.Error() }

// uncaught is what an exception no handler of the trace catches becomes: a *UserError, so the
// frame runs eagerly and eager raises the exception itself (decision A43).
func (t *Tracer) uncaught(r *raised) error {
	return &UserError{PyType: t.qualName(r.exc.Class), Msg: r.u.Reason, Where: r.u.Where, Stack: r.u.Stack}
}

// Unwrap lets errors.As find the Unsupported (graph-break logic, messages).
func (r *raised) Unwrap() error { return r.u }

// pyRaise is the exception class name (a builtin exception) raised with message msg: an error
// a handler of the traced code may catch, otherwise Unsupported with the hint that eager raises.
func (t *Tracer) pyRaise(f *frame, class string, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	u := f.unsupported("eager raises "+class, "%s", msg).(*Unsupported)
	cls, ok := t.env.TryKnown("builtins." + class)
	if !ok {
		return u
	}
	return &raised{exc: &ExcV{Class: cls, Args: []Value{strV(msg)}}, u: u}
}

// pyRaiseArgs is pyRaise with the exception's arguments given (KeyError(key)); reason
// describes it for the Unsupported an uncaught one becomes.
func (t *Tracer) pyRaiseArgs(f *frame, class string, args []Value, format string, a ...any) error {
	err := t.pyRaise(f, class, format, a...)
	if r, ok := err.(*raised); ok {
		r.exc.Args = args
	}
	return err
}

// raisedFromCall turns the failure of a Python call made while tracing into the exception it
// raised when it is a builtin exception ("KeyError: 'x'"), so handlers can catch it.
func (t *Tracer) raisedFromCall(f *frame, what string, err error) error {
	u := f.unsupported("eager raises it for these inputs", "%s raised %v", what, err).(*Unsupported)
	var pe *py.Error
	if !errors.As(err, &pe) {
		return u
	}
	name, msg, found := strings.Cut(pe.Msg, ": ")
	if !found {
		name, msg = pe.Msg, ""
	}
	cls, ok := t.env.TryKnown("builtins." + name)
	if !ok || t.api.Kind(cls) != py.KType || !t.isSubclass(cls, t.env.Known("builtins.BaseException")) {
		return u
	}
	var args []Value
	if msg != "" {
		args = []Value{strV(msg)}
	}
	return &raised{exc: &ExcV{Class: cls, Args: args}, u: u}
}

// excTable is the frame's decoded exception table.
func (ci *codeInfo) excTable() ([]ExceptEntry, error) {
	if ci.excEntries == nil {
		entries, err := DecodeExceptionTable(ci.code.ExceptionTable)
		if err != nil {
			return nil, err
		}
		ci.excEntries = append([]ExceptEntry{}, entries...)
	}
	return ci.excEntries, nil
}

// handleRaise hands an exception to the handler of frame f's current instruction, if it has one.
func (t *Tracer) handleRaise(f *frame, r *raised) (bool, error) {
	if f.curInstr == nil {
		return false, nil
	}
	entries, err := f.ci.excTable()
	if err != nil {
		return false, err
	}
	off := f.curInstr.Offset
	for _, e := range entries {
		if off < e.Start || off >= e.End {
			continue
		}
		if e.Depth > len(f.stack) {
			return false, internalError(fmt.Sprintf("exception handler depth %d above a stack of %d in %s", e.Depth, len(f.stack), f.ci.code.QualName))
		}
		f.stack = f.stack[:e.Depth]
		if e.Lasti {
			f.push(intV(int64(off)))
		}
		f.push(r.exc)
		f.kwNames = f.kwNames[:0]
		f.jump(e.Target)
		return true, nil
	}
	return false, nil
}

// exceptionOf is the exception a raise statement raises for value v (an instance, or a class
// called without arguments).
func (t *Tracer) exceptionOf(f *frame, v Value) (*ExcV, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	base := t.env.Known("builtins.BaseException")
	switch x := v.(type) {
	case *ExcV:
		return x, nil
	case *ObjV:
		if x.Kind == py.KType && t.isSubclass(x.Obj, base) {
			return &ExcV{Class: x.Obj}, nil
		}
		if typ := t.api.TypeOf(x.Obj); t.isSubclass(typ, base) {
			return &ExcV{Class: typ, Obj: x.Obj}, nil
		}
	}
	return nil, t.pyRaise(f, "TypeError", "exceptions must derive from BaseException")
}

// excObj is the live exception instance (made from its class and arguments on first use).
func (t *Tracer) excObj(f *frame, e *ExcV) (py.Obj, error) {
	if e.Obj != 0 {
		return e.Obj, nil
	}
	args, err := t.toObjs(f, e.Args)
	if err != nil {
		return 0, err
	}
	o, err := t.api.Call(e.Class, args, nil)
	if err != nil {
		return 0, err
	}
	e.Obj = o
	return o, nil
}

// excAttr reads an attribute of an exception: args, __class__, or the live instance's.
func (t *Tracer) excAttr(f *frame, e *ExcV, name string) (Value, error) {
	switch name {
	case "__class__":
		return t.objValue(e.Class, nil), nil
	case "args":
		if e.Obj == 0 {
			return &TupleV{Items: append([]Value(nil), e.Args...)}, nil
		}
	}
	o, err := t.excObj(f, e)
	if err != nil {
		return nil, err
	}
	v, err := t.api.GetAttr(o, name)
	if err != nil {
		return nil, t.raisedFromCall(f, "getattr of an exception", err)
	}
	return t.wrapLive(f, v, nil)
}

// excMatches is isinstance(exc, cls) for an except clause (cls a class or a tuple of them).
func (t *Tracer) excMatches(f *frame, e *ExcV, cls Value) (bool, error) {
	cls, err := t.realize(f, cls)
	if err != nil {
		return false, err
	}
	clsObj, err := t.toObj(f, cls)
	if err != nil {
		return false, err
	}
	r, err := t.api.Call(t.env.Known("builtins.issubclass"), []py.Obj{e.Class, clsObj}, nil)
	if err != nil {
		return false, t.raisedFromCall(f, "an except clause", err)
	}
	return r == t.api.NewBool(true), nil
}

func opPushExcInfo(t *Tracer, f *frame, in *Instr) error {
	v := f.pop()
	var prev Value = noneV
	if n := len(t.handling); n > 0 {
		prev = t.handling[n-1]
	}
	f.push(prev)
	f.push(v)
	e, ok := v.(*ExcV)
	if !ok {
		return internalError("PUSH_EXC_INFO without an exception")
	}
	t.handling = append(t.handling, e)
	return nil
}

func opPopExcept(t *Tracer, f *frame, in *Instr) error {
	f.pop()
	if n := len(t.handling); n > 0 {
		t.handling = t.handling[:n-1]
	}
	return nil
}

func opCheckExcMatch(t *Tracer, f *frame, in *Instr) error {
	cls := f.pop()
	e, ok := f.peek(0).(*ExcV)
	if !ok {
		return internalError("CHECK_EXC_MATCH without an exception")
	}
	m, err := t.excMatches(f, e, cls)
	if err != nil {
		return err
	}
	f.push(boolV(m))
	return nil
}

func opReraise(t *Tracer, f *frame, in *Instr) error {
	e, ok := f.pop().(*ExcV)
	if !ok {
		return internalError("RERAISE without an exception")
	}
	return t.raiseExc(f, e)
}

// raiseExc is the error that unwinds the frames with exception e.
func (t *Tracer) raiseExc(f *frame, e *ExcV) error {
	what := t.qualName(e.Class)
	if e.Obj != 0 {
		what = t.shortRepr(e.Obj)
	} else if len(e.Args) == 1 {
		if c, ok := e.Args[0].(*ConstV); ok && c.Kind == py.KStr {
			what += "(" + pyStrRepr(c.S) + ")"
		}
	}
	u := f.unsupported("eager raises it for these inputs", "user code raises %s while tracing", what).(*Unsupported)
	return &raised{exc: e, u: u}
}

func opRaiseVarargs(t *Tracer, f *frame, in *Instr) error {
	switch in.Arg {
	case 0:
		if n := len(t.handling); n > 0 {
			return t.raiseExc(f, t.handling[n-1])
		}
		return t.pyRaise(f, "RuntimeError", "No active exception to reraise")
	case 2:
		f.pop() // the cause of `raise E from C`, which only a handler looking at __cause__ sees
	}
	e, err := t.exceptionOf(f, f.pop())
	if err != nil {
		return err
	}
	return t.raiseExc(f, e)
}

// opWithExceptStart calls a with block's __exit__ with the exception being handled (the
// cleanup CPython runs when the body raises): the grad-mode managers ptgo models restore the
// mode and return None, so the exception goes on.
func opWithExceptStart(t *Tracer, f *frame, in *Instr) error {
	if len(f.stack) < 4 {
		return internalError("WITH_EXCEPT_START on a short stack")
	}
	exit, ok := f.peek(3).(*ExitV)
	if !ok {
		return f.unsupported("", "an exception leaving a with block of %s", f.peek(3).Describe())
	}
	r, err := t.exitContext(f, exit.Ctx)
	if err != nil {
		return err
	}
	f.push(r)
	return nil
}

func opLoadAssertionError(t *Tracer, f *frame, in *Instr) error {
	f.push(t.objValue(t.env.Known("builtins.AssertionError"), nil))
	return nil
}

func init() {
	handlers[PUSH_EXC_INFO] = opPushExcInfo
	handlers[POP_EXCEPT] = opPopExcept
	handlers[CHECK_EXC_MATCH] = opCheckExcMatch
	handlers[RERAISE] = opReraise
	handlers[RAISE_VARARGS] = opRaiseVarargs
	handlers[WITH_EXCEPT_START] = opWithExceptStart
	handlers[LOAD_ASSERTION_ERROR] = opLoadAssertionError
}
