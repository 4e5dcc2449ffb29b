package bytecode

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pyCase is one function for testdata/run_assembled.py to build and call.
type pyCase struct {
	Name           string   `json:"name"`
	ArgCount       int      `json:"argcount"`
	VarNames       []string `json:"varnames"`
	Names          []string `json:"names"`
	Consts         []string `json:"consts"` // Python literals
	Flags          int      `json:"flags"`
	FirstLineNo    int      `json:"firstlineno"`
	StackSize      int      `json:"stacksize"`
	Code           string   `json:"code"`
	LineTable      string   `json:"linetable"`
	ExceptionTable string   `json:"exceptiontable"`
	OpNames        []string `json:"opnames"`
	Calls          []pyCall `json:"calls"`
}

type pyCall struct {
	Args   string `json:"args"`           // Python literal tuple
	Want   string `json:"want,omitempty"` // Python literal
	Raises string `json:"raises,omitempty"`
	Line   int    `json:"line,omitempty"` // line the exception must be raised at
}

// fnSpec is a function written with the Builder, with the code-object fields and calls that
// go with it.
type fnSpec struct {
	name     string
	argCount int
	varNames []string
	names    []string
	consts   []string
	flags    CodeFlags
	build    func(b *Builder)
	calls    []pyCall
	// check inspects the assembled code (for instance that long jumps got EXTENDED_ARG).
	check func(t *testing.T, ins []Instr)
}

const fnFirstLine = 10

// linePos is the position of a whole line's statement, for hand-built code.
func linePos(line int) Position { return Position{Line: line, EndLine: line, Col: 4, EndCol: 20} }

// BINARY_OP arguments (dis._nb_ops).
const (
	nbSubtract    = 10
	nbTrueDivide  = 11
	nbInplaceAdd  = 13
	nbInplaceSub  = 23
	optimizedFunc = CO_OPTIMIZED | CO_NEWLOCALS
)

