package primtorch

func metaLayerNorm(a *Args) (Value, error) {
	in := selfTensor(a)
	sns := a.SymInts("normalized_shape")
	ns := hintsOf(sns)
	if len(ns) == 0 {
		return nil, runtimeErrorf("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = %s", fmtShape(ns))
	}
	for _, name := range []string{"weight", "bias"} {
		if w := a.Tensor(name); w != nil && !symShapeEq(w.SymSizes(), sns) {
			return nil, runtimeErrorf("Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s", name, name, fmtShape(w.Shape), fmtShape(ns))
		}
	}
	if err := normParamDTypes(a, in); err != nil {
		return nil, err
	}
	nd := len(in.Shape)
	ok := nd >= len(ns)
	isz := in.SymSizes()
	for i := 0; ok && i < len(ns); i++ {
		ok = symEq(isz[nd-len(ns)+i], sns[i])
	}
	if !ok {
		return nil, runtimeErrorf("Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s", fmtShape(ns), fmtShape(ns)[1:len(fmtShape(ns))-1], fmtShape(in.Shape))
	}
	return symNewTensor(in.DType, isz, deviceOf(in)), nil
}

func metaGroupNorm(a *Args) (Value, error) {
	in := selfTensor(a)
	if len(in.Shape) < 2 {
		return nil, indexErrorf("Dimension out of range (expected to be in range of [%d, %d], but got 1)", -max(len(in.Shape), 1), max(len(in.Shape), 1)-1)
	}
	g, c := a.Int("num_groups"), in.SymSizes()[1]
	if behavior().GroupNormEmptyError {
		if k, ok := c.IsConst(); ok && k == 0 {
			return nil, runtimeErrorf("Expected number of channels to be greater than 0, got 0")
		}
		for _, d := range in.Shape[2:] {
			if d == 0 { // a symbolic size is 2 or more
				return nil, runtimeErrorf("Expected HxW to be greater than 0, got 0")
			}
		}
	}
	if g > 0 {
		if r, ok := c.ModConst(g); !ok || r != 0 {
			c = SymConst(c.Specialize("group_norm channels")) // divisibility by num_groups decides
		}
	}
	if r, _ := c.ModConst(g); g <= 0 || r != 0 {
		return nil, runtimeErrorf("Expected number of channels in input to be divisible by num_groups, but got input of shape %s and num_groups=%d", fmtShape(in.Shape), g)
	}
	for _, name := range []string{"weight", "bias"} {
		if w := a.Tensor(name); w != nil && (len(w.Shape) != 1 || !symEq(w.SymSizes()[0], c)) {
			return nil, runtimeErrorf("Expected %s to be a vector of size equal to the number of channels in input, but got %s of shape %s and input of shape %s", name, name, fmtShape(w.Shape), fmtShape(in.Shape))
		}
	}
	if err := normParamDTypes(a, in); err != nil {
		return nil, err
	}
	return emptyLike(in, in.DType, symSuggestMemoryFormat(in)), nil
}

// normParamDTypes checks layer_norm's and group_norm's weight and bias dtypes: the input's, or
// under torch 2 float32 ones for a bfloat16 or float16 input (its mixed-dtype CPU kernels).
func normParamDTypes(a *Args, in *TensorMeta) error {
	var params []*TensorMeta
	for _, name := range []string{"weight", "bias"} {
		if w := a.Tensor(name); w != nil {
			params = append(params, w)
		}
	}
	if behavior().NormMixedLowFloat && (in.DType == BFloat16 || in.DType == Float16) {
		mixed := true
		for _, w := range params {
			mixed = mixed && w.DType == Float32
		}
		if mixed {
			return nil
		}
	}
	for _, w := range params {
		if w.DType != in.DType {
			return runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(in.DType), scalarTypeName(w.DType))
		}
	}
	return nil
}

// channelStat checks a per-channel tensor (running_mean, weight, ...) of batch_norm.
func channelStat(a *Args, name string, c SymInt) error {
	t := a.Tensor(name)
	if t != nil && !symEq(t.SymNumel(), c) {
		return runtimeErrorf("%s should contain %d elements not %d", name, c.Hint(), t.Numel())
	}
	return nil
}

