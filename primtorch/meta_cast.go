package primtorch

// castTo is Tensor.to(dtype, device): the tensor itself when nothing changes, else a copy.
func castTo(self *TensorMeta, dt DType, dev Device, copy bool, mf MemoryFormat) *TensorMeta {
	if dev.Type == "" {
		dev = deviceOf(self)
	}
	if dt == self.DType && dev == deviceOf(self) && !copy && (mf == "" || mf == PreserveFormat || symSuggestMemoryFormat(self) == mf) {
		return self.Clone()
	}
	// _to_copy lays its result out as empty_like does: preserve_format keeps a dense input's
	// strides and gives any other strided input dense strides in its dims' stride order (the
	// diagonal of a [4,4,8] tensor, strides (1,40), converts to strides (1,8), not (4,1))
	return symTensor(dt, self.SymSizes(), symLikeStrides(self, mf), SymConst(0), dev)
}

func metaTo(a *Args) (Value, error) {
	self := selfTensor(a)
	dt, ok := a.DType("dtype")
	if !ok {
		dt = self.DType
	}
	var dev Device
	if v, ok := a.Opt("device"); ok && v != nil {
		dev = v.(Device)
	}
	if o, ok := a.Opt("other"); ok && o != nil {
		other := o.(*TensorMeta)
		dt, dev = other.DType, deviceOf(other)
	}
	mf, _ := a.Get("memory_format").(MemoryFormat)
	return castTo(self, dt, dev, a.Bool("copy"), mf), nil
}

func metaTypeAs(a *Args) (Value, error) {
	self := selfTensor(a)
	return castTo(self, a.Tensor("other").DType, Device{}, false, ""), nil
}

// metaCastTo is Tensor.float()/double()/long()/...: to(dtype).
func metaCastTo(dt DType) metaFn {
	return func(a *Args) (Value, error) {
		mf, _ := a.Get("memory_format").(MemoryFormat)
		return castTo(selfTensor(a), dt, Device{}, false, mf), nil
	}
}

var tensorTypeNames = map[string]DType{
	"torch.FloatTensor": Float32, "torch.DoubleTensor": Float64, "torch.HalfTensor": Float16,
	"torch.BFloat16Tensor": BFloat16, "torch.LongTensor": Int64, "torch.IntTensor": Int32,
	"torch.ShortTensor": Int16, "torch.CharTensor": Int8, "torch.ByteTensor": UInt8, "torch.BoolTensor": Bool,
}

// metaType is Tensor.type(dtype or "torch.FloatTensor"); with no argument it returns the type
// name string.
func metaType(a *Args) (Value, error) {
	self := selfTensor(a)
	switch t := a.Get("dtype").(type) {
	case nil:
		for name, d := range tensorTypeNames {
			if d == self.DType {
				return name, nil
			}
		}
		return nil, unsupportedf("type() of %s", self.DType)
	case DType:
		return castTo(self, t, Device{}, false, ""), nil
	case string:
		if d, ok := tensorTypeNames[t]; ok {
			return castTo(self, d, Device{}, false, ""), nil
		}
		return nil, unsupportedf("type(%q)", t)
	default:
		return nil, typeErrorf("type(): argument 'dtype' must be torch.dtype or str, not %s", pyTypeName(t))
	}
}

func metaCpu(a *Args) (Value, error) {
	return castTo(selfTensor(a), selfTensor(a).DType, CPU, false, ""), nil
}

func metaClone(a *Args) (Value, error) {
	self := selfTensor(a)
	mf, _ := a.Get("memory_format").(MemoryFormat)
	if mf == ChannelsLast && len(self.Shape) != 4 || mf == ChannelsLast3d && len(self.Shape) != 5 {
		return nil, runtimeErrorf("required rank %d tensor to use %s format", map[MemoryFormat]int{ChannelsLast: 4, ChannelsLast3d: 5}[mf], mf)
	}
	return emptyLike(self, self.DType, mf), nil
}

func metaCopy(a *Args) (Value, error) {
	self, src := selfTensor(a), a.Tensor("src")
	shape, err := symBroadcastPair(self.SymSizes(), src.SymSizes())
	if err != nil {
		return nil, err
	}
	if !symShapeEq(shape, self.SymSizes()) {
		return nil, runtimeErrorf("output with shape %s doesn't match the broadcast shape %s", fmtShape(self.Shape), symFmtShape(shape))
	}
	out := self.Clone()
	out.RequiresGrad = self.RequiresGrad || (src.RequiresGrad && isFloatOrComplex(self.DType))
	return out, nil
}

func metaFill(a *Args) (Value, error) {
	self := selfTensor(a)
	rg := self.RequiresGrad
	if v, ok := a.Get("value").(*TensorMeta); ok {
		if len(v.Shape) != 0 {
			return nil, runtimeErrorf("fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.", len(v.Shape))
		}
		rg = rg || v.RequiresGrad
	} else if err := checkFillValue(a.Get("value"), self.DType); err != nil {
		return nil, err
	}
	out := self.Clone()
	out.RequiresGrad = rg
	return out, nil
}

func metaZero(a *Args) (Value, error) { return selfTensor(a).Clone(), nil }

func metaRequiresGrad(a *Args) (Value, error) {
	self := selfTensor(a)
	rg := a.Bool("requires_grad")
	if rg && !isFloatOrComplex(self.DType) {
		return nil, runtimeErrorf("only Tensors of floating point dtype can require gradients")
	}
	out := self.Clone()
	out.RequiresGrad = rg
	return out, nil
}
