package bytecode

import (
	"ptgo/bytecode/py"
)

// itertools as lazy iterators (IterV with more), following CPython's itertoolsmodule.c: which
// arguments are listed when the iterator is made (product, combinations, permutations take
// tuples of their inputs), which are consumed on demand (chain, islice, accumulate, zip_longest,
// starmap, ...), and how far each consumes its input (islice skips to its stop). The infinite
// ones (count, cycle, repeat without times) are only ever consumed item by item: by zip, islice,
// next() or a loop that breaks out.

func (t *Tracer) itClass(name string) py.Obj { return t.env.Known("itertools." + name) }

// noKw refuses keyword arguments a function does not take.
func noKw(f *frame, name string, kw []kwArg, allowed ...string) error {
	for _, k := range kw {
		ok := false
		for _, a := range allowed {
			ok = ok || k.Name == a
		}
		if !ok {
			return f.unsupported("eager raises TypeError", "%s() got an unexpected keyword argument %q", name, k.Name)
		}
	}
	return nil
}

// bindSlots binds a call's arguments to parameters that are each positional or keyword (a
// namedtuple's fields, torch.as_tensor's data, dtype, device): one value per name, nil where
// none was given, with eager's TypeErrors for too many, unknown or repeated arguments.
func bindSlots(f *frame, name string, names []string, args []Value, kw []kwArg) ([]Value, error) {
	if len(args) > len(names) {
		return nil, f.unsupported("eager raises TypeError", "%s() takes %d positional arguments but %d were given", name, len(names), len(args))
	}
	if err := noKw(f, name, kw, names...); err != nil {
		return nil, err
	}
	slots := make([]Value, len(names))
	copy(slots, args)
	for _, k := range kw {
		i := indexOf(names, k.Name)
		if slots[i] != nil {
			return nil, f.unsupported("eager raises TypeError", "%s() got multiple values for argument %q", name, k.Name)
		}
		slots[i] = k.Val
	}
	return slots, nil
}

func kwValue(kw []kwArg, name string) Value {
	for _, k := range kw {
		if k.Name == name {
			return k.Val
		}
	}
	return nil
}

func itChain(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "chain", kw); err != nil {
		return nil, err
	}
	return t.chainOf(f, &IterV{Items: append([]Value(nil), args...)}), nil
}

func itChainFromIterable(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "chain.from_iterable() takes exactly one argument")
	}
	outer, err := t.iter(f, args[0])
	if err != nil {
		return nil, err
	}
	return t.chainOf(f, outer), nil
}

// chainOf yields the items of each iterable outer produces, taking iter() of each when reached.
func (t *Tracer) chainOf(f *frame, outer *IterV) *IterV {
	var cur *IterV
	return lazyIter(t.itClass("chain"), false, func() (Value, bool, error) {
		for {
			if cur == nil {
				src, ok, err := outer.next()
				if !ok || err != nil {
					return nil, false, err
				}
				if cur, err = t.iter(f, src); err != nil {
					return nil, false, err
				}
			}
			v, ok, err := cur.next()
			if err != nil {
				return nil, false, err
			}
			if ok {
				return v, true, nil
			}
			cur = nil
		}
	})
}

func itProduct(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "product", kw, "repeat"); err != nil {
		return nil, err
	}
	repeat := int64(1)
	if r := kwValue(kw, "repeat"); r != nil {
		var err error
		if repeat, err = intArg(t, f, r, "product repeat"); err != nil {
			return nil, err
		}
		if repeat < 0 {
			return nil, f.unsupported("eager raises ValueError", "repeat argument cannot be negative")
		}
	}
	var pools [][]Value
	for _, a := range args {
		items, err := t.unpack(f, a)
		if err != nil {
			return nil, err
		}
		pools = append(pools, items)
	}
	var all [][]Value
	for i := int64(0); i < repeat; i++ {
		all = append(all, pools...)
	}
	idx := make([]int, len(all))
	done := false
	for _, p := range all {
		done = done || len(p) == 0
	}
	return lazyIter(t.itClass("product"), false, func() (Value, bool, error) {
		if done {
			return nil, false, nil
		}
		tup := make([]Value, len(all))
		for i, p := range all {
			tup[i] = p[idx[i]]
		}
		// Advance the rightmost index, carrying to the left.
		done = true
		for i := len(all) - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < len(all[i]) {
				done = false
				break
			}
			idx[i] = 0
		}
		return &TupleV{Items: tup}, true, nil
	}), nil
}

