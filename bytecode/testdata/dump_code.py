"""Dumps every code object of torch.nn and of the standard library, with dis's view of it.

Run by bytecode's Go tests: /usr/bin/python3 dump_code.py OUTDIR [WORKERS]
Writes OUTDIR/dump-<n>.txt (one per worker) and OUTDIR/summary.txt, then prints the summary.

The code objects are those the interpreter would import: each module's source is compiled
exactly as importlib compiles it (compile(source, path, "exec", dont_inherit=True)), and
its code objects are walked recursively through co_consts. Compiling instead of importing
gives the same code objects without running any module (no side effects, no GUI, no
network) and without importing torch.

Record format (one code object per record, tab-separated fields, '-' for None):
  C  qualname  filename  firstlineno  name  argcount  posonly  kwonly  nlocals  stacksize
     flags  nconsts
  B  co_code-hex  linetable-hex  exceptiontable-hex
  N  names (comma-separated)       V  varnames       L  cellvars       F  freevars
  I  instructions, ';'-separated: offset opname arg target startsline line endline col endcol
     (target is dis's argval for relative jumps, else '-')
  E  exception entries, ';'-separated: start end target depth lasti(0/1)
"""
import dis
import multiprocessing
import opcode
import os
import sys
import sysconfig
import types

assert sys.version_info[:2] == (3, 11), "dump_code.py needs CPython 3.11, got %s" % sys.version

STDLIB = sysconfig.get_paths()["stdlib"]
# Third-party packages are not the standard library. Nothing is imported, so modules with
# import-time side effects (antigravity, this, turtle, tkinter, idlelib) are safe to include;
# files that do not compile (lib2to3's Python 2 test data) are counted as skipped.
SKIP_TOP = {"site-packages", "dist-packages"}
SKIP_DIRS = {"__pycache__"}
JREL = set(opcode.hasjrel)


def stdlib_files():
    for root, dirs, files in os.walk(STDLIB):
        rel = os.path.relpath(root, STDLIB)
        top = rel.split(os.sep)[0]
        if top in SKIP_TOP or top.startswith("config-"):
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def torch_nn_files():
    import importlib.util
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("dump_code.py: torch is not installed for %s; install python3-torch" % sys.executable)
    base = os.path.join(spec.submodule_search_locations[0], "nn")
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(root, f)


def field(s):
    s = str(s)
    assert not any(c in s for c in "\t\n,;"), "unexpected separator in %r" % s
    return s


def opt(v):
    return "-" if v is None else str(v)


def dump_code(co, out):
    w = out.append
    w("C\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d" % (
        field(co.co_qualname), field(co.co_filename), co.co_firstlineno, field(co.co_name),
        co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount, co.co_nlocals,
        co.co_stacksize, co.co_flags, len(co.co_consts)))
    w("B\t%s\t%s\t%s" % (co.co_code.hex(), co.co_linetable.hex(), co.co_exceptiontable.hex()))
    for tag, names in (("N", co.co_names), ("V", co.co_varnames),
                       ("L", co.co_cellvars), ("F", co.co_freevars)):
        w("%s\t%s" % (tag, ",".join(field(n) for n in names)))
    bc = dis.Bytecode(co)
    ins = []
    for i in bc:
        p = i.positions
        target = i.argval if i.opcode in JREL else None
        ins.append("%d %s %s %s %s %s %s %s %s" % (
            i.offset, i.opname, opt(i.arg), opt(target), opt(i.starts_line),
            opt(p.lineno), opt(p.end_lineno), opt(p.col_offset), opt(p.end_col_offset)))
    w("I\t" + ";".join(ins))
    w("E\t" + ";".join("%d %d %d %d %d" % (e.start, e.end, e.target, e.depth, e.lasti)
                       for e in bc.exception_entries))
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            dump_code(c, out)


def dump_files(job):
    index, paths, outdir = job
    n = skipped = 0
    with open(os.path.join(outdir, "dump-%d.txt" % index), "w") as f:
        for path in paths:
            try:
                with open(path, "rb") as src:
                    co = compile(src.read(), path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError, UnicodeDecodeError):
                skipped += 1
                continue
            out = []
            dump_code(co, out)
            n += sum(1 for line in out if line.startswith("C\t"))
            f.write("\n".join(out))
            f.write("\n")
    return n, skipped


def main():
    outdir = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    files = list(stdlib_files()) + list(torch_nn_files())
    # Interleave so that workers get similar loads.
    jobs = [(k, files[k::workers], outdir) for k in range(workers)]
    if workers == 1:
        results = [dump_files(jobs[0])]
    else:
        with multiprocessing.Pool(workers) as pool:
            results = pool.map(dump_files, jobs)
    codes = sum(r[0] for r in results)
    skipped = sum(r[1] for r in results)
    summary = "files %d skipped %d codes %d" % (len(files), skipped, codes)
    with open(os.path.join(outdir, "summary.txt"), "w") as f:
        f.write(summary + "\n")
    print(summary)


if __name__ == "__main__":
    main()
