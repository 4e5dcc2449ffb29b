package fxgraph

import "maps"

// Clone returns a deep copy of g: new nodes with the same names, ops, targets, source lines
// and copied metas, arguments pointing at the new nodes, and the same reserved names (so the
// copy picks the same names as g for nodes added later). Constants are immutable values and
// are shared. A reference to a node outside g is kept as is.
func Clone(g *Graph) *Graph {
	c := &Graph{Name: g.Name, Nodes: make([]*Node, len(g.Nodes)), Shapes: g.Shapes, names: maps.Clone(g.names)}
	if c.names == nil {
		c.names = map[string]int{}
	}
	copies := make(map[*Node]*Node, len(g.Nodes))
	remap := func(n *Node) Arg {
		if m, ok := copies[n]; ok {
			return m
		}
		return n
	}
	for i, n := range g.Nodes {
		m := &Node{
			Name:   n.Name,
			Op:     n.Op,
			Target: n.Target,
			Args:   MapArgs(n.Args, remap),
			Kwargs: MapKwargs(n.Kwargs, remap),
			Meta:   cloneMeta(n.Meta),
			Where:  n.Where,
			Stack:  n.Stack,
			index:  i,
		}
		copies[n] = m
		c.Nodes[i] = m
	}
	return c
}
