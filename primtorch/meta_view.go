package primtorch

// view returns a view of m with the given geometry (dtype, device and grad kept).
func view(m *TensorMeta, shape, strides []int64, offset int64) *TensorMeta {
	if shape == nil {
		shape = []int64{}
	}
	if strides == nil {
		strides = []int64{}
	}
	return &TensorMeta{DType: m.DType, Shape: shape, Strides: strides, Offset: offset, Device: m.Device, RequiresGrad: m.RequiresGrad}
}

// inferSize resolves one -1 in shape for a tensor of n elements (torch's infer_size).
func inferSize(shape []int64, n int64) ([]int64, error) {
	out := append([]int64(nil), shape...)
	newsize, infer := int64(1), -1
	for i, s := range shape {
		switch {
		case s == -1:
			if infer >= 0 {
				return nil, runtimeErrorf("only one dimension can be inferred")
			}
			infer = i
		case s >= 0:
			newsize *= s
		default:
			return nil, runtimeErrorf("invalid shape dimension %d", s)
		}
	}
	if n == newsize || (infer >= 0 && newsize > 0 && n%newsize == 0) {
		if infer >= 0 {
			if newsize == 0 {
				return nil, runtimeErrorf("cannot reshape tensor of 0 elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous", fmtShape(shape))
			}
			out[infer] = n / newsize
		}
		return out, nil
	}
	return nil, runtimeErrorf("shape '%s' is invalid for input of size %d", fmtShape(shape), n)
}

// computeStride is torch's computeStride: the strides viewing (oldShape, oldStride) as newShape
// without copying, or ok=false when the view would need a copy.
func computeStride(oldShape, oldStride, newShape []int64) ([]int64, bool) {
	if len(oldShape) == 0 {
		st := make([]int64, len(newShape))
		for i := range st {
			st[i] = 1
		}
		return st, true
	}
	n := numel(oldShape)
	if n == 0 && shapeEqual(oldShape, newShape) {
		return append([]int64(nil), oldStride...), true
	}
	st := make([]int64, len(newShape))
	if n == 0 {
		for d := len(newShape) - 1; d >= 0; d-- {
			if d == len(newShape)-1 {
				st[d] = 1
			} else {
				st[d] = max(newShape[d+1], 1) * st[d+1]
			}
		}
		return st, true
	}
	vd := len(newShape) - 1
	chunkBase := oldStride[len(oldStride)-1]
	tensorNumel, viewNumel := int64(1), int64(1)
	for td := len(oldShape) - 1; td >= 0; td-- {
		tensorNumel *= oldShape[td]
		if td == 0 || (oldShape[td-1] != 1 && oldStride[td-1] != tensorNumel*chunkBase) {
			for vd >= 0 && (viewNumel < tensorNumel || newShape[vd] == 1) {
				st[vd] = viewNumel * chunkBase
				viewNumel *= newShape[vd]
				vd--
			}
			if viewNumel != tensorNumel {
				return nil, false
			}
			if td > 0 {
				chunkBase = oldStride[td-1]
				tensorNumel, viewNumel = 1, 1
			}
		}
	}
	if vd != -1 {
		return nil, false
	}
	return st, true
}

