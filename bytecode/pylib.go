package bytecode

import (
	"fmt"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// The standard library and torch helpers the interpreter answers itself, by the identity of
// the callable (Env.special finds them whatever kind of object they are: a Python function, a
// C function, a class, a slot wrapper): itertools, functools, collections, object's slots
// called directly, and torch's tracing/scripting queries. Each handler follows the CPython
// (or torch) implementation's observable behaviour; where eager would raise, it returns
// Unsupported so the frame runs eagerly and raises eager's own exception.
var pySpecials map[string]specialFn

func init() {
	pySpecials = map[string]specialFn{
		// object's slots called directly: object.__setattr__(self, k, v) in frozen dataclasses.
		"builtins.object.__setattr__": objSetattrSpecial,
		"builtins.object.__new__":     objNewSpecial,
		"inspect.signature":           inspectSignature,
		"builtins.object.__getattribute__": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.objectGetAttribute(f, args, kw)
		},
		"builtins.object.__init__": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return noneV, nil },

		// torch's questions about tracing and scripting: never while ptgo traces (Dynamo's
		// answers). _log_api_usage_once only records usage statistics.
		"torch._C._log_api_usage_once":     func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return noneV, nil },
		"torch.jit.is_scripting":           constFalse,
		"torch.jit.is_tracing":             constFalse,
		"torch._jit_internal.is_scripting": constFalse,
		"torch.jit._trace.is_tracing":      constFalse,
		"torch.jit.annotate": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) != 2 {
				return nil, f.unsupported("eager raises TypeError", "torch.jit.annotate takes 2 arguments")
			}
			return args[1], nil
		},

		// Callable descriptions of a lookup, made eagerly from constants and called by
		// callLiveObject.
		"operator.itemgetter": pureCall("operator.itemgetter"),
		"operator.attrgetter": pureCall("operator.attrgetter"),

		// Context managers that change nothing here (NoopCtxV).
		"contextlib.nullcontext":  ctxNull,
		"torch.autocast":          ctxAutocast("torch.autocast", ""),
		"torch.cpu.amp.autocast":  ctxAutocast("torch.cpu.amp.autocast", "cpu"),
		"torch.cuda.amp.autocast": ctxAutocast("torch.cuda.amp.autocast", "cuda"),
		// A profiler range records nothing while no profiler runs (guarded).
		"torch.autograd.profiler.record_function": ctxRecordFunction,

		// Logging below the logger's level does nothing (guarded); a record that would be
		// emitted runs eagerly.
		"logging.Logger.debug":     logAt(10),
		"logging.Logger.info":      logAt(20),
		"logging.Logger.warning":   logAt(30),
		"logging.Logger.warn":      logAt(30),
		"logging.Logger.error":     logAt(40),
		"logging.Logger.exception": logAt(40),
		"logging.Logger.critical":  logAt(50),
		"logging.Logger.fatal":     logAt(50),
		"logging.Logger.log":       logAt(-1),
		"warnings.warn": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return nil, f.unsupported("warnings.warn runs eagerly: the code before and after it is compiled (fullgraph=True cannot)",
				"a call to warnings.warn, which emits a warning")
		},

		"copy.copy":            pyCopy(false),
		"copy.deepcopy":        pyCopy(true),
		"functools.cmp_to_key": fnCmpToKey,
		"itertools.groupby":    itGroupby,

		"functools.partial":        fnPartial,
		"functools.reduce":         fnReduce,
		"functools.update_wrapper": fnUpdateWrapper,
		"functools.wraps":          fnWraps,
		"functools.lru_cache":      fnLRUCache,
		"functools.cache":          fnCache,

		"itertools.chain":                         itChain,
		"itertools.chain.from_iterable":           itChainFromIterable,
		"itertools.product":                       itProduct,
		"itertools.combinations":                  itCombinations(false),
		"itertools.combinations_with_replacement": itCombinations(true),
		"itertools.permutations":                  itPermutations,
		"itertools.islice":                        itISlice,
		"itertools.accumulate":                    itAccumulate,
		"itertools.repeat":                        itRepeat,
		"itertools.count":                         itCount,
		"itertools.cycle":                         itCycle,
		"itertools.zip_longest":                   itZipLongest,
		"itertools.starmap":                       itStarmap,
		"itertools.takewhile":                     itWhile(true),
		"itertools.dropwhile":                     itWhile(false),
		"itertools.filterfalse":                   itFilterFalse,
		"itertools.compress":                      itCompress,
		"itertools.pairwise":                      itPairwise,

		"collections.deque":       colDeque,
		"collections.defaultdict": colDefaultDict,
		"collections.OrderedDict": colOrderedDict,
		"collections.Counter":     colCounter,
		"collections.namedtuple":  colNamedTuple,
	}
}

