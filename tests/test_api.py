"""The Python surface of DESIGN §3: compile forms, backends, errors, config, logs."""
import subprocess
import sys
import threading
import warnings

import pytest
import torch
import torch.nn as nn

import ptgo
from conftest import assert_same


def test_compile_function_returns_function(counter):
    def f(x):
        return x + 1

    cf = ptgo.compile(f, backend=counter)
    assert callable(cf) and cf.__name__ == "f"
    assert_same(cf(torch.ones(2)), torch.ones(2) + 1)


def test_decorator_forms(counter):
    @ptgo.compile(backend=counter)
    def f(x):
        return x * 3

    @ptgo.compile
    def g(x):
        return x * 4

    assert_same(f(torch.ones(2)), torch.ones(2) * 3)
    assert_same(g(torch.ones(2)), torch.ones(2) * 4)
    assert counter.frame_count == 1


def test_module_wrapper(counter):
    m = nn.Linear(3, 2)
    cm = ptgo.compile(m, backend=counter)
    assert isinstance(cm, nn.Module) and isinstance(cm, ptgo.OptimizedModule)
    assert cm._orig_mod is m
    assert cm.weight is m.weight
    assert cm.in_features == 3
    x = torch.randn(4, 3)
    assert_same(cm(x), m(x))
    assert_same(cm.forward(x), m(x))
    assert list(cm.state_dict()) == list(m.state_dict())
    cm.eval()
    assert not m.training and not cm.training
    cm.train()
    assert m.training


def test_compile_twice_unwraps(counter):
    m = nn.Linear(2, 2)
    cm = ptgo.compile(ptgo.compile(m), backend=counter)
    assert cm._orig_mod is m


def test_not_callable_raises_type_error():
    with pytest.raises(TypeError, match="int"):
        ptgo.compile(3)


def test_class_raises_type_error():
    with pytest.raises(TypeError, match="instantiate"):
        ptgo.compile(nn.Linear)


def test_unknown_backend():
    with pytest.raises(ValueError, match="known backends"):
        ptgo.compile(lambda x: x, backend="nope")


def test_list_and_register_backends():
    names = ptgo.list_backends()
    assert names == sorted(names)
    assert {"eager", "inductor"} <= set(names)

    def mine(gm, example_inputs):
        return gm.forward

    ptgo.register_backend("mine_for_test", mine)
    assert "mine_for_test" in ptgo.list_backends()
    with pytest.raises(ValueError):
        ptgo.register_backend("mine_for_test", lambda gm, ex: gm.forward)
    cf = ptgo.compile(lambda x: x - 1, backend="mine_for_test")
    assert_same(cf(torch.ones(2)), torch.zeros(2))


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_builtin_backends(backend):
    cf = ptgo.compile(lambda x: torch.relu(x) * 2, backend=backend)
    x = torch.randn(5)
    assert_same(cf(x), torch.relu(x) * 2)


def test_disable(counter):
    @ptgo.disable
    def helper(x):
        return x + 1

    def f(x):
        return x * 2

    assert_same(helper(torch.ones(1)), torch.ones(1) + 1)
    cf = ptgo.compile(f, backend=counter, disable=True)
    assert cf is f


def test_is_compiling(counter):
    seen = []

    def f(x):
        if ptgo.is_compiling():
            return x + 1
        return x - 1

    assert not ptgo.is_compiling()
    out = ptgo.compile(f, backend=counter)(torch.zeros(1))
    assert_same(out, torch.ones(1))
    assert counter.frame_count == 1


def test_reset_forgets(counter):
    cf = ptgo.compile(lambda x: x + 1, backend=counter)
    cf(torch.ones(1))
    ptgo.reset()
    cf(torch.ones(1))
    assert counter.frame_count == 2


def test_backend_error_raises_backend_compiler_failed():
    def bad(gm, example_inputs):
        raise ValueError("my backend is broken")

    cf = ptgo.compile(lambda x: x + 1, backend=bad)
    with pytest.raises(ptgo.BackendCompilerFailed) as e:
        cf(torch.ones(1))
    assert isinstance(e.value.__cause__, ValueError)
    assert "my backend is broken" in str(e.value.__cause__)


