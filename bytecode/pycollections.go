package bytecode

import (
	"sort"

	"ptgo/bytecode/py"
)

// collections: deque is DequeV; OrderedDict, defaultdict and Counter are DictVs whose Class
// (and Factory) give them their own behaviour here (missing keys, order, counting); namedtuple
// classes make TupleVs, and namedtuple() itself runs eagerly (it only builds a class).

func (t *Tracer) colClass(name string) py.Obj { return t.env.Known("collections." + name) }

func colDeque(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "deque", kw, "iterable", "maxlen"); err != nil {
		return nil, err
	}
	iterable, maxlen := kwValue(kw, "iterable"), kwValue(kw, "maxlen")
	if len(args) > 0 {
		iterable = args[0]
	}
	if len(args) > 1 {
		maxlen = args[1]
	}
	if len(args) > 2 {
		return nil, f.unsupported("eager raises TypeError", "deque() takes at most 2 arguments")
	}
	d := &DequeV{MaxLen: -1}
	if maxlen != nil && !isNone(maxlen) {
		n, err := intArg(t, f, maxlen, "deque maxlen")
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, f.unsupported("eager raises ValueError", "maxlen must be non-negative")
		}
		d.MaxLen = n
	}
	if iterable != nil {
		items, err := t.unpack(f, iterable)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			d.push(it, false)
		}
	}
	return d, nil
}

// dequeIndex normalizes a deque index (IndexError: Unsupported).
func (t *Tracer) dequeIndex(f *frame, d *DequeV, idx Value) (int, error) {
	i, err := intArg(t, f, idx, "deque index")
	if err != nil {
		return 0, err
	}
	n := int64(len(d.Items))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return 0, t.pyRaise(f, "IndexError", "deque index out of range")
	}
	return int(i), nil
}

func (t *Tracer) dequeMethod(f *frame, d *DequeV, name string, args []Value, kw []kwArg) (Value, error) {
	if len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "deque.%s() takes no keyword arguments", name)
	}
	nargs := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			return f.unsupported("eager raises TypeError", "deque.%s() takes %d to %d arguments", name, lo, hi)
		}
		return nil
	}
	switch name {
	case "pop", "popleft", "rotate", "clear", "insert", "remove":
		d.state++
	}
	switch name {
	case "append", "appendleft", "extend", "extendleft", "pop", "popleft", "rotate", "clear", "insert", "remove", "reverse":
		if d.Source != nil {
			t.mutateDeque(d)
		}
	}
	switch name {
	case "append", "appendleft":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		d.push(args[0], name == "appendleft")
		return noneV, nil
	case "extend", "extendleft":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		items, err := t.unpack(f, args[0])
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			d.push(it, name == "extendleft")
		}
		return noneV, nil
	case "pop", "popleft":
		if err := nargs(0, 0); err != nil {
			return nil, err
		}
		if len(d.Items) == 0 {
			return nil, t.pyRaise(f, "IndexError", "pop from an empty deque")
		}
		if name == "pop" {
			v := d.Items[len(d.Items)-1]
			d.Items = d.Items[:len(d.Items)-1]
			return v, nil
		}
		v := d.Items[0]
		d.Items = append([]Value(nil), d.Items[1:]...)
		return v, nil
	case "rotate":
		if err := nargs(0, 1); err != nil {
			return nil, err
		}
		k := int64(1)
		if len(args) == 1 {
			var err error
			if k, err = intArg(t, f, args[0], "deque.rotate n"); err != nil {
				return nil, err
			}
		}
		if n := int64(len(d.Items)); n > 1 {
			k = ((k % n) + n) % n
			d.Items = append(append([]Value(nil), d.Items[n-k:]...), d.Items[:n-k]...)
		}
		return noneV, nil
	case "clear":
		d.Items = nil
		return noneV, nil
	case "copy", "__copy__":
		return &DequeV{Items: append([]Value(nil), d.Items...), MaxLen: d.MaxLen}, nil
	case "reverse":
		for i, j := 0, len(d.Items)-1; i < j; i, j = i+1, j-1 {
			d.Items[i], d.Items[j] = d.Items[j], d.Items[i]
		}
		return noneV, nil
	case "count", "index":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		return t.seqSearch(f, d.Items, name, args)
	case "insert":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		if d.MaxLen >= 0 && int64(len(d.Items)) >= d.MaxLen {
			return nil, f.unsupported("eager raises IndexError", "deque already at its maximum size")
		}
		l := &ListV{Items: d.Items}
		if _, err := t.listMethod(f, l, "insert", args, nil); err != nil {
			return nil, err
		}
		d.Items = l.Items
		return noneV, nil
	case "remove":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		l := &ListV{Items: d.Items}
		if _, err := t.listMethod(f, l, "remove", args, nil); err != nil {
			return nil, err
		}
		d.Items = l.Items
		return noneV, nil
	case "__getitem__":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		i, err := t.dequeIndex(f, d, args[0])
		if err != nil {
			return nil, err
		}
		return d.Items[i], nil
	case "__len__":
		return intV(int64(len(d.Items))), nil
	}
	return nil, f.unsupported("", "deque.%s", name)
}

