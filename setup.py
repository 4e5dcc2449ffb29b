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


def torch_cpp_extension():
    """ptgo._fast: the optional C++ fast path for tensor guards, built when torch's C++ headers
    (Debian: libtorch-dev) are installed. Without it the shim reads tensors through Python."""
    include = "/usr/include"
    if os.environ.get("PTGO_NO_FAST") or not os.path.exists(os.path.join(include, "ATen", "core", "Tensor.h")):
        return []
    return [
        Extension(
            "ptgo._fast",
            sources=["pybridge/fast/ptgo_fast.cpp", "pybridge/fast/ptgo_runtime.cpp"],
            include_dirs=["pybridge/include", "pybridge/fast", include],
            extra_compile_args=["-O2", "-std=c++17", "-D_GLIBCXX_USE_CXX11_ABI=1", "-fvisibility=hidden"],
            libraries=["c10", "torch_cpu", "torch_python"],
            language="c++",
        )
    ]


setup(
    ext_modules=[
        Extension(
            "ptgo._C",
            sources=["pybridge/shim/ptgo_C.c"],
            include_dirs=["pybridge/include", "pybridge/fast"],
            extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wno-missing-field-initializers"],
            libraries=["dl"],
        )
    ] + torch_cpp_extension(),
    cmdclass={"build_ext": BuildExt},
)
