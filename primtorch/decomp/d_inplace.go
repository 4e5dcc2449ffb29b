package decomp

import "ptgo/primtorch"

// inplace is every in-place op with a functional form (add_, relu_, ...): the functional op's
// decomposition computes the new value, written into self (converted to self's dtype); the
// call returns self.
func inplace(c *ctx) (any, error) {
	f := table[c.op.Functional.ID]
	if f == nil {
		return nil, errFallback
	}
	s := c.state(c.op.Schema.Params[0].Canon)
	if keepsHistory[c.op.Functional.ID] && c.d.rg && c.d.read(s).TensorMeta().RequiresGrad {
		return nil, c.d.unsupportedf("%s on a tensor that requires grad: torch's in-place logical ops have no "+
			"derivative, so the tensor keeps its autograd history and its gradient passes the write as if it had "+
			"not happened, which no functional write expresses", c.op.Name)
	}
	r, err := f(c)
	if err != nil {
		return nil, err
	}
	if err := c.d.write(s, asNode(r), false); err != nil {
		return nil, err
	}
	c.done = true
	c.d.env[c.n] = s
	return nil, nil
}

// table is decomps, reached through a pointer so that inplace (an entry of decomps) can read
// it without an initialization cycle.
var table *[primtorch.NumOps]decompFn

func init() { table = &decomps }

// keepsHistory are the ops whose in-place forms torch's autograd leaves without a derivative,
// so a tensor that requires grad keeps its grad_fn through them (logical_not_ of x·2: the
// gradient is still 2; fuzz seed 29589, written through a view). The comparisons' in-place
// forms (eq_, lt_, ...) have a derivative, zeros: a functional write gives those.
var keepsHistory = map[primtorch.OpID]bool{
	primtorch.OpLogicalNot: true, primtorch.OpLogicalAnd: true, primtorch.OpLogicalOr: true, primtorch.OpLogicalXor: true,
}
