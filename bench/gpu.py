"""ptgo's CUDA kernels beside torch.compile's Inductor on one GPU (tools/gpu-check runs it).

Contestants, each on its own copy of the model, inference under torch.no_grad():
  eager        the model as it is
  inductor     torch.compile(model)                                   (Inductor, Triton)
  max-autotune torch.compile(model, mode="max-autotune-no-cudagraphs")
  ptgo         torch.compile(model, backend=ptgo.backends.torch_entry_point): Dynamo's graphs
               through ptgo's pipeline, CUDA kernels rendered from ptgo's loop IR, NVRTC

Per workload and contestant: the median time per call (CUDA events around each call, after
warm-up; no CUDA graphs anywhere), its speedup over eager, ptgo's time over Inductor's, the
normwise relative error against eager's output, and the cold compile time (the first call's
time minus a warm call's, with empty caches: every contestant's cache directory is fresh).
Warm start: for a few workloads, a child process with the caches the first run filled times the
first call again. max-autotune runs after every other contestant, in workload order, while the
time budget lasts; what the budget cuts is reported as skipped.

Writes bench.json and bench.md under --out. A report, not a test.

Usage: python bench/gpu.py --out DIR [--budget SECONDS] [--dry-run] [--only a,b]
  --dry-run: CPU, tiny shapes, two repetitions: checks the plumbing where there is no GPU.
"""
import argparse
import copy
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ after the standard library (python puts a script's folder first): bench/profile.py
# must not shadow the standard library's profile, which torch._dynamo imports
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE] + [HERE]

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import models  # noqa: E402


class GPTBlockGPU(models.GPTBlock):
    """models.GPTBlock with its causal mask made on the input's device."""

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def _vision(name):
    def make():
        import torchvision

        return getattr(torchvision.models, name)(weights=None).eval()
    return make


# name -> (make model, make inputs (dry: tiny shapes), dtype, kind)
def workloads(dry):
    s = (lambda big, small: small) if dry else (lambda big, small: big)  # noqa: E731
    return {
        "gelu_mlp": (lambda: models.GeluMLP(1024, 4096), lambda: [torch.randn(s(8192, 16), 1024)], torch.float32, "pointwise"),
        "layernorm_softmax": (lambda: models.NormSoftmaxChain(1024), lambda: [torch.randn(s(16384, 16), 1024)],
                              torch.float32, "norm"),
        "pointwise_chain": (models.PointwiseChain, lambda: [torch.randn(s(4096, 8), 4096), torch.randn(s(4096, 8), 4096)],
                            torch.float32, "pointwise"),
        "rmsnorm_silu": (lambda: models.RMSNormSiLU(1024, 2816), lambda: [torch.randn(s(16, 1), s(512, 8), 1024)],
                         torch.float32, "norm"),
        "gpt_block_bf16": (lambda: GPTBlockGPU(768, 12), lambda: [torch.randn(s(8, 1), s(512, 16), 768)], torch.bfloat16,
                           "model"),
        "transformer_encoder": (lambda: nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0, batch_first=True),
                                lambda: [torch.randn(s(32, 2), s(128, 8), 512)], torch.float32, "model"),
        "resnet18": (_vision("resnet18"), lambda: [torch.randn(s(32, 1), 3, s(224, 32), s(224, 32))], torch.float32, "model"),
        "vit_b_16": (_vision("vit_b_16"), lambda: [torch.randn(s(16, 1), 3, 224, 224)], torch.float32, "model"),
    }


def contestant(name, model):
    if name == "eager":
        return model
    if name == "inductor":
        return torch.compile(model)
    if name == "max-autotune":
        return torch.compile(model, mode="max-autotune-no-cudagraphs")
    if name == "ptgo":
        import ptgo.backends

        return torch.compile(model, backend=ptgo.backends.torch_entry_point)
    raise KeyError(name)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def first_call(fn, inputs, dev):
    sync(dev)
    t0 = time.perf_counter()
    out = fn(*inputs)
    sync(dev)
    return out, time.perf_counter() - t0


def timed(fn, inputs, dev, reps, warmup):
    for _ in range(warmup):
        fn(*inputs)
    sync(dev)
    times = []
    if dev.type == "cuda":
        evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in evs:
            a.record()
            fn(*inputs)
            b.record()
        torch.cuda.synchronize(dev)
        times = [a.elapsed_time(b) / 1e3 for a, b in evs]
    else:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(*inputs)
            times.append(time.perf_counter() - t0)
    return statistics.median(times), min(times)


