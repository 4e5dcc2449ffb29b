package inductor

import (
	"fmt"
	"slices"
	"strings"

	"ptgo/logs"
	"ptgo/primtorch"
)

// MaxKernelNodes bounds how many stored or local nodes one fused kernel holds.
const MaxKernelNodes = 32

// Fuse is the second fusion pass: it groups the buffers left after Inline into kernels and
// orders kernels and extern calls. A kernel is one loop nest over its Outer ranges; each member
// node runs, inside one outer iteration, over its own inner ranges (pointwise dims beyond Outer,
// then reduction dims). So a reduction fuses with its pointwise prologue (already inlined into
// its body) and its epilogue: softmax over rows is one kernel whose outer loop runs over rows
// and whose members are the max, the exp-sum and the normalizing loop.
//
// A node joins a kernel when (reasons logged on logs.Fusion):
//   - its ranges, size-1 dims dropped, start with the kernel's Outer ranges or are a prefix of
//     them (the kernel's Outer shrinks to them);
//   - it reads the kernel's buffers only at the same outer index (what one outer iteration has
//     computed);
//   - the fused kernel does not need to run both before and after another step (an extern
//     between a producer and a consumer);
//   - the kernel stays under MaxKernelNodes.
//
// Candidates are the kernels that produce the node's inputs (vertical fusion), then the latest
// kernel that reads the same buffers (horizontal fusion). Scans and externs are steps of their
// own. A member whose value is a scalar per outer iteration and that nothing outside the kernel
// reads becomes Local: a C variable, never stored.
func Fuse(g *Graph) *Schedule {
	if s := fuse(g, true); s != nil {
		return s
	}
	logs.Printf(logs.Fusion, "inductor: graph %s: kernels in eager's order of its raising computations and input writes would form a cycle; that order is not kept", g.Name)
	return fuse(g, false)
}

// fuse is Fuse, with eager's order of raises and writes (orderRaises) when raises is set; nil
// when that order leaves kernels no order to run in.
func fuse(g *Graph, raises bool) *Schedule {
	f := &fuser{g: g, groupOf: map[*Buffer]*group{}, users: g.Users(), outputs: g.outputSet()}
	f.orderMutations()
	f.orderEffects()
	f.orderChecks()
	if raises {
		f.orderRaises()
	}
	f.orderedAfter = map[*Buffer][]*Buffer{}
	for p, us := range f.users {
		for _, u := range us {
			if !slices.Contains(u.Def.Reads(), p) {
				f.orderedAfter[u] = append(f.orderedAfter[u], p)
			}
		}
	}
	for _, b := range g.Buffers {
		f.add(b)
	}
	f.retryInPlace()
	return f.schedule(!raises)
}

// retryInPlace offers each copy_ into a graph input that was left a kernel of its own to the
// kernels again, now that every buffer is placed: a copy that came before a reader of its
// storage's old value could not join the kernel that reader later joined (SGD's parameter copy,
// before the momentum buffer's, which reads the old parameter for weight decay).
func (f *fuser) retryInPlace() {
	for _, own := range slices.Clone(f.groups) {
		if own.kind != "kernel" || len(own.nodes) != 1 || own.nodes[0].Mutates == nil {
			continue
		}
		b := own.nodes[0]
		if _, pw := b.Def.(*Pointwise); !pw {
			continue
		}
		for _, gr := range f.candidatesInPlace(b) {
			if gr == own {
				continue
			}
			if why := f.canFuseInPlace(gr, b); why != "" {
				logs.Printf(logs.Fusion, "not fusing %s into %s: %s", b.Name, groupText(gr), why)
				continue
			}
			logs.Printf(logs.Fusion, "fusing %s into %s: it writes graph input %s in place, element by element", b.Name, groupText(gr), b.Mutates.Name)
			gr.nodes = append(gr.nodes, b)
			gr.sealed = true
			f.groupOf[b] = gr
			f.groups = slices.DeleteFunc(f.groups, func(x *group) bool { return x == own })
			break
		}
	}
}

