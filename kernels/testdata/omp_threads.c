int omp_get_num_threads(void);
int omp_get_thread_num(void);

/* out[i] = 2*x[i] over an OpenMP parallel loop; seen[t] = 1 for every thread
   t that ran, team[0] = team size. ints: n */
PTGO_KERNEL int omp_scale(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	const double *x = ptrs[0];
	double *out = ptrs[1];
	int32_t *seen = ptrs[2], *team = ptrs[3];
	const int64_t n = ints[0];
	(void)floats;
#pragma omp parallel num_threads(nthreads)
	{
#pragma omp single
		team[0] = omp_get_num_threads();
		seen[omp_get_thread_num()] = 1;
#pragma omp for schedule(static)
		for (int64_t i = 0; i < n; i++)
			out[i] = 2.0 * x[i];
	}
	return 0;
}
