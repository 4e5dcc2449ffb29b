package inductor

import (
	"ptgo/logs"
	"ptgo/primtorch"
)

// Activations a depthwise convolution extern applies in its output pass (A124): the values of
// its "activation" keyword, which ptgo's runtime reads (pybridge/fast/ptgo_runtime.cpp: its
// depthwise kernel applies it per output vector; after torch's convolution it is the
// equivalent torch op).
const (
	ActivationKwarg = "activation"
	ActRelu         = "relu"
	ActRelu6        = "relu6"
	ActSilu         = "silu"
)

// absorbWindow bounds how many buffers after a convolution may hold its activation's chain.
const absorbWindow = 8

// AbsorbActivations is a fusion pass before Inline: an activation of a float32 depthwise
// convolution's result (groups = input channels = output channels, dilation 1) — relu
// (maximum(x, 0)), relu6 (minimum(maximum(x, 0), 6)) or silu (x / (exp(-x) + 1)), each step a
// pointwise buffer reading the previous ones at the identity index — becomes the convolution's
// "activation" keyword when the chain's buffers are all that read the convolution's result and
// each other (none is a graph output): the extern then defines the activation's buffer, and the
// pass that stored the convolution's result and read it back (or, inlined, recomputed the
// activation in each reader) is gone. It edits g in place and returns the names of the
// absorbed buffers; decisions are logged on logs.Fusion.
func AbsorbActivations(g *Graph) []string {
	outputs := g.outputSet()
	users := g.Users()
	removed := map[*Buffer]bool{}
	var absorbed []string
	for i, conv := range g.Buffers {
		ext, ok := conv.Def.(*Extern)
		if !ok || !isDepthwiseConv(ext) || len(ext.Outs) != 1 || ext.Outs[0] != conv || conv.DType != primtorch.Float32 ||
			outputs[conv] {
			continue
		}
		// the furthest buffer that computes an activation of the result (relu6's minimum, not
		// the maximum before it)
		var best *chainMatch
		var bestP *Buffer
		var act string
		for _, p := range g.Buffers[i+1 : min(len(g.Buffers), i+1+absorbWindow)] {
			pw, ok := p.Def.(*Pointwise)
			if !ok || !(&chainMatch{conv: conv}).elementwise(p) {
				continue
			}
			m, a := matchActivation(conv, pw.Body)
			if a == "" {
				continue
			}
			if why := m.closed(p, users, outputs); why != "" {
				logs.Printf(logs.Fusion, "not absorbing %s (%s) into depthwise convolution %s: %s", p.Name, a, conv.Name, why)
				continue
			}
			best, bestP, act = m, p, a
		}
		if best == nil {
			continue
		}
		p := bestP
		logs.Printf(logs.Fusion, "absorbing %s (%s) into depthwise convolution %s: computed in its output pass", p.Name, act, conv.Name)
		ext.Outs[0] = p
		ext.Kwargs = append(ext.Kwargs, ExternKwarg{Name: ActivationKwarg, Value: ExternArg{Value: act}})
		p.Def = ext
		origins := append([]string(nil), conv.Origins...)
		targets := append([]string(nil), conv.Targets...)
		for _, b := range g.Buffers[i+1:] {
			if best.via[b] || b == p {
				origins = append(origins, b.Origins...)
				for _, t := range b.Targets {
					targets = appendNew(targets, t)
				}
			}
			if b == p {
				break
			}
		}
		p.Origins, p.Targets = origins, targets
		removed[conv] = true
		for b := range best.via {
			removed[b] = true
		}
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

// chainMatch matches an activation's body against the convolution's result, looking through
// the loads of the pointwise buffers between them (via collects those).
type chainMatch struct {
	conv *Buffer
	via  map[*Buffer]bool
}

// elementwise says whether b is a float32 pointwise buffer of the convolution's sizes and layout.
func (m *chainMatch) elementwise(b *Buffer) bool {
	_, ok := b.Def.(*Pointwise)
	return ok && b.Mutates == nil && !b.Raises && b.DType == m.conv.DType && symsEqual(b.Sizes, m.conv.Sizes) &&
		sameLayout(b.Sizes, b.Layout, m.conv.Layout, true)
}

// deref returns what v computes: the body of the chain buffer it loads at the identity index
// (recorded in via), or v itself.
func (m *chainMatch) deref(v *Value) *Value {
	for v.Kind == VLoad && v.Buf != m.conv && m.identity(v) && m.elementwise(v.Buf) {
		m.via[v.Buf] = true
		v = v.Buf.Def.(*Pointwise).Body
	}
	return v
}

func (m *chainMatch) identity(v *Value) bool {
	if len(v.Index) != len(v.Buf.Sizes) {
		return false
	}
	id := indexVars(v.Buf.Sizes, 0)
	for k, e := range v.Index {
		if e.Key() != id[k].Key() {
			return false
		}
	}
	return true
}

// x says whether v is the convolution's element at the identity index.
func (m *chainMatch) x(v *Value) bool {
	v = m.deref(v)
	return v.Kind == VLoad && v.Buf == m.conv && m.identity(v)
}

// op returns v's arguments when it (looked through) is op with n arguments.
func (m *chainMatch) op(v *Value, op string, n int) []*Value {
	v = m.deref(v)
	if v.Kind != VOp || v.Op != op || len(v.Args) != n {
		return nil
	}
	return v.Args
}

func (m *chainMatch) isConst(v *Value, f float64) bool {
	v = m.deref(v)
	return v.Kind == VConst && v.Num.F == f
}

// matchActivation names the activation body computes of conv's result ("" for none), with the
// chain buffers it looked through.
func matchActivation(conv *Buffer, body *Value) (*chainMatch, string) {
	for _, p := range activationPatterns {
		m := &chainMatch{conv: conv, via: map[*Buffer]bool{}}
		if p.match(m, body) {
			return m, p.name
		}
	}
	return nil, ""
}

var activationPatterns = []struct {
	name  string
	match func(m *chainMatch, v *Value) bool
}{
	{ActRelu, (*chainMatch).relu},
	{ActRelu6, func(m *chainMatch, v *Value) bool {
		a := m.op(v, "minimum", 2)
		return a != nil && m.relu(a[0]) && m.isConst(a[1], 6)
	}},
	// silu as torch decomposes it: x / (exp(-x) + 1)
	{ActSilu, func(m *chainMatch, v *Value) bool {
		a := m.op(v, "div", 2)
		if a == nil || !m.x(a[0]) {
			return false
		}
		d := m.op(a[1], "add", 2)
		if d == nil || !m.isConst(d[1], 1) {
			return false
		}
		e := m.op(d[0], "exp", 1)
		if e == nil {
			return false
		}
		n := m.op(e[0], "neg", 1)
		return n != nil && m.x(n[0])
	}},
}

// relu: maximum(x, 0).
func (m *chainMatch) relu(v *Value) bool {
	a := m.op(v, "maximum", 2)
	return a != nil && m.x(a[0]) && m.isConst(a[1], 0)
}

// closed says why the chain ending in p cannot replace the convolution's result ("" when it
// can): something else reads the result or a buffer of the chain, or one is a graph output.
func (m *chainMatch) closed(p *Buffer, users map[*Buffer][]*Buffer, outputs map[*Buffer]bool) string {
	inside := func(u *Buffer) bool { return u == p || m.via[u] }
	for _, u := range users[m.conv] {
		if !inside(u) {
			return u.Name + " reads the convolution's result too"
		}
	}
	var via []*Buffer
	for b := range m.via {
		via = append(via, b)
	}
	sortBuffers(via)
	for _, b := range via {
		if outputs[b] {
			return b.Name + " is a graph output"
		}
		for _, u := range users[b] {
			if !inside(u) {
				return u.Name + " reads " + b.Name + " too"
			}
		}
	}
	return ""
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

// isPointwiseConv reports a prims.convolution the runtime may run as one matrix product at one
// thread (run_pointwise in pybridge/fast/ptgo_runtime.cpp): no bias, one group, not transposed,
// every kernel size 1, stride 1, no padding, a batch of one.
func isPointwiseConv(e *Extern) bool {
	if e.Target != "prims.convolution" || len(e.Args) != 9 || len(e.Kwargs) != 0 || len(e.Outs) != 1 || e.Outs[0] == nil {
		return false
	}
	x, w := e.Args[0].Buf, e.Args[1].Buf
	if x == nil || w == nil || len(x.Sizes) < 3 || len(w.Sizes) != len(x.Sizes) || e.Args[2].Buf != nil || e.Args[2].Value != nil {
		return false
	}
	if tr, ok := e.Args[6].Value.(bool); !ok || tr {
		return false
	}
	if groups, ok := intValue(e.Args[8].Value); !ok || groups != 1 || !isConstSize(x.Sizes[0], 1) {
		return false
	}
	for _, s := range w.Sizes[2:] {
		if !isConstSize(s, 1) {
			return false
		}
	}
	for i, want := range []int64{1, 0} { // stride, padding
		a := e.Args[3+i]
		if len(a.List) != len(x.Sizes)-2 {
			return false
		}
		for _, d := range a.List {
			if v, ok := intValue(d.Value); !ok || v != want {
				return false
			}
		}
	}
	return true // (the runtime writes the product only into a contiguous buffer of the output's sizes)
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