// Schedule is a fused graph: kernels and extern calls in execution order.
type Schedule struct {
	Graph *Graph
	Steps []Step
}

// Step is a *Kernel or an *ExternStep.
type Step interface{ stepName() string }

// ExternStep runs one extern call.
type ExternStep struct{ Call *Extern }

func (e *ExternStep) stepName() string { return "extern " + e.Call.Target }

// Kernel is one generated C function: a loop nest over Outer with its member nodes inside.
type Kernel struct {
	Name  string
	Outer []Sym
	Nodes []*KernelNode
}

func (k *Kernel) stepName() string { return k.Name }

// KernelNode is a member of a kernel.
type KernelNode struct {
	Buf *Buffer
	// Local: the value is kept in a C variable for the outer iteration and never stored.
	Local bool
}

// group is a kernel (or a step of its own) being built.
type group struct {
	id    int
	kind  string // "kernel", "scan", "extern", "alias"
	outer []Sym
	nodes []*Buffer
	ext   *Extern
	// sealed groups take no other node (a copy_ into a graph input runs alone, after every
	// reader of that input)
	sealed bool
}

type fuser struct {
	g       *Graph
	groups  []*group
	groupOf map[*Buffer]*group
	users   map[*Buffer][]*Buffer
	outputs map[*Buffer]bool
	// orderedAfter lists, for a buffer, the buffers an ordering edge (not a read) puts before
	// it (orderMutations, orderEffects, orderChecks, orderRaises)
	orderedAfter map[*Buffer][]*Buffer
}

// orderMutations makes every reader of a storage a copy_ writes run before the copy_ (an
// ordering edge in the users map).
func (f *fuser) orderMutations() {
	for _, m := range f.g.Buffers {
		if _, copyInto := m.Def.(*Pointwise); m.Mutates == nil || !copyInto {
			continue // scatters are ordered by their reads
		}
		dst := m.Mutates.Storage()
		for _, r := range f.g.Buffers {
			if r == m {
				continue
			}
			for _, in := range r.Def.Reads() {
				if in.Storage() == dst {
					f.users[r] = append(f.users[r], m)
					break
				}
			}
		}
	}
}

// orderEffects keeps the extern calls that draw random numbers or write (torch's random
// generator, an argument) in program order: each gets an ordering edge to the next. Without
// it a kernel fused across two of them could move the later one first (rand_like before a
// normal whose input a kernel after rand_like also computes): torch's generator, and the
// values drawn, would differ from eager's.
func (f *fuser) orderEffects() {
	var prev *Buffer
	for _, b := range f.g.Buffers {
		e, ok := b.Def.(*Extern)
		if !ok || e.Outs[0] != b || e.Effects&(primtorch.EffectRandom|primtorch.EffectWrites) == 0 {
			continue
		}
		if prev != nil {
			f.users[prev] = append(f.users[prev], b)
		}
		prev = b
	}
}

// orderChecks runs every check (a prims.check's buffer) before every write into a graph input
// and every extern call that draws random numbers or writes: a check that fails makes the
// runtime run the captured graph with torch (StatusCheck), which is right only when the failed
// run changed nothing the user can see. Decompositions emit checks only over values that
// depend on no such write or draw (decomp/pyfloat.go), so the edges make no cycle.
func (f *fuser) orderChecks() {
	var checks, effects []*Buffer
	for _, b := range f.g.Buffers {
		if isCheck(b) {
			checks = append(checks, b)
			continue
		}
		e, ext := b.Def.(*Extern)
		if b.Mutates != nil {
			// a write into a tensor the graph computed (x.unsqueeze(0).mul_(2) on its own
			// result) is no effect: a check may read what it wrote (fuzz seed 29707: an
			// embedding of the written values; the edge closed a cycle)
			if _, in := b.Mutates.Def.(*InputNode); in {
				effects = append(effects, b)
			}
			continue
		}
		if ext && e.Effects&(primtorch.EffectRandom|primtorch.EffectWrites) != 0 {
			effects = append(effects, b)
		}
	}
	for _, c := range checks {
		for _, e := range effects {
			if !slices.Contains(f.users[c], e) {
				f.users[c] = append(f.users[c], e)
			}
		}
	}
}

