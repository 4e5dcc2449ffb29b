package aotautograd

import (
	"fmt"
	"slices"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// joint is the joint forward+backward graph: the prims graph's nodes, then the backward's
// (each forward node's vector-Jacobian product, accumulated in reverse order), then the
// forward's copy_ epilogue. Its placeholders are the primals (the prims graph's placeholders)
// then the tangents (one per user output that requires grad); it returns the user outputs
// followed by one gradient (or None) per primal.
type joint struct {
	g         *fxgraph.Graph
	primals   []*fxgraph.Node
	tangents  []*fxgraph.Node
	tangentOf []int         // the user output each tangent is the gradient of
	outs      []fxgraph.Arg // the user outputs, flattened
	gradIns   []*fxgraph.Node
	epilogue  []*fxgraph.Node // copy_ nodes
	forward   map[*fxgraph.Node]bool
	rg        map[*fxgraph.Node]bool
	// exact: forward values the backward compares for equality with a result the forward
	// computed from them (amax's ties, maximum's winner). They are saved, never recomputed: a
	// transcendental function recomputed in another kernel (libmvec's vector tanhf in one loop,
	// the scalar tanhf in another's tail) may differ in the last bit, and the mask would miss
	// the maximum (an infinite or zero gradient). Saved, the forward stores them once and its
	// reduction reads the stored values too.
	exact map[*fxgraph.Node]bool
}

// gradDeps is Graphs.GradDeps: for each primal, the user outputs that reach it through values
// that require grad.
func (jt *joint) gradDeps() [][]int {
	deps := make([][]int, len(jt.primals))
	index := map[*fxgraph.Node]int{}
	for i, p := range jt.primals {
		index[p] = i
	}
	for k, o := range jt.outs {
		n, ok := o.(*fxgraph.Node)
		if !ok || !jt.rg[n] {
			continue
		}
		seen := map[*fxgraph.Node]bool{}
		stack := []*fxgraph.Node{n}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[v] || !jt.rg[v] {
				continue
			}
			seen[v] = true
			if i, ok := index[v]; ok {
				deps[i] = append(deps[i], k)
			}
			stack = append(stack, v.Inputs()...)
		}
	}
	return deps
}

// jointBuilder accumulates gradients during the backward pass.
type jointBuilder struct {
	*joint
	b       *builder
	grads   map[*fxgraph.Node][]*fxgraph.Node
	touched map[*fxgraph.Node]bool
}

// accumulate adds grad (nil: a zero gradient) to x's gradient when x requires grad.
func (j *jointBuilder) accumulate(x, grad *fxgraph.Node) {
	if x == nil || !j.rg[x] {
		return
	}
	j.touched[x] = true
	if grad == nil {
		return
	}
	xm, gm := x.TensorMeta(), grad.TensorMeta()
	if xm == nil || gm == nil || xm.DType != gm.DType || !agree(xm, gm) {
		bug("the gradient of %s (%v) is %v", x.Name, x.Meta, grad.Meta)
	}
	j.grads[x] = append(j.grads[x], grad)
}

// total sums x's gradient contributions (nil when there are none).
func (j *jointBuilder) total(x *fxgraph.Node) *fxgraph.Node {
	gs := j.grads[x]
	if len(gs) == 0 {
		return nil
	}
	acc := gs[0]
	for _, g := range gs[1:] {
		acc = j.b.add(acc, g)
	}
	return acc
}

// flattenOutputs lists the tensors and numbers of an output structure in order.
func flattenOutputs(a fxgraph.Arg, out *[]fxgraph.Arg) error {
	switch a := a.(type) {
	case *fxgraph.Node, fxgraph.Const:
		*out = append(*out, a)
	case fxgraph.Tuple:
		for _, e := range a.Elems {
			if err := flattenOutputs(e, out); err != nil {
				return err
			}
		}
	case fxgraph.List:
		for _, e := range a.Elems {
			if err := flattenOutputs(e, out); err != nil {
				return err
			}
		}
	case fxgraph.Dict:
		for _, e := range a.Entries {
			if err := flattenOutputs(e.Value, out); err != nil {
				return err
			}
		}
	default:
		return unsupportedf("graph output of type %T", a)
	}
	return nil
}

