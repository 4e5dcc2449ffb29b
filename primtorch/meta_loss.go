package primtorch

// reduction resolves a loss's reduction, honouring the legacy size_average/reduce flags.
func reduction(a *Args) (string, error) {
	sa, _ := a.Opt("size_average")
	rd, _ := a.Opt("reduce")
	if sa != nil || rd != nil {
		saB, rdB := true, true
		if b, ok := sa.(bool); ok {
			saB = b
		}
		if b, ok := rd.(bool); ok {
			rdB = b
		}
		switch {
		case !rdB:
			return "none", nil
		case saB:
			return "mean", nil
		}
		return "sum", nil
	}
	r := a.Str("reduction")
	switch r {
	case "none", "mean", "sum":
		return r, nil
	case "batchmean":
		if a.Op.Schema.Name == "kl_div" {
			return r, nil
		}
	}
	return "", valueErrorf("%s is not a valid value for reduction", r)
}

// reduced is the result of a loss: the elementwise loss for reduction='none', else a scalar.
func reduced(red string, elem *TensorMeta) *TensorMeta {
	if red == "none" {
		return elem
	}
	return newTensor(elem.DType, []int64{}, elem.Device)
}

// metaPointwiseLoss is mse_loss/l1_loss/smooth_l1_loss/huber_loss/kl_div: F broadcasts input and
// target, then computes elementwise.
func metaPointwiseLoss(a *Args) (Value, error) {
	in, tg := selfTensor(a), a.Tensor("target")
	red, err := reduction(a)
	if err != nil {
		return nil, err
	}
	if a.Op.Schema.Name == "kl_div" {
		return klDiv(a, in, tg, red)
	}
	shape, err := SymBroadcastShapes(in.SymSizes(), tg.SymSizes())
	if err != nil {
		return nil, err
	}
	ei, err := symExpand(in, shape)
	if err != nil {
		return nil, err
	}
	et, err := symExpand(tg, shape)
	if err != nil {
		return nil, err
	}
	if a.Op.Schema.Name == "huber_loss" {
		// huber_loss writes into empty_like(input).
		return reduced(red, emptyLike(ei, in.DType, PreserveFormat)), nil
	}
	r, err := pointwise([]Value{ei, et}, PromoteDefault, 0, false)
	if err != nil {
		return nil, err
	}
	if red == "sum" && r.DType.IsIntegral(false) {
		r.DType = Int64 // (the sum of an integer l1_loss, as torch.sum of integers)
	}
	return reduced(red, r), nil
}

func metaBCE(a *Args) (Value, error) {
	in, tg := selfTensor(a), a.Tensor("target")
	red, err := reduction(a)
	if err != nil {
		return nil, err
	}
	if !symShapeEq(in.SymSizes(), tg.SymSizes()) {
		return nil, valueErrorf("Using a target size (torch.Size(%s)) that is different to the input size (torch.Size(%s)) is deprecated. Please ensure they have the same size.", fmtShape(tg.Shape), fmtShape(in.Shape))
	}
	if w := a.Tensor("weight"); w != nil {
		if _, err := SymBroadcastShapes(tg.SymSizes(), w.SymSizes()); err != nil {
			return nil, err
		}
	}
	return reduced(red, emptyLike(in, in.DType, PreserveFormat)), nil
}

func metaBCEWithLogits(a *Args) (Value, error) {
	in, tg := selfTensor(a), a.Tensor("target")
	red, err := reduction(a)
	if err != nil {
		return nil, err
	}
	if !symShapeEq(in.SymSizes(), tg.SymSizes()) {
		return nil, valueErrorf("Target size (torch.Size(%s)) must be the same as input size (torch.Size(%s))", fmtShape(tg.Shape), fmtShape(in.Shape))
	}
	// The loss starts as (1 - target) and is updated in place; weight multiplies out of place.
	r, err := pointwise([]Value{int64(1), tg}, PromoteDefault, 0, false)
	if err != nil {
		return nil, err
	}
	if pw := a.Tensor("pos_weight"); pw != nil {
		if _, err := pointwise([]Value{pw, tg}, PromoteDefault, 0, false); err != nil {
			return nil, err
		}
	}
	if w := a.Tensor("weight"); w != nil {
		if r, err = pointwise([]Value{r, w}, PromoteDefault, 0, false); err != nil {
			return nil, err
		}
	}
	if !symShapeEq(r.SymSizes(), in.SymSizes()) {
		return nil, runtimeErrorf("output with shape %s doesn't match the broadcast shape %s", fmtShape(in.Shape), fmtShape(r.Shape))
	}
	return reduced(red, r), nil
}

// nllShapes checks input/target of nll_loss and returns the per-element loss shape.
func nllShapes(in, tg *TensorMeta, w *TensorMeta) ([]SymInt, error) {
	if len(in.Shape) < 1 {
		return nil, runtimeErrorf("input tensor should be 1D or 2D")
	}
	shape, err := nllShapeOnly(in, tg, w)
	if err != nil {
		return nil, err
	}
	if tg.DType != Int64 {
		return nil, runtimeErrorf("expected scalar type Long but found %s", scalarTypeName(tg.DType))
	}
	return shape, nil
}

