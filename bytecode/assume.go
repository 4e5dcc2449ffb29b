package bytecode

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Checked assumptions. Validation code branches on tensor values only to raise:
//
//	if not valid.all():
//	    raise ValueError(...)            (torch.distributions' argument checks)
//	assert (x >= 0).all(), "..."
//	torch._assert(cond, "...")
//
// The trace takes the branch that goes on (the condition as the program expects it) and records
// the condition; the graph computes it as one more output, and the transformed code checks it
// right after the graph ran, before anything else it does. When the check fails, the frame runs
// again from its start, eagerly (capture off), so eager raises its own exception — or does
// whatever eager does on that path. Rerunning is only equivalent to running once when the graph
// changed nothing the rerun sees: a graph that writes to its inputs or draws random numbers
// cannot carry assumptions (finishAssumptions refuses it, and capture falls back as before).

// Assumption is a condition the trace took as holding.
type Assumption struct {
	Cond  *TensorV
	Truth bool // bool(Cond) on the path the trace took
	Where string
}

// assumeBranch decides a conditional jump on a one-element tensor when exactly one side leads
// straight to a raise: it returns whether the jump is taken (the other side) and records the
// assumption. ok=false: not such a branch (the caller reports the data-dependent branch).
func (t *Tracer) assumeBranch(f *frame, in *Instr, cond *TensorV, jumpIfTrue bool) (jump bool, ok bool) {
	if cond.Meta.Numel() != 1 {
		return false, false
	}
	target, found := f.ci.index[in.Target]
	if !found {
		return false, false
	}
	fallRaises, jumpRaises := raisesAhead(f.ci, f.pc), raisesAhead(f.ci, target)
	if fallRaises == jumpRaises {
		return false, false
	}
	// Take the side that does not raise; the jump happens when bool(cond) == jumpIfTrue.
	jump = fallRaises
	truth := jump == jumpIfTrue
	t.assume(f, cond, truth)
	return jump, true
}

// assumeTrue records that cond holds where eager raises otherwise (torch._assert).
func (t *Tracer) assumeTrue(f *frame, cond *TensorV) bool {
	if cond.Meta.Numel() != 1 {
		return false
	}
	t.assume(f, cond, true)
	return true
}

// assume records the condition's value as of now (a later in-place write to the tensor does
// not change what is checked).
func (t *Tracer) assume(f *frame, cond *TensorV, truth bool) {
	snap := &TensorV{Node: cond.Node, Meta: cond.Meta, Source: cond.Source, Obj: cond.Obj, Class: cond.Class}
	t.assumptions = append(t.assumptions, &Assumption{Cond: snap, Truth: truth, Where: f.shortWhereUser()})
}

// raisesAhead reports whether the code from instruction idx runs straight (no jump, return or
// yield) into a raise statement.
func raisesAhead(ci *codeInfo, idx int) bool {
	for i := idx; i < len(ci.instrs) && i < idx+200; i++ {
		in := &ci.instrs[i]
		switch {
		case in.Op == RAISE_VARARGS:
			return in.Arg >= 1
		case in.Op.IsJump(), in.Op == RETURN_VALUE, in.Op == YIELD_VALUE, in.Op == RERAISE, in.Op == SEND,
			in.Op == RETURN_GENERATOR:
			return false
		}
	}
	return false
}

// finishAssumptions makes the conditions graph outputs (they are among vals' tensors the
// caller collects) and refuses a graph a rerun would not repeat faithfully.
func (t *Tracer) finishAssumptions(f *frame) error {
	if len(t.assumptions) == 0 {
		return nil
	}
	for _, n := range t.graph.Nodes {
		if why := rerunHazard(n); why != "" {
			a := t.assumptions[0]
			return &Unsupported{Reason: fmt.Sprintf("the branch on a tensor's value at %s needs the frame to run again eagerly when it goes the other way, but the graph %s (%s)",
				a.Where, why, n.Where), Where: f.userWhere(), RootPC: -1,
				Hint: "compute the check outside the compiled function, or move the random op or the in-place write after it into another function"}
		}
	}
	return nil
}

// rerunHazard says why running the graph and then the frame again eagerly would differ from
// running the frame once ("" when it would not): random numbers drawn twice, inputs written
// twice, ops ptgo knows nothing about.
func rerunHazard(n *fxgraph.Node) string {
	var op *primtorch.Op
	switch n.Op {
	case fxgraph.CallFunction:
		if n.Target == "torch._C._set_grad_enabled" {
			return ""
		}
		op = primtorch.Lookup(n.Target)
	case fxgraph.CallMethod:
		op = primtorch.Lookup("Tensor." + n.Target)
	default:
		return ""
	}
	if op == nil {
		return "calls " + n.Target + ", an op ptgo has no entry for"
	}
	if op.Random {
		return "draws random numbers (" + n.Target + ")"
	}
	if !hasSideEffect(n) {
		return ""
	}
	if len(n.Args) > 0 {
		if base, ok := n.Args[0].(*fxgraph.Node); ok && !writesInput(base) {
			return ""
		}
	}
	return "writes to one of its inputs (" + n.Target + ")"
}

