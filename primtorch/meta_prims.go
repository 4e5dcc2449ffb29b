package primtorch

import "fmt"

// Meta functions of the core ops. They check the prims contract strictly (equal shapes and
// dtypes for elementwise ops, normalized view arguments), so a decomposition that forgets to
// broadcast or promote fails where it happens. Results of ops that write new tensors are
// contiguous, except elementwise ops, which follow TensorIterator's layout rule over their
// tensor operands; a node may carry any other dense layout (see doc_prims.go).

// primErrorf is a prims contract violation: the graph's builder has a bug.
func primErrorf(format string, args ...any) *Error {
	return runtimeErrorf(format, args...)
}

// checkScalarFor checks that a Python number can stand for a 0-d value of dtype dt.
func checkScalarFor(v Value, dt DType, what string) error {
	switch x := v.(type) {
	case bool:
		return nil
	case SymInt:
		if dt == Bool {
			return primErrorf("%s: the size %s is not a bool; convert the bool operand first", what, x)
		}
		return nil
	case int64:
		if dt == Bool && x != 0 && x != 1 {
			return primErrorf("%s: the number %d is not a bool; convert the bool operand first", what, x)
		}
		return nil
	case float64:
		if !dt.IsFloatingPoint() {
			return primErrorf("%s: the float %s is not a value of dtype %s; convert the operand to a floating dtype first", what, fmtFloat(x), dt)
		}
		return nil
	case SymFloat:
		if !dt.IsFloatingPoint() {
			return primErrorf("%s: the float %s is not a value of dtype %s; convert the operand to a floating dtype first", what, x, dt)
		}
		return nil
	}
	return primErrorf("%s: %s is neither a tensor nor a real Python number", what, pyTypeName(v))
}

// elementwiseOperands checks operands (tensors and numbers) against the contract: tensors of
// one shape and dtype, numbers representable in that dtype. It returns the first tensor.
func elementwiseOperands(name string, ops []Value, c dtypeClass) (*TensorMeta, []Value, error) {
	var first *TensorMeta
	var tensors []Value
	for _, v := range ops {
		m, ok := v.(*TensorMeta)
		if !ok {
			continue
		}
		tensors = append(tensors, m)
		if first == nil {
			first = m
			continue
		}
		if !symShapeEq(m.SymSizes(), first.SymSizes()) {
			return nil, nil, primErrorf("%s: operands of shapes %s and %s; prims do not broadcast, expand them with prims.expand first", name, fmtShape(first.Shape), fmtShape(m.Shape))
		}
		if m.DType != first.DType {
			return nil, nil, primErrorf("%s: operands of dtypes %s and %s; prims do not promote, convert them with prims.convert_element_type first", name, first.DType, m.DType)
		}
	}
	if first == nil {
		return nil, nil, primErrorf("%s: no tensor operand; materialize one number with prims.full", name)
	}
	if !c.accepts(first.DType) {
		return nil, nil, primErrorf("%s: dtype %s is not %s; convert the operands first", name, first.DType, dtypeClassNames[c])
	}
	for _, v := range ops {
		if _, ok := v.(*TensorMeta); !ok {
			if err := checkScalarFor(v, first.DType, name); err != nil {
				return nil, nil, err
			}
		}
	}
	return first, tensors, nil
}

func metaPrimPointwise(c dtypeClass, boolOut bool) metaFn {
	return func(a *Args) (Value, error) {
		first, tensors, err := elementwiseOperands(a.Op.Name, tensorParams(a), c)
		if err != nil {
			return nil, err
		}
		dt := first.DType
		if boolOut {
			dt = Bool
		}
		return pointwise(tensors, 0, dt, true)
	}
}

func metaPrimWhere(a *Args) (Value, error) {
	cond := a.Get("condition")
	first, tensors, err := elementwiseOperands(a.Op.Name, []Value{a.Get("self"), a.Get("other")}, dcAny)
	if err != nil {
		return nil, err
	}
	if cm, ok := cond.(*TensorMeta); ok {
		if cm.DType != Bool {
			return nil, primErrorf("prims::where: the condition is %s, not bool; compare it with prims.ne first", cm.DType)
		}
		if !symShapeEq(cm.SymSizes(), first.SymSizes()) {
			return nil, primErrorf("prims::where: condition of shape %s, values of shape %s; expand them with prims.expand first", fmtShape(cm.Shape), fmtShape(first.Shape))
		}
		tensors = append([]Value{cm}, tensors...)
	} else if _, ok := cond.(bool); !ok {
		return nil, primErrorf("prims::where: the condition is a %s, not a bool tensor", pyTypeName(cond))
	}
	return pointwise(tensors, 0, first.DType, true)
}

