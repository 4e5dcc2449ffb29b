"""The fuzzer's driver: programs by seed, run in worker subprocesses, results counted by class.

    .venv/bin/python tests/fuzz/run.py --n 10000            # seeds 0..9999 (make fuzz N=10000)
    .venv/bin/python tests/fuzz/run.py --start 500 --n 20 --minimise
    .venv/bin/python tests/fuzz/run.py --seed 1234 -v       # one program: its source and result
    .venv/bin/python tests/fuzz/run.py --rerun /tmp/ptgo-fuzz-0-10000   # the seeds that failed there

A worker (``--worker``) generates and checks the programs of one chunk of seeds and writes one
JSON line per program ("begin" before, the result after) to its output file; the driver starts
workers chunk by chunk (``--jobs`` at a time), and when a worker dies (a crash of the process) or
stops answering (``--timeout`` seconds for one program) the program it was running is counted as
a crash or a timeout and a new worker carries on after it. Workers are restarted every chunk, so
memory a long run would accumulate goes with them.

Results: ``<out>/results.jsonl`` (one line per program), ``<out>/summary.json`` and a table on
stdout: programs, failures by class and backend. ``--minimise`` delta-debugs each failure class
found (first few seeds per class) and writes regression tests to ``tests/fuzz/regressions/``.
"""
import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def worker(seeds, out_path, backends, threads):
    import torch

    torch.set_num_threads(threads)
    from fuzz import gen, harness

    with open(out_path, "a") as out:
        for seed in seeds:
            out.write(json.dumps({"seed": seed, "status": "begin"}) + "\n")
            out.flush()
            t0 = time.time()
            rec = {"seed": seed}
            try:
                prog = gen.generate(seed)
            except Exception as e:  # a generator bug, not ptgo's
                rec.update(status="gen-error", detail="%s: %s" % (type(e).__name__, e))
            else:
                rec["stmts"] = len(prog["stmts"])
                try:
                    fails = harness.check_program(prog, backends)
                except Exception as e:
                    import traceback

                    rec.update(status="harness-error", detail=traceback.format_exc()[-2000:])
                else:
                    rec["status"] = "fail" if fails else "ok"
                    rec["failures"] = [f.as_dict() for f in fails]
            rec["time"] = round(time.time() - t0, 3)
            out.write(json.dumps(rec) + "\n")
            out.flush()


def _read(path):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        recs.append(json.loads(line))
                    except ValueError:
                        pass  # a line cut short by a crash
    return recs


class Chunk:
    def __init__(self, seeds, out_dir, idx):
        self.seeds = list(seeds)
        self.path = os.path.join(out_dir, "chunk-%06d.jsonl" % idx)
        self.proc = None
        self.done = {}      # seed -> record
        self.last_progress = time.time()
        self.started = {}   # seed -> time begun
        self.stderr_path = self.path + ".stderr"

    def remaining(self):
        return [s for s in self.seeds if s not in self.done]

    def start(self, args):
        rest = self.remaining()
        if not rest:
            return False
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--out-file", self.path,
               "--threads", str(args.threads), "--backends", ",".join(args.backends), "--seeds",
               ",".join(map(str, rest))]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.stderr_path, "ab"),
                                     start_new_session=True)
        self.last_progress = time.time()
        return True

    def poll(self, args):
        """Reads progress; returns True when the chunk is finished."""
        seen = len(self.done) + len(self.started)
        for rec in _read(self.path):
            if rec.get("status") == "begin":
                self.started.setdefault(rec["seed"], time.time())
            else:
                self.done[rec["seed"]] = rec
                self.started.pop(rec["seed"], None)
        if len(self.done) + len(self.started) != seen:
            self.last_progress = time.time()
        rc = self.proc.poll()
        running = [s for s in self.started if s not in self.done]
        if rc is None:
            if running and time.time() - self.last_progress > args.timeout:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                for s in running:
                    self.done[s] = {"seed": s, "status": "timeout", "detail": "no result after %ds" % args.timeout}
                self.started.clear()
                return not self.start(args)
            return False
        # the worker exited: a program it had begun and not finished crashed it
        for s in running:
            tail = ""
            try:
                with open(self.stderr_path, "rb") as f:
                    tail = f.read()[-1500:].decode("utf-8", "replace")
            except OSError:
                pass
            self.done[s] = {"seed": s, "status": "crash", "detail": "worker exited with %s; stderr: %s" % (rc, tail)}
        self.started.clear()
        if self.remaining():
            if rc == 0 and not running:
                # exited cleanly without finishing: should not happen, count the rest as crashes
                for s in self.remaining():
                    self.done[s] = {"seed": s, "status": "crash", "detail": "worker stopped early"}
                return True
            return not self.start(args)
        return True


