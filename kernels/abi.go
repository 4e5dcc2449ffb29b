package kernels

import "strings"

// ABIVersion numbers the kernel calling convention below. It is part of every
// cache key.
const ABIVersion = 2

// Header is the C prelude a code generator pastes at the top of every
// translation unit: fixed-width integers, <math.h>, the PTGO_KERNEL export
// marker (units are compiled with -fvisibility=hidden, so only marked functions
// are visible to dlsym), the kernel function type, and `#pragma omp declare
// simd` declarations of the glibc libmvec functions (see VectorMath).
//
// A kernel entry point has the type ptgo_kernel_fn:
//
//	PTGO_KERNEL int cpp_fused_add_gelu_0(void *const *ptrs, const int64_t *ints,
//	                                      const double *floats, int nthreads);
//
// Its arguments and result:
//   - ptrs: tensor data pointers (inputs, then outputs, in the order of the
//     launch signature the generator emitted);
//   - ints: int64 sizes, strides, offsets and integer scalars;
//   - floats: double scalars (a float32 kernel converts them once);
//   - nthreads: the OpenMP thread count to use, ≥ 1 (torch.get_num_threads(),
//     DESIGN D6); parallel regions say num_threads(nthreads);
//   - returns 0 on success, or a nonzero status the generator defines (an
//     index out of range in gather/embedding), which callers turn into an error
//     rather than letting a kernel read out of bounds.
//
// Any pointer argument may be NULL when its array would be empty. The CPython
// shim calls this type directly from C; Go calls it through Kernel.Call.
//
// Parallel regions are OpenMP pragmas run by libgomp, torch's own OpenMP
// runtime, unless the unit also includes PoolRuntime.
var Header = `/* ptgo kernel ABI v2 (package kernels) */
#include <stdint.h>
#include <math.h>
#define PTGO_KERNEL __attribute__((visibility("default")))
typedef int ptgo_kernel_fn(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads);
` + vectorMathDecls()

