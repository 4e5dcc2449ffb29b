package bytecode

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// The bytes were checked against dis._parse_exception_table.
func TestExceptionTable(t *testing.T) {
	entries := []ExceptEntry{
		{Start: 4, End: 12, Target: 14, Depth: 0},
		{Start: 10000, End: 10140, Target: 600000, Depth: 3, Lasti: true}, // multi-byte numbers
	}
	b, err := EncodeExceptionTable(entries)
	require.NoError(t, err)
	require.Equal(t, "82040700"+"c14e08"+"4106"+"41494f20"+"07", hex.EncodeToString(b))
	got, err := DecodeExceptionTable(b)
	require.NoError(t, err)
	require.Equal(t, entries, got)

	empty, err := DecodeExceptionTable(nil)
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestExceptionTableErrors(t *testing.T) {
	decodeTests := []struct {
		name, table, err string
	}{
		{"entry without start bit", "02040700", "should start entry 0"},
		{"cut off", "820407", "truncated"},
		{"start bit inside an entry", "82048700", "starts a new entry inside an entry"},
		{"number too long", "c0404040404000040700", "longer than 30 bits"},
	}
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(tt.table)
			require.NoError(t, err)
			_, err = DecodeExceptionTable(b)
			require.ErrorContains(t, err, tt.err)
		})
	}
	encodeTests := []struct {
		name  string
		entry ExceptEntry
	}{
		{"empty range", ExceptEntry{Start: 4, End: 4, Target: 8}},
		{"odd offset", ExceptEntry{Start: 3, End: 5, Target: 8}},
		{"negative depth", ExceptEntry{Start: 0, End: 2, Target: 8, Depth: -1}},
		{"too large", ExceptEntry{Start: 0, End: 2, Target: 1 << 32}},
	}
	for _, tt := range encodeTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeExceptionTable([]ExceptEntry{tt.entry})
			require.Error(t, err)
		})
	}
}
