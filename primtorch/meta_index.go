package primtorch

import (
	"strings"
)

// indexItem is one element of a getitem/setitem index after normalisation.
type indexItem struct {
	kind   byte // 'i' int, 's' slice, 'n' None, 'e' Ellipsis, 'b' Python bool, 't' tensor
	i      int64
	si     SymInt // 'i': the index as a SymInt (symbolic for x[T - 1]; i is its hint)
	slice  Slice
	b      bool
	tensor *TensorMeta
	list   Value // the (nested) list of numbers tensor was made from, nil for a tensor index
}

// listIndexMeta converts a nested list of ints (x[[0, 2]]) to the int64 (or bool) tensor torch
// makes of it.
func listIndexMeta(v []Value) (*TensorMeta, error) {
	var shape []int64
	allBool := true
	var walk func(v Value, depth int) error
	walk = func(v Value, depth int) error {
		if s, ok := sequence(v); ok {
			if depth == len(shape) {
				shape = append(shape, int64(len(s)))
			} else if shape[depth] != int64(len(s)) {
				return valueErrorf("expected sequence of length %d at dim %d (got %d)", shape[depth], depth, len(s))
			}
			for _, e := range s {
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		switch v.(type) {
		case bool:
		case int64, int:
			allBool = false
		default:
			return indexErrorf("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got %s)", pyTypeName(v))
		}
		return nil
	}
	if err := walk(v, 0); err != nil {
		return nil, err
	}
	dt := Int64
	if allBool && len(v) > 0 {
		dt = Bool
	}
	return newTensor(dt, shape, CPU), nil
}

// treatSequenceAsTuple is torch's rule for a list index: a list holding slices, None, Ellipsis,
// tensors or sequences indexes several dims (numpy's legacy behaviour); a list of numbers is one
// index tensor.
func treatSequenceAsTuple(s []Value) bool {
	if len(s) >= 32 {
		return false
	}
	for _, e := range s {
		switch e.(type) {
		case *TensorMeta, Slice, Ellipsis, nil, []Value, Tuple:
			return true
		}
	}
	return false
}

func parseIndex(index Value) ([]indexItem, error) {
	var elems []Value
	switch ix := index.(type) {
	case Tuple:
		elems = ix
	case []Value:
		if treatSequenceAsTuple(ix) {
			elems = ix
		} else {
			t, err := listIndexMeta(ix)
			if err != nil {
				return nil, err
			}
			return []indexItem{{kind: 't', tensor: t, list: ix}}, nil
		}
	default:
		elems = []Value{index}
	}
	items := make([]indexItem, 0, len(elems))
	for _, e := range elems {
		switch e := e.(type) {
		case int64:
			items = append(items, indexItem{kind: 'i', i: e, si: SymConst(e)})
		case int:
			items = append(items, indexItem{kind: 'i', i: int64(e), si: SymConst(int64(e))})
		case SymInt:
			items = append(items, indexItem{kind: 'i', i: e.Hint(), si: e})
		case Slice:
			items = append(items, indexItem{kind: 's', slice: e})
		case nil:
			items = append(items, indexItem{kind: 'n'})
		case Ellipsis:
			items = append(items, indexItem{kind: 'e'})
		case bool:
			items = append(items, indexItem{kind: 'b', b: e})
		case *TensorMeta:
			items = append(items, indexItem{kind: 't', tensor: e})
		case []Value, Tuple:
			s, _ := sequence(e)
			t, err := listIndexMeta(s)
			if err != nil {
				return nil, err
			}
			items = append(items, indexItem{kind: 't', tensor: t, list: e})
		default:
			return nil, indexErrorf("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got %s)", pyTypeName(e))
		}
	}
	return items, nil
}

// sliceMeta is at::slice(dim, start, stop, step) with Python's None defaults and clamping (a
// symbolic size clamps with guards).
func sliceMeta(self *TensorMeta, d int, s Slice) (*TensorMeta, error) {
	sizes, strides := self.SymSizes(), self.SymStrides()
	start, end, step, err := sliceBounds(s, sizes[d])
	if err != nil {
		return nil, err
	}
	n, _ := end.Sub(start).AddConst(step - 1).FloorDiv(step)
	off := self.SymOffset().Add(start.Mul(strides[d]))
	sizes[d], strides[d] = n, strides[d].MulConst(step)
	return withSym(self, sizes, strides, off), nil
}

// sliceBounds clamps a slice's bounds to a dim of size `size` as getitem does: 0 <= start <=
// end <= size (the length is ceil((end - start) / step)), each comparison with a symbol guarded.
func sliceBounds(s Slice, size SymInt) (start, end SymInt, step int64, err error) {
	step = 1
	if s.Step != nil {
		step = *s.Step
	}
	if step <= 0 {
		return start, end, step, valueErrorf("step must be greater than zero")
	}
	start, end = SymConst(0), size
	if b, ok := s.StartSym(); ok {
		start = b
	}
	if b, ok := s.StopSym(); ok {
		end = b
	}
	if symLt(start, SymConst(0)) {
		start = start.Add(size)
	}
	if symLt(end, SymConst(0)) {
		end = end.Add(size)
	}
	start = symClampBelow(start, SymConst(0))
	start = symClampAbove(start, size)
	end = symClampAbove(symClampBelow(end, start), size)
	return start, end, step, nil
}

// symClampAbove is min(x, hi) for a slice bound, decided at the hints with the guard that also
// covers x == hi (where both give the same slice): bias[:T] of a 512-row buffer keeps T with the
// guard T <= 512, x[:10] of s0 rows with s0 = 8 takes s0 with 10 >= s0. At equal hints the bound
// stays unless it is a constant and hi is not (the slice keeps the symbol either way).
func symClampAbove(x, hi SymInt) SymInt {
	if d, ok := x.Sub(hi).IsConst(); ok {
		if d > 0 {
			return hi
		}
		return x
	}
	_, xConst := x.IsConst()
	if xh, hh := x.Hint(), hi.Hint(); xh > hh || xh == hh && xConst {
		symGe(x, hi) // holds at the hints: guarded
		return hi
	}
	symLe(x, hi)
	return x
}

// symClampBelow is max(x, lo), as symClampAbove decides.
func symClampBelow(x, lo SymInt) SymInt {
	if d, ok := x.Sub(lo).IsConst(); ok {
		if d < 0 {
			return lo
		}
		return x
	}
	_, xConst := x.IsConst()
	if xh, lh := x.Hint(), lo.Hint(); xh < lh || xh == lh && xConst {
		symLe(x, lo)
		return lo
	}
	symGe(x, lo)
	return x
}

// applySlicing applies the basic part of an index (ints, slices, None, Ellipsis) as views and
// returns the view with the advanced (tensor) indices by dim of that view.
func applySlicing(self *TensorMeta, items []indexItem) (*TensorMeta, []*TensorMeta, error) {
	specified := 0
	for _, it := range items {
		switch it.kind {
		case 'i', 's':
			specified++
		case 't':
			if it.tensor.DType == Bool || it.tensor.DType == UInt8 {
				specified += max(len(it.tensor.Shape), 1)
				if len(it.tensor.Shape) == 0 {
					specified--
				}
			} else {
				specified++
			}
		}
	}
	if specified > len(self.Shape) {
		if len(self.Shape) == 0 && len(items) == 1 && items[0].kind == 'i' {
			return nil, nil, indexErrorf("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
		}
		return nil, nil, indexErrorf("too many indices for tensor of dimension %d", len(self.Shape))
	}
	r := self.Clone()
	var adv []*TensorMeta
	record := func(t *TensorMeta, dim int) {
		for len(adv) <= dim {
			adv = append(adv, nil)
		}
		adv[dim] = t
	}
	dim := 0
	var err error
	for _, it := range items {
		switch it.kind {
		case 'i':
			if dim < len(r.Shape) && (symGe(it.si, r.SymSizes()[dim]) || symLt(it.si, r.SymSizes()[dim].Neg())) {
				return nil, nil, indexErrorf("index %d is out of bounds for dimension %d with size %d", it.i, dim, r.Shape[dim])
			}
			if r, err = symSelect(r, int64(dim), it.si); err != nil {
				return nil, nil, err
			}
		case 's':
			if r, err = sliceMeta(r, dim, it.slice); err != nil {
				return nil, nil, err
			}
			dim++
		case 'e':
			dim += len(self.Shape) - specified
		case 'n':
			r = unsqueezeMeta(r, dim)
			dim++
		case 'b':
			r = unsqueezeMeta(r, dim)
			n := int64(0)
			if it.b {
				n = 1
			}
			record(newTensor(Int64, []int64{n}, deviceOf(self)), dim)
			dim++
		case 't':
			t := it.tensor
			switch {
			case len(t.Shape) == 0 && (t.DType == Bool || t.DType == UInt8):
				return nil, nil, dataDependentf("indexing with a 0-dim bool tensor depends on its value")
			case len(t.Shape) == 0 && t.DType.IsIntegral(false):
				return nil, nil, dataDependentf("indexing with a 0-dim integer tensor selects by its value")
			case t.DType == Bool || t.DType == UInt8:
				for k := range t.Shape {
					if dim+k >= len(r.Shape) || !symEq(t.SymSizes()[k], r.SymSizes()[dim+k]) {
						return nil, nil, indexErrorf("The shape of the mask %s at index %d does not match the shape of the indexed tensor %s at index %d", fmtShape(t.Shape), k, fmtShape(r.Shape), dim+k)
					}
				}
				record(t, dim)
				dim += len(t.Shape)
			case t.DType == Int64 || t.DType == Int32 && behavior().Int32Indices:
				record(t, dim)
				dim++
			case behavior().Int32Indices:
				return nil, nil, indexErrorf("tensors used as indices must be long, int, byte or bool tensors")
			default:
				return nil, nil, indexErrorf("tensors used as indices must be long, byte or bool tensors")
			}
		}
	}
	return r, adv, nil
}

// advancedIndex is at::index(self, indices): indices[d] indexes dim d (nil: the whole dim).
// The output layout is TensorIterator's over the restrided source (indexed dims replaced by the
// broadcast index shape with stride 0) and the index tensors reshaped to line up with it.
func advancedIndex(self *TensorMeta, indices []*TensorMeta) (*TensorMeta, error) {
	for _, t := range indices {
		if t != nil && (t.DType == Bool || t.DType == UInt8) {
			return nil, dataDependentf("indexing with a bool mask: the result's size is the number of true elements")
		}
	}
	var shapes [][]SymInt
	for _, t := range indices {
		if t != nil {
			shapes = append(shapes, t.SymSizes())
		}
	}
	bshape, err := SymBroadcastShapes(shapes...)
	if err != nil {
		strs := make([]string, len(shapes))
		for i, s := range shapes {
			strs[i] = symFmtShape(s)
		}
		return nil, indexErrorf("shape mismatch: indexing tensors could not be broadcast together with shapes %s", strings.Join(strs, ", "))
	}
	idx := make([]*TensorMeta, len(self.Shape))
	for d, t := range indices {
		if t != nil {
			if idx[d], err = symExpand(t, bshape); err != nil {
				return nil, err
			}
		}
	}
	// Non-adjacent indexed dims move to the front.
	first, last, count := -1, -1, 0
	for d, t := range idx {
		if t != nil {
			if first < 0 {
				first = d
			}
			last = d
			count++
		}
	}
	src := self
	if last-first+1 != count {
		var perm []int64
		var nidx []*TensorMeta
		for d, t := range idx {
			if t != nil {
				perm, nidx = append(perm, int64(d)), append(nidx, t)
			}
		}
		for d, t := range idx {
			if t == nil {
				perm, nidx = append(perm, int64(d)), append(nidx, nil)
			}
		}
		if src, err = permuteMeta(self, perm); err != nil {
			return nil, err
		}
		idx = nidx
	}
	before, after, indexed := 0, 0, 0
	for _, t := range idx {
		switch {
		case t != nil:
			indexed++
		case indexed == 0:
			before++
		default:
			after++
		}
	}
	srcSizes, srcStrides := src.SymSizes(), src.SymStrides()
	for d, t := range idx {
		if t != nil && symIs(srcSizes[d], 0) && !symIs(symProd(bshape), 0) {
			return nil, indexErrorf("index is out of bounds for dimension with size 0")
		}
	}
	shape := append([]SymInt(nil), srcSizes[:before]...)
	st := append([]SymInt(nil), srcStrides[:before]...)
	shape = append(shape, bshape...)
	st = append(st, make([]SymInt, len(bshape))...)
	shape = append(shape, srcSizes[before+indexed:]...)
	st = append(st, srcStrides[before+indexed:]...)
	restrided := symViewOf(src, shape, st, src.SymOffset())
	ops := []*TensorMeta{restrided}
	for _, t := range idx {
		if t == nil {
			continue
		}
		rs := make([]SymInt, 0, before+len(t.Shape)+after)
		rs = append(rs, symOnes(before)...)
		rs = append(rs, t.SymSizes()...)
		rs = append(rs, symOnes(after)...)
		r, err := symReshapeAs(t, rs)
		if err != nil {
			return nil, err
		}
		ops = append(ops, r)
	}
	return symTensor(self.DType, shape, symIterStrides(shape, ops), SymConst(0), deviceOf(self)), nil
}

func metaGetitem(a *Args) (Value, error) {
	self := selfTensor(a)
	items, err := parseIndex(a.Get("index"))
	if err != nil {
		return nil, err
	}
	r, adv, err := applySlicing(self, items)
	if err != nil {
		return nil, err
	}
	if len(adv) == 0 {
		return r, nil
	}
	return advancedIndex(r, adv)
}

func metaSetitem(a *Args) (Value, error) {
	self := selfTensor(a)
	items, err := parseIndex(a.Get("index"))
	if err != nil {
		return nil, err
	}
	r, adv, err := applySlicing(self, items)
	if err != nil {
		return nil, err
	}
	v := a.Get("value")
	vm, isTensor := v.(*TensorMeta)
	if !isTensor {
		if _, ok := scalarDType(v); !ok {
			return nil, typeErrorf("can't assign a %s to a %s", pyTypeName(v), "torch."+scalarTypeName(self.DType)+"Tensor")
		}
		return nil, nil
	}
	if len(adv) == 0 {
		if _, err := symExpand(stripLeadingOnes(vm), r.SymSizes()); err != nil {
			return nil, err
		}
		return nil, nil
	}
	res, err := advancedIndex(r, adv)
	if err != nil {
		if isDataDependent(err) && vm.Numel() == 1 {
			return nil, nil
		}
		return nil, err
	}
	if b, err := SymBroadcastShapes(res.SymSizes(), vm.SymSizes()); err != nil || len(vm.Shape) > len(res.Shape) || !symShapeEq(b, res.SymSizes()) {
		return nil, runtimeErrorf("shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s", fmtShape(vm.Shape), fmtShape(res.Shape))
	}
	return nil, nil
}

// stripLeadingOnes drops leading size-1 dims (setitem's slicePrefix1sSize).
func stripLeadingOnes(m *TensorMeta) *TensorMeta {
	sizes, strides := m.SymSizes(), m.SymStrides()
	i := 0
	for i < len(sizes) && symIs(sizes[i], 1) {
		i++
	}
	return symViewOf(m, sizes[i:], strides[i:], m.SymOffset())
}

func isDataDependent(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == ErrDataDependent
}

// checkIndexDType is gather's and scatter's index check: int64, or int32 too under torch 2.
func checkIndexDType(name string, idx *TensorMeta) error {
	if behavior().Int32Indices {
		if idx.DType != Int64 && idx.DType != Int32 {
			return runtimeErrorf("%s(): Expected dtype int32/int64 for index", name)
		}
		return nil
	}
	if idx.DType != Int64 {
		return runtimeErrorf("%s(): Expected dtype int64 for index", name)
	}
	return nil
}

func metaGather(a *Args) (Value, error) {
	self, idx := selfTensor(a), a.Tensor("index")
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	if err := checkIndexDType("gather", idx); err != nil {
		return nil, err
	}
	if max(len(idx.Shape), 1) != max(len(self.Shape), 1) {
		return nil, runtimeErrorf("Index tensor must have the same number of dimensions as input tensor")
	}
	is, ss := idx.SymSizes(), self.SymSizes()
	for i := range is {
		if i != d && len(ss) > 0 && symGt(is[i], ss[i]) {
			return nil, runtimeErrorf("Size does not match at dimension %d expected index %s to be smaller than self %s apart from dimension %d", i, fmtShape(idx.Shape), fmtShape(self.Shape), d)
		}
	}
	return symNewTensor(self.DType, is, deviceOf(self)), nil
}

func metaScatter(a *Args) (Value, error) {
	self, idx := selfTensor(a), a.Tensor("index")
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	name := a.Op.Schema.Name
	if err := checkIndexDType(strings.TrimSuffix(strings.TrimSuffix(name, "_"), "_add"), idx); err != nil {
		return nil, err
	}
	if r, ok := a.Opt("reduce"); ok && r != nil {
		if s, _ := r.(string); s != "add" && s != "multiply" {
			return nil, runtimeErrorf("reduce argument must be either add or multiply.")
		}
	}
	src, _ := a.Get("src").(*TensorMeta)
	if src != nil && src.DType != self.DType {
		return nil, runtimeErrorf("%s(): Expected self.dtype to be equal to src.dtype", name)
	}
	if max(len(idx.Shape), 1) != max(len(self.Shape), 1) {
		return nil, runtimeErrorf("Index tensor must have the same number of dimensions as self tensor")
	}
	if src != nil && max(len(idx.Shape), 1) != max(len(src.Shape), 1) {
		return nil, runtimeErrorf("Index tensor must have the same number of dimensions as src tensor")
	}
	is, ss := idx.SymSizes(), self.SymSizes()
	for i := range is {
		if len(ss) > 0 && i != d && symGt(is[i], ss[i]) {
			return nil, runtimeErrorf("Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size than src %s", fmtShape(idx.Shape), fmtShape(self.Shape), d, fmtShape(srcShape(src)))
		}
		if src != nil && len(src.Shape) > 0 && symGt(is[i], src.SymSizes()[i]) {
			return nil, runtimeErrorf("Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size than src %s", fmtShape(idx.Shape), fmtShape(self.Shape), d, fmtShape(src.Shape))
		}
	}
	return symNewTensor(self.DType, ss, deviceOf(self)), nil
}

func srcShape(m *TensorMeta) []int64 {
	if m == nil {
		return nil
	}
	return m.Shape
}

func metaIndexSelect(a *Args) (Value, error) {
	self, idx := selfTensor(a), a.Tensor("index")
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) > 1 {
		return nil, indexErrorf("index_select(): Index is supposed to be a vector")
	}
	if idx.DType != Int64 && idx.DType != Int32 {
		return nil, runtimeErrorf("index_select(): Expected dtype int32 or int64 for index")
	}
	shape := self.SymSizes()
	if len(shape) == 0 {
		return newTensor(self.DType, []int64{}, deviceOf(self)), nil
	}
	shape[d] = idx.SymNumel()
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

func metaIndexAdd(a *Args) (Value, error) {
	self, idx, src := selfTensor(a), a.Tensor("index"), a.Tensor("source")
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	if len(idx.Shape) > 1 {
		return nil, indexErrorf("index_add_(): Index is supposed to be a vector")
	}
	if idx.DType != Int64 && idx.DType != Int32 {
		return nil, runtimeErrorf("index_add_(): Expected dtype int32/int64 for index")
	}
	if src.DType != self.DType {
		return nil, runtimeErrorf("index_add_(): self (%s) and source (%s) must have the same scalar type", scalarTypeName(self.DType), scalarTypeName(src.DType))
	}
	if len(self.Shape) > 0 && len(src.Shape) == len(self.Shape) && idx.Numel() != src.Shape[d] {
		return nil, indexErrorf("index_add_(): Number of indices (%d) should be equal to source.size(dim): (%d), for dim: %d", idx.Numel(), src.Shape[d], d)
	}
	return newTensor(self.DType, self.Shape, deviceOf(self)), nil
}

func metaEmbedding(a *Args) (Value, error) {
	idx, w := a.Tensor("indices"), a.Tensor("weight")
	if len(w.Shape) != 2 {
		return nil, runtimeErrorf("'weight' must be 2-D")
	}
	if idx.DType != Int64 && idx.DType != Int32 {
		return nil, runtimeErrorf("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.%sTensor instead (while checking arguments for embedding)", scalarTypeName(idx.DType))
	}
	ws := w.SymSizes()
	if p, ok := a.OptInt("padding_idx"); ok {
		if p > 0 && symGe(SymConst(p), ws[0]) {
			return nil, valueErrorf("Padding_idx must be within num_embeddings")
		}
		if p < 0 && symLt(SymConst(p), ws[0].Neg()) {
			return nil, valueErrorf("Padding_idx must be within num_embeddings")
		}
	}
	shape := append(idx.SymSizes(), ws[1])
	return symNewTensor(w.DType, shape, deviceOf(w)), nil
}

// embeddingMutates: F.embedding with max_norm renormalises weight rows in place.
func embeddingMutates(a *Args) []string {
	if v, ok := a.Opt("max_norm"); ok && v != nil {
		return []string{"weight"}
	}
	return nil
}

func metaOneHot(a *Args) (Value, error) {
	self := selfTensor(a)
	if self.DType != Int64 {
		return nil, runtimeErrorf("one_hot is only applicable to index tensor.")
	}
	n := a.Int("num_classes")
	if n == -1 {
		return nil, dataDependentf("one_hot without num_classes: the class count is max(input) + 1; pass num_classes")
	}
	if n < -1 {
		return nil, runtimeErrorf("num_classes should be positive")
	}
	shape := append(append([]int64(nil), self.Shape...), n)
	return newTensor(Int64, shape, deviceOf(self)), nil
}

// metaTake is torch.take's checks (aten's take_out) and result: self's dtype, index's sizes.
func metaTake(a *Args) (Value, error) {
	self, idx := selfTensor(a), a.Tensor("index")
	if idx.DType != Int64 {
		return nil, runtimeErrorf("take(): Expected a long tensor for index, but got %s", scalarTypeName(idx.DType))
	}
	if self.Numel() == 0 && idx.Numel() != 0 {
		return nil, indexErrorf("take(): tried to take from an empty tensor")
	}
	return symNewTensor(self.DType, idx.SymSizes(), deviceOf(self)), nil
}

func metaTakeAlongDim(a *Args) (Value, error) {
	self, idx := selfTensor(a), a.Tensor("indices")
	if idx.DType != Int64 {
		return nil, runtimeErrorf("torch.take_along_dim(): dtype of indices should be Long but got %s", scalarTypeName(idx.DType))
	}
	d, has := a.OptInt("dim")
	if !has {
		return symNewTensor(self.DType, []SymInt{idx.SymNumel()}, deviceOf(self)), nil
	}
	if len(self.Shape) == 0 {
		return nil, indexErrorf("Dimension specified as 0 but tensor has no dimensions")
	}
	if len(self.Shape) != len(idx.Shape) {
		return nil, runtimeErrorf("torch.take_along_dim(): input and indices should have the same number of dimensions, but got %d dimensions for input, and %d dimensions for indices", len(self.Shape), len(idx.Shape))
	}
	w, err := wrapDim(d, len(self.Shape))
	if err != nil {
		return nil, err
	}
	ss, is := self.SymSizes(), idx.SymSizes()
	iw := is[w]
	ss[w], is[w] = SymConst(1), SymConst(1)
	b, err := SymBroadcastShapes(ss, is)
	if err != nil {
		return nil, err
	}
	b[w] = iw
	return symNewTensor(self.DType, b, deviceOf(self)), nil
}

// IndexItem is one element of a getitem/setitem index, as torch's indexing reads it.
type IndexItem struct {
	// Kind is 'i' (an int: Int), 's' (a slice: Slice), 'n' (None), 'e' (Ellipsis), 'b' (a
	// Python bool: Bool) or 't' (a tensor: Tensor; List holds the nested list of numbers torch
	// makes the tensor of, nil for a real tensor).
	Kind   byte
	Int    int64
	IntSym SymInt // Int as a SymInt: symbolic for an index that is a symbolic size (x[T - 1])
	Slice  Slice
	Bool   bool
	Tensor *TensorMeta
	List   Value
}

// ParseIndex splits a getitem/setitem index into items as torch does (a list of numbers is one
// index tensor; a list holding slices, None, Ellipsis or tensors indexes several dims).
func ParseIndex(index Value) ([]IndexItem, error) {
	items, err := parseIndex(index)
	if err != nil {
		return nil, err
	}
	out := make([]IndexItem, len(items))
	for i, it := range items {
		out[i] = IndexItem{Kind: it.kind, Int: it.i, IntSym: it.si, Slice: it.slice, Bool: it.b, Tensor: it.tensor, List: it.list}
	}
	return out, nil
}

// NormalizeSlice resolves a Python slice over a dim of size size as torch's indexing does:
// 0 <= start <= end <= size, step >= 1 (a non-positive step is an error).
func NormalizeSlice(s Slice, size int64) (start, end, step int64, err error) {
	m, err := sliceMeta(&TensorMeta{Shape: []int64{size}, Strides: []int64{1}}, 0, s)
	if err != nil {
		return 0, 0, 0, err
	}
	step = 1
	if s.Step != nil {
		step = *s.Step
	}
	start = m.Offset
	end = min(start+m.Shape[0]*step, size)
	if m.Shape[0] == 0 {
		end = start
	}
	return start, end, step, nil
}

// SymNormalizeSlice is NormalizeSlice for a dim of symbolic size: bounds clamped as getitem
// clamps them, each comparison with a symbol guarded.
func SymNormalizeSlice(s Slice, size SymInt) (start, end SymInt, step int64, err error) {
	one := []SymInt{SymConst(1)}
	m, err := sliceMeta(symTensor(Float32, []SymInt{size}, one, SymConst(0), CPU), 0, s)
	if err != nil {
		return SymInt{}, SymInt{}, 0, err
	}
	step = 1
	if s.Step != nil {
		step = *s.Step
	}
	n := m.SymSizes()[0]
	if _, c := n.IsConst(); !c && step > 1 {
		// the length is a derived symbol ceil((end - start) / step): the clamped end gives
		// it, and the tight one (start + n·step) would need a guard on the remainder
		return sliceBounds(s, size)
	}
	start = m.SymOffset()
	end = symMin(start.Add(n.MulConst(step)), size)
	if symIs(n, 0) {
		end = start
	}
	return start, end, step, nil
}
