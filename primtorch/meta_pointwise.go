package primtorch

// metaPointwise is the meta of an elementwise op over its Tensor parameters, with the op's
// type-promotion kind.
func metaPointwise(a *Args) (Value, error) {
	return pointwise(tensorParams(a), a.Op.Promotion, 0, false)
}

// metaSameDType is an elementwise op whose result has self's dtype (no promotion).
func metaSameDType(a *Args) (Value, error) {
	return pointwise(tensorParams(a), 0, dtypeOf(a.Get(a.Op.Schema.Params[0].Canon)), true)
}

func metaNeg(a *Args) (Value, error) {
	if selfTensor(a).DType == Bool {
		return nil, runtimeErrorf("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
	}
	return metaPointwise(a)
}

// metaIntegral is an elementwise op defined on integers and bools only (bitwise ops).
func metaIntegral(kernel string) metaFn { return metaIntegralOf(kernel, true) }

// metaShift: shifts take integers but not bool (eager: "lshift_cpu" not implemented for 'Bool';
// fuzz seed 16990); the result's dtype decides (a bool tensor shifted by a Python int is int64).
func metaShift(kernel string) metaFn { return metaIntegralOf(kernel, false) }

func metaIntegralOf(kernel string, boolOK bool) metaFn {
	return func(a *Args) (Value, error) {
		r, err := metaPointwise(a)
		if err != nil {
			return nil, err
		}
		if d := r.(*TensorMeta).DType; !d.IsIntegral(boolOK) {
			return nil, notImplementedFor(kernel, d)
		}
		return r, nil
	}
}

func metaRound(a *Args) (Value, error) {
	if d := selfTensor(a).DType; a.Int("decimals") != 0 && !d.IsFloatingPoint() {
		return nil, notImplementedFor("round_decimals_cpu", d)
	}
	return metaPointwise(a)
}

func metaGelu(a *Args) (Value, error) {
	if s := a.Str("approximate"); s != "none" && s != "tanh" {
		return nil, runtimeErrorf("approximate argument must be either none or tanh.")
	}
	return metaPointwise(a)
}

func metaGlu(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) == 0 {
		return nil, runtimeErrorf("glu does not support scalars because halving size must be even")
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	shape := self.SymSizes()
	half, ok := shape[d].FloorDivConst(2)
	if r, exact := shape[d].ModConst(2); !ok || !exact || r != 0 {
		// an odd or not provably even size: its value decides
		n := shape[d].Specialize("glu halves dim " + itoa(d))
		if n%2 != 0 {
			return nil, runtimeErrorf("Halving dimension must be even, but dimension %d is size %d", d, n)
		}
		half = SymConst(n / 2)
	}
	shape[d] = half
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

// metaPrelu: torch 1.13 lays the result out by the input's suggest_memory_format, torch 2 as an
// elementwise op does.
func metaPrelu(a *Args) (Value, error) {
	self, w := selfTensor(a), a.Tensor("weight")
	if n := w.SymNumel(); !symIs(n, 1) {
		if len(self.Shape) < 2 && !(len(self.Shape) == 1 && len(w.Shape) == 1) {
			return nil, runtimeErrorf("Not allow zero-dim input tensor.")
		}
		ch := SymConst(1)
		if len(self.Shape) >= 2 {
			ch = self.SymSizes()[1]
		}
		if !symEq(n, ch) {
			return nil, runtimeErrorf("Mismatch of parameter numbers and input channel size. Found parameter numbers = %d and channel size = %d.", n.Hint(), ch.Hint())
		}
	}
	if behavior().PreluLikeElementwise {
		r, err := pointwise([]Value{self}, 0, self.DType, true)
		if err != nil {
			return nil, err
		}
		r.RequiresGrad = false
		return r, nil
	}
	return symTensor(self.DType, self.SymSizes(), symStridesFor(self.SymSizes(), symSuggestMemoryFormat(self)), SymConst(0), deviceOf(self)), nil
}

// metaAddSub checks alpha as add/sub do, then promotes.
func metaAddSub(a *Args) (Value, error) {
	r, err := metaPointwise(a)
	if err != nil {
		return nil, err
	}
	m := r.(*TensorMeta)
	switch alpha := a.Get("alpha").(type) {
	case float64:
		if m.DType.IsIntegral(true) {
			return nil, runtimeErrorf("For integral input tensors, argument alpha must not be a floating point number.")
		}
	case complex128:
		if !m.DType.IsComplex() {
			return nil, runtimeErrorf("For non-complex input tensors, argument alpha must not be a complex number.")
		}
	case bool:
		if m.DType != Bool && alpha {
			return nil, runtimeErrorf("Boolean alpha only supported for Boolean results.")
		}
	}
	if m.DType != Bool && dtypeOf(a.Get("alpha")) == Bool {
		return nil, runtimeErrorf("Boolean alpha only supported for Boolean results.")
	}
	if a.Op.Schema.Name == "sub" || a.Op.Schema.Name == "sub_" || a.Op.Schema.Name == "rsub" {
		s, o := dtypeOf(a.Get("self")), dtypeOf(a.Get("other"))
		if s == Bool && o == Bool {
			return nil, runtimeErrorf("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")
		}
		if s == Bool || o == Bool {
			return nil, runtimeErrorf("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
		}
	}
	return m, nil
}

func metaDiv(a *Args) (Value, error) {
	mode, hasMode := a.Get("rounding_mode").(string)
	if !hasMode {
		return metaPointwise(a)
	}
	if mode != "trunc" && mode != "floor" {
		return nil, runtimeErrorf("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode)
	}
	r, err := pointwise(tensorParams(a), PromoteDefault, 0, false)
	if err != nil {
		return nil, err
	}
	// torch's kernels for a rounding division (div_floor_cpu, div_trunc_cuda) have no bool or
	// complex implementation
	if m := r; m != nil && (m.DType == Bool || m.DType.IsComplex()) && (m.Device.Type == "cpu" || m.Device.Type == "cuda") {
		return nil, runtimeErrorf("\"div_%s_%s\" not implemented for '%s'", mode, m.Device.Type, scalarTypeName(m.DType))
	}
	return r, nil
}

func metaPow(a *Args) (Value, error) {
	r, err := metaPointwise(a)
	if err != nil {
		return nil, err
	}
	m := r.(*TensorMeta)
	if e, ok := a.Get("exponent").(int64); ok && e < 0 && m.DType.IsIntegral(false) {
		return nil, runtimeErrorf("Integers to negative integer powers are not allowed.")
	}
	// A number base: torch.pow(number, tensor) writes a contiguous result; number ** tensor
	// (Tensor.__rpow__) does under torch 2 only.
	if _, base := a.Get("self").(*TensorMeta); !base && (!a.sigOf("operator.pow") || behavior().ScalarPowContiguous) {
		m.SetSymLayout(m.SymSizes(), SymContiguousStrides(m.SymSizes()), SymConst(0))
	}
	return m, nil
}

func metaWhere(a *Args) (Value, error) {
	if _, tensor := a.Get("other").(*TensorMeta); a.Op.Schema.Name == "where" && a.Op.Schema.Overload == "method" && !tensor && !behavior().WhereScalarOther {
		return nil, typeErrorf("where(): argument 'other' (position 2) must be Tensor, not %s", pyTypeName(a.Get("other")))
	}
	cond := a.Get("condition")
	if c, ok := cond.(*TensorMeta); ok && c.DType != Bool && c.DType != UInt8 {
		return nil, runtimeErrorf("where expected condition to be a boolean tensor, but got a tensor with dtype %s", scalarTypeName(c.DType))
	}
	dt := ResultType(a.Get("self"), a.Get("other"))
	return pointwise([]Value{cond, a.Get("self"), a.Get("other")}, 0, dt, true)
}

func metaMaskedFill(a *Args) (Value, error) {
	self, mask := selfTensor(a), a.Tensor("mask")
	if mask.DType != Bool {
		return nil, dataDependentf("masked_fill with a %s mask is valid only when the mask holds 0s and 1s", scalarTypeName(mask.DType))
	}
	if v, ok := a.Get("value").(*TensorMeta); ok && len(v.Shape) != 0 {
		return nil, runtimeErrorf("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).", len(v.Shape))
	} else if !ok {
		// a number: c10's checked conversion to self's dtype (inf into an int tensor: fuzz seed 23192)
		if err := checkFillValue(a.Get("value"), self.DType); err != nil {
			return nil, err
		}
	}
	shape, err := SymBroadcastShapes(mask.SymSizes(), self.SymSizes())
	if err != nil {
		return nil, err
	}
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

func metaAddcdiv(a *Args) (Value, error) {
	if dtypeOf(a.Get("tensor1")).IsIntegral(true) && dtypeOf(a.Get("tensor2")).IsIntegral(true) {
		return nil, runtimeErrorf("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")
	}
	return metaPointwise(a)
}

// metaClampTensor is clamp with tensor or number bounds. Number bounds take part in type
// promotion but not in the layout: torch runs clamp.Scalar as a unary TensorIterator op.
func metaClampTensor(a *Args) (Value, error) {
	if a.Get("min") == nil && a.Get("max") == nil {
		return nil, runtimeErrorf("torch.clamp: At least one of 'min' or 'max' must not be None")
	}
	ops := tensorParams(a)
	dt := a.Op.Promotion.Apply(ResultType(ops...))
	return pointwise(tensorsOnly(ops), 0, dt, true)
}

// tensorsOnly drops Python numbers from operands.
func tensorsOnly(ops []Value) []Value {
	var out []Value
	for _, v := range ops {
		if _, ok := v.(*TensorMeta); ok {
			out = append(out, v)
		}
	}
	return out
}

// rejectDType wraps a meta function with a check torch makes on self's dtype.
func rejectDType(reject func(DType) bool, msg string, m metaFn) metaFn {
	return func(a *Args) (Value, error) {
		if t, ok := a.Get(a.Op.Schema.Params[0].Canon).(*TensorMeta); ok && reject(t.DType) {
			return nil, runtimeErrorf("%s", msg)
		}
		return m(a)
	}
}

func isComplex(d DType) bool { return d.IsComplex() }
func isBool(d DType) bool    { return d == Bool }

// noComplex is the "<name> is not supported for complex inputs" check of rounding ops.
func noComplex(name string) metaFn {
	return rejectDType(isComplex, name+" is not supported for complex inputs", metaPointwise)
}

// metaHardtanh (hardtanh, relu6) writes into empty_like(self) and rejects negative limits for
// unsigned inputs.
func metaHardtanh(a *Args) (Value, error) {
	if v, ok := a.Opt("min_val"); ok && selfTensor(a).DType == UInt8 && scalarFloat(v) < 0 {
		return nil, runtimeErrorf("cannot do hardtanh on an unsigned type with negative limits")
	}
	return metaLikeSelf(a)
}

// clampLike is relu/relu6/hardtanh: no bool, no complex inputs.
func clampLike(boolMsg string, m metaFn) metaFn {
	return rejectDType(isBool, boolMsg, rejectDType(isComplex, "clamp is not supported for complex types", m))
}

// metaHalves is glu: an elementwise op over the two halves of self along dim.
func metaGluHalves(a *Args) (Value, error) {
	r, err := metaGlu(a)
	if err != nil {
		return nil, err
	}
	self := selfTensor(a)
	d, _ := wrapDim(a.Int("dim"), len(self.Shape))
	h := r.(*TensorMeta).SymSizes()[d]
	return pointwise([]Value{symNarrow(self, d, SymConst(0), h), symNarrow(self, d, h, h)}, PromoteDefault, 0, false)
}

// metaRsub: rsub(self, other) computes other - alpha * self, so TensorIterator sees other first.
func metaRsub(a *Args) (Value, error) {
	r, err := pointwise([]Value{a.Get("other"), a.Get("self")}, PromoteDefault, 0, false)
	if err != nil {
		return nil, err
	}
	if _, err := metaAddSub(a); err != nil {
		return nil, err
	}
	return r, nil
}

// metaContiguousOut is an elementwise op whose kernel writes a new contiguous tensor.
func metaContiguousOut(a *Args) (Value, error) {
	r, err := metaPointwise(a)
	if err != nil {
		return nil, err
	}
	m := r.(*TensorMeta)
	m.SetSymLayout(m.SymSizes(), SymContiguousStrides(m.SymSizes()), SymConst(0))
	return m, nil
}

// metaSameDTypes is lerp: every tensor operand must have self's dtype.
func metaSameDTypes(a *Args) (Value, error) {
	self := selfTensor(a)
	for _, p := range a.Sig.Params[1:] {
		if t, ok := a.Get(p.Canon).(*TensorMeta); ok && t.DType != self.DType {
			return nil, runtimeErrorf("expected dtype %s for `%s` but got dtype %s", torchShort(self.DType), p.Name, torchShort(t.DType))
		}
	}
	// A number weight is no TensorIterator operand (lerp.Scalar).
	return pointwise(tensorsOnly(tensorParams(a)), 0, self.DType, true)
}

// metaLikeSelf is a unary op whose kernel allocates empty_like(self) (nan_to_num): self's
// strides when dense, its dim order otherwise.
func metaLikeSelf(a *Args) (Value, error) {
	self := selfTensor(a)
	return emptyLike(self, a.Op.Promotion.Apply(self.DType), PreserveFormat), nil
}

// metaComplex: torch.complex of two float32 (float64) tensors is complex64 (complex128) with
// the layout of an elementwise op (torch's kernel is a TensorIterator; its meta kernel
// would give a contiguous result).
func metaComplex(a *Args) (Value, error) {
	re, ok1 := a.Get("real").(*TensorMeta)
	im, ok2 := a.Get("imag").(*TensorMeta)
	if !ok1 || !ok2 || re.DType != im.DType || (re.DType != Float32 && re.DType != Float64) {
		return nil, unsupportedf("torch.complex of %v and %v: only float32 and float64 pairs are modelled", a.Get("real"), a.Get("imag"))
	}
	return pointwise([]Value{re, im}, 0, toComplex(re.DType), true)
}
