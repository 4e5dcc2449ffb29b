package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/fxgraph"
	"ptgo/logs"
	"ptgo/primtorch"
)

// FX import: a torch.fx GraphModule handed to ptgo's backend, serialised by
// python/ptgo/fx_import.py into fxgraph's JSON, becomes a torch-level graph the pipeline
// compiles like a captured one. Three steps:
//
//  1. Targets onto the registry. A target primtorch.Lookup knows stays. An ATen overload
//     (torch.ops.aten.add.Tensor) is the registry op of that schema name (add.Tensor; relu for
//     .default) reached through one of its torch-level targets that binds the call's arguments
//     to that very overload (torch.add, or Tensor.add as call_method). Anything else stays as it
//     is: decomposition turns an unknown call into a prims.fallback torch runs by its path.
//  2. Metas. Every registered call's meta is recomputed by primtorch's meta function, with
//     requires_grad following the graph's grad mode (its _set_grad_enabled calls), and compared
//     with the meta the graph came with (torch's FakeTensor example_value, or ptgo's own): a
//     different dtype, shape, device or requires_grad, or strides that differ on a graph
//     output, mean ptgo would not compute what torch does, and the graph is refused. Calls ptgo
//     does not know keep torch's meta; without one the graph is refused.
//  3. Verify (fxgraph's invariants).
//
// Refusals are *Unsupported: the caller runs the GraphModule with torch and names the reason.

// Unsupported says why an FX graph cannot go through ptgo's pipeline.
type Unsupported struct {
	Node   string // the node's name, "" for the whole graph
	Reason string
}

func (e *Unsupported) Error() string {
	if e.Node == "" {
		return "fx import: " + e.Reason
	}
	return fmt.Sprintf("fx import: node %s: %s", e.Node, e.Reason)
}

// ImportOptions tunes ImportFX.
type ImportOptions struct {
	// GradEnabled is the grad mode the graph runs in (torch.is_grad_enabled() when the backend
	// was called; Dynamo guards it).
	GradEnabled bool
}

// ImportFX decodes a GraphModule's JSON into a torch-level graph the pipeline compiles.
func ImportFX(data []byte, opts ImportOptions) (*fxgraph.Graph, error) {
	g, err := fxgraph.DecodeJSON(data)
	if err != nil {
		return nil, &Unsupported{Reason: err.Error()}
	}
	if err := RecomputeMetas(g, opts.GradEnabled); err != nil {
		return nil, err
	}
	if err := dropNoneResults(g); err != nil {
		return nil, err
	}
	if err := fxgraph.Verify(g, nil); err != nil {
		return nil, &Unsupported{Reason: err.Error()}
	}
	return g, nil
}

// atenPrefix is how fx_import.py names OpOverload targets.
const atenPrefix = "torch.ops.aten."

// mapTarget rewrites an ATen overload target onto the registry's (step 1 above); its
// arguments' metas are known.
func mapTarget(n *fxgraph.Node) {
	if n.Op != fxgraph.CallFunction || !strings.HasPrefix(n.Target, atenPrefix) || primtorch.Lookup(n.Target) != nil {
		return
	}
	name, overload, ok := strings.Cut(strings.TrimPrefix(n.Target, atenPrefix), ".")
	if !ok {
		return
	}
	opName := name + "." + overload
	if overload == "default" {
		opName = name
	}
	op := primtorch.LookupName(opName)
	if op == nil || op.IsPrim() {
		return
	}
	args, kw, err := metaValues(n)
	if err != nil {
		return
	}
	for _, t := range preferredTargets(op) {
		cand := primtorch.Lookup(t)
		if cand == nil {
			continue
		}
		o, _, err := cand.Resolve(args, kw)
		if err != nil || o.ID != op.ID {
			continue
		}
		if m, ok := strings.CutPrefix(t, "Tensor."); ok {
			n.Op, n.Target = fxgraph.CallMethod, m
		} else {
			n.Target = t
		}
		logs.Debugf(logs.Dynamo, "fx import: %s = %s%s is %s", n.Name, atenPrefix, name+"."+overload, t)
		return
	}
}

