package inductor

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"ptgo/kernels/cuda/emu"
)

// TestCUDAEmulated runs the CUDA conformance suite on the CPU emulator (package
// kernels/cuda/emu: the generated CUDA text compiled by g++ against emu.h, a block's threads as
// fibers) through the same ExecuteCUDA and launch path the GPU run takes. SMs 2 keeps grids
// small (grid-stride loops then run several iterations per thread, which they must get right
// too). It needs g++ and cgo, which `make setup` provides; PTGO_REQUIRE_CUDA_EMU=1 (make test)
// turns a missing one into a failure.
func TestCUDAEmulated(t *testing.T) {
	if err := emu.Available(); err != nil {
		if os.Getenv("PTGO_REQUIRE_CUDA_EMU") != "" {
			t.Fatalf("PTGO_REQUIRE_CUDA_EMU is set: %v", err)
		}
		t.Skipf("no CUDA emulator here: %v", err)
	}
	d := &cudaDevice{name: "emulator", drv: emu.New(true), gen: CUDAOptions{SMs: 2}, build: emuBuild, parallel: runtime.GOMAXPROCS(0)}
	runCUDASuite(t, d)
}

var emuCacheDir = sync.OnceValue(func() string {
	d, _ := os.MkdirTemp("", "ptgo-cudaemu-")
	return d
})

func emuBuild(t *testing.T, src *CUDASource) ([]byte, error) {
	return emu.Build(EmulatorUnit(src), filepath.Join(emuCacheDir(), "units"))
}
