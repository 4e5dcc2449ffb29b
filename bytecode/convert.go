package bytecode

import (
	"errors"
	"fmt"
	"time"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
)

// FrameRequest is a frame the hook offers for capture: its function, code and argument slots.
type FrameRequest struct {
	Func, Code py.Obj
	Args       []py.Obj
	// MaxSteps and MaxDepth bound the trace (ptgo.config.max_trace_instructions and
	// max_inline_depth).
	MaxSteps, MaxDepth int
	// AllowBreaks lets an unsupported instruction of the frame become a graph break (false
	// with fullgraph=True: the first one is an error).
	AllowBreaks bool
	// Root is the module the user compiled (ptgo.compile(module)), 0 for a function. Modules
	// reached from the frame's arguments are specialised to their identity only when they are
	// Root or lie under it; any other module argument (a layer whose forward runs as a frame
	// of its own) is guarded by its class and what the trace reads of it, so every instance of
	// a class shares one compiled entry.
	Root py.Obj
	// Dynamic is the dynamic-shapes policy (ptgo.compile's dynamic=; symint.go).
	Dynamic DynamicMode
}

// Capture is what tracing a frame produced.
type Capture struct {
	// Graph is the captured graph; nil when the frame did no tensor work (it then runs eagerly).
	Graph *fxgraph.Graph
	// Inputs are the graph's placeholders, in order, with their sources and live tensors.
	Inputs []*TensorV
	// Attrs maps get_attr targets (dotted paths) to the live parameters and buffers;
	// AttrSources says where each is read from.
	Attrs       map[string]py.Obj
	AttrSources map[string]Source
	// Guards decide whether the capture applies to a later call.
	Guards *Guards
	// Result is the frame's return value, symbolically.
	Result Value
	// Outputs are the graph outputs (distinct tensors of Result, in order).
	Outputs []*TensorV
	OpCount int
	Code    *Code
	// Elapsed is the time spent tracing.
	Elapsed time.Duration
	// Break is set when the capture ends at a graph break instead of the frame's return.
	Break *Break
	// Effects are the writes to outside objects the transformed code replays.
	Effects *sideEffects
	// SymSources says where each size symbol of Graph is read (symint.go): the transformed
	// code computes a dynamic size that is live at its end from them.
	SymSources []symSource
	// FloatSources says where each float symbol of Graph is read (symfloat.go).
	FloatSources []floatSource
	// GradEnabled is the grad mode the frame was entered with (guarded); the graph's
	// torch._C._set_grad_enabled calls change it from there.
	GradEnabled bool
	// Assumptions are conditions on tensor values the transformed code checks after the graph
	// (assume.go); Func is the frame's function, run again eagerly when one fails.
	Assumptions []*Assumption
	Func        py.Obj
}

// SkipCode reports frames that ptgo never captures whatever their arguments.
func SkipCode(c *Code) string {
	switch {
	case c.Flags&(CO_GENERATOR|CO_COROUTINE|CO_ASYNC_GENERATOR|CO_ITERABLE_COROUTINE) != 0:
		return "generator or coroutine"
	case c.Flags&CO_OPTIMIZED == 0:
		return "module or class body"
	}
	return ""
}

// Break is where a capture stopped for a graph break: the frame's state just before the
// instruction that could not be traced. The transformed code rebuilds that state from the
// graph's outputs, runs the instruction eagerly, and continues in a resume function.
type Break struct {
	Index   int // index of the instruction in the captured code's decoded instructions
	Instr   Instr
	Stack   []Value
	Locals  []Value // localsplus slots (nil: unbound)
	KwNames []string
	Reason  *Unsupported
}

// errStopped ends a restarted trace at its break instruction.
var errStopped = internalError("trace stopped at the graph break (not an error)")

// CaptureFrame symbolically runs a frame and records its tensor work as a graph. On failure the
// returned Capture still holds the guards gathered up to the failure (the same failure happens
// again whenever they pass), and the error is an *Unsupported, a *UserError (eager raises for
// these inputs; never a graph break) or another error (a ptgo bug or a Python failure).
//
// With req.AllowBreaks, an unsupported instruction of the captured frame itself (a call that
// cannot be traced, a branch on a tensor's value, an inlined call that fails anywhere inside) is
// a graph break when the frame can be resumed after it: the trace is run again up to that
// instruction and the Capture describes the state there (Capture.Break).
func CaptureFrame(env *Env, req *FrameRequest) (*Capture, error) {
	cap, err := captureOnce(env, req, -1)
	var u *Unsupported
	if err == nil || !req.AllowBreaks || !errors.As(err, &u) || u.RootPC < 0 {
		return cap, err
	}
	ci, _ := env.code(req.Code)
	if why := breakable(ci, u.RootPC); why != "" {
		u.Reason += "; " + why + ", so the whole frame runs eagerly"
		return cap, err
	}
	bcap, berr := captureOnce(env, req, u.RootPC)
	if berr != errStopped || bcap == nil || bcap.Break == nil {
		// The rerun must stop where the first run failed; anything else is a ptgo bug. The
		// first result (eager frame) is always safe.
		return cap, err
	}
	bcap.Break.Reason = u
	return bcap, nil
}

