package primtorch

// Attention.
var attentionDefs = []*def{
	// torch 2.0's fused attention (nn.MultiheadAttention calls it when no weights are wanted).
	row(OpScaledDotProductAttention, KindComposite, PromoteNone,
		"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
		"F.scaled_dot_product_attention nn.scaled_dot_product_attention", metaScaledDotProductAttention).
		sinceTorch(TorchVersion{2, 0}).
		notes("the dtype checks of torch's CPU kernel choice (flash or math) are not modelled beyond same-dtype inputs").with(fSymbolic),
}
