"""Builds functions from code assembled by ptgo and runs them.

Run by bytecode's TestAssembledCodeRunsInCPython: /usr/bin/python3 run_assembled.py CASES.json
Each case gives the code object's fields (hex bytes for co_code, co_linetable,
co_exceptiontable; Python literals for constants) and calls with expected results or
exceptions. Prints one line per call: "ok NAME CALL" or "FAIL NAME CALL: why".
"""
import ast
import builtins
import dis
import json
import sys
import traceback
import types

assert sys.version_info[:2] == (3, 11), "run_assembled.py needs CPython 3.11, got %s" % sys.version


def template():
    pass


def build(case):
    code = template.__code__.replace(
        co_name=case["name"], co_qualname=case["name"],
        co_argcount=case["argcount"], co_posonlyargcount=0, co_kwonlyargcount=0,
        co_nlocals=len(case["varnames"]), co_varnames=tuple(case["varnames"]),
        co_names=tuple(case["names"]), co_consts=tuple(ast.literal_eval(c) for c in case["consts"]),
        co_flags=case["flags"], co_firstlineno=case["firstlineno"],
        co_stacksize=case["stacksize"], co_code=bytes.fromhex(case["code"]),
        co_linetable=bytes.fromhex(case["linetable"]),
        co_exceptiontable=bytes.fromhex(case["exceptiontable"]))
    # dis must read the code back, instruction for instruction.
    ops = [i.opname for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    if ops != case["opnames"]:
        raise AssertionError("dis reads %s, assembled %s" % (ops, case["opnames"]))
    return types.FunctionType(code, {"__builtins__": builtins})


def check(fn, call):
    args = ast.literal_eval(call["args"])
    try:
        got = fn(*args)
    except Exception as e:
        if not call.get("raises"):
            return "raised %r\n%s" % (e, traceback.format_exc())
        if type(e).__name__ != call["raises"]:
            return "raised %s, want %s" % (type(e).__name__, call["raises"])
        tb = e.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        if tb.tb_frame.f_code is fn.__code__ and tb.tb_lineno != call["line"]:
            return "raised at line %s, want %s" % (tb.tb_lineno, call["line"])
        return None
    if isinstance(got, types.GeneratorType):
        got = tuple(got)
    if call.get("raises"):
        return "returned %r, want %s raised" % (got, call["raises"])
    want = ast.literal_eval(call["want"])
    if got != want or type(got) is not type(want):
        return "returned %r, want %r" % (got, want)
    return None


def main():
    with open(sys.argv[1]) as f:
        cases = json.load(f)
    for case in cases:
        try:
            fn = build(case)
        except Exception as e:
            print("FAIL %s build: %r" % (case["name"], e))
            continue
        for call in case["calls"]:
            why = check(fn, call)
            line = "%s %s" % (case["name"], call["args"])
            print("ok " + line if why is None else "FAIL %s: %s" % (line, why))


if __name__ == "__main__":
    main()
