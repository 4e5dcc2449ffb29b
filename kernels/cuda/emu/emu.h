/* ptgo's CUDA emulator: runs generated CUDA C on the CPU, for tests on machines without a GPU
 * (package ptgo/kernels/cuda/emu). It replaces the CUDA prelude (inductor.CUDAHeader) of a generated
 * unit; the kernels' text is compiled unchanged by g++ as C++17.
 *
 * A launch runs the blocks one after the other; the threads of a block are fibers (ucontext) on
 * one OS thread, switched at the barriers the generated code uses: __syncthreads (every live
 * thread of the block), __syncwarp and the shuffles of ptgo_shfl (every live thread of the warp).
 * A kernel with no barrier runs each thread to completion in turn. __shared__ variables are
 * static: shared by the block's fibers, and blocks run one at a time. Threads that returned
 * early do not take part in later barriers, as on sm_70 and later.
 *
 * What it checks: thread and lane indexing, grid-stride and lane-strided loops, vector loads and
 * stores (alignment included: a misaligned vector access traps), shuffle butterflies, the
 * shared-memory combine, barrier placement (a read of another thread's store before the barrier
 * that orders them sees the poisoned value); what it does not: the GPU's memory model beyond
 * barriers, its math library's rounding (host libm), timing, occupancy, register and
 * shared-memory limits (NVRTC's compile of the same text checks those).
 */
#include <ucontext.h>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static

static inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
static inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }

#undef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#undef NAN
#define NAN __int_as_float(0x7fc00000)

struct ptgo_dim3 { unsigned x, y, z; };

enum { PTGO_RUN, PTGO_WAIT_BLOCK, PTGO_WAIT_WARP, PTGO_DONE };

struct ptgo_fiber {
    ucontext_t ctx;
    ptgo_dim3 tid;
    int state;
    char *stack;
};

struct ptgo_emu_block {
    std::vector<ptgo_fiber> f;
    ucontext_t sched;
    int cur = 0;
    bool fibers = false;
    ptgo_dim3 bid, bdim, gdim;
    void (*body)(void **);
    void **args;
    uint64_t slots[1024];
};

static thread_local ptgo_emu_block *ptgo_B;

#define threadIdx (ptgo_B->f[ptgo_B->cur].tid)
#define blockIdx (ptgo_B->bid)
#define blockDim (ptgo_B->bdim)
#define gridDim (ptgo_B->gdim)

static inline void ptgo_emu_wait(int kind) {
    ptgo_emu_block *b = ptgo_B;
    if (!b->fibers) {
        fprintf(stderr, "ptgo cuda emulator: a barrier in a kernel run without fibers\n");
        abort();
    }
    ptgo_fiber &me = b->f[b->cur];
    me.state = kind;
    swapcontext(&me.ctx, &b->sched);
}

static inline void __syncthreads() { ptgo_emu_wait(PTGO_WAIT_BLOCK); }
static inline void __syncwarp() { ptgo_emu_wait(PTGO_WAIT_WARP); }

template <typename T> static inline T ptgo_shfl(T v, int o) {
    static_assert(sizeof(T) <= 8, "shuffle of a wide type");
    ptgo_emu_block *b = ptgo_B;
    int t = b->cur;
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof(T));
    b->slots[t] = bits;
    ptgo_emu_wait(PTGO_WAIT_WARP);
    int partner = t ^ o;
    if (partner >= (int)b->f.size() || b->f[partner].state == PTGO_DONE) {
        fprintf(stderr, "ptgo cuda emulator: shuffle with thread %d, which is not running\n", partner);
        abort();
    }
    bits = b->slots[partner];
    ptgo_emu_wait(PTGO_WAIT_WARP);
    T r;
    memcpy(&r, &bits, sizeof(T));
    return r;
}

static inline int atomicOr(int *p, int v) { int old = *p; *p |= v; return old; }

/* float16 storage: IEEE binary16 bits, converted with round to nearest even as PTX cvt.rn does. */
static inline unsigned short ptgo_emu_f2h(float f) {
    uint32_t u = __float_as_uint(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    int exp = (int)((u >> 23) & 0xff);
    uint32_t man = u & 0x7fffffu;
    if (exp == 0xff) return (unsigned short)(sign | (man ? 0x7e00u : 0x7c00u));
    int e = exp - 127;
    if (e > 15) return (unsigned short)(sign | 0x7c00u);
    if (e >= -14) {
        uint32_t h = sign | ((uint32_t)(e + 15) << 10) | (man >> 13);
        uint32_t rest = man & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
        return (unsigned short)h;
    }
    if (e >= -25) {
        man |= 0x800000u;
        int shift = -14 - e + 13;
        uint32_t m = man >> shift, rest = man & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rest > half || (rest == half && (m & 1u))) m++;
        return (unsigned short)(sign | m);
    }
    return (unsigned short)sign;
}

static inline float ptgo_emu_h2f(unsigned short h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float f = (float)man / 1024.0f / 16384.0f;
        return sign ? -f : f;
    }
    return __uint_as_float(sign | ((uint32_t)(exp - 15 + 127) << 23) | (man << 13));
}

