package decomp

import (
	"errors"
	"fmt"
	"math"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// torch's fused inference kernels. In eval mode without autograd, nn.TransformerEncoderLayer and
// nn.MultiheadAttention call torch._transformer_encoder_layer_fwd and
// torch._native_multi_head_attention: one op each for a whole layer. They are not registry ops
// (the capture stage records them with the metas torch's meta kernels give, DESIGN A6), so this
// table is keyed by target and binds the arguments itself, by the schemas of torch 1.13's
// native_functions.yaml. A decomposition into matrix products and pointwise and reduction prims
// lets the C backend fuse the bias, scaling, softmax, residual and normalization work around the
// matrix products; the numerics follow torch's CPU kernels (aten/src/ATen/native/transformers),
// step by step:
//
//	qkv    = x·W_qkvᵀ (no bias)                                   qkv_projection, self-attention
//	q,k,v  = per head: (qkv + bias)·(1/√dh) for q, + bias for k, v  _transform_bias_rescale_qkv
//	p      = softmax(q·kᵀ) over keys: exp(s − max) · (1/Σ)          bmm_nt, masked_softmax
//	out    = (p·v, heads merged)·W_projᵀ + b_proj                   bmm_nn, transform0213_gemm_nt_bias
//
// and for the encoder layer, with layer_norm as torch.layer_norm decomposes:
//
//	norm_first:  x + ffn(LN2(x + mha(LN1(x))))  where x + mha(...) is the residual kept
//	otherwise:   LN2(h + ffn(h)) with h = LN1(x + mha(x))
//	ffn(h)       = relu or gelu (erf) of (h·W1ᵀ + b1), then ·W2ᵀ + b2
//
// Calls with an attention mask, nested or non-3-d inputs, other dtypes than float32/float64, or
// distinct query/key/value tensors stay prims.fallback (run by torch).
var fastPathDecomps = map[string]fastPath{
	"torch._transformer_encoder_layer_fwd": {
		params: []string{"src", "embed_dim", "num_heads", "qkv_weight", "qkv_bias", "proj_weight", "proj_bias",
			"use_gelu", "norm_first", "eps", "norm_weight_1", "norm_bias_1", "norm_weight_2", "norm_bias_2",
			"ffn_weight_1", "ffn_bias_1", "ffn_weight_2", "ffn_bias_2", "mask", "mask_type"},
		fn: dTransformerEncoderLayer,
	},
	"torch._native_multi_head_attention": {
		params: []string{"query", "key", "value", "embed_dim", "num_head", "qkv_weight", "qkv_bias", "proj_weight",
			"proj_bias", "mask", "need_weights", "average_attn_weights", "mask_type"},
		defaults: map[string]any{"mask": nil, "need_weights": true, "average_attn_weights": true, "mask_type": nil},
		fn:       dNativeMultiHeadAttention,
	},
}

// fastPath is one entry: the parameter names in schema order, defaults of the optional ones,
// and the decomposition (errFallback keeps the call).
type fastPath struct {
	params   []string
	defaults map[string]any
	fn       func(a *fpArgs) (any, error)
}

// fpArgs are a fast-path call's arguments bound by name.
type fpArgs struct {
	d    *decomposer
	n    *fxgraph.Node
	args map[string]fxgraph.Arg
	defs map[string]any
}

// decomposeFastPath runs the fast-path decomposition of n when its target has one; ok=false means
// it has none (or declined) and n stays a fallback.
func (d *decomposer) decomposeFastPath(n *fxgraph.Node) (ok bool, err error) {
	fp, found := fastPathDecomps[n.Target]
	if !found || n.Op != fxgraph.CallFunction {
		return false, nil
	}
	a := &fpArgs{d: d, n: n, args: map[string]fxgraph.Arg{}, defs: fp.defaults}
	if len(n.Args) > len(fp.params) {
		return false, nil
	}
	for i, v := range n.Args {
		a.args[fp.params[i]] = v
	}
	for _, kw := range n.Kwargs {
		known := false
		for _, p := range fp.params {
			known = known || p == kw.Name
		}
		if !known {
			return false, nil
		}
		a.args[kw.Name] = kw.Value
	}
	for _, p := range fp.params {
		if _, given := a.args[p]; !given {
			if _, hasDefault := fp.defaults[p]; !hasDefault {
				return false, nil
			}
		}
	}
	d.firstNew = len(d.g.Nodes)
	d.rg = resultRequiresGrad(n.Meta)
	res, err := fp.fn(a)
	if errors.Is(err, errFallback) {
		// what a declined decomposition emitted is unused: Decompose drops dead nodes
		return false, nil
	}
	if err != nil {
		return false, err
	}
	switch r := res.(type) {
	case *fxgraph.Node:
		if want := n.TensorMeta(); want != nil && !sameSyms(sizesOf(r), want.SymSizes()) {
			bug("fast-path decomposition of %s gives sizes %v, torch's %v", n.Target, sizesOf(r), want.SymSizes())
		}
		d.fixLayout(r, n.TensorMeta())
		d.env[n] = &tstate{cur: r}
	case []any:
		metas, _ := n.Meta.([]any)
		out := make([]any, len(r))
		for i, e := range r {
			node, isNode := e.(*fxgraph.Node)
			if !isNode {
				out[i] = e
				continue
			}
			if i < len(metas) {
				m, _ := metas[i].(*primtorch.TensorMeta)
				d.fixLayout(node, m)
			}
			out[i] = &tstate{cur: node}
		}
		d.env[n] = out
	default:
		bug("fast-path decomposition of %s returned %T", n.Target, res)
	}
	return true, nil
}

// raw is a parameter's argument as recorded (its default when not given).
func (a *fpArgs) raw(name string) fxgraph.Arg {
	if v, ok := a.args[name]; ok {
		return v
	}
	return fxgraph.Const{V: a.defs[name]}
}

// tensor is a tensor parameter's current value; nil for None; errFallback for anything else.
func (a *fpArgs) tensor(name string) (*fxgraph.Node, error) {
	switch v := a.raw(name).(type) {
	case *fxgraph.Node:
		s, ok := a.d.env[v].(*tstate)
		if !ok {
			return nil, errFallback
		}
		return a.d.read(s), nil
	case fxgraph.Const:
		if v.V == nil {
			return nil, nil
		}
	}
	return nil, errFallback
}

// need is a tensor parameter that must be given.
func (a *fpArgs) need(name string) (*fxgraph.Node, error) {
	t, err := a.tensor(name)
	if err == nil && t == nil {
		err = errFallback
	}
	return t, err
}

// constant is a non-tensor parameter's value (int64, float64, bool or nil).
func (a *fpArgs) constant(name string) (any, error) {
	c, ok := a.raw(name).(fxgraph.Const)
	if !ok {
		return nil, errFallback
	}
	return c.V, nil
}

func (a *fpArgs) int(name string) (int64, error) {
	v, err := a.constant(name)
	n, ok := v.(int64)
	if err == nil && !ok {
		err = errFallback
	}
	return n, err
}

func (a *fpArgs) bool(name string) (bool, error) {
	v, err := a.constant(name)
	b, ok := v.(bool)
	if err == nil && !ok {
		err = errFallback
	}
	return b, err
}

func (a *fpArgs) float(name string) (float64, error) {
	v, err := a.constant(name)
	switch f := v.(type) {
	case float64:
		return f, err
	case int64:
		return float64(f), err
	}
	if err == nil {
		err = errFallback
	}
	return 0, err
}

// fpError joins the errors of argument reads (the first one wins).
func fpError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// attnWeights are the attention projection's weights.
type attnWeights struct {
	embed, heads             int64
	qkvW, qkvB, projW, projB *fxgraph.Node
}

// selfAttention is _native_multi_head_attention on x [B, T, D] with query = key = value = x and
// no mask. It returns the output [B, T, D] and the attention probabilities [B·heads, T, T].
func (d *decomposer) selfAttention(x *fxgraph.Node, w attnWeights) (out, probs *fxgraph.Node, err error) {
	m := metaOf(x)
	if len(m.Shape) != 3 || w.heads <= 0 || w.embed%w.heads != 0 {
		return nil, nil, errFallback
	}
	if m.SymSizes()[2].Hint() != w.embed {
		return nil, nil, errFallback
	}
	m.SymSizes()[2].Specialize("the embedding size of torch's fused attention") // (guarded equal to embed_dim)
	// the batch and the sequence length may be size symbols; the embedding is static
	b, t, dm := m.SymSizes()[0], m.SymSizes()[1], w.embed
	h, dh := w.heads, w.embed/w.heads
	bt, bh, k := b.Mul(t), b.MulConst(h), primtorch.SymConst
	for _, p := range []*fxgraph.Node{w.qkvW, w.qkvB, w.projW, w.projB} {
		if metaOf(p).DType != m.DType {
			return nil, nil, errFallback
		}
	}
	// qkv = x·W_qkvᵀ, [B, T, 3D]
	qkv := d.reshape(d.prim("mm", d.reshape(x, []sym{bt, k(dm)}), d.transpose(w.qkvW, 0, 1)), []sym{b, t, k(3 * dm)})
	// (qkv + bias) per part, q scaled by 1/√dh computed as torch does (sqrt in the dtype, the
	// quotient in double, rounded to the dtype)
	scale := 1.0 / math.Sqrt(float64(dh))
	if m.DType == primtorch.Float32 {
		scale = float64(float32(1.0 / float64(float32(math.Sqrt(float64(dh))))))
	}
	part := func(i int64, scaled bool) *fxgraph.Node {
		s := d.slice(qkv, 2, i*dm, (i+1)*dm, 1)
		bias := d.slice(w.qkvB, 0, i*dm, (i+1)*dm, 1)
		v := d.add(s, d.expand(bias, []sym{b, t, k(dm)}))
		if scaled {
			v = d.mul(v, scale)
		}
		// [B, T, H, dh] → [B, H, T, dh] → [B·H, T, dh]
		heads := d.permute(d.view(v, []sym{b, t, k(h), k(dh)}), []int64{0, 2, 1, 3})
		return d.reshape(heads, []sym{bh, t, k(dh)})
	}
	q, kk, v := part(0, true), part(1, false), part(2, false)
	scores := d.prim("bmm", q, d.transpose(kk, 1, 2)) // [B·H, T, T]
	// softmax over keys as torch's last-dim kernel computes it
	mx := d.reduce("amax", scores, []int{2}, true)
	e := d.un("exp", d.sub(scores, d.expand(mx, []sym{bh, t, t})))
	sum := d.reduce("sum", e, []int{2}, true)
	probs = asNode(d.mul(e, d.expand(d.un("reciprocal", sum), []sym{bh, t, t})))
	ctxv := d.prim("bmm", probs, v) // [B·H, T, dh]
	merged := d.reshape(d.permute(d.view(ctxv, []sym{b, k(h), t, k(dh)}), []int64{0, 2, 1, 3}), []sym{bt, k(dm)})
	proj := d.prim("addmm", w.projB, merged, d.transpose(w.projW, 0, 1))
	return d.reshape(proj, []sym{b, t, k(dm)}), probs, nil
}

// layerNorm is torch.layer_norm over the last dim (as dLayerNorm decomposes it).
func (d *decomposer) layerNorm(x, w, b *fxgraph.Node, eps float64) *fxgraph.Node {
	m := metaOf(x)
	cdt := opmath(m.DType)
	y, _, _ := d.normalize(d.convert(x, cdt), []int{len(m.Shape) - 1}, eps)
	var wv, bv val
	if w != nil {
		wv = w
	}
	if b != nil {
		bv = b
	}
	y = d.affine(y, wv, bv, m.SymSizes(), cdt)
	return asNode(d.convert(y, m.DType))
}

// linear3 is x [B, T, K]·Wᵀ + bias as addmm over the B·T rows, viewed [B, T, N].
func (d *decomposer) linear3(x, w, bias *fxgraph.Node) *fxgraph.Node {
	s := sizesOf(x)
	r := d.prim("addmm", bias, d.reshape(x, []sym{s[0].Mul(s[1]), s[2]}), d.transpose(w, 0, 1))
	return d.reshape(r, []sym{s[0], s[1], sizesOf(w)[0]})
}

func floatInput(x *fxgraph.Node) bool {
	dt := metaOf(x).DType
	return dt == primtorch.Float32 || dt == primtorch.Float64
}

func dTransformerEncoderLayer(a *fpArgs) (any, error) {
	d := a.d
	src, err := a.need("src")
	embed, e1 := a.int("embed_dim")
	heads, e2 := a.int("num_heads")
	useGelu, e3 := a.bool("use_gelu")
	normFirst, e4 := a.bool("norm_first")
	eps, e5 := a.float("eps")
	mask, e6 := a.tensor("mask")
	if err := fpError(err, e1, e2, e3, e4, e5, e6); err != nil {
		return nil, err
	}
	if mask != nil || !floatInput(src) {
		return nil, errFallback
	}
	t := map[string]*fxgraph.Node{}
	for _, name := range []string{"qkv_weight", "qkv_bias", "proj_weight", "proj_bias", "norm_weight_1", "norm_bias_1",
		"norm_weight_2", "norm_bias_2", "ffn_weight_1", "ffn_bias_1", "ffn_weight_2", "ffn_bias_2"} {
		v, err := a.need(name)
		if err != nil {
			return nil, err
		}
		if metaOf(v).DType != metaOf(src).DType {
			return nil, errFallback
		}
		t[name] = v
	}
	w := attnWeights{embed: embed, heads: heads, qkvW: t["qkv_weight"], qkvB: t["qkv_bias"], projW: t["proj_weight"], projB: t["proj_bias"]}
	x := src
	if normFirst {
		x = d.layerNorm(x, t["norm_weight_1"], t["norm_bias_1"], eps)
	}
	attn, _, err := d.selfAttention(x, w)
	if err != nil {
		return nil, err
	}
	x = asNode(d.add(attn, src))
	if !normFirst {
		x = d.layerNorm(x, t["norm_weight_1"], t["norm_bias_1"], eps)
	}
	residual := x
	if normFirst {
		x = d.layerNorm(x, t["norm_weight_2"], t["norm_bias_2"], eps)
	}
	hdn := d.linear3(x, t["ffn_weight_1"], t["ffn_bias_1"])
	var act val
	if useGelu {
		act = d.mul(d.mul(hdn, 0.5), d.add(d.un("erf", d.mul(hdn, 1/math.Sqrt2)), 1.0))
	} else {
		act = d.bin("maximum", hdn, zero(hdn))
	}
	x = asNode(d.add(d.linear3(asNode(act), t["ffn_weight_2"], t["ffn_bias_2"]), residual))
	if !normFirst {
		x = d.layerNorm(x, t["norm_weight_2"], t["norm_bias_2"], eps)
	}
	return x, nil
}

func dNativeMultiHeadAttention(a *fpArgs) (any, error) {
	d := a.d
	q, err := a.need("query")
	embed, e1 := a.int("embed_dim")
	heads, e2 := a.int("num_head")
	mask, e3 := a.tensor("mask")
	needWeights, e4 := a.bool("need_weights")
	average, e5 := a.bool("average_attn_weights")
	if err := fpError(err, e1, e2, e3, e4, e5); err != nil {
		return nil, err
	}
	// self-attention only: query, key and value are one tensor
	same := func(name string) bool {
		n1, ok1 := a.raw("query").(*fxgraph.Node)
		n2, ok2 := a.raw(name).(*fxgraph.Node)
		return ok1 && ok2 && n1 == n2
	}
	if mask != nil || !same("key") || !same("value") || !floatInput(q) {
		return nil, errFallback
	}
	var ws [4]*fxgraph.Node
	for i, name := range []string{"qkv_weight", "qkv_bias", "proj_weight", "proj_bias"} {
		if ws[i], err = a.need(name); err != nil {
			return nil, err
		}
	}
	metas, ok := a.n.Meta.([]any)
	if !ok || len(metas) != 2 {
		return nil, errFallback
	}
	wm, _ := metas[1].(*primtorch.TensorMeta)
	if !needWeights && wm != nil {
		return nil, errFallback // torch returns an undefined tensor here
	}
	out, probs, err := d.selfAttention(q, attnWeights{embed: embed, heads: heads, qkvW: ws[0], qkvB: ws[1], projW: ws[2], projB: ws[3]})
	if err != nil {
		return nil, err
	}
	if !needWeights {
		return []any{out, nil}, nil
	}
	qs := sizesOf(q)
	b, t := qs[0], qs[1]
	weights := d.view(probs, []sym{b, primtorch.SymConst(heads), t, t})
	if average {
		weights = d.div(d.reduce("sum", weights, []int{1}, false), float64(heads))
	}
	if wm == nil || !sameSyms(wm.SymSizes(), sizesOf(weights)) {
		return nil, fmt.Errorf("decomp: ptgo BUG: %s: attention weights %v, torch gives %v", a.n.Target, metaOf(weights).Shape, wm)
	}
	return []any{out, weights}, nil
}
