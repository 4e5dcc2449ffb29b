package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/kernels/cuda"
	"ptgo/kernels/cuda/emu"
	"ptgo/primtorch"
)

// The CUDA path: an inference graph whose tensors are all on one CUDA device is lowered, fused
// and planned exactly as for the C backend, its kernels are rendered as CUDA C from the same
// loop IR (inductor.CompileCUDA), compiled by NVRTC for the device's arch (cached on disk) and
// loaded with the driver; the Host's runner (ptgo._cuda) executes the plan over torch's CUDA
// tensors: buffers from torch's caching allocator, externs (matmuls, convolutions) as torch
// calls, kernels launched on torch's current stream through Host.CUDAGraph's launcher. Without
// a driver, a GPU or NVRTC the graph runs with torch, after one warning per process.
//
// PTGO_CUDA_EMULATE=1 sends CPU inference graphs down the same path with the CPU emulator
// (kernels/cuda/emu) as the device: tests of the wiring without a GPU.

// EnvCUDAEmulate names the variable that turns on the emulated CUDA device for CPU graphs.
const EnvCUDAEmulate = "PTGO_CUDA_EMULATE"

// CUDATarget is a device ready to take compiled graphs.
type CUDATarget struct {
	Driver cuda.Driver
	Device int
	SMs    int
	// Build turns a unit into the module image the driver loads (NVRTC's cubin, or the
	// emulator's library).
	Build func(name string, src *inductor.CUDASource) ([]byte, error)
	// Describe names the target in logs ("sm_90, NVRTC 13.0").
	Describe string
	// Emulated: the emulator over CPU tensors.
	Emulated bool
}

// GraphDevice is the one device of a graph's tensors; "" reason when there is one, else why
// not (tensors on two devices).
func GraphDevice(g *fxgraph.Graph) (primtorch.Device, string) {
	dev := primtorch.CPU
	seen := false
	for _, n := range g.Nodes {
		for _, m := range metasOf(n.Meta) {
			if !seen {
				dev, seen = m.Device, true
				continue
			}
			if m.Device != dev {
				return dev, fmt.Sprintf("tensors on %s and %s", dev, m.Device)
			}
		}
	}
	return dev, ""
}

var cudaTargets struct {
	sync.Mutex
	byDev  map[int]*CUDATarget
	errs   map[int]error
	warned bool
}

// cudaTarget returns the target for device dev (-1: the emulator), set up once per process.
func (c *compiler) cudaTarget(dev int) (*CUDATarget, error) {
	if c.cfg.CUDATarget != nil {
		return c.cfg.CUDATarget(dev)
	}
	cudaTargets.Lock()
	defer cudaTargets.Unlock()
	if cudaTargets.byDev == nil {
		cudaTargets.byDev, cudaTargets.errs = map[int]*CUDATarget{}, map[int]error{}
	}
	if t, ok := cudaTargets.byDev[dev]; ok {
		return t, nil
	}
	if err, ok := cudaTargets.errs[dev]; ok {
		return nil, err
	}
	t, err := newCUDATarget(dev, c.h.SearchPath())
	if err != nil {
		cudaTargets.errs[dev] = err
		return nil, err
	}
	cudaTargets.byDev[dev] = t
	return t, nil
}

