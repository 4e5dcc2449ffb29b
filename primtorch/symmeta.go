package primtorch

import (
	"sort"
	"strconv"
)

// Shape arithmetic for symbolic meta functions (rows with fSymbolic). A symbolic meta function
// reads sizes, strides and offsets as SymInts (m.SymSizes(), m.SymStrides(), m.SymOffset(),
// a.SymInt, a.SymInts) and decides every comparison with the helpers below: for constants they
// are plain comparisons, so the static case is the all-constant case; for symbols they decide
// at the hints and record the guard (sym.go), knowing that a size symbol is at least 2 (so
// comparing s0 with 0 or 1 needs no guard).

// symEq decides a == b.
func symEq(a, b SymInt) bool {
	if a.Equal(b) {
		return true
	}
	ka, ca := a.IsConst()
	kb, cb := b.IsConst()
	switch {
	case ca && cb:
		return ka == kb
	case a.provablyGe(b.AddConst(1)) || b.provablyGe(a.AddConst(1)):
		return false
	case ca:
		return b.EqualHint(a)
	case cb:
		return a.EqualHint(b)
	}
	if a.Key() > b.Key() { // one guard for a == b and b == a
		a, b = b, a
	}
	return a.EqualHint(b)
}

// symIs decides a == k.
func symIs(a SymInt, k int64) bool { return symEq(a, SymConst(k)) }

// symGe decides a >= b (no guard when it follows from sizes being at least 2).
func symGe(a, b SymInt) bool {
	if d, ok := a.Sub(b).IsConst(); ok {
		return d >= 0
	}
	if a.provablyGe(b) {
		return true
	}
	if b.provablyGe(a.AddConst(1)) {
		return false
	}
	return a.GeHint(b)
}

// symLt decides a < b; symLe, symGt likewise.
func symLt(a, b SymInt) bool { return !symGe(a, b) }
func symLe(a, b SymInt) bool { return symGe(b, a) }
func symGt(a, b SymInt) bool { return symGe(a, b.AddConst(1)) }

// symMax is max(a, b) (decided, with a guard when symbolic).
func symMax(a, b SymInt) SymInt {
	if symGe(a, b) {
		return a
	}
	return b
}

// symMin is min(a, b).
func symMin(a, b SymInt) SymInt {
	if symLe(a, b) {
		return a
	}
	return b
}

func symShapeEq(a, b []SymInt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !symEq(a[i], b[i]) {
			return false
		}
	}
	return true
}

func symProd(xs []SymInt) SymInt {
	n := SymConst(1)
	for _, x := range xs {
		n = n.Mul(x)
	}
	return n
}

func symOnes(n int) []SymInt {
	out := make([]SymInt, n)
	for i := range out {
		out[i] = SymConst(1)
	}
	return out
}

// symFmtShape prints sizes at their hints, as torch's messages do.
func symFmtShape(xs []SymInt) string { return fmtShape(hintsOf(xs)) }

// symTensor is a new tensor of dtype dt on dev with the given layout.
func symTensor(dt DType, sizes, strides []SymInt, offset SymInt, dev Device) *TensorMeta {
	if dev.Type == "" {
		dev = CPU
	}
	return (&TensorMeta{DType: dt, Device: dev}).SetSymLayout(sizes, strides, offset)
}

// symNewTensor is newTensor for symbolic sizes (contiguous).
func symNewTensor(dt DType, sizes []SymInt, dev Device) *TensorMeta {
	return symTensor(dt, sizes, SymContiguousStrides(sizes), SymConst(0), dev)
}

// symViewOf is view for symbolic layouts: dtype, device and grad of m kept.
func symViewOf(m *TensorMeta, sizes, strides []SymInt, offset SymInt) *TensorMeta {
	r := &TensorMeta{DType: m.DType, Device: m.Device, RequiresGrad: m.RequiresGrad}
	return r.SetSymLayout(sizes, strides, offset)
}

// withSym returns a copy of m with the layout replaced.
func withSym(m *TensorMeta, sizes, strides []SymInt, offset SymInt) *TensorMeta {
	c := *m
	c.Sym = nil
	return c.SetSymLayout(sizes, strides, offset)
}

