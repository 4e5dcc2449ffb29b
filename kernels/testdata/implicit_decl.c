PTGO_KERNEL int implicit(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads) {
	return not_declared_anywhere(1);
}
