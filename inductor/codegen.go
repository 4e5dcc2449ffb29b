package inductor

import (
	"fmt"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"ptgo/kernels"
	"ptgo/primtorch"
)

// Parallelization thresholds (measured on this machine, see doc.go): a kernel evaluating fewer
// than ParallelMinWork elements runs on one thread (an OpenMP region costs a few µs to start);
// an outer loop nest with at least ParallelMinChunks iterations is split across threads,
// otherwise the loops inside each member node are.
const (
	ParallelMinWork   = 65536
	ParallelMinChunks = 16
)

// CodegenOptions tunes the generated C.
type CodegenOptions struct {
	// NoParallel leaves out every OpenMP parallel pragma (single-threaded kernels).
	NoParallel bool
	// NoSimd leaves out every `omp simd` pragma.
	NoSimd bool
	// MinParallelWork overrides ParallelMinWork when > 0 (tests force parallel loops on small
	// shapes with 1).
	MinParallelWork int64
}

func (o CodegenOptions) minWork() int64 {
	if o.MinParallelWork > 0 {
		return o.MinParallelWork
	}
	return ParallelMinWork
}

// Source is the C translation unit of a schedule: its text and, per kernel, the storage buffers
// its ptrs argument takes, in order.
type Source struct {
	Text    string
	Kernels []*KernelCode
	// Prelude is the length of Text's fixed part (kernels.Header, and kernels.PoolRuntime when
	// Pool): the generated code starts there.
	Prelude int
	// Pool says the parallel regions run on ptgo's thread pool, not libgomp (see usePool).
	Pool bool
	// Parts split Text's kernels over translation units the C compiler builds concurrently
	// (kernels.Source.Parts; splitParts says when); nil for one unit.
	Parts []string
}

// splitParts is how many translation units a graph's kernels compile as: one per core, up to
// 4, for graphs of 8 kernels or more (gcc takes 20-40 ms a kernel here; a graph of 44 kernels
// took 1.2 s as one unit); 1 otherwise.
func splitParts(kernels int) int {
	n := min(runtime.NumCPU(), 4, kernels/8+1)
	if kernels < 8 || n < 2 {
		return 1
	}
	return n
}

// usePool decides which threads run a unit's parallel regions: ptgo's pool
// (kernels.PoolRuntime) when the graph's externs are all matrix products and torch's BLAS has
// threads of its own, torch's libgomp team otherwise. Debian's torch runs its matrix products
// on OpenBLAS's own threads, and libgomp's idle workers spin about a millisecond after each
// region beside them (on 2 cores gelu_mlp at 2 threads took 9.9 ms with libgomp, 3.1 ms with
// the pool); the pool's workers spin 50 µs and then sleep. A graph that calls torch ops running
// on libgomp (convolution, fallbacks; every matrix product of a torch whose BLAS is MKL on
// libgomp, BLASOnOpenMP) or no torch op at all stays on libgomp, sharing one team with eager
// torch: there the pool's threads would be the ones competing (small_cnn at 2 threads: 12.7 ms
// with the pool spinning as long as libgomp, 1.3 ms on libgomp).
func usePool(s *Schedule) bool {
	if blasOnOpenMP.Load() {
		return false
	}
	products := 0
	for _, st := range s.Steps {
		if e, ok := st.(*ExternStep); ok {
			if !matrixProducts[e.Call.Target] {
				return false
			}
			products++
		}
	}
	return products > 0
}

// blasOnOpenMP is whether torch's matrix products run on its OpenMP (libgomp) team: PyPI's
// torch uses MKL's GNU-threaded layer (a forked child hangs in a matmul once the parent ran
// one, which only libgomp's pool does), Debian's uses OpenBLAS's own threads.
var blasOnOpenMP atomic.Bool

// SetBLASOnOpenMP records where the running torch's BLAS threads live (pybridge, at start).
func SetBLASOnOpenMP(on bool) { blasOnOpenMP.Store(on) }

