package inductor

import (
	"fmt"
	"sort"
)

// Plan builds the launch plan of a schedule whose kernels src describes. Buffers that exist at
// run time are the graph inputs, every stored kernel member, extern results, and the views that
// outputs and extern arguments need. A temporary is freed after its last use (the last step
// touching its storage or a view of it).
//
// Memory: temporaries live in the graph's arena, one block of ArenaBytes the runtime allocates
// once per compiled graph and keeps across calls (no allocator calls, no page faults after the
// first call); each gets a byte offset, first fit among the temporaries live at the same time.
// Outputs (the caller keeps them) and buffers a fallback extern sees (torch code that may keep a
// reference, or return a view of its argument) are allocated per call instead; such a buffer
// takes the storage of a freed one of the same byte size when one is free.
//
// Matrix products (prims.mm, bmm, addmm) write into a buffer the plan allocated (torch's out=
// variants), so their results need no allocation either. Kernels that read no graph input —
// constant subgraphs such as causal masks — are marked Once: the runtime runs them on the first
// call with a fresh arena and keeps their results, which nothing else ever writes.
func Plan(s *Schedule, src *Source) (*Program, error) {
	pb := &planner{p: &Program{Name: s.Graph.Name}, id: map[*Buffer]int{}, src: src, code: map[string]*KernelCode{}}
	return pb.build(s)
}

// matrixProducts are the matrix-product externs, which torch runs through its BLAS.
var matrixProducts = map[string]bool{"prims.mm": true, "prims.bmm": true, "prims.addmm": true}

// IntoTargets are the externs the runtime runs writing into a buffer the plan allocated
// (PStep.Into): torch's out= variants of the matrix products. A pointwise convolution
// (isPointwiseConv) writes into its buffer too where it runs as a matrix product.
var IntoTargets = matrixProducts

// retainsNothing are the externs known not to keep or alias their tensor arguments; every other
// extern (fallbacks run torch functions) may, so its buffers stay out of the arena.
var retainsNothing = map[string]bool{"prims.mm": true, "prims.bmm": true, "prims.addmm": true, "prims.convolution": true}

// ArenaAlign is the byte alignment of every arena offset (a cache line, and enough for any
// vector load).
const ArenaAlign = 64

type planner struct {
	p    *Program
	id   map[*Buffer]int
	src  *Source
	code map[string]*KernelCode // src's kernels by name
}

func (pb *planner) ref(b *Buffer, role string) int {
	if b.Mutates != nil {
		// a scatter's (or copy_'s) result is the buffer it wrote into, same sizes and layout
		return pb.ref(b.Mutates, role)
	}
	if id, ok := pb.id[b]; ok {
		return id
	}
	bs := BufSpec{Name: b.Name, Role: role, DType: b.DType, Base: -1, Arena: -1}
	if anySymbolic(b.Layout.Strides) || anySymbolic([]Sym{b.Layout.Offset}) {
		bs.SymStrides, bs.SymOffset = append([]Sym(nil), b.Layout.Strides...), b.Layout.Offset
		bs.Strides = make([]int64, len(b.Layout.Strides))
		for k, s := range b.Layout.Strides {
			bs.Strides[k] = s.Hint()
		}
		bs.Offset = b.Layout.Offset.Hint()
	} else {
		bs.Strides, bs.Offset = staticSizes(b.Layout.Strides, ""), staticSize(b.Layout.Offset, "")
	}
	if anySymbolic(b.Sizes) || bs.SymStrides != nil {
		bs.SymSizes, bs.SymStorage = append([]Sym(nil), b.Sizes...), b.StorageElems()
		bs.Sizes = make([]int64, len(b.Sizes))
		for k, s := range b.Sizes {
			bs.Sizes[k] = s.Hint()
		}
		bs.StorageElems = bs.SymStorage.Hint()
	} else {
		bs.Sizes, bs.StorageElems = staticSizes(b.Sizes, ""), staticSize(b.StorageElems(), "")
	}
	if a, ok := b.Def.(*AliasNode); ok {
		bs.Role = "view"
		bs.Base = pb.ref(a.Base.Storage(), "")
	}
	pb.p.Buffers = append(pb.p.Buffers, bs)
	id := len(pb.p.Buffers) - 1
	pb.id[b] = id
	return id
}