func nllShapeOnly(in, tg *TensorMeta, w *TensorMeta) ([]SymInt, error) {
	is, ts := in.SymSizes(), tg.SymSizes()
	c := is[0]
	if len(is) >= 2 {
		c = is[1]
	}
	if w != nil && !symEq(w.SymNumel(), c) {
		return nil, runtimeErrorf("weight tensor should be defined either for all %d classes or no classes but got weight tensor of shape: %s", c.Hint(), fmtShape(w.Shape))
	}
	switch len(is) {
	case 1:
		if len(ts) > 1 {
			return nil, runtimeErrorf("0D or 1D target tensor expected, multi-target not supported")
		}
		if len(ts) == 1 && !symIs(ts[0], 1) {
			return nil, valueErrorf("Expected input batch_size (1) to match target batch_size (%d).", tg.Shape[0])
		}
		return []SymInt{}, nil
	case 2:
		if len(ts) != 1 {
			return nil, runtimeErrorf("0D or 1D target tensor expected, multi-target not supported")
		}
		if !symEq(ts[0], is[0]) {
			return nil, valueErrorf("Expected input batch_size (%d) to match target batch_size (%d).", in.Shape[0], tg.Shape[0])
		}
		return []SymInt{is[0]}, nil
	}
	want := append([]SymInt{is[0]}, is[2:]...)
	if len(ts) != len(want) || !symEq(ts[0], is[0]) {
		if len(ts) >= 1 && !symEq(ts[0], is[0]) {
			return nil, valueErrorf("Expected input batch_size (%d) to match target batch_size (%d).", in.Shape[0], tg.Shape[0])
		}
		return nil, runtimeErrorf("only batches of spatial targets supported (%dD tensors) but got targets of dimension: %d", len(want), len(ts))
	}
	if !symShapeEq(ts, want) {
		return nil, runtimeErrorf("size mismatch (got input: %s, target: %s)", fmtShape(in.Shape), fmtShape(tg.Shape))
	}
	return want, nil
}

func metaNllLoss(a *Args) (Value, error) {
	in, tg := selfTensor(a), a.Tensor("target")
	red, err := reduction(a)
	if err != nil {
		return nil, err
	}
	shape, err := nllShapes(in, tg, a.Tensor("weight"))
	if err != nil {
		return nil, err
	}
	return reduced(red, symNewTensor(in.DType, shape, deviceOf(in))), nil
}

func metaCrossEntropy(a *Args) (Value, error) {
	in, tg := selfTensor(a), a.Tensor("target")
	red, err := reduction(a)
	if err != nil {
		return nil, err
	}
	ls := a.Float("label_smoothing")
	if ls < 0 || ls > 1 {
		return nil, runtimeErrorf("label_smoothing must be between 0.0 and 1.0. Got: %s", fmtFloat(ls))
	}
	if len(in.Shape) == 0 {
		return nil, indexErrorf("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
	}
	if len(in.Shape) == len(tg.Shape) && symShapeEq(in.SymSizes(), tg.SymSizes()) {
		// Class probabilities: torch assumes them when input and target shapes agree.
		if !isFloatOrComplex(tg.DType) {
			return nil, runtimeErrorf("Expected floating point type for target with class probabilities, got %s", scalarTypeName(tg.DType))
		}
		if in.DType != tg.DType {
			return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(in.DType), scalarTypeName(tg.DType))
		}
		if w := a.Tensor("weight"); w != nil {
			c := in.SymSizes()[0]
			if len(in.Shape) >= 2 {
				c = in.SymSizes()[1]
			}
			if !symEq(w.SymNumel(), c) {
				return nil, runtimeErrorf("weight tensor should be defined either for all %d classes or no classes but got weight tensor of shape: %s", c.Hint(), fmtShape(w.Shape))
			}
		}
		return reduced(red, symNewTensor(in.DType, classIndexShape(in), deviceOf(in))), nil
	}
	if !isFloatOrComplex(in.DType) {
		return nil, notImplementedFor("log_softmax_lastdim_kernel_impl", in.DType)
	}
	shape, err := nllShapes(in, tg, a.Tensor("weight"))
	if err != nil {
		return nil, err
	}
	return reduced(red, symNewTensor(in.DType, shape, deviceOf(in))), nil
}

// classIndexShape is the input shape without its class dim (dim 1, or dim 0 for 1-d input).
func classIndexShape(in *TensorMeta) []SymInt {
	if len(in.Shape) == 1 {
		return []SymInt{}
	}
	is := in.SymSizes()
	return append([]SymInt{is[0]}, is[2:]...)
}

// klDiv follows torch's kl_div: xlogy(target, target) - target * input, or with log_target
// exp(target) * (target - input); each step is a TensorIterator op.
func klDiv(a *Args, in, tg *TensorMeta, red string) (Value, error) {
	if in.DType.IsComplex() || tg.DType.IsComplex() {
		return nil, runtimeErrorf("kl_div: Complex inputs not supported.")
	}
	if in.DType.IsIntegral(true) || tg.DType.IsIntegral(true) {
		return nil, runtimeErrorf("kl_div: Integral inputs not supported.")
	}
	var x, y *TensorMeta
	var err error
	if a.Bool("log_target") {
		if x, err = pointwise([]Value{tg}, PromoteIntToFloat, 0, false); err != nil {
			return nil, err
		}
		if y, err = pointwise([]Value{tg, in}, PromoteDefault, 0, false); err != nil {
			return nil, err
		}
	} else {
		if x, err = pointwise([]Value{tg, tg}, PromoteIntToFloat, 0, false); err != nil {
			return nil, err
		}
		if y, err = pointwise([]Value{tg, in}, PromoteDefault, 0, false); err != nil {
			return nil, err
		}
	}
	r, err := pointwise([]Value{x, y}, PromoteDefault, 0, false)
	if err != nil {
		return nil, err
	}
	return reduced(red, r), nil
}
