package primtorch

import (
	"errors"
	"fmt"
)

// The three kinds of error a meta function returns. Test with errors.Is; the concrete error is
// always an *Error.
var (
	// ErrInvalid: the call is wrong (bad argument types, shapes that do not broadcast, a
	// dimension out of range, ...). Eager PyTorch raises the same error; the message is torch's.
	ErrInvalid = errors.New("invalid call")
	// ErrUnsupported: the call is valid but ptgo cannot compute its meta (a rare einsum form, a
	// mode ptgo does not implement). The capture stage falls back to eager for it.
	ErrUnsupported = errors.New("unsupported by ptgo")
	// ErrDataDependent: the result's shape (or value) depends on tensor data: nonzero, unique,
	// masked_select, bool-mask indexing, item. The capture stage falls back to eager for it.
	ErrDataDependent = errors.New("data-dependent output")
)

// Error is what Meta and binding return. Msg is the message torch gives for the same call
// (for ErrInvalid) or says what is unsupported; PyType is the Python exception class torch
// raises ("TypeError", "RuntimeError", "IndexError", "ValueError"), empty for the other kinds.
type Error struct {
	Kind   error
	Op     string
	PyType string
	Msg    string
}

func (e *Error) Error() string {
	var hint string
	switch e.Kind {
	case ErrInvalid:
		hint = "eager PyTorch rejects the same call; fix the arguments"
	case ErrDataDependent:
		hint = "the result depends on tensor values, so ptgo runs this call eagerly"
	default:
		hint = "ptgo runs this call eagerly"
	}
	op := e.Op
	if op == "" {
		op = "?"
	}
	return fmt.Sprintf("primtorch: %s (op %s); %s", e.Msg, op, hint)
}

func (e *Error) Unwrap() error { return e.Kind }

func newErr(kind error, pyType, format string, args ...any) *Error {
	return &Error{Kind: kind, PyType: pyType, Msg: fmt.Sprintf(format, args...)}
}

// runtimeErrorf, typeErrorf, indexErrorf and valueErrorf build ErrInvalid errors carrying the
// Python exception class torch raises for them.
func runtimeErrorf(format string, args ...any) *Error {
	return newErr(ErrInvalid, "RuntimeError", format, args...)
}
func typeErrorf(format string, args ...any) *Error {
	return newErr(ErrInvalid, "TypeError", format, args...)
}
func indexErrorf(format string, args ...any) *Error {
	return newErr(ErrInvalid, "IndexError", format, args...)
}
func valueErrorf(format string, args ...any) *Error {
	return newErr(ErrInvalid, "ValueError", format, args...)
}
func unsupportedf(format string, args ...any) *Error {
	return newErr(ErrUnsupported, "", format, args...)
}
func dataDependentf(format string, args ...any) *Error {
	return newErr(ErrDataDependent, "", format, args...)
}

// withOp stamps op's name on err when it is an *Error without one.
func withOp(err error, name string) error {
	var e *Error
	if errors.As(err, &e) && e.Op == "" {
		e.Op = name
	}
	return err
}

// kernelGap is a dtype some of torch's CPU kernels for an op reject at some tensor operand
// positions (a bit per position, in call order), with the first error torch gave for it
// (kernel_gaps_<torch version>.go).
type kernelGap struct {
	DType    DType
	Operands uint64
	Example  string
}

// kernelGapTables are the generated tables by torch version: torch 2 implements many CPU
// kernels torch 1.13 lacks (float16 layer_norm, matmul, exp) and rejects a few calls 1.13
// accepted (a complex norm with a real dtype).
var kernelGapTables = []VersionRow[map[string][]kernelGap]{
	{Torch113, kernelGaps1_13},
	{Torch214, kernelGaps2_14},
}

// kernelGapsFor is the table of torch version v. The tables only decide when to try a call on
// torch's own kernel (the probe is exact), so for a torch no table was generated with, the
// union of all tables stands in: a superset costs a probe at compile time, never a result that
// differs from eager.
func kernelGapsFor(v TorchVersion) func(name string) []kernelGap {
	if TestedTorch(kernelGapTables, v) {
		t := ForTorch(kernelGapTables, v)
		return func(name string) []kernelGap {
			return append(append([]kernelGap(nil), t[name]...), kernelGapsByHand[name]...)
		}
	}
	return func(name string) []kernelGap {
		all := append([]kernelGap(nil), kernelGapsByHand[name]...)
		for _, row := range kernelGapTables {
			all = append(all, row.Value[name]...)
		}
		return all
	}
}

// kernelGapsByHand are gaps the generated tables cannot see, whose generator passes every
// operand as a tensor: a Python number bound takes clamp's scalar kernels, which have no bool
// implementation ("clamp_min_scalar_cpu" not implemented for 'Bool'; 1.13 names another kernel
// and raises RuntimeError, 2.14 NotImplementedError: the probe gives the running torch's; fuzz
// seed 24652). With tensor bounds a bool clamp_min passes: a probe costs a call at compile time.
var kernelGapsByHand = map[string][]kernelGap{
	`clamp`:      {{Bool, 0b1, `"clamp_scalar_cpu" not implemented for 'Bool'`}},
	`clamp_`:     {{Bool, 0b1, `"clamp_scalar_cpu" not implemented for 'Bool'`}},
	`clamp_min`:  {{Bool, 0b1, `"clamp_min_scalar_cpu" not implemented for 'Bool'`}},
	`clamp_min_`: {{Bool, 0b1, `"clamp_min_scalar_cpu" not implemented for 'Bool'`}},
	`clamp_max`:  {{Bool, 0b1, `"clamp_max_scalar_cpu" not implemented for 'Bool'`}},
	`clamp_max_`: {{Bool, 0b1, `"clamp_max_scalar_cpu" not implemented for 'Bool'`}},
}

// KernelMayReject reports whether torch's CPU kernels for op are known to reject some calls
// whose tensor operands (in call order: arguments, then keyword arguments) have these dtypes,
// although the same calls on float32 tensors pass ("LayerNormKernelImpl" not implemented for
// 'Half'). Meta functions model an op's semantics, not which dtypes its kernels implement: the
// capture stage tries such calls on torch's kernels while tracing. The answer is for the
// running torch (Torch()).
func KernelMayReject(op *Op, operands []DType) bool {
	if op == nil {
		return false
	}
	for _, g := range kernelGapsFor(Torch())(op.Canonical().Schema.Name) {
		for p, d := range operands {
			if d == g.DType && p < 64 && g.Operands&(1<<p) != 0 {
				return true
			}
		}
	}
	return false
}
