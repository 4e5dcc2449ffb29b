package aotautograd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/aotautograd"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

func caseNamed(t *testing.T, name string) *gradCase {
	t.Helper()
	for i := range loadCases(t) {
		if cases[i].Name() == name {
			return &cases[i]
		}
	}
	t.Fatalf("no case %s in testdata/cases.json", name)
	return nil
}

func split(t *testing.T, c *gradCase, opts aotautograd.Options) *aotautograd.Graphs {
	t.Helper()
	_, pg, err := build(c)
	require.NoError(t, err, c.Name())
	opts.Check = true
	s, err := aotautograd.Split(pg, c.RequiresGrad, opts)
	require.NoError(t, err, c.Name())
	return s
}

// TestPartitionSavesLess: on the model graphs the min-cut partition saves fewer bytes than
// saving everything the backward reads, and letting it recompute reductions never costs more.
func TestPartitionSavesLess(t *testing.T) {
	for _, name := range []string{"graph/mlp", "graph/attention", "graph/cnn_bn_train"} {
		c := caseNamed(t, name)
		s := split(t, c, aotautograd.Options{})
		require.Less(t, s.SavedBytes, s.SaveAllBytes, "%s: %s", name, s.Summary())
		r := split(t, c, aotautograd.Options{RecomputeReductions: true})
		require.LessOrEqual(t, r.SavedBytes, s.SavedBytes, "%s: %s", name, r.Summary())
		all := split(t, c, aotautograd.Options{Partition: aotautograd.SaveAll})
		require.Equal(t, s.SaveAllBytes, all.SavedBytes, name)
		t.Logf("%s: %s", name, s.Summary())
	}
}

// bannedOp reports ops the partition must never compute twice.
func bannedOp(target string, reductions bool) bool {
	if target == "operator.getitem" {
		return true
	}
	op := primtorch.Lookup(target)
	if op == nil {
		return false
	}
	scan := op.ID == primtorch.OpPrimCumsum || op.ID == primtorch.OpPrimCumprod
	return op.Kind == primtorch.KindExtern || (reductions && (op.Kind == primtorch.KindReduction || scan))
}

// comparedInputs names the computed values (a view's base for a view) the backward of amax,
// amin, maximum and minimum compares for equality with forward results (inputs of those
// forward nodes an eq in the backward reads): they must be saved, since a recomputation in
// another kernel may differ in the last bit.
func comparedInputs(fw, bw *fxgraph.Graph) []string {
	base := func(u *fxgraph.Node) *fxgraph.Node {
		for u.Op == fxgraph.CallFunction {
			op := primtorch.Lookup(u.Target)
			if op == nil || op.Kind != primtorch.KindView {
				break
			}
			u = u.Args[0].(*fxgraph.Node)
		}
		return u
	}
	compared := map[string]bool{}
	for _, n := range bw.Nodes {
		if n.Target == "prims.eq" {
			for _, u := range n.Inputs() {
				compared[base(u).Name] = true
			}
		}
	}
	var names []string
	for _, n := range fw.Nodes {
		switch n.Target {
		case "prims.amax", "prims.amin", "prims.maximum", "prims.minimum":
		default:
			continue
		}
		if m := n.TensorMeta(); m == nil || !m.RequiresGrad {
			continue
		}
		for _, u := range n.Inputs() {
			if u = base(u); u.Op == fxgraph.CallFunction && compared[u.Name] {
				names = append(names, u.Name)
			}
		}
	}
	return names
}

