package aotautograd

import (
	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Float arguments read at run time (primtorch/symfloat.go) in training graphs.
//
// A SymFloat operand of the forward (x * a) appears in the backward too (grad * a). The
// forward takes it as its float placeholder; the backward gets one float placeholder per float
// symbol its constants use, after the tangents, whose value is the forward's argument
// (Graphs.BackwardFloats says which): the runtime's autograd.Function keeps those arguments from
// the forward call and passes them on.

// addBackwardFloats appends to bw a float placeholder for each float symbol bw's constants
// mention and returns, for each, the index of the forward placeholder that carries it.
func addBackwardFloats(bw, fw *fxgraph.Graph) ([]int, error) {
	carrier := map[int]int{}
	for i, p := range fw.Placeholders() {
		if f, ok := p.Meta.(primtorch.SymFloat); ok {
			carrier[f.ID] = i
		}
	}
	var ids []int
	seen := map[int]bool{}
	fxgraph.VisitFloatSymbols(bw, func(f primtorch.SymFloat) {
		if !seen[f.ID] {
			seen[f.ID] = true
			ids = append(ids, f.ID)
		}
	})
	if len(ids) == 0 {
		return nil, nil
	}
	var out []int
	last := -1
	for i, n := range bw.Nodes {
		if n.Op == fxgraph.Placeholder {
			last = i
		}
	}
	for _, id := range ids {
		in, ok := carrier[id]
		if !ok {
			return nil, unsupportedf("the backward reads float argument f%d, which the forward does not take", id)
		}
		p := bw.AddPlaceholder("float_"+fw.Placeholders()[in].Name, bw.Shapes.Float(id))
		// placeholders come first: move it after the last one
		copy(bw.Nodes[last+2:], bw.Nodes[last+1:len(bw.Nodes)-1])
		bw.Nodes[last+1] = p
		last++
		out = append(out, in)
	}
	bw.Renumber()
	return out, nil
}
