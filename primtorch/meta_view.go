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

// symInferSize resolves one -1 in shape for a tensor of n elements (torch's infer_size): the
// inferred size is n divided by the product of the others when that is an exact polynomial
// division; otherwise both are specialised.
func symInferSize(shape []SymInt, n SymInt) ([]SymInt, error) {
	out := append([]SymInt(nil), shape...)
	newsize, infer := SymConst(1), -1
	for i, s := range shape {
		k, c := s.IsConst()
		switch {
		case c && k == -1:
			if infer >= 0 {
				return nil, runtimeErrorf("only one dimension can be inferred")
			}
			infer = i
		case !c || k >= 0:
			newsize = newsize.Mul(s)
		default:
			return nil, runtimeErrorf("invalid shape dimension %d", k)
		}
	}
	if infer < 0 {
		if symEq(n, newsize) {
			return out, nil
		}
		return nil, runtimeErrorf("shape '%s' is invalid for input of size %d", symFmtShape(shape), n.Hint())
	}
	if symIs(newsize, 0) {
		if symIs(n, 0) {
			return nil, runtimeErrorf("cannot reshape tensor of 0 elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous", symFmtShape(shape))
		}
		return nil, runtimeErrorf("shape '%s' is invalid for input of size %d", symFmtShape(shape), n.Hint())
	}
	q, ok := SymConst(1), true
	if !n.Equal(newsize) {
		q, ok = n.DivExact(newsize)
	}
	if !ok {
		nn, ns := n.Specialize("view size inference"), newsize.Specialize("view size inference")
		if nn%ns != 0 {
			return nil, runtimeErrorf("shape '%s' is invalid for input of size %d", symFmtShape(shape), nn)
		}
		q = SymConst(nn / ns)
	}
	out[infer] = q
	return out, nil
}

// symComputeStride is torch's computeStride: the strides viewing (oldShape, oldStride) as
// newShape without copying, or ok=false when the view would need a copy.
func symComputeStride(oldShape, oldStride, newShape []SymInt) ([]SymInt, bool) {
	if len(oldShape) == 0 {
		return symOnes(len(newShape)), true
	}
	n := symProd(oldShape)
	if symIs(n, 0) && symShapeEq(oldShape, newShape) {
		return append([]SymInt(nil), oldStride...), true
	}
	st := make([]SymInt, len(newShape))
	if symIs(n, 0) {
		for d := len(newShape) - 1; d >= 0; d-- {
			if d == len(newShape)-1 {
				st[d] = SymConst(1)
			} else {
				next := newShape[d+1]
				if symIs(next, 0) {
					next = SymConst(1)
				}
				st[d] = next.Mul(st[d+1])
			}
		}
		return st, true
	}
	if st, ok := splitStrides(oldShape, oldStride, newShape); ok {
		return st, true
	}
	vd := len(newShape) - 1
	chunkBase := oldStride[len(oldStride)-1]
	tensorNumel, viewNumel := SymConst(1), SymConst(1)
	for td := len(oldShape) - 1; td >= 0; td-- {
		tensorNumel = tensorNumel.Mul(oldShape[td])
		if td == 0 || (!symIs(oldShape[td-1], 1) && !symEq(oldStride[td-1], tensorNumel.Mul(chunkBase))) {
			for vd >= 0 && (symLt(viewNumel, tensorNumel) || symIs(newShape[vd], 1)) {
				st[vd] = viewNumel.Mul(chunkBase)
				viewNumel = viewNumel.Mul(newShape[vd])
				vd--
			}
			if !symEq(viewNumel, tensorNumel) {
				return nil, false
			}
			if td > 0 {
				chunkBase = oldStride[td-1]
				tensorNumel, viewNumel = SymConst(1), SymConst(1)
			}
		}
	}
	if vd != -1 {
		return nil, false
	}
	return st, true
}

// splitStrides is computeStride's answer for a symbolic view that only splits dims: each old
// dim is the product of consecutive new dims (as polynomials: 2*s0 - 2 as s0 - 1 and 2), no
// dim of size 1. Its strides follow from the old dim's stride alone, so the contiguity of old
// dims (torch's chunks) is no question: asked of symbolic sizes it would be a guard (is a
// pooling's slice the whole row?) and a graph per answer.
func splitStrides(oldShape, oldStride, newShape []SymInt) ([]SymInt, bool) {
	symbolic := false
	for _, s := range append(append([]SymInt(nil), oldShape...), newShape...) {
		k, c := s.IsConst()
		if c && k <= 1 {
			return nil, false
		}
		symbolic = symbolic || !c
	}
	if !symbolic || len(newShape) < len(oldShape) {
		return nil, false
	}
	st := make([]SymInt, len(newShape))
	j := 0
	for i := range oldShape {
		if j >= len(newShape) {
			return nil, false
		}
		start := j
		prod := newShape[j]
		j++
		for !prod.Equal(oldShape[i]) {
			if j >= len(newShape) || prod.Hint() >= oldShape[i].Hint() {
				return nil, false
			}
			prod = prod.Mul(newShape[j])
			j++
		}
		acc := oldStride[i]
		for k := j - 1; k >= start; k-- {
			st[k] = acc
			acc = acc.Mul(newShape[k])
		}
	}
	if j != len(newShape) {
		return nil, false
	}
	return st, true
}

