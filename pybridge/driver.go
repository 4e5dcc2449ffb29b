package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"ptgo/bytecode"
	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/pipeline"
	"ptgo/primtorch"
	_ "ptgo/primtorch/decomp" // registers decomposition status for the ops listing
	"ptgo/pybridge/capi"
)

// The pipeline driver: one captured frame through capture, the backend, and transformed code.

// frameResult is what the shim gets back for a frame (see ptgo_result).
type frameResult struct {
	status  int
	message string
	code    py.Obj
	guards  []bytecode.Guard
	nregs   int
	// retryStatic: the backend refused the graph's symbolic sizes; capture again, static
	retryStatic bool
}

const (
	statusOK          = 0
	statusEager       = 1
	statusSkipCode    = 2
	statusError       = 3
	statusUnsupported = 4
)

// ctxInfo is what the compile context (ptgo.eval_frame._Context) says.
type ctxInfo struct {
	obj         py.Obj
	fullgraph   bool
	backendName string
	inductor    bool // the backend is ptgo's own C backend: compile in Go, no torch.fx round trip
	aotEager    bool // the backend is "aot_eager": ptgo's autograd, graphs run by torch
	freezing    int  // options={"freezing": ...}: 0 False, 1 True, 2 not given (freeze where safe)
	dynamic     bytecode.DynamicMode
	root        py.Obj // the module ptgo.compile was given (0: a function, or it died)
}

func readCtx(api py.API, ctx py.Obj) ctxInfo {
	ci := ctxInfo{obj: ctx}
	if v, err := api.GetAttr(ctx, "fullgraph"); err == nil {
		n, _ := api.Int(v)
		ci.fullgraph = n != 0
	}
	if v, err := api.GetAttr(ctx, "backend_name"); err == nil {
		ci.backendName, _ = api.Str(v)
	}
	if v, err := api.GetAttr(ctx, "ptgo_inductor"); err == nil {
		n, _ := api.Int(v)
		ci.inductor = n != 0
	}
	if v, err := api.GetAttr(ctx, "ptgo_aot_eager"); err == nil {
		n, _ := api.Int(v)
		ci.aotEager = n != 0
	}
	if v, err := api.GetAttr(ctx, "dynamic"); err == nil {
		switch api.Kind(v) {
		case py.KNone:
			ci.dynamic = bytecode.DynamicAuto
		case py.KBool:
			if n, _ := api.Int(v); n != 0 {
				ci.dynamic = bytecode.DynamicAll
			} else {
				ci.dynamic = bytecode.DynamicNever
			}
		}
	}
	if v, err := api.GetAttr(ctx, "freezing"); err == nil {
		n, _ := api.Int(v)
		ci.freezing = int(n)
	}
	if ref, err := api.GetAttr(ctx, "root"); err == nil && api.Kind(ref) != py.KNone {
		if m, err := api.Call(ref, nil, nil); err == nil && api.Kind(m) == py.KNNModule {
			ci.root = m
		}
	}
	return ci
}

func runtimeCall(api py.API, name string, args ...py.Obj) (py.Obj, error) {
	fn, err := api.GetAttr(api.Runtime(), name)
	if err != nil {
		return 0, err
	}
	return api.Call(fn, args, nil)
}

func configInt(api py.API, name string, def int) int {
	v, err := runtimeCall(api, "config_value", api.NewStr(name))
	if err != nil {
		return def
	}
	n, err := api.Int(v)
	if err != nil {
		return def
	}
	return int(n)
}

func configBool(api py.API, name string) bool { return configInt(api, name, 0) != 0 }

// compileFrame captures one frame and builds its cache entry.
func compileFrame(api *capi.API, ctxObj, fn, code py.Obj, args []py.Obj, failedGuard string) *frameResult {
	start := time.Now()
	if panicNextCompile {
		panicNextCompile = false
		panic("a panic requested by ptgo's tests (request panic_next_compile)")
	}
	ctx := readCtx(api, ctxObj)
	res := compileFrameWith(api, ctx, fn, code, args, failedGuard, start)
	if res.retryStatic {
		ctx.dynamic = bytecode.DynamicStatic
		res = compileFrameWith(api, ctx, fn, code, args, failedGuard, start)
	}
	return res
}