// itCombinations is combinations(iterable, r) or combinations_with_replacement: index tuples in
// lexicographic order, as the documentation's reference implementations produce them.
func itCombinations(replace bool) specialFn {
	name := "combinations"
	if replace {
		name = "combinations_with_replacement"
	}
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if err := noKw(f, name, kw, "r", "iterable"); err != nil {
			return nil, err
		}
		iterable, rv := kwValue(kw, "iterable"), kwValue(kw, "r")
		if len(args) > 0 {
			iterable = args[0]
		}
		if len(args) > 1 {
			rv = args[1]
		}
		if iterable == nil || rv == nil {
			return nil, f.unsupported("eager raises TypeError", "%s() missing required arguments", name)
		}
		pool, err := t.unpack(f, iterable)
		if err != nil {
			return nil, err
		}
		r, err := intArg(t, f, rv, name+" r")
		if err != nil {
			return nil, err
		}
		if r < 0 {
			return nil, f.unsupported("eager raises ValueError", "r must be non-negative")
		}
		n := len(pool)
		idx := make([]int, r)
		for i := range idx {
			if !replace {
				idx[i] = i
			}
		}
		done := (!replace && int(r) > n) || (replace && n == 0 && r > 0)
		return lazyIter(t.itClass(name), false, func() (Value, bool, error) {
			if done {
				return nil, false, nil
			}
			tup := make([]Value, r)
			for i, j := range idx {
				tup[i] = pool[j]
			}
			// Next index tuple: find the rightmost index that can still grow.
			done = true
			for i := int(r) - 1; i >= 0; i-- {
				limit := i + n - int(r)
				if replace {
					limit = n - 1
				}
				if idx[i] < limit {
					idx[i]++
					for j := i + 1; j < int(r); j++ {
						if replace {
							idx[j] = idx[i]
						} else {
							idx[j] = idx[j-1] + 1
						}
					}
					done = false
					break
				}
			}
			return &TupleV{Items: tup}, true, nil
		}), nil
	}
}

func itPermutations(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "permutations", kw, "r", "iterable"); err != nil {
		return nil, err
	}
	iterable, rv := kwValue(kw, "iterable"), kwValue(kw, "r")
	if len(args) > 0 {
		iterable = args[0]
	}
	if len(args) > 1 {
		rv = args[1]
	}
	if iterable == nil {
		return nil, f.unsupported("eager raises TypeError", "permutations() missing required argument 'iterable'")
	}
	pool, err := t.unpack(f, iterable)
	if err != nil {
		return nil, err
	}
	n := len(pool)
	r := int64(n)
	if rv != nil && !isNone(rv) {
		if r, err = intArg(t, f, rv, "permutations r"); err != nil {
			return nil, err
		}
		if r < 0 {
			return nil, f.unsupported("eager raises ValueError", "r must be non-negative")
		}
	}
	// The documentation's reference algorithm: indices and cycles.
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i
	}
	cycles := make([]int, r)
	for i := range cycles {
		cycles[i] = n - i
	}
	first, done := true, int(r) > n
	emit := func() Value {
		tup := make([]Value, r)
		for i := range tup {
			tup[i] = pool[indices[i]]
		}
		return &TupleV{Items: tup}
	}
	return lazyIter(t.itClass("permutations"), false, func() (Value, bool, error) {
		if done {
			return nil, false, nil
		}
		if first {
			first = false
			return emit(), true, nil
		}
		for i := int(r) - 1; i >= 0; i-- {
			cycles[i]--
			if cycles[i] == 0 {
				moved := indices[i]
				copy(indices[i:], indices[i+1:])
				indices[n-1] = moved
				cycles[i] = n - i
				continue
			}
			j := cycles[i]
			indices[i], indices[n-j] = indices[n-j], indices[i]
			return emit(), true, nil
		}
		done = true
		return nil, false, nil
	}), nil
}

// optIndex reads an islice bound: None or a non-negative int.
func optIndex(t *Tracer, f *frame, v Value, what string) (int64, bool, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return 0, false, err
	}
	if isNone(v) {
		return 0, false, nil
	}
	n, err := intArg(t, f, v, what)
	if err != nil {
		return 0, false, err
	}
	if n < 0 {
		return 0, false, f.unsupported("eager raises ValueError", "Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.")
	}
	return n, true, nil
}

