package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// Facts of torch's Python code the interpreter depends on that differ between torch versions,
// one table each, keyed by version (rows oldest first; the running torch, primtorch.Torch(),
// uses the last row at or below it). The Python side keeps its own in ptgo/_compat.py.

// moduleHooks are the hook dicts Module.__call__ checks before it calls forward directly:
// while they are empty (and guarded to stay so) a module call is its forward.
type moduleHooks struct {
	Module []string // instance dicts of the module
	Global []string // globals of torch.nn.modules.module
}

var moduleHookTable = []primtorch.VersionRow[moduleHooks]{
	{Since: primtorch.Torch113, Value: moduleHooks{
		Module: []string{"_forward_hooks", "_forward_pre_hooks", "_backward_hooks"},
		Global: []string{"_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks"},
	}},
	// torch 2.0 added backward pre-hooks (register_full_backward_pre_hook). The *_with_kwargs
	// and *_always_called dicts hold flags for hooks of the dicts above, which _call_impl checks
	// first: empty dicts above mean no hook runs.
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: moduleHooks{
		Module: []string{"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks"},
		Global: []string{"_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
			"_global_backward_pre_hooks"},
	}},
}

func moduleHookNames() []string { return primtorch.ForTorch(moduleHookTable, primtorch.Torch()).Module }
func globalHookNames() []string { return primtorch.ForTorch(moduleHookTable, primtorch.Torch()).Global }

// compiledCallAttr is the instance attribute that makes Module.__call__ call a torch.compile'd
// _call_impl instead of its own (module.compile(), torch 2.2), "" where torch has none.
var compiledCallAttr = []primtorch.VersionRow[string]{
	{Since: primtorch.Torch113, Value: ""},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 2}, Value: "_compiled_call_impl"},
}

// checkNotTorchCompiled refuses to inline a module whose calls torch.compile runs
// (module.compile()): the call is a graph break and runs as torch.compile made it. Otherwise
// it guards that the module stays uncompiled.
func (t *Tracer) checkNotTorchCompiled(f *frame, m *ObjV) error {
	attr := primtorch.ForTorch(compiledCallAttr, primtorch.Torch())
	if attr == "" {
		return nil
	}
	if v, onType, _, found, err := t.api.GetAttrStatic(m.Obj, attr); err == nil && found && !onType && t.api.Kind(v) != py.KNone {
		return f.unsupported("", "module %s was compiled with torch.compile (module.compile()); it runs as torch.compile made it",
			t.modulePathOrType(m))
	}
	t.guards.NotInDict(m.Source, attr)
	return nil
}

// isCompilingFuncs read torch.compile's own flag. While ptgo traces they answer False, as they
// do eagerly: torch's code takes eager's path, never the compile-friendly one torch.compile
// gets (torch 2's TransformerEncoder in eval with a padding mask then runs its nested-tensor
// path, whose padded positions are zeros, and not the dense one). Each is resolved only through
// modules already imported (torch._dynamo is imported by code that uses it, and importing it
// costs seconds).
var isCompilingFuncs = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: []string{
		"torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling", "torch._dynamo.is_compiling",
		"torch._dynamo.external_utils.is_compiling", "torch._utils.is_compiling",
	}},
}

// dispatchModeQueries are the C functions torch's Python code asks how many
// TorchDispatchModes are active (torch 2's MultiheadAttention does, through
// torch.utils._python_dispatch._get_current_dispatch_mode_stack).
var dispatchModeQueries = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: []string{"torch._C._len_torch_dispatch_stack"}},
}

// compilerSpecials are the torch.compile queries answered while tracing, for the running torch.
func compilerSpecials() map[string]specialFn {
	out := map[string]specialFn{}
	for _, path := range primtorch.ForTorch(isCompilingFuncs, primtorch.Torch()) {
		out[path] = func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return falseV, nil }
	}
	for _, path := range primtorch.ForTorch(dispatchModeQueries, primtorch.Torch()) {
		out[path] = func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return intV(0), nil // guarded for the whole frame (guardNoDispatchModes)
		}
	}
	for _, path := range primtorch.ForTorch(processQueries, primtorch.Torch()) {
		out[path] = func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) > 0 || len(kw) > 0 {
				return nil, f.unsupported("eager raises TypeError", "%s() takes no arguments", path)
			}
			fn := t.env.Known(path)
			r, err := t.api.Call(fn, nil, nil)
			if err != nil {
				return nil, t.raisedFromCall(f, path, err)
			}
			t.guards.Eq(&CallSource{Fn: fn, Desc: path}, r, t.shortRepr(r))
			return t.wrapLive(f, r, nil)
		}
	}
	for _, path := range primtorch.ForTorch(groupByDeviceFuncs, primtorch.Torch()) {
		out[path] = groupTensorsByDeviceAndDtype
	}
	for _, path := range primtorch.ForTorch(deviceModuleFuncs, primtorch.Torch()) {
		out[path] = func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) != 1 || len(kw) > 0 {
				return nil, f.unsupported("", "%s with %d arguments (ptgo folds it for one device)", path, len(args))
			}
			dev, err := t.realize(f, args[0])
			if err != nil {
				return nil, err
			}
			if isNone(dev) || !isConstantTree(dev) {
				return nil, f.unsupported("", "%s(%s)", path, dev.Describe())
			}
			return t.foldPython(f, path, dev)
		}
	}
	for _, path := range primtorch.ForTorch(allTrueFuncs, primtorch.Torch()) {
		out[path] = func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) == 1 && len(kw) == 0 {
				if x, ok := args[0].(*TensorV); ok && x.Meta.DType == primtorch.Bool {
					return t.record(f, false, "torch.all", primtorch.Lookup("torch.all"), args, nil)
				}
			}
			// torch asserts a bool tensor (an internal assert otherwise): torch answers
			return nil, f.unsupported("", "%s of anything but one bool tensor", path)
		}
	}
	return out
}

