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
