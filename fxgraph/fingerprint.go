package fxgraph

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// Fingerprint is a cache key for g: the hex SHA-256 of a canonical text of what the graph
// computes. It covers every node's op, target, arguments (nodes referred to by position),
// keyword arguments and meta, so graphs that differ in any dtype, shape, stride, device or
// requires_grad differ. It leaves out what does not change the computation: the graph's name,
// node names, placeholder targets and source lines. It is stable across runs and processes.
func (g *Graph) Fingerprint() string {
	pos := positions(g)
	ref := func(n *Node) string {
		if i, ok := pos[n]; ok {
			return "%" + strconv.Itoa(i)
		}
		return "%?" + n.Name
	}
	var b strings.Builder
	b.WriteString("fxgraph-fingerprint-v1\n")
	for _, n := range g.Nodes {
		b.WriteString(n.Op.String())
		b.WriteByte(' ')
		writeMeta(&b, n.Meta)
		b.WriteByte(' ')
		switch n.Op {
		case Placeholder:
		case Output:
			if len(n.Args) > 0 {
				writeArgs(&b, n.Args, ref)
			}
		default:
			writeRHS(&b, n, ref)
		}
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
