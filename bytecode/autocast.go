package bytecode

import (
	"fmt"
	"slices"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Autocast (A71). torch.autocast's state is part of the trace: read (and guarded) when the frame
// starts, changed by `with torch.autocast(...)` blocks inside it, answered to
// torch.is_autocast_*enabled() and friends. While CPU autocast is on, a recorded op gets torch's
// casting policy (primtorch's autocast table for the installed torch): its eligible operands are
// cast with explicit Tensor.to nodes before it, so the graph holds ordinary dtypes and runs the
// same with or without autocast around it. An op the table leaves alone but whose torch
// implementation may call listed ops (primtorch.AutocastMayDiffer), every listed op, and every
// op at all under a torch whose row is another version's (primtorch.AutocastFor's tested), is
// checked against torch itself (ptgo._runtime.autocast_probe: the call on zero-filled CPU tensors
// under the same autocast state, once per call signature); a dtype that differs stops the
// capture there, so that op runs with torch. CUDA autocast is not captured: an op on CUDA
// tensors while it is on stops the capture.

type autocastMode struct {
	Enabled bool
	DType   primtorch.DType
}

type autocastState struct {
	CPU, CUDA autocastMode
	Cache     bool
}

// autocast is the tracer's autocast bookkeeping.
type autocastTrace struct {
	autocastState
	row     *primtorch.AutocastRow          // the CPU row for this torch; nil: ptgo has none
	table   map[string]primtorch.CastPolicy // row's policy table; nil: ptgo has none
	tested  bool                            // row is this torch version's own (not a neighbour's)
	version string
	casting bool // recording a cast: no policy applies to it
	// cached are the casts of parameters (leaves requiring grad) to the autocast dtype, reused
	// as torch's autocast cache reuses them (one cast per weight and autocast region).
	cached map[castKey]*TensorV
}

type castKey struct {
	node  *fxgraph.Node
	dtype primtorch.DType
}

// readAutocast reads torch's autocast state when the frame starts and guards it: a graph traced
// without autocast is never reused under it, nor one traced under it without it or under
// another dtype.
func (t *Tracer) readAutocast() error {
	call := func(path string) (py.Obj, py.Obj, bool, error) {
		fn, ok := t.env.TryKnown(path)
		if !ok {
			return 0, 0, false, nil
		}
		v, err := t.api.Call(fn, nil, nil)
		return fn, v, err == nil, err
	}
	// guards are described by torch 1.13's names of the state (the calls are _compat's)
	desc := map[string]string{
		"ptgo._compat.autocast_cpu_enabled": "torch.is_autocast_cpu_enabled()", "ptgo._compat.autocast_cuda_enabled": "torch.is_autocast_enabled()",
		"ptgo._compat.autocast_cpu_dtype": "torch.get_autocast_cpu_dtype()", "ptgo._compat.autocast_cuda_dtype": "torch.get_autocast_gpu_dtype()",
		"ptgo._compat.autocast_cache_enabled": "torch.is_autocast_cache_enabled()",
	}
	boolOf := func(path string) (bool, error) {
		fn, v, ok, err := call(path)
		if !ok || err != nil {
			return false, err
		}
		n, _ := t.api.Int(v)
		t.guards.CallBool(fn, n != 0, desc[path])
		return n != 0, nil
	}
	dtypeOf := func(path string) (primtorch.DType, error) {
		fn, v, ok, err := call(path)
		if !ok || err != nil {
			return 0, err
		}
		d, known := t.env.DTypeOf(v)
		if !known {
			return 0, fmt.Errorf("ptgo BUG: %s() returned %s", path, t.api.Repr(v))
		}
		t.guards.ID(&CallSource{Fn: fn, Desc: desc[path]}, v, t.api.Repr(v))
		return d, nil
	}
	a := &t.autocast
	var err error
	// the queries are ptgo._compat's (a table by torch version: torch 2.4 deprecated the
	// per-device functions)
	if a.CPU.Enabled, err = boolOf("ptgo._compat.autocast_cpu_enabled"); err != nil {
		return err
	}
	if a.CUDA.Enabled, err = boolOf("ptgo._compat.autocast_cuda_enabled"); err != nil {
		return err
	}
	a.CPU.DType, a.CUDA.DType, a.Cache = primtorch.BFloat16, primtorch.Float16, true
	if a.CPU.Enabled {
		if a.CPU.DType, err = dtypeOf("ptgo._compat.autocast_cpu_dtype"); err != nil {
			return err
		}
	}
	if a.CUDA.Enabled {
		if a.CUDA.DType, err = dtypeOf("ptgo._compat.autocast_cuda_dtype"); err != nil {
			return err
		}
	}
	if a.CPU.Enabled || a.CUDA.Enabled {
		if a.Cache, err = boolOf("ptgo._compat.autocast_cache_enabled"); err != nil {
			return err
		}
	}
	return nil
}

// autocastModeArg is the mode torch 2's device-type argument names (torch.is_autocast_enabled(
// "cpu"), torch.get_autocast_dtype("cuda")); none is CUDA's, as torch 1.13's is_autocast_enabled().
func (t *Tracer) autocastModeArg(f *frame, name string, args []Value, kw []kwArg) (autocastMode, error) {
	var dev Value
	switch {
	case len(args) == 1 && len(kw) == 0:
		dev = args[0]
	case len(args) == 0 && len(kw) == 1 && kw[0].Name == "device_type":
		dev = kw[0].Val
	case len(args) == 0 && len(kw) == 0:
		return t.autocast.CUDA, nil
	default:
		return autocastMode{}, f.unsupported("", "%s with these arguments", name)
	}
	c, ok := dev.(*ConstV)
	if !ok || c.Kind != py.KStr {
		return autocastMode{}, f.unsupported("", "%s of a device type that is not a constant string", name)
	}
	switch c.S {
	case "cpu":
		return t.autocast.CPU, nil
	case "cuda":
		return t.autocast.CUDA, nil
	}
	return autocastMode{}, f.unsupported("", "%s(%q): ptgo traces CPU and CUDA autocast only", name, c.S)
}

func (t *Tracer) torchVersion() string {
	a := &t.autocast
	if a.version == "" {
		a.version = "?"
		if v, ok := t.env.TryKnown("torch.__version__"); ok {
			if s, err := t.api.Str(v); err == nil {
				a.version = s
			}
		}
		if row, tested, ok := primtorch.AutocastFor("cpu", a.version); ok {
			a.row, a.table, a.tested = row, row.Policy, tested
		}
	}
	return a.version
}

// autocastCtx is what a torch.autocast(...) manager sets when entered.
type autocastCtx struct {
	Device string // "cpu" or "cuda"
	Mode   autocastMode
	Cache  bool
	Prev   []autocastState
}

func (c *autocastCtx) describe() string {
	return fmt.Sprintf("torch.autocast(%q, dtype=%s, enabled=%v)", c.Device, c.Mode.DType, c.Mode.Enabled)
}

// newAutocastCtx is torch.autocast.__init__: dtype None is the device's current autocast dtype,
// cache_enabled None the current cache setting; CPU autocast takes the dtypes of the installed
// torch's row (1.13: bfloat16; 2.14: bfloat16 and float16). Another dtype makes torch warn and
// disable autocast (2.14) or raise (1.13), which the trace leaves to eager.
func (t *Tracer) newAutocastCtx(f *frame, device, dtype, enabled, cache Value) (*autocastCtx, error) {
	c := &autocastCtx{Cache: t.autocast.Cache}
	dev, ok := device.(*ConstV)
	if !ok || dev.Kind != py.KStr || (dev.S != "cpu" && dev.S != "cuda") {
		return nil, f.unsupported("", "torch.autocast with device_type %s", describe(device))
	}
	c.Device = dev.S
	on, err := t.truthy(f, enabled)
	if err != nil {
		return nil, err
	}
	c.Mode.Enabled = on
	if c.Device == "cpu" {
		c.Mode.DType = t.autocast.CPU.DType
	} else {
		c.Mode.DType = t.autocast.CUDA.DType
	}
	if dtype != nil && !isNone(dtype) {
		o, err := t.toObj(f, dtype)
		if err != nil {
			return nil, err
		}
		d, known := t.env.DTypeOf(o)
		if !known {
			return nil, f.unsupported("", "torch.autocast with dtype %s", dtype.Describe())
		}
		c.Mode.DType = d
	}
	if cache != nil && !isNone(cache) {
		b, err := t.truthy(f, cache)
		if err != nil {
			return nil, err
		}
		c.Cache = b
	}
	if c.Device == "cpu" && c.Mode.Enabled {
		t.torchVersion()
		accepted := []primtorch.DType{primtorch.BFloat16} // without a row: eager's choice decides
		if t.autocast.row != nil {
			accepted = t.autocast.row.DTypes
		}
		if !slices.Contains(accepted, c.Mode.DType) {
			return nil, f.unsupported(fmt.Sprintf("use dtype %v for CPU autocast", accepted),
				"CPU autocast with dtype %s (torch %s does not take it: it warns, and disables autocast or raises)", c.Mode.DType, t.autocast.version)
		}
	}
	if c.Device == "cuda" && c.Mode.Enabled {
		return nil, f.unsupported("run the CUDA autocast region outside the compiled function", "CUDA autocast is not captured")
	}
	return c, nil
}

func (t *Tracer) enterAutocast(c *autocastCtx) {
	c.Prev = append(c.Prev, t.autocast.autocastState)
	if c.Device == "cpu" {
		t.autocast.CPU = c.Mode
	} else {
		t.autocast.CUDA = c.Mode
	}
	t.autocast.Cache = c.Cache
}

func (t *Tracer) exitAutocast(f *frame, c *autocastCtx) error {
	if len(c.Prev) == 0 {
		return f.unsupported("", "__exit__ of %s that was not entered", c.describe())
	}
	t.autocast.autocastState = c.Prev[len(c.Prev)-1]
	c.Prev = c.Prev[:len(c.Prev)-1]
	if !t.autocast.CPU.Enabled && !t.autocast.CUDA.Enabled {
		t.autocast.cached = nil // torch clears its cast cache leaving the outermost region
	}
	return nil
}

// autocastArgs applies the casting policy to a call about to be recorded: args and kw with
// eligible operands cast. policy is the op's (CastNone when autocast is off or leaves it alone).
func (t *Tracer) autocastArgs(f *frame, target string, op *primtorch.Op, args []Value, kw []kwArg) ([]Value, []kwArg, primtorch.CastPolicy, error) {
	a := &t.autocast
	if a.casting || (!a.CPU.Enabled && !a.CUDA.Enabled) {
		return args, kw, primtorch.CastNone, nil
	}
	ins := tensorsIn(args, kw)
	anyCPUFloat := false
	for _, in := range ins {
		switch in.Meta.Device.Type {
		case "", "cpu":
			anyCPUFloat = anyCPUFloat || in.Meta.DType.IsFloatingPoint()
		default:
			if a.CUDA.Enabled {
				return nil, nil, 0, f.unsupported("run the CUDA autocast region outside the compiled function",
					"%s on %s tensors under CUDA autocast (not captured)", target, in.Meta.Device.Type)
			}
		}
	}
	if !a.CPU.Enabled || !anyCPUFloat {
		return args, kw, primtorch.CastNone, nil
	}
	t.torchVersion()
	if a.table == nil {
		logs.Printf(logs.PerfHints, "%s runs with torch: ptgo has no CPU autocast table for torch %s (%s)", target, a.version, f.shortWhereUser())
		return nil, nil, 0, f.unsupported("run the autocast region outside the compiled function",
			"%s under CPU autocast: ptgo has no autocast table for torch %s", target, a.version)
	}
	if op == nil {
		return args, kw, primtorch.CastNone, nil
	}
	policy := primtorch.AutocastPolicy(a.table, op.Canonical().Name)
	if policy == primtorch.CastNone {
		return args, kw, policy, nil
	}
	var eligible []primtorch.DType
	for _, in := range ins {
		if cpuEligible(in) {
			eligible = append(eligible, in.Meta.DType)
		}
	}
	to, ok := primtorch.AutocastTarget(policy, a.CPU.DType, eligible)
	if !ok {
		return nil, nil, 0, f.unsupported("eager raises for it", "%s under CPU autocast with operands of dtypes %v", target, eligible)
	}
	cast := func(v Value) (Value, error) {
		tv, isTensor := v.(*TensorV)
		if !isTensor || !cpuEligible(tv) || tv.Meta.DType == to {
			return v, nil
		}
		return t.autocastCast(f, tv, to)
	}
	castEach := func(vs []Value) ([]Value, error) {
		out := make([]Value, len(vs))
		for i, it := range vs {
			c, err := cast(it)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	castAll := func(v Value) (Value, error) {
		switch x := v.(type) {
		case *ListV:
			items, err := castEach(x.Items)
			if err != nil {
				return nil, err
			}
			return &ListV{Items: items}, nil
		case *TupleV:
			items, err := castEach(x.Items)
			if err != nil {
				return nil, err
			}
			return &TupleV{Items: items, Class: x.Class}, nil
		}
		return cast(v)
	}
	newArgs := make([]Value, len(args))
	for i, v := range args {
		c, err := castAll(v)
		if err != nil {
			return nil, nil, 0, err
		}
		newArgs[i] = c
	}
	newKw := make([]kwArg, len(kw))
	for i, k := range kw {
		c, err := castAll(k.Val)
		if err != nil {
			return nil, nil, 0, err
		}
		newKw[i] = kwArg{Name: k.Name, Val: c}
	}
	return newArgs, newKw, policy, nil
}

func cpuEligible(tv *TensorV) bool {
	return (tv.Meta.Device.Type == "" || tv.Meta.Device.Type == "cpu") && primtorch.AutocastEligible(tv.Meta)
}

// autocastCast records tv.to(dtype); a parameter's cast to the autocast dtype is made once per
// autocast region, as torch caches it.
func (t *Tracer) autocastCast(f *frame, tv *TensorV, to primtorch.DType) (Value, error) {
	a := &t.autocast
	// torch caches casts of leaves requiring grad that are not views: parameters, whether
	// get_attrs or inputs (of a module passed in; their class is guarded).
	param := tv.Node != nil && (tv.Node.Op == fxgraph.GetAttr ||
		(tv.Node.Op == fxgraph.Placeholder && tv.Class != 0 && t.isSubclass(tv.Class, t.env.Known("torch.nn.Parameter"))))
	cacheable := a.Cache && to == a.CPU.DType && tv.Meta.DType == primtorch.Float32 && tv.Meta.RequiresGrad && param
	key := castKey{tv.Node, to}
	if cacheable {
		if c, ok := a.cached[key]; ok {
			return c, nil
		}
	}
	a.casting = true
	v, err := t.record(f, true, "to", primtorch.Lookup("Tensor.to"), []Value{tv, t.objValue(t.env.DTypeObj(to), nil)}, nil)
	a.casting = false
	if err != nil {
		return nil, err
	}
	if c, ok := v.(*TensorV); ok && cacheable {
		if a.cached == nil {
			a.cached = map[castKey]*TensorV{}
		}
		a.cached[key] = c
	}
	return v, nil
}

// checkAutocast compares the dtypes of a recorded call's result (res: ptgo's meta, after the
// casts) with torch's for the original call under the same autocast state; a difference stops
// the capture (the op then runs with torch).
func (t *Tracer) checkAutocast(f *frame, method bool, target string, op *primtorch.Op, policy primtorch.CastPolicy,
	args []Value, kw []kwArg, res primtorch.Value) error {
	a := &t.autocast
	t.torchVersion()
	if a.casting || !a.CPU.Enabled || (policy == primtorch.CastNone && !primtorch.AutocastMayDiffer(op) && a.tested) {
		return nil
	}
	anyCPUFloat := false
	for _, in := range tensorsIn(args, kw) {
		anyCPUFloat = anyCPUFloat || cpuEligible(in)
	}
	if !anyCPUFloat {
		return nil
	}
	api := t.api
	objs := make([]py.Obj, len(args))
	for i, v := range args {
		o, err := t.metaObj(f, v)
		if err != nil {
			return f.unsupported("", "%s under CPU autocast with an argument ptgo cannot check against torch", target)
		}
		objs[i] = o
	}
	var keys, vals []py.Obj
	for _, k := range kw {
		o, err := t.metaObj(f, k.Val)
		if err != nil {
			return f.unsupported("", "%s under CPU autocast with an argument ptgo cannot check against torch", target)
		}
		keys = append(keys, api.NewStr(k.Name))
		vals = append(vals, o)
	}
	kwd, err := api.NewDict(keys, vals)
	if err != nil {
		return err
	}
	r, err := t.env.callRuntime("autocast_probe", api.NewStr(target), api.NewBool(method), api.NewTuple(objs), kwd,
		t.env.DTypeObj(a.CPU.DType), api.NewBool(a.Cache))
	if err != nil {
		return err
	}
	got, _ := api.Str(r)
	want := resultDTypes(res)
	if got != want {
		msg := fmt.Sprintf("%s under CPU autocast: torch gives dtypes %s, ptgo's autocast policy (%s) gives %s", target, got, policy, want)
		logs.Printf(logs.PerfHints, "%s runs with torch: %s (%s)", target, msg, f.shortWhereUser())
		return f.unsupported("run this op outside the compiled function or outside autocast", "%s", msg)
	}
	return nil
}

func describe(v Value) string {
	if v == nil {
		return "nothing"
	}
	return v.Describe()
}

// resultDTypes is a call result's dtypes as autocast_probe writes torch's: "bfloat16",
// "(float32,int64)", "-" for a non-tensor.
func resultDTypes(v primtorch.Value) string {
	switch x := v.(type) {
	case *primtorch.TensorMeta:
		return x.DType.TorchName()
	case []primtorch.Value:
		s := "("
		for i, e := range x {
			if i > 0 {
				s += ","
			}
			s += resultDTypes(e)
		}
		return s + ")"
	}
	return "-"
}
