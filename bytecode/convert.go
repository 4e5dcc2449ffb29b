package bytecode

import (
	"fmt"
	"time"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// FrameRequest is a frame the hook offers for capture: its function, code and argument slots.
type FrameRequest struct {
	Func, Code py.Obj
	Args       []py.Obj
	// MaxSteps and MaxDepth bound the trace (ptgo.config.max_trace_instructions and
	// max_inline_depth).
	MaxSteps, MaxDepth int
}

// Capture is what tracing a frame produced.
type Capture struct {
	// Graph is the captured graph; nil when the frame did no tensor work (it then runs eagerly).
	Graph *fxgraph.Graph
	// Inputs are the graph's placeholders, in order, with their sources and live tensors.
	Inputs []*TensorV
	// Attrs maps get_attr targets (dotted paths) to the live parameters and buffers.
	Attrs map[string]py.Obj
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

// CaptureFrame symbolically runs a frame and records its tensor work as a graph. On failure the
// returned Capture still holds the guards gathered up to the failure (the same failure happens
// again whenever they pass), and the error is an *Unsupported (a graph break) or another error
// (a ptgo bug or a Python failure).
func CaptureFrame(env *Env, req *FrameRequest) (cap *Capture, err error) {
	start := time.Now()
	ci, err := env.code(req.Code)
	if err != nil {
		return nil, err
	}
	t := &Tracer{
		env: env, api: env.API, graph: fxgraph.New(ci.code.Name), guards: newGuards(),
		maxSteps: req.MaxSteps, maxDepth: req.MaxDepth, rootCode: ci, rootFunc: req.Func, args: req.Args,
		inputByObj: map[py.Obj]*TensorV{}, attrs: map[string]py.Obj{}, attrNodes: map[py.Obj]*TensorV{},
		modulePaths: map[py.Obj]string{}, realized: map[py.Obj]Value{},
	}
	if t.maxSteps <= 0 {
		t.maxSteps = 2_000_000
	}
	if t.maxDepth <= 0 {
		t.maxDepth = 64
	}
	cap = &Capture{Guards: t.guards, Code: ci.code, Attrs: t.attrs}
	defer func() {
		if r := recover(); r != nil {
			if ie, ok := r.(internalError); ok {
				err = ie
				return
			}
			if e, ok := r.(error); ok && IsUnsupported(e) {
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
	t.guards.CallBool(gradFn, t.gradEnabled, "torch.is_grad_enabled()")

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
	if err != nil {
		return cap, err
	}
	if result, err = t.realizeOutput(root, result); err != nil {
		return cap, err
	}
	cap.Result = result
	cap.OpCount = t.opCount
	cap.Elapsed = time.Since(start)
	if t.opCount == 0 {
		return cap, nil
	}
	cap.Outputs = collectOutputs(result)
	out := make([]fxgraph.Arg, len(cap.Outputs))
	for i, o := range cap.Outputs {
		out[i] = o.Node
	}
	t.graph.AddOutput(fxgraph.Tuple{Elems: out})
	orderPlaceholders(t.graph)
	fxgraph.EliminateDeadCode(t.graph, hasSideEffect)
	cap.Graph = t.graph
	cap.Inputs = t.inputs
	cap.Elapsed = time.Since(start)
	return cap, nil
}

// realizeOutput realizes everything the frame returns, so its guards are installed and its
// tensors are known.
func (t *Tracer) realizeOutput(f *frame, v Value) (Value, error) {
	switch x := v.(type) {
	case *LazyV:
		if t.api.Kind(x.Obj) == py.KTensor {
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
	}
	return v, nil
}

// collectOutputs lists the distinct tensors in a result, depth first.
func collectOutputs(v Value) []*TensorV {
	var out []*TensorV
	seen := map[*fxgraph.Node]bool{}
	var walk func(v Value)
	walk = func(v Value) {
		switch x := v.(type) {
		case *TensorV:
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
		}
	}
	walk(v)
	return out
}

// orderPlaceholders moves placeholders to the front (inputs are discovered while tracing).
func orderPlaceholders(g *fxgraph.Graph) {
	var ph, rest []*fxgraph.Node
	for _, n := range g.Nodes {
		if n.Op == fxgraph.Placeholder {
			ph = append(ph, n)
		} else {
			rest = append(rest, n)
		}
	}
	g.Nodes = append(ph, rest...)
	g.Renumber()
}

// hasSideEffect keeps nodes that mutate state even when nothing reads their result.
func hasSideEffect(n *fxgraph.Node) bool {
	for _, kw := range n.Kwargs {
		if kw.Name == "out" {
			return true
		}
	}
	switch n.Op {
	case fxgraph.CallFunction:
		if n.Target == "torch._C._set_grad_enabled" || n.Target == "operator.setitem" {
			return true
		}
		if op := primtorch.Lookup(n.Target); op != nil {
			return op.Alias == primtorch.AliasInPlace || len(op.Mutates) > 0
		}
		if n.Target == "operator.iadd" || len(n.Target) > 0 && n.Target[len(n.Target)-1] == '_' {
			return true
		}
	case fxgraph.CallMethod:
		if op := primtorch.Lookup("Tensor." + n.Target); op != nil {
			return op.Alias == primtorch.AliasInPlace || len(op.Mutates) > 0
		}
		return len(n.Target) > 2 && n.Target[len(n.Target)-1] == '_' && n.Target[len(n.Target)-2] != '_'
	}
	return false
}
