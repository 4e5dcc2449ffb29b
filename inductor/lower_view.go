package inductor

import (
	"ptgo/fxgraph"
)

// Views are index maps: each returns the input tensor re-indexed, no buffer, no copy. The map
// gives the input's view index in terms of the new view's variables; lowering composes it into
// every load that reads the view.

func viewInput(l *lowerer, n *fxgraph.Node) (*tensor, error) {
	t := l.tensorArg(n.Args[0])
	if t == nil {
		return nil, lowerError(n, "a view needs a tensor input")
	}
	return t, nil
}

func viewResult(t *tensor) *lowered { return &lowered{t: t} }

// lowerView lowers view(x, shape) (reshape without copy): dims are grouped into runs whose
// products agree; inside a run the flat position is split with // and %.
func lowerView(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	ms := metaSizes(m)
	if !symNumel(ms).Equal(symNumel(t.sizes)) {
		return nil, lowerError(n, "view to %s does not keep the %s elements of %s", symsV(ms), symNumel(t.sizes), symsV(t.sizes))
	}
	if anySymbolic(ms) || anySymbolic(t.sizes) {
		idx, reason := tryReshapeSym(t.sizes, ms)
		if reason == "" {
			return viewResult(t.view(ms, idx)), nil
		}
		// dims merged or split across a symbolic size: fine without index arithmetic when the
		// view regroups dims that are dense in its storage (an alias with the merged strides)
		if b, ok := l.regroupAlias(t, ms); ok {
			return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}, nil
		}
		refuseSym("%s", reason)
	}
	return viewResult(t.view(ms, reshapeIndex(staticSizes(t.sizes, ""), staticSizes(ms, "")))), nil
}

// tryReshapeSym is reshapeIndexSym, or the reason it refuses.
func tryReshapeSym(old, new []Sym) (out []Expr, reason string) {
	defer func() {
		if r := recover(); r != nil {
			sp, ok := r.(symPanic)
			if !ok {
				panic(r)
			}
			out, reason = nil, sp.reason
		}
	}()
	return reshapeIndexSym(old, new), ""
}

// reshapeGroups pairs runs of dims of old and new (size-1 dims left out) whose products agree,
// a side growing while its product divides the other's; ok false when they do not regroup.
func reshapeGroups(old, new []Sym) (groups [][2][]int, ok bool) {
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		if i < len(old) && isOne(old[i]) {
			i++
			continue
		}
		if j < len(new) && isOne(new[j]) {
			j++
			continue
		}
		if i >= len(old) || j >= len(new) {
			return nil, false
		}
		gi, gj := []int{i}, []int{j}
		po, pn := old[i], new[j]
		i++
		j++
		for !po.Equal(pn) {
			if _, ok := pn.DivExact(po); ok && i < len(old) {
				gi = append(gi, i)
				po = po.Mul(old[i])
				i++
			} else if _, ok := po.DivExact(pn); ok && j < len(new) {
				gj = append(gj, j)
				pn = pn.Mul(new[j])
				j++
			} else {
				return nil, false
			}
		}
		groups = append(groups, [2][]int{gi, gj})
	}
	return groups, true
}

// regroupAlias makes the view of t with sizes new an alias of t's storage when every run of
// dims it merges or splits is dense there (each dim's stride is the next one's times its
// size): the merged strides then need no division by a symbol.
func (l *lowerer) regroupAlias(t *tensor, new []Sym) (*Buffer, bool) {
	lay, ok := stridedLayout(t)
	if !ok {
		return nil, false
	}
	groups, ok := reshapeGroups(t.sizes, new)
	if !ok {
		return nil, false
	}
	strides := make([]Sym, len(new))
	for k := range strides {
		strides[k] = symc(1)
	}
	for _, g := range groups {
		gi, gj := g[0], g[1]
		// every non-size-1 old dim of the run in order; dense: stride[a] = stride[b]·size[b]
		var dense []int
		for _, d := range gi {
			if !isOne(t.sizes[d]) {
				dense = append(dense, d)
			}
		}
		for x := 0; x+1 < len(dense); x++ {
			a, b := dense[x], dense[x+1]
			if !lay.Strides[a].Equal(lay.Strides[b].Mul(t.sizes[b])) {
				return nil, false
			}
		}
		st := lay.Strides[dense[len(dense)-1]]
		for x := len(gj) - 1; x >= 0; x-- {
			strides[gj[x]] = st
			st = st.Mul(new[gj[x]])
		}
	}
	// size-1 dims: the stride of the dim after them times its size (any stride would do)
	acc := symc(1)
	for k := len(new) - 1; k >= 0; k-- {
		if isOne(new[k]) {
			strides[k] = acc
		} else {
			acc = strides[k].Mul(new[k])
		}
	}
	return l.alias(t.buf, new, Layout{Strides: strides, Offset: lay.Offset}), true
}