// orderRaises keeps each computation that may raise (an index out of range, an integer
// division by zero: Buffer.Raises) and each write into a graph input, random draw or writing
// extern call in eager's order: a write eager made before the raising op is made before the
// kernel that raises, one it made after comes after it, so the exception leaves the inputs
// and the generator as eager leaves them (fuzz seed 12528: x0.mul_(x0) then a floor division
// by zero; the division's kernel ran first and x0 kept its old values). An edge that would
// close a cycle (a reader of an input's old value that also computes a later raising op) is
// left out.
func (f *fuser) orderRaises() {
	var raises, effects []*Buffer
	pos := map[*Buffer]int{}
	for _, b := range f.g.Buffers {
		if _, ext := b.Def.(*Extern); b.Raises && !ext {
			raises = append(raises, b) // a kernel's index or divisor check (torch's calls are not reordered here)
		}
		if b.Mutates != nil {
			if _, in := b.Mutates.Def.(*InputNode); in {
				effects = append(effects, b)
				pos[b] = b.writtenAt
			}
			continue
		}
		if e, ext := b.Def.(*Extern); ext && e.Outs[0] == b && e.Effects&(primtorch.EffectRandom|primtorch.EffectWrites) != 0 {
			effects = append(effects, b)
			pos[b] = b.index
		}
	}
	if len(raises) == 0 || len(effects) == 0 {
		return
	}
	for _, r := range raises {
		for _, e := range effects {
			if r == e {
				continue
			}
			// a write after every raise r computes comes after r (a write between two: Inline
			// keeps one kernel from holding both)
			first, then := r, e
			if pos[e] < r.raisesAt {
				first, then = e, r
			}
			if slices.Contains(f.users[first], then) || f.reaches(then, first) {
				continue
			}
			f.users[first] = append(f.users[first], then)
			logs.Debugf(logs.Fusion, "inductor: %s runs before %s (eager's order of a raise and a write)", first.Name, then.Name)
		}
	}
}

// reaches reports whether to must come after from through the users edges.
func (f *fuser) reaches(from, to *Buffer) bool {
	seen := map[*Buffer]bool{}
	stack := []*Buffer{from}
	for len(stack) > 0 {
		b := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if b == to {
			return true
		}
		if seen[b] {
			continue
		}
		seen[b] = true
		stack = append(stack, f.users[b]...)
	}
	return false
}

// isCheck reports a buffer computing a prims.check.
func isCheck(b *Buffer) bool {
	p, ok := b.Def.(*Pointwise)
	return ok && p.Body != nil && p.Body.Kind == VOp && p.Body.Op == "check"
}

// squeezed returns the sizes of a node's (output) ranges without size-1 dims, and for each the
// position in the ranges.
func squeezed(ranges []Sym) ([]Sym, []int) {
	var sizes []Sym
	var pos []int
	for k, s := range ranges {
		if !isOne(s) {
			sizes = append(sizes, s)
			pos = append(pos, k)
		}
	}
	return sizes, pos
}

func rangesOf(n Node) []Sym {
	switch n := n.(type) {
	case *Pointwise:
		return n.Ranges
	case *Reduction:
		return n.Ranges
	case *Scan:
		return n.Ranges
	case *ScatterNode:
		return n.Ranges
	}
	return nil
}

func (f *fuser) newGroup(kind string, b *Buffer) *group {
	gr := &group{id: len(f.groups), kind: kind}
	f.groups = append(f.groups, gr)
	if b != nil {
		gr.nodes = []*Buffer{b}
		f.groupOf[b] = gr
	}
	return gr
}