// KernelCode is one generated entry point.
type KernelCode struct {
	Name string
	// Args are the storage buffers whose memory ptrs[k] points to (the start of the storage,
	// data_ptr − storage_offset·itemsize), reads first, then writes.
	Args []*Buffer
	// Writes[k] is true when the kernel writes Args[k].
	Writes []bool
	// HasIndexCheck: the kernel can return a nonzero status, a bit set per fault found (the
	// run finishes, the status says the results are not to be used): StatusIndex, an
	// indirect index was out of range; StatusZeroDiv, an integer division (floordiv,
	// remainder, fmod) by zero, which torch reports as RuntimeError("ZeroDivisionError").
	HasIndexCheck bool
	// Symbols are the size symbols the kernel reads from ints (a symbolic program's): its
	// results change with them, so it is never a Once kernel.
	Symbols []int
	// Floats are the float arguments the kernel reads from floats (Graph.FloatInputs): a
	// Once kernel neither.
	Floats []int
}

// Kernel statuses (bits of a kernel's nonzero return).
const (
	StatusIndex   = 1
	StatusZeroDiv = 2
	// StatusCheck: a prims.check's condition held (Python raises for a float the graph computes
	// from tensor data): the runtime runs the captured graph with torch instead.
	StatusCheck = 4
)

// statusOf is the status an op value sets when its data is rejected (0: none).
func statusOf(v *Value) int {
	switch {
	case zeroDivChecked(v):
		return StatusZeroDiv
	case v.Kind == VOp && v.Op == "check":
		return StatusCheck
	}
	return 0
}

// zeroDivChecked reports an op value that divides integers: eager raises for a zero divisor.
func zeroDivChecked(v *Value) bool {
	if v.Kind != VOp || len(v.Args) != 2 || v.Args[0].DType.IsFloatingPoint() || v.Args[0].DType.IsComplex() {
		return false
	}
	switch v.Op {
	case "div", "floordiv", "remainder", "fmod":
	default:
		return false
	}
	d := v.Args[1]
	return !(d.Kind == VConst && d.Num.I != 0)
}

// Generate renders a schedule as one C translation unit: kernels.Header, the helpers the
// kernels use, then one PTGO_KERNEL function per kernel, in schedule order.
func Generate(s *Schedule, opts CodegenOptions) *Source {
	tu := &tunit{helpers: map[string]bool{}, opts: opts, vals: s.Graph.vals}
	var texts []string
	src := &Source{}
	for _, st := range s.Steps {
		k, ok := st.(*Kernel)
		if !ok {
			continue
		}
		kc, text := tu.kernel(k)
		src.Kernels = append(src.Kernels, kc)
		texts = append(texts, "\n"+text)
	}
	src.Pool = usePool(s) && !opts.NoParallel
	// unit is a translation unit holding texts: the pool's runtime goes in the first only
	// (its hidden GOMP_* definitions serve the whole library)
	unit := func(first bool, texts []string) (string, int) {
		var b strings.Builder
		b.WriteString(kernels.Header)
		if src.Pool && first {
			b.WriteString(kernels.PoolRuntime)
		}
		prelude := b.Len()
		b.WriteString("/* generated by ptgo inductor: graph " + s.Graph.Name + " */\n")
		if src.Pool {
			b.WriteString("/* parallel regions run on ptgo's thread pool: the graph's only externs are matrix products */\n")
		}
		for _, h := range tu.helperOrder {
			b.WriteString("\n" + h + "\n")
		}
		for _, t := range texts {
			b.WriteString(t)
		}
		return b.String(), prelude
	}
	src.Text, src.Prelude = unit(true, texts)
	if n := splitParts(len(texts)); n > 1 {
		total := 0
		for _, t := range texts {
			total += len(t)
		}
		start, acc := 0, 0
		for i, t := range texts {
			acc += len(t)
			if len(src.Parts) < n-1 && acc*n >= total*(len(src.Parts)+1) && i+1 < len(texts) {
				part, _ := unit(len(src.Parts) == 0, texts[start:i+1])
				src.Parts = append(src.Parts, part)
				start = i + 1
			}
		}
		part, _ := unit(len(src.Parts) == 0, texts[start:])
		src.Parts = append(src.Parts, part)
	}
	return src
}

