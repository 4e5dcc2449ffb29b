// Package aotautograd differentiates prims graphs ahead of time: Split(g, requiresGrad, opts)
// turns a prims graph into a forward graph and a backward graph, both prims graphs the
// inductor compiles, so training graphs run as compiled code (PT2's AOTAutograd, see
// shared/reference/PT2_INTERNALS.md §2). ToTorch maps prims graphs back to torch calls for the
// "aot_eager" backend (ptgo's autograd, torch's kernels).
//
// # What it takes
//
// A prims graph as primtorch/decomp.Decompose returns it (functionalized: no mutation but a
// final prims.copy_ epilogue) with the module's parameters lifted to placeholders, and one
// requires-grad flag per placeholder (only floating-point inputs may require grad). get_attr
// nodes are buffers and never require grad. Node metas must carry torch's requires_grad (as
// the decomposition computes it): a value whose meta does not require grad — detached, or
// computed under no_grad — stops gradients.
//
// # What it gives
//
// A *Graphs:
//   - Forward takes the prims graph's placeholders and returns a flat tuple: the user outputs
//     (the output structure flattened in order; NumOutputs of them), then the Saved values
//     (intermediates, or inputs returned as they are). It keeps the copy_ epilogue.
//   - Backward takes the saved values, then one tangent per user output that requires grad
//     (Tangents names which; a contiguous tensor of the output's shape and dtype), and returns
//     one entry per placeholder of the prims graph: its gradient, or None when it does not
//     require grad or no output depends on it (torch then leaves .grad alone, as eager does).
//     Gradients are dense: a view is returned only when it is non-overlapping and dense.
//   - Saved, Recomputed, SavedBytes and SaveAllBytes describe the partition; Joint is the joint
//     graph it cut.
//
// Outputs that are not floating point, or do not depend on an input that requires grad, get no
// tangent. A missing gradient for an output that has one must be passed as zeros (the runtime's
// torch.autograd.Function materializes them: set_materialize_grads is on by default). Outputs
// that alias inputs stay view chains of the input in Forward (decomp.OutputAliases finds them);
// their gradients flow back through the views to the input's. Inputs written by the epilogue
// (BatchNorm's running statistics in training) get no gradient through the write.
//
// Errors wrap primtorch.ErrUnsupported when the graph is valid but ptgo cannot differentiate it
// — ErrNotDifferentiable (a *NotDifferentiableError naming the node) when a gradient would flow
// through a prims.fallback (einsum, sorting, ...: torch-level calls; not the targets of
// fallbackDerivatives, max pooling); inputs that require grad and are written, or that the backward
// reads after the forward wrote them —: the caller runs the graph with torch. "ptgo BUG"
// errors are this package's own bugs.
//
// # Derivatives (derivatives.go: one table by OpID, formulas in d_*.go)
//
// Each core op's vector-Jacobian product is written in prims, so the backward is a prims
// graph; every core op has an entry, a formula or the reason it has none
// (TestDerivativeCoverage names any gap and the file to edit). The formulas are torch 1.13's
// (derivatives.yaml): sigmoid, tanh, exp, sqrt, rsqrt, reciprocal through their outputs; abs
// has zero gradient at 0; maximum/minimum of two tensors split the gradient evenly on ties (a
// NaN operand gets it all), against a number the tensor gets it where strictly beyond the
// number (relu's and hardtanh's rule); pow differentiates both operands with torch's zero
// cases; amax/amin split the gradient among ties; prod is exact with zeros (no division by
// the input); cumprod is torch's cumprod_backward (zeros masked as it masks them); views map
// the gradient back (expand sums over broadcast dims, slice and select pad with zeros,
// as_strided adds into a zero storage); gathers (gather, index_select, index) become
// accumulating index_puts into zeros; mm/bmm/addmm use products of the transposes (still
// externs); convolution is one prims.fallback of
// torch.ops.aten.convolution_backward (ConvolutionBackward), whose tuple result Split types
// itself (contiguous gradients of the inputs' shapes).
//
// # The joint graph and the partition
//
// The joint graph is the forward followed by the backward pass (reverse order, gradient
// contributions summed) and the forward's copy_ epilogue; its placeholders are the primals
// and the tangents. Every node is classified: tangent-dependent (must run in the backward),
// needed by a gradient output, needed by a user output or the epilogue. The partition then
// chooses the saved set.
//
// MinCut (the default) builds a flow network over the nodes a gradient output needs: each node
// n is two vertices n.in → n.out with capacity its size in bytes (infinite for views — saving
// a view keeps its base alive, so the base is saved —, tuples, tangent-dependent values and
// inputs the epilogue writes); u.out → n.in with infinite capacity for each input u of n; the
// source feeds the graph's inputs and the nodes that must not be recomputed (externs,
// fallbacks — random ops among them —, items of fallback tuples, and reductions and scans
// unless Options.RecomputeReductions); tangent-dependent nodes drain to the sink. Dinic's
// max-flow gives a minimum cut (the one nearest the source, deterministic): nodes whose in is
// on the source side and out on the sink side are saved; the other sink-side nodes are
// computed in the backward — recomputed when the forward computes them too (Recomputed).
// SaveAll saves every forward value a backward-only node reads (bases of views): the baseline
// SavedBytes is compared with. On the test graphs the min cut saves 52% (MLP with GELU, layer
// norm and cross-entropy), 76% (causal attention block) and 45% (CNN with BatchNorm in
// training) of save-all's bytes. The decision (bytes saved against save-all, recomputed nodes)
// and both graphs are logged on the aot_graphs channel, the joint graph at debug level.
//
// # Symbolic sizes (sym.go)
//
// A prims graph with size symbols (Graph.Shapes, symbolic TensorMeta.Sym: a ragged last batch,
// a dynamic sequence length) splits into a forward and a backward that are right for every
// value of the symbols. The formulas read sizes as SymInts (TensorMeta.SymSizes) and pass the
// sizes they build — the shape a broadcast gradient is summed to, the expand back over a
// reduction's dims, the view back to the input's shape, zeros of an input's shape, slice and
// select paddings, cat's offsets, prod's and cumprod's reshapes and iotas — as size expressions
// (Const{SymInt} through primtorch.SymValue; a static graph's constants stay int64, so static
// graphs split exactly as before). A number operand that is a size (div(sum, s0): mean's 1/N)
// stays a size expression in the backward (div(g, s0)). A decision that depends on a symbolic
// size (is this dim 1, is the scan longer than 256) is taken at the hints and guarded
// (SymInt.EqualHint/GeHint record the guard in the graph's ShapeEnv, as meta functions do);
// as_strided's gradient and pow/atan2 with a size as an operand specialise the symbols they read
// (SymInt.Specialize). reshape views only what is viewable at every size (a symbolically
// contiguous tensor, or view's meta function when it is symbolic) and clones otherwise; a
// gradient that is a view is returned as it is only when it is dense at every size. The metas of
// the emitted nodes are the registry's: an op whose meta function is not symbolic specialises its
// symbolic arguments (with guards), and the split is then right at the hints only, as the
// guards say.
//
// Both graphs keep the ShapeEnv; saved values, tangents and gradients carry symbolic metas. The
// backward's runtime gets each symbol's value from its inputs' sizes (fxgraph.SymbolBindings):
// when no saved value or tangent has a symbol the backward uses as a size, Split saves one more
// tensor that does — the first input with that size (no memory the caller does not hold
// already), else the smallest forward tensor with it —, so the calling convention stays saved
// tensors then tangents (no int inputs). A symbol no forward tensor has as a size (it reaches
// the graph only through an int input, or only inside derived sizes) makes Split refuse
// (ErrUnsupported). The partition weighs values by their bytes at the hints; any cut is right at
// every size. ToTorch keeps a symbolic graph symbolic (size expressions stay arguments; the
// sizes and strides it writes itself are the metas' symbolic ones): fxgraph.EncodeJSON writes
// the symbols' bindings and python/ptgo/fx_export.py reads each as a size() call on the
// placeholder that carries it, so aot_eager's torch graphs run at every size
// (TestToTorchSymbolic). A graph whose symbols are all specialised becomes static at the hints.
// The guards a split records (in the ShapeEnv) guard the compiled code: the driver installs
// them after the compile (bytecode.Capture.InstallCompileShapeGuards).
//
// # Invariants
//
//   - Forward and Backward are valid prims graphs (decomp.Verify, with Options.Check); node
//     names are the joint graph's, so a recomputed node has the same name in both graphs.
//   - The backward never recomputes an extern, a fallback or (by default) a reduction.
//   - Printing is deterministic: the same graph splits to the same text.
//
// # ToTorch (totorch.go: one table by OpID)
//
// ToTorch rewrites a prims graph into torch calls python/ptgo/fx_export.py can build a
// GraphModule from: torch.add, Tensor.expand, torch.ops.aten.slice.Tensor, ...; reductions
// with torch's dtype rules pinned (dtype=), one-dim-at-a-time reductions, iotas in float64,
// Python numbers torch does not accept as 0-d tensors of the op's dtype, fallbacks as their
// torch-level call. TestAOTEagerAgainstTorch runs every split test case that way.
//
// Adding a core op: its formula in a d_*.go file and its entry in derivatives
// (derivatives.go), its torch call in torchRules (totorch.go), cases in
// testdata/gen_cases.py, then go test ./aotautograd -update.
package aotautograd
