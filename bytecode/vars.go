package bytecode

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Value is what the symbolic interpreter keeps on its stack and in its locals: a tensor that
// lives in the graph being built, a Python constant, a container of values, or a live Python
// object (a module, function, class, ...). The concrete types below are the whole set.
type Value interface {
	// Describe is a short human description used in messages ("Tensor f32[4,8]", "int 3").
	Describe() string
}

// ConstV is an immutable Python constant: None, bool, int, float, complex, str, bytes,
// Ellipsis, NotImplemented, or a code object. Ints and floats are mirrored in Go for fast
// folding; obj is the live object (0 until needed; always set for kinds Go does not mirror).
type ConstV struct {
	Kind py.Kind
	I    int64
	F    float64
	S    string
	big  bool // an int that does not fit int64: only obj is valid
	obj  py.Obj
	// src is where a number, string or bytes value guarded by == was read (nil for code
	// constants and computed values): `is` between two of them asks about the objects, which
	// the value guard does not decide (identical guards it).
	src Source
}

var (
	noneV  = &ConstV{Kind: py.KNone}
	trueV  = &ConstV{Kind: py.KBool, I: 1}
	falseV = &ConstV{Kind: py.KBool, I: 0}
)

func intV(i int64) *ConstV     { return &ConstV{Kind: py.KInt, I: i} }
func floatV(f float64) *ConstV { return &ConstV{Kind: py.KFloat, F: f} }
func strV(s string) *ConstV    { return &ConstV{Kind: py.KStr, S: s} }
func boolV(b bool) *ConstV {
	if b {
		return trueV
	}
	return falseV
}

func (c *ConstV) Describe() string {
	switch c.Kind {
	case py.KNone:
		return "None"
	case py.KBool:
		if c.I != 0 {
			return "True"
		}
		return "False"
	case py.KInt:
		if c.big {
			return "int (large)"
		}
		return "int " + strconv.FormatInt(c.I, 10)
	case py.KFloat:
		return "float " + pyFloatRepr(c.F)
	case py.KStr:
		return "str " + strconv.Quote(c.S)
	}
	return c.Kind.String()
}

// IsNone, IsBool, ... small predicates used everywhere.
func (c *ConstV) IsNone() bool { return c.Kind == py.KNone }

// IsNumber reports bool, int (fitting int64) or float.
func (c *ConstV) IsNumber() bool {
	return c.Kind == py.KBool || (c.Kind == py.KInt && !c.big) || c.Kind == py.KFloat
}

// IsIntLike reports bool or an int fitting int64 (Python's operator.index applies).
func (c *ConstV) IsIntLike() bool { return c.Kind == py.KBool || (c.Kind == py.KInt && !c.big) }

// Float returns the number as float64 (bools and ints converted).
func (c *ConstV) Float() float64 {
	if c.Kind == py.KFloat {
		return c.F
	}
	return float64(c.I)
}

// pyFloatRepr formats a float the way Python's repr does (shortest round-trip).
func pyFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	// shortest round-trip digits; scientific below 1e-4 and from 1e16, as Python's repr
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

// TensorV is a tensor computed by (or fed into) the graph being built.
type TensorV struct {
	Node *fxgraph.Node
	Meta *primtorch.TensorMeta
	// Class is the live Python class of an input tensor (torch.Tensor, nn.Parameter, or a
	// subclass); 0 for tensors the graph computes (always plain torch.Tensor).
	Class py.Obj
	// Source and Obj are set for graph inputs: where the tensor was read from and the object.
	Source Source
	Obj    py.Obj
}

func (t *TensorV) Describe() string { return "Tensor " + t.Meta.String() }

// TupleV is a Python tuple (or torch.Size when Size is set).
type TupleV struct {
	Items  []Value
	Size   bool
	Source Source
	// Class is a structseq type (torch.return_types.max) for ops returning named tuples, or a
	// collections.namedtuple class (Named).
	Class py.Obj
	Named bool
}

// withItems is a copy of the tuple (same kind: plain, torch.Size or structseq) with new items.
func (t *TupleV) withItems(items []Value) *TupleV {
	c := *t
	c.Items = items
	return &c
}

func (t *TupleV) Describe() string {
	if t.Size {
		return fmt.Sprintf("torch.Size of %d", len(t.Items))
	}
	return fmt.Sprintf("tuple of %d", len(t.Items))
}

// ListV is a Python list. A list read from outside the frame has a Source; mutating it is a
// side effect on the user's object.
type ListV struct {
	Items  []Value
	Source Source
}

func (l *ListV) Describe() string { return fmt.Sprintf("list of %d", len(l.Items)) }

// DictV is a Python dict (insertion ordered). Keys are hashable constants or live objects.
type DictV struct {
	Keys   []Value
	Vals   []Value
	Source Source
	// Class is the dict's class when it is a dict subclass ptgo models: collections.OrderedDict,
	// collections.defaultdict, collections.Counter (0 for dict).
	Class py.Obj
	// Factory is a defaultdict's default_factory (None or a callable); nil for other dicts.
	Factory Value
}

