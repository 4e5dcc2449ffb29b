package inductor

import (
	"fmt"
)

// Plan builds the launch plan of a schedule whose kernels src describes. Buffers that exist at
// run time are the graph inputs, every stored kernel member, extern results, and the views that
// outputs and extern arguments need. A temporary is freed after its last use (the last step
// touching its storage or a view of it), and an allocation takes the storage of a freed
// temporary of the same byte size when one is free.
func Plan(s *Schedule, src *Source) (*Program, error) {
	pb := &planner{p: &Program{Name: s.Graph.Name}, id: map[*Buffer]int{}, src: src}
	return pb.build(s)
}

type planner struct {
	p   *Program
	id  map[*Buffer]int
	src *Source
}

func (pb *planner) ref(b *Buffer, role string) int {
	if b.Mutates != nil {
		// a scatter's (or copy_'s) result is the buffer it wrote into, same sizes and layout
		return pb.ref(b.Mutates, role)
	}
	if id, ok := pb.id[b]; ok {
		return id
	}
	bs := BufSpec{Name: b.Name, Role: role, DType: b.DType, Sizes: b.Sizes, Strides: b.Layout.Strides, Offset: b.Layout.Offset,
		StorageElems: b.StorageElems(), Base: -1}
	if a, ok := b.Def.(*AliasNode); ok {
		bs.Role = "view"
		bs.Base = pb.ref(a.Base.Storage(), "")
	}
	pb.p.Buffers = append(pb.p.Buffers, bs)
	id := len(pb.p.Buffers) - 1
	pb.id[b] = id
	return id
}

func (pb *planner) build(s *Schedule) (*Program, error) {
	g := s.Graph
	p := pb.p
	for _, in := range g.Inputs {
		p.Inputs = append(p.Inputs, pb.ref(in, "input"))
	}
	kernelCode := map[string]*KernelCode{}
	for _, kc := range pb.src.Kernels {
		kernelCode[kc.Name] = kc
	}
	// steps without alloc/free first; lifetimes after
	type use struct{ bufs []int }
	var steps []PStep
	var uses []use
	allocated := map[int]bool{}
	for _, in := range p.Inputs {
		allocated[in] = true
	}
	var viewFor func(b *Buffer) int
	viewFor = func(b *Buffer) int {
		id := pb.ref(b, "")
		if p.Buffers[id].Role == "view" && !allocated[id] {
			allocated[id] = true
			steps = append(steps, PStep{Op: "view", Buf: id, Reuse: -1})
			uses = append(uses, use{bufs: []int{id, p.Buffers[id].Base}})
		}
		return id
	}
	for _, st := range s.Steps {
		switch st := st.(type) {
		case *Kernel:
			kc := kernelCode[st.Name]
			if kc == nil {
				return nil, fmt.Errorf("ptgo BUG: inductor: kernel %s has no generated code", st.Name)
			}
			ps := PStep{Op: "kernel", Kernel: st.Name, Reuse: -1, Ints: []int64{}, Floats: []float64{}}
			for i, b := range kc.Args {
				id := pb.ref(b, "alloc")
				if kc.Writes[i] && !allocated[id] {
					allocated[id] = true
					steps = append(steps, PStep{Op: "alloc", Buf: id, Reuse: -1})
					uses = append(uses, use{bufs: []int{id}})
				}
				ps.Ptrs = append(ps.Ptrs, id)
			}
			steps = append(steps, ps)
			uses = append(uses, use{bufs: ps.Ptrs})
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
			for _, o := range e.Outs {
				id := pb.ref(o, "extern")
				allocated[id] = true
				ps.Outs = append(ps.Outs, id)
				touched = append(touched, id)
			}
			steps = append(steps, ps)
			uses = append(uses, use{bufs: touched})
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
	for i, u := range uses {
		for _, id := range u.bufs {
			last[id] = i
			last[root(id)] = i
		}
	}
	// emit with frees and reuse
	free := map[int64][]int{} // storage bytes -> dead reusable buffers
	bytesOf := func(id int) int64 {
		b := p.Buffers[id]
		return b.StorageElems * int64(b.DType.ItemSize())
	}
	for i, st := range steps {
		if st.Op == "alloc" && !keep[st.Buf] {
			if pool := free[bytesOf(st.Buf)]; len(pool) > 0 {
				st.Reuse = pool[len(pool)-1]
				free[bytesOf(st.Buf)] = pool[:len(pool)-1]
			}
		}
		p.Steps = append(p.Steps, st)
		for _, id := range uniqueInts(uses[i].bufs) {
			if last[id] != i || keep[id] || keep[root(id)] {
				continue
			}
			if root(id) != id {
				// a view dies with its last use; its base is freed at the base's last use
				p.Steps = append(p.Steps, PStep{Op: "free", Buf: id, Reuse: -1})
				continue
			}
			p.Steps = append(p.Steps, PStep{Op: "free", Buf: id, Reuse: -1})
			if p.Buffers[id].Role == "alloc" && bytesOf(id) > 0 {
				free[bytesOf(id)] = append(free[bytesOf(id)], id)
			}
		}
	}
	for id, b := range p.Buffers {
		if b.Role == "" {
			return nil, fmt.Errorf("ptgo BUG: inductor: plan buffer %%%d (%s) has no role", id, b.Name)
		}
	}
	return p, nil
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
