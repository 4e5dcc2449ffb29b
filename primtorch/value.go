package primtorch

// Value is what flows into meta functions (and, later, the reference interpreter) as an op
// argument or result. Its dynamic type is one of:
//
//	*TensorMeta            a tensor
//	nil                    None
//	bool, int64, float64   Python scalars (complex128 for complex)
//	string                 str (e.g. reduction="mean", approximate="tanh")
//	DType, Device          torch.dtype, torch.device
//	MemoryFormat, Layout   torch.memory_format, torch.layout
//	Ellipsis               ...
//	Slice                  a Python slice of ints
//	[]Value                a list (or a tuple, where the difference does not matter)
//	Tuple                  a tuple, where it must be told from a list: operator.getitem's
//	                       index (x[0, 1] is Tuple{0, 1}, x[[0, 1]] is []Value{0, 1})
//
// Binding accepts []Value and Tuple alike wherever a sequence is expected.
type Value = any

// Tuple is a Python tuple (see Value).
type Tuple []Value

// Ellipsis is Python's `...`.
type Ellipsis struct{}

// MemoryFormat is a torch.memory_format: "contiguous_format", "channels_last",
// "channels_last_3d" or "preserve_format".
type MemoryFormat string

// Layout is a torch.layout: "strided" (others are unsupported).
type Layout string

// Slice is a Python slice; nil parts are absent (None). A bound that is a symbolic size
// (x[:, :T] with T = x.size(1) dynamic) is also in SymStart or SymStop, set only then: Start and
// Stop hold its hint, so code that reads only them sees the slice of this call. Use
// StartSym/StopSym to read a bound either way, SliceOf to make one from int or SymInt values.
type Slice struct {
	Start, Stop, Step *int64
	SymStart, SymStop *SymInt
}

// StartSym is the start bound as a SymInt (ok=false when absent).
func (s Slice) StartSym() (SymInt, bool) { return sliceBound(s.Start, s.SymStart) }

// StopSym is the stop bound as a SymInt (ok=false when absent).
func (s Slice) StopSym() (SymInt, bool) { return sliceBound(s.Stop, s.SymStop) }

func sliceBound(k *int64, sym *SymInt) (SymInt, bool) {
	switch {
	case sym != nil:
		return *sym, true
	case k != nil:
		return SymConst(*k), true
	}
	return SymInt{}, false
}

// IsSymbolic reports whether a bound of s is symbolic.
func (s Slice) IsSymbolic() bool { return s.SymStart != nil || s.SymStop != nil }

// Static is s with its symbolic bounds dropped (their hints stay in Start and Stop).
func (s Slice) Static() Slice {
	s.SymStart, s.SymStop = nil, nil
	return s
}

// SliceOf makes the slice start:stop:step of Python values: nil (None), an int (int64, int,
// bool) or a SymInt (a constant one is an int; a symbolic step is not a bound torch can take
// without its value, so it is specialised). ok=false for any other value.
func SliceOf(start, stop, step Value) (s Slice, ok bool) {
	for i, v := range []Value{start, stop, step} {
		if v == nil {
			continue
		}
		x, isInt := AsSymInt(v)
		if !isInt {
			return Slice{}, false
		}
		k, cst := x.IsConst()
		if !cst && i == 2 {
			k, cst = x.Specialize("a symbolic slice step"), true
		}
		hint := x.Hint()
		if cst {
			hint = k
		}
		switch i {
		case 0:
			s.Start = &hint
			if !cst {
				s.SymStart = &x
			}
		case 1:
			s.Stop = &hint
			if !cst {
				s.SymStop = &x
			}
		case 2:
			s.Step = &hint
		}
	}
	return s, true
}

// KV is one keyword argument.
type KV struct {
	Name  string
	Value Value
}
