package decomp

import "ptgo/primtorch"

// reducedFloatTorchCalls are the ops (schema names) whose float16/bfloat16 results eager
// computes with roundings ptgo's decompositions do not reproduce, measured per torch by
// tests/test_reduced_float_exact.py, which compares every op of its catalogue to eager bit for
// bit on 4096 random elements of each 16-bit dtype (the ones listed differ in the last bit of
// 0.1–70% of them): torch's Python and ATen composites that round after every step (softsign,
// tanhshrink, normalize, the losses built of several ops, log_softmax through its logsumexp),
// 1.13's vector loops that compute silu and tanh-gelu in the 16-bit type step by step, 2.14's
// float16 erf, asin and gelu through its vector math library, and reductions whose float
// accumulation ptgo does not follow (group and instance norm). A call of one of them on a
// 16-bit floating tensor stays torch's call (prims.fallback), named on perf_hints; on other
// dtypes it is decomposed as before (A205).
var reducedFloatTorchCalls = []primtorch.VersionRow[map[string]bool]{
	{Since: primtorch.Torch113, Value: setOf(
		"softsign", "tanhshrink", "normalize", "log_softmax", "logsumexp", "cosine_similarity",
		"pairwise_distance", "xlogy", "logaddexp", "logit", "norm", "silu", "gelu", "mse_loss", "huber_loss",
		"smooth_l1_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
		"group_norm", "instance_norm",
	)},
	{Since: primtorch.Torch214, Value: setOf(
		"softsign", "tanhshrink", "normalize", "log_softmax", "logsumexp", "cosine_similarity",
		"pairwise_distance", "xlogy", "logaddexp", "logit", "mish", "gelu", "mse_loss", "huber_loss",
		"smooth_l1_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
		"instance_norm", "erf", "asin",
	)},
}

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// reducedFloatTorchCall reports a call that stays torch's because its 16-bit result is torch's
// kernels' rounding (reducedFloatTorchCalls): the op is listed for the running torch and a
// floating tensor operand or result is float16 or bfloat16.
func reducedFloatTorchCall(c *ctx) bool {
	if !primtorch.ForTorch(reducedFloatTorchCalls, primtorch.Torch())[c.op.Schema.Name] {
		return false
	}
	metas := c.a.AllTensors()
	switch o := c.out.(type) {
	case *primtorch.TensorMeta:
		metas = append(metas, o)
	case []any:
		metas = append(metas, c.outMetas()...)
	}
	for _, m := range metas {
		if m != nil && (m.DType == primtorch.Float16 || m.DType == primtorch.BFloat16) {
			return true
		}
	}
	return false
}

// ReducedFloatTorchCalls lists the running torch's ops whose 16-bit calls stay torch's (tests).
func ReducedFloatTorchCalls() map[string]bool {
	return primtorch.ForTorch(reducedFloatTorchCalls, primtorch.Torch())
}