// compileFrameWith is compileFrame under a context; retryStatic says the backend refused the
// graph's symbolic sizes and the frame should be captured again with static shapes (no record
// of this attempt is kept).
func compileFrameWith(api *capi.API, ctx ctxInfo, fn, code py.Obj, args []py.Obj, failedGuard string, start time.Time) (res *frameResult) {
	env := bytecode.NewEnv(api)
	qual, file, line := codeName(api, code)
	if failedGuard != "" {
		logs.Printf(logs.Recompiles, "Recompiling function %s in %s:%d\n    triggered by the guard failure: %s", qual, file, line, failedGuard)
	}
	req := &bytecode.FrameRequest{Func: fn, Code: code, Args: args, AllowBreaks: !ctx.fullgraph, Root: ctx.root, Dynamic: ctx.dynamic,
		MaxSteps: configInt(api, "max_trace_instructions", 2_000_000), MaxDepth: configInt(api, "max_inline_depth", 64)}
	cap, err := bytecode.CaptureFrame(env, req)
	rec := &compileRecord{Function: qual, File: file, Line: line}
	defer func() {
		if res == nil || !res.retryStatic {
			rec.Seconds = time.Since(start).Seconds()
			recordCompile(rec)
		}
	}()
	if err != nil {
		var ue *bytecode.UserError
		if errors.As(err, &ue) {
			// Eager raises for these inputs (or ptgo's meta is stricter than torch): the frame runs
			// eagerly, with fullgraph=True too, so the user gets torch's exception and traceback.
			rec.BreakReason, rec.BreakWhere = ue.Error(), ue.Where
			logs.Printf(logs.GraphBreaks, "%s (%s:%d) runs eagerly: %s\n    at %s", qual, short(file), line, ue.Error(), strings.Join(ue.Stack, "\n       "))
			return eagerResult(cap)
		}
		var u *bytecode.Unsupported
		if errors.As(err, &u) {
			rec.BreakReason, rec.BreakWhere, rec.BreakHint = u.Reason, u.Where, u.Hint
			logs.Printf(logs.GraphBreaks, "Graph break in %s (%s:%d): %s\n    at %s%s", qual, short(file), line, u.Reason, u.Where, hintLine(u.Hint))
			if ctx.fullgraph {
				return &frameResult{status: statusUnsupported, message: fmt.Sprintf(
					"ptgo.compile(fullgraph=True): %s at %s%s (while compiling %s, %s:%d)", u.Reason, u.Where, hintLine(u.Hint), qual, file, line)}
			}
			return eagerResult(cap)
		}
		return failure(api, cap, fmt.Sprintf("ptgo: capturing %s (%s:%d) failed: %v", qual, file, line, err))
	}
	if b := cap.Break; b != nil {
		u := b.Reason
		rec.BreakReason, rec.BreakWhere, rec.BreakHint = u.Reason, u.Where, u.Hint
		logs.Printf(logs.GraphBreaks, "Graph break in %s (%s:%d): %s\n    at %s%s\n    the code before it is compiled; it runs eagerly, then %s resumes", qual, short(file), line, u.Reason, u.Where, hintLine(u.Hint), qual)
	}
	if cap.Graph == nil && cap.Break == nil && (cap.Effects == nil || cap.Effects.Empty()) {
		logs.Debugf(logs.Dynamo, "%s (%s:%d) does no tensor work; it runs eagerly", qual, short(file), line)
		return eagerResult(cap)
	}
	if state.config.CheckIR {
		if err := fxgraph.Verify(cap.Graph, nil); err != nil {
			return failure(api, cap, "ptgo BUG: the captured graph does not verify: "+err.Error())
		}
	}
	rec.Guards = cap.Guards.Checks()
	var compiled py.Obj
	if cap.Graph != nil {
		rec.Ops = countOps(cap.Graph)
		rec.Graph = cap.Graph.String()
		if logs.On(logs.GraphCode) {
			if err := logGraphCode(api, cap, fmt.Sprintf("%s (%s:%d)", qual, short(file), line)); err != nil {
				logs.Debugf(logs.Dynamo, "graph_code: %v", err)
			}
		}
		if logs.On(logs.Graph) {
			logs.Printf(logs.Graph, "captured %s (%s:%d):\n%s", qual, short(file), line, cap.Graph.String())
		}
		var err error
		if ctx.inductor || ctx.aotEager {
			if compiled, err = compileWithPipeline(api, ctx, cap, qual, file, line); err != nil {
				var ns *pipeline.NeedsStatic
				if errors.As(err, &ns) && req.Dynamic != bytecode.DynamicStatic {
					// the backend cannot compile these symbolic sizes: the frame again, static
					logs.Printf(logs.Dynamic, "%s (%s:%d): compiling with static shapes: %s", qual, short(file), line, ns.Reason)
					bytecode.RefuseDynamic(cap.Code, ns.Reason)
					return &frameResult{retryStatic: true}
				}
				return failure(api, cap, err.Error())
			}
			// what the compile assumed about the sizes (aotautograd's split) guards the result
			cap.InstallCompileShapeGuards()
			rec.Guards = cap.Guards.Checks()
		}
		if compiled == 0 {
			compiled, err = compileGraph(api, ctx, cap)
			if err != nil {
				return failure(api, cap, fmt.Sprintf("ptgo: backend %s failed on the graph of %s (%s:%d): %v", ctx.backendName, qual, file, line, err))
			}
		}
	}
	newCode, asm, err := bytecode.TransformedCode(env, code, cap, compiled)
	if err != nil {
		var u *bytecode.Unsupported
		if errors.As(err, &u) {
			logs.Printf(logs.GraphBreaks, "Graph break in %s (%s:%d): %s", qual, short(file), line, u.Reason)
			if ctx.fullgraph {
				return &frameResult{status: statusUnsupported, message: fmt.Sprintf("ptgo.compile(fullgraph=True): %s (in %s, %s:%d)", u.Reason, qual, file, line)}
			}
			return eagerResult(cap)
		}
		return failure(api, cap, err.Error())
	}
	if logs.On(logs.Guards) {
		logs.Printf(logs.Guards, "GUARDS for %s (%s:%d):\n  %s", qual, short(file), line, strings.Join(cap.Guards.Checks(), "\n  "))
	}
	if logs.On(logs.Bytecode) {
		logs.Printf(logs.Bytecode, "TRANSFORMED BYTECODE for %s (%s:%d):\n%s", qual, short(file), line, asm.String())
	}
	rec.Compiled = true
	return &frameResult{status: statusOK, code: newCode, guards: cap.Guards.List, nregs: cap.Guards.NRegs}
}

