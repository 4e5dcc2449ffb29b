package fxgraph

import "ptgo/primtorch"

// allEffects is what a call counts as having when the registry cannot say.
const allEffects = primtorch.EffectWrites | primtorch.EffectRandom | primtorch.EffectRaises

// CallEffects asks the op registry what a call node does besides computing its value
// (primtorch.Op.CallEffects), binding its arguments from the metas of the nodes they read. A
// call the registry does not know, or whose arguments do not bind, counts as having every
// effect; other nodes have none.
func CallEffects(n *Node) primtorch.Effects {
	if n.Op != CallFunction && n.Op != CallMethod {
		return 0
	}
	target := n.Target
	if n.Op == CallMethod {
		target = "Tensor." + target
	}
	if e, own := primtorch.OwnCallEffects(target); own {
		return e
	}
	if target == "operator.getitem" && len(n.Args) == 2 {
		if src, ok := n.Args[0].(*Node); ok {
			if _, tuple := src.Meta.([]any); tuple {
				return 0 // an item of a call's tuple result (split, max's values and indices)
			}
		}
	}
	if f, ok := n.Meta.(primtorch.SymFloat); ok && f.IsComputed() {
		return primtorch.ComputedFloatEffects(target)
	}
	op := primtorch.Lookup(target)
	if op == nil {
		return learnedEffects(target, n.Kwargs)
	}
	callArgs := n.Args
	if target == "prims.fallback" {
		// a torch-level call kept as it is: its effects are its target's (a random op draws,
		// an index may be out of range), bound to the same arguments
		c, ok := n.Args[0].(Const)
		name, ok2 := c.V.(string)
		if !ok || !ok2 {
			return allEffects
		}
		if e, own := primtorch.OwnCallEffects(name); own {
			return e
		}
		if op = primtorch.Lookup(name); op == nil {
			return learnedEffects(name, n.Kwargs)
		}
		callArgs = n.Args[1:]
	}
	args := make([]primtorch.Value, len(callArgs))
	for i, a := range callArgs {
		v, ok := metaValue(a)
		if !ok {
			return allEffects
		}
		args[i] = v
	}
	var kwargs []primtorch.KV
	for _, kw := range n.Kwargs {
		v, ok := metaValue(kw.Value)
		if !ok {
			return allEffects
		}
		kwargs = append(kwargs, primtorch.KV{Name: kw.Name, Value: v})
	}
	o, a, err := op.Resolve(args, kwargs)
	if err != nil {
		return allEffects
	}
	return o.CallEffects(a, n.Meta)
}

// metaValue is an argument as the registry binds it: a node stands for its meta.
func metaValue(a Arg) (primtorch.Value, bool) {
	switch a := a.(type) {
	case *Node:
		if t, ok := a.Meta.([]any); ok {
			out := make([]primtorch.Value, len(t))
			for i, e := range t {
				out[i] = e
			}
			return out, true
		}
		return a.Meta, true
	case Const:
		return a.V, true
	case List:
		out := make([]primtorch.Value, len(a.Elems))
		for i, e := range a.Elems {
			v, ok := metaValue(e)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	case Tuple:
		out := make(primtorch.Tuple, len(a.Elems))
		for i, e := range a.Elems {
			v, ok := metaValue(e)
			if !ok {
				return nil, false
			}
			out[i] = v
		}
		return out, true
	case Slice:
		var s primtorch.Slice
		for i, p := range []Arg{a.Start, a.Stop, a.Step} {
			c, ok := p.(Const)
			if !ok {
				return nil, false
			}
			if c.V == nil {
				continue
			}
			k, ok := c.V.(int64)
			if !ok {
				return nil, false
			}
			switch i {
			case 0:
				s.Start = &k
			case 1:
				s.Stop = &k
			case 2:
				s.Step = &k
			}
		}
		return s, true
	}
	return nil, false
}

// learnedEffects are the effects of a call to a torch function the registry does not hold, as
// the running torch's schemas say (primtorch.TorchCallEffects), or every effect when they were
// not read.
func learnedEffects(target string, kw []Kwarg) primtorch.Effects {
	names := make([]string, len(kw))
	for i, k := range kw {
		names[i] = k.Name
	}
	if e, ok := primtorch.TorchCallEffects(target, names); ok {
		return e
	}
	return allEffects
}