// stepUse records which buffers a step touches: reads and writes (for lifetimes), writes alone
// (for constant folding), and whether they may escape into torch code.
type stepUse struct {
	bufs   []int
	writes []int
	escape bool
	// rebound: the step's outputs may be replaced by a tensor torch returns (a pointwise
	// convolution run by torch's convolution at more than one thread, isPointwiseConv): they
	// stay out of the arena, whose kernels address buffers by their arena offsets
	rebound bool
}

func (pb *planner) build(s *Schedule) (*Program, error) {
	g := s.Graph
	p := pb.p
	p.Symbols = g.Symbols
	p.IntInputs = g.IntInputs
	p.FloatInputs = g.FloatInputs
	for _, in := range g.Inputs {
		p.Inputs = append(p.Inputs, pb.ref(in, "input"))
	}
	for _, kc := range pb.src.Kernels {
		pb.code[kc.Name] = kc
	}
	// steps without alloc/free first; lifetimes after
	var steps []PStep
	var uses []stepUse
	allocated := map[int]bool{}
	for _, in := range p.Inputs {
		allocated[in] = true
	}
	alloc := func(id int) {
		if !allocated[id] {
			allocated[id] = true
			steps = append(steps, PStep{Op: "alloc", Buf: id, Reuse: -1})
			uses = append(uses, stepUse{bufs: []int{id}})
		}
	}
	var viewFor func(b *Buffer) int
	viewFor = func(b *Buffer) int {
		id := pb.ref(b, "")
		if p.Buffers[id].Role == "view" && !allocated[id] {
			allocated[id] = true
			steps = append(steps, PStep{Op: "view", Buf: id, Reuse: -1})
			uses = append(uses, stepUse{bufs: []int{id, p.Buffers[id].Base}})
		}
		return id
	}
	for _, st := range s.Steps {
		switch st := st.(type) {
		case *Kernel:
			kc := pb.code[st.Name]
			if kc == nil {
				return nil, fmt.Errorf("ptgo BUG: inductor: kernel %s has no generated code", st.Name)
			}
			ps := PStep{Op: "kernel", Kernel: st.Name, Reuse: -1, Ints: []int64{}, Floats: []float64{}}
			var writes []int
			for i, b := range kc.Args {
				id := pb.ref(b, "alloc")
				if kc.Writes[i] {
					alloc(id)
					writes = append(writes, id)
				}
				ps.Ptrs = append(ps.Ptrs, id)
			}
			steps = append(steps, ps)
			uses = append(uses, stepUse{bufs: ps.Ptrs, writes: writes})
		case *ExternStep:
			e := st.Call
			ps := PStep{Op: "extern", Target: e.Target, Reuse: -1}
			var touched []int
			var conv func(a ExternArg) PArg
			conv = func(a ExternArg) PArg {
				switch {
				case a.Buf != nil:
					id := viewFor(a.Buf)
					touched = append(touched, id)
					return PArg{Buf: id}
				case a.IsSeq:
					out := PArg{Buf: -1, IsSeq: true, Tuple: a.Tuple, Seq: []PArg{}}
					for _, x := range a.List {
						out.Seq = append(out.Seq, conv(x))
					}
					return out
				}
				return PArg{Buf: -1, Value: a.Value}
			}
			for _, a := range e.Args {
				ps.Args = append(ps.Args, conv(a))
			}
			for _, kw := range e.Kwargs {
				ps.Kwargs = append(ps.Kwargs, PKwarg{Name: kw.Name, Value: conv(kw.Value)})
			}
			pointwise := isPointwiseConv(e)
			ps.Into = (IntoTargets[e.Target] || pointwise) && len(e.Outs) == 1
			var written []int
			for _, o := range e.Outs {
				var id int
				if o == nil { // a None result
					ps.Outs = append(ps.Outs, -1)
					continue
				}
				if ps.Into {
					id = pb.ref(o, "alloc")
					alloc(id)
				} else {
					id = pb.ref(o, "extern")
					allocated[id] = true
				}
				ps.Outs = append(ps.Outs, id)
				written = append(written, id)
				touched = append(touched, id)
			}
			steps = append(steps, ps)
			uses = append(uses, stepUse{bufs: touched, writes: written, escape: !retainsNothing[e.Target],
				rebound: ps.Into && pointwise})
		}
	}
	for _, o := range g.Outputs {
		if o.Buf == nil {
			p.Outputs = append(p.Outputs, OutSpec{Buf: -1, Value: o.Const})
			continue
		}
		id := viewFor(o.Buf)
		p.Outputs = append(p.Outputs, OutSpec{Buf: id})
	}
	// outputs: the buffers returned and every storage they view are kept
	keep := map[int]bool{}
	for _, in := range p.Inputs {
		keep[in] = true
	}
	for _, o := range p.Outputs {
		if o.Buf < 0 {
			continue
		}
		p.Buffers[o.Buf].Output = true
		keep[o.Buf] = true
		if b := p.Buffers[o.Buf].Base; b >= 0 {
			keep[b] = true
		}
	}
	// last use of each storage root (a view's use is its base's too)
	root := func(id int) int {
		if b := p.Buffers[id].Base; b >= 0 {
			return b
		}
		return id
	}
	last := map[int]int{}
	escapes := map[int]bool{}
	for i, u := range uses {
		for _, id := range u.bufs {
			last[id] = i
			last[root(id)] = i
			if u.escape {
				escapes[root(id)] = true
			}
		}
		if u.rebound {
			for _, id := range u.writes {
				escapes[root(id)] = true
			}
		}
	}
	// temporaries in the arena: allocated roots that are neither kept nor seen by torch code
	inArena := func(id int) bool {
		b := p.Buffers[id]
		// (a symbolic buffer's size differs from call to call: it is allocated per call)
		return b.Role == "alloc" && b.Base < 0 && !keep[id] && !escapes[id] && b.SymSizes == nil
	}
	// symbolic temporaries: in the arena's dynamic part, placed by the runtime for each call's
	// sizes (PlaceDynamic)
	inDynArena := func(id int) bool {
		b := p.Buffers[id]
		return b.Role == "alloc" && b.Base < 0 && !keep[id] && !escapes[id] && b.SymSizes != nil
	}
	for id := range p.Buffers {
		p.Buffers[id].ArenaDyn = inDynArena(id)
	}
	once := pb.constantSteps(steps, uses, inArena)
	// emit with frees and reuse
	free := map[string][]int{} // storage bytes -> dead reusable buffers outside the arena
	bytesOf := func(id int) string {
		// the byte size: a number, or a polynomial over the symbols (equal polynomials are
		// equal at every call)
		b := p.Buffers[id]
		return b.storageSym().MulConst(int64(b.DType.ItemSize())).String()
	}
	for i, st := range steps {
		if st.Op == "alloc" && !keep[st.Buf] && !inArena(st.Buf) && !inDynArena(st.Buf) {
			if pool := free[bytesOf(st.Buf)]; len(pool) > 0 {
				st.Reuse = pool[len(pool)-1]
				free[bytesOf(st.Buf)] = pool[:len(pool)-1]
			}
		}
		st.Once = once[i]
		p.Steps = append(p.Steps, st)
		for _, id := range uniqueInts(uses[i].bufs) {
			if last[id] != i || keep[id] || keep[root(id)] {
				continue
			}
			p.Steps = append(p.Steps, PStep{Op: "free", Buf: id, Reuse: -1})
			if root(id) == id && p.Buffers[id].Role == "alloc" && !inArena(id) && !inDynArena(id) && bytesOf(id) != "0" {
				free[bytesOf(id)] = append(free[bytesOf(id)], id)
			}
		}
	}
	for id, b := range p.Buffers {
		if b.Role == "" {
			return nil, fmt.Errorf("ptgo BUG: inductor: plan buffer %%%d (%s) has no role", id, b.Name)
		}
	}
	pb.placeArena(inArena)
	return p, nil
}

