package fxgraph

// EliminateDeadCode removes the nodes whose values nothing uses: call nodes and get_attr
// reads that no kept node reads, directly or through other removed nodes. It never removes
// placeholders, the output node, or nodes for which sideEffect reports true (in-place ops such
// as add_ or copy_, calls with observable effects); sideEffect may be nil when no node has
// effects. It returns the number of nodes removed and renumbers the rest.
func EliminateDeadCode(g *Graph, sideEffect func(*Node) bool) int {
	live := make(map[*Node]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := g.Nodes[i]
		keep := live[n] || n.Op == Placeholder || n.Op == Output || (sideEffect != nil && sideEffect(n))
		if !keep {
			continue
		}
		live[n] = true
		for _, a := range n.Args {
			WalkArg(a, func(m *Node) { live[m] = true })
		}
		for _, kw := range n.Kwargs {
			WalkArg(kw.Value, func(m *Node) { live[m] = true })
		}
	}
	kept := g.Nodes[:0]
	for _, n := range g.Nodes {
		if live[n] {
			kept = append(kept, n)
		} else {
			delete(g.names, n.Name)
		}
	}
	removed := len(g.Nodes) - len(kept)
	clear(g.Nodes[len(kept):])
	g.Nodes = kept
	g.Renumber()
	return removed
}