// TestRecomputation: for every case and partition, the nodes both graphs compute are exactly
// Recomputed, and none is an extern, a fallback (random ops) or — unless allowed — a reduction;
// values the backward compares with forward results are saved; the min cut never saves more
// than save-all; saved values are forward results in order.
func TestRecomputation(t *testing.T) {
	for i := range loadCases(t) {
		c := &cases[i]
		if c.NotDiff {
			continue
		}
		for _, opts := range []aotautograd.Options{{}, {RecomputeReductions: true}, {Partition: aotautograd.SaveAll}} {
			s := split(t, c, opts)
			fwNodes := map[string]*fxgraph.Node{}
			for _, n := range s.Forward.Nodes {
				if n.Op == fxgraph.CallFunction {
					fwNodes[n.Name] = n
				}
			}
			var both []string
			for _, n := range s.Backward.Nodes {
				if n.Op != fxgraph.CallFunction || fwNodes[n.Name] == nil {
					continue
				}
				both = append(both, n.Name)
				require.False(t, bannedOp(n.Target, !opts.RecomputeReductions), "%s (%s): the backward recomputes %s = %s", c.Name(), opts.Partition, n.Name, n.Target)
			}
			require.ElementsMatch(t, s.Recomputed, both, c.Name())
			for _, name := range comparedInputs(s.Forward, s.Backward) {
				require.NotContains(t, s.Recomputed, name, "%s (%s): the backward compares %s with a forward result and recomputes it", c.Name(), opts.Partition, name)
			}
			require.LessOrEqual(t, s.SavedBytes, s.SaveAllBytes, "%s: %s", c.Name(), s.Summary())
			outs := s.Forward.OutputNode().Args[0].(fxgraph.Tuple).Elems
			require.Len(t, outs, s.NumOutputs+len(s.Saved), c.Name())
			phs := s.Backward.Placeholders()
			require.Len(t, phs, len(s.Saved)+len(s.Tangents), c.Name())
			for k, v := range s.Saved {
				require.Equal(t, v.Name, outs[s.NumOutputs+k].(*fxgraph.Node).Name, c.Name())
				require.Equal(t, v.Name, phs[k].Name, c.Name())
			}
			require.Len(t, s.Backward.OutputNode().Args[0].(fxgraph.Tuple).Elems, len(c.Inputs), c.Name())
		}
	}
}

// goldenCases are the cases whose forward and backward graphs are kept in testdata/graphs.
var goldenCases = []string{"graph/mlp", "graph/attention", "graph/cnn_bn_train", "relu/zero", "layer_norm/affine",
	"batch_norm/train_buffers", "alias/view_output", "multi/int_output", "conv2d/plain", "cumprod/zeros", "prod.dim_int/zeros",
	"amax/ties", "getitem/step", "fallback/dropout_frozen_input"}

// TestGoldenGraphs compares the prims, forward and backward graphs and the partition summary
// of goldenCases (and two backward graphs converted with ToTorch) with
// testdata/graphs/<op>_<tag>.txt (-update rewrites them).
func TestGoldenGraphs(t *testing.T) {
	for _, name := range goldenCases {
		c := caseNamed(t, name)
		_, pg, err := build(c)
		require.NoError(t, err)
		s := split(t, c, aotautograd.Options{})
		got := "# prims\n" + pg.String() + "\n# forward\n" + s.Forward.String() + "\n# backward\n" + s.Backward.String() +
			"\n# partition\n" + s.Summary() + "\n"
		if name == "graph/mlp" || name == "conv2d/plain" {
			tg, err := aotautograd.ToTorch(s.Backward)
			require.NoError(t, err)
			got += "\n# backward, ToTorch\n" + tg.String()
		}
		path := filepath.Join("testdata", "graphs", strings.ReplaceAll(name, "/", "_")+".txt")
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./aotautograd -run TestGoldenGraphs -update")
		require.Equal(t, string(want), got, "%s changed; review the diff and rerun with -update", path)
	}
}

// TestLogging: Split logs its decision and both graphs on aot_graphs, the joint graph at debug
// level, and nothing when the channel is off.
func TestLogging(t *testing.T) {
	c := caseNamed(t, "graph/mlp")
	defer func() { require.NoError(t, logs.Configure(nil)) }()
	logs.Drain()
	split(t, c, aotautograd.Options{})
	require.Empty(t, logs.Drain())

	require.NoError(t, logs.Configure(map[string]string{"aot_graphs": "debug"}))
	s := split(t, c, aotautograd.Options{})
	var text []string
	for _, r := range logs.Drain() {
		require.Equal(t, logs.AOTGraphs, r.Channel)
		text = append(text, r.Msg)
	}
	all := strings.Join(text, "\n")
	require.Contains(t, all, "joint graph of case:")
	require.Contains(t, all, "min-cut partition of case: "+s.Summary())
	require.Contains(t, all, "forward graph of case:\n"+s.Forward.String())
	require.Contains(t, all, "backward graph of case:\n"+s.Backward.String())
}