def failing_seeds(path):
    """Seeds a previous run (a results.jsonl, or a directory of chunk files) did not pass."""
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(path, f) for f in os.listdir(path) if f.startswith("chunk-") and f.endswith(".jsonl"))
    seeds = []
    for p in files:
        for r in _read(p):
            if r.get("status") not in ("begin", "ok"):
                seeds.append(r["seed"])
    return sorted(set(seeds))


def drive(args):
    os.makedirs(args.out, exist_ok=True)
    seeds = failing_seeds(args.rerun) if args.rerun else list(range(args.start, args.start + args.n))
    chunks = [Chunk(seeds[i:i + args.chunk], args.out, i // args.chunk) for i in range(0, len(seeds), args.chunk)]
    pending = collections.deque(chunks)
    running = []
    t0 = time.time()
    done_count = 0
    while pending or running:
        while pending and len(running) < args.jobs:
            c = pending.popleft()
            if c.start(args):
                running.append(c)
        time.sleep(0.2)
        for c in list(running):
            if c.poll(args):
                running.remove(c)
                done_count += len(c.seeds)
                if not args.quiet:
                    print("[%d/%d programs, %.0fs]" % (done_count, len(seeds), time.time() - t0), flush=True)
    results = []
    for c in chunks:
        results += [c.done[s] for s in c.seeds if s in c.done]
    with open(os.path.join(args.out, "results.jsonl"), "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    summary = summarise(results)
    summary["seconds"] = round(time.time() - t0, 1)
    summary["args"] = {"start": args.start, "n": len(seeds), "backends": args.backends, "rerun": args.rerun}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(format_summary(summary))
    return results, summary


def summarise(results):
    status = collections.Counter(r["status"] for r in results)
    by_kind = collections.Counter()
    by_kind_backend = collections.Counter()
    examples = collections.defaultdict(list)
    for r in results:
        if r["status"] in ("crash", "timeout", "gen-error", "harness-error"):
            by_kind[r["status"]] += 1
            examples[r["status"]].append(r["seed"])
        for f in r.get("failures", []):
            by_kind_backend["%s/%s" % (f["kind"], f["backend"])] += 1
        for kind in sorted({f["kind"] for f in r.get("failures", [])}):
            by_kind[kind] += 1
            examples[kind].append(r["seed"])
    return {"programs": len(results), "status": dict(status), "failing_programs": status.get("fail", 0),
            "by_class": dict(by_kind.most_common()), "by_class_backend": dict(sorted(by_kind_backend.items())),
            "examples": {k: v[:12] for k, v in examples.items()}}


def format_summary(s):
    lines = ["programs: %d  ok: %d  failing: %d  crashes: %d  timeouts: %d  (%.0fs)" % (
        s["programs"], s["status"].get("ok", 0), s["failing_programs"], s["status"].get("crash", 0),
        s["status"].get("timeout", 0), s.get("seconds", 0))]
    for k, n in s["by_class"].items():
        lines.append("  %-20s %5d programs  e.g. seeds %s" % (k, n, s["examples"].get(k, [])[:6]))
    if s["by_class_backend"]:
        lines.append("  by class/backend: " + ", ".join("%s=%d" % kv for kv in s["by_class_backend"].items()))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--seed", type=int, help="run one program in this process and show it")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--timeout", type=int, default=180)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads in workers (2: parallel kernels)")
    ap.add_argument("--backends", default="eager,aot_eager,inductor")
    ap.add_argument("--out", default=None)
    ap.add_argument("--rerun", help="run only the seeds that failed in this earlier run (results.jsonl or its --out directory)")
    ap.add_argument("--minimise", action="store_true", help="minimise failures and write regression tests")
    ap.add_argument("--per-class", type=int, default=2, help="with --minimise: seeds minimised per class")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seeds", help=argparse.SUPPRESS)
    ap.add_argument("--out-file", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.backends = [b for b in args.backends.split(",") if b]
    if args.worker:
        worker([int(s) for s in args.seeds.split(",")], args.out_file, args.backends, args.threads)
        return 0
    if args.seed is not None:
        import torch

        torch.set_num_threads(args.threads)
        from fuzz import gen, harness

        prog = gen.generate(args.seed)
        print(gen.render(prog))
        print("# inputs:", json.dumps(prog["inputs"]), "backward:", prog["backward"], "train:", prog["train"])
        fails = harness.check_program(prog, args.backends)
        for f in fails:
            print("%s (call %s): %s" % (f.backend, f.call, f))
        if not fails:
            print("ok")
        return 1 if fails else 0
    if args.out is None:
        args.out = os.path.join("/tmp", "ptgo-fuzz-%d-%d" % (args.start, args.n))
    results, summary = drive(args)
    if args.minimise:
        from fuzz import minimise

        minimise.minimise_results(results, per_class=args.per_class, backends=args.backends)
    # anything but "ok" fails the run: a generator or harness error is a program nobody checked
    bad = sum(n for status, n in summary["status"].items() if status != "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