// requiresGrad computes which nodes of the forward require grad: floating-point results of
// differentiable ops (and of fallbacks, which fail later if a gradient reaches them) with an
// input that requires grad, whose meta says they require grad.
func (jt *joint) requiresGrad(nodes []*fxgraph.Node, requiresGrad []bool) error {
	k := 0
	for _, n := range nodes {
		anyIn := false
		for _, in := range n.Inputs() {
			anyIn = anyIn || jt.rg[in]
		}
		isFloat := func(m any) bool {
			tm, ok := m.(*primtorch.TensorMeta)
			return ok && tm.DType.IsFloatingPoint()
		}
		// a complex result (only fallbacks make them) requires grad as in torch, so that a
		// gradient flowing through it reaches the fallback and fails there (torch.complex,
		// view_as_real), rather than stopping silently
		isDiff := func(m any) bool {
			tm, ok := m.(*primtorch.TensorMeta)
			return ok && (tm.DType.IsFloatingPoint() || tm.DType.IsComplex())
		}
		switch n.Op {
		case fxgraph.Placeholder:
			if requiresGrad[k] {
				if !isFloat(n.Meta) {
					return fmt.Errorf("aotautograd: input %s (%v) requires grad, but only floating-point tensors can", n.Name, n.Meta)
				}
				if !metaRequiresGrad(n.Meta) {
					return fmt.Errorf("aotautograd: input %s requires grad, but its meta (%v) does not, so the decomposition's metas say nothing depending on it does; capture and decompose the graph with requires_grad set", n.Name, n.Meta)
				}
				jt.rg[n] = true
			}
			k++
		case fxgraph.GetAttr:
			// buffers; parameters are lifted to placeholders before Split
		case fxgraph.CallFunction:
			// A value whose meta says it does not require grad (computed under no_grad,
			// detached) stops gradients: the decomposition's metas say what torch's would.
			if !metaRequiresGrad(n.Meta) {
				continue
			}
			if n.Target == "operator.getitem" {
				jt.rg[n] = anyIn && isDiff(n.Meta)
				continue
			}
			op := primtorch.Lookup(n.Target)
			if op == nil || !op.IsPrim() {
				return unsupportedf("node %s calls %s, which is not a core op; Split takes prims graphs (decomp.Decompose)", n.Name, n.Target)
			}
			switch {
			case op.ID == primtorch.OpPrimCopy:
			case op.ID == primtorch.OpPrimFallback:
				_, tuple := n.Meta.([]any)
				jt.rg[n] = anyIn && (tuple || isDiff(n.Meta))
			case derivatives[op.ID].vjp != nil:
				jt.rg[n] = anyIn && isFloat(n.Meta)
			}
		default:
			return unsupportedf("node %s is a %s; Split takes prims graphs (decomp.Decompose)", n.Name, n.Op)
		}
	}
	return nil
}

// metaRequiresGrad reports whether a node's meta (a tensor, or any tensor of a tuple)
// requires grad.
func metaRequiresGrad(m any) bool {
	switch v := m.(type) {
	case *primtorch.TensorMeta:
		return v.RequiresGrad
	case []any:
		for _, e := range v {
			if metaRequiresGrad(e) {
				return true
			}
		}
	}
	return false
}

