// Package cuda compiles CUDA C to GPU code with NVRTC and loads and launches it through the CUDA
// driver API, both dlopen'ed with hand-declared prototypes (DESIGN D4: never gorgonia.org/cu,
// whose init calls os.Exit without a GPU). Like package kernels it knows nothing about graphs: it
// takes source text and kernel names, and gives back binaries, modules and launches.
//
// # NVRTC
//
// LoadNVRTC finds libnvrtc in this order (FindNVRTC lists the candidates):
//
//  1. $PTGO_NVRTC: a library file, or a directory holding one;
//  2. the sonames libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2, libnvrtc.so on the loader's
//     path (Debian's non-free libnvrtc11.2, a CUDA toolkit in ld.so.conf, LD_LIBRARY_PATH);
//  3. the lib directory of an installed PyPI nvidia-cuda-nvrtc under each search directory the
//     caller gives (Python's sys.path: site-packages/nvidia/cu13/lib, nvidia/cu12/lib,
//     nvidia/cuda_nvrtc/lib), newest major first.
//
// Compile turns one translation unit into a cubin for sm_XY (default: machine code, which any
// driver of the same major version or newer loads without a JIT step) or PTX for compute_XY
// (the driver JIT-compiles it; needs a driver at least as new as the NVRTC that wrote it). A
// Compiler adds the disk cache: binaries are content-addressed by the source, the target
// (kind and arch), the NVRTC version and the options, under $PTGO_CACHE_DIR/cuda (else
// $XDG_CACHE_HOME/ptgo/cuda, ~/.cache/ptgo/cuda), written atomically, each with a checksum
// sidecar that a load verifies.
//
// # The driver
//
// LoadDriver dlopens libcuda.so.1 and calls cuInit(0). Without the library, or when cuInit
// fails (CUDA_ERROR_NO_DEVICE, 100, on a machine without a GPU; the process goes on), it returns
// an error matching ErrNoDevice: callers run the graph with torch. Driver is an interface
// (Device, context, modules, memory, launches), so the launch logic (Launch: the parameter array
// of a kernel from its buffer pointers, the grid, block and shared memory from the plan) is
// tested here with a fake driver; the real one needs a GPU.
//
// # What is verified where
//
// Without a GPU (this project's CI): NVRTC compiles every generated kernel for compute_90 and
// the golden units to sm_90 cubins; the cache, search order and error paths are tested here
// (cuda_test.go); the CPU emulator (package emu, a Driver) runs every conformance graph's
// kernels through the same launch path (inductor.CUDAKernels) against the reference
// interpreter. A GPU machine (tools/gpu-check) runs the real driver: module loading, launches,
// results.
//
// cgo is used here and in kernels/dl only (STYLE); a CGO_ENABLED=0 build gets stubs that
// report ErrUnavailable.
package cuda
