package ref

// Externs (torch's BLAS and convolution kernels at run time) as naive loops accumulating in
// float64 (int64, wrapping, for integral dtypes): slow but plain, the oracle for the backends'
// extern calls. Every product is added, zeros included: 0·inf and 0·NaN are NaN in torch's
// kernels too.

// dense returns t's elements row-major as float64.
func dense(t *Tensor) []float64 { return t.Floats() }

// matmul computes x[b] @ y[b] for every batch b (x: [B,M,K], y: [B,K,N] as dense row-major
// arrays), accumulating in float64.
func matmul(x, y []float64, batch, m, k, n int) []float64 {
	out := make([]float64, batch*m*n)
	for b := 0; b < batch; b++ {
		xo, yo, oo := b*m*k, b*k*n, b*m*n
		for i := 0; i < m; i++ {
			row := out[oo+i*n : oo+(i+1)*n]
			for p := 0; p < k; p++ {
				a := x[xo+i*k+p]
				yr := y[yo+p*n : yo+(p+1)*n]
				for j := range row {
					row[j] += a * yr[j]
				}
			}
		}
	}
	return out
}

// matmulInt is matmul for integral tensors, exact in int64 (wrapping, as torch's kernels).
func matmulInt(x, y []int64, batch, m, k, n int) []int64 {
	out := make([]int64, batch*m*n)
	for b := 0; b < batch; b++ {
		xo, yo, oo := b*m*k, b*k*n, b*m*n
		for i := 0; i < m; i++ {
			row := out[oo+i*n : oo+(i+1)*n]
			for p := 0; p < k; p++ {
				a := x[xo+i*k+p]
				yr := y[yo+p*n : yo+(p+1)*n]
				for j := range row {
					row[j] += a * yr[j]
				}
			}
		}
	}
	return out
}

// storeRowMajor writes values (row-major) into out.
func storeRowMajor(out *Tensor, vals []float64) {
	for k, p := range out.positions() {
		out.setF(p, vals[k])
	}
}

// batchedMatmul computes out = x @ y (+ bias broadcast to out, when not nil) over batch
// matrices, in float64 or, for integral outputs, in int64.
func batchedMatmul(out, x, y, bias *Tensor, batch, m, k, n int) {
	if isFloat(out.DType) {
		res := matmul(dense(x), dense(y), batch, m, k, n)
		if bias != nil {
			for i, v := range dense(broadcastView(bias, out.Shape)) {
				res[i] += v
			}
		}
		storeRowMajor(out, res)
		return
	}
	res := matmulInt(x.Ints(), y.Ints(), batch, m, k, n)
	if bias != nil {
		for i, v := range broadcastView(bias, out.Shape).Ints() {
			res[i] += v
		}
	}
	for i, p := range out.positions() {
		out.setI(p, res[i])
	}
}

func evalMm(c *evalCtx) (any, error) {
	x, y := c.tensor("self"), c.tensor("mat2")
	out := c.newOutput()
	batchedMatmul(out, x, y, nil, 1, int(x.Shape[0]), int(x.Shape[1]), int(y.Shape[1]))
	return out, nil
}

func evalBmm(c *evalCtx) (any, error) {
	x, y := c.tensor("self"), c.tensor("mat2")
	out := c.newOutput()
	batchedMatmul(out, x, y, nil, int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2]), int(y.Shape[2]))
	return out, nil
}

func evalAddmm(c *evalCtx) (any, error) {
	bias, x, y := c.tensor("self"), c.tensor("mat1"), c.tensor("mat2")
	out := c.newOutput()
	batchedMatmul(out, x, y, bias, 1, int(x.Shape[0]), int(x.Shape[1]), int(y.Shape[1]))
	return out, nil
}

// evalConvolution is torch.convolution for 1 to 3 spatial dims, grouped, dilated, strided,
// padded and transposed.
func evalConvolution(c *evalCtx) (any, error) {
	x, w, bias := c.tensor("self"), c.tensor("weight"), c.tensor("bias")
	out := c.newOutput()
	k := len(w.Shape) - 2
	expand := func(name string) []int64 {
		v := c.a.Ints(name)
		if len(v) == 1 && k > 1 {
			r := make([]int64, k)
			for i := range r {
				r[i] = v[0]
			}
			return r
		}
		return v
	}
	stride, padding, dilation := expand("stride"), expand("padding"), expand("dilation")
	groups := c.a.Int("groups")
	transposed := c.a.Bool("transposed")
	xv, wv := dense(x), dense(w)
	n, cin := x.Shape[0], x.Shape[1]
	inSp, outSp, kSp := x.Shape[2:], out.Shape[2:], w.Shape[2:]
	cout := out.Shape[1]
	res := make([]float64, out.Numel())
	inSize, outSize, kSize := prod(inSp), prod(outSp), prod(kSp)
	cinG, coutG := cin/groups, cout/groups
	ii := make([]int64, k)
	oi := make([]int64, k)
	ki := make([]int64, k)
	for b := int64(0); b < n; b++ {
		for g := int64(0); g < groups; g++ {
			for co := int64(0); co < coutG; co++ {
				for ci := int64(0); ci < cinG; ci++ {
					var wBase int64
					if transposed {
						wBase = ((g*cinG+ci)*coutG + co) * kSize // w: [Cin, Cout/g, K...]
					} else {
						wBase = ((g*coutG+co)*cinG + ci) * kSize // w: [Cout, Cin/g, K...]
					}
					xBase := (b*cin + g*cinG + ci) * inSize
					oBase := (b*cout + g*coutG + co) * outSize
					for kf := int64(0); kf < kSize; kf++ {
						unravel(kf, kSp, ki)
						wt := wv[wBase+kf]
						if !transposed {
							for of := int64(0); of < outSize; of++ {
								unravel(of, outSp, oi)
								ok := true
								for d := 0; d < k && ok; d++ {
									ii[d] = oi[d]*stride[d] - padding[d] + ki[d]*dilation[d]
									ok = ii[d] >= 0 && ii[d] < inSp[d]
								}
								if ok {
									res[oBase+of] += xv[xBase+ravel(ii, inSp)] * wt
								}
							}
							continue
						}
						for inf := int64(0); inf < inSize; inf++ {
							unravel(inf, inSp, ii)
							ok := true
							for d := 0; d < k && ok; d++ {
								oi[d] = ii[d]*stride[d] - padding[d] + ki[d]*dilation[d]
								ok = oi[d] >= 0 && oi[d] < outSp[d]
							}
							if ok {
								res[oBase+ravel(oi, outSp)] += xv[xBase+inf] * wt
							}
						}
					}
				}
			}
		}
	}
	if bias != nil {
		bv := dense(bias)
		for b := int64(0); b < n; b++ {
			for co := int64(0); co < cout; co++ {
				base := (b*cout + co) * outSize
				for of := int64(0); of < outSize; of++ {
					res[base+of] += bv[co]
				}
			}
		}
	}
	storeRowMajor(out, res)
	return out, nil
}

func prod(xs []int64) int64 {
	p := int64(1)
	for _, x := range xs {
		p *= x
	}
	return p
}

func unravel(f int64, shape, idx []int64) {
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = f % shape[d]
		f /= shape[d]
	}
}

func ravel(idx, shape []int64) int64 {
	f := int64(0)
	for d := range shape {
		f = f*shape[d] + idx[d]
	}
	return f
}
