package primtorch

// catMemoryFormat is torch's cat_compute_output_memory_format: the inputs' common suggested
// format, contiguous when they disagree.
func catMemoryFormat(ts []*TensorMeta) MemoryFormat {
	var f MemoryFormat
	for _, t := range ts {
		g := symSuggestMemoryFormat(t)
		if f == "" {
			f = g
			continue
		}
		if f == g {
			continue
		}
		return ContiguousFormat
	}
	return f
}

func catMeta(ts []*TensorMeta, dim int64, name string) (*TensorMeta, error) {
	if len(ts) == 0 {
		return nil, runtimeErrorf("torch.%s(): expected a non-empty list of Tensors", name)
	}
	vals := make([]Value, len(ts))
	for i, t := range ts {
		vals[i] = t
	}
	dev, err := commonDevice(vals)
	if err != nil {
		return nil, err
	}
	dt := ResultType(vals...)
	// 1-d empty tensors are skipped (legacy behaviour).
	empty1d := func(t *TensorMeta) bool { return len(t.Shape) == 1 && symIs(t.SymSizes()[0], 0) }
	ref := -1
	for i, t := range ts {
		if !empty1d(t) {
			ref = i
			break
		}
	}
	if ref < 0 {
		return &TensorMeta{DType: dt, Shape: []int64{0}, Strides: []int64{1}, Device: dev}, nil
	}
	if len(ts[ref].Shape) == 0 {
		return nil, runtimeErrorf("zero-dimensional tensor (at position %d) cannot be concatenated", ref)
	}
	d, err := wrapDim(dim, len(ts[ref].Shape))
	if err != nil {
		return nil, err
	}
	rs := ts[ref].SymSizes()
	shape := append([]SymInt(nil), rs...)
	shape[d] = SymConst(0)
	for i, t := range ts {
		if empty1d(t) {
			continue
		}
		if len(t.Shape) == 0 {
			return nil, runtimeErrorf("zero-dimensional tensor (at position %d) cannot be concatenated", i)
		}
		if len(t.Shape) != len(shape) {
			return nil, runtimeErrorf("Tensors must have same number of dimensions: got %d and %d", len(shape), len(t.Shape))
		}
		tsz := t.SymSizes()
		for j := range shape {
			if j != d && !symEq(tsz[j], rs[j]) {
				return nil, runtimeErrorf("Sizes of tensors must match except in dimension %d. Expected size %d but got size %d for tensor number %d in the list.", d, ts[ref].Shape[j], t.Shape[j], i)
			}
		}
		shape[d] = shape[d].Add(tsz[d])
	}
	return symTensor(dt, shape, symStridesFor(shape, catMemoryFormat(ts)), SymConst(0), dev), nil
}

func metaCat(a *Args) (Value, error) { return catMeta(a.Tensors("tensors"), a.Int("dim"), "cat") }

func metaStack(a *Args) (Value, error) {
	ts := a.Tensors("tensors")
	if len(ts) == 0 {
		return nil, runtimeErrorf("stack expects a non-empty TensorList")
	}
	d, err := wrapDim(a.Int("dim"), len(ts[0].Shape)+1)
	if err != nil {
		return nil, err
	}
	un := make([]*TensorMeta, len(ts))
	for i, t := range ts {
		if !symShapeEq(t.SymSizes(), ts[0].SymSizes()) {
			return nil, runtimeErrorf("stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d", fmtShape(ts[0].Shape), fmtShape(t.Shape), i)
		}
		un[i] = unsqueezeMeta(t, d)
	}
	if d < len(ts[0].Shape) {
		// torch concatenates along dim and splits it with a view.
		r, err := catMeta(ts, int64(d), "stack")
		if err != nil {
			return nil, err
		}
		s0 := ts[0].SymSizes()
		shape := append(append(append([]SymInt(nil), s0[:d]...), SymConst(int64(len(ts)))), s0[d:]...)
		return symViewAs(r, shape)
	}
	return catMeta(un, int64(d), "stack")
}

// atLeast returns t viewed with at least n dims (atleast_1d/2d).
func atLeast(t *TensorMeta, n int) *TensorMeta {
	switch {
	case len(t.Shape) >= n:
		return t
	case len(t.Shape) == 0 && n == 1:
		return view(t, []int64{1}, []int64{1}, t.Offset)
	case len(t.Shape) == 0:
		return view(t, []int64{1, 1}, []int64{1, 1}, t.Offset)
	}
	return unsqueezeMeta(t, 0)
}

func metaHstack(a *Args) (Value, error) {
	ts := a.Tensors("tensors")
	if len(ts) == 0 {
		return nil, runtimeErrorf("hstack expects a non-empty TensorList")
	}
	at := make([]*TensorMeta, len(ts))
	for i, t := range ts {
		at[i] = atLeast(t, 1)
	}
	if len(at[0].Shape) == 1 {
		return catMeta(at, 0, "cat")
	}
	return catMeta(at, 1, "cat")
}

func metaVstack(a *Args) (Value, error) {
	ts := a.Tensors("tensors")
	if len(ts) == 0 {
		return nil, runtimeErrorf("vstack expects a non-empty TensorList")
	}
	at := make([]*TensorMeta, len(ts))
	for i, t := range ts {
		at[i] = atLeast(t, 2)
	}
	return catMeta(at, 0, "cat")
}