func hintLine(h string) string {
	if h == "" {
		return ""
	}
	return "\n    hint: " + h
}

func short(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		return file[i+1:]
	}
	return file
}

// eagerResult caches "run the original code" under the guards gathered so far: the same
// outcome follows whenever they hold.
func eagerResult(cap *bytecode.Capture) *frameResult {
	if cap == nil || cap.Guards == nil {
		return &frameResult{status: statusSkipCode}
	}
	return &frameResult{status: statusEager, guards: cap.Guards.List, nregs: cap.Guards.NRegs}
}

// failure is a compile error: raised as ptgo.BackendCompilerFailed, or, with
// ptgo.config.suppress_errors, a warning and eager execution.
func failure(api py.API, cap *bytecode.Capture, msg string) *frameResult {
	if configBool(api, "suppress_errors") {
		_, _ = runtimeCall(api, "warn", api.NewStr(msg+"; running eagerly (ptgo.config.suppress_errors is set)"))
		return eagerResult(cap)
	}
	return &frameResult{status: statusError, message: msg + "\nSet ptgo.config.suppress_errors = True to run such frames eagerly instead."}
}

func codeName(api py.API, code py.Obj) (qual, file string, line int) {
	if v, err := api.GetAttr(code, "co_qualname"); err == nil {
		qual, _ = api.Str(v)
	}
	if v, err := api.GetAttr(code, "co_filename"); err == nil {
		file, _ = api.Str(v)
	}
	if v, err := api.GetAttr(code, "co_firstlineno"); err == nil {
		n, _ := api.Int(v)
		line = int(n)
	}
	return
}