// pureCall makes an immutable object from constant arguments eagerly.
func pureCall(path string) specialFn {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		return t.callLive(f, t.env.Known(path), args, kw)
	}
}

func objSetattrSpecial(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 3 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "object.__setattr__ takes 3 arguments")
	}
	self, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if live, ok := self.(*ObjV); ok {
		name, err := attrName(t, f, args[1])
		if err != nil {
			return nil, err
		}
		return noneV, t.rawSetLiveAttr(f, live, name, args[2])
	}
	o, ok := self.(*ObjectV)
	if !ok {
		return nil, t.sideEffect(f, "object.__setattr__ on "+self.Describe())
	}
	return t.objectMethod(f, o, "__setattr__", args[1:], nil)
}

// rawSetLiveAttr is object.__setattr__(o, name, v) on an object from outside the frame: a side
// effect the transformed code replays with object.__setattr__ (later reads in the trace see v).
func (t *Tracer) rawSetLiveAttr(f *frame, o *ObjV, name string, v Value) error {
	switch {
	case o.Source == nil:
		return t.sideEffect(f, "object.__setattr__ on "+t.typeName(o.Obj)+", which has no source outside the frame")
	case o.Kind != py.KNNModule && o.Kind != py.KOther:
		return t.sideEffect(f, "object.__setattr__ on "+readableName(o.Source))
	}
	if raw, _, _, found, err := t.api.GetAttrStatic(t.api.TypeOf(o.Obj), name); err != nil {
		return err
	} else if found && (t.api.Kind(raw) == py.KProperty || (t.api.Kind(raw) == py.KOther && t.isDataDescriptor(raw))) {
		return t.sideEffect(f, "object.__setattr__ of "+readableName(o.Source)+"."+name+" through a descriptor")
	}
	d, err := t.liveDict(f, o)
	if err != nil {
		return err
	}
	t.mutateDict(d)
	return t.dictSet(f, d, strV(name), v)
}

// liveDict is the instance __dict__ of a live object from outside the frame as a DictV (read
// once, its keys guarded): object.__setattr__ writes and self.__dict__ reads and writes all go
// to it — one model of the object's attributes, replayed as a dict write (Module.__init__ and
// Module.__setattr__ running on an object an eager caller just made).
func (t *Tracer) liveDict(f *frame, o *ObjV) (*DictV, error) {
	if d, ok := t.liveDicts[o.Obj]; ok {
		return d, nil
	}
	if o.Source == nil {
		return nil, t.sideEffect(f, "writing the __dict__ of "+t.typeName(o.Obj)+", which has no source outside the frame")
	}
	raw, err := t.api.GetAttr(o.Obj, "__dict__")
	if err != nil {
		return nil, t.raisedFromCall(f, "__dict__ of "+t.typeName(o.Obj), err)
	}
	v, err := t.wrapLive(f, raw, &AttrSource{Base: o.Source, Attr: "__dict__"})
	if err != nil {
		return nil, err
	}
	d, ok := v.(*DictV)
	if !ok || d.Source == nil {
		return nil, f.unsupported("", "the __dict__ of %s is %s", t.typeName(o.Obj), v.Describe())
	}
	if t.liveDicts == nil {
		t.liveDicts = map[py.Obj]*DictV{}
	}
	t.liveDicts[o.Obj] = d
	return d, nil
}

// liveDictAttr is o.name from the modelled __dict__ of a live object, when the trace has one.
func (t *Tracer) liveDictAttr(f *frame, o *ObjV, name string) (Value, bool, error) {
	d, ok := t.liveDicts[o.Obj]
	if !ok {
		return nil, false, nil
	}
	return t.dictGet(f, d, strV(name))
}