func itISlice(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(kw) > 0 || len(args) < 2 || len(args) > 4 {
		return nil, f.unsupported("eager raises TypeError", "islice() takes 2 to 4 positional arguments")
	}
	it, err := t.iter(f, args[0])
	if err != nil {
		return nil, err
	}
	start, step := int64(0), int64(1)
	var stop int64
	var hasStop bool
	if len(args) == 2 {
		if stop, hasStop, err = optIndex(t, f, args[1], "islice stop"); err != nil {
			return nil, err
		}
	} else {
		var has bool
		if start, has, err = optIndex(t, f, args[1], "islice start"); err != nil {
			return nil, err
		} else if !has {
			start = 0
		}
		if stop, hasStop, err = optIndex(t, f, args[2], "islice stop"); err != nil {
			return nil, err
		}
		if len(args) == 4 {
			if step, has, err = optIndex(t, f, args[3], "islice step"); err != nil {
				return nil, err
			} else if !has {
				step = 1
			} else if step == 0 {
				return nil, f.unsupported("eager raises ValueError", "Step for islice() must be a positive integer or None.")
			}
		}
	}
	if hasStop && start > stop {
		start = stop
	}
	cnt, next := int64(0), start
	return lazyIter(t.itClass("islice"), it.Infinite && !hasStop, func() (Value, bool, error) {
		// CPython's islice_next: skip to next (clamped to stop), stop there, take one.
		for cnt < next {
			_, ok, err := it.next()
			if !ok || err != nil {
				return nil, false, err
			}
			cnt++
		}
		if hasStop && cnt >= stop {
			return nil, false, nil
		}
		v, ok, err := it.next()
		if !ok || err != nil {
			return nil, false, err
		}
		cnt++
		next += step
		if hasStop && next > stop {
			next = stop
		}
		return v, true, nil
	}), nil
}

func itAccumulate(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "accumulate", kw, "initial", "func", "iterable"); err != nil {
		return nil, err
	}
	iterable, fn := kwValue(kw, "iterable"), kwValue(kw, "func")
	if len(args) > 0 {
		iterable = args[0]
	}
	if len(args) > 1 {
		fn = args[1]
	}
	if iterable == nil || len(args) > 2 {
		return nil, f.unsupported("eager raises TypeError", "accumulate() takes an iterable and a function")
	}
	if fn != nil && isNone(fn) {
		fn = nil
	}
	it, err := t.iter(f, iterable)
	if err != nil {
		return nil, err
	}
	var acc Value
	initial := kwValue(kw, "initial")
	if initial != nil && isNone(initial) {
		initial = nil
	}
	return lazyIter(t.itClass("accumulate"), it.Infinite, func() (Value, bool, error) {
		if initial != nil {
			acc, initial = initial, nil
			return acc, true, nil
		}
		v, ok, err := it.next()
		if !ok || err != nil {
			return nil, false, err
		}
		switch {
		case acc == nil:
			acc = v
		case fn == nil:
			acc, err = t.binaryOp(f, 0, acc, v)
		default:
			acc, err = t.call(f, fn, []Value{acc, v}, nil)
		}
		return acc, err == nil, err
	}), nil
}

func itRepeat(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "repeat", kw, "object", "times"); err != nil {
		return nil, err
	}
	obj, times := kwValue(kw, "object"), kwValue(kw, "times")
	if len(args) > 0 {
		obj = args[0]
	}
	if len(args) > 1 {
		times = args[1]
	}
	if obj == nil || len(args) > 2 {
		return nil, f.unsupported("eager raises TypeError", "repeat() takes an object and a count")
	}
	if times == nil {
		return lazyIter(t.itClass("repeat"), true, func() (Value, bool, error) { return obj, true, nil }), nil
	}
	n, err := intArg(t, f, times, "repeat times")
	if err != nil {
		return nil, err
	}
	return lazyIter(t.itClass("repeat"), false, func() (Value, bool, error) {
		if n <= 0 {
			return nil, false, nil
		}
		n--
		return obj, true, nil
	}), nil
}

func itCount(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "count", kw, "start", "step"); err != nil {
		return nil, err
	}
	var start, step Value = intV(0), intV(1)
	if v := kwValue(kw, "start"); v != nil {
		start = v
	}
	if v := kwValue(kw, "step"); v != nil {
		step = v
	}
	if len(args) > 0 {
		start = args[0]
	}
	if len(args) > 1 {
		step = args[1]
	}
	for _, v := range []*Value{&start, &step} {
		r, err := t.realize(f, *v)
		if err != nil {
			return nil, err
		}
		if c, ok := r.(*ConstV); !ok || !c.IsNumber() {
			return nil, f.unsupported("", "itertools.count of %s", r.Describe())
		}
		*v = r
	}
	cur := start
	return lazyIter(t.itClass("count"), true, func() (Value, bool, error) {
		v := cur
		var err error
		cur, err = t.binaryOp(f, 0, cur, step)
		return v, err == nil, err
	}), nil
}

func itCycle(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "cycle expected 1 argument")
	}
	it, err := t.iter(f, args[0])
	if err != nil {
		return nil, err
	}
	var saved []Value
	pos, firstPass := 0, true
	return lazyIter(t.itClass("cycle"), true, func() (Value, bool, error) {
		if firstPass {
			v, ok, err := it.next()
			if err != nil {
				return nil, false, err
			}
			if ok {
				saved = append(saved, v)
				return v, true, nil
			}
			firstPass = false
		}
		if len(saved) == 0 {
			return nil, false, nil
		}
		v := saved[pos%len(saved)]
		pos++
		return v, true, nil
	}), nil
}

