package bytecode

import "fmt"

// The 3.11 exception table (co_exceptiontable, CPython's Objects/exception_handling_notes.txt)
// is a list of entries of four numbers: start, length and target in code units, and
// depth<<1|lasti. Each number is a big-endian sequence of 6-bit groups, 0x40 marking "more
// follows"; the first byte of an entry also has bit 7 set, which lets CPython binary-search
// the table.
const (
	excStartBit    = 0x80
	excContinueBit = 0x40
	excMaxValue    = 1<<30 - 1 // five 6-bit groups
)

// DecodeExceptionTable parses a 3.11 exception table into entries with byte offsets.
func DecodeExceptionTable(b []byte) ([]ExceptEntry, error) {
	var out []ExceptEntry
	r := excReader{b: b}
	for r.pos < len(b) {
		if b[r.pos]&excStartBit == 0 {
			return nil, fmt.Errorf("exceptiontable: byte %d (0x%02x) should start entry %d (bit 7 set); the table is corrupt", r.pos, b[r.pos], len(out))
		}
		var v [4]int
		for k := range v {
			var err error
			if v[k], err = r.varint(k == 0); err != nil {
				return nil, fmt.Errorf("exceptiontable: entry %d: %w", len(out), err)
			}
		}
		start, length, target := 2*v[0], 2*v[1], 2*v[2]
		out = append(out, ExceptEntry{Start: start, End: start + length, Target: target, Depth: v[3] >> 1, Lasti: v[3]&1 != 0})
	}
	return out, nil
}

type excReader struct {
	b   []byte
	pos int
}

func (r *excReader) varint(first bool) (int, error) {
	v := 0
	for k := 0; ; k++ {
		if r.pos >= len(r.b) {
			return 0, fmt.Errorf("truncated at byte %d of %d; the table is corrupt or cut short", r.pos, len(r.b))
		}
		c := r.b[r.pos]
		if c&excStartBit != 0 && !(first && k == 0) {
			return 0, fmt.Errorf("byte %d (0x%02x) starts a new entry inside an entry; the table is corrupt", r.pos, c)
		}
		if k == 5 {
			return 0, fmt.Errorf("number longer than 30 bits at byte %d; the table is corrupt", r.pos)
		}
		r.pos++
		v = v<<6 | int(c&63)
		if c&excContinueBit == 0 {
			return v, nil
		}
	}
}

// EncodeExceptionTable writes entries (byte offsets, as DecodeExceptionTable returns them) in
// CPython 3.11's encoding. Offsets must be even, End > Start, and every number below 2^30.
func EncodeExceptionTable(entries []ExceptEntry) ([]byte, error) {
	var b []byte
	for i, e := range entries {
		if e.Start < 0 || e.End <= e.Start || e.Target < 0 || e.Depth < 0 || (e.Start|e.End|e.Target)&1 != 0 {
			return nil, fmt.Errorf("exceptiontable: entry %d %+v is invalid; offsets must be even byte offsets with End > Start and Depth >= 0", i, e)
		}
		dl := e.Depth << 1
		if e.Lasti {
			dl |= 1
		}
		for k, v := range [4]int{e.Start / 2, (e.End - e.Start) / 2, e.Target / 2, dl} {
			if v > excMaxValue {
				return nil, fmt.Errorf("exceptiontable: entry %d %+v has a number above 2^30; code this large cannot be encoded", i, e)
			}
			b = appendExcVarint(b, v, k == 0)
		}
	}
	return b, nil
}

// appendExcVarint writes v as CPython's assemble_emit_exception_table_item does.
func appendExcVarint(b []byte, v int, start bool) []byte {
	mark := byte(0)
	if start {
		mark = excStartBit
	}
	for shift := 24; shift > 0; shift -= 6 {
		if v >= 1<<shift {
			b = append(b, byte(v>>shift&63)|excContinueBit|mark)
			mark = 0
		}
	}
	return append(b, byte(v&63)|mark)
}