struct ptgo_half {
    unsigned short x;
    ptgo_half() {}
    ptgo_half(float f) : x(ptgo_emu_f2h(f)) {}
    template <typename T> ptgo_half(T v) : ptgo_half((float)v) {}
    operator float() const { return ptgo_emu_h2f(x); }
};
#define _Float16 ptgo_half
template <typename T, int N> struct alignas(sizeof(T) * N) ptgo_vec { T v[N]; };

/* A misaligned vector access is a fault on a GPU: trap here too. */
static inline void ptgo_emu_align(const void *p, size_t a) {
    if ((uintptr_t)p % a != 0) {
        fprintf(stderr, "ptgo cuda emulator: misaligned vector access %p (alignment %zu)\n", p, a);
        abort();
    }
}
template <typename V, typename T> static inline V ptgo_vld(const T *p) {
    ptgo_emu_align(p, alignof(V));
    V v;
    memcpy(&v, p, sizeof(V));
    return v;
}
template <typename V, typename T> static inline void ptgo_vst(T *p, const V &v) {
    ptgo_emu_align(p, alignof(V));
    memcpy(p, &v, sizeof(V));
}

static void ptgo_emu_trampoline() {
    ptgo_emu_block *b = ptgo_B;
    b->body(b->args);
    b->f[b->cur].state = PTGO_DONE;
    swapcontext(&b->f[b->cur].ctx, &b->sched);
}

/* ptgo_emu_run launches body(args) on grid × block threads. */
static void ptgo_emu_run(void (*body)(void **), void **args, ptgo_dim3 grid, ptgo_dim3 block, bool fibers) {
    static thread_local std::vector<char *> stacks;
    const size_t stack_size = 128 * 1024;
    ptgo_emu_block b;
    b.body = body;
    b.args = args;
    b.gdim = grid;
    b.bdim = block;
    b.fibers = fibers;
    int n = (int)(block.x * block.y * block.z);
    b.f.resize(n);
    ptgo_B = &b;
    while ((int)stacks.size() < n && fibers) stacks.push_back((char *)malloc(stack_size));
    for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
    for (unsigned bx = 0; bx < grid.x; bx++) {
        b.bid = {bx, by, bz};
        for (int t = 0; t < n; t++) {
            b.f[t].tid = {(unsigned)t % block.x, ((unsigned)t / block.x) % block.y, (unsigned)t / (block.x * block.y)};
            b.f[t].state = PTGO_RUN;
        }
        if (!fibers) {
            for (int t = 0; t < n; t++) {
                b.cur = t;
                body(args);
            }
            continue;
        }
        for (int t = 0; t < n; t++) {
            getcontext(&b.f[t].ctx);
            b.f[t].ctx.uc_stack.ss_sp = stacks[t];
            b.f[t].ctx.uc_stack.ss_size = stack_size;
            b.f[t].ctx.uc_link = nullptr;
            makecontext(&b.f[t].ctx, ptgo_emu_trampoline, 0);
        }
        for (;;) {
            bool ran = false;
            for (int t = 0; t < n; t++) {
                if (b.f[t].state != PTGO_RUN) continue;
                b.cur = t;
                ran = true;
                swapcontext(&b.sched, &b.f[t].ctx);
            }
            if (ran) continue;
            bool live = false, released = false;
            for (int w = 0; w < n; w += 32) {
                bool all = true, any = false;
                for (int t = w; t < w + 32 && t < n; t++) {
                    if (b.f[t].state == PTGO_DONE) continue;
                    any = true;
                    if (b.f[t].state != PTGO_WAIT_WARP) all = false;
                }
                if (any && all) {
                    for (int t = w; t < w + 32 && t < n; t++)
                        if (b.f[t].state == PTGO_WAIT_WARP) b.f[t].state = PTGO_RUN;
                    released = true;
                }
                live = live || any;
            }
            if (!live) break;
            if (released) continue;
            bool all_block = true;
            for (int t = 0; t < n; t++)
                if (b.f[t].state != PTGO_DONE && b.f[t].state != PTGO_WAIT_BLOCK) all_block = false;
            if (!all_block) {
                fprintf(stderr, "ptgo cuda emulator: deadlock (threads wait at different barriers)\n");
                abort();
            }
            for (int t = 0; t < n; t++)
                if (b.f[t].state == PTGO_WAIT_BLOCK) b.f[t].state = PTGO_RUN;
        }
    }
    ptgo_B = nullptr;
}

/* The entry the Go test calls for each kernel (kernels ABI): ints = grid[3], block[3], shared,
 * (unused), nargs, args...; fibers: the kernel has barriers. */
#define PTGO_EMU_ENTRY(name, body, fibers)                                                           \
    extern "C" __attribute__((visibility("default"))) int ptgo_emu_##name(void *const *ptrs, const int64_t *ints, \
                                                                          const double *floats, int nthreads) { \
        (void)ptrs; (void)floats; (void)nthreads;                                                    \
        void *args[64];                                                                             \
        if (ints[8] > 64) return 3; /* more parameters than the entry passes */                     \
        for (int64_t i = 0; i < ints[8]; i++) args[i] = (void *)(uintptr_t)ints[9 + i];              \
        ptgo_emu_run(body, args, {(unsigned)ints[0], (unsigned)ints[1], (unsigned)ints[2]},          \
                     {(unsigned)ints[3], (unsigned)ints[4], (unsigned)ints[5]}, fibers);             \
        return 0;                                                                                   \
    }
