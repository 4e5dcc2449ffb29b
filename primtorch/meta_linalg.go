package primtorch

import (
	"sort"
	"strings"
)

// torchShort is the dtype spelling of some torch messages: "float", "double", "long int".
func torchShort(d DType) string {
	return [...]string{"bool", "unsigned char", "signed char", "short int", "int", "long int", "c10::Half", "c10::BFloat16", "float", "double", "c10::complex<float>", "c10::complex<double>"}[d]
}

func checkMatrix(name string, m *TensorMeta) error {
	if len(m.Shape) != 2 {
		return runtimeErrorf("%s must be a matrix", name)
	}
	return nil
}

// mmShape checks and returns the [n, m] result of [n, k] @ [k, m].
func mmShape(x, y *TensorMeta) ([]SymInt, error) {
	xs, ys := x.SymSizes(), y.SymSizes()
	if !symEq(xs[1], ys[0]) {
		return nil, runtimeErrorf("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", x.Shape[0], x.Shape[1], y.Shape[0], y.Shape[1])
	}
	return []SymInt{xs[0], ys[1]}, nil
}

func metaMm(a *Args) (Value, error) {
	x, y := selfTensor(a), a.Tensor("mat2")
	if err := checkMatrix("self", x); err != nil {
		return nil, err
	}
	if err := checkMatrix("mat2", y); err != nil {
		return nil, err
	}
	shape, err := mmShape(x, y)
	if err != nil {
		return nil, err
	}
	if x.DType != y.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(y.DType))
	}
	return symNewTensor(x.DType, shape, deviceOf(x)), nil
}

func metaBmm(a *Args) (Value, error) {
	x, y := selfTensor(a), a.Tensor("mat2")
	if len(x.Shape) != 3 {
		return nil, runtimeErrorf("batch1 must be a 3D tensor")
	}
	if len(y.Shape) != 3 {
		return nil, runtimeErrorf("batch2 must be a 3D tensor")
	}
	xs, ys := x.SymSizes(), y.SymSizes()
	if !symEq(ys[0], xs[0]) || !symEq(ys[1], xs[2]) {
		return nil, runtimeErrorf("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].", x.Shape[0], x.Shape[2], y.Shape[0], y.Shape[1])
	}
	if x.DType != y.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(y.DType))
	}
	return symNewTensor(x.DType, []SymInt{xs[0], xs[1], ys[2]}, deviceOf(x)), nil
}

func metaMv(a *Args) (Value, error) {
	x, v := selfTensor(a), a.Tensor("vec")
	if len(x.Shape) != 2 || len(v.Shape) != 1 {
		return nil, runtimeErrorf("vector + matrix @ vector expected, got 1, %d, %d", len(x.Shape), len(v.Shape))
	}
	if !symEq(x.SymSizes()[1], v.SymSizes()[0]) {
		return nil, runtimeErrorf("size mismatch, got %d, %dx%d,%d", x.Shape[0], x.Shape[0], x.Shape[1], v.Shape[0])
	}
	if x.DType != v.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(v.DType))
	}
	return symNewTensor(x.DType, x.SymSizes()[:1], deviceOf(x)), nil
}

func metaDot(a *Args) (Value, error) {
	x, y := selfTensor(a), a.Tensor("tensor")
	if len(x.Shape) != 1 || len(y.Shape) != 1 {
		return nil, runtimeErrorf("1D tensors expected, but got %dD and %dD tensors", len(x.Shape), len(y.Shape))
	}
	if x.DType != y.DType {
		return nil, runtimeErrorf("dot : expected both vectors to have same dtype, but found %s and %s", scalarTypeName(x.DType), scalarTypeName(y.DType))
	}
	if !symEq(x.SymSizes()[0], y.SymSizes()[0]) {
		return nil, runtimeErrorf("inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", x.Shape[0], y.Shape[0], x.Shape[0], y.Shape[0])
	}
	return newTensor(x.DType, []int64{}, deviceOf(x)), nil
}

