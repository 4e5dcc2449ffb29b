package ref

import (
	"errors"
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// Run evaluates a prims graph: inputs are the placeholders' tensors in order, attrs the
// get_attr tensors by target. It returns the output structure's tensors flattened in order
// (Python numbers in it become 0-d tensors). prims.copy_ writes into the input or attr
// tensor it names, as the compiled graph's epilogue would. Each node's result is checked
// against its meta: dtype and shape always, strides and storage offset for views; results of
// other ops are laid out as their meta says when that layout is dense, else contiguously.
//
// A graph with size symbols (g.Shapes) runs at the sizes of its inputs: each symbol takes the
// size of the first input dim that carries it (fxgraph.SymbolBindings; a specialised symbol its
// hint), and sym(...) constants and symbolic metas are evaluated there.
func Run(g *fxgraph.Graph, inputs []*Tensor, attrs map[string]*Tensor) (out []*Tensor, err error) {
	r := &runner{env: map[*fxgraph.Node]any{}}
	if g.Shapes != nil && g.Shapes.NumSymbols() > 0 {
		r.syms = g.Shapes.Hints()
		for id, b := range fxgraph.SymbolBindings(g) {
			if b.Input >= 0 && b.Dim >= 0 && b.Input < len(inputs) && inputs[b.Input] != nil && b.Dim < len(inputs[b.Input].Shape) {
				r.syms[id] = inputs[b.Input].Shape[b.Dim]
			}
		}
		g.Shapes.FillDerived(r.syms)
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("ref: ptgo BUG: panic while evaluating %s: %v", r.where(), p)
		}
	}()
	k := 0
	for _, n := range g.Nodes {
		r.cur = n
		switch n.Op {
		case fxgraph.Placeholder:
			if k >= len(inputs) {
				return nil, fmt.Errorf("ref: graph %s has more placeholders than the %d inputs given; pass one tensor per placeholder", g.Name, len(inputs))
			}
			if err := checkInput(n, inputs[k], r.syms); err != nil {
				return nil, err
			}
			r.env[n] = inputs[k]
			k++
		case fxgraph.GetAttr:
			t, ok := attrs[n.Target]
			if !ok {
				return nil, fmt.Errorf("ref: no tensor for get_attr[%s] (node %s); pass it in attrs", n.Target, n.Name)
			}
			if err := checkInput(n, t, r.syms); err != nil {
				return nil, err
			}
			r.env[n] = t
		case fxgraph.CallFunction:
			v, err := r.call(n)
			if err != nil {
				return nil, err
			}
			r.env[n] = v
		case fxgraph.CallMethod:
			return nil, fmt.Errorf("ref: node %s calls method %s; ref runs prims graphs only: decompose the graph first (RunTorchLevel)", n.Name, n.Target)
		case fxgraph.Output:
			if len(n.Args) > 0 {
				if err := r.flatten(n.Args[0], &out); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("ref: graph %s has no output node", g.Name)
}

// checkInput checks an input tensor against its placeholder's meta (dtype and shape).
func checkInput(n *fxgraph.Node, t *Tensor, syms []int64) error {
	if t == nil {
		return fmt.Errorf("ref: input for %s is nil", n.Name)
	}
	m := n.TensorMeta()
	if m == nil {
		return fmt.Errorf("ref: %s has meta %v; ref runs tensor inputs only", n.Name, n.Meta)
	}
	m = evalMeta(m, syms)
	if m.DType != t.DType || !equalInts(m.Shape, t.Shape) {
		return fmt.Errorf("ref: input %s is %s but the graph expects %s", n.Name, t.Meta(), m)
	}
	return nil
}

type runner struct {
	env  map[*fxgraph.Node]any
	cur  *fxgraph.Node
	syms []int64 // the size symbols' values (a symbolic graph)
}

// evalMeta is a symbolic meta at the symbols' values (a static meta itself).
func evalMeta(m *primtorch.TensorMeta, syms []int64) *primtorch.TensorMeta {
	if m == nil || m.Sym == nil {
		return m
	}
	c := m.Clone()
	c.Sym = nil
	for i := range c.Shape {
		c.Shape[i] = m.Sym.Sizes[i].Eval(syms)
		c.Strides[i] = m.Sym.Strides[i].Eval(syms)
	}
	c.Offset = m.Sym.Offset.Eval(syms)
	return c
}

func (r *runner) where() string {
	if r.cur == nil {
		return "the graph"
	}
	s := "node " + r.cur.Name
	if r.cur.Where != "" {
		s += " (" + r.cur.Where + ")"
	}
	return s
}

func (r *runner) flatten(a fxgraph.Arg, out *[]*Tensor) error {
	switch a := a.(type) {
	case *fxgraph.Node:
		switch v := r.env[a].(type) {
		case *Tensor:
			*out = append(*out, v)
		case []any:
			for _, e := range v {
				t, _ := e.(*Tensor)
				*out = append(*out, t)
			}
		default:
			return fmt.Errorf("ref: output %s has no tensor value (%T)", a.Name, v)
		}
	case fxgraph.Tuple:
		for _, e := range a.Elems {
			if err := r.flatten(e, out); err != nil {
				return err
			}
		}
	case fxgraph.List:
		for _, e := range a.Elems {
			if err := r.flatten(e, out); err != nil {
				return err
			}
		}
	case fxgraph.Const:
		switch v := a.V.(type) {
		case nil:
			*out = append(*out, nil)
		case bool:
			*out = append(*out, Scalar(primtorch.Bool, v))
		case int64:
			*out = append(*out, Scalar(primtorch.Int64, v))
		case float64:
			*out = append(*out, Scalar(primtorch.Float64, v))
		default:
			return fmt.Errorf("ref: output constant %v is not a number", a.V)
		}
	default:
		return fmt.Errorf("ref: output of type %T", a)
	}
	return nil
}

// call evaluates one prims call node.
func (r *runner) call(n *fxgraph.Node) (any, error) {
	op := primtorch.Lookup(n.Target)
	if op == nil || !op.IsPrim() {
		return nil, fmt.Errorf("ref: node %s calls %s, which is not a core op; ref runs prims graphs only: decompose the graph first (RunTorchLevel)", n.Name, n.Target)
	}
	if op.ID == primtorch.OpPrimFallback {
		target := "?"
		if len(n.Args) > 0 {
			if c, ok := n.Args[0].(fxgraph.Const); ok {
				target = fmt.Sprint(c.V)
			}
		}
		return nil, fmt.Errorf("ref: node %s is prims.fallback(%s): the reference interpreter cannot run torch-level ops; %w", n.Name, target, ErrFallback)
	}
	c := &evalCtx{n: n, op: op, tensors: map[*primtorch.TensorMeta]*Tensor{}}
	args := make([]primtorch.Value, len(n.Args))
	for i, a := range n.Args {
		v, err := c.value(r, a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	var kwargs []primtorch.KV
	for _, kw := range n.Kwargs {
		v, err := c.value(r, kw.Value)
		if err != nil {
			return nil, err
		}
		kwargs = append(kwargs, primtorch.KV{Name: kw.Name, Value: v})
	}
	_, a, err := op.Resolve(args, kwargs)
	if err != nil {
		return nil, fmt.Errorf("ref: node %s: %w", n.Name, err)
	}
	c.a = a
	meta, err := op.MetaArgs(a)
	if err != nil {
		return nil, fmt.Errorf("ref: node %s: %w", n.Name, err)
	}
	c.meta, _ = meta.(*primtorch.TensorMeta)
	if nm := evalMeta(n.TensorMeta(), r.syms); nm != nil && c.meta != nil {
		if nm.DType != c.meta.DType || !equalInts(nm.Shape, c.meta.Shape) {
			return nil, fmt.Errorf("ref: node %s has meta %s but %s computes %s", n.Name, nm, n.Target, c.meta)
		}
		if op.Kind == primtorch.KindView && (!equalInts(nm.Strides, c.meta.Strides) || nm.Offset != c.meta.Offset) {
			return nil, fmt.Errorf("ref: view node %s has meta %s but the view is %s", n.Name, nm, c.meta)
		}
		c.layout = nm
	}
	fn := evals[op.ID]
	if fn == nil {
		return nil, fmt.Errorf("ref: ptgo BUG: no evaluation for %s; add it to the evals table (eval.go)", op.Name)
	}
	return fn(c)
}

// ErrFallback is wrapped by Run's error for graphs with prims.fallback nodes.
var ErrFallback = errors.New("prims.fallback needs torch")

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

// RunTorchLevel decomposes a torch-level graph (decomp.Decompose, checked) and runs the prims
// graph.
func RunTorchLevel(g *fxgraph.Graph, inputs []*Tensor, attrs map[string]*Tensor) ([]*Tensor, error) {
	pg, err := decomp.Decompose(g, decomp.Options{Check: true})
	if err != nil {
		return nil, err
	}
	return Run(pg, inputs, attrs)
}
