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

// Slice is a Python slice; nil parts are absent (None).
type Slice struct{ Start, Stop, Step *int64 }

// KV is one keyword argument.
type KV struct {
	Name  string
	Value Value
}
