package bytecode

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// assembleDecode assembles a and decodes the result, checking that jumps land on their
// targets.
func assembleDecode(t *testing.T, a *Assembly) (*Assembled, []Instr) {
	t.Helper()
	out, err := Assemble(a)
	require.NoError(t, err)
	return out, assembleDecodeChecked(t, a, out)
}

// opsOf lists the decoded opcodes other than EXTENDED_ARG.
func opsOf(ins []Instr) []Opcode {
	var ops []Opcode
	for _, in := range ins {
		if in.Op != EXTENDED_ARG {
			ops = append(ops, in.Op)
		}
	}
	return ops
}

func TestAssembleJumpDirections(t *testing.T) {
	pairs := [][2]Opcode{
		{JUMP_FORWARD, JUMP_BACKWARD},
		{POP_JUMP_FORWARD_IF_FALSE, POP_JUMP_BACKWARD_IF_FALSE},
		{POP_JUMP_FORWARD_IF_TRUE, POP_JUMP_BACKWARD_IF_TRUE},
		{POP_JUMP_FORWARD_IF_NONE, POP_JUMP_BACKWARD_IF_NONE},
		{POP_JUMP_FORWARD_IF_NOT_NONE, POP_JUMP_BACKWARD_IF_NOT_NONE},
	}
	for _, p := range pairs {
		for _, written := range p {
			t.Run(written.String(), func(t *testing.T) {
				// The condition is loaded only for jumps that pop one.
				cond := NOP
				if e, _ := StackEffect(written, 0, true); e < 0 {
					cond = LOAD_FAST
				}
				a := &Assembly{FirstLine: 1}
				a.Append(RESUME, 0, NoPosition)
				a.Append(NOP, 0, NoPosition) // 1: backward target
				a.Append(cond, 0, NoPosition)
				a.AppendJump(written, 1, NoPosition) // 3
				a.Append(cond, 0, NoPosition)
				a.AppendJump(written, 7, NoPosition) // 5
				a.Append(NOP, 0, NoPosition)
				a.Append(LOAD_CONST, 0, NoPosition) // 7: forward target
				a.Append(RETURN_VALUE, 0, NoPosition)
				_, ins := assembleDecode(t, a)
				ops := opsOf(ins)
				require.Equal(t, p[1], ops[3], "backward target")
				require.Equal(t, p[0], ops[5], "forward target")
			})
		}
	}
}

// appendNOPs appends n NOPs.
func appendNOPs(a *Assembly, n int) {
	for range n {
		a.Append(NOP, 0, NoPosition)
	}
}

// TestAssembleExtendedArgFixedPoint: a prefix added to one jump can push another jump's
// distance past 255, which then needs a prefix too.
func TestAssembleExtendedArgFixedPoint(t *testing.T) {
	tests := []struct {
		gap       int // NOPs between the inner jump and the outer jump's target
		outerArgs int // argument of the outer jump
		prefixes  int // EXTENDED_ARG prefixes in the code
	}{
		{gap: 253, outerArgs: 255, prefixes: 1}, // 253 NOPs + the prefixed inner jump (2 units)
		{gap: 254, outerArgs: 256, prefixes: 2}, // one more NOP and the outer jump needs a prefix
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.gap), func(t *testing.T) {
			a := &Assembly{FirstLine: 1}
			a.Append(RESUME, 0, NoPosition)
			outer := a.AppendJump(JUMP_FORWARD, 3+tt.gap, NoPosition)
			inner := a.AppendJump(JUMP_FORWARD, 3+tt.gap+10, NoPosition)
			appendNOPs(a, tt.gap+10)
			a.Append(LOAD_CONST, 0, NoPosition)
			a.Append(RETURN_VALUE, 0, NoPosition)
			out, ins := assembleDecode(t, a)
			prefixes := 0
			for _, in := range ins {
				if in.Op == EXTENDED_ARG {
					prefixes++
				}
			}
			require.Equal(t, tt.prefixes, prefixes)
			byOffset := map[int]Instr{}
			for _, in := range ins {
				byOffset[in.Offset] = in
			}
			outerOp := out.Offsets[outer] + 2*(tt.prefixes-1) // the opcode after its prefix, if any
			require.Equal(t, tt.outerArgs, byOffset[outerOp].Arg)
			require.Equal(t, JUMP_FORWARD, byOffset[outerOp].Op)
			require.Equal(t, tt.gap+10, byOffset[out.Offsets[inner]+2].Arg, "inner jump")
		})
	}
}

