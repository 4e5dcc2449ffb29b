package pipeline

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Backend is what the pipeline builds for a graph.
type Backend uint8

const (
	// Inductor is ptgo's C backend ("inductor"): fused C kernels run by the C++ runtime, and the
	// forward/backward split for graphs autograd needs.
	Inductor Backend = iota
	// AOTEager ("aot_eager") splits graphs autograd needs with ptgo's autograd and runs both
	// halves with torch; inference graphs are left to the caller.
	AOTEager
)

func (b Backend) String() string {
	if b == AOTEager {
		return "aot_eager"
	}
	return "inductor"
}

// Request is one graph to compile.
type Request struct {
	// Name says whose graph it is in messages and file names ("Block.forward").
	Name string
	// Graph is the torch-level graph, metas on every node. Freezing rewrites it in place (the
	// caller's fallback then runs the rewritten graph, whose new get_attrs are in Attrs).
	Graph *fxgraph.Graph
	// Attrs maps the graph's get_attr targets to their live tensors; freezing adds the tensors
	// it folds.
	Attrs map[string]py.Obj
	// GradEnabled is the grad mode the graph starts in; its _set_grad_enabled calls change it.
	GradEnabled bool
	Backend     Backend
	// Freezing folds parameters into constants in inference graphs (options={"freezing": True}).
	Freezing bool
	// Frozen is set by Compile when freezing ran: the graph's get_attr tensors are constants.
	Frozen bool
	// AutoFreeze freezes inference graphs when no option was given and the compiled module is
	// in eval mode, where GuardVersion exists: a write to a folded tensor then drops the entry
	// and recompiles (options={"freezing": False} leaves every parameter live).
	AutoFreeze bool
	// GuardVersion guards a tensor that folded constants were computed from by its version
	// counter, so an in-place update recompiles. Nil where the caller has no guards (FX graphs:
	// torch.compile's own freezing assumes frozen parameters the same way).
	GuardVersion func(attrPath string, version int64) error
	// DDP, when Cap > 0, is the gradient bucketing of the DistributedDataParallel that wraps the
	// compiled module: a training graph is split at its bucket boundaries (SplitAtBuckets).
	DDP Buckets
}

// Config holds what stays the same from graph to graph.
type Config struct {
	// CheckIR verifies the IR after every stage (PTGO_CHECK=1).
	CheckIR bool
	// DebugDir, when set, receives a directory of every stage's IR per compiled graph.
	DebugDir string
	// CompileC replaces inductor.Compile (tests that must not load C: CGO_ENABLED=0).
	CompileC func(g *fxgraph.Graph, opts inductor.Options) (*inductor.Compiled, error)
	// CUDATarget replaces the process's CUDA device setup (tests: the emulator as cuda:N).
	CUDATarget func(dev int) (*CUDATarget, error)
}

