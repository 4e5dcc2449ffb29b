package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var kernelMayRejectTests = []struct {
	torch  TorchVersion
	target string
	dtypes []DType
	want   bool
}{
	{Torch113, "torch.nn.functional.layer_norm", []DType{Float16}, true},
	{Torch113, "torch.nn.functional.layer_norm", []DType{Int64, Float32, Float32}, true},
	{Torch113, "torch.nn.functional.layer_norm", []DType{Float32, Float32, Float32}, false},
	{Torch113, "torch.nn.functional.gelu", []DType{Int64}, true},
	{Torch113, "torch.softmax", []DType{Int64}, true},
	{Torch113, "Tensor.softmax", []DType{BFloat16}, false}, // torch 1.13 has a bfloat16 softmax on CPU
	{Torch113, "torch.exp", []DType{Float16}, true},
	{Torch113, "torch.exp", []DType{Int64}, false}, // promotes to float
	{Torch113, "torch.add", []DType{Float16, Float16}, false},
	// Indices are integers by nature: only an integer weight is a gap.
	{Torch113, "torch.nn.functional.embedding", []DType{Int64, Float32}, false},
	{Torch113, "torch.nn.functional.embedding", []DType{Int64, Int64}, true},
	{Torch113, "torch.not_an_op", []DType{Float16}, false},
	{Torch113, "torch.norm", []DType{Complex64}, false},
	// torch 2.14 has float16 CPU kernels for layer norm and exp, and rejects
	// a complex norm with a real dtype.
	{Torch214, "torch.nn.functional.layer_norm", []DType{Float16}, false},
	{Torch214, "torch.exp", []DType{Float16}, false},
	{Torch214, "torch.nn.functional.layer_norm", []DType{Int64, Float32, Float32}, true},
	{Torch214, "torch.nn.functional.gelu", []DType{Int64}, true},
	{Torch214, "torch.norm", []DType{Complex64}, true},
	// A torch no table was generated with: the union of the tables (a superset only costs probes).
	{TorchVersion{2, 5}, "torch.nn.functional.layer_norm", []DType{Float16}, true},
	{TorchVersion{2, 5}, "torch.norm", []DType{Complex64}, true},
	{TorchVersion{2, 5}, "torch.add", []DType{Float16, Float16}, false},
}

func TestKernelMayReject(t *testing.T) {
	defer SetTorch(SetTorch(Torch113))
	for _, tt := range kernelMayRejectTests {
		SetTorch(tt.torch)
		require.Equal(t, tt.want, KernelMayReject(Lookup(tt.target), tt.dtypes), "torch %s: %s%v", tt.torch, tt.target, tt.dtypes)
	}
}

// TestKernelGapsKnowTheirOps fails for a kernel_gaps_*.go row naming no registry op (a rename
// the table missed: regenerate it with go test ./primtorch -run TestMeta -update).
func TestKernelGapsKnowTheirOps(t *testing.T) {
	names := map[string]bool{}
	for _, op := range Ops() {
		names[op.Schema.Name] = true
	}
	for _, row := range kernelGapTables {
		for name := range row.Value {
			require.True(t, names[name], "kernel_gaps_%d_%d.go names %s, which no registry op has as its schema name",
				row.Since.Major, row.Since.Minor, name)
		}
	}
}
