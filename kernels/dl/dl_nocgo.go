//go:build !cgo

package dl

import (
	"errors"
	"unsafe"
)

// Available reports whether this build can load shared libraries (cgo on).
const Available = false

var errNoCgo = errors.New("kernels/dl: loading compiled kernels needs cgo, and this binary was built with CGO_ENABLED=0; rebuild with CGO_ENABLED=1 (ptgo falls back to eager execution meanwhile)")

// Handle is an open shared library. Without cgo none can be opened.
type Handle struct{}

// Open always fails without cgo.
func Open(path string) (Handle, error) { return Handle{}, errNoCgo }

// Sym always fails without cgo.
func (Handle) Sym(name string) (uintptr, error) { return 0, errNoCgo }

// Close does nothing without cgo.
func (Handle) Close() error { return nil }

// Call cannot be reached without cgo, since no symbol can be looked up.
func Call(fn uintptr, ptrs []unsafe.Pointer, ints []int64, floats []float64, nthreads int) int32 {
	panic(errNoCgo)
}

// Check returns the reason this build cannot load libraries.
func Check() error { return errNoCgo }
