package inductor

import (
	"fmt"
	"runtime"
	"strings"

	"ptgo/kernels/cuda"
	"ptgo/kernels/cuda/emu"
)

// CUDAKernels are a CUDA program's kernels loaded on one device: the module and, for every
// kernel step of the plan (by step index), the functions it launches (a split reduction's
// final kernel after the first) with their launch configurations. ExecuteCUDA (the conformance
// suite) and the torch runtime (ptgo._cuda over torch's CUDA tensors, through pybridge's
// ptgo_go_cuda_launch) launch through it, so both take the same path.
type CUDAKernels struct {
	Driver cuda.Driver
	Device int
	Module cuda.Module
	steps  map[int][]cudaFn
}

type cudaFn struct {
	name string
	fn   cuda.Function
	l    *CUDALaunch
}

// LoadCUDAKernels loads image (a cubin, PTX, or the emulator's library) on device dev and
// resolves every kernel step's functions.
func LoadCUDAKernels(d cuda.Driver, dev int, p *Program, image []byte) (*CUDAKernels, error) {
	if p.CUDA == nil {
		return nil, fmt.Errorf("inductor: program %s is not a CUDA program", p.Name)
	}
	k := &CUDAKernels{Driver: d, Device: dev, steps: map[int][]cudaFn{}}
	if !p.HasKernels() {
		return k, nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unbind, err := d.Bind(dev)
	if err != nil {
		return nil, err
	}
	defer unbind()
	if k.Module, err = d.LoadModule(image); err != nil {
		return nil, err
	}
	fns := map[string]cuda.Function{}
	for si, st := range p.Steps {
		if st.Op != "kernel" {
			continue
		}
		l := p.CUDA.Kernels[st.Kernel]
		if l == nil {
			return nil, fmt.Errorf("ptgo BUG: inductor: no launch configuration for CUDA kernel %s", st.Kernel)
		}
		for name, l := st.Kernel, l; l != nil; name, l = l.Then.kernelName(), l.Then {
			f, ok := fns[name]
			if !ok {
				if f, err = d.Function(k.Module, name); err != nil {
					return nil, err
				}
				if l.Shared > 48<<10 {
					if err := d.SetMaxDynamicShared(f, int(l.Shared)); err != nil {
						return nil, err
					}
				}
				fns[name] = f
			}
			k.steps[si] = append(k.steps[si], cudaFn{name: name, fn: f, l: l})
		}
	}
	return k, nil
}

// HasKernels reports whether the plan launches any kernel.
func (p *Program) HasKernels() bool {
	for _, st := range p.Steps {
		if st.Op == "kernel" {
			return true
		}
	}
	return false
}

// Launch launches kernel step si of the plan on stream with args (the storages' start
// addresses in the step's ptrs order, then the status word). The caller's OS thread must have
// the device's context current (Bound does that).
func (k *CUDAKernels) Launch(si int, args []uint64, stream cuda.Stream) error {
	fs, ok := k.steps[si]
	if !ok {
		return fmt.Errorf("inductor: step %d of the plan is not a kernel", si)
	}
	for _, f := range fs {
		if err := k.Driver.Launch(f.fn, cuda.Dim3(f.l.Grid), cuda.Dim3(f.l.Block), f.l.Shared, stream, args); err != nil {
			return fmt.Errorf("inductor: launching %s: %w", f.name, err)
		}
	}
	return nil
}

// Bound runs fn with the device's context current on a locked OS thread.
func (k *CUDAKernels) Bound(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unbind, err := k.Driver.Bind(k.Device)
	if err != nil {
		return err
	}
	defer unbind()
	return fn()
}

// Unload unloads the module.
func (k *CUDAKernels) Unload() error {
	if k.Module == 0 {
		return nil
	}
	return k.Bound(func() error { return k.Driver.UnloadModule(k.Module) })
}

// EmulatorUnit is a CUDA unit for the CPU emulator (package kernels/cuda/emu): its Header in
// place of the CUDA prelude, the kernels' text unchanged, and one entry per kernel.
func EmulatorUnit(src *CUDASource) string {
	var b strings.Builder
	b.WriteString(emu.Header)
	b.WriteString(src.Text[src.Prelude:])
	for _, k := range src.Kernels {
		for _, kk := range []*CUDAKernel{k, k.Final} {
			if kk == nil {
				continue
			}
			var args []string
			for i, p := range kk.Params {
				args = append(args, fmt.Sprintf("(%s)a[%d]", p, i))
			}
			fmt.Fprintf(&b, "\nstatic void ptgo_body_%s(void **a) { %s(%s); }\n", kk.Name, kk.Name, strings.Join(args, ", "))
			fmt.Fprintf(&b, "PTGO_EMU_ENTRY(%s, ptgo_body_%s, %v)\n", kk.Name, kk.Name, kk.Barriers)
		}
	}
	return b.String()
}
