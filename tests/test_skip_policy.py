"""The one skip policy (ptgo._runtime._skip_policy): which code is library code, which frames the
hook captures, and that code outside the libraries is guarded like the user's wherever it lives —
a venv's site-packages, Debian's dist-packages, a folder of the user's named ``ptgo`` or ``torch``."""
import importlib
import os
import subprocess
import sys
import sysconfig
import textwrap

import pytest
import torch

import ptgo
from ptgo import _runtime

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.realpath(ptgo.__file__)))  # the ptgo under test

LIB_SRC = textwrap.dedent("""
    import torch

    SCALE = 2.0

    def scaled(x):
        return x * SCALE + 1

    def make_scaler(s):
        def scaler(x):
            return x * s
        def set_scale(v):
            nonlocal s
            s = v
        return scaler, set_scale

    class Scale(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x) * SCALE
""")


def owner(path):
    _runtime.ensure_initialized()
    return _runtime.code_owner(path)


def test_policy_classifies_library_and_user_code():
    import json
    import torch.nn.modules.linear as linear
    import torch.nn.modules.module as module

    stdlib = os.path.dirname(os.__file__)
    assert owner(json.__file__) == ("the standard library", True)
    assert owner(os.path.join(stdlib, "collections", "__init__.py"))[1]
    assert owner("<frozen os>") == ("the standard library", True)
    assert owner(torch.__file__) == ("torch", True)
    assert owner(linear.__file__) == ("torch", False), "torch.nn's module files are captured"
    assert owner(module.__file__) == ("torch", True), "Module.__call__ is never captured"
    assert owner(ptgo.__file__) == ("ptgo", True)
    assert owner(__file__) == (None, False)
    assert owner("<stdin>") == (None, False)


def test_no_rule_skips_a_site_directory():
    """site-packages and dist-packages are never skipped as a whole, whatever lies above them."""
    rules = _runtime._skip_policy()
    for path, kind, who in rules:
        base = os.path.basename(path.rstrip(os.sep))
        if kind != _runtime.RULE_CAPTURE_DIR:
            assert base not in ("site-packages", "dist-packages"), (path, who)
    for site_dir in _runtime._site_dirs():
        assert owner(os.path.join(site_dir, "somepkg", "mod.py")) == (None, False), site_dir


def test_single_file_module_at_the_top_of_dist_packages_is_skipped_alone():
    te = pytest.importorskip("typing_extensions")
    assert owner(te.__file__) == ("typing_extensions", True)
    assert owner(os.path.join(os.path.dirname(te.__file__), "other_module.py")) == (None, False)


def test_torchvision_is_user_code():
    tv = pytest.importorskip("torchvision")
    assert owner(tv.models.resnet.__file__) == (None, False)


def test_module_owner():
    import math

    _runtime.ensure_initialized()
    assert _runtime.module_owner(math) == "the standard library"
    assert _runtime.module_owner(torch.nn.functional) == "torch"
    assert _runtime.module_owner(sys.modules[__name__]) is None


def _load(dirpath, modname):
    sys.path.insert(0, dirpath)
    try:
        sys.modules.pop(modname, None)
        return importlib.import_module(modname)
    finally:
        sys.path.remove(dirpath)


@pytest.mark.parametrize("folder", ["ptgo", "torch", os.path.join("ptgo", "torch")])
def test_user_folder_named_like_a_library_is_captured_and_guarded(tmp_path, counter, folder):
    d = tmp_path / folder
    d.mkdir(parents=True)
    name = "userlib_" + folder.replace(os.sep, "_")
    (d / (name + ".py")).write_text(LIB_SRC)
    lib = _load(str(d), name)
    try:
        assert owner(lib.__file__) == (None, False)
        x = torch.randn(4)
        f = ptgo.compile(lib.scaled, backend=counter)
        torch.testing.assert_close(f(x), x * 2.0 + 1)
        assert counter.frame_count == 1, "the function is captured, not skipped"
        lib.SCALE = 3.0
        torch.testing.assert_close(f(x), x * 3.0 + 1)
        assert counter.frame_count == 2, "a changed global recompiles"

        m = ptgo.compile(lib.Scale(), backend=counter)
        torch.testing.assert_close(m(x), torch.relu(x) * 3.0)
        lib.SCALE = 4.0
        torch.testing.assert_close(m(x), torch.relu(x) * 4.0)
    finally:
        sys.modules.pop(name, None)


