/* out[i] = a[i] + alpha * b[i]; ints: n; floats: alpha */
PTGO_KERNEL int vec_add(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const float *a = ptrs[0], *b = ptrs[1];
	float *out = ptrs[2];
	const int64_t n = ints[0];
	const float alpha = (float)floats[0];
	(void)nthreads;
#pragma omp simd
	for (int64_t i = 0; i < n; i++)
		out[i] = a[i] + alpha * b[i];
	return 0;
}

/* not marked PTGO_KERNEL: must stay hidden */
int vec_add_helper(void) { return 1; }
