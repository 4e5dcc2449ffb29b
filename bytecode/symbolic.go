package bytecode

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Unsupported is why capture stopped: something the symbolic interpreter cannot put in a graph.
// The frame then runs eagerly (or, with fullgraph=True, ptgo.Unsupported is raised with it).
type Unsupported struct {
	Reason string // what is not supported
	Where  string // the user's file:line
	Hint   string // what to change
	Stack  []string
	// RootPC is the index of the captured frame's instruction during which it happened (-1:
	// not known yet); that instruction is where a graph break goes.
	RootPC int
}

func (u *Unsupported) Error() string {
	var b strings.Builder
	b.WriteString(u.Reason)
	if u.Where != "" {
		b.WriteString(" (at " + u.Where + ")")
	}
	if u.Hint != "" {
		b.WriteString("; " + u.Hint)
	}
	return b.String()
}

// IsUnsupported reports whether err is (or wraps) an *Unsupported.
func IsUnsupported(err error) bool {
	var u *Unsupported
	return errors.As(err, &u)
}

// UserError is a call eager PyTorch (or Python) rejects for these inputs: shapes that do not
// match, a dtype torch's kernels do not implement, tensors on different devices, a wrong
// argument count, an index out of range. ptgo does not raise it itself: the frame runs eagerly
// under the guards gathered so far (they hold every fact the failure follows from, so it
// happens again whenever they pass, decision A8) and eager raises its own exception with its own
// message and traceback, after exactly the side effects eager applies before the failing
// operation. It never becomes a graph break, and with fullgraph=True it is not ptgo.Unsupported:
// the user gets torch's exception. A meta function stricter than torch therefore costs speed
// (the frame runs eagerly, and succeeds), never a wrong error.
type UserError struct {
	PyType string // the exception class ptgo expects eager to raise ("RuntimeError"); "" if unknown
	Msg    string // what ptgo found wrong (torch's message where ptgo knows it)
	Where  string // the user's file:line
	Stack  []string
}

func (e *UserError) Error() string {
	var b strings.Builder
	if e.PyType != "" {
		b.WriteString(e.PyType + ": ")
	}
	b.WriteString(e.Msg)
	if e.Where != "" {
		b.WriteString(" (at " + e.Where + ")")
	}
	b.WriteString("; eager PyTorch raises it for these inputs, so the frame runs eagerly")
	return b.String()
}

// IsUserError reports whether err is (or wraps) a *UserError.
func IsUserError(err error) bool {
	var u *UserError
	return errors.As(err, &u)
}

// codeInfo is a decoded code object.
type codeInfo struct {
	obj       py.Obj
	code      *Code
	instrs    []Instr
	index     map[int]int // byte offset → instruction index
	consts    []py.Obj
	constVals []Value
	cellNames []string // co_cellvars (in localsplus order after varnames)
	nlocals   int      // len(co_varnames)
	// localsplus layout: varnames, then cellvars that are not arguments, then freevars.
	lpNames []string
	// cellSlot[i] is the localsplus index of co_cellvars[i].
	cellSlot []int
	freeBase int  // localsplus index of the first free variable
	library  int8 // the skip policy's answer for the file: 0 not asked yet, 1 user code, 2 library code
	// excEntries is the decoded exception table (nil until an exception needs it).
	excEntries []ExceptEntry
}

// frame is one activation the interpreter is running: the captured frame or an inlined call.
type frame struct {
	t        *Tracer
	ci       *codeInfo
	fn       *FuncV // the function running (nil for the root frame: rootFn)
	locals   []Value
	stack    []Value
	pc       int
	parent   *frame
	kwNames  []string
	globals  py.Obj
	globSrc  Source // how guards reach globals; GlobalSource-style for the root frame
	root     bool
	depth    int
	gen      bool    // running a generator to completion: YIELD_VALUE collects
	yields   []Value // values yielded so far
	retval   Value
	returned bool
	curInstr *Instr
}

func (f *frame) push(v Value) { f.stack = append(f.stack, v) }

func (f *frame) pop() Value {
	n := len(f.stack)
	if n == 0 {
		panic(internalError("stack underflow in " + f.ci.code.QualName))
	}
	v := f.stack[n-1]
	f.stack = f.stack[:n-1]
	return v
}