// tunit collects what the kernels of one translation unit share: helper functions.
type tunit struct {
	helpers     map[string]bool
	helperOrder []string
	opts        CodegenOptions
	vals        *values
	// cuda: the unit is CUDA C (cudagen.go); helpers get device definitions (cudaHelperText)
	cuda bool
}

// helper returns the name of a helper for dtype dt and adds its definition to the unit.
func (tu *tunit) helper(name string, dt primtorch.DType) string {
	fn := "ptgo_" + name + "_" + cCompute(dt)
	if !tu.helpers[fn] {
		tu.helpers[fn] = true
		text := helperText(name, dt)
		if tu.cuda {
			text = cudaHelperText(name, dt, text)
		}
		tu.helperOrder = append(tu.helperOrder, text)
	}
	return fn
}

func (tu *tunit) raw(name, text string) string {
	if tu.cuda {
		text = cudaRawText(name, text)
	}
	if !tu.helpers[name] {
		tu.helpers[name] = true
		tu.helperOrder = append(tu.helperOrder, text)
	}
	return name
}

const bf16Helpers = `static inline float ptgo_bf2f(uint16_t h) {
    union { uint32_t u; float f; } x;
    x.u = (uint32_t)h << 16;
    return x.f;
}
static inline uint16_t ptgo_f2bf(float f) {
    union { uint32_t u; float f; } x;
    x.f = f;
    if (f != f) return 0x7fc0;
    return (uint16_t)((x.u + 0x7fffu + ((x.u >> 16) & 1u)) >> 16);
}`

// kvar is a loop variable of a kernel.
type kvar struct {
	size Sym
	name string
}

// knode is a kernel member with its body in kernel variables.
type knode struct {
	kn    *KernelNode
	body  *Value
	inner []int  // pointwise loop variables beyond the kernel's outer ones
	red   []int  // reduction loop variables
	store []Expr // logical index of the stored element (nil for locals)
	scan  *Scan
	// accumulate: a scatter with accumulate adds to what is stored
	accumulate bool
	// keepInto (a reduction): also store each summand where member keepInto stores the element
	// of the same position; reuses (that member): the summand, in its own loop variable, which
	// it then loads instead of computing it again (see planSummandReuse).
	keepInto *knode
	reuses   *Value
}

// roots are the values a member evaluates: its body and the indirect indices of its store.
func (n *knode) roots() []*Value {
	out := []*Value{n.body}
	for _, e := range n.store {
		out = append(out, indValues(e)...)
	}
	return out
}

// kgen generates one kernel.
type kgen struct {
	tu     *tunit
	k      *Kernel
	vals   *values
	vars   []kvar
	outer  []int
	nodes  []*knode
	ptrs   map[*Buffer]string
	locals map[*Buffer]string
	// regs holds stored members with no loops of their own, by the C variable that keeps their
	// value for the rest of the outer iteration.
	regs   map[*Buffer]string
	hasInd bool
	// parallelIf is the OpenMP if clause of a symbolic kernel's parallel regions (its work
	// threshold, evaluated at run time)
	parallelIf string
	w          *cwriter
	tmp        int
	// names are the kernel's own names of the buffers it touches (bufName)
	names map[*Buffer]string
}

// bufName is b's name in the kernel's C: "buf" and its number in the order the kernel's code
// first names it, not the graph's numbering, so the same kernel in another graph (a recompile
// after a guard failed, a larger graph around it) is the same text and hits the kernel cache.
func (kg *kgen) bufName(b *Buffer) string {
	if n, ok := kg.names[b]; ok {
		return n
	}
	if kg.names == nil {
		kg.names = map[*Buffer]string{}
	}
	n := "buf" + strconv.Itoa(len(kg.names))
	kg.names[b] = n
	return n
}

