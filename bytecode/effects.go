package bytecode

import (
	"slices"

	"ptgo/bytecode/py"
)

// Side effects on objects that outlive the frame (lists, dicts and objects passed in or read
// from globals, attributes of modules, globals, closure cells) are applied to the symbolic
// values while tracing, and replayed by the transformed code after the graph runs and before
// anything else the user can observe (a graph break's instruction, the return). Each object's
// final state is written once; no user code runs between the writes, so their order cannot be
// observed except through custom __setattr__ (which runs, as in eager).

type attrWrite struct {
	obj   *ObjV
	name  string
	value Value
}

type globalWrite struct {
	globals py.Obj // the globals dict
	src     Source // how to reach it: nil for the captured frame's own globals (STORE_GLOBAL)
	name    string
	value   Value
}

type cellWrite struct {
	cell  *CellV
	value Value
}

type sideEffects struct {
	lists  []*ListV
	deques []*DequeV
	dicts  []*DictV
	// dictsBefore holds each written dict's items as the frame found them (parallel to
	// dicts): the replay writes only the items that changed when no key was removed or moved.
	dictsBefore []DictV
	attrs       []*attrWrite
	globals     []*globalWrite
	cells       []*cellWrite
}

// Empty reports whether nothing outside the frame is written.
func (s *sideEffects) Empty() bool { return s.empty() }

func (s *sideEffects) empty() bool {
	return len(s.lists) == 0 && len(s.deques) == 0 && len(s.dicts) == 0 && len(s.attrs) == 0 && len(s.globals) == 0 && len(s.cells) == 0
}

// values lists every value the replay writes (their tensors must be graph outputs).
func (s *sideEffects) values() []Value {
	var out []Value
	for _, l := range s.lists {
		out = append(out, &ListV{Items: l.Items})
	}
	for _, d := range s.deques {
		out = append(out, &ListV{Items: d.Items})
	}
	for _, d := range s.dicts {
		out = append(out, &DictV{Keys: d.Keys, Vals: d.Vals})
	}
	for _, a := range s.attrs {
		out = append(out, a.value)
	}
	for _, g := range s.globals {
		out = append(out, g.value)
	}
	for _, c := range s.cells {
		out = append(out, c.value)
	}
	return out
}

// mutateList records that a list from outside the frame changes.
func (t *Tracer) mutateList(l *ListV) {
	for _, x := range t.effects.lists {
		if x == l {
			return
		}
	}
	t.effects.lists = append(t.effects.lists, l)
}

// mutateDeque records that a deque from outside the frame changes.
func (t *Tracer) mutateDeque(d *DequeV) {
	for _, x := range t.effects.deques {
		if x == d {
			return
		}
	}
	t.effects.deques = append(t.effects.deques, d)
}

// mutateDict records that a dict from outside the frame changes.
func (t *Tracer) mutateDict(d *DictV) {
	for _, x := range t.effects.dicts {
		if x == d {
			return
		}
	}
	t.effects.dicts = append(t.effects.dicts, d)
	t.effects.dictsBefore = append(t.effects.dictsBefore, DictV{Keys: slices.Clone(d.Keys), Vals: slices.Clone(d.Vals)})
}

// dictChanges lists the positions of d's items the replay must store (d[k] = v) to turn the
// dict as the frame found it (before) into d: items whose value is another object, and keys
// added at the end. ok is false when a key was removed or the order changed (the replay then
// rewrites the whole dict).
func dictChanges(before, d *DictV) (changed []int, ok bool) {
	if len(d.Keys) < len(before.Keys) {
		return nil, false
	}
	for i := range before.Keys {
		if !sameObject(before.Keys[i], d.Keys[i]) {
			return nil, false
		}
	}
	for i := range d.Keys {
		if i >= len(before.Keys) || !sameObject(before.Vals[i], d.Vals[i]) {
			changed = append(changed, i)
		}
	}
	return changed, true
}

// sameObject reports whether two trace values are certainly one Python object: one value (a
// lazily read one counts as what it was realized to), or both None, True or False.
func sameObject(a, b Value) bool {
	if l, ok := a.(*LazyV); ok && l.real != nil {
		a = l.real
	}
	if l, ok := b.(*LazyV); ok && l.real != nil {
		b = l.real
	}
	if a == b {
		return true
	}
	ca, okA := a.(*ConstV)
	cb, okB := b.(*ConstV)
	return okA && okB && ca.Kind == cb.Kind && (ca.Kind == py.KNone || ca.Kind == py.KBool && ca.I == cb.I)
}

// writeAttr records obj.name = v for an object from outside the frame.
func (t *Tracer) writeAttr(obj *ObjV, name string, v Value) {
	for _, a := range t.effects.attrs {
		if a.obj.Obj == obj.Obj && a.name == name {
			a.value = v
			return
		}
	}
	t.effects.attrs = append(t.effects.attrs, &attrWrite{obj: obj, name: name, value: v})
}

// pendingAttr is the value a traced write gave obj.name, if any.
func (t *Tracer) pendingAttr(obj py.Obj, name string) (Value, bool) {
	for _, a := range t.effects.attrs {
		if a.obj.Obj == obj && a.name == name {
			return a.value, true
		}
	}
	return nil, false
}

func (t *Tracer) writeGlobal(globals py.Obj, src Source, name string, v Value) {
	for _, g := range t.effects.globals {
		if g.globals == globals && g.name == name {
			g.value = v
			return
		}
	}
	t.effects.globals = append(t.effects.globals, &globalWrite{globals: globals, src: src, name: name, value: v})
}

func (t *Tracer) pendingGlobal(globals py.Obj, name string) (Value, bool) {
	for _, g := range t.effects.globals {
		if g.globals == globals && g.name == name {
			return g.value, true
		}
	}
	return nil, false
}

func (t *Tracer) writeCell(c *CellV, v Value) {
	c.Contents = v
	for _, w := range t.effects.cells {
		if w.cell == c {
			w.value = v
			return
		}
	}
	t.effects.cells = append(t.effects.cells, &cellWrite{cell: c, value: v})
}