// writesInput reports whether a write to node n may reach a graph input or attribute: n is an
// input, or a view (possibly) of one.
func writesInput(n *fxgraph.Node) bool {
	for depth := 0; depth < 64; depth++ {
		var op *primtorch.Op
		switch n.Op {
		case fxgraph.Placeholder, fxgraph.GetAttr:
			return true
		case fxgraph.CallFunction:
			op = primtorch.Lookup(n.Target)
		case fxgraph.CallMethod:
			op = primtorch.Lookup("Tensor." + n.Target)
		default:
			return true
		}
		if op == nil {
			return true
		}
		if op.Alias == primtorch.AliasNone {
			return false
		}
		if len(n.Args) == 0 {
			return true
		}
		base, ok := n.Args[0].(*fxgraph.Node)
		if !ok {
			return true
		}
		n = base
	}
	return true
}

// assumptionOutputs are the conditions as values for collectOutputs.
func (t *Tracer) assumptionOutputs() []Value {
	out := make([]Value, len(t.assumptions))
	for i, a := range t.assumptions {
		out[i] = a.Cond
	}
	return out
}

// emitAssumptionChecks emits, right after the graph call: for each assumption, if bool(cond)
// differs from what the trace took, return types.FunctionType(code, globals, name, None,
// closure)(*args, **kwargs) run with capture off — the frame again, eagerly, from its start,
// with the frame's own arguments and closure.
func (g *codeGen) emitAssumptionChecks(cap *Capture) error {
	if len(cap.Assumptions) == 0 {
		return nil
	}
	deopt := g.b.NewLabel()
	for _, a := range cap.Assumptions {
		if err := g.rebuild(a.Cond); err != nil {
			return err
		}
		if a.Truth {
			g.b.Jump(POP_JUMP_FORWARD_IF_FALSE, deopt, g.pos)
		} else {
			g.b.Jump(POP_JUMP_FORWARD_IF_TRUE, deopt, g.pos)
		}
	}
	done := g.b.NewLabel()
	g.b.Jump(JUMP_FORWARD, done, g.pos)
	g.b.Bind(deopt)
	if err := g.emitEagerRerun(cap); err != nil {
		return err
	}
	g.emit(RETURN_VALUE, 0)
	g.b.Bind(done)
	return nil
}

// emitEagerRerun pushes the result of running the original function eagerly on the frame's
// arguments (every argument slot is positional in the transformed code).
func (g *codeGen) emitEagerRerun(cap *Capture) error {
	api, c := g.api, g.ci.code
	disabled, ok := g.env.TryKnown("ptgo._C.Disabled")
	if !ok {
		return fmt.Errorf("ptgo BUG: ptgo._C.Disabled is missing")
	}
	globals, err := api.GetAttr(cap.Func, "__globals__")
	if err != nil {
		return err
	}
	g.emit(PUSH_NULL, 0) // below the callable of CALL_FUNCTION_EX
	g.emit(PUSH_NULL, 0)
	g.loadConst(disabled)
	g.emit(PUSH_NULL, 0)
	g.loadConst(g.env.Known("types.FunctionType"))
	g.loadConst(g.codeObj)
	g.loadConst(globals)
	g.loadConst(api.NewStr(c.Name))
	g.loadConst(api.None())
	if n := len(c.FreeVars); n > 0 {
		for i := 0; i < n; i++ {
			g.deref(LOAD_CLOSURE, g.ci.freeBase+i)
		}
		g.emit(BUILD_TUPLE, n)
	} else {
		g.loadConst(api.None())
	}
	g.emit(PRECALL, 5)
	g.emit(CALL, 5)
	g.emit(PRECALL, 1)
	g.emit(CALL, 1)
	// (*positional, *varargs), {**keyword-only, **varkw}
	for i := 0; i < c.ArgCount; i++ {
		g.emit(LOAD_FAST, i)
	}
	g.emit(BUILD_LIST, c.ArgCount)
	slot := c.ArgCount + c.KwOnlyArgCount
	if c.Flags&CO_VARARGS != 0 {
		g.emit(LOAD_FAST, slot)
		g.emit(LIST_EXTEND, 1)
		slot++
	}
	g.emit(LIST_TO_TUPLE, 0)
	for i := c.ArgCount; i < c.ArgCount+c.KwOnlyArgCount; i++ {
		g.loadConst(api.NewStr(c.VarNames[i]))
		g.emit(LOAD_FAST, i)
	}
	g.emit(BUILD_MAP, c.KwOnlyArgCount)
	if c.Flags&CO_VARKEYWORDS != 0 {
		g.emit(LOAD_FAST, slot)
		g.emit(DICT_MERGE, 1)
	}
	g.emit(CALL_FUNCTION_EX, 1)
	return nil
}
