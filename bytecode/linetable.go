package bytecode

import "fmt"

// The 3.11 location table (co_linetable, CPython's Objects/locations.md) is a sequence of
// entries, each covering 1 to 8 code units. An entry's first byte is 1 CCCC LLL: bit 7 set,
// a 4-bit form code, and the unit count minus one. The forms:
//
//	0-9    short: one more byte 0 ccc eeee; line unchanged, col = code*8+ccc, endcol = col+eeee
//	10-12  one line: line += code-10; two more bytes col, endcol
//	13     no columns: line += svarint
//	14     long: line += svarint; endline = line+varint; col = varint-1; endcol = varint-1
//	15     no location
//
// Varints are little-endian 6-bit groups with 0x40 meaning "more follows"; a signed varint
// stores |v|<<1 with the sign in bit 0. The running line starts at co_firstlineno.
const (
	locShortMax    = 9
	locOneLine0    = 10
	locOneLine2    = 12
	locNoColumns   = 13
	locLong        = 14
	locNone        = 15
	locMaxUnits    = 8 // code units one entry can cover
	locEntryMarker = 0x80
)

// NoPosition is the position of code without source location (form 15 of the table).
var NoPosition = Position{Line: -1, EndLine: -1, Col: -1, EndCol: -1}

// HasLine reports whether the position carries a line number.
func (p Position) HasLine() bool { return p.Line >= 0 }

// LineSpan is a run of code units sharing one source position. CPython 3.11 writes one span
// per instruction (its EXTENDED_ARG prefixes and inline caches included), even when
// neighbouring instructions share a position, so the spans, not per-unit positions, are what
// determine the bytes of co_linetable.
type LineSpan struct {
	Units int // code units (2-byte words) covered
	Pos   Position
}

// DecodeLineTable expands a 3.11 location table into one Position per 2-byte code unit.
// Units the table does not cover have NoPosition (CPython's co_positions reports None for
// them); units beyond codeUnits are ignored, as CPython ignores them.
func DecodeLineTable(table []byte, firstLine, codeUnits int) ([]Position, error) {
	if codeUnits < 0 {
		return nil, fmt.Errorf("linetable: negative code unit count %d; pass len(co_code)/2", codeUnits)
	}
	out := make([]Position, 0, codeUnits)
	r := locReader{b: table, line: firstLine}
	for r.pos < len(r.b) && len(out) < codeUnits {
		units, p, err := r.next()
		if err != nil {
			return nil, err
		}
		for k := 0; k < units && len(out) < codeUnits; k++ {
			out = append(out, p)
		}
	}
	for len(out) < codeUnits {
		out = append(out, NoPosition)
	}
	return out, nil
}

// DecodeLineSpans returns the entries of a location table as spans, one per entry, without
// merging neighbours (an instruction longer than 8 units has several entries).
func DecodeLineSpans(table []byte, firstLine int) ([]LineSpan, error) {
	var out []LineSpan
	r := locReader{b: table, line: firstLine}
	for r.pos < len(r.b) {
		units, p, err := r.next()
		if err != nil {
			return nil, err
		}
		out = append(out, LineSpan{Units: units, Pos: p})
	}
	return out, nil
}

// locReader walks a location table entry by entry.
type locReader struct {
	b    []byte
	pos  int
	line int // CPython's computed_line
}

func (r *locReader) byte() (int, error) {
	if r.pos >= len(r.b) {
		return 0, fmt.Errorf("linetable: entry truncated at byte %d of %d; the table is corrupt or cut short", r.pos, len(r.b))
	}
	c := r.b[r.pos]
	if c&locEntryMarker != 0 {
		return 0, fmt.Errorf("linetable: byte %d (0x%02x) starts a new entry inside an entry; the table is corrupt", r.pos, c)
	}
	r.pos++
	return int(c), nil
}

func (r *locReader) varint() (int, error) {
	v, shift := 0, 0
	for {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= (c & 63) << shift
		if c&64 == 0 {
			return v, nil
		}
		shift += 6
		if shift > 30 {
			return 0, fmt.Errorf("linetable: varint longer than 32 bits at byte %d; the table is corrupt", r.pos)
		}
	}
}

func (r *locReader) svarint() (int, error) {
	v, err := r.varint()
	if v&1 != 0 {
		return -(v >> 1), err
	}
	return v >> 1, err
}

