package bytecode

import (
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
)

// One span per location-table form; the bytes were checked against CPython's co_positions().
var lineTableTests = []struct {
	name  string
	span  LineSpan
	bytes string
}{
	{"short form", LineSpan{1, Position{10, 10, 5, 9}}, "8054"},
	{"one-line form, line +2", LineSpan{2, Position{12, 12, 100, 120}}, "e16478"},
	{"no columns, line -1", LineSpan{1, Position{11, 11, -1, -1}}, "e803"},
	{"long form, two lines", LineSpan{1, Position{11, 13, 2, 7}}, "f000020308"},
	{"no location", LineSpan{3, NoPosition}, "fa"},
	{"long form, wide columns", LineSpan{1, Position{200, 200, 300, 310}}, "f07a05006d047704"},
	{"span cut at 8 units", LineSpan{10, Position{200, 200, 1, 2}}, "87118111"},
}

func TestEncodeLineTable(t *testing.T) {
	const firstLine = 10
	var spans []LineSpan
	var all string
	for _, tt := range lineTableTests {
		spans = append(spans, tt.span)
		all += tt.bytes
	}
	// The forms depend on the line of the previous entry, so the spans are encoded in order.
	got := EncodeLineTable(firstLine, spans)
	require.Equal(t, all, hex.EncodeToString(got))

	var want []Position
	for _, tt := range lineTableTests {
		for range tt.span.Units {
			want = append(want, tt.span.Pos)
		}
	}
	units, err := DecodeLineTable(got, firstLine, len(want))
	require.NoError(t, err)
	require.Equal(t, want, units)
}

func TestDecodeLineTableCoverage(t *testing.T) {
	table := EncodeLineTable(1, []LineSpan{{2, Position{1, 1, 0, 4}}})
	// Units past the table have no location, as co_positions reports them.
	units, err := DecodeLineTable(table, 1, 4)
	require.NoError(t, err)
	require.Equal(t, []Position{{1, 1, 0, 4}, {1, 1, 0, 4}, NoPosition, NoPosition}, units)
	// Entries past the code are ignored.
	units, err = DecodeLineTable(table, 1, 1)
	require.NoError(t, err)
	require.Equal(t, []Position{{1, 1, 0, 4}}, units)
}

func TestDecodeLineTableErrors(t *testing.T) {
	tests := []struct {
		name, table, err string
	}{
		{"entry without start bit", "0054", "should start an entry"},
		{"short form cut off", "80", "truncated"},
		{"long form cut off", "f00002", "truncated"},
		{"start bit inside an entry", "e880", "starts a new entry inside an entry"},
		{"varint too long", "e8" + "7f7f7f7f7f7f00", "longer than 32 bits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := hex.DecodeString(tt.table)
			require.NoError(t, err)
			_, err = DecodeLineTable(b, 1, 100)
			require.ErrorContains(t, err, tt.err)
			_, err = DecodeLineSpans(b, 1)
			require.ErrorContains(t, err, tt.err)
		})
	}
}

func TestDecodeLineSpans(t *testing.T) {
	spans := []LineSpan{{1, Position{3, 3, 0, 5}}, {8, Position{4, 4, -1, -1}}, {2, Position{4, 4, -1, -1}}, {1, NoPosition}}
	got, err := DecodeLineSpans(EncodeLineTable(3, spans), 3)
	require.NoError(t, err)
	require.Equal(t, spans, got)
}

func TestSpansOf(t *testing.T) {
	p, q := Position{1, 1, 0, 1}, Position{2, 2, 0, 1}
	units := []Position{p, p, p, q, q}
	require.Equal(t, []LineSpan{{1, p}, {2, p}, {2, q}}, SpansOf(units, []int{0, 1, 3}))
}
