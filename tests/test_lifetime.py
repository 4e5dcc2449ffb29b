"""Nothing kept alive (issue 8): a compiled function or module that the user drops takes its
compiled code, graphs and kernel libraries with it (bench/memory.py measures RSS over 1000
compile/drop cycles)."""
import gc
import re
import weakref

import torch

import ptgo


def mapped_kernel_libraries():
    """Kernel libraries (ptgo's disk cache entries, named by their sha256) mapped in this process."""
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if re.search(r"/[0-9a-f]{64}\.so$", line.rstrip())}


def test_dropped_function_releases_its_code_and_libraries():
    x = torch.randn(32)
    before = mapped_kernel_libraries()
    refs = []
    for i in range(5):
        ns = {"torch": torch}
        # exec's globals are a plain dict: the function and its namespace form a cycle that
        # ptgo's per-code cache must not make uncollectable
        exec("def f(x):\n    return (x * %d.5 + 1).cos() - x\n" % (i + 20), ns)
        refs.append(weakref.ref(ns["f"]))
        f = ptgo.compile(ns["f"])
        torch.testing.assert_close(f(x), ns["f"](x))
        assert mapped_kernel_libraries() - before, "the graph runs generated kernels"
        del f, ns
    gc.collect()
    assert all(r() is None for r in refs)
    assert not (mapped_kernel_libraries() - before)


def test_dropped_module_releases_its_graphs():
    x = torch.randn(4, 16)
    refs = []
    for i in range(3):
        m = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Hardtanh(-1.5 - i, 1.0))
        refs.append(weakref.ref(m))
        c = ptgo.compile(m)
        torch.testing.assert_close(c(x), m(x))
        del m, c
    gc.collect()
    assert all(r() is None for r in refs)


def test_module_level_function_keeps_working_after_many_calls():
    f = ptgo.compile(lambda x: (x * 2 + 1).relu())
    x = torch.randn(8)
    for _ in range(1000):
        out = f(x)
    torch.testing.assert_close(out, (x * 2 + 1).relu())


def test_compile_log_is_bounded():
    import json
    from ptgo import _C

    if _C is None or not _C.go_loaded():
        return
    x = torch.randn(4)
    for i in range(300):
        ns = {"torch": torch}
        exec("def g(x):\n    return x + %d\n" % i, ns)
        ptgo.compile(ns["g"], backend="eager")(x)
    assert len(json.loads(_C.request("compile_log", "{}"))) <= 256
