// Package decomp lowers torch-level graphs to graphs of core ops ("prims", see primtorch's
// doc_prims.go for their contract): Decompose(g, opts) → prims graph.
//
// # What it takes
//
// A torch-level fxgraph.Graph as the capture stage records it: placeholders, get_attr
// parameters and buffers, call_function nodes by Python path (torch.add,
// torch.nn.functional.linear, operator.add on tensors and Python numbers), call_method nodes
// (Tensor methods: view, add_), multi-output calls followed by operator.getitem, and
// torch._C._set_grad_enabled calls (dropped: the metas already say what requires grad). Every
// call's meta is what the op registry computes.
//
// # What it gives
//
// A new graph with the same placeholders and get_attrs (same names) and the same outputs, made
// of prims calls only, each with its meta (Verify checks them). Per op, one decomposition in the
// table decomps (table.go, keyed by primtorch.OpID; the functions live in d_<group>.go):
//   - type promotion and broadcasting made explicit (prims.convert_element_type, prims.expand),
//     with the registry's promotion kinds; Python numbers become number arguments of the
//     computation dtype (x_int + 2.5 converts x to float32 first); float16/bfloat16 compute in
//     float32 and round at the end, as torch's kernels do (ew.go);
//   - views stay views (view prims); reshape is a view when the input allows it, else
//     prims.clone + prims.view; contiguous is the input itself when it already is;
//   - composites with torch's numerics: softmax subtracts the max, log_softmax is
//     (x - max) - log(sum(exp(x - max))), norms use biased variance and rsqrt(var + eps), sums
//     of integers accumulate in int64, means and variances of float16/bfloat16 in float32;
//   - matmul in every rank case, linear, addmm, bmm become prims.mm / prims.bmm / prims.addmm
//     around views (a batched operand that must be copied keeps its matrices' orientation: a
//     transposed one is copied row by row and bmm takes the transposed view); convolutions
//     prims.convolution;
//   - the result of each call gets the layout eager gives it (strides of its meta) when that
//     layout is dense.
//
// torch's fused inference kernels that nn modules call in eval mode without autograd —
// torch._transformer_encoder_layer_fwd (nn.TransformerEncoderLayer) and
// torch._native_multi_head_attention (nn.MultiheadAttention) — are not registry ops (the capture
// stage records them with the metas of torch's meta kernels). fastPathDecomps (d_fastpath.go),
// keyed by target, binds their arguments by torch 1.13's schemas and decomposes them into the
// qkv matrix product, two bmm and the projections, with the bias, scaling, softmax, residual and
// layer-norm work as prims around them, following torch's CPU kernels step by step (the softmax
// multiplies by the reciprocal of the sum, as torch's last-dim kernel does). Masks, cross
// attention and other dtypes than float32/float64 stay fallbacks. max_pool2d over windows that
// tile the input is a view and an amax (which the C backend fuses with the BatchNorm/ReLU before
// it); in graphs autograd sees it is torch's kernel with every argument spelled out
// (primtorch.FallbackMaxPool2dWithIndices, whose values' derivative aotautograd has: amax would share a gradient
// among tied maxima). Dropout in training is x times torch's noise (dDropout).
//
// Calls without a decomposition (fallbackOps in table.go: random ops, pooling, sorting,
// data-dependent ops, ...; argument combinations a decomposition declines with errFallback;
// targets the registry does not know; complex or non-CPU tensors) stay as prims.fallback(target, args..., **kwargs): the torch-level call, run by torch, so
// random numbers come from torch's generator exactly as eager draws them. A tuple result of a
// fallback is read with operator.getitem — the one non-prims target of a prims graph.
//
// # Functionalization (state.go)
//
// The prims graph has no mutation but a final epilogue. In-place ops (add_, relu_,
// F.relu(inplace=True)), out=, setitem (x[i] = v), copy_, fill_ and the running statistics of
// batch_norm in training compute the written tensor's new value out of place; later reads see it.
// Writing through a view of an intermediate scatters the new value into its base
// (prims.index_put at the positions the view selects) and later reads of other views of that
// base replay their view chains on its new value. A graph input (placeholder or get_attr buffer)
// that is written gets prims.copy_(input, new value) at the end of the graph, after every
// other call; the epilogue reads all new values before writing any.
//
// Decompose returns an error wrapping primtorch.ErrUnsupported, naming the op and the user's
// line (node.Where), for writes through a view of a graph input, for graphs returning (a view
// of) an input they write, and for writes to tensors a fallback aliases: the caller then runs
// the torch-level graph as it is.
//
// # Outputs that alias inputs
//
// An output that is a graph input, or a view of one, in eager stays exactly that in the prims
// graph: the input's node itself, or a chain of view prims starting at the input's placeholder
// or get_attr node. OutputAliases lists them. A backend must return the input object itself,
// or a view of the input's storage with the output node's meta (torch.as_strided(input,
// shape, strides, storage offset)), never a copy. Any other output is a fresh tensor: where a
// decomposition's value would be (a view of) an input without aliasing it in eager, Decompose
// inserts a prims.clone.
//
// # Symbolic sizes (symbolic.go)
//
// A graph with size symbols (g.Shapes, symbolic metas) decomposes into a prims graph with
// symbolic metas and the same g.Shapes: the decompositions listed in symbolicDecompFns read sizes
// as SymInts and the builders emit them as sym(...) constants (a mean over a symbolic dim
// divides by sym("s0")). Any other decomposition reads concrete sizes: its call is specialised
// first (each symbol it mentions guarded equal to its hint), so no hint reaches the graph
// without a guard; checkSymbolicResult catches a listed decomposition that would. The property
// test (symbolic_test.go) checks, for every recorded case, that the symbolic prims graph
// evaluated at other sizes allowed by the guards is the static decomposition at those sizes.
//
// # Invariants
//
//   - Every torch-level op has an entry in decomps or a reviewed reason in fallbackOps
//     (TestDecompCoverage); Status reports "decomposed", "fallback" or "n/a", and
//     primtorch.Op.DecompStatus shows it in primtorch.Listing.
//   - Decompose never panics: a decomposition that emits an invalid prims call is reported as a
//     "ptgo BUG" error.
//   - Printing is deterministic: the same graph decomposes to the same text.
//
// Adding a decomposition: its function in the d_*.go file of the op's group, its entry in
// decomps (table.go, removing the op from fallbackOps), cases in testdata/gen_cases.py, then
// go test ./primtorch/decomp -update and go test ./primtorch -run TestListing -update.
package decomp