// symBroadcastPair is infer_size over symbolic sizes: equal sizes need no guard, a size 1
// broadcasts (a size symbol is never 1), two different sizes are guarded equal.
func symBroadcastPair(a, b []SymInt) ([]SymInt, error) {
	n := max(len(a), len(b))
	out := make([]SymInt, n)
	for i := n - 1; i >= 0; i-- {
		off := n - 1 - i
		sa, sb := SymConst(1), SymConst(1)
		if da := len(a) - 1 - off; da >= 0 {
			sa = a[da]
		}
		if db := len(b) - 1 - off; db >= 0 {
			sb = b[db]
		}
		switch {
		case sa.Equal(sb):
			out[i] = sa
		case symIs(sa, 1):
			out[i] = sb
		case symIs(sb, 1):
			out[i] = sa
		case symEq(sa, sb):
			out[i] = sa
		default:
			return nil, runtimeErrorf("The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", sa.Hint(), sb.Hint(), i)
		}
	}
	return out, nil
}

// SymBroadcastShapes is BroadcastShapes for symbolic sizes.
func SymBroadcastShapes(shapes ...[]SymInt) ([]SymInt, error) {
	var out []SymInt
	for i, s := range shapes {
		if i == 0 {
			out = append([]SymInt{}, s...)
			continue
		}
		var err error
		if out, err = symBroadcastPair(out, s); err != nil {
			return nil, err
		}
	}
	if out == nil {
		out = []SymInt{}
	}
	return out, nil
}

// symIsContiguous is IsContiguous over a symbolic layout.
func symIsContiguous(sizes, strides []SymInt) bool {
	if symIs(symProd(sizes), 0) {
		return true
	}
	acc := SymConst(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		if symIs(sizes[i], 1) {
			continue
		}
		if !symEq(strides[i], acc) {
			return false
		}
		acc = acc.Mul(sizes[i])
	}
	return true
}

func symContiguous(m *TensorMeta) bool { return symIsContiguous(m.SymSizes(), m.SymStrides()) }

// symChannelsLastStrides is ChannelsLastStrides.
func symChannelsLastStrides(shape []SymInt) []SymInt {
	order := channelsLastOrder(len(shape))
	st := make([]SymInt, len(shape))
	acc := SymConst(1)
	for _, d := range order {
		st[d] = acc
		acc = acc.Mul(shape[d])
	}
	return st
}

// symStridesFor is StridesFor.
func symStridesFor(shape []SymInt, mf MemoryFormat) []SymInt {
	if (mf == ChannelsLast && len(shape) == 4) || (mf == ChannelsLast3d && len(shape) == 5) {
		return symChannelsLastStrides(shape)
	}
	return SymContiguousStrides(shape)
}

// symIsChannelsLastContiguous is isChannelsLastContiguous.
func symIsChannelsLastContiguous(sizes, strides []SymInt) bool {
	order := channelsLastOrder(len(sizes))
	if order == nil {
		return false
	}
	expected := SymConst(1)
	for _, d := range order {
		if !symIs(sizes[d], 1) {
			if !symEq(strides[d], expected) {
				return false
			}
			expected = expected.Mul(sizes[d])
		}
	}
	return true
}

