package bytecode

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// Source says where a value the trace depends on comes from, so that guards can re-read it on
// every call and the transformed code can load it. Sources print the way Dynamo's do:
// L['x'], G['torch'], L['self'].fc1, L['xs'][0].
type Source interface {
	Name() string
}

// LocalSource is argument slot Index of the captured frame.
type LocalSource struct {
	Index int
	Var   string
}

// GlobalSource is a name in the captured frame's globals (or builtins).
type GlobalSource struct{ Var string }

// BuiltinSource is a name in the builtins.
type BuiltinSource struct{ Var string }

// ClosureSource is the contents of closure cell Index of the captured frame's function.
type ClosureSource struct {
	Index int
	Var   string
}

// ConstSource is an object whose identity never changes once the rest of the guards pass: the
// globals dict of a module, a closure cell of a guarded function. The guard holds it.
type ConstSource struct {
	Obj  py.Obj
	Desc string
}

// CallSource is the result of calling Fn with no arguments: global state a result depends on
// (torch.get_default_dtype()). Desc names it ("torch.get_default_dtype()").
type CallSource struct {
	Fn   py.Obj
	Desc string
}

// AttrSource is getattr(Base, Attr), or with Generic object.__getattribute__(Base, Attr): the
// lookup of a class that overrides __getattribute__ when its own code asks for object's
// (super().__getattribute__(key) in Hugging Face's PretrainedConfig), which getattr would send
// through the override again.
type AttrSource struct {
	Base    Source
	Attr    string
	Generic bool
}

// DictItemSource is Base[Key] for an exact dict and a str key, or Base[KeySrc] for a key read
// from another source (a tensor key: DictKeySource).
type DictItemSource struct {
	Base   Source
	Key    string
	KeySrc Source
	// Raw: Base is a dict subclass, whose own __getitem__ may answer otherwise (transformers'
	// ModelOutput): the transformed code reads the storage, dict.__getitem__(Base, key), as
	// the guard does.
	Raw bool
}

// DictKeySource is the Index-th key of the exact dict (or modelled dict subclass) Base: a key
// that is not a constant (a tensor: torch.optim's state is keyed by parameters). Its own guards
// check it (a tensor's type and metadata, and identity with the other places it is read from).
type DictKeySource struct {
	Base  Source
	Index int
}

// IndexSource is Base[Index] for an exact tuple or list.
type IndexSource struct {
	Base  Source
	Index int
}

func (s *LocalSource) Name() string   { return "L[" + pyStrRepr(s.Var) + "]" }
func (s *GlobalSource) Name() string  { return "G[" + pyStrRepr(s.Var) + "]" }
func (s *BuiltinSource) Name() string { return "B[" + pyStrRepr(s.Var) + "]" }
func (s *ClosureSource) Name() string { return "C[" + pyStrRepr(s.Var) + "]" }
func (s *ConstSource) Name() string   { return s.Desc }
func (s *CallSource) Name() string    { return s.Desc }
func (s *AttrSource) Name() string {
	if s.Generic {
		return "object.__getattribute__(" + s.Base.Name() + ", " + pyStrRepr(s.Attr) + ")"
	}
	return s.Base.Name() + "." + s.Attr
}
func (s *DictItemSource) Name() string {
	if s.KeySrc != nil {
		return s.Base.Name() + "[" + s.KeySrc.Name() + "]"
	}
	return s.Base.Name() + "[" + pyStrRepr(s.Key) + "]"
}

// pyStrRepr quotes s the way Python's repr does for plain strings ('x', "it's").
func pyStrRepr(s string) string {
	q := strconv.Quote(s)
	inner := q[1 : len(q)-1]
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		return q
	}
	return "'" + strings.ReplaceAll(strings.ReplaceAll(inner, `\"`, `"`), "'", `\'`) + "'"
}

