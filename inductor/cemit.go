package inductor

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Emission of a kernel's loops and bodies. Bodies become straight-line C: one temporary per
// value (shared values computed once per scope), masked values as if/else blocks so their loads
// run only when needed, indirect indices wrapped and checked without branches (an index out of
// range reads element 0 and makes the kernel return StatusIndex; an integer division by zero
// gives 0 and makes it return StatusZeroDiv).

// emit writes the kernel after its header: the loop nest and every member inside it.
func (kg *kgen) emit() {
	w := kg.w
	plan := kg.parallelPlan()
	if kg.parallelIf != "" && plan != (parPlan{}) {
		// A symbolic kernel's work is known at run time: below the threshold it runs the serial
		// version of its loops (an OpenMP if clause would still enter a one-thread region).
		cond := strings.TrimSuffix(strings.TrimPrefix(kg.parallelIf, "if("), ")")
		kg.parallelIf = ""
		w.line("if (" + cond + ") {")
		w.in()
		kg.emitLoops(plan)
		w.out()
		w.line("} else {")
		w.in()
		kg.regs = map[*Buffer]string{}
		kg.emitLoops(parPlan{})
		w.out()
		w.line("}")
	} else {
		kg.emitLoops(plan)
	}
	if kg.hasInd {
		w.line("return ptgo_oob;")
	} else {
		w.line("return 0;")
	}
	w.out()
	w.line("}")
}

// emitLoops writes the kernel's loop nest and members under a parallel plan.
func (kg *kgen) emitLoops(plan parPlan) {
	for i, id := range kg.outer {
		kg.vars[id].name = "i" + strconv.Itoa(i)
	}
	if kg.nodes[0].scan != nil {
		kg.emitScan(kg.nodes[0], plan)
	} else if kg.pure() {
		n := len(kg.outer)
		pragmas := make([]string, n)
		if n > 0 {
			if plan.top > 0 {
				if plan.topSimd {
					pragmas[0] = kg.pragma("parallel for simd", plan.top, "")
				} else {
					pragmas[0] = kg.pragma("parallel for", plan.top, "")
				}
			}
			if !plan.topSimd && kg.simdOK(kg.outer[n-1]) {
				pragmas[n-1] = kg.pragma("simd", 0, "")
			}
		}
		root := &scope{}
		kg.loops(kg.outer, pragmas, func() {
			sc := root.child()
			for _, nd := range kg.nodes {
				kg.emitNode(nd, sc, plan)
			}
		})
	} else {
		pragmas := make([]string, len(kg.outer))
		if plan.top > 0 {
			pragmas[0] = kg.pragma("parallel for", plan.top, "")
		}
		kg.loops(kg.outer, pragmas, func() {
			sc := &scope{}
			for _, nd := range kg.nodes {
				kg.emitNode(nd, sc, plan)
			}
		})
	}
}

// pure reports a kernel whose members have no loops of their own (a pointwise kernel).
func (kg *kgen) pure() bool {
	for _, n := range kg.nodes {
		if len(n.inner) > 0 || len(n.red) > 0 || n.scan != nil {
			return false
		}
		if _, ok := n.kn.Buf.Def.(*Reduction); ok {
			return false
		}
	}
	return true
}

// parPlan says where a kernel runs in parallel.
type parPlan struct {
	top     int  // outer loops collapsed into one top-level parallel loop (0: none)
	topSimd bool // the top-level loop is also the simd loop (one flat pointwise loop)
	inside  bool // parallelize loops inside member nodes instead
}

func (kg *kgen) workSym() Sym {
	w := symc(0)
	for _, n := range kg.k.Nodes {
		w = w.Add(iterNumel(n.Buf.Def))
	}
	return w
}

func (kg *kgen) work() int64 {
	var w int64
	for _, n := range kg.k.Nodes {
		w += est(iterNumel(n.Buf.Def))
	}
	return w
}

func (kg *kgen) outerProduct(ids []int) int64 {
	p := int64(1)
	for _, id := range ids {
		p *= est(kg.vars[id].size)
	}
	return p
}