// countOps counts the graph's operations: calls, but not grad-mode switches or the getitems
// that unpack a multi-output op.
func countOps(g *fxgraph.Graph) int {
	n := 0
	for _, node := range g.Nodes {
		switch {
		case node.Op != fxgraph.CallFunction && node.Op != fxgraph.CallMethod:
		case node.Target == "torch._C._set_grad_enabled":
		case node.Target == "operator.getitem" && !isTensorIndex(node):
		default:
			n++
		}
	}
	return n
}

// isTensorIndex tells a real x[i] from the getitem that unpacks a multi-output op.
func isTensorIndex(n *fxgraph.Node) bool {
	if len(n.Args) == 0 {
		return false
	}
	src, ok := n.Args[0].(*fxgraph.Node)
	if !ok {
		return false
	}
	_, tupleMeta := src.Meta.([]any)
	return !tupleMeta
}

// logGraphCode prints the captured graph as torch.fx code on PTGO_LOGS=graph_code, whatever
// the backend (the default one compiles without a GraphModule).
func logGraphCode(api *capi.API, cap *bytecode.Capture, title string) error {
	js, attrs, err := graphForPython(api, cap.Graph, cap.Attrs)
	if err != nil {
		return err
	}
	_, err = runtimeCall(api, "log_graph_code", js, attrs, api.NewStr(title))
	return err
}

// compileGraph exports the graph to torch.fx and calls the backend; returns the callable.
func compileGraph(api *capi.API, ctx ctxInfo, cap *bytecode.Capture) (py.Obj, error) {
	js, attrs, err := graphForPython(api, cap.Graph, cap.Attrs)
	if err != nil {
		return 0, err
	}
	examples := make([]py.Obj, len(cap.Inputs))
	for i, in := range cap.Inputs {
		examples[i] = in.Obj
	}
	return runtimeCall(api, "compile_graph", ctx.obj, js, attrs, api.NewTuple(examples), api.NewStr(cap.Graph.String()))
}

// graphForPython is a torch-level graph as ptgo.fx_export reads it: its JSON and the dict of its
// get_attr tensors.
func graphForPython(api py.API, g *fxgraph.Graph, tensors map[string]py.Obj) (js, attrs py.Obj, err error) {
	data, err := fxgraph.EncodeJSON(g)
	if err != nil {
		return 0, 0, err
	}
	var keys, vals []py.Obj
	for path, o := range tensors {
		keys = append(keys, api.NewStr(path))
		vals = append(vals, o)
	}
	attrs, err = api.NewDict(keys, vals)
	return api.NewStr(string(data)), attrs, err
}

// ---- statistics for explain() and tests ----------------------------------------------------

type compileRecord struct {
	Function    string   `json:"function"`
	File        string   `json:"file"`
	Line        int      `json:"line"`
	Compiled    bool     `json:"compiled"`
	Ops         int      `json:"ops"`
	Graph       string   `json:"graph,omitempty"`
	Guards      []string `json:"guards,omitempty"`
	BreakReason string   `json:"break_reason,omitempty"`
	BreakWhere  string   `json:"break_where,omitempty"`
	BreakHint   string   `json:"break_hint,omitempty"`
	Seconds     float64  `json:"seconds"`
}