func metaOuter(a *Args) (Value, error) {
	x, y := selfTensor(a), a.Tensor("vec2")
	if len(x.Shape) != 1 || len(y.Shape) != 1 {
		return nil, runtimeErrorf("outer: Expected 1-D argument self, but got %d-D", len(x.Shape))
	}
	xs := x.SymStrides()[0]
	return pointwise([]Value{
		symTensor(x.DType, []SymInt{x.SymSizes()[0], SymConst(1)}, []SymInt{xs, xs}, SymConst(0), deviceOf(x)),
		y}, PromoteDefault, 0, false)
}

// matmulShape is torch.matmul's result shape; it reports errors as torch does.
func matmulShape(x, y *TensorMeta) ([]SymInt, error) {
	dx, dy := len(x.Shape), len(y.Shape)
	if dx == 0 || dy == 0 {
		return nil, runtimeErrorf("both arguments to matmul need to be at least 1D, but they are %dD and %dD", dx, dy)
	}
	xs, ys := x.SymSizes(), y.SymSizes()
	switch {
	case dx == 1 && dy == 1:
		if !symEq(xs[0], ys[0]) {
			return nil, runtimeErrorf("inconsistent tensor size, expected tensor [%d] and src [%d] to have the same number of elements, but got %d and %d elements respectively", x.Shape[0], y.Shape[0], x.Shape[0], y.Shape[0])
		}
		return []SymInt{}, nil
	case dx == 2 && dy == 1:
		if !symEq(xs[1], ys[0]) {
			return nil, runtimeErrorf("size mismatch, got %d, %dx%d,%d", x.Shape[0], x.Shape[0], x.Shape[1], y.Shape[0])
		}
		return []SymInt{xs[0]}, nil
	case dx == 1 && dy == 2:
		if !symEq(xs[0], ys[0]) {
			return nil, runtimeErrorf("mat1 and mat2 shapes cannot be multiplied (1x%d and %dx%d)", x.Shape[0], y.Shape[0], y.Shape[1])
		}
		return []SymInt{ys[1]}, nil
	case dx == 2 && dy == 2:
		return mmShape(x, y)
	case dx >= 3 && (dy == 1 || dy == 2):
		k := xs[dx-1]
		if dy == 1 {
			if !symEq(k, ys[0]) {
				return nil, runtimeErrorf("size mismatch, got %d, %dx%d,%d", numel(x.Shape[:dx-1]), numel(x.Shape[:dx-1]), k.Hint(), y.Shape[0])
			}
			return append([]SymInt(nil), xs[:dx-1]...), nil
		}
		if !symEq(k, ys[0]) {
			return nil, runtimeErrorf("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", numel(x.Shape[:dx-1]), k.Hint(), y.Shape[0], y.Shape[1])
		}
		return append(append([]SymInt(nil), xs[:dx-1]...), ys[1]), nil
	}
	// Batched: broadcast batch dims.
	var n, k1 SymInt
	var bx []SymInt
	if dx == 1 {
		n, k1 = SymConst(1), xs[0]
	} else {
		n, k1 = xs[dx-2], xs[dx-1]
		bx = xs[:dx-2]
	}
	k2, m := ys[dy-2], ys[dy-1]
	by := ys[:dy-2]
	batch, err := SymBroadcastShapes(bx, by)
	if err != nil {
		return nil, err
	}
	if !symEq(k1, k2) {
		b := symProd(batch).Hint()
		return nil, runtimeErrorf("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].", b, k1.Hint(), b, k2.Hint())
	}
	out := append([]SymInt(nil), batch...)
	if dx > 1 {
		out = append(out, n)
	}
	return append(out, m), nil
}

func metaMatmul(a *Args) (Value, error) {
	x, y := selfTensor(a), a.Tensor("other")
	shape, err := matmulShape(x, y)
	if err != nil {
		return nil, err
	}
	if x.DType != y.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(y.DType))
	}
	return symNewTensor(x.DType, shape, deviceOf(x)), nil
}