def flat(v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [x for e in v for x in flat(e)]
    if isinstance(v, dict):
        return [x for e in v.values() for x in flat(e)]
    return []


def rel_err(got, want):
    worst = 0.0
    for a, b in zip(flat(got), flat(want)):
        a64, b64 = a.detach().double(), b.detach().double()
        if torch.isnan(a64).any() and not torch.isnan(b64).any():
            return float("nan")
        worst = max(worst, ((a64 - b64).norm() / b64.norm().clamp_min(1e-30)).item())
    return worst


def ptgo_stats():
    try:
        from ptgo import _C, _runtime

        _runtime.ensure_initialized()
        return json.loads(_C.request("inductor_stats", "{}"))
    except Exception as e:  # noqa: BLE001
        return {"error": str(e)}


def run_one(wname, cname, spec, dev, reps, warmup, eager_out=None):
    make, make_inputs, dtype, _ = spec
    torch.manual_seed(0)
    model = make().to(device=dev, dtype=dtype).eval()
    torch.manual_seed(1)
    inputs = [t.to(device=dev, dtype=dtype) for t in make_inputs()]
    if cname != "eager":
        torch._dynamo.reset()
    fn = contestant(cname, copy.deepcopy(model) if cname != "eager" else model)
    rec = {"workload": wname, "contestant": cname}
    before = ptgo_stats() if cname == "ptgo" else None
    try:
        with torch.no_grad(), warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            out, first = first_call(fn, inputs, dev)
            med, best = timed(fn, inputs, dev, reps, warmup)
            out = fn(*inputs)
            sync(dev)
        rec.update(median_s=med, best_s=best, first_call_s=first, compile_s=max(first - med, 0.0))
        rec["warnings"] = sorted({str(w.message)[:300] for w in ws if "ptgo" in str(w.message)})
        if eager_out is not None:
            rec["rel_err"] = rel_err(out, eager_out)
        if cname == "ptgo":
            after = ptgo_stats()
            rec["ptgo"] = {k: after.get(k, 0) - before.get(k, 0) for k in ("cuda", "compiled", "fx", "fallbacks")}
            rec["ptgo_reasons"] = {k: v - (before.get("reasons") or {}).get(k, 0)
                                   for k, v in (after.get("reasons") or {}).items()
                                   if v - (before.get("reasons") or {}).get(k, 0) > 0}
    except Exception as e:  # noqa: BLE001 - a contestant that fails is reported, not fatal
        rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:2000])
        out = None
    return rec, out


WARM_CHILD = r'''
import json, sys, time, torch
sys.path.append(%(here)r)
import gpu
spec = gpu.workloads(%(dry)r)[%(w)r]
dev = torch.device(%(dev)r)
make, make_inputs, dtype, _ = spec
torch.manual_seed(0)
model = make().to(device=dev, dtype=dtype).eval()
inputs = [t.to(device=dev, dtype=dtype) for t in make_inputs()]
fn = gpu.contestant(%(c)r, model)
with torch.no_grad():
    _, first = gpu.first_call(fn, inputs, dev)
    med, _ = gpu.timed(fn, inputs, dev, 5, 1)
print(json.dumps({"first_call_s": first, "median_s": med}))
'''


def warm_start(wname, cname, dev, dry, env):
    code = WARM_CHILD % {"here": HERE, "dry": dry, "w": wname, "dev": str(dev), "c": cname}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        return {"error": r.stderr[-1500:]}
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["warm_start_s"] = max(d["first_call_s"] - d["median_s"], 0.0)
    return d


def fmt_ms(s):
    return "—" if s is None else "%.3f" % (s * 1e3)


