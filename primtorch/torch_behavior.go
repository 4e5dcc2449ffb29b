package primtorch

import "sync/atomic"

// torchBehavior is what eager torch returns or rejects where the torch versions ptgo is tested
// against differ (found by replaying testdata/gen_meta_cases.py's cases under both: the golden
// files meta_cases_1_13.json and meta_cases_2_14.json). Each field names the meta function that
// reads it; behavior() is the running torch's row.
type torchBehavior struct {
	// Layouts: which CPU kernels give a channels-last input a channels-last result.
	ConvKeepsChannelsLast3dAndTransposed bool // conv3d and conv_transpose2d/3d, not only conv2d (metaConv)
	MaxPool3dKeepsChannelsLast           bool // max_pool3d, adaptive_avg_pool3d to 1x1x1 (metaPool, adaptive pools)
	PadKeepsChannelsLast                 bool // reflect and replicate padding (metaPad)
	BicubicKeepsChannelsLast             bool // bicubic interpolation (metaInterpolate)
	PreluLikeElementwise                 bool // prelu lays its result out as an elementwise op does; else by suggest_memory_format (metaPrelu)
	ScalarPowContiguous                  bool // number ** tensor (Tensor.__rpow__) is contiguous, as torch.pow(number, tensor) always is (metaPow)
	// Calls accepted.
	Int32Indices        bool // indexing, index_put, gather and scatter take int32 index tensors (meta_index.go)
	WhereScalarOther    bool // Tensor.where(condition, number) (the where.method row's signatures)
	NormDtypeAnyP       bool // torch.norm(dtype=) with p="fro"/"nuc"/None (linalg norms; dtype must not narrow)
	NormMixedLowFloat   bool // layer_norm/group_norm of a bfloat16/float16 input with float32 weight and bias
	MaxPool1dEmptyError bool // max_pool1d's own kernel rejects an output of length 0
	// group_norm rejects an input of 0 channels or 0 elements per channel and sample (2.14's
	// check_group_norm_inputs, before the divisibility check); 1.13 normalizes it to empty.
	GroupNormEmptyError bool
	// An in-place torch._foreach_*_ returns its first operand (the list object itself; 1.13:
	// None) (bytecode foreachCall).
	ForeachInPlaceReturnsSelf bool
	// Promotion: a bfloat16 tensor with a complex number gives bcomplex32, not complex64
	// (promoteState.halfComplex).
	BFloat16ComplexIsBComplex32 bool
	// Values (read by decompositions through Behavior()).
	GeluOneDNN               bool // CPU gelu takes oneDNN's kernel where it can (+0.0 for -0.0 and large negative x; dGelu; probed: ProbedBehavior)
	ClampIgnoresLoneNaNBound bool // clamp with a NaN number as its only bound returns x (2.14: NaN; dClamp)
	// A float16/bfloat16 tensor times or divided by (any rounding mode) a Python number
	// computes with the number in float32 (2.14's mul and div kernels); every other binary op,
	// and 1.13's mul and div, first round the number to the tensor's dtype (decomp eagerNumbers).
	ReducedFloatMulDivOpmath bool
	// round(x, decimals=d) of a float16/bfloat16 tensor computes x·10^d, its rounding and the
	// division in float32 (2.14); 1.13's kernel computes in the dtype (decomp dRound).
	RoundDecimalsOpmath bool
	// fmax/fmin's gradient splits a tie evenly and passes through a NaN operand to both
	// (2.14's derivatives.yaml); 1.13's gives self the whole gradient where self >= other (<=
	// for fmin) or other is NaN, and other the rest (dFmaxFmin).
	FmaxFminSplitTies bool
	// elu (selu, celu) computes its negative branch with expm1 (1.13: exp(x) - 1, which gives
	// +0.0 for -0.0 and 0 for tiny x; decomp elu).
	EluExpm1 bool
	// elu's (selu's, celu's) gradient at NaN is grad·scale: its backward tests x <= 0 for the
	// negative branch, which NaN fails (2.14, every element). 1.13's gives NaN in its vectorised
	// loop and grad·scale in the scalar remainder (position-dependent: ptgo gives NaN there, as
	// the vectorised loop that takes most elements does; decomp elu). 2.14 on an AVX2 CPU does
	// as 1.13 does (probed: ProbedBehavior).
	EluGradNaNPositive bool
	// clamp's gradient with a number bound goes to x strictly inside it (x > min, x < max: 0 at
	// a tie), and with a tensor bound a tie splits it evenly between x and the bound; 1.13's
	// passes it to x wherever x >= min and x <= max (decomp clampAt).
	ClampGradStrictTies bool
	// hardswish's gradient (its vectorised kernel) is 0 for x <= -3, grad·(x/3 + 1/2) for
	// -3 < x < 3 and grad from 3 up; 1.13's is 0 for x < -3, grad for x >= 3 and grad·(x/3 +
	// 1/2) otherwise (decomp dHardswish). At NaN ptgo gives NaN, as 2.14's float64 kernel
	// does; its float32 kernel gives grad.
	HardswishGradOpenMid bool
	// dropout draws its noise in the input's layout (empty_like, preserving it); 1.13 draws it
	// contiguous whatever the input's strides (LEGACY_CONTIGUOUS_MEMORY_FORMAT; dDropout).
	DropoutNoiseInInputLayout bool
	// layer_norm of a float16/bfloat16 input gives what its decomposition computes (statistics
	// in float32, one rounding of the float32 result, as 2.14's kernel does); 1.13's reduced-float
	// kernel gives other values (up to several ulps, most elements), so there the call stays
	// torch's (decomp dLayerNorm).
	LayerNormReducedFloatOpmath bool
	// float32/float64 layer_norm normalizes as fma(x, rstd, −mean·rstd) (1.13's kernel), not
	// (x − mean)·rstd (2.14's) where torch's kernels fuse multiply-adds (decomp dLayerNorm).
	LayerNormScaleShiftFMA bool
	// group_norm is NaN in a group whose mean squared overflows the statistics' dtype (1.13's
	// RowwiseMoments cascade squares the first chunk's mean with weight 0; fuzz seeds 3319,
	// 4050). 2.14's cascade does so for groups of fewer than GroupNormSmallGroupNaN elements
	// (its scalar path; fuzz seed 22187: a group of 3) and, in groups of a multiple of 8, for a
	// huge value at a position that is a multiple of 8 (the first lane of a vector), which the
	// decomposition does not follow: there it keeps (x − mean)·rstd, 0 at such values, which
	// matches every other position and size (decomp dGroupNorm).
	GroupNormOverflowNaN   bool
	GroupNormSmallGroupNaN int64
	// A shift by a negative count or by the dtype's width or more gives 0 (<<) or the sign
	// (>>) (2.14); 1.13's kernels mask the count as C++ does on x86 (low 6 bits for int64, 5
	// for the others: 7 << 40 of an int32 is 7 << 8). Read by inductor's shift ops and the
	// reference interpreter.
	ShiftCountBounded bool
	// softshrink of NaN is NaN (2.14; 1.13: 0) (dSoftshrink)
	SoftshrinkNaN bool
	// atan2's gradient where self² + other² is 0 (the origin, or squares that underflow) is
	// 0 with the sign of grad·other·0 (2.14 zeroes the reciprocal there); 1.13's is
	// grad·other·inf, NaN at the origin (aotautograd vjpAtan2; fuzz seed 28525)
	Atan2GradZeroAtOrigin bool
	// batch_norm of a channels-last-3d input takes the kernel's fused scale-shift
	// fma(x, α, fma(−mean, α, bias)) (2.14), not ((x − mean)·rstd)·weight + bias (1.13)
	// (decomp batchNormScaleShift).
	BatchNormChannelsLast3dFMA bool
	// torch.mean with a float16/bfloat16 result sums in float32 and divides before its one
	// rounding (2.14's mean_out); 1.13's sums into the result's dtype (a rounding) and divides
	// it there (a second one): one ulp apart in a third of the elements of a [2, 17, 192] mean
	// over dim 1 (decomp dMean).
	MeanReducedFloatOpmath bool
	// Messages: the namespace c10 names Half and BFloat16 in ("at::", 2.14: "c10::"; the
	// overflow error of checkFillValue).
	ReducedFloatNamespace string
}

