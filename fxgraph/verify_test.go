package fxgraph

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

func TestVerifyAcceptsExamples(t *testing.T) {
	for _, tc := range exportGraphs {
		require.NoError(t, Verify(tc.build(), nil), tc.name)
	}
}

// node returns the node of g named name.
func node(g *Graph, name string) *Node {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	panic("no node " + name)
}

var verifyTests = []struct {
	name   string
	mutate func(g *Graph) // applied to mlpGraph()
	want   string
}{
	{"placeholder late", func(g *Graph) {
		g.Nodes[0], g.Nodes[1] = g.Nodes[1], g.Nodes[0]
		g.Renumber()
	}, "node %x: placeholder after other nodes; placeholders must come first"},
	{"no output", func(g *Graph) { g.Nodes = g.Nodes[:len(g.Nodes)-1] }, "graph does not end with an output node"},
	{"output not last", func(g *Graph) {
		g.AddCall("torch.relu", []Arg{g.Nodes[0]}, nil, f32(4, 8))
	}, "output node at position 7 is not the last node (9 nodes)"},
	{"two outputs", func(g *Graph) { g.AddOutput(none()) }, "name is also used by node 7"},
	{"stale index", func(g *Graph) { g.Nodes[1], g.Nodes[2] = g.Nodes[2], g.Nodes[1] }, "node %fc1_bias: Index() is 2 but the node is at position 1; call g.Renumber()"},
	{"use before def", func(g *Graph) {
		g.Nodes[3], g.Nodes[4] = g.Nodes[4], g.Nodes[3]
		g.Renumber()
	}, "node %relu (model.py:13): argument 0: %linear is not defined before this node"},
	{"foreign node", func(g *Graph) {
		other := mlpGraph()
		node(g, "relu").Args[0] = other.Nodes[3]
	}, "argument 0: %linear is not defined before this node (a later node, or one of another graph)"},
	{"nil node", func(g *Graph) { node(g, "relu").Args[0] = (*Node)(nil) }, "argument 0: nil *Node"},
	{"nil arg", func(g *Graph) { node(g, "relu").Args[0] = nil }, "argument 0: nil Arg; use Const{nil} for None"},
	{"nil slice part", func(g *Graph) {
		node(g, "relu").Args = append(node(g, "relu").Args, Slice{Start: none(), Stop: nil, Step: none()})
	}, "argument 1.stop: nil Arg"},
	{"Go int const", func(g *Graph) { node(g, "relu").Args = append(node(g, "relu").Args, c(3)) }, "argument 1: constant of Go type int; use int64 or float64"},
	{"slice const", func(g *Graph) {
		node(g, "relu").Args = append(node(g, "relu").Args, list(c([]int64{1})))
	}, "argument 1[0]: constant of Go type []int64 is not a Python constant"},
	{"bad dtype const", func(g *Graph) { node(g, "relu").Args = append(node(g, "relu").Args, c(primtorch.DType(99))) }, "dtype 99 is out of range"},
	{"bad layout", func(g *Graph) { node(g, "relu").Args = append(node(g, "relu").Args, c(primtorch.Layout("jagged"))) }, `unknown layout "jagged"`},
	{"bad memory format", func(g *Graph) {
		node(g, "relu").Args = append(node(g, "relu").Args, c(primtorch.MemoryFormat("nhwc")))
	}, `unknown memory format "nhwc"`},
	{"dict duplicate key", func(g *Graph) {
		g.OutputNode().Args[0] = Dict{[]DictEntry{{"a", none()}, {"a", none()}}}
	}, `node %output: argument 0: dict key "a" appears twice`},
	{"kwarg twice", func(g *Graph) {
		node(g, "relu").Kwargs = []Kwarg{{"inplace", c(false)}, {"inplace", c(true)}}
	}, "keyword argument inplace is given twice"},
	{"kwarg name", func(g *Graph) { node(g, "relu").Kwargs = []Kwarg{{"in place", c(false)}} }, `keyword argument name "in place" is not a Python identifier`},
	{"builtin name", func(g *Graph) { node(g, "relu").Name = "max" }, `node %max (model.py:13): name "max" shadows a Python builtin`},
	{"keyword name", func(g *Graph) { node(g, "relu").Name = "class" }, `name "class" is a Python keyword`},
	{"not identifier", func(g *Graph) { node(g, "relu").Name = "1relu" }, `name "1relu" is not an ASCII Python identifier`},
	{"zero padded", func(g *Graph) { node(g, "relu").Name = "relu_01" }, `name "relu_01" has a zero-padded numeric suffix`},
	{"duplicate name", func(g *Graph) { node(g, "relu").Name = "linear" }, "node %linear (model.py:13): name is also used by node 3"},
	{"output name", func(g *Graph) { g.OutputNode().Name = "out" }, `the output node must be named "output"`},
	{"output target", func(g *Graph) { g.OutputNode().Target = "out" }, `output target is "out", must be "output"`},
	{"output args", func(g *Graph) { g.OutputNode().Args = append(g.OutputNode().Args, none()) }, "output takes exactly one argument (the returned structure), has 2 args"},
	{"output meta", func(g *Graph) { g.OutputNode().Meta = f32(1) }, "output has meta f32[1]; the output node carries none"},
	{"call target", func(g *Graph) { node(g, "relu").Target = "torch..relu" }, `call_function target "torch..relu" is not a Python path`},
	{"method target", func(g *Graph) { node(g, "relu").Op = CallMethod; node(g, "relu").Target = "a.b" }, `call_method target "a.b" is not a method name`},
	{"method receiver", func(g *Graph) {
		node(g, "relu").Op = CallMethod
		node(g, "relu").Args = []Arg{c(int64(1))}
	}, "call_method receiver 1 is not a node"},
	{"method without receiver", func(g *Graph) {
		node(g, "relu").Op = CallMethod
		node(g, "relu").Args = nil
	}, "call_method has no receiver"},
	{"get_attr target", func(g *Graph) { node(g, "fc1_bias").Target = "fc1..bias" }, `get_attr target "fc1..bias" is not a dotted attribute path`},
	{"get_attr args", func(g *Graph) { node(g, "fc1_bias").Args = []Arg{none()} }, "get_attr takes no arguments, has 1 args"},
	{"get_attr scalar", func(g *Graph) { node(g, "fc1_bias").Meta = int64(3) }, "get_attr meta 3 is not a tensor meta"},
	{"placeholder target", func(g *Graph) { g.Nodes[0].Target = "self.x" }, `placeholder target "self.x" is not a Python identifier`},
	{"unknown op", func(g *Graph) { node(g, "relu").Op = NodeOp(9) }, "unknown op NodeOp(9)"},
	{"missing meta", func(g *Graph) { node(g, "relu").Meta = nil }, "node %relu (model.py:13): meta is missing"},
	{"typed nil meta", func(g *Graph) { node(g, "relu").Meta = (*primtorch.TensorMeta)(nil) }, "meta is a nil *primtorch.TensorMeta"},
	{"stride count", func(g *Graph) { node(g, "relu").TensorMeta().Strides = []int64{1} }, "1 strides for 2 dims in f32[4,16]{1}!grad"},
	{"negative size", func(g *Graph) { node(g, "relu").TensorMeta().Shape[0] = -4 }, "negative size -4 in dim 0"},
	{"negative stride", func(g *Graph) { node(g, "relu").TensorMeta().Strides[1] = -1 }, "negative stride -1 in dim 1"},
	{"negative offset", func(g *Graph) { node(g, "relu").TensorMeta().Offset = -1 }, "negative storage offset -1"},
	{"meta dtype", func(g *Graph) { node(g, "relu").TensorMeta().DType = 77 }, "dtype 77 is out of range"},
	{"empty device", func(g *Graph) { node(g, "relu").TensorMeta().Device = primtorch.Device{} }, "device type is empty; use primtorch.CPU"},
	{"unknown device", func(g *Graph) { node(g, "relu").TensorMeta().Device = primtorch.Device{Type: "xla", Index: 0} }, "ptgo knows cpu, cuda and meta"},
	{"meta Go type", func(g *Graph) { node(g, "relu").Meta = 3 }, "meta of Go type int is not"},
	{"tuple meta element", func(g *Graph) { node(g, "relu").Meta = []any{f32(1), nil, "x"} }, "tuple meta element 2: meta of Go type string"},
	{"node twice", func(g *Graph) {
		g.Nodes = append(g.Nodes[:len(g.Nodes)-1], node(g, "relu"), g.OutputNode())
		g.Renumber()
	}, "appears twice in g.Nodes"},
}

