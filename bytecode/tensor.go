package bytecode

import (
	"errors"
	"fmt"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// Tensor operations: what goes into the graph, and what is answered while tracing because it
// depends on metadata only (shapes, dtypes, devices).

type specialFn func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error)

// torchSpecials are torch callables answered while tracing instead of recorded, by path.
var torchSpecials map[string]specialFn

func init() {
	torchSpecials = map[string]specialFn{
		"torch.is_grad_enabled":    func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return boolV(t.gradEnabled), nil },
		"torch._C.is_grad_enabled": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return boolV(t.gradEnabled), nil },
		"torch.is_autocast_enabled": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			m, err := t.autocastModeArg(f, "torch.is_autocast_enabled", args, kw)
			if err != nil {
				return nil, err
			}
			return boolV(m.Enabled), nil
		},
		"torch.get_autocast_dtype": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			m, err := t.autocastModeArg(f, "torch.get_autocast_dtype", args, kw)
			if err != nil {
				return nil, err
			}
			return t.objValue(t.env.DTypeObj(m.DType), nil), nil
		},
		"torch.is_autocast_cpu_enabled": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return boolV(t.autocast.CPU.Enabled), nil
		},
		"torch.is_autocast_cache_enabled": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return boolV(t.autocast.Cache), nil
		},
		"torch.get_autocast_cpu_dtype": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.objValue(t.env.DTypeObj(t.autocast.CPU.DType), nil), nil
		},
		"torch.get_autocast_gpu_dtype": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.objValue(t.env.DTypeObj(t.autocast.CUDA.DType), nil), nil
		},
		"torch._C._has_torch_function":          constFalse,
		"torch._C._has_torch_function_unary":    constFalse,
		"torch._C._has_torch_function_variadic": constFalse,
		"torch._C._get_tracing_state":           func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return noneV, nil },
		"torch._C._is_tracing":                  constFalse,
		"torch.is_tensor": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			v, err := t.realize(f, args[0])
			_, ok := v.(*TensorV)
			return boolV(ok), err
		},
		"torch.is_floating_point": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.tensorMethod(f, nil, "is_floating_point", args, kw)
		},
		"torch.is_complex": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.tensorMethod(f, nil, "is_complex", args, kw)
		},
		"torch.numel": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			return t.tensorMethod(f, nil, "numel", args, kw)
		},
		"torch._assert": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			if len(args) < 1 {
				return nil, f.unsupported("eager raises TypeError", "torch._assert() missing its condition")
			}
			if tv, isTensor := t.realizedTensor(f, args[0]); isTensor && t.assumeTrue(f, tv) {
				return noneV, nil // checked after the graph (assume.go)
			}
			b, err := t.truthy(f, args[0])
			if err != nil {
				return nil, err
			}
			if !b {
				return nil, f.unsupported("eager raises it for these inputs", "torch._assert failed while tracing")
			}
			return noneV, nil
		},
		"torch._C._set_grad_enabled": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			b, err := t.truthy(f, args[0])
			if err != nil {
				return nil, err
			}
			t.setGradMode(f, b)
			return noneV, nil
		},
		"torch.tensor":                torchTensor,
		"torch.as_tensor":             torchAsTensor,
		"torch.meshgrid":              torchMeshgrid,
		"torch.get_default_dtype":     liveConst("torch.get_default_dtype"),
		"torch.promote_types":         liveConst("torch.promote_types"),
		"torch.can_cast":              liveConst("torch.can_cast"),
		"torch._C._get_cudnn_enabled": liveConst("torch._C._get_cudnn_enabled"),
		"torch.result_type": func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
			margs, _, err := t.metaArgs(f, args, nil)
			if err != nil {
				return nil, err
			}
			return t.objValue(t.env.DTypeObj(primtorch.ResultType(margs...)), nil), nil
		},
	}
}

// realizedTensor is v as a tensor, if it is one.
func (t *Tracer) realizedTensor(f *frame, v Value) (*TensorV, bool) {
	r, err := t.realize(f, v)
	if err != nil {
		return nil, false
	}
	tv, ok := r.(*TensorV)
	return tv, ok
}

func constFalse(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) { return falseV, nil }

func liveConst(path string) func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	return func(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
		return t.callLive(f, t.env.Known(path), args, kw)
	}
}

// torchCall calls the torch callable at path: a special, a registered op, or (for C functions
// with tensor arguments) an op ptgo knows only through torch's meta kernels.
func (t *Tracer) torchCall(f *frame, path string, obj py.Obj, args []Value, kw []kwArg) (Value, error) {
	if h := t.env.special(obj); h != nil && obj != 0 {
		return h(t, f, args, kw)
	}
	if h, ok := torchSpecials[path]; ok {
		return h(t, f, args, kw)
	}
	if strings.HasPrefix(path, "torch._foreach_") {
		if v, handled, err := t.foreachCall(f, path, args, kw); handled || err != nil {
			return v, err
		}
	}
	if strings.HasPrefix(path, "torch.Tensor.") {
		if len(args) == 0 {
			return nil, f.unsupported("", "%s called without a tensor", path)
		}
		self, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		tv, ok := self.(*TensorV)
		if !ok {
			return nil, f.unsupported("", "%s called on %s", path, self.Describe())
		}
		return t.tensorMethod(f, tv, strings.TrimPrefix(path, "torch.Tensor."), args[1:], kw)
	}
	if len(args) == 1 && len(kw) == 0 && (path == "math.sqrt" || path == "math.floor" || path == "math.ceil" || path == "math.trunc") {
		if a, err := t.realizeLazy(f, args[0]); err == nil {
			if s, ok := a.(*SymF); ok {
				if path == "math.sqrt" {
					if r, ok := t.floatUnary(f, "sqrt", s); ok {
						return r, nil
					}
				} else if s.Expr != nil {
					if r, ok := t.floatToInt(f, strings.TrimPrefix(path, "math."), s); ok {
						return r, nil
					}
				}
			}
		}
	}
	if strings.HasPrefix(path, "math.") || (strings.HasPrefix(path, "operator.") && !anyTensor(t, f, args)) {
		return t.callLive(f, obj, args, kw)
	}
	if strings.HasPrefix(path, "operator.") {
		return t.tensorOperator(f, strings.TrimPrefix(path, "operator."), false, args...)
	}
	op := primtorch.Lookup(path)
	if op == nil && !anyTensor(t, f, args) {
		return nil, f.unsupported("", "calling %s, which is not a tensor op ptgo knows", path)
	}
	return t.record(f, false, path, op, args, kw)
}

func anyTensor(t *Tracer, f *frame, vs []Value) bool {
	for _, v := range vs {
		r, err := t.realizeNumbers(f, v)
		if err != nil {
			continue
		}
		switch x := r.(type) {
		case *TensorV:
			return true
		case *TupleV:
			if anyTensor(t, f, x.Items) {
				return true
			}
		case *ListV:
			if anyTensor(t, f, x.Items) {
				return true
			}
		}
	}
	return false
}

// tensorOperator records a Python operator on tensors: operator.add(x, y), operator.iadd, ...
func (t *Tracer) tensorOperator(f *frame, name string, inplace bool, operands ...Value) (Value, error) {
	if inplace {
		if _, selfTensor := operands[0].(*TensorV); !selfTensor {
			name = strings.TrimPrefix(name, "i") // 2 += x is 2 + x
		}
	}
	if _, selfTensor := operands[0].(*TensorV); !selfTensor && name == "truediv" {
		// number / tensor is Tensor.__rtruediv__: tensor.reciprocal() * number, rounded as such
		r, err := t.record(f, true, "reciprocal", primtorch.Lookup("Tensor.reciprocal"), []Value{operands[1]}, nil)
		if err != nil {
			return nil, err
		}
		return t.record(f, false, "operator.mul", primtorch.Lookup("operator.mul"), []Value{r, operands[0]}, nil)
	}
	target := "operator." + name
	return t.record(f, false, target, primtorch.Lookup(target), operands, nil)
}