// compileLog is read by requests that may run on another thread while a compile has released
// the GIL in Python code: guard it (never across a callback into Python).
var (
	compileLogMu sync.Mutex
	compileLog   []*compileRecord
)

// panicNextCompile makes the next compile panic: tests check that a Go panic reaches Python as
// ptgo.BackendCompilerFailed and the process survives.
var panicNextCompile bool

// compileLogCap bounds the log (ptgo.explain and tests read it after a reset): its records hold
// graph and guard text, a few KB each, and a process that compiles and drops functions for
// ever must not keep them all (issue 8).
const compileLogCap = 256

func recordCompile(r *compileRecord) {
	compileLogMu.Lock()
	defer compileLogMu.Unlock()
	if len(compileLog) >= compileLogCap {
		// copy down instead of reslicing, so the dropped records' memory is freed
		n := copy(compileLog, compileLog[len(compileLog)-compileLogCap+1:])
		clear(compileLog[n:])
		compileLog = compileLog[:n]
	}
	compileLog = append(compileLog, r)
}

// handleRequest serves the non-per-frame calls (ptgo._C.request).
func handleRequest(method string, in []byte) ([]byte, error) {
	switch method {
	case "reset":
		compileLogMu.Lock()
		compileLog = nil
		compileLogMu.Unlock()
		bytecode.ResetDynamicHistory()
		return []byte("{}"), nil
	case "set_logs":
		var cfg map[string]string
		if err := json.Unmarshal(in, &cfg); err != nil {
			return nil, err
		}
		return []byte("{}"), logs.Configure(cfg)
	case "panic_next_compile":
		panicNextCompile = true
		return []byte("{}"), nil
	case "meta_rejects":
		// Tests: {"targets": ["torch.sin"]} makes those meta functions stricter than torch's.
		var req struct {
			Targets []string `json:"targets"`
		}
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		bytecode.SetMetaRejects(req.Targets)
		return []byte("{}"), nil
	case "inductor_stats":
		return json.Marshal(pipeline.Stats())
	case "compile_log":
		compileLogMu.Lock()
		defer compileLogMu.Unlock()
		return json.Marshal(compileLog)
	case "ops":
		return json.Marshal(listOps())
	case "autocast_table":
		// {"device": "cpu", "torch": "1.13.0"} → ATen name → policy ("fp32", ...); null when
		// ptgo has no table for that torch.
		var req struct{ Device, Torch string }
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		table, ok := primtorch.AutocastTable(req.Device, req.Torch)
		if !ok {
			return []byte("null"), nil
		}
		out := map[string]string{}
		for name, p := range table {
			out[name] = p.String()
		}
		return json.Marshal(out)
	case "fx_import":
		return fxImportText(in)
	}
	return nil, fmt.Errorf("unknown request %q", method)
}

// opRow is one line of `python -m ptgo.ops`.
type opRow struct {
	Name      string   `json:"name"`
	Schema    string   `json:"schema"`
	Kind      string   `json:"kind"`
	Promotion string   `json:"promotion"`
	Flags     []string `json:"flags,omitempty"`
	Targets   []string `json:"targets"`
	Meta      string   `json:"meta"`   // the meta function's status: ok, partial: ..., data-dependent
	Decomp    string   `json:"decomp"` // decomposed, fallback, n/a
	Prim      bool     `json:"prim"`   // a core op (prims.*) rather than a torch-level op
}

func listOps() []opRow {
	var rows []opRow
	for _, op := range primtorch.Ops() {
		rows = append(rows, opRow{Name: op.Name, Schema: op.Schema.Text, Kind: op.Kind.String(),
			Promotion: op.Promotion.String(), Flags: op.Flags(), Targets: op.Targets, Meta: op.Status(),
			Decomp: op.DecompStatus(), Prim: op.IsPrim()})
	}
	return rows
}
