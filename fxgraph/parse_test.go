package fxgraph

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ptgo/primtorch"
)

var parseErrorTests = []struct {
	name, text string
	line, col  int
	msg        string
}{
	{"no header", "%x : f32[2] = torch.relu(%x)\n", 1, 1, `expected "graph NAME(inputs):" header, found "%x"`},
	{"header without colon", "graph f(x: f32[2])\n", 1, 19, `expected ":" ending the graph header, found end of line`},
	{"input without meta", "graph f(x):\n", 1, 10, `expected ":" between the input name and its meta, found ")"`},
	{"unknown dtype", "graph f(x: f31[2]):\n", 1, 12, `unknown dtype "f31"`},
	{"bad device", "graph f(x: f32[2]@tpu):\n", 1, 19, `ptgo knows cpu, cuda and meta`},
	{"grad typo", "graph f(x: f32[2]!grd):\n", 1, 19, `expected "grad" after "!", found "grd"`},
	{"float in shape", "graph f(x: f32[2.5]):\n", 1, 16, "expected an integer in the shape"},
	{"undefined ref", "graph f(x: f32[2]):\n  %y : f32[2] = torch.relu(%z)\n", 2, 28, "%z is not defined on an earlier line"},
	{"use before def", "graph f(x: f32[2]):\n  %y : f32[2] = torch.add(%x, %y)\n", 2, 31, "%y is not defined on an earlier line"},
	{"duplicate", "graph f(x: f32[2]):\n  %x : f32[2] = torch.relu(%x)\n", 2, 3, "node %x is defined twice (first on line 1)"},
	{"missing equals", "graph f(x: f32[2]):\n  %y : f32[2] torch.relu(%x)\n", 2, 15, `expected "=" after the meta of %y, found "torch"`},
	{"unclosed call", "graph f(x: f32[2]):\n  %y : f32[2] = torch.relu(%x\n", 2, 30, `expected ")" or "," in the call's arguments, found end of line`},
	{"positional after keyword", "graph f(x: f32[2]):\n  %y : f32[2] = torch.add(%x, alpha=2, 3)\n", 2, 40, "positional argument after keyword argument alpha"},
	{"one-tuple", "graph f(x: f32[2]):\n  return (%x)\n", 2, 10, "a one-element tuple is written (x,)"},
	{"one-tuple meta", "graph f(x: (f32[2])):\n", 1, 12, "a one-element tuple meta is written (m,)"},
	{"unknown torch const", "graph f(x: f32[2]):\n  %y : f32[2] = .to(%x, torch.floaty)\n", 2, 31, "unknown torch.floaty"},
	{"dict key not string", "graph f(x: f32[2]):\n  return {1: %x}\n", 2, 11, "expected a string dict key, found \"1\""},
	{"slice arity", "graph f(x: f32[2]):\n  return slice(1, 2, 3, 4)\n", 2, 10, "slice takes 1 to 3 arguments, got 4"},
	{"int overflow", "graph f():\n  return 9223372036854775808\n", 2, 10, "integer 9223372036854775808 does not fit in int64"},
	{"float overflow", "graph f():\n  return 1e999\n", 2, 10, "float 1e999 is out of range"},
	{"negative nan", "graph f():\n  return -nan\n", 2, 11, `expected a number, found "nan"`},
	{"unclosed string", "graph f():\n  return \"abc\n", 2, 10, "string is not closed"},
	{"bad escape", "graph f():\n  return \"\\q\"\n", 2, 10, "bad string"},
	{"bad char", "graph f():\n  return $\n", 2, 10, "unexpected character '$'"},
	{"bare percent", "graph f():\n  return % x\n", 2, 10, "expected a node name (an identifier) after %"},
	{"bad target", "graph f():\n  %w : f32[2] = get_attr[fc-1.weight]\n", 2, 26, `bad target "fc-1.weight"`},
	{"unclosed target", "graph f():\n  %w : f32[2] = get_attr[fc1\n", 2, 25, `expected "]" closing the target`},
	{"trailing junk", "graph f(x: f32[2]):\n  return %x %x\n", 2, 13, `expected end of line, found "%x"`},
	{"bad quoted where", "graph f(x: f32[2]):\n  return %x  # \"a\n", 2, 14, "bad quoted source location"},
	{"not a line", "graph f(x: f32[2]):\n  relu(%x)\n", 2, 3, `expected a node line "%name : meta = ..." or "return ...", found "relu"`},
	{"offset not int", "graph f(x: f32[2]{1+0.5}):\n", 1, 21, "storage offset must be an integer"},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			require.Error(t, err)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "error %v is not a *ParseError", err)
			require.Contains(t, pe.Msg, tt.msg)
			require.Equal(t, [2]int{tt.line, tt.col}, [2]int{pe.Line, pe.Col}, "position of %q", pe.Msg)
			require.Contains(t, err.Error(), "fxgraph: cannot parse graph text at")
		})
	}
}

