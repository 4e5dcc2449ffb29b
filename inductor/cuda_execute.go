package inductor

import (
	"fmt"

	"ptgo/kernels/cuda"
)

// ExecuteCUDA runs a CUDA program through a driver: the GPU conformance suite's runtime (a real
// driver on a GPU machine, tools/gpu-check) and the emulated device's (kernels/cuda/emu); the
// torch runtime (python/ptgo/_cuda.py) runs the same plan over torch's CUDA tensors through the
// same CUDAKernels. Inputs (host tensors with the
// plan's layouts) are copied to device memory, the arena and every allocated buffer is device
// memory, kernels are launched from image (the module: a cubin, PTX or what the driver loads)
// with their storages' start pointers and the status word, the externs goExterns knows (mm, bmm,
// addmm) run on host copies, and the outputs and the inputs (which copy_ may have written) are
// copied back. A nonzero status (an index out of range, a division by zero) is an error after
// the run, as the C kernels' return value is.
func ExecuteCUDA(d cuda.Driver, dev int, p *Program, image []byte, inputs []*Tensor) ([]*Tensor, error) {
	if len(inputs) != len(p.Inputs) {
		return nil, fmt.Errorf("inductor: program %s takes %d inputs, got %d", p.Name, len(p.Inputs), len(inputs))
	}
	ks, err := LoadCUDAKernels(d, dev, p, image)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ks.Unload() }()
	var out []*Tensor
	err = ks.Bound(func() error {
		var err error
		out, err = executeCUDA(ks, p, inputs)
		return err
	})
	return out, err
}