// record adds a call to the graph and computes its result's meta: the registry's meta
// function when the op is registered, torch's meta kernels otherwise.
func (t *Tracer) record(f *frame, method bool, target string, op *primtorch.Op, args []Value, kw []kwArg) (Value, error) {
	if err := t.realizeDeep(f, args); err != nil {
		return nil, err
	}
	for i := range kw {
		r, err := t.realizeValue(f, kw[i].Val)
		if err != nil {
			return nil, err
		}
		kw[i].Val = r
	}
	if err := t.floatArgsOf(f, op, args, kw); err != nil {
		return nil, err
	}
	origArgs, origKw := args, kw
	args, kw, policy, err := t.autocastArgs(f, target, op, args, kw)
	if err != nil {
		return nil, err
	}
	fxArgs := make([]fxgraph.Arg, len(args))
	for i, a := range args {
		fa, err := t.toArg(f, a)
		if err != nil {
			return nil, err
		}
		fxArgs[i] = fa
	}
	var fxKw []fxgraph.Kwarg
	for _, k := range kw {
		fa, err := t.toArg(f, k.Val)
		if err != nil {
			return nil, err
		}
		fxKw = append(fxKw, fxgraph.Kwarg{Name: k.Name, Value: fa})
	}
	inputs := tensorsIn(args, kw)
	var res primtorch.Value
	var margs []primtorch.Value
	var mkw []primtorch.KV
	if op != nil {
		var err2 error
		if margs, mkw, err2 = t.metaArgs(f, args, kw); err2 != nil {
			return nil, err2
		}
		if metaRejects[target] {
			res, err = nil, &primtorch.Error{Kind: primtorch.ErrInvalid, Op: op.Name, PyType: "RuntimeError",
				Msg: "the meta function rejects the call (a rejection ptgo's tests ask for)"}
		} else {
			res, err = op.Meta(margs, mkw)
		}
		if err != nil {
			return nil, t.metaError(f, target, err)
		}
	} else {
		res, err = t.metaFallback(f, method, target, args, kw)
		if err != nil {
			return nil, err
		}
	}
	if err := t.probeKernel(f, method, target, op, args, kw); err != nil {
		return nil, err
	}
	if err := t.probeBackward(f, method, target, args, kw); err != nil {
		return nil, err
	}
	if err := t.checkAutocast(f, method, target, op, policy, origArgs, origKw, res); err != nil {
		return nil, err
	}
	inMetas := make([]*primtorch.TensorMeta, len(inputs))
	for i, in := range inputs {
		inMetas[i] = in.Meta
	}
	inplace := op != nil && op.Alias == primtorch.AliasInPlace
	if op == nil && method && strings.HasSuffix(target, "_") && !strings.HasSuffix(target, "__") {
		inplace = true
	}
	if method && target == "requires_grad_" {
		if err := t.gradTracksViews(f, args, kw); err != nil {
			return nil, err
		}
	}
	if err := t.checkSelectedWrite(f, target, inplace, op, args, kw); err != nil {
		return nil, err
	}
	if op != nil && !inplace && len(args) > 0 && len(origArgs) > 0 && args[0] == origArgs[0] {
		if self, ok := args[0].(*TensorV); ok {
			if op.ReturnsSelf(margs, mkw) {
				// torch returns the input itself (F.dropout(x, 0.0) is x): the same object, so a
				// later x.t_() changes the result too (fuzz seeds 1450, 2225)
				return self, nil
			}
		}
	}
	var fixGrad func(m *primtorch.TensorMeta)
	fixGrad = func(m *primtorch.TensorMeta) {
		if op != nil {
			m.RequiresGrad = primtorch.ResultRequiresGrad(t.gradEnabled, inMetas, m, op)
		} else {
			m.RequiresGrad = primtorch.ResultRequiresGrad(t.gradEnabled, inMetas, m, nil)
		}
	}
	if rs, ok := res.([]primtorch.Value); ok && len(rs) > maxUnbind {
		// one node per result: a graph of 90000 getitems (masked_select(...).unbind(0)) ran the
		// compiler out of memory (fuzz seed 22586); eager makes them in a moment
		return nil, f.unsupported("", "%s returns %d tensors (ptgo traces at most %d results of one call)", target, len(rs), maxUnbind)
	}
	var node *fxgraph.Node
	if method {
		node = t.addMethod(f, target, fxArgs, fxKw, nil)
	} else {
		node = t.addCall(f, target, fxArgs, fxKw, nil)
	}
	switch r := res.(type) {
	case *primtorch.TensorMeta:
		fixGrad(r)
		node.Meta = r
		tv := &TensorV{Node: node, Meta: r}
		if inplace {
			if self, ok := args[0].(*TensorV); ok {
				if r.RequiresGrad && !self.Meta.RequiresGrad && t.hasAliases(self) {
					// eager's other views of that memory require grad from now on too (their
					// grad_fn follows the base); a traced view keeps the meta it was made with
					// (fuzz seed 17113: v5 = v1[1:]; v1[0] = w then v5 * 0.5 required grad in
					// eager only). The graph breaks here and eager runs the write.
					return nil, f.unsupported("", "an in-place write makes a tensor with views require grad: eager's views then require grad too, which a traced view cannot follow")
				}
				// The op returns its first argument, now mutated: later uses read the new node.
				self.Node, self.Meta = node, r
				return self, nil
			}
		}
		// (detach's result shares memory but not autograd: its requires_grad_() is its own)
		if base, ok := firstTensor(args); ok && op != nil && op.ID != primtorch.OpDetach &&
			(op.Alias == primtorch.AliasView || op.Alias == primtorch.AliasMaybe) {
			t.noteView(tv, base)
		}
		return tv, nil
	case []primtorch.Value:
		metas := make([]any, len(r))
		items := make([]Value, len(r))
		for i, m := range r {
			tm, ok := m.(*primtorch.TensorMeta)
			if !ok {
				metas[i] = m
				c, err := t.scalarValue(f, m)
				if err != nil {
					return nil, err
				}
				items[i] = c
				continue
			}
			fixGrad(tm)
			metas[i] = tm
		}
		node.Meta = metas
		var class py.Obj
		if c, ok := t.env.TryKnown("torch.return_types." + baseName(target)); ok {
			class = c
		}
		for i, m := range metas {
			if tm, ok := m.(*primtorch.TensorMeta); ok {
				g := t.addCall(f, "operator.getitem", []fxgraph.Arg{node, fxgraph.Const{V: int64(i)}}, nil, tm)
				t.opCount--
				items[i] = &TensorV{Node: g, Meta: tm}
			}
		}
		return &TupleV{Items: items, Class: class}, nil
	case nil:
		// Ops returning None (setitem, in-place functions like torch.nn.init.*_).
		node.Meta = nil
		return noneV, nil
	default:
		return nil, f.unsupported("", "%s returns a Python number computed from tensor values (data-dependent)", target)
	}
}

// noteView records tv as a view of base (of base's root when base is a view itself).
func (t *Tracer) noteView(tv, base *TensorV) {
	if t.viewRoot == nil {
		t.viewRoot = map[*TensorV]*TensorV{}
	}
	if r, ok := t.viewRoot[base]; ok {
		base = r
	}
	t.viewRoot[tv] = base
}

// gradTracksViews refuses x.requires_grad_() (True, the default) on a tensor that is a view or
// has views the trace made: in eager those views then require grad too (their grad_fn follows
// the base), while a recorded view keeps the meta it was made with (fuzz seed 15516: v2 =
// v1[-1]; v1.requires_grad_(); v2's result required grad in eager only). The graph breaks
// there and eager runs the call.
func (t *Tracer) gradTracksViews(f *frame, args []Value, kw []kwArg) error {
	self, ok := firstTensor(args)
	if !ok || len(t.viewRoot) == 0 {
		return nil
	}
	isFalse := func(v Value) bool { c, ok := v.(*ConstV); return ok && c.IsIntLike() && c.I == 0 }
	if len(args) > 1 && isFalse(args[1]) {
		return nil
	}
	for _, k := range kw {
		if k.Name == "requires_grad" && isFalse(k.Val) {
			return nil
		}
	}
	if t.hasAliases(self) {
		return f.unsupported("", "requires_grad_() on a tensor with views: eager's views then require grad too, which a traced view cannot follow")
	}
	return nil
}