def test_backend_error_suppressed(monkeypatch):
    monkeypatch.setattr(ptgo.config, "suppress_errors", True)

    def bad(gm, example_inputs):
        raise ValueError("broken")

    cf = ptgo.compile(lambda x: x + 1, backend=bad)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert_same(cf(torch.ones(1)), torch.ones(1) + 1)
    assert any("broken" in str(m.message) for m in w)


def test_backend_returning_non_callable():
    cf = ptgo.compile(lambda x: x + 1, backend=lambda gm, ex: 42)
    with pytest.raises(ptgo.BackendCompilerFailed, match="not a callable"):
        cf(torch.ones(1))


def test_user_exception_propagates_unchanged(counter):
    def f(x, n):
        if n > 2:
            raise ValueError("n too large: %d" % n)
        return x * n

    cf = ptgo.compile(f, backend=counter)
    with pytest.raises(ValueError, match="n too large: 3"):
        cf(torch.ones(1), 3)
    assert_same(cf(torch.ones(1), 2), torch.ones(1) * 2)


def test_runtime_error_in_graph_propagates(counter):
    def f(x, y):
        return x @ y

    cf = ptgo.compile(f, backend=counter)
    with pytest.raises(RuntimeError) as e_c:
        cf(torch.ones(2, 3), torch.ones(2, 3))
    with pytest.raises(RuntimeError) as e_e:
        f(torch.ones(2, 3), torch.ones(2, 3))
    assert str(e_c.value) == str(e_e.value)


def test_threads(counter):
    cf = ptgo.compile(lambda x: (x * 2).sum(), backend=counter)
    errors = []

    def work(seed):
        try:
            g = torch.Generator().manual_seed(seed)
            for _ in range(50):
                x = torch.randn(8, generator=g)
                assert_same(cf(x), (x * 2).sum())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_set_logs_unknown_channel():
    with pytest.raises(ValueError, match="known"):
        ptgo.set_logs("nope")


def test_logs_help_lists_channels():
    out = subprocess.run([sys.executable, "-c", "import ptgo"], env={"PTGO_LOGS": "help", "PATH": ""},
                         capture_output=True, text=True)
    assert "graph_breaks" in out.stderr and "recompiles" in out.stderr, out.stderr


def test_graph_code_log(counter, ptgo_log):
    ptgo.set_logs("graph_code")
    ptgo.compile(lambda x: torch.relu(x) + 1, backend=counter)(torch.randn(3))
    assert "relu" in ptgo_log.text


def test_bytecode_log(counter, ptgo_log):
    ptgo.set_logs("bytecode")
    ptgo.compile(lambda x: x + 1, backend=counter)(torch.randn(3))
    assert "CALL" in ptgo_log.text and "RETURN_VALUE" in ptgo_log.text


def test_other_python_version_warns_and_runs_eagerly(monkeypatch):
    from ptgo import eval_frame

    monkeypatch.setattr(eval_frame, "_warned_unsupported", False)
    monkeypatch.setattr(eval_frame.sys, "version_info", (3, 12, 0, "final", 0))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf = ptgo.compile(lambda x: x + 1)
        cf2 = ptgo.compile(lambda x: x + 2)
    assert_same(cf(torch.ones(1)), torch.ones(1) + 1)
    assert_same(cf2(torch.ones(1)), torch.ones(1) + 2)
    msgs = [str(m.message) for m in w if "3.11" in str(m.message)]
    assert len(msgs) == 1


def test_torch_dynamo_backends_entry_point():
    from importlib import metadata

    eps = metadata.entry_points(group="torch_dynamo_backends")
    assert any(ep.name == "ptgo" for ep in eps)


def test_go_panic_becomes_backend_compiler_failed(counter):
    from ptgo import _C

    cf = ptgo.compile(lambda x: x + 1, backend=counter)
    cf(torch.ones(1))  # Go is running
    _C.request("panic_next_compile", "{}")
    with pytest.raises(ptgo.BackendCompilerFailed, match="ptgo BUG"):
        cf(torch.ones(2))
    # The process is fine and compiling works again.
    assert_same(cf(torch.ones(3)), torch.ones(3) + 1)


