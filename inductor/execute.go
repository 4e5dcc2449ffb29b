package inductor

import (
	"fmt"
	"ptgo/primtorch"
	"slices"
	"unsafe"

	"ptgo/kernels"
)

// Execute runs a plan over Go-owned host memory: the reference runtime for tests (the CPython
// extension runs the same plan over at::Tensors). Inputs must have exactly the plan's dtypes,
// sizes, strides and offsets. Arena temporaries are slices of one fresh arena (so overlapping
// placements corrupt results, which tests see), and Once kernels run. Kernels are called through
// kernels/dl with nthreads OpenMP threads; externs run the naive Go implementations in goExterns
// (prims.mm, prims.bmm, prims.addmm; an Into extern's result is copied into its allocated
// buffer); other externs (fallbacks, convolution) are an error here.
func Execute(p *Program, lib *kernels.Library, inputs []*Tensor, nthreads int) ([]*Tensor, error) {
	return execute(p, lib, inputs, nil, nil, nthreads, &execArena{})
}

// ExecuteInts is Execute for a program that takes int arguments (Program.IntInputs): ints are
// their values, in placeholder order.
func ExecuteInts(p *Program, lib *kernels.Library, inputs []*Tensor, ints []int64, nthreads int) ([]*Tensor, error) {
	return execute(p, lib, inputs, ints, nil, nthreads, &execArena{})
}

// ExecuteArgs is Execute for a program that takes int and float arguments (Program.IntInputs,
// Program.FloatInputs), each in placeholder order.
func ExecuteArgs(p *Program, lib *kernels.Library, inputs []*Tensor, ints []int64, floats []float64, nthreads int) ([]*Tensor, error) {
	return execute(p, lib, inputs, ints, floats, nthreads, &execArena{})
}

// execArena is the memory a plan's temporaries live in, kept across calls as the CPython runtime
// keeps it: the Once kernels (constants) run only on its first call, later calls read what they
// left. The zero execArena is fresh.
type execArena struct {
	data []byte
	used bool
	// dyn is the dynamic part (symbolic temporaries), grown when a call needs more
	dyn []byte
}

