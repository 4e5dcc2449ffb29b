package bytecode

import "fmt"

// endsFlow marks the opcodes after which control never falls through to the next instruction:
// returns, raises and unconditional jumps (CPython's stackdepth stops a block at the same ones).
var endsFlow = [256]bool{
	RETURN_VALUE:               true,
	RAISE_VARARGS:              true,
	RERAISE:                    true,
	JUMP_FORWARD:               true,
	JUMP_BACKWARD:              true,
	JUMP_BACKWARD_NO_INTERRUPT: true,
}

// flowEffect is the stack effect used by the flow analysis. It is StackEffect except for
// RETURN_GENERATOR: CPython computes co_stacksize before it inserts the generator prologue
// RETURN_GENERATOR; POP_TOP, and at run time the value sent into the new generator is on the
// stack when POP_TOP runs, so the analysis counts RETURN_GENERATOR as pushing it.
func flowEffect(op Opcode, arg int, jump bool) int {
	if op == RETURN_GENERATOR {
		return 1
	}
	e, _ := StackEffect(op, arg, jump) // every Valid opcode has a row (TestStackEffectCoversOpcodes)
	return e
}

// stackDepth finds the value-stack depth on entry to every instruction reachable from the
// first one, following fall-through, jumps (with their branch-taken effect) and exception
// edges (an instruction covered by a handler can enter it with the handler's depth, the
// offset of the instruction when Lasti is set, and the exception). It returns the largest
// depth reached, co_stacksize, as CPython's stackdepth computes it.
func stackDepth(a *Assembly, ops []Opcode, args []int, handlerOf []int) (int, []int, error) {
	n := len(a.Instrs)
	depth := make([]int, n)
	for i := range depth {
		depth[i] = -1
	}
	maxDepth := 0
	var work []int
	reach := func(from, to, d int, how string) error {
		if to >= n {
			return fmt.Errorf("assemble: instruction %d (%s) falls through past the last instruction; end the code with RETURN_VALUE, RAISE_VARARGS, RERAISE or an unconditional jump", from, ops[from])
		}
		if d < 0 {
			return fmt.Errorf("assemble: stack underflow: instruction %d (%s) leaves depth %d; the instructions pop more values than were pushed", from, ops[from], d)
		}
		maxDepth = max(maxDepth, d)
		switch depth[to] {
		case -1:
			depth[to] = d
			work = append(work, to)
		case d:
		default:
			return fmt.Errorf("assemble: instruction %d (%s) is reached with stack depth %d and, %s from instruction %d (%s), with depth %d; every path must agree on the depth",
				to, ops[to], depth[to], how, from, ops[from], d)
		}
		return nil
	}
	depth[0] = 0
	work = append(work, 0)
	for len(work) > 0 {
		i := work[len(work)-1]
		work = work[:len(work)-1]
		d, op := depth[i], ops[i]
		if k := handlerOf[i]; k >= 0 {
			h := a.Handlers[k]
			if d < h.Depth {
				return 0, nil, fmt.Errorf("assemble: instruction %d (%s) has stack depth %d but its exception handler %d pops to depth %d; a handler's Depth is the stack depth where its try block starts", i, op, d, k, h.Depth)
			}
			entry := h.Depth + 1
			if h.Lasti {
				entry++
			}
			if err := reach(i, h.Target, entry, "as exception handler"); err != nil {
				return 0, nil, err
			}
		}
		if op.IsJump() {
			if err := reach(i, a.Instrs[i].Target, d+flowEffect(op, args[i], true), "by a jump"); err != nil {
				return 0, nil, err
			}
		}
		next := d + flowEffect(op, args[i], false)
		if endsFlow[op] {
			if next < 0 {
				return 0, nil, fmt.Errorf("assemble: stack underflow: instruction %d (%s) leaves depth %d; the instructions pop more values than were pushed", i, op, next)
			}
			maxDepth = max(maxDepth, next)
			continue
		}
		if err := reach(i, i+1, next, "falling through"); err != nil {
			return 0, nil, err
		}
	}
	return maxDepth, depth, nil
}
