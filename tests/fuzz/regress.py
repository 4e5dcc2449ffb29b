"""What a fuzzer regression test runs: one stored program against eager, on one backend."""
import torch

from . import harness


def check(prog, backend):
    """Fails with the first difference between eager and `backend` on prog (three calls: fresh
    compile, cache hit, changed input values)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # ptgo's parallel kernels, as in the fuzzer's workers
    try:
        fails = harness.check_program(prog, backends=(backend,))
    finally:
        torch.set_num_threads(threads)
    assert not fails, "\n".join("%s, call %s: %s" % (f.backend, f.call, f) for f in fails)
