// Package ref is ptgo's reference interpreter for prims graphs (primtorch's core ops): the
// oracle the compiled backends are checked against. It favours being plainly correct over
// being fast (a 256x256 mm takes tens of milliseconds).
//
// # What it takes
//
// A prims graph (what primtorch/decomp.Decompose returns) and its inputs: Run(g, inputs, attrs)
// with one *Tensor per placeholder, in order, and the get_attr tensors by target. RunTorchLevel
// decomposes a torch-level graph first.
//
// # What it gives
//
// The output structure's tensors, flattened in order. prims.copy_ writes into the input or
// attr tensor it names (the epilogue of functionalized graphs), so callers see the mutation.
// Outputs that are inputs or views of them share their storage (Tensor.SameStorage).
//
// # Tensors
//
// Tensor is strided with a storage shared by views. Floating dtypes are stored as float64
// rounded to the dtype on every store (float16 and bfloat16 with round-to-nearest-even, as
// torch converts); integral dtypes and bool as int64 wrapped to the dtype. Complex tensors are
// not supported (core ops are real).
//
// # Semantics
//
// Each core op is evaluated exactly as the prims contract states (primtorch/doc_prims.go):
// elementwise ops compute in float64 (or int64) and round on store; sums, products and scans
// accumulate in float64; externs (mm, bmm, addmm, convolution) are naive loops accumulating in
// float64; views are the exact geometry primtorch's meta functions compute. Results take the
// layout of their node's meta when it is dense. Every node's meta is checked (dtype and shape;
// strides and offset for views). prims.fallback needs torch: Run returns an error wrapping
// ErrFallback. Integer division by zero is an error, as in torch. Where torch 1.13's kernels
// leave a result to the x86 instructions C compiles to, ref gives what they give: a float
// converted to int64 that is NaN or out of range is the int64 minimum, to int32 (and through
// int32 to int16, int8, uint8) the int32 minimum; shift counts use their low 6 bits (int64) or
// 5 bits (narrower dtypes). Externs add every product, so 0·inf is NaN as in BLAS; integral
// matmuls are exact in int64.
//
// The evaluation of each op is one entry of the table evals (eval.go) keyed by primtorch.OpID;
// TestEvalCoverage fails naming any core op without one.
package ref
