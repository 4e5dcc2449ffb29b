package inductor

import (
	"fmt"

	"ptgo/logs"
)

// InlineMaxRecompute bounds the extra work inlining may cause: a pointwise buffer is inlined
// into its readers when cost(body)·(R-1) ≤ InlineMaxRecompute, where R is how many times its
// elements are computed once inlined (1 for a single reader at the same size; 2 for two
// readers; the broadcast factor for a reader that reads it expanded). A stored pointwise buffer
// costs a write and a read per element; recomputing a few cheap ops is cheaper.
const InlineMaxRecompute = 16

// Inline is the first fusion pass (vertical fusion of pointwise chains): it substitutes the body
// of each pointwise buffer into the loads of its readers when that is cheap, and drops buffers
// nothing reads. Reductions, scans and externs are never recomputed; buffers that are graph
// outputs, read by externs or aliased stay stored. Decisions are logged on logs.Fusion. It edits
// g in place and returns the names of the inlined buffers.
func Inline(g *Graph) []string {
	outputs := g.outputSet()
	users := g.Users()
	writes := inputWrites(g)
	var inlined []string
	removed := map[*Buffer]bool{}
	for _, p := range g.Buffers {
		pw, ok := p.Def.(*Pointwise)
		if !ok || p.Mutates != nil {
			continue
		}
		us := users[p]
		live := us[:0:0]
		for _, u := range us {
			if !removed[u] {
				live = append(live, u)
			}
		}
		us = live
		if len(us) == 0 && !outputs[p] && !p.Raises {
			removed[p] = true
			logs.Debugf(logs.Fusion, "inductor: dropping %s: nothing reads it", p.Name)
			continue
		}
		if why := mustStore(p, us, outputs); why != "" {
			logs.Printf(logs.Fusion, "not fusing %s into its readers: %s", p.Name, why)
			continue
		}
		work, bad := recompute(p, us)
		if bad == "" && p.Raises && (len(us) != 1 || work != 1 || !iterNumel(us[0].Def).Equal(p.Numel())) {
			bad = "computing it may raise, and its readers would not compute every element once"
		}
		c := cost(pw.Body)
		if bad == "" && work >= 2 && hasMasked(pw.Body) {
			// Each reader would repeat the bounds checks per load, and masked loads under strided
			// readers keep gcc from vectorizing (a padded 3×3 stride-2 max pool: 3.8 ms inlined,
			// 0.6 ms with the padded input stored).
			bad = fmt.Sprintf("it has masked (bounds-checked) loads and would be computed %.3g times", work)
		}
		if bad == "" && float64(c)*(work-1) > InlineMaxRecompute {
			bad = fmt.Sprintf("recomputing it costs %d ops x %.3g times", c, work)
		}
		if bad == "" {
			bad = raiseAcrossWrite(p, us, writes)
		}
		if bad == "" {
			bad = mutationHazard(g, p, us)
		}
		if bad == "" {
			bad = copyCycle(g, p, us)
		}
		if bad == "" {
			bad = lostIndexCheck(p, pw, us)
		}
		if bad != "" {
			logs.Printf(logs.Fusion, "not fusing %s into %s: %s", p.Name, bufNames(us), bad)
			continue
		}
		logs.Printf(logs.Fusion, "fusing %s into %s: pointwise, inlined (cost %d, computed %.3gx)", p.Name, bufNames(us), c, work)
		for _, u := range us {
			inlineInto(g, p, u)
		}
		removed[p] = true
		inlined = append(inlined, p.Name)
	}
	kept := g.Buffers[:0]
	for _, b := range g.Buffers {
		if !removed[b] {
			kept = append(kept, b)
		}
	}
	g.Buffers = kept
	for i, b := range g.Buffers {
		b.index = i
	}
	return inlined
}

// mustStore says why p cannot be inlined ("" when it can).
func mustStore(p *Buffer, users []*Buffer, outputs map[*Buffer]bool) string {
	if outputs[p] {
		return "it is a graph output"
	}
	for _, u := range users {
		if u.Mutates == p {
			return u.Name + " writes into it"
		}
		switch u.Def.(type) {
		case *Extern:
			return "extern " + u.Name + " reads it"
		case *AliasNode:
			return u.Name + " is a view of its storage"
		}
	}
	return ""
}