func (kg *kgen) newVar(size Sym) int {
	kg.vars = append(kg.vars, kvar{size: size})
	return len(kg.vars) - 1
}

func (kg *kgen) bounds() Bounds {
	b := make(Bounds, len(kg.vars))
	for i, v := range kg.vars {
		if k, ok := v.size.IsConst(); ok {
			b[i] = k
		}
	}
	return b
}

func (tu *tunit) kernel(k *Kernel) (*KernelCode, string) {
	kg := &kgen{tu: tu, k: k, ptrs: map[*Buffer]string{}, locals: map[*Buffer]string{}, regs: map[*Buffer]string{}, w: &cwriter{}}
	kg.vals = tu.vals
	kg.setup()
	kg.orderLoops()
	kg.mergeLoops()
	kg.planSummandReuse()
	kc := kg.signature()
	kg.header(kc)
	kg.emit()
	return kc, kg.w.String()
}

// setup puts every member's body into kernel variables.
func (kg *kgen) setup() {
	for _, s := range kg.k.Outer {
		kg.outer = append(kg.outer, kg.newVar(s))
	}
	for _, kn := range kg.k.Nodes {
		n := &knode{kn: kn}
		ranges := rangesOf(kn.Buf.Def)
		varOf := map[int]Expr{}
		if sc, ok := kn.Buf.Def.(*Scan); ok {
			// a scan kernel: outer = every dim but the scan dim; the scan dim is n.red[0]
			n.scan = sc
			kg.outer = kg.outer[:0]
			kg.vars = kg.vars[:0]
			for d, s := range ranges {
				if isOne(s) {
					continue
				}
				id := kg.newVar(s)
				if d == sc.Dim {
					n.red = []int{id}
				} else {
					kg.outer = append(kg.outer, id)
				}
				varOf[d] = Var(id)
			}
		} else {
			sq, pos := squeezed(ranges)
			for j, p := range pos {
				if j < len(kg.outer) {
					varOf[p] = Var(kg.outer[j])
				} else {
					id := kg.newVar(sq[j])
					n.inner = append(n.inner, id)
					varOf[p] = Var(id)
				}
			}
			if r, ok := kn.Buf.Def.(*Reduction); ok {
				for k, s := range r.ReduceRanges {
					if !isOne(s) {
						id := kg.newVar(s)
						n.red = append(n.red, id)
						varOf[len(ranges)+k] = Var(id)
					}
				}
			}
		}
		sub := &valueSubst{vs: kg.vals, vars: func(k int) Expr { return varOf[k] }, bounds: kg.bounds()}
		n.body = sub.value(bodyOf(kn.Buf.Def))
		switch {
		case kn.Local:
		case isScatter(kn.Buf):
			sc := kn.Buf.Def.(*ScatterNode)
			n.accumulate = sc.Accumulate
			for _, e := range sc.Target {
				n.store = append(n.store, e.Subst(func(k int) Expr { return varOf[k] }, kg.bounds(), sub))
			}
		default:
			n.store = make([]Expr, len(ranges))
			for d := range ranges {
				n.store[d] = varOf[d]
			}
		}
		kg.nodes = append(kg.nodes, n)
	}
}

