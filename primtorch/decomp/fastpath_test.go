package decomp_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
	"ptgo/primtorch/ref"
)

// fastPathCase is a call of one of torch's fused inference kernels on random float32 inputs.
type fastPathCase struct {
	name   string
	inputs []fpInput // placeholders, in call order
	call   string    // the torch-level call, %names for the inputs
	meta   string    // its result meta
	outs   int       // results to compare (1 tensor, or the tuple's first outs)
	// structure of the prims graph
	mm, bmm, addmm int
}

type fpInput struct {
	name  string
	shape []int64
}

func tel(b, t, d, h, ff int64, useGelu, normFirst bool) fastPathCase {
	in := []fpInput{{"src", []int64{b, t, d}}, {"qkv_w", []int64{3 * d, d}}, {"qkv_b", []int64{3 * d}},
		{"proj_w", []int64{d, d}}, {"proj_b", []int64{d}}, {"n1_w", []int64{d}}, {"n1_b", []int64{d}},
		{"n2_w", []int64{d}}, {"n2_b", []int64{d}}, {"f1_w", []int64{ff, d}}, {"f1_b", []int64{ff}},
		{"f2_w", []int64{d, ff}}, {"f2_b", []int64{d}}}
	call := fmt.Sprintf("torch._transformer_encoder_layer_fwd(%%src, %d, %d, %%qkv_w, %%qkv_b, %%proj_w, %%proj_b, %s, %s, 1e-05, "+
		"%%n1_w, %%n1_b, %%n2_w, %%n2_b, %%f1_w, %%f1_b, %%f2_w, %%f2_b, None, None)", d, h, pyBool(useGelu), pyBool(normFirst))
	return fastPathCase{name: fmt.Sprintf("tel_gelu%v_normfirst%v", useGelu, normFirst), inputs: in, call: call,
		meta: fmt.Sprintf("f32[%d,%d,%d]", b, t, d), outs: 1, mm: 1, bmm: 2, addmm: 3}
}

