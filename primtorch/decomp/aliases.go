package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Alias says that a graph output is a graph input (placeholder or get_attr) or a view of one,
// as in eager: the backend must return the input itself (View false) or a view of its storage
// (View true: torch.as_strided(input, meta.shape, meta.strides, meta.offset) with the output
// node's meta), never a copy, so that writes through the output reach the input as they would
// in eager.
type Alias struct {
	Output int           // index in the flattened output structure
	Input  *fxgraph.Node // the placeholder or get_attr node
	View   bool
}

// OutputAliases lists the outputs of a prims graph that alias graph inputs: those whose value
// is reached from a placeholder or get_attr through view prims only. Decompose keeps such a
// chain exactly when the output aliases the input in eager.
func OutputAliases(g *fxgraph.Graph) []Alias {
	out := g.OutputNode()
	if out == nil || len(out.Args) == 0 {
		return nil
	}
	var aliases []Alias
	k := 0
	var walk func(a fxgraph.Arg)
	walk = func(a fxgraph.Arg) {
		switch a := a.(type) {
		case *fxgraph.Node:
			v, view := a, false
			for v.Op == fxgraph.CallFunction {
				op := primtorch.Lookup(v.Target)
				if op == nil || op.Kind != primtorch.KindView {
					break
				}
				v, view = v.Args[0].(*fxgraph.Node), true
			}
			if v.Op == fxgraph.Placeholder || v.Op == fxgraph.GetAttr {
				aliases = append(aliases, Alias{Output: k, Input: v, View: view})
			}
			k++
		case fxgraph.Tuple:
			for _, e := range a.Elems {
				walk(e)
			}
		case fxgraph.List:
			for _, e := range a.Elems {
				walk(e)
			}
		case fxgraph.Dict:
			for _, e := range a.Entries {
				walk(e.Value)
			}
		default:
			k++
		}
	}
	walk(out.Args[0])
	return aliases
}
