package primtorch

import "math"

// factoryOptions reads dtype/device/requires_grad of a factory, with dtype defaulting to def.
func factoryOptions(a *Args, def DType, defDev Device) (DType, Device, bool, error) {
	dt, ok := a.DType("dtype")
	if !ok {
		dt = def
	}
	dev := defDev
	if v, ok := a.Opt("device"); ok && v != nil {
		dev = v.(Device)
	}
	if dev.Type == "" {
		dev = CPU
	}
	if l, ok := a.Opt("layout"); ok && l != nil && l.(Layout) != "strided" && l.(Layout) != "torch.strided" {
		return 0, dev, false, unsupportedf("layout %s", l)
	}
	rg := a.Flag("requires_grad")
	if rg && !isFloatOrComplex(dt) {
		return 0, dev, false, runtimeErrorf("Only Tensors of floating point and complex dtype can require gradients")
	}
	return dt, dev, rg, nil
}

func checkSize(size []SymInt) error {
	for _, s := range size {
		if k, c := s.IsConst(); c && k < 0 {
			return runtimeErrorf("Trying to create tensor with negative dimension %d: %s", k, symFmtShape(size))
		}
	}
	return nil
}

// metaFactory is zeros/ones/empty/rand/randn/full(size, ...): a new contiguous tensor.
func metaFactory(a *Args) (Value, error) {
	size := a.SymInts("size")
	if err := checkSize(size); err != nil {
		return nil, err
	}
	def := DefaultFloat
	if v, ok := a.Opt("fill_value"); ok {
		def, _ = scalarDType(v)
	}
	if v, ok := a.Opt("high"); ok && v != nil {
		def = Int64
	}
	dt, dev, rg, err := factoryOptions(a, def, CPU)
	if err != nil {
		return nil, err
	}
	if v, ok := a.Opt("fill_value"); ok {
		if err := checkFillValue(v, dt); err != nil {
			return nil, err
		}
	}
	if a.Op.Random && a.Op.Schema.Name != "randint" && !isFloatOrComplex(dt) {
		kernel := "check_uniform_bounds"
		if a.Op.Schema.Name == "randn" {
			kernel = "normal_kernel_cpu"
		}
		return nil, notImplementedFor(kernel, dt)
	}
	mf := ContiguousFormat
	if v, ok := a.Opt("memory_format"); ok && v != nil {
		mf = v.(MemoryFormat)
	}
	if (mf == ChannelsLast && len(size) != 4) || (mf == ChannelsLast3d && len(size) != 5) {
		return nil, runtimeErrorf("required rank %d tensor to use %s format", map[MemoryFormat]int{ChannelsLast: 4, ChannelsLast3d: 5}[mf], mf)
	}
	out := symTensor(dt, size, symStridesFor(size, mf), SymConst(0), dev)
	out.RequiresGrad = rg
	return out, nil
}

// metaLike is zeros_like/ones_like/empty_like/full_like/rand_like/randn_like/randint_like.
func metaLike(a *Args) (Value, error) {
	self := selfTensor(a)
	dt, dev, rg, err := factoryOptions(a, self.DType, deviceOf(self))
	if err != nil {
		return nil, err
	}
	if v, ok := a.Opt("fill_value"); ok {
		if err := checkFillValue(v, dt); err != nil {
			return nil, err
		}
	}
	mf, _ := a.Get("memory_format").(MemoryFormat)
	out := emptyLike(self, dt, mf)
	out.Device, out.RequiresGrad = dev, rg
	return out, nil
}

// metaNew is Tensor.new_zeros/new_ones/new_empty/new_full: dtype and device default to self's.
func metaNew(a *Args) (Value, error) {
	self := selfTensor(a)
	size := a.SymInts("size")
	if err := checkSize(size); err != nil {
		return nil, err
	}
	dt, dev, rg, err := factoryOptions(a, self.DType, deviceOf(self))
	if err != nil {
		return nil, err
	}
	if v, ok := a.Opt("fill_value"); ok {
		if err := checkFillValue(v, dt); err != nil {
			return nil, err
		}
	}
	out := symNewTensor(dt, size, dev)
	out.RequiresGrad = rg
	return out, nil
}

func scalarFloat(v Value) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