// reshapeIndexSym is reshapeIndex for symbolic sizes: dims are grouped into runs whose
// products agree (a side grows while its product divides the other's); inside a run every
// stride but the outermost dim's must be static (the outermost needs no modulo: its quotient
// is in range).
func reshapeIndexSym(old, new []Sym) []Expr {
	b := boundsOf(new)
	out := make([]Expr, len(old))
	for _, x := range old {
		if isConstSize(x, 0) {
			return out // no element at any size: nothing is indexed (as reshapeIndex)
		}
	}
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		if i < len(old) && isOne(old[i]) {
			i++
			continue
		}
		if j < len(new) && isOne(new[j]) {
			j++
			continue
		}
		if i >= len(old) || j >= len(new) {
			break
		}
		gi, gj := []int{i}, []int{j}
		po, pn := old[i], new[j]
		i++
		j++
		for !po.Equal(pn) {
			if _, ok := pn.DivExact(po); ok && i < len(old) {
				gi = append(gi, i)
				po = po.Mul(old[i])
				i++
			} else if _, ok := po.DivExact(pn); ok && j < len(new) {
				gj = append(gj, j)
				pn = pn.Mul(new[j])
				j++
			} else {
				refuseSym("a view of %s as %s (dims that do not regroup)", symsText(old), symsText(new))
			}
		}
		flat := Expr{}
		stride := int64(1)
		for k := len(gj) - 1; k >= 0; k-- {
			if !isOne(new[gj[k]]) {
				flat = flat.Add(Var(gj[k]).Scale(stride))
			}
			if k > 0 {
				stride *= staticSize(new[gj[k]], "a view that splits a symbolic dim")
			}
		}
		stride = 1
		for k := len(gi) - 1; k >= 0; k-- {
			d := gi[k]
			if !isOne(old[d]) {
				q := FloorDiv(flat, stride, b)
				if k > 0 {
					q = Mod(q, staticSize(old[d], "a view that merges a symbolic dim"), b)
				}
				out[d] = q
			}
			if k > 0 {
				stride *= staticSize(old[d], "a view that merges a symbolic dim")
			}
		}
	}
	return out
}

// reshapeIndex returns the index of shape old in terms of the variables of shape new (same
// number of elements, row-major order).
func reshapeIndex(old, new []int64) []Expr {
	b := Bounds(new)
	out := make([]Expr, len(old))
	if numel(old) == 0 {
		return out
	}
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		if i < len(old) && old[i] == 1 {
			i++
			continue
		}
		if j < len(new) && new[j] == 1 {
			j++
			continue
		}
		if i >= len(old) || j >= len(new) {
			break
		}
		gi, gj := []int{i}, []int{j}
		po, pn := old[i], new[j]
		i++
		j++
		for po != pn {
			if po < pn {
				gi = append(gi, i)
				po *= old[i]
				i++
			} else {
				gj = append(gj, j)
				pn *= new[j]
				j++
			}
		}
		// flat position inside the group, from the new dims
		flat := Expr{}
		stride := int64(1)
		for k := len(gj) - 1; k >= 0; k-- {
			if new[gj[k]] != 1 {
				flat = flat.Add(Var(gj[k]).Scale(stride))
			}
			stride *= new[gj[k]]
		}
		stride = 1
		for k := len(gi) - 1; k >= 0; k-- {
			d := gi[k]
			if old[d] != 1 {
				out[d] = Mod(FloorDiv(flat, stride, b), old[d], b)
			}
			stride *= old[d]
		}
	}
	return out
}

