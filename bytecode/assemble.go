package bytecode

import (
	"fmt"
	"strings"
)

// AsmInstr is one instruction of an Assembly. EXTENDED_ARG prefixes and inline caches are not
// written: Assemble adds them.
type AsmInstr struct {
	Op Opcode
	// Arg is the full argument. For jumps it is ignored: Assemble computes it from Target.
	Arg int
	// Target is, for jumps, the index in Assembly.Instrs of the instruction jumped to; the
	// direction of the opcode (JUMP_FORWARD or JUMP_BACKWARD, POP_JUMP_FORWARD_IF_TRUE or
	// POP_JUMP_BACKWARD_IF_TRUE, ...) is chosen by Assemble. Ignored (by convention -1) for
	// other opcodes.
	Target int
	Pos    Position
}

// Handler is an exception-table range over instruction indices: an exception raised by an
// instruction in [Start, End) pops the value stack to Depth, pushes the offset of the
// raising instruction when Lasti is set, pushes the exception, and jumps to instruction
// Target. Where ranges overlap, the one listed later applies (list outer ranges first).
type Handler struct {
	Start, End int
	Target     int
	Depth      int
	Lasti      bool
}

// Assembly is code to assemble: instructions with symbolic jump targets, per-instruction
// source positions, and exception handlers by instruction range. Build one with a Builder,
// by hand, or from existing code with Disassemble.
type Assembly struct {
	FirstLine int // co_firstlineno: the location table counts lines from it
	Instrs    []AsmInstr
	Handlers  []Handler
}

// Assembled is the output of Assemble: the fields of a code object that depend on the
// instructions.
type Assembled struct {
	Bytecode       []byte // co_code, with EXTENDED_ARG prefixes and zeroed inline caches
	LineTable      []byte // co_linetable
	ExceptionTable []byte // co_exceptiontable
	StackSize      int    // co_stacksize
	// Offsets holds the byte offset at which each Assembly instruction starts (at its first
	// EXTENDED_ARG prefix, if any): where a jump to it lands.
	Offsets []int
	// Depths holds the value-stack depth on entry to each instruction, -1 where unreachable.
	Depths []int
}

// Append adds an instruction and returns its index. For jumps use AppendJump.
func (a *Assembly) Append(op Opcode, arg int, pos Position) int {
	a.Instrs = append(a.Instrs, AsmInstr{Op: op, Arg: arg, Target: -1, Pos: pos})
	return len(a.Instrs) - 1
}

// AppendJump adds a jump to instruction index target (which may not exist yet) and returns
// the jump's index.
func (a *Assembly) AppendJump(op Opcode, target int, pos Position) int {
	a.Instrs = append(a.Instrs, AsmInstr{Op: op, Target: target, Pos: pos})
	return len(a.Instrs) - 1
}

// Insert inserts instructions before index at. Jump targets and handler targets keep naming
// the instructions they named; handler ranges that contain at (Start < at < End) grow to
// cover the inserted instructions. Targets of the inserted jumps are indices after insertion.
func (a *Assembly) Insert(at int, ins ...AsmInstr) {
	n := len(ins)
	shift := func(i int) int {
		if i >= at {
			return i + n
		}
		return i
	}
	for k := range a.Instrs {
		if a.Instrs[k].Op.IsJump() {
			a.Instrs[k].Target = shift(a.Instrs[k].Target)
		}
	}
	for k := range a.Handlers {
		h := &a.Handlers[k]
		h.Target = shift(h.Target)
		h.Start = shift(h.Start)
		if h.End > at {
			h.End += n
		}
	}
	a.Instrs = append(a.Instrs[:at], append(append([]AsmInstr(nil), ins...), a.Instrs[at:]...)...)
}

// String prints the assembly one instruction a line, with jump targets and handlers by index.
func (a *Assembly) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "firstline %d\n", a.FirstLine)
	for i, in := range a.Instrs {
		text := in.Op.String()
		switch {
		case in.Op.IsJump():
			text += fmt.Sprintf(" -> %d", in.Target)
		case in.Op.HasArg():
			text += fmt.Sprintf(" %d", in.Arg)
		}
		line := fmt.Sprintf("%4d %-36s", i, text)
		if p := in.Pos; p.HasLine() {
			line += fmt.Sprintf(" @%d:%d-%d:%d", p.Line, p.Col, p.EndLine, p.EndCol)
		}
		b.WriteString(strings.TrimRight(line, " "))
		b.WriteByte('\n')
	}
	for _, h := range a.Handlers {
		fmt.Fprintf(&b, "handler [%d, %d) -> %d depth %d lasti %t\n", h.Start, h.End, h.Target, h.Depth, h.Lasti)
	}
	return b.String()
}