func (f *fuser) add(b *Buffer) {
	switch d := b.Def.(type) {
	case *InputNode:
		return
	case *AliasNode:
		f.newGroup("alias", b)
		return
	case *Extern:
		if d.Primary() == b {
			gr := f.newGroup("extern", b)
			gr.ext = d
		} else {
			f.groupOf[b] = f.groupOf[d.Primary()]
		}
		return
	case *Scan:
		f.newGroup("scan", b)
		return
	}
	sq, _ := squeezed(rangesOf(b.Def))
	if b.Mutates != nil {
		if _, pw := b.Def.(*Pointwise); pw {
			for _, gr := range f.candidatesInPlace(b) {
				why := f.canFuseInPlace(gr, b)
				if why != "" {
					logs.Printf(logs.Fusion, "not fusing %s into %s: %s", b.Name, groupText(gr), why)
					continue
				}
				logs.Printf(logs.Fusion, "fusing %s into %s: it writes graph input %s in place, element by element", b.Name, groupText(gr), b.Mutates.Name)
				gr.nodes = append(gr.nodes, b)
				gr.sealed = true
				f.groupOf[b] = gr
				return
			}
		}
		gr := f.newGroup("kernel", b)
		gr.outer, gr.sealed = sq, true
		if _, ok := b.Def.(*ScatterNode); ok {
			logs.Printf(logs.Fusion, "not fusing %s: a scatter into %s runs alone", b.Name, b.Mutates.Name)
		} else {
			logs.Printf(logs.Fusion, "not fusing %s: it writes graph input %s, after everything that reads it", b.Name, b.Mutates.Name)
		}
		return
	}
	for _, gr := range f.candidates(b) {
		outer, why := f.canFuse(gr, b)
		if why != "" {
			logs.Printf(logs.Fusion, "not fusing %s into %s: %s", b.Name, groupText(gr), why)
			continue
		}
		logs.Printf(logs.Fusion, "fusing %s into %s: %s", b.Name, groupText(gr), fuseReason(gr, b, outer))
		gr.outer = outer
		gr.nodes = append(gr.nodes, b)
		f.groupOf[b] = gr
		return
	}
	gr := f.newGroup("kernel", b)
	gr.outer = sq
	if r, ok := b.Def.(*Reduction); ok && columnFriendly(r) && len(sq) > 0 {
		// keep the contiguous output dim as a loop of the reduction, so the code generator
		// accumulates along it (see columnOK)
		gr.outer = sq[:len(sq)-1]
		logs.Printf(logs.Fusion, "%s: reducing %s with output dim %s as an inner loop (it is contiguous, the reduced dims are not)", b.Name, symsText(r.ReduceRanges), sq[len(sq)-1])
	}
}

// columnFriendly reports a reduction whose last non-trivial output dim is read contiguously
// while its last reduced dim is strided.
func columnFriendly(r *Reduction) bool {
	sq, pos := squeezed(r.Ranges)
	rsq, rpos := squeezed(r.ReduceRanges)
	if len(sq) == 0 || len(rsq) == 0 || est(sq[len(sq)-1]) < 8 {
		return false
	}
	b := boundsOf(append(append([]Sym(nil), r.Ranges...), r.ReduceRanges...))
	var idx []Expr
	for _, l := range loadsOf(r.Body) {
		idx = append(idx, flatten(l.Index, l.Buf.Layout.Strides, l.Buf.Layout.Offset, b))
	}
	return columnAccess(idx, pos[len(pos)-1], len(r.Ranges)+rpos[len(rpos)-1])
}

// columnAccess reports whether the flat load indices idx read loop j contiguously (a
// coefficient of 0 or 1, nowhere else) and loop r strided in at least one of them: a constant
// coefficient other than 0 and 1, a symbolic one (a symbolic layout's stride, x.sum(0) over
// [s0, s1]), or inside an indirect, division or modulo atom (the rows an embedding's indices
// pick, summed over a sequence). Such a reduction over r accumulates a block of outputs along j
// at once (the fuser keeps j a loop of the kernel, the code generator emits the column
// reduction), reading rows, instead of walking strided columns one output at a time. Either
// order adds each output's terms in the same order: this is a choice of speed only.
func columnAccess(idx []Expr, j, r int) bool {
	strided := false
	for _, e := range idx {
		if e.UsesVarNested(j) {
			return false
		}
		if c := e.Coef(j); c != 0 && c != 1 {
			return false
		}
		if c := e.Coef(r); (c != 0 && c != 1) || e.SymbolicCoef(r) || e.usesVarInside(r) {
			strided = true
		}
	}
	return strided
}