// pyUnquote reverses pyStrRepr.
func pyUnquote(s string) (string, error) {
	if len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
		inner := strings.ReplaceAll(s[1:len(s)-1], `\'`, "'")
		return strconv.Unquote(`"` + strings.ReplaceAll(inner, `"`, `\"`) + `"`)
	}
	return strconv.Unquote(s)
}
func (s *IndexSource) Name() string { return fmt.Sprintf("%s[%d]", s.Base.Name(), s.Index) }
func (s *DictKeySource) Name() string {
	return fmt.Sprintf("list(%s.keys())[%d]", s.Base.Name(), s.Index)
}

// sourceKey identifies a source exactly: its Name, except that an object the guards hold
// (ConstSource, CallSource) is keyed by identity, since two such objects can print alike (the
// closure cells of two functions with one __qualname__, as functools.wraps makes them). Every
// question "are these one source" asks sourceKey, never Name.
func sourceKey(s Source) string {
	switch s := s.(type) {
	case *ConstSource:
		return fmt.Sprintf("<%#x %s>", uintptr(s.Obj), s.Desc)
	case *CallSource:
		return fmt.Sprintf("<%#x %s>()", uintptr(s.Fn), s.Desc)
	case *AttrSource:
		if s.Generic {
			return "object.__getattribute__(" + sourceKey(s.Base) + ", " + pyStrRepr(s.Attr) + ")"
		}
		return sourceKey(s.Base) + "." + s.Attr
	case *DictItemSource:
		if s.KeySrc != nil {
			return sourceKey(s.Base) + "[" + sourceKey(s.KeySrc) + "]"
		}
		return sourceKey(s.Base) + "[" + pyStrRepr(s.Key) + "]"
	case *IndexSource:
		return fmt.Sprintf("%s[%d]", sourceKey(s.Base), s.Index)
	case *DictKeySource:
		return fmt.Sprintf("list(%s.keys())[%d]", sourceKey(s.Base), s.Index)
	}
	return s.Name()
}

// readableName shortens Dynamo-style names for user messages: L['self'].fc1 → self.fc1,
// L['self']._modules['fc1'] → self.fc1.
func readableName(s Source) string {
	n := s.Name()
	for _, p := range []string{"._modules[", "._parameters[", "._buffers["} {
		for {
			i := strings.Index(n, p)
			if i < 0 {
				break
			}
			rest := n[i+len(p):]
			j := strings.IndexByte(rest, ']')
			if j < 0 {
				break
			}
			key, err := pyUnquote(rest[:j])
			if err != nil {
				break
			}
			n = n[:i] + "." + key + rest[j+1:]
		}
	}
	for _, pre := range []string{"L[", "G[", "C[", "B["} {
		if strings.HasPrefix(n, pre) {
			if j := strings.IndexByte(n, ']'); j > 0 {
				if v, err := pyUnquote(n[len(pre):j]); err == nil {
					n = v + n[j+1:]
				}
			}
		}
	}
	return n
}

// GuardOp mirrors enum ptgo_guard_op (pybridge/include/ptgo_abi.h).
type GuardOp int32

const (
	GArg GuardOp = iota + 1
	GGlobal
	GClosure
	GAttr
	GDictItem
	GIndex
	GType
	GID
	GEq
	GLen
	GTensor
	GDictKeys
	GCallBool
	GNotID
	GSame
	GConst
	GTensorVersion
	GNotInDict
	GCall
	GSym
	GDictKey
	GFloat
	GNotSame
)

// Guard is one instruction of a guard program (see ptgo_guard in ptgo_abi.h).
type Guard struct {
	Op       GuardOp
	Dst, Src int
	I        int64
	Obj      py.Obj
	Name     string
	Vec      []int64
	Desc     string
}

// IsCheck reports whether the guard checks a fact (rather than loading a value).
func (g *Guard) IsCheck() bool {
	switch g.Op {
	case GArg, GGlobal, GClosure, GAttr, GDictItem, GIndex, GConst, GCall, GDictKey:
		return false
	}
	return true
}

