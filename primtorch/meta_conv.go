package primtorch

import (
	"fmt"
	"strings"
)

// convParams reads stride/padding/dilation (and output_padding for transposed convolutions)
// expanded to k spatial dims, as torch's expand_param_if_needed does.
func convParam(a *Args, name string, k int) ([]int64, error) {
	v := a.Ints(name)
	if len(v) == 1 && k > 1 {
		out := make([]int64, k)
		for i := range out {
			out[i] = v[0]
		}
		return out, nil
	}
	if len(v) != k {
		return nil, runtimeErrorf("expected %s to be a single integer value or a list of %d values to match the convolution dimensions, but got %s=%s", name, k, name, fmtShape(v))
	}
	return v, nil
}

func fmtDims(s []int64, sep string) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, sep)
}

// convMemoryFormat is the layout oneDNN/THNN give the output: channels-last when input or
// weight suggests it.
func convMemoryFormat(in, w *TensorMeta) MemoryFormat {
	if len(in.Shape) != 4 && len(in.Shape) != 5 {
		return ContiguousFormat
	}
	if f := in.SuggestMemoryFormat(); f != ContiguousFormat {
		return f
	}
	if len(w.Shape) == len(in.Shape) {
		return w.SuggestMemoryFormat()
	}
	return ContiguousFormat
}

// metaConv is conv1d/2d/3d and conv_transpose1d/2d/3d for k spatial dims.
func metaConv(k int, transposed bool) metaFn {
	return func(a *Args) (Value, error) {
		in, w, b := selfTensor(a), a.Tensor("weight"), a.Tensor("bias")
		name := a.Op.Schema.Name
		batched := len(in.Shape) == k+2
		if !batched && len(in.Shape) != k+1 {
			return nil, runtimeErrorf("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", k+1, k+2, name, fmtShape(in.Shape))
		}
		if !batched {
			in = unsqueezeMeta(in, 0)
		}
		if len(w.Shape) != k+2 {
			return nil, runtimeErrorf("weight should have at least three dimensions")
		}
		groups := a.Int("groups")
		if groups <= 0 {
			return nil, runtimeErrorf("non-positive groups is not supported")
		}
		stride, err := convParam(a, "stride", k)
		if err != nil {
			return nil, err
		}
		dilation, err := convParam(a, "dilation", k)
		if err != nil {
			return nil, err
		}
		var padding []int64
		if ps, isStr := a.Get("padding").(string); isStr {
			padding = make([]int64, k)
			switch ps {
			case "valid":
			case "same":
				for _, s := range stride {
					if s != 1 {
						return nil, runtimeErrorf("padding='same' is not supported for strided convolutions")
					}
				}
				for i := range padding {
					total := dilation[i] * (w.Shape[2+i] - 1)
					if total%2 != 0 {
						return nil, unsupportedf("padding='same' with an odd total padding (%d) pads asymmetrically", total)
					}
					padding[i] = total / 2
				}
			default:
				return nil, runtimeErrorf("Invalid padding string: '%s'", ps)
			}
		} else if padding, err = convParam(a, "padding", k); err != nil {
			return nil, err
		}
		for _, s := range stride {
			if s <= 0 {
				return nil, runtimeErrorf("non-positive stride is not supported")
			}
		}
		for _, p := range padding {
			if p < 0 {
				return nil, runtimeErrorf("negative padding is not supported")
			}
		}
		if in.DType != w.DType {
			return nil, runtimeErrorf("Input type (torch.%sTensor) and weight type (torch.%sTensor) should be the same or input should be a MKLDNN tensor and weight is a dense tensor", scalarTypeName(in.DType), scalarTypeName(w.DType))
		}
		n, c := in.Shape[0], in.Shape[1]
		shape := []int64{n}
		if !transposed {
			if c != w.Shape[1]*groups {
				return nil, runtimeErrorf("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead", groups, fmtShape(w.Shape), fmtShape(in.Shape), w.Shape[1]*groups, c)
			}
			if w.Shape[0]%groups != 0 {
				return nil, runtimeErrorf("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead", groups, groups, fmtShape(w.Shape))
			}
			if b != nil && (len(b.Shape) != 1 || b.Shape[0] != w.Shape[0]) {
				return nil, runtimeErrorf("Given weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias of size %s instead", fmtShape(w.Shape), w.Shape[0], fmtShape(b.Shape))
			}
			padded := make([]int64, k)
			kernel := make([]int64, k)
			small := false
			for i := 0; i < k; i++ {
				padded[i] = in.Shape[2+i] + 2*padding[i]
				kernel[i] = dilation[i]*(w.Shape[2+i]-1) + 1
				small = small || padded[i] < kernel[i]
			}
			if small {
				return nil, runtimeErrorf("Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size can't be greater than actual input size", fmtDims(padded, " x "), fmtDims(kernel, " x "))
			}
			shape = append(shape, w.Shape[0])
			for i := 0; i < k; i++ {
				shape = append(shape, (padded[i]-kernel[i])/stride[i]+1)
			}
		} else {
			outPad, err := convParam(a, "output_padding", k)
			if err != nil {
				return nil, err
			}
			if c != w.Shape[0] {
				return nil, runtimeErrorf("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead", fmtShape(w.Shape), fmtShape(in.Shape), w.Shape[0], c)
			}
			if b != nil && (len(b.Shape) != 1 || b.Shape[0] != w.Shape[1]*groups) {
				return nil, runtimeErrorf("Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %d elements, but got bias of size %s instead", fmtShape(w.Shape), w.Shape[1]*groups, fmtShape(b.Shape))
			}
			for i := 0; i < k; i++ {
				if outPad[i] >= stride[i] && outPad[i] >= dilation[i] {
					return nil, outputPaddingError(outPad, stride, dilation)
				}
			}
			shape = append(shape, w.Shape[1]*groups)
			for i := 0; i < k; i++ {
				o := (in.Shape[2+i]-1)*stride[i] - 2*padding[i] + dilation[i]*(w.Shape[2+i]-1) + outPad[i] + 1
				if o <= 0 {
					return nil, runtimeErrorf("Given input size per channel: (%s). Calculated output size per channel: (%d). Output size is too small", fmtDims(in.Shape[2:], " x "), o)
				}
				shape = append(shape, o)
			}
		}
		// torch 1.13's CPU kernels keep channels-last only for 2-d, non-transposed
		// convolutions; torch 2's for 3-d and transposed ones too.
		mf := ContiguousFormat
		if k == 2 && !transposed || k >= 2 && behavior().ConvKeepsChannelsLast3dAndTransposed {
			mf = convMemoryFormat(in, w)
		}
		out := &TensorMeta{DType: in.DType, Shape: shape, Strides: StridesFor(shape, mf), Device: deviceOf(in)}
		if !batched {
			out = squeezeDimMeta(out, 0)
		}
		return out, nil
	}
}