func objNewSpecial(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) < 1 {
		return nil, f.unsupported("eager raises TypeError", "object.__new__(): not enough arguments")
	}
	cls, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	c, ok := cls.(*ObjV)
	if !ok || c.Kind != py.KType {
		return nil, f.unsupported("eager raises TypeError", "object.__new__(%s)", cls.Describe())
	}
	if why := t.constructible(c.Obj); why != "" {
		return nil, f.unsupported("create the object outside the compiled function and pass it in",
			"creating an instance of %s: %s", t.qualName(c.Obj), why)
	}
	return t.allocObject(c.Obj)
}

// isFunctionLike reports values calling can run: functions, methods, partials, classes,
// builtins.
func isFunctionLike(v Value) bool {
	switch x := v.(type) {
	case *FuncV, *BoundV, *PartialV, *CtxFuncV:
		return true
	case *ObjV:
		switch x.Kind {
		case py.KFunction, py.KBuiltin, py.KMethodDescriptor, py.KType, py.KMethod:
			return true
		}
	}
	return false
}

// callLiveObject calls live callable objects of the standard library's types: an lru_cache'd
// function runs its __wrapped__ function (the cache changes no result of a pure function),
// operator.itemgetter/attrgetter index or read attributes.
func (t *Tracer) callLiveObject(f *frame, c *ObjV, args []Value, kw []kwArg) (Value, bool, error) {
	api := t.api
	switch api.TypeOf(c.Obj) {
	case t.env.Known("weakref.ref"):
		// ref(): the referent now (or None), guarded through the ref, which is guarded by
		// identity (a ref's referent never changes, it may only die). torch 2's RNNs compare
		// their weights with the refs they keep.
		if len(args) > 0 || len(kw) > 0 {
			return nil, true, f.unsupported("eager raises TypeError", "weakref.ref() takes no arguments")
		}
		r, err := api.Call(c.Obj, nil, nil)
		if err != nil {
			return nil, true, err
		}
		if c.Source == nil {
			v, err := t.wrapLive(f, r, nil)
			return v, true, err
		}
		t.guards.ID(c.Source, c.Obj, "weakref "+t.shortRepr(c.Obj))
		src := &CallSource{Fn: c.Obj, Desc: c.Source.Name() + "()"}
		if api.Kind(r) == py.KTensor {
			// the referent is the very tensor (a parameter the frame reads: `ref() is weight`)
			t.guards.ID(src, r, "the tensor it referred to when compiled")
			if tv, ok := t.attrNodes[r]; ok {
				return tv, true, nil
			}
			if tv, ok := t.inputByObj[r]; ok {
				return tv, true, nil
			}
		}
		v, err := t.wrapLive(f, r, src)
		return v, true, err
	case t.env.Known("functools._lru_cache_wrapper"):
		w, err := api.GetAttr(c.Obj, "__wrapped__")
		if err != nil {
			return nil, true, err
		}
		fn, err := t.wrapLive(f, w, childSource(c.Source, "__wrapped__"))
		if err != nil {
			return nil, true, err
		}
		v, err := t.call(f, fn, args, kw)
		return v, true, err
	case t.env.Known("operator.itemgetter"), t.env.Known("operator.attrgetter"):
		if len(args) != 1 || len(kw) > 0 {
			return nil, true, f.unsupported("eager raises TypeError", "%s takes one argument", t.typeName(c.Obj))
		}
		red, err := api.Call(t.mustAttr(c.Obj, "__reduce__"), nil, nil)
		if err != nil {
			return nil, true, err
		}
		keysObj, err := api.Index(red, 1)
		if err != nil {
			return nil, true, err
		}
		kv, err := t.constFromObj(keysObj)
		if err != nil {
			return nil, true, err
		}
		keys, ok := kv.(*TupleV)
		if !ok {
			return nil, true, f.unsupported("", "%s with non-constant keys", t.typeName(c.Obj))
		}
		items := attrgetterOrItems(t, f, c, keys.Items, args[0])
		if len(keys.Items) == 1 {
			v, err := items(keys.Items[0])
			return v, true, err
		}
		out := make([]Value, len(keys.Items))
		for i, k := range keys.Items {
			if out[i], err = items(k); err != nil {
				return nil, true, err
			}
		}
		return &TupleV{Items: out}, true, nil
	}
	return nil, false, nil
}