// Guards builds a guard program: each source is loaded once into a register, each fact is
// checked once.
type Guards struct {
	List  []Guard
	regs  map[string]int
	facts map[string]bool
	NRegs int
	// floatsLogged: the float symbols whose specialisation was logged (installFloatGuards runs
	// after the trace and again after the compile)
	floatsLogged map[int]bool
	// distinctAt is the index in List of the NotSame guard (-1: none yet); distinctNames are
	// the sources it holds, in its order.
	distinctAt    int
	distinctNames []string
}

func (g *Guards) floatSpecLogged(id int) bool {
	if g.floatsLogged == nil {
		g.floatsLogged = map[int]bool{}
	}
	done := g.floatsLogged[id]
	g.floatsLogged[id] = true
	return done
}

func newGuards() *Guards {
	return &Guards{regs: map[string]int{}, facts: map[string]bool{}, distinctAt: -1}
}

// reg returns the register holding s, emitting its load (and its parents') when needed.
func (g *Guards) reg(s Source) int {
	key := sourceKey(s)
	if r, ok := g.regs[key]; ok {
		return r
	}
	var load Guard
	switch s := s.(type) {
	case *LocalSource:
		load = Guard{Op: GArg, I: int64(s.Index)}
	case *GlobalSource:
		load = Guard{Op: GGlobal, Name: s.Var}
	case *BuiltinSource:
		load = Guard{Op: GGlobal, Name: s.Var, I: 1}
	case *ClosureSource:
		load = Guard{Op: GClosure, I: int64(s.Index)}
	case *ConstSource:
		load = Guard{Op: GConst, Obj: s.Obj}
	case *AttrSource:
		load = Guard{Op: GAttr, Src: g.reg(s.Base), Name: s.Attr}
		if s.Generic {
			load.I = 1
		}
	case *DictItemSource:
		if s.KeySrc != nil {
			load = Guard{Op: GDictItem, Src: g.reg(s.Base), I: int64(g.reg(s.KeySrc))}
		} else {
			load = Guard{Op: GDictItem, Src: g.reg(s.Base), Name: s.Key, I: -1}
		}
	case *IndexSource:
		load = Guard{Op: GIndex, Src: g.reg(s.Base), I: int64(s.Index)}
	case *DictKeySource:
		load = Guard{Op: GDictKey, Src: g.reg(s.Base), I: int64(s.Index)}
	case *CallSource:
		load = Guard{Op: GCall, Obj: s.Fn}
	default:
		panic(fmt.Sprintf("ptgo BUG: guards: unknown source %T", s))
	}
	load.Dst = g.NRegs
	load.Desc = s.Name() + " is present"
	g.NRegs++
	g.regs[key] = load.Dst
	g.List = append(g.List, load)
	return load.Dst
}

func (g *Guards) check(gd Guard) {
	// A fact is its check on its registers (sources that print alike are distinct registers)
	// against its object where the check is one of identity (objects can print alike).
	var obj py.Obj
	switch gd.Op {
	case GID, GNotID, GType, GCallBool:
		obj = gd.Obj
	}
	key := fmt.Sprintf("%d %d %d %#x %d %s", gd.Op, gd.Src, gd.I, uintptr(obj), gd.Vec, gd.Desc)
	if g.facts[key] {
		return
	}
	g.facts[key] = true
	g.List = append(g.List, gd)
}

// Type guards type(s) is typ.
func (g *Guards) Type(s Source, typ py.Obj, typName string) {
	g.check(Guard{Op: GType, Src: g.reg(s), Obj: typ, Desc: fmt.Sprintf("type(%s) is %s", s.Name(), typName)})
}

// ID guards s is obj.
func (g *Guards) ID(s Source, obj py.Obj, what string) {
	g.check(Guard{Op: GID, Src: g.reg(s), Obj: obj, Desc: fmt.Sprintf("%s is %s", s.Name(), what)})
}

// NotID guards s is not obj.
func (g *Guards) NotID(s Source, obj py.Obj, what string) {
	g.check(Guard{Op: GNotID, Src: g.reg(s), Obj: obj, Desc: fmt.Sprintf("%s is not %s", s.Name(), what)})
}

