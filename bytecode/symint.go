package bytecode

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"ptgo/bytecode/py"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Dynamic shapes in capture.
//
// A graph input's dimension is either static (guarded by its exact size, as before) or
// symbolic: its size is a primtorch size symbol, the input's meta carries the symbolic layout,
// and its guard accepts any size ≥ 2 there. Which dimensions are symbolic is the policy
// (DynamicPolicy): torch.compile's — automatic (dynamic=None: a dimension whose size changed
// between two compiles of the same code becomes symbolic), all (dynamic=True), none
// (dynamic=False) — plus ptgo.mark_dynamic / mark_static (and torch._dynamo.mark_dynamic's
// attribute) on the tensor.
//
// Sizes read in Python (x.shape, x.size(1), x.numel()) are SymV values. Arithmetic on them
// stays symbolic where the result is a polynomial; comparisons decide at the hints and record a
// guard; passed to a tensor op they reach its meta function as SymInts (the op's graph node gets
// them as Const{SymInt}, evaluated at run time). Every other use realizes them: realize turns a
// SymV into its int, guarding each symbol it mentions equal to its hint (specialisation), so a
// path that does not know about symbols can never bake a size in unguarded.

// SymV is a Python int that depends on size symbols.
type SymV struct{ S primtorch.SymInt }

func (s *SymV) Describe() string {
	return fmt.Sprintf("int %s (a dynamic size, %d in this call)", s.S.String(), s.S.Hint())
}

// symValue is s as a bytecode value: an int constant when it has no symbols.
func symValue(s primtorch.SymInt) Value {
	if k, ok := s.IsConst(); ok {
		return intV(k)
	}
	return &SymV{S: s}
}

// asSym returns v's SymInt when v is an int-like constant or a SymV.
func asSym(v Value) (primtorch.SymInt, bool) {
	switch x := v.(type) {
	case *SymV:
		return x.S, true
	case *ConstV:
		if x.IsIntLike() {
			return primtorch.SymConst(x.I), true
		}
	}
	return primtorch.SymInt{}, false
}

// specializeSym is what realize does to a SymV: its value now, guarded.
func specializeSym(f *frame, s *SymV) Value {
	why := "used as a plain int"
	if f != nil {
		why = "used as a plain int at " + f.shortWhere()
	}
	return intV(s.S.Specialize(why))
}

// symBinary folds int arithmetic with a SymV operand; ok is false when the result is not a
// polynomial (the caller realizes the operands and computes with ints).
func symBinary(op string, a, b Value) (Value, bool) {
	x, okA := asSym(a)
	y, okB := asSym(b)
	_, symA := a.(*SymV)
	_, symB := b.(*SymV)
	if !okA || !okB || !(symA || symB) {
		return nil, false
	}
	switch op {
	case "add":
		return symValue(x.Add(y)), true
	case "sub":
		return symValue(x.Sub(y)), true
	case "mul":
		return symValue(x.Mul(y)), true
	case "floordiv":
		if k, ok := y.IsConst(); ok && k > 0 {
			// a polynomial, or one with a derived symbol floor(r / k) (primtorch.SymDef)
			if q, ok := x.FloorDiv(k); ok {
				return symValue(q), true
			}
		}
		if q, ok := x.DivExact(y); ok {
			// exact polynomial division: floor division agrees
			return symValue(q), true
		}
	case "mod":
		if k, ok := y.IsConst(); ok && k > 0 {
			if r, ok := x.Mod(k); ok {
				return symValue(r), true
			}
		}
	}
	return nil, false
}

// symCompare decides a comparison with a SymV operand at the hints, guarding the outcome.
func symCompare(f *frame, op string, a, b Value) (Value, bool) {
	x, okA := asSym(a)
	y, okB := asSym(b)
	_, symA := a.(*SymV)
	_, symB := b.(*SymV)
	if !okA || !okB || !(symA || symB) {
		return nil, false
	}
	env := x.Env()
	if env == nil {
		env = y.Env()
	}
	env.Why = f.shortWhere()
	defer func() { env.Why = "" }()
	switch op {
	case "eq":
		return boolV(x.EqualHint(y)), true
	case "ne":
		return boolV(!x.EqualHint(y)), true
	case "ge":
		return boolV(x.GeHint(y)), true
	case "gt":
		return boolV(x.GtHint(y)), true
	case "le":
		return boolV(y.GeHint(x)), true
	case "lt":
		return boolV(y.GtHint(x)), true
	}
	return nil, false
}