// PoolRuntime, pasted after Header, makes a unit run its parallel regions on
// ptgo's thread pool instead of libgomp. It defines the libgomp entry points
// gcc calls for parallel regions with static schedules, barriers, single and
// atomic constructs (GOMP_parallel, omp_get_thread_num, omp_get_num_threads,
// GOMP_barrier, GOMP_single_start, GOMP_atomic_start/end) itself, hidden, so
// the library does not link libgomp (-Wl,--as-needed): GOMP_parallel hands the
// region to the pool that kernels/dl installs through ptgo_set_parallel when it
// opens the library (kernels/dl/pool.c says when that pays), or runs it on the
// calling thread alone when none was installed. The static schedules gcc emits
// split work by omp_get_num_threads, so any thread count computes the same
// result. A construct outside that list would link libgomp and mix the two
// runtimes: TestPoolRuntimeNeedsNoLibgomp checks the library's imports.
const PoolRuntime = `#define PTGO_HIDDEN __attribute__((visibility("hidden")))
#if defined(__x86_64__) || defined(__i386__)
#define PTGO_PAUSE() __builtin_ia32_pause()
#else
#define PTGO_PAUSE() ((void)0)
#endif
typedef void ptgo_par_tramp_fn(void *arg, int tid, int nthr);
typedef void ptgo_par_run_fn(ptgo_par_tramp_fn *tramp, void *arg, int nthreads);
static ptgo_par_run_fn *ptgo_par_run;
PTGO_KERNEL void ptgo_set_parallel(ptgo_par_run_fn *run) { ptgo_par_run = run; }
struct ptgo_par_region {
	void (*fn)(void *);
	void *data;
	int nthr;
	int arrived, sense; /* the sense-reversing barrier */
	int singles;        /* single constructs claimed so far */
};
static __thread struct ptgo_par_region *ptgo_omp_region;
static __thread int ptgo_omp_tid, ptgo_omp_sense, ptgo_omp_singles;
PTGO_HIDDEN int omp_get_thread_num(void) { return ptgo_omp_tid; }
PTGO_HIDDEN int omp_get_num_threads(void) { return ptgo_omp_region ? ptgo_omp_region->nthr : 1; }
static void ptgo_par_tramp(void *arg, int tid, int nthr) {
	struct ptgo_par_region *r = (struct ptgo_par_region *)arg;
	struct ptgo_par_region *outer = ptgo_omp_region;
	int t = ptgo_omp_tid, sense = ptgo_omp_sense, singles = ptgo_omp_singles;
	if (tid == 0) r->nthr = nthr; /* the pool may run fewer threads than asked */
	ptgo_omp_region = r; ptgo_omp_tid = tid; ptgo_omp_sense = 0; ptgo_omp_singles = 0;
	r->fn(r->data);
	ptgo_omp_region = outer; ptgo_omp_tid = t; ptgo_omp_sense = sense; ptgo_omp_singles = singles;
}
PTGO_HIDDEN void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags) {
	struct ptgo_par_region r = {fn, data, 1, 0, 0, 0};
	(void)flags;
	if (num_threads <= 1 || ptgo_par_run == 0 || ptgo_omp_region != 0) { ptgo_par_tramp(&r, 0, 1); return; }
	r.nthr = (int)num_threads;
	ptgo_par_run(ptgo_par_tramp, &r, (int)num_threads);
}
PTGO_HIDDEN void GOMP_barrier(void) {
	struct ptgo_par_region *r = ptgo_omp_region;
	if (r == 0 || r->nthr <= 1) return;
	ptgo_omp_sense = !ptgo_omp_sense;
	if (__atomic_add_fetch(&r->arrived, 1, __ATOMIC_ACQ_REL) == r->nthr) {
		__atomic_store_n(&r->arrived, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&r->sense, ptgo_omp_sense, __ATOMIC_RELEASE);
	} else {
		while (__atomic_load_n(&r->sense, __ATOMIC_ACQUIRE) != ptgo_omp_sense) PTGO_PAUSE();
	}
}
PTGO_HIDDEN _Bool GOMP_single_start(void) {
	struct ptgo_par_region *r = ptgo_omp_region;
	if (r == 0) return 1;
	int n = ++ptgo_omp_singles, prev = n - 1;
	return __atomic_compare_exchange_n(&r->singles, &prev, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}
static int ptgo_omp_lock;
PTGO_HIDDEN void GOMP_atomic_start(void) {
	while (__atomic_exchange_n(&ptgo_omp_lock, 1, __ATOMIC_ACQUIRE)) PTGO_PAUSE();
}
PTGO_HIDDEN void GOMP_atomic_end(void) { __atomic_store_n(&ptgo_omp_lock, 0, __ATOMIC_RELEASE); }
`

// VectorMath lists the <math.h> functions Header declares with `#pragma omp
// declare simd notinbranch`, each in its float ("expf") and double ("exp")
// form. In a vectorised loop gcc calls glibc's libmvec variants of them
// (_ZGVdN8v_expf at avx2, _ZGVeN16v_expf at avx512), accurate to 4 ulp.
// They need glibc ≥ 2.35; the two-argument ones are listed in vectorMath2.
var VectorMath = []string{
	"acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "cos", "cosh",
	"erf", "erfc", "exp", "exp10", "exp2", "expm1", "log", "log10", "log1p",
	"log2", "sin", "sinh", "tan", "tanh",
	"atan2", "hypot", "pow",
}

// vectorMath2 are the VectorMath entries that take two arguments.
var vectorMath2 = map[string]bool{"atan2": true, "hypot": true, "pow": true}

func vectorMathDecls() string {
	var b strings.Builder
	for _, fn := range VectorMath {
		for _, ty := range []struct{ c, suffix string }{{"float", "f"}, {"double", ""}} {
			args := ty.c
			if vectorMath2[fn] {
				args += ", " + ty.c
			}
			b.WriteString("#pragma omp declare simd notinbranch\n")
			b.WriteString("extern " + ty.c + " " + fn + ty.suffix + "(" + args + ");\n")
		}
	}
	return b.String()
}
