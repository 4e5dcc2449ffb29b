package decomp

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// ctx is one torch-level call being decomposed: the op its arguments select, the arguments
// bound to its schema (tensors stand as metas of their current values, mapped back to their
// states), and the call's result meta.
type ctx struct {
	d   *decomposer
	n   *fxgraph.Node
	op  *primtorch.Op
	a   *primtorch.Args
	out any // n.Meta: what torch gives
	// states maps the metas standing for tensor arguments to the tensors' states.
	states map[*primtorch.TensorMeta]*tstate
	// done: the decomposition bound the node's value itself (setitem, copy_, in-place ops).
	done bool
}

// value converts an original argument to a primtorch.Value: tensors become fresh copies of
// their current values' metas.
func (c *ctx) value(a fxgraph.Arg) (primtorch.Value, error) {
	switch a := a.(type) {
	case *fxgraph.Node:
		switch v := c.d.env[a].(type) {
		case *tstate:
			m := c.d.read(v).TensorMeta().Clone()
			c.states[m] = v
			return m, nil
		case []any:
			out := make([]primtorch.Value, len(v))
			for i, e := range v {
				s, ok := e.(*tstate)
				if !ok {
					out[i] = e
					continue
				}
				m := c.d.read(s).TensorMeta().Clone()
				c.states[m] = s
				out[i] = m
			}
			return out, nil
		case primtorch.SymInt:
			return v, nil
		case primtorch.SymFloat:
			return v, nil // a float the graph computes (pyfloat.go)
		case nil:
			return nil, c.d.unsupportedf("argument %s is None (a call without a result)", a.Name)
		}
		return nil, c.d.unsupportedf("argument %s has no value", a.Name)
	case fxgraph.Const:
		return a.V, nil
	case fxgraph.List:
		out := make([]primtorch.Value, len(a.Elems))
		for i, e := range a.Elems {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case fxgraph.Tuple:
		out := make(primtorch.Tuple, len(a.Elems))
		for i, e := range a.Elems {
			v, err := c.value(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case fxgraph.Slice:
		var parts [3]primtorch.Value
		for i, p := range []fxgraph.Arg{a.Start, a.Stop, a.Step} {
			v, err := c.value(p)
			if err != nil {
				return nil, err
			}
			parts[i] = v
		}
		s, ok := primtorch.SliceOf(parts[0], parts[1], parts[2])
		if !ok {
			return nil, c.d.unsupportedf("a slice bound that is not an int (%v)", parts)
		}
		return s, nil
	}
	return nil, c.d.unsupportedf("an argument of type %T", a)
}

// bind resolves a call's overload and binds its arguments.
func (d *decomposer) bind(n *fxgraph.Node, op *primtorch.Op) (*ctx, error) {
	d.firstNew = len(d.g.Nodes)
	c := &ctx{d: d, n: n, out: n.Meta, states: map[*primtorch.TensorMeta]*tstate{}}
	args := make([]primtorch.Value, len(n.Args))
	for i, a := range n.Args {
		v, err := c.value(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	var kwargs []primtorch.KV
	for _, kw := range n.Kwargs {
		v, err := c.value(kw.Value)
		if err != nil {
			return nil, err
		}
		kwargs = append(kwargs, primtorch.KV{Name: kw.Name, Value: v})
	}
	o, a, err := op.Resolve(args, kwargs)
	if err != nil {
		return nil, fmt.Errorf("decomp: %s: the call does not bind to %s (%v); the capture stage recorded a call the registry rejects: ptgo BUG", d.location(), op.Name, err)
	}
	c.op, c.a = o, a
	d.callStates, d.callOp, d.callSelf = c.states, o, nil
	if len(o.Schema.Params) > 0 && a.Has(o.Schema.Params[0].Canon) {
		d.callSelf, _ = a.Get(o.Schema.Params[0].Canon).(*primtorch.TensorMeta)
	}
	return c, nil
}

// outsideCore reports complex tensors, or tensors on a device other than the CPU or a CUDA GPU,
// among the call's arguments or results: core ops are real, on the CPU or on CUDA (the CUDA
// path compiles graphs whose tensors are all on one CUDA device; the loop IR is the same).
func (c *ctx) outsideCore() bool {
	bad := func(m *primtorch.TensorMeta) bool {
		return m != nil && (m.DType.IsComplex() || (m.Device != primtorch.CPU && m.Device.Type != "" && m.Device.Type != "cuda"))
	}
	for _, m := range c.a.AllTensors() {
		if bad(m) {
			return true
		}
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch m := v.(type) {
		case *primtorch.TensorMeta:
			return bad(m)
		case []any:
			for _, e := range m {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(c.out)
}

// stateOf returns the state of a tensor argument's meta.
func (c *ctx) stateOf(m *primtorch.TensorMeta) *tstate {
	s := c.states[m]
	if s == nil {
		bug("tensor argument %s has no state", m)
	}
	return s
}

// state returns the state of tensor parameter name.
func (c *ctx) state(name string) *tstate {
	m, ok := c.a.Get(name).(*primtorch.TensorMeta)
	if !ok {
		bug("parameter %s is %T, not a tensor", name, c.a.Get(name))
	}
	return c.stateOf(m)
}

// in returns parameter name as an operand: the current value node of a tensor, a Go number
// (bool, int64, float64), or nil for None.
func (c *ctx) in(name string) val {
	switch v := c.a.Get(name).(type) {
	case *primtorch.TensorMeta:
		return c.d.read(c.stateOf(v))
	case int:
		return int64(v)
	default:
		return v
	}
}

// has reports whether parameter name is given and not None.
func (c *ctx) has(name string) bool { return c.a.Has(name) }

// tensors returns a tensor-list parameter's current values (nil entries for None).
func (c *ctx) tensors(name string) []*fxgraph.Node {
	ms := c.a.Tensors(name)
	out := make([]*fxgraph.Node, len(ms))
	for i, m := range ms {
		if m != nil {
			out[i] = c.d.read(c.stateOf(m))
		}
	}
	return out
}

func (c *ctx) int(name string) int64            { return c.a.Int(name) }
func (c *ctx) ints(name string) []int64         { return c.a.Ints(name) }
func (c *ctx) float(name string) float64        { return c.a.Float(name) }
func (c *ctx) bool(name string) bool            { return c.a.Bool(name) }
func (c *ctx) str(name string) string           { return c.a.Str(name) }
func (c *ctx) get(name string) any              { return c.a.Get(name) }
func (c *ctx) optInt(name string) (int64, bool) { return c.a.OptInt(name) }

// outMeta is the call's result meta (a tensor), as torch computes it.
func (c *ctx) outMeta() *primtorch.TensorMeta {
	m, ok := c.out.(*primtorch.TensorMeta)
	if !ok {
		bug("%s returns %T, not a tensor", c.op.Name, c.out)
	}
	return m
}

// outMetas is the call's tuple result metas.
func (c *ctx) outMetas() []*primtorch.TensorMeta {
	ms, ok := c.out.([]any)
	if !ok {
		bug("%s returns %T, not a tuple", c.op.Name, c.out)
	}
	out := make([]*primtorch.TensorMeta, len(ms))
	for i, m := range ms {
		out[i], _ = m.(*primtorch.TensorMeta)
	}
	return out
}

// self is the op's first parameter (self / input) as an operand.
func (c *ctx) self() val { return c.in(c.op.Schema.Params[0].Canon) }

// selfNode is the op's first parameter, a tensor.
func (c *ctx) selfNode() *fxgraph.Node { return asNode(c.self()) }