func metaPrimConvert(a *Args) (Value, error) {
	self := selfTensor(a)
	dt, _ := a.DType("dtype")
	if self.DType.IsComplex() || dt.IsComplex() {
		return nil, unsupportedf("prims::convert_element_type: complex dtypes are not part of the prims contract")
	}
	return pointwise([]Value{self}, 0, dt, true)
}

// metaPrimReduction is sum/prod/amax/amin/any/all/argmax/argmin(x, dims, keepdim): dims [] reduce
// every dim (as torch); argmax/argmin reduce exactly one dim (or a 0-d tensor).
func metaPrimReduction(c dtypeClass, arg bool) metaFn {
	return func(a *Args) (Value, error) {
		self := selfTensor(a)
		if !c.accepts(self.DType) {
			return nil, primErrorf("%s: dtype %s is not %s", a.Op.Name, self.DType, dtypeClassNames[c])
		}
		dims := a.Ints("dims")
		if arg && len(dims) != 1 && len(self.Shape) > 0 {
			return nil, primErrorf("%s reduces one dim, not %v; view the tensor as 1-d first to reduce all dims", a.Op.Name, dims)
		}
		shape, mask, err := symReduceShape(self, dims, a.Bool("keepdim"))
		if err != nil {
			return nil, err
		}
		dt := self.DType
		switch a.Op.ID {
		case OpPrimAny, OpPrimAll:
			dt = Bool
		case OpPrimArgmax, OpPrimArgmin:
			dt = Int64
		}
		if a.Op.ID != OpPrimSum && a.Op.ID != OpPrimProd && a.Op.ID != OpPrimAny && a.Op.ID != OpPrimAll {
			if err := checkNonEmpty(a.Op.Name, self, mask); err != nil {
				return nil, err
			}
		}
		return symNewTensor(dt, shape, deviceOf(self)), nil
	}
}

func metaPrimScan(a *Args) (Value, error) {
	self := selfTensor(a)
	if self.DType.IsComplex() {
		return nil, unsupportedf("%s of a complex tensor", a.Op.Name)
	}
	if _, err := wrapDim(a.Int("dim"), len(self.Shape)); err != nil {
		return nil, err
	}
	return symNewTensor(self.DType, self.SymSizes(), deviceOf(self)), nil
}