// symNonOverlappingAndDense is IsNonOverlappingAndDense.
func symNonOverlappingAndDense(sizes, strides []SymInt) bool {
	if symIsContiguous(sizes, strides) || symIsChannelsLastContiguous(sizes, strides) {
		return true
	}
	n := len(sizes)
	if n == 1 {
		return symLt(sizes[0], SymConst(2)) || symIs(strides[0], 1)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	small := make([]bool, n)
	for i := range small {
		small[i] = symLt(sizes[i], SymConst(2))
	}
	sort.SliceStable(perm, func(i, j int) bool {
		a, b := perm[i], perm[j]
		if small[a] {
			return false
		}
		if small[b] {
			return true
		}
		return symLt(strides[a], strides[b])
	})
	require := SymConst(1)
	for _, d := range perm {
		if small[d] {
			return true
		}
		if !symEq(strides[d], require) {
			return false
		}
		require = require.Mul(sizes[d])
	}
	return true
}

func symDense(m *TensorMeta) bool { return symNonOverlappingAndDense(m.SymSizes(), m.SymStrides()) }

// symStridesLikeChannelsLast is stridesLikeChannelsLast.
func symStridesLikeChannelsLast(shape, strides []SymInt) bool {
	order := channelsLastOrder(len(shape))
	if order == nil || symIs(strides[1], 0) {
		return false
	}
	min := SymConst(0)
	for _, d := range order {
		if symIs(shape[d], 0) {
			return false
		}
		if symLt(strides[d], min) {
			return false
		}
		if d == 0 && symEq(min, strides[1]) {
			return false
		}
		min = strides[d]
		if symGt(shape[d], SymConst(1)) {
			min = min.Mul(shape[d])
		}
	}
	return true
}

// symSuggestMemoryFormat is SuggestMemoryFormat.
func symSuggestMemoryFormat(m *TensorMeta) MemoryFormat {
	if symStridesLikeChannelsLast(m.SymSizes(), m.SymStrides()) {
		if len(m.Shape) == 4 {
			return ChannelsLast
		}
		return ChannelsLast3d
	}
	return ContiguousFormat
}

// symSortDimsByStride orders dims from fastest to slowest as TensorIterator does: an insertion
// sort starting from the reversed dim order, where a comparison involving a zero stride is
// ambiguous (the dims keep their order) and equal strides put the smaller size first.
// strides[i] are per-operand stride lists; shape is the common shape. Symbolic comparisons are
// decided at the hints, with guards.
func symSortDimsByStride(shape []SymInt, strides [][]SymInt) []int {
	n := len(shape)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = n - 1 - i
	}
	if n <= 1 {
		return perm
	}
	shouldSwap := func(d0, d1 int) int {
		for _, st := range strides {
			s0, s1 := st[d0], st[d1]
			if symIs(s0, 0) || symIs(s1, 0) {
				continue
			}
			if symLt(s0, s1) {
				return -1
			}
			if symGt(s0, s1) {
				return 1
			}
			if symGt(shape[d0], shape[d1]) {
				return 1
			}
		}
		return 0
	}
	for i := 1; i < n; i++ {
		d1 := i
		for d0 := i - 1; d0 >= 0; d0-- {
			c := shouldSwap(perm[d0], perm[d1])
			if c > 0 {
				perm[d0], perm[d1] = perm[d1], perm[d0]
				d1 = d0
			} else if c < 0 {
				break
			}
		}
	}
	return perm
}

// symInferDenseStrides is torch's infer_dense_strides: dense strides that keep the dim order of
// strides (empty_like of a non-dense tensor).
func symInferDenseStrides(shape, strides []SymInt) []SymInt {
	perm := symSortDimsByStride(shape, [][]SymInt{strides})
	out := make([]SymInt, len(shape))
	acc := SymConst(1)
	for _, d := range perm {
		out[d] = acc
		if symGt(shape[d], SymConst(1)) {
			acc = acc.Mul(shape[d])
		}
	}
	return out
}

// symLikeStrides returns the strides of empty_like(m, memory_format=mf) (clone, zeros_like, to,
// ...): preserve_format keeps m's strides when m is dense, keeps its dim order when it is not.
func symLikeStrides(m *TensorMeta, mf MemoryFormat) []SymInt {
	sizes, strides := m.SymSizes(), m.SymStrides()
	switch mf {
	case "", PreserveFormat:
		if symNonOverlappingAndDense(sizes, strides) {
			return strides
		}
		return symInferDenseStrides(sizes, strides)
	}
	return symStridesFor(sizes, mf)
}

// symEmptyLike is emptyLike.
func symEmptyLike(m *TensorMeta, dt DType, mf MemoryFormat) *TensorMeta {
	r := &TensorMeta{DType: dt, Device: m.Device}
	return r.SetSymLayout(m.SymSizes(), symLikeStrides(m, mf), SymConst(0))
}