func TestVerifyRejects(t *testing.T) {
	for _, tt := range verifyTests {
		t.Run(tt.name, func(t *testing.T) {
			g := mlpGraph()
			tt.mutate(g)
			err := Verify(g, nil)
			require.Error(t, err)
			var ve *VerifyError
			require.True(t, errors.As(err, &ve))
			require.Contains(t, err.Error(), tt.want)
			require.Contains(t, err.Error(), "fxgraph: graph forward is invalid")
		})
	}
}

func TestVerifyCapsProblems(t *testing.T) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(2))
	for range 30 {
		g.AddCall("torch.relu", []Arg{x}, nil, nil)
	}
	g.AddOutput(x)
	err := Verify(g, nil)
	var ve *VerifyError
	require.True(t, errors.As(err, &ve))
	require.Len(t, ve.Problems, maxProblems)
	require.Equal(t, 10, ve.Omitted)
	require.Contains(t, err.Error(), "(30 problems)")
	require.Contains(t, err.Error(), "node %relu_19: meta is missing\n  ... and 10 more")
}

// sameAsFirstInput is a toy meta checker: unary ops return their input's meta.
func sameAsFirstInput(n *Node) (any, error) {
	switch n.Target {
	case "torch.relu":
		in, ok := n.Args[0].(*Node)
		if !ok || in.TensorMeta() == nil {
			return nil, fmt.Errorf("relu needs a tensor")
		}
		return in.TensorMeta().Clone(), nil
	case "torch.nn.functional.linear":
		if len(n.Args) != 3 {
			return nil, fmt.Errorf("linear takes 3 arguments, got %d", len(n.Args))
		}
	}
	return nil, nil
}