func itZipLongest(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "zip_longest", kw, "fillvalue"); err != nil {
		return nil, err
	}
	var fill Value = noneV
	if v := kwValue(kw, "fillvalue"); v != nil {
		fill = v
	}
	its, _, err := t.iters(f, args)
	if err != nil {
		return nil, err
	}
	active := len(its)
	live := make([]bool, len(its))
	for i := range live {
		live[i] = true
	}
	anyInfinite := false
	for _, it := range its {
		anyInfinite = anyInfinite || it.Infinite
	}
	return lazyIter(t.itClass("zip_longest"), anyInfinite, func() (Value, bool, error) {
		if active == 0 {
			return nil, false, nil
		}
		tup := make([]Value, len(its))
		for i, it := range its {
			if !live[i] {
				tup[i] = fill
				continue
			}
			v, ok, err := it.next()
			if err != nil {
				return nil, false, err
			}
			if !ok {
				live[i] = false
				if active--; active == 0 {
					return nil, false, nil
				}
				v = fill
			}
			tup[i] = v
		}
		return &TupleV{Items: tup}, true, nil
	}), nil
}

func itStarmap(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "starmap expected 2 arguments")
	}
	it, err := t.iter(f, args[1])
	if err != nil {
		return nil, err
	}
	fn := args[0]
	return lazyIter(t.itClass("starmap"), it.Infinite, func() (Value, bool, error) {
		v, ok, err := it.next()
		if !ok || err != nil {
			return nil, false, err
		}
		fargs, err := t.unpack(f, v)
		if err != nil {
			return nil, false, err
		}
		r, err := t.call(f, fn, fargs, nil)
		return r, err == nil, err
	}), nil
}

// itWhile is takewhile (take=true) or dropwhile.
func itWhile(take bool) specialFn {
	name := "dropwhile"
	if take {
		name = "takewhile"
	}
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) != 2 || len(kw) > 0 {
			return nil, f.unsupported("eager raises TypeError", "%s expected 2 arguments", name)
		}
		it, err := t.iter(f, args[1])
		if err != nil {
			return nil, err
		}
		pred, switched := args[0], false
		return lazyIter(t.itClass(name), it.Infinite && !take, func() (Value, bool, error) {
			for {
				if take && switched {
					return nil, false, nil
				}
				v, ok, err := it.next()
				if !ok || err != nil {
					return nil, false, err
				}
				if !take && switched {
					return v, true, nil
				}
				r, err := t.call(f, pred, []Value{v}, nil)
				if err != nil {
					return nil, false, err
				}
				b, err := t.truthy(f, r)
				if err != nil {
					return nil, false, err
				}
				if take {
					if b {
						return v, true, nil
					}
					switched = true
					continue
				}
				if !b {
					switched = true
					return v, true, nil
				}
			}
		}), nil
	}
}

func itFilterFalse(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "filterfalse expected 2 arguments")
	}
	it, err := t.iter(f, args[1])
	if err != nil {
		return nil, err
	}
	pred, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	return lazyIter(t.itClass("filterfalse"), it.Infinite, func() (Value, bool, error) {
		for {
			v, ok, err := it.next()
			if !ok || err != nil {
				return nil, false, err
			}
			test := v
			if !isNone(pred) {
				if test, err = t.call(f, pred, []Value{v}, nil); err != nil {
					return nil, false, err
				}
			}
			b, err := t.truthy(f, test)
			if err != nil {
				return nil, false, err
			}
			if !b {
				return v, true, nil
			}
		}
	}), nil
}

func itCompress(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 2 || len(kw) > 0 {
		return nil, f.unsupported("", "compress with keyword arguments")
	}
	its, infinite, err := t.iters(f, args)
	if err != nil {
		return nil, err
	}
	return lazyIter(t.itClass("compress"), infinite, func() (Value, bool, error) {
		for {
			v, ok, err := its[0].next()
			if !ok || err != nil {
				return nil, false, err
			}
			s, ok, err := its[1].next()
			if !ok || err != nil {
				return nil, false, err
			}
			b, err := t.truthy(f, s)
			if err != nil {
				return nil, false, err
			}
			if b {
				return v, true, nil
			}
		}
	}), nil
}

func itPairwise(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "pairwise expected 1 argument")
	}
	it, err := t.iter(f, args[0])
	if err != nil {
		return nil, err
	}
	var prev Value
	return lazyIter(t.itClass("pairwise"), it.Infinite, func() (Value, bool, error) {
		if prev == nil {
			v, ok, err := it.next()
			if !ok || err != nil {
				return nil, false, err
			}
			prev = v
		}
		v, ok, err := it.next()
		if !ok || err != nil {
			return nil, false, err
		}
		pair := &TupleV{Items: []Value{prev, v}}
		prev = v
		return pair, true, nil
	}), nil
}