// attrgetterOrItems returns the lookup one key of an itemgetter (obj[key]) or attrgetter
// (obj.a.b for "a.b") does.
func attrgetterOrItems(t *Tracer, f *frame, c *ObjV, keys []Value, obj Value) func(Value) (Value, error) {
	if t.api.TypeOf(c.Obj) == t.env.Known("operator.itemgetter") {
		return func(k Value) (Value, error) { return t.getItem(f, obj, k) }
	}
	return func(k Value) (Value, error) {
		name, err := attrName(t, f, k)
		if err != nil {
			return nil, err
		}
		v := obj
		start := 0
		for i := 0; i <= len(name); i++ {
			if i == len(name) || name[i] == '.' {
				if v, err = t.getAttr(f, v, name[start:i]); err != nil {
					return nil, err
				}
				start = i + 1
			}
		}
		return v, nil
	}
}

// gradModeDecorate is torch.no_grad()(fn) (or enable_grad): fn to run inside the mode.
func (t *Tracer) gradModeDecorate(f *frame, g *GradModeV, args []Value, kw []kwArg) (Value, error) {
	if g.Applied || len(g.Prev) > 0 {
		return nil, f.unsupported("use torch.no_grad() or torch.enable_grad() as the decorator", "decorating with a grad-mode object that is active")
	}
	if len(args) != 1 || len(kw) > 0 {
		return nil, f.unsupported("eager raises TypeError", "a grad-mode decorator takes one function")
	}
	fn, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if !isFunctionLike(fn) {
		return nil, f.unsupported("", "decorating %s with a grad mode", fn.Describe())
	}
	return &CtxFuncV{Mode: &GradModeV{Enabled: g.Enabled}, Fn: fn}, nil
}

// callInMode runs a grad-mode decorated function: enter a fresh copy of the mode (torch's
// decorator enters self.clone()), call, leave.
func (t *Tracer) callInMode(f *frame, c *CtxFuncV, args []Value, kw []kwArg) (Value, error) {
	m := &GradModeV{Enabled: c.Mode.Enabled}
	if _, err := t.enterContext(f, m); err != nil {
		return nil, err
	}
	r, err := t.call(f, c.Fn, args, kw)
	if err != nil {
		return nil, err
	}
	if _, err := t.exitContext(f, m); err != nil {
		return nil, err
	}
	return r, nil
}

func ctxNull(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "nullcontext", kw, "enter_result"); err != nil {
		return nil, err
	}
	var enter Value = noneV
	if v := kwValue(kw, "enter_result"); v != nil {
		enter = v
	}
	if len(args) > 1 {
		return nil, f.unsupported("eager raises TypeError", "nullcontext takes at most 1 argument")
	}
	if len(args) == 1 {
		enter = args[0]
	}
	return &NoopCtxV{Class: t.env.Known("contextlib.nullcontext"), Args: []Value{enter}, Enter: enter}, nil
}

// ctxRecordFunction is torch.autograd.profiler.record_function(name, args=None) (also
// torch.profiler.record_function), which torch's optimizers wrap around step and zero_grad: with
// no profiler running its range records nothing, so it is a manager that changes nothing, on the
// guard that torch.autograd._profiler_enabled() is still False. Under a running profiler the
// frame runs eagerly, so the range is recorded as eager records it.
func ctxRecordFunction(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "record_function", kw, "name", "args"); err != nil {
		return nil, err
	}
	if n := len(args) + len(kw); n < 1 || n > 2 {
		return nil, f.unsupported("eager raises TypeError", "record_function takes a name and an optional args string")
	}
	for _, v := range append(append([]Value(nil), args...), kwValue(kw, "name"), kwValue(kw, "args")) {
		if v == nil || v == noneV {
			continue
		}
		r, err := t.realize(f, v)
		if err != nil {
			return nil, err
		}
		c, isConst := r.(*ConstV)
		o, isObj := r.(*ObjV)
		if !(isConst && c.Kind == py.KStr) && !(isObj && o.Kind == py.KStr) {
			return nil, f.unsupported("", "record_function with a name or args that is not a str")
		}
	}
	enabled, ok := t.env.TryKnown("torch.autograd._profiler_enabled")
	if !ok {
		return nil, f.unsupported("", "record_function without torch.autograd._profiler_enabled")
	}
	on, err := t.api.Call(enabled, nil, nil)
	if err != nil {
		return nil, err
	}
	if on == t.api.NewBool(true) {
		return nil, f.unsupported("a profiler range runs eagerly while the profiler runs", "record_function under a running profiler")
	}
	t.guards.CallBool(enabled, false, "torch.autograd._profiler_enabled()")
	return &NoopCtxV{Class: t.env.Known("torch.autograd.profiler.record_function"), Args: append([]Value(nil), args...),
		Kw: append([]kwArg(nil), kw...)}, nil
}