// symIterStrides returns the strides TensorIterator gives the output of a pointwise op with
// common shape shape over inputs (0-dim tensors and Python numbers included as 0-dim metas):
//   - all inputs the same shape and all contiguous → contiguous; all channels-last →
//     channels-last; all non-overlapping and dense with equal strides → those strides;
//   - otherwise dims are sorted by the inputs' strides (broadcast dims ignored) and the output
//     is dense in that order.
func symIterStrides(shape []SymInt, inputs []*TensorMeta) []SymInt {
	if s, ok := symIterFastStrides(inputs); ok {
		return s
	}
	n := len(shape)
	strides := make([][]SymInt, 0, len(inputs))
	for _, in := range inputs {
		st := make([]SymInt, n)
		for i := range st {
			st[i] = SymConst(0)
		}
		sz, ss := in.SymSizes(), in.SymStrides()
		off := n - len(sz)
		for i := range sz {
			if symIs(sz[i], 1) && !symIs(shape[off+i], 1) {
				st[off+i] = SymConst(0)
			} else {
				st[off+i] = ss[i]
			}
		}
		strides = append(strides, st)
	}
	perm := symSortDimsByStride(shape, strides)
	inverted := true
	for j, d := range perm {
		if d != n-j-1 {
			inverted = false
			break
		}
	}
	if inverted {
		return SymContiguousStrides(shape)
	}
	out := make([]SymInt, n)
	acc := SymConst(1)
	for _, d := range perm {
		out[d] = acc
		acc = acc.Mul(shape[d])
	}
	return out
}

// symIterFastStrides is TensorIterator's fast set-up: it applies only when every input has the
// same shape (0-dim inputs next to dimensioned ones rule it out).
func symIterFastStrides(inputs []*TensorMeta) ([]SymInt, bool) {
	if len(inputs) == 0 {
		return nil, false
	}
	first := inputs[0]
	fs := first.SymSizes()
	for _, in := range inputs[1:] {
		if !symShapeEq(in.SymSizes(), fs) {
			return nil, false
		}
	}
	// Each question is asked only as far as the sizes answer it without a guard (a slice of a
	// buffer, bias[:T, :T], is contiguous only at T equal to the buffer's size): the general
	// set-up lays the result out as the fast one does wherever the fast one applies.
	env := envOfMetas(inputs)
	contig, cl, dense := true, true, true
	for _, in := range inputs {
		sz, st := in.SymSizes(), in.SymStrides()
		contig = contig && definitely(env, func() bool { return symIsContiguous(sz, st) })
		cl = cl && definitely(env, func() bool { return symIsChannelsLastContiguous(sz, st) })
		dense = dense && definitely(env, func() bool { return symNonOverlappingAndDense(sz, st) })
	}
	switch {
	case contig:
		return SymContiguousStrides(fs), true
	case cl:
		return symChannelsLastStrides(fs), true
	case dense:
		for _, in := range inputs[1:] {
			if !definitely(env, func() bool { return symShapeEq(in.SymStrides(), first.SymStrides()) }) {
				return nil, false
			}
		}
		return inputs[len(inputs)-1].SymStrides(), true
	}
	return nil, false
}

func itoa(i int) string { return strconv.Itoa(i) }

// allSymbolic marks every row of a table whose meta functions all handle symbolic sizes.
func allSymbolic(defs ...*def) []*def {
	for _, d := range defs {
		d.flags |= fSymbolic
	}
	return defs
}

func isBoolValue(v Value) bool { _, ok := v.(bool); return ok }

// SymShapesEqual decides whether two size lists are equal, guarding the outcome of every
// comparison that depends on symbols (equal polynomials need no guard).
func SymShapesEqual(a, b []SymInt) bool { return symShapeEq(a, b) }

