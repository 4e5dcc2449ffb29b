// Package bytecode reads, analyses and writes CPython 3.11 bytecode.
//
// # The codec
//
// It takes a Code (the fields of a code object copied out of CPython: co_code, co_linetable,
// co_exceptiontable, names, counts) and gives instructions; it takes an Assembly (instructions
// with symbolic jump targets) and gives the bytes of a new code object. The opcode tables are
// data generated from CPython's opcode module (opcodes_311.go, gen/opcodes.py), one file per
// CPython minor version.
//
//	Decode(c)                 []Instr as dis shows them: EXTENDED_ARG prefixes as instructions
//	                          with the full argument folded into the next, inline CACHE entries
//	                          skipped, jump targets as byte offsets, source positions and line
//	                          starts from the location table
//	Disassemble(c)            *Assembly: no prefixes, jumps and exception ranges by instruction
//	                          index, one position per instruction
//	Assemble(a)               *Assembled: co_code, co_linetable, co_exceptiontable,
//	                          co_stacksize, plus each instruction's offset and stack depth
//	DecodeLineTable / EncodeLineTable, DecodeExceptionTable / EncodeExceptionTable
//	StackEffect(op, arg, jump) dis.stack_effect
//
// Invariants, each checked by a test over every code object of the standard library and
// torch.nn (about 21,000 code objects, a million instructions):
//
//   - Decode agrees with dis instruction for instruction (offset, opcode, argument, jump
//     target, starts_line, positions) and DecodeExceptionTable with dis's exception entries.
//   - Assemble(Disassemble(c)) reproduces co_code, co_linetable and co_exceptiontable byte for
//     byte and co_stacksize exactly: Assemble makes the choices CPython 3.11's compiler makes
//     (compile.c, assemble_jump_offsets, write_location_info_entry,
//     assemble_exception_table, stackdepth).
//   - StackEffect equals dis.stack_effect for every opcode, both branches, and a range of
//     arguments.
//
// Malformed input to the decoders is an error, never a panic (FuzzDecode). An Assembly that
// cannot be laid out — a jump that cannot go the way its target lies, stack depths that
// disagree, a path that runs off the end, a handler deeper than the stack it covers — is an
// error that names the instruction.
//
// # CPython 3.11 facts the codec encodes
//
// Offsets are in bytes; arguments of relative jumps and all exception-table numbers count
// 2-byte code units. A jump's argument counts from the end of the jump (its caches included;
// no jump has caches in 3.11), forward for *_FORWARD opcodes and FOR_ITER, SEND,
// JUMP_IF_*_OR_POP, backward for *_BACKWARD. Assemble picks JUMP_FORWARD or JUMP_BACKWARD
// and POP_JUMP_FORWARD_IF_* or POP_JUMP_BACKWARD_IF_* from where the target lies; a target at
// or before the jump is backward. EXTENDED_ARG prefixes are added until no jump argument
// changes, starting from zero as CPython does, which gives the smallest layout.
//
// The location table has one run of entries per instruction (prefixes and caches included),
// never merged with a neighbour that has the same position, so bytes depend on instruction
// boundaries (EncodeLineTable takes LineSpans). Positions use CPython's -1 for None; line 0
// is real (module code's RESUME has it).
//
// The exception table has one entry per maximal run of instructions under the same handler.
// A handler is entered with the stack cut to its depth, then lasti if it preserves it, then
// the exception: depth+lasti+1 values. co_stacksize counts those entries; it is computed
// before CPython inserts the generator prologue RETURN_GENERATOR; POP_TOP, so the flow
// analysis counts RETURN_GENERATOR as pushing the value sent into the generator.
//
// Building new code: use a Builder (labels for forward jumps and handler ranges) or append to
// an Assembly directly (targets are instruction indices; Insert keeps them pointing at the
// same instructions), then Assemble and put the results into a code object with
// code.replace(co_code=..., co_linetable=..., co_exceptiontable=..., co_stacksize=...).
package bytecode
