package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"ptgo/bytecode"
	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/inductor"
	"ptgo/kernels"
	"ptgo/logs"
	"ptgo/primtorch"
	"ptgo/primtorch/decomp"
)

// ptgo's own backend ("inductor"): decompose the captured graph into prims, lift parameters to
// inputs, compile to C (inductor, kernels) and hand the launch plan to the C++ runtime
// (ptgo._fast.Graph), which binds the parameters as the last inputs. Graphs the C backend cannot
// run — ones autograd must see, non-CPU tensors, writes through views of inputs, ops with no
// lowering — run with torch instead (counted and named on perf_hints); coverage gaps cost speed,
// never correctness.

var (
	noCompilerOnce sync.Once
	noFastOnce     sync.Once
	compileSeq     int
)

// inductorStats counts what the C backend did, for tests and the benchmark report.
var inductorStats struct {
	sync.Mutex
	Compiled, Fallbacks int
	Reasons             map[string]int
}

func noteFallback(qual, reason string) {
	inductorStats.Lock()
	inductorStats.Fallbacks++
	if inductorStats.Reasons == nil {
		inductorStats.Reasons = map[string]int{}
	}
	inductorStats.Reasons[reason]++
	inductorStats.Unlock()
	logs.Printf(logs.PerfHints, "%s runs with torch, not ptgo's C backend: %s", qual, reason)
}

// unsuitable says why a graph cannot run on the C backend ("" when it can).
func unsuitable(g *fxgraph.Graph) string {
	for _, n := range g.Nodes {
		for _, m := range metasOf(n.Meta) {
			if m.Device.Type != "cpu" {
				return "a tensor on " + m.Device.String()
			}
			if m.RequiresGrad && n.Op != fxgraph.Placeholder && n.Op != fxgraph.GetAttr {
				return "autograd needs the graph (a result requires grad); the C backend compiles inference graphs"
			}
		}
	}
	return ""
}

func metasOf(meta any) []*primtorch.TensorMeta {
	switch m := meta.(type) {
	case *primtorch.TensorMeta:
		return []*primtorch.TensorMeta{m}
	case []any:
		var out []*primtorch.TensorMeta
		for _, x := range m {
			out = append(out, metasOf(x)...)
		}
		return out
	}
	return nil
}

// compileInductor compiles a captured graph for the C backend. ok=false means it runs with torch
// (the reason is logged); err is a compile failure to report (ptgo.BackendCompilerFailed).
func compileInductor(api py.API, cap *bytecode.Capture, qual string) (compiled py.Obj, ok bool, err error) {
	if reason := unsuitable(cap.Graph); reason != "" {
		noteFallback(qual, reason)
		return 0, false, nil
	}
	pg, err := decomp.Decompose(cap.Graph, decomp.Options{Check: state.config.CheckIR, NoGrad: !cap.GradEnabled})
	if err != nil {
		if errors.Is(err, primtorch.ErrUnsupported) {
			noteFallback(qual, err.Error())
			return 0, false, nil
		}
		return 0, false, err
	}
	lifted, attrPaths := liftAttrs(pg)
	opts := inductor.Options{Check: state.config.CheckIR}
	if dir := state.config.DebugDir; dir != "" {
		compileSeq++
		opts.DebugDir = filepath.Join(dir, fmt.Sprintf("%03d_%s", compileSeq, sanitizeName(qual)))
		if err := os.MkdirAll(opts.DebugDir, 0o755); err == nil {
			_ = os.WriteFile(filepath.Join(opts.DebugDir, "00_captured.txt"), []byte(cap.Graph.String()), 0o644)
		}
	}
	comp, err := inductor.Compile(lifted, opts)
	if err != nil {
		var ce *kernels.CompileError
		switch {
		case errors.Is(err, kernels.ErrNoCompiler):
			noCompilerOnce.Do(func() {
				_, _ = runtimeCall(api, "warn", api.NewStr("ptgo: no C compiler found ("+err.Error()+"); compiled graphs run with torch instead of generated C kernels"))
			})
			noteFallback(qual, "no C compiler")
			return 0, false, nil
		case errors.As(err, &ce):
			return 0, false, err
		case strings.Contains(err.Error(), "ptgo BUG"):
			return 0, false, err
		}
		noteFallback(qual, err.Error())
		return 0, false, nil
	}
	plan, err := comp.Program.JSON()
	if err != nil {
		return 0, false, err
	}
	var consts []py.Obj
	for _, p := range attrPaths {
		consts = append(consts, cap.Attrs[p])
	}
	lib := ""
	if comp.Library != nil {
		lib = comp.Library.Path
	}
	g, err := runtimeCall(api, "make_compiled_graph", api.NewStr(string(plan)), api.NewStr(lib), api.NewList(consts),
		torchRerun(api, cap, pg))
	if err != nil {
		if strings.Contains(err.Error(), "ptgo._fast is not built") {
			noFastOnce.Do(func() {
				_, _ = runtimeCall(api, "warn", api.NewStr("ptgo: the C++ runtime ptgo._fast is not built (install libtorch-dev and run make setup); compiled graphs run with torch"))
			})
			noteFallback(qual, "ptgo._fast is not built")
			return 0, false, nil
		}
		return 0, false, err
	}
	inductorStats.Lock()
	inductorStats.Compiled++
	inductorStats.Unlock()
	return g, true, nil
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

// liftAttrs turns get_attr nodes into placeholders after the graph's own inputs (the C backend
// takes every tensor as an input); it returns the attribute paths in that order.
func liftAttrs(g *fxgraph.Graph) (*fxgraph.Graph, []string) {
	g = fxgraph.Clone(g)
	var ph, attrs, rest []*fxgraph.Node
	var paths []string
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder:
			ph = append(ph, n)
		case fxgraph.GetAttr:
			paths = append(paths, n.Target)
			n.Op, n.Target = fxgraph.Placeholder, n.Name
			attrs = append(attrs, n)
		default:
			rest = append(rest, n)
		}
	}
	g.Nodes = append(append(ph, attrs...), rest...)
	g.Renumber()
	return g, paths
}