// batchSymbolic lifts a meta function written for concrete sizes (convolution, pooling,
// resampling) to calls whose only symbol is self's batch size (dim 0, with constant strides): it
// runs at the batch's hint and at the hint plus one, and when the results differ only in their
// batch size (layout decisions not depending on it), the result's batch size is the symbol.
// Any other symbolic call is specialised, as the gate does for non-symbolic metas.
func batchSymbolic(m metaFn) metaFn {
	return func(a *Args) (Value, error) {
		if !a.HasSymbols() {
			return m(a)
		}
		specializeAllButBatch(a)
		i, n, ok := symbolicBatch(a)
		if ok {
			r, err := m(withArg(a, i, batchAt(a.vals[i].(*TensorMeta), n.Hint())))
			if err != nil {
				return nil, err
			}
			r2, err2 := m(withArg(a, i, batchAt(a.vals[i].(*TensorMeta), n.Hint()+1)))
			if err2 == nil && batchOnly(r, r2, n.Hint()) {
				return liftBatch(r, n), nil
			}
		}
		a.specialize(a.Op.Name)
		return m(a)
	}
}

// specializeAllButBatch specialises every symbol of the call except self's batch size when that
// is a bare symbol no other size of the call mentions (dynamic=True makes channels and spatial
// dims symbolic too; a convolution keeps only its batch).
func specializeAllButBatch(a *Args) {
	self, ok := a.Get(a.Op.Schema.Params[0].Canon).(*TensorMeta)
	if !ok || self == nil || self.Sym == nil || len(self.Shape) < 3 {
		return
	}
	id, coef, c, lin := self.Sym.Sizes[0].Linear()
	if !lin || coef != 1 || c != 0 {
		return
	}
	for _, s := range self.Sym.Sizes[1:] {
		for _, x := range s.Symbols() {
			if x == id {
				return
			}
		}
	}
	specializeAllBut(a, map[int]bool{id: true}, -1)
}

// specializeAllBut specialises every symbol of the call's values but those in keep, and
// resolves the values to their specialised form (all but value except, which keeps its
// symbolic meta: the caller reads it).
func specializeAllBut(a *Args, keep map[int]bool, except int) {
	for i, v := range a.vals {
		VisitSymbols(v, func(s SymInt) {
			for _, x := range s.Symbols() {
				if !keep[x] {
					s.Env().Specialize(x, a.Op.Name)
				}
			}
		})
		if i != except {
			a.vals[i] = ResolveValue(v)
		}
	}
}

// keepImageSymbols specialises every symbol of the call but those of self's batch and k
// spatial sizes (self is value idx); false, with nothing specialised, when self's channels
// share one of them (a channel count equal to an image size).
func keepImageSymbols(a *Args, idx int, self *TensorMeta, k int) bool {
	keep := map[int]bool{}
	for _, d := range append([]int{0}, spatialRange(k)...) {
		for _, x := range self.Sym.Sizes[d].Symbols() {
			keep[x] = true
		}
	}
	for _, x := range self.Sym.Sizes[1].Symbols() {
		if keep[x] {
			return false
		}
	}
	specializeAllBut(a, keep, idx)
	return true
}

// staticAtHints is m without its symbolic layout: its sizes and strides at the hints.
func staticAtHints(m *TensorMeta) *TensorMeta {
	c := m.Clone()
	c.Sym = nil
	return c
}

// symbolicBatch finds self's symbolic batch size when it is the call's only symbol.
func symbolicBatch(a *Args) (int, SymInt, bool) {
	canon := a.Op.Schema.Params[0].Canon
	idx := -1
	for i, p := range a.Sig.Params {
		if p.Canon == canon {
			idx = i
		}
	}
	if idx < 0 || a.Out != nil && a.Out.Sym != nil {
		return 0, SymInt{}, false
	}
	for i, v := range a.vals {
		if i != idx && HasSymbols(v) {
			return 0, SymInt{}, false
		}
	}
	self, ok := a.vals[idx].(*TensorMeta)
	if !ok || self == nil || self.Sym == nil || len(self.Shape) < 3 {
		return 0, SymInt{}, false
	}
	if _, c := self.Sym.Offset.IsConst(); !c {
		return 0, SymInt{}, false
	}
	for _, s := range append(append([]SymInt(nil), self.Sym.Sizes[1:]...), self.Sym.Strides...) {
		if _, c := s.IsConst(); !c {
			return 0, SymInt{}, false
		}
	}
	n := self.Sym.Sizes[0]
	if _, _, _, lin := n.Linear(); !lin {
		return 0, SymInt{}, false
	}
	return idx, n, true
}