func (kg *kgen) parallelPlan() parPlan {
	if kg.tu.opts.NoParallel || kg.work() < kg.tu.opts.minWork() || isScatter(kg.k.Nodes[0].Buf) {
		return parPlan{} // scatters run serially: duplicate indices must not race
	}
	// symbolic work: the parallel loops are planned for a large size (est) and every parallel
	// region gets the threshold as a run-time condition
	if w := kg.workSym(); anySymbolic([]Sym{w}) {
		kg.parallelIf = fmt.Sprintf("if(%s >= %d)", sizeC(w), kg.tu.opts.minWork())
	}
	n := len(kg.outer)
	if kg.pure() {
		if n == 0 {
			return parPlan{}
		}
		if n == 1 {
			return parPlan{top: 1, topSimd: true}
		}
		return parPlan{top: min(chunkPrefix(kg, kg.outer), n-1)}
	}
	if kg.outerProduct(kg.outer) >= ParallelMinChunks {
		return parPlan{top: n}
	}
	return parPlan{inside: true}
}

// chunkPrefix is the number of leading loops whose product reaches ParallelMinChunks (all of
// them if it never does).
func chunkPrefix(kg *kgen, loops []int) int {
	p := int64(1)
	for i, id := range loops {
		p *= est(kg.vars[id].size)
		if p >= ParallelMinChunks {
			return i + 1
		}
	}
	return len(loops)
}

// pragma renders an OpenMP pragma: "parallel for", "parallel for simd" or "simd", with
// collapse(c) when c > 1 and extra clauses.
func (kg *kgen) pragma(kind string, collapse int, clauses string) string {
	if kg.tu.opts.NoSimd && kind == "simd" {
		return ""
	}
	if kg.tu.opts.NoSimd && kind == "parallel for simd" {
		kind = "parallel for"
	}
	s := "#pragma omp " + kind
	if strings.HasPrefix(kind, "parallel") {
		s += " num_threads(nthreads) schedule(static)"
		if kg.parallelIf != "" {
			s += " " + kg.parallelIf
		}
	}
	if collapse > 1 {
		s += " collapse(" + strconv.Itoa(collapse) + ")"
	}
	if clauses != "" {
		s += " " + clauses
	}
	if kg.hasInd {
		s += " reduction(|:ptgo_oob)"
	}
	return s
}

// simdOK reports whether the innermost loop over v should carry `omp simd`: every store the
// loop does is contiguous in v.
func (kg *kgen) simdOK(v int) bool {
	b := kg.bounds()
	stores := 0
	for _, n := range kg.nodes {
		if n.store == nil {
			continue
		}
		f := flatten(n.store, n.kn.Buf.Layout.Strides, n.kn.Buf.Layout.Offset, b)
		if f.UsesVarNested(v) || f.Coef(v) != 1 {
			return false
		}
		stores++
	}
	return stores > 0
}

func (kg *kgen) simdOKNode(n *knode, v int) bool {
	if n.store == nil {
		return false
	}
	f := flatten(n.store, n.kn.Buf.Layout.Strides, n.kn.Buf.Layout.Offset, kg.bounds())
	return !f.UsesVarNested(v) && f.Coef(v) == 1
}

// loops writes nested for loops over ids (pragma[k] before loop k when non-empty) around body.
func (kg *kgen) loops(ids []int, pragmas []string, body func()) {
	w := kg.w
	if len(ids) == 0 {
		w.line("{")
		w.in()
		body()
		w.out()
		w.line("}")
		return
	}
	for k, id := range ids {
		if pragmas[k] != "" {
			w.line(pragmas[k])
		}
		name := kg.vars[id].name
		w.line(fmt.Sprintf("for (int64_t %s = 0; %s < %s; %s++) {", name, name, sizeC(kg.vars[id].size), name))
		w.in()
	}
	body()
	for range ids {
		w.out()
		w.line("}")
	}
}

func nameLoops(kg *kgen, ids []int, prefix string) {
	for i, id := range ids {
		kg.vars[id].name = prefix + strconv.Itoa(i)
	}
}

