package bytecode

// `yield from` in an inlined generator. The interpreter runs an inlined generator to
// completion, collecting what it yields (opYield); `yield from it` compiles to
//
//	GET_YIELD_FROM_ITER; LOAD_CONST None; SEND end; YIELD_VALUE; RESUME 2;
//	JUMP_BACKWARD_NO_INTERRUPT (to SEND); end: ...
//
// so SEND yields every remaining item of the iterator at once and jumps to end with the
// delegation's result, as CPython does when the sub-iterator is exhausted. torch's
// Module.named_modules (behind modules(), which torch 2's TransformerEncoderLayer calls) is
// written this way.

func init() {
	handlers[GET_YIELD_FROM_ITER] = opGetYieldFromIter
	handlers[SEND] = opSend
}

func opGetYieldFromIter(t *Tracer, f *frame, in *Instr) error {
	if !f.gen {
		return f.unsupported("", "yield from outside an inlined generator")
	}
	it, err := t.iter(f, f.pop())
	if err != nil {
		return err
	}
	f.push(it)
	return nil
}

func opSend(t *Tracer, f *frame, in *Instr) error {
	it, ok := f.peek(1).(*IterV)
	if !f.gen || !ok {
		return f.unsupported("", "SEND to %s", f.peek(1).Describe())
	}
	if v, err := t.realize(f, f.peek(0)); err != nil {
		return err
	} else if c, isConst := v.(*ConstV); !isConst || !c.IsNone() {
		return f.unsupported("", "sending a value into a sub-generator")
	}
	// The value of the `yield from` expression is the sub-generator's return value, which an
	// inlined generator does not keep: only a delegation whose value is dropped is supported.
	idx, ok := f.ci.index[in.Target]
	if !ok || f.ci.instrs[idx].Op != POP_TOP {
		return f.unsupported("", "using the value of a yield from expression")
	}
	f.pop()
	f.yields = append(f.yields, it.Items[it.Pos:]...)
	it.Pos = len(it.Items)
	f.stack[len(f.stack)-1] = noneV
	f.jump(in.Target)
	return nil
}