// batchAt is m static with batch size n.
func batchAt(m *TensorMeta, n int64) *TensorMeta {
	c := staticAtHints(m)
	c.Shape[0] = n
	return c
}

func withArg(a *Args, i int, v Value) *Args {
	b := *a
	b.vals = append([]Value(nil), a.vals...)
	b.vals[i] = v
	return &b
}

// batchOnly reports whether results r (batch n) and r2 (batch n+1) differ only in dim 0's size.
func batchOnly(r, r2 Value, n int64) bool {
	switch x := r.(type) {
	case *TensorMeta:
		y, ok := r2.(*TensorMeta)
		return ok && x != nil && y != nil && x.DType == y.DType && len(x.Shape) > 0 && len(x.Shape) == len(y.Shape) &&
			x.Shape[0] == n && y.Shape[0] == n+1 && shapeEqual(x.Shape[1:], y.Shape[1:]) &&
			shapeEqual(x.Strides, y.Strides) && x.Offset == y.Offset
	case []Value:
		y, ok := r2.([]Value)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !batchOnly(x[i], y[i], n) {
				return false
			}
		}
		return true
	}
	return false
}

func liftBatch(r Value, n SymInt) Value {
	switch x := r.(type) {
	case *TensorMeta:
		sizes := constSyms(x.Shape)
		sizes[0] = n
		return x.SetSymLayout(sizes, constSyms(x.Strides), SymConst(x.Offset))
	case []Value:
		for i := range x {
			x[i] = liftBatch(x[i], n)
		}
	}
	return r
}

// spatialSymbolic is batchSymbolic for convolutions and poolings over k spatial dims whose
// output sizes are out = floor((in + c) / s) + 1 per spatial dim (window gives c and s; ok=false
// for a call whose sizes follow no such formula: padding='same', ceil_mode): self's batch and
// spatial sizes stay symbolic (a stride above 1 makes out a derived symbol, primtorch.SymDef),
// every other symbol of the call is specialised (channels, weights), and the meta function runs
// at the hints for everything else (dtype, channels, layout, its checks). A CNN fed images of
// many sizes compiles one graph instead of one per size.
func spatialSymbolic(k int, m metaFn, window func(a *Args, k int) (spatialWindow, bool)) metaFn {
	bs := batchSymbolic(m)
	return func(a *Args) (Value, error) {
		if !a.HasSymbols() {
			return m(a)
		}
		idx, self, ok := imageSelf(a, k)
		if !ok {
			return bs(a)
		}
		win, ok := window(a, k)
		if !ok || len(win.C) != k || len(win.S) != k {
			return bs(a)
		}
		if !keepImageSymbols(a, idx, self, k) {
			return bs(a) // channels sized by a batch or spatial symbol
		}
		self = a.vals[idx].(*TensorMeta)
		sizes := self.SymSizes()
		r, err := m(withArg(a, idx, staticAtHints(self)))
		if err != nil {
			return nil, err
		}
		out := make([]SymInt, k)
		symbolic := make([]bool, k)
		for i := 0; i < k; i++ {
			in := sizes[2+i].Resolve()
			if _, cst := in.IsConst(); cst {
				continue
			}
			symbolic[i] = true
			if win.Transposed {
				o := in.MulConst(win.S[i]).AddConst(win.C[i])
				if !o.GeHint(SymConst(1)) {
					a.specialize(a.Op.Name)
					return m(a)
				}
				out[i] = o
				continue
			}
			num := in.AddConst(win.C[i])
			if !num.GeHint(SymConst(0)) {
				a.specialize(a.Op.Name)
				return m(a)
			}
			q, ok := num.FloorDiv(win.S[i])
			if !ok {
				a.specialize(a.Op.Name)
				return m(a)
			}
			out[i] = q.AddConst(1)
		}
		lift := func(t *TensorMeta) (*TensorMeta, bool) {
			if t == nil || len(t.Shape) != k+2 {
				return nil, false
			}
			ts := constSyms(t.Shape)
			ts[0] = sizes[0]
			for i := 0; i < k; i++ {
				if !symbolic[i] {
					continue // a static spatial size: the meta's
				}
				if out[i].Hint() != t.Shape[2+i] {
					return nil, false
				}
				ts[2+i] = out[i]
			}
			mf := ContiguousFormat
			if !shapeEqual(t.Strides, ContiguousStrides(t.Shape)) {
				switch {
				case k == 2 && shapeEqual(t.Strides, StridesFor(t.Shape, ChannelsLast)):
					mf = ChannelsLast
				case k == 3 && shapeEqual(t.Strides, StridesFor(t.Shape, ChannelsLast3d)):
					mf = ChannelsLast3d
				default:
					return nil, false
				}
			}
			return withSym(t, ts, symStridesFor(ts, mf), SymConst(t.Offset)), true
		}
		switch x := r.(type) {
		case *TensorMeta:
			if l, ok := lift(x); ok {
				return l, nil
			}
		case []Value:
			res := make([]Value, len(x))
			all := true
			for j, e := range x {
				t, _ := e.(*TensorMeta)
				l, ok := lift(t)
				all = all && ok
				res[j] = l
			}
			if all {
				return res, nil
			}
		}
		a.specialize(a.Op.Name)
		return m(a)
	}
}

