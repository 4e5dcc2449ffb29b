package inductor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// checkPlan simulates a plan: every step uses live buffers only, a reused storage is dead and
// of the same byte size, outputs and inputs are never freed, and every output is live at the end.
func checkPlan(t *testing.T, p *Program) {
	t.Helper()
	live := map[int]bool{}
	dead := map[int]bool{}
	for _, in := range p.Inputs {
		live[in] = true
	}
	use := func(id int, what string) {
		require.True(t, live[id], "%s uses %%%d (%s), which is not live\n%s", what, id, p.Buffers[id].Name, p)
	}
	bytes := func(id int) int64 { return p.Buffers[id].StorageElems * int64(p.Buffers[id].DType.ItemSize()) }
	for _, st := range p.Steps {
		switch st.Op {
		case "alloc":
			require.False(t, live[st.Buf], "alloc of live %%%d", st.Buf)
			if st.Reuse >= 0 {
				require.True(t, dead[st.Reuse], "reuse of %%%d, which is not dead\n%s", st.Reuse, p)
				require.Equal(t, bytes(st.Reuse), bytes(st.Buf), "reuse needs the same byte size")
				require.False(t, p.Buffers[st.Buf].Output, "outputs are never placed in reused storage")
				delete(dead, st.Reuse)
			}
			live[st.Buf] = true
		case "view":
			use(p.Buffers[st.Buf].Base, "view")
			live[st.Buf] = true
		case "kernel":
			for _, id := range st.Ptrs {
				use(id, "kernel "+st.Kernel)
			}
		case "extern":
			var walk func(a PArg)
			walk = func(a PArg) {
				if a.Buf >= 0 {
					use(a.Buf, "extern "+st.Target)
				}
				for _, e := range a.Seq {
					walk(e)
				}
			}
			for _, a := range st.Args {
				walk(a)
			}
			for _, o := range st.Outs {
				live[o] = true
			}
		case "free":
			use(st.Buf, "free")
			require.False(t, p.Buffers[st.Buf].Output, "output %%%d freed", st.Buf)
			require.NotEqual(t, "input", p.Buffers[st.Buf].Role, "input freed")
			delete(live, st.Buf)
			if p.Buffers[st.Buf].Role == "alloc" {
				dead[st.Buf] = true
			}
		}
	}
	for _, o := range p.Outputs {
		if o.Buf >= 0 {
			use(o.Buf, "output")
		}
	}
}

// TestPlanReuse: temporaries that die are reused by later ones of the same byte size.
func TestPlanReuse(t *testing.T) {
	g := parseGraph(t, `graph f(x: f32[16,16], w: f32[16,16]):
  %a : f32[16,16] = prims.exp(%x)
  %m1 : f32[16,16] = prims.mm(%a, %w)
  %b : f32[16,16] = prims.tanh(%m1)
  %m2 : f32[16,16] = prims.mm(%b, %w)
  %c : f32[16,16] = prims.sin(%m2)
  %m3 : f32[16,16] = prims.mm(%c, %w)
  %d : f32[16,16] = prims.neg(%m3)
  return (%d,)
`)
	c := checkAgainstReference(t, g, Options{}, 11, 1)
	checkPlan(t, c.Program)
	text := c.Program.String()
	require.Contains(t, text, "alloc %4 reusing %2")
	require.Contains(t, text, "free %2")
}

// TestPlans checks the plan of every representative graph.
func TestPlans(t *testing.T) {
	for _, name := range graphNames(t) {
		t.Run(name, func(t *testing.T) {
			c := compileGraph(t, loadGraph(t, name), Options{})
			checkPlan(t, c.Program)
			js, err := c.Program.JSON()
			require.NoError(t, err)
			back, err := DecodeProgram(js)
			require.NoError(t, err)
			require.Equal(t, c.Program.String(), back.String())
			js2, err := back.JSON()
			require.NoError(t, err)
			require.Equal(t, string(js), string(js2), "JSON round trip")
		})
	}
}

// TestPlanJSONGolden pins the JSON schema on two graphs (an extern with its epilogue, and
// outputs that are views of an input and of a computed buffer).
func TestPlanJSONGolden(t *testing.T) {
	for _, name := range []string{"mm_bias_gelu", "slicing_views", "mutation"} {
		c := compileGraph(t, loadGraph(t, name), Options{})
		js, err := c.Program.JSON()
		require.NoError(t, err)
		golden(t, name+".plan.json", string(js))
	}
}

// TestDecodeProgramErrors: bad JSON is refused with a message.
func TestDecodeProgramErrors(t *testing.T) {
	_, err := DecodeProgram([]byte(`{"version": 2, "name": "f", "buffers": [], "inputs": [], "outputs": [], "steps": []}`))
	require.ErrorContains(t, err, "this ptgo reads version 1")
	_, err = DecodeProgram([]byte(`{"version": 1, "buffers": [{"dtype": "float99"}]}`))
	require.ErrorContains(t, err, "unknown dtype")
	_, err = DecodeProgram([]byte(`not json`))
	require.ErrorContains(t, err, "decoding a program")
}

// TestExecuteChecksInputs: inputs of another layout are refused with what differs.
func TestExecuteChecksInputs(t *testing.T) {
	c := compileGraph(t, loadGraph(t, "pointwise_chain"), Options{})
	_, err := c.Run([]*Tensor{NewTensor(c.Program.Buffers[0].DType, []int64{8, 31})}, 1)
	require.ErrorContains(t, err, "sizes [8 31], expected [8 32]")
	_, err = c.Run(nil, 1)
	require.ErrorContains(t, err, "takes 1 inputs, got 0")
}
