package primtorch

// # Core ops ("prims")
//
// Package primtorch/decomp lowers torch-level graphs to graphs of core ops; the backends
// (inductor, and the Go reference interpreter primtorch/ref that serves as their oracle)
// implement them. Core ops are registry rows like any op (ops_prims.go): OpIDs OpPrim*,
// names "prims::add", targets "prims.add", kinds, schemas and meta functions (meta_prims.go).
// Op.IsPrim tells them from torch-level ops. Tensors are strided, on the CPU.
//
// Elementwise (KindPointwise). Tensor operands have IDENTICAL shapes (broadcast with
// prims.expand) and one dtype (convert with prims.convert_element_type); any tensor operand
// may instead be a Python number (Const int64/float64/bool) meaning a 0-d value of the op's
// dtype (a float only for floating dtypes). At least one operand is a tensor. The result has
// the operands' shape; its layout is the node's meta (the meta function gives TensorIterator's
// layout over the tensor operands; a node may carry any other non-overlapping dense layout).
//   - unary, same dtype out: abs, neg, exp, exp2, expm1, log, log1p, log2, log10, sqrt, rsqrt,
//     sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, sigmoid, erf, erfc, reciprocal
//     (floating dtypes); floor, ceil, round (half to even), trunc (identity on integers), abs,
//     neg (numeric dtypes); sign (any; sign(NaN) = 0 as torch); bitwise_not (integers and bool:
//     logical not for bool). Bool out: logical_not, isnan, isinf, isfinite.
//   - check(cond): cond a bool tensor; the result is cond. Where an element is true the run is
//     refused (it raises; a compiled graph is then run by torch): the checks decompositions
//     emit where Python would raise for a float the graph computes (decomp/pyfloat.go). Kept
//     when nothing reads it, and computed before any write to an input or random draw.
//   - binary, same dtype out: add, sub, mul (add and mul of bools are or and and), div (true
//     division, floating dtypes only), floordiv (floor(a/b) for floats as torch computes it,
//     Python's floor division for integers), remainder (sign of the divisor, as Python and torch),
//     fmod (sign of the dividend, as C), pow (integers: exact integer power), maximum, minimum
//     (NaN propagates), atan2, hypot, copysign (floating), bitwise_and/or/xor (integers and
//     bool), shift_left, shift_right (integers; arithmetic right shift). Bool out: eq, ne, lt,
//     le, gt, ge, logical_and, logical_or, logical_xor. Integer division by zero is an error.
//   - where(cond, a, b): cond a bool tensor (or a bool constant) of the same shape; a and b of
//     one dtype, the result's.
//   - convert_element_type(x, dtype): torch's .to(dtype): floats to integers truncate toward
//     zero, anything to bool is != 0, to float16/bfloat16 rounds to nearest even.
//
// Reductions (KindReduction): sum, prod, amax, amin, any, all, argmax, argmin with
// (x, dims: list of int, keepdim: bool). dims [] reduces every dim (as torch); decompositions
// always list the dims, non-negative and sorted. The result dtype is the input's, except
// argmax/argmin (int64) and any/all (bool); sum and prod accumulate in the input dtype (the
// decomposition converts integers to int64 and float16/bfloat16 to float32 first, as torch
// does). amax/amin propagate NaN; argmax/argmin reduce exactly one dim and return the first
// index of the extreme value, a NaN counting as the extreme. The layout is contiguous.
//
// Scans: cumsum, cumprod(x, dim), in the input dtype, contiguous.
//
// Views (KindView, no data movement, the result aliases the input; the node's meta is the
// exact view: shape, strides and storage offset):
//   - view(x, shape): every size given (no -1); x must be viewable as shape (else clone first).
//   - permute(x, dims), unsqueeze(x, dim), squeeze(x, dims: the listed dims, each of size 1).
//   - expand(x, shape): size-1 dims broadcast (stride 0), new leading dims; no -1.
//   - slice(x, dim, start, end, step) with 0 <= start <= end <= size and step >= 1.
//   - select(x, dim, index) with 0 <= index < size.
//   - as_strided(x, size, stride, offset): offset is the absolute storage offset.
//
// Copies and data movement (new contiguous tensors unless the node's meta says otherwise):
//   - clone(x): x materialized in the node's meta layout.
//   - grad_as(x, e): clone(x) whose gradient is e's: the gradient flows to e (of x's shape and
//     dtype) and not to x. A decomposition whose values follow torch's kernel but whose
//     derivative is a different formula in torch (derivatives.yaml) computes x without
//     gradient and e as that formula's linear term (mul(input, derivative), the derivative
//     computed without gradient); only training graphs have it. grad_as(x, e, f) gives e the
//     gradient xlogy(g, f) instead (g·log(f), but 0 where g is 0 and f is not NaN): torch's
//     gradient of xlogy's self is xlogy(grad, other), 0 for a zero grad even where log(other)
//     is NaN or infinite.
//   - cat(tensors, dim): one dtype, equal ranks, equal sizes but in dim (empty legacy 1-d
//     tensors are dropped by the decomposition).
//   - constant_pad_nd(x, pad, value): pad holds (before, after) pairs from the last dim;
//     negative pads crop.
//   - gather(x, dim, index): torch.gather (int64 index, same rank, result of index's shape).
//   - index_select(x, dim, index): index a 1-d (or 0-d) int64/int32 tensor.
//   - index(x, indices): advanced indexing as x[indices] in torch with a list of int64/int32
//     index tensors or None (a whole dim); index tensors broadcast together; negative indices
//     wrap; the indexed dims go where the first one was when adjacent, else first.
//   - scatter(x, dim, index, src): torch.scatter without reduce; src a tensor of index's shape
//     or a number. Duplicate indices write one of the values (decompositions avoid them).
//   - index_put(x, indices, values, accumulate): torch.index_put: a copy of x with values
//     written at x[indices] (indices as prims.index), values broadcastable to the indexed shape
//     (decompositions give it exactly) or a number; accumulate adds, duplicates included.
//
// Factories: full(shape, value, dtype); iota(length, start, step, dtype) = start + i*step for
// i in [0, length), computed in float64 for floating dtypes (as torch.arange).
//
// Externs, computed by torch's own kernels at run time (KindExtern): mm(a, b), bmm(a, b),
// addmm(bias, a, b) = bias + a@b with bias broadcastable to the product (torch.addmm, beta =
// alpha = 1), convolution(x, w, bias or None, stride, padding, dilation, transposed,
// output_padding, groups) = torch.convolution with lists of one entry per spatial dim, and
// fallback(target, args..., **kwargs): the original torch-level call of target (its Python
// path: "torch.nn.functional.dropout", or "Tensor.uniform_" for methods) with the node's
// remaining arguments and keyword arguments, run by torch; its meta is that call's meta. A
// fallback's tensor arguments are never graph inputs it could mutate: when the torch-level call
// mutates its first argument, the decomposition passes a prims.clone and takes the result as
// the new value. Random ops are always fallbacks, so random numbers come from torch's generator
// exactly as eager draws them.
//
// Mutation: copy_(dst, src) writes src (same shape and dtype) into dst, a placeholder or a
// get_attr buffer; decompositions emit it only as the final epilogue of a graph (see package
// primtorch/decomp for functionalization).