// TestParseLenient checks forms the printer never writes but people type: blank lines,
// unpadded columns, aliases, short slices, trailing commas, ints as complex parts.
func TestParseLenient(t *testing.T) {
	g, err := Parse(`

graph f(x:f32[2,3]) :
  %a:f32[3,2]{1,3}=.t(%x)

  %b : f32[3] = operator.getitem(%a, (slice(1), slice(0, 2), 4,), )   #   model.py:7   
  %c : c64[3] = torch.mul(%b, complex(1, 2), dtype=torch.cfloat)
  return [%c,]`)
	require.NoError(t, err)
	require.Equal(t, `graph f(x: f32[2,3]):
  %a : f32[3,2]{1,3} = .t(%x)
  %b : f32[3]        = operator.getitem(%a, (slice(None, 1, None), slice(0, 2, None), 4))  # model.py:7
  %c : c64[3]        = torch.mul(%b, complex(1.0, 2.0), dtype=torch.complex64)
  return [%c]
`, g.String())
}

func TestParseValues(t *testing.T) {
	g, err := Parse("graph f():\n  return (-0.0, 0.0, nan, -inf, 5e-324, -9223372036854775808, torch.device(\"cpu\"), torch.device(\"cuda:0\"), torch.channels_last_3d, torch.sparse_coo, torch.long, ...)\n")
	require.NoError(t, err)
	got := g.OutputNode().Args[0].(Tuple).Elems
	want := []any{math.Copysign(0, -1), 0.0, math.NaN(), math.Inf(-1), 5e-324, int64(math.MinInt64),
		primtorch.CPU, primtorch.Device{Type: "cuda", Index: 0}, primtorch.MemoryFormat("channels_last_3d"),
		primtorch.Layout("sparse_coo"), primtorch.Int64, primtorch.Ellipsis{}}
	require.Len(t, got, len(want))
	for i, w := range want {
		require.True(t, constEqual(w, got[i].(Const).V), "element %d: want %#v, got %#v", i, w, got[i])
	}
}

// TestParseKeepsNames checks that names read from text are reserved for later Add* calls.
func TestParseKeepsNames(t *testing.T) {
	g, err := Parse("graph f(x: f32[2]):\n  %relu : f32[2] = torch.relu(%x)\n  %relu_1 : f32[2] = torch.relu(%relu)\n")
	require.NoError(t, err)
	n := g.AddCall("torch.relu", []Arg{g.Nodes[2]}, nil, f32(2))
	require.Equal(t, "relu_2", n.Name)
	require.Equal(t, 3, n.Index())
}

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "text", "*.txt"))
	require.NoError(f, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(string(data))
	}
	for _, tt := range parseErrorTests {
		f.Add(tt.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		g, err := Parse(text)
		if err != nil {
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "error %v is not a *ParseError", err)
			return
		}
		printed := g.String()
		again, err := Parse(printed)
		require.NoError(t, err, "cannot parse the printed form:\n%s", printed)
		require.Empty(t, Diff(g, again))
		require.Equal(t, printed, again.String())
	})
}