// preferredTargets orders an op's targets: torch functions first, then Tensor methods, then the
// rest (torch.nn.functional, torch._C._nn, operator).
func preferredTargets(op *primtorch.Op) []string {
	rank := func(t string) int {
		switch {
		case strings.HasPrefix(t, "torch.") && strings.Count(t, ".") == 1:
			return 0
		case strings.HasPrefix(t, "Tensor."):
			return 1
		case strings.HasPrefix(t, "torch."):
			return 2
		}
		return 3
	}
	ts := slices.Clone(op.Targets)
	slices.SortStableFunc(ts, func(a, b string) int { return rank(a) - rank(b) })
	return ts
}

const setGradEnabled = "torch._C._set_grad_enabled"

// callOp is the registry op of a call node, nil when ptgo does not know it.
func callOp(n *fxgraph.Node) *primtorch.Op {
	if n.Op == fxgraph.CallMethod {
		return primtorch.Lookup("Tensor." + n.Target)
	}
	return primtorch.Lookup(n.Target)
}

// RecomputeMetas maps each call's target onto the registry (step 1 above), sets every
// registered call's meta from primtorch's meta functions and checks it against the meta the
// node came with (step 2).
func RecomputeMetas(g *fxgraph.Graph, gradEnabled bool) error {
	outputs := map[*fxgraph.Node]bool{}
	if out := g.OutputNode(); out != nil {
		for _, a := range out.Args {
			fxgraph.WalkArg(a, func(m *fxgraph.Node) { outputs[m] = true })
		}
	}
	grad := gradEnabled
	for _, n := range g.Nodes {
		switch n.Op {
		case fxgraph.Placeholder, fxgraph.GetAttr:
			if _, isInt := n.Meta.(primtorch.SymInt); isInt && n.Op == fxgraph.Placeholder {
				continue // an int input that is a size symbol (a SymInt placeholder)
			}
			if n.TensorMeta() == nil {
				return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("input %s is not a tensor (meta %v)", n.Target, n.Meta)}
			}
			continue
		case fxgraph.Output:
			continue
		}
		if n.Target == setGradEnabled && n.Op == fxgraph.CallFunction {
			b, ok := constBool(n)
			if !ok {
				return &Unsupported{Node: n.Name, Reason: setGradEnabled + " with an argument that is not a constant bool"}
			}
			grad = b
			n.Meta = nil
			continue
		}
		if n.Op == fxgraph.CallFunction && n.Target == "operator.getitem" && len(n.Args) == 2 {
			if src, ok := n.Args[0].(*fxgraph.Node); ok {
				if tup, ok := src.Meta.([]any); ok {
					k, isInt := n.Args[1].(fxgraph.Const).V.(int64)
					if !isInt || k < -int64(len(tup)) || k >= int64(len(tup)) {
						return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("getitem %v of a %d-tuple", n.Args[1], len(tup))}
					}
					if k < 0 {
						k += int64(len(tup))
					}
					if err := agree(n, tup[k], outputs[n], false); err != nil {
						return err
					}
					n.Meta = tup[k]
					continue
				}
			}
		}
		specializeSliceBounds(n)
		mapTarget(n)
		op := callOp(n)
		if op == nil {
			if n.Meta == nil {
				return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("%s is not an op ptgo knows and the graph gives no meta for it", describe(n))}
			}
			continue
		}
		args, kw, err := metaValues(n)
		if err != nil {
			return &Unsupported{Node: n.Name, Reason: err.Error()}
		}
		res, err := op.Meta(args, kw)
		if err != nil {
			return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("ptgo's meta function for %s rejects the call torch accepted: %v", describe(n), err)}
		}
		inputs := tensorsOf(args)
		for _, k := range kw {
			inputs = append(inputs, tensorsOf([]primtorch.Value{k.Value})...)
		}
		meta, err := nodeMeta(res, func(m *primtorch.TensorMeta) {
			m.RequiresGrad = primtorch.ResultRequiresGrad(grad, inputs, m, op)
		})
		if err != nil {
			return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("%s: %v", describe(n), err)}
		}
		// torch marks a view made under no_grad of a tensor requiring grad as requiring grad
		// (nothing flows through it); ptgo's metas do not. Inside the graph that changes nothing.
		viewNoGrad := !grad && (op.Alias == primtorch.AliasView || op.Alias == primtorch.AliasMaybe)
		if err := agree(n, meta, outputs[n], viewNoGrad); err != nil {
			return err
		}
		n.Meta = meta
	}
	return nil
}