// planSummandReuse finds a row reduction and a later pointwise member of the kernel that
// computes the reduction's summand again, at every position of the row, before storing it: a
// softmax sums exp(x − max) and then stores exp(x − max)/sum. The reduction then also stores
// each summand where the member will store that position's element, and the member loads it
// instead of computing it again (one exp per element instead of two, as torch's softmax
// kernel does). Both loops run over one variable of the same size at the same outer
// iteration; the member stores contiguously into a buffer of the summand's dtype that no member
// before it reads; the summand is computed (not a plain load).
func (kg *kgen) planSummandReuse() {
	for ci, c := range kg.nodes {
		if _, ok := c.kn.Buf.Def.(*Pointwise); !ok || c.kn.Local || c.store == nil || len(c.inner) != 1 || isScatter(c.kn.Buf) {
			continue
		}
		dt := c.kn.Buf.DType
		if dt != primtorch.Float32 && dt != primtorch.Float64 {
			continue
		}
		j := c.inner[0]
		b := kg.bounds()
		st := flatten(c.store, c.kn.Buf.Layout.Strides, c.kn.Buf.Layout.Offset, b)
		if st.UsesVarNested(j) || st.Coef(j) != 1 || kg.readBefore(ci, c.kn.Buf.Storage()) {
			continue
		}
		for bi := ci - 1; bi >= 0; bi-- {
			r := kg.nodes[bi]
			red, ok := r.kn.Buf.Def.(*Reduction)
			if !ok || r.keepInto != nil || len(r.inner) != 0 || len(r.red) != 1 || !kg.vars[r.red[0]].size.Equal(kg.vars[j].size) {
				continue
			}
			if red.Kind == ReduceArgmax || red.Kind == ReduceArgmin || r.body.Kind != VOp || r.body.DType != dt || kg.columnOK(r) {
				continue
			}
			rv := r.red[0]
			sub := &valueSubst{vs: kg.vals, vars: func(k int) Expr {
				if k == rv {
					return Var(j)
				}
				return Var(k)
			}, bounds: b}
			e := sub.value(r.body)
			found := false
			walkValues([]*Value{c.body}, func(v *Value) { found = found || v == e })
			if found {
				r.keepInto, c.reuses = c, e
				break
			}
		}
	}
}

// readBefore reports whether a member before kg.nodes[i] loads from storage s.
func (kg *kgen) readBefore(i int, s *Buffer) bool {
	read := false
	for _, n := range kg.nodes[:i] {
		walkValues(n.roots(), func(v *Value) {
			if v.Kind == VLoad && v.Buf.Storage() == s {
				read = true
			}
		})
	}
	return read
}

// exprsOf lists the index expressions a node evaluates (flattened storage indices of its loads
// and store, index values), for loop merging.
func (kg *kgen) exprsOf(n *knode) []Expr {
	var out []Expr
	b := kg.bounds()
	walkValues(n.roots(), func(v *Value) {
		switch v.Kind {
		case VLoad:
			if kg.isLocal(v.Buf) {
				return
			}
			out = append(out, flatten(v.Index, v.Buf.Layout.Strides, v.Buf.Layout.Offset, b))
		case VIndex:
			out = append(out, v.Expr)
		}
	})
	if n.store != nil {
		out = append(out, flatten(n.store, n.kn.Buf.Layout.Strides, n.kn.Buf.Layout.Offset, b))
	}
	return out
}

func (kg *kgen) isLocal(b *Buffer) bool {
	for _, n := range kg.k.Nodes {
		if n.Buf == b {
			return n.Local
		}
	}
	return false
}

// orderLoops puts a pointwise kernel's loops in the memory order of what it stores, then of what
// it loads: the loop that moves the stores by the smallest stride runs innermost, as eager's
// TensorIterator walks an output in memory order. A result laid out like a transposed input
// (x.t() + 1 keeps x's layout) was written and read with a stride of a whole row per element:
// 600 us for [512, 256] where eager takes 16 us. Equal strides keep the logical order, so a
// kernel over dense row-major buffers is unchanged; reductions, scans and members with loops of
// their own keep theirs, and so do scatters and writes into a graph input (the order of their
// writes is eager's).
func (kg *kgen) orderLoops() {
	kg.orderMemberLoops()
	if !kg.pure() || len(kg.outer) < 2 {
		return
	}
	var stores, loads []Expr
	for _, n := range kg.nodes {
		if _, scatter := n.kn.Buf.Def.(*ScatterNode); scatter || n.kn.Buf.Mutates != nil {
			return // the order writes land in is eager's (duplicate indices: the last one wins)
		}
		all := kg.exprsOf(n)
		if n.store != nil {
			st := all[len(all)-1] // exprsOf's last is the flat store index
			for _, v := range kg.outer {
				if st.usesVarInside(v) {
					return
				}
			}
			stores = append(stores, st)
			all = all[:len(all)-1]
		}
		loads = append(loads, all...)
	}
	kg.outer = memoryOrder(kg.outer, stores, loads)
}