// hasAliases reports whether the trace made another tensor sharing self's memory: self is a
// view, or has views.
func (t *Tracer) hasAliases(self *TensorV) bool {
	root := self
	if r, isView := t.viewRoot[self]; isView {
		root = r
	}
	for v, r := range t.viewRoot {
		if r == root && v != self || root != self {
			return true
		}
	}
	return false
}

// firstTensor is args[0] when it is a tensor.
func firstTensor(args []Value) (*TensorV, bool) {
	if len(args) == 0 {
		return nil, false
	}
	tv, ok := args[0].(*TensorV)
	return tv, ok
}

// markSelected records a tensor that stands for one of several tensors Python would have
// returned itself (min/max of tensors): eager's result aliases the chosen input, the graph's
// does not, so writes to it are refused.
func (t *Tracer) markSelected(tv *TensorV) {
	if t.selected == nil {
		t.selected = map[*fxgraph.Node]bool{}
	}
	t.selected[tv.Node] = true
}

// checkSelectedWrite refuses an op that writes to a tensor markSelected recorded.
func (t *Tracer) checkSelectedWrite(f *frame, target string, inplace bool, op *primtorch.Op, args []Value, kw []kwArg) error {
	if len(t.selected) == 0 {
		return nil
	}
	var written []Value
	if len(args) > 0 && (inplace || target == "operator.setitem" || (op != nil && len(op.Mutates) > 0)) {
		written = append(written, args[0])
	}
	for _, k := range kw {
		if k.Name == "out" {
			written = append(written, k.Val)
		}
	}
	for _, w := range written {
		if tv, ok := w.(*TensorV); ok && t.selected[tv.Node] {
			return f.unsupported("clone the result of min()/max() before writing to it",
				"writing in place to the result of min()/max() of tensors, which in eager is one of the inputs")
		}
	}
	return nil
}

// baseName is the op name of a call target: "torch.max" → "max", "max" → "max".
func baseName(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}

func (t *Tracer) scalarValue(f *frame, m primtorch.Value) (Value, error) {
	switch x := m.(type) {
	case nil:
		return noneV, nil
	case int64:
		return intV(x), nil
	case float64:
		return floatV(x), nil
	case bool:
		return boolV(x), nil
	}
	return nil, f.unsupported("", "an op result of type %T", m)
}

// metaRejects names call targets whose meta function rejects every call, as if it were stricter
// than torch's: ptgo's tests check that such a call still runs (eagerly) and succeeds. Set
// through SetMetaRejects only.
var metaRejects map[string]bool

// SetMetaRejects makes the meta functions of the given call targets ("torch.sin"; a tensor
// method by its name, "sin") reject every call; nil restores them. For tests.
func SetMetaRejects(targets []string) {
	metaRejects = nil
	for _, t := range targets {
		if metaRejects == nil {
			metaRejects = map[string]bool{}
		}
		metaRejects[t] = true
	}
}

// metaError turns a meta function's error into why capture stops: a call torch rejects too is
// a user error (the frame runs eagerly and torch raises its own exception), anything else is
// unsupported.
func (t *Tracer) metaError(f *frame, target string, err error) error {
	var pe *primtorch.Error
	switch {
	case errors.Is(err, primtorch.ErrDataDependent):
		return f.unsupported("the result depends on tensor values; keep this call outside the compiled function",
			"%s has a data-dependent result", target)
	case errors.Is(err, primtorch.ErrInvalid) && errors.As(err, &pe):
		return f.userError(pe.PyType, "%s (%s)", pe.Msg, target)
	case errors.Is(err, primtorch.ErrInvalid):
		return f.userError("", "%s: %v", target, err)
	}
	return f.unsupported("", "%s: %v", target, err)
}

// probeKernel tries the call on torch's own CPU kernels (zero-filled tensors with the operands'
// metadata, once per call signature) when an operand has a dtype some of them do not implement
// (primtorch.KernelMayReject; for ops ptgo has no meta function for, half and bfloat16): meta
// functions, ptgo's and torch's, accept such calls and eager then raises ("GeluKernelImpl" not
// implemented for 'Long'). A rejection is a user error, so the frame runs eagerly and raises
// torch's own exception; a graph would raise it mid-way (torch-run backends) or not at all (C
// kernels compute any dtype).
func (t *Tracer) probeKernel(f *frame, method bool, target string, op *primtorch.Op, args []Value, kw []kwArg) error {
	ins := tensorsIn(args, kw)
	dtypes := make([]primtorch.DType, len(ins))
	for i, in := range ins {
		if in.Meta.Device.Type != "" && in.Meta.Device.Type != "cpu" {
			return nil
		}
		dtypes[i] = in.Meta.DType
	}
	// A function the registry does not hold is always tried: torch's meta kernel (its meta)
	// checks no dtypes, and its CPU kernel may have none for them (a float16 operand; gcd of a
	// float: fuzz seed 25774)
	if op != nil && !primtorch.KernelMayReject(op, dtypes) {
		return nil
	}
	r := t.probeCall(f, "kernel_probe", method, target, args, kw)
	if r == 0 {
		return nil
	}
	typ, _ := t.api.Index(r, 0)
	msg, _ := t.api.Index(r, 1)
	pyType, _ := t.api.Str(typ)
	text, _ := t.api.Str(msg)
	return f.userError(pyType, "%s (%s, found by running torch's CPU kernel while tracing)", text, target)
}

// probeBackward asks torch whether eager's backward of a call that mixes dtypes among its tensor
// operands, one requiring grad, accepts it (ptgo._runtime.backward_probe): torch 1.13's mse_loss
// computes a float32 input against a float64 target (fuzz seed 21084) or a bool one (seed 37984)
// and its backward raises "Found dtype Double but expected Float", where ptgo's derivatives
// would give gradients. Such a call is a graph break: it runs with torch, whose backward raises.
// The probe's answers are kept per call signature (a mask times an activation asks once).
func (t *Tracer) probeBackward(f *frame, method bool, target string, args []Value, kw []kwArg) error {
	if !t.gradEnabled {
		return nil
	}
	grad := false
	var first primtorch.DType
	seen, mixed := false, false
	for _, in := range tensorsIn(args, kw) {
		if in.Meta.Device.Type != "" && in.Meta.Device.Type != "cpu" {
			return nil
		}
		grad = grad || in.Meta.RequiresGrad
		mixed = mixed || seen && first != in.Meta.DType
		first, seen = in.Meta.DType, true
	}
	if !grad || !mixed {
		return nil
	}
	r := t.probeCall(f, "backward_probe", method, target, args, kw)
	if r == 0 {
		return nil
	}
	msg, _ := t.api.Index(r, 1)
	text, _ := t.api.Str(msg)
	return f.unsupported("give the operands one dtype (convert with .to(dtype))",
		"%s: eager's backward of this call raises (%s); the call runs with torch, whose backward raises it", target, text)
}

// probeCall runs a probe of ptgo._runtime (kernel_probe, backward_probe) on zero-filled tensors
// of the call's arguments' metadata: its answer, or 0 for none (the probes are advisory: a call
// they cannot express stays as the meta function decided).
func (t *Tracer) probeCall(f *frame, probe string, method bool, target string, args []Value, kw []kwArg) py.Obj {
	api := t.api
	objs := make([]py.Obj, len(args))
	for i, a := range args {
		o, err := t.metaObj(f, a)
		if err != nil {
			return 0
		}
		objs[i] = o
	}
	var keys, vals []py.Obj
	for _, k := range kw {
		o, err := t.metaObj(f, k.Val)
		if err != nil {
			return 0
		}
		keys = append(keys, api.NewStr(k.Name))
		vals = append(vals, o)
	}
	kwd, err := api.NewDict(keys, vals)
	if err != nil {
		return 0
	}
	r, err := t.env.callRuntime(probe, api.NewStr(target), api.NewBool(method), api.NewTuple(objs), kwd)
	if err != nil || api.Kind(r) == py.KNone {
		return 0
	}
	return r
}