func executeCUDA(ks *CUDAKernels, p *Program, inputs []*Tensor) ([]*Tensor, error) {
	d := ks.Driver
	x := &cudaExec{d: d, p: p, ks: ks, bufs: make([]devTensor, len(p.Buffers))}
	defer x.release()
	var err error
	if x.status, err = x.alloc(4); err != nil {
		return nil, err
	}
	if err := d.Memset(x.status, 0, 4); err != nil {
		return nil, err
	}
	if p.ArenaBytes > 0 {
		if x.arena, err = x.alloc(p.ArenaBytes); err != nil {
			return nil, err
		}
		// poison: a kernel reading a temporary nothing wrote sees NaNs, not zeros
		if err := d.Memset(x.arena, 0xff, p.ArenaBytes); err != nil {
			return nil, err
		}
	}
	for i, id := range p.Inputs {
		spec := p.Buffers[id]
		if err := checkLayout(spec, inputs[i]); err != nil {
			return nil, fmt.Errorf("inductor: input %d of %s: %w", i, p.Name, err)
		}
		ptr, err := x.alloc(int64(len(inputs[i].Data)))
		if err != nil {
			return nil, err
		}
		if err := d.CopyHtoD(ptr, inputs[i].Data); err != nil {
			return nil, err
		}
		x.bufs[id] = devTensor{ptr: ptr, bytes: int64(len(inputs[i].Data)), ok: true}
	}
	for si, st := range p.Steps {
		if err := x.step(si, st); err != nil {
			return nil, err
		}
	}
	if err := d.Synchronize(); err != nil {
		return nil, err
	}
	word := make([]byte, 4)
	if err := d.CopyDtoH(word, x.status); err != nil {
		return nil, err
	}
	if s := int32(word[0]) | int32(word[1])<<8 | int32(word[2])<<16 | int32(word[3])<<24; s != 0 {
		return nil, fmt.Errorf("inductor: a CUDA kernel of %s failed with status %d (1: an index out of range, 2: an integer division by zero)", p.Name, s)
	}
	for i, id := range p.Inputs {
		if err := d.CopyDtoH(inputs[i].Data, x.bufs[id].ptr); err != nil {
			return nil, err
		}
	}
	out := make([]*Tensor, len(p.Outputs))
	for i, o := range p.Outputs {
		if o.Buf < 0 {
			continue
		}
		t, err := x.host(o.Buf)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// devTensor is a plan buffer's storage on the device.
type devTensor struct {
	ptr   cuda.DevicePtr
	bytes int64
	ok    bool
}

type cudaExec struct {
	d      cuda.Driver
	p      *Program
	ks     *CUDAKernels
	bufs   []devTensor
	status cuda.DevicePtr
	arena  cuda.DevicePtr
	allocs []cuda.DevicePtr
}

func (x *cudaExec) alloc(bytes int64) (cuda.DevicePtr, error) {
	p, err := x.d.Alloc(max(bytes, 1))
	if err == nil {
		x.allocs = append(x.allocs, p)
	}
	return p, err
}

func (x *cudaExec) release() {
	for _, p := range x.allocs {
		_ = x.d.Free(p)
	}
}

func (x *cudaExec) step(si int, st PStep) error {
	p := x.p
	switch st.Op {
	case "alloc":
		spec := p.Buffers[st.Buf]
		need := spec.StorageElems * int64(spec.DType.ItemSize())
		if spec.Arena >= 0 {
			if spec.Arena+need > p.ArenaBytes {
				return fmt.Errorf("ptgo BUG: inductor: %%%d is outside the arena", st.Buf)
			}
			x.bufs[st.Buf] = devTensor{ptr: x.arena + cuda.DevicePtr(spec.Arena), bytes: need, ok: true}
			return nil
		}
		ptr, err := x.alloc(need)
		if err != nil {
			return err
		}
		if err := x.d.Memset(ptr, 0xff, max(need, 1)); err != nil {
			return err
		}
		x.bufs[st.Buf] = devTensor{ptr: ptr, bytes: need, ok: true}
	case "view":
		base := x.bufs[p.Buffers[st.Buf].Base]
		if !base.ok {
			return fmt.Errorf("ptgo BUG: inductor: step %d views a buffer that does not exist", si)
		}
		x.bufs[st.Buf] = base
	case "free":
		x.bufs[st.Buf] = devTensor{}
	case "kernel":
		args := make([]uint64, 0, len(st.Ptrs)+1)
		for _, id := range st.Ptrs {
			b := x.bufs[id]
			if !b.ok {
				return fmt.Errorf("ptgo BUG: inductor: kernel %s reads %%%d before it exists", st.Kernel, id)
			}
			args = append(args, uint64(b.ptr))
		}
		args = append(args, uint64(x.status))
		return x.ks.Launch(si, args, 0)
	case "extern":
		return x.extern(st)
	default:
		return fmt.Errorf("inductor: unknown plan step %q", st.Op)
	}
	return nil
}

func (l *CUDALaunch) kernelName() string {
	if l == nil {
		return ""
	}
	return l.Kernel
}

// host copies buffer id to a host tensor of its plan layout.
func (x *cudaExec) host(id int) (*Tensor, error) {
	spec := x.p.Buffers[id]
	b := x.bufs[id]
	if !b.ok {
		return nil, fmt.Errorf("ptgo BUG: inductor: %%%d was freed or never made", id)
	}
	data := NewStorage(spec.StorageElems * int64(spec.DType.ItemSize()))
	if err := x.d.CopyDtoH(data, b.ptr); err != nil {
		return nil, err
	}
	return &Tensor{DType: spec.DType, Sizes: spec.Sizes, Strides: spec.Strides, Offset: spec.Offset, Data: data}, nil
}

// extern runs a Go extern on host copies of its arguments.
func (x *cudaExec) extern(st PStep) error {
	fn := goExterns[st.Target]
	if fn == nil {
		return fmt.Errorf("inductor: the Go executor cannot run extern %s; run this plan in the torch runtime", st.Target)
	}
	var resolve func(a PArg) (any, error)
	resolve = func(a PArg) (any, error) {
		switch {
		case a.Buf >= 0:
			return x.host(a.Buf)
		case a.IsSeq:
			out := make([]any, len(a.Seq))
			for i, e := range a.Seq {
				v, err := resolve(e)
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		}
		return a.Value, nil
	}
	args := make([]any, len(st.Args))
	for i, a := range st.Args {
		v, err := resolve(a)
		if err != nil {
			return err
		}
		args[i] = v
	}
	kwargs := map[string]any{}
	for _, kw := range st.Kwargs {
		v, err := resolve(kw.Value)
		if err != nil {
			return err
		}
		kwargs[kw.Name] = v
	}
	outs, err := fn(args, kwargs)
	if err != nil {
		return fmt.Errorf("inductor: extern %s: %w", st.Target, err)
	}
	if len(outs) != len(st.Outs) {
		return fmt.Errorf("inductor: extern %s gave %d results, the plan expects %d", st.Target, len(outs), len(st.Outs))
	}
	for i, id := range st.Outs {
		if id < 0 {
			continue // a None result
		}
		spec := x.p.Buffers[id]
		t := outs[i]
		if st.Into {
			dst, err := x.host(id)
			if err != nil {
				return err
			}
			copyElems(dst, t)
			t = dst
		} else if checkLayout(spec, t) != nil {
			t = copyInto(spec, t)
		}
		if !x.bufs[id].ok {
			ptr, err := x.alloc(int64(len(t.Data)))
			if err != nil {
				return err
			}
			x.bufs[id] = devTensor{ptr: ptr, bytes: int64(len(t.Data)), ok: true}
		}
		if err := x.d.CopyHtoD(x.bufs[id].ptr, t.Data); err != nil {
			return err
		}
	}
	return nil
}
