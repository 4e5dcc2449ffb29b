package primtorch

import "strings"

// Autocast: torch's casting policy for ops called while torch.autocast is enabled, one table
// keyed by device type and torch version (A71). The capture stage applies it while tracing:
// operands of a listed op are cast (explicit Tensor.to nodes, as torch's autocast wrappers call
// arg.to(dtype)) before the op is recorded, so every later stage sees ordinary dtypes.

// CastPolicy is what autocast does to an op's floating-point operands.
type CastPolicy uint8

const (
	// CastNone: autocast leaves the op alone (its own kernels may still call listed ops: the
	// capture stage checks such ops against torch, see AutocastMayDiffer).
	CastNone CastPolicy = iota
	// CastLowerPrecision casts eligible operands to the autocast dtype (bfloat16 on CPU).
	CastLowerPrecision
	// CastFP32 casts eligible operands to float32.
	CastFP32
	// CastPromote casts eligible operands to the widest of them: float32 if any is float32,
	// else the autocast dtype.
	CastPromote
)

var castPolicyNames = [...]string{"none", "lower_precision_fp", "fp32", "promote"}

func (p CastPolicy) String() string { return castPolicyNames[p] }

// AutocastRow is one torch version's autocast for one device type.
type AutocastRow struct {
	// DTypes are the lower-precision dtypes this autocast accepts (another one: torch warns
	// and disables it, or raises).
	DTypes []DType
	// Policy: ATen op names (with the overload where torch registers only that overload) →
	// policy; ops not listed are CastNone.
	Policy map[string]CastPolicy
}

// autocastRows: per device type, the rows by torch version, oldest first. Each row is that
// torch's AutocastCPU registrations, read from its dispatcher; tests/test_autocast.py checks the
// row of the installed torch against its dispatcher: the registered names, and each name's
// policy as torch's kernel casts its operands (A71).
var autocastRows = map[string][]VersionRow[*AutocastRow]{
	"cpu": {
		{Torch113, &AutocastRow{DTypes: []DType{BFloat16}, Policy: policyTable(map[CastPolicy][]string{
			CastLowerPrecision: {
				"conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding",
				"bmm", "mm", "baddbmm", "addmm", "addbmm", "linear", "_convolution.deprecated", "matmul",
				"conv_tbc",
			},
			CastFP32: append([]string{
				"conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input",
				"cholesky", "qr", "symeig", "prod.dim_Dimname", "linalg_matrix_norm", "linalg_matrix_norm.str_ord",
			}, cpuFP32Common...),
			CastPromote: {"cat", "stack", "index_copy", "index_copy.dimname"},
		})}},
		// torch 2.14: transposed convolutions, prelu, attention, linalg_vecdot and the oneDNN
		// RNN layer run in the lower precision; float16 is accepted; cholesky, qr, symeig and the
		// Dimname overloads are gone from ATen, linalg_matrix_norm is no longer listed,
		// linalg_matrix_sqrth is.
		{Torch214, &AutocastRow{DTypes: []DType{BFloat16, Float16}, Policy: policyTable(map[CastPolicy][]string{
			CastLowerPrecision: {
				"conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d", "conv3d.padding",
				"bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "_addmm_activation", "addbmm", "linear",
				"_convolution.deprecated", "matmul", "conv_tbc", "mkldnn_rnn_layer",
				"conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "prelu",
				"scaled_dot_product_attention", "_native_multi_head_attention",
			},
			CastFP32:    append([]string{"linalg_matrix_sqrth"}, cpuFP32Common...),
			CastPromote: {"cat", "stack", "index_copy"},
		})}},
	},
}

// cpuFP32Common: the fp32 ops every CPU row lists.
var cpuFP32Common = []string{
	"avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "prod.dim_int",
	"quantile", "quantile.scalar", "nanquantile", "nanquantile.scalar", "stft", "stft.center", "cdist",
	"grid_sampler_2d", "_grid_sampler_2d_cpu_fallback", "grid_sampler_3d", "trace", "view_as_complex",
	"cholesky_inverse", "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse",
	"max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
	"reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d", "mse_loss",
	"cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss",
	"smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss",
	"soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss.IntList", "ctc_loss.Tensor",
	"kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft",
	"fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2",
	"fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_cond.p_str",
	"linalg_matrix_rank", "linalg_matrix_rank.tol_tensor", "linalg_matrix_rank.atol_rtol_tensor",
	"linalg_matrix_rank.atol_rtol_float", "linalg_solve", "linalg_cholesky", "linalg_svdvals",
	"linalg_eigvals", "linalg_eigvalsh", "linalg_inv", "linalg_householder_product", "linalg_tensorinv",
	"linalg_tensorsolve", "fake_quantize_per_tensor_affine", "geqrf", "_lu_with_info", "svd",
	"triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d", "adaptive_max_pool3d",
	"multilabel_margin_loss_forward", "linalg_qr", "linalg_cholesky_ex", "linalg_svd", "linalg_eig",
	"linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
}