// Assemble lays out the instructions as CPython 3.11's assembler does (compile.c,
// assemble_jump_offsets): it picks each jump's direction from its target, computes relative
// jump arguments in code units from the end of the jump, adds EXTENDED_ARG prefixes until
// every argument fits (a fixed point, as prefixes move targets), writes inline caches as
// zeros, and encodes the location table (one entry run per instruction) and the exception
// table (one entry per run of instructions under the same handler). co_stacksize comes from a
// flow analysis over jumps, fall-through and exception edges. For code that came from
// CPython through Disassemble the output is byte-identical to the original.
func Assemble(a *Assembly) (*Assembled, error) {
	ops, err := a.check()
	if err != nil {
		return nil, err
	}
	handlerOf := a.handlerOf()
	args, units := a.layout(ops)
	offsets := make([]int, len(a.Instrs)+1)
	for i := range a.Instrs {
		offsets[i+1] = offsets[i] + 2*units[i]
	}
	out := &Assembled{Offsets: offsets[:len(a.Instrs)]}
	out.Bytecode = make([]byte, 0, offsets[len(a.Instrs)])
	spans := make([]LineSpan, len(a.Instrs))
	for i, in := range a.Instrs {
		out.Bytecode = appendInstr(out.Bytecode, ops[i], args[i])
		spans[i] = LineSpan{Units: units[i], Pos: in.Pos}
	}
	out.LineTable = EncodeLineTable(a.FirstLine, spans)
	if out.ExceptionTable, err = a.exceptionTable(handlerOf, offsets); err != nil {
		return nil, err
	}
	if out.StackSize, out.Depths, err = stackDepth(a, ops, args, handlerOf); err != nil {
		return nil, err
	}
	return out, nil
}

// backwardOf and forwardOf pair the jump opcodes that exist in both directions.
var backwardOf, forwardOf = func() (b, f [256]Opcode) {
	for _, p := range [][2]Opcode{
		{JUMP_FORWARD, JUMP_BACKWARD},
		{POP_JUMP_FORWARD_IF_FALSE, POP_JUMP_BACKWARD_IF_FALSE},
		{POP_JUMP_FORWARD_IF_TRUE, POP_JUMP_BACKWARD_IF_TRUE},
		{POP_JUMP_FORWARD_IF_NONE, POP_JUMP_BACKWARD_IF_NONE},
		{POP_JUMP_FORWARD_IF_NOT_NONE, POP_JUMP_BACKWARD_IF_NOT_NONE},
	} {
		b[p[0]], b[p[1]] = p[1], p[1]
		f[p[0]], f[p[1]] = p[0], p[0]
	}
	return b, f
}()

// check validates the assembly and returns each instruction's opcode with its jump direction
// resolved.
func (a *Assembly) check() ([]Opcode, error) {
	n := len(a.Instrs)
	if n == 0 {
		return nil, fmt.Errorf("assemble: no instructions; code needs at least RESUME and a RETURN_VALUE")
	}
	ops := make([]Opcode, n)
	for i, in := range a.Instrs {
		op := in.Op
		switch {
		case op == EXTENDED_ARG:
			return nil, fmt.Errorf("assemble: EXTENDED_ARG at instruction %d; Assemble adds prefixes itself, give the full argument to the instruction", i)
		case !op.Valid():
			return nil, fmt.Errorf("assemble: invalid opcode %s (%d) at instruction %d; use the base opcodes of opcodes_311.go", op, uint8(op), i)
		case op.IsJump():
			if in.Target < 0 || in.Target >= n {
				return nil, fmt.Errorf("assemble: %s at instruction %d jumps to %d, outside the %d instructions; point Target at an instruction index", op, i, in.Target, n)
			}
			back := in.Target <= i
			switch {
			case back && backwardOf[op] != 0:
				op = backwardOf[op]
			case !back && forwardOf[op] != 0:
				op = forwardOf[op]
			case back != op.IsBackwardJump():
				way := "forward"
				if back {
					way = "backward"
				}
				return nil, fmt.Errorf("assemble: %s at instruction %d cannot jump %s to instruction %d; CPython 3.11 has it in one direction only, restructure the code", op, i, way, in.Target)
			}
		case in.Arg < 0 || in.Arg > 1<<32-1:
			return nil, fmt.Errorf("assemble: %s at instruction %d has argument %d outside 0..2^32-1", op, i, in.Arg)
		case !op.HasArg() && in.Arg != 0:
			return nil, fmt.Errorf("assemble: %s at instruction %d takes no argument but has %d; set Arg to 0", op, i, in.Arg)
		}
		ops[i] = op
	}
	for k, h := range a.Handlers {
		if h.Start < 0 || h.End <= h.Start || h.End > n || h.Target < 0 || h.Target >= n || h.Depth < 0 {
			return nil, fmt.Errorf("assemble: handler %d %+v is invalid for %d instructions; need 0 <= Start < End <= len(Instrs), Target an instruction index, Depth >= 0", k, h, n)
		}
	}
	return ops, nil
}