// memoryOrder is loops sorted so that the one moving the stores by the smallest stride runs
// innermost, ties broken by the loads' strides, equal ones kept in their order.
func memoryOrder(loops []int, stores, loads []Expr) []int {
	stride := func(es []Expr, v int) int64 {
		var s int64
		for _, e := range es {
			s += loopStride(e, v)
		}
		return s
	}
	order := append([]int(nil), loops...)
	sort.SliceStable(order, func(i, j int) bool {
		a, c := order[i], order[j]
		if sa, sc := stride(stores, a), stride(stores, c); sa != sc {
			return sa > sc
		}
		return stride(loads, a) > stride(loads, c)
	})
	return order
}

// orderMemberLoops is orderLoops for a stored pointwise member with loops of its own in a
// kernel with reductions (a BatchNorm's x − mean between its two statistics): its loops run in
// the memory order of its store, then of its loads. Over a channels-last activation the
// logical order (N, C, H·W) stored with a stride of C per element, a loop gcc left scalar;
// in memory order the loops merge into one contiguous loop.
func (kg *kgen) orderMemberLoops() {
	for _, n := range kg.nodes {
		if len(n.inner) < 2 || len(n.red) > 0 || n.scan != nil || n.store == nil || n.kn.Buf.Mutates != nil {
			continue
		}
		if _, red := n.kn.Buf.Def.(*Reduction); red {
			continue
		}
		if _, scatter := n.kn.Buf.Def.(*ScatterNode); scatter {
			continue
		}
		all := kg.exprsOf(n)
		n.inner = memoryOrder(n.inner, all[len(all)-1:], all[:len(all)-1])
	}
}

// loopStride is how far one step of loop v moves index e (its estimated size for a symbolic
// coefficient); 0 where v appears only inside a division, modulo or indirect atom.
func loopStride(e Expr, v int) int64 {
	var s int64
	for _, t := range e.Terms {
		if t.Atom.Kind != AtomVar || t.Atom.Var != v {
			continue
		}
		c := t.Coef
		if len(t.Atom.Mono) > 0 {
			c *= est(monoSym(t.Atom.Mono, t.Atom.env))
		}
		s += max(c, -c)
	}
	return s
}

// mergeLoops merges adjacent loops whose variables every index uses as one (a·size_b·x_a +
// a·x_b): a contiguous pointwise kernel becomes one flat loop, and a [N,D] kernel reading a
// [D] bias stays two loops.
func (kg *kgen) mergeLoops() {
	all := func() []Expr {
		var out []Expr
		for _, n := range kg.nodes {
			out = append(out, kg.exprsOf(n)...)
		}
		return out
	}
	kg.outer = kg.mergeScope(kg.outer, all)
	for _, n := range kg.nodes {
		n := n
		own := func() []Expr { return kg.exprsOf(n) }
		n.inner = kg.mergeScope(n.inner, own)
		if n.scan == nil {
			n.red = kg.mergeScope(n.red, own)
		}
	}
}

func (kg *kgen) mergeScope(loops []int, exprs func() []Expr) []int {
	for {
		merged := false
		for i := len(loops) - 2; i >= 0; i-- {
			a, b := loops[i], loops[i+1]
			if !mergeable(a, b, kg.vars[b].size, exprs()) {
				continue
			}
			kg.substMerge(a, b)
			loops = append(loops[:i+1], loops[i+2:]...)
			merged = true
			break
		}
		if !merged {
			return loops
		}
	}
}