// metaAddmm is addmm/addmv/baddbmm/addbmm: the product's shape, self broadcast to it.
func metaAddmm(prod metaFn) metaFn {
	return func(a *Args) (Value, error) {
		r, err := prod(a)
		if err != nil {
			return nil, err
		}
		m := r.(*TensorMeta)
		self := selfTensor(a)
		if _, err := symExpand(self, m.SymSizes()); err != nil {
			return nil, err
		}
		if self.DType != m.DType {
			return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(m.DType), scalarTypeName(self.DType))
		}
		return m, nil
	}
}

// addmmProduct reads mat1/mat2 (addmm), mat/vec (addmv), batch1/batch2 (baddbmm, addbmm).
func addmmProduct(a *Args) (Value, error) {
	x, y := a.Tensor("mat1"), a.Tensor("mat2")
	if err := checkMatrix("mat1", x); err != nil {
		return nil, err
	}
	if err := checkMatrix("mat2", y); err != nil {
		return nil, err
	}
	shape, err := mmShape(x, y)
	if err != nil {
		return nil, err
	}
	if x.DType != y.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(y.DType))
	}
	return symNewTensor(x.DType, shape, deviceOf(x)), nil
}

func addmvProduct(a *Args) (Value, error) {
	x, v := a.Tensor("mat"), a.Tensor("vec")
	if len(x.Shape) != 2 || len(v.Shape) != 1 {
		return nil, runtimeErrorf("vector + matrix @ vector expected, got %d, %d, %d", len(selfTensor(a).Shape), len(x.Shape), len(v.Shape))
	}
	if !symEq(x.SymSizes()[1], v.SymSizes()[0]) {
		return nil, runtimeErrorf("size mismatch, got %d, %dx%d,%d", x.Shape[0], x.Shape[0], x.Shape[1], v.Shape[0])
	}
	return symNewTensor(x.DType, x.SymSizes()[:1], deviceOf(x)), nil
}

func baddbmmProduct(a *Args) (Value, error) {
	x, y := a.Tensor("batch1"), a.Tensor("batch2")
	if len(x.Shape) != 3 {
		return nil, runtimeErrorf("batch1 must be a 3D tensor")
	}
	if len(y.Shape) != 3 {
		return nil, runtimeErrorf("batch2 must be a 3D tensor")
	}
	xs, ys := x.SymSizes(), y.SymSizes()
	if !symEq(ys[0], xs[0]) || !symEq(ys[1], xs[2]) {
		return nil, runtimeErrorf("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but got: [%d, %d].", x.Shape[0], x.Shape[2], y.Shape[0], y.Shape[1])
	}
	if a.Op.Schema.Name == "addbmm" {
		return symNewTensor(x.DType, []SymInt{xs[1], ys[2]}, deviceOf(x)), nil
	}
	return symNewTensor(x.DType, []SymInt{xs[0], xs[1], ys[2]}, deviceOf(x)), nil
}

func metaLinear(a *Args) (Value, error) {
	x, w, b := selfTensor(a), a.Tensor("weight"), a.Tensor("bias")
	if len(w.Shape) != 2 && len(w.Shape) != 1 {
		return nil, runtimeErrorf("t() expects a tensor with <= 2 dimensions, but self is %dD", len(w.Shape))
	}
	wt := transposeMeta(w)
	shape, err := matmulShape(x, wt)
	if err != nil {
		if len(x.Shape) >= 2 && len(w.Shape) == 2 {
			return nil, runtimeErrorf("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)", numel(x.Shape[:len(x.Shape)-1]), x.Shape[len(x.Shape)-1], wt.Shape[0], wt.Shape[1])
		}
		return nil, err
	}
	if x.DType != w.DType {
		return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(x.DType), scalarTypeName(w.DType))
	}
	if b != nil {
		if _, err := symExpand(b, shape); err != nil {
			return nil, err
		}
	}
	return symNewTensor(x.DType, shape, deviceOf(x)), nil
}