// specializeSliceBounds replaces symbolic slice bounds (x[:, :n] with n a SymInt input) by
// their hints, guarded: ptgo's slices take int bounds, as its capture realizes them.
func specializeSliceBounds(n *fxgraph.Node) {
	var fix func(a fxgraph.Arg) fxgraph.Arg
	fix = func(a fxgraph.Arg) fxgraph.Arg {
		switch a := a.(type) {
		case fxgraph.Slice:
			parts := []fxgraph.Arg{a.Start, a.Stop, a.Step}
			for i, p := range parts {
				if c, ok := p.(fxgraph.Const); ok {
					if s, sym := c.V.(primtorch.SymInt); sym {
						parts[i] = fxgraph.Const{V: s.Specialize(fmt.Sprintf("a slice bound of %s", n.Name))}
					}
				}
			}
			return fxgraph.Slice{Start: parts[0], Stop: parts[1], Step: parts[2]}
		case fxgraph.Tuple:
			return fxgraph.Tuple{Elems: fixAll(a.Elems, fix)}
		case fxgraph.List:
			return fxgraph.List{Elems: fixAll(a.Elems, fix)}
		}
		return a
	}
	n.Args = fixAll(n.Args, fix)
}

func fixAll(args []fxgraph.Arg, fix func(fxgraph.Arg) fxgraph.Arg) []fxgraph.Arg {
	for i, a := range args {
		args[i] = fix(a)
	}
	return args
}

func describe(n *fxgraph.Node) string {
	if n.Op == fxgraph.CallMethod {
		return "Tensor." + n.Target
	}
	return n.Target
}

func constBool(n *fxgraph.Node) (bool, bool) {
	if len(n.Args) != 1 || len(n.Kwargs) != 0 {
		return false, false
	}
	c, ok := n.Args[0].(fxgraph.Const)
	if !ok {
		return false, false
	}
	b, ok := c.V.(bool)
	return b, ok
}

