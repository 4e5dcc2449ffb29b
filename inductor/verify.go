package inductor

import (
	"fmt"
	"strings"
)

// Verify checks the loop IR's invariants: every buffer has a definition and one stride per
// dim; a node's ranges are its buffer's sizes; bodies only load buffers defined earlier in the
// graph, with one index per dim, using only the node's variables; ops have their arity;
// aliases view a storage root; outputs are buffers of the graph. It returns every problem found.
func Verify(g *Graph) error {
	var probs []string
	add := func(b *Buffer, format string, args ...any) {
		probs = append(probs, b.Name+": "+fmt.Sprintf(format, args...))
	}
	defined := map[*Buffer]bool{}
	for _, b := range g.Buffers {
		if b.Def == nil {
			add(b, "no definition")
			continue
		}
		if len(b.Layout.Strides) != len(b.Sizes) {
			add(b, "%d strides for %d dims", len(b.Layout.Strides), len(b.Sizes))
		}
		nvars := 0
		switch d := b.Def.(type) {
		case *Pointwise:
			if !equalShape(d.Ranges, b.Sizes) {
				add(b, "pointwise ranges %v are not the sizes %v", d.Ranges, b.Sizes)
			}
			nvars = len(d.Ranges)
		case *Reduction:
			if !equalShape(d.Ranges, b.Sizes) {
				add(b, "reduction ranges %v are not the sizes %v", d.Ranges, b.Sizes)
			}
			nvars = len(d.Ranges) + len(d.ReduceRanges)
		case *Scan:
			if !equalShape(d.Ranges, b.Sizes) || d.Dim < 0 || d.Dim >= len(d.Ranges) {
				add(b, "scan ranges %v / dim %d do not fit the sizes %v", d.Ranges, d.Dim, b.Sizes)
			}
			nvars = len(d.Ranges)
		case *ScatterNode:
			nvars = len(d.Ranges)
			if !defined[d.Into] || b.Mutates != d.Into || len(d.Target) != len(d.Into.Sizes) {
				add(b, "scatter into %s: not an earlier buffer, or %d target indices for %d dims", d.Into.Name, len(d.Target), len(d.Into.Sizes))
			}
		case *AliasNode:
			if !defined[d.Base] || d.Base.Storage() != d.Base {
				add(b, "alias of %s, which is not an earlier storage root", d.Base.Name)
			}
		case *Extern:
			if externOutIndex(d, b) < 0 || d.Outs[externOutIndex(d, b)] != b {
				add(b, "not among its extern's outputs")
			}
			for _, r := range d.Reads() {
				if !defined[r] {
					add(b, "extern reads %s before it is defined", r.Name)
				}
			}
		}
		if body := bodyOf(b.Def); body != nil {
			roots := []*Value{body}
			if sc, ok := b.Def.(*ScatterNode); ok {
				roots = sc.roots()
			}
			walkValues(roots, func(v *Value) {
				switch v.Kind {
				case VLoad:
					if !defined[v.Buf] {
						add(b, "loads %s, which is not defined before it", v.Buf.Name)
					}
					if len(v.Index) != len(v.Buf.Sizes) {
						add(b, "loads %s with %d indices for %d dims", v.Buf.Name, len(v.Index), len(v.Buf.Sizes))
					}
				case VOp:
					if info := opTable[v.Op]; info == nil || info.arity != len(v.Args) {
						add(b, "op %s with %d arguments", v.Op, len(v.Args))
					}
				}
				if v.varsWide || (nvars < 64 && v.vars>>uint(nvars) != 0) {
					add(b, "the body uses a variable beyond its %d", nvars)
				}
			})
		}
		defined[b] = true
	}
	for i, o := range g.Outputs {
		if o.Buf != nil && !defined[o.Buf] {
			probs = append(probs, fmt.Sprintf("output %d: %s is not a buffer of the graph", i, o.Buf.Name))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("%d problems:\n  %s", len(probs), strings.Join(probs, "\n  "))
	}
	return nil
}
