// Package py is the Go view of live CPython objects that the symbolic interpreter inspects.
//
// Objects are opaque handles (Obj) valid for the duration of one compile: the CPython shim keeps
// every object it hands to Go alive until the call into Go returns (pybridge/include/ptgo_abi.h).
// The API interface is implemented by pybridge over the shim's callbacks; nothing here knows
// about cgo, so the interpreter builds and unit-tests with CGO_ENABLED=0 against fakes.
package py

import "fmt"

// Obj is a borrowed PyObject*. The zero Obj is NULL.
type Obj uintptr

// Kind classifies a Python object (mirrors enum ptgo_kind).
type Kind int32

const (
	KOther Kind = iota
	KNone
	KBool
	KInt
	KFloat
	KComplex
	KStr
	KBytes
	KTuple
	KList
	KDict
	KSet
	KFrozenSet
	KRange
	KSlice
	KEllipsis
	KFunction
	KMethod
	KBuiltin
	KMethodDescriptor
	KType
	KModule
	KCode
	KCell
	KTensor
	KNNModule
	KDType
	KDevice
	KProperty
	KClassMethod
	KStaticMethod
	NumKinds
)

var kindNames = [NumKinds]string{"object", "None", "bool", "int", "float", "complex", "str", "bytes",
	"tuple", "list", "dict", "set", "frozenset", "range", "slice", "ellipsis", "function", "method",
	"builtin", "method_descriptor", "type", "module", "code", "cell", "Tensor", "nn.Module",
	"torch.dtype", "torch.device", "property", "classmethod", "staticmethod"}

func (k Kind) String() string {
	if k >= 0 && k < NumKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int32(k))
}

// TensorInfo is a tensor's metadata as read from the live object.
type TensorInfo struct {
	DType         int // index into the dtype list the runtime gave at init (primtorch.DType order)
	DeviceType    int // 0 cpu, 1 cuda, 2 meta, 3 other
	DeviceIndex   int // -1 when none
	RequiresGrad  bool
	IsLeaf        bool
	IsParameter   bool
	IsPlain       bool // exactly torch.Tensor or nn.Parameter
	Strided       bool
	StorageOffset int64
	Sizes         []int64
	Strides       []int64
}

// Error is a Python exception raised by a callback, cleared and described ("TypeError: ...").
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// API is what Go may ask of CPython. Every method must be called on the goroutine that the
// shim called into Go on (it holds the GIL).
type API interface {
	Kind(o Obj) Kind
	TypeOf(o Obj) Obj
	GetAttr(o Obj, name string) (Obj, error)
	// GetAttrStatic looks name up without running descriptors: instance __dict__ first
	// (onType=false), then the MRO of the type (onType=true, owner is the defining class).
	GetAttrStatic(o Obj, name string) (v Obj, onType bool, owner Obj, found bool, err error)
	// Call calls fn(*args[:len(args)-len(kwnames)], **dict(zip(kwnames, args[len-len(kwnames):]))).
	Call(fn Obj, args []Obj, kwnames []string) (Obj, error)
	Int(o Obj) (int64, error)
	Float(o Obj) (float64, error)
	Str(o Obj) (string, error)
	Bytes(o Obj) ([]byte, error)
	NewInt(v int64) Obj
	NewFloat(v float64) Obj
	NewStr(s string) Obj
	NewBytes(b []byte) Obj
	NewBool(v bool) Obj
	None() Obj
	NewTuple(items []Obj) Obj
	NewList(items []Obj) Obj
	NewDict(keys, vals []Obj) (Obj, error)
	Len(o Obj) (int, error)
	Index(o Obj, i int) (Obj, error)
	GetItem(o, key Obj) (Obj, error)
	DictItems(d Obj) (keys, vals []Obj)
	Repr(o Obj) string
	IsInstance(o, cls Obj) (bool, error)
	Equal(a, b Obj) (bool, error)
	TensorMeta(o Obj) (*TensorInfo, error)
	// Runtime is the ptgo._runtime module (Python helpers), Builtins the builtins dict.
	Runtime() Obj
	Builtins() Obj
}
