/* gelu_exp without vectorisation: built with -fno-tree-vectorize, no simd pragma */
PTGO_KERNEL int gelu_scalar(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const float *x = ptrs[0];
	float *out = ptrs[1];
	const int64_t n = ints[0];
	(void)floats; (void)nthreads;
	for (int64_t i = 0; i < n; i++)
		out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
	return 0;
}
