"""What ptgo loads into a torch process: its C++ extension only when built for this torch, and
none of torch's own compile machinery behind the user's back."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import ptgo
from ptgo import _native

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(ptgo.__file__)))


def test_fast_is_stamped_with_the_torch_it_was_built_for():
    mod = _native.fast()
    if mod is None:
        pytest.skip("ptgo._fast is not built here (no torch C++ headers)")
    assert _native.built_for(mod.__file__) == torch.__version__


def test_fast_built_for_another_torch_is_not_loaded(monkeypatch):
    # Importing a libtorch extension built for another torch aborts the process: fast() must
    # refuse it from the stamp alone, and say why.
    monkeypatch.setattr(_native, "_cached", [])
    monkeypatch.setattr(_native, "built_for", lambda origin: "0.0.1")
    if _native.importlib.util.find_spec("ptgo._fast") is None:
        pytest.skip("ptgo._fast is not built here")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert _native.fast() is None
    assert any("built for torch 0.0.1, this is torch %s" % torch.__version__ in str(x.message) for x in w)


def test_compiling_does_not_import_torch_dynamo():
    # torch 2's torch.__getattr__ imports torch._dynamo lazily (about a second): ptgo looking up
    # torch._dynamo's decorators must not be what imports it.
    code = (
        "import sys; sys.path.insert(0, %r)\n"
        "import torch, ptgo\n"
        "f = ptgo.compile(lambda x: (x * 2).sin() + 1)\n"
        "f(torch.ones(3)); f(torch.ones(3))\n"
        "m = ptgo.compile(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()))\n"
        "m(torch.ones(2, 3))\n"
        "print('torch._dynamo' in sys.modules)\n" % PYTHON_DIR
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
