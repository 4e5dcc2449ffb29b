"""``python -m ptgo.ops``: every torch-level op ptgo knows, with its status per stage.

Options: ``--targets`` lists the call targets that reach each op; ``--json`` prints JSON;
a positional argument filters by name or target substring.
"""
import argparse
import json
import sys


def rows():
    from . import _C, _runtime

    _runtime.ensure_initialized()
    out = json.loads(_C.request("ops", "{}"))
    if isinstance(out, dict) and "error" in out:
        raise RuntimeError(out["error"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ptgo.ops", description=__doc__.splitlines()[0])
    ap.add_argument("filter", nargs="?", default="", help="substring of an op name or target")
    ap.add_argument("--targets", action="store_true", help="list the call targets of each op")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--prims", action="store_true", help="list the core ops (prims.*) instead")
    args = ap.parse_args(argv)
    ops = [r for r in rows() if r.get("prim", False) == args.prims
           and (args.filter in r["name"] or any(args.filter in t for t in r["targets"]))]
    if args.json:
        json.dump(ops, sys.stdout, indent=1)
        print()
        return 0
    w = max([len(r["name"]) for r in ops] + [4])
    print("%-*s  %-10s  %-16s  %-11s  %s" % (w, "op", "kind", "promotion", "decomp", "meta"))
    for r in ops:
        print("%-*s  %-10s  %-16s  %-11s  %s" % (w, r["name"], r["kind"], r["promotion"], r["decomp"], r["meta"]))
        if args.targets:
            print("%*s  %s" % (w, "", ", ".join(r["targets"])))
    counts, decomps = {}, {}
    for r in ops:
        key = "ok" if r["meta"] == "ok" else r["meta"].split(":")[0]
        counts[key] = counts.get(key, 0) + 1
        decomps[r["decomp"]] = decomps.get(r["decomp"], 0) + 1
    targets = sum(len(r["targets"]) for r in ops)
    print("\n%d ops, %d call targets; meta: %s; decomposition: %s" % (
        len(ops), targets, ", ".join("%s %d" % kv for kv in sorted(counts.items())),
        ", ".join("%s %d" % kv for kv in sorted(decomps.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