// unsqueezeMeta inserts a size-1 dim at d (the view torch's unsqueeze makes).
func unsqueezeMeta(m *TensorMeta, d int) *TensorMeta {
	sizes, strides := m.SymSizes(), m.SymStrides()
	st := SymConst(1)
	if d < len(sizes) {
		st = sizes[d].Mul(strides[d])
	}
	sizes = append(append(append([]SymInt(nil), sizes[:d]...), SymConst(1)), sizes[d:]...)
	strides = append(append(append([]SymInt(nil), strides[:d]...), st), strides[d:]...)
	return withSym(m, sizes, strides, m.SymOffset())
}

// squeezeDimMeta removes dim d (which must have size 1).
func squeezeDimMeta(m *TensorMeta, d int) *TensorMeta {
	sizes, strides := m.SymSizes(), m.SymStrides()
	sizes = append(sizes[:d:d], sizes[d+1:]...)
	strides = append(strides[:d:d], strides[d+1:]...)
	return withSym(m, sizes, strides, m.SymOffset())
}

// poolOutSize is torch's pooling_output_shape.
func poolOutSize(in, k, pad, stride, dil int64, ceil bool) int64 {
	num := in + 2*pad - dil*(k-1) - 1
	if ceil {
		num += stride - 1
	}
	out := floorDiv(num, stride) + 1
	if ceil && (out-1)*stride >= in+pad {
		out--
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// poolParam expands a pooling int list to k dims (a single value repeats); empty gives def.
func poolParam(a *Args, name string, k int, def []int64) ([]int64, error) {
	v := a.Ints(name)
	if len(v) == 0 {
		return def, nil
	}
	if len(v) == 1 {
		out := make([]int64, k)
		for i := range out {
			out[i] = v[0]
		}
		return out, nil
	}
	if len(v) != k {
		return nil, runtimeErrorf("%s: %s must either be a single int, or a tuple of %d ints", a.Op.Schema.Name, name, k)
	}
	return v, nil
}

// metaPool is max_pool{1,2,3}d / avg_pool{1,2,3}d over k spatial dims.
func metaPool(k int, isMax bool) metaFn {
	return func(a *Args) (Value, error) {
		in := selfTensor(a)
		name := a.Op.Schema.Name
		kernel, err := poolParam(a, "kernel_size", k, nil)
		if err != nil {
			return nil, err
		}
		if len(kernel) == 0 {
			return nil, runtimeErrorf("%s: kernel_size must either be a single int, or a tuple of %d ints", name, k)
		}
		stride, err := poolParam(a, "stride", k, kernel)
		if err != nil {
			return nil, err
		}
		padding, err := poolParam(a, "padding", k, make([]int64, k))
		if err != nil {
			return nil, err
		}
		dilation := make([]int64, k)
		for i := range dilation {
			dilation[i] = 1
		}
		if isMax {
			if dilation, err = poolParam(a, "dilation", k, dilation); err != nil {
				return nil, err
			}
		}
		if len(in.Shape) != k+1 && len(in.Shape) != k+2 {
			return nil, runtimeErrorf("non-empty %dD or %dD (batch mode) tensor expected for input", k+1, k+2)
		}
		for i := 0; i < k; i++ {
			if kernel[i] <= 0 {
				return nil, runtimeErrorf("kernel size should be greater than zero, but got kH: %d kW: %d", kernel[0], kernel[k-1])
			}
			if stride[i] <= 0 {
				return nil, runtimeErrorf("stride should be greater than zero, but got dH: %d dW: %d", stride[0], stride[k-1])
			}
			if padding[i] > kernel[i]/2 {
				if isMax && k == 1 && !in.RequiresGrad && !a.Flag("return_indices") {
					return nil, runtimeErrorf("max_pool1d() padding should be at most half of kernel size, but got padding=%d and kernel_size=%d", padding[i], kernel[i])
				}
				return nil, runtimeErrorf("pad should be at most half of kernel size, but got pad=%d and kernel_size=%d", padding[i], kernel[i])
			}
		}
		nb := len(in.Shape) - k
		shape := append([]int64(nil), in.Shape[:nb]...)
		var outSp []int64
		for i := 0; i < k; i++ {
			o := poolOutSize(in.Shape[nb+i], kernel[i], padding[i], stride[i], dilation[i], a.Bool("ceil_mode"))
			outSp = append(outSp, o)
		}
		for _, o := range outSp {
			if o >= 1 {
				continue
			}
			if k == 3 && !isMax {
				return nil, runtimeErrorf("input image (T: %d H: %d W: %d) smaller than kernel size (kT: %d kH: %d kW: %d)", in.Shape[nb], in.Shape[nb+1], in.Shape[nb+2], kernel[0], kernel[1], kernel[2])
			}
			inDims, outDims := in.Shape[nb-1:], append([]int64{in.Shape[nb-1]}, outSp...)
			if k == 1 && !isMax {
				// avg_pool1d runs as avg_pool2d with a unit height.
				inDims = []int64{in.Shape[nb-1], 1, in.Shape[nb]}
				outDims = []int64{in.Shape[nb-1], 1, outSp[0]}
			}
			return nil, runtimeErrorf("Given input size: (%s). Calculated output size: (%s). Output size is too small", fmtDims(inDims, "x"), fmtDims(outDims, "x"))
		}
		shape = append(shape, outSp...)
		out := &TensorMeta{DType: in.DType, Shape: shape, Device: deviceOf(in)}
		out.Strides = ContiguousStrides(shape)
		if k == 2 || k == 3 && isMax && behavior().MaxPool3dKeepsChannelsLast {
			out.Strides = StridesFor(shape, in.SuggestMemoryFormat())
		}
		if isMax && (len(a.Op.Schema.Returns) == 2 || a.Flag("return_indices")) {
			idx := out.Clone()
			idx.DType = Int64
			return []Value{out, idx}, nil
		}
		return out, nil
	}
}

// via2d returns the strides a 1-d op gets when torch runs it as the 2-d op on the input with a
// size-1 height (unsqueeze(-2) ... squeeze(-2)): channels-last when that 4-d view suggests it.
func via2d(in *TensorMeta, shape []int64) []int64 {
	if len(in.Shape) != 3 {
		return ContiguousStrides(shape)
	}
	in4 := unsqueezeMeta(in, 2)
	if in4.SuggestMemoryFormat() != ChannelsLast {
		return ContiguousStrides(shape)
	}
	s4 := []int64{shape[0], shape[1], 1, shape[2]}
	st := ChannelsLastStrides(s4)
	return []int64{st[0], st[1], st[3]}
}

// metaPool1d is max_pool1d/avg_pool1d. avg_pool1d always runs as avg_pool2d on the input with a
// size-1 height; max_pool1d does so when it needs indices (return_indices, or an input that
// requires grad), else it has its own kernel writing a contiguous output.
func metaPool1d(isMax bool) metaFn {
	return func(a *Args) (Value, error) {
		in := selfTensor(a)
		if len(in.Shape) != 2 && len(in.Shape) != 3 {
			return nil, runtimeErrorf("%s() Expected 2D or 3D input tensor, but got %s", a.Op.Schema.Name, fmtShape(in.Shape))
		}
		r, err := metaPool(1, isMax)(a)
		if err != nil {
			if e, ok := err.(*Error); !isMax || !ok || !strings.Contains(e.Msg, "Output size is too small") || in.RequiresGrad || a.Flag("return_indices") {
				return nil, err
			}
			// max_pool1d's own kernel: torch 1.13 returns an empty result, torch 2 rejects it.
			if behavior().MaxPool1dEmptyError {
				return nil, runtimeErrorf("max_pool1d() Invalid computed output size: 0")
			}
			shape := append([]int64(nil), in.Shape...)
			shape[len(shape)-1] = 0
			return newTensor(in.DType, shape, deviceOf(in)), nil
		}
		twoD := !isMax || in.RequiresGrad || a.Flag("return_indices")
		fix := func(m *TensorMeta) *TensorMeta {
			if twoD {
				m.Strides = via2d(in, m.Shape)
			} else {
				m.Strides = ContiguousStrides(m.Shape)
			}
			return m
		}
		if t, ok := r.([]Value); ok {
			return []Value{fix(t[0].(*TensorMeta)), fix(t[1].(*TensorMeta))}, nil
		}
		return fix(r.(*TensorMeta)), nil
	}
}

// adaptiveSize reads output_size for k dims; None entries keep the input's size.
func adaptiveSize(a *Args, in *TensorMeta, k int) ([]int64, error) {
	v := a.Get("output_size")
	var elems []Value
	if s, ok := sequence(v); ok {
		elems = s
	} else {
		for i := 0; i < k; i++ {
			elems = append(elems, v)
		}
	}
	if len(elems) == 1 && k > 1 {
		for len(elems) < k {
			elems = append(elems, elems[0])
		}
	}
	if len(elems) != k {
		return nil, runtimeErrorf("%s: output_size must be %d", a.Op.Schema.Name, k)
	}
	out := make([]int64, k)
	for i, e := range elems {
		switch e := e.(type) {
		case nil:
			out[i] = in.Shape[len(in.Shape)-k+i]
		case int64:
			out[i] = e
		default:
			return nil, typeErrorf("%s(): argument 'output_size' must be tuple of ints, not %s", a.Op.Schema.Name, pyTypeName(e))
		}
	}
	return out, nil
}

// metaAdaptivePool is adaptive_{avg,max}_pool{1,2}d.
func metaAdaptivePool(k int, isMax bool) metaFn {
	return func(a *Args) (Value, error) {
		in := selfTensor(a)
		name := a.Op.Schema.Name
		if len(in.Shape) != k+1 && len(in.Shape) != k+2 {
			if k == 1 {
				return nil, runtimeErrorf("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking arguments for %s)", len(in.Shape), name)
			}
			if isMax {
				return nil, runtimeErrorf("%s(): Expected 3D or 4D tensor, but got: %s", name, fmtShape(in.Shape))
			}
			return nil, runtimeErrorf("%s(): Expected 3D or 4D tensor, but got %s", name, fmtShape(in.Shape))
		}
		for _, s := range in.Shape[len(in.Shape)-k:] {
			if s == 0 {
				return nil, runtimeErrorf("%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s with dimension %d being empty", name, fmtShape(in.Shape), len(in.Shape)-k)
			}
		}
		os, err := adaptiveSize(a, in, k)
		if err != nil {
			return nil, err
		}
		shape := append(append([]int64(nil), in.Shape[:len(in.Shape)-k]...), os...)
		out := &TensorMeta{DType: in.DType, Shape: shape, Device: deviceOf(in)}
		mf := in.SuggestMemoryFormat()
		switch {
		case k == 1 && !isMax && os[0] == 1 && len(in.Shape) == 3:
			// The 2-d mean path: channels-last inputs give strides {c, 1, c}.
			out.Strides = ContiguousStrides(shape)
			if unsqueezeMeta(in, 2).SuggestMemoryFormat() == ChannelsLast {
				out.Strides = []int64{shape[1], 1, shape[1]}
			}
		case k == 1:
			out.Strides = via2d(in, shape)
		case !isMax && os[0] == 1 && os[1] == 1:
			// adaptive_avg_pool2d to 1x1 is a mean over H, W (keepdim); channels-last inputs get
			// strides {c, 1, c, c}.
			out.Strides = ContiguousStrides(shape)
			if mf == ChannelsLast {
				c := shape[1]
				out.Strides = []int64{c, 1, c, c}
			}
		default:
			out.Strides = StridesFor(shape, mf)
		}
		if isMax && (len(a.Op.Schema.Returns) == 2 || a.Flag("return_indices")) {
			idx := out.Clone()
			idx.DType = Int64
			return []Value{out, idx}, nil
		}
		return out, nil
	}
}

// outputPaddingError is torch's message for a transposed convolution's output_padding; 1-d
// convolutions run as 2-d ones with a unit height.
func outputPaddingError(outPad, stride, dilation []int64) error {
	names := []string{"height", "width"}
	op, st, dl := outPad, stride, dilation
	switch len(outPad) {
	case 1:
		op, st, dl = []int64{0, outPad[0]}, []int64{1, stride[0]}, []int64{1, dilation[0]}
	case 3:
		names = []string{"depth", "height", "width"}
	}
	var parts []string
	for _, g := range []struct {
		name string
		v    []int64
	}{{"output_padding", op}, {"stride", st}, {"dilation", dl}} {
		for i, n := range names {
			parts = append(parts, fmt.Sprintf("%s_%s: %d", g.name, n, g.v[i]))
		}
	}
	return runtimeErrorf("output padding must be smaller than either stride or dilation, but got %s", strings.Join(parts, " "))
}

// BackwardGradLike is the layout torch's CPU backward kernels give the gradient of t, an
// input of a convolution or pooling (convolution_backward, max_pool2d_with_indices_backward,
// avg_pool2d_backward): the memory format the forward ran in — channels-last when one of ran
// (the forward's input, then a convolution's weight) suggests it — with t's sizes and dtype;
// contiguous for other ranks. (A gradient given another layout than torch's is copied into it
// on every call: a channels-last model's training step copied each one back.)
func BackwardGradLike(t *TensorMeta, ran ...*TensorMeta) *TensorMeta {
	mf := ContiguousFormat
	if n := len(t.Shape); n == 4 || n == 5 {
		for _, r := range ran {
			if len(r.Shape) == n {
				if mf = symSuggestMemoryFormat(r); mf != ContiguousFormat {
					break
				}
			}
		}
	}
	return symEmptyLike(t, t.DType, mf)
}