def test_inlined_library_global_is_guarded(tmp_path, counter):
    """A global read by a function inlined from an imported module (not the frame's own)."""
    d = tmp_path / "ptgo" / "pkg"
    d.mkdir(parents=True)
    (d / "helperlib.py").write_text(LIB_SRC)
    lib = _load(str(d), "helperlib")
    try:
        def fn(x):
            return lib.scaled(x) - 1

        f = ptgo.compile(fn, backend=counter)
        x = torch.randn(3)
        torch.testing.assert_close(f(x), x * 2.0)
        lib.SCALE = 5.0
        torch.testing.assert_close(f(x), x * 5.0)
        assert counter.frame_count == 2
    finally:
        sys.modules.pop("helperlib", None)


def test_inlined_closure_is_guarded(tmp_path, counter):
    d = tmp_path / "torch" / "nn"
    d.mkdir(parents=True)
    (d / "closurelib.py").write_text(LIB_SRC)
    lib = _load(str(d), "closurelib")
    try:
        scaler, set_scale = lib.make_scaler(2.0)

        def fn(x):
            return scaler(x) + 1

        f = ptgo.compile(fn, backend=counter)
        x = torch.randn(3)
        torch.testing.assert_close(f(x), x * 2.0 + 1)
        set_scale(6.0)
        torch.testing.assert_close(f(x), x * 6.0 + 1)
        assert counter.frame_count == 2
    finally:
        sys.modules.pop("closurelib", None)


CHILD = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, %(python_dir)r)
    import ptgo
    from ptgo import _runtime
    import {mod} as lib
    _runtime.ensure_initialized()
    owner = _runtime.code_owner(lib.__file__)
    assert owner == (None, False), (lib.__file__, owner)
    graphs = []
    def backend(gm, ex):
        graphs.append(gm)
        return gm.forward
    x = torch.randn(5)
    f = ptgo.compile(lib.scaled, backend=backend)
    torch.testing.assert_close(f(x), x * 2.0 + 1)
    lib.SCALE = 7.0
    torch.testing.assert_close(f(x), x * 7.0 + 1)
    m = ptgo.compile(lib.Scale(), backend=backend)
    torch.testing.assert_close(m(x), torch.relu(x) * 7.0)
    lib.SCALE = 8.0
    torch.testing.assert_close(m(x), torch.relu(x) * 8.0)
    assert len(graphs) == 4, len(graphs)
    print("OK")
""")


def _run_child(python, mod, env=None):
    code = CHILD.replace("%(python_dir)r", repr(PYTHON_DIR)).format(mod=mod)
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr


def test_code_in_a_venv_site_packages_is_captured_and_guarded(tmp_path):
    """A package installed in a virtualenv (lib/python3.11/site-packages, inside the venv's
    lib/python3.11) is user code: captured, its globals guarded."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site_dir = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    # torch must be importable in the new venv in either world: Debian's torch is a system
    # package (--system-site-packages), PyPI's lives in the running venv's site-packages, which a
    # .pth file adds after the new venv's own.
    torch_site = os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__)))
    with open(os.path.join(site_dir, "running_interpreter_torch.pth"), "w") as f:
        f.write(torch_site + "\n")
    pkg = os.path.join(site_dir, "venvlib")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write(LIB_SRC)
    _run_child(str(py), "venvlib")


def test_code_in_a_dist_packages_directory_is_captured_and_guarded(tmp_path):
    """Debian's layout: a package at the top of a dist-packages directory on sys.path."""
    d = tmp_path / "usr" / "lib" / "python3" / "dist-packages"
    d.mkdir(parents=True)
    (d / "distlib_mod.py").write_text(LIB_SRC)
    env = dict(os.environ, PYTHONPATH=str(d))
    _run_child(sys.executable, "distlib_mod", env=env)


def test_stdlib_frames_are_skipped(counter):
    """A standard-library function compiled directly is not captured (its frame is skipped)."""
    import json

    f = ptgo.compile(json.dumps, backend=counter)
    assert f([1, 2]) == "[1, 2]"
    assert counter.frame_count == 0


def test_policy_paths_are_resolved():
    for path, kind, who in _runtime._skip_policy():
        assert os.path.isabs(path)
        stripped = path.rstrip(os.sep)
        if os.path.exists(stripped):
            assert os.path.realpath(stripped) == stripped, path
    assert sysconfig.get_path("stdlib")  # the interpreter knows its library