func execute(p *Program, lib *kernels.Library, inputs []*Tensor, ints []int64, floats []float64, nthreads int, a *execArena) ([]*Tensor, error) {
	if len(inputs) != len(p.Inputs) {
		return nil, fmt.Errorf("inductor: program %s takes %d inputs, got %d", p.Name, len(p.Inputs), len(inputs))
	}
	if len(ints) != p.IntInputs {
		return nil, fmt.Errorf("inductor: program %s takes %d int arguments, got %d", p.Name, p.IntInputs, len(ints))
	}
	if len(floats) != p.FloatInputs {
		return nil, fmt.Errorf("inductor: program %s takes %d float arguments, got %d", p.Name, p.FloatInputs, len(floats))
	}
	specs, syms, err := concreteBuffersInts(p, inputs, ints)
	if err != nil {
		return nil, err
	}
	bufs := make([]*Tensor, len(p.Buffers))
	dead := map[int][]byte{}
	if int64(len(a.data)) != p.ArenaBytes {
		a.data, a.used = NewStorage(p.ArenaBytes), false
	}
	arena, fresh := a.data, !a.used
	var dynOff []int64
	if len(p.Symbols) > 0 {
		var dynBytes int64
		dynOff, dynBytes = PlaceDynamic(p, specs)
		if int64(len(a.dyn)) < dynBytes {
			a.dyn = NewStorage(dynBytes)
		}
	}
	for i, id := range p.Inputs {
		spec := specs[id]
		t := inputs[i]
		if err := checkLayout(spec, t); err != nil {
			return nil, fmt.Errorf("inductor: input %d of %s: %w; call it with inputs of the layout it was compiled for", i, p.Name, err)
		}
		bufs[id] = t
	}
	fns := map[string]kernels.Kernel{}
	for si, st := range p.Steps {
		switch st.Op {
		case "alloc":
			spec := specs[st.Buf]
			need := spec.StorageElems * int64(spec.DType.ItemSize())
			var data []byte
			if spec.ArenaDyn {
				off := dynOff[st.Buf]
				if off < 0 || off+need > int64(len(a.dyn)) {
					return nil, fmt.Errorf("ptgo BUG: inductor: %%%d (%d bytes at %d) is outside the dynamic arena (%d bytes)", st.Buf, need, off, len(a.dyn))
				}
				data = a.dyn[off : off+need : off+need]
			} else if spec.Arena >= 0 {
				if spec.Arena+need > int64(len(arena)) {
					return nil, fmt.Errorf("ptgo BUG: inductor: %%%d (%d bytes at %d) is outside the arena (%d bytes)", st.Buf, need, spec.Arena, len(arena))
				}
				data = arena[spec.Arena : spec.Arena+need : spec.Arena+need]
			} else if st.Reuse >= 0 {
				data = dead[st.Reuse]
				if int64(len(data)) < need {
					return nil, fmt.Errorf("ptgo BUG: inductor: step %d reuses %%%d (%d bytes) for %%%d (%d bytes)", si, st.Reuse, len(data), st.Buf, need)
				}
				delete(dead, st.Reuse)
			} else {
				data = NewStorage(need)
			}
			bufs[st.Buf] = &Tensor{DType: spec.DType, Sizes: spec.Sizes, Strides: spec.Strides, Offset: spec.Offset, Data: data}
		case "view":
			spec := specs[st.Buf]
			base := bufs[spec.Base]
			if base == nil {
				return nil, fmt.Errorf("ptgo BUG: inductor: step %d views %%%d, which does not exist", si, spec.Base)
			}
			bufs[st.Buf] = &Tensor{DType: spec.DType, Sizes: spec.Sizes, Strides: spec.Strides, Offset: spec.Offset, Data: base.Data}
		case "free":
			if t := bufs[st.Buf]; t != nil && p.Buffers[st.Buf].Role == "alloc" && p.Buffers[st.Buf].Arena < 0 && !p.Buffers[st.Buf].ArenaDyn {
				dead[st.Buf] = t.Data
			}
			bufs[st.Buf] = nil
		case "kernel":
			if st.Once && !fresh {
				continue
			}
			k, ok := fns[st.Kernel]
			if !ok {
				var err error
				if k, err = lib.Kernel(st.Kernel); err != nil {
					return nil, err
				}
				fns[st.Kernel] = k
			}
			ptrs := make([]unsafe.Pointer, len(st.Ptrs))
			for i, id := range st.Ptrs {
				t := bufs[id]
				if t == nil {
					return nil, fmt.Errorf("ptgo BUG: inductor: kernel %s reads %%%d before it exists", st.Kernel, id)
				}
				if len(t.Data) > 0 {
					ptrs[i] = unsafe.Pointer(&t.Data[0])
				}
			}
			ints := st.Ints
			if len(p.Symbols) > 0 {
				ints = syms
			}
			fl := st.Floats
			if p.FloatInputs > 0 {
				fl = floats
			}
			if err := k.Call(ptrs, ints, fl, max(nthreads, 1)); err != nil {
				return nil, fmt.Errorf("inductor: %w (status bits: 1 an index out of range, 2 an integer division by zero)", err)
			}
		case "extern":
			fn := goExterns[st.Target]
			if fn == nil {
				return nil, fmt.Errorf("inductor: the Go executor cannot run extern %s; run this plan in the torch runtime", st.Target)
			}
			args := make([]any, len(st.Args))
			for i, a := range st.Args {
				args[i] = resolveArg(a, bufs)
			}
			kwargs := map[string]any{}
			for _, kw := range st.Kwargs {
				kwargs[kw.Name] = resolveArg(kw.Value, bufs)
			}
			outs, err := fn(args, kwargs)
			if err != nil {
				return nil, fmt.Errorf("inductor: extern %s: %w", st.Target, err)
			}
			if len(outs) != len(st.Outs) {
				return nil, fmt.Errorf("inductor: extern %s gave %d results, the plan expects %d", st.Target, len(outs), len(st.Outs))
			}
			for i, id := range st.Outs {
				if id < 0 {
					continue // a None result
				}
				spec := specs[id]
				t := outs[i]
				if st.Into {
					dst := bufs[id]
					if dst == nil {
						return nil, fmt.Errorf("ptgo BUG: inductor: extern %s writes into %%%d, which was not allocated", st.Target, id)
					}
					if !slices.Equal(dst.Sizes, t.Sizes) {
						return nil, fmt.Errorf("inductor: extern %s gave sizes %v, the plan expects %v", st.Target, t.Sizes, dst.Sizes)
					}
					copyElems(dst, t)
					continue
				}
				if checkLayout(spec, t) != nil {
					t = copyInto(spec, t)
				}
				bufs[id] = t
			}
		default:
			return nil, fmt.Errorf("inductor: unknown plan step %q", st.Op)
		}
	}
	a.used = true
	out := make([]*Tensor, len(p.Outputs))
	for i, o := range p.Outputs {
		if o.Buf < 0 {
			continue
		}
		if bufs[o.Buf] == nil {
			return nil, fmt.Errorf("ptgo BUG: inductor: output %d (%%%d) was freed or never made", i, o.Buf)
		}
		out[i] = bufs[o.Buf]
	}
	return out, nil
}

func resolveArg(a PArg, bufs []*Tensor) any {
	switch {
	case a.Buf >= 0:
		return bufs[a.Buf]
	case a.IsSeq:
		out := make([]any, len(a.Seq))
		for i, e := range a.Seq {
			out[i] = resolveArg(e, bufs)
		}
		return out
	}
	return a.Value
}