func groupText(gr *group) string {
	names := make([]string, len(gr.nodes))
	for i, b := range gr.nodes {
		names[i] = b.Name
	}
	return strings.Join(names, "+")
}

func fuseReason(gr *group, b *Buffer, outer []Sym) string {
	if r, ok := b.Def.(*Reduction); ok {
		return fmt.Sprintf("%s over %s per outer index %s", r.Kind, symsText(r.ReduceRanges), symsText(outer))
	}
	sq, _ := squeezed(rangesOf(b.Def))
	if symsEqual(sq, outer) && symsEqual(gr.outer, outer) {
		return "same ranges " + symsText(outer)
	}
	return fmt.Sprintf("ranges %s split as outer %s", symsText(sq), symsText(outer))
}

// candidates are the kernel groups b could join, most recent first: those producing b's inputs,
// then the latest kernel reading one of b's inputs.
func (f *fuser) candidates(b *Buffer) []*group {
	var out []*group
	seen := map[*group]bool{}
	reads := b.Def.Reads()
	for i := len(f.groups) - 1; i >= 0; i-- {
		gr := f.groups[i]
		if gr.kind != "kernel" || gr.sealed {
			continue
		}
		for _, r := range reads {
			if f.groupOf[r] == gr && !seen[gr] {
				seen[gr] = true
				out = append(out, gr)
			}
		}
	}
	for i := len(f.groups) - 1; i >= 0 && len(out) == 0; i-- {
		gr := f.groups[i]
		if gr.kind != "kernel" || gr.sealed {
			continue
		}
		if sharesReads(gr, reads) {
			out = append(out, gr)
		}
	}
	return out
}

func sharesReads(gr *group, reads []*Buffer) bool {
	for _, m := range gr.nodes {
		for _, r := range m.Def.Reads() {
			if slices.Contains(reads, r) {
				return true
			}
		}
	}
	return false
}

// canFuse returns the kernel's new outer ranges if b can join gr, else a reason.
func (f *fuser) canFuse(gr *group, b *Buffer) ([]Sym, string) {
	if len(gr.nodes) >= MaxKernelNodes {
		return nil, fmt.Sprintf("the kernel has %d nodes already (MaxKernelNodes)", len(gr.nodes))
	}
	sq, pos := squeezed(rangesOf(b.Def))
	var outer []Sym
	switch {
	case hasPrefix(sq, gr.outer):
		outer = gr.outer
	case hasPrefix(gr.outer, sq):
		outer = sq
	default:
		return nil, fmt.Sprintf("ranges differ %s vs %s", symsText(gr.outer), symsText(sq))
	}
	// b must read the kernel's buffers at its own outer index
	for _, l := range loadsOf(bodyOf(b.Def)) {
		if f.groupOf[l.Buf] != gr {
			continue
		}
		for _, e := range l.Index {
			if e.hasInd() {
				// (along a dim of size 1, which the outer index leaves out: kept in a C
				// variable, the buffer would be read without evaluating the index, whose range
				// check must run)
				return nil, fmt.Sprintf("it reads %s at an indirect index (%s)", l.Buf.Name, e)
			}
		}
		_, ppos := squeezed(rangesOf(l.Buf.Def))
		for j := range outer {
			if !l.Index[ppos[j]].IsVar(pos[j]) {
				return nil, fmt.Sprintf("it reads %s at another outer index (%s)", l.Buf.Name, l.Index[ppos[j]])
			}
		}
	}
	if r, ok := b.Def.(*Reduction); ok && len(outer) == len(sq) && len(sq) > 0 && columnFriendly(r) {
		// its contiguous output dim would be an outer loop, each output walking a strided
		// column (a channels-last BatchNorm's sums over N, H, W per channel, joined to the
		// kernel computing its rstd per channel: 3.6 ms where the column reduction takes 0.2)
		return nil, fmt.Sprintf("it reduces strided columns of a contiguous output dim %s, which must stay an inner loop", sq[len(sq)-1])
	}
	for _, m := range append(slices.Clone(gr.nodes), b) {
		if walksAgainstMemory(m, len(outer)) {
			return nil, fmt.Sprintf("under the outer loops %s %s's stores would run against its memory order", symsText(outer), m.Name)
		}
	}
	if f.wouldCycle(gr, b) {
		return nil, "another step runs between them (fusing would make a cycle)"
	}
	return outer, ""
}

