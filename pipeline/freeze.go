package pipeline

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
)

// Freezing (options={"freezing": True}, like Inductor's config.freezing; by default for a module
// in eval mode, A90): in an inference graph (nothing requires grad) parameters and buffers are
// constants, so work that depends on them alone is done once at compile time. Here: a BatchNorm
// in eval mode that follows a convolution is folded into the convolution's weight and bias; the
// plan is marked Frozen, so the runtime packs convolution weights for oneDNN (A91). The folded
// tensors are new constants; the frame is guarded by the identity (already), the version counter
// and the data pointer of every tensor they were computed from (Request.GuardVersion), so a
// weight updated in place (an optimizer step, load_state_dict) or replaced through `.data`
// recompiles instead of serving stale results; the shim drops the entry whose version guard
// failed, so the recompile replaces it.

var convTargets = map[string]bool{"torch.nn.functional.conv1d": true, "torch.nn.functional.conv2d": true,
	"torch.nn.functional.conv3d": true, "torch.conv1d": true, "torch.conv2d": true, "torch.conv3d": true,
	"torch._C._nn.conv2d": true}

var bnTargets = map[string]bool{"torch.nn.functional.batch_norm": true, "torch.batch_norm": true}

// freeze rewrites the request's graph in place; it returns how many BatchNorms it folded.
func (c *compiler) freeze() (int, error) {
	r := c.r
	g := r.Graph
	if Unsuitable(g, r.GradEnabled) != "" || anyRequiresGrad(g) {
		return 0, nil
	}
	users := g.Users()
	folded := 0
	var remove []*fxgraph.Node
	for _, bn := range g.Nodes {
		if bn.Op != fxgraph.CallFunction || !bnTargets[bn.Target] {
			continue
		}
		args, ok := bnArgs(bn)
		if !ok {
			continue
		}
		conv, isNode := args.input.(*fxgraph.Node)
		if !isNode || conv.Op != fxgraph.CallFunction || !convTargets[conv.Target] || len(users[conv]) != 1 {
			continue
		}
		w := attrArg(conv, 1)
		if w == nil {
			continue
		}
		var b *fxgraph.Node
		if len(conv.Args) > 2 {
			b = attrArg(conv, 2)
			if b == nil && !isNoneArg(conv.Args[2]) {
				continue
			}
		}
		sources := []*fxgraph.Node{w, b, args.mean, args.variance, args.weight, args.bias}
		tensor := func(n *fxgraph.Node) py.Obj {
			if n == nil {
				return 0
			}
			return r.Attrs[n.Target]
		}
		nw, nb, err := c.h.FoldConvBN(tensor(w), tensor(b), tensor(args.mean), tensor(args.variance),
			tensor(args.weight), tensor(args.bias), args.eps)
		if err != nil {
			return folded, fmt.Errorf("folding %s into %s: %v", bn.Name, conv.Name, err)
		}
		// Guard every tensor the folded values came from by its version.
		if r.GuardVersion != nil {
			for _, n := range sources {
				if n == nil {
					continue
				}
				ver, err := c.h.TensorVersion(r.Attrs[n.Target])
				if err != nil {
					return folded, err
				}
				if err := r.GuardVersion(n.Target, ver); err != nil {
					return folded, err
				}
			}
		}
		wPath, bPath := "_frozen."+conv.Name+".weight", "_frozen."+conv.Name+".bias"
		r.Attrs[wPath], r.Attrs[bPath] = nw, nb
		wNode := g.AddGetAttr(wPath, w.Meta)
		bMeta := metaVector(w, conv)
		bNode := g.AddGetAttr(bPath, bMeta)
		// New get_attrs are appended; move them before the conv (placeholders stay first).
		g.Nodes = g.Nodes[:len(g.Nodes)-2]
		insertBefore(g, conv, wNode, bNode)
		for len(conv.Args) < 3 {
			conv.Args = append(conv.Args, fxgraph.Const{V: nil})
		}
		conv.Args[1], conv.Args[2] = wNode, bNode
		// The BatchNorm's users read the convolution instead.
		for _, u := range users[bn] {
			replaceArg(u, bn, conv)
		}
		remove = append(remove, bn)
		folded++
		logs.Printf(logs.Inductor, "freezing: folded %s into %s (%s)", bn.Name, conv.Name, bn.Where)
	}
	if folded > 0 {
		keep := g.Nodes[:0]
		dead := map[*fxgraph.Node]bool{}
		for _, n := range remove {
			dead[n] = true
		}
		for _, n := range g.Nodes {
			if !dead[n] {
				keep = append(keep, n)
			}
		}
		g.Nodes = keep
		g.Renumber()
		fxgraph.EliminateDeadCode(g, func(*fxgraph.Node) bool { return false })
	}
	return folded, nil
}