// constantSteps finds the kernels that compute constants: every buffer they read is itself a
// constant (or they read nothing), they write only arena temporaries, and nothing else writes
// those. It returns them by step index.
func (pb *planner) constantSteps(steps []PStep, uses []stepUse, inArena func(int) bool) map[int]bool {
	p := pb.p
	constant := map[int]bool{} // storage roots holding constants
	root := func(id int) int {
		if b := p.Buffers[id].Base; b >= 0 {
			return b
		}
		return id
	}
	once := map[int]bool{}
	writers := map[int]int{}
	for _, u := range uses {
		for _, id := range u.writes {
			writers[root(id)]++
		}
	}
	for i, st := range steps {
		if kc := pb.code[st.Kernel]; st.Op != "kernel" || len(uses[i].writes) == 0 || len(kc.Symbols) > 0 || len(kc.Floats) > 0 {
			// (a kernel that reads a size symbol or a float argument computes per call:
			// BatchNorm's n/(n-1))
			continue
		}
		written := map[int]bool{}
		ok := true
		for _, id := range uses[i].writes {
			r := root(id)
			written[r] = true
			if !inArena(r) || writers[r] != 1 {
				ok = false
			}
		}
		for _, id := range st.Ptrs {
			if r := root(id); !written[r] && !constant[r] {
				ok = false
			}
		}
		if ok {
			once[i] = true
			for r := range written {
				constant[r] = true
			}
		}
	}
	return once
}

