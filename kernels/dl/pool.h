// The thread pool of generated kernels' parallel regions (pool.c).
#ifndef PTGO_POOL_H
#define PTGO_POOL_H

// A region's body as the pool calls it: thread tid of nthr (0 is the caller).
typedef void ptgo_pool_tramp_fn(void *arg, int tid, int nthr);

// ptgo_pool_run calls fn(arg, tid, n) on n threads, the caller being thread 0,
// and returns when all are done. n is nthreads, or 1 when the pool is busy
// with another caller's region or cannot start threads.
void ptgo_pool_run(ptgo_pool_tramp_fn *fn, void *arg, int nthreads);

typedef void ptgo_pool_run_fn(ptgo_pool_tramp_fn *fn, void *arg, int nthreads);

#endif
