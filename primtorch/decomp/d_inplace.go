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
	r, err := f(c)
	if err != nil {
		return nil, err
	}
	s := c.state(c.op.Schema.Params[0].Canon)
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