// placeArena gives every arena temporary a byte offset: first fit among the temporaries live at
// its allocation, sizes rounded up to ArenaAlign. A Once kernel's results are computed on the
// first call only and read on every call, so they are live for the whole timeline: they get
// their own offsets before anything else is placed (placing them at their allocation step would
// hand their bytes to a temporary that died earlier in the step order, which later calls then
// write over the kept constant: gpt_block's causal mask, NaN from the second call on).
func (pb *planner) placeArena(inArena func(int) bool) {
	p := pb.p
	type span struct{ off, end int64 }
	live := map[int]span{}
	permanent := map[int]bool{}
	sizeOf := func(id int) int64 {
		b := &p.Buffers[id]
		size := b.StorageElems * int64(b.DType.ItemSize())
		return (size + ArenaAlign - 1) / ArenaAlign * ArenaAlign
	}
	for _, st := range p.Steps {
		if st.Op != "kernel" || !st.Once {
			continue
		}
		for _, id := range st.Ptrs {
			if p.Buffers[id].Base < 0 && inArena(id) && !permanent[id] {
				permanent[id] = true
				p.Buffers[id].Arena = p.ArenaBytes
				live[id] = span{p.ArenaBytes, p.ArenaBytes + sizeOf(id)}
				p.ArenaBytes += sizeOf(id)
			}
		}
	}
	for _, st := range p.Steps {
		switch st.Op {
		case "alloc":
			if !inArena(st.Buf) || permanent[st.Buf] {
				continue
			}
			size := sizeOf(st.Buf)
			var taken []span
			for _, s := range live {
				taken = append(taken, s)
			}
			sort.Slice(taken, func(i, j int) bool { return taken[i].off < taken[j].off })
			off := int64(0)
			for _, s := range taken {
				if off+size <= s.off {
					break
				}
				if s.end > off {
					off = s.end
				}
			}
			p.Buffers[st.Buf].Arena = off
			live[st.Buf] = span{off, off + size}
			if off+size > p.ArenaBytes {
				p.ArenaBytes = off + size
			}
		case "free":
			if !permanent[st.Buf] {
				delete(live, st.Buf)
			}
		}
	}
}

// PlaceDynamic places a symbolic program's dynamic arena temporaries (BufSpec.ArenaDyn) for one
// call: specs are the buffers at the call's symbol values; it returns each one's byte offset in
// the arena's dynamic part (first fit among those live at its allocation, ArenaAlign-rounded,
// as placeArena does for the static part; -1 for other buffers) and the part's size. The C++
// runtime does the same (ptgo_runtime.cpp: place_dynamic).
func PlaceDynamic(p *Program, specs []BufSpec) ([]int64, int64) {
	type span struct{ off, end int64 }
	offs := make([]int64, len(specs))
	for i := range offs {
		offs[i] = -1
	}
	live := map[int]span{}
	var total int64
	for _, st := range p.Steps {
		switch st.Op {
		case "alloc":
			b := &specs[st.Buf]
			if !b.ArenaDyn {
				continue
			}
			size := (b.StorageElems*int64(b.DType.ItemSize()) + ArenaAlign - 1) / ArenaAlign * ArenaAlign
			var taken []span
			for _, s := range live {
				taken = append(taken, s)
			}
			sort.Slice(taken, func(i, j int) bool { return taken[i].off < taken[j].off })
			off := int64(0)
			for _, s := range taken {
				if off+size <= s.off {
					break
				}
				if s.end > off {
					off = s.end
				}
			}
			offs[st.Buf] = off
			live[st.Buf] = span{off, off + size}
			total = max(total, off+size)
		case "free":
			delete(live, st.Buf)
		}
	}
	return offs, total
}

func uniqueInts(xs []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