func captureOnce(env *Env, req *FrameRequest, stopAt int) (cap *Capture, err error) {
	start := time.Now()
	ci, err := env.code(req.Code)
	if err != nil {
		return nil, err
	}
	t := &Tracer{
		env: env, api: env.API, graph: fxgraph.New(ci.code.Name), guards: newGuards(),
		maxSteps: req.MaxSteps, maxDepth: req.MaxDepth, rootCode: ci, rootFunc: req.Func, args: req.Args, rootModule: req.Root,
		inputByObj: map[py.Obj]*TensorV{}, attrs: map[string]py.Obj{}, attrNodes: map[py.Obj]*TensorV{},
		modulePaths: map[py.Obj]string{}, realized: map[py.Obj]Value{}, stopAt: stopAt,
		attrSources: map[string]Source{}, dynamic: req.Dynamic,
	}
	if t.maxSteps <= 0 {
		t.maxSteps = 2_000_000
	}
	if t.maxDepth <= 0 {
		t.maxDepth = 64
	}
	cap = &Capture{Guards: t.guards, Code: ci.code, Attrs: t.attrs, AttrSources: t.attrSources, Func: req.Func}
	defer func() {
		cap.SymSources = t.symSources
		cap.FloatSources = t.floatSources
		fxgraph.ResolveSpecialized(t.graph)
		fxgraph.ResolveSpecializedFloats(t.graph)
	}()
	defer t.installShapeGuards()
	defer func() {
		if r := recover(); r != nil {
			if ie, ok := r.(internalError); ok {
				err = ie
				return
			}
			if e, ok := r.(error); ok && (IsUnsupported(e) || IsUserError(e)) {
				err = e
				return
			}
			panic(r)
		}
	}()
	gradFn := env.Known("torch.is_grad_enabled")
	g, err := env.API.Call(gradFn, nil, nil)
	if err != nil {
		return cap, err
	}
	n, _ := env.API.Int(g)
	t.gradEnabled = n != 0
	t.entryGrad = t.gradEnabled
	cap.GradEnabled = t.gradEnabled
	t.guards.CallBool(gradFn, t.gradEnabled, "torch.is_grad_enabled()")
	if err := t.guardGlobalState(); err != nil {
		return cap, err
	}
	if err := t.guardNoDispatchModes(ci.code.Filename, ci.code.FirstLineNo); err != nil {
		return cap, err
	}
	if err := t.readAutocast(); err != nil {
		return cap, err
	}

	globals, err := env.API.GetAttr(req.Func, "__globals__")
	if err != nil {
		return cap, err
	}
	root := &frame{t: t, ci: ci, locals: make([]Value, len(ci.lpNames)), globals: globals, root: true}
	nargs := ci.code.NArgs()
	if len(req.Args) != nargs {
		return cap, internalError(fmt.Sprintf("frame of %s has %d argument slots, code says %d", ci.code.QualName, len(req.Args), nargs))
	}
	for i := 0; i < nargs; i++ {
		root.locals[i] = t.lazy(req.Args[i], &LocalSource{Index: i, Var: ci.code.VarNames[i]})
	}
	// The module whose forward this is names parameters by their paths under it.
	if nargs > 0 && env.API.Kind(req.Args[0]) == py.KNNModule {
		t.modulePaths[req.Args[0]] = ""
	}
	result, err := t.runFrame(root)
	if err == errStopped || err == nil {
		if err := t.finishAssumptions(root); err != nil {
			return cap, err
		}
	}
	if err == errStopped {
		if err := t.finishBreak(root, cap); err != nil {
			return cap, err
		}
		cap.Elapsed = time.Since(start)
		return cap, errStopped
	}
	if err != nil {
		return cap, err
	}
	if result, err = t.realizeOutput(root, result); err != nil {
		return cap, err
	}
	cap.Result = result
	t.finishGraph(cap, append([]Value{result}, t.effects.values()...))
	cap.Elapsed = time.Since(start)
	return cap, nil
}