func metaArange(a *Args) (Value, error) {
	start, hasStart := a.Opt("start")
	if !hasStart {
		start = int64(0)
	}
	end := a.Get("end")
	step, hasStep := a.Opt("step")
	if !hasStep {
		step = int64(1)
	}
	if HasSymbols([]Value{start, end, step}) {
		if r, ok, err := symArange(a, start, end, step); ok || err != nil {
			return r, err
		}
		start, end, step = SpecializeValue(start, "arange"), SpecializeValue(end, "arange"), SpecializeValue(step, "arange")
	}
	def := Int64
	for _, v := range []Value{start, end, step} {
		if _, isF := v.(float64); isF {
			def = DefaultFloat
		}
	}
	dt, dev, rg, err := factoryOptions(a, def, CPU)
	if err != nil {
		return nil, err
	}
	s, e, st := scalarFloat(start), scalarFloat(end), scalarFloat(step)
	if st == 0 {
		return nil, runtimeErrorf("step must be nonzero")
	}
	if math.IsInf(s, 0) || math.IsInf(e, 0) || math.IsNaN(s) || math.IsNaN(e) {
		return nil, runtimeErrorf("unsupported range: %s -> %s", fmtFloat(s), fmtFloat(e))
	}
	if (st > 0 && e < s) || (st < 0 && e > s) {
		return nil, runtimeErrorf("upper bound and larger bound inconsistent with step sign")
	}
	var n float64
	if dt.IsIntegral(true) {
		n = math.Ceil(float64(int64(e)-int64(s)) / float64(int64(st)))
		if int64(st) == 0 {
			return nil, runtimeErrorf("step must be nonzero")
		}
	} else {
		n = math.Ceil((e - s) / st)
	}
	return &TensorMeta{DType: dt, Shape: []int64{int64(n)}, Strides: []int64{1}, Device: dev, RequiresGrad: rg}, nil
}

// symArange is arange over ints with a symbolic bound and a constant positive step: its length
// ceil((end - start) / step) when that is a polynomial (ok=false otherwise).
func symArange(a *Args, start, end, step Value) (Value, bool, error) {
	s, ok1 := AsSymInt(start)
	e, ok2 := AsSymInt(end)
	st, ok3 := AsSymInt(step)
	k, c := st.IsConst()
	if !ok1 || !ok2 || !ok3 || isBoolValue(start) || isBoolValue(end) || isBoolValue(step) || !c || k <= 0 {
		return nil, false, nil
	}
	n, ok := e.Sub(s).AddConst(k - 1).FloorDivConst(k)
	if !ok {
		return nil, false, nil
	}
	dt, dev, rg, err := factoryOptions(a, Int64, CPU)
	if err != nil {
		return nil, true, err
	}
	if symLt(e, s) {
		return nil, true, runtimeErrorf("upper bound and larger bound inconsistent with step sign")
	}
	out := symNewTensor(dt, []SymInt{n}, dev)
	out.RequiresGrad = rg
	return out, true, nil
}

func metaLinspace(a *Args) (Value, error) {
	steps := a.SymInt("steps")
	if k, c := steps.IsConst(); c && k < 0 {
		return nil, runtimeErrorf("number of steps must be non-negative")
	}
	dt, dev, rg, err := factoryOptions(a, DefaultFloat, CPU)
	if err != nil {
		return nil, err
	}
	out := symNewTensor(dt, []SymInt{steps}, dev)
	out.RequiresGrad = rg
	return out, nil
}

func metaEye(a *Args) (Value, error) {
	n := a.SymInt("n")
	m := n
	if a.Get("m") != nil {
		m = a.SymInt("m")
	}
	if k, c := n.IsConst(); c && k < 0 {
		return nil, runtimeErrorf("n must be greater or equal to 0, got %d", k)
	}
	if k, c := m.IsConst(); c && k < 0 {
		return nil, runtimeErrorf("m must be greater or equal to 0, got %d", k)
	}
	dt, dev, rg, err := factoryOptions(a, DefaultFloat, CPU)
	if err != nil {
		return nil, err
	}
	out := symNewTensor(dt, []SymInt{n, m}, dev)
	out.RequiresGrad = rg
	return out, nil
}

func metaRandperm(a *Args) (Value, error) {
	n := a.SymInt("n")
	if k, c := n.IsConst(); c && k < 0 {
		return nil, runtimeErrorf("n must be non-negative, got%d", k)
	}
	dt, dev, rg, err := factoryOptions(a, Int64, CPU)
	if err != nil {
		return nil, err
	}
	out := symNewTensor(dt, []SymInt{n}, dev)
	out.RequiresGrad = rg
	return out, nil
}

func metaEmptyStrided(a *Args) (Value, error) {
	size, stride := a.SymInts("size"), a.SymInts("stride")
	if err := checkSize(size); err != nil {
		return nil, err
	}
	if len(size) != len(stride) {
		return nil, runtimeErrorf("dimensionality of sizes (%d) must match dimensionality of strides (%d)", len(size), len(stride))
	}
	dt, dev, rg, err := factoryOptions(a, DefaultFloat, CPU)
	if err != nil {
		return nil, err
	}
	out := symTensor(dt, size, stride, SymConst(0), dev)
	out.RequiresGrad = rg
	return out, nil
}