var fnSpecs = []fnSpec{{
	name: "add_mul", argCount: 2, varNames: []string{"a", "b"}, consts: []string{"None", "2"}, flags: optimizedFunc,
	build: func(b *Builder) {
		b.Add(RESUME, 0, linePos(10))
		b.Add(LOAD_FAST, 0, linePos(11))
		b.Add(LOAD_FAST, 1, linePos(11))
		b.Add(BINARY_OP, nbAdd, linePos(11))
		b.Add(LOAD_CONST, 1, linePos(11))
		b.Add(BINARY_OP, nbMultiply, linePos(11))
		b.Add(RETURN_VALUE, 0, linePos(11))
	},
	calls: []pyCall{{Args: "(1, 2)", Want: "6"}, {Args: "('a', 'b')", Want: "'abab'"}, {Args: "(1, None)", Raises: "TypeError", Line: 11}},
}, {
	// for i in range(n): total += i — the loop's jump is written forward and must flip.
	name: "sum_range", argCount: 1, varNames: []string{"n", "total", "i"}, names: []string{"range"}, consts: []string{"None", "0"}, flags: optimizedFunc,
	build: func(b *Builder) {
		loop, done := b.NewLabel(), b.NewLabel()
		b.Add(RESUME, 0, linePos(10))
		b.Add(LOAD_CONST, 1, linePos(11))
		b.Add(STORE_FAST, 1, linePos(11))
		b.Add(LOAD_GLOBAL, 0<<1|1, linePos(12))
		b.Add(LOAD_FAST, 0, linePos(12))
		b.Add(PRECALL, 1, linePos(12))
		b.Add(CALL, 1, linePos(12))
		b.Add(GET_ITER, 0, linePos(12))
		b.Bind(loop)
		b.Jump(FOR_ITER, done, linePos(12))
		b.Add(STORE_FAST, 2, linePos(12))
		b.Add(LOAD_FAST, 1, linePos(13))
		b.Add(LOAD_FAST, 2, linePos(13))
		b.Add(BINARY_OP, nbInplaceAdd, linePos(13))
		b.Add(STORE_FAST, 1, linePos(13))
		b.Jump(JUMP_FORWARD, loop, linePos(13))
		b.Bind(done)
		b.Add(LOAD_FAST, 1, linePos(14))
		b.Add(RETURN_VALUE, 0, linePos(14))
	},
	calls: []pyCall{{Args: "(0,)", Want: "0"}, {Args: "(10,)", Want: "45"}, {Args: "('x',)", Raises: "TypeError", Line: 12}},
	check: func(t *testing.T, ins []Instr) {
		requireOps(t, ins, JUMP_BACKWARD, 1)
	},
}, {
	// acc = 0; while True: acc += n; n -= 1; if n: continue (a backward conditional jump).
	name: "countdown", argCount: 1, varNames: []string{"n", "acc"}, consts: []string{"None", "0", "1"}, flags: optimizedFunc,
	build: func(b *Builder) {
		top := b.NewLabel()
		b.Add(RESUME, 0, linePos(10))
		b.Add(LOAD_CONST, 1, linePos(11))
		b.Add(STORE_FAST, 1, linePos(11))
		b.Bind(top)
		b.Add(LOAD_FAST, 1, linePos(12))
		b.Add(LOAD_FAST, 0, linePos(12))
		b.Add(BINARY_OP, nbInplaceAdd, linePos(12))
		b.Add(STORE_FAST, 1, linePos(12))
		b.Add(LOAD_FAST, 0, linePos(13))
		b.Add(LOAD_CONST, 2, linePos(13))
		b.Add(BINARY_OP, nbInplaceSub, linePos(13))
		b.Add(STORE_FAST, 0, linePos(13))
		b.Add(LOAD_FAST, 0, linePos(14))
		b.Jump(POP_JUMP_FORWARD_IF_TRUE, top, linePos(14))
		b.Add(LOAD_FAST, 1, linePos(15))
		b.Add(RETURN_VALUE, 0, linePos(15))
	},
	calls: []pyCall{{Args: "(1,)", Want: "1"}, {Args: "(4,)", Want: "10"}},
	check: func(t *testing.T, ins []Instr) {
		requireOps(t, ins, POP_JUMP_BACKWARD_IF_TRUE, 1)
	},
}, {
	// try: return a / b
	// except ZeroDivisionError: return -1
	name: "safe_div", argCount: 2, varNames: []string{"a", "b"}, names: []string{"ZeroDivisionError"}, consts: []string{"None", "-1"}, flags: optimizedFunc,
	build: func(b *Builder) {
		tryStart, tryEnd, handler, caught, reraise, cleanup := b.NewLabel(), b.NewLabel(), b.NewLabel(), b.NewLabel(), b.NewLabel(), b.NewLabel()
		b.Add(RESUME, 0, linePos(10))
		b.Add(NOP, 0, linePos(11))
		b.Bind(tryStart)
		b.Add(LOAD_FAST, 0, linePos(12))
		b.Add(LOAD_FAST, 1, linePos(12))
		b.Add(BINARY_OP, nbTrueDivide, linePos(12))
		b.Add(RETURN_VALUE, 0, linePos(12))
		b.Bind(tryEnd)
		b.Bind(handler)
		b.Add(PUSH_EXC_INFO, 0, linePos(12))
		b.Add(LOAD_GLOBAL, 0<<1, linePos(13))
		b.Add(CHECK_EXC_MATCH, 0, linePos(13))
		b.Jump(POP_JUMP_FORWARD_IF_FALSE, reraise, linePos(13))
		b.Add(POP_TOP, 0, linePos(13))
		b.Bind(caught)
		b.Add(POP_EXCEPT, 0, linePos(14))
		b.Add(LOAD_CONST, 1, linePos(14))
		b.Add(RETURN_VALUE, 0, linePos(14))
		b.Bind(reraise)
		b.Add(RERAISE, 0, linePos(13))
		b.Bind(cleanup)
		b.Add(COPY, 3, NoPosition)
		b.Add(POP_EXCEPT, 0, NoPosition)
		b.Add(RERAISE, 1, NoPosition)
		// As CPython lays it out: the except clause's code runs under a cleanup handler that
		// restores the previous exception, except once the exception has been popped.
		b.Handle(tryStart, tryEnd, handler, 0, false)
		b.Handle(handler, caught, cleanup, 1, true)
		b.Handle(reraise, cleanup, cleanup, 1, true)
	},
	calls: []pyCall{{Args: "(6, 3)", Want: "2.0"}, {Args: "(1, 0)", Want: "-1"}, {Args: "(1, 'x')", Raises: "TypeError", Line: 12}},
}, {
	// acc = 0
	// while n:            (body of 300 additions: both loop jumps need EXTENDED_ARG)
	//     acc += 1; acc += 2; ... acc += 300   (LOAD_CONST beyond 255 needs EXTENDED_ARG too)
	//     n -= 1
	// return -acc if flag else acc
	name: "long_jumps", argCount: 2, varNames: []string{"flag", "n", "acc"}, consts: rangeConsts(301), flags: optimizedFunc,
	build: func(b *Builder) {
		loop, end, positive := b.NewLabel(), b.NewLabel(), b.NewLabel()
		b.Add(RESUME, 0, linePos(10))
		b.Add(LOAD_CONST, 0, linePos(11))
		b.Add(STORE_FAST, 2, linePos(11))
		b.Bind(loop)
		b.Add(LOAD_FAST, 1, linePos(12))
		b.Jump(POP_JUMP_FORWARD_IF_FALSE, end, linePos(12))
		for k := 1; k <= 300; k++ {
			b.Add(LOAD_FAST, 2, linePos(12+k))
			b.Add(LOAD_CONST, k, linePos(12+k))
			b.Add(BINARY_OP, nbInplaceAdd, linePos(12+k))
			b.Add(STORE_FAST, 2, linePos(12+k))
		}
		b.Add(LOAD_FAST, 1, linePos(313))
		b.Add(LOAD_CONST, 1, linePos(313))
		b.Add(BINARY_OP, nbInplaceSub, linePos(313))
		b.Add(STORE_FAST, 1, linePos(313))
		b.Jump(JUMP_BACKWARD, loop, linePos(313))
		b.Bind(end)
		b.Add(LOAD_FAST, 0, linePos(314))
		b.Jump(POP_JUMP_FORWARD_IF_FALSE, positive, linePos(314))
		b.Add(LOAD_FAST, 2, linePos(314))
		b.Add(UNARY_NEGATIVE, 0, linePos(314))
		b.Add(RETURN_VALUE, 0, linePos(314))
		b.Bind(positive)
		b.Add(LOAD_FAST, 2, linePos(314))
		b.Add(RETURN_VALUE, 0, linePos(314))
	},
	calls: []pyCall{{Args: "(False, 0)", Want: "0"}, {Args: "(False, 2)", Want: "90300"}, {Args: "(True, 1)", Want: "-45150"}},
	check: func(t *testing.T, ins []Instr) {
		// Both loop jumps and the LOAD_CONSTs of constants 256..300 carry a prefix.
		prefixed := map[Opcode]int{}
		for k := 1; k < len(ins); k++ {
			if ins[k-1].Op == EXTENDED_ARG {
				prefixed[ins[k].Op]++
			}
		}
		require.Equal(t, map[Opcode]int{POP_JUMP_FORWARD_IF_FALSE: 1, JUMP_BACKWARD: 1, LOAD_CONST: 45}, prefixed)
	},
}, {
	// for i in range(n): yield i * i
	name: "squares", argCount: 1, varNames: []string{"n", "i"}, names: []string{"range"}, consts: []string{"None"},
	flags: optimizedFunc | CO_GENERATOR,
	build: func(b *Builder) {
		loop, done := b.NewLabel(), b.NewLabel()
		b.Add(RETURN_GENERATOR, 0, Position{Line: 10, EndLine: 10, Col: -1, EndCol: -1})
		b.Add(POP_TOP, 0, Position{Line: 10, EndLine: 10, Col: -1, EndCol: -1})
		b.Add(RESUME, 0, linePos(10))
		b.Add(LOAD_GLOBAL, 0<<1|1, linePos(11))
		b.Add(LOAD_FAST, 0, linePos(11))
		b.Add(PRECALL, 1, linePos(11))
		b.Add(CALL, 1, linePos(11))
		b.Add(GET_ITER, 0, linePos(11))
		b.Bind(loop)
		b.Jump(FOR_ITER, done, linePos(11))
		b.Add(STORE_FAST, 1, linePos(11))
		b.Add(LOAD_FAST, 1, linePos(12))
		b.Add(LOAD_FAST, 1, linePos(12))
		b.Add(BINARY_OP, nbMultiply, linePos(12))
		b.Add(YIELD_VALUE, 0, linePos(12))
		b.Add(RESUME, 1, linePos(12))
		b.Add(POP_TOP, 0, linePos(12))
		b.Jump(JUMP_BACKWARD, loop, linePos(12))
		b.Bind(done)
		b.Add(LOAD_CONST, 0, linePos(11))
		b.Add(RETURN_VALUE, 0, linePos(11))
	},
	// The runner turns a returned generator into a tuple before comparing.
	calls: []pyCall{{Args: "(4,)", Want: "(0, 1, 4, 9)"}},
}}