// Host is what the pipeline asks of Python. Objects are opaque handles the Host made or was
// given; 0 stands for None where an object is optional.
type Host interface {
	// Warn shows the user a warning (once per cause: the pipeline deduplicates).
	Warn(msg string)
	// TensorVersion is t._version.
	TensorVersion(t py.Obj) (int64, error)
	// FoldConvBN folds an eval-mode BatchNorm after a convolution (ptgo._runtime.fold_conv_bn);
	// b, gamma and beta may be 0.
	FoldConvBN(w, b, mean, variance, gamma, beta py.Obj, eps float64) (nw, nb py.Obj, err error)
	// CompiledGraph builds the C++ runtime object for a launch plan (ptgo._fast.Graph): consts
	// are bound after the call's inputs; rerun (0: none) takes over when a kernel rejects its
	// data. An error containing "ptgo._fast is not built" means no runtime exists.
	CompiledGraph(plan []byte, lib string, consts []py.Obj, rerun py.Obj) (py.Obj, error)
	// AutogradGraph wraps a compiled forward and backward in one torch.autograd.Function
	// (ptgo._runtime.make_autograd_graph).
	AutogradGraph(r *Region) (py.Obj, error)
	// AutogradProbe runs the torch-level graph g once with torch on dummy data
	// (ptgo._runtime.autograd_probe) and says what eager's autograd does with it: when backward
	// is set, the error the backward of some output raises ("one of the variables needed for
	// gradient computation has been modified by an inplace operation"), and the inputs and
	// outputs torch's ops saved for their backward (Probe.Guards).
	AutogradProbe(g *fxgraph.Graph, attrs map[string]py.Obj, gradEnabled, backward bool) (Probe, error)
	// TorchGraph builds a callable running a graph of torch calls (aot_eager's halves).
	TorchGraph(g *fxgraph.Graph) (py.Obj, error)
	// TorchRerun is a callable running the torch-level graph g with torch on the same inputs.
	TorchRerun(g *fxgraph.Graph, attrs map[string]py.Obj) (py.Obj, error)
	// CUDAGraph builds the runner of a CUDA launch plan (ptgo._cuda.CUDAGraph) over its loaded
	// kernels: buffers from torch's allocator on the plan's device, kernels launched on torch's
	// current stream; consts are bound after the call's inputs.
	CUDAGraph(plan []byte, kernels *inductor.CUDAKernels, consts []py.Obj, rerun py.Obj) (py.Obj, error)
	// SearchPath is Python's sys.path (where a pip-installed NVRTC lives).
	SearchPath() []string
	// AliasChecked wraps a compiled graph that writes the inputs at positions written
	// (ptgo._runtime.alias_checked): a call where one of them shares memory with another input
	// runs fallback (the captured graph with torch) instead, and says so on perf_hints.
	// inputs are the graph inputs' names, for the message.
	// bumps: the compiled graph writes raw memory, so the call bumps these inputs' version
	// counters after it, each position once per bump eager's ops make (InputBumps; nil for
	// torch graphs, whose copy_ bumps them already).
	AliasChecked(compiled, fallback py.Obj, written []int, inputs []string, name string, bumps []int) (py.Obj, error)
	// Chain runs compiled parts one after the other (ptgo._runtime.chain_graphs): part k takes
	// the values inputs[k] names, and the result is the values outputs names.
	Chain(parts []py.Obj, inputs [][]Ref, outputs []Ref) (py.Obj, error)
}

// Stage names where a compile failed.
type Stage uint8

const (
	StageFreeze   Stage = iota // folding constants
	StageInductor              // decomposition, C code generation, the launch plan
	StageAutograd              // the forward/backward split and its compilation
)

