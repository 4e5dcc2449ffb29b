extern int ptgo_no_such_function(int);

PTGO_KERNEL int undefined(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	return ptgo_no_such_function(1);
}
