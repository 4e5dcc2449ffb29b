package bytecode

import (
	"fmt"
	"testing"
)

// maxReported bounds how many failing code objects a corpus test lists before stopping.
const maxReported = 10

// TestDecodeMatchesDis decodes every code object of the standard library and torch.nn and
// compares each instruction and exception-table entry with what dis reports.
func TestDecodeMatchesDis(t *testing.T) {
	recs := loadCorpus(t)
	failures, instrs := 0, 0
	for _, r := range recs {
		n, err := compareWithDis(r)
		instrs += n
		if err != nil {
			t.Errorf("%s: %v", r.Summary, err)
			if failures++; failures == maxReported {
				t.Fatalf("stopping after %d failing code objects", failures)
			}
		}
	}
	t.Logf("compared %d code objects, %d instructions, with dis", len(recs), instrs)
}

func compareWithDis(r corpusRecord) (int, error) {
	want, err := parseDisInstrs(r.DisIns)
	if err != nil {
		return 0, err
	}
	got, err := Decode(r.Code)
	if err != nil {
		return 0, err
	}
	for i := range min(len(got), len(want)) {
		if err := sameAsDis(got[i], want[i]); err != nil {
			return i, fmt.Errorf("instruction %d: %v", i, err)
		}
	}
	if len(got) != len(want) {
		return 0, fmt.Errorf("decoded %d instructions, dis has %d", len(got), len(want))
	}
	wantExc, err := parseDisExceptions(r.DisExc)
	if err != nil {
		return 0, err
	}
	gotExc, err := DecodeExceptionTable(r.Code.ExceptionTable)
	if err != nil {
		return 0, err
	}
	if fmt.Sprint(gotExc) != fmt.Sprint(wantExc) {
		return 0, fmt.Errorf("exception table decodes to %v, dis has %v", gotExc, wantExc)
	}
	return len(got), nil
}

// sameAsDis compares one decoded instruction with dis's.
func sameAsDis(got Instr, want disInstr) error {
	arg := got.Arg
	if !got.Op.HasArg() {
		arg = -1
	}
	starts := -1
	if got.StartsLine {
		starts = got.Pos.Line
	}
	g := disInstr{Offset: got.Offset, Opname: got.Op.String(), Arg: arg, Target: got.Target, StartsLine: starts, Pos: got.Pos}
	if g != want {
		return fmt.Errorf("decoded %+v, dis has %+v", g, want)
	}
	return nil
}

// TestLineTableRoundTrip re-encodes every corpus location table from its decoded positions
// and the instruction boundaries: CPython writes one entry run per instruction.
func TestLineTableRoundTrip(t *testing.T) {
	recs := loadCorpus(t)
	failures := 0
	for _, r := range recs {
		err := func() error {
			ins, err := Decode(r.Code)
			if err != nil {
				return err
			}
			units, err := DecodeLineTable(r.Code.LineTable, r.Code.FirstLineNo, len(r.Code.Bytecode)/2)
			if err != nil {
				return err
			}
			var starts []int
			for k, in := range ins {
				// An instruction's entries cover its EXTENDED_ARG prefixes.
				if k == 0 || ins[k-1].Op != EXTENDED_ARG {
					starts = append(starts, in.Offset/2)
				}
			}
			got := EncodeLineTable(r.Code.FirstLineNo, SpansOf(units, starts))
			if string(got) != string(r.Code.LineTable) {
				return fmt.Errorf("re-encoded location table\n%x\nwant\n%x", got, r.Code.LineTable)
			}
			exc, err := DecodeExceptionTable(r.Code.ExceptionTable)
			if err != nil {
				return err
			}
			gotExc, err := EncodeExceptionTable(exc)
			if err != nil {
				return err
			}
			if string(gotExc) != string(r.Code.ExceptionTable) {
				return fmt.Errorf("re-encoded exception table\n%x\nwant\n%x", gotExc, r.Code.ExceptionTable)
			}
			return nil
		}()
		if err != nil {
			t.Errorf("%s: %v", r.Summary, err)
			if failures++; failures == maxReported {
				t.Fatalf("stopping after %d failing code objects", failures)
			}
		}
	}
}