func TestVerifyWithMetaChecker(t *testing.T) {
	require.NoError(t, Verify(mlpGraph(), sameAsFirstInput))

	g := mlpGraph()
	node(g, "relu").TensorMeta().DType = primtorch.Float16
	err := Verify(g, sameAsFirstInput)
	require.ErrorContains(t, err, "node %relu (model.py:13): meta f16[4,16]!grad differs from f32[4,16]!grad computed for torch.relu")

	g = mlpGraph()
	node(g, "linear").Args = node(g, "linear").Args[:2]
	require.ErrorContains(t, Verify(g, sameAsFirstInput), "node %linear (model.py:12): meta check of torch.nn.functional.linear failed: linear takes 3 arguments, got 2")

	// A node whose own arguments are broken is not handed to the checker.
	g = mlpGraph()
	node(g, "relu").Args[0] = nil
	err = Verify(g, func(n *Node) (any, error) {
		require.NotEqual(t, "relu", n.Name)
		return nil, nil
	})
	require.ErrorContains(t, err, "nil Arg")
}

// BenchmarkVerify reports the cost of verifying a 1000-node chain.
func BenchmarkVerify(b *testing.B) {
	g := New("f")
	x := g.AddPlaceholder("x", f32(4, 8))
	prev := x
	for range 1000 {
		prev = g.AddCall("torch.add", []Arg{prev, x}, []Kwarg{{"alpha", c(2.0)}}, f32(4, 8))
	}
	g.AddOutput(tup(prev))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(g, nil); err != nil {
			b.Fatal(err)
		}
	}
}