// ctxAutocast is torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None) and
// torch.{cpu,cuda}.amp.autocast(enabled=True, dtype=..., cache_enabled=True) (device "" takes
// the device type as the first argument): a manager whose __enter__ and __exit__ change the
// trace's autocast state (autocast.go).
func ctxAutocast(path, device string) specialFn {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		names := []string{"enabled", "dtype", "cache_enabled"}
		if device == "" {
			names = []string{"device_type", "dtype", "enabled", "cache_enabled"}
		}
		if err := noKw(f, path, kw, names...); err != nil {
			return nil, err
		}
		if len(args) > len(names) {
			return nil, f.unsupported("eager raises TypeError", "%s takes at most %d arguments", path, len(names))
		}
		get := func(name string, def Value) Value {
			for i, n := range names {
				if n == name && i < len(args) {
					return args[i]
				}
			}
			if v := kwValue(kw, name); v != nil {
				return v
			}
			return def
		}
		var dev Value = strV(device)
		var dtype, cache Value
		if device == "" {
			if dev = get("device_type", nil); dev == nil {
				return nil, f.unsupported("eager raises TypeError", "torch.autocast() missing device_type")
			}
		} else {
			dtype, cache = t.objValue(t.env.DTypeObj(map[string]primtorch.DType{"cpu": primtorch.BFloat16, "cuda": primtorch.Float16}[device]), nil), trueV
		}
		c, err := t.newAutocastCtx(f, dev, get("dtype", dtype), get("enabled", trueV), get("cache_enabled", cache))
		if err != nil {
			return nil, err
		}
		return &NoopCtxV{Class: t.env.Known(path), Args: append([]Value(nil), args...), Kw: append([]kwArg(nil), kw...), Autocast: c}, nil
	}
}

// logAt is logging.Logger.<level>(msg, ...) (level -1: Logger.log(level, msg, ...)): nothing
// happens when the logger is not enabled for the level — a fact of global logging
// configuration, guarded by calling logger.isEnabledFor(level) —, otherwise the call runs
// eagerly.
func logAt(level int64) specialFn {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		if len(args) < 1 {
			return nil, f.unsupported("eager raises TypeError", "a Logger method called without a logger")
		}
		self, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		logger, ok := self.(*ObjV)
		if !ok || !t.isSubclass(t.api.TypeOf(logger.Obj), t.env.Known("logging.Logger")) {
			return nil, f.unsupported("", "logging through %s", self.Describe())
		}
		if level < 0 {
			if len(args) < 2 {
				return nil, f.unsupported("eager raises TypeError", "Logger.log() missing its level")
			}
			lv, err := intArg(t, f, args[1], "a logging level")
			if err != nil {
				return nil, err
			}
			level = lv
		}
		enabledFor, err := t.api.GetAttr(logger.Obj, "isEnabledFor")
		if err != nil {
			return nil, err
		}
		check, err := t.api.Call(t.env.Known("functools.partial"), []py.Obj{enabledFor, t.api.NewInt(level)}, nil)
		if err != nil {
			return nil, err
		}
		on, err := t.api.Call(check, nil, nil)
		if err != nil {
			return nil, err
		}
		if on == t.api.NewBool(true) {
			return nil, f.unsupported("logging runs eagerly: the code before and after it is compiled (fullgraph=True cannot)",
				"a log record at level %d that the logger emits", level)
		}
		t.guards.CallBool(check, false, fmt.Sprintf("%s.isEnabledFor(%d)", t.shortRepr(logger.Obj), level))
		return noneV, nil
	}
}