// lowerPermute lowers permute(x, dims): output dim k is input dim dims[k].
func lowerPermute(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	dims, ok := constInts(arg(n, 1, "dims"))
	if !ok || len(dims) != len(t.sizes) {
		return nil, lowerError(n, "permute needs a permutation of the %d dims", len(t.sizes))
	}
	sizes := make([]Sym, len(dims))
	m := make([]Expr, len(dims))
	seen := make([]bool, len(dims))
	for k, d := range dims {
		dd, ok := normDim(d, len(dims))
		if !ok || seen[dd] {
			return nil, lowerError(n, "dims %v is not a permutation", dims)
		}
		seen[dd] = true
		sizes[k] = t.sizes[dd]
		if !isOne(sizes[k]) {
			m[dd] = Var(k)
		}
	}
	return viewResult(t.view(sizes, m)), nil
}

// lowerExpand lowers expand(x, shape): new leading dims, size-1 dims broadcast (read at 0).
func lowerExpand(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	mt, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	shape := metaSizes(mt)
	if len(shape) < len(t.sizes) {
		return nil, lowerError(n, "expand to %v has fewer dims than %v", symsV(shape), symsV(t.sizes))
	}
	m := make([]Expr, len(t.sizes))
	off := len(shape) - len(t.sizes)
	for j, s := range t.sizes {
		switch {
		case s.Equal(shape[off+j]):
			if !isOne(s) {
				m[j] = Var(off + j)
			}
		case isOne(s):
		default:
			return nil, lowerError(n, "cannot expand dim %d of size %s to %s", j, s, shape[off+j])
		}
	}
	return viewResult(t.view(shape, m)), nil
}

// lowerSlice lowers slice(x, dim, start, end, step).
func lowerSlice(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	mt, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	d, ok := constInt(arg(n, 1, "dim"))
	dim, ok2 := normDim(d, len(t.sizes))
	if !ok || !ok2 || len(t.sizes) == 0 {
		return nil, lowerError(n, "slice needs a constant dim in range")
	}
	start := int64(0)
	var symStart *Sym // a symbolic start (a size expression)
	if a := arg(n, 2, "start"); !isNone(a) {
		if sz, ok := symArg(a); ok {
			symStart = &sz
		} else {
			v, ok := constInt(a)
			if !ok {
				return nil, lowerError(n, "slice start must be a constant int")
			}
			start = v
		}
	}
	step := int64(1)
	if a := arg(n, 4, "step"); !isNone(a) {
		v, ok := constInt(a)
		if !ok || v <= 0 {
			return nil, lowerError(n, "slice step must be a positive constant int")
		}
		step = v
	}
	if len(mt.Shape) != len(t.sizes) {
		return nil, lowerError(n, "the meta's shape %v does not keep the %d dims", mt.Shape, len(t.sizes))
	}
	m := indexVars(metaSizes(mt), 0)
	outSize := metaSizes(mt)[dim]
	k, static := t.sizes[dim].IsConst()
	switch {
	case symStart != nil:
		// a start the trace computed from the sizes: the meta's size says where the slice
		// ends, which the trace's guards keep in range (a start that may be negative would be
		// clamped or wrapped, which a polynomial cannot say)
		if !atLeastZero(*symStart) {
			refuseSym("a slice from %s (it may be negative)", *symStart)
		}
		m[dim] = m[dim].Scale(step).Add(symExpr(*symStart))
		return viewResult(t.view(metaSizes(mt), m)), nil
	case static:
		if start < 0 {
			start += k
		}
		start = max(0, min(start, k))
	case start >= 0 && start <= 2:
		// (a start within every size the symbol can have, ≥ 2, needs no clamping)
	case step == 1 && start > 2 && outSize.Equal(t.sizes[dim].AddConst(-start)):
		// x[:, 3:] of a symbolic dim the trace guarded to be at least 3 long
	case step == 1 && start < 0 && outSize.Equal(symc(-start)):
		// x[:, -3:] of a symbolic dim at least 3 long: it starts at size - 3
		m[dim] = m[dim].Add(symExpr(t.sizes[dim].AddConst(start)))
		return viewResult(t.view(metaSizes(mt), m)), nil
	default:
		refuseSym("a slice from %d of a symbolic dim %s", start, t.sizes[dim])
	}
	m[dim] = m[dim].Scale(step).AddConst(start)
	return viewResult(t.view(metaSizes(mt), m)), nil
}

