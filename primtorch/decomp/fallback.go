package decomp

import (
	"slices"
	"strings"

	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// cloneLike is a copy of v laid out as torch's clone lays it out (preserve_format: v's strides
// when dense, else dense strides in v's stride order). An in-place call a fallback runs on the
// copy then visits the elements in the order it visits v's: random in-place ops
// (uniform_, bernoulli_) draw for them in memory order, so a contiguous copy of a transposed
// input would get eager's numbers at transposed positions. A non-dense v that does not overlap
// itself (a stepped slice x[..., ::2]) gets its own strides: torch's kernels choose their path by
// contiguity too (normal_ fills a contiguous float tensor 16 numbers at a time with another
// algorithm than the element-by-element one it uses for a strided one).
func (d *decomposer) cloneLike(v val) *fxgraph.Node {
	c := d.prim("clone", v)
	m := metaOf(v)
	if m != nil && m.Sym == nil && !m.IsNonOverlappingAndDense() && nonOverlapping(m.Shape, m.Strides) {
		c.TensorMeta().Strides = append([]int64{}, m.Strides...)
		return c
	}
	if want, err := primtorch.OpClone.Op().Meta([]primtorch.Value{m}, nil); err == nil {
		if w, ok := want.(*primtorch.TensorMeta); ok && w.IsNonOverlappingAndDense() {
			setStrides(c.TensorMeta(), w)
		}
	}
	return c
}

// nonOverlapping reports whether no two elements of a tensor with these sizes and strides
// (static, not negative) share a memory location: taken by increasing stride, each dim of more
// than one element steps over everything the dims before it span.
func nonOverlapping(shape, strides []int64) bool {
	dims := make([]int, 0, len(shape))
	for k, n := range shape {
		if n == 0 {
			return true
		}
		if n > 1 {
			dims = append(dims, k)
		}
	}
	slices.SortStableFunc(dims, func(a, b int) int { return int(strides[a] - strides[b]) })
	span := int64(1) // the elements the dims so far reach, plus one
	for _, k := range dims {
		if strides[k] < span {
			return false
		}
		span = strides[k]*(shape[k]-1) + span
	}
	return true
}

// fallback keeps call n as prims.fallback(target, args..., **kwargs) with its tensor arguments
// replaced by their current values. A call that writes its first argument and returns it
// (relu_, Tensor.uniform_, inplace=True) gets a clone of it, and its result becomes that
// argument's new value; out= becomes a write of the result. A call writing other arguments is
// ErrUnsupported. op and c are nil for targets the registry does not know.
func (d *decomposer) fallback(n *fxgraph.Node, op *primtorch.Op, c *ctx) error {
	target := n.Target
	if n.Op == fxgraph.CallMethod {
		target = "Tensor." + n.Target
	}
	if _, isTensor := n.Meta.(*primtorch.TensorMeta); !isTensor {
		if _, isTuple := n.Meta.([]any); !isTuple {
			return d.unsupportedf("%s returns no tensor; a fallback needs a tensor result", target)
		}
	}
	var selfState, outState *tstate
	selfWritten := false
	if op != nil {
		for _, name := range c.a.Mutated() {
			switch {
			case name == "out":
				outState = c.stateOf(c.a.Out)
			case name == op.Schema.Params[0].Canon && (op.Alias == primtorch.AliasInPlace || c.a.Inplace()):
				selfWritten = true
			default:
				return d.unsupportedf("%s writes its argument %s, which a fallback cannot return", target, name)
			}
		}
	} else {
		name := n.Target[strings.LastIndexByte(n.Target, '.')+1:]
		selfWritten = strings.HasSuffix(name, "_") && !strings.HasSuffix(name, "__")
	}
	var args []fxgraph.Arg
	var kwargs []fxgraph.Kwarg
	var err error
	mapped := func(a fxgraph.Arg, first bool) fxgraph.Arg {
		return fxgraph.MapArg(a, func(m *fxgraph.Node) fxgraph.Arg {
			if sv, ok := d.env[m].(primtorch.SymInt); ok {
				return fxgraph.Const{V: sv}
			}
			s, ok := d.env[m].(*tstate)
			if !ok {
				err = d.unsupportedf("a fallback argument %s is not a tensor", m.Name)
				return m
			}
			v := d.read(s)
			if first && selfWritten {
				selfState = s
				return d.cloneLike(v)
			}
			return v
		})
	}
	args = append(args, fxgraph.Const{V: target})
	for i, a := range n.Args {
		args = append(args, mapped(a, i == 0))
	}
	for _, kw := range n.Kwargs {
		if kw.Name == "out" {
			continue
		}
		kwargs = append(kwargs, fxgraph.Kwarg{Name: kw.Name, Value: mapped(kw.Value, false)})
	}
	if err != nil {
		return err
	}
	if selfWritten && selfState == nil {
		return d.unsupportedf("%s writes its first argument, which is not a tensor", target)
	}
	if selfWritten {
		// An in-place call whose result has another shape or layout than its argument changes
		// the tensor's metadata, not its elements (t_, transpose_, squeeze_, as_strided_):
		// writing the result's values back would be wrong.
		old, got := d.read(selfState).TensorMeta(), n.TensorMeta()
		if got == nil || !slices.Equal(old.Shape, got.Shape) || !slices.Equal(old.Strides, got.Strides) || old.Offset != got.Offset ||
			old.RequiresGrad != got.RequiresGrad {
			return d.unsupportedf("%s changes its argument's shape, strides or requires_grad in place", target)
		}
	}
	node := d.g.AddCall("prims.fallback", args, kwargs, cloneMeta(n.Meta))
	node.Where = n.Where
	logs.Printf(logs.PerfHints, "%s stays a call to torch (prims.fallback): %s (%s)", target, d.fallbackReason(op), d.location())
	var res any = node
	if metas, ok := n.Meta.([]any); ok {
		tup := make([]any, len(metas))
		for i, m := range metas {
			tm, ok := m.(*primtorch.TensorMeta)
			if !ok || tm == nil {
				tup[i] = m
				continue
			}
			g := d.g.AddCall("operator.getitem", []fxgraph.Arg{node, fxgraph.Const{V: int64(i)}}, nil, tm.Clone())
			g.Where = n.Where
			tup[i] = &tstate{cur: g}
		}
		res = tup
	}
	switch {
	case selfWritten:
		if err := d.write(selfState, node, false); err != nil {
			return err
		}
		d.env[n] = selfState
	case outState != nil:
		if err := d.write(outState, node, true); err != nil {
			return err
		}
		d.env[n] = outState
	default:
		if r, ok := res.(*fxgraph.Node); ok {
			s := &tstate{cur: r}
			if op != nil && op.Alias != primtorch.AliasNone {
				// torch returns a view the prims graph cannot follow: no later writes to either.
				s.frozen = target
				if m, ok := c.a.Get(op.Schema.Params[op.AliasArg].Canon).(*primtorch.TensorMeta); ok {
					p := c.stateOf(m)
					if p.base != nil {
						p = p.base
					}
					p.frozen = target
				}
			}
			res = s
		}
		d.env[n] = res
	}
	return nil
}

// cloneMeta deep-copies a node meta.
func cloneMeta(m any) any {
	switch m := m.(type) {
	case *primtorch.TensorMeta:
		return m.Clone()
	case []any:
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = cloneMeta(e)
		}
		return out
	}
	return m
}

// fallbackReason says why a call is a fallback, for the perf_hints log.
func (d *decomposer) fallbackReason(op *primtorch.Op) string {
	switch {
	case d.why != "":
		return d.why
	case op == nil:
		return "the op registry does not know the target"
	case d.opts.Fallback[op.ID]:
		return "Options.Fallback asks for it"
	case fallbackOps[op.ID] != "":
		return fallbackOps[op.ID]
	case table[op.ID] == nil:
		return "no decomposition"
	case op.ID == primtorch.OpSqrt || op.ID == primtorch.OpSqrtInplace:
		return "eager's sqrt on this torch is not correctly rounded (MKL's vsSqrt, within one ulp), so torch computes it and the values stay eager's (A143)"
	}
	return "its decomposition does not handle these arguments (or tensors are complex or not on the CPU)"
}