// transposeMeta is t(): the last two dims swapped (a 1-d tensor is its own transpose).
func transposeMeta(m *TensorMeta) *TensorMeta {
	sizes, strides := m.SymSizes(), m.SymStrides()
	if n := len(sizes); n >= 2 {
		sizes[n-1], sizes[n-2] = sizes[n-2], sizes[n-1]
		strides[n-1], strides[n-2] = strides[n-2], strides[n-1]
	}
	return withSym(m, sizes, strides, m.SymOffset())
}

func metaBilinear(a *Args) (Value, error) {
	x1, x2, w, b := a.Tensor("input1"), a.Tensor("input2"), a.Tensor("weight"), a.Tensor("bias")
	if len(x1.Shape) == 0 || len(x2.Shape) == 0 {
		return nil, indexErrorf("Dimension out of range (expected to be in range of [-1, 0], but got -1)")
	}
	if len(x1.Shape) != len(x2.Shape) {
		return nil, runtimeErrorf("bilinear(): input dimensions do not match: got %d and %d", len(x1.Shape), len(x2.Shape))
	}
	for i := 0; i < len(x1.Shape)-1; i++ {
		if x1.Shape[i] != x2.Shape[i] {
			return nil, runtimeErrorf("bilinear(): input batch dimensions do not match: got %s and %s", fmtShape(x1.Shape), fmtShape(x2.Shape))
		}
	}
	if len(w.Shape) != 3 {
		return nil, runtimeErrorf("bilinear(): weight must be three-dimensional")
	}
	if x1.Shape[len(x1.Shape)-1] != w.Shape[1] {
		return nil, runtimeErrorf("bilinear(): input1 size does not match weight size: got %d but expected %d", x1.Shape[len(x1.Shape)-1], w.Shape[1])
	}
	if x2.Shape[len(x2.Shape)-1] != w.Shape[2] {
		return nil, runtimeErrorf("bilinear(): input2 size does not match weight size: got %d but expected %d", x2.Shape[len(x2.Shape)-1], w.Shape[2])
	}
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != w.Shape[0]) {
		return nil, runtimeErrorf("bilinear(): bias size does not match weight size: got %d but expected %d", b.Shape[len(b.Shape)-1], w.Shape[0])
	}
	shape := append(append([]int64(nil), x1.Shape[:len(x1.Shape)-1]...), w.Shape[0])
	return newTensor(x1.DType, shape, deviceOf(x1)), nil
}

// einsumSpec is a parsed einsum equation: one label string per operand ('.' marks the
// ellipsis) and the output labels.
type einsumSpec struct {
	inputs []string
	output string
}

func parseEinsum(eq string, nops int) (*einsumSpec, error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != nops {
		return nil, runtimeErrorf("einsum(): more operands were provided than specified in the equation")
	}
	spec := &einsumSpec{}
	counts := map[byte]int{}
	anyEllipsis := false
	for _, t := range terms {
		if strings.Count(t, "...") > 1 {
			return nil, runtimeErrorf("einsum(): found '.' for operand %d that is not part of any ellipsis", len(spec.inputs))
		}
		if strings.Contains(t, "...") {
			anyEllipsis = true
		}
		t = strings.Replace(t, "...", ".", 1)
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c != '.' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return nil, runtimeErrorf("einsum(): invalid subscript given at index %d in the equation string, subscripts must be in [a-zA-Z]", i)
			}
			if c != '.' {
				counts[c]++
			}
		}
		spec.inputs = append(spec.inputs, t)
	}
	if explicit {
		spec.output = strings.Replace(rhs, "...", ".", 1)
	} else {
		var labels []byte
		for c, n := range counts {
			if n == 1 {
				labels = append(labels, c)
			}
		}
		sort.Slice(labels, func(i, j int) bool {
			// torch orders implicit output labels A-Z then a-z (ASCII).
			return labels[i] < labels[j]
		})
		if anyEllipsis {
			spec.output = "."
		}
		spec.output += string(labels)
	}
	return spec, nil
}

