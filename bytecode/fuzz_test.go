package bytecode

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecode feeds arbitrary code, location tables and exception tables to the decoders:
// they must return errors, never panic. Whatever Disassemble and Assemble accept must survive
// a second trip unchanged. The seed corpus in testdata/fuzz/FuzzDecode holds real code objects.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x97, 0, 0x64, 0, 0x53, 0}, []byte{0x80, 0x00, 0xd8, 0x04, 0x05, 0x80, 0x04}, []byte{}, 1)
	f.Fuzz(func(t *testing.T, code, linetable, exctable []byte, firstLine int) {
		c := &Code{Bytecode: code, LineTable: linetable, ExceptionTable: exctable, FirstLineNo: firstLine}
		_, _ = Decode(c)
		_, _ = DecodeLineTable(linetable, firstLine, len(code)/2)
		_, _ = DecodeLineSpans(linetable, firstLine)
		_, _ = DecodeExceptionTable(exctable)
		a, err := Disassemble(c)
		if err != nil {
			return
		}
		out, err := Assemble(a)
		if err != nil {
			return
		}
		checkReassembles(t, a, out)
	})
}

// checkReassembles checks that the code Assemble made from a disassembles to a (up to what the
// encodings normalise) and assembles again to the same bytes.
func checkReassembles(t *testing.T, a *Assembly, out *Assembled) {
	t.Helper()
	c := &Code{QualName: "fuzz", FirstLineNo: a.FirstLine, Bytecode: out.Bytecode, LineTable: out.LineTable, ExceptionTable: out.ExceptionTable}
	b, err := Disassemble(c)
	require.NoError(t, err, "Disassemble of Assemble's output")
	require.Equal(t, normalised(t, a), normalised(t, b))
	again, err := Assemble(b)
	require.NoError(t, err)
	require.True(t, bytes.Equal(out.Bytecode, again.Bytecode), "co_code changed on the second trip")
	require.True(t, bytes.Equal(out.LineTable, again.LineTable), "co_linetable changed on the second trip")
	require.True(t, bytes.Equal(out.ExceptionTable, again.ExceptionTable), "co_exceptiontable changed on the second trip")
	require.Equal(t, out.StackSize, again.StackSize)
}

// asmView is an Assembly as the bytes can express it: jump directions resolved, positions as
// the location table stores them, and the handler applying to each instruction.
type asmView struct {
	Instrs   []AsmInstr
	Handlers []Handler // one per instruction; Target -1 where none
}

func normalised(t *testing.T, a *Assembly) asmView {
	t.Helper()
	ops, err := a.check()
	require.NoError(t, err)
	v := asmView{}
	for i, in := range a.Instrs {
		in.Op = ops[i]
		if in.Op.IsJump() {
			in.Arg = 0
		} else {
			in.Target = -1
		}
		in.Pos = storedPosition(in.Pos)
		v.Instrs = append(v.Instrs, in)
	}
	for _, k := range a.handlerOf() {
		h := Handler{Target: -1}
		if k >= 0 {
			h = a.Handlers[k]
			h.Start, h.End = 0, 0
		}
		v.Handlers = append(v.Handlers, h)
	}
	return v
}

// storedPosition is p as it reads back from the location table.
func storedPosition(p Position) Position {
	switch {
	case !p.HasLine():
		return NoPosition
	case (p.Col < 0 || p.EndCol < 0) && (p.EndLine == p.Line || p.EndLine == -1):
		return Position{Line: p.Line, EndLine: p.Line, Col: -1, EndCol: -1}
	}
	return Position{Line: p.Line, EndLine: max(p.EndLine, p.Line), Col: max(p.Col, -1), EndCol: max(p.EndCol, -1)}
}

// FuzzAssemble builds random well-formed programs from the fuzz input: statements that start
// and end with an empty stack (runs of NOPs, constants with wide arguments, tuples, jumps in
// both directions to any statement, early returns) and exception handlers over statement
// ranges. Assemble must accept them, every jump must land on its target, the stack depth at
// each statement must be 0, and the result must disassemble and reassemble unchanged.
func FuzzAssemble(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{3, 1, 0, 2, 4, 9, 0, 250, 3, 0, 5, 7, 1, 200, 200, 6})
	f.Add(bytes.Repeat([]byte{0, 255, 3, 40, 4, 2, 1, 9, 9}, 12))
	f.Fuzz(func(t *testing.T, seed []byte) {
		a, stmts, handlerBlocks := randomProgram(seed)
		out, err := Assemble(a)
		require.NoError(t, err, "a well-formed program was refused:\n%s", a)
		_ = assembleDecodeChecked(t, a, out)
		for _, s := range stmts {
			require.Contains(t, []int{-1, 0}, out.Depths[s], "depth at statement start %d", s)
		}
		for _, h := range handlerBlocks {
			require.Contains(t, []int{-1, 1, 2}, out.Depths[h], "depth at handler %d", h)
		}
		for _, d := range out.Depths {
			require.LessOrEqual(t, d, out.StackSize)
		}
		checkReassembles(t, a, out)
	})
}

