package bytecode

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	// RESUME 0; EXTENDED_ARG 1; LOAD_CONST 258; LOAD_GLOBAL 1 (+5 caches);
	// POP_JUMP_FORWARD_IF_FALSE 1 (to 22); RETURN_VALUE; JUMP_BACKWARD 3 (to 18)
	code, err := hex.DecodeString("9700" + "9001" + "6402" + "7401" + "00000000000000000000" + "7201" + "5300" + "8c03")
	require.NoError(t, err)
	l1, l2, l2b, l3 := Position{1, 1, 0, 0}, Position{2, 2, 4, 9}, Position{2, 2, 4, 12}, Position{3, 3, -1, -1}
	table := EncodeLineTable(1, []LineSpan{{1, l1}, {2, l2}, {6, l2b}, {1, l3}, {1, l3}, {1, l2}})
	got, err := Decode(&Code{Bytecode: code, LineTable: table, FirstLineNo: 1})
	require.NoError(t, err)
	require.Equal(t, []Instr{
		{Offset: 0, Op: RESUME, Arg: 0, Target: -1, Pos: l1, StartsLine: true},
		{Offset: 2, Op: EXTENDED_ARG, Arg: 1, Target: -1, Pos: l2, StartsLine: true},
		{Offset: 4, Op: LOAD_CONST, Arg: 258, Target: -1, Pos: l2},
		{Offset: 6, Op: LOAD_GLOBAL, Arg: 1, Target: -1, Pos: l2b},
		{Offset: 18, Op: POP_JUMP_FORWARD_IF_FALSE, Arg: 1, Target: 22, Pos: l3, StartsLine: true},
		{Offset: 20, Op: RETURN_VALUE, Arg: 0, Target: -1, Pos: l3},
		{Offset: 22, Op: JUMP_BACKWARD, Arg: 3, Target: 18, Pos: l2, StartsLine: true},
	}, got)
	require.Equal(t, 18, got[3].Next())
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, code, linetable, err string
	}{
		{"odd length", "970053", "", "odd length 3"},
		{"specialised opcode", "0300", "", "invalid opcode BINARY_OP_ADAPTIVE (3) at offset 0"},
		{"cache as instruction", "0000", "", "invalid opcode CACHE (0) at offset 0"},
		{"unused opcode", "b500", "", "invalid opcode <op 181> (181)"},
		{"caches cut off", "740100000000", "", "needs 12 bytes"},
		{"four prefixes", "9001900190019001" + "6400", "", "more than 3 EXTENDED_ARG"},
		{"trailing prefix", "97009001", "", "ends with an EXTENDED_ARG"},
		{"jump past the end", "6e05", "", "jumps to 12, which is not the start of an instruction in 2 bytes"},
		{"jump before the start", "8c05", "", "jumps to -8"},
		{"jump into caches", "6e01" + "7400" + "00000000000000000000", "", "jumps to 4"},
		{"corrupt location table", "9700", "00", "linetable: byte 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, err := hex.DecodeString(tt.code)
			require.NoError(t, err)
			lt, err := hex.DecodeString(tt.linetable)
			require.NoError(t, err)
			_, err = Decode(&Code{QualName: "f", Filename: "m.py", FirstLineNo: 7, Bytecode: code, LineTable: lt})
			require.ErrorContains(t, err, tt.err)
			require.ErrorContains(t, err, "f (m.py:7)", "errors name the code object")
		})
	}
}
