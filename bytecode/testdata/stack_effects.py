"""Prints dis.stack_effect for every opcode, argument in ARGS and jump in (False, True).

Run by bytecode's TestStackEffectMatchesDis: /usr/bin/python3 stack_effects.py ARG...
Output lines: "opcode arg jump effect", effect "err" where dis raises ValueError.
Opcodes below HAVE_ARGUMENT are asked without an argument (dis refuses one) and reported
for every ARG.
"""
import dis
import sys

assert sys.version_info[:2] == (3, 11), "stack_effects.py needs CPython 3.11, got %s" % sys.version
args = [int(a) for a in sys.argv[1:]]
out = []
for op in range(256):
    for jump in (False, True):
        for arg in args:
            try:
                if op < dis.HAVE_ARGUMENT:
                    e = dis.stack_effect(op, jump=jump)
                else:
                    e = dis.stack_effect(op, arg, jump=jump)
            except ValueError:
                e = "err"
            out.append("%d %d %d %s" % (op, arg, jump, e))
print("\n".join(out))