func spatialRange(k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = 2 + i
	}
	return out
}

// imageSelf is selfIndex for the image-size wrappers (spatialSymbolic, globalPoolSymbolic): ok
// when self is a symbolic [N, C, k spatial] tensor and no out= tensor has symbols.
func imageSelf(a *Args, k int) (int, *TensorMeta, bool) {
	idx, self := selfIndex(a)
	ok := self != nil && self.Sym != nil && len(self.Shape) == k+2 && (a.Out == nil || a.Out.Sym == nil)
	return idx, self, ok
}

// selfIndex is the position of the call's first parameter among its values, and its tensor.
func selfIndex(a *Args) (int, *TensorMeta) {
	canon := a.Op.Schema.Params[0].Canon
	for i, p := range a.Sig.Params {
		if p.Canon == canon {
			t, _ := a.vals[i].(*TensorMeta)
			return i, t
		}
	}
	return -1, nil
}

// spatialWindow is how a call's output size follows its input size per spatial dim: out =
// floor((in + C) / S) + 1 (convolutions, pooling) or, Transposed, out = in·S + C (transposed
// convolutions: (in − 1)·stride − 2·padding + dilation·(kernel − 1) + output_padding + 1).
type spatialWindow struct {
	C, S       []int64
	Transposed bool
}

// convWindow is spatialSymbolic's window of a convolution: C = 2·padding − dilation·(kernel −
// 1) − 1 and S = stride per spatial dim, or a transposed convolution's (its `transposed`
// argument, prims.convolution's, or the conv_transpose ops' output_padding).
func convWindow(a *Args, k int) (spatialWindow, bool) {
	w := a.Tensor("weight")
	if w == nil || len(w.Shape) != k+2 {
		return spatialWindow{}, false
	}
	if _, isStr := a.Get("padding").(string); isStr {
		return spatialWindow{}, false
	}
	stride, err1 := convParam(a, "stride", k)
	padding, err2 := convParam(a, "padding", k)
	dilation, err3 := convParam(a, "dilation", k)
	if err1 != nil || err2 != nil || err3 != nil {
		return spatialWindow{}, false
	}
	transposed := a.Has("output_padding") && (!a.Has("transposed") || a.Bool("transposed"))
	var outPad []int64
	if transposed {
		var err error
		if outPad, err = convParam(a, "output_padding", k); err != nil {
			return spatialWindow{}, false
		}
	}
	win := spatialWindow{S: stride, Transposed: transposed}
	for i := 0; i < k; i++ {
		if stride[i] <= 0 {
			return spatialWindow{}, false
		}
		span := dilation[i] * (w.Shape[2+i] - 1)
		if transposed {
			win.C = append(win.C, span-2*padding[i]+outPad[i]+1-stride[i])
		} else {
			win.C = append(win.C, 2*padding[i]-span-1)
		}
	}
	return win, true
}

