/* out[i] = gelu(x[i]) (erf form) and e[i] = expf(x[i]), through libmvec. ints: n */
PTGO_KERNEL int gelu_exp(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const float *x = ptrs[0];
	float *out = ptrs[1], *e = ptrs[2];
	const int64_t n = ints[0];
	(void)floats;
#pragma omp parallel for simd num_threads(nthreads)
	for (int64_t i = 0; i < n; i++) {
		out[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
		e[i] = expf(x[i]);
	}
	return 0;
}
