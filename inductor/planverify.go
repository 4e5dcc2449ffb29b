package inductor

import "fmt"

// verifyArena checks the arena placement of a plan: every arena buffer lies inside the arena,
// and the results of Once kernels (computed on the first call, read on every call) share no
// byte with any other arena buffer, whatever their lifetimes.
func verifyArena(p *Program) error {
	end := func(b *BufSpec) int64 {
		return b.Arena + b.StorageElems*int64(b.DType.ItemSize())
	}
	kept := map[int]bool{}
	for _, st := range p.Steps {
		if st.Op == "kernel" && st.Once {
			for _, id := range st.Ptrs {
				if b := &p.Buffers[id]; b.Base < 0 && b.Arena >= 0 {
					kept[id] = true
				}
			}
		}
	}
	for id := range p.Buffers {
		b := &p.Buffers[id]
		if b.Base >= 0 || b.Arena < 0 {
			continue
		}
		if end(b) > p.ArenaBytes {
			return fmt.Errorf("buffer %%%d (%s) ends at byte %d of an arena of %d", id, b.Name, end(b), p.ArenaBytes)
		}
		for k := range kept {
			c := &p.Buffers[k]
			if k != id && b.Arena < end(c) && c.Arena < end(b) {
				return fmt.Errorf("buffer %%%d (%s, bytes %d-%d) overlaps %%%d (%s, bytes %d-%d), a constant kept across calls",
					id, b.Name, b.Arena, end(b), k, c.Name, c.Arena, end(c))
			}
		}
	}
	return nil
}
