package bytecode

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAssembleRoundTrip checks that Assemble(Disassemble(c)) rebuilds every corpus code
// object exactly: co_code, co_linetable and co_exceptiontable byte for byte, co_stacksize.
func TestAssembleRoundTrip(t *testing.T) {
	recs := loadCorpus(t)
	failures := 0
	var seen features
	for _, r := range recs {
		f, err := roundTripFeatures(r.Code)
		if err != nil {
			t.Errorf("%s: %v", r.Summary, err)
			if failures++; failures == maxReported {
				t.Fatalf("stopping after %d failing code objects", failures)
			}
		}
		seen.add(f)
	}
	t.Logf("round-tripped %d code objects: %+v", len(recs), seen)
	// The corpus must exercise what makes assembling hard.
	require.Positive(t, seen.ExtendedArgJumps, "code with EXTENDED_ARG jumps")
	require.Positive(t, seen.BackwardJumps, "code with backward jumps")
	require.Positive(t, seen.Handlers, "code with exception handlers")
	require.Positive(t, seen.LastiHandlers, "code with lasti handlers")
	require.Positive(t, seen.Generators, "generators and coroutines")
}

// features counts code objects with each property that makes assembling hard.
type features struct {
	ExtendedArgJumps, BackwardJumps, Handlers, LastiHandlers, Generators int
}

func (f *features) add(g features) {
	f.ExtendedArgJumps += g.ExtendedArgJumps
	f.BackwardJumps += g.BackwardJumps
	f.Handlers += g.Handlers
	f.LastiHandlers += g.LastiHandlers
	f.Generators += g.Generators
}

func roundTrip(c *Code) error {
	_, err := roundTripFeatures(c)
	return err
}

// roundTripFeatures assembles Disassemble(c) and compares the result with c.
func roundTripFeatures(c *Code) (features, error) {
	var f features
	a, err := Disassemble(c)
	if err != nil {
		return f, err
	}
	got, err := Assemble(a)
	if err != nil {
		return f, err
	}
	if !bytes.Equal(got.Bytecode, c.Bytecode) {
		return f, fmt.Errorf("co_code differs\n got %x\nwant %x", got.Bytecode, c.Bytecode)
	}
	if !bytes.Equal(got.LineTable, c.LineTable) {
		return f, fmt.Errorf("co_linetable differs\n got %x\nwant %x", got.LineTable, c.LineTable)
	}
	if !bytes.Equal(got.ExceptionTable, c.ExceptionTable) {
		return f, fmt.Errorf("co_exceptiontable differs\n got %x\nwant %x", got.ExceptionTable, c.ExceptionTable)
	}
	if got.StackSize != c.StackSize {
		return f, fmt.Errorf("co_stacksize %d, want %d", got.StackSize, c.StackSize)
	}
	for i, in := range a.Instrs {
		if !in.Op.IsJump() {
			continue
		}
		if in.Target <= i {
			f.BackwardJumps = 1
		}
		if got.Bytecode[got.Offsets[i]] == byte(EXTENDED_ARG) {
			f.ExtendedArgJumps = 1
		}
	}
	for _, h := range a.Handlers {
		f.Handlers = 1
		if h.Lasti {
			f.LastiHandlers = 1
		}
	}
	if c.Flags&(CO_GENERATOR|CO_COROUTINE|CO_ASYNC_GENERATOR) != 0 {
		f.Generators = 1
	}
	return f, nil
}
