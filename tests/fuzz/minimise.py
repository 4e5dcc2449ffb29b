"""Delta-debugging of a failing fuzz program, and regression tests from the result.

    .venv/bin/python tests/fuzz/minimise.py SEED [--backend inductor] [--kind value] [--write]

A failure is identified by its class and backend (``Failure.kind``, ``Failure.backend``); the
minimiser looks for the smallest program that still fails the same way: ddmin over statements
(a statement goes with everything that reads what it defines), then one-at-a-time removal of
statements, outputs, inputs and modules, then simpler inputs (contiguous, plain values, no grad)
and fewer calls. Each candidate runs in a subprocess when the failure is a crash or a timeout,
in this process otherwise.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from fuzz import gen, harness  # noqa: E402

REGRESSIONS = os.path.join(HERE, "regressions")


def closed(prog, keep):
    """prog with only the statements in `keep` (indices) that can still run: those whose every
    read name is an input or defined by a kept statement before them; outputs likewise."""
    p = copy.deepcopy(prog)
    defined = {s["name"] for s in p["inputs"]}
    stmts = []
    for i, st in enumerate(prog["stmts"]):
        if i in keep and gen.uses(st) <= defined:
            stmts.append(copy.deepcopy(st))
            defined |= set(st["defs"])
    p["stmts"] = stmts
    p["outputs"] = [o for o in prog["outputs"] if o in defined]
    if not p["outputs"]:
        last = [d for st in stmts for d in st["defs"] if not d.startswith("l")]
        p["outputs"] = [last[-1] if last else p["inputs"][0]["name"]]
    used = set().union(*[gen.uses(st) for st in stmts]) | set(p["outputs"]) if stmts else set(p["outputs"])
    src = "\n".join(l for st in stmts for l in st["src"])
    p["modules"] = [m for m in p["modules"] if "M.%s" % m[0] in src]
    del used
    return p


class Predicate:
    def __init__(self, kind, backend, calls=harness.CALLS, subprocess_=False):
        self.kind, self.backend, self.calls, self.subprocess = kind, backend, calls, subprocess_
        self.runs = 0

    def __call__(self, prog):
        self.runs += 1
        if self.subprocess:
            return self._in_subprocess(prog)
        try:
            fails = harness.check_program(prog, backends=(self.backend,), calls=self.calls)
        except Exception:
            return False
        return any(f.kind == self.kind for f in fails)

    def _in_subprocess(self, prog):
        code = textwrap.dedent("""
            import json, sys
            sys.path.insert(0, %r)
            import torch
            torch.set_num_threads(2)
            from fuzz import harness
            prog = json.loads(sys.stdin.read())
            fails = harness.check_program(prog, backends=(%r,), calls=%d)
            print(json.dumps([f.kind for f in fails]))
        """ % (TESTS, self.backend, self.calls))
        try:
            r = subprocess.run([sys.executable, "-c", code], input=json.dumps(prog), capture_output=True, text=True,
                               timeout=120)
        except subprocess.TimeoutExpired:
            return self.kind == "timeout"
        if r.returncode < 0 or (r.returncode != 0 and not r.stdout.strip()):
            return self.kind == "crash"
        try:
            return self.kind in json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return False


def ddmin(items, test):
    """Zeller's ddmin: a 1-minimal subset of items for which test(subset) holds."""
    n = 2
    while len(items) >= 2:
        size = max(len(items) // n, 1)
        subsets = [items[i:i + size] for i in range(0, len(items), size)]
        reduced = False
        for s in subsets:
            if test(s):
                items, n, reduced = s, 2, True
                break
        if not reduced:
            for s in subsets:
                comp = [x for x in items if x not in s]
                if comp and test(comp):
                    items, n, reduced = comp, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(items):
                break
            n = min(n * 2, len(items))
    return items


def minimise(prog, kind, backend, log=print):
    pred = Predicate(kind, backend, subprocess_=kind in ("crash", "timeout"))
    if not pred(prog):
        log("  does not reproduce (%s/%s)" % (kind, backend))
        return None
    # 1. statements
    idx = list(range(len(prog["stmts"])))
    keep = ddmin(idx, lambda s: pred(closed(prog, set(s))))
    cur = closed(prog, set(keep))
    # 2. one at a time: statements, outputs, inputs
    changed = True
    while changed:
        changed = False
        for i in range(len(cur["stmts"]) - 1, -1, -1):
            cand = closed(cur, set(range(len(cur["stmts"]))) - {i})
            if len(cand["stmts"]) < len(cur["stmts"]) and pred(cand):
                cur, changed = cand, True
                break
        if len(cur["outputs"]) > 1:
            for o in list(cur["outputs"]):
                cand = copy.deepcopy(cur)
                cand["outputs"].remove(o)
                if pred(cand):
                    cur, changed = cand, True
                    break
    # 3. simpler settings, one at a time
    def attempt(mutate):
        nonlocal cur
        cand = copy.deepcopy(cur)
        if mutate(cand) is False:
            return
        if cand != cur and pred(cand):
            cur = cand

    src = lambda p: "\n".join(l for st in p["stmts"] for l in st["src"])  # noqa: E731
    for i in range(len(cur["inputs"]) - 1, -1, -1):
        name = cur["inputs"][i]["name"]
        if "layout" in cur["inputs"][i] and cur["inputs"][i]["layout"].startswith("overlap"):
            continue
        import re

        if not re.search(r"\b%s\b" % name, src(cur)) and name not in cur["outputs"]:
            attempt(lambda p: p["inputs"].pop(i))
    attempt(lambda p: p.update(backward=False))
    attempt(lambda p: p.update(as_module=False))
    for i in range(len(cur["inputs"])):
        attempt(lambda p: p["inputs"][i].update(layout="contig") if not p["inputs"][i]["layout"].startswith("overlap") else False)
        attempt(lambda p: p["inputs"][i].update(values="normal") if p["inputs"][i]["values"] in ("special", "ties", "positive") else False)
        attempt(lambda p: p["inputs"][i].update(grad="none"))
    calls = 1
    while calls < harness.CALLS:
        if Predicate(kind, backend, calls=calls, subprocess_=pred.subprocess)(cur):
            break
        calls += 1
    cur["calls"] = calls
    log("  minimised to %d statements in %d runs" % (len(cur["stmts"]), pred.runs))
    return cur


def write_regression(prog, kind, backend, detail, xfail=None):
    os.makedirs(REGRESSIONS, exist_ok=True)
    name = "test_%s_%s_%s.py" % (kind.replace("-", "_"), backend, str(prog["seed"]).replace("-", "m"))
    path = os.path.join(REGRESSIONS, name)
    src = gen.render(prog)
    head = '"""Fuzzer regression (seed %s): %s with backend %r.\n\n%s\n\nThe program:\n\n%s"""\n' % (
        prog["seed"], kind, backend, textwrap.fill(detail.splitlines()[0][:600], 96),
        textwrap.indent(src, "    "))
    body = ["import pytest", "", "from fuzz.regress import check", "", "PROGRAM = %s" % _pformat(prog), "", ""]
    if xfail:
        body.append("@pytest.mark.xfail(strict=True, reason=%r)" % xfail)
    body += ["@pytest.mark.parametrize(\"backend\", [\"eager\", \"aot_eager\", \"inductor\"])",
             "def test_program(backend):", "    check(PROGRAM, backend)", ""]
    with open(path, "w") as f:
        f.write(head + "\n".join(body))
    return path


def _pformat(prog):
    import pprint

    return pprint.pformat(prog, width=100, sort_dicts=False)


def minimise_results(results, per_class=2, backends=harness.BACKENDS, log=print):
    seen = {}
    for r in results:
        fails = r.get("failures") or []
        if r["status"] in ("crash", "timeout"):
            fails = [{"kind": r["status"], "backend": b, "detail": r.get("detail", "")} for b in backends[-1:]]
        for f in fails:
            key = (f["kind"], f["backend"])
            if seen.get(key, 0) >= per_class:
                continue
            seen[key] = seen.get(key, 0) + 1
            log("minimising seed %d (%s/%s)" % (r["seed"], f["kind"], f["backend"]))
            prog = gen.generate(r["seed"])
            small = minimise(prog, f["kind"], f["backend"], log)
            if small is not None:
                path = write_regression(small, f["kind"], f["backend"], f["detail"])
                log("  wrote %s" % os.path.relpath(path))
            break  # one class per program


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seed", type=int)
    ap.add_argument("--backend")
    ap.add_argument("--kind")
    ap.add_argument("--write", action="store_true", help="write the regression test")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    prog = gen.generate(args.seed)
    kind, backend, detail = args.kind, args.backend, ""
    if kind is None or backend is None:
        fails = harness.check_program(prog, backends=(backend,) if backend else harness.BACKENDS)
        if not fails:
            print("seed %d passes" % args.seed)
            return 0
        f = fails[-1] if backend is None else fails[0]
        kind, backend, detail = kind or f.kind, f.backend, f.detail
    small = minimise(prog, kind, backend)
    if small is None:
        return 1
    print(gen.render(small))
    print("# inputs:", json.dumps(small["inputs"]))
    if not detail:
        fs = harness.check_program(small, backends=(backend,))
        detail = fs[0].detail if fs else kind
    print("#", detail[:300])
    if args.write:
        print("wrote", write_regression(small, kind, backend, detail))
    return 0


if __name__ == "__main__":
    sys.exit(main())
