#!/usr/bin/python3
"""Runs forward and backward graphs that aotautograd.ToTorch converted, with plain torch.

The aot_eager check of aotautograd's tests (TestAOTEagerAgainstTorch): the Go test writes a JSON
list of cases, each with the converted forward and backward graphs (fxgraph.EncodeJSON text),
the inputs, the buffers and the tangents (a case without a backward graph runs the forward
only: the one-prim cases of primtorch/testdata/prim_cases.json); this script builds each graph into a torch.fx
GraphModule with python/ptgo/fx_export.py, runs the forward (with grad mode off, after
torch.manual_seed(0) as gen_cases.py does), then the backward on the saved values and
tangents, and writes the user outputs, the buffers after the forward and the gradients. The Go
test compares them with eager torch's recorded results.

Usage: run_torch.py IN.json OUT.json
"""
import importlib.util
import json
import math
import os
import sys
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "ptgo_fx_export", os.path.join(HERE, "..", "..", "python", "ptgo", "fx_export.py"))
fx_export = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fx_export)

DT = {"b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
      "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
NAMES = {v: k for k, v in DT.items()}


def dec_num(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return v


def make(t):
    dt = DT[t["dtype"]]
    storage = [dec_num(v) for v in t["storage"]]
    base = torch.tensor(storage, dtype=dt) if storage else torch.zeros(0, dtype=dt)
    return base.as_strided(t["shape"], t["strides"], t["offset"])


def enc(t):
    if t is None:
        return None
    t = t.detach()
    vals = t.reshape(-1).tolist() if t.dim() else [t.item()]
    if t.dtype.is_floating_point:
        vals = [("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")) if not math.isfinite(v) else v for v in vals]
    elif t.dtype == torch.bool:
        vals = [1 if v else 0 for v in vals]
    return {"dtype": NAMES[t.dtype], "shape": list(t.shape), "strides": list(t.stride()), "values": vals}


def run(c):
    attrs = {a["name"]: make(a) for a in c["attrs"]}
    fw = fx_export.graph_module_from_json(c["forward"], None, attrs)
    bw = fx_export.graph_module_from_json(c["backward"], None, None) if c.get("backward") else None
    inputs = [make(t) for t in c["inputs"]]
    with torch.no_grad():
        torch.manual_seed(0)
        res = fw(*inputs)
        n = c["num_outputs"]
        outs, saved = list(res[:n]), list(res[n:])
        after = {k: enc(v) for k, v in attrs.items()}
        grads = bw(*saved, *[make(t) for t in c["tangents"]]) if bw is not None else []
    return {"name": c["name"], "outputs": [enc(o) for o in outs], "after": after, "grads": [enc(g) for g in grads]}


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    results = []
    for c in cases:
        try:
            results.append(run(c))
        except Exception:
            results.append({"name": c["name"], "error": traceback.format_exc(limit=4)})
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
