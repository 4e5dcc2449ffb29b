// Package dl is ptgo's only cgo code on the CPU side: it opens shared libraries
// with dlopen(RTLD_NOW|RTLD_LOCAL), looks up symbols with dlsym, and calls a
// kernel through the uniform kernel ABI that package kernels documents:
//
//	int kernel(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads);
//
// Every dl* call and its dlerror read happen inside one C function, because a
// goroutine may move to another OS thread between two cgo calls and dlerror
// state is per thread.
//
// Built with CGO_ENABLED=0 the package still compiles: Available is false and
// Open returns an error that says how to rebuild, so the rest of ptgo keeps
// building without a C toolchain and callers fall back to eager execution.
package dl
