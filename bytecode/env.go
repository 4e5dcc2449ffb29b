package bytecode

import (
	"fmt"

	"ptgo/bytecode/py"
	"ptgo/primtorch"
)

// Env is what the interpreter knows about the Python world during one compile: the API, well
// known objects resolved by path, decoded code objects, names of torch callables.
type Env struct {
	API      py.API
	runtime  py.Obj
	builtins py.Obj // the builtins dict
	known    map[string]py.Obj
	builtin  map[py.Obj]string // builtins-dict objects → name ("len")
	names    map[py.Obj]string // torch/operator/math callables → path, "" when none
	codes    map[py.Obj]*codeInfo
	dtypes   []py.Obj // index = primtorch.DType
	specials map[py.Obj]specialFn
	// boundSpecials are specials that are builtin methods bound to a class, by class and name.
	boundSpecials map[boundKey]specialFn
	// owners and libModules cache the skip policy's answers per file name and per module.
	owners     map[string]fileOwner
	libModules map[py.Obj]bool
}

// NewEnv prepares an environment; cheap (everything is resolved lazily).
func NewEnv(api py.API) *Env {
	return &Env{API: api, runtime: api.Runtime(), builtins: api.Builtins(), known: map[string]py.Obj{},
		names: map[py.Obj]string{}, codes: map[py.Obj]*codeInfo{}}
}

// Known resolves a dotted path ("torch.nn.Module", "builtins.len") to the live object, once.
func (e *Env) Known(path string) py.Obj {
	o, ok := e.TryKnown(path)
	if !ok {
		panic(internalError(fmt.Sprintf("cannot resolve %s", path)))
	}
	return o
}

// TryKnown is Known for paths that may not exist in this torch version.
func (e *Env) TryKnown(path string) (py.Obj, bool) {
	if o, ok := e.known[path]; ok {
		return o, o != 0
	}
	o, err := e.callRuntime("resolve", e.API.NewStr(path))
	if err != nil {
		o = 0
	}
	e.known[path] = o
	return o, o != 0
}

// tryLoaded is TryKnown through modules already imported only (ptgo._compat.resolve_loaded).
func (e *Env) tryLoaded(path string) (py.Obj, bool) {
	o, err := e.callRuntime("resolve_loaded", e.API.NewStr(path))
	if err != nil || e.API.Kind(o) == py.KNone {
		return 0, false
	}
	return o, true
}

// special returns the handler of a callable answered while tracing instead of run or inlined:
// torch's (torchSpecials) and the standard library's (pySpecials). By identity, whatever kind of
// object the callable is (a Python function, a C function, a class, a slot wrapper): one
// function has several names, e.g. torch.nn.functional.has_torch_function is
// torch._C._has_torch_function.
func (e *Env) special(o py.Obj) specialFn {
	if e.specials == nil {
		e.specials = map[py.Obj]specialFn{}
		for _, table := range []map[string]specialFn{torchSpecials, pySpecials} {
			for path, h := range table {
				if obj, ok := e.TryKnown(path); ok {
					e.specials[obj] = h
				}
			}
		}
		for path, h := range compilerSpecials() {
			if obj, ok := e.tryLoaded(path); ok {
				e.specials[obj] = h
			}
		}
	}
	if h, ok := e.specials[o]; ok {
		return h
	}
	return e.boundSpecial(o)
}

// boundSpecial finds the special of a builtin method bound to a class (a classmethod of a C
// type, itertools.chain.from_iterable): each attribute read makes a new bound object, so it is
// found by its class and name.
func (e *Env) boundSpecial(o py.Obj) specialFn {
	api := e.API
	if api.Kind(o) != py.KBuiltin {
		return nil
	}
	self, err := api.GetAttr(o, "__self__")
	if err != nil || api.Kind(self) != py.KType {
		return nil
	}
	name, err := api.GetAttr(o, "__name__")
	if err != nil {
		return nil
	}
	s, err := api.Str(name)
	if err != nil {
		return nil
	}
	if e.boundSpecials == nil {
		e.boundSpecials = map[boundKey]specialFn{}
		for _, table := range []map[string]specialFn{torchSpecials, pySpecials} {
			for path, h := range table {
				obj, ok := e.TryKnown(path)
				if !ok || api.Kind(obj) != py.KBuiltin {
					continue
				}
				bself, err := api.GetAttr(obj, "__self__")
				if err != nil || api.Kind(bself) != py.KType {
					continue
				}
				if bn, err := api.GetAttr(obj, "__name__"); err == nil {
					if bs, err := api.Str(bn); err == nil {
						e.boundSpecials[boundKey{bself, bs}] = h
					}
				}
			}
		}
	}
	return e.boundSpecials[boundKey{self, s}]
}

