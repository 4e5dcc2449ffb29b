"""Builds ptgo's two native parts: libptgo.so (Go, -buildmode=c-shared) and the CPython shim ptgo._C.

`pip install . --no-build-isolation` (or `-e .`) runs both; `make setup` does it for you.
The Go toolchain must be on PATH (or set GO=/path/to/go).
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def find_go():
    go = os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"
    if not os.path.exists(go) and not shutil.which(go):
        raise RuntimeError("ptgo: the Go toolchain is needed to build libptgo.so; install Go 1.22+ and put `go` on PATH")
    return go


class BuildExt(build_ext):
    def run(self):
        super().run()
        self.stamp_fast()
        if os.environ.get("PTGO_SKIP_GO_BUILD"):
            return
        out_dir = os.path.dirname(self.get_ext_fullpath("ptgo._C"))
        os.makedirs(out_dir, exist_ok=True)
        lib = os.path.join(out_dir, "libptgo.so")
        env = dict(os.environ, CGO_ENABLED="1")
        cmd = [find_go(), "build", "-buildmode=c-shared", "-trimpath", "-o", lib, "./pybridge"]
        self.announce("building libptgo.so: " + " ".join(cmd), level=2)
        subprocess.check_call(cmd, cwd=HERE, env=env)
        header = os.path.splitext(lib)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)

    def stamp_fast(self):
        """Writes the torch version ptgo._fast was built against beside it (_fast.torch): ptgo's
        _native.fast() loads the extension only under that torch, since a libtorch C++ extension
        built for another version aborts the process when imported."""
        stamp = os.path.join(os.path.dirname(self.get_ext_fullpath("ptgo._fast")), "_fast.torch")
        if not any(ext.name == "ptgo._fast" for ext in self.extensions):
            if os.path.exists(stamp):
                os.remove(stamp)
            return
        import torch
        with open(stamp, "w") as f:
            f.write(torch.__version__ + "\n")


# What building against a torch's C++ API takes, by torch version (oldest first; a version
# uses the last row at or below it). Rows are the versions ptgo is built and tested against:
# Debian's 1.13 and PyPI's 2.14.
TORCH_CXX = (
    # version, C++ standard its headers need, defines: how libtorch_python exports
    # THPVariable_Wrap, how THPVariable holds its tensor (pybridge/fast/ptgo_variable.h),
    # whether a storage's Python object holds a reference to it that C++ keeps alive
    # (PTGO_STORAGE_PYOBJECT_PRESERVED: c10's kHasPyObject; ptgo_runtime.cpp's recyclable)
    ((1, 0), "c++17", ("PTGO_THPWRAP_BY_VALUE", "PTGO_THPVARIABLE_MAYBE_OWNED")),
    ((2, 10), "c++20", ("PTGO_THPWRAP_BY_REF",)),
    ((2, 14), "c++20", ("PTGO_THPWRAP_BY_REF", "PTGO_STORAGE_PYOBJECT_PRESERVED")),
)


def torch_location():
    """(include dirs, library dir or None, compile flags) of the torch this build is for: a
    PyPI wheel carries its headers and libraries (torch/include, torch/lib); Debian's
    python3-torch has them in /usr/include (libtorch-dev) and the linker's default path."""
    try:
        import torch
    except ImportError:
        return None
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    _, std, defines = [row for row in TORCH_CXX if version >= row[0]][-1]
    # PTGO_TORCH_VERSION (major·100 + minor): tables keyed by torch version (ptgo_runtime.cpp kPackRules)
    flags = ["-std=" + std] + ["-D" + d for d in defines] + ["-DPTGO_TORCH_VERSION=%d" % (version[0] * 100 + version[1])] + [
             "-D_GLIBCXX_USE_CXX11_ABI=%d" % int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))]
    root = os.path.dirname(torch.__file__)
    wheel = os.path.join(root, "include")
    if os.path.exists(os.path.join(wheel, "ATen", "core", "Tensor.h")):
        return [wheel, os.path.join(wheel, "torch", "csrc", "api", "include")], os.path.join(root, "lib"), flags
    if os.path.exists(os.path.join("/usr/include", "ATen", "core", "Tensor.h")):
        return ["/usr/include"], None, flags
    return None


def torch_cpp_extension():
    """ptgo._fast: the optional C++ fast path for tensor guards and the C backend's runtime,
    built against the torch it is installed for when that torch's C++ headers are there
    (Debian: libtorch-dev; PyPI wheels carry theirs). Without it the shim reads tensors through
    Python."""
    loc = None if os.environ.get("PTGO_NO_FAST") else torch_location()
    if loc is None:
        return []
    includes, libdir, flags = loc
    link = ["-Wl,-rpath," + libdir] if libdir else []
    return [
        Extension(
            "ptgo._fast",
            sources=["pybridge/fast/ptgo_fast.cpp", "pybridge/fast/ptgo_runtime.cpp", "pybridge/fast/ptgo_depthwise.cpp",
                     "pybridge/fast/ptgo_random.cpp"],
            include_dirs=["pybridge/include", "pybridge/fast"] + includes,
            library_dirs=[libdir] if libdir else [],
            extra_compile_args=["-O2", "-fvisibility=hidden"] + flags,
            extra_link_args=link,
            libraries=["c10", "torch_cpu", "torch_python"],
            language="c++",
        )
    ]


def build_base():
    """A build directory per torch (build/torch-1.13.1, build/torch-2.14.1): the extensions of
    one are never reused for another, and each stays incremental."""
    try:
        import torch
    except ImportError:
        return "build/no-torch"
    return "build/torch-" + torch.__version__.split("+")[0]


setup(
    options={"build": {"build_base": build_base()}},
    ext_modules=[
        Extension(
            "ptgo._C",
            sources=["pybridge/shim/ptgo_C.c"],
            include_dirs=["pybridge/include", "pybridge/fast"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"],
            libraries=["dl", "m"],
        )
    ] + torch_cpp_extension(),
    cmdclass={"build_ext": BuildExt},
)