// inspectSignature is inspect.signature(fn) for a Python function or a method bound to one
// (Hugging Face's apply_chunking_to_forward counts its forward function's parameters): the
// Signature is computed eagerly and is a constant of the trace. inspect's own code compares
// functions by id() while unwrapping, which no trace can answer. What the Signature is made of
// is guarded: the function's code (immutable), its __defaults__ (a tuple) by identity, its
// __annotations__ dict by identity, keys and values, the absence of __kwdefaults__ (a mutable
// dict) and of the attributes that redirect inspect (__signature__, __wrapped__,
// _partialmethod) from its __dict__. Anything else (a class, a partial, a builtin, keyword
// arguments) runs inspect.signature's own code.
func inspectSignature(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if v, ok, err := t.foldSignature(f, args, kw); ok || err != nil {
		return v, err
	}
	fn, err := t.funcFromObj(f, t.env.Known("inspect.signature"), nil)
	if err != nil {
		return nil, err
	}
	return t.inline(f, fn, args, kw)
}

func (t *Tracer) foldSignature(f *frame, args []Value, kw []kwArg) (Value, bool, error) {
	api := t.api
	if len(args) != 1 || len(kw) > 0 {
		return nil, false, nil
	}
	target, err := t.realize(f, args[0])
	if err != nil {
		return nil, false, err
	}
	bound := false
	if b, ok := target.(*BoundV); ok && b.Fn != nil {
		target, bound = b.Fn, true
	}
	fn, ok := target.(*FuncV)
	if !ok || fn.Obj == 0 || api.TypeOf(fn.Obj) != t.env.Known("types.FunctionType") {
		return nil, false, nil
	}
	d, err := api.GetAttr(fn.Obj, "__dict__")
	if err != nil {
		return nil, false, nil
	}
	redirects := []string{"__signature__", "__wrapped__", "_partialmethod"}
	for _, name := range redirects {
		if _, err := api.GetItem(d, api.NewStr(name)); err == nil {
			return nil, false, nil
		}
	}
	kwd, err := api.GetAttr(fn.Obj, "__kwdefaults__")
	if err != nil || api.Kind(kwd) != py.KNone {
		return nil, false, nil
	}
	ann, err := api.GetAttr(fn.Obj, "__annotations__")
	if err != nil || api.TypeOf(ann) != t.env.Known("builtins.dict") {
		return nil, false, nil
	}
	annKeys, annVals := api.DictItems(ann)
	for _, k := range annKeys {
		if api.TypeOf(k) != t.env.Known("builtins.str") {
			return nil, false, nil
		}
	}
	callee := fn.Obj
	if bound {
		// The signature of a bound method does not depend on the object it is bound to.
		if callee, err = api.Call(t.env.Known("types.MethodType"), []py.Obj{fn.Obj, t.env.Known("builtins.object")}, nil); err != nil {
			return nil, false, nil
		}
	}
	sig, err := api.Call(t.env.Known("inspect.signature"), []py.Obj{callee}, nil)
	if err != nil {
		return nil, false, nil
	}
	src := &ConstSource{Obj: fn.Obj, Desc: "function " + t.qualName(fn.Obj)}
	for _, name := range redirects {
		t.guards.NotInDict(src, name)
	}
	for _, name := range []string{"__code__", "__defaults__", "__kwdefaults__"} {
		v, err := api.GetAttr(fn.Obj, name)
		if err != nil {
			return nil, false, err
		}
		t.guards.ID(&AttrSource{Base: src, Attr: name}, v, t.shortRepr(v))
	}
	annSrc := &AttrSource{Base: src, Attr: "__annotations__"}
	t.guards.ID(annSrc, ann, "its annotations dict")
	reprs := make([]string, len(annKeys))
	for i, k := range annKeys {
		reprs[i] = api.Repr(k)
		ks, _ := api.Str(k)
		t.guards.ID(&DictItemSource{Base: annSrc, Key: ks}, annVals[i], t.shortRepr(annVals[i]))
	}
	t.guards.DictKeys(annSrc, api.NewTuple(annKeys), nil, false, "["+strings.Join(reprs, ", ")+"]")
	v, err := t.wrapLive(f, sig, nil)
	return v, true, err
}