func mha(b, t, d, h int64, needWeights, average bool) fastPathCase {
	in := []fpInput{{"x", []int64{b, t, d}}, {"qkv_w", []int64{3 * d, d}}, {"qkv_b", []int64{3 * d}},
		{"proj_w", []int64{d, d}}, {"proj_b", []int64{d}}}
	call := fmt.Sprintf("torch._native_multi_head_attention(%%x, %%x, %%x, %d, %d, %%qkv_w, %%qkv_b, %%proj_w, %%proj_b, None, %s, %s)",
		d, h, pyBool(needWeights), pyBool(average))
	weights, outs := "None", 1
	if needWeights {
		weights, outs = fmt.Sprintf("f32[%d,%d,%d,%d]", b, h, t, t), 2
		if average {
			weights = fmt.Sprintf("f32[%d,%d,%d]", b, t, t)
		}
	}
	return fastPathCase{name: fmt.Sprintf("mha_weights%v_average%v", needWeights, average), inputs: in, call: call,
		meta: fmt.Sprintf("(f32[%d,%d,%d], %s)", b, t, d, weights), outs: outs, mm: 1, bmm: 2, addmm: 1}
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// graph is the torch-level graph of the case: the call and its results as outputs.
func (c fastPathCase) graph(t *testing.T) *fxgraph.Graph {
	var ph []string
	for _, in := range c.inputs {
		dims := make([]string, len(in.shape))
		for i, s := range in.shape {
			dims[i] = fmt.Sprint(s)
		}
		ph = append(ph, fmt.Sprintf("%s: f32[%s]", in.name, strings.Join(dims, ",")))
	}
	text := fmt.Sprintf("graph %s(%s):\n  %%r : %s = %s\n", c.name, strings.Join(ph, ", "), c.meta, c.call)
	if strings.HasPrefix(c.meta, "(") {
		var outs []string
		metas := strings.Split(strings.Trim(c.meta, "()"), ", ")
		for i := 0; i < c.outs; i++ {
			text += fmt.Sprintf("  %%r%d : %s = operator.getitem(%%r, %d)\n", i, metas[i], i)
			outs = append(outs, fmt.Sprintf("%%r%d", i))
		}
		text += "  return (" + strings.Join(outs, ", ") + ",)\n"
	} else {
		text += "  return (%r,)\n"
	}
	g, err := fxgraph.Parse(text)
	require.NoError(t, err, text)
	return g
}

// TestFastPathDecompositions: torch's fused encoder-layer and attention kernels decompose into
// one qkv mm, two bmm and the projections, with no fallback left, and the prims graph evaluated
// by ref agrees with torch on random inputs.
func TestFastPathDecompositions(t *testing.T) {
	var cases []fastPathCase
	for _, g := range []bool{false, true} {
		for _, nf := range []bool{false, true} {
			cases = append(cases, tel(2, 5, 16, 4, 24, g, nf))
		}
	}
	for _, nw := range []bool{false, true} {
		for _, avg := range []bool{false, true} {
			cases = append(cases, mha(2, 6, 16, 2, nw, avg))
		}
	}
	rng := rand.New(rand.NewSource(7))
	values := make([][][]float64, len(cases))
	for ci, c := range cases {
		for _, in := range c.inputs {
			n := int64(1)
			for _, s := range in.shape {
				n *= s
			}
			v := make([]float64, n)
			for k := range v {
				v[k] = float64(float32(rng.NormFloat64() * 0.5))
			}
			values[ci] = append(values[ci], v)
		}
	}
	want := torchFastPath(t, cases, values)
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.graph(t)
			pg, err := decomp.Decompose(g, decomp.Options{Check: true})
			require.NoError(t, err)
			count := map[string]int{}
			for _, n := range pg.Nodes {
				count[n.Target]++
			}
			require.Zero(t, count["prims.fallback"], "%s", pg)
			require.Equal(t, c.mm, count["prims.mm"], "%s", pg)
			require.Equal(t, c.bmm, count["prims.bmm"], "%s", pg)
			require.Equal(t, c.addmm, count["prims.addmm"], "%s", pg)
			var inputs []*ref.Tensor
			for i, in := range c.inputs {
				inputs = append(inputs, ref.FromFloats(primtorch.Float32, in.shape, values[ci][i]))
			}
			got, err := ref.Run(pg, inputs, nil)
			require.NoError(t, err)
			require.Len(t, got, c.outs)
			for i := 0; i < c.outs; i++ {
				g := got[i].Floats()
				w := want[ci][i]
				require.Len(t, g, len(w))
				for k := range g {
					require.InDelta(t, w[k], g[k], 2e-5+1e-4*math.Abs(w[k]), "output %d element %d", i, k)
				}
			}
		})
	}
}

// torchFastPath runs every case's call with torch 1.13 on the same inputs (one Python process):
// per case, its compared results flattened.
func torchFastPath(t *testing.T, cases []fastPathCase, values [][][]float64) [][][]float64 {
	t.Helper()
	var script strings.Builder
	script.WriteString("import json, sys, torch\nvalues = json.load(sys.stdin)\nres = []\n")
	for ci, c := range cases {
		fmt.Fprintf(&script, "v = values[%d]\n", ci)
		for i, in := range c.inputs {
			fmt.Fprintf(&script, "%s = torch.tensor(v[%d], dtype=torch.float32).reshape(%s)\n", in.name, i, pyShape(in.shape))
		}
		fmt.Fprintf(&script, "with torch.no_grad():\n    r = %s\n", strings.ReplaceAll(c.call, "%", ""))
		script.WriteString("r = r if isinstance(r, tuple) else (r,)\n")
		fmt.Fprintf(&script, "res.append([x.reshape(-1).tolist() for x in r[:%d]])\n", c.outs)
	}
	script.WriteString("print(json.dumps(res))\n")
	cmd := exec.Command("/usr/bin/python3", "-c", script.String())
	in, err := json.Marshal(values)
	require.NoError(t, err)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	require.NoError(t, err, "the torch oracle (/usr/bin/python3) failed")
	var res [][][]float64
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

func pyShape(s []int64) string {
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprint(x)
	}
	return "(" + strings.Join(parts, ", ") + ",)"
}