// emitNode writes one member inside an outer iteration.
func (kg *kgen) emitNode(n *knode, sc *scope, plan parPlan) {
	nameLoops(kg, n.inner, "j")
	nameLoops(kg, n.red, "r")
	if r, ok := n.kn.Buf.Def.(*Reduction); ok {
		kg.emitReduction(n, r, sc, plan)
		return
	}
	b := n.kn.Buf
	if len(n.inner) == 0 {
		v := kg.val(n.body, sc)
		kg.finish(n, v, sc)
		return
	}
	pragmas := make([]string, len(n.inner))
	last := len(n.inner) - 1
	simd := kg.simdOKNode(n, n.inner[last])
	if plan.inside && est(iterNumel(b.Def))/max(kg.outerProduct(kg.outer), 1) >= kg.tu.opts.minWork()/8 {
		if len(n.inner) == 1 && simd {
			pragmas[0] = kg.pragma("parallel for simd", 0, "")
			simd = false
		} else {
			pragmas[0] = kg.pragma("parallel for", min(chunkPrefix(kg, n.inner), max(last, 1)), "")
		}
	}
	if simd {
		pragmas[last] = kg.pragma("simd", 0, "")
	}
	kg.loops(n.inner, pragmas, func() {
		inner := sc.child()
		if n.reuses != nil {
			kg.temp(n.reuses, kg.reuseRef(n, n.inner[0], inner), inner)
		}
		v := kg.val(n.body, inner)
		kg.finish(n, v, inner)
	})
}

// reuseRef is the element member c stores at position v of its loop (a reduction keeping its
// summands there passes its own loop variable).
func (kg *kgen) reuseRef(c *knode, v int, sc *scope) string {
	j := c.inner[0]
	b := kg.bounds()
	idx := flatten(c.store, c.kn.Buf.Layout.Strides, c.kn.Buf.Layout.Offset, b)
	idx = idx.Subst(func(k int) Expr {
		if k == j {
			return Var(v)
		}
		return Var(k)
	}, b, nil)
	return kg.ptrs[c.kn.Buf.Storage()] + "[" + kg.expr(idx, sc) + "]"
}

// finish stores a member's value; a member with no loops of its own also keeps it in a C
// variable v_<buf> for the rest of the outer iteration (reductions declare it before their
// block), which is all a local member does.
func (kg *kgen) finish(n *knode, v string, sc *scope) {
	b := n.kn.Buf
	if len(n.inner) == 0 && n.scan == nil && !isScatter(b) {
		reg := "v_" + kg.bufName(b)
		if _, red := b.Def.(*Reduction); red {
			kg.w.line(fmt.Sprintf("%s = %s;", reg, v))
		} else {
			kg.w.line(fmt.Sprintf("%s %s = %s;", cCompute(b.DType), reg, v))
		}
		kg.regs[b] = reg
		if n.kn.Local {
			return
		}
		v = reg
	}
	idx := flatten(n.store, b.Layout.Strides, b.Layout.Offset, kg.bounds())
	ref := kg.ptrs[b.Storage()] + "[" + kg.expr(idx, sc) + "]"
	if n.accumulate {
		old := kg.newTmp()
		kg.w.line(fmt.Sprintf("%s %s = %s;", cCompute(b.DType), old, loadConv(b.DType, ref, kg.tu)))
		o := cOperands{dt: b.DType, ct: cCompute(b.DType), f: mathSuffix(b.DType), fl: b.DType.IsFloatingPoint()}
		v = opTable["add"].c(o, []string{old, v})
	}
	kg.w.line(fmt.Sprintf("%s = %s;", ref, storeConv(b.DType, v, kg.tu)))
}

// loadConv converts a storage element reference to its compute type.
func loadConv(dt primtorch.DType, ref string, tu *tunit) string {
	switch dt {
	case primtorch.Float16:
		return "(float)" + ref
	case primtorch.BFloat16:
		tu.raw("bf16", bf16Helpers)
		return "ptgo_bf2f(" + ref + ")"
	}
	return ref
}

// storeConv converts a computed value to the storage type of dt.
func storeConv(dt primtorch.DType, v string, tu *tunit) string {
	switch dt {
	case primtorch.Float16:
		return "(_Float16)" + v
	case primtorch.BFloat16:
		tu.raw("bf16", bf16Helpers)
		return "ptgo_f2bf(" + v + ")"
	}
	return v
}

// reduceSpec is how a reduction kind accumulates in C.
type reduceSpec struct {
	acc    string // accumulator C type
	init   string
	update string // %a accumulator, %t value, %n nan flag
	clause string // OpenMP reduction clauses ("" when the loop cannot be split)
	nan    bool   // keeps a NaN flag
	final  string // %a accumulator, %n nan flag
}

