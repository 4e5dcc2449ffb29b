package bytecode

import (
	"ptgo/bytecode/py"
)

// copy.copy and copy.deepcopy of the values the trace models, functools.cmp_to_key, and
// itertools.groupby.

// copyHooks are the methods through which a class customizes copying; a class defining one
// (other than object's) is refused, except a Python __copy__, which copy.copy calls.
var copyHooks = []string{"__copy__", "__deepcopy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__"}

// plainCopyable says why instances of cls are not copied attribute by attribute ("" when they
// are), and returns its Python __copy__ if it has one.
func (t *Tracer) plainCopyable(f *frame, cls py.Obj) (string, *FuncV, error) {
	object := t.env.Known("builtins.object")
	for _, name := range copyHooks {
		raw, _, owner, found, err := t.api.GetAttrStatic(cls, name)
		if err != nil {
			return "", nil, err
		}
		if !found || owner == object {
			continue
		}
		if name == "__copy__" && t.api.Kind(raw) == py.KFunction {
			fn, err := t.funcFromObj(f, raw, nil)
			return "", fn, err
		}
		return t.qualName(owner) + " defines " + name, nil, nil
	}
	if why := t.constructible(cls); why != "" {
		return why, nil, nil
	}
	return "", nil, nil
}

func pyCopy(deep bool) specialFn {
	name := "copy.copy"
	if deep {
		name = "copy.deepcopy"
	}
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) != 1 || len(kw) > 0 {
			return nil, f.unsupported("", "%s with a memo", name)
		}
		c := &copier{t: t, f: f, deep: deep, memo: map[Value]Value{}}
		return c.copy(args[0])
	}
}

type copier struct {
	t    *Tracer
	f    *frame
	deep bool
	memo map[Value]Value
}

// item copies a member of a container: itself for a shallow copy.
func (c *copier) item(v Value) (Value, error) {
	if !c.deep {
		return v, nil
	}
	return c.copy(v)
}

func (c *copier) items(vs []Value) ([]Value, error) {
	out := make([]Value, len(vs))
	for i, v := range vs {
		var err error
		if out[i], err = c.item(v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *copier) copy(v Value) (Value, error) {
	t, f := c.t, c.f
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	if done, ok := c.memo[v]; ok {
		return done, nil
	}
	switch x := v.(type) {
	case *ConstV, *RangeV, *SliceV, *FuncV, *builtinFnV:
		return v, nil
	case *TupleV:
		if !c.deep {
			return v, nil
		}
		items, err := c.items(x.Items)
		if err != nil {
			return nil, err
		}
		return x.withItems(items), nil
	case *ListV:
		out := &ListV{}
		c.memo[v] = out
		if out.Items, err = c.items(x.Items); err != nil {
			return nil, err
		}
		return out, nil
	case *SetV:
		return &SetV{Items: append([]Value(nil), x.Items...), Frozen: x.Frozen}, nil
	case *DequeV:
		out := &DequeV{MaxLen: x.MaxLen}
		c.memo[v] = out
		if out.Items, err = c.items(x.Items); err != nil {
			return nil, err
		}
		return out, nil
	case *DictV:
		return c.dict(x)
	case *ObjectV:
		return c.object(x.Class, x, x.Attrs, x.Dict)
	case *ObjV:
		switch x.Kind {
		case py.KType, py.KModule, py.KBuiltin, py.KMethodDescriptor, py.KFunction, py.KDType, py.KDevice, py.KCode:
			return v, nil // copy's atomic types
		case py.KOther:
			if x.Source == nil {
				break
			}
			d, err := t.liveDict(f, x)
			if err != nil {
				return nil, err
			}
			return c.object(t.api.TypeOf(x.Obj), x, d, nil)
		}
	case *TensorV:
		return nil, f.unsupported("clone the tensor instead", "copying a tensor with the copy module")
	}
	return nil, f.unsupported("", "copying %s with the copy module", v.Describe())
}

func (c *copier) dict(x *DictV) (*DictV, error) {
	out := &DictV{Class: x.Class, Factory: x.Factory}
	c.memo[x] = out
	for i, k := range x.Keys {
		key, err := c.item(k)
		if err != nil {
			return nil, err
		}
		val, err := c.item(x.Vals[i])
		if err != nil {
			return nil, err
		}
		out.Keys, out.Vals = append(out.Keys, key), append(out.Vals, val)
	}
	return out, nil
}

// object copies an instance attribute by attribute (copy's __reduce_ex__(4) of a plain class:
// a new instance whose __dict__ is a copy of the original's), or through its __copy__.
func (c *copier) object(cls py.Obj, orig Value, attrs, items *DictV) (Value, error) {
	t, f := c.t, c.f
	why, copyFn, err := t.plainCopyable(f, cls)
	if err != nil {
		return nil, err
	}
	if copyFn != nil && !c.deep {
		return t.inline(f, copyFn, []Value{orig}, nil)
	}
	if why != "" || copyFn != nil {
		if why == "" {
			why = "it defines __copy__ but not __deepcopy__"
		}
		return nil, f.unsupported("", "copying an instance of %s: %s", t.qualName(cls), why)
	}
	o, err := t.allocObject(cls)
	if err != nil {
		return nil, err
	}
	c.memo[orig] = o
	if o.Attrs, err = c.dict(&DictV{Keys: attrs.Keys, Vals: attrs.Vals}); err != nil {
		return nil, err
	}
	if items != nil {
		if o.Dict, err = c.dict(items); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// cmpKeyV is functools.cmp_to_key(cmp)(obj): compared through cmp.
type cmpKeyV struct {
	Cmp Value
	Obj Value
}

func (k *cmpKeyV) Describe() string { return "functools.cmp_to_key key" }

func fnCmpToKey(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "cmp_to_key takes one function")
	}
	cmp := args[0]
	return &builtinFnV{name: "functools.cmp_to_key(...)", fn: func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) != 1 || len(kw) > 0 {
			return nil, f.unsupported("eager raises TypeError", "a cmp_to_key key takes one argument")
		}
		return &cmpKeyV{Cmp: cmp, Obj: args[0]}, nil
	}}, nil
}