func viewAs(self *TensorMeta, size []int64) (*TensorMeta, error) {
	return symViewAs(self, constSyms(size))
}

func symViewAs(self *TensorMeta, size []SymInt) (*TensorMeta, error) {
	shape, err := symInferSize(size, self.SymNumel())
	if err != nil {
		return nil, err
	}
	st, ok := symComputeStride(self.SymSizes(), self.SymStrides(), shape)
	if !ok {
		return nil, runtimeErrorf("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
}

func reshapeAs(self *TensorMeta, size []int64) (*TensorMeta, error) {
	return symReshapeAs(self, constSyms(size))
}

func symReshapeAs(self *TensorMeta, size []SymInt) (*TensorMeta, error) {
	shape, err := symInferSize(size, self.SymNumel())
	if err != nil {
		return nil, err
	}
	if st, ok := symComputeStride(self.SymSizes(), self.SymStrides(), shape); ok {
		return symViewOf(self, shape, st, self.SymOffset()), nil
	}
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

func metaView(a *Args) (Value, error) { return symViewAs(selfTensor(a), a.SymInts("size")) }

func metaViewAs(a *Args) (Value, error) {
	return symViewAs(selfTensor(a), a.Tensor("other").SymSizes())
}

func metaReshape(a *Args) (Value, error) { return symReshapeAs(selfTensor(a), a.SymInts("shape")) }

func metaReshapeAs(a *Args) (Value, error) {
	return symReshapeAs(selfTensor(a), a.Tensor("other").SymSizes())
}

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
	sizes := self.SymSizes()
	shape := append([]SymInt(nil), sizes[:start]...)
	shape = append(shape, symProd(sizes[start:end+1]))
	shape = append(shape, sizes[end+1:]...)
	return symReshapeAs(self, shape)
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
	sizes := a.SymInts("sizes")
	if len(sizes) == 0 {
		return nil, runtimeErrorf("unflatten: sizes must be non-empty")
	}
	all := self.SymSizes()
	inferred, err := symInferSize(sizes, all[d])
	if err != nil {
		return nil, runtimeErrorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor", symFmtShape(sizes), a.Int("dim"), self.Shape[d])
	}
	shape := append(append(append([]SymInt(nil), all[:d]...), inferred...), all[d+1:]...)
	return symViewAs(self, shape)
}

func metaSqueeze(a *Args) (Value, error) {
	self := selfTensor(a)
	d, has := a.OptInt("dim")
	sizes, strides := self.SymSizes(), self.SymStrides()
	shape, st := []SymInt{}, []SymInt{}
	if has {
		w, err := wrapDim(d, len(self.Shape))
		if err != nil {
			return nil, err
		}
		for i := range sizes {
			if i == w && symIs(sizes[i], 1) {
				continue
			}
			shape, st = append(shape, sizes[i]), append(st, strides[i])
		}
	} else {
		for i := range sizes {
			if !symIs(sizes[i], 1) {
				shape, st = append(shape, sizes[i]), append(st, strides[i])
			}
		}
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
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
	sizes, strides := self.SymSizes(), self.SymStrides()
	if len(sizes) > 0 {
		sizes[d0], sizes[d1] = sizes[d1], sizes[d0]
		strides[d0], strides[d1] = strides[d1], strides[d0]
	}
	return withSym(self, sizes, strides, self.SymOffset()), nil
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
	sizes, strides := self.SymSizes(), self.SymStrides()
	shape, st := make([]SymInt, len(dims)), make([]SymInt, len(dims))
	for i, d := range dims {
		w, err := wrapDim(d, len(self.Shape))
		if err != nil {
			return nil, err
		}
		if seen[w] {
			return nil, runtimeErrorf("permute(): duplicate dims are not allowed.")
		}
		seen[w] = true
		shape[i], st[i] = sizes[w], strides[w]
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
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

// symExpand is torch's inferExpandGeometry.
func symExpand(self *TensorMeta, sizes []SymInt) (*TensorMeta, error) {
	nd, td := len(sizes), len(self.Shape)
	if nd < td {
		return nil, runtimeErrorf("expand(torch.%sTensor{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)",
			scalarTypeName(self.DType), fmtShape(self.Shape), symFmtShape(sizes), nd, td)
	}
	ssz, sst := self.SymSizes(), self.SymStrides()
	shape, st := make([]SymInt, nd), make([]SymInt, nd)
	for i := nd - 1; i >= 0; i-- {
		off := nd - 1 - i
		d := td - 1 - off
		size, stride := SymConst(1), SymConst(1)
		if d >= 0 {
			size, stride = ssz[d], sst[d]
		} else if i+1 < nd {
			stride = shape[i+1].Mul(st[i+1])
		}
		target := sizes[i]
		if k, c := target.IsConst(); c && k == -1 {
			if d < 0 {
				return nil, runtimeErrorf("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension %d", i)
			}
			target = size
		}
		if k, c := target.IsConst(); c && k < 0 {
			return nil, runtimeErrorf("The expanded size of the tensor (%d) isn't allowed in a leading, non-existing dimension %d", k, i)
		}
		if !symEq(size, target) {
			if !symIs(size, 1) {
				return nil, runtimeErrorf("The expanded size of the tensor (%d) must match the existing size (%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s", target.Hint(), size.Hint(), i, symFmtShape(sizes), fmtShape(self.Shape))
			}
			size, stride = target, SymConst(0)
		}
		shape[i], st[i] = size, stride
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
}

func metaExpand(a *Args) (Value, error) { return symExpand(selfTensor(a), a.SymInts("size")) }

func metaExpandAs(a *Args) (Value, error) {
	return symExpand(selfTensor(a), a.Tensor("other").SymSizes())
}

func metaContiguous(a *Args) (Value, error) {
	self := selfTensor(a)
	mf, _ := a.Get("memory_format").(MemoryFormat)
	switch mf {
	case ContiguousFormat, "":
		if symContiguous(self) {
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
		if symIsChannelsLastContiguous(self.SymSizes(), self.SymStrides()) {
			return self.Clone(), nil
		}
	case PreserveFormat:
		return nil, runtimeErrorf("preserve memory format is unsupported by the contiguous operator")
	}
	return symTensor(self.DType, self.SymSizes(), symStridesFor(self.SymSizes(), mf), SymConst(0), deviceOf(self)), nil
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
	return symCheckedNarrow(self, d, a.SymInt("start"), a.SymInt("length"))
}

// symCheckedNarrow is torch's narrow(dim, start, length) with its argument checks.
func symCheckedNarrow(self *TensorMeta, d int, start, length SymInt) (*TensorMeta, error) {
	size := self.SymSizes()[d]
	if !symEq(start, size) { // start == size is valid (an empty narrow), but no valid dim
		n := size // wrapDim's range: a size-0 dim takes -1 and 0
		if symIs(n, 0) {
			n = SymConst(1)
		}
		if symLt(start, n.Neg()) || symGe(start, n) {
			return nil, indexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n.Hint(), n.Hint()-1, start.Hint())
		}
		if symLt(start, SymConst(0)) {
			start = start.Add(n)
		}
	}
	if symLt(length, SymConst(0)) || symGt(start, size.Sub(length)) {
		return nil, runtimeErrorf("start (%d) + length (%d) exceeds dimension size (%d).", start.Hint(), length.Hint(), size.Hint())
	}
	return symNarrow(self, d, start, length), nil
}

func selectMeta(self *TensorMeta, dim, index int64) (*TensorMeta, error) {
	return symSelect(self, dim, SymConst(index))
}

// symSelect is selectMeta with symbolic sizes and index.
func symSelect(self *TensorMeta, dim int64, index SymInt) (*TensorMeta, error) {
	if len(self.Shape) == 0 {
		return nil, indexErrorf("select() cannot be applied to a 0-dim tensor.")
	}
	d, err := wrapDim(dim, len(self.Shape))
	if err != nil {
		return nil, err
	}
	sizes, strides := self.SymSizes(), self.SymStrides()
	size := sizes[d]
	if symLt(index, size.Neg()) || symGe(index, size) {
		return nil, indexErrorf("select(): index %d out of range for tensor of size %s at dimension %d", index.Hint(), fmtShape(self.Shape), dim)
	}
	if symLt(index, SymConst(0)) {
		index = index.Add(size)
	}
	off := self.SymOffset().Add(index.Mul(strides[d]))
	sizes = append(sizes[:d:d], sizes[d+1:]...)
	strides = append(strides[:d:d], strides[d+1:]...)
	return withSym(self, sizes, strides, off), nil
}

func metaSelect(a *Args) (Value, error) {
	return symSelect(selfTensor(a), a.Int("dim"), a.SymInt("index"))
}

// symSplitSizes splits a dim of size n into pieces of split (the last may be smaller); for a
// symbolic n the number of pieces is decided at the hints and guarded
// (split·(num-1) < n <= split·num), the last piece is symbolic.
func symSplitSizes(n, split SymInt) ([]SymInt, error) {
	if _, c := split.IsConst(); !c {
		split = SymConst(split.Specialize("split size"))
	}
	sp, _ := split.IsConst()
	if sp < 0 {
		return nil, runtimeErrorf("split expects split_size be non-negative, but got split_size=%d", sp)
	}
	if sp == 0 && !symIs(n, 0) {
		return nil, runtimeErrorf("split_size can only be 0 if dimension size is 0, but got dimension size of %d", n.Hint())
	}
	num := int64(1)
	if sp > 0 {
		num = max((n.Hint()+sp-1)/sp, 1)
		if _, c := n.IsConst(); !c {
			// the piece count holds while split·(num-1) < n <= split·num
			symGt(n, SymConst(sp*(num-1)))
			symLe(n, SymConst(sp*num))
		}
	}
	out := make([]SymInt, num)
	for i := range out {
		out[i] = split
	}
	out[num-1] = n.Sub(SymConst(sp * (num - 1)))
	return out, nil
}

func symSplitWithSizes(self *TensorMeta, d int, sizes []SymInt) []Value {
	out := make([]Value, len(sizes))
	start := SymConst(0)
	for i, s := range sizes {
		out[i] = symNarrow(self, d, start, s)
		start = start.Add(s)
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
	n := self.SymSizes()[d]
	v := a.Get("split_size")
	if s, ok := AsSymInt(v); ok && !isBoolValue(v) {
		sizes, err := symSplitSizes(n, s)
		if err != nil {
			return nil, err
		}
		return symSplitWithSizes(self, d, sizes), nil
	}
	elems, ok := sequence(v)
	if !ok {
		return nil, typeErrorf("split(): argument 'split_size' must be int or tuple of ints, not %s", pyTypeName(v))
	}
	sizes := make([]SymInt, len(elems))
	sum := SymConst(0)
	for i, e := range elems {
		s, isInt := AsSymInt(e)
		if !isInt || isBoolValue(e) {
			return nil, typeErrorf("split(): argument 'split_size' must be int or tuple of ints, not %s", pyTypeName(v))
		}
		sizes[i] = s
		if k, c := s.IsConst(); c && k < 0 {
			return nil, runtimeErrorf("split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s", symFmtShape(sizes))
		}
		sum = sum.Add(s)
	}
	if !symEq(sum, n) {
		return nil, runtimeErrorf("split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at dimension %d), but got split_sizes=%s", n.Hint(), d, symFmtShape(sizes))
	}
	return symSplitWithSizes(self, d, sizes), nil
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
	n := self.SymSizes()[d]
	// split = ceil(n / chunks): a polynomial when chunks divides n's coefficients, else n's
	// value decides
	split, ok := n.AddConst(chunks - 1).FloorDivConst(chunks)
	if !ok {
		n = SymConst(n.Specialize("chunk of a dim"))
		split, _ = n.AddConst(chunks - 1).FloorDivConst(chunks)
	}
	if symIs(split, 0) && symIs(n, 0) {
		sizes := make([]SymInt, chunks)
		for i := range sizes {
			sizes[i] = SymConst(0)
		}
		return symSplitWithSizes(self, d, sizes), nil
	}
	sizes, err := symSplitSizes(n, split)
	if err != nil {
		return nil, err
	}
	return symSplitWithSizes(self, d, sizes), nil
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
	// the number of results is the dim's size: a symbolic one is specialised (only that one)
	out := make([]Value, self.SymSizes()[d].Specialize("unbind over a dim"))
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
	size, stride := a.SymInts("size"), a.SymInts("stride")
	if len(size) != len(stride) {
		return nil, runtimeErrorf("mismatch in length of strides and shape")
	}
	for _, s := range stride {
		if k, c := s.IsConst(); c && k < 0 {
			return nil, runtimeErrorf("as_strided: Negative strides are not supported at the moment, got strides: %s", symFmtShape(stride))
		}
	}
	off := self.SymOffset()
	if a.Get("storage_offset") != nil {
		off = a.SymInt("storage_offset")
	}
	return symViewOf(self, size, stride, off), nil
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
	shapes := make([][]SymInt, len(ts))
	for i, t := range ts {
		shapes[i] = t.SymSizes()
	}
	shape, err := SymBroadcastShapes(shapes...)
	if err != nil {
		return nil, err
	}
	out := make([]Value, len(ts))
	for i, t := range ts {
		if out[i], err = symExpand(t, shape); err != nil {
			return nil, err
		}
	}
	return out, nil
}