func (r *locReader) next() (int, Position, error) {
	first := r.b[r.pos]
	if first&locEntryMarker == 0 {
		return 0, Position{}, fmt.Errorf("linetable: byte %d (0x%02x) should start an entry (bit 7 set); the table is corrupt", r.pos, first)
	}
	r.pos++
	code := int(first>>3) & 15
	units := int(first&7) + 1
	var p Position
	switch {
	case code == locNone:
		return units, NoPosition, nil
	case code == locLong:
		d, err := r.svarint()
		if err != nil {
			return 0, p, err
		}
		r.line += d
		endDelta, err := r.varint()
		if err != nil {
			return 0, p, err
		}
		col, err := r.varint()
		if err != nil {
			return 0, p, err
		}
		endCol, err := r.varint()
		if err != nil {
			return 0, p, err
		}
		p = Position{Line: r.line, EndLine: r.line + endDelta, Col: col - 1, EndCol: endCol - 1}
	case code == locNoColumns:
		d, err := r.svarint()
		if err != nil {
			return 0, p, err
		}
		r.line += d
		p = Position{Line: r.line, EndLine: r.line, Col: -1, EndCol: -1}
	case code >= locOneLine0:
		r.line += code - locOneLine0
		col, err := r.byte()
		if err != nil {
			return 0, p, err
		}
		endCol, err := r.byte()
		if err != nil {
			return 0, p, err
		}
		p = Position{Line: r.line, EndLine: r.line, Col: col, EndCol: endCol}
	default: // short forms
		b, err := r.byte()
		if err != nil {
			return 0, p, err
		}
		col := code<<3 | b>>4
		p = Position{Line: r.line, EndLine: r.line, Col: col, EndCol: col + (b & 15)}
	}
	return units, p, nil
}

// EncodeLineTable writes spans as CPython 3.11's assembler does (compile.c,
// write_location_info_entry): each span is cut into entries of at most 8 units, and each entry
// takes the most compact form that holds its position. A position without a line
// (Line <= 0) is written as "no location"; Col or EndCol -1 means no column information.
func EncodeLineTable(firstLine int, spans []LineSpan) []byte {
	w := locWriter{line: firstLine}
	for _, s := range spans {
		for n := s.Units; n > 0; n -= locMaxUnits {
			w.entry(s.Pos, min(n, locMaxUnits))
		}
	}
	return w.b
}

// SpansOf groups per-unit positions into spans at the given instruction boundaries: starts
// holds the first code unit of every instruction, ascending, starting at 0.
func SpansOf(units []Position, starts []int) []LineSpan {
	spans := make([]LineSpan, 0, len(starts))
	for k, s := range starts {
		end := len(units)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		spans = append(spans, LineSpan{Units: end - s, Pos: units[s]})
	}
	return spans
}

type locWriter struct {
	b    []byte
	line int // CPython's a_lineno
}

func (w *locWriter) first(code, units int) {
	w.b = append(w.b, byte(locEntryMarker|code<<3|(units-1)))
}

func (w *locWriter) varint(v uint) {
	for v >= 64 {
		w.b = append(w.b, byte(64|v&63))
		v >>= 6
	}
	w.b = append(w.b, byte(v))
}

func (w *locWriter) svarint(v int) {
	if v < 0 {
		w.varint(uint(-v)<<1 | 1)
	} else {
		w.varint(uint(v) << 1)
	}
}

func (w *locWriter) entry(p Position, units int) {
	if !p.HasLine() {
		w.first(locNone, units)
		return
	}
	delta := p.Line - w.line
	col, endCol := max(p.Col, -1), max(p.EndCol, -1)
	switch {
	case col < 0 || endCol < 0:
		if p.EndLine == p.Line || p.EndLine == -1 {
			w.first(locNoColumns, units)
			w.svarint(delta)
			w.line = p.Line
			return
		}
	case p.EndLine == p.Line:
		if delta == 0 && col < 80 && endCol-col < 16 && endCol >= col {
			w.first(col>>3, units)
			w.b = append(w.b, byte((col&7)<<4|(endCol-col)))
			return
		}
		if delta >= 0 && delta < 3 && col < 128 && endCol < 128 {
			w.first(locOneLine0+delta, units)
			w.b = append(w.b, byte(col), byte(endCol))
			w.line = p.Line
			return
		}
	}
	w.first(locLong, units)
	w.svarint(delta)
	w.varint(uint(max(p.EndLine-p.Line, 0)))
	w.varint(uint(col + 1))
	w.varint(uint(endCol + 1))
	w.line = p.Line
}
