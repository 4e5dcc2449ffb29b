package primtorch

// symReduceShape is the shape of a reduction of self over dims (nil or empty: all dims).
func symReduceShape(self *TensorMeta, dims []int64, keepdim bool) ([]SymInt, []bool, error) {
	nd := len(self.Shape)
	var mask []bool
	if len(dims) == 0 {
		mask = make([]bool, nd)
		for i := range mask {
			mask[i] = true
		}
	} else {
		var err error
		if mask, err = wrapDims(dims, nd); err != nil {
			return nil, nil, err
		}
	}
	shape := []SymInt{}
	for i, s := range self.SymSizes() {
		switch {
		case !mask[i]:
			shape = append(shape, s)
		case keepdim:
			shape = append(shape, SymConst(1))
		}
	}
	return shape, mask, nil
}

// checkNonEmpty rejects reducing a zero-size dim for reductions without an identity.
func checkNonEmpty(name string, self *TensorMeta, mask []bool) error {
	for i, s := range self.SymSizes() {
		if mask[i] && symIs(s, 0) {
			return indexErrorf("%s(): Expected reduction dim %d to have non-zero size.", name, i)
		}
	}
	return nil
}

// reductionDType is the result dtype of a sum-like reduction: dtype= when given, else the op's
// promotion applied to self's dtype.
func reductionDType(a *Args, self *TensorMeta) DType {
	if v, ok := a.Opt("dtype"); ok && v != nil {
		return v.(DType)
	}
	return a.Op.Promotion.Apply(self.DType)
}

// dimsArg reads the "dim" argument as a list (nil for None or all dims).
func dimsArg(a *Args) []int64 {
	switch v := a.Get("dim").(type) {
	case []int64:
		return v
	case int64:
		return []int64{v}
	}
	return nil
}

