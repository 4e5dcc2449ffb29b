package primtorch

import (
	"math"
)

func metaPad(a *Args) (Value, error) {
	pad := a.Ints("pad")
	mode := "constant"
	if m, ok := a.Opt("mode"); ok {
		mode = m.(string)
	}
	if mode != "constant" && a.HasSymbols() { // reflect/replicate/circular: written for concrete sizes
		a.specialize(a.Op.Name)
	}
	in := selfTensor(a)
	if len(pad)%2 != 0 {
		return nil, runtimeErrorf("Padding length must be divisible by 2")
	}
	if len(pad)/2 > len(in.Shape) {
		return nil, runtimeErrorf("Padding length too large")
	}
	nd := len(in.Shape)
	insz := in.SymSizes()
	ssh := append([]SymInt(nil), insz...)
	for i := 0; i < len(pad)/2; i++ {
		d := nd - 1 - i
		ssh[d] = insz[d].AddConst(pad[2*i] + pad[2*i+1])
	}
	shape := hintsOf(ssh)
	if mode == "constant" {
		// torch first narrows for negative pads (dims in increasing order), then pads.
		allNonPos := true
		v := in
		for d := nd - len(pad)/2; d < nd; d++ {
			i := nd - 1 - d
			l, r := pad[2*i], pad[2*i+1]
			var err error
			if l < 0 {
				if v, err = symCheckedNarrow(v, d, SymConst(-l), v.SymSizes()[d].AddConst(l)); err != nil {
					return nil, err
				}
			}
			if r < 0 {
				if v, err = symCheckedNarrow(v, d, SymConst(0), v.SymSizes()[d].AddConst(r)); err != nil {
					return nil, err
				}
			}
			allNonPos = allNonPos && l <= 0 && r <= 0
		}
		for i := 0; i < len(pad)/2; i++ {
			d := nd - 1 - i
			if symLt(ssh[d], SymConst(0)) {
				return nil, runtimeErrorf("The input size %d, plus negative padding %d and %d resulted in a negative output size, which is invalid. Check dimension %d of your input.", in.Shape[d], pad[2*i], pad[2*i+1], d)
			}
		}
		if allNonPos {
			return emptyLike(v, in.DType, PreserveFormat), nil
		}
		return symTensor(in.DType, ssh, symStridesFor(ssh, symSuggestMemoryFormat(in)), SymConst(0), deviceOf(in)), nil
	}
	if v, _ := a.Opt("value"); v != nil && scalarFloat(v) != 0 {
		return nil, runtimeErrorf("Padding mode \"%s\" doesn't take in value argument", mode)
	}
	switch {
	case len(pad) == 2 && (nd == 2 || nd == 3), len(pad) == 4 && (nd == 3 || nd == 4), len(pad) == 6 && (nd == 4 || nd == 5):
	default:
		return nil, runtimeErrorf("Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
	}
	for i := 0; i < len(pad)/2; i++ {
		d := nd - 1 - i
		switch mode {
		case "reflect":
			if pad[2*i] >= in.Shape[d] || pad[2*i+1] >= in.Shape[d] {
				return nil, runtimeErrorf("Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) at dimension %d of input %s", pad[2*i], pad[2*i+1], d, fmtShape(in.Shape))
			}
		case "circular":
			if pad[2*i] > in.Shape[d] || pad[2*i+1] > in.Shape[d] {
				return nil, runtimeErrorf("Padding value causes wrapping around more than once.")
			}
		case "replicate":
		default:
			return nil, runtimeErrorf("Unrecognised padding mode %s", mode)
		}
		if shape[d] < 1 {
			return nil, runtimeErrorf("input (%s) is too small. Calculated output %s", fmtShape(in.Shape), fmtShape(shape))
		}
	}
	// torch 2's reflect and replicate kernels keep a channels-last input's layout.
	if (mode == "reflect" || mode == "replicate") && behavior().PadKeepsChannelsLast {
		return &TensorMeta{DType: in.DType, Shape: shape, Strides: StridesFor(shape, in.SuggestMemoryFormat()), Device: deviceOf(in)}, nil
	}
	return newTensor(in.DType, shape, deviceOf(in)), nil
}

var interpModes = map[string]int{"nearest": 0, "nearest-exact": 0, "area": 0, "linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}

func metaInterpolate(a *Args) (Value, error) {
	in := selfTensor(a)
	mode := a.Str("mode")
	need, ok := interpModes[mode]
	if !ok {
		return nil, runtimeErrorf("Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", len(in.Shape), mode)
	}
	if a.Get("align_corners") != nil && need == 0 {
		return nil, valueErrorf("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
	}
	k := len(in.Shape) - 2
	size, scale := a.Get("size"), a.Get("scale_factor")
	if size != nil && scale != nil {
		return nil, valueErrorf("only one of size or scale_factor should be defined")
	}
	if size == nil && scale == nil {
		return nil, valueErrorf("either size or scale_factor should be defined")
	}
	var out []int64
	if size != nil {
		if s, isSeq := sequence(size); isSeq {
			if len(s) != k {
				sp := in.Shape
				if k > 0 {
					sp = in.Shape[2:]
				}
				ints := make([]int64, len(s))
				for i, e := range s {
					ints[i], _ = e.(int64)
				}
				return nil, valueErrorf("Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of %s and output size of %s. Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.", fmtShape(sp), fmtShape(ints))
			}
			for _, e := range s {
				v, ok := e.(int64)
				if !ok {
					return nil, typeErrorf("expected size to be int, got %s", pyTypeName(e))
				}
				out = append(out, v)
			}
		} else if v, ok := size.(int64); ok {
			for i := 0; i < max(k, 0); i++ {
				out = append(out, v)
			}
		} else {
			return nil, typeErrorf("size must be int or tuple of ints, not %s", pyTypeName(size))
		}
	} else {
		var factors []float64
		if s, isSeq := sequence(scale); isSeq {
			if len(s) != k {
				return nil, valueErrorf("Input and scale_factor must have the same number of spatial dimensions, but got input with spatial dimensions of %s and scale_factor of shape %d. Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.", fmtShape(in.Shape[min(2, len(in.Shape)):]), len(s))
			}
			for _, e := range s {
				factors = append(factors, scalarFloat(e))
			}
		} else {
			for i := 0; i < max(k, 0); i++ {
				factors = append(factors, scalarFloat(scale))
			}
		}
		for i, f := range factors {
			out = append(out, int64(math.Floor(float64(in.Shape[2+i])*f)))
		}
	}
	if k < 1 || k > 3 {
		return nil, runtimeErrorf("Input Error: Only 3D, 4D and 5D input Tensors supported (got %dD) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got %s)", len(in.Shape), mode)
	}
	if need != 0 && need != k {
		return nil, runtimeErrorf("Got %dD input, but %s mode needs %dD input", len(in.Shape), mode, need+2)
	}
	for _, o := range out {
		if o <= 0 {
			return nil, runtimeErrorf("Input and output sizes should be greater than 0, but got input (%s) output (%s)", fmtDims(in.Shape[2:], ", "), fmtDims(out, ", "))
		}
	}
	shape := append([]int64{in.Shape[0], in.Shape[1]}, out...)
	mf := in.SuggestMemoryFormat()
	if mode == "area" && k == 2 && out[0] == 1 && out[1] == 1 {
		st := ContiguousStrides(shape)
		if mf == ChannelsLast {
			c := shape[1]
			st = []int64{c, 1, c, c}
		}
		return &TensorMeta{DType: in.DType, Shape: shape, Strides: st, Device: deviceOf(in)}, nil
	}
	if k == 1 || mode == "bicubic" && !behavior().BicubicKeepsChannelsLast {
		mf = ContiguousFormat
	}
	return &TensorMeta{DType: in.DType, Shape: shape, Strides: StridesFor(shape, mf), Device: deviceOf(in)}, nil
}

func metaPixelShuffle(a *Args) (Value, error) {
	in := selfTensor(a)
	r := a.Int("upscale_factor")
	nd := len(in.Shape)
	if nd < 3 {
		return nil, runtimeErrorf("pixel_shuffle expects input to have at least 3 dimensions, but got input with %d dimension(s)", nd)
	}
	if r <= 0 {
		return nil, runtimeErrorf("pixel_shuffle expects a positive upscale_factor, but got %d", r)
	}
	c := in.Shape[nd-3]
	if c%(r*r) != 0 {
		return nil, runtimeErrorf("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=%d is not divisible by %d", c, r*r)
	}
	shape := append([]int64(nil), in.Shape...)
	shape[nd-3], shape[nd-2], shape[nd-1] = c/(r*r), in.Shape[nd-2]*r, in.Shape[nd-1]*r
	return &TensorMeta{DType: in.DType, Shape: shape, Strides: StridesFor(shape, in.SuggestMemoryFormat()), Device: deviceOf(in)}, nil
}

func metaPixelUnshuffle(a *Args) (Value, error) {
	in := selfTensor(a)
	r := a.Int("downscale_factor")
	nd := len(in.Shape)
	if nd < 3 {
		return nil, runtimeErrorf("pixel_unshuffle expects input to have at least 3 dimensions, but got input with %d dimension(s)", nd)
	}
	if r <= 0 {
		return nil, runtimeErrorf("pixel_unshuffle expects a positive downscale_factor, but got %d", r)
	}
	h, w := in.Shape[nd-2], in.Shape[nd-1]
	if h%r != 0 {
		return nil, runtimeErrorf("pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=%d is not divisible by %d", h, r)
	}
	if w%r != 0 {
		return nil, runtimeErrorf("pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=%d is not divisible by %d", w, r)
	}
	shape := append([]int64(nil), in.Shape...)
	shape[nd-3], shape[nd-2], shape[nd-1] = in.Shape[nd-3]*r*r, h/r, w/r
	return &TensorMeta{DType: in.DType, Shape: shape, Strides: StridesFor(shape, in.SuggestMemoryFormat()), Device: deviceOf(in)}, nil
}

func metaNormalize(a *Args) (Value, error) {
	in := selfTensor(a)
	if !isFloatOrComplex(in.DType) {
		return nil, runtimeErrorf("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s", scalarTypeName(in.DType))
	}
	d, err := wrapDim(a.Int("dim"), len(in.Shape))
	if err != nil {
		return nil, err
	}
	ks := in.SymSizes()
	if len(ks) > 0 {
		ks[d] = SymConst(1)
	}
	denom, err := symExpand(symNewTensor(toReal(in.DType), ks, deviceOf(in)), in.SymSizes())
	if err != nil {
		return nil, err
	}
	return pointwise([]Value{in, denom}, PromoteIntToFloat, 0, false)
}

func metaCosineSimilarity(a *Args) (Value, error) {
	x1, x2 := a.Tensor("x1"), a.Tensor("x2")
	dt := ResultType(x1, x2)
	if !dt.IsFloatingPoint() {
		return nil, runtimeErrorf("expected common dtype to be floating point, yet common dtype is %s", scalarTypeName(dt))
	}
	shape, err := SymBroadcastShapes(x1.SymSizes(), x2.SymSizes())
	if err != nil {
		return nil, err
	}
	d, err := wrapDim(a.Int("dim"), len(shape))
	if err != nil {
		return nil, err
	}
	out := append(append([]SymInt(nil), shape[:min(d, len(shape))]...), shape[min(d+1, len(shape)):]...)
	return symNewTensor(dt, out, deviceOf(x1)), nil
}

func metaPairwiseDistance(a *Args) (Value, error) {
	x1, x2 := a.Tensor("x1"), a.Tensor("x2")
	shape, err := SymBroadcastShapes(x1.SymSizes(), x2.SymSizes())
	if err != nil {
		return nil, err
	}
	dt := ResultType(x1, x2)
	if !isFloatOrComplex(dt) {
		return nil, runtimeErrorf("linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s", scalarTypeName(dt))
	}
	if len(shape) == 0 {
		return newTensor(dt, []int64{}, deviceOf(x1)), nil
	}
	out := append([]SymInt(nil), shape[:len(shape)-1]...)
	if a.Bool("keepdim") {
		out = append(out, SymConst(1))
	}
	return symNewTensor(dt, out, deviceOf(x1)), nil
}

func metaTopk(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	k := a.SymInt("k")
	size := SymConst(1)
	if len(self.Shape) > 0 {
		size = self.SymSizes()[d]
	}
	if symLt(k, SymConst(0)) || symGt(k, size) {
		return nil, runtimeErrorf("selected index k out of range")
	}
	shape := self.SymSizes()
	if len(shape) > 0 {
		shape[d] = k
	}
	dev := deviceOf(self)
	return []Value{symNewTensor(self.DType, shape, dev), symNewTensor(Int64, shape, dev)}, nil
}

// sortStrides are sort's outputs' strides: empty_like(self)'s, dense in self's stride order
// where self is not dense (a sliced transpose sorts into (1, 3), not contiguous: fuzz seed 24112).
func sortStrides(self *TensorMeta) []SymInt { return symLikeStrides(self, PreserveFormat) }

func metaSort(a *Args) (Value, error) {
	self := selfTensor(a)
	if _, err := wrapDim(a.Int("dim"), len(self.Shape)); err != nil {
		return nil, err
	}
	v := symTensor(self.DType, self.SymSizes(), sortStrides(self), SymConst(0), deviceOf(self))
	i := v.Clone()
	i.DType = Int64
	return []Value{v, i}, nil
}

func metaArgsort(a *Args) (Value, error) {
	r, err := metaSort(a)
	if err != nil {
		return nil, err
	}
	return r.([]Value)[1], nil
}

// metaKthvalue is kthvalue/median.dim/mode: (values, indices) reducing dim.
func metaKthvalue(a *Args) (Value, error) {
	self := selfTensor(a)
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	if _, ok := a.Opt("k"); ok {
		size := SymConst(1)
		if len(self.Shape) > 0 {
			size = self.SymSizes()[d]
		}
		if kk := a.SymInt("k"); symLt(kk, SymConst(1)) || symGt(kk, size) {
			return nil, indexErrorf("kthvalue(): selected number k out of range for dimension %d", d)
		}
	} else if len(self.Shape) > 0 && symIs(self.SymSizes()[d], 0) {
		return nil, indexErrorf("%s(): Expected reduction dim %d to have non-zero size.", a.Op.Schema.Name, d)
	}
	var dims []int64
	if len(self.Shape) > 0 {
		dims = []int64{int64(d)}
	}
	shape, _, err := symReduceShape(self, dims, a.Bool("keepdim"))
	if err != nil {
		return nil, err
	}
	dev := deviceOf(self)
	return []Value{symNewTensor(self.DType, shape, dev), symNewTensor(Int64, shape, dev)}, nil
}

func metaMedianAll(a *Args) (Value, error) {
	self := selfTensor(a)
	return newTensor(self.DType, []int64{}, deviceOf(self)), nil
}

func metaDiff(a *Args) (Value, error) {
	self := selfTensor(a)
	n := a.Int("n")
	if len(self.Shape) == 0 {
		return nil, runtimeErrorf("diff expects input to be at least one-dimensional")
	}
	if n < 0 {
		return nil, runtimeErrorf("order must be non-negative but got %d", n)
	}
	d, err := wrapDim(a.Int("dim"), len(self.Shape))
	if err != nil {
		return nil, err
	}
	cur := self
	var parts []*TensorMeta
	if p := a.Tensor("prepend"); p != nil {
		parts = append(parts, p)
	}
	if p := a.Tensor("append"); p != nil {
		parts = append(parts, self, p)
	} else if len(parts) > 0 {
		parts = append(parts, self)
	}
	if len(parts) > 0 {
		for _, p := range parts {
			if len(p.Shape) != len(self.Shape) {
				return nil, runtimeErrorf("diff expects prepend or append to be the same dimension as input")
			}
			for i := range p.Shape {
				if i != d && p.Shape[i] != self.Shape[i] {
					return nil, runtimeErrorf("diff expects the shape of tensor to prepend or append to match that of input except along the differencing dimension; input.size(%d) = %d, but got tensor.size(%d) = %d", i, self.Shape[i], i, p.Shape[i])
				}
			}
		}
		if cur, err = catMeta(parts, int64(d), "cat"); err != nil {
			return nil, err
		}
	}
	for i := int64(0); i < n; i++ {
		size := cur.Shape[d]
		if size == 0 {
			break
		}
		hi := narrowMeta(cur, d, 1, size-1)
		lo := narrowMeta(cur, d, 0, size-1)
		if cur, err = pointwise([]Value{hi, lo}, PromoteDefault, 0, false); err != nil {
			return nil, err
		}
	}
	if n == 0 {
		return cur.Clone(), nil
	}
	return cur, nil
}

func metaTrace(a *Args) (Value, error) {
	self := selfTensor(a)
	if len(self.Shape) != 2 {
		return nil, runtimeErrorf("trace: expected a matrix, but got tensor with dim %d", len(self.Shape))
	}
	return newTensor(PromoteIntToLong.Apply(self.DType), []int64{}, deviceOf(self)), nil
}
