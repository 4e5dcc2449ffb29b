package bytecode

import "fmt"

// Label names an instruction before it is added, for forward jumps and handler ranges.
type Label int

// Builder writes an Assembly front to back with labels for jump and handler targets:
//
//	b := NewBuilder(firstLine)
//	done := b.NewLabel()
//	b.Add(LOAD_FAST, 0, pos)
//	b.Jump(POP_JUMP_FORWARD_IF_FALSE, done, pos)
//	...
//	b.Bind(done)
//	b.Add(LOAD_CONST, 0, pos)
//	b.Add(RETURN_VALUE, 0, pos)
//	asm, err := b.Assembly()
//
// A label is bound to the next instruction added after Bind (or to the end of the code,
// which only a handler range's end may use). Jump opcodes may be given in either direction.
type Builder struct {
	asm      Assembly
	labels   []int // instruction index per label, -1 while unbound
	jumps    []builderJump
	handlers []builderHandler
}

type builderJump struct {
	instr int
	label Label
}

type builderHandler struct {
	start, end, target Label
	depth              int
	lasti              bool
}

// NewBuilder starts an assembly whose location table counts lines from firstLine
// (co_firstlineno).
func NewBuilder(firstLine int) *Builder {
	return &Builder{asm: Assembly{FirstLine: firstLine}}
}

// NewLabel returns a fresh unbound label.
func (b *Builder) NewLabel() Label {
	b.labels = append(b.labels, -1)
	return Label(len(b.labels) - 1)
}

// Bind makes l name the next instruction added. Binding a label twice is reported by
// Assembly.
func (b *Builder) Bind(l Label) {
	if b.labels[l] >= 0 {
		b.labels[l] = -2 // reported by Assembly
		return
	}
	b.labels[l] = len(b.asm.Instrs)
}

// Here returns a label bound to the next instruction added.
func (b *Builder) Here() Label {
	l := b.NewLabel()
	b.Bind(l)
	return l
}

// Add appends a non-jump instruction and returns its index.
func (b *Builder) Add(op Opcode, arg int, pos Position) int {
	return b.asm.Append(op, arg, pos)
}

// Jump appends a jump to the instruction l names and returns the jump's index.
func (b *Builder) Jump(op Opcode, l Label, pos Position) int {
	i := b.asm.AppendJump(op, -1, pos)
	b.jumps = append(b.jumps, builderJump{i, l})
	return i
}

// Handle covers the instructions from start up to (not including) end with an exception
// handler at target, entered with the stack popped to depth (plus lasti and the exception).
// Ranges added later take precedence where they overlap.
func (b *Builder) Handle(start, end, target Label, depth int, lasti bool) {
	b.handlers = append(b.handlers, builderHandler{start, end, target, depth, lasti})
}

// Len is the number of instructions added so far.
func (b *Builder) Len() int { return len(b.asm.Instrs) }

// Assembly resolves the labels and returns the assembly; it is an error to use a label that
// was never bound, was bound twice, or names the end of the code as a jump or handler target.
func (b *Builder) Assembly() (*Assembly, error) {
	n := len(b.asm.Instrs)
	resolve := func(l Label, what string, endOK bool) (int, error) {
		switch i := b.labels[l]; {
		case i == -1:
			return 0, fmt.Errorf("assemble: label %d (%s) is never bound; call Bind before adding the instruction it names", l, what)
		case i == -2:
			return 0, fmt.Errorf("assemble: label %d (%s) is bound twice; use one label per instruction", l, what)
		case i == n && !endOK:
			return 0, fmt.Errorf("assemble: label %d (%s) is bound after the last instruction; add the instruction it names", l, what)
		default:
			return i, nil
		}
	}
	out := &Assembly{FirstLine: b.asm.FirstLine, Instrs: append([]AsmInstr(nil), b.asm.Instrs...)}
	for _, j := range b.jumps {
		t, err := resolve(j.label, fmt.Sprintf("target of %s at instruction %d", out.Instrs[j.instr].Op, j.instr), false)
		if err != nil {
			return nil, err
		}
		out.Instrs[j.instr].Target = t
	}
	for k, h := range b.handlers {
		var hd Handler
		var err error
		what := fmt.Sprintf("handler %d", k)
		if hd.Start, err = resolve(h.start, what+" start", false); err != nil {
			return nil, err
		}
		if hd.End, err = resolve(h.end, what+" end", true); err != nil {
			return nil, err
		}
		if hd.Target, err = resolve(h.target, what+" target", false); err != nil {
			return nil, err
		}
		hd.Depth, hd.Lasti = h.depth, h.lasti
		out.Handlers = append(out.Handlers, hd)
	}
	return out, nil
}