func metaSum(a *Args) (Value, error) {
	self := selfTensor(a)
	shape, _, err := symReduceShape(self, dimsArg(a), a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	return symNewTensor(reductionDType(a, self), shape, deviceOf(self)), nil
}

func metaMean(a *Args) (Value, error) {
	self := selfTensor(a)
	dt, ok := a.DType("dtype")
	if !ok {
		dt = self.DType
		if !isFloatOrComplex(dt) {
			return nil, runtimeErrorf("mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: %s", scalarTypeName(dt))
		}
	}
	shape, _, err := symReduceShape(self, dimsArg(a), a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	return symNewTensor(dt, shape, deviceOf(self)), nil
}

func metaProdDim(a *Args) (Value, error) {
	self := selfTensor(a)
	var dims []int64
	if d, ok := a.OptInt("dim"); ok {
		dims = []int64{d}
	}
	shape, _, err := symReduceShape(self, dims, a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	return symNewTensor(reductionDType(a, self), shape, deviceOf(self)), nil
}

// metaAmax is amax/amin: self's dtype, no empty reductions.
func metaAmax(a *Args) (Value, error) {
	self := selfTensor(a)
	shape, mask, err := symReduceShape(self, dimsArg(a), a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	if err := checkNonEmpty(a.Op.Schema.Name, self, mask); err != nil {
		return nil, err
	}
	return symNewTensor(self.DType, shape, deviceOf(self)), nil
}

// metaMaxAll is max()/min() over all elements.
func metaMaxAll(a *Args) (Value, error) {
	self := selfTensor(a)
	if symIs(self.SymNumel(), 0) {
		return nil, runtimeErrorf("%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.", a.Op.Schema.Name)
	}
	return symNewTensor(self.DType, []SymInt{}, deviceOf(self)), nil
}

// metaMaxDim is max.dim / min.dim: (values, indices).
func metaMaxDim(a *Args) (Value, error) {
	self := selfTensor(a)
	shape, mask, err := symReduceShape(self, []int64{a.Int("dim")}, a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	for i, s := range self.SymSizes() {
		if mask[i] && symIs(s, 0) {
			return nil, indexErrorf("%s(): Expected reduction dim %d to have non-zero size.", a.Op.Schema.Name, i)
		}
	}
	dev := deviceOf(self)
	return []Value{symNewTensor(self.DType, shape, dev), symNewTensor(Int64, shape, dev)}, nil
}

func metaArgmax(a *Args) (Value, error) {
	self := selfTensor(a)
	dim, hasDim := a.OptInt("dim")
	name := a.Op.Schema.Name
	if !hasDim {
		if symIs(self.SymNumel(), 0) {
			return nil, runtimeErrorf("%s(): Expected reduction dim to be specified for input.numel() == 0.", name)
		}
		shape := []SymInt{}
		if a.Bool("keepdim") {
			shape = symOnes(len(self.Shape))
		}
		return symNewTensor(Int64, shape, deviceOf(self)), nil
	}
	shape, mask, err := symReduceShape(self, []int64{dim}, a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	for i, s := range self.SymSizes() {
		if mask[i] && symIs(s, 0) {
			return nil, indexErrorf("%s(): Expected reduction dim %d to have non-zero size.", name, i)
		}
	}
	return symNewTensor(Int64, shape, deviceOf(self)), nil
}

// metaVar is var/std (and, with both, var_mean/std_mean): the reduction in self's real dtype.
func metaVar(both bool) metaFn {
	return func(a *Args) (Value, error) {
		self := selfTensor(a)
		if !isFloatOrComplex(self.DType) {
			return nil, runtimeErrorf("std and var only support floating point and complex dtypes")
		}
		shape, _, err := symReduceShape(self, dimsArg(a), a.Bool("keepdim"))
		if err != nil {
			return nil, err
		}
		v := symNewTensor(toReal(self.DType), shape, deviceOf(self))
		if both {
			return []Value{v, symNewTensor(self.DType, shape, deviceOf(self))}, nil
		}
		return v, nil
	}
}

func metaLogsumexp(a *Args) (Value, error) {
	self := selfTensor(a)
	shape, _, err := symReduceShape(self, dimsArg(a), a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	return symNewTensor(PromoteIntToFloat.Apply(self.DType), shape, deviceOf(self)), nil
}

// metaAllAny is all/any: bool results (uint8 for uint8 inputs).
func metaAllAny(a *Args) (Value, error) {
	self := selfTensor(a)
	var dims []int64
	if d, ok := a.OptInt("dim"); ok {
		dims = []int64{d}
	}
	shape, _, err := symReduceShape(self, dims, a.Bool("keepdim") && dims != nil)
	if err != nil {
		return nil, err
	}
	dt := Bool
	if self.DType == UInt8 {
		dt = UInt8
	}
	return symNewTensor(dt, shape, deviceOf(self)), nil
}

func metaCountNonzero(a *Args) (Value, error) {
	self := selfTensor(a)
	shape, _, err := symReduceShape(self, dimsArg(a), false)
	if err != nil {
		return nil, err
	}
	return symNewTensor(Int64, shape, deviceOf(self)), nil
}

// metaNorm is torch.norm / Tensor.norm: p a number, "fro", "nuc" or None. torch 2 runs every
// form as linalg.vector_norm or matrix_norm, which take a dtype the input converts to without
// narrowing (real for real inputs, complex for complex ones).
func metaNorm(a *Args) (Value, error) {
	self := selfTensor(a)
	dims := dimsArg(a)
	dtypeGiven := a.Get("dtype") != nil
	linalg := behavior().NormDtypeAnyP
	switch p := a.Get("p").(type) {
	case nil, int64, float64:
	case string:
		switch p {
		case "fro":
			if dtypeGiven && !linalg {
				return nil, valueErrorf("dtype argument is not supported in frobenius norm")
			}
			if len(dims) > 2 {
				return nil, runtimeErrorf("Expected at most 2 dimensions, but got %d dimensions instead.", len(dims))
			}
		case "nuc":
			if dtypeGiven && !linalg {
				return nil, valueErrorf("dtype argument is not supported in nuclear norm")
			}
			if (dims == nil && len(self.Shape) != 2) || (dims != nil && len(dims) != 2) {
				return nil, runtimeErrorf("nuclear_norm: Expected a 2D tensor for input, but got %dD", len(self.Shape))
			}
		default:
			return nil, runtimeErrorf("only valid string values are 'fro' and 'nuc', found %s", p)
		}
	default:
		return nil, typeErrorf("norm(): argument 'p' must be Number or str, not %s", pyTypeName(p))
	}
	dt, ok := a.DType("dtype")
	if ok && linalg && a.Op.Schema.Name == "norm" {
		fn := "linalg.vector_norm"
		if p, _ := a.Get("p").(string); p == "nuc" {
			fn = "linalg.matrix_norm"
		}
		switch {
		case !isFloatOrComplex(self.DType):
			return nil, runtimeErrorf("%s: Expected a floating point or complex tensor as input. Got %s", fn, scalarTypeName(self.DType))
		case self.DType.IsComplex() && !dt.IsComplex():
			return nil, runtimeErrorf("%s: dtype should be complex for complex inputs, but got %s", fn, scalarTypeName(dt))
		case !self.DType.IsComplex() && dt.IsComplex():
			return nil, runtimeErrorf("%s: dtype should be real for real inputs, but got %s", fn, scalarTypeName(dt))
		case PromoteTypes(self.DType, dt) != dt:
			return nil, runtimeErrorf("%s: the dtype of the input (%s) should be convertible without narrowing to the specified dtype (%s)", fn, scalarTypeName(self.DType), scalarTypeName(dt))
		}
		dt = toReal(dt)
	}
	if !ok {
		if !isFloatOrComplex(self.DType) {
			if a.Op.Schema.Name == "norm" {
				return nil, runtimeErrorf("norm(): input dtype should be either floating point or complex. Got %s instead.", scalarTypeName(self.DType))
			}
			return nil, runtimeErrorf("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s", scalarTypeName(self.DType))
		}
		dt = toReal(self.DType)
	}
	shape, _, err := symReduceShape(self, dims, a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	return symNewTensor(dt, shape, deviceOf(self)), nil
}

// metaScan is cumsum/cumprod/logcumsumexp: same shape, sum-like dtype.
func metaScan(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, err := wrapDim(a.Int("dim"), len(self.Shape)); err != nil {
		return nil, err
	}
	return symNewTensor(reductionDType(a, self), self.SymSizes(), deviceOf(self)), nil
}

// metaCummax is cummax/cummin: (values, indices).
func metaCummax(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, err := wrapDim(a.Int("dim"), len(self.Shape)); err != nil {
		return nil, err
	}
	dev := deviceOf(self)
	return []Value{symNewTensor(self.DType, self.SymSizes(), dev), symNewTensor(Int64, self.SymSizes(), dev)}, nil
}

// softmaxDim resolves F.softmax's implicit dim (dim=None): 0 for 0-, 1- and 3-d inputs, else 1.
func softmaxDim(a *Args, self *TensorMeta) int64 {
	if d, ok := a.OptInt("dim"); ok {
		return d
	}
	switch len(self.Shape) {
	case 0, 1, 3:
		return 0
	}
	return 1
}

func metaSoftmax(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, err := wrapDim(softmaxDim(a, self), len(self.Shape)); err != nil {
		return nil, err
	}
	dt, ok := a.DType("dtype")
	if !ok {
		dt = self.DType
	}
	return symNewTensor(dt, self.SymSizes(), deviceOf(self)), nil
}