// walksAgainstMemory reports whether running m with the first `outer` of its non-trivial dims as
// the kernel's outer loops would walk its stored elements against their memory order: an outer
// loop moving the store by a smaller stride than a loop inside it. A channels-last
// [N, C, H, W] under the outer loops [N, C] of a per-channel value (an adaptive average pool's
// gradient, a ReLU's mask) stored with a stride of C per element: 4.8 ms for 32×64×16×16 where
// its own kernel, in memory order (orderLoops), takes 0.2.
func walksAgainstMemory(m *Buffer, outer int) bool {
	ranges := rangesOf(m.Def)
	sq, pos := squeezed(ranges)
	if outer == 0 || outer >= len(sq) || len(m.Layout.Strides) != len(ranges) {
		return false
	}
	if _, scatter := m.Def.(*ScatterNode); scatter {
		return false
	}
	st := flatten(indexVars(ranges, 0), m.Layout.Strides, m.Layout.Offset, boundsOf(ranges))
	minOuter := int64(-1)
	for _, p := range pos[:outer] {
		if s := loopStride(st, p); s > 0 && (minOuter < 0 || s < minOuter) {
			minOuter = s
		}
	}
	for _, p := range pos[outer:] {
		if loopStride(st, p) > minOuter && minOuter >= 0 {
			return true
		}
	}
	return false
}

// candidatesInPlace are the kernels a copy_ into a graph input could join, most recent first:
// those producing its inputs, then the latest kernel (sealed ones too) reading one of them.
func (f *fuser) candidatesInPlace(b *Buffer) []*group {
	var out []*group
	reads := b.Def.Reads()
	for i := len(f.groups) - 1; i >= 0; i-- {
		gr := f.groups[i]
		if gr.kind != "kernel" {
			continue
		}
		for _, r := range reads {
			if f.groupOf[r] == gr {
				out = append(out, gr)
				break
			}
		}
	}
	for i := len(f.groups) - 1; i >= 0 && len(out) == 0; i-- {
		if gr := f.groups[i]; gr.kind == "kernel" && sharesReads(gr, reads) {
			out = append(out, gr)
		}
	}
	return out
}

// canFuseInPlace says why the pointwise copy_ b into a graph input cannot join kernel gr ("" if
// it can). The kernel then updates its inputs in place, element by element, the way an
// optimizer step does (SGD with momentum: the buffer and the parameter in one pass instead of a
// temporary, a copy into the buffer and a copy into the parameter). That is right when every
// member runs over the same ranges and every load of a storage some member writes reads the
// element that member writes in the same iteration: its old value in a member before the writer
// (each iteration loads before it stores), or the writer's new value. Every other reader of the
// storage runs before the kernel (the ordering edges of orderMutations), which fusing must not
// turn into a cycle.
func (f *fuser) canFuseInPlace(gr *group, b *Buffer) string {
	if len(gr.nodes) >= MaxKernelNodes {
		return fmt.Sprintf("the kernel has %d nodes already (MaxKernelNodes)", len(gr.nodes))
	}
	ranges := rangesOf(b.Def)
	members := append(slices.Clone(gr.nodes), b)
	for _, m := range members {
		if _, pw := m.Def.(*Pointwise); !pw || !symsEqual(rangesOf(m.Def), ranges) {
			return "an in-place write fuses only with pointwise nodes over the same ranges"
		}
	}
	bounds := boundsOf(ranges)
	ident := make([]Expr, len(ranges))
	for k := range ident {
		ident[k] = Var(k)
	}
	writer := map[*Buffer]int{} // storage -> position of the member writing it
	for pos, m := range members {
		if m.Mutates == nil {
			continue
		}
		if _, twice := writer[m.Storage()]; twice {
			return "two members would write " + m.Mutates.Name
		}
		writer[m.Storage()] = pos
	}
	for pos, m := range members {
		for _, l := range loadsOf(bodyOf(m.Def)) {
			wpos, written := writer[l.Buf.Storage()]
			if !written {
				continue
			}
			w := members[wpos]
			if l.Buf != w && pos > wpos {
				return fmt.Sprintf("%s reads %s's old value after the write", m.Name, w.Mutates.Name)
			}
			for _, e := range l.Index {
				if e.hasInd() {
					return fmt.Sprintf("%s reads %s at an indirect index", m.Name, w.Mutates.Name)
				}
			}
			load := flatten(l.Index, l.Buf.Layout.Strides, l.Buf.Layout.Offset, bounds)
			store := flatten(ident, w.Layout.Strides, w.Layout.Offset, bounds)
			if !load.Equal(store) {
				return fmt.Sprintf("%s reads %s at another element than the one written (%s, written at %s)", m.Name, w.Mutates.Name, load, store)
			}
		}
	}
	if f.wouldCycle(gr, b) {
		return "something that must run before it depends on the kernel (fusing would make a cycle)"
	}
	return ""
}

