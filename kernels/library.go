package kernels

import (
	"fmt"
	"unsafe"

	"ptgo/kernels/dl"
)

// Library is a loaded shared library. Libraries stay loaded for the life of
// the process: generated code may be called at any time, and unloading one
// while another goroutine or an OpenMP team runs it would crash.
type Library struct {
	Artifact
	handle dl.Handle
}

// Symbol returns the address of an exported (PTGO_KERNEL) symbol, for the
// CPython shim to call with no Go on the hot path.
func (l *Library) Symbol(name string) (uintptr, error) {
	addr, err := l.handle.Sym(name)
	if err != nil {
		return 0, fmt.Errorf("%w (library of %q, source %s)", err, l.Name, l.SourcePath)
	}
	return addr, nil
}

// Kernel looks up an entry point of type ptgo_kernel_fn.
func (l *Library) Kernel(name string) (Kernel, error) {
	addr, err := l.Symbol(name)
	if err != nil {
		return Kernel{}, err
	}
	return Kernel{Name: name, Addr: addr}, nil
}

// Kernel is an entry point following the kernel ABI (see Header).
type Kernel struct {
	// Name is the symbol name.
	Name string
	// Addr is its address.
	Addr uintptr
}

// Call runs the kernel: ptrs are tensor data pointers (Go memory is pinned for
// the call), ints and floats its scalar arguments, nthreads the OpenMP thread
// count (≥ 1). A nonzero status from the kernel is a *KernelError.
func (k Kernel) Call(ptrs []unsafe.Pointer, ints []int64, floats []float64, nthreads int) error {
	if k.Addr == 0 {
		return fmt.Errorf("kernels: calling kernel %q with no address; look it up with Library.Kernel", k.Name)
	}
	if nthreads < 1 {
		return fmt.Errorf("kernels: calling kernel %s with nthreads=%d; pass at least 1 (torch.get_num_threads())", k.Name, nthreads)
	}
	if status := dl.Call(k.Addr, ptrs, ints, floats, nthreads); status != 0 {
		return &KernelError{Kernel: k.Name, Status: status}
	}
	return nil
}