func repeatMeta(self *TensorMeta, reps []int64) (*TensorMeta, error) {
	if len(reps) < len(self.Shape) {
		return nil, runtimeErrorf("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
	}
	pad := len(reps) - len(self.Shape)
	shape := make([]SymInt, len(reps))
	sizes := self.SymSizes()
	for i, r := range reps {
		if r < 0 {
			return nil, runtimeErrorf("Trying to create tensor with negative dimension %d: %s", r, fmtShape(reps))
		}
		s := SymConst(1)
		if i >= pad {
			s = sizes[i-pad]
		}
		shape[i] = s.MulConst(r)
	}
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

func metaRepeat(a *Args) (Value, error) { return repeatMeta(selfTensor(a), a.Ints("repeats")) }

func metaTile(a *Args) (Value, error) {
	self := selfTensor(a)
	dims := a.Ints("dims")
	for len(dims) < len(self.Shape) {
		dims = append([]int64{1}, dims...)
	}
	return repeatMeta(self, dims)
}

func metaFlip(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, err := wrapDims(a.Ints("dims"), len(self.Shape)); err != nil {
		return nil, err
	}
	return emptyLike(self, self.DType, PreserveFormat), nil
}

func metaRoll(a *Args) (Value, error) {
	self := selfTensor(a)
	shifts, dims := a.Ints("shifts"), a.Ints("dims")
	if len(dims) == 0 && len(shifts) != 1 {
		return nil, runtimeErrorf("`shifts` required")
	}
	if len(dims) != 0 && len(shifts) != len(dims) {
		return nil, runtimeErrorf("shifts and dimensions must align. shifts: %d, dims:%d", len(shifts), len(dims))
	}
	for _, d := range dims {
		if len(self.Shape) == 0 {
			return nil, indexErrorf("Dimension specified as 0 but tensor has no dimensions")
		}
		if _, err := wrapDim(d, len(self.Shape)); err != nil {
			return nil, err
		}
	}
	return rollMeta(self, shifts, dims)
}

// rollMeta follows torch's roll_common: a flattened roll without dims, else for each dim the
// cat of two narrowed views (so the output takes cat's memory format).
func rollMeta(self *TensorMeta, shifts, dims []int64) (*TensorMeta, error) {
	if len(dims) == 0 {
		flat, err := reshapeAs(self, []int64{self.Numel()})
		if err != nil {
			return nil, err
		}
		r, err := rollMeta(flat, shifts, []int64{0})
		if err != nil {
			return nil, err
		}
		return viewAs(r, self.Shape)
	}
	if self.Numel() == 0 {
		return emptyLike(self, self.DType, PreserveFormat), nil
	}
	cur := self
	for i := range dims {
		d, _ := wrapDim(dims[i], len(self.Shape))
		size := cur.Shape[d]
		start := (size - shifts[i]) % size
		if start < 0 {
			start += size
		}
		t0 := narrowMeta(cur, d, start, size-start)
		t1 := narrowMeta(cur, d, 0, start)
		r, err := catMeta([]*TensorMeta{t0, t1}, int64(d), "cat")
		if err != nil {
			return nil, err
		}
		cur = r
	}
	return cur, nil
}

func metaTril(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) < 2 {
		return nil, indexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got -2)", -max(len(self.Shape), 1), max(len(self.Shape), 1)-1)
	}
	return symNewTensor(self.DType, self.SymSizes(), deviceOf(self)), nil
}

func metaRepeatInterleave(a *Args) (Value, error) {
	self := selfTensor(a)
	var reps int64
	switch r := a.Get("repeats").(type) {
	case int64:
		reps = r
		if reps < 0 {
			return nil, runtimeErrorf("repeats can not be negative")
		}
	case *TensorMeta:
		if os, ok := a.OptInt("output_size"); ok {
			return repeatInterleaveTo(a, self, os)
		}
		if len(r.Shape) == 0 || (len(r.Shape) == 1 && r.Shape[0] == 1) {
			return nil, dataDependentf("repeat_interleave with a tensor of repeats: the output size depends on its value")
		}
		return nil, dataDependentf("repeat_interleave with a tensor of repeats: the output size depends on its values; pass output_size")
	default:
		return nil, typeErrorf("repeat_interleave(): argument 'repeats' must be int or Tensor, not %s", pyTypeName(r))
	}
	d, hasDim := a.OptInt("dim")
	if !hasDim {
		n := self.Numel() * reps
		return newTensor(self.DType, []int64{n}, deviceOf(self)), nil
	}
	w, err := wrapDim(d, len(self.Shape))
	if err != nil {
		return nil, err
	}
	shape := append([]int64(nil), self.Shape...)
	if len(shape) == 0 {
		return newTensor(self.DType, []int64{reps}, deviceOf(self)), nil
	}
	shape[w] *= reps
	return newTensor(self.DType, shape, deviceOf(self)), nil
}

func repeatInterleaveTo(a *Args, self *TensorMeta, size int64) (Value, error) {
	d, hasDim := a.OptInt("dim")
	if !hasDim {
		return newTensor(self.DType, []int64{size}, deviceOf(self)), nil
	}
	w, err := wrapDim(d, len(self.Shape))
	if err != nil {
		return nil, err
	}
	shape := append([]int64(nil), self.Shape...)
	shape[w] = size
	return newTensor(self.DType, shape, deviceOf(self)), nil
}