// TestAssembleBackwardJumpCountsItself: a backward jump's distance includes the jump and its
// own prefix.
func TestAssembleBackwardJumpCountsItself(t *testing.T) {
	for _, tt := range []struct{ body, arg, prefixes int }{{254, 255, 0}, {255, 257, 1}} {
		a := &Assembly{FirstLine: 1}
		a.Append(RESUME, 0, NoPosition)
		appendNOPs(a, tt.body)
		a.AppendJump(JUMP_FORWARD, 1, NoPosition) // written forward: flipped
		_, ins := assembleDecode(t, a)
		last := ins[len(ins)-1]
		require.Equal(t, JUMP_BACKWARD, last.Op)
		require.Equal(t, tt.arg, last.Arg)
		require.Equal(t, 2, last.Target)
		require.Len(t, ins, 2+tt.body+tt.prefixes)
	}
}

func TestAssembleStackSize(t *testing.T) {
	// x = a if c else (b, b, b); return x — branches with different heights that meet.
	a := &Assembly{FirstLine: 1}
	a.Append(RESUME, 0, NoPosition)
	a.Append(LOAD_FAST, 0, NoPosition)
	a.AppendJump(POP_JUMP_FORWARD_IF_FALSE, 5, NoPosition) // 2
	a.Append(LOAD_FAST, 1, NoPosition)
	a.AppendJump(JUMP_FORWARD, 9, NoPosition) // 4
	a.Append(LOAD_FAST, 2, NoPosition)        // 5
	a.Append(LOAD_FAST, 2, NoPosition)
	a.Append(LOAD_FAST, 2, NoPosition)
	a.Append(BUILD_TUPLE, 3, NoPosition)
	a.Append(RETURN_VALUE, 0, NoPosition) // 9
	out, err := Assemble(a)
	require.NoError(t, err)
	require.Equal(t, 3, out.StackSize)
	require.Equal(t, []int{0, 0, 1, 0, 1, 0, 1, 2, 3, 1}, out.Depths)
}

func TestAssembleErrors(t *testing.T) {
	p := NoPosition
	ret := []AsmInstr{{Op: LOAD_CONST, Target: -1, Pos: p}, {Op: RETURN_VALUE, Target: -1, Pos: p}}
	code := func(ins ...AsmInstr) []AsmInstr {
		return append(append([]AsmInstr{{Op: RESUME, Target: -1}}, ins...), ret...)
	}
	op := func(o Opcode, arg int) AsmInstr { return AsmInstr{Op: o, Arg: arg, Target: -1, Pos: p} }
	jump := func(o Opcode, target int) AsmInstr { return AsmInstr{Op: o, Target: target, Pos: p} }
	tests := []struct {
		name     string
		ins      []AsmInstr
		handlers []Handler
		err      string
	}{
		{"empty", nil, nil, "no instructions"},
		{"EXTENDED_ARG given", code(op(EXTENDED_ARG, 1)), nil, "Assemble adds prefixes itself"},
		{"specialised opcode", code(op(Opcode(3), 0)), nil, "invalid opcode BINARY_OP_ADAPTIVE"},
		{"CACHE", code(op(CACHE, 0)), nil, "invalid opcode CACHE"},
		{"argument on a no-argument opcode", code(op(NOP, 1)), nil, "takes no argument"},
		{"negative argument", code(op(LOAD_CONST, -1)), nil, "outside 0..2^32-1"},
		{"jump out of range", code(jump(JUMP_FORWARD, 99)), nil, "outside the 4 instructions"},
		{"FOR_ITER backward", code(jump(FOR_ITER, 0)), nil, "cannot jump backward"},
		{"JUMP_BACKWARD_NO_INTERRUPT forward", code(jump(JUMP_BACKWARD_NO_INTERRUPT, 2)), nil, "cannot jump forward"},
		{"bad handler range", code(), []Handler{{Start: 2, End: 1, Target: 0}}, "handler 0"},
		{"handler past the end", code(), []Handler{{Start: 0, End: 1, Target: 3}}, "handler 0"},
		{"falls off the end", []AsmInstr{op(RESUME, 0), op(NOP, 0)}, nil, "falls through past the last instruction"},
		{"stack underflow", code(op(POP_TOP, 0)), nil, "stack underflow: instruction 1 (POP_TOP)"},
		{"depths disagree", []AsmInstr{
			op(LOAD_FAST, 0), jump(POP_JUMP_FORWARD_IF_TRUE, 3), op(LOAD_FAST, 0), op(RETURN_VALUE, 0)},
			nil, "instruction 3 (RETURN_VALUE) is reached with stack depth"},
		{"handler deeper than the stack", code(op(NOP, 0)), []Handler{{Start: 1, End: 2, Target: 2, Depth: 1}},
			"has stack depth 0 but its exception handler 0 pops to depth 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Assemble(&Assembly{FirstLine: 1, Instrs: tt.ins, Handlers: tt.handlers})
			require.ErrorContains(t, err, tt.err)
			require.ErrorContains(t, err, "assemble: ")
		})
	}
}