// globalState is torch's global state a captured graph's results may depend on beyond grad
// mode: the default dtype (factories without dtype=, Python floats in type promotion) and
// inference mode (what kind of tensors results are). Guarded on every call, whatever the trace
// read (docs/ARCHITECTURE.md lists it).
var globalState = []struct{ fn, desc string }{
	{"torch.get_default_dtype", "torch.get_default_dtype()"},
	{"torch.is_inference_mode_enabled", "torch.is_inference_mode_enabled()"},
}

func (t *Tracer) guardGlobalState() error {
	for _, s := range globalState {
		fn, ok := t.env.TryKnown(s.fn)
		if !ok {
			continue
		}
		v, err := t.api.Call(fn, nil, nil)
		if err != nil {
			return err
		}
		if t.api.Kind(v) == py.KBool {
			n, _ := t.api.Int(v)
			t.guards.CallBool(fn, n != 0, s.desc)
			continue
		}
		t.guards.ID(&CallSource{Fn: fn, Desc: s.desc}, v, t.api.Repr(v))
	}
	return nil
}

// finishGraph adds the output node (every distinct tensor among vals) and prunes the graph; a
// graph without operations is dropped.
func (t *Tracer) finishGraph(cap *Capture, vals []Value) {
	cap.OpCount = t.opCount
	cap.Effects = &t.effects
	cap.Assumptions = t.assumptions
	if t.opCount == 0 {
		return
	}
	vals = append(vals, t.assumptionOutputs()...)
	cap.Outputs = collectOutputs(vals...)
	out := make([]fxgraph.Arg, len(cap.Outputs))
	for i, o := range cap.Outputs {
		out[i] = o.Node
	}
	t.graph.AddOutput(fxgraph.Tuple{Elems: out})
	t.graph.PlaceholdersFirst() // inputs are discovered while tracing
	fxgraph.EliminateDeadCode(t.graph, hasSideEffect)
	cap.Graph = t.graph
	cap.Inputs = t.inputs
}

// finishBreak records the frame's state at the break instruction and closes the graph with
// every tensor that state holds.
func (t *Tracer) finishBreak(f *frame, cap *Capture) error {
	b := &Break{Index: t.stopAt, Instr: f.ci.instrs[t.stopAt], KwNames: append([]string(nil), f.kwNames...)}
	b.Stack = make([]Value, len(f.stack))
	for i, v := range f.stack {
		r, err := t.realizeOutput(f, v)
		if err != nil {
			return err
		}
		b.Stack[i] = r
	}
	b.Locals = make([]Value, len(f.locals))
	for i, v := range f.locals {
		if v == nil {
			continue
		}
		r, err := t.realizeOutput(f, v)
		if err != nil {
			return err
		}
		b.Locals[i] = r
	}
	cap.Break = b
	if t.gradEnabled != t.entryGrad {
		// The graph leaves grad mode as it found it; the transformed code re-enters the with
		// block around the break instruction and the resume function re-enters it too.
		t.setGradMode(f, t.entryGrad)
	}
	vals := append(append([]Value{}, b.Stack...), b.Locals...)
	t.finishGraph(cap, append(vals, t.effects.values()...))
	return nil
}

// breakable says why a graph break at instruction idx cannot resume the frame ("" when it can):
// inside a loop (the resume point would be mid-iteration) or inside a try block (the rest of the
// try would lose its handler for the eagerly run instruction).
func breakable(ci *codeInfo, idx int) string {
	in := ci.instrs[idx]
	for _, j := range ci.instrs {
		if j.Op.IsBackwardJump() && j.Target <= in.Offset && j.Offset >= in.Offset {
			return "the graph break is inside a loop"
		}
	}
	switch in.Op {
	case FOR_ITER, GET_ITER, RETURN_VALUE, YIELD_VALUE, RETURN_GENERATOR, SEND, BEFORE_WITH, RAISE_VARARGS, RERAISE:
		return "the graph break is at " + in.Op.String()
	}
	if !in.Op.IsJump() {
		if _, err := StackEffect(in.Op, in.Arg, false); err != nil {
			return "the graph break is at " + in.Op.String()
		}
	}
	entries, err := DecodeExceptionTable(ci.code.ExceptionTable)
	if err != nil {
		return "the exception table cannot be read"
	}
	for _, e := range entries {
		if in.Offset >= e.Start && in.Offset < e.End && !isWithCleanup(ci, e.Target) {
			return "the graph break is inside a try block"
		}
	}
	return ""
}

// isWithCleanup reports whether a handler is the cleanup CPython emits for a with statement
// (PUSH_EXC_INFO; WITH_EXCEPT_START).
func isWithCleanup(ci *codeInfo, target int) bool {
	i, ok := ci.index[target]
	return ok && i+1 < len(ci.instrs) && ci.instrs[i].Op == PUSH_EXC_INFO && ci.instrs[i+1].Op == WITH_EXCEPT_START
}