func (f *frame) popN(n int) []Value {
	if n > len(f.stack) {
		panic(internalError("stack underflow in " + f.ci.code.QualName))
	}
	out := append([]Value(nil), f.stack[len(f.stack)-n:]...)
	f.stack = f.stack[:len(f.stack)-n]
	return out
}

func (f *frame) peek(i int) Value { return f.stack[len(f.stack)-1-i] }

// where is the current user source location "file.py:12".
func (f *frame) where() string {
	line := f.ci.code.FirstLineNo
	if f.curInstr != nil && f.curInstr.Pos.Line > 0 {
		line = f.curInstr.Pos.Line
	}
	return fmt.Sprintf("%s:%d", f.ci.code.Filename, line)
}

func (f *frame) shortWhere() string {
	line := f.ci.code.FirstLineNo
	if f.curInstr != nil && f.curInstr.Pos.Line > 0 {
		line = f.curInstr.Pos.Line
	}
	return fmt.Sprintf("%s:%d", filepath.Base(f.ci.code.Filename), line)
}

// userWhere is the innermost location that is the user's code (not torch's), for messages.
func (f *frame) userWhere() string {
	for g := f; g != nil; g = g.parent {
		if !g.isLibrary() {
			return g.where()
		}
	}
	return f.where()
}

// isLibrary reports whether the frame runs library code (Env.CodeOwner): torch's, the standard
// library's, ptgo's.
func (f *frame) isLibrary() bool {
	if f.ci.library == 0 {
		f.ci.library = 1
		if f.t.env.IsLibraryFile(f.ci.code.Filename) {
			f.ci.library = 2
		}
	}
	return f.ci.library == 2
}

// internalError is a ptgo bug found during tracing; recovered at the pybridge boundary.
type internalError string

func (e internalError) Error() string { return "ptgo BUG: " + string(e) }

// unsupported builds an *Unsupported at the current instruction.
func (f *frame) unsupported(hint string, format string, args ...any) error {
	u := &Unsupported{Reason: fmt.Sprintf(format, args...), Where: f.userWhere(), Hint: hint, RootPC: -1}
	for g := f; g != nil; g = g.parent {
		u.Stack = append(u.Stack, fmt.Sprintf("%s (%s)", g.ci.code.QualName, g.where()))
	}
	return u
}

// userError builds a *UserError at the current instruction: eager raises pyType (when known)
// for these inputs. Inside a try block of the traced code the exception may be caught there
// rather than reach the user, so it is control flow ptgo cannot trace: unsupported.
func (f *frame) userError(pyType string, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if f.inTry() {
		what := msg
		if pyType != "" {
			what = pyType + ": " + msg
		}
		return f.unsupported("", "an exception inside a try block (%s)", what)
	}
	e := &UserError{PyType: pyType, Msg: msg, Where: f.userWhere()}
	for g := f; g != nil; g = g.parent {
		e.Stack = append(e.Stack, fmt.Sprintf("%s (%s)", g.ci.code.QualName, g.where()))
	}
	return e
}

// inTry reports whether the current instruction of f, or the call instruction of a frame that
// inlined it, is inside a try block (with blocks' cleanup handlers do not count: the grad-mode
// managers ptgo traces never swallow exceptions).
func (f *frame) inTry() bool {
	for g := f; g != nil; g = g.parent {
		if g.curInstr == nil {
			continue
		}
		entries, err := DecodeExceptionTable(g.ci.code.ExceptionTable)
		if err != nil {
			return true
		}
		for _, e := range entries {
			if g.curInstr.Offset >= e.Start && g.curInstr.Offset < e.End && !isWithCleanup(g.ci, e.Target) {
				return true
			}
		}
	}
	return false
}

type handler func(t *Tracer, f *frame, in *Instr) error

var handlers [256]handler

