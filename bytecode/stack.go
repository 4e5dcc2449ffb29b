package bytecode

import "fmt"

// stackEffectFn is the net change of the value stack depth after an instruction with this
// argument; jump selects the branch-taken effect for instructions that can branch.
type stackEffectFn func(arg int, jump bool) int

func effectFixed(n int) stackEffectFn { return func(int, bool) int { return n } }
func effectBranch(fall, taken int) stackEffectFn {
	return func(_ int, jump bool) int { return choose(jump, taken, fall) }
}

func choose(c bool, a, b int) int {
	if c {
		return a
	}
	return b
}

func flagBit(v, mask int) int { return choose(v&mask != 0, 1, 0) }

// stackEffects is CPython 3.11's stack_effect (Python/compile.c), one row per opcode; the
// opcodes it leaves out (unused bytes and specialised forms) are nil. It is what
// dis.stack_effect(op, arg, jump=...) returns.
var stackEffects = [256]stackEffectFn{
	CACHE:        effectFixed(0),
	NOP:          effectFixed(0),
	EXTENDED_ARG: effectFixed(0),
	RESUME:       effectFixed(0),

	POP_TOP:   effectFixed(-1),
	PUSH_NULL: effectFixed(1),
	COPY:      effectFixed(1),
	SWAP:      effectFixed(0),

	UNARY_POSITIVE: effectFixed(0),
	UNARY_NEGATIVE: effectFixed(0),
	UNARY_NOT:      effectFixed(0),
	UNARY_INVERT:   effectFixed(0),
	BINARY_OP:      effectFixed(-1),
	BINARY_SUBSCR:  effectFixed(-1),
	STORE_SUBSCR:   effectFixed(-3),
	DELETE_SUBSCR:  effectFixed(-2),
	COMPARE_OP:     effectFixed(-1),
	IS_OP:          effectFixed(-1),
	CONTAINS_OP:    effectFixed(-1),

	LOAD_CONST:           effectFixed(1),
	LOAD_NAME:            effectFixed(1),
	STORE_NAME:           effectFixed(-1),
	DELETE_NAME:          effectFixed(0),
	LOAD_GLOBAL:          func(arg int, _ bool) int { return 1 + arg&1 }, // low bit: push NULL first
	STORE_GLOBAL:         effectFixed(-1),
	DELETE_GLOBAL:        effectFixed(0),
	LOAD_FAST:            effectFixed(1),
	STORE_FAST:           effectFixed(-1),
	DELETE_FAST:          effectFixed(0),
	LOAD_ATTR:            effectFixed(0),
	STORE_ATTR:           effectFixed(-2),
	DELETE_ATTR:          effectFixed(-1),
	LOAD_METHOD:          effectFixed(1),
	MAKE_CELL:            effectFixed(0),
	COPY_FREE_VARS:       effectFixed(0),
	LOAD_CLOSURE:         effectFixed(1),
	LOAD_DEREF:           effectFixed(1),
	LOAD_CLASSDEREF:      effectFixed(1),
	STORE_DEREF:          effectFixed(-1),
	DELETE_DEREF:         effectFixed(0),
	LOAD_BUILD_CLASS:     effectFixed(1),
	LOAD_ASSERTION_ERROR: effectFixed(1),
	IMPORT_NAME:          effectFixed(-1),
	IMPORT_FROM:          effectFixed(1),
	IMPORT_STAR:          effectFixed(-1),
	SETUP_ANNOTATIONS:    effectFixed(0),
	PRINT_EXPR:           effectFixed(-1),

	BUILD_TUPLE:         func(arg int, _ bool) int { return 1 - arg },
	BUILD_LIST:          func(arg int, _ bool) int { return 1 - arg },
	BUILD_SET:           func(arg int, _ bool) int { return 1 - arg },
	BUILD_STRING:        func(arg int, _ bool) int { return 1 - arg },
	BUILD_MAP:           func(arg int, _ bool) int { return 1 - 2*arg },
	BUILD_CONST_KEY_MAP: func(arg int, _ bool) int { return -arg },
	BUILD_SLICE:         func(arg int, _ bool) int { return choose(arg == 3, -2, -1) },
	LIST_APPEND:         effectFixed(-1),
	SET_ADD:             effectFixed(-1),
	MAP_ADD:             effectFixed(-2),
	LIST_EXTEND:         effectFixed(-1),
	SET_UPDATE:          effectFixed(-1),
	DICT_MERGE:          effectFixed(-1),
	DICT_UPDATE:         effectFixed(-1),
	LIST_TO_TUPLE:       effectFixed(0),
	UNPACK_SEQUENCE:     func(arg int, _ bool) int { return arg - 1 },
	UNPACK_EX:           func(arg int, _ bool) int { return arg&0xFF + arg>>8 },
	FORMAT_VALUE:        func(arg int, _ bool) int { return choose(arg&0x04 != 0, -1, 0) }, // format spec on the stack

	JUMP_FORWARD:                  effectFixed(0),
	JUMP_BACKWARD:                 effectFixed(0),
	JUMP_BACKWARD_NO_INTERRUPT:    effectFixed(0),
	JUMP_IF_TRUE_OR_POP:           effectBranch(-1, 0),
	JUMP_IF_FALSE_OR_POP:          effectBranch(-1, 0),
	POP_JUMP_FORWARD_IF_FALSE:     effectFixed(-1),
	POP_JUMP_FORWARD_IF_TRUE:      effectFixed(-1),
	POP_JUMP_FORWARD_IF_NONE:      effectFixed(-1),
	POP_JUMP_FORWARD_IF_NOT_NONE:  effectFixed(-1),
	POP_JUMP_BACKWARD_IF_FALSE:    effectFixed(-1),
	POP_JUMP_BACKWARD_IF_TRUE:     effectFixed(-1),
	POP_JUMP_BACKWARD_IF_NONE:     effectFixed(-1),
	POP_JUMP_BACKWARD_IF_NOT_NONE: effectFixed(-1),
	GET_ITER:                      effectFixed(0),
	FOR_ITER:                      effectBranch(1, -1), // pushes the next item; at exhaustion pops the iterator
	SEND:                          effectBranch(0, -1),
	RETURN_VALUE:                  effectFixed(-1),
	YIELD_VALUE:                   effectFixed(0),
	RETURN_GENERATOR:              effectFixed(0),
	ASYNC_GEN_WRAP:                effectFixed(0),
	GET_YIELD_FROM_ITER:           effectFixed(0),
	GET_AWAITABLE:                 effectFixed(0),
	GET_AITER:                     effectFixed(0),
	GET_ANEXT:                     effectFixed(1),
	END_ASYNC_FOR:                 effectFixed(-2),
	BEFORE_WITH:                   effectFixed(1),
	BEFORE_ASYNC_WITH:             effectFixed(1),
	WITH_EXCEPT_START:             effectFixed(1),

	PUSH_EXC_INFO:     effectFixed(1),
	POP_EXCEPT:        effectFixed(-1),
	CHECK_EXC_MATCH:   effectFixed(0),
	CHECK_EG_MATCH:    effectFixed(0),
	PREP_RERAISE_STAR: effectFixed(-1),
	RERAISE:           effectFixed(-1),
	RAISE_VARARGS:     func(arg int, _ bool) int { return -arg },

	PRECALL:          func(arg int, _ bool) int { return -arg },
	CALL:             effectFixed(-1),
	KW_NAMES:         effectFixed(0),
	CALL_FUNCTION_EX: func(arg int, _ bool) int { return -2 - flagBit(arg, 0x01) },
	MAKE_FUNCTION: func(arg int, _ bool) int { // defaults, kwdefaults, annotations, closure
		return -flagBit(arg, 0x01) - flagBit(arg, 0x02) - flagBit(arg, 0x04) - flagBit(arg, 0x08)
	},

	GET_LEN:        effectFixed(1),
	MATCH_MAPPING:  effectFixed(1),
	MATCH_SEQUENCE: effectFixed(1),
	MATCH_KEYS:     effectFixed(1),
	MATCH_CLASS:    effectFixed(-2),
}

// StackEffect is the change in value-stack depth caused by op with argument arg, on the
// branch-taken path when jump is true (CPython's stack_effect, dis.stack_effect(op, arg,
// jump=jump)). The argument is ignored by opcodes that take none. Opcodes CPython's compiler
// never emits (unused bytes, specialised forms) are an error.
func StackEffect(op Opcode, arg int, jump bool) (int, error) {
	f := stackEffects[op]
	if f == nil {
		return 0, fmt.Errorf("bytecode: no stack effect for opcode %s (%d); it is not an opcode CPython 3.11 compiles to", op, uint8(op))
	}
	if !op.HasArg() {
		arg = 0
	}
	return f(arg, jump), nil
}