// DynamicMode is the dynamic= option of ptgo.compile.
type DynamicMode int

const (
	DynamicAuto   DynamicMode = iota // None: automatic dynamic after a size changes
	DynamicAll                       // True: every dimension (of size ≥ 2) symbolic from the start
	DynamicNever                     // False: static shapes (mark_dynamic still applies)
	DynamicStatic                    // a retry after the backend refused symbolic sizes: nothing symbolic
)

// dimHistory is what automatic dynamic remembers of one input of one code object: the sizes of
// the last compile and the dimensions already made symbolic.
type dimHistory struct {
	sizes   []int64
	floats  []float64    // a float argument's value at the last compile (symfloat.go)
	dynamic map[int]bool // by dim; offsetDim for the storage offset
	offset  int64
	seen    bool
}

// offsetDim is the pseudo-dim of a tensor's storage offset in dynamic-dims maps and symbol
// sources (a batch sliced from a bigger tensor, data[i:i+16], has an offset that changes).
const offsetDim = -2

// maxDimHistory bounds the sources remembered per code object, maxCodeHistory the code objects.
const (
	maxDimHistory  = 256
	maxCodeHistory = 4096
)

// dimHistories is automatic dynamic's memory across compiles, by code (file, first line,
// qualified name) and input source. Compiles hold the GIL, which serialises access; the mutex
// makes that independent of the caller.
var dimHistories = struct {
	sync.Mutex
	byCode map[string]*codeDims
}{byCode: map[string]*codeDims{}}

// codeDims is automatic dynamic's memory of one code object.
type codeDims struct {
	inputs map[string]*dimHistory
	// staticOnly is why the backend refused this code's symbolic graph ("" while it did not):
	// later compiles capture it static directly instead of tracing twice.
	staticOnly string
}

func codeHistory(c *Code) *codeDims {
	key := fmt.Sprintf("%s:%d:%s", c.Filename, c.FirstLineNo, c.QualName)
	dimHistories.Lock()
	defer dimHistories.Unlock()
	h := dimHistories.byCode[key]
	if h == nil {
		if len(dimHistories.byCode) >= maxCodeHistory {
			dimHistories.byCode = map[string]*codeDims{}
		}
		h = &codeDims{inputs: map[string]*dimHistory{}}
		dimHistories.byCode[key] = h
	}
	return h
}

// history is the history of the input read from key, made on first use (nil past
// maxDimHistory inputs). The caller holds dimHistories.
func (cd *codeDims) history(key string) *dimHistory {
	h := cd.inputs[key]
	if h == nil && len(cd.inputs) < maxDimHistory {
		h = &dimHistory{dynamic: map[int]bool{}}
		cd.inputs[key] = h
	}
	return h
}

// RefuseDynamic remembers that the backend could not compile code's graph with symbolic sizes,
// so its later compiles are static from the start.
func RefuseDynamic(c *Code, reason string) {
	h := codeHistory(c)
	dimHistories.Lock()
	h.staticOnly = reason
	dimHistories.Unlock()
}

// ResetDynamicHistory forgets what automatic dynamic learnt (ptgo.reset()).
func ResetDynamicHistory() {
	dimHistories.Lock()
	dimHistories.byCode = map[string]*codeDims{}
	dimHistories.Unlock()
}