// recompute returns how many times p's elements are computed once inlined into users (total
// iterations of the loads of p, over p's element count).
func recompute(p *Buffer, users []*Buffer) (float64, string) {
	n := float64(max(est(p.Numel()), 1))
	total := 0.0
	for _, u := range users {
		body := bodyOf(u.Def)
		if body == nil {
			return 0, "reader " + u.Name + " has no loop body"
		}
		iters := float64(est(iterNumel(u.Def)))
		roots := []*Value{body}
		if sc, ok := u.Def.(*ScatterNode); ok {
			roots = sc.roots()
		}
		for _, l := range loadsOf(roots...) {
			if l.Buf == p {
				total += iters
			}
		}
	}
	return total / n, ""
}

// iterNumel is the number of points a node's body is evaluated at.
func iterNumel(n Node) Sym {
	switch n := n.(type) {
	case *Pointwise:
		return symNumel(n.Ranges)
	case *Reduction:
		return symNumel(n.Ranges).Mul(symNumel(n.ReduceRanges))
	case *Scan:
		return symNumel(n.Ranges)
	case *ScatterNode:
		return symNumel(n.Ranges)
	}
	return symc(0)
}

// nodeBounds are the variable ranges of a node's body.
func nodeBounds(n Node) Bounds {
	switch n := n.(type) {
	case *Pointwise:
		return boundsOf(n.Ranges)
	case *Reduction:
		return boundsOf(append(append([]Sym(nil), n.Ranges...), n.ReduceRanges...))
	case *Scan:
		return boundsOf(n.Ranges)
	case *ScatterNode:
		return boundsOf(n.Ranges)
	}
	return nil
}

// inlineInto replaces u's loads of p by p's body at the loaded index.
func inlineInto(g *Graph, p, u *Buffer) {
	pw := p.Def.(*Pointwise)
	b := nodeBounds(u.Def)
	s := &valueSubst{vs: g.vals, vars: Var, bounds: b}
	s.load = func(v *Value, idx []Expr) *Value {
		if v.Buf != p {
			return nil
		}
		inner := &valueSubst{vs: g.vals, vars: func(k int) Expr { return idx[k] }, bounds: b}
		return inner.value(pw.Body)
	}
	setBody(u.Def, s.value(bodyOf(u.Def)))
	if sc, ok := u.Def.(*ScatterNode); ok {
		for d, e := range sc.Target {
			sc.Target[d] = e.Subst(Var, b, s)
		}
	}
	u.Origins = mergeNames(p.Origins, u.Origins)
	u.Targets = mergeNames(p.Targets, u.Targets)
	if p.Raises { // u computes what may raise now
		if !u.Raises {
			u.Raises, u.raisesAt, u.raisesLast = true, p.raisesAt, p.raisesLast
		} else {
			u.raisesAt, u.raisesLast = min(u.raisesAt, p.raisesAt), max(u.raisesLast, p.raisesLast)
		}
	}
}

// raiseAcrossWrite says why inlining p into us would put a write into a graph input between two
// computations that may raise in one kernel ("" when it would not): eager raises the first
// before the write and the second after it, and one kernel runs before or after the write
// (Fuser.orderRaises), not both.
func raiseAcrossWrite(p *Buffer, us []*Buffer, writes []*Buffer) string {
	if !p.Raises {
		return ""
	}
	for _, u := range us {
		if !u.Raises {
			continue
		}
		lo, hi := min(p.raisesAt, u.raisesAt), max(p.raisesLast, u.raisesLast)
		for _, w := range writes {
			if lo < w.writtenAt && w.writtenAt < hi {
				return fmt.Sprintf("it may raise before %s writes a graph input and %s after", w.Name, u.Name)
			}
		}
	}
	return ""
}

// inputWrites lists the writes into graph inputs (the mutation epilogue's copies).
func inputWrites(g *Graph) []*Buffer {
	var out []*Buffer
	for _, b := range g.Buffers {
		if b.Mutates != nil {
			if _, in := b.Mutates.Def.(*InputNode); in {
				out = append(out, b)
			}
		}
	}
	return out
}