// metaTensor is torch.tensor(data): shape and dtype inferred from nested Python numbers.
func metaTensor(a *Args) (Value, error) {
	data := a.Get("data")
	if _, ok := data.(*TensorMeta); ok {
		return nil, unsupportedf("torch.tensor(tensor) copies data ptgo does not see")
	}
	var shape []int64
	kind := -1 // max category: 0 bool, 1 int, 2 float, 3 complex
	var walk func(v Value, depth int) error
	walk = func(v Value, depth int) error {
		if s, ok := sequence(v); ok {
			if depth == len(shape) {
				shape = append(shape, int64(len(s)))
			} else if depth > len(shape) || shape[depth] != int64(len(s)) {
				return valueErrorf("expected sequence of length %d at dim %d (got %d)", shape[depth], depth, len(s))
			}
			for _, e := range s {
				if err := walk(e, depth+1); err != nil {
					return err
				}
			}
			return nil
		}
		if depth < len(shape) {
			return typeErrorf("not a sequence")
		}
		var k int
		switch v.(type) {
		case bool:
			k = 0
		case int64, int, SymInt: // (a size read from a tensor is a Python int)
			k = 1
		case float64:
			k = 2
		case complex128:
			k = 3
		case *TensorMeta:
			return unsupportedf("torch.tensor of a list holding tensors")
		default:
			return typeErrorf("Could not infer dtype of %s", pyTypeName(v))
		}
		kind = max(kind, k)
		return nil
	}
	if err := walk(data, 0); err != nil {
		return nil, err
	}
	def := DefaultFloat
	switch kind {
	case 0:
		def = Bool
	case 1:
		def = Int64
	case 3:
		def = DefaultComplex
	}
	dt, dev, rg, err := factoryOptions(a, def, CPU)
	if err != nil {
		return nil, err
	}
	if shape == nil {
		shape = []int64{}
	}
	return &TensorMeta{DType: dt, Shape: shape, Strides: ContiguousStrides(shape), Device: dev, RequiresGrad: rg}, nil
}

func metaScalarTensor(a *Args) (Value, error) {
	dt, dev, rg, err := factoryOptions(a, DefaultFloat, CPU)
	if err != nil {
		return nil, err
	}
	return &TensorMeta{DType: dt, Shape: []int64{}, Strides: []int64{}, Device: dev, RequiresGrad: rg}, nil
}

// checkFillValue is c10's checked_convert of a Python number filled into a tensor of dtype dt
// (full, full_like, new_full, fill_): a float beyond an integer dtype's range (NaN and
// infinities included), beyond float16's, bfloat16's or float32's finite range (infinities and
// NaN pass), or an int beyond the dtype's range (negative ints wrap into unsigned dtypes) is a
// RuntimeError. Bools, tensors and symbolic values are not checked here.
func checkFillValue(v Value, dt DType) error {
	var lo, hi float64
	switch dt {
	case UInt8:
		lo, hi = 0, math.MaxUint8
	case Int8:
		lo, hi = math.MinInt8, math.MaxInt8
	case Int16:
		lo, hi = math.MinInt16, math.MaxInt16
	case Int32:
		lo, hi = math.MinInt32, math.MaxInt32
	case Int64:
		lo, hi = math.MinInt64, math.MaxInt64
	case Float16:
		lo, hi = -65504, 65504
	case BFloat16:
		lo, hi = -0x1.fep127, 0x1.fep127
	case Float32:
		lo, hi = -math.MaxFloat32, math.MaxFloat32
	default:
		return nil
	}
	over := false
	switch x := v.(type) {
	case float64:
		if dt.IsFloatingPoint() {
			over = !math.IsInf(x, 0) && !math.IsNaN(x) && (x < lo || x > hi)
		} else {
			over = math.IsNaN(x) || x < lo || x > hi
		}
	case int64:
		f := float64(x)
		if dt == UInt8 && x < 0 {
			f = -f // wraps (two's complement) as long as its magnitude fits
		}
		over = f < lo || f > hi
	}
	if !over {
		return nil
	}
	return runtimeErrorf("value cannot be converted to type %s without overflow", cppScalarName(dt))
}

// cppScalarName is the C++ name of dt's element type, as c10's messages print it.
func cppScalarName(dt DType) string {
	switch dt {
	case UInt8:
		return "uint8_t"
	case Int8:
		return "int8_t"
	case Int16:
		return "int16_t"
	case Int32:
		return "int"
	case Int64:
		return "int64_t"
	case Float16:
		return behavior().ReducedFloatNamespace + "Half"
	case BFloat16:
		return behavior().ReducedFloatNamespace + "BFloat16"
	case Float32:
		return "float"
	}
	return dt.String()
}

// metaBernoulliInplace is self.bernoulli_(p): self, filled. A float p must lie in [0, 1]; a
// tensor p must expand to self's sizes (torch's expand_inplace).
func metaBernoulliInplace(a *Args) (Value, error) {
	self := selfTensor(a)
	switch p := a.Get("p").(type) {
	case *TensorMeta:
		if _, err := symExpand(p, self.SymSizes()); err != nil {
			return nil, err
		}
	default:
		if f := a.Float("p"); !(f >= 0 && f <= 1) {
			return nil, runtimeErrorf("bernoulli_ expects p to be in [0, 1], but got p=%s", fmtCppDouble(f))
		}
	}
	return self.Clone(), nil
}

// bernoulliTensorP: a tensor p raises where an element lies outside [0, 1] (torch's kernel
// checks the values as it draws).
func bernoulliTensorP(a *Args, _ Value) bool {
	_, isTensor := a.Get("p").(*TensorMeta)
	return isTensor
}
