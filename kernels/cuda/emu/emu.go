// Package emu is a CUDA device on the CPU: a cuda.Driver whose device memory is host memory and
// whose modules are generated CUDA C compiled by g++ against Header (emu.h: threads are fibers,
// blocks run one after the other; see there for what it checks and what it does not). It runs
// the CUDA conformance suite without a GPU (inductor's TestCUDAEmulated), and, with
// PTGO_CUDA_EMULATE=1, the CUDA runtime path over CPU tensors (tests of the wiring: plan
// execution, pointers, arena, externs), through the same launch code a GPU takes.
package emu

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"ptgo/kernels/cuda"
	"ptgo/kernels/dl"
)

// Header replaces the CUDA prelude of a generated unit.
//
//go:embed emu.h
var Header string

// EntryPrefix prefixes the exported entry of each kernel (PTGO_EMU_ENTRY in Header).
const EntryPrefix = "ptgo_emu_"

// ErrUnavailable: no g++ or no cgo, so no emulated device.
var ErrUnavailable = errors.New("cuda/emu: the CUDA emulator needs g++ on PATH and a cgo build")

// Available reports why the emulator cannot run here (nil when it can).
func Available() error {
	if !dl.Available {
		return ErrUnavailable
	}
	if _, err := exec.LookPath("g++"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// Driver implements cuda.Driver on the CPU. With Strict, device memory is what Alloc gave and
// every launch argument and copy must lie inside an allocation; without (the runtime over torch
// CPU tensors), launch arguments are any host addresses.
type Driver struct {
	Strict bool
	// SMs is the multiprocessor count Attribute reports (small: grid-stride loops then run
	// several iterations per thread).
	SMs int

	mu     sync.Mutex
	allocs map[uint64][]byte
	bases  []uint64
	mods   map[cuda.Module]dl.Handle
	next   cuda.Module
}

// pins keeps device memory pinned (kernels get its addresses through C) for the life of the
// process: a Pinner collected with pins left panics, and Free keeps memory anyway.
var (
	pinMu sync.Mutex
	pins  runtime.Pinner
)

// New returns an emulated device.
func New(strict bool) *Driver {
	return &Driver{Strict: strict, SMs: 2, allocs: map[uint64][]byte{}, mods: map[cuda.Module]dl.Handle{}}
}

var _ cuda.Driver = (*Driver)(nil)

func (d *Driver) Version() int              { return 0 }
func (d *Driver) DeviceCount() (int, error) { return 1, nil }

func (d *Driver) Attribute(dev int, a cuda.DeviceAttr) (int, error) {
	switch a {
	case cuda.AttrComputeCapMajor:
		return 9, nil
	case cuda.AttrComputeCapMinor:
		return 0, nil
	case cuda.AttrMultiprocessorCount:
		return d.SMs, nil
	case cuda.AttrMaxThreadsPerBlock:
		return 1024, nil
	}
	return 0, nil
}

func (d *Driver) Bind(dev int) (func(), error) { return func() {}, nil }

// LoadModule takes the path of a library Build made.
func (d *Driver) LoadModule(image []byte) (cuda.Module, error) {
	h, err := dl.Open(string(image))
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	d.mods[d.next] = h
	return d.next, nil
}

func (d *Driver) Function(m cuda.Module, name string) (cuda.Function, error) {
	d.mu.Lock()
	h, ok := d.mods[m]
	d.mu.Unlock()
	if !ok {
		return 0, fmt.Errorf("cuda/emu: module %d is not loaded", m)
	}
	p, err := h.Sym(EntryPrefix + name)
	return cuda.Function(p), err
}

// UnloadModule keeps the library loaded (kernels of it may still be referenced) and forgets the
// handle.
func (d *Driver) UnloadModule(m cuda.Module) error {
	d.mu.Lock()
	delete(d.mods, m)
	d.mu.Unlock()
	return nil
}

func (d *Driver) SetMaxDynamicShared(cuda.Function, int) error { return nil }

// Launch runs the kernel to completion (the stream is ignored: everything is synchronous).
func (d *Driver) Launch(f cuda.Function, grid, block cuda.Dim3, shared uint32, stream cuda.Stream, args []uint64) error {
	if f == 0 {
		return errors.New("cuda/emu: launch of a nil function")
	}
	ints := []int64{int64(grid[0]), int64(grid[1]), int64(grid[2]), int64(block[0]), int64(block[1]), int64(block[2]), int64(shared), 0, int64(len(args))}
	for _, a := range args {
		if d.Strict {
			if _, _, err := d.find(cuda.DevicePtr(a), 1); err != nil {
				return fmt.Errorf("cuda/emu: launch argument %#x: %w", a, err)
			}
		} else if a == 0 {
			return errors.New("cuda/emu: a launch argument is a null pointer")
		}
		ints = append(ints, int64(a))
	}
	if rc := dl.Call(uintptr(f), nil, ints, nil, 1); rc != 0 {
		return fmt.Errorf("cuda/emu: emulated launch failed: %d", rc)
	}
	return nil
}

// Alloc returns 256-byte aligned host memory, as cudaMalloc's is aligned.
func (d *Driver) Alloc(bytes int64) (cuda.DevicePtr, error) {
	buf := make([]byte, bytes+256)
	d.mu.Lock()
	defer d.mu.Unlock()
	pinMu.Lock()
	pins.Pin(&buf[0])
	pinMu.Unlock()
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	skip := (256 - addr%256) % 256
	buf = buf[skip : skip+uint64(bytes)]
	addr += skip
	d.allocs[addr] = buf
	d.bases = append(d.bases, addr)
	sort.Slice(d.bases, func(i, j int) bool { return d.bases[i] < d.bases[j] })
	return cuda.DevicePtr(addr), nil
}

// Free keeps the memory until the process ends (a kernel running late would otherwise write
// freed memory; tests allocate little).
func (d *Driver) Free(p cuda.DevicePtr) error { return nil }

// find returns the allocation holding [p, p+n).
func (d *Driver) find(p cuda.DevicePtr, n int64) ([]byte, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := uint64(p)
	i := sort.Search(len(d.bases), func(i int) bool { return d.bases[i] > a }) - 1
	if i < 0 {
		return nil, 0, fmt.Errorf("address %#x is not device memory", a)
	}
	buf := d.allocs[d.bases[i]]
	off := a - d.bases[i]
	if off+uint64(n) > uint64(len(buf))+1 {
		return nil, 0, fmt.Errorf("address %#x + %d is past its allocation (%d bytes)", a, n, len(buf))
	}
	return buf, off, nil
}

func (d *Driver) CopyHtoD(dst cuda.DevicePtr, src []byte) error {
	buf, off, err := d.find(dst, int64(len(src)))
	if err == nil {
		copy(buf[off:], src)
	}
	return err
}

func (d *Driver) CopyDtoH(dst []byte, src cuda.DevicePtr) error {
	buf, off, err := d.find(src, int64(len(dst)))
	if err == nil {
		copy(dst, buf[off:])
	}
	return err
}

func (d *Driver) Memset(dst cuda.DevicePtr, v byte, n int64) error {
	buf, off, err := d.find(dst, n)
	if err == nil {
		for i := off; i < off+uint64(n) && i < uint64(len(buf)); i++ {
			buf[i] = v
		}
	}
	return err
}

func (d *Driver) Synchronize() error { return nil }

// Build compiles an emulated unit (Header, the kernels' text, one PTGO_EMU_ENTRY per kernel)
// with g++ into dir, content-addressed, and returns the library's path: the module image
// LoadModule takes.
func Build(text, dir string) ([]byte, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(text))
	base := filepath.Join(dir, hex.EncodeToString(sum[:12]))
	if _, err := os.Stat(base + ".so"); err == nil {
		return []byte(base + ".so"), nil
	}
	tmp := fmt.Sprintf("%s.%d", base, os.Getpid())
	if err := os.WriteFile(tmp+".cpp", []byte(text), 0o644); err != nil {
		return nil, err
	}
	defer os.Remove(tmp + ".cpp")
	cmd := exec.Command("g++", "-std=c++17", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-w", "-o", tmp+".so", tmp+".cpp", "-lm")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		_ = os.WriteFile(base+".failed.cpp", []byte(text), 0o644)
		return nil, fmt.Errorf("cuda/emu: g++ rejected the emulated unit (kept as %s.failed.cpp): %v\n%s", base, err, out.String())
	}
	if err := os.Rename(tmp+".so", base+".so"); err != nil {
		return nil, err
	}
	return []byte(base + ".so"), nil
}
