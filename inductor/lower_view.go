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
	if numel(m.Shape) != numel(t.sizes) {
		return nil, lowerError(n, "view to %v does not keep the %d elements of %v", m.Shape, numel(t.sizes), t.sizes)
	}
	return viewResult(t.view(m.Shape, reshapeIndex(t.sizes, m.Shape))), nil
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
	sizes := make([]int64, len(dims))
	m := make([]Expr, len(dims))
	seen := make([]bool, len(dims))
	for k, d := range dims {
		dd, ok := normDim(d, len(dims))
		if !ok || seen[dd] {
			return nil, lowerError(n, "dims %v is not a permutation", dims)
		}
		seen[dd] = true
		sizes[k] = t.sizes[dd]
		if sizes[k] != 1 {
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
	shape := mt.Shape
	if len(shape) < len(t.sizes) {
		return nil, lowerError(n, "expand to %v has fewer dims than %v", shape, t.sizes)
	}
	m := make([]Expr, len(t.sizes))
	off := len(shape) - len(t.sizes)
	for j, s := range t.sizes {
		switch {
		case s == shape[off+j]:
			if s != 1 {
				m[j] = Var(off + j)
			}
		case s == 1:
		default:
			return nil, lowerError(n, "cannot expand dim %d of size %d to %d", j, s, shape[off+j])
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
	size := t.sizes[dim]
	start := int64(0)
	if a := arg(n, 2, "start"); !isNone(a) {
		v, ok := constInt(a)
		if !ok {
			return nil, lowerError(n, "slice start must be a constant int")
		}
		start = v
	}
	step := int64(1)
	if a := arg(n, 4, "step"); !isNone(a) {
		v, ok := constInt(a)
		if !ok || v <= 0 {
			return nil, lowerError(n, "slice step must be a positive constant int")
		}
		step = v
	}
	if start < 0 {
		start += size
	}
	start = max(0, min(start, size))
	m := indexVars(mt.Shape, 0)
	if len(mt.Shape) != len(t.sizes) {
		return nil, lowerError(n, "the meta's shape %v does not keep the %d dims", mt.Shape, len(t.sizes))
	}
	m[dim] = m[dim].Scale(step).AddConst(start)
	return viewResult(t.view(mt.Shape, m)), nil
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
	if !ok || !ok2 || !ok3 || len(t.sizes) == 0 {
		return nil, lowerError(n, "select needs a constant dim and index")
	}
	if idx < 0 {
		idx += t.sizes[dim]
	}
	if idx < 0 || idx >= t.sizes[dim] {
		return nil, lowerError(n, "index %d is out of range for dim %d of size %d", idx, dim, t.sizes[dim])
	}
	var sizes []int64
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if k == dim {
			m[k] = Const(idx)
			continue
		}
		if s != 1 {
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
			drop[k] = s == 1
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
			if len(t.sizes) > 0 && t.sizes[k] == 1 {
				drop[k] = true
			}
		}
	}
	var sizes []int64
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if drop[k] {
			continue
		}
		if s != 1 {
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
	sizes := make([]int64, 0, nd)
	m := make([]Expr, len(t.sizes))
	for k, s := range t.sizes {
		if int64(k) == d {
			sizes = append(sizes, 1)
		}
		if s != 1 {
			m[k] = Var(len(sizes))
		}
		sizes = append(sizes, s)
	}
	if int(d) == len(t.sizes) {
		sizes = append(sizes, 1)
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
	b := l.alias(base, m.Shape, layoutOf(m))
	return &lowered{t: &tensor{buf: b, sizes: b.Sizes}}, nil
}