// poolWindow is spatialSymbolic's window of max_pool/avg_pool. With ceil_mode torch computes
// out = floor((in + c + s - 1) / s) + 1, less one where the last window would start at or past
// in + padding, that is where (out - 1)·s ≥ in + p. Since (out - 1)·s ≤ in + c + s - 1 with
// c = 2p - d·(k - 1) - 1, that correction never happens when p + s - 2 < d·(k - 1) (every
// ceil-mode pooling of torchvision's models: GoogLeNet's, SqueezeNet's 3×3 stride 2, 2×2
// stride 2), and out has the floor formula with c + s - 1; other ceil-mode windows, whose size
// would be a case split on the symbol, are specialised.
func poolWindow(isMax bool) func(a *Args, k int) (spatialWindow, bool) {
	return func(a *Args, k int) (spatialWindow, bool) {
		var c []int64
		ceil := a.Bool("ceil_mode")
		kernel, err := poolParam(a, "kernel_size", k, nil)
		if err != nil || len(kernel) != k {
			return spatialWindow{}, false
		}
		stride, err1 := poolParam(a, "stride", k, kernel)
		padding, err2 := poolParam(a, "padding", k, make([]int64, k))
		dilation := make([]int64, k)
		for i := range dilation {
			dilation[i] = 1
		}
		var err3 error
		if isMax {
			dilation, err3 = poolParam(a, "dilation", k, dilation)
		}
		if err1 != nil || err2 != nil || err3 != nil || len(stride) != k || len(padding) != k || len(dilation) != k {
			return spatialWindow{}, false
		}
		for i := 0; i < k; i++ {
			if stride[i] <= 0 {
				return spatialWindow{}, false
			}
			ci := 2*padding[i] - dilation[i]*(kernel[i]-1) - 1
			if ceil {
				if padding[i]+stride[i]-2 >= dilation[i]*(kernel[i]-1) {
					return spatialWindow{}, false
				}
				ci += stride[i] - 1
			}
			c = append(c, ci)
		}
		return spatialWindow{C: c, S: stride}, true
	}
}

// globalPoolSymbolic is batchSymbolic for adaptive_avg_pool2d to a fixed output size (1×1, a
// mean over the spatial dims: ResNet's, MobileNet's, EfficientNet's head; 7×7: VGG's; 6×6:
// AlexNet's): the output's sizes and strides do not depend on the input's spatial sizes, which
// stay symbolic (the decomposition takes 1×1 as a mean; other sizes, whose windows are floor and
// ceil divisions of a symbolic size, run torch's kernel); an output_size of None (the input's
// size) goes to batchSymbolic.
func globalPoolSymbolic(k int, m metaFn) metaFn {
	bs := batchSymbolic(m)
	return func(a *Args) (Value, error) {
		if !a.HasSymbols() {
			return m(a)
		}
		idx, self, ok := imageSelf(a, k)
		if !ok {
			return bs(a)
		}
		if !fixedSizes(a.Get("output_size")) {
			return bs(a)
		}
		if !keepImageSymbols(a, idx, self, k) {
			return bs(a)
		}
		self = a.vals[idx].(*TensorMeta)
		r, err := m(withArg(a, idx, staticAtHints(self)))
		if err != nil {
			return nil, err
		}
		t, ok := r.(*TensorMeta)
		if !ok || t == nil || len(t.Shape) != k+2 {
			a.specialize(a.Op.Name)
			return m(a)
		}
		sizes := constSyms(t.Shape)
		sizes[0] = self.SymSizes()[0]
		strides := constSyms(t.Strides)
		if _, cst := sizes[0].IsConst(); !cst {
			// contiguous and channels-last outputs both have a batch stride of C·oh·ow
			if t.Strides[0] != numel(t.Shape[1:]) {
				a.specialize(a.Op.Name)
				return m(a)
			}
		}
		return withSym(t, sizes, strides, SymConst(t.Offset)), nil
	}
}

// fixedSizes reports an output_size of positive ints only (None, the input's size, is not).
func fixedSizes(v Value) bool {
	if elems, ok := sequence(v); ok {
		for _, e := range elems {
			if k, ok := e.(int64); !ok || k < 1 {
				return false
			}
		}
		return len(elems) > 0
	}
	k, ok := v.(int64)
	return ok && k >= 1
}