// Eq guards type(s) is type(obj) and s == obj.
func (g *Guards) Eq(s Source, obj py.Obj, repr string) {
	g.check(Guard{Op: GEq, Src: g.reg(s), Obj: obj, Desc: fmt.Sprintf("%s == %s", s.Name(), repr)})
}

// Len guards len(s) == n for a tuple, list, dict or a sequence of a C type (collections.deque).
func (g *Guards) Len(s Source, n int) {
	g.check(Guard{Op: GLen, Src: g.reg(s), I: int64(n), Desc: fmt.Sprintf("len(%s) == %d", s.Name(), n)})
}

// DictKeys guards that s is a dict with exactly these keys in this order. The positions in skip
// (ascending) hold keys the tuple does not: tensors, loaded by DictKeySource and guarded there.
// byIter: the order is the one iteration gives (an OrderedDict's own), not the storage's.
func (g *Guards) DictKeys(s Source, keys py.Obj, skip []int64, byIter bool, repr string) {
	gd := Guard{Op: GDictKeys, Src: g.reg(s), Obj: keys, Vec: skip, Desc: fmt.Sprintf("list(%s.keys()) == %s", s.Name(), repr)}
	if byIter {
		gd.I = 1
	}
	g.check(gd)
}

// Version guards a tensor's version counter (tensor._version, bumped by every in-place write)
// and its data pointer (`p.data = t` swaps the storage and keeps the version): what was computed
// from its values at compile time is not stale. A failed version guard never passes again, so
// the shim drops the entry (a recompile replaces it).
func (g *Guards) Version(s Source, version, dataPtr int64) {
	g.check(Guard{Op: GTensorVersion, Src: g.reg(s), I: version, Vec: []int64{dataPtr},
		Desc: fmt.Sprintf("%s._version == %d and its data is unchanged", s.Name(), version)})
}

// NotInDict guards that name is not in the instance dict of s: an attribute found on its class
// (a method, a class constant) is not shadowed by one the object got later.
func (g *Guards) NotInDict(s Source, name string) {
	g.check(Guard{Op: GNotInDict, Src: g.reg(s), Name: name, Desc: fmt.Sprintf("%s is not in %s.__dict__", pyStrRepr(name), s.Name())})
}

// NotSame guards that two sources are two objects. One guard holds every source so named, all
// pairwise distinct (as Dynamo's tensor no-aliasing guard): a memo set of N parameters asks
// N*N/2 questions. It moves to the end of the program as sources join it, so that every
// register it reads is loaded before it.
func (g *Guards) NotSame(a, b Source) {
	ra, rb := g.reg(a), g.reg(b)
	if ra == rb {
		return
	}
	if g.distinctAt < 0 || g.distinctAt >= len(g.List) || g.List[g.distinctAt].Op != GNotSame {
		g.distinctAt = -1
	}
	var gd Guard
	if g.distinctAt >= 0 {
		gd = g.List[g.distinctAt]
		g.List = append(g.List[:g.distinctAt], g.List[g.distinctAt+1:]...)
	} else {
		gd = Guard{Op: GNotSame}
	}
	for _, r := range []int{ra, rb} {
		seen := false
		for _, x := range gd.Vec {
			seen = seen || x == int64(r)
		}
		if !seen {
			gd.Vec = append(gd.Vec, int64(r))
			g.distinctNames = append(g.distinctNames, map[int]string{ra: a.Name(), rb: b.Name()}[r])
		}
	}
	gd.Desc = "no two of " + strings.Join(g.distinctNames, ", ") + " are one object"
	g.distinctAt = len(g.List)
	g.List = append(g.List, gd)
}

// Distinct guards that two sources are two objects, by themselves (NotSame's one guard asserts
// every pair of its sources distinct, which holds only for inputs that are one graph value each).
func (g *Guards) Distinct(a, b Source) {
	ra, rb := g.reg(a), g.reg(b)
	if ra == rb {
		return
	}
	g.check(Guard{Op: GNotSame, Vec: []int64{int64(ra), int64(rb)}, Desc: fmt.Sprintf("%s is not %s", a.Name(), b.Name())})
}

