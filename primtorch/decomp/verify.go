package decomp

import (
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Verify checks that g is a well-formed prims graph: fxgraph's invariants; every call a core op
// (or operator.getitem of a tuple-valued prims.fallback) whose arguments its meta function
// accepts; each node's meta of the dtype and shape that function computes, with its exact
// strides and offset for views and a non-overlapping dense layout for other ops (any such
// layout is allowed, see primtorch's prims contract); prims.copy_ only after every other call,
// into placeholders and get_attrs.
func Verify(g *fxgraph.Graph) error {
	if err := fxgraph.Verify(g, nil); err != nil {
		return err
	}
	var problems []string
	add := func(n *fxgraph.Node, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s = %s: %s", n.Name, n.Target, fmt.Sprintf(format, args...)))
	}
	seenCopy := false
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.CallMethod:
			add(n, "a method call in a prims graph")
			continue
		case fxgraph.CallFunction:
		default:
			continue
		}
		if n.Target == "operator.getitem" {
			src, ok := n.Args[0].(*fxgraph.Node)
			if !ok || src.Target != "prims.fallback" {
				add(n, "operator.getitem of something other than a prims.fallback")
			}
			continue
		}
		op := primtorch.Lookup(n.Target)
		if op == nil || !op.IsPrim() {
			add(n, "not a core op")
			continue
		}
		if op.ID == primtorch.OpPrimCopy {
			seenCopy = true
			dst, _ := n.Args[0].(*fxgraph.Node)
			if dst == nil || (dst.Op != fxgraph.Placeholder && dst.Op != fxgraph.GetAttr) {
				add(n, "copy_ into something other than a graph input")
			}
		} else if seenCopy {
			add(n, "a call after the copy_ epilogue")
		}
		if op.ID == primtorch.OpPrimFallback {
			if c, ok := n.Args[0].(fxgraph.Const); !ok {
				add(n, "fallback without a target")
			} else if _, ok := c.V.(string); !ok {
				add(n, "fallback target %v is not a string", c.V)
			}
			continue
		}
		if p := checkMeta(n, op); p != "" {
			add(n, "%s", p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	msg := fmt.Sprintf("decomp: prims graph %s is invalid:", g.Name)
	for i, p := range problems {
		if i == 20 {
			msg += fmt.Sprintf("\n  ... and %d more", len(problems)-i)
			break
		}
		msg += "\n  " + p
	}
	return fmt.Errorf("%s", msg)
}

// checkMeta recomputes a prims node's meta and compares it with the node's.
func checkMeta(n *fxgraph.Node, op *primtorch.Op) string {
	args := make([]primtorch.Value, len(n.Args))
	for i, a := range n.Args {
		_, args[i] = toArg(a)
	}
	if len(n.Kwargs) > 0 {
		return "keyword arguments (prims take positional arguments)"
	}
	r, err := op.Meta(args, nil)
	if err != nil {
		return err.Error()
	}
	want, _ := r.(*primtorch.TensorMeta)
	got := n.TensorMeta()
	if want == nil || got == nil {
		return fmt.Sprintf("meta %v, the op computes %v", n.Meta, r)
	}
	if got.DType != want.DType || !equalInts(got.Shape, want.Shape) {
		return fmt.Sprintf("meta %s, the op computes %s", got, want)
	}
	if op.Kind == primtorch.KindView {
		if !equalInts(got.Strides, want.Strides) || got.Offset != want.Offset {
			return fmt.Sprintf("view meta %s, the view is %s", got, want)
		}
		return ""
	}
	if op.ID != primtorch.OpPrimCopy && (got.Offset != 0 || !got.IsNonOverlappingAndDense()) {
		return fmt.Sprintf("meta %s is not a dense layout", got)
	}
	return ""
}
