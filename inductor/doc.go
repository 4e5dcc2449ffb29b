// Package inductor compiles prims graphs to fused C kernels and a launch plan: ptgo's
// TorchInductor for the CPU.
//
// # What it takes
//
// A prims graph: an fxgraph.Graph whose placeholders are the graph inputs (tensors with their
// exact metas) and whose call_function nodes have targets "prims.<name>" with the semantics of
// the core-op contract (primtorch/doc_prims.go): elementwise ops over identical shapes and one
// dtype (Python numbers standing for 0-d values), reductions with explicit dims, scans, views,
// copies and data movement (clone, cat, constant_pad_nd, gather, index_select, index, scatter,
// index_put), factories (full, iota), externs (mm, bmm, addmm, convolution, fallback), and
// copy_ as the graph's mutation epilogue. Every node carries its *primtorch.TensorMeta (or a
// tuple of them); a node's meta layout is the layout its buffer gets.
//
// # What it gives
//
// Compile(g, opts) runs the pipeline and returns a *Compiled with every stage:
//
//	Lower     prims graph → loop IR (Graph): one Buffer per computing node, views folded into
//	          the indices of loads (lower*.go; the one table is lowerings.go)
//	Inline    vertical fusion: pointwise bodies substituted into their readers (inline.go)
//	Fuse      kernels: nodes sharing an outer loop nest, reductions with their prologue and
//	          epilogue, externs between (fuse.go) → Schedule
//	Generate  one C translation unit (kernels.Header first), one PTGO_KERNEL per kernel
//	          (codegen.go, cemit.go; ops.go renders each op) → Source
//	kernels.Compile  gcc into the content-addressed cache, dlopen → *kernels.Library
//	Plan      the launch plan: buffers, the arena of temporaries, kernel and extern calls, views,
//	          frees (plan.go; program.go documents the JSON schema) → Program
//
// Execute runs a Program over Go-owned memory (tests; mm/bmm/addmm externs in Go); the CPython
// extension runs the same Program over at::Tensors (pybridge/fast/ptgo_runtime.cpp; its
// Graph.profile(inputs, reps) times every plan step, and bench/profile_steps.py prints that next to
// eager's per-op times). Every IR prints itself deterministically
// (Graph.String, Schedule.String, Program.String, the C); Options.DebugDir writes each stage,
// logs.OutputCode gets the C, logs.CompileTimes the stage times, logs.Fusion every fusion
// decision with its reason ("fusing buf3 into buf5: same ranges [4,16]", "not fusing buf3 into
// buf5: ranges differ [4,16] vs [64]"), logs.PerfHints ops that run as extern calls because
// they have no lowering.
//
// # The loop IR (ir.go, expr.go, value.go)
//
// A Buffer has a dtype, sizes, a layout (strides and storage offset, in elements) and a
// definition: InputNode, Pointwise (Ranges and a Body value at index (i0, i1, ...)), Reduction
// (Ranges, ReduceRanges, a ReduceKind, a Body over (i..., r...)), Scan, ScatterNode, Extern, or
// AliasNode (a strided view of another buffer's storage: outputs and extern arguments that are
// views). Bodies are DAGs of Values — load(buffer, logical index), constants, index
// expressions as values, ops of the ops table, casts, masked (lazy where) — interned per Graph,
// so equal subexpressions are one value. Index expressions (Expr) are affine sums of index
// variables with integer coefficients, plus floor division and modulo by constants (reshapes
// of non-contiguous layouts) and indirect atoms (indices read from tensors); simplification
// with variable ranges makes a reshape that only regroups contiguous dims free.
//
// Invariants (Verify, run after every pass with Options.Check): buffers appear in a valid
// execution order; a node's ranges are its buffer's sizes; a body loads only buffers defined
// before it, with one index per dim, using only its node's variables; alias bases are storage
// roots; copy_ and scatter buffers write into the storage of Mutates and nothing else.
//
// # Fusion
//
// Inline substitutes a pointwise buffer into its readers when cost(body)·(R−1) ≤
// InlineMaxRecompute, R being how often its elements would be computed (1 for one reader at the
// same size, the broadcast factor for a reader of an expanded view). Reductions, scans and
// externs are never recomputed; graph outputs, extern inputs and aliased buffers stay stored.
// Fuse then groups the remaining nodes into kernels: a kernel is a loop nest over Outer ranges,
// inside which each member runs over its own inner ranges, so a row softmax is one kernel (a
// local max, a local exp-sum, the normalizing loop) and layer norm, RMS norm and mean/var
// chains likewise. A node joins a kernel if its ranges extend (or prefix) the kernel's, it reads
// the kernel's buffers only at its own outer index, no other step (an extern) would have to run
// both before and after the kernel, and the kernel stays under MaxKernelNodes. A member with one
// value per outer iteration that nothing outside reads is Local: a C variable, never stored.
// mm → +bias → gelu is the extern and one kernel. When a member stores, at every position of a
// row, a value computed from a row reduction's summand (softmax: exp(x − max)/sum after summing
// exp(x − max)), the reduction also stores each summand there and the member loads it back
// instead of computing it again (planSummandReuse: one exp per element, as torch's softmax
// kernel does; gpt_block's masked softmax kernel 172 → 136 µs). A reduction whose output dim is contiguous
// while its reduced dim is strided (a sum over a middle dim) keeps that output dim as an inner
// loop and accumulates a block of ColumnBlock outputs at once, vectorized along it.
//
// # Memory plan
//
// Temporaries live in the graph's arena: one block the runtime allocates on a graph's first call
// and keeps, each temporary at a byte offset (first fit among the temporaries live at the same
// time, 64-byte aligned). After the first call a graph allocates only its outputs: no allocator
// calls, no page faults for temporaries (a fresh 1 MiB buffer costs 256 faults, and this VM
// took 500-1500 of them per call on gpt_block and rmsnorm_silu before; eager torch still takes
// 100-1000). The price is that a graph keeps its temporaries' peak memory between calls, as
// Inductor's CUDA-graph mode does. Outputs (the caller owns them) and buffers a fallback extern
// sees (torch code may keep or alias them) are allocated per call. mm, bmm and addmm write
// into their planned buffer through torch's out= variants (PStep.Into), so their results are
// neither allocated nor copied into the plan's layout. A kernel that reads no graph input — a
// constant subgraph such as the causal mask built from iota — is Once: the runtime runs it on
// the call that finds the arena fresh, and its results stay there, written by nothing else.
// A call that finds the arena in use (re-entrant, or another thread while a fallback extern
// runs Python) gets a fresh arena of its own.
//
// # Generated C
//
// Kernels use the kernels ABI, int fn(void *const *ptrs, const int64_t *ints, const double
// *floats, int nthreads); shapes and strides are constants in a static graph (see Symbolic
// sizes for the others: ints then holds the symbol values), ptrs are
// storage starts (reads first, then writes, documented in each kernel's header comment), ints
// and floats are empty, and the result is 0, or 1 when an indirect index was out of range (the
// access then reads element 0). Adjacent loops that every index uses as one are merged (a
// contiguous pointwise kernel is one flat loop). `#pragma omp parallel for
// num_threads(nthreads)` goes on the outer loop nest when it has at least ParallelMinChunks
// iterations, else on the loops inside each member (reductions with an OpenMP reduction
// clause), and only when the kernel evaluates at least ParallelMinWork elements; `#pragma omp
// simd` goes on innermost loops whose stores are contiguous and on reduction loops. Math goes
// through libmvec (expf, tanhf, erff, ... declared simd by kernels.Header), except a float exp
// whose operand is computed from an infinite constant (a masked softmax's exp(where(mask, -inf,
// x) - max)): that one is an inline branch-free helper (ops.go: exp_float, 1.01 ulp), because
// glibc's vector expf falls back to scalar calls for a whole vector when one lane is out of
// range, which made gpt_block's causally masked softmax 2.3x slower. Semantics are torch
// 1.13's (ops.go; checked against torch by TestOpsAgainstTorch): floating sums, products and
// scans accumulate in double and integer ones in int64; amax/amin propagate NaN; argmax/argmin
// return the first extreme, NaN counting as the extreme; integer arithmetic wraps; integer
// division by zero gives 0 where torch raises. float32, float64, int8-64, uint8 and bool are
// computed natively; float16 (_Float16) and bfloat16 (bits) are stored as such and computed in
// float. Complex tensors are refused (the graph runs eagerly).
//
// # Measured on this machine (AMD EPYC, 2 vCPUs, gcc 12.2, avx2)
//
//   - A fused 10-op pointwise chain over 4M float32 (chain10 in bench_test.go) runs at 92-97% of
//     the copy kernel's bandwidth on one thread (BenchmarkChainVsCopy alternates the two;
//     ~19 GB/s; the target was ≥ 70%). With transcendentals (tanh-GELU plus a sigmoid, gelu10)
//     it is compute-bound: ~12.5 ms on one thread.
//   - Compiling a transformer-block-like graph (layer norm, matmul + bias + GELU + residual,
//     softmax: 31 prims nodes, 2 kernels + 1 extern): the Go stages take ~1 ms, cold end to end
//     (gcc included) 140-170 ms (BenchmarkCompile).
//   - The arena (Memory plan): gpt_block went from ~1000 page faults per call to none, and the
//     plan's allocation steps from 2-5 µs each to a tensor copy.
//   - exp_float: 0.58 ns per element against libmvec's 3.2-6.5 with half the lanes -inf
//     (gpt_block's causally masked softmax kernel 400 → 172 µs); on ordinary inputs libmvec stays,
//     faster inside real kernels (a softmax kernel 56 vs 73 µs).
//   - Threads (usePool): gelu_mlp at 2 threads took 9.9 ms with its kernels on libgomp, whose
//     idle workers spin beside OpenBLAS's threads, and 3.1 ms on ptgo's pool; small_cnn, whose
//     convolutions run on libgomp, stays there (12.7 ms on a long-spinning pool, 1.3 ms on
//     libgomp).
//   - addmm as mm plus a fused bias add: torch's addmm at 2 threads took 3.4 ms against 1.3 ms
//     for the mm alone (the bias copy wakes libgomp's workers).
//   - ParallelMinWork = 64K elements: in a plain C process a cheap pointwise kernel on 2 threads
//     breaks even with one thread at 16K elements and is 1.65x faster at 64K
//     (testdata/bench/omp_threshold.c). Inside a Go test process multi-threaded kernels are
//     distorted (Go runtime threads compete with the OpenMP workers for the 2 vCPUs); the C shim
//     calling kernels from the Python thread is not.
//
// # Symbolic sizes (dynamic shapes; symbolic.go)
//
// A prims graph whose metas hold size symbols (primtorch.SymInt over fxgraph.Graph.Shapes;
// IsSymbolic) compiles into one library and one plan for every value of the symbols (each ≥ 2).
// Sizes, ranges, strides and offsets in the loop IR are Sym (primtorch.SymInt; constants in a
// static graph, which therefore compiles exactly as before: byte-identical C and plans). Index
// expressions carry symbolic coefficients as atoms (AtomVar with a symbol monomial, i0·s1, and
// AtomSym, a symbolic constant); a simplification that needs a range only uses static bounds (a
// symbolic range is unknown), so a symbolic index is never simplified on a hint. Kernels read
// the symbol values from ints (`const int64_t s0 = ints[0];`) for loop bounds, indices and size
// values (a mean's divisor sym("s0"): VSize); a kernel whose work is symbolic runs its parallel
// loops when the work reaches ParallelMinWork at run time and a serial copy of them otherwise
// (the loop shapes are planned as if each symbol were at least 1024). The plan lists where each
// symbol is read (Program.Symbols: a dim of a tensor input, its storage offset (a batch sliced
// from a bigger tensor), or a Python int argument the call passes among the tensors,
// Program.IntInputs), and buffers whose layout depends on the
// symbols carry it as polynomials (BufSpec.SymSizes, SymStrides, ...), evaluated per call by
// Execute and by the C++ runtime, which also checks symbolic inputs against them. Symbolic
// temporaries live in the arena's dynamic part, a second block kept across calls and grown when
// a call needs more, placed for each call's sizes (PlaceDynamic: first fit, as the static part
// is placed at compile time; the runtime keeps the placement and the views while the symbol
// values repeat); symbolic outputs are allocated per call (recycling the previous call's
// storage of the same size). mm/bmm/addmm write into symbolic buffers as into static ones;
// the other externs (convolution, fallbacks run by torch: dropout, einsum, ...) bind results whose
// layouts are their metas' symbolic ones (copied into them when torch returns another layout),
// and their size arguments are size expressions evaluated per call ({"sym": ...}); a frozen
// graph's packed convolution of an input with a symbolic batch keeps a oneDNN context per batch
// size (the runtime's, the most recent 8), and a call whose input is not contiguous runs torch's
// convolution. Cat and constant_pad_nd along a symbolic dim read through masks with
// symbolic bounds; a slice of a symbolic dim may start past 2 or from the end when the meta's
// size says it stays in range (x[:, 3:], x[:, -3:]), and a slice may start at a size expression
// (data[s0:s0+16]). An index term of any kind may carry a symbolic coefficient ((i0 // 4)*s1 when
// heads merge into a batch over a symbolic length, ind*s0), and an indirect index may index a
// symbolic dim (gather, index, index_select, scatter along the length: it wraps and checks
// against the size variable, so an out-of-range index still reruns with torch for eager's
// error). A symbol the trace specialised is its hint (the graph is static in it).
//
// What needs a static size is refused with a *SymbolicUnsupported error (IsSymbolicUnsupported),
// never compiled for the hints: a target outside symbolicTargets (ops with no lowering such as
// as_strided), a symbolic dim sliced from a start the meta does not bound, or selected, a view
// that splits or merges a symbolic dim with another dim (a division or modulo by a symbol)
// unless the dims are dense in storage (the view is then an alias with merged strides), argmax
// over several dims one of which is symbolic, and CUDA (CompileCUDA). The
// pipeline then compiles the graph with static shapes.
//
// # Not done
//
// Symbolic: division and modulo by a symbol in indices (views regrouping a symbolic dim with
// another one are compiled only when those dims are dense in storage: an alias), the ops
// listed above. CUDA code generation, convolution and fallback
// externs in the Go executor (the torch runtime runs them), scans fused with other nodes,
// loop tiling for transposes, and reductions combined across kernels (a split reduction of one
// huge row).
package inductor