type bnCall struct {
	input                        fxgraph.Arg
	mean, variance, weight, bias *fxgraph.Node
	eps                          float64
}

// bnArgs reads F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
// eps) with training False and every tensor a get_attr; ok=false otherwise.
func bnArgs(n *fxgraph.Node) (bnCall, bool) {
	names := []string{"input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"}
	vals := map[string]fxgraph.Arg{}
	for i, a := range n.Args {
		if i < len(names) {
			vals[names[i]] = a
		}
	}
	for _, kw := range n.Kwargs {
		vals[kw.Name] = kw.Value
	}
	var c bnCall
	c.input = vals["input"]
	if tr, ok := vals["training"].(fxgraph.Const); !ok || tr.V != false {
		return c, false
	}
	eps, ok := vals["eps"].(fxgraph.Const)
	if !ok {
		return c, false
	}
	switch e := eps.V.(type) {
	case float64:
		c.eps = e
	case int64:
		c.eps = float64(e)
	default:
		return c, false
	}
	get := func(name string, optional bool) (*fxgraph.Node, bool) {
		a, present := vals[name]
		if !present || isNoneArg(a) {
			return nil, optional
		}
		node, isNode := a.(*fxgraph.Node)
		if !isNode || node.Op != fxgraph.GetAttr {
			return nil, false
		}
		return node, true
	}
	var okm, okv, okw, okb bool
	c.mean, okm = get("running_mean", false)
	c.variance, okv = get("running_var", false)
	c.weight, okw = get("weight", true)
	c.bias, okb = get("bias", true)
	return c, okm && okv && okw && okb
}

func attrArg(n *fxgraph.Node, i int) *fxgraph.Node {
	if i >= len(n.Args) {
		return nil
	}
	a, ok := n.Args[i].(*fxgraph.Node)
	if !ok || a.Op != fxgraph.GetAttr {
		return nil
	}
	return a
}

func isNoneArg(a fxgraph.Arg) bool {
	c, ok := a.(fxgraph.Const)
	return ok && c.V == nil
}

// metaVector is the meta of the folded bias: one value per output channel.
func metaVector(w *fxgraph.Node, conv *fxgraph.Node) any {
	wm := w.TensorMeta()
	m := *wm
	m.Shape = []int64{wm.Shape[0]}
	m.Strides = []int64{1}
	m.Offset = 0
	return &m
}

func insertBefore(g *fxgraph.Graph, at *fxgraph.Node, nodes ...*fxgraph.Node) {
	var out []*fxgraph.Node
	for _, n := range g.Nodes {
		if n == at {
			out = append(out, nodes...)
		}
		out = append(out, n)
	}
	g.Nodes = out
	g.Renumber()
}

// replaceArg makes n read to instead of from.
func replaceArg(n, from, to *fxgraph.Node) {
	swap := func(a fxgraph.Arg) fxgraph.Arg {
		return fxgraph.MapArg(a, func(m *fxgraph.Node) fxgraph.Arg {
			if m == from {
				return to
			}
			return m
		})
	}
	for i, a := range n.Args {
		n.Args[i] = swap(a)
	}
	for i, kw := range n.Kwargs {
		n.Kwargs[i].Value = swap(kw.Value)
	}
}
