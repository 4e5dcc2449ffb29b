package bytecode

import "fmt"

// Opcode is a CPython 3.11 opcode (see opcodes_311.go, generated from CPython's opcode module).
type Opcode uint8

// String returns CPython's name for the opcode ("LOAD_FAST"), or "<op N>" for an unused byte.
func (op Opcode) String() string {
	if n := opNames[op]; n != "" {
		return n
	}
	return fmt.Sprintf("<op %d>", uint8(op))
}

// Caches is the number of 2-byte inline CACHE entries that follow the opcode in co_code.
func (op Opcode) Caches() int { return int(cacheEntries[op]) }

// Size is the size in bytes of one instruction with this opcode, caches included
// (EXTENDED_ARG prefixes not included).
func (op Opcode) Size() int { return 2 * (1 + int(cacheEntries[op])) }

// Base returns the opcode a specialised (quickened) opcode stands for, or op itself.
func (op Opcode) Base() Opcode {
	if b := specialisedBase[op]; b != 0 {
		return b
	}
	return op
}

// HasArg reports whether the opcode's argument is meaningful.
func (op Opcode) HasArg() bool { return op >= HaveArgument }

// IsJump reports whether the opcode is a relative jump (forward or backward).
func (op Opcode) IsJump() bool { return hasJumpForward[op] || hasJumpBackward[op] }

// IsBackwardJump reports whether the opcode jumps backward (its argument counts back).
func (op Opcode) IsBackwardJump() bool { return hasJumpBackward[op] }

// UsesConst, UsesName, UsesLocal, UsesFree: what the argument indexes.
func (op Opcode) UsesConst() bool { return hasConst[op] }
func (op Opcode) UsesName() bool  { return hasName[op] }
func (op Opcode) UsesLocal() bool { return hasLocal[op] }
func (op Opcode) UsesFree() bool  { return hasFree[op] }

// CodeFlags are a code object's co_flags.
type CodeFlags uint32

const (
	CO_OPTIMIZED          CodeFlags = 0x0001
	CO_NEWLOCALS          CodeFlags = 0x0002
	CO_VARARGS            CodeFlags = 0x0004
	CO_VARKEYWORDS        CodeFlags = 0x0008
	CO_NESTED             CodeFlags = 0x0010
	CO_GENERATOR          CodeFlags = 0x0020
	CO_NOFREE             CodeFlags = 0x0040
	CO_COROUTINE          CodeFlags = 0x0080
	CO_ITERABLE_COROUTINE CodeFlags = 0x0100
	CO_ASYNC_GENERATOR    CodeFlags = 0x0200
)

// Code is the Go-side copy of the fields of a CPython code object that decoding and
// assembling need. Constants stay live Python objects owned by the caller; only their
// count is kept here.
type Code struct {
	Name, QualName, Filename                  string
	FirstLineNo                               int
	ArgCount, PosOnlyArgCount, KwOnlyArgCount int
	NLocals, StackSize                        int
	Flags                                     CodeFlags
	Bytecode                                  []byte // co_code (never quickened: CPython returns the deoptimised copy)
	Names                                     []string
	VarNames, CellVars, FreeVars              []string
	NConsts                                   int
	LineTable                                 []byte // co_linetable (3.11 location table)
	ExceptionTable                            []byte // co_exceptiontable
}

// NArgs is the number of argument slots a frame of this code starts with: positional (including
// positional-only), keyword-only, then *args and **kwargs when present.
func (c *Code) NArgs() int {
	n := c.ArgCount + c.KwOnlyArgCount
	if c.Flags&CO_VARARGS != 0 {
		n++
	}
	if c.Flags&CO_VARKEYWORDS != 0 {
		n++
	}
	return n
}

// LocalsPlusNames is the layout of the frame's localsplus array in 3.11: varnames, then
// cellvars that are not also arguments, then freevars.
func (c *Code) LocalsPlusNames() []string {
	out := append([]string(nil), c.VarNames...)
	seen := map[string]bool{}
	for _, v := range c.VarNames {
		seen[v] = true
	}
	for _, v := range c.CellVars {
		if !seen[v] {
			out = append(out, v)
		}
	}
	return append(out, c.FreeVars...)
}

// Position is a source location from the 3.11 location table, with CPython's conventions
// (co_positions): -1 stands for None. Line -1 means "no location" (NoPosition: every field -1);
// Col/EndCol are -1 when the table has no column information. Line 0 is a real line number:
// CPython gives it to the RESUME that starts module code.
type Position struct {
	Line, EndLine, Col, EndCol int
}

// Instr is one decoded instruction. As in dis, each EXTENDED_ARG prefix is an instruction of its
// own, and Arg of the instruction it prefixes includes the prefixes' bits.
type Instr struct {
	Offset     int    // byte offset of the opcode in co_code
	Op         Opcode // never CACHE: inline caches are skipped by the decoder
	Arg        int    // full argument, EXTENDED_ARG bits folded in; 0 when the opcode takes none
	Target     int    // jump target byte offset for jumps, else -1
	Pos        Position
	StartsLine bool // first instruction of a new source line (dis's starts_line)
}

// Next is the byte offset just after this instruction and its inline caches.
func (in *Instr) Next() int { return in.Offset + in.Op.Size() }

// ExceptEntry is one entry of a 3.11 exception table: instructions in [Start, End) (byte
// offsets) jump to Target with the value stack popped to Depth; Lasti pushes the offset of the
// raising instruction first.
type ExceptEntry struct {
	Start, End, Target, Depth int
	Lasti                     bool
}