func metaPrimView(a *Args) (Value, error) {
	self, shape := selfTensor(a), a.SymInts("shape")
	if symAnyNegative(shape) || !symEq(symProd(shape), self.SymNumel()) {
		return nil, primErrorf("prims::view: shape %s does not hold the %d elements of %s; give every size explicitly", symFmtShape(shape), self.Numel(), fmtShape(self.Shape))
	}
	st, ok := symComputeStride(self.SymSizes(), self.SymStrides(), shape)
	if !ok {
		return nil, primErrorf("prims::view: %s with strides %s cannot be viewed as %s without a copy; clone it first", fmtShape(self.Shape), fmtShape(self.Strides), symFmtShape(shape))
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
}

// symAnyNegative: a symbolic size is never negative, a constant may be.
func symAnyNegative(xs []SymInt) bool {
	for _, x := range xs {
		if k, c := x.IsConst(); c && k < 0 {
			return true
		}
	}
	return false
}

func metaPrimPermute(a *Args) (Value, error) {
	self, dims := selfTensor(a), a.Ints("dims")
	if len(dims) != len(self.Shape) {
		return nil, primErrorf("prims::permute: %d dims for a %d-d tensor", len(dims), len(self.Shape))
	}
	return permuteMeta(self, dims)
}

func metaPrimExpand(a *Args) (Value, error) {
	shape := a.SymInts("shape")
	if symAnyNegative(shape) {
		return nil, primErrorf("prims::expand: shape %s; give every size explicitly (no -1)", symFmtShape(shape))
	}
	return symExpand(selfTensor(a), shape)
}

func metaPrimSlice(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil || len(self.Shape) == 0 {
		return nil, primErrorf("prims::slice: dim %d is not a dim of %s", a.Int("dim"), fmtShape(self.Shape))
	}
	sizes, strides := self.SymSizes(), self.SymStrides()
	start, end, step := a.SymInt("start"), a.SymInt("end"), a.SymInt("step")
	if _, c := step.IsConst(); !c {
		step = SymConst(step.Specialize("prims::slice step"))
	}
	k, _ := step.IsConst()
	if symLt(start, SymConst(0)) || symLt(end, start) || symGt(end, sizes[d]) || k < 1 {
		return nil, primErrorf("prims::slice: start=%d end=%d step=%d for a dim of size %d; normalize them to 0 <= start <= end <= size, step >= 1", start.Hint(), end.Hint(), k, self.Shape[d])
	}
	n, _ := end.Sub(start).AddConst(k - 1).FloorDiv(k)
	off := self.SymOffset().Add(start.Mul(strides[d]))
	sizes[d], strides[d] = n, strides[d].MulConst(k)
	return withSym(self, sizes, strides, off), nil
}

func metaPrimSelect(a *Args) (Value, error) {
	self, index := selfTensor(a), a.SymInt("index")
	if len(self.Shape) > 0 {
		if d, err := wrapDim(a.Int("dim"), len(self.Shape)); err == nil && (symLt(index, SymConst(0)) || symGe(index, self.SymSizes()[d])) {
			return nil, primErrorf("prims::select: index %d for a dim of size %d; normalize it to 0 <= index < size", index.Hint(), self.Shape[d])
		}
	}
	return symSelect(self, a.Int("dim"), index)
}

func metaPrimSqueeze(a *Args) (Value, error) {
	self := selfTensor(a)
	mask, err := wrapDims(a.Ints("dims"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	sizes, strides := self.SymSizes(), self.SymStrides()
	shape, st := []SymInt{}, []SymInt{}
	for i, s := range sizes {
		if mask[i] {
			if !symIs(s, 1) {
				return nil, primErrorf("prims::squeeze: dim %d has size %d, not 1", i, s.Hint())
			}
			continue
		}
		shape, st = append(shape, s), append(st, strides[i])
	}
	return symViewOf(self, shape, st, self.SymOffset()), nil
}

func metaPrimUnsqueeze(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dim"), len(self.Shape)+1)
	if err != nil {
		return nil, err
	}
	return unsqueezeMeta(self, d), nil
}

func metaPrimAsStrided(a *Args) (Value, error) {
	self := selfTensor(a)
	size, stride, off := a.SymInts("size"), a.SymInts("stride"), a.SymInt("offset")
	if len(size) != len(stride) || symAnyNegative(size) || symAnyNegative(stride) || symAnyNegative([]SymInt{off}) {
		return nil, primErrorf("prims::as_strided: size %s, stride %s, offset %d; give one non-negative stride per dim", symFmtShape(size), symFmtShape(stride), off.Hint())
	}
	return symViewOf(self, size, stride, off), nil
}

func metaPrimClone(a *Args) (Value, error) {
	self := selfTensor(a)
	return symNewTensor(self.DType, self.SymSizes(), deviceOf(self)), nil
}

func metaPrimCat(a *Args) (Value, error) {
	ts := a.Tensors("tensors")
	if len(ts) == 0 {
		return nil, primErrorf("prims::cat of no tensors")
	}
	first := ts[0]
	if len(first.Shape) == 0 {
		return nil, primErrorf("prims::cat of 0-d tensors; unsqueeze them first")
	}
	d, err := wrapDim(a.Int("dim"), len(first.Shape))
	if err != nil {
		return nil, err
	}
	fs := first.SymSizes()
	shape := append([]SymInt{}, fs...)
	shape[d] = SymConst(0)
	for i, t := range ts {
		if t.DType != first.DType {
			return nil, primErrorf("prims::cat: tensor %d is %s, tensor 0 is %s; convert them to one dtype first", i, t.DType, first.DType)
		}
		if len(t.Shape) != len(first.Shape) {
			return nil, primErrorf("prims::cat: tensor %d has %d dims, tensor 0 has %d; drop empty tensors and reshape first", i, len(t.Shape), len(first.Shape))
		}
		tsz := t.SymSizes()
		for k, s := range tsz {
			if k != d && !symEq(s, fs[k]) {
				return nil, primErrorf("prims::cat: tensor %d has shape %s, tensor 0 %s; only dim %d may differ", i, fmtShape(t.Shape), fmtShape(first.Shape), d)
			}
		}
		shape[d] = shape[d].Add(tsz[d])
	}
	return symNewTensor(first.DType, shape, deviceOf(first)), nil
}

func metaPrimPad(a *Args) (Value, error) {
	self, pad := selfTensor(a), a.SymInts("pad")
	if len(pad)%2 != 0 || len(pad)/2 > len(self.Shape) {
		return nil, primErrorf("prims::constant_pad_nd: %d pads for a %d-d tensor; give (before, after) pairs from the last dim", len(pad), len(self.Shape))
	}
	if err := checkScalarFor(a.Get("value"), self.DType, "prims::constant_pad_nd"); err != nil {
		return nil, err
	}
	shape := self.SymSizes()
	for k := 0; k < len(pad)/2; k++ {
		d := len(shape) - 1 - k
		shape[d] = shape[d].Add(pad[2*k]).Add(pad[2*k+1])
		if symLt(shape[d], SymConst(0)) {
			return nil, primErrorf("prims::constant_pad_nd: dim %d would have size %d", d, shape[d].Hint())
		}
	}
	// laid out as torch's constant_pad_nd lays out its result (channels-last for a channels-last
	// input): a pooling's padded input (windowChain) in another layout than its input and its
	// output made both its kernels transpose (resnet18's channels-last stem pool 2.3 ms, 0.4 NCHW)
	return symTensor(self.DType, shape, symStridesFor(shape, symSuggestMemoryFormat(self)), SymConst(0), deviceOf(self)), nil
}

func metaPrimGather(a *Args) (Value, error) { return metaGather(a) }

func metaPrimIndexSelect(a *Args) (Value, error) { return metaIndexSelect(a) }

// primIndexResult is the meta of prims::index(self, indices), contiguous.
func primIndexResult(self *TensorMeta, indices []*TensorMeta) (*TensorMeta, error) {
	if len(indices) > len(self.Shape) {
		return nil, primErrorf("prims::index: %d indices for a %d-d tensor", len(indices), len(self.Shape))
	}
	any := false
	for i, t := range indices {
		if t == nil {
			continue
		}
		any = true
		if t.DType != Int64 && t.DType != Int32 {
			return nil, primErrorf("prims::index: index %d is %s; prims index with int64 or int32 tensors only", i, t.DType)
		}
	}
	if !any {
		return nil, primErrorf("prims::index without an index tensor; use the source (or prims.clone) instead")
	}
	m, err := advancedIndex(self, indices)
	if err != nil {
		return nil, err
	}
	m.SetSymLayout(m.SymSizes(), SymContiguousStrides(m.SymSizes()), SymConst(0))
	return m, nil
}

func metaPrimIndex(a *Args) (Value, error) {
	return primIndexResult(selfTensor(a), a.Tensors("indices"))
}

func metaPrimScatter(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, ok := a.Get("index").(*TensorMeta); !ok {
		return nil, primErrorf("prims::scatter: the index must be a tensor")
	}
	if src, ok := a.Get("src").(*TensorMeta); ok {
		if !symShapeEq(src.SymSizes(), a.Tensor("index").SymSizes()) {
			return nil, primErrorf("prims::scatter: src of shape %s, index of shape %s; slice src to the index's shape first", fmtShape(src.Shape), fmtShape(a.Tensor("index").Shape))
		}
	} else if err := checkScalarFor(a.Get("src"), self.DType, "prims::scatter"); err != nil {
		return nil, err
	}
	return metaScatter(a)
}

func metaPrimIndexPut(a *Args) (Value, error) {
	self := selfTensor(a)
	r, err := primIndexResult(self, a.Tensors("indices"))
	if err != nil {
		return nil, err
	}
	switch v := a.Get("values").(type) {
	case *TensorMeta:
		if v.DType != self.DType {
			return nil, primErrorf("prims::index_put: values are %s, self is %s; convert them first", v.DType, self.DType)
		}
		if _, err := symExpand(v, r.SymSizes()); err != nil {
			return nil, primErrorf("prims::index_put: values of shape %s do not broadcast to the indexed shape %s", fmtShape(v.Shape), fmtShape(r.Shape))
		}
	default:
		if err := checkScalarFor(v, self.DType, "prims::index_put"); err != nil {
			return nil, err
		}
	}
	return symNewTensor(self.DType, self.SymSizes(), deviceOf(self)), nil
}

func metaPrimFull(a *Args) (Value, error) {
	shape := a.SymInts("shape")
	if symAnyNegative(shape) {
		return nil, primErrorf("prims::full: negative size in %s", symFmtShape(shape))
	}
	dt, _ := a.DType("dtype")
	if dt.IsComplex() {
		return nil, unsupportedf("prims::full of a complex dtype")
	}
	return symNewTensor(dt, shape, CPU), nil
}

func metaPrimIota(a *Args) (Value, error) {
	n := a.SymInt("length")
	if k, c := n.IsConst(); c && k < 0 {
		return nil, primErrorf("prims::iota: negative length %d", k)
	}
	dt, _ := a.DType("dtype")
	if dt.IsComplex() || dt == Bool {
		return nil, primErrorf("prims::iota of dtype %s", dt)
	}
	for _, name := range []string{"start", "step"} {
		if _, isFloat := a.Get(name).(float64); isFloat && !dt.IsFloatingPoint() {
			return nil, primErrorf("prims::iota: float %s for dtype %s", name, dt)
		}
	}
	return symNewTensor(dt, []SymInt{n}, CPU), nil
}

func metaPrimMm(a *Args) (Value, error) { return metaMm(a) }

func metaPrimBmm(a *Args) (Value, error) { return metaBmm(a) }

// metaPrimAddmm is addmm(bias, a, b) = bias + a @ b, bias broadcastable to the product (as
// torch.addmm with beta = alpha = 1).
func metaPrimAddmm(a *Args) (Value, error) {
	r, err := addmmProduct(a)
	if err != nil {
		return nil, err
	}
	m, bias := r.(*TensorMeta), selfTensor(a)
	if _, err := symExpand(bias, m.SymSizes()); err != nil {
		return nil, err
	}
	if bias.DType != m.DType {
		return nil, primErrorf("prims::addmm: bias is %s, the product %s", bias.DType, m.DType)
	}
	return m, nil
}

func metaPrimConvolution(a *Args) (Value, error) {
	in, w := selfTensor(a), a.Tensor("weight")
	k := len(w.Shape) - 2
	if k < 1 || k > 3 || len(in.Shape) != k+2 {
		return nil, primErrorf("prims::convolution: input %s and weight %s; give a batched input with 1 to 3 spatial dims", fmtShape(in.Shape), fmtShape(w.Shape))
	}
	return spatialSymbolic(k, metaConv(k, a.Bool("transposed")), convWindow)(a)
}

// metaPrimFallback is the meta of the torch-level call prims::fallback stands for (positional
// arguments only: keyword arguments stay on the node).
func metaPrimFallback(a *Args) (Value, error) {
	target := a.Str("target")
	op := Lookup(target)
	if op == nil {
		return nil, unsupportedf("prims::fallback of %s: the op registry does not know the target, so the node's meta is its only description", target)
	}
	if op.IsPrim() {
		return nil, primErrorf("prims::fallback of a prims target (%s); call it directly", target)
	}
	args, _ := a.Get("args").([]Value)
	return op.Meta(args, nil)
}

func metaPrimCopy(a *Args) (Value, error) {
	self := selfTensor(a)
	src, ok := a.Get("src").(*TensorMeta)
	if !ok || !symShapeEq(src.SymSizes(), self.SymSizes()) || src.DType != self.DType {
		return nil, primErrorf("prims::copy_: src %v does not match dst %s in shape and dtype; expand and convert it first", describeValue(a.Get("src")), self)
	}
	return self.Clone(), nil
}

func describeValue(v Value) string {
	if m, ok := v.(*TensorMeta); ok {
		return m.String()
	}
	return fmt.Sprintf("%v", v)
}
