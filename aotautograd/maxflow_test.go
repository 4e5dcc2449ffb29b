package aotautograd

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxFlowAgainstBruteForce: on random small networks, Dinic's max flow equals the minimum
// over every source/sink cut, and the residual graph's source side is a cut of that capacity.
func TestMaxFlowAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for trial := range 300 {
		n := 2 + rng.Intn(6)
		type edge struct {
			u, v int
			c    int64
		}
		var edges []edge
		for range rng.Intn(14) {
			u, v := rng.Intn(n), rng.Intn(n)
			if u == v {
				continue
			}
			c := int64(rng.Intn(10))
			if rng.Intn(6) == 0 {
				c = inf
			}
			edges = append(edges, edge{u, v, c})
		}
		f := newFlowGraph(n)
		for _, e := range edges {
			f.addEdge(e.u, e.v, e.c)
		}
		capacity := func(side func(int) bool) int64 {
			var c int64
			for _, e := range edges {
				if side(e.u) && !side(e.v) {
					c = min(inf, c+e.c)
				}
			}
			return c
		}
		best := inf
		for mask := range 1 << n {
			if mask&1 == 0 || mask&2 != 0 { // vertex 0 is the source, 1 the sink
				continue
			}
			best = min(best, capacity(func(v int) bool { return mask&(1<<v) != 0 }))
		}
		flow := f.maxFlow(0, 1)
		if best >= inf {
			require.GreaterOrEqual(t, flow, inf, "trial %d", trial)
			continue
		}
		require.Equal(t, best, flow, "trial %d: %v", trial, edges)
		side := f.sourceSide(0)
		require.False(t, side[1], "trial %d", trial)
		require.Equal(t, flow, capacity(func(v int) bool { return side[v] }), "trial %d", trial)
	}
}
