package bytecode

import "fmt"

// maxExtendedArgs is the most EXTENDED_ARG prefixes one instruction can have: CPython's oparg
// is 32 bits, one byte from the instruction and one from each prefix.
const maxExtendedArgs = 3

// Valid reports whether op is an opcode CPython 3.11's compiler emits: a named, unspecialised
// opcode other than CACHE.
func (op Opcode) Valid() bool {
	return op != CACHE && opNames[op] != "" && specialisedBase[op] == 0
}

// where names a code object in error messages: "qualname (file:line)".
func (c *Code) where() string {
	name := c.QualName
	if name == "" {
		name = c.Name
	}
	return fmt.Sprintf("%s (%s:%d)", name, c.Filename, c.FirstLineNo)
}

// Decode decodes c.Bytecode, CPython 3.11 bytecode, into instructions as dis sees them:
// inline CACHE entries skipped, each EXTENDED_ARG prefix an instruction of its own whose Arg
// holds the bits accumulated so far, the prefixed instruction's Arg complete, relative jump
// targets resolved to byte offsets, and the source position and line start of each
// instruction taken from c.LineTable. Malformed input (odd length, unknown opcodes,
// instructions or caches cut off, jumps that do not land on an instruction, a corrupt
// location table) is an error.
func Decode(c *Code) ([]Instr, error) {
	code := c.Bytecode
	if len(code)%2 != 0 {
		return nil, fmt.Errorf("decode: co_code has odd length %d (%s); bytecode is a sequence of 2-byte code units", len(code), c.where())
	}
	units := len(code) / 2
	pos, err := DecodeLineTable(c.LineTable, c.FirstLineNo, units)
	if err != nil {
		return nil, fmt.Errorf("decode: %w (%s)", err, c.where())
	}
	starts := lineStarts(pos)

	out := make([]Instr, 0, units)
	isStart := make([]bool, units+1) // instruction starts, by code unit
	ext, nExt := 0, 0
	for off := 0; off < len(code); {
		op, raw := Opcode(code[off]), int(code[off+1])
		if !op.Valid() {
			return nil, fmt.Errorf("decode: invalid opcode %s (%d) at offset %d (%s); co_code is not CPython 3.11 bytecode or is corrupt", op, uint8(op), off, c.where())
		}
		in := Instr{Offset: off, Op: op, Target: -1, Pos: pos[off/2], StartsLine: starts[off/2]}
		if op.HasArg() {
			in.Arg = ext | raw
		}
		switch {
		case op == EXTENDED_ARG:
			if nExt++; nExt > maxExtendedArgs {
				return nil, fmt.Errorf("decode: more than %d EXTENDED_ARG prefixes at offset %d (%s); CPython opargs have 32 bits", maxExtendedArgs, off, c.where())
			}
			ext = in.Arg << 8
		default:
			ext, nExt = 0, 0
		}
		next := in.Next()
		if next > len(code) {
			return nil, fmt.Errorf("decode: %s at offset %d needs %d bytes with its inline caches but co_code ends at %d (%s); the bytecode is truncated", op, off, op.Size(), len(code), c.where())
		}
		if op.IsJump() {
			if op.IsBackwardJump() {
				in.Target = next - 2*in.Arg
			} else {
				in.Target = next + 2*in.Arg
			}
		}
		isStart[off/2] = true
		out = append(out, in)
		off = next
	}
	if nExt > 0 {
		return nil, fmt.Errorf("decode: co_code ends with an EXTENDED_ARG prefix (%s); the bytecode is truncated", c.where())
	}
	for _, in := range out {
		if in.Op.IsJump() && (in.Target < 0 || in.Target >= len(code) || !isStart[in.Target/2]) {
			return nil, fmt.Errorf("decode: %s at offset %d jumps to %d, which is not the start of an instruction in %d bytes (%s); the bytecode is corrupt", in.Op, in.Offset, in.Target, len(code), c.where())
		}
	}
	return out, nil
}

// lineStarts marks the code units where dis reports a new source line (Instruction.starts_line):
// the first unit of each run of co_lines() with a line number different from the last line
// number seen.
func lineStarts(pos []Position) []bool {
	starts := make([]bool, len(pos))
	last, seen := 0, false
	for u, p := range pos {
		if !p.HasLine() {
			continue
		}
		if !seen || p.Line != last {
			starts[u] = true
		}
		last, seen = p.Line, true
	}
	return starts
}