func mergeable(a, b int, size Sym, exprs []Expr) bool {
	sizeB, static := size.IsConst()
	if sizeB == 0 && static {
		return false // merged, the inner variable would be x % 0
	}
	if !static {
		// a symbolic inner size: every index must move by a symbolic multiple of the merged
		// variable (c·s1·a + c·b = c·(s1·a + b)), so no division by the size is ever needed
		for _, e := range exprs {
			if e.usesVarInside(a) || e.usesVarInside(b) || !e.coefSym(a).Equal(e.coefSym(b).Mul(size)) {
				return false
			}
		}
		return true
	}
	for _, e := range exprs {
		if e.UsesVarNested(a) || e.UsesVarNested(b) {
			return false
		}
		if e.Coef(a) != e.Coef(b)*sizeB {
			return false
		}
	}
	return true
}

// substMerge replaces variables a and b by one variable (a's id, size a·b).
func (kg *kgen) substMerge(a, b int) {
	var fa, fb func(bounds Bounds) Expr
	if _, static := kg.vars[b].size.IsConst(); static {
		sb := staticSize(kg.vars[b].size, "merging loops")
		kg.vars[a].size = kg.vars[a].size.MulConst(sb)
		fa = func(bounds Bounds) Expr { return FloorDiv(Var(a), sb, bounds) }
		fb = func(bounds Bounds) Expr { return Mod(Var(a), sb, bounds) }
	} else {
		// (see mergeable) each index is c·s1·a + c·b: a → 0 and b → the merged variable
		kg.vars[a].size = kg.vars[a].size.Mul(kg.vars[b].size)
		fa = func(Bounds) Expr { return Expr{} }
		fb = func(Bounds) Expr { return Var(a) }
	}
	kg.vars[b].size = symc(1)
	bounds := kg.bounds()
	va, vb := fa(bounds), fb(bounds)
	f := func(k int) Expr {
		switch k {
		case a:
			return va
		case b:
			return vb
		}
		return Var(k)
	}
	sub := &valueSubst{vs: kg.vals, vars: f, bounds: bounds}
	for _, n := range kg.nodes {
		n.body = sub.value(n.body)
		for d, e := range n.store {
			n.store[d] = e.Subst(f, bounds, sub)
		}
	}
}

// signature assigns the pointer arguments: storages read only, then storages written.
func (kg *kgen) signature() *KernelCode {
	kc := &KernelCode{Name: kg.k.Name}
	written := map[*Buffer]bool{}
	var writes []*Buffer
	for _, n := range kg.nodes {
		if n.kn.Local {
			kg.locals[n.kn.Buf] = "v_" + kg.bufName(n.kn.Buf)
			continue
		}
		s := n.kn.Buf.Storage()
		if !written[s] {
			written[s] = true
			writes = append(writes, s)
		}
	}
	readSet := map[*Buffer]bool{}
	var reads []*Buffer
	for _, n := range kg.nodes {
		for _, e := range n.store {
			if len(indValues(e)) > 0 {
				kg.hasInd = true
			}
		}
		walkValues(n.roots(), func(v *Value) {
			if statusOf(v) != 0 {
				kg.hasInd = true
			}
			if v.Kind == VLoad && !kg.isLocal(v.Buf) {
				s := v.Buf.Storage()
				if !written[s] && !readSet[s] {
					readSet[s] = true
					reads = append(reads, s)
				}
			}
			for _, e := range append(append([]Expr(nil), v.Index...), v.Expr) {
				// indValues finds indirect atoms inside floordiv/mod terms too (a gather
				// through a view that merges dims).
				if len(indValues(e)) > 0 {
					kg.hasInd = true
				}
			}
		})
	}
	sortBuffers(reads)
	for i, b := range reads {
		kg.ptrs[b] = "in_ptr" + strconv.Itoa(i)
		kc.Args = append(kc.Args, b)
		kc.Writes = append(kc.Writes, false)
	}
	for i, b := range writes {
		kg.ptrs[b] = "out_ptr" + strconv.Itoa(i)
		kc.Args = append(kc.Args, b)
		kc.Writes = append(kc.Writes, true)
	}
	kc.HasIndexCheck = kg.hasInd
	kc.Symbols = kg.symbolsUsed()
	kc.Floats = kg.floatsUsed()
	return kc
}