// assembleDecodeChecked decodes Assemble's output and checks that jumps land on their targets.
func assembleDecodeChecked(t *testing.T, a *Assembly, out *Assembled) []Instr {
	t.Helper()
	ins, err := Decode(&Code{QualName: "fuzz", Bytecode: out.Bytecode, LineTable: out.LineTable, FirstLineNo: a.FirstLine})
	require.NoError(t, err)
	at := map[int]int{}
	for k, off := range out.Offsets {
		at[off] = k
	}
	k := 0
	for _, in := range ins {
		if in.Op == EXTENDED_ARG {
			continue
		}
		if in.Op.IsJump() {
			require.Equal(t, a.Instrs[k].Target, at[in.Target], "target of instruction %d (%s)", k, in.Op)
		}
		k++
	}
	require.Equal(t, len(a.Instrs), k)
	return ins
}

// byteReader hands out the fuzz input a byte at a time, then zeros.
type byteReader struct {
	b []byte
}

func (r *byteReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	v := int(r.b[0])
	r.b = r.b[1:]
	return v
}

// randomProgram returns the program, the index of each statement's first instruction, and
// the index of each handler block's first instruction.
func randomProgram(seed []byte) (*Assembly, []int, []int) {
	r := &byteReader{b: seed}
	b := NewBuilder(1 + r.next())
	n := 1 + r.next()%40
	labels := make([]Label, n+1) // statement starts; labels[n] is the final return
	for k := range labels {
		labels[k] = b.NewLabel()
	}
	line := 1
	pos := func() Position {
		switch v := r.next(); v % 8 {
		case 0:
			return NoPosition
		case 1:
			line += v >> 3
			return Position{Line: line, EndLine: line, Col: -1, EndCol: -1}
		case 2:
			line -= v >> 4
			return Position{Line: line, EndLine: line + r.next()%3, Col: r.next() * 2, EndCol: r.next()}
		default:
			line += v % 3
			c := r.next() % 100
			return Position{Line: line, EndLine: line, Col: c, EndCol: c + r.next()%20}
		}
	}
	var stmts, handlerBlocks []int
	for k := range n {
		b.Bind(labels[k])
		stmts = append(stmts, b.Len())
		switch r.next() % 7 {
		case 0: // a run of NOPs, long enough to push jumps past 255 units
			for range 1 + r.next() {
				b.Add(NOP, 0, pos())
			}
		case 1: // a constant with a wide argument
			b.Add(LOAD_CONST, r.next()<<(8*(r.next()%4))|r.next(), pos())
			b.Add(POP_TOP, 0, pos())
		case 2: // an instruction with inline caches
			b.Add(LOAD_GLOBAL, r.next()<<1, pos())
			b.Add(POP_TOP, 0, pos())
		case 3: // a conditional jump to any statement
			conds := []Opcode{POP_JUMP_FORWARD_IF_FALSE, POP_JUMP_BACKWARD_IF_TRUE, POP_JUMP_FORWARD_IF_NONE, POP_JUMP_BACKWARD_IF_NOT_NONE}
			b.Add(LOAD_FAST, 0, pos())
			b.Jump(conds[r.next()%len(conds)], labels[r.next()%(n+1)], pos())
		case 4: // an unconditional jump to any statement
			b.Jump([]Opcode{JUMP_FORWARD, JUMP_BACKWARD}[r.next()%2], labels[r.next()%(n+1)], pos())
		case 5: // a tuple: the stack grows and shrinks
			m := 1 + r.next()%20
			for range m {
				b.Add(LOAD_CONST, 0, pos())
			}
			b.Add(BUILD_TUPLE, m, pos())
			b.Add(POP_TOP, 0, pos())
		case 6: // an early return
			b.Add(LOAD_CONST, 0, pos())
			b.Add(RETURN_VALUE, 0, pos())
		}
	}
	b.Bind(labels[n])
	stmts = append(stmts, b.Len())
	b.Add(LOAD_CONST, 0, pos())
	b.Add(RETURN_VALUE, 0, pos())
	// Handler blocks after the code: pop the exception (and lasti) and jump back in.
	for range r.next() % 4 {
		start := r.next() % n
		end := start + 1 + r.next()%(n-start)
		lasti := r.next()%2 == 1
		h := b.Here()
		handlerBlocks = append(handlerBlocks, b.Len())
		b.Add(POP_TOP, 0, NoPosition)
		if lasti {
			b.Add(POP_TOP, 0, NoPosition)
		}
		b.Jump(JUMP_FORWARD, labels[r.next()%(n+1)], NoPosition)
		b.Handle(labels[start], labels[end], h, 0, lasti)
	}
	a, err := b.Assembly()
	if err != nil {
		panic(err) // the generator binds every label it uses
	}
	return a, stmts, handlerBlocks
}