func hasPrefix(a, p []Sym) bool { return len(a) >= len(p) && symsEqual(a[:len(p)], p) }

// wouldCycle reports whether b joining gr would leave the steps no order to run in: whether a
// path of reads and ordering edges (orderMutations, orderEffects, orderChecks, orderRaises)
// leads from gr or b through some other step back to gr or b. Steps are the groups placed so
// far (a path entering any member leaves from every member) and single buffers not placed yet,
// whose edges count too: an ordering edge may point back to a buffer earlier in the graph (a
// check runs before a draw that comes first in program order), so a fusion that looks safe
// against the placed groups alone can close a cycle through buffers placed later (fuzz seeds
// 29707, 32953, 38991). Each fusion keeping the contracted graph acyclic keeps the whole
// schedule acyclic: this is the only cycle test the fuser makes. An edge from b to a member is
// refused too: members run in the order they joined.
func (f *fuser) wouldCycle(gr *group, b *Buffer) bool {
	inside := func(x *Buffer) bool { return x == b || f.groupOf[x] == gr }
	seen := map[*Buffer]bool{}
	var stack []*Buffer
	push := func(x *Buffer) {
		if x != nil && !seen[x] {
			seen[x] = true
			stack = append(stack, x)
		}
	}
	for _, u := range f.users[b] {
		if u != b && f.groupOf[u] == gr {
			// an ordering edge puts b before a member (a check before a write the kernel
			// makes), but a joining buffer runs after the members already there
			return true
		}
	}
	for _, m := range append(slices.Clone(gr.nodes), b) {
		for _, u := range f.users[m] {
			if !inside(u) {
				push(u)
			}
		}
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if inside(x) {
			return true
		}
		for _, u := range f.users[x] {
			push(u)
		}
		if xg := f.groupOf[x]; xg != nil {
			for _, sib := range xg.nodes {
				push(sib)
			}
			if xg.ext != nil {
				for _, o := range xg.ext.Outs {
					push(o)
				}
			}
		}
	}
	return false
}

// successors are the groups reading a buffer of gr.
func (f *fuser) successors(gr *group) []*group {
	var out []*group
	seen := map[*group]bool{}
	bufs := gr.nodes
	if gr.ext != nil {
		bufs = gr.ext.Outs
	}
	for _, b := range bufs {
		if b == nil {
			continue // a None result
		}
		for _, u := range f.users[b] {
			if ug := f.groupOf[u]; ug != nil && ug != gr && !seen[ug] {
				seen[ug] = true
				out = append(out, ug)
			}
		}
	}
	return out
}

