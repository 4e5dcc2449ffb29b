"""One thread count for every library a benchmark's contestants run on.

torch.set_num_threads sets ATen's intra-op pool (OpenMP) and MKL, but Debian's torch 1.13 does its
matrix products (and the 1x1 convolutions that become them) through OpenBLAS, whose own pool keeps
the machine's core count: measured at torch.set_num_threads(1), 50 rounds of a 512x512 matmul and a
256-channel 1x1 convolution took 0.09 s of wall time with OpenBLAS at 2 threads and 0.18 s at 1, so a
"1 thread" figure was a 2-thread one for every extern GEMM (eager's, TorchScript's and ptgo's
alike) and a 1-thread one for ptgo's own kernels. set_threads sets both.
"""
import ctypes

import torch

_blas = []


def _openblas():
    """The OpenBLAS library this process has loaded (through torch), or None."""
    if not _blas:
        lib = None
        try:
            with open("/proc/self/maps") as f:
                paths = {line.split()[-1] for line in f if "libopenblas" in line}
            for path in sorted(paths):
                cand = ctypes.CDLL(path)
                if hasattr(cand, "openblas_set_num_threads"):
                    lib = cand
                    break
        except OSError:
            lib = None
        _blas.append(lib)
    return _blas[0]


def set_threads(n):
    """torch's intra-op threads and, where torch uses OpenBLAS, OpenBLAS's threads, to n."""
    torch.set_num_threads(n)
    blas = _openblas()
    if blas is not None:
        blas.openblas_set_num_threads(int(n))


def blas_threads():
    """OpenBLAS's thread count now, or None where torch does not use OpenBLAS."""
    blas = _openblas()
    if blas is None:
        return None
    blas.openblas_get_num_threads.restype = ctypes.c_int
    return blas.openblas_get_num_threads()
