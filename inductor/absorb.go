package inductor

import (
	"ptgo/logs"
	"ptgo/primtorch"
)

// Activations a depthwise convolution extern applies in its output pass (A124): the values of
// its "activation" keyword, which ptgo's runtime reads (pybridge/fast/ptgo_runtime.cpp: its
// depthwise kernel applies it per output vector; torch's convolution is followed by the
// in-place op).
const (
	ActivationKwarg = "activation"
	ActRelu         = "relu"
	ActRelu6        = "relu6"
)

// AbsorbActivations is a fusion pass after Inline: a relu or relu6 whose only input is a
// float32 depthwise convolution's result (groups = input channels = output channels, dilation
// 1), read at the identity index by a pointwise buffer of the same sizes and layout, and that is
// the convolution's only reader (not a graph output), becomes the convolution's "activation"
// keyword: the extern defines the activation's buffer, and the pass that stored the
// convolution's result and read it back is gone. It edits g in place and returns the names of
// the absorbed buffers; decisions are logged on logs.Fusion.
func AbsorbActivations(g *Graph) []string {
	outputs := g.outputSet()
	users := g.Users()
	removed := map[*Buffer]bool{}
	var absorbed []string
	for _, conv := range g.Buffers {
		ext, ok := conv.Def.(*Extern)
		if !ok || !isDepthwiseConv(ext) || len(ext.Outs) != 1 || ext.Outs[0] != conv || conv.DType != primtorch.Float32 {
			continue
		}
		us := users[conv]
		if len(us) != 1 || outputs[conv] {
			continue
		}
		p := us[0]
		pw, ok := p.Def.(*Pointwise)
		if !ok || p.Mutates != nil || p.Raises || p.DType != conv.DType || !symsEqual(p.Sizes, conv.Sizes) ||
			!sameLayout(p.Sizes, p.Layout, conv.Layout, true) {
			continue
		}
		act := activationOf(pw.Body, conv)
		if act == "" {
			logs.Debugf(logs.Fusion, "not absorbing %s into convolution %s: not a relu or relu6 of it", p.Name, conv.Name)
			continue
		}
		logs.Printf(logs.Fusion, "absorbing %s into depthwise convolution %s: %s in its output pass", p.Name, conv.Name, act)
		ext.Outs[0] = p
		ext.Kwargs = append(ext.Kwargs, ExternKwarg{Name: ActivationKwarg, Value: ExternArg{Value: act}})
		p.Def = ext
		p.Origins = append(append([]string(nil), conv.Origins...), p.Origins...)
		for _, t := range p.Targets {
			conv.Targets = appendNew(conv.Targets, t)
		}
		p.Targets = conv.Targets
		removed[conv] = true
		absorbed = append(absorbed, p.Name)
	}
	if len(removed) == 0 {
		return nil
	}
	kept := g.Buffers[:0]
	for _, b := range g.Buffers {
		if !removed[b] {
			kept = append(kept, b)
		}
	}
	g.Buffers = kept
	for i, b := range g.Buffers {
		b.index = i
	}
	return absorbed
}

// isDepthwiseConv reports a prims.convolution with groups = input channels = output channels, a
// [C, 1, kh, kw] weight, 2-d (4-d tensors), not transposed, dilation 1.
func isDepthwiseConv(e *Extern) bool {
	if e.Target != "prims.convolution" || len(e.Args) != 9 || len(e.Kwargs) != 0 {
		return false
	}
	x, w := e.Args[0].Buf, e.Args[1].Buf
	if x == nil || w == nil || len(x.Sizes) != 4 || len(w.Sizes) != 4 {
		return false
	}
	if tr, ok := e.Args[6].Value.(bool); !ok || tr {
		return false
	}
	groups, ok := intValue(e.Args[8].Value)
	if !ok || !isConstSize(x.Sizes[1], groups) || !isConstSize(w.Sizes[0], groups) || !isConstSize(w.Sizes[1], 1) {
		return false
	}
	dil := e.Args[5]
	if len(dil.List) != 2 {
		return false
	}
	for _, d := range dil.List {
		if v, ok := intValue(d.Value); !ok || v != 1 {
			return false
		}
	}
	return true
}

func intValue(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

// activationOf says which activation body computes of conv's element at the identity index:
// ActRelu (maximum(x, 0.0)), ActRelu6 (minimum(maximum(x, 0.0), 6.0)) or "" for anything else.
func activationOf(body *Value, conv *Buffer) string {
	isLoad := func(v *Value) bool {
		if v.Kind != VLoad || v.Buf != conv || len(v.Index) != len(conv.Sizes) {
			return false
		}
		id := indexVars(conv.Sizes, 0)
		for k, e := range v.Index {
			if e.Key() != id[k].Key() {
				return false
			}
		}
		return true
	}
	isConst := func(v *Value, f float64) bool {
		return v.Kind == VConst && v.Num.F == f
	}
	relu := func(v *Value) bool {
		return v.Kind == VOp && v.Op == "maximum" && len(v.Args) == 2 && isLoad(v.Args[0]) && isConst(v.Args[1], 0)
	}
	switch {
	case relu(body):
		return ActRelu
	case body.Kind == VOp && body.Op == "minimum" && len(body.Args) == 2 && relu(body.Args[0]) && isConst(body.Args[1], 6):
		return ActRelu6
	}
	return ""
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}