// buildJoint differentiates the prims graph g: it returns the joint graph.
func buildJoint(g *fxgraph.Graph, requiresGrad []bool) (*joint, error) {
	jg := fxgraph.Clone(g)
	out := jg.OutputNode()
	if out == nil {
		return nil, fmt.Errorf("aotautograd: graph %s has no output node", g.Name)
	}
	jt := &joint{g: jg, forward: map[*fxgraph.Node]bool{}, rg: map[*fxgraph.Node]bool{}, exact: map[*fxgraph.Node]bool{}}
	if len(out.Args) > 0 {
		if err := flattenOutputs(out.Args[0], &jt.outs); err != nil {
			return nil, err
		}
	}
	var body []*fxgraph.Node
	for _, n := range jg.Nodes[:len(jg.Nodes)-1] {
		switch {
		case n.Op == fxgraph.Placeholder:
			jt.primals = append(jt.primals, n)
		case n.Op == fxgraph.CallFunction && n.Target == "prims.copy_":
			jt.epilogue = append(jt.epilogue, n)
		default:
			body = append(body, n)
		}
		jt.forward[n] = true
	}
	if len(requiresGrad) != len(jt.primals) {
		return nil, fmt.Errorf("aotautograd: %d requires-grad flags for the %d placeholders of %s; give one per placeholder", len(requiresGrad), len(jt.primals), g.Name)
	}
	if err := jt.requiresGrad(jg.Nodes[:len(jg.Nodes)-1], requiresGrad); err != nil {
		return nil, err
	}
	for _, n := range jt.epilogue {
		if dst, _ := n.Args[0].(*fxgraph.Node); dst != nil && jt.rg[dst] {
			return nil, unsupportedf("the graph writes input %s (prims.copy_ %s), which requires grad", dst.Name, n.Name)
		}
	}

	// The backward pass appends to jg; the forward's nodes are reordered below.
	jg.Nodes = jg.Nodes[:0]
	jb := &jointBuilder{joint: jt, b: &builder{g: jg}, grads: map[*fxgraph.Node][]*fxgraph.Node{}, touched: map[*fxgraph.Node]bool{}}
	for _, n := range body {
		jb.b.remember(n)
	}
	for k, o := range jt.outs {
		n, ok := o.(*fxgraph.Node)
		if !ok || !jt.rg[n] {
			continue
		}
		m := n.TensorMeta()
		t := jg.AddPlaceholder(fmt.Sprintf("tangents_%d", k+1), contiguousLike(m))
		jt.tangents = append(jt.tangents, t)
		jt.tangentOf = append(jt.tangentOf, k)
		jb.accumulate(n, t)
	}
	if err := jb.backward(body); err != nil {
		return nil, err
	}
	owned := map[*fxgraph.Node]bool{} // storage roots a gradient already holds
	for _, p := range jt.primals {
		var grad *fxgraph.Node
		if jt.rg[p] {
			grad = jb.total(p)
			switch {
			case grad == nil && jb.touched[p]:
				grad = jb.b.zerosLike(p.TensorMeta())
			case grad != nil && isView(grad) && !symDense(grad.TensorMeta()):
				grad = jb.b.emit("clone", grad) // no stride-0 or gapped gradients
			}
			// Every gradient is a tensor of its own, as eager's are: the builder reuses equal
			// computations, so two inputs' gradients (the bias gradients of two BatchNorms whose
			// outputs are added: both the sum of one incoming gradient) could be one node, or a
			// view of another's, or a tensor the forward saved. autograd would then put one
			// tensor into both .grad fields, and the next accumulation into one would change the
			// other (resnet's second training step without zero_grad).
			if grad != nil {
				r := storageRoot(grad)
				if owned[r] || jt.forward[r] {
					grad = jb.b.fresh("clone", grad)
					r = grad
				}
				owned[r] = true
			}
		}
		jt.gradIns = append(jt.gradIns, grad)
	}
	backward := jg.Nodes[len(jt.tangents):]
	nodes := slices.Concat(jt.primals, jt.tangents, body, backward, jt.epilogue)
	outs := slices.Clone(jt.outs)
	for _, gi := range jt.gradIns {
		if gi == nil {
			outs = append(outs, fxgraph.Const{V: nil})
		} else {
			outs = append(outs, gi)
		}
	}
	jg.Nodes = nodes
	jg.AddOutput(fxgraph.Tuple{Elems: outs})
	jg.Renumber()
	return jt, nil
}

// backward runs the reverse pass over the forward body (in reverse order).
func (jb *jointBuilder) backward(body []*fxgraph.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			a, ok := r.(abort)
			if !ok {
				panic(r)
			}
			err = a.err
		}
	}()
	for i := len(body) - 1; i >= 0; i-- {
		n := body[i]
		if !jb.rg[n] || !jb.touched[n] {
			continue
		}
		g := jb.total(n)
		if n.Target == "operator.getitem" {
			src, item, vjp := itemDerivative(n)
			if vjp == nil {
				return notDifferentiable(n.Args[0].(*fxgraph.Node), noneFallback)
			}
			if g == nil { // only zero gradients reached the item: the fallback's inputs get zeros
				for _, in := range src.Inputs() {
					jb.accumulate(in, nil)
				}
				continue
			}
			jb.b.loc = n.Where
			vjp(&vjpCtx{builder: jb.b, n: src, g: g, j: jb}, item)
			continue
		}
		op := primtorch.Lookup(n.Target)
		d := derivatives[op.ID]
		if op.ID == primtorch.OpPrimFallback {
			d.vjp = fallbackDerivative(n)
		}
		if d.vjp == nil {
			if op.ID == primtorch.OpPrimFallback {
				return notDifferentiable(n, noneFallback)
			}
			bug("%s (%s) requires grad but has no derivative: %s", n.Name, n.Target, d.none)
		}
		if g == nil { // only zero gradients reached n: its inputs get zeros too
			for _, in := range n.Inputs() {
				jb.accumulate(in, nil)
			}
			continue
		}
		jb.b.loc = n.Where
		d.vjp(&vjpCtx{builder: jb.b, n: n, g: g, j: jb})
	}
	return nil
}

// storageRoot follows view prims from n to the node whose storage n shares.
func storageRoot(n *fxgraph.Node) *fxgraph.Node {
	for isView(n) {
		src, ok := n.Args[0].(*fxgraph.Node)
		if !ok {
			break
		}
		n = src
	}
	return n
}

// isView reports whether n is a view prim.
func isView(n *fxgraph.Node) bool {
	if n.Op != fxgraph.CallFunction {
		return false
	}
	op := primtorch.Lookup(n.Target)
	return op != nil && op.Kind == primtorch.KindView
}
