package cuda

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Errors callers test for with errors.Is.
var (
	// ErrNoNVRTC: no libnvrtc was found (or it lacks a needed entry point).
	ErrNoNVRTC = errors.New("cuda: NVRTC (libnvrtc) not found")
	// ErrNoDevice: no CUDA driver, or the driver sees no GPU (cuInit's error 100).
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrUnavailable: this binary was built without cgo.
	ErrUnavailable = errors.New("cuda: this ptgo was built with CGO_ENABLED=0; CUDA needs cgo")
)

// Result is a CUresult or nvrtcResult.
type Result int

// Error is a failed driver or NVRTC call.
type Error struct {
	Call   string // "cuModuleLoadData"
	Code   Result
	Name   string // "CUDA_ERROR_NO_DEVICE", when the library can say
	Detail string
}

func (e *Error) Error() string {
	s := "cuda: " + e.Call + " failed: " + strconv.Itoa(int(e.Code))
	if e.Name != "" {
		s += " (" + e.Name + ")"
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is lets errors.Is(err, ErrNoDevice) match cuInit's "no device" and "no driver" results.
func (e *Error) Is(target error) bool {
	return target == ErrNoDevice && e.Call == "cuInit" && (e.Code == 100 || e.Code == 35 || e.Code == 999 || e.Code == 3)
}

// Arch is a compute capability, 90 for sm_90.
type Arch int

// ParseArch reads "sm_90", "compute_90", "9.0", "90".
func ParseArch(s string) (Arch, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "sm_"), "compute_")
	t = strings.TrimSuffix(t, "a")
	if maj, min, ok := strings.Cut(t, "."); ok {
		a, err1 := strconv.Atoi(maj)
		b, err2 := strconv.Atoi(min)
		if err1 == nil && err2 == nil {
			return Arch(a*10 + b), nil
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 30 || n > 200 {
		return 0, fmt.Errorf("cuda: bad arch %q; write sm_90, compute_90 or 9.0", s)
	}
	return Arch(n), nil
}

func (a Arch) String() string { return "sm_" + strconv.Itoa(int(a)) }

// Kind is what Compile produces.
type Kind uint8

const (
	// Cubin is machine code for one arch (nvrtcGetCUBIN, -arch=sm_XY).
	Cubin Kind = iota
	// PTX is virtual-ISA text the driver compiles when loading (-arch=compute_XY).
	PTX
)

func (k Kind) String() string {
	if k == PTX {
		return "ptx"
	}
	return "cubin"
}

// Binary is one compiled translation unit.
type Binary struct {
	Kind Kind
	Arch Arch
	Data []byte
	// Log is NVRTC's program log (warnings), trimmed.
	Log string
}

// Toolchain compiles CUDA C: *NVRTC, or a fake in tests.
type Toolchain interface {
	// Version is "major.minor" of the compiler (part of cache keys).
	Version() string
	Compile(name, src string, kind Kind, arch Arch, opts []string) (*Binary, error)
}

// CompileError is a translation unit NVRTC rejected, with its log.
type CompileError struct {
	Name string
	Log  string
	Opts []string
	Err  error
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("cuda: NVRTC rejected %s (%v; options %s):\n%s", e.Name, e.Err, strings.Join(e.Opts, " "), e.Log)
}

func (e *CompileError) Unwrap() error { return e.Err }

// Device pointers, modules and functions are driver handles.
type (
	DevicePtr uint64
	Module    uintptr
	Function  uintptr
	Stream    uintptr
	Context   uintptr
)

// Dim3 is a grid or block shape.
type Dim3 [3]uint32

// Driver is the part of the CUDA driver API ptgo uses: *driver over libcuda.so.1, or a fake.
type Driver interface {
	// Version is cuDriverGetVersion's number (13000 for CUDA 13.0).
	Version() int
	DeviceCount() (int, error)
	// Attribute is cuDeviceGetAttribute.
	Attribute(dev int, attr DeviceAttr) (int, error)
	// Bind makes device dev's primary context current on the calling OS thread and returns a
	// function restoring the previous one. Callers lock the goroutine to its thread around it.
	Bind(dev int) (func(), error)
	LoadModule(image []byte) (Module, error)
	Function(m Module, name string) (Function, error)
	UnloadModule(m Module) error
	// SetMaxDynamicShared raises a function's dynamic shared-memory limit (above 48 KiB).
	SetMaxDynamicShared(f Function, bytes int) error
	// Launch is cuLaunchKernel with one 8-byte parameter per args entry (every ptgo kernel
	// parameter is a device pointer).
	Launch(f Function, grid, block Dim3, sharedBytes uint32, stream Stream, args []uint64) error
	Alloc(bytes int64) (DevicePtr, error)
	Free(p DevicePtr) error
	CopyHtoD(dst DevicePtr, src []byte) error
	CopyDtoH(dst []byte, src DevicePtr) error
	Memset(dst DevicePtr, value byte, bytes int64) error
	Synchronize() error
}

// DeviceAttr is a CUdevice_attribute.
type DeviceAttr int

const (
	AttrMaxThreadsPerBlock   DeviceAttr = 1
	AttrMaxSharedPerBlock    DeviceAttr = 8
	AttrMultiprocessorCount  DeviceAttr = 16
	AttrComputeCapMajor      DeviceAttr = 75
	AttrComputeCapMinor      DeviceAttr = 76
	AttrMaxSharedPerBlockOpt DeviceAttr = 97
)

// DeviceArch is the compute capability of device dev.
func DeviceArch(d Driver, dev int) (Arch, error) {
	maj, err := d.Attribute(dev, AttrComputeCapMajor)
	if err != nil {
		return 0, err
	}
	min, err := d.Attribute(dev, AttrComputeCapMinor)
	if err != nil {
		return 0, err
	}
	return Arch(maj*10 + min), nil
}