// Error is a compile failure to report to the user (ptgo.BackendCompilerFailed), as opposed to
// a graph that runs with torch.
type Error struct {
	Stage Stage
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// NeedsStatic is the answer for a graph with symbolic sizes (dynamic shapes) that a stage
// cannot compile symbolically (inductor.SymbolicUnsupported: an op without a symbolic
// lowering, a stride that would need division by a symbol, a CUDA graph): the caller captures
// the frame again with static shapes (one compile per size, as before dynamic shapes), and
// says why on the dynamic log channel.
type NeedsStatic struct{ Reason string }

func (e *NeedsStatic) Error() string { return "needs static shapes: " + e.Reason }

// Compile runs the pipeline on one graph. It returns the compiled callable, or 0 with a nil
// error when the graph runs with torch (the reason is on perf_hints and in Stats; for AOTEager
// inference graphs nothing is logged: torch is the backend's plan for them). A graph with
// symbolic sizes that a stage cannot compile symbolically gets *NeedsStatic.
func Compile(h Host, cfg Config, r *Request) (py.Obj, error) {
	if r.Graph == nil {
		return 0, nil
	}
	c := &compiler{h: h, cfg: cfg, r: r}
	switch {
	case NeedsAutograd(r.Graph, r.GradEnabled):
		if s := SplitAtBuckets(r.Graph, r.Attrs, r.DDP); s != nil {
			obj, err := c.compileSplit(s, r.Backend == Inductor)
			if obj != 0 || err != nil {
				return obj, err
			}
		}
		obj, err := c.autograd(r.Backend == Inductor)
		if IsSymbolicUnsupported(err) {
			return 0, &NeedsStatic{Reason: SymbolicReason(err)}
		}
		if err == nil {
			obj, err = c.aliasChecked(obj)
		}
		if err != nil {
			return 0, &Error{Stage: StageAutograd, Err: err}
		}
		return obj, nil
	case r.Backend == Inductor:
		if r.Freezing || (r.AutoFreeze && r.GuardVersion != nil) {
			_, err := c.freeze()
			switch {
			case err == nil:
				c.frozen, r.Frozen = true, true
			case r.Freezing:
				return 0, &Error{Stage: StageFreeze, Err: err}
			default:
				// Freezing by default must never fail a compile the user did not ask to freeze
				// (parameters made under inference_mode have no version counter): the graph, with
				// the folds done before the failure (each complete and guarded), runs unfrozen.
				logs.Printf(logs.PerfHints, "%s: not frozen: %v", r.Name, err)
			}
		}
		obj, err := c.inference()
		if IsSymbolicUnsupported(err) {
			return 0, &NeedsStatic{Reason: SymbolicReason(err)}
		}
		if err == nil {
			obj, err = c.aliasChecked(obj)
		}
		if err != nil {
			return 0, &Error{Stage: StageInductor, Err: err}
		}
		return obj, nil
	}
	return 0, nil
}

// compiler is one Compile call.
type compiler struct {
	h   Host
	cfg Config
	r   *Request
	// frozen: the graph's parameters are constants (freezing ran); the plan says so (Frozen).
	frozen bool
	// written are the positions of the graph inputs its decomposition writes (WrittenInputs);
	// inputs their names.
	written []int
	inputs  []string
	// bumps are the written inputs' positions, each once per version bump eager's ops make
	// (InputBumps).
	bumps []int
}

// WrittenInputs are the positions among g's placeholders of the inputs a decomposed graph
// writes (the targets of its prims.copy_ epilogue).
func WrittenInputs(pg *fxgraph.Graph) []int {
	pos := map[*fxgraph.Node]int{}
	for i, p := range pg.Placeholders() {
		pos[p] = i
	}
	var out []int
	seen := map[int]bool{}
	for _, n := range pg.Nodes {
		if n.Target != "prims.copy_" || len(n.Args) == 0 {
			continue
		}
		if dst, ok := n.Args[0].(*fxgraph.Node); ok {
			if i, ok := pos[dst]; ok && !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	return out
}

// InputBumps lists the positions among pg's placeholders of the inputs it writes, each as many
// times as eager's ops bump that input's version counter (fxgraph.Graph.Bumps: one per in-place
// op, none for batch_norm's own writes of its running statistics): a compiled graph's kernels
// write memory without bumping, so its caller bumps these after the call, and ._version and
// autograd's "modified by an inplace operation" error show eager's count. A graph without Bumps
// counts one per written input.
func InputBumps(pg *fxgraph.Graph) []int {
	written := WrittenInputs(pg)
	if pg.Bumps == nil {
		return written
	}
	ph := pg.Placeholders()
	var out []int
	for _, i := range written {
		n, ok := pg.Bumps[ph[i].Name]
		if !ok {
			n = 1
		}
		for k := 0; k < n; k++ {
			out = append(out, i)
		}
	}
	return out
}

// bumpsWritten reports whether AliasChecked bumps the written inputs' version counters after
// the compiled call: its kernels write memory directly. aot_eager's autograd forward is torch
// calls, whose copy_ into an input bumps the version once, as eager's in-place op does (a second
// bump showed in "modified by an inplace operation" errors: fuzz seed 3966).
func (c *compiler) bumpsWritten() bool {
	return !(c.r.Backend == AOTEager && NeedsAutograd(c.r.Graph, c.r.GradEnabled))
}

// bumpsAfter are the version bumps the caller of the compiled graph makes after each call
// (AliasChecked, Region.BumpAfter): every bump eager's ops make (InputBumps) for kernels, which
// write memory directly; for aot_eager's autograd forward, whose copy_ into an input bumps it
// once, the others (an input eager writes twice gets one more).
func (c *compiler) bumpsAfter() []int {
	if c.bumpsWritten() {
		return c.bumps
	}
	var out []int
	seen := map[int]bool{}
	for _, i := range c.bumps {
		if seen[i] {
			out = append(out, i)
		}
		seen[i] = true
	}
	return out
}

// aliasChecked wraps a compiled graph that writes some of its inputs so that a call where one
// of them shares memory with another input runs with torch. The decomposition made the writes
// functional assuming inputs do not alias (x1.neg_() then a read of x0 = base[:-1] when x1 is
// base[1:] reads x0's old values), as AOTAutograd assumes and checks at run time; the aliasing
// is a fact of the call, not of the guarded metadata.
func (c *compiler) aliasChecked(obj py.Obj) (py.Obj, error) {
	if obj == 0 || len(c.written) == 0 {
		return obj, nil
	}
	fb, err := c.h.TorchRerun(c.r.Graph, c.r.Attrs)
	if err != nil {
		return 0, err
	}
	return c.h.AliasChecked(obj, fb, c.written, c.inputs, c.r.Name, c.bumpsAfter())
}

// ---- statistics -------------------------------------------------------------------------------

var stats struct {
	sync.Mutex
	compiled, autograd, fx, cuda, fallbacks int
	reasons                                 map[string]int
}

// StatsSnapshot is what the C backend did since the process started (tests, the bench report).
type StatsSnapshot struct {
	// Compiled counts inference graphs the C backend compiled.
	Compiled int `json:"compiled"`
	// Autograd counts autograd regions whose forward and backward the C backend compiled.
	Autograd int `json:"autograd"`
	// FX counts torch.fx graphs (CompileFX) the pipeline compiled, either path.
	FX int `json:"fx"`
	// CUDA counts inference graphs compiled to CUDA kernels (emulated ones included).
	CUDA int `json:"cuda"`
	// Fallbacks counts graphs that run with torch instead, and Reasons says why.
	Fallbacks int            `json:"fallbacks"`
	Reasons   map[string]int `json:"reasons"`
}

// Stats returns a copy of the counters.
func Stats() StatsSnapshot {
	stats.Lock()
	defer stats.Unlock()
	s := StatsSnapshot{Compiled: stats.compiled, Autograd: stats.autograd, FX: stats.fx, CUDA: stats.cuda, Fallbacks: stats.fallbacks}
	if stats.reasons != nil {
		s.Reasons = map[string]int{}
		for k, v := range stats.reasons {
			s.Reasons[k] = v
		}
	}
	return s
}

func count(n *int) {
	stats.Lock()
	*n++
	stats.Unlock()
}

// NoteFallback counts a graph that runs with torch and names it on perf_hints.
func NoteFallback(name, reason string) {
	stats.Lock()
	stats.fallbacks++
	if stats.reasons == nil {
		stats.reasons = map[string]int{}
	}
	stats.reasons[reason]++
	stats.Unlock()
	logs.Printf(logs.PerfHints, "%s runs with torch, not ptgo's C backend: %s", name, reason)
}

var (
	noCompilerOnce sync.Once
	noFastOnce     sync.Once
	seqMu          sync.Mutex
	compileSeq     int
)

// noRuntime handles a Host error saying the C++ runtime is missing; false for other errors.
func (c *compiler) noRuntime(err error, name string) bool {
	if !strings.Contains(err.Error(), "ptgo._fast is not built") {
		return false
	}
	noFastOnce.Do(func() {
		c.h.Warn("ptgo: the C++ runtime ptgo._fast is not built (install libtorch-dev and run make setup); compiled graphs run with torch")
	})
	NoteFallback(name, "ptgo._fast is not built")
	return true
}

func (c *compiler) compileC(g *fxgraph.Graph, opts inductor.Options) (*inductor.Compiled, error) {
	if c.cfg.CompileC != nil {
		return c.cfg.CompileC(g, opts)
	}
	return inductor.Compile(g, opts)
}

// debugDir makes the next per-graph debug directory (and writes the torch-level graph there);
// "" when PTGO_DEBUG_DIR is not set.
func (c *compiler) debugDir() string {
	if c.cfg.DebugDir == "" {
		return ""
	}
	seqMu.Lock()
	compileSeq++
	n := compileSeq
	seqMu.Unlock()
	dir := filepath.Join(c.cfg.DebugDir, fmt.Sprintf("%03d_%s", n, sanitizeName(c.r.Name)))
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "00_captured.txt"), []byte(c.r.Graph.String()), 0o644)
	}
	return dir
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			return r
		}
		return '_'
	}, s)
}

