package bytecode

import "fmt"

// Disassemble turns CPython code into an Assembly: decoded instructions without their
// EXTENDED_ARG prefixes (the arguments stay complete; jumps get Arg 0 and their target as an
// instruction index), exception-table entries as instruction ranges, and each instruction's
// position taken from its first code unit. Assemble(Disassemble(c)) reproduces c's co_code, co_linetable, co_exceptiontable and
// co_stacksize.
func Disassemble(c *Code) (*Assembly, error) {
	ins, err := Decode(c)
	if err != nil {
		return nil, err
	}
	// index maps the byte offset of each instruction start (its first prefix, if any) to its
	// index in the assembly; the end of the code maps to len(Instrs).
	index := make(map[int]int, len(ins)+1)
	a := &Assembly{FirstLine: c.FirstLineNo, Instrs: make([]AsmInstr, 0, len(ins))}
	first := -1 // offset of the pending EXTENDED_ARG prefixes
	var firstPos Position
	for _, in := range ins {
		if in.Op == EXTENDED_ARG {
			if first < 0 {
				first, firstPos = in.Offset, in.Pos
			}
			continue
		}
		start, pos := in.Offset, in.Pos
		if first >= 0 {
			start, pos = first, firstPos
			first = -1
		}
		index[start] = len(a.Instrs)
		arg := in.Arg
		if in.Op.IsJump() {
			arg = 0 // Assemble computes it from the target
		}
		a.Instrs = append(a.Instrs, AsmInstr{Op: in.Op, Arg: arg, Target: in.Target, Pos: pos})
	}
	index[len(c.Bytecode)] = len(a.Instrs)
	at := func(off int, what string) (int, error) {
		if k, ok := index[off]; ok {
			return k, nil
		}
		return 0, fmt.Errorf("disassemble: %s at offset %d is not the start of an instruction (%s); the code jumps past EXTENDED_ARG prefixes or its exception table is corrupt", what, off, c.where())
	}
	for k := range a.Instrs {
		in := &a.Instrs[k]
		if !in.Op.IsJump() {
			continue
		}
		if in.Target, err = at(in.Target, "jump target of "+in.Op.String()); err != nil {
			return nil, err
		}
	}
	entries, err := DecodeExceptionTable(c.ExceptionTable)
	if err != nil {
		return nil, fmt.Errorf("disassemble: %w (%s)", err, c.where())
	}
	for _, e := range entries {
		var h Handler
		var errs [3]error
		h.Start, errs[0] = at(e.Start, "exception range start")
		h.End, errs[1] = at(e.End, "exception range end")
		h.Target, errs[2] = at(e.Target, "exception handler")
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		if h.Target == len(a.Instrs) {
			return nil, fmt.Errorf("disassemble: exception handler at offset %d is the end of the code (%s); the exception table is corrupt", e.Target, c.where())
		}
		h.Depth, h.Lasti = e.Depth, e.Lasti
		a.Handlers = append(a.Handlers, h)
	}
	return a, nil
}