type boundKey struct {
	self py.Obj
	name string
}

func (e *Env) callRuntime(name string, args ...py.Obj) (py.Obj, error) {
	fn, err := e.API.GetAttr(e.runtime, name)
	if err != nil {
		return 0, err
	}
	return e.API.Call(fn, args, nil)
}

// CodeOwner is what the skip policy says of a file: the library it belongs to ("torch", "the
// standard library"; "" for the user's own code, installed packages such as torchvision
// included) and whether the frame hook skips frames that start there. The policy lives in one
// place (ptgo._runtime._skip_policy, answered by the shim's code_owner_of): library code's
// globals are not guarded (A16) and messages point past it to the user's line.
func (e *Env) CodeOwner(file string) (owner string, skipped bool) {
	fo := e.filePolicy(file)
	return fo.owner, fo.skipped
}

// Uncaptured reports whether frames that start in file run with capture off for their whole
// extent: torch.compile's entry points (ptgo._compat.TORCH_COMPILE_ENTRY_FILES), whose frames
// torch.compile's own frame evaluator owns. The interpreter never inlines their functions.
func (e *Env) Uncaptured(file string) bool { return e.filePolicy(file).uncaptured }

func (e *Env) filePolicy(file string) fileOwner {
	if o, ok := e.owners[file]; ok {
		return o
	}
	if e.owners == nil {
		e.owners = map[string]fileOwner{}
	}
	var fo fileOwner
	if r, err := e.callRuntime("code_policy", e.API.NewStr(file)); err == nil {
		if o, err := e.API.Index(r, 0); err == nil && e.API.Kind(o) == py.KStr {
			fo.owner, _ = e.API.Str(o)
		}
		if s, err := e.API.Index(r, 1); err == nil {
			fo.skipped = e.API.Kind(s) == py.KBool && s == e.API.NewBool(true)
		}
		if s, err := e.API.Index(r, 2); err == nil {
			fo.uncaptured = e.API.Kind(s) == py.KBool && s == e.API.NewBool(true)
		}
	}
	e.owners[file] = fo
	return fo
}

type fileOwner struct {
	owner      string
	skipped    bool
	uncaptured bool
}

// IsLibraryFile reports whether file belongs to a library (torch, the standard library, ...).
func (e *Env) IsLibraryFile(file string) bool {
	o, _ := e.CodeOwner(file)
	return o != ""
}

// IsLibraryModule answers the same question for a Python module object (its attributes are then
// not guarded): by its file, and built-in modules (math, builtins) are the standard library.
func (e *Env) IsLibraryModule(m py.Obj) bool {
	if v, ok := e.libModules[m]; ok {
		return v
	}
	if e.libModules == nil {
		e.libModules = map[py.Obj]bool{}
	}
	lib := false
	if o, err := e.callRuntime("module_owner", m); err == nil && e.API.Kind(o) == py.KStr {
		lib = true
	}
	e.libModules[m] = lib
	return lib
}

// BuiltinName returns the name of o in the builtins module ("len"), or "".
func (e *Env) BuiltinName(o py.Obj) string {
	if e.builtin == nil {
		e.builtin = map[py.Obj]string{}
		keys, vals := e.API.DictItems(e.builtins)
		for i, k := range keys {
			if s, err := e.API.Str(k); err == nil {
				if _, dup := e.builtin[vals[i]]; !dup {
					e.builtin[vals[i]] = s
				}
			}
		}
	}
	return e.builtin[o]
}

// TorchName returns the importable path of a torch, torch.nn.functional, operator or math
// callable ("torch.relu", "torch.Tensor.add"), or "".
func (e *Env) TorchName(o py.Obj) string {
	if n, ok := e.names[o]; ok {
		return n
	}
	name := ""
	if r, err := e.callRuntime("torch_name", o); err == nil && e.API.Kind(r) == py.KStr {
		name, _ = e.API.Str(r)
	}
	e.names[o] = name
	return name
}

// DTypeOf maps a torch.dtype object to primtorch's DType.
func (e *Env) DTypeOf(o py.Obj) (primtorch.DType, bool) {
	for i, d := range e.dtypeObjs() {
		if d == o {
			return primtorch.DType(i), true
		}
	}
	return 0, false
}

// DTypeObj is the torch.dtype object for d.
func (e *Env) DTypeObj(d primtorch.DType) py.Obj { return e.dtypeObjs()[d] }

