package ref

// evalView returns the view the op's meta function computes (exact shape, strides and
// storage offset, the same ones torch gives), sharing the input's storage.
func evalView(c *evalCtx) (any, error) {
	x := c.tensor("self")
	m := c.meta
	return &Tensor{DType: x.DType, Shape: append([]int64{}, m.Shape...), Strides: append([]int64{}, m.Strides...), Offset: m.Offset, st: x.st}, nil
}
