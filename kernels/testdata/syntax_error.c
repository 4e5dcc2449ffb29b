PTGO_KERNEL int broken(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	return undeclared_variable +;
}