func (e *Env) dtypeObjs() []py.Obj {
	if e.dtypes == nil {
		tup, err := e.API.GetAttr(e.runtime, "DTYPES")
		if err != nil {
			panic(internalError("ptgo._runtime.DTYPES missing"))
		}
		n, _ := e.API.Len(tup)
		for i := 0; i < n; i++ {
			d, _ := e.API.Index(tup, i)
			e.dtypes = append(e.dtypes, d)
		}
	}
	return e.dtypes
}

// code decodes a code object (once per compile).
func (e *Env) code(o py.Obj) (*codeInfo, error) {
	if ci, ok := e.codes[o]; ok {
		return ci, nil
	}
	c, consts, err := readCode(e.API, o)
	if err != nil {
		return nil, err
	}
	instrs, err := Decode(c)
	if err != nil {
		return nil, fmt.Errorf("ptgo: cannot decode %s (%s:%d): %w", c.QualName, c.Filename, c.FirstLineNo, err)
	}
	ci := &codeInfo{obj: o, code: c, instrs: instrs, index: make(map[int]int, len(instrs)), consts: consts,
		constVals: make([]Value, len(consts)), nlocals: len(c.VarNames), cellNames: c.CellVars}
	for i := range instrs {
		ci.index[instrs[i].Offset] = i
	}
	ci.lpNames = c.LocalsPlusNames()
	ci.cellSlot = make([]int, len(c.CellVars))
	for i, cv := range c.CellVars {
		ci.cellSlot[i] = indexOf(ci.lpNames, cv)
	}
	ci.freeBase = len(ci.lpNames) - len(c.FreeVars)
	e.codes[o] = ci
	return ci, nil
}

func indexOf(xs []string, x string) int {
	for i, s := range xs {
		if s == x {
			return i
		}
	}
	return -1
}

// readCode copies a code object's fields into a Code.
func readCode(api py.API, o py.Obj) (*Code, []py.Obj, error) {
	c := &Code{}
	var err error
	str := func(name string) string {
		if err != nil {
			return ""
		}
		var v py.Obj
		if v, err = api.GetAttr(o, name); err != nil {
			return ""
		}
		var s string
		s, err = api.Str(v)
		return s
	}
	num := func(name string) int {
		if err != nil {
			return 0
		}
		var v py.Obj
		if v, err = api.GetAttr(o, name); err != nil {
			return 0
		}
		var i int64
		i, err = api.Int(v)
		return int(i)
	}
	byts := func(name string) []byte {
		if err != nil {
			return nil
		}
		var v py.Obj
		if v, err = api.GetAttr(o, name); err != nil {
			return nil
		}
		var b []byte
		b, err = api.Bytes(v)
		return b
	}
	strs := func(name string) []string {
		if err != nil {
			return nil
		}
		var v py.Obj
		if v, err = api.GetAttr(o, name); err != nil {
			return nil
		}
		n, e := api.Len(v)
		if e != nil {
			err = e
			return nil
		}
		out := make([]string, n)
		for i := 0; i < n; i++ {
			it, e := api.Index(v, i)
			if e != nil {
				err = e
				return nil
			}
			out[i], err = api.Str(it)
		}
		return out
	}
	c.Name = str("co_name")
	c.QualName = str("co_qualname")
	c.Filename = str("co_filename")
	c.FirstLineNo = num("co_firstlineno")
	c.ArgCount = num("co_argcount")
	c.PosOnlyArgCount = num("co_posonlyargcount")
	c.KwOnlyArgCount = num("co_kwonlyargcount")
	c.NLocals = num("co_nlocals")
	c.StackSize = num("co_stacksize")
	c.Flags = CodeFlags(num("co_flags"))
	c.Bytecode = byts("co_code")
	c.LineTable = byts("co_linetable")
	c.ExceptionTable = byts("co_exceptiontable")
	c.Names = strs("co_names")
	c.VarNames = strs("co_varnames")
	c.CellVars = strs("co_cellvars")
	c.FreeVars = strs("co_freevars")
	if err != nil {
		return nil, nil, fmt.Errorf("ptgo: reading a code object: %w", err)
	}
	ct, err := api.GetAttr(o, "co_consts")
	if err != nil {
		return nil, nil, err
	}
	n, err := api.Len(ct)
	if err != nil {
		return nil, nil, err
	}
	consts := make([]py.Obj, n)
	for i := range consts {
		if consts[i], err = api.Index(ct, i); err != nil {
			return nil, nil, err
		}
	}
	c.NConsts = n
	return c, consts, nil
}