func (d *DictV) Describe() string { return fmt.Sprintf("dict of %d", len(d.Keys)) }

// SetV is a Python set or frozenset of hashable constants.
type SetV struct {
	Items  []Value
	Frozen bool
}

func (s *SetV) Describe() string { return fmt.Sprintf("set of %d", len(s.Items)) }

// RangeV is range(start, stop, step).
type RangeV struct{ Start, Stop, Step int64 }

func (r *RangeV) Describe() string { return fmt.Sprintf("range(%d, %d, %d)", r.Start, r.Stop, r.Step) }

// Len is the number of elements.
func (r *RangeV) Len() int64 {
	if r.Step > 0 && r.Start < r.Stop {
		return (r.Stop - r.Start + r.Step - 1) / r.Step
	}
	if r.Step < 0 && r.Start > r.Stop {
		return (r.Start - r.Stop - r.Step - 1) / (-r.Step)
	}
	return 0
}

// SliceV is slice(start, stop, step); parts are ConstV (None or int) or TensorV... only constants
// are supported.
type SliceV struct{ Start, Stop, Step Value }

func (s *SliceV) Describe() string { return "slice" }

// IterV is an iterator: over a fixed sequence of values (list/tuple/range/dict iterators,
// finished generators), or lazy (zip, map, filter, itertools), producing its items on demand
// through more, as Python's do — map's function runs when an item is taken, count() never
// ends. Items holds what has been produced so far, Pos the next item to hand out. Mutating the
// underlying container during iteration is not modelled.
type IterV struct {
	Items []Value
	Pos   int
	// more produces the next item (ok=false: exhausted); nil when Items is all there is.
	more func() (v Value, ok bool, err error)
	// Class is the iterator's Python class where it matters (itertools.chain, ...); 0 otherwise.
	Class py.Obj
	// Infinite marks iterators that never end (count, cycle, repeat without times).
	Infinite bool
}

func (it *IterV) Describe() string { return "iterator" }

// maxDrain bounds how many items listing a lazy iterator may produce.
const maxDrain = 1 << 20

// next takes the next item (ok=false when the iterator is exhausted).
func (it *IterV) next() (Value, bool, error) {
	if it.Pos < len(it.Items) {
		it.Pos++
		return it.Items[it.Pos-1], true, nil
	}
	if it.more == nil {
		return nil, false, nil
	}
	v, ok, err := it.more()
	if err != nil || !ok {
		it.more = nil
		return nil, false, err
	}
	// Items produced lazily are not kept once handed out.
	it.Items, it.Pos = it.Items[:0], 0
	return v, true, nil
}

// DequeV is a collections.deque: made while tracing, or read from outside (Source set; its
// mutations are side effects replayed as d.clear(); d.extend(items)).
type DequeV struct {
	Items  []Value
	MaxLen int64 // -1: unbounded
	Source Source
	// state counts mutations that invalidate iterators (CPython's deque->state).
	state int
}

func (d *DequeV) Describe() string { return fmt.Sprintf("deque of %d", len(d.Items)) }

// push appends (left=false) or prepends an item, dropping from the other end past maxlen.
func (d *DequeV) push(v Value, left bool) {
	d.state++
	if d.MaxLen == 0 {
		return
	}
	if left {
		d.Items = append([]Value{v}, d.Items...)
		if d.MaxLen > 0 && int64(len(d.Items)) > d.MaxLen {
			d.Items = d.Items[:d.MaxLen]
		}
		return
	}
	d.Items = append(d.Items, v)
	if d.MaxLen > 0 && int64(len(d.Items)) > d.MaxLen {
		d.Items = append([]Value(nil), d.Items[int64(len(d.Items))-d.MaxLen:]...)
	}
}

// PartialV is functools.partial(Func, *Args, **Kw): made while tracing, or a live partial read
// from outside (Source set, guarded by identity).
type PartialV struct {
	Func   Value
	Args   []Value
	Kw     []kwArg
	Source Source
}

func (p *PartialV) Describe() string { return "functools.partial of " + p.Func.Describe() }

// ObjectV is an instance of a plain Python class (or of an nn.Module subclass) created while
// tracing: its attributes live in the trace until it escapes, when the transformed code
// rebuilds it (class.__new__ and the attributes, see codegen) or the capture is Unsupported.
// Attrs is its __dict__ (str keys, assignment order) — what reads and writes of
// self.__dict__ see too. Methods, properties and class constants come from the class; an
// nn.Module subclass runs torch's own Module.__init__/__setattr__/__getattr__, so its
// _parameters, _buffers and _modules tables are DictVs among the attributes. A dict subclass
// (a transformers ModelOutput, an OrderedDict subclass) keeps its items in Dict.
type ObjectV struct {
	Class  py.Obj
	Attrs  *DictV
	Dict   *DictV
	Module bool
}

func (o *ObjectV) Describe() string {
	if o.Module {
		return "module created while tracing"
	}
	return "object created while tracing"
}

