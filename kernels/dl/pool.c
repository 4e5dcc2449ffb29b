//go:build cgo

// The thread pool that runs the parallel regions of generated kernels built
// with kernels.PoolRuntime (see pool.h). One pool per process: kernel
// libraries get ptgo_pool_run through their ptgo_set_parallel entry when dl
// opens them.
//
// Why not libgomp for every unit: torch has already loaded libgomp, whose idle
// workers spin for about a millisecond after each region (GOMP_SPINCOUNT, read
// once at load). torch's BLAS (OpenBLAS with its own pthreads) then runs the
// next matmul beside a spinning OpenMP worker, and on a machine with as many
// cores as threads both slow down: gelu_mlp at 2 threads took 9.9 ms against
// 2.6 ms at one thread. These workers spin for at most PTGO_POOL_SPIN_NS after
// a region, then sleep on a futex, so the next matmul finds the cores free,
// while back-to-back kernels still hand over without a system call. The other
// way round, a graph calling torch ops that run on libgomp (convolutions)
// stays on libgomp (inductor's usePool): there the pool's threads would be
// the ones competing with spinning libgomp workers.
//
// Pure C with no Go: it runs in forked children too (DESIGN D8); a child
// starts with no workers and creates its own on first use.
#define _GNU_SOURCE
#include "pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PTGO_POOL_MAX 256
#define PTGO_POOL_SPIN_NS 50000

static pthread_mutex_t ptgo_pool_mu = PTHREAD_MUTEX_INITIALIZER; // one region at a time
static int ptgo_pool_nworkers;                                    // started, under ptgo_pool_mu

// The current region, published by the release store of ptgo_pool_gen.
static ptgo_pool_tramp_fn *ptgo_pool_fn;
static void *ptgo_pool_arg;
static int ptgo_pool_nthr;
static uint32_t ptgo_pool_gen;     // bumped once per region; workers futex-wait on it
static uint32_t ptgo_pool_pending; // workers still running the region
static uint32_t ptgo_pool_sleepers; // workers asleep on ptgo_pool_gen
static uint32_t ptgo_pool_waiting;  // the submitter asleep on ptgo_pool_pending

static long ptgo_futex(uint32_t *addr, int op, uint32_t val) {
	return syscall(SYS_futex, addr, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static int64_t ptgo_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// ptgo_pool_await spins until *addr differs from old, for at most
// PTGO_POOL_SPIN_NS, then sleeps on the futex, counted in *sleepers while it
// does: the writer changes *addr, then wakes only if *sleepers is nonzero (both
// sequentially consistent, so one of the two sees the other's write).
static void ptgo_pool_await(uint32_t *addr, uint32_t old, uint32_t *sleepers) {
	int64_t start = 0;
	for (unsigned i = 1;; i++) {
		if (__atomic_load_n(addr, __ATOMIC_ACQUIRE) != old) return;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		if ((i & 63) == 0) {
			int64_t now = ptgo_now_ns();
			if (start == 0) start = now;
			else if (now - start > PTGO_POOL_SPIN_NS) break;
		}
	}
	__atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(addr, __ATOMIC_SEQ_CST) == old) ptgo_futex(addr, FUTEX_WAIT, old);
	__atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
}

static void *ptgo_pool_worker(void *p) {
	// p packs the worker's number (1..nworkers; the submitter is 0) and the
	// generation current when it was started: a region published before the
	// thread first runs must still be seen as new.
	int tid = (int)((uintptr_t)p & 511);
	uint32_t seen = (uint32_t)((uintptr_t)p >> 9);
	for (;;) {
		ptgo_pool_await(&ptgo_pool_gen, seen, &ptgo_pool_sleepers);
		seen = __atomic_load_n(&ptgo_pool_gen, __ATOMIC_ACQUIRE);
		if (tid >= ptgo_pool_nthr) continue;
		ptgo_pool_fn(ptgo_pool_arg, tid, ptgo_pool_nthr);
		if (__atomic_sub_fetch(&ptgo_pool_pending, 1, __ATOMIC_SEQ_CST) == 0 &&
		    __atomic_load_n(&ptgo_pool_waiting, __ATOMIC_SEQ_CST) != 0)
			ptgo_futex(&ptgo_pool_pending, FUTEX_WAKE, 1);
	}
	return NULL;
}

// ptgo_pool_grow starts workers until there are n-1 (under ptgo_pool_mu).
// Workers block every signal: signals belong to the threads that expect them.
static void ptgo_pool_grow(int n) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (ptgo_pool_nworkers < n - 1) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		uintptr_t arg = ((uintptr_t)__atomic_load_n(&ptgo_pool_gen, __ATOMIC_RELAXED) << 9) | (uintptr_t)(ptgo_pool_nworkers + 1);
		int rc = pthread_create(&t, &attr, ptgo_pool_worker, (void *)arg);
		pthread_attr_destroy(&attr);
		if (rc != 0) break;
		ptgo_pool_nworkers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void ptgo_pool_after_fork(void) {
	// Only the forking thread exists in the child: forget the parent's workers.
	pthread_mutex_init(&ptgo_pool_mu, NULL);
	ptgo_pool_nworkers = 0;
	ptgo_pool_pending = 0;
	ptgo_pool_sleepers = 0;
	ptgo_pool_waiting = 0;
}

static pthread_once_t ptgo_pool_once = PTHREAD_ONCE_INIT;

static void ptgo_pool_init(void) { pthread_atfork(NULL, NULL, ptgo_pool_after_fork); }

void ptgo_pool_run(ptgo_pool_tramp_fn *fn, void *arg, int nthreads) {
	if (nthreads > PTGO_POOL_MAX) nthreads = PTGO_POOL_MAX;
	// A region from another thread (or a nested one) runs on the caller alone:
	// kernels split work by the thread count they are given, so any count is
	// correct.
	if (nthreads <= 1 || pthread_mutex_trylock(&ptgo_pool_mu) != 0) {
		fn(arg, 0, 1);
		return;
	}
	pthread_once(&ptgo_pool_once, ptgo_pool_init);
	if (ptgo_pool_nworkers < nthreads - 1) ptgo_pool_grow(nthreads);
	if (nthreads > ptgo_pool_nworkers + 1) nthreads = ptgo_pool_nworkers + 1;
	if (nthreads > 1) {
		ptgo_pool_fn = fn;
		ptgo_pool_arg = arg;
		ptgo_pool_nthr = nthreads;
		__atomic_store_n(&ptgo_pool_pending, (uint32_t)(nthreads - 1), __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&ptgo_pool_gen, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&ptgo_pool_sleepers, __ATOMIC_SEQ_CST) != 0)
			ptgo_futex(&ptgo_pool_gen, FUTEX_WAKE, INT32_MAX);
	}
	fn(arg, 0, nthreads);
	if (nthreads > 1) {
		for (;;) {
			uint32_t left = __atomic_load_n(&ptgo_pool_pending, __ATOMIC_SEQ_CST);
			if (left == 0) break;
			ptgo_pool_await(&ptgo_pool_pending, left, &ptgo_pool_waiting);
		}
	}
	pthread_mutex_unlock(&ptgo_pool_mu);
}