// dynamicDims decides which dims of the input read from src are symbolic in this trace, and
// updates the automatic-dynamic history. marked/static are the dims mark_dynamic/mark_static
// named on the tensor.
func (t *Tracer) dynamicDims(src Source, m *primtorch.TensorMeta, marked, static map[int]bool) map[int]bool {
	mode := t.dynamic
	out := map[int]bool{}
	if mode == DynamicStatic || m.Dim() == 0 {
		return out
	}
	cd := codeHistory(t.rootCode.code)
	dimHistories.Lock()
	defer dimHistories.Unlock()
	h := cd.history(src.Name())
	refused := cd.staticOnly != ""
	for d, s := range m.Shape {
		want := marked[d]
		switch mode {
		case DynamicAll:
			want = true
		case DynamicAuto:
			if h != nil && (h.dynamic[d] || (len(h.sizes) == len(m.Shape) && h.sizes[d] != s)) {
				if !h.dynamic[d] {
					logs.Printf(logs.Dynamic, "%s: dimension %d of %s became dynamic: its size changed from %d to %d since the last compile",
						t.rootCode.code.QualName, d, readableName(src), h.sizes[d], s)
				}
				want = true
				h.dynamic[d] = true
			}
		}
		if static[d] || refused {
			want = false
		}
		if want && s >= 2 {
			out[d] = true
		}
	}
	// the storage offset: symbolic once it changed (or with dynamic=True) and while it is ≥ 2
	wantOff := mode == DynamicAll
	if h != nil && mode == DynamicAuto {
		if h.dynamic[offsetDim] || (h.seen && h.offset != m.Offset) {
			if !h.dynamic[offsetDim] {
				logs.Printf(logs.Dynamic, "%s: the storage offset of %s became dynamic: it changed from %d to %d since the last compile",
					t.rootCode.code.QualName, readableName(src), h.offset, m.Offset)
			}
			wantOff = true
			h.dynamic[offsetDim] = true
		}
	}
	if wantOff && m.Offset >= 2 && !refused {
		out[offsetDim] = true
	}
	if h != nil {
		h.sizes = append([]int64(nil), m.Shape...)
		h.offset, h.seen = m.Offset, true
	}
	if _, dense := primtorch.DenseOrder(m.Shape, m.Strides); len(out) > 0 && (!dense || m.Dim() > maxMaskDims) {
		logs.Printf(logs.Dynamic, "%s: %s stays static: dynamic sizes need a dense input (contiguous in some dim order: row-major, channels-last), not strides %v",
			t.rootCode.code.QualName, readableName(src), m.Strides)
		return map[int]bool{}
	}
	return out
}

// intInput makes a Python int argument of the frame a size symbol when the policy says so (its
// value changed since the last compile, or dynamic=True) and it is ≥ 2: the graph gets an int
// placeholder, the guard checks type(n) is int and n >= 2. Otherwise nil (a constant, guarded
// by value as before).
func (t *Tracer) intInput(o py.Obj, c Value, src Source) *SymV {
	cv, ok := c.(*ConstV)
	if !ok || cv.big || t.dynamic == DynamicStatic || t.dynamic == DynamicNever {
		return nil
	}
	if !scalarSourceDynamic(src) {
		return nil
	}
	want, cd := t.scalarArgDynamic(src, "int", func(h *dimHistory) (string, bool) {
		differs := len(h.sizes) == 1 && h.sizes[0] != cv.I
		if differs {
			return fmt.Sprintf("%d to %d", h.sizes[0], cv.I), true
		}
		return "", false
	}, func(h *dimHistory) { h.sizes = []int64{cv.I} })
	dimHistories.Lock()
	refused := cd.staticOnly != ""
	dimHistories.Unlock()
	if !want || refused || cv.I < 2 {
		return nil
	}
	t.ensureShapes()
	t.guards.Type(src, t.api.TypeOf(o), "int")
	sym, shared := t.symByHint[cv.I]
	if shared {
		// duck shaping, as for sizes: an int equal to a size is that size (view(n, -1) of a
		// tensor with n rows), guarded equal
		id, _, _, _ := sym.Linear()
		first := t.symSources[id]
		t.guards.SymEqualSizes(first.src, first.dim, src, -1)
	} else {
		sym = t.shapes.NewSymbol(cv.I, src.Name())
		t.symByHint[cv.I] = sym
		t.setSymSource(sym, symSource{src: src, dim: -1})
		t.shapes.AddGuard(primtorch.SymGuard{Left: sym, Right: primtorch.SymConst(2), Rel: primtorch.RelGe, Why: "a dynamic int argument"})
	}
	id, _, _, _ := sym.Linear()
	logs.Printf(logs.Dynamic, "%s: s%d = %s (an int argument, %d in this call)", t.rootCode.code.QualName, id, readableName(src), cv.I)
	node := t.graph.AddPlaceholder(placeholderName(src), sym)
	t.inputs = append(t.inputs, &TensorV{Node: node, Source: src, Obj: o, Meta: &primtorch.TensorMeta{}})
	return &SymV{S: sym}
}

