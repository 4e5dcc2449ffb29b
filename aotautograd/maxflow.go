package aotautograd

// A flow network and Dinic's max-flow algorithm, for the min-cut partition. Vertices are ints;
// edges are kept in insertion order, so results are deterministic.

// inf is an uncuttable capacity. Flows stop growing once they reach it (the cut is infinite).
const inf int64 = 1 << 60

type flowGraph struct {
	adj  [][]int // per vertex, its edge indices (forward and reverse)
	to   []int
	cap  []int64 // residual capacities; edge e^1 is e's reverse
	lvl  []int
	iter []int
}

func newFlowGraph(n int) *flowGraph { return &flowGraph{adj: make([][]int, n)} }

// addEdge adds u → v with capacity c (and its zero-capacity reverse).
func (f *flowGraph) addEdge(u, v int, c int64) {
	f.adj[u] = append(f.adj[u], len(f.to))
	f.to = append(f.to, v)
	f.cap = append(f.cap, c)
	f.adj[v] = append(f.adj[v], len(f.to))
	f.to = append(f.to, u)
	f.cap = append(f.cap, 0)
}

// bfs computes levels from s in the residual graph; it reports whether t is reachable.
func (f *flowGraph) bfs(s, t int) bool {
	f.lvl = make([]int, len(f.adj))
	for i := range f.lvl {
		f.lvl[i] = -1
	}
	f.lvl[s] = 0
	queue := []int{s}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range f.adj[u] {
			if v := f.to[e]; f.cap[e] > 0 && f.lvl[v] < 0 {
				f.lvl[v] = f.lvl[u] + 1
				queue = append(queue, v)
			}
		}
	}
	return f.lvl[t] >= 0
}

// dfs pushes up to limit units of flow from u to t along level-increasing edges.
func (f *flowGraph) dfs(u, t int, limit int64) int64 {
	if u == t {
		return limit
	}
	for ; f.iter[u] < len(f.adj[u]); f.iter[u]++ {
		e := f.adj[u][f.iter[u]]
		v := f.to[e]
		if f.cap[e] <= 0 || f.lvl[v] != f.lvl[u]+1 {
			continue
		}
		if d := f.dfs(v, t, min(limit, f.cap[e])); d > 0 {
			f.cap[e] -= d
			f.cap[e^1] += d
			return d
		}
	}
	return 0
}

// maxFlow returns the maximum flow from s to t (at least inf when every cut is infinite).
func (f *flowGraph) maxFlow(s, t int) int64 {
	var flow int64
	for flow < inf && f.bfs(s, t) {
		f.iter = make([]int, len(f.adj))
		for flow < inf {
			d := f.dfs(s, t, inf)
			if d == 0 {
				break
			}
			flow += d
		}
	}
	return flow
}

// sourceSide returns the vertices reachable from s in the residual graph: after maxFlow, the
// source side of a minimum cut (the one closest to the source).
func (f *flowGraph) sourceSide(s int) []bool {
	seen := make([]bool, len(f.adj))
	seen[s] = true
	stack := []int{s}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range f.adj[u] {
			if v := f.to[e]; f.cap[e] > 0 && !seen[v] {
				seen[v] = true
				stack = append(stack, v)
			}
		}
	}
	return seen
}
