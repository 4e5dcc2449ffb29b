package primtorch

// Attention.
var attentionDefs = []*def{
	// torch 2.0's fused attention (nn.MultiheadAttention calls it when no weights are wanted).
	row(OpScaledDotProductAttention, KindComposite, PromoteNone,
		"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
		"F.scaled_dot_product_attention nn.scaled_dot_product_attention", metaScaledDotProductAttention).
		sinceTorch(TorchVersion{2, 0}).
		notes("the dtype checks of torch's CPU kernel choice (flash or math) are not modelled beyond same-dtype inputs").with(fSymbolic),
	// torch's fused inference kernels (nn.TransformerEncoderLayer and nn.MultiheadAttention call
	// them in eval mode without autograd; the same schemas in torch 1.13 and 2.x). Rows so that
	// capture keeps their sizes symbolic; decomposition: the fast paths of d_fastpath.go (a
	// symbolic batch and sequence length included), prims.fallback (torch runs the kernel) for
	// the calls they decline.
	row(OpTransformerEncoderLayerFwd, KindComposite, PromoteNone,
		"_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool norm_first, float eps, Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor",
		"torch._transformer_encoder_layer_fwd", metaTransformerEncoderLayerFwd).
		notes("the shapes of the weights are not checked against embed_dim (torch's kernel checks them as it computes)").with(fSymbolic),
	row(OpNativeMultiHeadAttention, KindComposite, PromoteNone,
		"_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)",
		"torch._native_multi_head_attention", metaNativeMultiHeadAttention).
		notes("the shapes of the weights are not checked against embed_dim (torch's kernel checks them as it computes)").with(fSymbolic),
}
