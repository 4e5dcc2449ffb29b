package primtorch

// metaScaledDotProductAttention is F.scaled_dot_product_attention: query [..., L, E], key
// [..., S, E], value [..., S, Ev] with broadcasting batch dims give [..., L, Ev] in the query's
// dtype, contiguous (torch's CPU kernels, flash and math, write it so).
func metaScaledDotProductAttention(a *Args) (Value, error) {
	q, k, v := a.Tensor("query"), a.Tensor("key"), a.Tensor("value")
	if q.DType != k.DType || q.DType != v.DType {
		return nil, runtimeErrorf("Expected query, key, and value to have the same dtype, but got query.dtype: %s key.dtype: %s and value.dtype: %s instead.",
			scalarTypeName(q.DType), scalarTypeName(k.DType), scalarTypeName(v.DType))
	}
	if !q.DType.IsFloatingPoint() {
		return nil, runtimeErrorf("scaled_dot_product_attention: expected query to be a floating point tensor, got %s", scalarTypeName(q.DType))
	}
	nq, nk, nv := len(q.Shape), len(k.Shape), len(v.Shape)
	if nq < 2 || nk < 2 || nv < 2 {
		return nil, runtimeErrorf("scaled_dot_product_attention: query, key and value need at least 2 dimensions")
	}
	qs, ks, vs := q.SymSizes(), k.SymSizes(), v.SymSizes()
	if !symEq(qs[nq-1], ks[nk-1]) {
		return nil, runtimeErrorf("scaled_dot_product_attention: query and key must have the same embedding size, got %d and %d", q.Shape[nq-1], k.Shape[nk-1])
	}
	if !symEq(ks[nk-2], vs[nv-2]) {
		return nil, runtimeErrorf("scaled_dot_product_attention: key and value must have the same sequence length, got %d and %d", k.Shape[nk-2], v.Shape[nv-2])
	}
	if a.Bool("enable_gqa") {
		return nil, unsupportedf("scaled_dot_product_attention with enable_gqa")
	}
	batch, err := SymBroadcastShapes(qs[:nq-2], ks[:nk-2], vs[:nv-2])
	if err != nil {
		return nil, err
	}
	l, s := qs[nq-2], ks[nk-2]
	if m := a.Tensor("attn_mask"); m != nil {
		if a.Bool("is_causal") {
			return nil, runtimeErrorf("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
		}
		if m.DType != Bool && m.DType != q.DType {
			return nil, runtimeErrorf("Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: %s and  query.dtype: %s instead.",
				scalarTypeName(m.DType), scalarTypeName(q.DType))
		}
		if _, err := SymBroadcastShapes(m.SymSizes(), append(append([]SymInt(nil), batch...), l, s)); err != nil {
			return nil, err
		}
	}
	shape := append(append([]SymInt(nil), batch...), l, vs[nv-1])
	return symNewTensor(q.DType, shape, deviceOf(q)), nil
}

// fusedAttentionInput checks what torch's fused kernels (transformer_encoder_layer_forward,
// native_multi_head_attention) check of their input x [B, T, E] before computing: 3 dims, the
// embedding size, the weights' dtype.
func fusedAttentionInput(x *TensorMeta, embedDim, heads int64, weights ...*TensorMeta) error {
	if len(x.Shape) != 3 {
		return runtimeErrorf("expected 3-D `query`, got %d-D tensor", len(x.Shape))
	}
	if !x.DType.IsFloatingPoint() {
		return runtimeErrorf("expected a floating point `query`, got %s", scalarTypeName(x.DType))
	}
	if heads <= 0 || embedDim <= 0 || embedDim%heads != 0 {
		return runtimeErrorf("embed_dim %d must be divisible by num_heads %d", embedDim, heads)
	}
	if !symEq(x.SymSizes()[2], SymConst(embedDim)) {
		return runtimeErrorf("expected `query` of embedding size %d, got %d", embedDim, x.Shape[2])
	}
	for _, w := range weights {
		if w != nil && w.DType != x.DType {
			return runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(w.DType))
		}
	}
	return nil
}

// metaTransformerEncoderLayerFwd is torch._transformer_encoder_layer_fwd: the layer's output has
// src's shape and dtype, contiguous.
func metaTransformerEncoderLayerFwd(a *Args) (Value, error) {
	src := a.Tensor("src")
	if err := fusedAttentionInput(src, a.Int("embed_dim"), a.Int("num_heads"), a.Tensor("qkv_weight"), a.Tensor("proj_weight"),
		a.Tensor("ffn_weight_1"), a.Tensor("ffn_weight_2")); err != nil {
		return nil, err
	}
	return symNewTensor(src.DType, src.SymSizes(), deviceOf(src)), nil
}

// metaNativeMultiHeadAttention is torch._native_multi_head_attention with query, key and value
// of one shape [B, T, E] (the fast path's self-attention): the output [B, T, E] and, with
// need_weights, the attention weights [B, T, T] (averaged over the heads) or [B, H, T, T]; None
// without.
func metaNativeMultiHeadAttention(a *Args) (Value, error) {
	q, k, v := a.Tensor("query"), a.Tensor("key"), a.Tensor("value")
	heads := a.Int("num_head")
	if err := fusedAttentionInput(q, a.Int("embed_dim"), heads, a.Tensor("qkv_weight"), a.Tensor("proj_weight")); err != nil {
		return nil, err
	}
	if !symShapeEq(q.SymSizes(), k.SymSizes()) || !symShapeEq(q.SymSizes(), v.SymSizes()) {
		return nil, runtimeErrorf("expected `query`/`key`/`value` shapes to match")
	}
	qs := q.SymSizes()
	out := symNewTensor(q.DType, qs, deviceOf(q))
	if !a.Bool("need_weights") {
		return []Value{out, nil}, nil
	}
	shape := []SymInt{qs[0], qs[1], qs[1]}
	if !a.Bool("average_attn_weights") {
		shape = []SymInt{qs[0], SymConst(heads), qs[1], qs[1]}
	}
	return []Value{out, symNewTensor(q.DType, shape, deviceOf(q))}, nil
}