func metaBatchNorm(a *Args) (Value, error) {
	in := selfTensor(a)
	if len(in.Shape) < 2 {
		return nil, valueErrorf("Expected 2D or more input (got %dD input)", len(in.Shape))
	}
	training := a.Bool("training")
	isz := in.SymSizes()
	if training {
		size := isz[0].Mul(symProd(isz[2:]))
		if symIs(size, 1) {
			return nil, valueErrorf("Expected more than 1 value per channel when training, got input size torch.Size(%s)", fmtShape(in.Shape))
		}
	}
	c := isz[1]
	for _, name := range []string{"running_mean", "running_var", "weight", "bias"} {
		if err := channelStat(a, name, c); err != nil {
			return nil, err
		}
	}
	if !training && (a.Tensor("running_mean") == nil || a.Tensor("running_var") == nil) {
		return nil, runtimeErrorf("running_mean must be defined in evaluation mode")
	}
	dt := in.DType
	if symIs(in.SymNumel(), 0) {
		// torch's batch_norm of an empty input: input.clone() * weight[0] + bias[0] (its
		// dtype promoted with the 0-d weight and bias: an int input gives a float result)
		for _, name := range []string{"weight", "bias"} {
			if w := a.Tensor(name); w != nil {
				if len(w.Shape) == 1 && w.Shape[0] == 0 {
					// weight[0] of no channels (BatchNorm1d(0): fuzz seeds 15055, 17262)
					return nil, indexErrorf("select(): index 0 out of range for tensor of size [0] at dimension 0")
				}
				r, err := pointwise([]Value{&TensorMeta{DType: dt, Shape: in.Shape, Strides: in.Strides, Device: deviceOf(in)},
					&TensorMeta{DType: w.DType, Shape: []int64{}, Strides: []int64{}, Device: deviceOf(w)}}, PromoteDefault, 0, false)
				if err != nil {
					return nil, err
				}
				dt = r.DType
			}
		}
	}
	return emptyLike(in, dt, symSuggestMemoryFormat(in)), nil
}

// batchNormMutates: in training, batch_norm updates the running stats it is given.
func batchNormMutates(a *Args) []string {
	if !a.Bool("training") {
		return nil
	}
	var out []string
	for _, n := range []string{"running_mean", "running_var"} {
		if a.Tensor(n) != nil {
			out = append(out, n)
		}
	}
	return out
}

func metaInstanceNorm(a *Args) (Value, error) {
	in := selfTensor(a)
	if len(in.Shape) < 2 {
		return nil, valueErrorf("Expected 2D or more input (got %dD input)", len(in.Shape))
	}
	isz := in.SymSizes()
	if a.Bool("use_input_stats") {
		if symIs(symProd(isz[2:]), 1) {
			return nil, valueErrorf("Expected more than 1 spatial element when training, got input size torch.Size(%s)", fmtShape(in.Shape))
		}
	}
	c := isz[1]
	for _, name := range []string{"running_mean", "running_var", "weight", "bias"} {
		if err := channelStat(a, name, c); err != nil {
			return nil, err
		}
	}
	return symNewTensor(in.DType, isz, deviceOf(in)), nil
}

// metaDropout: the input itself unless training with p > 0, else input * noise (TensorIterator
// strides over the input and a contiguous noise tensor, broadcast per channel for feature
// dropout).
// dropoutIsIdentity is when torch's CPU dropout returns its input itself (aten's
// _dropout_impl: p == 0, not training, or no elements; probed on torch 1.13 and 2.14:
// F.dropout(x, 0.0) is x, F.dropout(x, 0.5, training=False) is x, and so for an empty x).
func dropoutIsIdentity(a *Args) bool {
	in := selfTensor(a)
	return !a.Bool("train") || a.Float("p") == 0 || symIs(in.SymNumel(), 0)
}

func metaDropout(a *Args) (Value, error) {
	in := selfTensor(a)
	p := a.Float("p")
	if p < 0 || p > 1 {
		return nil, valueErrorf("dropout probability has to be between 0 and 1, but got %v", fmtFloat(p))
	}
	feature := a.Op.Schema.Name == "feature_dropout" || a.Op.Schema.Name == "feature_alpha_dropout"
	if feature {
		if err := checkFeatureDropoutRank(a, in); err != nil {
			return nil, err
		}
	}
	if dropoutIsIdentity(a) {
		return in.Clone(), nil
	}
	if feature && len(in.Shape) < 2 {
		return nil, runtimeErrorf("Feature dropout requires at least 2 dimensions in the input")
	}
	if p == 1 {
		return pointwise([]Value{in, &TensorMeta{DType: in.DType, Shape: []int64{}, Strides: []int64{}, Device: deviceOf(in)}}, PromoteDefault, 0, false)
	}
	isz := in.SymSizes()
	noise := symNewTensor(in.DType, isz, deviceOf(in))
	if feature {
		ns := append([]SymInt{isz[0], isz[1]}, symOnes(len(isz)-2)...)
		noise = symNewTensor(in.DType, ns, deviceOf(in))
	}
	return pointwise([]Value{in, noise}, PromoteDefault, 0, false)
}

// checkFeatureDropoutRank applies F.dropout1d's rank rule (F.dropout2d/3d only warn).
func checkFeatureDropoutRank(a *Args, in *TensorMeta) error {
	if a.Sig.Name == "dropout1d" && len(in.Shape) != 2 && len(in.Shape) != 3 {
		return runtimeErrorf("dropout1d: Expected 2D or 3D input, but received a %dD input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).", len(in.Shape))
	}
	return nil
}