// Same guards that two sources are one object.
func (g *Guards) Same(a, b Source) {
	g.check(Guard{Op: GSame, Src: g.reg(a), I: int64(g.reg(b)), Desc: fmt.Sprintf("%s is %s", a.Name(), b.Name())})
}

// CallBool guards bool(fn()) == want: global state such as grad mode.
func (g *Guards) CallBool(fn py.Obj, want bool, what string) {
	i := int64(0)
	if want {
		i = 1
	}
	g.check(Guard{Op: GCallBool, Obj: fn, I: i, Desc: fmt.Sprintf("%s == %v", what, pyBool(want))})
}

// Sym guards a relation between size symbols (ShapeEnv's guards): vec is
// [rel, c, nterms, then per term coef, nfactors, (register, dim) per factor] where a factor is
// the size of dim of the tensor in register (a symbol's source).
func (g *Guards) Sym(sg primtorch.SymGuard, sources []symSource) {
	d := sg.Left.Sub(sg.Right)
	vec := g.symPoly([]int64{int64(sg.Rel)}, d, sources)
	desc := fmt.Sprintf("%s %s %s", symNames(sg.Left, sources), sg.Rel, symNames(sg.Right, sources))
	if sg.Why != "" {
		desc += " (assumed by " + sg.Why + ")"
	}
	g.check(Guard{Op: GSym, Vec: vec, Desc: desc})
}

// symPoly appends polynomial p to vec in PTGO_G_SYM's form: c, nterms, per term coef,
// nfactors, per factor register and dim — or, for a derived symbol, -1 and its divisor followed
// by its numerator in this form (the guard computes floor(numerator / divisor)).
func (g *Guards) symPoly(vec []int64, p primtorch.SymInt, sources []symSource) []int64 {
	c, terms := p.Terms()
	vec = append(vec, c, int64(len(terms)))
	for _, tm := range terms {
		vec = append(vec, tm.Coef, int64(len(tm.Syms)))
		for _, id := range tm.Syms {
			if d, ok := p.Env().Derived(id); ok {
				vec = g.symPoly(append(vec, -1, d.Div), d.Num.Resolve(), sources)
				continue
			}
			src := sources[id]
			vec = append(vec, int64(g.reg(src.src)), int64(src.dim))
		}
	}
	return vec
}

// SymEqualSizes guards that two dims of input tensors have one size (duck shaping gave them one
// symbol).
func (g *Guards) SymEqualSizes(a Source, da int, b Source, db int) {
	vec := []int64{int64(primtorch.RelEq), 0, 2, 1, 1, int64(g.reg(a)), int64(da), -1, 1, int64(g.reg(b)), int64(db)}
	name := func(s Source, d int) string {
		if d < 0 {
			return s.Name()
		}
		return fmt.Sprintf("%s.size(%d)", s.Name(), d)
	}
	g.check(Guard{Op: GSym, Vec: vec, Desc: fmt.Sprintf("%s == %s", name(a, da), name(b, db))})
}

// symNames prints a size expression with each symbol written as its source.
func symNames(s primtorch.SymInt, sources []symSource) string {
	text := s.String()
	n := len(sources)
	if env := s.Env(); env != nil {
		n = max(n, env.NumSymbols())
	}
	for id := n - 1; id >= 0; id-- {
		if id >= len(sources) || sources[id].src == nil {
			if d, ok := s.Env().Derived(id); ok && slices.Contains(s.Symbols(), id) {
				text = strings.ReplaceAll(text, "s"+strconv.Itoa(id), "("+symNames(d.Num, sources)+")//"+strconv.FormatInt(d.Div, 10))
			}
			continue
		}
		name := sources[id].src.Name()
		switch d := sources[id].dim; {
		case d >= 0:
			name = fmt.Sprintf("%s.size(%d)", name, d)
		case d == offsetDim:
			name += ".storage_offset()"
		}
		text = strings.ReplaceAll(text, "s"+strconv.Itoa(id), name)
	}
	return text
}