// handlerOf returns, for each instruction, the index of the handler covering it (the last
// listed wins) or -1.
func (a *Assembly) handlerOf() []int {
	of := make([]int, len(a.Instrs))
	for i := range of {
		of[i] = -1
	}
	for k, h := range a.Handlers {
		for i := h.Start; i < h.End; i++ {
			of[i] = k
		}
	}
	return of
}

// instrUnits is the size in code units of an instruction with its prefixes and caches.
func instrUnits(op Opcode, arg int) int {
	n := 1 + op.Caches()
	if op.HasArg() {
		for v := arg >> 8; v > 0; v >>= 8 {
			n++
		}
	}
	return n
}

// layout computes the final arguments and sizes (code units). Jump arguments start at 0 and
// grow with the EXTENDED_ARG prefixes they need until nothing changes; sizes only grow, so
// this reaches the smallest layout, the one CPython's assembler finds.
func (a *Assembly) layout(ops []Opcode) (args, units []int) {
	n := len(a.Instrs)
	args, units = make([]int, n), make([]int, n)
	for i, in := range a.Instrs {
		if !ops[i].IsJump() {
			args[i] = in.Arg
		}
		units[i] = instrUnits(ops[i], args[i])
	}
	start := make([]int, n)
	for changed := true; changed; {
		for i := 1; i < n; i++ {
			start[i] = start[i-1] + units[i-1]
		}
		changed = false
		for i, in := range a.Instrs {
			if !ops[i].IsJump() {
				continue
			}
			end := start[i] + units[i]
			if ops[i].IsBackwardJump() {
				args[i] = end - start[in.Target]
			} else {
				args[i] = start[in.Target] - end
			}
			if u := instrUnits(ops[i], args[i]); u != units[i] {
				units[i], changed = u, true
			}
		}
	}
	return args, units
}

// appendInstr writes one instruction: EXTENDED_ARG prefixes, the opcode, zeroed caches.
func appendInstr(b []byte, op Opcode, arg int) []byte {
	if !op.HasArg() {
		arg = 0
	}
	for shift := 24; shift > 0; shift -= 8 {
		if arg>>shift != 0 {
			b = append(b, byte(EXTENDED_ARG), byte(arg>>shift))
		}
	}
	b = append(b, byte(op), byte(arg))
	for range op.Caches() {
		b = append(b, byte(CACHE), 0)
	}
	return b
}

// exceptionTable writes one entry per maximal run of instructions covered by the same handler,
// as CPython's assemble_exception_table does.
func (a *Assembly) exceptionTable(handlerOf []int, offsets []int) ([]byte, error) {
	var entries []ExceptEntry
	for i := 0; i < len(handlerOf); {
		k := handlerOf[i]
		j := i + 1
		for j < len(handlerOf) && handlerOf[j] == k {
			j++
		}
		if k >= 0 {
			h := a.Handlers[k]
			entries = append(entries, ExceptEntry{Start: offsets[i], End: offsets[j], Target: offsets[h.Target], Depth: h.Depth, Lasti: h.Lasti})
		}
		i = j
	}
	b, err := EncodeExceptionTable(entries)
	if err != nil {
		return nil, fmt.Errorf("assemble: %w", err)
	}
	return b, nil
}
