"""Writes the FuzzDecode seed corpus: a few real CPython 3.11 code objects.

Run from bytecode/: /usr/bin/python3 testdata/fuzz/make_seeds.py
Each seed is (co_code, co_linetable, co_exceptiontable, co_firstlineno) in Go's fuzz corpus
format.
"""
import os
import sys

assert sys.version_info[:2] == (3, 11), "make_seeds.py needs CPython 3.11"

SOURCE = '''
def simple(a, b=2):
    return a.x + b * 3

def try_except(a, b):
    try:
        return a / b
    except ZeroDivisionError as e:
        raise ValueError(b) from e
    finally:
        print("done")

def gen(n):
    for i in range(n):
        if i % 2:
            yield i
    with open(n) as f:
        yield from f

def closure(xs):
    k = 3
    return [x * k for x in xs if x]

async def coro(s):
    async with s as t:
        async for x in t:
            await x

def long_jumps(x):
    while x:
''' + "".join("        x = x.a%d(%d, k=%d)\n" % (i, i, i) for i in range(60)) + '''
    return x

class K:
    def m(self):
        return super().m()
'''


def walk(co):
    yield co
    for c in co.co_consts:
        if hasattr(c, "co_code"):
            yield from walk(c)


def go_bytes(b):
    return '[]byte("%s")' % "".join("\\x%02x" % c for c in b)


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "FuzzDecode")
    os.makedirs(out, exist_ok=True)
    for co in walk(compile(SOURCE, "seeds.py", "exec", dont_inherit=True)):
        name = co.co_qualname.replace("<", "").replace(">", "").replace(".", "_")
        with open(os.path.join(out, "seed_" + name), "w") as f:
            f.write("go test fuzz v1\n%s\n%s\n%s\nint(%d)\n" % (
                go_bytes(co.co_code), go_bytes(co.co_linetable),
                go_bytes(co.co_exceptiontable), co.co_firstlineno))


if __name__ == "__main__":
    main()