// autocastAliases: ptgo ops that stand for a torch.nn.functional function whose first ATen
// call has another name (F.cross_entropy calls aten::cross_entropy_loss).
var autocastAliases = map[string]string{
	"cross_entropy": "cross_entropy_loss",
}

func policyTable(lists map[CastPolicy][]string) map[string]CastPolicy {
	out := map[string]CastPolicy{}
	for p, names := range lists {
		for _, n := range names {
			out[n] = p
		}
	}
	return out
}

// AutocastFor returns the autocast row for a device type ("cpu") under a torch version
// ("1.13.0a0", "2.14.1+cpu"): the newest row at or below it, as every table keyed by torch
// version (A55). tested is false when the row is another version's (a torch between two tested
// ones, or newer than the newest): the capture stage then checks every op against torch. ok is
// false when ptgo has none (a torch older than the first row, a device type without rows, a
// version it cannot read): the capture stage then does not compile ops under that autocast.
func AutocastFor(deviceType, torchVersion string) (row *AutocastRow, tested, ok bool) {
	rows := autocastRows[deviceType]
	v, err := ParseTorchVersion(torchVersion)
	if err != nil || len(rows) == 0 || v.Before(rows[0].Since) {
		return nil, false, false
	}
	return ForTorch(rows, v), TestedTorch(rows, v), true
}

// AutocastTable returns the policy table of AutocastFor's row; ok is false when ptgo has none.
func AutocastTable(deviceType, torchVersion string) (map[string]CastPolicy, bool) {
	row, _, ok := AutocastFor(deviceType, torchVersion)
	if !ok {
		return nil, false
	}
	return row.Policy, true
}

// AutocastPolicy is the policy of the ATen op name ("conv2d", "prod.dim_int") in table; an
// overload-qualified name falls back to its base name when the table lists the base alone.
func AutocastPolicy(table map[string]CastPolicy, name string) CastPolicy {
	if a, ok := autocastAliases[name]; ok {
		name = a
	}
	if p, ok := table[name]; ok {
		return p
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		if p, ok := table[name[:i]]; ok {
			return p
		}
	}
	return CastNone
}

// AutocastMayDiffer reports whether an op autocast leaves alone may still give other dtypes than
// without autocast: its torch implementation may call listed ops (einsum calls bmm, a loss
// calls nll_loss). Pointwise ops, reductions, views, factories and indexing run their own
// kernels and never do.
func AutocastMayDiffer(op *Op) bool {
	if op == nil {
		return true
	}
	switch op.Kind {
	case KindPointwise, KindReduction, KindView, KindFactory, KindIndexing:
		return false
	}
	return true
}

// AutocastEligible is torch's is_eligible for a CPU autocast cast: a defined floating-point
// tensor other than float64.
func AutocastEligible(m *TensorMeta) bool {
	return m != nil && m.DType.IsFloatingPoint() && m.DType != Float64
}

// AutocastTarget is the dtype policy p casts eligible operands to, given the autocast dtype
// lower and the eligible operands' dtypes; ok is false when torch raises ("Unexpected floating
// ScalarType in at::autocast::prioritize": float16 operands under bfloat16 autocast promote).
func AutocastTarget(p CastPolicy, lower DType, operands []DType) (DType, bool) {
	switch p {
	case CastLowerPrecision:
		return lower, true
	case CastFP32:
		return Float32, true
	case CastPromote:
		cur := lower
		for _, d := range operands {
			switch {
			case d == Float64:
			case cur == Float32 || d == Float32:
				cur = Float32
			case d == lower:
			default:
				return 0, false
			}
		}
		return cur, true
	}
	return 0, false
}
