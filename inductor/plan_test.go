package inductor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// checkPlan simulates a plan: every step uses live buffers only, a reused storage is dead and
// of the same byte size, outputs and inputs are never freed, every output is live at the end,
// arena temporaries live at the same time never overlap (Once results never die), outputs are
// never in the arena, Into externs write into allocated buffers, and Once kernels read only
// constants.
func checkPlan(t *testing.T, p *Program) {
	t.Helper()
	live := map[int]bool{}
	dead := map[int]bool{}
	arenaLive := map[int]bool{}
	permanent := map[int]bool{}
	constant := map[int]bool{}
	rootOf := func(id int) int {
		if b := p.Buffers[id].Base; b >= 0 {
			return b
		}
		return id
	}
	span := func(id int) (int64, int64) {
		b := p.Buffers[id]
		return b.Arena, b.Arena + b.StorageElems*int64(b.DType.ItemSize())
	}
	for id, b := range p.Buffers {
		if b.Arena >= 0 {
			require.Equal(t, "alloc", b.Role, "%%%d in the arena", id)
			require.False(t, b.Output, "output %%%d in the arena", id)
			require.Zero(t, b.Arena%ArenaAlign, "%%%d arena offset", id)
			_, end := span(id)
			require.LessOrEqual(t, end, p.ArenaBytes, "%%%d beyond the arena", id)
		}
	}
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
			if p.Buffers[st.Buf].Arena >= 0 {
				a0, a1 := span(st.Buf)
				for o := range arenaLive {
					b0, b1 := span(o)
					require.True(t, a1 <= b0 || b1 <= a0 || a0 == a1 || b0 == b1, "%%%d [%d,%d) overlaps live %%%d [%d,%d)\n%s", st.Buf, a0, a1, o, b0, b1, p)
				}
				arenaLive[st.Buf] = true
			}
		case "view":
			use(p.Buffers[st.Buf].Base, "view")
			live[st.Buf] = true
		case "kernel":
			for _, id := range st.Ptrs {
				use(id, "kernel "+st.Kernel)
			}
			if st.Once {
				for _, id := range st.Ptrs {
					r := rootOf(id)
					require.True(t, p.Buffers[r].Arena >= 0 || constant[r] || p.Buffers[r].Role == "alloc", "once kernel %s touches %%%d", st.Kernel, id)
					require.NotEqual(t, "input", p.Buffers[r].Role, "once kernel %s reads input %%%d", st.Kernel, id)
				}
				for _, id := range st.Ptrs {
					constant[rootOf(id)] = true
					permanent[rootOf(id)] = true
				}
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
				if st.Into {
					use(o, "extern "+st.Target+" into")
					require.Equal(t, "alloc", p.Buffers[o].Role)
				}
				require.False(t, constant[rootOf(o)], "extern %s writes constant %%%d", st.Target, o)
				live[o] = true
			}
		case "free":
			use(st.Buf, "free")
			require.False(t, p.Buffers[st.Buf].Output, "output %%%d freed", st.Buf)
			require.NotEqual(t, "input", p.Buffers[st.Buf].Role, "input freed")
			delete(live, st.Buf)
			if !permanent[st.Buf] {
				delete(arenaLive, st.Buf)
			}
			if p.Buffers[st.Buf].Role == "alloc" && p.Buffers[st.Buf].Arena < 0 {
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

// TestPlanReuse: temporaries live in the arena, and one that dies leaves its place to later ones;
// matrix products write into their planned buffers.
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
	require.Contains(t, text, "%2 buf2: alloc f32[16,16] @arena+0\n")
	require.Contains(t, text, "%4 buf4: alloc f32[16,16] @arena+0\n")
	require.Contains(t, text, "%3 = into extern prims.mm(%2, %1)")
	require.Contains(t, text, "free %2")
	require.Contains(t, text, "%8 buf8: alloc f32[16,16] output\n", "outputs are not in the arena")
	require.Equal(t, int64(2*16*16*4), c.Program.ArenaBytes, "two 1 KiB temporaries live at once")
}

// TestPlanConstants: a causal mask built from iota depends on no input; its kernels run once
// and keep their results in the arena, never overwritten by later temporaries.
func TestPlanConstants(t *testing.T) {
	g := parseGraph(t, `graph f(x: f32[16,8,8], w: f32[16,8,8]):
  %iota   : i64[8]            = prims.iota(8, 0, 1, torch.int64)
  %row    : i64[8,1]          = prims.view(%iota, [8, 1])
  %rows   : i64[8,8]{1,0}     = prims.expand(%row, [8, 8])
  %iota_1 : i64[8]            = prims.iota(8, 0, 1, torch.int64)
  %col    : i64[1,8]          = prims.view(%iota_1, [1, 8])
  %cols   : i64[8,8]{0,1}     = prims.expand(%col, [8, 8])
  %le     : b8[8,8]           = prims.le(%cols, %rows)
  %lex    : b8[16,8,8]{0,8,1} = prims.expand(%le, [16, 8, 8])
  %mm     : f32[16,8,8]       = prims.bmm(%x, %w)
  %e      : f32[16,8,8]       = prims.exp(%mm)
  %m      : f32[16,8,8]       = prims.where(%lex, %e, 0.0)
  %mm2    : f32[16,8,8]       = prims.bmm(%m, %w)
  %r      : f32[16,8,8]       = prims.where(%lex, %mm2, -1.0)
  return (%r,)
`)
	c := checkAgainstReference(t, g, Options{}, 3, 1)
	checkPlan(t, c.Program)
	require.Contains(t, c.Program.String(), " once\n", "\n%s", c.Program)
	for _, st := range c.Program.Steps {
		if st.Op == "kernel" && st.Once {
			for _, id := range st.Ptrs {
				require.GreaterOrEqual(t, c.Program.Buffers[id].Arena, int64(0))
			}
		}
	}
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
	_, err := DecodeProgram([]byte(`{"version": 1, "name": "f", "buffers": [], "inputs": [], "outputs": [], "steps": []}`))
	require.ErrorContains(t, err, "this ptgo reads version 2")
	_, err = DecodeProgram([]byte(`{"version": 2, "buffers": [{"dtype": "float99"}]}`))
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

// TestPlanPointwiseConvInto: a pointwise convolution of one image without bias writes into its
// planned buffer (the runtime's matrix product at one thread), which stays out of the arena
// (at more threads torch's convolution returns a tensor that replaces it); a 3×3 one does not.
func TestPlanPointwiseConvInto(t *testing.T) {
	g := parseGraph(t, `graph f(x: f32[1,4,5,5], w: f32[6,4,1,1], b: f32[6,1,1], w3: f32[6,6,3,3]):
  %c  : f32[1,6,5,5] = prims.convolution(%x, %w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
  %be : f32[1,6,5,5]{0,1,0,0} = prims.expand(%b, [1, 6, 5, 5])
  %y  : f32[1,6,5,5] = prims.add(%c, %be)
  %r  : f32[1,6,5,5] = prims.relu(%y)
  %c3 : f32[1,6,5,5] = prims.convolution(%r, %w3, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
  %o  : f32[1,6,5,5] = prims.neg(%c3)
  return (%o,)
`)
	c := compileGraph(t, g, Options{})
	checkPlan(t, c.Program)
	text := c.Program.String()
	require.Contains(t, text, "= into extern prims.convolution(%0, %1, None", "\n%s", text)
	require.Contains(t, text, "= extern prims.convolution(", "the 3×3 convolution returns its result\n%s", text)
	for _, st := range c.Program.Steps {
		if st.Op == "extern" && st.Into {
			for _, o := range st.Outs {
				require.Less(t, c.Program.Buffers[o].Arena, int64(0), "%s", text)
			}
		}
	}
}