// realizeOutput realizes everything the frame returns, so its guards are installed and its
// tensors are known.
func (t *Tracer) realizeOutput(f *frame, v Value) (Value, error) {
	switch x := v.(type) {
	case *LazyV:
		if t.api.Kind(x.Obj) == py.KTensor || x.Source == nil {
			// A value without a source cannot be reloaded: it is rebuilt from what it is.
			return t.realize(f, x)
		}
		return x, nil
	case *TupleV:
		items := make([]Value, len(x.Items))
		for i, it := range x.Items {
			r, err := t.realizeOutput(f, it)
			if err != nil {
				return nil, err
			}
			items[i] = r
		}
		return x.withItems(items), nil
	case *ListV:
		if x.Source != nil {
			return x, nil
		}
		for i, it := range x.Items {
			r, err := t.realizeOutput(f, it)
			if err != nil {
				return nil, err
			}
			x.Items[i] = r
		}
		return x, nil
	case *DictV:
		if x.Source != nil {
			return x, nil
		}
		for i, it := range x.Vals {
			r, err := t.realizeOutput(f, it)
			if err != nil {
				return nil, err
			}
			x.Vals[i] = r
		}
		return x, nil
	case *DequeV:
		for i, it := range x.Items {
			r, err := t.realizeOutput(f, it)
			if err != nil {
				return nil, err
			}
			x.Items[i] = r
		}
		return x, nil
	case *ObjectV:
		if t.realizingObjects[x] {
			return x, nil // an attribute refers back to the object
		}
		if t.realizingObjects == nil {
			t.realizingObjects = map[*ObjectV]bool{}
		}
		t.realizingObjects[x] = true
		for _, d := range []*DictV{x.Attrs, x.Dict} {
			if d == nil {
				continue
			}
			if _, err := t.realizeOutput(f, d); err != nil {
				return nil, err
			}
		}
		return x, nil
	case *PartialV:
		if x.Source != nil {
			return x, nil
		}
		for i, it := range x.Args {
			r, err := t.realizeOutput(f, it)
			if err != nil {
				return nil, err
			}
			x.Args[i] = r
		}
		for i := range x.Kw {
			r, err := t.realizeOutput(f, x.Kw[i].Val)
			if err != nil {
				return nil, err
			}
			x.Kw[i].Val = r
		}
		return x, nil
	}
	return v, nil
}

// collectOutputs lists the distinct tensors in values, depth first.
func collectOutputs(vals ...Value) []*TensorV {
	var out []*TensorV
	seen := map[*fxgraph.Node]bool{}
	seenObj := map[*ObjectV]bool{}
	var walk func(v Value)
	walk = func(v Value) {
		switch x := v.(type) {
		case *DequeV:
			for _, it := range x.Items {
				walk(it)
			}
		case *ObjectV:
			if seenObj[x] {
				return
			}
			seenObj[x] = true
			walk(x.Attrs)
			if x.Dict != nil {
				walk(x.Dict)
			}
		case *PartialV:
			if x.Source == nil {
				walk(x.Func)
				for _, it := range x.Args {
					walk(it)
				}
				for _, k := range x.Kw {
					walk(k.Val)
				}
			}
		case *CtxFuncV:
			walk(x.Fn)
		case *SymF:
			if x.Tensor != nil {
				walk(x.Tensor) // a float computed in the graph is handed over as a 0-d tensor
			}
		case *TensorV:
			// Inputs the graph did not replace, and parameters and buffers it did not write, are
			// reloaded from their sources: the user gets the object itself, not the graph's alias.
			if x.Node.Op == fxgraph.Placeholder && x.Source != nil || x.Node.Op == fxgraph.GetAttr {
				return
			}
			if !seen[x.Node] {
				seen[x.Node] = true
				out = append(out, x)
			}
		case *TupleV:
			for _, it := range x.Items {
				walk(it)
			}
		case *ListV:
			if x.Source == nil {
				for _, it := range x.Items {
					walk(it)
				}
			}
		case *DictV:
			if x.Source == nil {
				for _, it := range x.Vals {
					walk(it)
				}
			}
		case *BoundV:
			walk(x.Self)
		case *CellV:
			if x.Contents != nil {
				walk(x.Contents)
			}
		}
	}
	for _, v := range vals {
		walk(v)
	}
	return out
}

// hasSideEffect keeps nodes whose effects outlive their values (writes, random draws, errors
// for some inputs) even when nothing reads them: the op registry says which (fxgraph.CallEffects).
func hasSideEffect(n *fxgraph.Node) bool { return fxgraph.CallEffects(n) != 0 }
