package primtorch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var kernelMayRejectTests = []struct {
	target string
	dtypes []DType
	want   bool
}{
	{"torch.nn.functional.layer_norm", []DType{Float16}, true},
	{"torch.nn.functional.layer_norm", []DType{Int64, Float32, Float32}, true},
	{"torch.nn.functional.layer_norm", []DType{Float32, Float32, Float32}, false},
	{"torch.nn.functional.gelu", []DType{Int64}, true},
	{"torch.softmax", []DType{Int64}, true},
	{"Tensor.softmax", []DType{BFloat16}, false}, // torch 1.13 has a bfloat16 softmax on CPU
	{"torch.exp", []DType{Float16}, true},
	{"torch.exp", []DType{Int64}, false}, // promotes to float
	{"torch.add", []DType{Float16, Float16}, false},
	// Indices are integers by nature: only an integer weight is a gap.
	{"torch.nn.functional.embedding", []DType{Int64, Float32}, false},
	{"torch.nn.functional.embedding", []DType{Int64, Int64}, true},
	{"torch.not_an_op", []DType{Float16}, false},
}

func TestKernelMayReject(t *testing.T) {
	for _, tt := range kernelMayRejectTests {
		require.Equal(t, tt.want, KernelMayReject(Lookup(tt.target), tt.dtypes), "%s%v", tt.target, tt.dtypes)
	}
}

// TestKernelGapsKnowTheirOps fails for a kernel_gaps.go row naming no registry op (a rename
// the table missed: regenerate it with go test ./primtorch -run TestMeta -update).
func TestKernelGapsKnowTheirOps(t *testing.T) {
	names := map[string]bool{}
	for _, op := range Ops() {
		names[op.Schema.Name] = true
	}
	for name := range kernelGaps {
		require.True(t, names[name], "kernel_gaps.go names %s, which no registry op has as its schema name", name)
	}
}
