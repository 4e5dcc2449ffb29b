package bytecode

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stackEffectArgs are the arguments StackEffect is compared with dis on: small values, the
// bits MAKE_FUNCTION, CALL_FUNCTION_EX, FORMAT_VALUE and LOAD_GLOBAL test, UNPACK_EX's two
// bytes, and values that need EXTENDED_ARG.
var stackEffectArgs = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31,
	100, 255, 256, 257, 258, 511, 512, 769, 1000, 0x1234, 65535, 65536, 70000, 1<<20 + 5}

func TestStackEffectMatchesDis(t *testing.T) {
	python := requirePython(t)
	cmd := []string{filepath.Join("testdata", "stack_effects.py")}
	for _, a := range stackEffectArgs {
		cmd = append(cmd, strconv.Itoa(a))
	}
	out, err := exec.Command(python, cmd...).Output()
	require.NoError(t, err, "testdata/stack_effects.py failed")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 256*2*len(stackEffectArgs))
	valid := 0
	for _, line := range lines {
		var op, arg, jump int
		var want string
		_, err := fmt.Sscanf(line, "%d %d %d %s", &op, &arg, &jump, &want)
		require.NoError(t, err, line)
		e, err := StackEffect(Opcode(op), arg, jump == 1)
		got := strconv.Itoa(e)
		if err != nil {
			got = "err"
		} else {
			valid++
		}
		require.Equal(t, want, got, "StackEffect(%s, %d, jump=%t)", Opcode(op), arg, jump == 1)
	}
	t.Logf("%d valid (opcode, arg, jump) cases agree with dis.stack_effect", valid)
}

// TestStackEffectCoversOpcodes: every opcode the decoder and assembler accept has a stack
// effect, and CACHE, the one opcode with a stack effect that is not an instruction, is the
// only exception the other way.
func TestStackEffectCoversOpcodes(t *testing.T) {
	for op := range 256 {
		_, err := StackEffect(Opcode(op), 0, false)
		hasRow := err == nil
		want := Opcode(op).Valid() || Opcode(op) == CACHE
		require.Equal(t, want, hasRow, "opcode %s (%d): Valid()=%t but stack effect row present=%t; edit stack.go's stackEffects",
			Opcode(op), op, Opcode(op).Valid(), hasRow)
	}
}