// compareCmpKeys is a < b (and the other comparisons) of cmp_to_key keys: cmp(a, b) < 0.
func (t *Tracer) compareCmpKeys(f *frame, op string, a, b Value) (Value, bool, error) {
	ka, okA := a.(*cmpKeyV)
	kb, okB := b.(*cmpKeyV)
	if !okA && !okB {
		return nil, false, nil
	}
	if !okA || !okB {
		return nil, true, f.unsupported("eager raises TypeError", "comparing a cmp_to_key key with %s", b.Describe())
	}
	r, err := t.call(f, ka.Cmp, []Value{ka.Obj, kb.Obj}, nil)
	if err != nil {
		return nil, true, err
	}
	v, err := t.compare(f, op, r, intV(0))
	return v, true, err
}

// itGroupby is itertools.groupby(iterable, key=None) as CPython's groupby_next and
// _grouper_next: the groups share the underlying iterator, so a group is empty once the outer
// iterator has moved on.
func itGroupby(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "groupby", kw, "key", "iterable"); err != nil {
		return nil, err
	}
	iterable, keyFn := kwValue(kw, "iterable"), kwValue(kw, "key")
	if len(args) > 0 {
		iterable = args[0]
	}
	if len(args) > 1 {
		keyFn = args[1]
	}
	if iterable == nil || len(args) > 2 {
		return nil, f.unsupported("eager raises TypeError", "groupby() takes an iterable and a key")
	}
	if keyFn != nil && isNone(keyFn) {
		keyFn = nil
	}
	it, err := t.iter(f, iterable)
	if err != nil {
		return nil, err
	}
	var tgtKey, currKey, currValue Value // nil: CPython's NULL
	gen, current := 0, 0                 // the grouper that may still produce items
	step := func() (bool, error) {
		v, ok, err := it.next()
		if !ok || err != nil {
			return false, err
		}
		key := v
		if keyFn != nil {
			if key, err = t.call(f, keyFn, []Value{v}, nil); err != nil {
				return false, err
			}
		}
		currValue, currKey = v, key
		return true, nil
	}
	return lazyIter(t.itClass("groupby"), it.Infinite, func() (Value, bool, error) {
		current = 0
		for {
			if currKey != nil {
				if tgtKey == nil {
					break
				}
				eq, err := t.equal(f, tgtKey, currKey)
				if err != nil {
					return nil, false, err
				}
				if !eq {
					break
				}
			}
			if ok, err := step(); !ok || err != nil {
				return nil, false, err
			}
		}
		tgtKey = currKey
		gen++
		mine, key := gen, tgtKey
		current = mine
		grouper := lazyIter(t.itClass("_grouper"), false, func() (Value, bool, error) {
			if current != mine {
				return nil, false, nil
			}
			if currValue == nil {
				if ok, err := step(); !ok || err != nil {
					return nil, false, err
				}
			}
			eq, err := t.equal(f, key, currKey)
			if err != nil || !eq {
				return nil, false, err
			}
			v := currValue
			currValue, currKey = nil, nil
			return v, true, nil
		})
		return &TupleV{Items: []Value{key, grouper}}, true, nil
	}), nil
}