// scalarArgDynamic is automatic dynamic's decision for a Python int or float read from src (a
// frame argument, or a place scalarSourceDynamic accepts) (what names its kind in the log): dynamic in this trace when dynamic=True
// or when its value changed since the last compile (changed compares the history's value with
// this call's and says how), remembered with remember. It returns the code's history too.
func (t *Tracer) scalarArgDynamic(src Source, what string, changed func(*dimHistory) (string, bool), remember func(*dimHistory)) (bool, *codeDims) {
	cd := codeHistory(t.rootCode.code)
	dimHistories.Lock()
	defer dimHistories.Unlock()
	h := cd.history(t.scalarHistoryKey(src))
	// dynamic=True makes the frame's own int and float arguments symbolic from the start; a
	// number read from an attribute or an item (a module's configuration: num_heads, eps) only
	// once its value changed, as torch keeps nn.Module ints specialised
	_, isArg := src.(*LocalSource)
	want := t.dynamic == DynamicAll && isArg
	if h != nil {
		if how, ok := changed(h); ok && !h.dynamic[0] {
			kind := what + " argument"
			if !isArg {
				kind = what
			}
			logs.Printf(logs.Dynamic, "%s: %s %s became dynamic: it changed from %s since the last compile",
				t.rootCode.code.QualName, kind, readableName(src), how)
			h.dynamic[0] = true
		}
		want = want || h.dynamic[0]
		remember(h)
	}
	return want, cd
}

func (t *Tracer) ensureShapes() {
	if t.shapes == nil {
		t.shapes = primtorch.NewShapeEnv()
		t.symByHint = map[int64]primtorch.SymInt{}
		t.graph.Shapes = t.shapes
	}
}

// makeSymbolic gives the input meta m symbols for dims dyn (one symbol per distinct size, as
// torch's duck shaping does: equal sizes share a symbol, and the guard keeps them equal). The
// returned function installs those equality guards; call it after the tensor's own guard (the
// guard reads sizes of tensors already checked to be tensors).
func (t *Tracer) makeSymbolic(src Source, m *primtorch.TensorMeta, dyn map[int]bool) func() {
	var equal []func()
	if len(dyn) == 0 {
		return func() {}
	}
	t.ensureShapes()
	offset := primtorch.SymConst(m.Offset)
	if dyn[offsetDim] {
		offset = t.shapes.NewSymbol(m.Offset, fmt.Sprintf("%s.storage_offset()", src.Name()))
		id, _, _, _ := offset.Linear()
		t.setSymSource(offset, symSource{src: src, dim: offsetDim})
		t.shapes.AddGuard(primtorch.SymGuard{Left: offset, Right: primtorch.SymConst(2), Rel: primtorch.RelGe, Why: "a dynamic storage offset"})
		logs.Printf(logs.Dynamic, "%s: s%d = %s.storage_offset() (%d in this call)", t.rootCode.code.QualName, id, readableName(src), m.Offset)
	}
	sizes := make([]primtorch.SymInt, m.Dim())
	for d, s := range m.Shape {
		if !dyn[d] {
			sizes[d] = primtorch.SymConst(s)
			continue
		}
		sym, ok := t.symByHint[s]
		if !ok {
			sym = t.shapes.NewSymbol(s, fmt.Sprintf("%s.size(%d)", src.Name(), d))
			t.symByHint[s] = sym
			id, _, _, _ := sym.Linear()
			t.setSymSource(sym, symSource{src: src, dim: d})
			logs.Printf(logs.Dynamic, "%s: s%d = %s.size(%d) (%d in this call)", t.rootCode.code.QualName, id, readableName(src), d, s)
		} else {
			id, _, _, _ := sym.Linear()
			first, d := t.symSources[id], d
			equal = append(equal, func() { t.guards.SymEqualSizes(first.src, first.dim, src, d) })
		}
		sizes[d] = sym
	}
	// dense in the input's own dim order (dynamicDims admits no other): row-major or
	// channels-last strides as products of the sizes, which the tensor guard checks
	order, _ := primtorch.DenseOrder(m.Shape, m.Strides)
	m.SetSymLayout(sizes, primtorch.SymStridesInOrder(sizes, order), offset)
	return func() {
		for _, f := range equal {
			f()
		}
	}
}