func newCUDATarget(dev int, searchPath []string) (*CUDATarget, error) {
	if dev < 0 {
		if err := emu.Available(); err != nil {
			return nil, err
		}
		dir := filepath.Join(cuda.CacheDir(), "emu")
		return &CUDATarget{Driver: emu.New(false), Device: 0, SMs: 2, Emulated: true, Describe: "the CPU emulator",
			Build: func(name string, src *inductor.CUDASource) ([]byte, error) {
				return emu.Build(inductor.EmulatorUnit(src), dir)
			}}, nil
	}
	drv, err := cuda.LoadDriver()
	if err != nil {
		return nil, err
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if dev >= n {
		return nil, fmt.Errorf("%w: cuda:%d requested, the driver sees %d devices", cuda.ErrNoDevice, dev, n)
	}
	arch, err := cuda.DeviceArch(drv, dev)
	if err != nil {
		return nil, err
	}
	sms, err := drv.Attribute(dev, cuda.AttrMultiprocessorCount)
	if err != nil {
		return nil, err
	}
	nv, err := cuda.LoadNVRTC(searchPath)
	if err != nil {
		return nil, err
	}
	comp, err := cuda.NewCompiler(nv, "", cuda.Cubin, arch)
	if err != nil {
		return nil, err
	}
	return &CUDATarget{Driver: drv, Device: dev, SMs: sms, Describe: fmt.Sprintf("%s with %d SMs, NVRTC %s", arch, sms, nv.Version()),
		Build: func(name string, src *inductor.CUDASource) ([]byte, error) {
			a, err := comp.Compile(name, src.Text)
			if err != nil {
				return nil, err
			}
			return a.Binary.Data, nil
		}}, nil
}

// cudaInference compiles an inference graph on CUDA tensors (dev; CPU tensors when emulated);
// 0 means it runs with torch.
func (c *compiler) cudaInference(dev primtorch.Device, emulated bool) (py.Obj, error) {
	r := c.r
	if gradTracked(r.Graph, r.GradEnabled) {
		NoteFallback(r.Name, "autograd needs the graph (a result requires grad); ptgo's CUDA path compiles inference graphs")
		return 0, nil
	}
	idx := dev.Index
	if emulated {
		idx = -1
	} else if idx < 0 {
		idx = 0
	}
	t, err := c.cudaTarget(idx)
	if err != nil {
		reason := "no CUDA runtime: " + err.Error()
		cudaTargets.Lock()
		first := !cudaTargets.warned
		cudaTargets.warned = true
		cudaTargets.Unlock()
		if first {
			what := "graphs on CUDA tensors run with torch"
			switch {
			case errors.Is(err, cuda.ErrNoDevice):
				what += " (no usable GPU or driver)"
			case errors.Is(err, cuda.ErrNoNVRTC):
				what += " (no NVRTC: pip install nvidia-cuda-nvrtc, or set PTGO_NVRTC)"
			}
			c.h.Warn("ptgo: " + what + ": " + err.Error())
		}
		NoteFallback(r.Name, reason)
		return 0, nil
	}
	pg, err := c.decompose()
	if pg == nil {
		return 0, err
	}
	lifted, attrPaths := LiftAttrs(pg)
	comp, err := inductor.CompileCUDA(lifted, inductor.CUDACompileOptions{Check: c.cfg.CheckIR, DebugDir: c.debugDir(),
		Gen: inductor.CUDAOptions{SMs: t.SMs}, Device: dev.String()})
	if err != nil {
		if strings.Contains(err.Error(), "ptgo BUG") {
			return 0, err
		}
		NoteFallback(r.Name, err.Error())
		return 0, nil
	}
	var image []byte
	if comp.Program.HasKernels() {
		if image, err = t.Build("graph_"+sanitizeName(r.Name), comp.Source); err != nil {
			var ce *cuda.CompileError
			if errors.As(err, &ce) {
				return 0, fmt.Errorf("ptgo BUG: inductor: NVRTC rejected the CUDA kernels of %s: %w", r.Name, err)
			}
			return 0, err
		}
	}
	ks, err := inductor.LoadCUDAKernels(t.Driver, t.Device, comp.Program, image)
	if err != nil {
		return 0, err
	}
	comp.Program.RerunStatus = rerunStatus(r.Graph, pg)
	plan, err := comp.Program.JSON()
	if err != nil {
		return 0, err
	}
	g, err := c.h.CUDAGraph(plan, ks, c.consts(attrPaths), c.rerun(pg))
	if err != nil {
		_ = ks.Unload()
		return 0, err
	}
	count(&stats.cuda)
	return g, nil
}

// emulateCUDA reports whether PTGO_CUDA_EMULATE sends CPU graphs to the emulated device.
func emulateCUDA() bool { return os.Getenv(EnvCUDAEmulate) == "1" }