var behaviorTable = []VersionRow[torchBehavior]{
	{Torch113, torchBehavior{GeluOneDNN: true, ClampIgnoresLoneNaNBound: true, LayerNormScaleShiftFMA: true,
		GroupNormOverflowNaN: true, ReducedFloatNamespace: "at::"}},
	{Torch214, torchBehavior{
		ConvKeepsChannelsLast3dAndTransposed: true, MaxPool3dKeepsChannelsLast: true, PadKeepsChannelsLast: true,
		BicubicKeepsChannelsLast: true, PreluLikeElementwise: true, ScalarPowContiguous: true,
		Int32Indices: true, WhereScalarOther: true, NormDtypeAnyP: true, NormMixedLowFloat: true,
		MaxPool1dEmptyError: true, GroupNormEmptyError: true, ForeachInPlaceReturnsSelf: true, BFloat16ComplexIsBComplex32: true, ReducedFloatMulDivOpmath: true, RoundDecimalsOpmath: true,
		FmaxFminSplitTies: true, EluExpm1: true, EluGradNaNPositive: true, ClampGradStrictTies: true, HardswishGradOpenMid: true,
		DropoutNoiseInInputLayout: true, LayerNormReducedFloatOpmath: true, ShiftCountBounded: true, SoftshrinkNaN: true,
		Atan2GradZeroAtOrigin:      true,
		GroupNormSmallGroupNaN:     8,
		BatchNormChannelsLast3dFMA: true, MeanReducedFloatOpmath: true, ReducedFloatNamespace: "c10::",
	}},
}

// kernelsNoFMA is set when the running torch's CPU kernels do not fuse multiply-adds
// (ptgo._compat.kernels_fuse_multiply_add probes it at start).
var kernelsNoFMA atomic.Bool