// header is the comment and signature of the kernel function.
func (kg *kgen) header(kc *KernelCode) {
	var origins []string
	for _, n := range kg.k.Nodes {
		origins = mergeNames(origins, n.Buf.Origins)
	}
	w := kg.w
	w.line("/* " + kg.k.Name)
	w.line(" * graph nodes: " + strings.Join(origins, ", "))
	var parts []string
	for i, b := range kc.Args {
		dir := "in"
		if kc.Writes[i] {
			dir = "out"
		}
		parts = append(parts, fmt.Sprintf("ptrs[%d] %s %s %s", i, dir, kg.bufName(b), typeText(b.DType, b.Sizes, b.Layout)))
	}
	for _, p := range parts {
		w.line(" * " + p)
	}
	w.line(" */")
	w.line("PTGO_KERNEL int " + kg.k.Name + "(void *const *ptrs, const int64_t *ints, const double *floats, int nthreads)")
	w.line("{")
	w.in()
	for i, b := range kc.Args {
		ct := cStorage(b.DType)
		name := kg.ptrs[b]
		if kc.Writes[i] {
			w.line(fmt.Sprintf("%s *restrict %s = (%s *)ptrs[%d];", ct, name, ct, i))
		} else {
			w.line(fmt.Sprintf("const %s *restrict %s = (const %s *)ptrs[%d];", ct, name, ct, i))
		}
	}
	w.line("(void)ints;")
	for _, id := range kg.symbolsUsed() {
		w.line(fmt.Sprintf("const int64_t %s = ints[%d];", symC(id), id))
	}
	w.line("(void)floats;")
	w.line("(void)nthreads;")
	if kg.hasInd {
		w.line("int ptgo_oob = 0;")
	}
}

// cwriter accumulates indented C lines.
type cwriter struct {
	b      strings.Builder
	indent int
}

func (w *cwriter) line(s string) {
	for i := 0; i < w.indent; i++ {
		w.b.WriteString("    ")
	}
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}
func (w *cwriter) in()            { w.indent++ }
func (w *cwriter) out()           { w.indent-- }
func (w *cwriter) String() string { return w.b.String() }

func isScatter(b *Buffer) bool {
	_, ok := b.Def.(*ScatterNode)
	return ok
}

// symbolsUsed lists the size symbols the kernel's loop bounds use (ints[k] holds s<k> in a
// symbolic program).
func (kg *kgen) symbolsUsed() []int {
	seen := map[int]bool{}
	var out []int
	add := func(s Sym) {
		for _, id := range s.Symbols() {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	for _, v := range kg.vars {
		add(v.size)
	}
	for _, n := range kg.nodes {
		walkValues(n.roots(), func(v *Value) {
			if v.Kind == VSize {
				add(v.Size)
			}
		})
		for _, e := range kg.exprsOf(n) {
			exprSymbols(e, func(id int) {
				if !seen[id] {
					seen[id] = true
					out = append(out, id)
				}
			})
		}
	}
	sort.Ints(out)
	return out
}

// floatsUsed lists the float arguments the kernel's values read (VFloat), in order.
func (kg *kgen) floatsUsed() []int {
	seen := map[int]bool{}
	var out []int
	for _, n := range kg.nodes {
		walkValues(n.roots(), func(v *Value) {
			if k := int(v.Num.I); v.Kind == VFloat && !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		})
	}
	sort.Ints(out)
	return out
}

// sizeC renders a size in C: a literal, or the polynomial over the kernel's symbol variables.
func sizeC(s Sym) string {
	if k, ok := s.IsConst(); ok {
		return strconv.FormatInt(k, 10)
	}
	return "(" + symNameC.ReplaceAllString(s.String(), "sz$1") + ")"
}

// symC is the C variable holding size symbol s<id> in a kernel (sz<id>: loop variables use
// i, j, r and s prefixes).
func symC(id int) string { return "sz" + strconv.Itoa(id) }

var symNameC = regexp.MustCompile(`\bs([0-9]+)\b`)