func (kg *kgen) reduceSpec(r *Reduction, in primtorch.DType) reduceSpec {
	ct := cCompute(in)
	fl := in.IsFloatingPoint()
	switch r.Kind {
	case ReduceSum, ReduceProd:
		acc := cCompute(accDType(in, true))
		if r.Kind == ReduceSum {
			return reduceSpec{acc: acc, init: "0", update: "%a += (" + acc + ")%t;", clause: "reduction(+:%a)", final: "%a"}
		}
		return reduceSpec{acc: acc, init: "1", update: "%a *= (" + acc + ")%t;", clause: "reduction(*:%a)", final: "%a"}
	case ReduceMax, ReduceMin:
		op, red := ">", "max"
		if r.Kind == ReduceMin {
			op, red = "<", "min"
		}
		if in == primtorch.Bool {
			if r.Kind == ReduceMax {
				return reduceSpec{acc: "int", init: "0", update: "%a |= (%t != 0);", clause: "reduction(|:%a)", final: "%a"}
			}
			return reduceSpec{acc: "int", init: "1", update: "%a &= (%t != 0);", clause: "reduction(&:%a)", final: "%a"}
		}
		init := extremeLiteral(in, r.Kind == ReduceMin)
		if fl {
			return reduceSpec{acc: ct, init: init, update: "%a = %t " + op + " %a ? %t : %a; %n |= %t != %t;",
				clause: "reduction(" + red + ":%a) reduction(|:%n)", nan: true, final: "(%n ? NAN : %a)"}
		}
		return reduceSpec{acc: ct, init: init, update: "%a = %t " + op + " %a ? %t : %a;", clause: "reduction(" + red + ":%a)", final: "%a"}
	case ReduceAny:
		return reduceSpec{acc: "int", init: "0", update: "%a |= (%t != 0);", clause: "reduction(|:%a)", final: "%a"}
	case ReduceAll:
		return reduceSpec{acc: "int", init: "1", update: "%a &= (%t != 0);", clause: "reduction(&:%a)", final: "%a"}
	}
	// argmax / argmin: value and first index; NaN counts as the extreme, first one wins
	op, notOp := ">", "<="
	if r.Kind == ReduceArgmin {
		op, notOp = "<", ">="
	}
	cond := "%t " + op + " %a"
	if fl {
		// t wins when t > a, or when t is NaN and a is not. Written so that the common case
		// (t <= a, both ordered) is one compare and branch: (t > a || (t != t && a == a))
		// let gcc if-convert the NaN test into the loop's hot path when the trip count is a
		// run-time size, 3.5x slower (an argmax over 512x1000, 1064 vs 304 µs).
		cond = "(!(%t " + notOp + " %a) && (%t " + op + " %a || %a == %a))"
	}
	return reduceSpec{acc: ct, init: extremeLiteral(in, r.Kind == ReduceArgmin),
		update: "if (" + cond + ") { %a = %t; %i = %r; }", final: "%i"}
}

// extremeLiteral is the identity of max (lowest value) or, when high, of min.
func extremeLiteral(dt primtorch.DType, high bool) string {
	if dt.IsFloatingPoint() {
		inf := "INFINITY"
		if cCompute(dt) == "double" {
			inf = "(double)INFINITY"
		}
		if high {
			return inf
		}
		return "-" + inf
	}
	lim := map[primtorch.DType][2]string{
		primtorch.Int64: {"INT64_MIN", "INT64_MAX"}, primtorch.Int32: {"INT32_MIN", "INT32_MAX"},
		primtorch.Int16: {"INT16_MIN", "INT16_MAX"}, primtorch.Int8: {"INT8_MIN", "INT8_MAX"},
		primtorch.UInt8: {"0", "UINT8_MAX"}, primtorch.Bool: {"0", "1"},
	}[dt]
	if high {
		return lim[1]
	}
	return lim[0]
}

func expand(tmpl string, repl ...string) string { return strings.NewReplacer(repl...).Replace(tmpl) }

