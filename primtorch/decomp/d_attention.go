package decomp

import (
	"math"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// dScaledDotProductAttention is F.scaled_dot_product_attention as torch's math kernel computes
// it, with the softmax that gives fully masked rows zeros (torch's _safe_softmax, and its CPU
// flash kernel): scores = q·kᵀ·scale over the broadcast batch (bmm), the mask applied (a bool
// mask selects, a float mask adds, is_causal keeps key j ≤ query i), softmax over keys,
// then ·v. The bias, scaling, masking and softmax fuse around the two matrix products. With
// dropout_p > 0 torch's CPU kernel is its math kernel (its flash kernel takes no dropout), which
// scales q and kᵀ by √scale each before the product and drops the attention weights with
// at::dropout: so does this, its noise drawn as dropout's (decomposer.dropout), bit-equal to
// eager's (a TransformerEncoderLayer in training with dropout ran all of its forward and
// backward with torch). Grouped-query attention, 16-bit inputs (torch's kernels accumulate them
// their own way), and dropout with a symbolic head size or a negative scale stay prims.fallback.
func dScaledDotProductAttention(c *ctx) (any, error) {
	d := c.d
	q, k, v := asNode(c.in("query")), asNode(c.in("key")), asNode(c.in("value"))
	p := c.float("dropout_p")
	if p < 0 || p >= 1 || c.bool("enable_gqa") {
		return nil, errFallback // (p = 1: torch's kernel gives zeros; outside [0, 1] it raises)
	}
	qm, km, vm := metaOf(q), metaOf(k), metaOf(v)
	if qm.DType != primtorch.Float32 && qm.DType != primtorch.Float64 {
		return nil, errFallback
	}
	nq, nk, nv := len(qm.Shape), len(km.Shape), len(vm.Shape)
	qs, ks, vs := qm.SymSizes(), km.SymSizes(), vm.SymSizes()
	l, s, e, ev := qs[nq-2], ks[nk-2], qs[nq-1], vs[nv-1]
	batch, err := primtorch.SymBroadcastShapes(qs[:nq-2], ks[:nk-2], vs[:nv-2])
	if err != nil {
		return nil, errFallback
	}
	nb := prodSyms(batch)
	bshape := func(rows, cols sym) []sym { return append(append([]sym{}, batch...), rows, cols) }
	Q := d.batchMatrices(d.expand(q, bshape(l, e)), nb)
	K := d.batchMatrices(d.expand(k, bshape(s, e)), nb)
	V := d.batchMatrices(d.expand(v, bshape(s, ev)), nb)
	var scale val // 1/sqrt(E), a Python float of the size (a 0-d float64 tensor when E is symbolic)
	if k, c := e.IsConst(); c {
		scale = 1 / math.Sqrt(float64(k))
	} else {
		scale = d.div(d.full([]sym{}, 1.0, primtorch.Float64), d.un("sqrt", d.full([]sym{}, e, primtorch.Float64)))
	}
	if sc, ok := c.get("scale").(float64); ok {
		scale = sc
	}
	var scores val // [nb, L, S]
	if p > 0 {
		sc, ok := scale.(float64)
		if !ok || sc < 0 {
			return nil, errFallback
		}
		sf := math.Sqrt(sc)
		scores = d.prim("bmm", d.mul(Q, d.operandLike(sf, Q)), d.mul(d.transpose(K, 1, 2), d.operandLike(sf, K)))
	} else {
		qk := d.prim("bmm", Q, d.transpose(K, 1, 2))
		scores = d.mul(qk, d.operandLike(scale, qk))
	}
	full := []sym{nb, l, s}
	var keep val // bool [nb, L, S]: which scores count
	if m, _ := c.in("attn_mask").(*fxgraph.Node); m != nil {
		mm := metaOf(m)
		if len(mm.Shape) > len(batch)+2 {
			return nil, errFallback
		}
		mask := d.reshape(d.expand(m, bshape(l, s)), full)
		if mm.DType == primtorch.Bool {
			keep = mask
		} else {
			scores = d.add(scores, mask)
		}
	} else if c.bool("is_causal") {
		one := primtorch.SymConst(1)
		row := d.expand(d.view(d.iota(l, int64(0), int64(1), primtorch.Int64), []sym{l, one}), []sym{l, s})
		col := d.expand(d.view(d.iota(s, int64(0), int64(1), primtorch.Int64), []sym{one, s}), []sym{l, s})
		keep = d.expand(d.bin("le", col, row), full)
	}
	if keep != nil {
		scores = d.where(keep, scores, math.Inf(-1))
	}
	mx := d.reduce("amax", scores, []int{2}, true)
	ex := d.un("exp", d.sub(scores, d.expand(mx, full)))
	sum := d.reduce("sum", ex, []int{2}, true)
	probs := d.div(ex, d.expand(sum, full))
	// A row whose every score is -inf (fully masked) gives zeros, not NaN.
	masked := d.reduce("all", d.bin("eq", scores, math.Inf(-1)), []int{2}, true)
	probs = d.where(d.expand(masked, full), zero(probs), probs)
	if p > 0 {
		var ok bool
		if probs, ok = d.dropout(probs, p); !ok {
			return nil, errFallback
		}
	}
	out := d.prim("bmm", probs, V) // [nb, L, Ev]
	return d.reshape(out, bshape(l, ev)), nil
}