// KernelsFuseMultiplyAdd reports whether torch's CPU kernels compute a·b + c with one rounding
// where their C++ writes it in one expression: the AVX2 and AVX-512 builds of add/sub with
// alpha (fma(alpha, other, self)), addcmul (fma(value·t1, t2, self)) and lerp (fma(w, end -
// start, start), or fma(w - 1, end - start, end) from |w| = 0.5 up), which gcc contracts; their
// DEFAULT (no-AVX) build does not. It is not a torch version's property but the CPU's and the
// build's, so the running process is probed (measured on torch 1.13 and 2.14, float32 and
// float64: every element, vector lanes and remainder alike). Decompositions then emit prims.fma
// (decomp fmaOr), and the results equal eager's to the bit.
func KernelsFuseMultiplyAdd() bool { return !kernelsNoFMA.Load() }

// SetKernelsFuseMultiplyAdd records the probe's answer (pybridge, at start; tests) and returns the
// previous one.
func SetKernelsFuseMultiplyAdd(on bool) bool {
	return !kernelsNoFMA.Swap(!on)
}

// dropoutMT19937 is set when ptgo's draw of dropout's mask gives eager's bits
// (ptgo._compat.dropout_draws_mt19937 probes it at start).
var dropoutMT19937 atomic.Bool

// DropoutDrawsMT19937 reports whether eager's CPU dropout draws its noise as ptgo's
// bernoulli_mask draws it (pybridge/fast/ptgo_random.cpp): one random64() of torch's mt19937 per
// element, as a 53-bit double compared with 1 - p. Where torch calls MKL's Bernoulli instead
// (its MKL builds on Intel CPUs) or ptgo's C++ extension is missing, the probe says no, and
// dropout's noise stays torch's dropout of ones. Like KernelsFuseMultiplyAdd it is the build's
// and the CPU's, not a version's, so the running process is probed; absent a probe (Go tests),
// no.
func DropoutDrawsMT19937() bool { return dropoutMT19937.Load() }

// SetDropoutDrawsMT19937 records the probe's answer (pybridge, at start; tests) and returns the
// previous one.
func SetDropoutDrawsMT19937(on bool) bool { return dropoutMT19937.Swap(on) }

// sqrtInexact holds the dtypes whose eager CPU sqrt is not correctly rounded
// (ptgo._compat.sqrt_inexact_dtypes probes it at start).
var sqrtInexact atomic.Value // map[DType]bool

// SqrtCorrectlyRounded reports whether the running torch's CPU sqrt (torch.sqrt, Tensor.sqrt,
// sqrt_) of dtype gives the correctly rounded square root, as prims.sqrt does: torch 1.13's
// kernels do; PyPI's torch 2.14 calls MKL's vector math (vsSqrt), within one ulp of it, for
// float32 (every size) and float64 (from 64 elements), so the decomposition keeps torch's
// kernel there (A143). It is the build's property, so the running process is probed; absent a
// probe (Go tests), yes.
func SqrtCorrectlyRounded(dt DType) bool {
	m, _ := sqrtInexact.Load().(map[DType]bool)
	return !m[dt]
}

// SetSqrtInexact records the dtypes whose eager sqrt the probe found not correctly rounded
// (pybridge, at start; tests) and returns the previous set.
func SetSqrtInexact(dts []DType) []DType {
	m := map[DType]bool{}
	for _, dt := range dts {
		m[dt] = true
	}
	old, _ := sqrtInexact.Swap(m).(map[DType]bool)
	var prev []DType
	for dt := range old {
		prev = append(prev, dt)
	}
	return prev
}

// ProbedBehavior holds the torchBehavior values the running process was seen to have
// (ptgo._compat.probe_behavior, at start): they depend on the CPU and its vector width, not on
// torch's version alone. PyPI's torch 2.14 on an AVX2 CPU takes oneDNN's gelu for a contiguous
// float32 tensor (+0.0 for -0.0, as 1.13 does) and gives elu's gradient at NaN as NaN in its
// vectorised loop; on an AVX-512 CPU it ran ATen's gelu (-0.0) and gave grad·scale at every NaN.
// A nil field keeps the row's value (Go tests, a process that did not probe).
type ProbedBehavior struct {
	GeluOneDNN         *bool `json:"gelu_onednn"`
	EluGradNaNPositive *bool `json:"elu_grad_nan_positive"`
}

var probedBehavior atomic.Pointer[ProbedBehavior]

// SetProbedBehavior records the probes' answers (pybridge, at start; tests) and returns the
// previous ones.
func SetProbedBehavior(p *ProbedBehavior) *ProbedBehavior { return probedBehavior.Swap(p) }

// behavior is the running torch's row (a torch between two tested versions gets the older's),
// with the values probed in the running process in place of the row's.
func behavior() torchBehavior {
	b := ForTorch(behaviorTable, Torch())
	if p := probedBehavior.Load(); p != nil {
		if p.GeluOneDNN != nil {
			b.GeluOneDNN = *p.GeluOneDNN
		}
		if p.EluGradNaNPositive != nil {
			b.EluGradNaNPositive = *p.EluGradNaNPositive
		}
	}
	return b
}

// Behavior is the running torch's row, for the stages outside the registry (decompositions).
func Behavior() torchBehavior { return behavior() }
