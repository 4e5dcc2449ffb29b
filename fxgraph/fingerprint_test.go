package fxgraph

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

// TestFingerprintGolden pins the fingerprints, so a change to what they cover (which
// invalidates every cache) is a reviewed diff.
func TestFingerprintGolden(t *testing.T) {
	var b strings.Builder
	for _, tc := range allGraphs() {
		b.WriteString(tc.name + " " + tc.build().Fingerprint() + "\n")
	}
	golden(t, filepath.Join("testdata", "fingerprint.txt"), []byte(b.String()))
}

var fingerprintTests = []struct {
	name   string
	change func(g *Graph)
	same   bool
}{
	{"rebuilt", func(g *Graph) {}, true},
	{"graph name", func(g *Graph) { g.Name = "other" }, true},
	{"node names", func(g *Graph) { node(g, "relu").Name = "r" }, true},
	{"source lines", func(g *Graph) { node(g, "relu").Where = "other.py:1" }, true},
	{"placeholder target", func(g *Graph) { g.Nodes[0].Target = "y" }, true},
	{"dtype", func(g *Graph) { node(g, "relu").TensorMeta().DType = primtorch.Float16 }, false},
	{"shape", func(g *Graph) { g.Nodes[0].TensorMeta().Shape[0] = 5 }, false},
	{"strides", func(g *Graph) { g.Nodes[0].TensorMeta().Strides = []int64{1, 4} }, false},
	{"offset", func(g *Graph) { g.Nodes[0].TensorMeta().Offset = 1 }, false},
	{"device", func(g *Graph) { g.Nodes[0].TensorMeta().Device = primtorch.Device{Type: "cuda", Index: 0} }, false},
	{"requires_grad", func(g *Graph) { g.Nodes[0].TensorMeta().RequiresGrad = true }, false},
	{"target", func(g *Graph) { node(g, "relu").Target = "torch.sigmoid" }, false},
	{"get_attr path", func(g *Graph) { node(g, "fc1_bias").Target = "fc1.b" }, false},
	{"argument order", func(g *Graph) {
		a := node(g, "linear").Args
		a[1], a[2] = a[2], a[1]
	}, false},
	{"int vs float", func(g *Graph) { node(g, "relu").Args = append(node(g, "relu").Args, c(int64(1))) }, false},
	{"kwarg", func(g *Graph) { node(g, "relu").Kwargs = []Kwarg{{"inplace", c(false)}} }, false},
	{"output structure", func(g *Graph) { g.OutputNode().Args[0] = list(g.OutputNode().Args[0].(Tuple).Elems...) }, false},
}

func TestFingerprint(t *testing.T) {
	base := mlpGraph().Fingerprint()
	require.Len(t, base, 64)
	for _, tt := range fingerprintTests {
		t.Run(tt.name, func(t *testing.T) {
			g := mlpGraph()
			tt.change(g)
			if tt.same {
				require.Equal(t, base, g.Fingerprint())
			} else {
				require.NotEqual(t, base, g.Fingerprint())
			}
		})
	}
}

func TestFingerprintFloatsExact(t *testing.T) {
	fp := func(v float64) string {
		g := New("f")
		x := g.AddPlaceholder("x", f32(2))
		g.AddOutput(g.AddCall("torch.mul", []Arg{x, c(v)}, nil, f32(2)))
		return g.Fingerprint()
	}
	require.NotEqual(t, fp(0), fp(math.Copysign(0, -1)))
	require.NotEqual(t, fp(0.1), fp(0.1+1e-17*8))
	require.Equal(t, fp(math.NaN()), fp(math.NaN()))
}