// realizeDeep realizes values and the items of tuples and lists (in place).
func (t *Tracer) realizeDeep(f *frame, vs []Value) error {
	for i := range vs {
		r, err := t.realizeValue(f, vs[i])
		if err != nil {
			return err
		}
		vs[i] = r
	}
	return nil
}

func (t *Tracer) realizeValue(f *frame, v Value) (Value, error) {
	r, err := t.realizeNumbers(f, v)
	if err != nil {
		return nil, err
	}
	switch x := r.(type) {
	case *TupleV:
		items := append([]Value(nil), x.Items...)
		if err := t.realizeDeep(f, items); err != nil {
			return nil, err
		}
		return x.withItems(items), nil
	case *ListV:
		items := append([]Value(nil), x.Items...)
		if err := t.realizeDeep(f, items); err != nil {
			return nil, err
		}
		return &ListV{Items: items, Source: x.Source}, nil
	}
	return r, nil
}

func tensorsIn(args []Value, kw []kwArg) []*TensorV {
	var out []*TensorV
	var walk func(v Value)
	walk = func(v Value) {
		switch x := v.(type) {
		case *TensorV:
			out = append(out, x)
		case *TupleV:
			for _, it := range x.Items {
				walk(it)
			}
		case *ListV:
			for _, it := range x.Items {
				walk(it)
			}
		}
	}
	for _, a := range args {
		walk(a)
	}
	for _, k := range kw {
		walk(k.Val)
	}
	return out
}

// toArg converts a realized value to a graph argument.
func (t *Tracer) toArg(f *frame, v Value) (fxgraph.Arg, error) {
	switch x := v.(type) {
	case *SymV:
		return fxgraph.Const{V: x.S}, nil
	case *SymF:
		if x.Node != nil {
			return x.Node, nil // a float computed in the graph: the node that defines it
		}
		return fxgraph.Const{V: x.F}, nil
	case *TensorV:
		return x.Node, nil
	case *ConstV:
		switch x.Kind {
		case py.KNone:
			return fxgraph.Const{V: nil}, nil
		case py.KBool:
			return fxgraph.Const{V: x.I != 0}, nil
		case py.KInt:
			if !x.big {
				return fxgraph.Const{V: x.I}, nil
			}
		case py.KFloat:
			return fxgraph.Const{V: x.F}, nil
		case py.KStr:
			return fxgraph.Const{V: x.S}, nil
		case py.KEllipsis:
			return fxgraph.Const{V: primtorch.Ellipsis{}}, nil
		}
	case *TupleV:
		items, err := t.toArgs(f, x.Items)
		return fxgraph.Tuple{Elems: items}, err
	case *ListV:
		items, err := t.toArgs(f, x.Items)
		return fxgraph.List{Elems: items}, err
	case *SliceV:
		parts, err := t.toArgs(f, []Value{x.Start, x.Stop, x.Step})
		if err != nil {
			return nil, err
		}
		return fxgraph.Slice{Start: parts[0], Stop: parts[1], Step: parts[2]}, nil
	case *ObjV:
		if c, ok := t.objConst(x.Obj); ok {
			return fxgraph.Const{V: c}, nil
		}
	}
	return nil, f.unsupported("", "passing %s to a tensor op", v.Describe())
}