func (t *Tracer) runFrame(f *frame) (Value, error) {
	instrs := f.ci.instrs
	for !f.returned {
		if f.pc < 0 || f.pc >= len(instrs) {
			return nil, internalError(fmt.Sprintf("pc %d out of range in %s", f.pc, f.ci.code.QualName))
		}
		if f.root && f.pc == t.stopAt {
			return nil, errStopped
		}
		in := &instrs[f.pc]
		f.curInstr = in
		f.pc++
		t.steps++
		if t.steps > t.maxSteps {
			return nil, f.unsupported("the loop is unrolled completely while tracing; run it in a helper decorated with ptgo.disable, or make its trip count smaller",
				"capture interpreted more than %d instructions (a long or unbounded loop)", t.maxSteps)
		}
		h := handlers[in.Op]
		if h == nil {
			return nil, f.unsupported("", "bytecode %s is not supported", in.Op)
		}
		if err := h(t, f, in); err != nil {
			if r, ok := err.(*raised); ok {
				// An exception of the traced code: this frame's handler, or the caller's.
				handled, herr := t.handleRaise(f, r)
				if herr != nil {
					return nil, herr
				}
				if handled {
					continue
				}
				if f.root {
					// No handler in the trace: eager raises it for these inputs, a user error
					// (the frame runs eagerly under the guards so far).
					err = t.uncaught(r)
				}
			}
			var u *Unsupported
			if f.root && errors.As(err, &u) && u.RootPC < 0 {
				u.RootPC = f.pc - 1
			}
			return nil, err
		}
	}
	return f.retval, nil
}

// jump moves to the instruction at byte offset target.
func (f *frame) jump(target int) {
	idx, ok := f.ci.index[target]
	if !ok {
		panic(internalError(fmt.Sprintf("jump to offset %d which starts no instruction in %s", target, f.ci.code.QualName)))
	}
	f.pc = idx
}

// Tracer captures one frame into one graph.
type Tracer struct {
	env      *Env
	api      py.API
	graph    *fxgraph.Graph
	guards   *Guards
	steps    int
	maxSteps int
	maxDepth int

	rootCode   *codeInfo
	rootFunc   py.Obj
	args       []py.Obj
	rootModule py.Obj // FrameRequest.Root

	gradEnabled bool
	autocast    autocastTrace
	// dynamic is the dynamic-shapes policy; shapes holds the trace's size symbols (nil until an
	// input gets one), symByHint the symbol of each size (duck shaping), symSources where each
	// symbol is read (symint.go).
	dynamic    DynamicMode
	shapes     *primtorch.ShapeEnv
	symByHint  map[int64]primtorch.SymInt
	symSources []symSource
	// floatSources says where each float symbol is read, floatByName the SymF of each source
	// (symfloat.go).
	floatSources []floatSource
	floatByName  map[string]*SymF
	// inputs are the graph's placeholders in order, with where they come from.
	inputs []*TensorV
	// inputByObj finds an input already read through another source (aliasing).
	inputByObj map[py.Obj]*TensorV
	// attrs are the get_attr targets: dotted path → live tensor.
	attrs     map[string]py.Obj
	attrNodes map[py.Obj]*TensorV
	// attrSources says where each get_attr tensor is read from (for guards added later).
	attrSources map[string]Source
	// modulePaths names modules by where they sit under the root ("fc1", "layers.0").
	modulePaths map[py.Obj]string
	// realized caches live objects turned into values, so one object is one value.
	realized           map[py.Obj]Value
	opCount            int
	globalHooksChecked bool
	effects            sideEffects
	entryGrad          bool // grad mode when the frame was entered
	// stopAt is the root instruction index where a restarted trace stops for a graph break
	// (-1: run to the end); brk is the state there.
	stopAt int
	brk    *Break
	// selected are tensors standing for one of several tensors eager returns itself
	// (min/max of tensors, markSelected).
	selected map[*fxgraph.Node]bool
	// viewRoot maps each view the trace made of a computed tensor to the tensor it views
	// (rooted): eager's views follow their base's requires_grad_(), which a recorded view's meta
	// cannot, so that call breaks the graph where views exist (gradTracksViews).
	viewRoot map[*TensorV]*TensorV
	// realizingObjects breaks cycles when realizeOutput walks objects' attributes.
	realizingObjects map[*ObjectV]bool
	// assumptions are branches on tensor values the trace decided (assume.go).
	assumptions []*Assumption
	// handling is the stack of exceptions being handled (except blocks entered, exceptions.go).
	handling []*ExcV
	// liveDicts are the instance dicts of live objects the trace reads or writes as DictVs.
	liveDicts map[py.Obj]*DictV
}
