package kernels

import (
	"fmt"
	"unsafe"

	"ptgo/kernels/dl"
)

// Library is a loaded shared library. Every Compile that returns it holds a
// reference; Release gives one back, and the last one unloads it (dlclose) and
// forgets it, so a process that compiles and drops many graphs does not keep
// their code mapped (issue 8). Release only when nothing runs its code any
// more: the C++ runtime dlopens the file itself for each graph it builds (and
// dlcloses it when the graph dies), so the pipeline releases its reference as
// soon as the runtime graph exists. A library nobody releases stays loaded.
type Library struct {
	Artifact
	handle dl.Handle
	owner  *Compiler
	refs   int  // Compile calls that returned it and have not released it (owner.mu)
	closed bool // unloaded: a Compile waiting on its flight loads the key afresh (owner.mu)
}

// Release gives back the reference a Compile returned; the last one unloads the
// library. Releasing more often than Compile returned the library is a no-op.
func (l *Library) Release() {
	if l == nil || l.owner == nil {
		return
	}
	c := l.owner
	c.mu.Lock()
	if l.closed || l.refs == 0 {
		c.mu.Unlock()
		return
	}
	l.refs--
	if l.refs > 0 {
		c.mu.Unlock()
		return
	}
	l.closed = true
	if f, ok := c.loaded[l.Key]; ok && f.lib == l {
		delete(c.loaded, l.Key)
	}
	c.mu.Unlock()
	_ = l.handle.Close()
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
