package decomp

import (
	"ptgo/fxgraph"
)

// In-place metadata ops: x.unsqueeze_(0), x.t_(), x.squeeze_(), x.transpose_(0, 1) change the
// tensor object's sizes and strides, not its elements (torch.optim's Adamax calls unsqueeze_ on
// a temporary). The tensor's state keeps its identity (every later use of the object reads the
// new metadata) and takes the value of the out-of-place view: a base's value becomes the view
// of its old value, a view's chain from its base gains the view's step. Refused, so that torch
// runs the graph: a graph input or a view of one (the caller's tensor object would change, or
// a view of it that outlives the call), and a base other tensors of the graph view (their
// chains start from the base's old metadata).
var metadataInplace = map[string]string{
	"unsqueeze_": "unsqueeze", "squeeze_": "squeeze", "t_": "t", "transpose_": "transpose",
	"swapdims_": "swapdims", "swapaxes_": "swapaxes",
}

// metadataInplaceCall decomposes n (a CallMethod of metadataInplace) with the out-of-place op.
func (d *decomposer) metadataInplaceCall(n *fxgraph.Node, view string) error {
	self, ok := n.Args[0].(*fxgraph.Node)
	if !ok {
		bug("%s on a %T", n.Target, n.Args[0])
	}
	s, ok := d.env[self].(*tstate)
	if !ok {
		return d.unsupportedf("Tensor.%s on a value that is not one tensor", n.Target)
	}
	if rootState(s).input != nil {
		return d.unsupportedf("Tensor.%s changes the metadata of a tensor the caller can see (an input or a view of one)", n.Target)
	}
	if s.base == nil {
		for _, v := range d.env {
			if o, ok := v.(*tstate); ok && o.base == s {
				return d.unsupportedf("Tensor.%s changes the metadata of a tensor other tensors of the graph view", n.Target)
			}
		}
	}
	// The out-of-place view of the same arguments, decomposed as any call is; its state says
	// how the result views s's base.
	tmp := *n
	tmp.Target = view
	if err := d.callNode(&tmp); err != nil {
		return err
	}
	ns, ok := d.env[&tmp].(*tstate)
	delete(d.env, &tmp)
	if !ok {
		bug("Tensor.%s's view gave %T", view, d.env[&tmp])
	}
	if s.base == nil {
		s.cur = ns.cur // s stays a base: its value is the view of its old value
	} else {
		if ns.base != s.base {
			bug("Tensor.%s of a view: the view's base changed", view)
		}
		s.cur, s.chain, s.seen = ns.cur, ns.chain, ns.seen
	}
	d.env[n] = s
	return nil
}