// symSource is where symbol k's value is read: dim of the tensor at src (src nil: a derived
// symbol, primtorch.SymDef, computed from others).
type symSource struct {
	src Source
	dim int
}

// setSymSource records where symbol sym is read; symbols made in between (derived ones, which
// the ShapeEnv makes for a floor division) keep an entry with no source.
func (t *Tracer) setSymSource(sym primtorch.SymInt, src symSource) {
	id, _, _, _ := sym.Linear()
	for len(t.symSources) <= id {
		t.symSources = append(t.symSources, symSource{dim: -1})
	}
	t.symSources[id] = src
}

// installShapeGuards turns the guards the trace assumed about symbols into guard instructions.
func (t *Tracer) installShapeGuards() {
	if t.shapes == nil {
		return
	}
	for _, g := range t.shapes.Guards() {
		t.guards.Sym(g, t.symSources)
	}
	installFloatGuards(t.guards, t.shapes, t.floatSources)
}

// dynamicMarks reads the dims mark_dynamic / mark_static (and torch._dynamo.mark_dynamic) put
// on a tensor.
func (t *Tracer) dynamicMarks(o py.Obj) (marked, static map[int]bool) {
	read := func(attr string) map[int]bool {
		v, err := t.api.GetAttr(o, attr)
		if err != nil {
			return nil
		}
		out := map[int]bool{}
		lst, err := t.api.Call(t.env.Known("builtins.sorted"), []py.Obj{v}, nil)
		if err != nil {
			return nil
		}
		n, err := t.api.Len(lst)
		if err != nil {
			return nil
		}
		for i := 0; i < n; i++ {
			e, err := t.api.Index(lst, i)
			if err != nil {
				continue
			}
			if d, err := t.api.Int(e); err == nil {
				out[int(d)] = true
			}
		}
		return out
	}
	marked = read("_ptgo_dynamic_dims")
	for d := range read("_dynamo_dynamic_indices") {
		if marked == nil {
			marked = map[int]bool{}
		}
		marked[d] = true
	}
	return marked, read("_ptgo_static_dims")
}

// symDims describes the symbolic dims of m for messages: "dims 0, 1".
func symDims(dyn map[int]bool) string {
	var ds []int
	for d := range dyn {
		ds = append(ds, d)
	}
	sort.Ints(ds)
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, ", ")
}

// args0SymF is the SymF that is a builtin's only argument.
func args0SymF(args []Value, kw []kwArg) (*SymF, bool) {
	if len(args) != 1 || len(kw) != 0 {
		return nil, false
	}
	s, ok := args[0].(*SymF)
	return s, ok
}

// realizeKeepSym is realize for paths that handle SymV themselves.
func (t *Tracer) realizeKeepSym(f *frame, v Value) (Value, error) {
	r, err := t.realizeLazy(f, v)
	if s, isSym := r.(*SymF); isSym && err == nil {
		return specializeFloat(f, s)
	}
	return r, err
}

// staticSize is dim d's size as a plain int, specialising it when symbolic (len(x), iterating
// over a tensor: the count of Python values depends on it).
func staticSize(f *frame, m *primtorch.TensorMeta, d int) int64 {
	if m.Sym == nil {
		return m.Shape[d]
	}
	return m.Sym.Sizes[d].Specialize("a Python count from a size at " + f.shortWhere())
}

// specializeIn specialises every symbol a bytecode value mentions (tensor metas, SymVs,
// containers).
func specializeIn(v Value, why string) {
	switch x := v.(type) {
	case *TensorV:
		primtorch.SpecializeValue(x.Meta, why)
	case *SymV:
		x.S.Specialize(why)
	case *TupleV:
		for _, it := range x.Items {
			specializeIn(it, why)
		}
	case *ListV:
		for _, it := range x.Items {
			specializeIn(it, why)
		}
	}
}