// processQueries are torch 2's C functions that name the process's backends, asked by
// torch.optim's foreach/fused default (torch.utils._foreach_utils, torch.accelerator): answered
// while tracing by calling them, under a guard that calls them again and compares.
var processQueries = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: []string{
		"torch._C._get_privateuse1_backend_name", "torch._C._accelerator_getAccelerator",
		"torch._C._cuda_getDeviceCount",
	}},
}

// groupByDeviceFuncs group a list of tensor lists by device and dtype for torch.optim's foreach
// paths (torch 2; torch 1.13's grouping is Python, traced as such): folded while tracing
// (groupTensorsByDeviceAndDtype).
var groupByDeviceFuncs = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: []string{"torch._C._group_tensors_by_device_and_dtype"}},
}

// deviceModuleFuncs map a device (a torch.device or a string) to its torch module (torch.cuda,
// torch.cpu): a function of its argument only, folded while tracing. (torch.accelerator's
// is_available asks it on torch 2's CUDA builds.)
var deviceModuleFuncs = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 0}, Value: []string{"torch.get_device_module"}},
}

// allTrueFuncs are torch 2's torch._is_all_true (the distributions' argument validation): all()
// of a bool tensor, a 0-dim bool tensor.
var allTrueFuncs = []primtorch.VersionRow[[]string]{
	{Since: primtorch.Torch113, Value: nil},
	{Since: primtorch.TorchVersion{Major: 2, Minor: 1}, Value: []string{"torch._is_all_true"}},
}

// guardNoDispatchModes guards, for every captured frame, that no TorchDispatchMode is active:
// ptgo's kernels do not go through torch's dispatcher, so a frame entered under a mode
// (FlopCounterMode, FakeTensorMode, a user's) runs eagerly, every op seen by the mode as in
// eager, and nothing is traced under it (meta computations would reach the mode too).
func (t *Tracer) guardNoDispatchModes(file string, line int) error {
	for _, path := range primtorch.ForTorch(dispatchModeQueries, primtorch.Torch()) {
		fn, ok := t.env.tryLoaded(path)
		if !ok {
			continue
		}
		r, err := t.api.Call(fn, nil, nil)
		if err != nil {
			return err
		}
		n, _ := t.api.Int(r)
		t.guards.CallBool(fn, n != 0, path+"()")
		if n != 0 {
			return &Unsupported{Reason: "a TorchDispatchMode is active; the frame runs eagerly under it",
				Where: fmt.Sprintf("%s:%d", file, line), Hint: "compile outside the TorchDispatchMode", RootPC: -1}
		}
	}
	return nil
}

// refuseTorchCompileEntry is the graph break for a call into torch.compile's machinery: a
// torch.compile'd function, torch._dynamo.disable / torch.compiler.disable, torch._disable_dynamo
// (functions whose code lives in ptgo._compat.TORCH_COMPILE_ENTRY_FILES). The call runs where
// the frame breaks, with ptgo's capture off (the shim's POLICY_UNCAPTURED), as torch made it.
func (t *Tracer) refuseTorchCompileEntry(f *frame, fn *FuncV, file string) error {
	if !t.env.Uncaptured(file) {
		return nil
	}
	name, what := fn.QualName, "torch._disable_dynamo'd"
	if orig, _, _, found, _ := t.api.GetAttrStatic(fn.Obj, "_torchdynamo_orig_callable"); found {
		name, what = t.qualName(orig), "torch.compile'd"
		if d, _, _, found, _ := t.api.GetAttrStatic(fn.Obj, "_torchdynamo_disable"); found && t.api.Kind(d) == py.KBool && d == t.api.NewBool(true) {
			what = "disabled with torch.compiler.disable (torch._dynamo.disable)"
		}
	} else if w, _, _, found, _ := t.api.GetAttrStatic(fn.Obj, "__wrapped__"); found {
		name = t.qualName(w)
	}
	return f.unsupported("", "a call to %s, which is %s: it runs as torch makes it, outside ptgo's graph", name, what)
}
