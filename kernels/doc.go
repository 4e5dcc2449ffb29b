// Package kernels turns C source text into loaded, callable functions: it
// compiles with the system C compiler, caches the shared libraries on disk by
// content, loads them with dlopen and calls them. It knows nothing about
// graphs; inductor gives it one translation unit per graph (Source) and gets
// back a Library whose entry points follow one calling convention.
//
// # Use
//
//	c, err := kernels.Default()            // or kernels.New(ctx, kernels.Config{...})
//	lib, err := c.Compile(ctx, kernels.Source{Name: "graph_0", Text: kernels.Header + code})
//	k, err := lib.Kernel("cpp_fused_add_gelu_0")
//	err = k.Call(ptrs, ints, floats, nthreads)  // from Go; the C shim calls lib.Symbol's address
//
// CompileAll compiles a batch in parallel (at most GOMAXPROCS compiler
// processes at once). Build compiles into the cache without loading, for any
// ISA level, even one this CPU cannot run. Without a C compiler, New (and
// Default) warn once per process and return an error matching ErrNoCompiler;
// the caller runs the graph eagerly. A kernel the compiler rejects is a
// *CompileError carrying the compiler's diagnostics, the command line and the
// path of the kept source.
//
// # Kernel ABI
//
// Every entry point has one C type, pasted into each unit by Header:
//
//	typedef int ptgo_kernel_fn(void *const *ptrs, const int64_t *ints,
//	                           const double *floats, int nthreads);
//
// ptrs are tensor data pointers, ints are int64 sizes, strides and integer
// scalars, floats are double scalars, nthreads is the OpenMP thread count
// (torch.get_num_threads(), DESIGN D6), and the result is 0 or a status the
// generator defines (an index out of range). Entry points are marked
// PTGO_KERNEL; everything else is hidden (-fvisibility=hidden). The CPython
// shim calls this type directly with no Go on the hot path; Kernel.Call is the
// Go-side way (≈0.23 µs per call with non-Go memory, ≈0.4 µs with Go slices,
// which must be pinned for the call).
//
// # Compiler flags
//
//	-O3 -fopenmp -fPIC -shared -pipe
//	-fno-math-errno -fno-trapping-math -ffp-contract=off
//	-fvisibility=hidden -Werror=implicit-function-declaration -Wl,-z,defs
//	-Wl,--as-needed <ISA flags> <Source.ExtraFlags> -o out.so src.c -lm
//
// The ISA level is chosen from the CPU's features (klauspost/cpuid/v2), never
// -march=native, so a cache key names a portable target:
//
//	avx512    -mavx2 -mfma -mf16c -mavx512{f,dq,vl,bw,cd} -mprefer-vector-width=512  16 float lanes
//	avx2      -mavx2 -mfma -mf16c                                                     8 float lanes
//	sse4.2    -msse4.2 -mpopcnt                                                       4 float lanes
//	baseline  (x86-64 SSE2)                                                           4 float lanes
//
// PTGO_CPU_ISA overrides the choice (tests, benchmarks); an unknown name is an
// error listing the allowed ones, and Compile refuses a level the CPU lacks
// (Build allows it). This machine (AMD EPYC with AVX-512F/DQ/VL/BW/CD) detects avx512.
//
// The math flags were chosen by measurement, with gcc 12.2 on this machine:
//
//   - -fno-math-errno: without it a plain loop of sqrtf(x)+expf(x) is not
//     vectorised at all (sqrtf must set errno); with it the loop uses vsqrtps
//     and _ZGVdN8v_expf. torch never reads errno.
//   - -fno-trapping-math: only gives up floating-point exception flags, which
//     nothing reads; values are unchanged, and it lets gcc if-convert loops.
//   - -ffp-contract=off: no a*b+c fused into an FMA that eager torch does not
//     fuse, so results stay closest to eager (torch's own Inductor does the
//     same).
//   - Not -ffast-math, nor -Ofast or -funsafe-math-optimizations: gcc 12 links
//     crtfastmath.o into a -shared library built with any of them (the spec
//     tests the option's presence, so torch's "-ffast-math
//     -fno-unsafe-math-optimizations" does it too), and its constructor turns
//     on flush-to-zero and denormals-are-zero when the library is loaded,
//     changing eager torch's results in the same process. Measured: 1e-38f /
//     1000 gives 9.99967e-42 before loading such a library and 0 after.
//     TestLoadingKeepsDenormals guards this.
//   - Not -ffinite-math-only: it folds isnan and x != x away, breaking NaN
//     propagation (torch's relu, max and isnan must see NaN). libmvec keeps
//     exp(NaN) = NaN, exp(inf) = inf, exp(-inf) = 0 in vector bodies (tested).
//   - Not -fassociative-math or -freciprocal-math: generated reductions ask for
//     reassociation where they want it (#pragma omp simd reduction(+:acc)),
//     and x/y stays a division, as in eager.
//
// glibc's <math.h> only declares the libmvec variants when __FAST_MATH__ is
// defined, which needs -ffinite-math-only, so Header declares the VectorMath
// functions itself with #pragma omp declare simd notinbranch. In a vectorised
// loop gcc then calls _ZGVdN8v_expf (avx2) or _ZGVeN16v_expf (avx512); -lm
// links libmvec (libm.so is a linker script naming it). -Wl,-z,defs turns an
// undefined symbol into a compile error instead of a dlopen failure, and
// -Werror=implicit-function-declaration stops an undeclared call from
// silently returning int. No <immintrin.h>: it costs 200-450 ms per compile
// (DESIGN D3).
//
// # Threads
//
// Parallel regions are OpenMP pragmas (-fopenmp), run by libgomp, torch's own
// OpenMP runtime, or by ptgo's pool when a unit includes PoolRuntime: it
// defines the entry points gcc calls for parallel regions with static
// schedules, barriers, single and atomic constructs, hidden, and
// -Wl,--as-needed drops libgomp from the library's dependencies. Its GOMP_parallel
// hands a region to the pool in kernels/dl/pool.c, installed through the
// unit's ptgo_set_parallel when dl opens it: workers spin 50 µs after a
// region, then sleep on a futex. libgomp's idle workers (torch loaded it, with
// its settings) spin about a millisecond beside the OpenBLAS threads of the
// next matmul; on this 2-core machine gelu_mlp at 2 threads took 9.9 ms that
// way against 2.6 ms at one thread. Inductor chooses the pool for graphs whose
// externs are all matrix products and libgomp for the others. A region
// submitted while the pool is busy (another thread's call) runs on its caller
// alone: kernels split work by omp_get_num_threads, so any count gives the
// same result. The pool is plain C and forgets its workers in a forked child
// (DESIGN D8).
//
// # Disk cache
//
// The directory is $PTGO_CACHE_DIR, else $XDG_CACHE_HOME/ptgo/kernels, else
// ~/.cache/ptgo/kernels, else (HOME unusable) /tmp/ptgo-<uid>/kernels. It is
// created 0700 and must be owned by this user and not group- or
// world-writable, and every directory above it must be owned by this user or
// root and, if writable by others, sticky (like /tmp). A directory failing
// these checks is refused with a warning that says how to fix it, and the
// process uses a fresh private temporary directory instead.
//
// An entry's key is the sha256 of the cache format and ABI version, the
// compiler identity (the version and target lines of `cc -v`, probed once per
// process), the ISA level, the full flag list and the source text, each
// length-prefixed. Layout, for key k:
//
//	<dir>/<k[:2]>/<k>.c    the source, kept for debugging; errors name it
//	<dir>/<k[:2]>/<k>.so   the library
//	<dir>/<k[:2]>/<k>.sum  "ptgo-kernel-sum v1", the .so's size and sha256
//
// Publishing is atomic: the source is written to a temporary file and
// renamed; the compiler writes the library to a temporary file in the same
// directory, which is fsynced and renamed over <k>.so; then the sidecar is
// written the same way. A reader verifies size and sha256 against the sidecar
// before dlopen, so a truncated or corrupted entry is detected, reported as a
// warning and rebuilt, never loaded; a library whose sidecar is not there yet
// (another process between its two renames, or one that crashed there) is
// rebuilt with a log line only. Two processes compiling one key both compile
// and both rename whole files; readers never see a partial one. The directory is not fsynced: after a crash an entry may be missing or
// mismatched, which the check turns into a rebuild.
//
// Hashing cost, measured: sha256 runs at ≈1.5 GB/s here (≈40 µs for a 58 KB
// library, ≈10 µs for a typical 16 KB one); a whole verify (sidecar read,
// file read, hash) is 0.1-0.25 ms for 58 KB on this loaded 2-core VM, below
// the dlopen it protects. CRC-32C would be ≈2.5 µs, but the difference is
// small next to the I/O, and sha256 names the exact bytes.
//
// A Compiler also keeps every library it loaded until it is released: the same
// key compiled again in the process returns the same *Library without touching
// the disk, and concurrent requests for one key wait for a single compile. The
// last Release of a library unloads it; compiling its key again then verifies
// and dlopens the cache entry anew.
//
// A warm start (every entry cached) never compiles: it probes `cc -v` once
// for the cache key, then verifies and dlopens. Stale ".tmp-*" files left by
// a killed compile are never loaded; they are not cleaned up either.
//
// # Logging
//
// Config.Logf receives "compiled X in N ms (cache miss; ...)" and "loaded X
// in N ms (cache hit, ...)" lines; nil prints nothing. Config.Warnf receives
// the missing compiler (once per process), a refused cache directory and
// damaged entries; nil writes them to stderr, and pybridge should route them
// to Python's logging.
//
// # Measured on this machine (AMD EPYC, 2 shared cores, gcc 12.2)
//
//   - Cold compile of a small fused kernel (GELU + exp, parallel simd loop),
//     to a published, verified entry: 90-117 ms (BenchmarkColdCompile).
//   - Warm start in a fresh process: New 2.4-3.4 ms (mostly the one `cc -v`
//     probe), then verify + dlopen of four kernels 1.1-1.7 ms
//     (BenchmarkWarmStartProcess).
//   - GELU over 4M floats, one thread: libmvec 5.8-7.1 ms, scalar libm
//     69-78 ms (BenchmarkGELU4M); the machine was loaded, the 12x ratio
//     matches DESIGN D3's 2.2 vs 26 ms.
//
// # Processes and threads
//
// DESIGN D8: Go must not run after fork() in the Python process. This package
// forks only through os/exec (the compiler), which is fine. libgomp keeps one
// thread pool per calling OS thread; Go may call Kernel.Call from different
// OS threads and so create several pools. The hot path (the C shim, on the
// Python thread) has one.
//
// The cgo code lives in kernels/dl; the rest of the package is cgo-free, and
// with CGO_ENABLED=0 it still builds and compiles (Build), while Compile
// returns an error saying loading needs cgo.
package kernels