func rangeConsts(n int) []string {
	out := make([]string, n)
	for k := range out {
		out[k] = strconv.Itoa(k)
	}
	return out
}

// requireOps checks that the decoded code holds op exactly n times.
func requireOps(t *testing.T, ins []Instr, op Opcode, n int) {
	t.Helper()
	got := 0
	for _, in := range ins {
		if in.Op == op {
			got++
		}
	}
	require.Equal(t, n, got, "count of %s", op)
}

// TestAssembledCodeRunsInCPython assembles functions with straight-line code, loops whose
// jumps must change direction, a try/except, a generator, and jumps long enough to need
// EXTENDED_ARG, then has CPython build and call them.
func TestAssembledCodeRunsInCPython(t *testing.T) {
	python := requirePython(t)
	var cases []pyCase
	for _, s := range fnSpecs {
		b := NewBuilder(fnFirstLine)
		s.build(b)
		asm, err := b.Assembly()
		require.NoError(t, err, s.name)
		out, err := Assemble(asm)
		require.NoError(t, err, s.name)
		ins, err := Decode(&Code{QualName: s.name, Bytecode: out.Bytecode, LineTable: out.LineTable, FirstLineNo: fnFirstLine})
		require.NoError(t, err, s.name)
		if s.check != nil {
			s.check(t, ins)
		}
		c := pyCase{Name: s.name, ArgCount: s.argCount, VarNames: s.varNames, Names: nonNil(s.names), Consts: s.consts,
			Flags: int(s.flags), FirstLineNo: fnFirstLine, StackSize: out.StackSize, Code: hex.EncodeToString(out.Bytecode),
			LineTable: hex.EncodeToString(out.LineTable), ExceptionTable: hex.EncodeToString(out.ExceptionTable), Calls: s.calls}
		for _, in := range ins { // opcodes as assembled: jump directions resolved
			if in.Op != EXTENDED_ARG {
				c.OpNames = append(c.OpNames, in.Op.String())
			}
		}
		require.Len(t, c.OpNames, len(asm.Instrs), s.name)
		cases = append(cases, c)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	data, err := json.Marshal(cases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	out, err := exec.Command(python, filepath.Join("testdata", "run_assembled.py"), path).CombinedOutput()
	require.NoError(t, err, "testdata/run_assembled.py failed:\n%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	calls := 0
	for _, c := range cases {
		calls += len(c.Calls)
	}
	require.Len(t, lines, calls, "one result line per call:\n%s", out)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "ok "), "%s", l)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