func TestAssemblyInsert(t *testing.T) {
	a := &Assembly{FirstLine: 1}
	a.Append(RESUME, 0, NoPosition)
	a.Append(NOP, 0, NoPosition)              // 1: try start
	a.Append(NOP, 0, NoPosition)              // 2
	a.AppendJump(JUMP_FORWARD, 5, NoPosition) // 3
	a.Append(POP_TOP, 0, NoPosition)          // 4: handler: pops the exception
	a.Append(LOAD_CONST, 0, NoPosition)       // 5
	a.Append(RETURN_VALUE, 0, NoPosition)
	a.Handlers = []Handler{{Start: 1, End: 3, Target: 4}}

	a.Insert(2, AsmInstr{Op: NOP, Target: -1}, AsmInstr{Op: JUMP_FORWARD, Target: 7}) // inside the range
	a.Insert(0, AsmInstr{Op: NOP, Target: -1})                                        // before everything
	require.Equal(t, []Opcode{NOP, RESUME, NOP, NOP, JUMP_FORWARD, NOP, JUMP_FORWARD, POP_TOP, LOAD_CONST, RETURN_VALUE}, asmOps(a))
	require.Equal(t, 8, a.Instrs[6].Target, "the old jump still names LOAD_CONST")
	require.Equal(t, 8, a.Instrs[4].Target, "the inserted jump's target is shifted by the later insert")
	require.Equal(t, []Handler{{Start: 2, End: 6, Target: 7}}, a.Handlers)
	_, err := Assemble(a)
	require.NoError(t, err)
}

func asmOps(a *Assembly) []Opcode {
	var ops []Opcode
	for _, in := range a.Instrs {
		ops = append(ops, in.Op)
	}
	return ops
}

func TestBuilderErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *Builder)
		err   string
	}{
		{"unbound jump target", func(b *Builder) {
			b.Jump(JUMP_FORWARD, b.NewLabel(), NoPosition)
		}, "is never bound"},
		{"label bound twice", func(b *Builder) {
			l := b.NewLabel()
			b.Bind(l)
			b.Add(NOP, 0, NoPosition)
			b.Bind(l)
			b.Jump(JUMP_FORWARD, l, NoPosition)
		}, "is bound twice"},
		{"jump to the end", func(b *Builder) {
			l := b.NewLabel()
			b.Jump(JUMP_FORWARD, l, NoPosition)
			b.Bind(l)
		}, "bound after the last instruction"},
		{"handler target at the end", func(b *Builder) {
			s, e := b.Here(), b.NewLabel()
			b.Add(NOP, 0, NoPosition)
			b.Bind(e)
			b.Handle(s, e, e, 0, false)
		}, "handler 0 target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(1)
			tt.build(b)
			_, err := b.Assembly()
			require.ErrorContains(t, err, tt.err)
		})
	}
}

// TestDisassembleGolden prints the disassembly of a hand-built try/except and checks that it
// assembles back to the same bytes.
func TestDisassembleGolden(t *testing.T) {
	for _, s := range fnSpecs {
		if s.name != "safe_div" {
			continue
		}
		b := NewBuilder(fnFirstLine)
		s.build(b)
		asm, err := b.Assembly()
		require.NoError(t, err)
		out, err := Assemble(asm)
		require.NoError(t, err)
		require.Equal(t, 4, out.StackSize, "CPython compiles the same function with co_stacksize 4")
		c := &Code{QualName: s.name, FirstLineNo: fnFirstLine, Bytecode: out.Bytecode, LineTable: out.LineTable, ExceptionTable: out.ExceptionTable, StackSize: out.StackSize}
		dis, err := Disassemble(c)
		require.NoError(t, err)
		require.Equal(t, asm, dis)
		checkGolden(t, "disassemble/safe_div.golden", dis.String())
		require.NoError(t, roundTrip(c))
		return
	}
	t.Fatal("fnSpecs has no safe_div")
}