// nodeMeta turns a meta function's result into a node meta, fixing each tensor's requires_grad.
func nodeMeta(v primtorch.Value, fix func(*primtorch.TensorMeta)) (any, error) {
	switch r := v.(type) {
	case *primtorch.TensorMeta:
		fix(r)
		return r, nil
	case []primtorch.Value:
		out := make([]any, len(r))
		for i, e := range r {
			m, err := nodeMeta(e, fix)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	case nil, bool, int64, float64, complex128:
		return r, nil
	}
	return nil, fmt.Errorf("a result of Go type %T", v)
}

// agree compares ptgo's meta with the one the graph came with (none: nothing to compare).
// viewNoGrad tolerates torch's requires_grad on a view made under no_grad, except on outputs.
func agree(n *fxgraph.Node, ours any, output, viewNoGrad bool) error {
	theirs := n.Meta
	if theirs == nil {
		return nil
	}
	if why := metaDiff(ours, theirs, output, viewNoGrad); why != "" {
		return &Unsupported{Node: n.Name, Reason: fmt.Sprintf("ptgo's meta for %s differs from torch's: %s", describe(n), why)}
	}
	return nil
}

func metaDiff(ours, theirs any, output, viewNoGrad bool) string {
	switch t := theirs.(type) {
	case *primtorch.TensorMeta:
		o, ok := ours.(*primtorch.TensorMeta)
		switch {
		case !ok:
			return fmt.Sprintf("ptgo computes %v, torch a tensor %s", ours, t)
		case o.DType != t.DType || !slices.Equal(o.Shape, t.Shape) || o.Device != t.Device:
			return fmt.Sprintf("ptgo computes %s, torch %s", o, t)
		case !symEqual(o.SymSizes(), t.SymSizes()):
			return fmt.Sprintf("ptgo computes sizes %s, torch %s", o.SymString(), t.SymString())
		case o.RequiresGrad != t.RequiresGrad && !(viewNoGrad && t.RequiresGrad && !output):
			return fmt.Sprintf("ptgo says requires_grad=%v, torch %v", o.RequiresGrad, t.RequiresGrad)
		case output && (!stridesEqual(o, t) || o.Offset != t.Offset):
			return fmt.Sprintf("the graph returns it with strides %v+%d in ptgo, %v+%d in torch", o.Strides, o.Offset, t.Strides, t.Offset)
		case output && (!symEqual(strideOfBig(o), strideOfBig(t)) ||
			!symEqual([]primtorch.SymInt{o.SymOffset()}, []primtorch.SymInt{t.SymOffset()})):
			return fmt.Sprintf("the graph returns it with layout %s in ptgo, %s in torch", o.SymString(), t.SymString())
		}
		return ""
	case []any:
		o, ok := ours.([]any)
		if !ok || len(o) != len(t) {
			return fmt.Sprintf("ptgo computes %v, torch a %d-tuple", ours, len(t))
		}
		for i := range t {
			if why := metaDiff(o[i], t[i], output, viewNoGrad); why != "" {
				return fmt.Sprintf("element %d: %s", i, why)
			}
		}
		return ""
	}
	// Scalars: torch's value is what the graph saw; ptgo's meta of a Python number is the
	// number too when it knows it.
	return ""
}

// symEqual compares two symbolic size lists where both sides are symbolic: a size one side
// has as a constant (ptgo specialised it under a guard the compiled graph checks, or Dynamo
// did under its own) was already compared at the hints.
func symEqual(a, b []primtorch.SymInt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		_, ac := a[i].IsConst()
		_, bc := b[i].IsConst()
		if !ac && !bc && !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// strideOfBig is m's symbolic strides with those of dims of size 0 or 1 zeroed (any stride
// is right there), for symEqual.
func strideOfBig(m *primtorch.TensorMeta) []primtorch.SymInt {
	st := m.SymStrides()
	for i, sz := range m.SymSizes() {
		if k, ok := sz.IsConst(); ok && k <= 1 {
			st[i] = primtorch.SymConst(0)
		}
	}
	return st
}

// stridesEqual compares strides where they matter: dims of size 1 may have any stride.
func stridesEqual(a, b *primtorch.TensorMeta) bool {
	if len(a.Strides) != len(b.Strides) {
		return false
	}
	for i := range a.Strides {
		if a.Shape[i] > 1 && a.Strides[i] != b.Strides[i] {
			return false
		}
	}
	return true
}

// metaValues are a call node's arguments as meta functions see them.
func metaValues(n *fxgraph.Node) ([]primtorch.Value, []primtorch.KV, error) {
	args := make([]primtorch.Value, len(n.Args))
	for i, a := range n.Args {
		v, err := metaValue(a)
		if err != nil {
			return nil, nil, fmt.Errorf("argument %d: %w", i, err)
		}
		args[i] = v
	}
	var kw []primtorch.KV
	for _, k := range n.Kwargs {
		v, err := metaValue(k.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("argument %s: %w", k.Name, err)
		}
		kw = append(kw, primtorch.KV{Name: k.Name, Value: v})
	}
	return args, kw, nil
}

func metaValue(a fxgraph.Arg) (primtorch.Value, error) {
	switch a := a.(type) {
	case *fxgraph.Node:
		if m, ok := a.Meta.([]any); ok {
			return primtorch.Tuple(m), nil
		}
		return a.Meta, nil
	case fxgraph.Const:
		return a.V, nil
	case fxgraph.List:
		out := make([]primtorch.Value, len(a.Elems))
		for i, e := range a.Elems {
			v, err := metaValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case fxgraph.Tuple:
		out := make(primtorch.Tuple, len(a.Elems))
		for i, e := range a.Elems {
			v, err := metaValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case fxgraph.Slice:
		var s primtorch.Slice
		for i, p := range []fxgraph.Arg{a.Start, a.Stop, a.Step} {
			c, ok := p.(fxgraph.Const)
			if !ok {
				return nil, fmt.Errorf("a slice bound that is not a constant")
			}
			if c.V == nil {
				continue
			}
			x, ok := c.V.(int64)
			if !ok {
				return nil, fmt.Errorf("a slice bound %v", c.V)
			}
			switch i {
			case 0:
				s.Start = &x
			case 1:
				s.Stop = &x
			case 2:
				s.Step = &x
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("an argument of type %T (a dict)", a)
}

// tensorsOf lists the tensor metas in values, recursively.
func tensorsOf(vs []primtorch.Value) []*primtorch.TensorMeta {
	var out []*primtorch.TensorMeta
	for _, v := range vs {
		switch x := v.(type) {
		case *primtorch.TensorMeta:
			out = append(out, x)
		case []primtorch.Value:
			out = append(out, tensorsOf(x)...)
		case primtorch.Tuple:
			out = append(out, tensorsOf(x)...)
		}
	}
	return out
}

// TensorsOf is the Python helper that calls a function and returns only the tensors of its
// tuple result (python/ptgo/fx_import.py): its arguments are the function's path, then the call's.
const TensorsOf = "ptgo.fx_import.tensors_of"

// dropNoneResults rewrites calls ptgo does not know whose tuple result holds None
// (F.multi_head_attention_forward(..., need_weights=False) returns (out, None); Dynamo keeps it
// as one call) into TensorsOf calls returning the tensors only, so the torch fallback the
// decomposition makes of them has tensor results; the getitems that read them are renumbered.
func dropNoneResults(g *fxgraph.Graph) error {
	users := g.Users()
	for _, n := range g.Nodes {
		tup, ok := n.Meta.([]any)
		if !ok || (n.Op != fxgraph.CallFunction && n.Op != fxgraph.CallMethod) || callOp(n) != nil {
			continue
		}
		index := make([]int, len(tup))
		var kept []any
		for i, m := range tup {
			index[i] = -1
			if tm, isTensor := m.(*primtorch.TensorMeta); isTensor && tm != nil {
				index[i] = len(kept)
				kept = append(kept, m)
			}
		}
		if len(kept) == len(tup) {
			continue
		}
		for _, u := range users[n] {
			k, isGetitem := getitemIndex(u, n)
			if !isGetitem || k < 0 || k >= len(tup) || index[k] < 0 {
				return &Unsupported{Node: u.Name, Reason: fmt.Sprintf("reads the None in the result of %s", describe(n))}
			}
		}
		for _, u := range users[n] {
			k, _ := getitemIndex(u, n)
			u.Args[1] = fxgraph.Const{V: int64(index[k])}
		}
		target := n.Target
		if n.Op == fxgraph.CallMethod {
			target = "torch.Tensor." + target
		}
		n.Op, n.Target = fxgraph.CallFunction, TensorsOf
		n.Args = append([]fxgraph.Arg{fxgraph.Const{V: target}}, n.Args...)
		n.Meta = kept
	}
	return nil
}

// getitemIndex is k when u is operator.getitem(src, k).
func getitemIndex(u, src *fxgraph.Node) (int, bool) {
	if u.Op != fxgraph.CallFunction || u.Target != "operator.getitem" || len(u.Args) != 2 || u.Args[0] != fxgraph.Arg(src) {
		return 0, false
	}
	c, ok := u.Args[1].(fxgraph.Const)
	if !ok {
		return 0, false
	}
	k, ok := c.V.(int64)
	return int(k), ok
}

// FXRequest is a torch.fx graph to compile (CompileFX).
type FXRequest struct {
	// Name says whose graph it is in messages ("torch.fx graph 3").
	Name string
	// JSON is the GraphModule as python/ptgo/fx_import.py serialises it.
	JSON []byte
	// Attrs maps its get_attr targets to their live tensors.
	Attrs       map[string]py.Obj
	GradEnabled bool
	// Freezing folds the graph's parameters into constants (the caller decided: asked for, or
	// by default in an inference graph).
	Freezing bool
	// Static names the placeholders Dynamo lifted from the module's parameters and buffers
	// (inputs it marked static); their tensors are in Attrs under the same names. Freezing turns
	// them into constants (freezeInputs).
	Static []string
}

// FXResult is what CompileFX made of a torch.fx graph.
type FXResult struct {
	// Obj is the compiled callable, 0 when the graph runs with torch (Reason says why).
	Obj    py.Obj
	Reason string
	// Guards are what ptgo's import and compile assumed about the graph's size symbols beyond
	// their being ≥ 2 (a decomposition that specialised one, a meta function that compared
	// two). Dynamo owns the frame's guards and knows none of these: the caller checks them on
	// every call and runs the graph with torch when one fails.
	Guards []primtorch.SymGuard
	// Frozen says freezing ran: the get_attr tensors and the inputs at FrozenInputs (positions
	// among the graph's placeholders, which the compiled callable no longer takes) are constants.
	// The caller checks each call that they are the same tensors at the same versions and data.
	Frozen       bool
	FrozenInputs []int
}

// CompileFX imports a torch.fx graph and compiles it with ptgo's C backend (Backend Inductor).
// It returns the compiled callable, or no callable and the reason the graph runs with torch
// (named on perf_hints and in Stats); err is a compile failure. A graph with size symbols that
// a stage cannot compile symbolically (NeedsStatic) runs with torch: ptgo cannot add the guard
// a static compile would need to Dynamo's frame.
func CompileFX(h Host, cfg Config, r *FXRequest) (*FXResult, error) {
	g, err := ImportFX(r.JSON, ImportOptions{GradEnabled: r.GradEnabled})
	if err != nil {
		var u *Unsupported
		if errors.As(err, &u) {
			NoteFallback(r.Name, err.Error())
			return &FXResult{Reason: err.Error()}, nil
		}
		return nil, err
	}
	if logs.On(logs.Graph) {
		logs.Printf(logs.Graph, "imported %s:\n%s", r.Name, g.String())
	}
	for _, n := range g.Nodes {
		if n.Op == fxgraph.GetAttr && r.Attrs[n.Target] == 0 {
			return nil, fmt.Errorf("ptgo BUG: no tensor for get_attr %s of %s", n.Target, r.Name)
		}
	}
	freezing, frozenInputs := r.Freezing, []int{}
	if freezing {
		frozenInputs, freezing = freezeInputs(g, r)
	}
	req := &Request{Name: r.Name, Graph: g, Attrs: r.Attrs, GradEnabled: r.GradEnabled, Backend: Inductor, Freezing: freezing}
	obj, err := Compile(h, cfg, req)
	var ns *NeedsStatic
	if errors.As(err, &ns) {
		reason := "symbolic sizes ptgo's pipeline cannot compile symbolically (" + ns.Reason +
			"); Dynamo owns the guards a static compile would need"
		NoteFallback(r.Name, reason)
		return &FXResult{Reason: reason}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ptgo: compiling %s failed: %w", r.Name, err)
	}
	if obj == 0 {
		return &FXResult{Reason: "ptgo's pipeline runs it with torch (the reason is on PTGO_LOGS=perf_hints)"}, nil
	}
	count(&stats.fx)
	res := &FXResult{Obj: obj, Frozen: req.Frozen}
	if req.Frozen {
		res.FrozenInputs = frozenInputs
	}
	if g.Shapes != nil {
		res.Guards = g.Shapes.Guards()
		if logs.On(logs.Dynamic) {
			for _, gd := range res.Guards {
				logs.Printf(logs.Dynamic, "%s: checked on every call (Dynamo does not know it): %s (%s)", r.Name, gd, gd.Why)
			}
		}
	}
	return res, nil
}

// freezeInputs turns the placeholders Dynamo lifted from the module's parameters and buffers
// (FXRequest.Static) into get_attr constants, as ptgo's own capture holds them, so that freezing
// folds BatchNorms into convolutions and packs their weights (A183). Only in a graph that
// writes nothing outside itself: a training-mode BatchNorm updates its running statistics, an
// in-place op may write a parameter. It returns the positions it turned, among the
// placeholders before the change, and false where the graph must not be frozen at all.
func freezeInputs(g *fxgraph.Graph, r *FXRequest) ([]int, bool) {
	for _, n := range g.Nodes {
		if writesOutside(n) {
			logs.Printf(logs.Inductor, "%s: not frozen: %s writes a tensor it did not compute", r.Name, n.Name)
			return nil, false
		}
	}
	out := []int{}
	if len(r.Static) == 0 || r.GradEnabled {
		return out, true
	}
	static := map[string]bool{}
	for _, s := range r.Static {
		static[s] = true
	}
	for i, p := range g.Placeholders() {
		if !static[p.Name] || r.Attrs[p.Name] == 0 {
			continue
		}
		if m, ok := p.Meta.(*primtorch.TensorMeta); !ok || m == nil || m.Sym != nil {
			continue // a size symbol, or a tensor whose sizes carry one, stays an input
		}
		p.Op, p.Target = fxgraph.GetAttr, p.Name
		out = append(out, i)
	}
	g.PlaceholdersFirst() // the placeholders that stay come first, as in every graph
	return out, true
}
