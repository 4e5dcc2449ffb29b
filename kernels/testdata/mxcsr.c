/* out[0] = MXCSR of the calling thread; out[1..] = x * 1e-10f (denormal for tiny x) */
PTGO_KERNEL int mxcsr(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	uint32_t *out = ptrs[0];
	const float *x = ptrs[1];
	float *y = ptrs[2];
	(void)floats; (void)nthreads;
	out[0] = __builtin_ia32_stmxcsr();
	for (int64_t i = 0; i < ints[0]; i++)
		y[i] = x[i] * 1e-10f;
	return 0;
}