// emitReduction writes a reduction member.
func (kg *kgen) emitReduction(n *knode, r *Reduction, sc *scope, plan parPlan) {
	w := kg.w
	in := n.body.DType
	spec := kg.reduceSpec(r, in)
	bn := kg.bufName(n.kn.Buf)
	acc, nan, idx := "acc_"+bn, "nan_"+bn, "idx_"+bn
	argLike := r.Kind == ReduceArgmax || r.Kind == ReduceArgmin
	splittable := !argLike
	inside := plan.inside && est(iterNumel(r))/max(kg.outerProduct(kg.outer), 1) >= kg.tu.opts.minWork()/8
	body := func(outer *scope, parallelRed bool) {
		w.line(fmt.Sprintf("%s %s = %s;", spec.acc, acc, spec.init))
		if spec.nan {
			w.line("int " + nan + " = 0;")
		}
		if argLike {
			w.line("int64_t " + idx + " = 0;")
		}
		pragmas := make([]string, len(n.red))
		clause := expand(spec.clause, "%a", acc, "%n", nan)
		if len(n.red) > 0 && splittable {
			last := len(n.red) - 1
			if parallelRed {
				if last == 0 {
					pragmas[0] = kg.pragma("parallel for simd", 0, clause)
				} else {
					pragmas[0] = kg.pragma("parallel for", min(chunkPrefix(kg, n.red), last), clause)
					pragmas[last] = kg.pragma("simd", 0, clause)
				}
			} else {
				pragmas[last] = kg.pragma("simd", 0, clause)
			}
		}
		kg.loops(n.red, pragmas, func() {
			s := outer.child()
			t := kg.val(n.body, s)
			if c := n.keepInto; c != nil {
				w.line(fmt.Sprintf("%s = %s;", kg.reuseRef(c, n.red[0], s), t))
			}
			flat := "0"
			if argLike {
				flat = kg.flatRed(n)
			}
			w.line(expand(spec.update, "%a", acc, "%t", t, "%n", nan, "%i", idx, "%r", flat))
		})
		final := expand(spec.final, "%a", acc, "%n", nan, "%i", idx)
		out := n.kn.Buf.DType
		kg.finish(n, castFromAcc(spec.acc, final, out), outer)
	}
	if splittable && kg.columnOK(n) {
		kg.emitColumnReduction(n, spec, sc, inside)
		return
	}
	if len(n.inner) == 0 {
		w.line(fmt.Sprintf("%s v_%s;", cCompute(n.kn.Buf.DType), kg.bufName(n.kn.Buf)))
		w.line("{")
		w.in()
		body(sc, inside && splittable)
		w.out()
		w.line("}")
		return
	}
	pragmas := make([]string, len(n.inner))
	if inside {
		pragmas[0] = kg.pragma("parallel for", len(n.inner), "")
	}
	kg.loops(n.inner, pragmas, func() { body(sc.child(), false) })
}

// castFromAcc converts an accumulator to the result dtype's compute type.
func castFromAcc(accType, v string, out primtorch.DType) string {
	if out == primtorch.Bool {
		return "(uint8_t)(" + v + " != 0)"
	}
	if accType == cCompute(out) {
		return v
	}
	return "(" + cCompute(out) + ")(" + v + ")"
}