func viewAs(self *TensorMeta, size []int64) (*TensorMeta, error) {
	shape, err := inferSize(size, self.Numel())
	if err != nil {
		return nil, err
	}
	st, ok := computeStride(self.Shape, self.Strides, shape)
	if !ok {
		return nil, runtimeErrorf("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
	}
	return view(self, shape, st, self.Offset), nil
}

func reshapeAs(self *TensorMeta, size []int64) (*TensorMeta, error) {
	shape, err := inferSize(size, self.Numel())
	if err != nil {
		return nil, err
	}
	if st, ok := computeStride(self.Shape, self.Strides, shape); ok {
		return view(self, shape, st, self.Offset), nil
	}
	return newTensor(self.DType, shape, deviceOf(self)), nil
}

func metaView(a *Args) (Value, error) { return viewAs(selfTensor(a), a.Ints("size")) }

func metaViewAs(a *Args) (Value, error) { return viewAs(selfTensor(a), a.Tensor("other").Shape) }

func metaReshape(a *Args) (Value, error) { return reshapeAs(selfTensor(a), a.Ints("shape")) }

func metaReshapeAs(a *Args) (Value, error) { return reshapeAs(selfTensor(a), a.Tensor("other").Shape) }

func metaViewDType(a *Args) (Value, error) {
	self := selfTensor(a)
	dt, _ := a.DType("dtype")
	from, to := self.DType.ItemSize(), dt.ItemSize()
	if from == to {
		c := view(self, append([]int64(nil), self.Shape...), append([]int64(nil), self.Strides...), self.Offset)
		c.DType = dt
		return c, nil
	}
	n := len(self.Shape)
	if n == 0 {
		return nil, runtimeErrorf("self.dim() cannot be 0 if self.element_size() (%d) != dtype.element_size() (%d)", from, to)
	}
	if self.Strides[n-1] != 1 {
		return nil, runtimeErrorf("self.stride(-1) must be 1 if self.element_size() (%d) != dtype.element_size() (%d)", from, to)
	}
	shape := append([]int64(nil), self.Shape...)
	st := append([]int64(nil), self.Strides...)
	off := self.Offset
	if from > to {
		r := int64(from / to)
		for i := 0; i < n-1; i++ {
			st[i] *= r
		}
		shape[n-1] *= r
		off *= r
	} else {
		r := int64(to / from)
		if shape[n-1]%r != 0 {
			return nil, runtimeErrorf("self.size(-1) must be divisible by %d to view %s as %s (different element sizes), but got %d", r, scalarTypeName(self.DType), scalarTypeName(dt), shape[n-1])
		}
		if off%r != 0 {
			return nil, runtimeErrorf("self.storage_offset() must be divisible by %d to view %s as %s (different element sizes), but got %d", r, scalarTypeName(self.DType), scalarTypeName(dt), off)
		}
		for i := 0; i < n-1; i++ {
			if st[i]%r != 0 {
				return nil, runtimeErrorf("self.stride(%d) must be divisible by %d to view %s as %s (different element sizes), but got %d", i, r, scalarTypeName(self.DType), scalarTypeName(dt), st[i])
			}
			st[i] /= r
		}
		shape[n-1] /= r
		off /= r
	}
	c := view(self, shape, st, off)
	c.DType = dt
	return c, nil
}

func metaFlatten(a *Args) (Value, error) {
	self := selfTensor(a)
	nd := len(self.Shape)
	start, err := wrapDim(a.Int("start_dim"), nd)
	if err != nil {
		return nil, err
	}
	end, err := wrapDim(a.Int("end_dim"), nd)
	if err != nil {
		return nil, err
	}
	if start > end {
		return nil, runtimeErrorf("flatten() has invalid args: start_dim cannot come after end_dim")
	}
	if nd == 0 {
		return reshapeAs(self, []int64{1})
	}
	if start == end {
		return self.Clone(), nil
	}
	shape := append([]int64(nil), self.Shape[:start]...)
	shape = append(shape, numel(self.Shape[start:end+1]))
	shape = append(shape, self.Shape[end+1:]...)
	return reshapeAs(self, shape)
}

func metaUnflatten(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, indexErrorf("Dimension specified as 0 but tensor has no dimensions")
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	sizes := a.Ints("sizes")
	if len(sizes) == 0 {
		return nil, runtimeErrorf("unflatten: sizes must be non-empty")
	}
	inferred, err := inferSize(sizes, self.Shape[d])
	if err != nil {
		return nil, runtimeErrorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor", fmtShape(sizes), a.Int("dim"), self.Shape[d])
	}
	shape := append(append(append([]int64(nil), self.Shape[:d]...), inferred...), self.Shape[d+1:]...)
	return viewAs(self, shape)
}

func metaSqueeze(a *Args) (Value, error) {
	self := selfTensor(a)
	d, has := a.OptInt("dim")
	var shape, st []int64
	if has {
		w, err := wrapDim(d, len(self.Shape))
		if err != nil {
			return nil, err
		}
		for i := range self.Shape {
			if i == w && self.Shape[i] == 1 {
				continue
			}
			shape, st = append(shape, self.Shape[i]), append(st, self.Strides[i])
		}
	} else {
		for i := range self.Shape {
			if self.Shape[i] != 1 {
				shape, st = append(shape, self.Shape[i]), append(st, self.Strides[i])
			}
		}
	}
	return view(self, shape, st, self.Offset), nil
}

func metaUnsqueeze(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dim"), len(self.Shape)+1)
	if err != nil {
		return nil, err
	}
	return unsqueezeMeta(self, d), nil
}

func metaTranspose(a *Args) (Value, error) {
	self := selfTensor(a)
	d0, err := wrapDim(a.Int("dim0"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	d1, err := wrapDim(a.Int("dim1"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	c := self.Clone()
	if len(c.Shape) > 0 {
		c.Shape[d0], c.Shape[d1] = c.Shape[d1], c.Shape[d0]
		c.Strides[d0], c.Strides[d1] = c.Strides[d1], c.Strides[d0]
	}
	return c, nil
}

func metaT(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) > 2 {
		return nil, runtimeErrorf("t() expects a tensor with <= 2 dimensions, but self is %dD", len(self.Shape))
	}
	return transposeMeta(self), nil
}

func permuteMeta(self *TensorMeta, dims []int64) (*TensorMeta, error) {
	if len(dims) != len(self.Shape) {
		return nil, runtimeErrorf("permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = %d is not equal to len(dims) = %d", len(self.Shape), len(dims))
	}
	seen := make([]bool, len(dims))
	shape, st := make([]int64, len(dims)), make([]int64, len(dims))
	for i, d := range dims {
		w, err := wrapDim(d, len(self.Shape))
		if err != nil {
			return nil, err
		}
		if seen[w] {
			return nil, runtimeErrorf("permute(): duplicate dims are not allowed.")
		}
		seen[w] = true
		shape[i], st[i] = self.Shape[w], self.Strides[w]
	}
	return view(self, shape, st, self.Offset), nil
}

func metaPermute(a *Args) (Value, error) { return permuteMeta(selfTensor(a), a.Ints("dims")) }

func metaMovedim(a *Args) (Value, error) {
	self := selfTensor(a)
	src, dst := a.Ints("source"), a.Ints("destination")
	nd := len(self.Shape)
	if nd == 0 {
		for _, d := range append(append([]int64(nil), src...), dst...) {
			if _, err := wrapDim(d, 0); err != nil {
				return nil, err
			}
		}
		return self.Clone(), nil
	}
	if len(src) != len(dst) {
		return nil, runtimeErrorf("movedim: Invalid source or destination dims: source (%s dims) should contain the same number of dims as destination (%s dims)", fmtShape(src), fmtShape(dst))
	}
	srcMask, err := wrapDims(src, nd)
	if err != nil {
		return nil, runtimeErrorf("movedim: repeated dim in `source` (%s)", fmtShape(src))
	}
	dstMask, err := wrapDims(dst, nd)
	if err != nil {
		return nil, runtimeErrorf("movedim: repeated dim in `destination` (%s)", fmtShape(dst))
	}
	order := make([]int64, nd)
	for i := range order {
		order[i] = -1
	}
	for i := range src {
		s, _ := wrapDim(src[i], nd)
		d, _ := wrapDim(dst[i], nd)
		order[d] = int64(s)
	}
	var restSrc []int64
	for i := 0; i < nd; i++ {
		if !srcMask[i] {
			restSrc = append(restSrc, int64(i))
		}
	}
	k := 0
	for i := 0; i < nd; i++ {
		if !dstMask[i] {
			order[i] = restSrc[k]
			k++
		}
	}
	return permuteMeta(self, order)
}

// expandMeta is torch's inferExpandGeometry.
func expandMeta(self *TensorMeta, sizes []int64) (*TensorMeta, error) {
	nd, td := len(sizes), len(self.Shape)
	if nd < td {
		return nil, runtimeErrorf("expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)",
			scalarTypeName(self.DType), fmtShape(self.Shape), fmtShape(sizes), nd, td)
	}
	shape, st := make([]int64, nd), make([]int64, nd)
	for i := nd - 1; i >= 0; i-- {
		off := nd - 1 - i
		d := td - 1 - off
		size, stride := int64(1), int64(1)
		if d >= 0 {
			size, stride = self.Shape[d], self.Strides[d]
		} else if i+1 < nd {
			stride = shape[i+1] * st[i+1]
		}
		target := sizes[i]
		if target == -1 {
			if d < 0 {
				return nil, runtimeErrorf("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension %d", i)
			}
			target = size
		}
		if target < 0 {
			return nil, runtimeErrorf("The expanded size of the tensor (%d) isn't allowed in a leading, non-existing dimension %d", target, i)
		}
		if size != target {
			if size != 1 {
				return nil, runtimeErrorf("The expanded size of the tensor (%d) must match the existing size (%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", target, size, i, fmtShape(sizes), fmtShape(self.Shape))
			}
			size, stride = target, 0
		}
		shape[i], st[i] = size, stride
	}
	return view(self, shape, st, self.Offset), nil
}

func metaExpand(a *Args) (Value, error) { return expandMeta(selfTensor(a), a.Ints("size")) }

func metaExpandAs(a *Args) (Value, error) { return expandMeta(selfTensor(a), a.Tensor("other").Shape) }

func metaContiguous(a *Args) (Value, error) {
	self := selfTensor(a)
	mf, _ := a.Get("memory_format").(MemoryFormat)
	switch mf {
	case ContiguousFormat, "":
		if self.IsContiguous() {
			return self.Clone(), nil
		}
	case ChannelsLast, ChannelsLast3d:
		want := 4
		if mf == ChannelsLast3d {
			want = 5
		}
		if len(self.Shape) != want {
			return nil, runtimeErrorf("required rank %d tensor to use %s format", want, mf)
		}
		if isChannelsLastContiguous(self) {
			return self.Clone(), nil
		}
	case PreserveFormat:
		return nil, runtimeErrorf("preserve memory format is unsupported by the contiguous operator")
	}
	return &TensorMeta{DType: self.DType, Shape: append([]int64(nil), self.Shape...), Strides: StridesFor(self.Shape, mf), Device: deviceOf(self)}, nil
}

// narrowMeta is slice(dim, start, start+length) without step.
func narrowMeta(self *TensorMeta, d int, start, length int64) *TensorMeta {
	return symNarrow(self, d, SymConst(start), SymConst(length))
}

// symNarrow is narrowMeta with symbolic bounds.
func symNarrow(self *TensorMeta, d int, start, length SymInt) *TensorMeta {
	sizes, strides := self.SymSizes(), self.SymStrides()
	sizes[d] = length
	return withSym(self, sizes, strides, self.SymOffset().Add(start.Mul(strides[d])))
}

func metaNarrow(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, runtimeErrorf("narrow() cannot be applied to a 0-dim tensor.")
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	return checkedNarrow(self, d, a.Int("start"), a.Int("length"))
}

// checkedNarrow is torch's narrow(dim, start, length) with its argument checks.
func checkedNarrow(self *TensorMeta, d int, start, length int64) (*TensorMeta, error) {
	size := self.Shape[d]
	if start != size { // start == size is valid (an empty narrow), but no valid dim
		w, err := wrapDim(start, int(size))
		if err != nil {
			return nil, err
		}
		start = int64(w)
	}
	if length < 0 || start > size-length {
		return nil, runtimeErrorf("start (%d) + length (%d) exceeds dimension size (%d).", start, length, size)
	}
	return narrowMeta(self, d, start, length), nil
}

func selectMeta(self *TensorMeta, dim, index int64) (*TensorMeta, error) {
	if len(self.Shape) == 0 {
		return nil, indexErrorf("select() cannot be applied to a 0-dim tensor.")
	}
	d, err := wrapDim(dim, len(self.Shape))
	if err != nil {
		return nil, err
	}
	size := self.Shape[d]
	if index < -size || index >= size {
		return nil, indexErrorf("select(): index %d out of range for tensor of size %s at dimension %d", index, fmtShape(self.Shape), dim)
	}
	if index < 0 {
		index += size
	}
	c := squeezeDimMeta(self, d)
	c.Offset = self.Offset + index*self.Strides[d]
	return c, nil
}

func metaSelect(a *Args) (Value, error) {
	return selectMeta(selfTensor(a), a.Int("dim"), a.Int("index"))
}

// splitSizes splits a dim of size n into pieces of split (the last may be smaller).
func splitSizes(n, split int64) ([]int64, error) {
	if split < 0 {
		return nil, runtimeErrorf("split expects split_size be non-negative, but got split_size=%d", split)
	}
	if split == 0 && n != 0 {
		return nil, runtimeErrorf("split_size can only be 0 if dimension size is 0, but got dimension size of %d", n)
	}
	num := int64(1)
	if split > 0 {
		num = max((n+split-1)/split, 1)
	}
	out := make([]int64, num)
	for i := range out {
		out[i] = split
	}
	out[num-1] = split - (split*num - n)
	return out, nil
}

func splitWithSizes(self *TensorMeta, d int, sizes []int64) []Value {
	out := make([]Value, len(sizes))
	start := int64(0)
	for i, s := range sizes {
		out[i] = narrowMeta(self, d, start, s)
		start += s
	}
	return out
}

func metaSplit(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, runtimeErrorf("split expects at least a 1-dimensional tensor")
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	n := self.Shape[d]
	switch s := a.Get("split_size").(type) {
	case int64:
		sizes, err := splitSizes(n, s)
		if err != nil {
			return nil, err
		}
		return splitWithSizes(self, d, sizes), nil
	default:
		elems, ok := sequence(s)
		if !ok {
			return nil, typeErrorf("split(): argument 'split_size' must be int or tuple of ints, not %s", pyTypeName(s))
		}
		sizes := make([]int64, len(elems))
		sum := int64(0)
		for i, e := range elems {
			if !isIntValue(e) {
				return nil, typeErrorf("split(): argument 'split_size' must be int or tuple of ints, not %s", pyTypeName(s))
			}
			sizes[i] = toInt64(e)
			if sizes[i] < 0 {
				return nil, runtimeErrorf("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s", fmtShape(sizes))
			}
			sum += sizes[i]
		}
		if sum != n {
			return nil, runtimeErrorf("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=%s", n, d, fmtShape(sizes))
		}
		return splitWithSizes(self, d, sizes), nil
	}
}

func metaChunk(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, runtimeErrorf("chunk expects at least a 1-dimensional tensor")
	}
	chunks := a.Int("chunks")
	if chunks <= 0 {
		return nil, runtimeErrorf("chunk expects `chunks` to be greater than 0, got: %d", chunks)
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	n := self.Shape[d]
	split := (n + chunks - 1) / chunks
	if split == 0 && n == 0 {
		sizes := make([]int64, chunks)
		sizes[chunks-1] = split - (split*chunks - n)
		return splitWithSizes(self, d, sizes), nil
	}
	sizes, err := splitSizes(n, split)
	if err != nil {
		return nil, err
	}
	return splitWithSizes(self, d, sizes), nil
}

func metaUnbind(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, indexErrorf("Dimension specified as 0 but tensor has no dimensions")
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	out := make([]Value, self.Shape[d])
	for i := range out {
		m, err := selectMeta(self, int64(d), int64(i))
		if err != nil {
			return nil, err
		}
		out[i] = m
	}
	return out, nil
}

func metaUnfold(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dimension"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	size, step := a.Int("size"), a.Int("step")
	maxSize := int64(1)
	if len(self.Shape) > 0 {
		maxSize = self.Shape[d]
	}
	if size > maxSize {
		return nil, runtimeErrorf("maximum size for tensor at dimension %d is %d but size is %d", d, maxSize, size)
	}
	if step <= 0 {
		return nil, runtimeErrorf("step is %d but must be > 0", step)
	}
	if len(self.Shape) == 0 {
		return view(self, []int64{size}, []int64{1}, self.Offset), nil
	}
	shape := append(append([]int64(nil), self.Shape...), size)
	st := append(append([]int64(nil), self.Strides...), self.Strides[d])
	shape[d] = (self.Shape[d]-size)/step + 1
	st[d] = self.Strides[d] * step
	return view(self, shape, st, self.Offset), nil
}

func metaAsStrided(a *Args) (Value, error) {
	self := selfTensor(a)
	size, stride := a.Ints("size"), a.Ints("stride")
	if len(size) != len(stride) {
		return nil, runtimeErrorf("mismatch in length of strides and shape")
	}
	for _, s := range stride {
		if s < 0 {
			return nil, runtimeErrorf("as_strided: Negative strides are not supported at the moment, got strides: %s", fmtShape(stride))
		}
	}
	off := self.Offset
	if o, ok := a.OptInt("storage_offset"); ok {
		off = o
	}
	return view(self, append([]int64(nil), size...), append([]int64(nil), stride...), off), nil
}

func metaDiagonal(a *Args) (Value, error) {
	self := selfTensor(a)
	nd := len(self.Shape)
	if nd < 2 {
		return nil, indexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -max(nd, 1), max(nd, 1)-1, a.Int("dim2"))
	}
	d1, err := wrapDim(a.Int("dim1"), nd)
	if err != nil {
		return nil, err
	}
	d2, err := wrapDim(a.Int("dim2"), nd)
	if err != nil {
		return nil, err
	}
	if d1 == d2 {
		return nil, runtimeErrorf("diagonal dimensions cannot be identical %d, %d", a.Int("dim1"), a.Int("dim2"))
	}
	off := a.Int("offset")
	var size int64
	storage := self.Offset
	if off >= 0 {
		size = max(min(self.Shape[d1], self.Shape[d2]-off), 0)
		storage += off * self.Strides[d2]
	} else {
		size = max(min(self.Shape[d1]+off, self.Shape[d2]), 0)
		storage -= off * self.Strides[d1]
	}
	if size == 0 {
		storage = self.Offset
	}
	var shape, st []int64
	for i := 0; i < nd; i++ {
		if i != d1 && i != d2 {
			shape, st = append(shape, self.Shape[i]), append(st, self.Strides[i])
		}
	}
	shape, st = append(shape, size), append(st, self.Strides[d1]+self.Strides[d2])
	return view(self, shape, st, storage), nil
}

func metaDetach(a *Args) (Value, error) {
	c := selfTensor(a).Clone()
	c.RequiresGrad = false
	return c, nil
}

func metaBroadcastTensors(a *Args) (Value, error) {
	ts := a.Tensors("tensors")
	shapes := make([][]int64, len(ts))
	for i, t := range ts {
		shapes[i] = t.Shape
	}
	shape, err := BroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	out := make([]Value, len(ts))
	for i, t := range ts {
		if out[i], err = expandMeta(t, shape); err != nil {
			return nil, err
		}
	}
	return out, nil
}
