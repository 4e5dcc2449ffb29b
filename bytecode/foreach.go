package bytecode

import (
	"strings"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// torch._foreach_* (the multi-tensor ops torch.optim's foreach=True paths and clip_grad_norm_
// call) are traced as the per-tensor calls torch's CPU kernels make: on the CPU every foreach op
// takes its "slow" path, one op per tensor in list order (t.add_(other[i], alpha=...),
// at::linalg_vector_norm(t, ord)), so tracing those calls gives eager's values, version bumps and
// effects, and the graph's kernels then fuse each tensor's whole update (an Adam step in one
// pass per parameter) where an opaque foreach call would run torch's loop of separate ops.
// A call that is not one of these shapes (lists of other lengths, an empty list, a tensor of
// per-tensor scalars, anything requiring grad) stays one torch call, which raises or computes as
// torch does.

// foreachTensorOperand are the foreach ops whose non-list tensor operand applies to every tensor
// (torch 2's _foreach_mul_.Tensor, _foreach_add_.Tensor for a CPU step count); elsewhere a
// tensor operand holds one scalar per tensor (_foreach_addcdiv_.Tensor) and is left to torch.
var foreachTensorOperand = map[string]bool{"add": true, "sub": true, "mul": true, "div": true}

// foreachKeywordOnly names the positional operands of a foreach op that the per-tensor call takes
// by keyword: Tensor.addcmul_(t1, t2, *, value).
var foreachKeywordOnly = map[string]map[int]string{
	"addcmul": {3: "value"},
	"addcdiv": {3: "value"},
	"norm":    {2: "dtype"},
}

// foreachCall traces torch._foreach_<op>[_] as its per-tensor calls; handled is false when the
// call is not one whose per-tensor form ptgo knows (the caller records it as one torch call).
func (t *Tracer) foreachCall(f *frame, path string, args []Value, kw []kwArg) (Value, bool, error) {
	name := strings.TrimPrefix(path, "torch._foreach_")
	inplace := strings.HasSuffix(name, "_")
	base := strings.TrimSuffix(name, "_")
	if base == "" || strings.Contains(base, "_") && base != "clamp_min" && base != "clamp_max" {
		return nil, false, nil
	}
	if len(args) == 0 {
		return nil, false, nil
	}
	n := -1
	lists := make([][]Value, len(args))
	for i, a := range args {
		r, err := t.realizeLazy(f, a)
		if err != nil {
			return nil, false, err
		}
		args[i] = r
		var items []Value
		switch x := r.(type) {
		case *ListV:
			items = x.Items
		case *TupleV:
			if x.Size {
				return nil, false, nil
			}
			items = x.Items
		case *TensorV:
			if i > 0 && !foreachTensorOperand[base] {
				return nil, false, nil
			}
			if t.gradEnabled && x.Meta.RequiresGrad {
				return nil, false, nil
			}
			continue
		default:
			continue // a number: the same for every tensor
		}
		if n >= 0 && len(items) != n || len(items) == 0 {
			return nil, false, nil // torch's length checks raise
		}
		n = len(items)
		realized := make([]Value, len(items))
		for j, it := range items {
			r, err := t.realizeLazy(f, it)
			if err != nil {
				return nil, false, err
			}
			switch x := r.(type) {
			case *TensorV:
				if t.gradEnabled && x.Meta.RequiresGrad {
					return nil, false, nil // torch's foreach autograd, left to torch
				}
			case *ConstV:
				if x.Kind != py.KInt && x.Kind != py.KFloat && x.Kind != py.KBool {
					return nil, false, nil
				}
			case *SymF, *SymV:
			default:
				return nil, false, nil
			}
			realized[j] = r
		}
		lists[i] = realized
	}
	if n < 0 {
		return nil, false, nil
	}
	if lists[0] == nil {
		if _, scalarSelf := args[0].(*ConstV); !scalarSelf || inplace || base != "pow" {
			return nil, false, nil // _foreach_pow(scalar, tensors) is the one scalar-first form
		}
	}
	for _, k := range kw {
		switch k.Val.(type) {
		case *ListV, *TupleV:
			return nil, false, nil
		}
	}
	target := "torch." + base
	if base == "norm" {
		target = "torch.linalg.vector_norm"
	}
	// an in-place form with no tensor method (_foreach_maximum_): torch's loop writes the
	// out-of-place result into the tensor, one write
	viaCopy := false
	if inplace {
		if _, ok := t.env.TryKnown("torch.Tensor." + base + "_"); ok {
			target = "torch.Tensor." + base + "_"
		} else {
			viaCopy = true
		}
	}
	fn, ok := t.env.TryKnown(target)
	if !ok {
		return nil, false, nil
	}
	copyFn, _ := t.env.TryKnown("torch.Tensor.copy_")
	results := make([]Value, n)
	for i := 0; i < n; i++ {
		var elem []Value
		elemKw := append([]kwArg(nil), kw...)
		for j, a := range args {
			v := a
			if lists[j] != nil {
				v = lists[j][i]
			}
			if name, ok := foreachKeywordOnly[base][j]; ok {
				elemKw = append(elemKw, kwArg{Name: name, Val: v})
				continue
			}
			elem = append(elem, v)
		}
		r, err := t.torchCall(f, target, fn, elem, elemKw)
		if err != nil {
			return nil, true, err
		}
		if viaCopy {
			if _, err := t.torchCall(f, "torch.Tensor.copy_", copyFn, []Value{elem[0], r}, nil); err != nil {
				return nil, true, err
			}
		}
		results[i] = r
	}
	if inplace {
		if primtorch.Behavior().ForeachInPlaceReturnsSelf {
			return args[0], true, nil
		}
		return noneV, true, nil
	}
	return &TupleV{Items: results}, true, nil
}

// groupTensorsByDeviceAndDtype is torch 2's torch._C._group_tensors_by_device_and_dtype(lists,
// with_indices), which torch.optim's foreach paths call first: folded while tracing (it reads
// only devices and dtypes, which the tensors' guards cover), with torch's own checks and order
// of groups (ptgo._runtime.group_by_device_and_dtype runs it on empty tensors of the same
// devices, dtypes and ranks). The result holds the traced tensors themselves.
func groupTensorsByDeviceAndDtype(t *Tracer, f *frame, args []Value, kw []kwArg) (Value, error) {
	api := t.api
	var listsArg, withIndices Value = nil, falseV
	if len(args) > 0 {
		listsArg = args[0]
	}
	if len(args) > 1 {
		withIndices = args[1]
	}
	for _, k := range kw {
		switch k.Name {
		case "tensorlistlist":
			listsArg = k.Val
		case "with_indices":
			withIndices = k.Val
		default:
			return nil, f.unsupported("", "_group_tensors_by_device_and_dtype with keyword %s", k.Name)
		}
	}
	if listsArg == nil {
		return nil, f.unsupported("", "_group_tensors_by_device_and_dtype without its lists")
	}
	wi, err := t.truthy(f, withIndices)
	if err != nil {
		return nil, err
	}
	outer, err := t.realize(f, listsArg)
	if err != nil {
		return nil, err
	}
	var lists [][]Value
	switch x := outer.(type) {
	case *ListV:
		for _, it := range x.Items {
			r, err := t.realize(f, it)
			if err != nil {
				return nil, err
			}
			switch l := r.(type) {
			case *ListV:
				lists = append(lists, l.Items)
			case *TupleV:
				lists = append(lists, l.Items)
			default:
				return nil, f.unsupported("", "_group_tensors_by_device_and_dtype of a %s", r.Describe())
			}
		}
	default:
		return nil, f.unsupported("", "_group_tensors_by_device_and_dtype of a %s", outer.Describe())
	}
	specs := make([]py.Obj, len(lists))
	tensors := make([][]*TensorV, len(lists))
	for i, l := range lists {
		items := make([]py.Obj, len(l))
		tensors[i] = make([]*TensorV, len(l))
		for j, it := range l {
			r, err := t.realize(f, it)
			if err != nil {
				return nil, err
			}
			switch x := r.(type) {
			case *TensorV:
				m := x.Meta
				dev := m.Device
				if dev.Type == "" {
					dev = primtorch.CPU
				}
				items[j] = api.NewTuple([]py.Obj{api.NewStr(dev.String()), api.NewInt(int64(m.DType)), api.NewInt(int64(len(m.Shape)))})
				tensors[i][j] = x
			default:
				if !isNone(r) {
					return nil, f.unsupported("", "_group_tensors_by_device_and_dtype of a list holding %s", r.Describe())
				}
				items[j] = api.None()
			}
		}
		specs[i] = api.NewList(items)
	}
	res, err := t.env.callRuntime("group_by_device_and_dtype", api.NewList(specs))
	if err != nil {
		return nil, err
	}
	if api.Kind(res) == py.KTuple {
		typ, _ := api.Index(res, 0)
		msg, _ := api.Index(res, 1)
		pyType, _ := api.Str(typ)
		text, _ := api.Str(msg)
		return nil, f.unsupported("eager raises "+pyType, "_group_tensors_by_device_and_dtype: %s", text)
	}
	groups, _ := api.Len(res)
	out := &DictV{}
	for g := 0; g < groups; g++ {
		idxObj, _ := api.Index(res, g)
		count, _ := api.Len(idxObj)
		idx := make([]int, count)
		for k := range idx {
			o, _ := api.Index(idxObj, k)
			v, _ := api.Int(o)
			idx[k] = int(v)
		}
		first := tensors[0][idx[0]]
		d := first.Meta.Device
		if d.Type == "" {
			d = primtorch.CPU
		}
		dev, err := t.deviceValue(f, d)
		if err != nil {
			return nil, err
		}
		key := &TupleV{Items: []Value{dev, t.objValue(t.env.DTypeObj(first.Meta.DType), nil)}}
		grouped := make([]Value, len(lists))
		for i, l := range lists {
			var items []Value
			if len(l) > 0 {
				for _, k := range idx {
					if tensors[i][k] != nil {
						items = append(items, tensors[i][k])
					} else {
						items = append(items, noneV)
					}
				}
			}
			grouped[i] = &ListV{Items: items}
		}
		indices := &ListV{}
		if wi {
			for _, k := range idx {
				indices.Items = append(indices.Items, intV(int64(k)))
			}
		}
		out.Keys = append(out.Keys, key)
		out.Vals = append(out.Vals, &TupleV{Items: []Value{&ListV{Items: grouped}, indices}})
	}
	return out, nil
}
