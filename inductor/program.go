package inductor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Program is the launch plan of a compiled graph: a plain data structure a small runtime (the
// CPython extension's C++ code over at::Tensors, or Execute in Go) runs with no Python and no Go
// per kernel. Its JSON form (Program.JSON, DecodeProgram), version 2:
//
//	{"version": 2, "name": "forward",
//	 "buffers": [BUFFER, ...],        indexed from 0; steps and outputs refer to them by index
//	 "inputs": [0, 1],                the buffer of each graph input, in placeholder order
//	 "outputs": [OUTPUT, ...],        the graph's results, flattened, in order
//	 "arena_bytes": 4096,             size of the graph's arena (see "arena" below)
//	 "steps": [STEP, ...]}            run in order
//
//	BUFFER = {"name": "buf3", "role": ROLE, "dtype": "float32", "sizes": [4, 16],
//	          "strides": [16, 1], "offset": 0, "storage_elems": 64, "output": false,
//	          "base": 2,              base only for role "view"
//	          "arena": 128}           arena only for arena temporaries
//	  ROLE "input":  a graph input, passed by the caller with exactly these sizes, strides and
//	                 storage offset (the guards checked them); never freed or written.
//	  ROLE "alloc":  created by an alloc step. With "arena": its storage is the graph's arena
//	                 from that byte offset on (storage_elems elements), viewed with
//	                 sizes/strides/offset; the arena is one block of arena_bytes bytes the runtime
//	                 keeps across calls of the graph (a call that finds it in use, a re-entrant
//	                 one, uses a fresh block). Without: a storage of storage_elems elements, new
//	                 on every call (or a dead buffer's storage, see alloc).
//	  ROLE "extern": bound to a result of an extern step. If torch returns it with other strides
//	                 or offset, the runtime copies it into a tensor of this layout (kernels
//	                 index it with these strides).
//	  ROLE "view":   created by a view step: sizes/strides/offset over the storage of buffer
//	                 base (offset counts from the start of that storage, as torch's
//	                 storage_offset does). Outputs that alias inputs or other outputs are views.
//	  "output": true marks buffers returned to the caller (never freed, reused or in the arena).
//
//	A symbolic program (compiled once for every value of its size symbols) adds
//	  "symbols": [{"input": 0, "dim": 1, "hint": 16}, ...]   symbol k's value is dim "dim" of
//	                 graph input "input" (an index into "inputs") on every call; kernels get the
//	                 values as their ints argument (ints[k] = s<k>); "dim": -2 reads input
//	                 "input"'s storage offset, "dim": -1 the "input"-th int argument of the call
//	  "int_inputs": 1  how many Python ints the call passes among its tensors (in placeholder
//	                 order; the symbols of int arguments)
//	and, on each buffer whose layout depends on them,
//	  "sym_sizes": ["s0", "64"], "sym_storage": "64*s0"      evaluated per call (sizes and
//	  "sym_strides": ["s1", "1"], "sym_offset": "0"           storage_elems then hold the hints)
//	as polynomials over s0, s1, ... ("4*s0*s1 + s2 - 3"). Such buffers are never in the arena;
//	  "arena_dyn": true   a symbolic temporary: its storage is in the arena's dynamic part, a
//	                 second block kept across calls and grown when a call needs more, at an
//	                 offset placed for each call's sizes (first fit among the dynamic temporaries
//	                 live at its alloc step, 64-byte aligned; inductor.PlaceDynamic)
//
//	OUTPUT = {"buf": 3} | {"value": ARG}      a buffer, or a constant (null for None)
//
//	STEP = {"op": "alloc", "buf": 5}                allocate buffer 5 (bind it, for an arena buffer)
//	     | {"op": "alloc", "buf": 5, "reuse": 2}    buffer 5 takes the storage of buffer 2, which is
//	                                               dead (freed earlier) and has the same byte size
//	     | {"op": "kernel", "kernel": "cpp_fused_add_0", "ptrs": [0, 5], "ints": [], "floats": []}
//	           call the library's symbol with ptrs[k] = the start of buffer ptrs[k]'s storage
//	           (data_ptr − storage_offset·itemsize), then ints, floats and the thread count
//	           (torch.get_num_threads()); a nonzero result is an error, one bit per fault:
//	           1 (StatusIndex) an index was out of range (raise IndexError), 2 (StatusZeroDiv)
//	           an integer division by zero (raise RuntimeError("ZeroDivisionError"), torch's)
//	     | {"op": "kernel", ..., "once": true}
//	           a kernel computing constants (it reads no graph input): run it only when the
//	           arena is fresh (the first call); its results stay in the arena, written by
//	           nothing else
//	     | {"op": "extern", "target": "prims.mm", "args": [ARG, ...], "kwargs": [["name", ARG], ...],
//	        "outs": [4]}
//	           run the op (a prims target, or for fallbacks the torch-level target such as
//	           "torch.nn.functional.max_pool2d") with these arguments; its result (a tuple when
//	           outs has several buffers) binds the out buffers
//	     | {"op": "extern", ..., "into": true}
//	           the out buffer was allocated by an alloc step: the op writes into it (torch's
//	           out= variant; prims.mm, bmm and addmm)
//	     | {"op": "view", "buf": 7}                 create view buffer 7 (as_strided of its base)
//	     | {"op": "free", "buf": 3}                 drop buffer 3 (its storage may be reused)
//
//	ARG  = {"buf": 3} | null | true | false | INT | "string" | {"float": "0.5"} (Python repr,
//	       "inf"/"nan" included) | {"dtype": "float32"} | {"device": "cpu"}
//	     | {"memory_format": "channels_last"} | {"layout": "strided"}
//	     | {"list": [ARG, ...]} | {"tuple": [ARG, ...]} | {"value": "<Go %v>"} for anything else
type Program struct {
	Name    string
	Buffers []BufSpec
	Inputs  []int
	Outputs []OutSpec
	Steps   []PStep
	// ArenaBytes is the size of the arena holding the temporaries (BufSpec.Arena).
	ArenaBytes int64
	// Frozen says the constants bound after the inputs are frozen parameters (freezing): the
	// runtime may prepare them once, such as packing convolution weights for oneDNN (A91),
	// keyed by each tensor's identity, version and data so a write prepares again.
	Frozen bool
	// RerunStatus is the kernel statuses (StatusIndex, StatusZeroDiv, StatusCheck bits) on
	// which the runtime hands a failed run to torch's run of the captured graph (the driver
	// sets it with the rerun it passes: every status when the graph writes nothing and draws
	// nothing, StatusCheck alone when checks run before its writes; 0 with no rerun).
	RerunStatus int
	// Device is where the buffers live ("" for the CPU); CUDA says how the kernels of a CUDA
	// program launch (cuda_program.go).
	Device string
	CUDA   *CUDAPlan
	// Symbols says where each size symbol's value is read at run time (a symbolic program: one
	// library and plan for every value of the symbols): dim Dim of input Input (an index into
	// Inputs); Input -1 for a symbol nothing mentions. Buffers with SymSizes are evaluated per
	// call, and every kernel's ints argument is the symbol values s0, s1, ... . Empty for a
	// static program.
	Symbols []SymbolSource
	// IntInputs is how many Python ints the caller passes among the tensor inputs (a symbolic
	// program whose symbols include int arguments): the call's arguments are the tensors of
	// Inputs and these ints, mixed in placeholder order.
	IntInputs int
	// FloatInputs is how many Python floats the caller passes among the inputs (float
	// arguments read at run time, primtorch/symfloat.go), in placeholder order with the tensors
	// and ints: every kernel's floats argument is their values, in order.
	FloatInputs int
}

// SymbolSource is where the runtime reads a size symbol's value: Dim ≥ 0, dim Dim of tensor
// input Input (an index into Program.Inputs); Dim == SymOffset (-2), the storage offset of
// tensor input Input; Dim == SymInt (-1), the Input-th int argument (Input -1: unused).
type SymbolSource struct {
	Input int   `json:"input"` // -1 when unused
	Dim   int   `json:"dim"`
	Hint  int64 `json:"hint"` // the value at trace time (printing, decoding)
	// Dim == SymDerived: the symbol is floor(Def / Div), Def a size expression over earlier
	// symbols (primtorch.SymDef), computed per call from their values
	Def string `json:"def,omitempty"`
	Div int64  `json:"div,omitempty"`
}

// SymbolSource.Dim of a symbol that is an int argument, a tensor input's storage offset, or
// derived from other symbols.
const (
	SymIntArg  = -1
	SymOffset  = -2
	SymDerived = -3
)

// ProgramVersion is the version of the JSON form this ptgo writes and reads.
const ProgramVersion = 2

// BufSpec describes one run-time buffer.
type BufSpec struct {
	Name         string
	Role         string // "input", "alloc", "extern", "view"
	DType        primtorch.DType
	Sizes        []int64
	Strides      []int64
	Offset       int64
	StorageElems int64
	Output       bool
	Base         int   // for views, else -1
	Arena        int64 // byte offset in the arena for arena temporaries, else -1
	// SymSizes and SymStorage are set on a buffer whose sizes depend on the symbols (Sizes and
	// StorageElems then hold their values at the hints, for printing only): the runtime
	// evaluates them per call. Such buffers are never in the arena.
	SymSizes   []Sym
	SymStorage Sym
	// SymStrides and SymOffset likewise, set when the layout is symbolic (Strides and Offset
	// then hold the hints).
	SymStrides []Sym
	SymOffset  Sym
	// ArenaDyn: a symbolic temporary in the arena's dynamic part, a second block the runtime
	// grows when a call needs more; its offset there is placed per call (PlaceDynamic).
	ArenaDyn bool
}

func (b *BufSpec) storageSym() Sym {
	if b.SymSizes != nil {
		return b.SymStorage
	}
	return symc(b.StorageElems)
}

func (b *BufSpec) layoutSym() Layout {
	if b.SymStrides != nil {
		return Layout{Strides: b.SymStrides, Offset: b.SymOffset}
	}
	return staticLayout(b.Strides, b.Offset)
}

func (b *BufSpec) sizesSym() []Sym {
	if b.SymSizes != nil {
		return b.SymSizes
	}
	return syms(b.Sizes)
}

// OutSpec is one graph output: Buf ≥ 0, or a constant.
type OutSpec struct {
	Buf   int
	Value any
}

// PStep is one plan step; which fields matter depends on Op.
type PStep struct {
	Op     string // "alloc", "kernel", "extern", "view", "free"
	Buf    int
	Reuse  int // alloc: the dead buffer whose storage is taken, else -1
	Kernel string
	Ptrs   []int
	Ints   []int64
	Floats []float64
	Target string
	Args   []PArg
	Kwargs []PKwarg
	Outs   []int
	// Into: an extern writing into its out buffer, allocated by an earlier alloc step.
	Into bool
	// Once: a kernel computing constants, run only when the arena is fresh.
	Once bool
}

// PArg is an extern argument: a buffer (Buf ≥ 0), a sequence (Seq), or a constant Value
// (nil for None).
type PArg struct {
	Buf   int
	Value any
	Seq   []PArg
	IsSeq bool
	Tuple bool
}

// PKwarg is a keyword argument of an extern step.
type PKwarg struct {
	Name  string
	Value PArg
}

// String prints the plan as readable text (one step per line).
func (p *Program) String() string {
	var b strings.Builder
	b.WriteString("program " + p.Name + ":\n")
	if p.ArenaBytes > 0 {
		fmt.Fprintf(&b, "  arena %d bytes\n", p.ArenaBytes)
	}
	for i, bs := range p.Buffers {
		fmt.Fprintf(&b, "  %%%d %s: %s %s", i, bs.Name, bs.Role, typeText(bs.DType, bs.sizesSym(), bs.layoutSym()))
		if bs.Role == "view" {
			fmt.Fprintf(&b, " of %%%d", bs.Base)
		}
		if bs.ArenaDyn {
			b.WriteString(" @arena(dynamic)")
		}
		if bs.Arena >= 0 {
			fmt.Fprintf(&b, " @arena+%d", bs.Arena)
		}
		if bs.Output {
			b.WriteString(" output")
		}
		b.WriteString("\n")
	}
	for _, st := range p.Steps {
		b.WriteString("  " + st.text() + "\n")
	}
	var outs []string
	for _, o := range p.Outputs {
		if o.Buf >= 0 {
			outs = append(outs, "%"+strconv.Itoa(o.Buf))
		} else {
			outs = append(outs, constText(o.Value))
		}
	}
	b.WriteString("  return (" + strings.Join(outs, ", ") + ")\n")
	return b.String()
}

func (st PStep) text() string {
	switch st.Op {
	case "alloc":
		if st.Reuse >= 0 {
			return fmt.Sprintf("alloc %%%d reusing %%%d", st.Buf, st.Reuse)
		}
		return fmt.Sprintf("alloc %%%d", st.Buf)
	case "kernel":
		if st.Once {
			return fmt.Sprintf("kernel %s%s once", st.Kernel, refsText(st.Ptrs))
		}
		return fmt.Sprintf("kernel %s%s", st.Kernel, refsText(st.Ptrs))
	case "extern":
		var parts []string
		for _, a := range st.Args {
			parts = append(parts, a.text())
		}
		for _, kw := range st.Kwargs {
			parts = append(parts, kw.Name+"="+kw.Value.text())
		}
		into := ""
		if st.Into {
			into = " into"
		}
		return fmt.Sprintf("%s =%s extern %s(%s)", strings.Trim(refsText(st.Outs), "()"), into, st.Target, strings.Join(parts, ", "))
	case "view", "free":
		return fmt.Sprintf("%s %%%d", st.Op, st.Buf)
	}
	return st.Op
}

func refsText(ids []int) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "%" + strconv.Itoa(id)
		if id < 0 {
			parts[i] = "None"
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func (a PArg) text() string {
	switch {
	case a.Buf >= 0:
		return "%" + strconv.Itoa(a.Buf)
	case a.IsSeq:
		parts := make([]string, len(a.Seq))
		for i, e := range a.Seq {
			parts[i] = e.text()
		}
		if a.Tuple {
			return "(" + strings.Join(parts, ", ") + ")"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return externArgText(ExternArg{Value: a.Value, None: a.Value == nil})
}

// JSON encodes the plan in the documented form, one buffer or step per line.
func (p *Program) JSON() ([]byte, error) {
	var b bytes.Buffer
	name, _ := json.Marshal(p.Name)
	fmt.Fprintf(&b, `{"version": %d, "name": %s, "arena_bytes": %d,`, ProgramVersion, name, p.ArenaBytes)
	if p.Frozen {
		b.WriteString(` "frozen": true,`)
	}
	if p.RerunStatus != 0 {
		fmt.Fprintf(&b, ` "rerun_status": %d,`, p.RerunStatus)
	}
	if len(p.Symbols) > 0 {
		var parts []string
		for _, s := range p.Symbols {
			if s.Dim == SymDerived {
				parts = append(parts, fmt.Sprintf(`{"input": -1, "dim": %d, "hint": %d, "def": %q, "div": %d}`, s.Dim, s.Hint, s.Def, s.Div))
				continue
			}
			parts = append(parts, fmt.Sprintf(`{"input": %d, "dim": %d, "hint": %d}`, s.Input, s.Dim, s.Hint))
		}
		b.WriteString("\n \"symbols\": [" + strings.Join(parts, ", ") + "],")
	}
	if p.IntInputs > 0 {
		fmt.Fprintf(&b, ` "int_inputs": %d,`, p.IntInputs)
	}
	if p.FloatInputs > 0 {
		fmt.Fprintf(&b, ` "float_inputs": %d,`, p.FloatInputs)
	}
	b.WriteString("\n \"buffers\": [")
	for i, bs := range p.Buffers {
		if i > 0 {
			b.WriteString(",")
		}
		m := []kv{{"name", bs.Name}, {"role", bs.Role}, {"dtype", dtypeName(bs.DType)}, {"sizes", ints(bs.Sizes)},
			{"strides", ints(bs.Strides)}, {"offset", bs.Offset}, {"storage_elems", bs.StorageElems}, {"output", bs.Output}}
		if bs.Role == "view" {
			m = append(m, kv{"base", bs.Base})
		}
		if bs.Arena >= 0 {
			m = append(m, kv{"arena", bs.Arena})
		}
		if bs.SymSizes != nil {
			m = append(m, kv{"sym_sizes", raw(mustJSON(symStrings(bs.SymSizes)))}, kv{"sym_storage", bs.SymStorage.String()})
		}
		if bs.ArenaDyn {
			m = append(m, kv{"arena_dyn", true})
		}
		if bs.SymStrides != nil {
			m = append(m, kv{"sym_strides", raw(mustJSON(symStrings(bs.SymStrides)))}, kv{"sym_offset", bs.SymOffset.String()})
		}
		b.WriteString("\n  " + objText(m))
	}
	b.WriteString("],\n \"inputs\": " + mustJSON(p.Inputs) + ",\n \"outputs\": [")
	for i, o := range p.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		if o.Buf >= 0 {
			b.WriteString(`{"buf": ` + strconv.Itoa(o.Buf) + "}")
		} else {
			v, err := argJSON(PArg{Buf: -1, Value: o.Value})
			if err != nil {
				return nil, err
			}
			b.WriteString(`{"value": ` + v + "}")
		}
	}
	b.WriteString("],\n \"steps\": [")
	for i, st := range p.Steps {
		if i > 0 {
			b.WriteString(",")
		}
		var m []kv
		m = append(m, kv{"op", st.Op})
		switch st.Op {
		case "alloc":
			m = append(m, kv{"buf", st.Buf})
			if st.Reuse >= 0 {
				m = append(m, kv{"reuse", st.Reuse})
			}
		case "view", "free":
			m = append(m, kv{"buf", st.Buf})
		case "kernel":
			m = append(m, kv{"kernel", st.Kernel}, kv{"ptrs", intList(st.Ptrs)}, kv{"ints", ints(st.Ints)}, kv{"floats", floatsRaw(st.Floats)})
			if st.Once {
				m = append(m, kv{"once", true})
			}
		case "extern":
			var args []string
			for _, a := range st.Args {
				s, err := argJSON(a)
				if err != nil {
					return nil, err
				}
				args = append(args, s)
			}
			var kws []string
			for _, kw := range st.Kwargs {
				s, err := argJSON(kw.Value)
				if err != nil {
					return nil, err
				}
				kws = append(kws, "["+mustJSON(kw.Name)+", "+s+"]")
			}
			m = append(m, kv{"target", st.Target}, kv{"args", raw("[" + strings.Join(args, ", ") + "]")},
				kv{"kwargs", raw("[" + strings.Join(kws, ", ") + "]")}, kv{"outs", intList(st.Outs)})
			if st.Into {
				m = append(m, kv{"into", true})
			}
		}
		b.WriteString("\n  " + objText(m))
	}
	b.WriteString("]" + p.cudaJSON() + "}\n")
	return b.Bytes(), nil
}

type kv struct {
	k string
	v any
}

type raw string

func ints(xs []int64) raw {
	if xs == nil {
		xs = []int64{}
	}
	return raw(mustJSON(xs))
}

func intList(xs []int) raw {
	if xs == nil {
		xs = []int{}
	}
	return raw(mustJSON(xs))
}

func floatsRaw(xs []float64) raw {
	parts := make([]string, len(xs))
	for i, f := range xs {
		parts[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return raw("[" + strings.Join(parts, ", ") + "]")
}

func objText(m []kv) string {
	parts := make([]string, len(m))
	for i, e := range m {
		v, ok := e.v.(raw)
		if !ok {
			v = raw(mustJSON(e.v))
		}
		parts[i] = mustJSON(e.k) + ": " + string(v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("ptgo BUG: inductor: " + err.Error())
	}
	return string(b)
}

// argJSON encodes an extern argument or constant output.
func argJSON(a PArg) (string, error) {
	if a.Buf >= 0 {
		return `{"buf": ` + strconv.Itoa(a.Buf) + "}", nil
	}
	if a.IsSeq {
		parts := make([]string, len(a.Seq))
		for i, e := range a.Seq {
			s, err := argJSON(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		tag := "list"
		if a.Tuple {
			tag = "tuple"
		}
		return `{"` + tag + `": [` + strings.Join(parts, ", ") + "]}", nil
	}
	switch v := a.Value.(type) {
	case nil:
		return "null", nil
	case bool, int64, string:
		return mustJSON(v), nil
	case float64:
		return `{"float": "` + pyLiteral(primtorch.Float64, Number{F: v}) + `"}`, nil
	case primtorch.DType:
		return `{"dtype": "` + dtypeName(v) + `"}`, nil
	case primtorch.Device:
		return `{"device": "` + v.String() + `"}`, nil
	case primtorch.MemoryFormat:
		return `{"memory_format": ` + mustJSON(string(v)) + `}`, nil
	case primtorch.Layout:
		return `{"layout": ` + mustJSON(string(v)) + `}`, nil
	case primtorch.SymInt:
		if k, ok := v.IsConst(); ok {
			return mustJSON(k), nil
		}
		// a size expression of a symbolic program: its int value in each call
		return `{"sym": ` + mustJSON(strings.ReplaceAll(v.String(), " ", "")) + "}", nil
	}
	return `{"value": ` + mustJSON(fmt.Sprint(a.Value)) + "}", nil
}

// DecodeProgram reads the JSON form back.
func DecodeProgram(data []byte) (*Program, error) {
	var raw struct {
		Version     int               `json:"version"`
		Name        string            `json:"name"`
		ArenaBytes  int64             `json:"arena_bytes"`
		Frozen      bool              `json:"frozen"`
		RerunStatus int               `json:"rerun_status"`
		Buffers     []json.RawMessage `json:"buffers"`
		Inputs      []int             `json:"inputs"`
		Outputs     []map[string]any  `json:"outputs"`
		Steps       []json.RawMessage `json:"steps"`
		Device      string            `json:"device"`
		CUDA        json.RawMessage   `json:"cuda"`
		Symbols     []SymbolSource    `json:"symbols"`
		IntInputs   int               `json:"int_inputs"`
		FloatInputs int               `json:"float_inputs"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("inductor: decoding a program: %w", err)
	}
	if raw.Version != ProgramVersion {
		return nil, fmt.Errorf("inductor: program version %d; this ptgo reads version %d", raw.Version, ProgramVersion)
	}
	p := &Program{Name: raw.Name, Inputs: raw.Inputs, ArenaBytes: raw.ArenaBytes, Frozen: raw.Frozen, RerunStatus: raw.RerunStatus, Device: raw.Device, IntInputs: raw.IntInputs, FloatInputs: raw.FloatInputs}
	if err := p.decodeCUDA(raw.CUDA); err != nil {
		return nil, err
	}
	var env *primtorch.ShapeEnv
	if len(raw.Symbols) > 0 {
		p.Symbols = raw.Symbols
		env = primtorch.NewShapeEnv()
		for i, s := range raw.Symbols {
			env.NewSymbol(s.Hint, fmt.Sprintf("program symbol s%d", i))
			if s.Dim == SymDerived {
				num, err := primtorch.ParseSymInt(s.Def, env)
				if err != nil || s.Div < 2 {
					return nil, fmt.Errorf("inductor: program symbol s%d is derived but its def %q // %d is not a size expression over earlier symbols and a divisor ≥ 2", i, s.Def, s.Div)
				}
				env.DefineSymbol(i, primtorch.SymDef{Num: num, Div: s.Div})
			}
		}
	}
	for _, rb := range raw.Buffers {
		var jb struct {
			Name         string   `json:"name"`
			Role         string   `json:"role"`
			DType        string   `json:"dtype"`
			Sizes        []int64  `json:"sizes"`
			Strides      []int64  `json:"strides"`
			Offset       int64    `json:"offset"`
			StorageElems int64    `json:"storage_elems"`
			Output       bool     `json:"output"`
			Base         *int     `json:"base"`
			Arena        *int64   `json:"arena"`
			SymSizes     []string `json:"sym_sizes"`
			SymStorage   string   `json:"sym_storage"`
			SymStrides   []string `json:"sym_strides"`
			SymOffset    string   `json:"sym_offset"`
			ArenaDyn     bool     `json:"arena_dyn"`
		}
		if err := json.Unmarshal(rb, &jb); err != nil {
			return nil, fmt.Errorf("inductor: decoding buffer %s: %w", rb, err)
		}
		dt, err := parseDTypeName(jb.DType)
		if err != nil {
			return nil, err
		}
		bs := BufSpec{Name: jb.Name, Role: jb.Role, DType: dt, Sizes: jb.Sizes, Strides: jb.Strides, Offset: jb.Offset,
			StorageElems: jb.StorageElems, Output: jb.Output, Base: -1, Arena: -1}
		if len(bs.Sizes) == 0 {
			bs.Sizes, bs.Strides = nil, nil // a 0-d buffer, as the planner makes it
		}
		if jb.Base != nil {
			bs.Base = *jb.Base
		}
		if jb.Arena != nil {
			bs.Arena = *jb.Arena
		}
		bs.ArenaDyn = jb.ArenaDyn
		if jb.SymSizes != nil {
			for _, t := range append(append([]string(nil), jb.SymSizes...), jb.SymStorage) {
				s, err := primtorch.ParseSymInt(t, env)
				if err != nil {
					return nil, fmt.Errorf("inductor: buffer %s: %w", jb.Name, err)
				}
				bs.SymSizes = append(bs.SymSizes, s)
			}
			bs.SymStorage = bs.SymSizes[len(bs.SymSizes)-1]
			bs.SymSizes = bs.SymSizes[:len(bs.SymSizes)-1]
		}
		if jb.SymStrides != nil {
			for _, t := range append(append([]string(nil), jb.SymStrides...), jb.SymOffset) {
				s, err := primtorch.ParseSymInt(t, env)
				if err != nil {
					return nil, fmt.Errorf("inductor: buffer %s: %w", jb.Name, err)
				}
				bs.SymStrides = append(bs.SymStrides, s)
			}
			bs.SymOffset = bs.SymStrides[len(bs.SymStrides)-1]
			bs.SymStrides = bs.SymStrides[:len(bs.SymStrides)-1]
		}
		p.Buffers = append(p.Buffers, bs)
	}
	for _, o := range raw.Outputs {
		if b, ok := o["buf"]; ok {
			n, _ := b.(json.Number).Int64()
			p.Outputs = append(p.Outputs, OutSpec{Buf: int(n)})
			continue
		}
		a, err := decodeArg(o["value"])
		if err != nil {
			return nil, err
		}
		p.Outputs = append(p.Outputs, OutSpec{Buf: -1, Value: a.Value})
	}
	for _, rs := range raw.Steps {
		var js struct {
			Op     string          `json:"op"`
			Buf    int             `json:"buf"`
			Reuse  *int            `json:"reuse"`
			Kernel string          `json:"kernel"`
			Ptrs   []int           `json:"ptrs"`
			Ints   []int64         `json:"ints"`
			Floats []float64       `json:"floats"`
			Target string          `json:"target"`
			Args   []any           `json:"args"`
			Kwargs [][]any         `json:"kwargs"`
			Outs   []int           `json:"outs"`
			Into   bool            `json:"into"`
			Once   bool            `json:"once"`
			Extra  json.RawMessage `json:"-"`
		}
		d := json.NewDecoder(bytes.NewReader(rs))
		d.UseNumber()
		if err := d.Decode(&js); err != nil {
			return nil, fmt.Errorf("inductor: decoding step %s: %w", rs, err)
		}
		st := PStep{Op: js.Op, Buf: js.Buf, Reuse: -1, Kernel: js.Kernel, Ptrs: js.Ptrs, Ints: js.Ints, Floats: js.Floats,
			Target: js.Target, Outs: js.Outs, Into: js.Into, Once: js.Once}
		if js.Reuse != nil {
			st.Reuse = *js.Reuse
		}
		for _, a := range js.Args {
			pa, err := decodeArg(a)
			if err != nil {
				return nil, err
			}
			st.Args = append(st.Args, pa)
		}
		for _, kw := range js.Kwargs {
			if len(kw) != 2 {
				return nil, fmt.Errorf("inductor: a kwarg must be [name, ARG], got %v", kw)
			}
			name, _ := kw[0].(string)
			pa, err := decodeArg(kw[1])
			if err != nil {
				return nil, err
			}
			st.Kwargs = append(st.Kwargs, PKwarg{Name: name, Value: pa})
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

func decodeArg(v any) (PArg, error) {
	switch v := v.(type) {
	case nil:
		return PArg{Buf: -1}, nil
	case bool, string:
		return PArg{Buf: -1, Value: v}, nil
	case json.Number:
		n, err := v.Int64()
		return PArg{Buf: -1, Value: n}, err
	case map[string]any:
		for tag, x := range v {
			switch tag {
			case "buf":
				n, err := x.(json.Number).Int64()
				return PArg{Buf: int(n)}, err
			case "float":
				s, _ := x.(string)
				f, err := parsePyFloat(s)
				return PArg{Buf: -1, Value: f}, err
			case "dtype":
				s, _ := x.(string)
				dt, err := parseDTypeName(s)
				return PArg{Buf: -1, Value: dt}, err
			case "device":
				s, _ := x.(string)
				d, err := primtorch.ParseDevice(s)
				return PArg{Buf: -1, Value: d}, err
			case "memory_format":
				s, _ := x.(string)
				return PArg{Buf: -1, Value: primtorch.MemoryFormat(s)}, nil
			case "layout":
				s, _ := x.(string)
				return PArg{Buf: -1, Value: primtorch.Layout(s)}, nil
			case "list", "tuple":
				out := PArg{Buf: -1, IsSeq: true, Tuple: tag == "tuple", Seq: []PArg{}}
				elems, _ := x.([]any)
				for _, e := range elems {
					a, err := decodeArg(e)
					if err != nil {
						return PArg{}, err
					}
					out.Seq = append(out.Seq, a)
				}
				return out, nil
			case "value":
				return PArg{Buf: -1, Value: x}, nil
			}
		}
	}
	return PArg{}, fmt.Errorf("inductor: bad ARG %v in a program", v)
}

func parsePyFloat(s string) (float64, error) {
	switch s {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}
