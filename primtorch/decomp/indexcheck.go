package decomp

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Index checks up front (A204). A compiled graph's kernel that finds an index out of range stops the
// run; where the failed run left nothing the user can see (no input written, no random number
// drawn), torch then runs the captured graph and raises eager's own exception
// (pipeline.Rerunnable). A graph that writes an input or draws cannot be handed over so late:
// the kernel's message would be ptgo's ("index out of range in ptgo kernel ..."), not eager's
// ("index 1 is out of bounds for dimension 0 with size 1"). There each index the kernels check
// is checked first by a prims.check, which inductor runs before every write and draw
// (orderChecks): a failed check hands the untouched call to torch, whose run writes, draws and
// raises as eager does. The bounds are the prims' own (the reference interpreter's checkIndex):
// [-size, size) for index and index_put, [0, size) for gather, index_select and scatter.
// An index computed from a random draw or from a call that writes is left to the kernel (no
// check can run before what it reads), and so is one computed from a prims.iota alone (the
// positions a write through a view scatters to, flip's reversed iota: in range by
// construction).

// userIndex marks n, a prims indexing node a user-level index op made (getitem, gather,
// index_select, scatter, index_put, embedding, take_along_dim), for checkIndicesFirst: the
// decompositions' own gathers (a min's values at its argmin) index in range by construction.
func (d *decomposer) userIndex(n *fxgraph.Node) *fxgraph.Node {
	if d.userIndexed == nil {
		d.userIndexed = map[*fxgraph.Node]bool{}
	}
	d.userIndexed[n] = true
	return n
}

// indexOperands lists, for a prims indexing node, each index tensor with the size it indexes
// and whether negative indices wrap.
func indexOperands(n *fxgraph.Node) (idx []*fxgraph.Node, sizes []sym, wrap bool) {
	x, ok := n.Args[0].(*fxgraph.Node)
	if !ok || x.TensorMeta() == nil {
		return nil, nil, false
	}
	shape := x.TensorMeta().SymSizes()
	switch n.Target {
	case "prims.index", "prims.index_put":
		list, ok := n.Args[1].(fxgraph.List)
		if !ok {
			return nil, nil, false
		}
		for k, a := range list.Elems {
			if t, ok := a.(*fxgraph.Node); ok && k < len(shape) {
				idx, sizes = append(idx, t), append(sizes, shape[k])
			}
		}
		return idx, sizes, true
	case "prims.gather", "prims.index_select", "prims.scatter":
		dim, ok := n.Args[1].(fxgraph.Const)
		d, isInt := dim.V.(int64)
		t, isNode := n.Args[2].(*fxgraph.Node)
		if !ok || !isInt || !isNode || int(d) >= len(shape) {
			return nil, nil, false
		}
		return []*fxgraph.Node{t}, []sym{shape[d]}, false
	}
	return nil, nil, false
}

// checkIndicesFirst emits the up-front index checks of a graph whose failed run the user would
// see (it writes an input or draws); called by output before the epilogue's writes.
func (d *decomposer) checkIndicesFirst() {
	visible := false
	for _, s := range d.inputs {
		visible = visible || s.mutated
	}
	effectful := map[*fxgraph.Node]bool{}
	for _, n := range d.g.Nodes {
		if fxgraph.CallEffects(n)&(primtorch.EffectRandom|primtorch.EffectWrites) != 0 {
			effectful[n], visible = true, true
		}
	}
	if !visible {
		return
	}
	// tainted: computed from a draw or a writing call; positions: computed from prims.iota and
	// numbers alone (the graph's nodes are in order)
	tainted, positions := map[*fxgraph.Node]bool{}, map[*fxgraph.Node]bool{}
	var allIn func(a fxgraph.Arg, set map[*fxgraph.Node]bool) (all, any bool)
	allIn = func(a fxgraph.Arg, set map[*fxgraph.Node]bool) (all, any bool) {
		all = true
		switch x := a.(type) {
		case *fxgraph.Node:
			return set[x], true
		case fxgraph.List:
			for _, e := range x.Elems {
				al, an := allIn(e, set)
				all, any = all && al, any || an
			}
		case fxgraph.Tuple:
			for _, e := range x.Elems {
				al, an := allIn(e, set)
				all, any = all && al, any || an
			}
		}
		return all, any
	}
	var uses func(a fxgraph.Arg, set map[*fxgraph.Node]bool) bool
	uses = func(a fxgraph.Arg, set map[*fxgraph.Node]bool) bool {
		switch x := a.(type) {
		case *fxgraph.Node:
			return set[x]
		case fxgraph.List:
			for _, e := range x.Elems {
				if uses(e, set) {
					return true
				}
			}
		case fxgraph.Tuple:
			for _, e := range x.Elems {
				if uses(e, set) {
					return true
				}
			}
		}
		return false
	}
	nodes := append([]*fxgraph.Node(nil), d.g.Nodes...)
	for _, n := range nodes {
		if n.Op != fxgraph.CallFunction {
			continue
		}
		t, all, any := effectful[n], true, false
		for _, a := range n.Args {
			t = t || uses(a, tainted)
			al, an := allIn(a, positions)
			all, any = all && al, any || an
		}
		for _, kw := range n.Kwargs {
			t = t || uses(kw.Value, tainted)
			al, an := allIn(kw.Value, positions)
			all, any = all && al, any || an
		}
		tainted[n], positions[n] = t, n.Target == "prims.iota" || all && any
		if !d.userIndexed[n] {
			continue
		}
		idx, sizes, wrap := indexOperands(n)
		for i, ix := range idx {
			if tainted[ix] || positions[ix] || ix.TensorMeta() == nil || ix.TensorMeta().Numel() == 0 {
				continue
			}
			size := sizes[i]
			var low val = int64(0)
			if wrap {
				low = symNumber(size.Neg())
			}
			bad := d.prim("logical_or", d.prim("lt", ix, low), d.prim("ge", ix, symNumber(size)))
			d.check(bad)
		}
	}
}