// CtxFuncV is a function wrapped by a grad-mode decorator (torch.no_grad()(fn)) while tracing:
// calling it runs Fn inside the mode.
type CtxFuncV struct {
	Mode *GradModeV
	Fn   Value
}

func (c *CtxFuncV) Describe() string { return "grad-mode decorated " + c.Fn.Describe() }

// ObjV is a live Python object used as-is: modules, classes, builtins, torch functions,
// nn.Modules, dtypes, devices, and arbitrary user objects.
type ObjV struct {
	Obj    py.Obj
	Kind   py.Kind
	Source Source
	// Unspec marks an nn.Module guarded by its class instead of its identity (FrameRequest.Root):
	// its parameters and buffers are graph inputs read from their sources on every call, and
	// its submodules are unspecialised too.
	Unspec bool
}

func (o *ObjV) Describe() string { return o.Kind.String() }

// FuncV is a Python function: a live one (Obj set) or one made by MAKE_FUNCTION while tracing.
type FuncV struct {
	Obj        py.Obj // the live function, 0 for functions created during the trace
	Code       py.Obj
	Globals    py.Obj
	GlobalsSrc Source // where Globals can be read from for guards; nil if not guardable
	Name       string
	QualName   string
	Defaults   []Value
	KwDefaults *DictV
	Closure    []*CellV
	Source     Source
	// Attrs are attributes set on a function made while tracing (functools.wraps'
	// __wrapped__, torch.jit.ignore's marker), in assignment order.
	AttrNames []string
	AttrVals  []Value
}

func (f *FuncV) Describe() string { return "function " + f.QualName }

// BoundV is a method bound to a receiver: a user function with self, or a builtin method of a
// container (list.append) or tensor (x.view) — Name is then the method name.
type BoundV struct {
	Self Value
	Fn   Value  // *FuncV for Python methods; nil for builtin methods named by Name
	Name string // builtin method name
	// Desc is the C method descriptor super() found (object.__getattribute__ in a class
	// that overrides __getattribute__): the method is that descriptor bound to Self, never
	// getattr(Self, Name), which would find the override and call it again.
	Desc py.Obj
}

func (b *BoundV) Describe() string {
	if b.Fn != nil {
		return "bound method " + b.Fn.Describe()
	}
	return "method " + b.Name + " of " + b.Self.Describe()
}

// CellV is a closure cell. Contents is nil while the cell is empty.
type CellV struct {
	Contents Value
	Source   Source // for cells of the captured frame's closure (cell_contents)
	// Captured: LOAD_CLOSURE pushed the cell (a closure was made with it): a resume function
	// cannot hand it on as its contents, since that closure keeps the old cell.
	Captured bool
}

func (c *CellV) Describe() string { return "cell" }

// NullV is the NULL CPython pushes below a callable (LOAD_GLOBAL/LOAD_METHOD/PUSH_NULL).
type NullV struct{}

func (NullV) Describe() string { return "NULL" }

var nullV = NullV{}

// GradModeV is a grad-mode context manager object: torch.no_grad(), torch.enable_grad(),
// torch.set_grad_enabled(b) (already applied when Applied is set, as torch does on creation).
type GradModeV struct {
	Enabled bool
	Prev    []bool // grad mode to restore, one per active __enter__
	// Applied: torch.set_grad_enabled(b) changed grad mode when it was created; its __enter__
	// changes nothing and its __exit__ restores the mode from before the creation.
	Applied bool
	Class   py.Obj // torch.no_grad, torch.enable_grad or torch.set_grad_enabled; 0 when unknown
}

func (g *GradModeV) Describe() string {
	return fmt.Sprintf("grad mode context (enabled=%v)", g.Enabled)
}

// NoopCtxV is a context manager whose __enter__ and __exit__ change nothing in the graph:
// contextlib.nullcontext(v), torch.autocast(...) (which changes the trace's autocast state:
// Autocast). Enter is what __enter__ returns; Class, Args and Kw rebuild it.
type NoopCtxV struct {
	Class    py.Obj
	Args     []Value
	Kw       []kwArg
	Enter    Value        // nil: the manager itself
	Autocast *autocastCtx // torch.autocast's state change, nil for other managers
}

func (n *NoopCtxV) Describe() string {
	if n.Autocast != nil {
		return n.Autocast.describe()
	}
	return "context manager that changes nothing"
}

// ExitV is the bound __exit__ that BEFORE_WITH pushes for a context manager ptgo models.
type ExitV struct{ Ctx Value }

func (e *ExitV) Describe() string { return "__exit__" }

// SuperV is super(cls, obj) for method lookup.
type SuperV struct {
	Class py.Obj
	Self  Value
}

func (s *SuperV) Describe() string { return "super()" }

// LazyV is a value read from outside the frame (an argument, a global, an attribute) that has
// not been looked at yet. Realizing it installs the guards its use depends on; passing it along
// unexamined installs none.
type LazyV struct {
	Obj    py.Obj
	Source Source
	real   Value
}

func (l *LazyV) Describe() string { return "lazy " + l.Source.Name() }
