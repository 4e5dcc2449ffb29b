package inductor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// floatGraph is x*f0 + f0 and full([4], 2)·f0 (a kernel that reads no tensor input: a Once
// kernel if it read no float either) over a float argument f0 read at run time.
func floatGraph(t *testing.T) *fxgraph.Graph {
	g := fxgraph.New("floats")
	g.Shapes = primtorch.NewShapeEnv()
	f := g.Shapes.NewFloat(0.5, "L['a']")
	x := g.AddPlaceholder("x", &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{6}, Strides: []int64{1}, Device: primtorch.CPU})
	g.AddPlaceholder("a", f)
	m6 := func() *primtorch.TensorMeta {
		return &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{6}, Strides: []int64{1}, Device: primtorch.CPU}
	}
	m4 := &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{4}, Strides: []int64{1}, Device: primtorch.CPU}
	y := g.AddCall("prims.mul", []fxgraph.Arg{x, fxgraph.Const{V: f}}, nil, m6())
	z := g.AddCall("prims.add", []fxgraph.Arg{y, fxgraph.Const{V: f}}, nil, m6())
	full := g.AddCall("prims.full", []fxgraph.Arg{fxgraph.List{Elems: []fxgraph.Arg{fxgraph.Const{V: int64(4)}}}, fxgraph.Const{V: 2.0}, fxgraph.Const{V: primtorch.Float32}}, nil, m4)
	w := g.AddCall("prims.mul", []fxgraph.Arg{full, fxgraph.Const{V: f}}, nil, &primtorch.TensorMeta{DType: primtorch.Float32, Shape: []int64{4}, Strides: []int64{1}, Device: primtorch.CPU})
	g.AddOutput(fxgraph.Tuple{Elems: []fxgraph.Arg{z, w}})
	require.NoError(t, fxgraph.Verify(g, nil))
	return g
}

func TestFloatArgumentsReadAtRunTime(t *testing.T) {
	c := compileGraph(t, floatGraph(t), Options{})
	require.Equal(t, 1, c.Program.FloatInputs)
	for _, st := range c.Program.Steps {
		require.False(t, st.Once, "kernel %s reads a float argument: it must run on every call", st.Kernel)
	}
	js, err := c.Program.JSON()
	require.NoError(t, err)
	require.Contains(t, string(js), `"float_inputs": 1`)
	dp, err := DecodeProgram(js)
	require.NoError(t, err)
	require.Equal(t, 1, dp.FloatInputs)
	x := NewStrided(primtorch.Float32, []int64{6}, []int64{1}, 0)
	for k := int64(0); k < 6; k++ {
		x.Set(k, float64(k)-2.5)
	}
	for _, a := range []float64{0.5, 0.1, -3, math.Inf(1), 1e-40} {
		for _, run := range []func() ([]*Tensor, error){
			func() ([]*Tensor, error) { return c.RunArgs([]*Tensor{x}, nil, []float64{a}, 1) },
			func() ([]*Tensor, error) { return ExecuteArgs(dp, c.Library, []*Tensor{x}, nil, []float64{a}, 2) },
		} {
			got, err := run()
			require.NoError(t, err)
			fa := float64(float32(a))
			for k := int64(0); k < 6; k++ {
				want := float64(float32(float32(x.At(k)*fa) + float32(fa)))
				if math.IsNaN(want) {
					require.True(t, math.IsNaN(got[0].At(k)))
					continue
				}
				require.Equal(t, want, got[0].At(k), "a=%v at %d", a, k)
			}
			for k := int64(0); k < 4; k++ {
				require.Equal(t, float64(float32(2*fa)), got[1].At(k), "a=%v full·a at %d", a, k)
			}
		}
	}
	_, err = c.RunArgs([]*Tensor{x}, nil, nil, 1)
	require.ErrorContains(t, err, "float arguments")
}

func TestFloatArgumentsRefusedByCUDA(t *testing.T) {
	_, err := CompileCUDA(floatGraph(t), CUDACompileOptions{})
	require.True(t, IsSymbolicUnsupported(err), "%v", err)
}