def report(results, meta):
    by = {}
    for r in results["runs"]:
        by.setdefault(r["workload"], {})[r["contestant"]] = r
    lines = ["# ptgo vs torch.compile on %s (%s)" % (meta["gpu"], meta["date"]), "",
             "torch %s, CUDA %s, Python %s, NVRTC from the Python env. Inference, no CUDA graphs, "
             "median of %d calls (CUDA events). Speedup over eager; ptgo/Inductor is ptgo's time over "
             "Inductor's (below 1: ptgo faster). err: normwise relative error against eager." % (
                 meta["torch"], meta["cuda"], meta["python"], meta["reps"]), "",
             "| workload | eager ms | inductor ms (×) | max-autotune ms (×) | ptgo ms (×) | ptgo/inductor | "
             "compile s (ind / ma / ptgo) | ptgo err | ptgo graphs cuda/fallback |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w, cs in by.items():
        e = cs.get("eager", {}).get("median_s")

        def cell(c):
            r = cs.get(c)
            if r is None:
                return "skipped"
            if "error" in r:
                return "error"
            if "skipped" in r:
                return "skipped (%s)" % r["skipped"]
            sp = (" (%.2f×)" % (e / r["median_s"])) if e else ""
            return fmt_ms(r["median_s"]) + sp

        def comp(c):
            r = cs.get(c) or {}
            return "%.1f" % r["compile_s"] if "compile_s" in r else "—"

        p, i = cs.get("ptgo", {}), cs.get("inductor", {})
        ratio = "%.2f" % (p["median_s"] / i["median_s"]) if "median_s" in p and "median_s" in i else "—"
        pg = p.get("ptgo") or {}
        lines.append("| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s/%s |" % (
            w, fmt_ms(e), cell("inductor"), cell("max-autotune"), cell("ptgo"), ratio, comp("inductor"),
            comp("max-autotune"), comp("ptgo"), ("%.1e" % p["rel_err"]) if "rel_err" in p else "—",
            pg.get("cuda", "—"), pg.get("fallbacks", "—")))
    if results.get("warm"):
        lines += ["", "Warm start (a new process, caches filled; first call minus a warm call):", ""]
        for w in results["warm"]:
            lines.append("- %s / %s: %s" % (w["workload"], w["contestant"],
                                            "%.3f s" % w["warm_start_s"] if "warm_start_s" in w else w.get("error", "?")[:300]))
    errs = [r for r in results["runs"] if "error" in r]
    if errs:
        lines += ["", "Errors:", ""] + ["- %s / %s: %s" % (r["workload"], r["contestant"], r["error"][:500].replace("\n", " "))
                                        for r in errs]
    reasons = {}
    for r in results["runs"]:
        for k, v in (r.get("ptgo_reasons") or {}).items():
            reasons[k] = reasons.get(k, 0) + v
    if reasons:
        lines += ["", "Why ptgo ran graphs with torch:", ""] + ["- %d× %s" % (v, k[:300]) for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=330.0, help="seconds for the whole benchmark")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-warm", action="store_true")
    args = ap.parse_args()
    t_start = time.time()
    deadline = t_start + args.budget
    os.makedirs(args.out, exist_ok=True)
    if args.dry_run:
        dev = torch.device("cpu")
    else:
        if not torch.cuda.is_available():
            print("bench/gpu.py: no CUDA device (torch.cuda.is_available() is False); use --dry-run", file=sys.stderr)
            return 2
        dev = torch.device("cuda")
    reps, warmup = (3, 1) if args.dry_run else (50, 5)
    # fresh caches: compile times are cold
    cache = tempfile.mkdtemp(prefix="ptgo-gpu-bench-")
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"), TRITON_CACHE_DIR=os.path.join(cache, "triton"),
               PTGO_CACHE_DIR=os.path.join(cache, "ptgo"))
    os.environ.update({k: env[k] for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "PTGO_CACHE_DIR")})
    import torch._dynamo as _dynamo  # noqa: F401 - loaded before the first contestant

    ws = workloads(args.dry_run)
    names = [n for n in ws if not args.only or n in args.only.split(",")]
    meta = {"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (dry run)",
            "torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0], "reps": reps}
    results = {"meta": meta, "runs": [], "warm": []}
    main_contestants = ["eager", "inductor", "ptgo"]

    def save():
        with open(os.path.join(args.out, "bench.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        with open(os.path.join(args.out, "bench.md"), "w") as f:
            f.write(report(results, meta))

    for w in names:
        eager_out = None
        for c in main_contestants:
            if time.time() > deadline:
                results["runs"].append({"workload": w, "contestant": c, "skipped": "time budget"})
                continue
            rec, out = run_one(w, c, ws[w], dev, reps, warmup, eager_out)
            if c == "eager":
                eager_out = out
            results["runs"].append(rec)
            print("%-20s %-13s %s" % (w, c, fmt_ms(rec.get("median_s")) + " ms" if "median_s" in rec else rec.get("error", "")[:200]),
                  flush=True)
        save()
    # max-autotune while the budget lasts (its compile is the slowest): one workload at a time,
    # each started only if as much time is left as Inductor's default compile of it took, times 4
    for w in names:
        ind = next((r for r in results["runs"] if r["workload"] == w and r["contestant"] == "inductor"), {})
        need = 4 * ind.get("compile_s", 10.0) + 5
        if time.time() + need > deadline:
            results["runs"].append({"workload": w, "contestant": "max-autotune", "skipped": "time budget"})
            continue
        torch.manual_seed(0)
        eager = run_one(w, "eager", ws[w], dev, 1, 0)[1]
        rec, _ = run_one(w, "max-autotune", ws[w], dev, reps, warmup, eager)
        results["runs"].append(rec)
        print("%-20s %-13s %s" % (w, "max-autotune", fmt_ms(rec.get("median_s")) + " ms" if "median_s" in rec else rec.get("error", "")[:200]),
              flush=True)
        save()
    if not args.no_warm:
        for w in ("pointwise_chain", "layernorm_softmax"):
            for c in ("inductor", "ptgo"):
                if w in names and time.time() + 30 < deadline:
                    d = warm_start(w, c, dev, args.dry_run, env)
                    d.update(workload=w, contestant=c)
                    results["warm"].append(d)
        save()
    results["meta"]["bench_s"] = time.time() - t_start
    save()
    print(report(results, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