// symBuiltinArgs prepares dynamic sizes among a builtin's arguments (in place): int(n) of a
// dynamic size is itself (done); type() and isinstance() take it as it is (its type is int);
// every other builtin gets the value of this call, guarded (range(n), min, abs, ...).
func (t *Tracer) symBuiltinArgs(f *frame, name string, args []Value, kw []kwArg) (Value, bool, error) {
	if name == "type" || name == "isinstance" || name == "int" {
		for i, a := range args {
			if l, ok := a.(*LazyV); ok {
				if r, err := t.realizeLazy(f, l); err == nil {
					_, isSym := r.(*SymV)
					_, isFloat := r.(*SymF)
					if isSym || isFloat && name != "int" {
						args[i] = r
					}
				}
			}
		}
	}
	if name == "int" && len(args) == 1 && len(kw) == 0 {
		if s, ok := args[0].(*SymV); ok {
			return s, true, nil
		}
	}
	if name == "float" || name == "abs" || name == "int" || name == "round" || name == "min" || name == "max" {
		for i, a := range args {
			if l, ok := a.(*LazyV); ok {
				if r, err := t.realizeLazy(f, l); err == nil {
					if _, isFloat := r.(*SymF); isFloat {
						args[i] = r
					}
				}
			}
		}
	}
	if s, ok := args0SymF(args, kw); ok {
		switch name {
		case "float":
			return s, true, nil // float(x) of a float is x
		case "abs":
			if r, ok := t.floatUnary(f, "abs", s); ok {
				return r, true, nil
			}
		case "int", "round":
			if s.Expr != nil {
				if r, ok := t.floatToInt(f, name, s); ok {
					return r, true, nil
				}
			}
		}
	}
	if (name == "min" || name == "max") && len(args) == 2 && len(kw) == 0 {
		a, errA := t.realizeLazy(f, args[0])
		b, errB := t.realizeLazy(f, args[1])
		if errA == nil && errB == nil {
			if r, ok := t.floatMinMax(f, name, a, b); ok {
				return r, true, nil
			}
		}
	}
	var err error
	for i, a := range args {
		if s, ok := a.(*SymV); ok {
			if name != "type" && name != "isinstance" {
				args[i] = specializeSym(f, s)
			}
		}
		if s, ok := a.(*SymF); ok && name != "type" && name != "isinstance" {
			if args[i], err = specializeFloat(f, s); err != nil {
				return nil, false, err
			}
		}
	}
	for i := range kw {
		if s, ok := kw[i].Val.(*SymV); ok {
			kw[i].Val = specializeSym(f, s)
		}
		if s, ok := kw[i].Val.(*SymF); ok {
			if kw[i].Val, err = specializeFloat(f, s); err != nil {
				return nil, false, err
			}
		}
	}
	return nil, false, nil
}

// scalarSourceDynamic says whether a Python int or float read from src may become symbolic
// under automatic dynamic: a frame argument, or an item or attribute reached from one, from a
// global or from a closure cell (torch.optim's state['step'], a module's self.step) — a place
// the transformed code reads again on every call, so the guard and the graph's placeholder
// read the same source. A dict key (the dict's lookup depends on its value) and global state a
// call returns (CallSource) stay constants guarded by value.
func scalarSourceDynamic(src Source) bool {
	switch placeRoot(src).(type) {
	case *LocalSource, *GlobalSource, *ClosureSource:
		return true
	case *ConstSource:
		// an object the guards hold (a module's globals dict): its items are read per call
		return true
	}
	return false
}

// scalarHistoryKey is the automatic-dynamic history key of a number read from src: its name,
// and for a place reached from a module argument (L['self'].step) that module's identity too.
// Instances of one module class share their forward's code: a configuration int that differs
// between instances (TransformerEncoderLayer's activation code, 1 in one layer and 2 in the
// next) is no value that changes, and stays specialised; a counter the same module updates is.
func (t *Tracer) scalarHistoryKey(src Source) string {
	key := src.Name()
	if l, ok := placeRoot(src).(*LocalSource); ok && l.Index < len(t.args) && t.api.Kind(t.args[l.Index]) == py.KNNModule {
		return fmt.Sprintf("%s@%x", key, uintptr(t.args[l.Index]))
	}
	return key
}