func colDefaultDict(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	d := &DictV{Class: t.colClass("defaultdict"), Factory: noneV}
	if len(args) > 0 {
		fac, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		if !isNone(fac) && !isFunctionLike(fac) {
			if _, obj := fac.(*ObjectV); !obj {
				return nil, f.unsupported("eager raises TypeError", "first argument must be callable or None")
			}
		}
		d.Factory = fac
		args = args[1:]
	}
	if _, err := t.dictMethod(f, d, "update", args, kw); err != nil {
		return nil, err
	}
	return d, nil
}

func colOrderedDict(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	d := &DictV{Class: t.colClass("OrderedDict")}
	if len(args) > 1 {
		return nil, f.unsupported("eager raises TypeError", "OrderedDict expected at most 1 argument")
	}
	if _, err := t.dictMethod(f, d, "update", args, kw); err != nil {
		return nil, err
	}
	return d, nil
}

func colCounter(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	d := &DictV{Class: t.colClass("Counter")}
	if len(args) > 1 {
		return nil, f.unsupported("eager raises TypeError", "Counter expected at most 1 argument")
	}
	if _, err := t.counterUpdate(f, d, args, kw, 1); err != nil {
		return nil, err
	}
	return d, nil
}

// counterUpdate is Counter.update (sign 1) or Counter.subtract (sign -1): counts from a
// mapping or the items of an iterable, and keyword counts.
func (t *Tracer) counterUpdate(f *frame, d *DictV, args []Value, kw []kwArg, sign int64) (Value, error) {
	add := func(k, n Value) error {
		cur, ok, err := t.dictGet(f, d, k)
		if err != nil {
			return err
		}
		if !ok {
			cur = intV(0)
		}
		if sign < 0 {
			if n, err = t.unaryOp(f, UNARY_NEGATIVE, n); err != nil {
				return err
			}
		}
		v, err := t.binaryOp(f, 0, cur, n)
		if err != nil {
			return err
		}
		return t.dictSet(f, d, k, v)
	}
	if len(args) > 0 {
		src, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		if m, ok := src.(*DictV); ok {
			for i := range m.Keys {
				if err := add(m.Keys[i], m.Vals[i]); err != nil {
					return nil, err
				}
			}
		} else if !isNone(src) {
			items, err := t.unpack(f, src)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if err := add(it, intV(1)); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, k := range kw {
		if err := add(strV(k.Name), k.Val); err != nil {
			return nil, err
		}
	}
	return noneV, nil
}

// dictMissing is d[key] for a key d lacks: defaultdict's factory (the new value is stored),
// Counter's zero; handled=false for other dicts (KeyError).
func (t *Tracer) dictMissing(f *frame, d *DictV, key Value) (Value, bool, error) {
	switch {
	case d.Class != 0 && d.Class == t.colClass("Counter"):
		return intV(0), true, nil
	case d.Factory != nil && !isNone(d.Factory):
		if d.Source != nil {
			t.mutateDict(d)
		}
		v, err := t.call(f, d.Factory, nil, nil)
		if err != nil {
			return nil, true, err
		}
		return v, true, t.dictSet(f, d, key, v)
	}
	return nil, false, nil
}

// dictClassMethod runs the methods of OrderedDict, defaultdict and Counter that differ from
// dict's (handled=false: dict's).
func (t *Tracer) dictClassMethod(f *frame, d *DictV, name string, args []Value, kw []kwArg) (Value, bool, error) {
	if d.Class == 0 {
		return nil, false, nil
	}
	mutate := func() {
		if d.Source != nil {
			t.mutateDict(d)
		}
	}
	switch d.Class {
	case t.colClass("OrderedDict"):
		switch name {
		case "move_to_end":
			if len(args) < 1 {
				return nil, true, f.unsupported("eager raises TypeError", "move_to_end() missing key")
			}
			last := true
			if v := kwValue(kw, "last"); v != nil {
				b, err := t.truthy(f, v)
				if err != nil {
					return nil, true, err
				}
				last = b
			}
			if len(args) > 1 {
				b, err := t.truthy(f, args[1])
				if err != nil {
					return nil, true, err
				}
				last = b
			}
			for i, k := range d.Keys {
				eq, err := t.keyEqual(f, k, args[0])
				if err != nil {
					return nil, true, err
				}
				if !eq {
					continue
				}
				mutate()
				key, val := d.Keys[i], d.Vals[i]
				d.Keys = append(d.Keys[:i:i], d.Keys[i+1:]...)
				d.Vals = append(d.Vals[:i:i], d.Vals[i+1:]...)
				if last {
					d.Keys, d.Vals = append(d.Keys, key), append(d.Vals, val)
				} else {
					d.Keys, d.Vals = append([]Value{key}, d.Keys...), append([]Value{val}, d.Vals...)
				}
				return noneV, true, nil
			}
			return nil, true, t.pyRaiseArgs(f, "KeyError", []Value{args[0]}, "move_to_end of a missing key %s", args[0].Describe())
		case "popitem":
			last := true
			if v := kwValue(kw, "last"); v != nil {
				b, err := t.truthy(f, v)
				if err != nil {
					return nil, true, err
				}
				last = b
			}
			if len(args) > 0 {
				b, err := t.truthy(f, args[0])
				if err != nil {
					return nil, true, err
				}
				last = b
			}
			if len(d.Keys) == 0 {
				return nil, true, t.pyRaise(f, "KeyError", "dictionary is empty")
			}
			mutate()
			i := len(d.Keys) - 1
			if !last {
				i = 0
			}
			item := &TupleV{Items: []Value{d.Keys[i], d.Vals[i]}}
			d.Keys = append(d.Keys[:i:i], d.Keys[i+1:]...)
			d.Vals = append(d.Vals[:i:i], d.Vals[i+1:]...)
			return item, true, nil
		}
	case t.colClass("defaultdict"):
		switch name {
		case "copy", "__copy__":
			return &DictV{Keys: append([]Value(nil), d.Keys...), Vals: append([]Value(nil), d.Vals...),
				Class: d.Class, Factory: d.Factory}, true, nil
		case "__missing__":
			if len(args) != 1 {
				return nil, true, f.unsupported("eager raises TypeError", "__missing__ takes one argument")
			}
			v, ok, err := t.dictMissing(f, d, args[0])
			if !ok && err == nil {
				err = f.unsupported("eager raises KeyError", "defaultdict without a default_factory")
			}
			return v, true, err
		}
	case t.colClass("Counter"):
		switch name {
		case "update", "subtract":
			mutate()
			sign := int64(1)
			if name == "subtract" {
				sign = -1
			}
			v, err := t.counterUpdate(f, d, args, kw, sign)
			return v, true, err
		case "most_common":
			return t.counterMostCommon(f, d, args)
		case "total":
			var acc Value = intV(0)
			for _, v := range d.Vals {
				var err error
				if acc, err = t.binaryOp(f, 0, acc, v); err != nil {
					return nil, true, err
				}
			}
			return acc, true, nil
		case "elements":
			var out []Value
			for i, k := range d.Keys {
				n, err := intArg(t, f, d.Vals[i], "a count")
				if err != nil {
					return nil, true, err
				}
				for j := int64(0); j < n; j++ {
					out = append(out, k)
				}
			}
			return &IterV{Items: out, Class: t.env.Known("itertools.chain")}, true, nil
		case "copy", "__copy__":
			return &DictV{Keys: append([]Value(nil), d.Keys...), Vals: append([]Value(nil), d.Vals...), Class: d.Class}, true, nil
		}
	}
	return nil, false, nil
}

// counterMostCommon is Counter.most_common(n): by count, descending, ties in insertion order.
func (t *Tracer) counterMostCommon(f *frame, d *DictV, args []Value) (Value, bool, error) {
	idx := make([]int, len(d.Keys))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	sort.SliceStable(idx, func(a, b int) bool {
		r, err := t.compare(f, "gt", d.Vals[idx[a]], d.Vals[idx[b]])
		if err != nil {
			sortErr = err
			return false
		}
		ok, err := t.truthy(f, r)
		if err != nil {
			sortErr = err
		}
		return ok
	})
	if sortErr != nil {
		return nil, true, sortErr
	}
	n := len(idx)
	if len(args) > 0 && !isNone(args[0]) {
		k, err := intArg(t, f, args[0], "most_common n")
		if err != nil {
			return nil, true, err
		}
		if k < 0 {
			k = 0
		}
		if int(k) < n {
			n = int(k)
		}
	}
	out := make([]Value, n)
	for i := 0; i < n; i++ {
		out[i] = &TupleV{Items: []Value{d.Keys[idx[i]], d.Vals[idx[i]]}}
	}
	return &ListV{Items: out}, true, nil
}

// keyEqual is the dict key comparison: identity, then == for non-tensors.
func (t *Tracer) keyEqual(f *frame, a, b Value) (bool, error) {
	same, err := t.identical(f, a, b)
	if err != nil || same {
		return same, err
	}
	a, _ = t.realize(f, a)
	b, _ = t.realize(f, b)
	_, at := a.(*TensorV)
	_, bt := b.(*TensorV)
	if at || bt {
		return false, nil
	}
	return t.equal(f, a, b)
}

// colNamedTuple is collections.namedtuple(...): it only builds a class, so it runs eagerly on
// the constant arguments. The class is made once per compile; instances that escape share it.
func colNamedTuple(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if kwValue(kw, "module") == nil {
		// namedtuple reads the caller's module from sys._getframe(1), which is ptgo's here.
		if m, err := t.api.GetItem(f.globals, t.api.NewStr("__name__")); err == nil {
			mv, err := t.constFromObj(m)
			if err != nil {
				return nil, err
			}
			kw = append(append([]kwArg(nil), kw...), kwArg{"module", mv})
		}
	}
	return t.callLive(f, t.colClass("namedtuple"), args, kw)
}

// isPlainNamedTuple reports a namedtuple class (or a subclass adding only methods) whose
// instances TupleV models: its __new__ is the one namedtuple generated.
func (t *Tracer) isPlainNamedTuple(cls py.Obj) bool {
	if !t.isNamedTuple(cls) {
		return false
	}
	_, _, newOwner, _, _ := t.api.GetAttrStatic(cls, "__new__")
	_, _, makeOwner, _, _ := t.api.GetAttrStatic(cls, "_make")
	return newOwner != 0 && newOwner == makeOwner
}

// newNamedTuple is cls(*args, **kw) for a namedtuple class: fields by position or name, then
// the class's defaults.
func (t *Tracer) newNamedTuple(f *frame, cls py.Obj, args []Value, kw []kwArg) (Value, error) {
	api := t.api
	fieldsObj, err := api.GetAttr(cls, "_fields")
	if err != nil {
		return nil, err
	}
	n, _ := api.Len(fieldsObj)
	fields := make([]string, n)
	for i := range fields {
		o, _ := api.Index(fieldsObj, i)
		fields[i], _ = api.Str(o)
	}
	items, err := bindSlots(f, t.qualName(cls), fields, args, kw)
	if err != nil {
		return nil, err
	}
	defs, err := api.GetAttr(cls, "_field_defaults")
	if err != nil {
		return nil, err
	}
	for i, v := range items {
		if v != nil {
			continue
		}
		d, err := api.GetItem(defs, api.NewStr(fields[i]))
		if err != nil {
			return nil, f.unsupported("eager raises TypeError", "%s() missing required argument %q", t.qualName(cls), fields[i])
		}
		items[i] = t.lazy(d, &DictItemSource{Base: t.classAttrSource(cls, "_field_defaults"), Key: fields[i]})
	}
	return &TupleV{Items: items, Class: cls, Named: true}, nil
}

// namedTupleMethod runs _replace and _asdict of a namedtuple.
func (t *Tracer) namedTupleMethod(f *frame, tv *TupleV, name string, args []Value, kw []kwArg) (Value, bool, error) {
	if !tv.Named {
		return nil, false, nil
	}
	fieldsObj, err := t.api.GetAttr(tv.Class, "_fields")
	if err != nil {
		return nil, true, err
	}
	n, _ := t.api.Len(fieldsObj)
	fields := make([]string, n)
	for i := range fields {
		o, _ := t.api.Index(fieldsObj, i)
		fields[i], _ = t.api.Str(o)
	}
	switch name {
	case "_asdict":
		d := &DictV{}
		for i, name := range fields {
			d.Keys = append(d.Keys, strV(name))
			d.Vals = append(d.Vals, tv.Items[i])
		}
		return d, true, nil
	case "_replace":
		items := append([]Value(nil), tv.Items...)
		for _, k := range kw {
			i := indexOf(fields, k.Name)
			if i < 0 {
				return nil, true, f.unsupported("eager raises ValueError", "got unexpected field name %q", k.Name)
			}
			items[i] = k.Val
		}
		return &TupleV{Items: items, Class: tv.Class, Named: true}, true, nil
	}
	return nil, false, nil
}

// namedTupleClassAttr reads what a namedtuple's class gives its instances: _fields and the
// other class constants, methods and properties of a subclass (found=false: tuple's methods).
func (t *Tracer) namedTupleClassAttr(f *frame, tv *TupleV, name string) (Value, bool, error) {
	switch name {
	case "_asdict", "_replace", "index", "count":
		return nil, false, nil
	}
	raw, _, owner, found, err := t.api.GetAttrStatic(tv.Class, name)
	if err != nil || !found || owner == t.env.Known("builtins.tuple") || owner == t.env.Known("builtins.object") {
		return nil, false, err
	}
	switch t.api.Kind(raw) {
	case py.KFunction:
		fn, err := t.funcFromObj(f, raw, nil)
		if err != nil {
			return nil, true, err
		}
		return &BoundV{Self: tv, Fn: fn}, true, nil
	case py.KProperty:
		v, err := t.callProperty(f, raw, tv)
		return v, true, err
	case py.KClassMethod:
		inner, err := t.api.GetAttr(raw, "__func__")
		if err != nil {
			return nil, true, err
		}
		fn, err := t.wrapLive(f, inner, nil)
		if err != nil {
			return nil, true, err
		}
		return &BoundV{Self: t.objValue(tv.Class, nil), Fn: fn}, true, nil
	case py.KStaticMethod:
		inner, err := t.api.GetAttr(raw, "__func__")
		if err != nil {
			return nil, true, err
		}
		v, err := t.wrapLive(f, inner, nil)
		return v, true, err
	case py.KOther:
		if t.api.TypeOf(raw) == t.env.Known("collections._tuplegetter") {
			return nil, false, nil // a field: structField answers
		}
	}
	return t.lazy(raw, t.classAttrSource(tv.Class, name)), true, nil
}

// setMethod runs the methods of a set: the mutating ones on the items, the others (union,
// issubset, ...) by CPython on the materialized constants.
func (t *Tracer) setMethod(f *frame, s *SetV, name string, args []Value, kw []kwArg) (Value, error) {
	mutating := map[string]bool{"add": true, "discard": true, "remove": true, "clear": true, "update": true, "pop": true,
		"difference_update": true, "intersection_update": true, "symmetric_difference_update": true}
	if mutating[name] && s.Frozen {
		return nil, t.pyRaise(f, "AttributeError", "'frozenset' object has no attribute '%s'", name)
	}
	find := func(v Value) (int, error) {
		for i, it := range s.Items {
			eq, err := t.keyEqual(f, it, v)
			if err != nil {
				return -1, err
			}
			if eq {
				return i, nil
			}
		}
		return -1, nil
	}
	switch name {
	case "add":
		if len(args) != 1 {
			return nil, f.unsupported("eager raises TypeError", "set.add() takes exactly one argument")
		}
		return noneV, t.setAdd(f, s, args[0])
	case "discard", "remove":
		if len(args) != 1 {
			return nil, f.unsupported("eager raises TypeError", "set.%s() takes exactly one argument", name)
		}
		i, err := find(args[0])
		if err != nil {
			return nil, err
		}
		if i < 0 {
			if name == "remove" {
				return nil, t.pyRaiseArgs(f, "KeyError", []Value{args[0]}, "set.remove of a missing item %s", args[0].Describe())
			}
			return noneV, nil
		}
		s.Items = append(s.Items[:i:i], s.Items[i+1:]...)
		return noneV, nil
	case "clear":
		s.Items = nil
		return noneV, nil
	case "update":
		for _, a := range args {
			items, err := t.unpack(f, a)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if err := t.setAdd(f, s, it); err != nil {
					return nil, err
				}
			}
		}
		return noneV, nil
	case "copy":
		return &SetV{Items: append([]Value(nil), s.Items...), Frozen: s.Frozen}, nil
	case "__contains__":
		if len(args) != 1 {
			return nil, f.unsupported("eager raises TypeError", "__contains__ takes one argument")
		}
		i, err := find(args[0])
		return boolV(i >= 0), err
	}
	if mutating[name] {
		return nil, f.unsupported("", "set.%s", name)
	}
	obj, err := t.toObj(f, s)
	if err != nil {
		return nil, err
	}
	m, err := t.api.GetAttr(obj, name)
	if err != nil {
		return nil, t.raisedFromCall(f, "set."+name, err)
	}
	return t.callLive(f, m, args, kw)
}

// wrapDeque is a live collections.deque read from src: its items lazily, guarded by type,
// length and maxlen.
func (t *Tracer) wrapDeque(f *frame, o py.Obj, src Source) (*DequeV, error) {
	api := t.api
	n, err := api.Len(o)
	if err != nil {
		return nil, err
	}
	d := &DequeV{MaxLen: -1, Source: src}
	ml, err := api.GetAttr(o, "maxlen")
	if err != nil {
		return nil, err
	}
	if api.Kind(ml) != py.KNone {
		if d.MaxLen, err = api.Int(ml); err != nil {
			return nil, err
		}
	}
	seq, err := api.Call(t.env.Known("builtins.tuple"), []py.Obj{o}, nil)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		it, err := api.Index(seq, i)
		if err != nil {
			return nil, err
		}
		if src == nil {
			v, err := t.wrapLive(f, it, nil)
			if err != nil {
				return nil, err
			}
			d.Items = append(d.Items, v)
			continue
		}
		d.Items = append(d.Items, t.lazy(it, &IndexSource{Base: src, Index: i}))
	}
	if src != nil {
		t.guards.Type(src, api.TypeOf(o), "collections.deque")
		t.guards.Len(src, n)
		t.guards.Eq(&AttrSource{Base: src, Attr: "maxlen"}, ml, api.Repr(ml))
	}
	return d, nil
}