// lostIndexCheck says why inlining p would drop a reader's indirect index check ("" when it
// would not): a reader indexes p indirectly along a dim p's body does not read (a dim of size 1,
// x[tensor([2])] of a [1, 3] sum), so the substituted body would never evaluate the index, and
// an out-of-range one would not raise as eager does.
func lostIndexCheck(p *Buffer, pw *Pointwise, users []*Buffer) string {
	for _, u := range users {
		roots := []*Value{bodyOf(u.Def)}
		if sc, ok := u.Def.(*ScatterNode); ok {
			roots = sc.roots()
		}
		for _, l := range loadsOf(roots...) {
			if l.Buf != p {
				continue
			}
			for k, e := range l.Index {
				if e.hasInd() && !pw.Body.usesVar(k) {
					return fmt.Sprintf("%s indexes it indirectly along dim %d, which its body does not read (the range check would be lost)", u.Name, k)
				}
			}
		}
	}
	return ""
}

// mergeNames returns a then the elements of b not in a... keeping first-seen order.
func mergeNames(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mutationHazard says why p cannot be inlined into a copy_ that writes a storage p reads at
// another position than the one being written ("" when it can).
func mutationHazard(g *Graph, p *Buffer, users []*Buffer) string {
	for _, u := range users {
		if _, copyInto := u.Def.(*Pointwise); u.Mutates == nil || !copyInto {
			continue
		}
		dst := u.Mutates.Storage()
		b := nodeBounds(u.Def)
		store := flatten(indexVars(u.Sizes, 0), u.Layout.Strides, u.Layout.Offset, b)
		for _, l := range loadsOf(bodyOf(p.Def)) {
			if l.Buf.Storage() != dst {
				continue
			}
			// p's loads in u's variables: p is read by u at u's own index (copy_ reads src there)
			if !flatten(l.Index, l.Buf.Layout.Strides, l.Buf.Layout.Offset, b).Equal(store) {
				return fmt.Sprintf("%s writes %s, which it would read elsewhere", u.Name, dst.Name)
			}
		}
	}
	return ""
}

// copyCycle says why inlining p into its readers us would leave the copy_s into graph inputs
// with no order to run in ("" when it would not). Every reader of an input's storage runs
// before the copy_ that writes it (fuser.orderMutations), so copies that each read what another
// writes must not form a circle: an optimizer step that computes buf·0.9 + g + 1e-4·p once and
// writes it to buf and, scaled, to p (SGD with weight decay) would inline it into both copies,
// each then reading the other's destination, and neither could run first. p stays stored
// instead: computed from the old values before either copy.
func copyCycle(g *Graph, p *Buffer, us []*Buffer) string {
	writers := map[*Buffer][]*Buffer{} // storage -> the copies into it
	for _, b := range g.Buffers {
		if _, copyInto := b.Def.(*Pointwise); copyInto && b.Mutates != nil {
			writers[b.Mutates.Storage()] = append(writers[b.Mutates.Storage()], b)
		}
	}
	var pReads []*Buffer
	for _, r := range p.Def.Reads() {
		if len(writers[r.Storage()]) > 0 {
			pReads = append(pReads, r.Storage())
		}
	}
	if len(pReads) == 0 {
		return ""
	}
	reader := map[*Buffer]bool{}
	for _, u := range us {
		reader[u] = true
	}
	// next lists the copies c must run before: the writers of every storage c reads.
	next := func(c *Buffer) []*Buffer {
		var out []*Buffer
		var reads []*Buffer
		for _, r := range c.Def.Reads() {
			reads = append(reads, r.Storage())
		}
		if reader[c] {
			reads = append(reads, pReads...)
		}
		for _, s := range reads {
			for _, w := range writers[s] {
				if w != c {
					out = append(out, w)
				}
			}
		}
		return out
	}
	const (
		visiting = 1
		done     = 2
	)
	state := map[*Buffer]int{}
	var cyclic func(c *Buffer) bool
	cyclic = func(c *Buffer) bool {
		switch state[c] {
		case visiting:
			return true
		case done:
			return false
		}
		state[c] = visiting
		for _, w := range next(c) {
			if cyclic(w) {
				return true
			}
		}
		state[c] = done
		return false
	}
	for _, u := range us {
		if _, copyInto := u.Def.(*Pointwise); copyInto && u.Mutates != nil && cyclic(u) {
			return fmt.Sprintf("the copies into graph inputs would each read what another writes (%s among them)", u.Name)
		}
	}
	return ""
}

// hasMasked reports whether v computes a masked (bounds-checked) value.
func hasMasked(v *Value) bool {
	found := false
	walkValues([]*Value{v}, func(x *Value) {
		if x.Kind == VMasked {
			found = true
		}
	})
	return found
}