// lowerSelect lowers select(x, dim, index).
func lowerSelect(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	d, ok := constInt(arg(n, 1, "dim"))
	dim, ok2 := normDim(d, len(t.sizes))
	idx, ok3 := constInt(arg(n, 2, "index"))
	symIdx, isSym := symArg(arg(n, 2, "index"))
	if !ok || !ok2 || !(ok3 || isSym) || len(t.sizes) == 0 {
		return nil, lowerError(n, "select needs a constant dim and index")
	}
	var at Expr
	if _, static := t.sizes[dim].IsConst(); static && !isSym {
		dsize := staticSize(t.sizes[dim], "a select")
		if idx < 0 {
			idx += dsize
		}
		if idx < 0 || idx >= dsize {
			return nil, lowerError(n, "index %d is out of range for dim %d of size %d", idx, dim, dsize)
		}
		at = Const(idx)
	} else {
		switch {
		case isSym && atLeastZero(symIdx):
			// an index the trace computed from the sizes (x[:, s0 - 1]), in range by its guards
			at = symExpr(symIdx)
		case !isSym && idx >= 0 && idx < 2:
			// in range of every size the symbol can have (≥ 2)
			at = Const(idx)
		case !isSym && idx < 0 && idx >= -2:
			// from the end: x[:, -1], the last of a symbolic length
			at = symExpr(t.sizes[dim].AddConst(idx))
		default:
			refuseSym("a select of %v from a symbolic dim %s", arg(n, 2, "index"), t.sizes[dim])
		}
	}
	var sizes []Sym
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if k == dim {
			m[k] = at
			continue
		}
		if !isOne(s) {
			m[k] = Var(len(sizes))
		}
		sizes = append(sizes, s)
	}
	return viewResult(t.view(sizes, m)), nil
}

// lowerSqueeze lowers squeeze(x, dims): the listed size-1 dims are dropped (all of them when
// dims is None).
func lowerSqueeze(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	drop := make([]bool, len(t.sizes))
	a := arg(n, 1, "dims")
	if isNone(a) {
		for k, s := range t.sizes {
			drop[k] = isOne(s)
		}
	} else {
		dims, ok := constInts(a)
		if !ok {
			return nil, lowerError(n, "squeeze dims must be constant ints")
		}
		for _, d := range dims {
			k, ok := normDim(d, len(t.sizes))
			if !ok {
				return nil, lowerError(n, "dim %d is out of range", d)
			}
			if len(t.sizes) > 0 && isOne(t.sizes[k]) {
				drop[k] = true
			}
		}
	}
	var sizes []Sym
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if drop[k] {
			continue
		}
		if !isOne(s) {
			m[k] = Var(len(sizes))
		}
		sizes = append(sizes, s)
	}
	return viewResult(t.view(sizes, m)), nil
}

// lowerUnsqueeze lowers unsqueeze(x, dim).
func lowerUnsqueeze(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	d, ok := constInt(arg(n, 1, "dim"))
	if !ok {
		return nil, lowerError(n, "unsqueeze needs a constant dim")
	}
	nd := len(t.sizes) + 1
	if d < 0 {
		d += int64(nd)
	}
	if d < 0 || d >= int64(nd) {
		return nil, lowerError(n, "dim %d is out of range for %d dims", d, nd)
	}
	sizes := make([]Sym, 0, nd)
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if int64(k) == d {
			sizes = append(sizes, symc(1))
		}
		if !isOne(s) {
			m[k] = Var(len(sizes))
		}
		sizes = append(sizes, s)
	}
	if int(d) == len(t.sizes) {
		sizes = append(sizes, symc(1))
	}
	return viewResult(t.view(sizes, m)), nil
}

// lowerAsStrided lowers as_strided(x, size, stride, offset): an alias of x's storage with the
// layout of the node's meta (the storage offset is absolute, as in torch).
func lowerAsStrided(l *lowerer, n *fxgraph.Node) (*lowered, error) {
	t, err := viewInput(l, n)
	if err != nil {
		return nil, err
	}
	m, err := tensorMeta(n)
	if err != nil {
		return nil, err
	}
	base := l.realize(t)
	b := l.alias(base, metaSizes(m), layoutOf(m))
	return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}, nil
}