def test_forked_child_runs_eagerly():
    import os

    cf = ptgo.compile(lambda x: x * 2, backend="eager", dynamic=False)  # ones(5) below must miss
    assert_same(cf(torch.ones(2)), torch.ones(2) * 2)
    pid = os.fork()
    if pid == 0:  # child: a cache hit works, a miss runs eagerly instead of entering Go
        code = 1
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                ok = torch.equal(cf(torch.ones(2)), torch.ones(2) * 2)
                ok = ok and torch.equal(cf(torch.ones(5)), torch.ones(5) * 2)
            ok = ok and any("forked" in str(m.message) for m in w)
            code = 0 if ok else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_compiled_module_is_not_kept_alive():
    import gc
    import weakref

    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    cm = ptgo.compile(m, backend="eager")
    cm(torch.randn(2, 4))
    w, wp = weakref.ref(m), weakref.ref(m[0].weight)
    del m, cm
    gc.collect()
    assert w() is None, "the cache entry keeps the module alive"
    assert wp() is None, "the cache entry keeps the parameters alive"


@pytest.mark.parametrize("how", ["backend", "explain"])
def test_custom_backend_is_not_kept_alive(how):
    # ptgo once kept every custom backend alive (so the id in a cache tag was never reused), and
    # with it what the backend held: explain()'s recorder holds the GraphModules, which hold the
    # user's parameters, so each explain() leaked the model's weights for the life of the process.
    import gc
    import weakref

    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    if how == "explain":
        assert ptgo.explain(m)(x).graph_count == 1
        w = None
    else:
        from conftest import CountingBackend

        backend = CountingBackend()
        ptgo.compile(m, backend=backend)(x)
        assert backend.frame_count == 1
        w = weakref.ref(backend)
        del backend
    wp = weakref.ref(m[0].weight)
    del m
    ptgo.reset()
    gc.collect()
    assert w is None or w() is None, "ptgo keeps the backend alive"
    assert wp() is None, "ptgo keeps the parameters alive through the backend's graphs"


def test_backend_tags_are_not_reused_after_the_backend_dies(counter):
    # A backend's tag is forgotten when it dies; a new backend (which may get the dead one's id)
    # never shares its compiled code.
    f = lambda x: x + 1  # noqa: E731
    seen = []

    for _ in range(3):
        def backend(gm, example_inputs):
            seen.append(gm)
            return gm.forward

        ptgo.compile(f, backend=backend)(torch.ones(1))
        del backend
    assert len(seen) == 3, "every new backend compiles for itself"


def test_ops_listing_cli():
    out = subprocess.run([sys.executable, "-m", "ptgo.ops"], capture_output=True, text=True, check=True).stdout
    last = out.strip().splitlines()[-1]
    n_ops = int(last.split()[0])
    assert n_ops >= 150, last
    for name in ("add.Tensor", "linear", "softmax", "layer_norm", "conv2d"):
        assert name in out


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interrupt_during_compile_is_raised_as_itself(exc, counter):
    """Ctrl-C during a compile (a KeyboardInterrupt in a callback Go makes, here the backend) is
    raised as KeyboardInterrupt, never as BackendCompilerFailed nor swallowed into an eager run;
    SystemExit likewise. Nothing of that compile is kept: the next call compiles again."""
    calls = []

    def interrupted(gm, example_inputs):
        calls.append(1)
        if len(calls) == 1:
            raise exc()
        return counter(gm, example_inputs)

    cf = ptgo.compile(lambda x: x + 1, backend=interrupted)
    with pytest.raises(exc) as e:
        cf(torch.ones(1))
    assert type(e.value) is exc
    assert_same(cf(torch.ones(1)), torch.ones(1) + 1)
    assert len(calls) == 2 and counter.frame_count == 1


def test_interrupt_during_compile_with_suppress_errors(monkeypatch):
    """suppress_errors turns backend failures into eager runs, never a Ctrl-C (and no Python runs
    after it for that compile: no "running eagerly" warning)."""
    monkeypatch.setattr(ptgo.config, "suppress_errors", True)

    def interrupted(gm, example_inputs):
        raise KeyboardInterrupt

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(KeyboardInterrupt):
            ptgo.compile(lambda x: x + 1, backend=interrupted)(torch.ones(1))
    assert [str(m.message) for m in w if "ptgo" in str(m.message)] == []