// flatRed is the row-major position of the current reduction iteration.
func (kg *kgen) flatRed(n *knode) string {
	var parts []string
	stride := int64(1)
	for k := len(n.red) - 1; k >= 0; k-- {
		v := kg.vars[n.red[k]]
		if stride == 1 {
			parts = append(parts, v.name)
		} else {
			parts = append(parts, strconv.FormatInt(stride, 10)+"*"+v.name)
		}
		if k > 0 {
			stride *= staticSize(v.size, "argmax/argmin over several dims")
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, " + ")
}

// emitScan writes a scan kernel: outer loops over every dim but the scan dim, then a sequential
// loop carrying the running total.
func (kg *kgen) emitScan(n *knode, plan parPlan) {
	w := kg.w
	sc := n.scan
	nameLoops(kg, n.red, "s")
	for i, id := range kg.outer {
		kg.vars[id].name = "i" + strconv.Itoa(i)
	}
	in := n.body.DType
	acc := cCompute(accDType(in, true))
	op, init := "+=", "0"
	if sc.Kind == ScanProd {
		op, init = "*=", "1"
	}
	pragmas := make([]string, len(kg.outer))
	if len(kg.outer) > 0 && !kg.tu.opts.NoParallel && kg.work() >= kg.tu.opts.minWork() && kg.outerProduct(kg.outer) >= 2 {
		pragmas[0] = kg.pragma("parallel for", len(kg.outer), "")
	}
	kg.loops(kg.outer, pragmas, func() {
		w.line(fmt.Sprintf("%s acc = %s;", acc, init))
		kg.loops(n.red, make([]string, len(n.red)), func() {
			s := &scope{}
			t := kg.val(n.body, s)
			w.line(fmt.Sprintf("acc %s (%s)%s;", op, acc, t))
			kg.finish(n, castFromAcc(acc, "acc", n.kn.Buf.DType), s)
		})
	})
	if len(n.red) == 0 {
		// scan over a size-1 dim is a copy; the loop above wrote nothing
		kg.loops(kg.outer, make([]string, len(kg.outer)), func() {
			s := &scope{}
			kg.finish(n, kg.val(n.body, s), s)
		})
	}
}

// scope maps values already computed in a C block (and its parents) to their temporaries.
type scope struct {
	parent *scope
	names  map[*Value]string
	inds   map[string]string
}

func (s *scope) child() *scope { return &scope{parent: s} }

func (s *scope) lookup(v *Value) (string, bool) {
	for c := s; c != nil; c = c.parent {
		if n, ok := c.names[v]; ok {
			return n, true
		}
	}
	return "", false
}

func (s *scope) lookupInd(key string) (string, bool) {
	for c := s; c != nil; c = c.parent {
		if n, ok := c.inds[key]; ok {
			return n, true
		}
	}
	return "", false
}

func (s *scope) bind(v *Value, name string) {
	if s.names == nil {
		s.names = map[*Value]string{}
	}
	s.names[v] = name
}

func (kg *kgen) newTmp() string {
	kg.tmp++
	return "t" + strconv.Itoa(kg.tmp-1)
}

// temp declares a temporary of v's compute type holding expr.
func (kg *kgen) temp(v *Value, expr string, sc *scope) string {
	name := kg.newTmp()
	kg.w.line(fmt.Sprintf("%s %s = %s;", cCompute(v.DType), name, expr))
	sc.bind(v, name)
	return name
}

// val returns a C expression for v (a literal or a temporary), writing the lines it needs.
func (kg *kgen) val(v *Value, sc *scope) string {
	if v.Kind == VConst {
		return cLiteral(v.DType, v.Num)
	}
	if name, ok := sc.lookup(v); ok {
		return name
	}
	switch v.Kind {
	case VLoad:
		if name, ok := kg.locals[v.Buf]; ok {
			return name
		}
		if name, ok := kg.regs[v.Buf]; ok {
			return name
		}
		b := v.Buf
		idx := kg.expr(flatten(v.Index, b.Layout.Strides, b.Layout.Offset, kg.bounds()), sc)
		return kg.temp(v, loadConv(b.DType, kg.ptrs[b.Storage()]+"["+idx+"]", kg.tu), sc)
	case VIndex:
		return kg.temp(v, "("+cCompute(v.DType)+")("+kg.expr(v.Expr, sc)+")", sc)
	case VSize:
		return kg.temp(v, "(int64_t)"+sizeC(v.Size), sc)
	case VFloat:
		return kg.temp(v, "floats["+strconv.FormatInt(v.Num.I, 10)+"]", sc)
	case VCast:
		return kg.temp(v, kg.convert(v.Args[0], kg.val(v.Args[0], sc), v.DType), sc)
	case VOp:
		args := make([]string, len(v.Args))
		for i, a := range v.Args {
			args[i] = kg.val(a, sc)
		}
		od := v.Args[0].DType
		if v.Op == "where" {
			od = v.Args[1].DType
		}
		o := cOperands{dt: od, ct: cCompute(od), f: mathSuffix(od), fl: od.IsFloatingPoint(),
			helper: func(name string) string { return kg.tu.helper(name, od) }}
		if fastFloatMath[v.Op] {
			o.infinite = fromInfinity(v.Args)
		}
		switch statusOf(v) {
		case StatusZeroDiv:
			kg.w.line(fmt.Sprintf("ptgo_oob |= (%s == 0) ? %d : 0;", args[1], StatusZeroDiv))
		case StatusCheck:
			kg.w.line(fmt.Sprintf("ptgo_oob |= (%s) ? %d : 0;", args[0], StatusCheck))
		}
		return kg.temp(v, opTable[v.Op].c(o, args), sc)
	case VMasked:
		cond := kg.val(v.Args[0], sc)
		name := kg.newTmp()
		kg.w.line(fmt.Sprintf("%s %s;", cCompute(v.DType), name))
		kg.w.line("if (" + cond + ") {")
		kg.w.in()
		s1 := sc.child()
		kg.w.line(name + " = " + kg.val(v.Args[1], s1) + ";")
		kg.w.out()
		kg.w.line("} else {")
		kg.w.in()
		s2 := sc.child()
		kg.w.line(name + " = " + kg.val(v.Args[2], s2) + ";")
		kg.w.out()
		kg.w.line("}")
		sc.bind(v, name)
		return name
	}
	panic("ptgo BUG: inductor: unknown value kind")
}

// fromInfinity reports whether values are computed from an infinite floating constant.
func fromInfinity(vs []*Value) bool {
	found := false
	walkValues(vs, func(v *Value) {
		if v.Kind == VConst && v.DType.IsFloatingPoint() && math.IsInf(v.Num.F, 0) {
			found = true
		}
	})
	return found
}

// convert renders the conversion of x (of value a's dtype) to dt's compute type.
func (kg *kgen) convert(a *Value, x string, dt primtorch.DType) string {
	from := a.DType
	ct := cCompute(dt)
	switch {
	case dt == primtorch.Bool:
		return "(uint8_t)(" + x + " != 0)"
	case from.IsIntegral(false) && dt.IsFloatingPoint():
		// An integer is never -0.0, but gcc folds float->int->float into a truncation that
		// keeps the sign of a zero (-0.3 would come back as -0.0; "+ 0.0" is folded away too):
		// a select on the integer gives +0.0, and vectorises.
		z := "(" + x + " == 0)"
		switch dt {
		case primtorch.Float16:
			return "(" + z + " ? 0.0f : (float)(_Float16)" + x + ")"
		case primtorch.BFloat16:
			kg.tu.raw("bf16", bf16Helpers)
			return "(" + z + " ? 0.0f : ptgo_bf2f(ptgo_f2bf((float)" + x + ")))"
		}
		return "(" + z + " ? (" + ct + ")0 : (" + ct + ")" + x + ")"
	case dt == primtorch.Float16:
		return "(float)(_Float16)" + x
	case dt == primtorch.BFloat16:
		kg.tu.raw("bf16", bf16Helpers)
		return "ptgo_bf2f(ptgo_f2bf((float)" + x + "))"
	case from.IsFloatingPoint() && dt == primtorch.Int64:
		// A float out of int64's range (inf, nan, 1e30) is undefined behaviour in C, which gcc
		// exploits (it folds float->int->float into truncf); x86's conversion, which eager torch
		// gets, gives INT64_MIN.
		kg.tu.raw("f2i", floatToIntHelpers)
		return "ptgo_f2i64((double)" + x + ")"
	case from.IsFloatingPoint() && (dt == primtorch.Int32 || dt == primtorch.Int8 || dt == primtorch.Int16 || dt == primtorch.UInt8):
		kg.tu.raw("f2i", floatToIntHelpers)
		return "(" + ct + ")ptgo_f2i32((double)" + x + ")"
	}
	return "(" + ct + ")" + x
}

// expr renders an index expression, emitting the indirect indices it uses.
func (kg *kgen) expr(e Expr, sc *scope) string {
	names := func(k int) string { return kg.vars[k].name }
	ind := func(a *Atom) string { return kg.indirect(a, sc) }
	// emit indirect atoms first so their lines come before the expression's use
	for _, t := range e.Terms {
		if t.Atom.Kind == AtomInd {
			kg.indirect(t.Atom, sc)
		}
	}
	return e.Format(names, ind, true)
}

// indirect emits (once per scope) the wrapped, checked value of an indirect index atom.
func (kg *kgen) indirect(a *Atom, sc *scope) string {
	if name, ok := sc.lookupInd(a.key); ok {
		return name
	}
	v := kg.val(a.Val, sc)
	n := a.ExtentC()
	raw := kg.newTmp()
	kg.w.line(fmt.Sprintf("int64_t %s = (int64_t)%s + ((int64_t)%s < 0 ? %s : 0);", raw, v, v, n))
	nu := n + "ULL"
	if a.Size != nil {
		nu = "(uint64_t)" + n
	}
	kg.w.line(fmt.Sprintf("ptgo_oob |= (uint64_t)%s >= %s;", raw, nu))
	name := kg.newTmp()
	kg.w.line(fmt.Sprintf("int64_t %s = (uint64_t)%s < %s ? %s : 0;", name, raw, nu, raw))
	if sc.inds == nil {
		sc.inds = map[string]string{}
	}
	sc.inds[a.key] = name
	return name
}

// ColumnBlock is how many output elements a column reduction accumulates at once.
const ColumnBlock = 256

// columnOK reports a reduction whose last pointwise loop is contiguous in every load while its
// reduction loops are not (a sum over a middle or leading dim, a channels-last image's sum over
// H and W): it then accumulates a block of outputs at once, vectorized along the contiguous
// loop, instead of walking strided columns.
func (kg *kgen) columnOK(n *knode) bool {
	if len(n.inner) == 0 || len(n.red) == 0 {
		return false
	}
	j, r := n.inner[len(n.inner)-1], n.red[len(n.red)-1]
	return columnAccess(kg.exprsOf(n), j, r) && est(kg.vars[j].size) >= 8
}

func (kg *kgen) emitColumnReduction(n *knode, spec reduceSpec, sc *scope, parallel bool) {
	if pre := n.inner[:len(n.inner)-1]; len(pre) > 0 {
		// the member's other output loops run around the column blocks (a channels-last
		// [N, C, H, W] summed over H, W per (n, c): blocks of C per n), parallel over them
		pragmas := make([]string, len(pre))
		if parallel {
			pragmas[0] = kg.pragma("parallel for", len(pre), "")
		}
		kg.loops(pre, pragmas, func() { kg.emitColumnBlocks(n, spec, sc.child(), false) })
		return
	}
	kg.emitColumnBlocks(n, spec, sc, parallel)
}

// emitColumnBlocks is emitColumnReduction's loop over blocks of the member's last output loop.
func (kg *kgen) emitColumnBlocks(n *knode, spec reduceSpec, sc *scope, parallel bool) {
	w := kg.w
	name := kg.bufName(n.kn.Buf)
	j := kg.vars[n.inner[len(n.inner)-1]]
	blk := int64(ColumnBlock)
	if k, ok := j.size.IsConst(); ok {
		blk = min(blk, k)
	}
	jn := sizeC(j.size)
	acc, nan := "acc_"+name, "nan_"+name
	w.line("{")
	w.in()
	if parallel {
		w.line(kg.pragma("parallel for", 0, ""))
	}
	w.line(fmt.Sprintf("for (int64_t jb = 0; jb < %s; jb += %d) {", jn, blk))
	w.in()
	w.line(fmt.Sprintf("const int64_t jend = jb + %d < %s ? jb + %d : %s;", blk, jn, blk, jn))
	w.line(fmt.Sprintf("%s %s[%d];", spec.acc, acc, blk))
	if spec.nan {
		w.line(fmt.Sprintf("int %s[%d];", nan, blk))
	}
	w.line(fmt.Sprintf("for (int64_t jj = 0; jj < %d; jj++) {", blk))
	w.in()
	w.line(fmt.Sprintf("%s[jj] = %s;", acc, spec.init))
	if spec.nan {
		w.line(nan + "[jj] = 0;")
	}
	w.out()
	w.line("}")
	at := acc + "[" + j.name + " - jb]"
	nat := nan + "[" + j.name + " - jb]"
	kg.loops(n.red, make([]string, len(n.red)), func() {
		if p := kg.pragma("simd", 0, ""); p != "" {
			w.line(p)
		}
		w.line(fmt.Sprintf("for (int64_t %s = jb; %s < jend; %s++) {", j.name, j.name, j.name))
		w.in()
		s := sc.child()
		t := kg.val(n.body, s)
		w.line(expand(spec.update, "%a", at, "%t", t, "%n", nat))
		w.out()
		w.line("}")
	})
	w.line(fmt.Sprintf("for (int64_t %s = jb; %s < jend; %s++) {", j.name, j.name, j.name))
	w.in()
	final := expand(spec.final, "%a", at, "%n", nat)
	kg.finish(n, castFromAcc(spec.acc, final, n.kn.Buf.DType), sc.child())
	w.out()
	w.line("}")
	w.out()
	w.line("}")
	w.out()
	w.line("}")
}

// floatToIntHelpers convert floats to integers the way x86's cvtt instructions (and so eager
// torch on x86) do: out of range or NaN gives the integer indefinite value (INT_MIN).
const floatToIntHelpers = `static inline int64_t ptgo_f2i64(double x) {
    return (x >= -0x1p63 && x < 0x1p63) ? (int64_t)x : INT64_MIN;
}
static inline int32_t ptgo_f2i32(double x) {
    return (x > -0x1p31 - 1.0 && x < 0x1p31) ? (int32_t)x : INT32_MIN;
}
`