func metaEinsum(a *Args) (Value, error) {
	ops := a.Tensors("operands")
	if len(ops) == 0 {
		return nil, runtimeErrorf("einsum(): must provide at least one operand")
	}
	spec, err := parseEinsum(a.Str("equation"), len(ops))
	if err != nil {
		return nil, err
	}
	size := map[byte]int64{}
	var ell [][]int64
	for i, t := range spec.inputs {
		m := ops[i]
		nl := len(strings.ReplaceAll(t, ".", ""))
		hasEll := strings.Contains(t, ".")
		if (!hasEll && nl != len(m.Shape)) || (hasEll && nl > len(m.Shape)) {
			return nil, runtimeErrorf("einsum(): the number of subscripts in the equation (%d) does not match the number of dimensions (%d) for operand %d%s", nl, len(m.Shape), i, map[bool]string{true: "", false: " and no ellipsis was given"}[hasEll])
		}
		d := 0
		for j := 0; j < len(t); j++ {
			if t[j] == '.' {
				ne := len(m.Shape) - nl
				ell = append(ell, m.Shape[d:d+ne])
				d += ne
				continue
			}
			s := m.Shape[d]
			if old, ok := size[t[j]]; ok && old != s && old != 1 && s != 1 {
				return nil, runtimeErrorf("einsum(): subscript %c has size %d for operand %d which does not broadcast with previously seen size %d", t[j], s, i, old)
			}
			if old, ok := size[t[j]]; !ok || old == 1 {
				size[t[j]] = s
			}
			d++
		}
		if m.DType != ops[0].DType {
			return nil, runtimeErrorf("expected scalar type %s but found %s", scalarTypeName(ops[0].DType), scalarTypeName(m.DType))
		}
	}
	ellShape, err := BroadcastShapes(ell...)
	if err != nil {
		return nil, err
	}
	if len(ops) == 1 {
		if v, ok := einsumView(spec, ops[0]); ok {
			return v, nil
		}
	}
	var shape []int64
	for j := 0; j < len(spec.output); j++ {
		c := spec.output[j]
		if c == '.' {
			shape = append(shape, ellShape...)
			continue
		}
		s, ok := size[c]
		if !ok {
			return nil, runtimeErrorf("einsum(): output subscript %c does not appear in the equation for any input operand", c)
		}
		shape = append(shape, s)
	}
	if shape == nil {
		shape = []int64{}
	}
	return newTensor(ops[0].DType, shape, deviceOf(ops[0])), nil
}

// einsumView is a one-operand einsum that torch answers with a view: its output permutes the
// operand's dims, repeated labels take diagonals, and every summed label has size 1. ok is false
// when a sum is needed (the result is then a new contiguous tensor).
func einsumView(spec *einsumSpec, m *TensorMeta) (*TensorMeta, bool) {
	type dimInfo struct{ size, stride int64 }
	labels := map[byte]dimInfo{}
	var ell []dimInfo
	t := spec.inputs[0]
	nl := len(strings.ReplaceAll(t, ".", ""))
	d := 0
	for j := 0; j < len(t); j++ {
		if t[j] == '.' {
			for k := 0; k < len(m.Shape)-nl; k++ {
				ell = append(ell, dimInfo{m.Shape[d], m.Strides[d]})
				d++
			}
			continue
		}
		info := dimInfo{m.Shape[d], m.Strides[d]}
		if old, ok := labels[t[j]]; ok {
			info.stride += old.stride
		}
		labels[t[j]] = info
		d++
	}
	inOut := map[byte]bool{}
	var shape, strides []int64
	for j := 0; j < len(spec.output); j++ {
		c := spec.output[j]
		if c == '.' {
			for _, e := range ell {
				shape, strides = append(shape, e.size), append(strides, e.stride)
			}
			continue
		}
		inOut[c] = true
		shape, strides = append(shape, labels[c].size), append(strides, labels[c].stride)
	}
	for c, info := range labels {
		if !inOut[c] && info.size != 1 {
			return nil, false
		}
	}
	return view(m, shape, strides, m.Offset), true
}