func (t *Tracer) toArgs(f *frame, vs []Value) ([]fxgraph.Arg, error) {
	out := make([]fxgraph.Arg, len(vs))
	for i, v := range vs {
		r, err := t.realizeNumbers(f, v)
		if err != nil {
			return nil, err
		}
		if out[i], err = t.toArg(f, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objConst maps torch constants (dtypes, devices, memory formats, layouts) to IR constants.
func (t *Tracer) objConst(o py.Obj) (any, bool) {
	switch t.api.Kind(o) {
	case py.KDType:
		return t.env.DTypeOf(o)
	case py.KDevice:
		s, err := t.api.Call(t.env.Known("builtins.str"), []py.Obj{o}, nil)
		if err != nil {
			return nil, false
		}
		str, _ := t.api.Str(s)
		d, err := primtorch.ParseDevice(str)
		return d, err == nil
	}
	typ := t.api.TypeOf(o)
	switch typ {
	case t.env.Known("torch.memory_format"):
		return primtorch.MemoryFormat(strings.TrimPrefix(t.api.Repr(o), "torch.")), true
	case t.env.Known("torch.layout"):
		return primtorch.Layout(strings.TrimPrefix(t.api.Repr(o), "torch.")), true
	}
	return nil, false
}

// metaArgs converts realized values to primtorch values for meta functions.
func (t *Tracer) metaArgs(f *frame, args []Value, kw []kwArg) ([]primtorch.Value, []primtorch.KV, error) {
	out := make([]primtorch.Value, len(args))
	for i, a := range args {
		v, err := t.metaVal(f, a)
		if err != nil {
			return nil, nil, err
		}
		out[i] = v
	}
	var kvs []primtorch.KV
	for _, k := range kw {
		v, err := t.metaVal(f, k.Val)
		if err != nil {
			return nil, nil, err
		}
		kvs = append(kvs, primtorch.KV{Name: k.Name, Value: v})
	}
	return out, kvs, nil
}

func (t *Tracer) metaVal(f *frame, v Value) (primtorch.Value, error) {
	v, err := t.realizeNumbers(f, v)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case *SymV:
		return x.S, nil
	case *SymF:
		return x.F, nil
	case *TensorV:
		return x.Meta, nil
	case *ConstV:
		switch x.Kind {
		case py.KNone:
			return nil, nil
		case py.KBool:
			return x.I != 0, nil
		case py.KInt:
			if !x.big {
				return x.I, nil
			}
		case py.KFloat:
			return x.F, nil
		case py.KStr:
			return x.S, nil
		case py.KEllipsis:
			return primtorch.Ellipsis{}, nil
		case py.KComplex:
			o, _ := t.toObj(f, x)
			re, _ := t.api.GetAttr(o, "real")
			im, _ := t.api.GetAttr(o, "imag")
			r, _ := t.api.Float(re)
			i, _ := t.api.Float(im)
			return complex(r, i), nil
		}
	case *TupleV, *ListV:
		var items []Value
		tv, isTuple := x.(*TupleV)
		if isTuple {
			items = tv.Items
		} else {
			items = x.(*ListV).Items
		}
		out := make([]primtorch.Value, len(items))
		for i, it := range items {
			m, err := t.metaVal(f, it)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		if isTuple {
			// x[0, 1] indexes two dims; x[[0, 1]] gathers rows.
			return primtorch.Tuple(out), nil
		}
		return out, nil
	case *SliceV:
		s := primtorch.Slice{}
		for i, p := range []Value{x.Start, x.Stop, x.Step} {
			if sv, isSym := p.(*SymV); isSym && i < 2 {
				n, b := sv.S.Hint(), sv.S // a symbolic bound: its hint, and itself in SymStart/SymStop
				if i == 0 {
					s.Start, s.SymStart = &n, &b
				} else {
					s.Stop, s.SymStop = &n, &b
				}
				continue
			}
			if sv, isSym := p.(*SymV); isSym {
				p = specializeSym(f, sv) // a symbolic step: specialised
			}
			c, ok := p.(*ConstV)
			if !ok || !(c.IsNone() || c.IsIntLike()) {
				return nil, f.unsupported("", "a slice bound %s", p.Describe())
			}
			if c.IsNone() {
				continue
			}
			n := c.I
			switch i {
			case 0:
				s.Start = &n
			case 1:
				s.Stop = &n
			case 2:
				s.Step = &n
			}
		}
		return s, nil
	case *ObjV:
		if c, ok := t.objConst(x.Obj); ok {
			return c, nil
		}
	}
	return nil, f.unsupported("", "passing %s to a tensor op", v.Describe())
}

// metaFallback learns an op's output metadata by running it on torch's meta device.
func (t *Tracer) metaFallback(f *frame, method bool, target string, args []Value, kw []kwArg) (primtorch.Value, error) {
	api := t.api
	// torch's meta kernels see the sizes of this call: the result holds for them only
	why := target + " (no symbolic meta function) at " + f.shortWhere()
	for _, v := range args {
		specializeIn(v, why)
	}
	for _, k := range kw {
		specializeIn(k.Val, why)
	}
	objs := make([]py.Obj, len(args))
	for i, a := range args {
		o, err := t.metaObj(f, a)
		if err != nil {
			return nil, err
		}
		objs[i] = o
	}
	var keys, vals []py.Obj
	for _, k := range kw {
		o, err := t.metaObj(f, k.Val)
		if err != nil {
			return nil, err
		}
		keys = append(keys, api.NewStr(k.Name))
		vals = append(vals, o)
	}
	kwd, err := api.NewDict(keys, vals)
	if err != nil {
		return nil, err
	}
	r, err := t.env.callRuntime("meta_call", api.NewStr(target), api.NewBool(method), api.NewTuple(objs), kwd)
	if err != nil {
		return nil, f.unsupported("", "%s: ptgo has no meta function for it and torch's meta kernel failed (%v)", target, err)
	}
	if n, _ := api.Len(r); api.Kind(r) == py.KTuple && n == 3 {
		// ("rejected", type, message): torch's CPU kernel rejects the call.
		typ, _ := api.Index(r, 1)
		msg, _ := api.Index(r, 2)
		pyType, _ := api.Str(typ)
		text, _ := api.Str(msg)
		return nil, f.userError(pyType, "%s (%s, ptgo has no meta function for it)", text, target)
	}
	dev := primtorch.CPU
	if ins := tensorsIn(args, kw); len(ins) > 0 {
		dev = ins[0].Meta.Device
	}
	logs.Printf(logs.PerfHints, "%s has no Go meta function; used torch's meta kernel (%s)", target, f.shortWhereUser())
	t.learnEffects(method, target)
	return t.parseMetaResult(f, r, dev)
}

// learnEffects reads, once per target, what the running torch's schemas say a function the
// registry does not hold does besides computing its result (ptgo._runtime.schema_effects), for
// the registry's effects question (primtorch.TorchCallEffects): a graph calling torch.sinc can
// then be rerun with torch when a kernel finds an index out of range, and dead-code elimination
// and freezing know it writes nothing. Not readable (a Python function): every effect, recorded
// so that the next trace does not ask again.
func (t *Tracer) learnEffects(method bool, target string) {
	key := target
	if method {
		key = "Tensor." + target
	}
	if _, ok := primtorch.TorchCallEffects(key, nil); ok {
		return
	}
	api := t.api
	every := primtorch.EffectWrites | primtorch.EffectRandom | primtorch.EffectRaises
	r, err := t.env.callRuntime("schema_effects", api.NewStr(target), api.NewBool(method))
	if err != nil || r == api.None() {
		primtorch.LearnTorchCallEffects(key, every, nil)
		return
	}
	eo, _ := api.Index(r, 0)
	e, err := api.Int(eo)
	if err != nil {
		primtorch.LearnTorchCallEffects(key, every, nil)
		return
	}
	var out []string
	names, _ := api.Index(r, 1)
	n, _ := api.Len(names)
	for i := 0; i < n; i++ {
		o, _ := api.Index(names, i)
		if s, err := api.Str(o); err == nil {
			out = append(out, s)
		}
	}
	primtorch.LearnTorchCallEffects(key, primtorch.Effects(e), out)
}

// metaObj converts a value to what ptgo._runtime.meta_call expects.
func (t *Tracer) metaObj(f *frame, v Value) (py.Obj, error) {
	switch x := v.(type) {
	case *TensorV:
		m := x.Meta
		return t.env.callRuntime("TensorSpec", t.api.NewTuple(intObjs(t.api, m.Shape)), t.api.NewTuple(intObjs(t.api, m.Strides)),
			t.api.NewInt(m.Offset), t.api.NewInt(int64(m.DType)), t.api.NewBool(m.RequiresGrad))
	case *TupleV:
		items := make([]py.Obj, len(x.Items))
		for i, it := range x.Items {
			o, err := t.metaObj(f, it)
			if err != nil {
				return 0, err
			}
			items[i] = o
		}
		return t.api.NewTuple(items), nil
	case *ListV:
		items := make([]py.Obj, len(x.Items))
		for i, it := range x.Items {
			o, err := t.metaObj(f, it)
			if err != nil {
				return 0, err
			}
			items[i] = o
		}
		return t.api.NewList(items), nil
	}
	return t.toObj(f, v)
}

func intObjs(api py.API, xs []int64) []py.Obj {
	out := make([]py.Obj, len(xs))
	for i, x := range xs {
		out[i] = api.NewInt(x)
	}
	return out
}

func (t *Tracer) parseMetaResult(f *frame, r py.Obj, dev primtorch.Device) (primtorch.Value, error) {
	api := t.api
	switch api.Kind(r) {
	case py.KTuple:
		n, _ := api.Len(r)
		if n == 2 {
			first, _ := api.Index(r, 0)
			if s, err := api.Str(first); err == nil && s == "scalar" {
				v, _ := api.Index(r, 1)
				c, err := t.constFromObj(v)
				if err != nil {
					return nil, err
				}
				cv := c.(*ConstV)
				switch cv.Kind {
				case py.KNone:
					return nil, nil
				case py.KBool:
					return cv.I != 0, nil
				case py.KInt:
					return cv.I, nil
				case py.KFloat:
					return cv.F, nil
				}
				return nil, f.unsupported("", "an op returning %s", cv.Describe())
			}
		}
		if n != 5 {
			return nil, internalError(fmt.Sprintf("meta_call returned a %d-tuple", n))
		}
		get := func(i int) py.Obj { o, _ := api.Index(r, i); return o }
		ints := func(o py.Obj) []int64 {
			k, _ := api.Len(o)
			out := make([]int64, k)
			for i := range out {
				it, _ := api.Index(o, i)
				out[i], _ = api.Int(it)
			}
			return out
		}
		off, _ := api.Int(get(2))
		dt, _ := api.Int(get(3))
		return &primtorch.TensorMeta{DType: primtorch.DType(dt), Shape: ints(get(0)), Strides: ints(get(1)), Offset: off, Device: dev}, nil
	case py.KList:
		n, _ := api.Len(r)
		out := make([]primtorch.Value, n)
		for i := range out {
			it, _ := api.Index(r, i)
			v, err := t.parseMetaResult(f, it, dev)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return nil, internalError("meta_call returned " + api.Repr(r))
}

// ---- tensor attributes and methods ----------------------------------------------------------

var tensorStaticAttrs = map[string]bool{"shape": true, "dtype": true, "device": true, "ndim": true,
	"requires_grad": true, "is_cuda": true, "is_leaf": true, "is_sparse": true, "is_quantized": true,
	"is_meta": true, "is_nested": true, "is_mkldnn": true, "layout": true, "T": true, "mT": true,
	"data": true, "grad": true, "grad_fn": true, "names": true}

func tensorHasAttr(name string) bool {
	if tensorStaticAttrs[name] {
		return true
	}
	return primtorch.Lookup("Tensor."+name) != nil || tensorMetaMethods[name]
}

var tensorMetaMethods = map[string]bool{"size": true, "dim": true, "ndimension": true, "numel": true,
	"nelement": true, "stride": true, "is_contiguous": true, "is_floating_point": true, "is_complex": true,
	"element_size": true, "storage_offset": true, "get_device": true, "__len__": true}

func (t *Tracer) tensorAttr(f *frame, x *TensorV, name string) (Value, error) {
	m := x.Meta
	switch name {
	case "shape":
		return symSizeTuple(m.SymSizes()), nil
	case "dtype":
		return t.objValue(t.env.DTypeObj(m.DType), nil), nil
	case "device":
		return t.deviceValue(f, m.Device)
	case "ndim":
		return intV(int64(len(m.Shape))), nil
	case "requires_grad":
		return boolV(m.RequiresGrad), nil
	case "is_cuda":
		return boolV(m.Device.Type == "cuda"), nil
	case "is_meta":
		return boolV(m.Device.Type == "meta"), nil
	case "is_leaf":
		if x.Source != nil || x.Node.Op == fxgraph.GetAttr {
			return boolV(!m.RequiresGrad || x.Node.Op != fxgraph.CallFunction), nil
		}
		return boolV(!m.RequiresGrad), nil
	case "is_sparse", "is_quantized", "is_nested", "is_mkldnn":
		return falseV, nil
	case "layout":
		return t.objValue(t.env.Known("torch.strided"), nil), nil
	case "names":
		items := make([]Value, len(m.Shape))
		for i := range items {
			items[i] = noneV
		}
		return &TupleV{Items: items}, nil
	case "T":
		dims := make([]Value, len(m.Shape))
		for i := range dims {
			dims[i] = intV(int64(len(m.Shape) - 1 - i))
		}
		return t.tensorMethod(f, x, "permute", dims, nil)
	case "mT":
		return t.tensorMethod(f, x, "transpose", []Value{intV(-2), intV(-1)}, nil)
	case "data":
		return t.tensorMethod(f, x, "detach", nil, nil)
	case "grad":
		// The gradient of a tensor the frame reads (an input, a parameter) is another live
		// object read from the same place: None or a tensor, guarded like any input, or what the
		// trace assigned it (setTensorGrad). backward is a graph break, so nothing else changes
		// it inside a graph.
		if src, obj := t.tensorOrigin(x); src != nil {
			if v, ok := t.pendingAttr(obj, "grad"); ok {
				return v, nil
			}
			g, err := t.api.GetAttr(obj, "grad")
			if err != nil {
				return nil, err
			}
			return t.lazy(g, &AttrSource{Base: src, Attr: "grad"}), nil
		}
		return nil, f.unsupported("read it outside the compiled function", "tensor.grad of a tensor the graph computes")
	case "grad_fn":
		if !m.RequiresGrad {
			return noneV, nil
		}
		return nil, f.unsupported("read it outside the compiled function", "tensor.%s", name)
	}
	return &BoundV{Self: x, Name: name}, nil
}

// tensorOrigin is where a tensor the frame reads comes from and the live tensor: a graph
// input's source, or a parameter's or buffer's attribute path; nil for tensors the graph computes.
func (t *Tracer) tensorOrigin(x *TensorV) (Source, py.Obj) {
	if x.Node == nil {
		return nil, 0
	}
	switch {
	case x.Node.Op == fxgraph.Placeholder && x.Source != nil && x.Obj != 0:
		return x.Source, x.Obj
	case x.Node.Op == fxgraph.GetAttr:
		src, obj := t.attrSources[x.Node.Target], t.attrs[x.Node.Target]
		if src != nil && obj != 0 {
			return src, obj
		}
	}
	return nil, 0
}

// symSizeTuple is a torch.Size whose items may be dynamic sizes.
func symSizeTuple(sizes []primtorch.SymInt) *TupleV {
	items := make([]Value, len(sizes))
	for i, s := range sizes {
		items[i] = symValue(s)
	}
	return &TupleV{Items: items, Size: true}
}

func sizeTuple(shape []int64) *TupleV {
	items := make([]Value, len(shape))
	for i, s := range shape {
		items[i] = intV(s)
	}
	return &TupleV{Items: items, Size: true}
}

func (t *Tracer) deviceValue(f *frame, d primtorch.Device) (Value, error) {
	key := "device:" + d.String()
	if o, ok := t.env.known[key]; ok {
		return t.objValue(o, nil), nil
	}
	o, err := t.api.Call(t.env.Known("torch.device"), []py.Obj{t.api.NewStr(d.String())}, nil)
	if err != nil {
		return nil, err
	}
	t.env.known[key] = o
	return t.objValue(o, nil), nil
}

// dimArg normalizes a dim argument against rank n (negative dims count from the end).
func dimArg(f *frame, v Value, n int) (int, error) {
	if s, isSym := v.(*SymV); isSym {
		v = specializeSym(f, s)
	}
	c, ok := v.(*ConstV)
	if !ok || !c.IsIntLike() {
		return 0, f.unsupported("", "dimension %s is not an int", v.Describe())
	}
	d := int(c.I)
	rank := n
	if rank == 0 {
		rank = 1
	}
	if d < -rank || d >= rank {
		return 0, f.userError("IndexError", "Dimension out of range (expected to be in range of [%d, %d], but got %d)", -rank, rank-1, d)
	}
	if d < 0 {
		d += rank
	}
	return d, nil
}

// tensorMethod calls x.name(*args): metadata queries are answered, everything else recorded.
// x may be nil when args[0] is the tensor (torch.numel(x) and friends).
func (t *Tracer) tensorMethod(f *frame, x *TensorV, name string, args []Value, kw []kwArg) (Value, error) {
	if x == nil {
		if len(args) == 0 {
			return nil, f.unsupported("", "%s() needs a tensor", name)
		}
		self, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		tv, ok := self.(*TensorV)
		if !ok {
			return nil, f.unsupported("", "%s() of %s", name, self.Describe())
		}
		x, args = tv, args[1:]
	}
	// a float read at run time stays one for the methods of ops that take it (x.mul(a)); the
	// others (and the metadata queries answered here) get its value, guarded
	keepFloat := t.realizeKeepSym
	if op := primtorch.Lookup("Tensor." + name); op != nil && op.SymFloats {
		keepFloat = t.realizeNumbers
	}
	for i := range args {
		r, err := keepFloat(f, args[i])
		if err != nil {
			return nil, err
		}
		args[i] = r
	}
	m := x.Meta
	kwv := func(key string) Value {
		for _, k := range kw {
			if k.Name == key {
				return k.Val
			}
		}
		return nil
	}
	switch name {
	case "size", "stride":
		vals := m.SymSizes()
		if name == "stride" {
			vals = m.SymStrides()
		}
		dim := kwv("dim")
		if len(args) > 0 {
			dim = args[0]
		}
		if dim == nil || isNone(dim) {
			if name == "size" {
				return symSizeTuple(vals), nil
			}
			tup := symSizeTuple(vals)
			tup.Size = false
			return tup, nil
		}
		d, err := dimArg(f, dim, len(vals))
		if err != nil {
			return nil, err
		}
		return symValue(vals[d]), nil
	case "dim", "ndimension":
		return intV(int64(len(m.Shape))), nil
	case "numel", "nelement":
		return symValue(m.SymNumel()), nil
	case "__len__":
		return t.getAttrLen(f, x)
	case "is_contiguous":
		mf := kwv("memory_format")
		if len(args) > 0 {
			mf = args[0]
		}
		if mf != nil {
			if o, ok := mf.(*ObjV); ok {
				if c, ok := t.objConst(o.Obj); ok && c != primtorch.MemoryFormat("contiguous_format") {
					return boolV(isChannelsLast(f, m, string(c.(primtorch.MemoryFormat)))), nil
				}
			}
		}
		return boolV(denseInOrder(f, m, nil)), nil
	case "is_floating_point":
		return boolV(m.DType.IsFloatingPoint()), nil
	case "is_complex":
		return boolV(m.DType.IsComplex()), nil
	case "element_size":
		return intV(int64(m.DType.ItemSize())), nil
	case "storage_offset":
		return intV(m.Offset), nil
	case "get_device":
		if m.Device.Type == "cuda" {
			return intV(int64(m.Device.Index)), nil
		}
		return intV(-1), nil
	case "type":
		if len(args) == 0 && len(kw) == 0 {
			return nil, f.unsupported("use .dtype", "tensor.type() returning a type name")
		}
	case "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__", "data_ptr", "__array__":
		if name == "item" || name == "__float__" {
			if v := t.itemFloat(f, x); v != nil && len(args) == 0 && len(kw) == 0 {
				return v, nil
			}
		}
		return nil, f.unsupported("keep it a tensor, or read the value outside the compiled function",
			"tensor.%s() reads tensor values (data-dependent)", name)
	case "backward", "register_hook", "retain_grad", "share_memory_", "pin_memory", "record_stream":
		return nil, f.unsupported("call it outside the compiled function", "tensor.%s()", name)
	case "__getitem__":
		return t.tensorIndex(f, x, args[0])
	case "__setitem__":
		return noneV, t.tensorSetItem(f, x, args[0], args[1])
	}
	all := append([]Value{x}, args...)
	return t.record(f, true, name, primtorch.Lookup("Tensor."+name), all, kw)
}

func (t *Tracer) getAttrLen(f *frame, x *TensorV) (Value, error) {
	n, err := t.length(f, x)
	return intV(int64(n)), err
}

func isNone(v Value) bool {
	c, ok := v.(*ConstV)
	return ok && c.IsNone()
}

func isChannelsLast(f *frame, m *primtorch.TensorMeta, format string) bool {
	var order []int
	switch {
	case format == "channels_last" && len(m.Shape) == 4:
		order = []int{1, 3, 2, 0}
	case format == "channels_last_3d" && len(m.Shape) == 5:
		order = []int{1, 4, 3, 2, 0}
	default:
		return false
	}
	return denseInOrder(f, m, order)
}

// denseInOrder is torch's contiguity test for the dim order (innermost first; nil: row-major):
// the strides of dims of size > 1 are the running products of the sizes. With symbolic sizes
// every comparison is decided at the hints and guarded.
func denseInOrder(f *frame, m *primtorch.TensorMeta, order []int) bool {
	if order == nil {
		for d := m.Dim() - 1; d >= 0; d-- {
			order = append(order, d)
		}
	}
	sizes, strides := m.SymSizes(), m.SymStrides()
	if m.Sym != nil {
		if env := firstEnv(sizes, strides); env != nil {
			env.Why = "is_contiguous() at " + f.shortWhere()
			defer func() { env.Why = "" }()
		}
	}
	for _, s := range sizes {
		if k, ok := s.IsConst(); ok && k == 0 {
			return true
		}
	}
	acc := primtorch.SymConst(1)
	for _, d := range order {
		if k, ok := sizes[d].IsConst(); ok && k == 1 {
			continue
		}
		if !strides[d].EqualHint(acc) {
			return false
		}
		acc = acc.Mul(sizes[d])
	}
	return true
}

func firstEnv(lists ...[]primtorch.SymInt) *primtorch.ShapeEnv {
	for _, l := range lists {
		for _, s := range l {
			if e := s.Env(); e != nil {
				return e
			}
		}
	}
	return nil
}

// torchTensor is torch.tensor(data, dtype=, device=, requires_grad=): of a tensor, a copy
// (torch's detach().clone() then the conversion, strides kept as torch.tensor keeps them); of
// Python numbers, sizes and ranges, a constant the graph makes.
func torchTensor(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if len(args) != 1 {
		return nil, f.unsupported("eager raises TypeError", "torch.tensor() takes 1 positional argument")
	}
	data, err := t.realize(f, args[0])
	if err != nil {
		return nil, err
	}
	if x, ok := data.(*TensorV); ok {
		var conv []kwArg
		for _, k := range kw {
			switch k.Name {
			case "dtype", "device":
				if !isNone(k.Val) {
					conv = append(conv, k)
				}
			case "requires_grad":
				rg, err := t.truthy(f, k.Val)
				if err != nil {
					return nil, err
				}
				if rg {
					return nil, f.unsupported("use x.detach().clone().requires_grad_(True) outside the compiled function",
						"torch.tensor(tensor, requires_grad=True) makes a new leaf")
				}
			case "pin_memory":
			default:
				return nil, f.unsupported("eager raises TypeError", "torch.tensor() got an unexpected keyword argument %q", k.Name)
			}
		}
		d, err := t.tensorMethod(f, x, "detach", nil, nil)
		if err != nil {
			return nil, err
		}
		c, err := t.tensorMethod(f, d.(*TensorV), "clone", nil, nil)
		if err != nil || len(conv) == 0 {
			return c, err
		}
		return t.tensorMethod(f, c.(*TensorV), "to", nil, conv)
	}
	data, err = t.tensorData(f, data)
	if err != nil {
		return nil, err
	}
	return t.record(f, false, "torch.tensor", primtorch.Lookup("torch.tensor"), []Value{data}, kw)
}

// torchAsTensor is torch.as_tensor(data, dtype=None, device=None): a tensor as it is when dtype
// and device already match (the same object, as eager returns it), else converted with .to();
// Python numbers and lists become a new tensor, as torch.tensor makes it. (torchvision's
// detection transforms and anchor generators call it on lists and on tensors.)
func torchAsTensor(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	names := []string{"data", "dtype", "device"}
	slots, err := bindSlots(f, "as_tensor", names, args, kw)
	if err != nil {
		return nil, err
	}
	dataArg := slots[0]
	if dataArg == nil {
		return nil, f.unsupported("eager raises TypeError", "as_tensor() missing 1 required positional argument: \"data\"")
	}
	var conv []kwArg
	for i, n := range names[1:] {
		if v := slots[i+1]; v != nil && !isNone(v) {
			conv = append(conv, kwArg{Name: n, Val: v})
		}
	}
	data, err := t.realize(f, dataArg)
	if err != nil {
		return nil, err
	}
	if x, ok := data.(*TensorV); ok {
		if len(conv) == 0 {
			return x, nil
		}
		return t.tensorMethod(f, x, "to", nil, conv)
	}
	return torchTensor(t, f, []Value{data}, conv)
}

// torchMeshgrid is torch.meshgrid(*tensors, indexing=...) as ATen computes it: input k, 0-d or
// 1-d, viewed with its length at its grid dimension and 1 elsewhere, then expanded to the grid
// (views of the inputs, with eager's strides); indexing="xy" makes the first two inputs' grid
// dimensions trade places. Without indexing= eager warns once (its default changes), so that
// call stays eager's. (torchvision's AnchorGenerator and RAFT call it.)
func torchMeshgrid(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	if err := noKw(f, "meshgrid", kw, "indexing"); err != nil {
		return nil, err
	}
	idx := kwValue(kw, "indexing")
	if idx == nil {
		return nil, f.unsupported("pass indexing='ij' (or 'xy') to torch.meshgrid", "torch.meshgrid without indexing= warns in eager")
	}
	ic, ok := idx.(*ConstV)
	if !ok || ic.Kind != py.KStr || (ic.S != "ij" && ic.S != "xy") {
		return nil, f.unsupported("eager raises RuntimeError", "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s", idx.Describe())
	}
	items := args
	if len(args) == 1 {
		first, err := t.realize(f, args[0])
		if err != nil {
			return nil, err
		}
		items = []Value{first}
		if _, isT := first.(*TensorV); !isT {
			if items, err = t.unpack(f, first); err != nil {
				return nil, err
			}
		}
	}
	if len(items) == 0 {
		return nil, f.unsupported("eager raises RuntimeError", "torch.meshgrid expects a non-empty TensorList")
	}
	xs := make([]*TensorV, len(items))
	for i, it := range items {
		v, err := t.realize(f, it)
		if err != nil {
			return nil, err
		}
		x, ok := v.(*TensorV)
		if !ok {
			return nil, f.unsupported("eager raises TypeError", "torch.meshgrid takes tensors, got %s", v.Describe())
		}
		if len(x.Meta.Shape) > 1 {
			return nil, f.unsupported("eager raises RuntimeError", "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %s", x.Describe())
		}
		if i > 0 && (x.Meta.DType != xs[0].Meta.DType || x.Meta.Device != xs[0].Meta.Device) {
			return nil, f.unsupported("eager raises RuntimeError", "torch.meshgrid expects all tensors to have the same dtype and device")
		}
		xs[i] = x
	}
	n := len(xs)
	dimOf := func(k int) int {
		if ic.S == "xy" && n >= 2 && k < 2 {
			return 1 - k
		}
		return k
	}
	lengths := make([]Value, n)
	for k, x := range xs {
		if len(x.Meta.Shape) == 0 {
			lengths[dimOf(k)] = intV(1)
			continue
		}
		l, err := t.tensorMethod(f, x, "size", []Value{intV(0)}, nil)
		if err != nil {
			return nil, err
		}
		lengths[dimOf(k)] = l
	}
	out := make([]Value, n)
	for k, x := range xs {
		view := make([]Value, n)
		for d := range view {
			view[d] = intV(1)
		}
		view[dimOf(k)] = intV(-1)
		v, err := t.tensorMethod(f, x, "view", view, nil)
		if err != nil {
			return nil, err
		}
		if out[k], err = t.tensorMethod(f, v.(*TensorV), "expand", lengths, nil); err != nil {
			return nil, err
		}
	}
	return &TupleV{Items: out}, nil
}

// tensorData converts torch.tensor's data to nested lists of Python numbers (ranges listed,
// tuples and sizes as they are).
func (t *Tracer) tensorData(f *frame, v Value) (Value, error) {
	v, err := t.realize(f, v)
	if err != nil {
		return nil, err
	}
	var items []Value
	switch x := v.(type) {
	case *ConstV:
		return x, nil
	case *RangeV, *DequeV, *IterV:
		if items, err = t.unpack(f, x); err != nil {
			return nil, err
		}
	case *TupleV:
		items = x.Items
	case *ListV:
		items = x.Items
	case *TensorV:
		return nil, f.unsupported("torch.stack the tensors instead", "torch.tensor of a sequence holding tensors reads their values")
	default:
		return nil, f.unsupported("", "torch.tensor of %s", v.Describe())
	}
	out := make([]Value, len(items))
	for i, it := range items {
		if out[i], err = t.tensorData(f, it); err != nil {
			return nil, err
		}
	}
	return &ListV{Items: out}, nil
}

// tensorIndex records x[idx].
func (t *Tracer) tensorIndex(f *frame, x *TensorV, idx Value) (Value, error) {
	idx, err := t.constMaskIndex(f, x, idx)
	if err != nil {
		return nil, err
	}
	return t.record(f, false, "operator.getitem", primtorch.Lookup("operator.getitem"), []Value{x, idx}, nil)
}

// constMaskIndex replaces Python lists of bools in an index (x[[True, False, True]],
// x[:, [False, True]]) by the positions they select: torch reads such a list as a boolean mask
// of the dimension it indexes, and a mask known while tracing selects known positions, so the
// result's shape is known (a tensor mask's is not).
func (t *Tracer) constMaskIndex(f *frame, x *TensorV, idx Value) (Value, error) {
	idx, err := t.realize(f, idx)
	if err != nil {
		return nil, err
	}
	positions := func(l *ListV) (*ListV, bool, error) {
		if len(l.Items) == 0 {
			return nil, false, nil
		}
		var pos []Value
		for i, it := range l.Items {
			r, err := t.realize(f, it)
			if err != nil {
				return nil, false, err
			}
			c, ok := r.(*ConstV)
			if !ok || c.Kind != py.KBool {
				return nil, false, nil
			}
			if c.I != 0 {
				pos = append(pos, intV(int64(i)))
			}
		}
		return &ListV{Items: pos}, true, nil
	}
	shape := x.Meta.Shape
	check := func(l *ListV, dim int) error {
		// a mask's length is checked against the size it indexes: only then is that size
		// static (an index with no mask, x[:, -1] or x[:, 1:], keeps x's symbols)
		primtorch.SpecializeValue(x.Meta, "indexing with a constant mask at "+f.shortWhere())
		if dim >= len(shape) || int64(len(l.Items)) != shape[dim] {
			size := "nothing"
			if dim < len(shape) {
				size = fmt.Sprint(shape[dim])
			}
			return f.unsupported("eager raises IndexError", "a mask of %d booleans indexes a dimension of size %s", len(l.Items), size)
		}
		return nil
	}
	if l, ok := idx.(*ListV); ok {
		p, isMask, err := positions(l)
		if err != nil || !isMask {
			return idx, err
		}
		return p, check(l, 0)
	}
	tup, ok := idx.(*TupleV)
	if !ok || tup.Size {
		return idx, nil
	}
	var items []Value
	changed, dim := false, 0
	for _, it := range tup.Items {
		r, err := t.realize(f, it)
		if err != nil {
			return nil, err
		}
		if c, ok := r.(*ConstV); ok && (c.Kind == py.KEllipsis || c.Kind == py.KNone || c.Kind == py.KBool) {
			// Dims after an Ellipsis count from the end; masks there keep torch's own path.
			if c.Kind == py.KEllipsis {
				return idx, nil
			}
			items = append(items, r) // None and a bool add a dimension, consume none
			continue
		}
		if l, ok := r.(*ListV); ok {
			if p, isMask, err := positions(l); err != nil {
				return nil, err
			} else if isMask {
				if err := check(l, dim); err != nil {
					return nil, err
				}
				r, changed = p, true
			}
		}
		if tv, ok := r.(*TensorV); ok && tv.Meta.DType == primtorch.Bool {
			dim += len(tv.Meta.Shape)
		} else {
			dim++
		}
		items = append(items, r)
	}
	if !changed {
		return idx, nil
	}
	return &TupleV{Items: items}, nil
}

// tensorSetItem records x[idx] = val (a mutation of x the graph performs).
func (t *Tracer) tensorSetItem(f *frame, x *TensorV, idx, val Value) error {
	// In torch, writing a value that requires grad makes x require grad (grad mode on), and
	// every other view of its memory (see the in-place case in record: fuzz seed 17113).
	v, ok := val.(*TensorV)
	gains := ok && t.gradEnabled && v.Meta.RequiresGrad && !x.Meta.RequiresGrad &&
		(x.Meta.DType.IsFloatingPoint() || x.Meta.DType.IsComplex())
	if gains && t.hasAliases(x) {
		return f.unsupported("", "an in-place write makes a tensor with views require grad: eager's views then require grad too, which a traced view cannot follow")
	}
	_, err := t.record(f, false, "operator.setitem", primtorch.Lookup("operator.setitem"), []Value{x, idx, val}, nil)
	if err != nil {
		return err
	}
	if gains {
		m := x.Meta.Clone()
		m.RequiresGrad = true
		x.Meta = m
	}
	return nil
}

// maxUnbind is the most tensors one call (unbind, split) or one iteration over a tensor yields in
// a traced graph; beyond it the graph breaks and eager makes them.
const maxUnbind = 4096

// unbindTensor lists x[0], x[1], ... (iterating over a tensor).
func (t *Tracer) unbindTensor(f *frame, x *TensorV) ([]Value, error) {
	if len(x.Meta.Shape) == 0 {
		return nil, f.unsupported("", "iteration over a 0-d tensor")
	}
	n := staticSize(f, x.Meta, 0)
	if n > maxUnbind {
		return nil, f.unsupported("", "iterating over %d rows of a tensor", n)
	}
	out := make([]Value, n)
	for i := int64(0); i < n; i++ {
		v, err := t.tensorIndex(f, x, intV(i))
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
