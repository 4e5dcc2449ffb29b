package bytecode

import (
	"fmt"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// constant wraps co_consts[i] (constants need no guards).
func (t *Tracer) constant(ci *codeInfo, i int) (Value, error) {
	if v := ci.constVals[i]; v != nil {
		return v, nil
	}
	v, err := t.constFromObj(ci.consts[i])
	if err != nil {
		return nil, err
	}
	ci.constVals[i] = v
	return v, nil
}

// constFromObj wraps an immutable Python value without guards: code constants and the results
// of constant folding.
func (t *Tracer) constFromObj(o py.Obj) (Value, error) {
	api := t.api
	switch k := api.Kind(o); k {
	case py.KNone:
		return noneV, nil
	case py.KBool:
		n, _ := api.Int(o)
		return boolV(n != 0), nil
	case py.KInt:
		n, err := api.Int(o)
		if err != nil {
			return &ConstV{Kind: py.KInt, big: true, obj: o}, nil
		}
		return &ConstV{Kind: py.KInt, I: n, obj: o}, nil
	case py.KFloat:
		x, _ := api.Float(o)
		return &ConstV{Kind: py.KFloat, F: x, obj: o}, nil
	case py.KStr:
		s, err := api.Str(o)
		if err != nil {
			return nil, err
		}
		return &ConstV{Kind: py.KStr, S: s, obj: o}, nil
	case py.KBytes, py.KComplex, py.KEllipsis, py.KCode:
		return &ConstV{Kind: k, obj: o}, nil
	case py.KTuple:
		if !t.isExact(o, "builtins.tuple") {
			return t.objValue(o, nil), nil
		}
		n, err := api.Len(o)
		if err != nil {
			return nil, err
		}
		items := make([]Value, n)
		for i := range items {
			it, err := api.Index(o, i)
			if err != nil {
				return nil, err
			}
			if items[i], err = t.constFromObj(it); err != nil {
				return nil, err
			}
		}
		return &TupleV{Items: items}, nil
	case py.KFrozenSet, py.KSet:
		items, err := t.iterObj(o)
		if err != nil {
			return nil, err
		}
		s := &SetV{Frozen: k == py.KFrozenSet}
		for _, it := range items {
			v, err := t.constFromObj(it)
			if err != nil {
				return nil, err
			}
			s.Items = append(s.Items, v)
		}
		return s, nil
	}
	return t.objValue(o, nil), nil
}

// iterObj lists the items of a live iterable (for sets and frozensets of constants).
func (t *Tracer) iterObj(o py.Obj) ([]py.Obj, error) {
	l, err := t.api.Call(t.env.Known("builtins.list"), []py.Obj{o}, nil)
	if err != nil {
		return nil, err
	}
	n, err := t.api.Len(l)
	if err != nil {
		return nil, err
	}
	out := make([]py.Obj, n)
	for i := range out {
		if out[i], err = t.api.Index(l, i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *Tracer) isExact(o py.Obj, typePath string) bool {
	return t.api.TypeOf(o) == t.env.Known(typePath)
}

// objValue wraps a live object as ObjV, FuncV or BoundV without installing guards.
func (t *Tracer) objValue(o py.Obj, src Source) Value {
	return &ObjV{Obj: o, Kind: t.api.Kind(o), Source: src}
}

// lazy wraps an object read from src; guards are installed when it is used.
func (t *Tracer) lazy(o py.Obj, src Source) Value {
	return &LazyV{Obj: o, Source: src}
}

// realize turns a LazyV into its real value (installing guards); other values pass through.
func (t *Tracer) realize(f *frame, v Value) (Value, error) {
	r, err := t.realizeLazy(f, v)
	if s, isSym := r.(*SymV); isSym && err == nil {
		return specializeSym(f, s), nil
	}
	if s, isSym := r.(*SymF); isSym && err == nil {
		return specializeFloat(f, s)
	}
	return r, err
}

// realizeNumbers is realize that leaves dynamic sizes (SymV) and floats (SymF) symbolic, for
// the paths that take both: an op's arguments (record), binary operators.
func (t *Tracer) realizeNumbers(f *frame, v Value) (Value, error) { return t.realizeLazy(f, v) }

// realizeLazy is realize that leaves dynamic sizes (SymV) and floats (SymF) symbolic.
func (t *Tracer) realizeLazy(f *frame, v Value) (Value, error) {
	l, ok := v.(*LazyV)
	if !ok {
		return v, nil
	}
	if l.real != nil {
		return l.real, nil
	}
	r, err := t.wrapLive(f, l.Obj, l.Source)
	if err != nil {
		return nil, err
	}
	l.real = r
	return r, nil
}

func (t *Tracer) realizeAll(f *frame, vs []Value) error {
	for i, v := range vs {
		r, err := t.realize(f, v)
		if err != nil {
			return err
		}
		vs[i] = r
	}
	return nil
}

// wrapLive makes a value for a live object read from src and installs the guards that make
// the trace valid for later calls: constants are specialised (==), identities checked (is),
// containers checked by type and length, tensors by their metadata. src == nil means the
// object cannot change between calls (guards are not needed).
func (t *Tracer) wrapLive(f *frame, o py.Obj, src Source) (Value, error) {
	api := t.api
	g := t.guards
	if v, ok := t.realized[o]; ok && src != nil {
		if _, isTensor := v.(*TensorV); !isTensor {
			// The same mutable object reached twice is one value; the identity holds because
			// both sources are guarded to the same object.
			if sv := sourceOf(v); sv != nil && sourceKey(sv) != sourceKey(src) {
				g.Same(src, sv)
			}
			return v, nil
		}
	}
	k := api.Kind(o)
	var v Value
	switch k {
	case py.KNone:
		if src != nil {
			g.ID(src, o, "None")
		}
		return noneV, nil
	case py.KBool, py.KInt, py.KFloat, py.KStr, py.KBytes, py.KComplex, py.KEllipsis:
		c, err := t.constFromObj(o)
		if err != nil {
			return nil, err
		}
		if k == py.KInt && src != nil {
			if sv := t.intInput(o, c, src); sv != nil {
				return sv, nil
			}
		}
		if k == py.KFloat && src != nil {
			if sf := t.floatInput(o, c, src); sf != nil {
				return sf, nil
			}
		}
		if src != nil {
			g.Eq(src, o, api.Repr(o))
			if cv, ok := c.(*ConstV); ok && cv.obj == o && cv != trueV && cv != falseV && cv != noneV {
				cv.src = src
			}
		}
		return c, nil
	case py.KTensor:
		if src == nil {
			return nil, f.unsupported("keep tensors in arguments, attributes or globals", "a tensor constant")
		}
		return t.tensorInput(f, o, src)
	case py.KTuple, py.KList:
		typ := api.TypeOf(o)
		size := typ == t.env.Known("torch.Size")
		exact := typ == t.env.Known("builtins.tuple") || typ == t.env.Known("builtins.list")
		if !exact && !size && k == py.KTuple && t.isNamedTuple(typ) {
			n, err := api.Len(o)
			if err != nil {
				return nil, err
			}
			items := make([]Value, n)
			for i := range items {
				it, err := api.Index(o, i)
				if err != nil {
					return nil, err
				}
				if src == nil {
					if items[i], err = t.wrapLive(f, it, nil); err != nil {
						return nil, err
					}
				} else {
					items[i] = t.lazy(it, &IndexSource{Base: src, Index: i})
				}
			}
			if src != nil {
				g.Type(src, typ, t.qualName(typ))
			}
			v = &TupleV{Items: items, Source: src, Class: typ, Named: true}
			break
		}
		if !exact && !size {
			if src != nil {
				g.Type(src, typ, api.Repr(typ))
			}
			v = t.objValue(o, src)
			break
		}
		n, err := api.Len(o)
		if err != nil {
			return nil, err
		}
		if !size && k == py.KTuple && n <= 16 && t.allScalars(o, n) {
			// A tuple of numbers and strings (kernel sizes, strides, shapes): one == guard.
			if src != nil {
				g.Eq(src, o, api.Repr(o))
			}
			return t.constFromObj(o)
		}
		if src != nil {
			if size {
				g.Eq(src, o, api.Repr(o))
			} else {
				g.Type(src, typ, k.String())
				g.Len(src, n)
			}
		}
		items := make([]Value, n)
		for i := range items {
			it, err := api.Index(o, i)
			if err != nil {
				return nil, err
			}
			if size || src == nil {
				if items[i], err = t.constFromObj(it); err != nil {
					return nil, err
				}
			} else {
				items[i] = t.lazy(it, &IndexSource{Base: src, Index: i})
			}
		}
		if k == py.KList {
			v = &ListV{Items: items, Source: src}
		} else {
			v = &TupleV{Items: items, Size: size, Source: src}
		}
	case py.KDict:
		d, err := t.wrapDict(f, o, src)
		if err != nil {
			return nil, err
		}
		v = d
	case py.KFunction:
		if src != nil {
			g.ID(src, o, "function "+t.qualName(o))
		}
		fn, err := t.funcFromObj(f, o, src)
		if err != nil {
			return nil, err
		}
		v = fn
	case py.KMethod:
		if src != nil {
			g.Type(src, api.TypeOf(o), "method")
		}
		self, err := api.GetAttr(o, "__self__")
		if err != nil {
			return nil, err
		}
		fn, err := api.GetAttr(o, "__func__")
		if err != nil {
			return nil, err
		}
		var selfSrc, fnSrc Source
		if src != nil {
			selfSrc, fnSrc = &AttrSource{Base: src, Attr: "__self__"}, &AttrSource{Base: src, Attr: "__func__"}
		}
		fv, err := t.wrapLive(f, fn, fnSrc)
		if err != nil {
			return nil, err
		}
		return &BoundV{Self: t.lazy(self, selfSrc), Fn: fv}, nil
	case py.KNNModule:
		if src != nil && t.unspecializedModule(src) {
			g.Type(src, api.TypeOf(o), t.typeName(o))
			v = &ObjV{Obj: o, Kind: k, Source: src, Unspec: true}
			break
		}
		if src != nil {
			g.ID(src, o, "module "+t.typeName(o))
		}
		v = t.objValue(o, src)
	case py.KModule, py.KType, py.KBuiltin, py.KMethodDescriptor, py.KDType, py.KCode:
		if src != nil {
			g.ID(src, o, t.shortRepr(o))
		}
		v = t.objValue(o, src)
	case py.KDevice:
		if src != nil {
			g.Eq(src, o, api.Repr(o))
		}
		v = t.objValue(o, src)
	case py.KRange, py.KSlice:
		// range(start, stop, step) and slice(start, stop, step): constants, guarded by ==.
		parts := make([]*ConstV, 3)
		for i, name := range []string{"start", "stop", "step"} {
			a, err := api.GetAttr(o, name)
			if err != nil {
				return nil, err
			}
			c, err := t.constFromObj(a)
			if err != nil {
				return nil, err
			}
			parts[i] = c.(*ConstV)
		}
		if src != nil {
			g.Eq(src, o, api.Repr(o))
		}
		if k == py.KRange {
			return &RangeV{Start: parts[0].I, Stop: parts[1].I, Step: parts[2].I}, nil
		}
		return &SliceV{Start: parts[0], Stop: parts[1], Step: parts[2]}, nil
	case py.KSet, py.KFrozenSet:
		c, err := t.constFromObj(o)
		if err != nil {
			return nil, err
		}
		if src != nil {
			g.Eq(src, o, api.Repr(o))
		}
		return c, nil
	default:
		if api.TypeOf(o) == t.env.Known("functools.partial") {
			return t.wrapPartial(f, o, src)
		}
		if api.TypeOf(o) == t.env.Known("collections.deque") {
			d, err := t.wrapDeque(f, o, src)
			if err != nil {
				return nil, err
			}
			v = d
			break
		}
		if gm := t.gradModeOf(o); gm != nil {
			if src != nil {
				g.Type(src, api.TypeOf(o), t.typeName(o))
			}
			return gm, nil
		}
		if src != nil {
			g.Type(src, api.TypeOf(o), t.typeName(o))
		}
		v = t.objValue(o, src)
	}
	if src != nil {
		t.realized[o] = v
	}
	return v, nil
}

// unspecializedModule reports whether a module read from src is guarded by class rather than
// identity: it is reached from an argument of the captured frame that is not the module the
// user compiled (a layer's forward captured as a frame of its own, a module passed to a
// compiled function). Modules read from globals, closures and the compiled module itself keep
// their identity (their parameters stay get_attr constants, which freezing needs).
func (t *Tracer) unspecializedModule(src Source) bool {
	l, ok := placeRoot(src).(*LocalSource)
	return ok && l.Index < len(t.args) && t.args[l.Index] != t.rootModule
}

// placeRoot is the source a place is reached from: src with its attribute reads, dict items and
// list indexing taken off (L['self'].layers[0].step -> L['self']).
func placeRoot(src Source) Source {
	for {
		switch s := src.(type) {
		case *AttrSource:
			src = s.Base
		case *DictItemSource:
			src = s.Base
		case *IndexSource:
			src = s.Base
		default:
			return src
		}
	}
}

// isNamedTuple reports a collections.namedtuple class (a tuple subclass with _fields and _make).
func (t *Tracer) isNamedTuple(typ py.Obj) bool {
	_, _, _, hasFields, _ := t.api.GetAttrStatic(typ, "_fields")
	_, _, _, hasMake, _ := t.api.GetAttrStatic(typ, "_make")
	return hasFields && hasMake
}

// allScalars reports whether the first n items of a tuple are None, bools, ints, floats or strs.
func (t *Tracer) allScalars(o py.Obj, n int) bool {
	for i := 0; i < n; i++ {
		it, err := t.api.Index(o, i)
		if err != nil {
			return false
		}
		switch t.api.Kind(it) {
		case py.KNone, py.KBool, py.KInt, py.KFloat, py.KStr:
		default:
			return false
		}
	}
	return true
}

func sourceOf(v Value) Source {
	switch v := v.(type) {
	case *ListV:
		return v.Source
	case *TupleV:
		return v.Source
	case *DictV:
		return v.Source
	case *ObjV:
		return v.Source
	case *FuncV:
		return v.Source
	case *TensorV:
		return v.Source
	case *DequeV:
		return v.Source
	}
	return nil
}

func (t *Tracer) wrapDict(f *frame, o py.Obj, src Source) (Value, error) {
	api := t.api
	typ := api.TypeOf(o)
	exact := typ == t.env.Known("builtins.dict")
	ordered := typ == t.env.Known("collections.OrderedDict") || typ == t.env.Known("collections.defaultdict") ||
		typ == t.env.Known("collections.Counter")
	if !exact && !ordered {
		if src != nil {
			t.guards.Type(src, typ, t.typeName(o))
		}
		return t.objValue(o, src), nil
	}
	d, err := t.dictContents(f, o, src)
	if err != nil {
		return nil, err
	}
	if ordered {
		d.Class = typ
	}
	if typ == t.env.Known("collections.defaultdict") {
		fac, err := api.GetAttr(o, "default_factory")
		if err != nil {
			return nil, err
		}
		d.Factory = t.lazyOrLive(f, fac, childSource(src, "default_factory"))
	}
	return d, nil
}

// dictContents reads the items of a live dict (or dict subclass) o into a DictV, guarded
// through src: its type, its keys in order, its values where they are read. An OrderedDict
// keeps its own order (move_to_end changes it, not the dict's storage): its keys are taken and
// guarded in iteration order, and one whose order differs from its storage's is refused (its
// values are read from the storage by key).
func (t *Tracer) dictContents(f *frame, o py.Obj, src Source) (*DictV, error) {
	api := t.api
	typ := api.TypeOf(o)
	exact := typ == t.env.Known("builtins.dict")
	keys, vals := api.DictItems(o)
	byIter := t.isSubclass(typ, t.env.Known("collections.OrderedDict"))
	if byIter {
		lst, err := api.Call(t.env.Known("builtins.list"), []py.Obj{o}, nil)
		if err != nil {
			return nil, t.raisedFromCall(f, "iterating over "+t.qualName(typ), err)
		}
		if n, _ := api.Len(lst); n != len(keys) {
			return nil, f.unsupported("", "%s iterates over other keys than it holds", t.qualName(typ))
		}
		for i, k := range keys {
			if it, _ := api.Index(lst, i); it != k {
				return nil, f.unsupported("", "%s whose order differs from its storage's (move_to_end)", t.qualName(typ))
			}
		}
	}
	d := &DictV{Source: src}
	var keyObjs []py.Obj
	var reprs []string
	var tensorKeys []int64
	for i, k := range keys {
		if api.Kind(k) == py.KTensor && src != nil {
			// A tensor key (torch.optim's state, keyed by parameters) is read from its place
			// in the dict and guarded like any tensor the frame reads; where the frame also
			// reads it elsewhere (the optimizer's param_groups), the two are guarded to be one
			// object. Its value is found by that identity.
			kv, err := t.wrapLive(f, k, &DictKeySource{Base: src, Index: i})
			if err != nil {
				return nil, err
			}
			ksrc, _ := t.tensorOrigin(kv.(*TensorV))
			if ksrc == nil {
				return nil, f.unsupported("", "dict with a Tensor key ptgo cannot read back")
			}
			d.Keys = append(d.Keys, kv)
			keyObjs = append(keyObjs, api.None())
			tensorKeys = append(tensorKeys, int64(i))
			reprs = append(reprs, "<tensor "+readableName(ksrc)+">")
			d.Vals = append(d.Vals, t.lazy(vals[i], &DictItemSource{Base: src, KeySrc: ksrc, Raw: !exact}))
			continue
		}
		kv, err := t.constFromObj(k)
		if err != nil {
			return nil, err
		}
		c, isConst := kv.(*ConstV)
		if !isConst {
			return nil, f.unsupported("", "dict with %s keys", kv.Describe())
		}
		d.Keys = append(d.Keys, c)
		keyObjs = append(keyObjs, k)
		reprs = append(reprs, api.Repr(k))
		if src == nil {
			d.Vals = append(d.Vals, t.objValue(vals[i], nil))
			continue
		}
		if c.Kind != py.KStr {
			// Values under non-str keys have no guardable source: realize them now by value.
			v, err := t.wrapLive(f, vals[i], nil)
			if err != nil {
				return nil, f.unsupported("use str keys", "dict value under key %s", c.Describe())
			}
			d.Vals = append(d.Vals, v)
			continue
		}
		d.Vals = append(d.Vals, t.lazy(vals[i], &DictItemSource{Base: src, Key: c.S, Raw: !exact}))
	}
	if src != nil {
		if exact {
			t.guards.Type(src, typ, "dict")
		} else {
			t.guards.Type(src, typ, t.qualName(typ))
		}
		t.guards.DictKeys(src, api.NewTuple(keyObjs), tensorKeys, byIter, "["+strings.Join(reprs, ", ")+"]")
	}
	return d, nil
}

// funcFromObj wraps a live Python function: its code, globals, defaults and closure.
func (t *Tracer) funcFromObj(f *frame, o py.Obj, src Source) (*FuncV, error) {
	api := t.api
	fn := &FuncV{Obj: o, Source: src}
	var err error
	if fn.Code, err = api.GetAttr(o, "__code__"); err != nil {
		return nil, err
	}
	if fn.Globals, err = api.GetAttr(o, "__globals__"); err != nil {
		return nil, err
	}
	ci, err := t.env.code(fn.Code)
	if err != nil {
		return nil, err
	}
	if !t.env.IsLibraryFile(ci.code.Filename) {
		// Library modules (torch, the standard library) do not rebind their globals: reading
		// them needs no guards. Everything else's globals are guarded like the user's.
		fn.GlobalsSrc = &ConstSource{Obj: fn.Globals, Desc: "globals of " + t.qualName(o)}
	}
	fn.Name, fn.QualName = ci.code.Name, ci.code.QualName
	defs, err := api.GetAttr(o, "__defaults__")
	if err != nil {
		return nil, err
	}
	if api.Kind(defs) == py.KTuple {
		n, _ := api.Len(defs)
		defSrc := &AttrSource{Base: &ConstSource{Obj: o, Desc: t.qualName(o)}, Attr: "__defaults__"}
		for i := 0; i < n; i++ {
			d, err := api.Index(defs, i)
			if err != nil {
				return nil, err
			}
			fn.Defaults = append(fn.Defaults, t.lazy(d, &IndexSource{Base: defSrc, Index: i}))
		}
	}
	kwd, err := api.GetAttr(o, "__kwdefaults__")
	if err != nil {
		return nil, err
	}
	if api.Kind(kwd) == py.KDict {
		kwSrc := &AttrSource{Base: &ConstSource{Obj: o, Desc: t.qualName(o)}, Attr: "__kwdefaults__"}
		d, err := t.wrapDict(f, kwd, kwSrc)
		if err != nil {
			return nil, err
		}
		dv, ok := d.(*DictV)
		if !ok {
			return nil, f.unsupported("", "keyword defaults of %s", fn.QualName)
		}
		fn.KwDefaults = dv
	}
	cl, err := api.GetAttr(o, "__closure__")
	if err != nil {
		return nil, err
	}
	if api.Kind(cl) == py.KTuple {
		n, _ := api.Len(cl)
		for i := 0; i < n; i++ {
			cell, err := api.Index(cl, i)
			if err != nil {
				return nil, err
			}
			fn.Closure = append(fn.Closure, t.liveCell(cell, &ConstSource{Obj: cell, Desc: fmt.Sprintf("%s.__closure__[%d]", t.qualName(o), i)}))
		}
	}
	return fn, nil
}

// liveCell wraps a live closure cell; one cell object is one CellV.
func (t *Tracer) liveCell(cell py.Obj, src Source) *CellV {
	if v, ok := t.realized[cell]; ok {
		return v.(*CellV)
	}
	c := &CellV{Source: src}
	contents, err := t.api.GetAttr(cell, "cell_contents")
	if err == nil {
		c.Contents = t.lazy(contents, &AttrSource{Base: src, Attr: "cell_contents"})
	}
	t.realized[cell] = c
	return c
}

// closureCells returns the cells COPY_FREE_VARS copies into frame f.
func (t *Tracer) closureCells(f *frame) ([]*CellV, error) {
	if !f.root {
		return f.fn.Closure, nil
	}
	cl, err := t.api.GetAttr(t.rootFunc, "__closure__")
	if err != nil {
		return nil, err
	}
	if t.api.Kind(cl) != py.KTuple {
		return nil, nil
	}
	n, _ := t.api.Len(cl)
	cells := make([]*CellV, n)
	for i := range cells {
		cell, err := t.api.Index(cl, i)
		if err != nil {
			return nil, err
		}
		c := &CellV{Source: &ClosureSource{Index: i, Var: f.ci.code.FreeVars[i]}}
		if contents, err := t.api.GetAttr(cell, "cell_contents"); err == nil {
			c.Contents = t.lazy(contents, c.Source)
		}
		cells[i] = c
	}
	return cells, nil
}

// loadGlobal reads a global (then builtin) of frame f.
func (t *Tracer) loadGlobal(f *frame, name string) (Value, error) {
	api := t.api
	if v, ok := t.pendingGlobal(f.globals, name); ok {
		return v, nil
	}
	key := api.NewStr(name)
	o, err := api.GetItem(f.globals, key)
	if err == nil {
		if f.root {
			return t.lazy(o, &GlobalSource{Var: name}), nil
		}
		if f.globSrc == nil {
			return t.wrapLive(f, o, nil)
		}
		return t.lazy(o, &DictItemSource{Base: f.globSrc, Key: name}), nil
	}
	if o, err = api.GetItem(t.env.builtins, key); err == nil {
		// Builtins are not guarded (like Dynamo): replacing builtins.len, or shadowing it with
		// a global after compiling, is not noticed. Guarding every builtin would cost every call.
		return t.wrapLive(f, o, nil)
	}
	return nil, f.unsupported("", "name %q is not defined", name)
}

// tensorInput makes (or reuses) the graph input for a tensor read from src.
func (t *Tracer) tensorInput(f *frame, o py.Obj, src Source) (Value, error) {
	if tv, ok := t.inputByObj[o]; ok {
		if tv.Source != nil && sourceKey(tv.Source) != sourceKey(src) {
			t.guards.Same(src, tv.Source)
			if _, byPosition := tv.Source.(*DictKeySource); byPosition {
				// A tensor first met as a dict key (torch.optim's state) is loaded from its
				// other place from now on: finding a key by position costs a walk of the dict.
				tv.Source = src
			}
		}
		return tv, nil
	}
	if tv, ok := t.attrNodes[o]; ok {
		// A parameter of the compiled module read through another object too (an
		// optimizer's param_groups): one value, so an in-place write through either is seen
		// by both.
		t.guards.ID(src, o, "the parameter "+tv.Node.Target)
		return tv, nil
	}
	info, err := t.api.TensorMeta(o)
	if err != nil {
		// a tensor without plain sizes (a nested tensor): torch's own code handles it
		return nil, f.unsupported("", "a tensor whose metadata ptgo cannot read (%s: %v)", readableName(src), err)
	}
	if !info.Strided {
		return nil, f.unsupported("convert it with .to_dense() (sparse, mkldnn) or .to_padded_tensor() (nested) first",
			"a non-strided (sparse, mkldnn or nested) tensor %s", readableName(src))
	}
	if !info.IsPlain {
		return nil, f.unsupported("pass a plain torch.Tensor", "a tensor subclass %s (%s)", t.typeName(o), readableName(src))
	}
	if info.DType < 0 {
		return nil, f.unsupported("", "a tensor of an unsupported dtype (%s)", readableName(src))
	}
	m := metaFromInfo(info)
	marked, static := t.dynamicMarks(o)
	equalSizes := t.makeSymbolic(src, m, t.dynamicDims(src, m, marked, static))
	tv := &TensorV{Meta: m, Class: t.api.TypeOf(o), Source: src, Obj: o}
	tv.Node = t.graph.AddPlaceholder(placeholderName(src), m)
	t.guards.Tensor(src, tv.Class, m, info.DeviceType)
	equalSizes()
	t.inputs = append(t.inputs, tv)
	t.inputByObj[o] = tv
	return tv, nil
}

func metaFromInfo(info *py.TensorInfo) *primtorch.TensorMeta {
	dev := primtorch.Device{Type: [...]string{"cpu", "cuda", "meta", "other"}[info.DeviceType], Index: info.DeviceIndex}
	return &primtorch.TensorMeta{DType: primtorch.DType(info.DType), Shape: info.Sizes, Strides: info.Strides,
		Offset: info.StorageOffset, Device: dev, RequiresGrad: info.RequiresGrad}
}

// placeholderName names a graph input after its source, the way Dynamo does (l_x_ → x).
func placeholderName(src Source) string {
	n := readableName(src)
	var b strings.Builder
	for _, r := range n {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		}
	}
	return strings.Trim(b.String(), "_")
}

// paramAttr makes (or reuses) the get_attr node for a parameter or buffer of a module.
// Besides the identity guard the caller installs, the tensor's metadata is guarded from src:
// `param.data = t` keeps the Parameter object but may change its dtype, sizes or strides, which
// the graph (and its kernels) are specialised to.
func (t *Tracer) paramAttr(f *frame, o py.Obj, path string, src Source) (Value, error) {
	if tv, ok := t.attrNodes[o]; ok {
		return tv, nil
	}
	if tv, ok := t.inputByObj[o]; ok {
		// Already a graph input (read through an optimizer's param_groups first): one value.
		if tv.Source != nil && sourceKey(tv.Source) != sourceKey(src) {
			t.guards.Same(src, tv.Source)
		}
		return tv, nil
	}
	info, err := t.api.TensorMeta(o)
	if err != nil {
		return nil, f.unsupported("", "parameter %s: a tensor whose metadata ptgo cannot read (%v)", path, err)
	}
	if !info.Strided || info.DType < 0 {
		return nil, f.unsupported("", "parameter %s is not a strided tensor of a supported dtype", path)
	}
	m := metaFromInfo(info)
	tv := &TensorV{Meta: m, Class: t.api.TypeOf(o), Obj: o}
	t.guards.Tensor(src, tv.Class, m, info.DeviceType)
	tv.Node = t.graph.AddGetAttr(path, m)
	t.attrs[path] = o
	t.attrNodes[o] = tv
	return tv, nil
}

func (t *Tracer) qualName(o py.Obj) string {
	if q, err := t.api.GetAttr(o, "__qualname__"); err == nil {
		if s, err := t.api.Str(q); err == nil {
			return s
		}
	}
	return t.api.Repr(o)
}

// typeName is the qualified name of o's class ("torch.nn.modules.linear.Linear").
func (t *Tracer) typeName(o py.Obj) string {
	typ := t.api.TypeOf(o)
	mod := ""
	if m, err := t.api.GetAttr(typ, "__module__"); err == nil {
		mod, _ = t.api.Str(m)
	}
	q := t.qualName(typ)
	if mod == "" || mod == "builtins" {
		return q
	}
	return mod + "." + q
}

func (t *Tracer) shortRepr(o py.Obj) string {
	r := t.api.Repr(o)
	if len(r) > 80 {
		r = r[:77] + "..."
	}
	return r
}

// gradModeOf recognises torch.no_grad()/enable_grad()/set_grad_enabled(b) objects.
func (t *Tracer) gradModeOf(o py.Obj) *GradModeV {
	typ := t.api.TypeOf(o)
	switch typ {
	case t.env.Known("torch.no_grad"):
		return &GradModeV{Enabled: false, Class: typ}
	case t.env.Known("torch.enable_grad"):
		return &GradModeV{Enabled: true, Class: typ}
	case t.env.Known("torch.set_grad_enabled"):
		m, err := t.api.GetAttr(o, "mode")
		if err != nil {
			return nil
		}
		n, err := t.api.Int(m)
		if err != nil {
			return nil
		}
		return &GradModeV{Enabled: n != 0, Class: typ}
	}
	return nil
}

// sideEffect is the error for a mutation of state outside the frame (not yet replayed).
func (t *Tracer) sideEffect(f *frame, what string) error {
	return f.unsupported("move it out of the compiled function, or return the new value instead",
		"side effect: %s", what)
}

// newCall records a call_function node.
func (t *Tracer) addCall(f *frame, target string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg, meta any) *fxgraph.Node {
	n := t.graph.AddCall(target, args, kwargs, meta)
	n.Where, n.Stack = f.shortWhereUser(), f.stackUser()
	t.opCount++
	return n
}

func (t *Tracer) addMethod(f *frame, method string, args []fxgraph.Arg, kwargs []fxgraph.Kwarg, meta any) *fxgraph.Node {
	n := t.graph.AddMethod(method, args, kwargs, meta)
	n.Where, n.Stack = f.shortWhereUser(), f.stackUser()
	t.opCount++
	return n
}

// stackUser is the innermost user frame as a traceback line names it
// (`File "/path/model.py", line 12, in forward`), for torch.fx's node.stack_trace.
func (f *frame) stackUser() string {
	g := f
	for u := f; u != nil; u = u.parent {
		if !u.isLibrary() {
			g = u
			break
		}
	}
	line := g.ci.code.FirstLineNo
	if g.curInstr != nil && g.curInstr.Pos.Line > 0 {
		line = g.curInstr.Pos.Line
	}
	return fmt.Sprintf("File \"%s\", line %d, in %s", g.ci.code.Filename, line, g.ci.code.Name)
}

// shortWhereUser is the innermost user file:line (basename), for node annotations.
func (f *frame) shortWhereUser() string {
	for g := f; g != nil; g = g.parent {
		if !g.isLibrary() {
			return g.shortWhere()
		}
	}
	return f.shortWhere()
}
