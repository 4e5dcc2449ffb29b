package decomp

import (
	"errors"
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Options tunes Decompose.
type Options struct {
	// Check verifies the result with Verify before returning it (tests, PTGO_CHECK=1).
	Check bool
	// Fallback keeps these torch-level ops as prims.fallback calls even though they decompose
	// (to bisect a suspected miscompile to one decomposition).
	Fallback map[primtorch.OpID]bool
	// NoGrad says the graph starts in no-grad mode (torch.no_grad() around the call); its
	// torch._C._set_grad_enabled calls change the mode from there. It decides whether writes
	// of values that require grad (x[i] = w) make the written tensor require grad, as in torch.
	NoGrad bool
}

// Decompose lowers a torch-level graph (as the capture stage records it) to a prims graph with
// the same placeholders, get_attrs and outputs. See the package documentation for what it
// guarantees. Errors wrap primtorch.ErrUnsupported when the graph is valid but cannot be
// functionalized (the caller runs the torch-level graph as it is), and say "ptgo BUG" when a
// decomposition itself failed.
func Decompose(g *fxgraph.Graph, opts Options) (out *fxgraph.Graph, err error) {
	d := newDecomposer(g, opts)
	defer func() {
		if r := recover(); r != nil {
			be, ok := r.(bugError)
			if !ok {
				panic(r)
			}
			out, err = nil, fmt.Errorf("decomp: ptgo BUG: %s (%s); report it with the graph printed by PTGO_LOGS=graph_code", be.msg, d.location())
		}
	}()
	if err := d.run(); err != nil {
		return nil, err
	}
	if opts.Check {
		if err := Verify(d.g); err != nil {
			return nil, fmt.Errorf("decomp: ptgo BUG: the prims graph of %s is invalid: %w", g.Name, err)
		}
	}
	return d.g, nil
}

// bugError is panicked by builders when a decomposition emits an invalid prims call; Decompose
// recovers it into an error.
type bugError struct{ msg string }

func bug(format string, args ...any) { panic(bugError{fmt.Sprintf(format, args...)}) }

// decomposer holds one Decompose call's state.
type decomposer struct {
	src  *fxgraph.Graph
	g    *fxgraph.Graph
	opts Options
	env  map[*fxgraph.Node]any // original node → *tstate, []any (tuple), or nil
	cur  *fxgraph.Node         // the original node being decomposed
	rg   bool                  // whether cur's result requires grad
	grad bool                  // grad mode at cur
	// viewSrc maps a view prim node to the node it views.
	viewSrc map[*fxgraph.Node]*fxgraph.Node
	inputs  []*tstate // graph inputs (placeholders, then get_attrs), in graph order
	// userIndexed are the prims indexing nodes user-level index ops made (userIndex)
	userIndexed map[*fxgraph.Node]bool
	// why, when set, is the reason the call being decomposed stays torch's (fallbackReason)
	why string
	// unversioned marks the write being made as one eager's version counter does not see
	// (tstate.bumps)
	unversioned bool
	// firstNew is the index of the first prims node of the current call.
	firstNew int
	// callStates are the tensors the current call reads (its ctx's states; nil for calls
	// bound without one): a write must not partially overlap them.
	callStates map[*primtorch.TensorMeta]*tstate
	callOp     *primtorch.Op
	callSelf   *primtorch.TensorMeta // the meta standing for the call's first argument
	// computed maps each computed float symbol (pyfloat.go) to its 0-d float64 tensor.
	computed map[int]*fxgraph.Node
}

func newDecomposer(g *fxgraph.Graph, opts Options) *decomposer {
	return &decomposer{src: g, opts: opts, grad: !opts.NoGrad, env: map[*fxgraph.Node]any{}, viewSrc: map[*fxgraph.Node]*fxgraph.Node{}}
}

func (d *decomposer) location() string {
	if d.cur == nil {
		return "graph " + d.src.Name
	}
	target := d.cur.Target
	if d.cur.Op == fxgraph.CallMethod {
		target = "Tensor." + target
	}
	s := "node " + d.cur.Name + " = " + target
	if d.cur.Where != "" {
		s += " at " + d.cur.Where
	}
	return s
}

// unsupportedf is an error wrapping primtorch.ErrUnsupported that names the node and the
// user's line.
func (d *decomposer) unsupportedf(format string, args ...any) error {
	return fmt.Errorf("decomp: %s (%s): %w; ptgo runs this graph without decomposing it", fmt.Sprintf(format, args...), d.location(), primtorch.ErrUnsupported)
}

// skeleton returns a copy of g holding only its placeholders and get_attrs (names kept, so
// new nodes never take them) and the originals' copies by node.
func skeleton(g *fxgraph.Graph) (*fxgraph.Graph, map[*fxgraph.Node]*fxgraph.Node) {
	c := fxgraph.Clone(g)
	copies := map[*fxgraph.Node]*fxgraph.Node{}
	for i, n := range g.Nodes {
		copies[n] = c.Nodes[i]
	}
	if o := c.OutputNode(); o != nil {
		o.Args = nil
	}
	fxgraph.EliminateDeadCode(c, func(n *fxgraph.Node) bool { return n.Op == fxgraph.GetAttr })
	if o := c.OutputNode(); o != nil {
		c.Nodes = c.Nodes[:len(c.Nodes)-1]
	}
	return c, copies
}

func (d *decomposer) run() error {
	var copies map[*fxgraph.Node]*fxgraph.Node
	d.g, copies = skeleton(d.src)
	for _, n := range d.src.Nodes {
		d.cur = n
		switch n.Op {
		case fxgraph.Placeholder, fxgraph.GetAttr:
			c := copies[n]
			if s, ok := n.Meta.(primtorch.SymInt); ok && n.Op == fxgraph.Placeholder {
				d.env[n] = s // a size input: its uses read the symbol
				continue
			}
			if f, ok := n.Meta.(primtorch.SymFloat); ok && n.Op == fxgraph.Placeholder {
				d.env[n] = f // a float input: its uses are constants that read the symbol
				continue
			}
			if v, ok := n.Meta.(int64); ok && n.Op == fxgraph.Placeholder && d.src.Shapes != nil {
				// a size input whose symbol the trace specialised (fxgraph.ResolveSpecialized):
				// a guard holds it equal to this value, and its uses already read the constant
				d.env[n] = v
				continue
			}
			if c.TensorMeta() == nil {
				return d.unsupportedf("input %s is not a tensor (meta %v)", n.Name, n.Meta)
			}
			s := &tstate{cur: c, input: c}
			d.inputs = append(d.inputs, s)
			d.env[n] = s
		case fxgraph.CallFunction, fxgraph.CallMethod:
			if err := d.callNode(n); err != nil {
				return err
			}
		case fxgraph.Output:
			return d.output(n)
		}
	}
	return fmt.Errorf("decomp: graph %s has no output node", d.src.Name)
}

// setGradEnabled changes grad mode. The prims graph does not keep it (the metas say what
// requires grad); the decomposer follows it for writes, whose metas do not say.
const setGradEnabled = "torch._C._set_grad_enabled"

// lookup returns the registry op of a call node.
func lookup(n *fxgraph.Node) *primtorch.Op {
	if n.Op == fxgraph.CallMethod {
		return primtorch.Lookup("Tensor." + n.Target)
	}
	return primtorch.Lookup(n.Target)
}

// callNode decomposes one torch-level call.
func (d *decomposer) callNode(n *fxgraph.Node) error {
	d.callStates, d.callOp, d.callSelf = nil, nil, nil
	if n.Target == setGradEnabled {
		if len(n.Args) == 1 {
			if c, ok := n.Args[0].(fxgraph.Const); ok {
				if b, ok := c.V.(bool); ok {
					d.grad = b
					return nil
				}
			}
		}
		bug("%s with arguments that are not one constant bool", setGradEnabled)
	}
	if n.Op == fxgraph.CallFunction && n.Target == "operator.getitem" && len(n.Args) == 2 {
		if src, ok := n.Args[0].(*fxgraph.Node); ok {
			if tup, ok := d.env[src].([]any); ok {
				k, _ := n.Args[1].(fxgraph.Const).V.(int64)
				if k < 0 {
					k += int64(len(tup))
				}
				if k < 0 || int(k) >= len(tup) {
					bug("getitem %d of a %d-tuple", k, len(tup))
				}
				d.env[n] = tup[k]
				return nil
			}
		}
	}
	if f, ok := n.Meta.(primtorch.SymFloat); ok && f.IsComputed() {
		d.rg = false
		return d.pyFloatNode(n, f)
	}
	if n.Target == primtorch.FloatTensorTarget && len(n.Args) == 1 {
		// a computed float handed over as a 0-d float64 tensor: the tensor itself
		if a, ok := n.Args[0].(*fxgraph.Node); ok {
			if f, ok := d.env[a].(primtorch.SymFloat); ok && f.IsComputed() {
				s := &tstate{cur: d.prim("clone", d.computed[f.ID])}
				d.env[n] = s
				return nil
			}
		}
	}
	switch n.Meta.(type) {
	case *primtorch.TensorMeta, []any, nil:
	default:
		return d.unsupportedf("the call returns a Python %T, not tensors", n.Meta)
	}
	if view, ok := metadataInplace[n.Target]; ok && n.Op == fxgraph.CallMethod && len(n.Args) > 0 {
		return d.metadataInplaceCall(n, view)
	}
	op := lookup(n)
	if _, fast := fastPathDecomps[n.Target]; fast || op == nil {
		// torch's fused kernels: their fast-path decomposition (static calls); a symbolic call
		// falls back through the registry row
		if ok, err := d.decomposeFastPath(n); ok || err != nil {
			return err
		}
		if op == nil {
			return d.fallback(n, nil, nil)
		}
	}
	c, err := d.bind(n, op)
	if err != nil {
		return err
	}
	d.rg = resultRequiresGrad(n.Meta)
	fn := decomps[c.op.ID]
	if fn == nil || d.opts.Fallback[c.op.ID] || c.outsideCore() {
		return d.fallback(n, c.op, c)
	}
	if reducedFloatTorchCall(c) {
		d.why = "its float16/bfloat16 result is torch's kernel's rounding, which the decomposition does not reproduce bit for bit (A205)"
		defer func() { d.why = "" }()
		return d.fallback(n, c.op, c)
	}
	symbolic := c.a.HasSymbols() || primtorch.HasSymbols(c.out)
	if symbolic && !symbolicDecomp(c.op) {
		c.specializeCall()
		symbolic = false
	}
	var res any
	if r := d.emptyResult(c); r != nil {
		res = r
	} else {
		res, err = fn(c)
	}
	if errors.Is(err, errFallback) {
		return d.fallback(n, c.op, c)
	}
	if err != nil {
		return err
	}
	if symbolic {
		d.checkSymbolicResult(c, res)
	}
	return d.bindResult(c, res)
}

// emptyResult is the value of a call whose result has no elements and that has no effects (no
// write, no random draw, nothing it may raise for): only its metadata matters, and the ops a
// decomposition emits may reject the empty dims it reduces over (a softmax over an empty dim
// takes an amax there). A tensor argument of the same shape and dtype is cloned (the gradient
// path stays), otherwise, when an argument is empty too, an empty full is made; nil when the
// rule does not apply.
func (d *decomposer) emptyResult(c *ctx) val {
	m, ok := c.out.(*primtorch.TensorMeta)
	if !ok || m.Numel() != 0 || c.op.Alias != primtorch.AliasNone || c.a.Out != nil || c.a.Inplace() ||
		c.op.CallEffects(c.a, c.out) != 0 {
		return nil
	}
	if refusesDerivative(c) {
		return nil // torch's call: its backward raises eager's error
	}
	if c.op.ID == primtorch.OpGroupNorm && c.in("weight") != nil {
		// the one call whose empty result still gives a parameter a gradient other than zeros
		// (1.13's group_norm of groups of no element: NaN; fuzz seed 27847): dGroupNorm decides
		return nil
	}
	empty := false
	for _, p := range c.op.Schema.Params {
		v, _ := c.a.Opt(p.Canon) // (a parameter the bound signature lacks, e.g. batch_norm's short form: none)
		x, ok := v.(*primtorch.TensorMeta)
		if !ok {
			continue
		}
		if x.DType == m.DType && len(x.Shape) == len(m.Shape) && primtorch.SymShapesEqual(x.SymSizes(), m.SymSizes()) {
			return d.emptyClone(c, p.Canon, m)
		}
		empty = empty || x.Numel() == 0
	}
	if d.rg || !empty {
		return nil // (an argument's current value decides: a stale result meta never does)
	}
	return d.full(m.SymSizes(), 0, m.DType)
}

// emptyClone is the empty result cloned from argument name, with the gradient paths of the
// call's other arguments that require grad kept (zero gradients: eager's backward of
// layer_norm over an empty batch gives its weight and bias zeros, not None); nil when one of
// them does not broadcast to the result, or has another dtype (the decomposition then runs).
func (d *decomposer) emptyClone(c *ctx, name string, m *primtorch.TensorMeta) val {
	var others []string
	for _, p := range c.op.Schema.Params {
		v, _ := c.a.Opt(p.Canon)
		x, ok := v.(*primtorch.TensorMeta)
		if !ok || p.Canon == name || !x.RequiresGrad || !d.rg {
			continue
		}
		b, err := primtorch.SymBroadcastShapes(x.SymSizes(), m.SymSizes())
		if err != nil || x.DType != m.DType || !primtorch.SymShapesEqual(b, m.SymSizes()) {
			return nil
		}
		others = append(others, p.Canon)
	}
	v := d.prim("clone", c.in(name))
	var xs []val
	for _, o := range others {
		xs = append(xs, d.expand(c.in(o), m.SymSizes()))
	}
	return d.zeroGradient(v, xs...)
}

func resultRequiresGrad(m any) bool {
	switch m := m.(type) {
	case *primtorch.TensorMeta:
		return m.RequiresGrad
	case []any:
		for _, e := range m {
			if resultRequiresGrad(e) {
				return true
			}
		}
	}
	return false
}

// errFallback is returned by a decomposition that does not handle these arguments: the call
// stays a prims.fallback.
var errFallback = errors.New("no decomposition for these arguments")

// bindResult records what a decomposed call produced: its value for later reads, the writes
// of out= and inplace=True, and how the result aliases its inputs.
func (d *decomposer) bindResult(c *ctx, res any) error {
	n := c.n
	if c.done {
		return nil
	}
	switch {
	case c.a.Out != nil:
		node, ok := res.(*fxgraph.Node)
		if !ok {
			bug("out= with a %T result", res)
		}
		s := c.stateOf(c.a.Out)
		if err := d.write(s, node, true); err != nil {
			return err
		}
		d.env[n] = s
		return nil
	case c.a.Inplace():
		node := res.(*fxgraph.Node)
		s := c.state(c.op.Schema.Params[0].Canon)
		if err := d.write(s, node, false); err != nil {
			return err
		}
		d.env[n] = s
		return nil
	}
	switch r := res.(type) {
	case *fxgraph.Node:
		r = c.freshView(r)
		d.fixLayout(r, n.TensorMeta())
		d.env[n] = d.deriveState(c, r)
	case []any:
		metas, _ := n.Meta.([]any)
		out := make([]any, len(r))
		for i, e := range r {
			node, ok := e.(*fxgraph.Node)
			if !ok {
				out[i] = e
				continue
			}
			node = c.freshView(node)
			if i < len(metas) {
				m, _ := metas[i].(*primtorch.TensorMeta)
				d.fixLayout(node, m)
			}
			out[i] = d.deriveState(c, node)
		}
		d.env[n] = out
	case *tstate:
		d.env[n] = r
	case nil:
		d.env[n] = nil
	default:
		bug("decomposition returned %T", res)
	}
	return nil
}

// freshView makes a view op that returned its input unchanged return a new view of it, as
// torch does (x.view(x.shape) is another tensor sharing x's storage).
func (c *ctx) freshView(r *fxgraph.Node) *fxgraph.Node {
	if c.op.Alias != primtorch.AliasView {
		return r
	}
	m, ok := c.a.Get(c.op.Schema.Params[c.op.AliasArg].Canon).(*primtorch.TensorMeta)
	if !ok || c.d.read(c.stateOf(m)) != r {
		return r
	}
	v := c.d.prim("view", r, sizesOf(r))
	// prims.view gives a size-1 dim the stride torch's view computes; narrow, slice, expand
	// and the other view ops that return their input unchanged keep the input's (fuzz seed
	// 36717: x.narrow(0, 0, 1) of a [1, 4] tensor with strides (1, 1) has them too, and its
	// .long() is then that tensor itself)
	// (a tuple-valued view op — split, chunk — that returns its input keeps prims.view's)
	if om, ok := c.out.(*primtorch.TensorMeta); ok && om != nil && om.Sym == nil && v.TensorMeta().Sym == nil && equalInts(om.Shape, v.TensorMeta().Shape) {
		vm := v.TensorMeta()
		st := append([]int64{}, vm.Strides...)
		for i, n := range vm.Shape {
			if n == 1 {
				st[i] = om.Strides[i]
			}
		}
		vm.Strides = st
	}
	return v
}

// fixLayout gives a freshly computed result the layout torch gives it (want's strides) when
// that layout is dense: the backend then writes the result as eager would lay it out.
func (d *decomposer) fixLayout(r *fxgraph.Node, want *primtorch.TensorMeta) {
	m := r.TensorMeta()
	if m == nil || want == nil || d.viewSrc[r] != nil || r.Op != fxgraph.CallFunction || r.Index() < d.firstNew {
		return
	}
	m.RequiresGrad = want.RequiresGrad
	if m.DType != want.DType || !equalInts(m.Shape, want.Shape) || want.Offset != 0 || !want.IsNonOverlappingAndDense() {
		return
	}
	if r.Target == "operator.getitem" || r.Target == "prims.fallback" || r.Target == "prims.copy_" || d.usedLater(r) {
		return
	}
	setStrides(m, want)
}

// setStrides gives m want's strides (m has want's sizes), symbolic ones included.
func setStrides(m, want *primtorch.TensorMeta) {
	if m.Sym == nil && want.Sym == nil {
		m.Strides = append([]int64{}, want.Strides...)
		return
	}
	m.SetSymLayout(m.SymSizes(), want.SymStrides(), m.SymOffset())
}

// usedLater reports whether a node after r reads it (its meta was computed from r's layout).
func (d *decomposer) usedLater(r *fxgraph.Node) bool {
	for _, n := range d.g.Nodes[r.Index()+1:] {
		for _, in := range n.Inputs() {
			if in == r {
				return true
			}
		}
	}
	return false
}

// output maps the graph's outputs, adds the copy_ epilogue for mutated inputs and the output
// node.
func (d *decomposer) output(n *fxgraph.Node) error {
	d.cur = n
	d.firstNew = len(d.g.Nodes)
	var res fxgraph.Arg
	if len(n.Args) > 0 {
		var err error
		if res, err = d.mapOutput(n.Args[0]); err != nil {
			return err
		}
	}
	d.checkIndicesFirst()
	for _, s := range d.inputs {
		if !s.mutated {
			continue
		}
		if d.g.Bumps == nil {
			d.g.Bumps = map[string]int{}
		}
		d.g.Bumps[s.input.Name] = s.bumps
		v := d.read(s)
		if v == s.input {
			continue
		}
		if d.rootOf(v) == s.input {
			v = d.prim("clone", v) // the new value reads the input it overwrites
		}
		d.emit("prims.copy_", []any{s.input, v}, nil)
	}
	d.g.AddOutput(res)
	// Values a decomposition computed but nothing reads (the mean of var, ...). Calls with
	// effects stay (fxgraph.CallEffects: the registry's facts): writes, fallbacks (a random op
	// draws from torch's generator even when its result is unused), an index that may be out of
	// range.
	fxgraph.EliminateDeadCode(d.g, func(n *fxgraph.Node) bool {
		return n.Target == "prims.copy_" || n.Target == "prims.fallback" || fxgraph.CallEffects(n) != 0
	})
	return nil
}

func (d *decomposer) mapOutput(a fxgraph.Arg) (fxgraph.Arg, error) {
	var err error
	out := fxgraph.MapArg(a, func(m *fxgraph.Node) fxgraph.Arg {
		if err != nil {
			return m
		}
		switch s := d.env[m].(type) {
		case *tstate:
			var v *fxgraph.Node
			if v, err = d.outputValue(s); err != nil {
				return m
			}
			return v
		case []any: // a tuple-valued call returned as a whole
			tup := fxgraph.Tuple{}
			for _, e := range s {
				es, ok := e.(*tstate)
				if !ok {
					err = d.unsupportedf("output %s holds a %T", m.Name, e)
					return m
				}
				var v *fxgraph.Node
				if v, err = d.outputValue(es); err != nil {
					return m
				}
				tup.Elems = append(tup.Elems, v)
			}
			return tup
		}
		err = d.unsupportedf("output %s has no tensor value", m.Name)
		return m
	})
	return out, err
}

// outputValue is the node a graph output reads. An output that aliases a graph input (the
// input itself or a view of it) stays a chain of view prims from that input's node.
func (d *decomposer) outputValue(s *tstate) (*fxgraph.Node, error) {
	base := s
	if s.base != nil {
		base = s.base
	}
	if base.input != nil {
		if base.mutated {
			return nil, d.unsupportedf("an output aliases graph input %s, which the graph mutates", base.input.Name)
		}
		return d.read(s), nil
	}
	v := d.read(s)
	if s.base != nil && s.base.mutated && d.rootOf(v) != d.rootOf(d.read(s.base)) {
		// A view written through (write gave it the written value, a tensor of its own): in
		// eager it is still a view of its base's storage, with the base's strides (fuzz seed
		// 3980: v1.narrow(-1, 0, 1) written by setitem has strides (300, 1), not (1, 1)).
		v = d.replay(d.read(s.base), s.chain)
		s.cur = v
	}
	if d.rootOf(v).Op != fxgraph.CallFunction {
		// A computed value that is (a view of) an input's node without aliasing it in eager:
		// a copy in that value's layout where it is dense, as eager's tensor has it (fuzz seed
		// 36841: a permuted tensor written with copy_ from an input of its layout)
		c := d.prim("clone", v)
		if vm := v.TensorMeta(); vm.IsNonOverlappingAndDense() { // (at the hints, as write's)
			setStrides(c.TensorMeta(), vm)
		}
		v = c
	}
	return v, nil
}

// rootOf follows view prims back to the node they view.
func (d *decomposer) rootOf(v *fxgraph.Node) *fxgraph.Node {
	for d.viewSrc[v] != nil {
		v = d.viewSrc[v]
	}
	return v
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