// consts are the live tensors of lifted get_attrs, in the order liftAttrs put them.
func (c *compiler) consts(paths []string) []py.Obj {
	var out []py.Obj
	for _, p := range paths {
		out = append(out, c.r.Attrs[p])
	}
	return out
}

// rerun is the torch re-run of the request's graph when rerunStatus allows one, else 0.
func (c *compiler) rerun(pg *fxgraph.Graph) py.Obj {
	if rerunStatus(c.r.Graph, pg) == 0 {
		return 0
	}
	obj, err := c.h.TorchRerun(c.r.Graph, c.r.Attrs)
	if err != nil {
		return 0
	}
	return obj
}

// regionRerun is rerun for an autograd region, whose Python wrapper can also restore torch's
// generator before the rerun (RerunnableAfterRNG).
func (c *compiler) regionRerun(pg *fxgraph.Graph) py.Obj {
	if RerunnableAfterRNG(c.r.Graph, pg) {
		if obj, err := c.h.TorchRerun(c.r.Graph, c.r.Attrs); err == nil {
			return obj
		}
		return 0
	}
	return c.rerun(pg)
}

// isReported reports whether a decomposition or split error is "runs with torch" rather than a
// failure.
func isUnsupported(err error) bool { return errors.Is(err, primtorch.ErrUnsupported) }
