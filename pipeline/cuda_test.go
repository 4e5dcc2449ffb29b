package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/bytecode/py"
	"ptgo/inductor"
	"ptgo/kernels/cuda"
	"ptgo/kernels/cuda/emu"
)

// onCUDA is the inference MLP with every tensor on cuda:0.
var onCUDA = strings.NewReplacer("f32[4,8]", "f32[4,8]@cuda:0", "f32[16,8]!grad", "f32[16,8]@cuda:0!grad",
	"f32[16]!grad", "f32[16]@cuda:0!grad", "f32[4,16]", "f32[4,16]@cuda:0", "f32[2,16]!grad", "f32[2,16]@cuda:0!grad",
	"f32[4,2]", "f32[4,2]@cuda:0").Replace(inferenceText)

// TestCUDAWithoutGPU: a graph on CUDA tensors on a machine without a GPU (or without NVRTC) runs
// with torch, after one warning per process, and nothing crashes.
func TestCUDAWithoutGPU(t *testing.T) {
	if _, err := cuda.LoadDriver(); err == nil {
		t.Skip("this machine has a GPU; TestCUDAOnEmulatedDevice and tools/gpu-check cover the compiled path")
	}
	cudaTargets.Lock()
	cudaTargets.warned = false
	cudaTargets.Unlock()
	h := &fakeHost{}
	for i := range 2 {
		before := Stats()
		obj, err := Compile(h, testConfig, &Request{Name: "mlp", Graph: parse(t, onCUDA), Attrs: mlpAttrs(), Backend: Inductor})
		require.NoError(t, err)
		require.Zero(t, obj, "the graph runs with torch")
		after := Stats()
		require.Equal(t, 1, after.Fallbacks-before.Fallbacks)
		require.Equal(t, before.CUDA, after.CUDA)
		var reasons []string
		for r, n := range after.Reasons {
			if n > before.Reasons[r] {
				reasons = append(reasons, r)
			}
		}
		require.Len(t, reasons, 1)
		require.True(t, strings.HasPrefix(reasons[0], "no CUDA runtime: "), reasons[0])
		require.Len(t, h.warnings, 1, "one warning per process (call %d)", i)
	}
	require.Contains(t, h.warnings[0], "graphs on CUDA tensors run with torch")
	require.Empty(t, h.plans)
	require.Empty(t, h.cuda)
}

// TestCUDAOnEmulatedDevice compiles the same graph for "cuda:0" with the CPU emulator standing
// in for the device: one fused kernel between torch's two matrix products, loaded, handed to the
// Host's CUDA runner with the parameters bound after the inputs.
func TestCUDAOnEmulatedDevice(t *testing.T) {
	if err := emu.Available(); err != nil {
		t.Skipf("no CUDA emulator: %v", err)
	}
	dir := t.TempDir()
	var asked []int
	cfg := testConfig
	cfg.CUDATarget = func(dev int) (*CUDATarget, error) {
		asked = append(asked, dev)
		t, err := newCUDATarget(-1, nil)
		if err != nil {
			return nil, err
		}
		t.Build = func(name string, src *inductor.CUDASource) ([]byte, error) {
			return emu.Build(inductor.EmulatorUnit(src), dir)
		}
		return t, nil
	}
	h := &fakeHost{}
	before := Stats()
	obj, err := Compile(h, cfg, &Request{Name: "mlp", Graph: parse(t, onCUDA), Attrs: mlpAttrs(), Backend: Inductor})
	require.NoError(t, err)
	require.Equal(t, []int{0}, asked)
	require.Len(t, h.cuda, 1)
	require.Empty(t, h.plans, "nothing goes to the C backend")
	p := h.cuda[0]
	require.Equal(t, p.obj, obj)
	require.Equal(t, "cuda:0", p.plan["device"])
	require.Equal(t, []py.Obj{1, 2, 3}, p.consts)
	ops := map[string]int{}
	for _, st := range p.plan["steps"].([]any) {
		ops[st.(map[string]any)["op"].(string)]++
	}
	require.Equal(t, 2, ops["extern"], "torch's matrix products: %v %v", ops, p.plan["steps"])
	require.Equal(t, 1, ops["kernel"], "the bias adds and the relu fuse into one kernel: %v", ops)
	require.NotNil(t, p.kernels)
	require.NotZero(t, p.kernels.Module)
	require.Equal(t, 1, Stats().CUDA-before.CUDA)

	// autograd graphs on CUDA tensors run with torch (the CUDA path compiles inference graphs)
	grad := strings.NewReplacer("f32[4,16]@cuda:0", "f32[4,16]@cuda:0!grad", "f32[4,2]@cuda:0", "f32[4,2]@cuda:0!grad").Replace(onCUDA)
	obj, err = Compile(h, cfg, &Request{Name: "mlp", Graph: parse(t, grad), Attrs: mlpAttrs(), Backend: Inductor, GradEnabled: true})
	require.NoError(t, err)
	require.Zero(t, obj)
	require.Len(t, h.cuda, 1)
}