// maxMaskDims is the most dims of a symbolic input in a non-row-major dense order: its guard
// names the dims inside each symbolic stride by a bit mask in an int64 (dynamicDims keeps
// inputs with more dims static).
const maxMaskDims = 60

// Tensor guards a tensor's class, dtype, device, requires_grad, sizes and strides. A symbolic
// dim's size is -1 in the vector (any size ≥ 2), and a stride that depends on symbols is -1
// (the row-major stride of the actual sizes) or, for a dense input in another dim order
// (channels-last), -(2 + mask): the product of the actual sizes of the dims in mask.
func (g *Guards) Tensor(s Source, class py.Obj, m *primtorch.TensorMeta, devType int) {
	rg := int64(0)
	if m.RequiresGrad {
		rg = 1
	}
	devIdx := m.Device.Index + 1
	packed := int64(m.DType) | int64(devType)<<8 | int64(devIdx)<<16 | rg<<32
	// sizes, strides, then the storage offset: the kernels index a tensor's storage with the
	// offset the graph was compiled for (a view at another offset is another graph)
	vec := append(append(append([]int64(nil), m.Shape...), m.Strides...), m.Offset)
	if m.Sym != nil {
		for i, sz := range m.Sym.Sizes {
			if _, ok := sz.IsConst(); !ok {
				vec[i] = -1
			}
		}
		// a symbolic stride is the product of the sizes of the dims inside it in the input's
		// dense order: -1 for row-major's, -(2 + mask of those dims) for another order's
		order, dense := primtorch.DenseOrder(m.Shape, m.Strides)
		rowMajor := dense
		for i, d := range order {
			rowMajor = rowMajor && d == len(order)-1-i
		}
		for i, st := range m.Sym.Strides {
			if _, ok := st.IsConst(); ok {
				continue
			}
			vec[len(m.Shape)+i] = -1
			if !rowMajor && dense && len(m.Shape) <= maxMaskDims {
				mask := int64(0)
				for _, d := range order {
					if d == i {
						break
					}
					mask |= 1 << d
				}
				vec[len(m.Shape)+i] = -2 - mask
			}
		}
		if _, ok := m.Sym.Offset.IsConst(); !ok {
			vec[2*len(m.Shape)] = -1
		}
	}
	off := ""
	if m.Offset != 0 {
		off = fmt.Sprintf(", storage_offset=%d", m.Offset)
	}
	if m.Sym != nil {
		if _, ok := m.Sym.Offset.IsConst(); !ok {
			off = ", storage_offset=" + m.Sym.Offset.String()
		}
	}
	desc := fmt.Sprintf("%s matches Tensor(dtype=%s, size=%s, stride=%s%s, device=%s, requires_grad=%s)",
		s.Name(), m.DType.TorchName(), symTuple(m, m.Shape, false), symTuple(m, m.Strides, true), off, m.Device, pyBool(m.RequiresGrad))
	g.check(Guard{Op: GTensor, Src: g.reg(s), Obj: class, I: packed, Vec: vec, Desc: desc})
}

// symTuple prints sizes or strides for a guard's description, symbolic entries as their
// expressions ("(s0, 64)").
func symTuple(m *primtorch.TensorMeta, v []int64, strides bool) string {
	if m.Sym == nil {
		return pyTuple(v)
	}
	xs := m.Sym.Sizes
	if strides {
		xs = m.Sym.Strides
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strings.ReplaceAll(x.String(), " ", "")
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func pyTuple(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	if len(v) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Checks returns the descriptions of the facts checked (for logs and explain()).
func (g *Guards) Checks() []string {
	var out []string
	for _, gd := range g.List {
		if gd.IsCheck() {
			out = append(out, gd.Desc)
		}
	}
	return out
}