// schedule orders the groups (a topological order, earliest buffer first) and builds the steps.
func (f *fuser) schedule(strict bool) *Schedule {
	indeg := map[*group]int{}
	for _, gr := range f.groups {
		for _, s := range f.successors(gr) {
			indeg[s]++
		}
	}
	var ready []*group
	for _, gr := range f.groups {
		if indeg[gr] == 0 {
			ready = append(ready, gr)
		}
	}
	s := &Schedule{Graph: f.g}
	kernels, placed := 0, 0
	for len(ready) > 0 {
		slices.SortFunc(ready, func(a, b *group) int { return a.nodes[0].index - b.nodes[0].index })
		gr := ready[0]
		ready = ready[1:]
		placed++
		for _, succ := range f.successors(gr) {
			indeg[succ]--
			if indeg[succ] == 0 {
				ready = append(ready, succ)
			}
		}
		switch gr.kind {
		case "alias":
			continue
		case "extern":
			s.Steps = append(s.Steps, &ExternStep{Call: gr.ext})
			continue
		}
		k := &Kernel{Outer: gr.outer}
		for _, b := range gr.nodes {
			k.Nodes = append(k.Nodes, &KernelNode{Buf: b, Local: f.isLocal(gr, b)})
		}
		k.Name = kernelName(k, kernels)
		kernels++
		s.Steps = append(s.Steps, k)
	}
	if placed != len(f.groups) {
		if !strict {
			return nil
		}
		// A cycle of ordering edges (copy_s into inputs that each must run first): dropping
		// the groups on it would silently skip their writes.
		panic(fmt.Sprintf("ptgo BUG: inductor: graph %s: %d of %d kernel groups have no order to run in", f.g.Name, len(f.groups)-placed, len(f.groups)))
	}
	return s
}

// isLocal reports whether b can live in a C variable: one value per outer iteration, read only
// inside its kernel, not a graph output.
func (f *fuser) isLocal(gr *group, b *Buffer) bool {
	if gr.kind != "kernel" || f.outputs[b] || b.Mutates != nil {
		return false
	}
	sq, _ := squeezed(rangesOf(b.Def))
	if len(sq) != len(gr.outer) {
		return false
	}
	for _, u := range f.users[b] {
		if f.groupOf[u] != gr {
			return false
		}
	}
	return true
}

// kernelName is cpp_fused_<ops>_<index>, the ops being the prims targets the kernel computes.
func kernelName(k *Kernel, index int) string {
	var ops []string
	for _, n := range k.Nodes {
		ops = mergeNames(ops, n.Buf.Targets)
	}
	var short []string
	for _, op := range ops {
		op = strings.TrimPrefix(op, "prims.")
		op = strings.TrimPrefix(op, "operator.")
		if op == "convert_element_type" {
			op = "convert"
		}
		op = strings.TrimSuffix(op, "_")
		short = append(short, op)
	}
	if len(short) > 6 {
		short = short[:6]
	}
	if len(short) == 0 {
		short = []string{"copy"}
	}
	if k.Nodes[0].Buf.Def.kindName() == "scan" {
		return fmt.Sprintf("cpp_%s_%d", strings.Join(short, "_"), index)
	}
	return fmt.Sprintf("cpp_fused_%s_%d", strings.Join(short, "_"), index)
}

// String prints the schedule: each step, a kernel's members with their roles.
func (s *Schedule) String() string {
	var b strings.Builder
	b.WriteString("schedule " + s.Graph.Name + ":\n")
	for _, st := range s.Steps {
		switch st := st.(type) {
		case *ExternStep:
			b.WriteString("  " + bufNames(st.Call.Outs) + " = " + externText(st.Call) + "\n")
		case *Kernel:
			fmt.Fprintf(&b, "  kernel %s outer=%s\n", st.Name, symsText(st.Outer))
			for _, n := range st.Nodes {
				role := "stored"
				if n.Local {
					role = "local"
				}
				var w strings.Builder
				writeBuffer(&w, n.Buf, "")
				lines := strings.Split(strings.TrimRight(w.String(), "\n"), "\n")
				fmt.Fprintf(&b, "    [%s] %s\n", role, lines[0])
				for _, l := range lines[1:] {
					b.WriteString("      " + l + "\n")
				}
			}
		}
	}
	return b.String()
}