// checkLayout compares a tensor with a plan buffer: dtype, sizes, strides of dims with more than
// one element, and offset.
func checkLayout(spec BufSpec, t *Tensor) error {
	if t == nil {
		return fmt.Errorf("missing tensor")
	}
	if t.DType != spec.DType {
		return fmt.Errorf("dtype %s, expected %s", t.DType, spec.DType)
	}
	if !slices.Equal(t.Sizes, spec.Sizes) {
		return fmt.Errorf("sizes %v, expected %v", t.Sizes, spec.Sizes)
	}
	for d, s := range t.Sizes {
		if s > 1 && t.Strides[d] != spec.Strides[d] {
			return fmt.Errorf("strides %v, expected %v", t.Strides, spec.Strides)
		}
	}
	if t.Offset != spec.Offset && numel(t.Sizes) > 0 {
		return fmt.Errorf("storage offset %d, expected %d", t.Offset, spec.Offset)
	}
	if need := storageElems(t.Sizes, t.Strides, t.Offset) * int64(t.DType.ItemSize()); int64(len(t.Data)) < need {
		return fmt.Errorf("storage of %d bytes, the layout needs %d", len(t.Data), need)
	}
	return nil
}

// copyInto copies t into a new tensor with spec's layout.
func copyInto(spec BufSpec, t *Tensor) *Tensor {
	out := NewStrided(spec.DType, spec.Sizes, spec.Strides, spec.Offset)
	copyElems(out, t)
	return out
}

// copyElems copies t's elements (in logical order) into out, which has the same sizes.
func copyElems(out, t *Tensor) {
	for k := int64(0); k < t.Numel(); k++ {
		if out.DType.IsFloatingPoint() {
			out.Set(k, t.At(k))
		} else {
			out.SetInt(k, t.AtInt(k))
		}
	}
}

// SymbolValues reads a symbolic program's symbol values from its inputs' sizes (nil for a
// static program).
func SymbolValues(p *Program, inputs []*Tensor) ([]int64, error) {
	return SymbolValuesInts(p, inputs, nil)
}

// SymbolValuesInts is SymbolValues for a program that also reads symbols from its int
// arguments (ints) and its inputs' storage offsets.
func SymbolValuesInts(p *Program, inputs []*Tensor, ints []int64) ([]int64, error) {
	if len(p.Symbols) == 0 {
		return nil, nil
	}
	vals := make([]int64, len(p.Symbols))
	for id, src := range p.Symbols {
		if src.Dim == SymDerived {
			if err := derivedValue(p, vals, id); err != nil {
				return nil, err
			}
			continue
		}
		if src.Input < 0 {
			continue
		}
		switch {
		case src.Dim == SymIntArg:
			if src.Input >= len(ints) {
				return nil, fmt.Errorf("inductor: program %s reads size symbol s%d from int argument %d, which it was not given", p.Name, id, src.Input)
			}
			vals[id] = ints[src.Input]
		case src.Input >= len(inputs) || inputs[src.Input] == nil || src.Dim >= len(inputs[src.Input].Sizes):
			return nil, fmt.Errorf("inductor: program %s reads size symbol s%d from dim %d of input %d, which it does not have", p.Name, id, src.Dim, src.Input)
		case src.Dim == SymOffset:
			vals[id] = inputs[src.Input].Offset
		default:
			vals[id] = inputs[src.Input].Sizes[src.Dim]
		}
		if vals[id] < 2 {
			return nil, fmt.Errorf("inductor: program %s was compiled for s%d >= 2 (dim %d of input %d), got %d", p.Name, id, src.Dim, src.Input, vals[id])
		}
	}
	return vals, nil
}

// derivedValue sets vals[id], a derived symbol, from the earlier symbols' values.
func derivedValue(p *Program, vals []int64, id int) error {
	src := p.Symbols[id]
	env := primtorch.NewShapeEnv()
	for i := 0; i < id; i++ {
		env.NewSymbol(vals[i], "")
	}
	num, err := primtorch.ParseSymInt(src.Def, env)
	if err != nil || src.Div < 2 {
		return fmt.Errorf("inductor: program %s: derived size symbol s%d has def %q // %d", p.Name, id, src.Def, src.Div)
	}
	q := num.Eval(vals[:id]) / src.Div
	if q*src.Div > num.Eval(vals[:id]) {
		q--
	}
	vals[id] = q
	return nil
}

// concreteBuffers is the program's buffers at this call's symbol values (p.Buffers itself for a
// static program), and those values.
func concreteBuffers(p *Program, inputs []*Tensor) ([]BufSpec, []int64, error) {
	return concreteBuffersInts(p, inputs, nil)
}

func concreteBuffersInts(p *Program, inputs []*Tensor, ints []int64) ([]BufSpec, []int64, error) {
	if len(p.Symbols) == 0 {
		return p.Buffers, nil, nil
	}
	vals, err := SymbolValuesInts(p, inputs, ints)
	if err != nil {
		return nil, nil, err
	}
	out := make([]BufSpec, len(p.Buffers))
	for i, b := range p.Buffers {
		out[i] = b
		if b.SymSizes != nil {
			out[i].Sizes = make([]int64, len(b.SymSizes))
			for k, s := range b.SymSizes {
				out[i].Sizes[k] = s.Eval(vals)
			}
			out[i].StorageElems = b.SymStorage.Eval(vals)
		}
		if b.SymStrides != nil {
			out[i].Strides = make([]int64, len(b.SymStrides))
			for k, s := range b.SymStrides {
				out[i].Strides[k] = s.Eval(vals)
			}
			out[i].Offset = b.SymOffset.Eval(vals)
		}
	}
	return out, vals, nil
}
