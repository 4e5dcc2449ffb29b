package fxgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// The JSON form hands a graph to Python (python/ptgo/fx_export.py builds a torch.fx
// GraphModule from it). Schema, version 1:
//
//	{"version": 1, "name": "forward", "nodes": [NODE, ...]}
//
//	NODE = {"name": "linear", "op": "call_function", "target": "torch.nn.functional.linear",
//	        "args": [ARG, ...], "kwargs": [["name", ARG], ...], "meta": META,
//	        "where": "model.py:12", "stack": "File \"/src/model.py\", line 12, in forward"}
//	       op is placeholder, call_function, call_method, get_attr or output; args, kwargs,
//	       meta, where and stack are left out when empty. Nodes come in graph order and a node only
//	       refers to nodes before it. kwargs is a list of pairs to keep their order.
//
//	ARG  = null | true | false | INT | "string"            None, bools, ints (int64), str
//	     | {"node": "name"}                               the value of an earlier node
//	     | {"float": "1.5"}                               float as Python repr: "inf", "-inf",
//	                                                      "nan", "-0.0" included (exact)
//	     | {"complex": ["1.0", "-2.0"]}                   complex, parts as floats above
//	     | {"dtype": "float32"}                           torch.float32 (name in torch)
//	     | {"device": "cuda:0"}                           torch.device
//	     | {"ellipsis": true}                             ...
//	     | {"memory_format": "channels_last"}             torch.channels_last
//	     | {"layout": "strided"}                          torch.strided
//	     | {"list": [ARG, ...]} | {"tuple": [ARG, ...]}
//	     | {"slice": [ARG, ARG, ARG]}                     start, stop, step
//	     | {"dict": [["key", ARG], ...]}                  dict with str keys, in order
//	     | {"sym": {"c": 2, "terms": [[4, [0, 1]], ...]}} a size expression 2 + 4*s0*s1, evaluated
//	                                                      at run time from "symbols"
//
//	A graph with size symbols (dynamic shapes) has "symbols": [SYM, ...] after "name", one per
//	symbol s0, s1, ... in order: SYM = {"input": 0, "dim": 1, "hint": 8}, the placeholder (by
//	position) and dim whose size the symbol is ("dim": -1: the placeholder is an int; -2: the
//	symbol is the tensor's storage offset), or "input": -1 for a symbol the trace
//	specialised (its value is always the hint). The input and dim are where SymbolBindings
//	finds the symbol; the decoder checks that the placeholders' metas agree.
//
//	META = null                                           none (the output node)
//	     | {"tensor": {"dtype": "float32", "shape": [4, 8], "stride": [8, 1],
//	                   "storage_offset": 0, "device": "cpu", "requires_grad": false}}
//	     | {"tuple": [META, ...]}                         a tuple of values (null for None)
//	     | INT | {"float": ...} | {"complex": ...} | true | false   a Python scalar
//	     | {"sym": ...}                                   a size expression (an int placeholder
//	                                                      of a symbolic graph: the symbol itself)
//
//	In a tensor meta, each entry of shape and stride and the storage_offset is an INT or a
//	{"sym": ...} size expression. The encoder writes the sizes at the hints (fx_export builds
//	example tensors from them); python/ptgo/fx_import.py writes a torch.fx graph's symbolic
//	sizes as expressions, which the decoder reads into TensorMeta.Sym.
//
// Every object in ARG and META has exactly one key, its tag.

// jsonVersion is the schema version; a reader refuses any other.
const jsonVersion = 1

type jsonNode struct {
	Name   string  `json:"name"`
	Op     string  `json:"op"`
	Target string  `json:"target"`
	Args   []any   `json:"args,omitempty"`
	Kwargs [][]any `json:"kwargs,omitempty"`
	Meta   any     `json:"meta,omitempty"`
	Where  string  `json:"where,omitempty"`
	Stack  string  `json:"stack,omitempty"`
}

type jsonTensor struct {
	DType         string  `json:"dtype"`
	Shape         []int64 `json:"shape"`
	Stride        []int64 `json:"stride"`
	StorageOffset int64   `json:"storage_offset"`
	Device        string  `json:"device"`
	RequiresGrad  bool    `json:"requires_grad"`
}

// EncodeJSON writes g in the JSON form above, one node per line. It fails on what the schema
// cannot express: a constant or meta of a type Const or Node.Meta does not allow, a nil
// argument, or a reference to a node that is not earlier in g (run Verify to see all problems).
func EncodeJSON(g *Graph) ([]byte, error) {
	e := &jsonEncoder{pos: make(map[*Node]int, len(g.Nodes))}
	var buf bytes.Buffer
	buf.WriteString(`{"version": 1, "name": `)
	if err := e.write(&buf, g.Name); err != nil {
		return nil, err
	}
	if g.Shapes != nil && g.Shapes.NumSymbols() > 0 {
		buf.WriteString(`, "symbols": [`)
		bs := SymbolBindings(g)
		for id, b := range bs {
			if id > 0 {
				buf.WriteString(", ")
			}
			if !Bound(g.Shapes, bs, id) {
				if symbolUsed(g, id) {
					return nil, fmt.Errorf("fxgraph: cannot encode graph %s as JSON: size symbol s%d has no graph input that carries it", g.Name, id)
				}
				// unused here (an input's size only the forward reads): written as a specialised
				// one, which nothing reads
				fmt.Fprintf(&buf, `{"input": -1, "dim": -1, "hint": %d}`, g.Shapes.HintOf(id))
				continue
			}
			if d, ok := g.Shapes.Derived(id); ok && !g.Shapes.IsSpecialized(id) {
				def, _ := symJSON(d.Num)
				fmt.Fprintf(&buf, `{"input": -1, "dim": %d, "hint": %d, "def": `, DerivedDim, g.Shapes.HintOf(id))
				if err := e.write(&buf, def); err != nil {
					return nil, err
				}
				fmt.Fprintf(&buf, `, "div": %d}`, d.Div)
				continue
			}
			if b.Input < 0 {
				b.Dim = -1
			}
			fmt.Fprintf(&buf, `{"input": %d, "dim": %d, "hint": %d}`, b.Input, b.Dim, g.Shapes.HintOf(id))
		}
		buf.WriteString(`]`)
	}
	buf.WriteString(`, "nodes": [`)
	for i, n := range g.Nodes {
		if n == nil {
			return nil, fmt.Errorf("fxgraph: cannot encode graph %s as JSON: node %d is nil; run Verify to find the broken pass", g.Name, i)
		}
		e.cur = n
		jn, err := e.node(n)
		if err != nil {
			return nil, fmt.Errorf("fxgraph: cannot encode graph %s as JSON: node %%%s: %w; run Verify for the full list of problems", g.Name, n.Name, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString("\n  ")
		if err := e.write(&buf, jn); err != nil {
			return nil, err
		}
		e.pos[n] = i
	}
	buf.WriteString("\n]}\n")
	return buf.Bytes(), nil
}

type jsonEncoder struct {
	pos map[*Node]int // nodes already written
	cur *Node
	// floats names the placeholder of each float symbol (primtorch/symfloat.go): an argument
	// that is one refers to it
	floats map[int]string
}

// write appends v's compact JSON without HTML escaping.
func (e *jsonEncoder) write(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("fxgraph: cannot encode graph as JSON: %w", err)
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

func (e *jsonEncoder) node(n *Node) (*jsonNode, error) {
	jn := &jsonNode{Name: n.Name, Op: n.Op.String(), Target: n.Target, Where: n.Where, Stack: n.Stack}
	if f, ok := n.Meta.(primtorch.SymFloat); ok && n.Op == Placeholder {
		if e.floats == nil {
			e.floats = map[int]string{}
		}
		e.floats[f.ID] = n.Name
	}
	if int(n.Op) >= len(nodeOpNames) {
		return nil, fmt.Errorf("unknown op %s", n.Op)
	}
	for i, a := range n.Args {
		v, err := e.arg(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		jn.Args = append(jn.Args, v)
	}
	for _, kw := range n.Kwargs {
		v, err := e.arg(kw.Value)
		if err != nil {
			return nil, fmt.Errorf("keyword argument %s: %w", kw.Name, err)
		}
		jn.Kwargs = append(jn.Kwargs, []any{kw.Name, v})
	}
	m, err := metaJSON(n.Meta)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	jn.Meta = m
	return jn, nil
}

func (e *jsonEncoder) arg(a Arg) (any, error) {
	switch a := a.(type) {
	case *Node:
		if a == nil {
			return nil, fmt.Errorf("nil *Node")
		}
		if _, ok := e.pos[a]; !ok {
			return nil, fmt.Errorf("%%%s is not defined before this node", a.Name)
		}
		return map[string]any{"node": a.Name}, nil
	case Const:
		if f, ok := a.V.(primtorch.SymFloat); ok {
			name, ok := e.floats[f.ID]
			if !ok {
				return nil, fmt.Errorf("float symbol %s has no placeholder", f)
			}
			return map[string]any{"node": name}, nil
		}
		return constJSON(a.V)
	case List:
		elems, err := e.args(a.Elems)
		return map[string]any{"list": elems}, err
	case Tuple:
		elems, err := e.args(a.Elems)
		return map[string]any{"tuple": elems}, err
	case Slice:
		parts, err := e.args([]Arg{a.Start, a.Stop, a.Step})
		return map[string]any{"slice": parts}, err
	case Dict:
		entries := make([]any, len(a.Entries))
		for i, en := range a.Entries {
			v, err := e.arg(en.Value)
			if err != nil {
				return nil, fmt.Errorf("dict key %q: %w", en.Key, err)
			}
			entries[i] = []any{en.Key, v}
		}
		return map[string]any{"dict": entries}, nil
	}
	return nil, fmt.Errorf("argument of Go type %T is not an fxgraph Arg", a)
}

func (e *jsonEncoder) args(args []Arg) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		v, err := e.arg(a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func constJSON(v any) (any, error) {
	if p := constProblem(v); p != "" {
		return nil, fmt.Errorf("%s", p)
	}
	switch v := v.(type) {
	case float64:
		return map[string]any{"float": formatFloat(v)}, nil
	case complex128:
		return map[string]any{"complex": []string{formatFloat(real(v)), formatFloat(imag(v))}}, nil
	case primtorch.DType:
		return map[string]any{"dtype": strings.TrimPrefix(v.TorchName(), "torch.")}, nil
	case primtorch.Device:
		return map[string]any{"device": v.String()}, nil
	case primtorch.Ellipsis:
		return map[string]any{"ellipsis": true}, nil
	case primtorch.MemoryFormat:
		return map[string]any{"memory_format": string(v)}, nil
	case primtorch.Layout:
		return map[string]any{"layout": string(v)}, nil
	case primtorch.SymInt:
		x, _ := symJSON(v)
		return map[string]any{"sym": x}, nil
	}
	return v, nil // nil, bool, int64, string
}

func metaJSON(m any) (any, error) {
	if isNilMeta(m) {
		return nil, nil
	}
	switch m := m.(type) {
	case *primtorch.TensorMeta:
		if m.DType >= primtorch.NumDTypes {
			return nil, fmt.Errorf("dtype %d is out of range", uint8(m.DType))
		}
		if p := deviceProblem(m.Device); p != "" {
			return nil, fmt.Errorf("%s", p)
		}
		return map[string]any{"tensor": jsonTensor{
			DType:         strings.TrimPrefix(m.DType.TorchName(), "torch."),
			Shape:         nonNil(m.Shape),
			Stride:        nonNil(m.Strides),
			StorageOffset: m.Offset,
			Device:        m.Device.String(),
			RequiresGrad:  m.RequiresGrad,
		}}, nil
	case []any:
		elems := make([]any, len(m))
		for i, x := range m {
			v, err := metaJSON(x)
			if err != nil {
				return nil, fmt.Errorf("tuple element %d: %w", i, err)
			}
			elems[i] = v
		}
		return map[string]any{"tuple": elems}, nil
	case bool, int64, float64, complex128, primtorch.SymInt:
		return constJSON(m)
	case primtorch.SymFloat:
		return constJSON(m.Hint())
	}
	return nil, fmt.Errorf("meta of Go type %T is not a tensor meta, tuple or scalar", m)
}

func nonNil(xs []int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

// DecodeJSON reads the JSON form above. Node references must name earlier nodes; names must be
// unique. It does not Verify the graph.
func DecodeJSON(data []byte) (*Graph, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var jg struct {
		Version *int         `json:"version"`
		Name    string       `json:"name"`
		Symbols []jsonSymbol `json:"symbols"`
		Nodes   []jsonNode   `json:"nodes"`
	}
	if err := dec.Decode(&jg); err != nil {
		return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: %w; pass what EncodeJSON wrote", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: data after the graph object; pass one graph")
	}
	if jg.Version == nil || *jg.Version != jsonVersion {
		return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: version is not %d; this reader knows schema version %d only", jsonVersion, jsonVersion)
	}
	d := &jsonDecoder{g: New(jg.Name), byName: map[string]*Node{}}
	if len(jg.Symbols) > 0 {
		env, err := decodeSymbols(jg.Symbols, jg.Nodes)
		if err != nil {
			return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: %w", err)
		}
		d.env, d.g.Shapes = env, env
		for id, js := range jg.Symbols {
			if js.Dim != DerivedDim {
				continue
			}
			num, err := d.sym(js.Def)
			if err != nil || js.Div < 2 {
				return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: symbols[%d] is derived (dim -3) but its def and div are not a size expression and a divisor ≥ 2: %v", id, err)
			}
			for _, x := range num.Symbols() {
				if x >= id {
					return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: symbols[%d] is derived from s%d; a derived symbol is defined by earlier symbols", id, x)
				}
			}
			env.DefineSymbol(id, primtorch.SymDef{Num: num, Div: js.Div})
		}
	}
	for i, jn := range jg.Nodes {
		n, err := d.node(&jn)
		if err != nil {
			return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: node %d (%q): %w", i, jn.Name, err)
		}
		d.g.addNamed(n)
		if n.Op != Output {
			d.byName[n.Name] = n
		}
	}
	if d.env != nil {
		for id, b := range SymbolBindings(d.g) {
			js := jg.Symbols[id]
			if js.Dim == DerivedDim {
				continue
			}
			if js.Input < 0 {
				d.env.Specialize(id, "the graph specialised it")
				continue
			}
			if b.Input != js.Input || b.Dim != js.Dim {
				return nil, fmt.Errorf("fxgraph: cannot decode graph JSON: symbols[%d] says placeholder %d dim %d carries s%d, but the placeholders' metas bind it to placeholder %d dim %d; write the first placeholder whose size (or int value) is the bare symbol", id, js.Input, js.Dim, id, b.Input, b.Dim)
			}
		}
	}
	return d.g, nil
}

// symJSON is a size expression's {"c": C, "terms": [[COEF, [SYMBOL, ...]], ...]} form.
func symJSON(v primtorch.SymInt) (map[string]any, error) {
	c, terms := v.Terms()
	ts := make([][]any, len(terms))
	for i, t := range terms {
		ts[i] = []any{t.Coef, t.Syms}
	}
	return map[string]any{"c": c, "terms": ts}, nil
}

// jsonSymbol is one entry of "symbols".
type jsonSymbol struct {
	Input int   `json:"input"`
	Dim   int   `json:"dim"`
	Hint  int64 `json:"hint"`
	// a derived symbol (dim -3): floor(def / div), def a size expression over earlier symbols
	Def any   `json:"def,omitempty"`
	Div int64 `json:"div,omitempty"`
}

// decodeSymbols makes the graph's ShapeEnv: one symbol per entry with its hint, its source
// named after the placeholder that carries it.
func decodeSymbols(syms []jsonSymbol, nodes []jsonNode) (*primtorch.ShapeEnv, error) {
	var phs []string
	for _, jn := range nodes {
		if jn.Op == "placeholder" {
			phs = append(phs, jn.Target)
		}
	}
	env := primtorch.NewShapeEnv()
	for id, s := range syms {
		src := "(specialised)"
		if s.Dim == DerivedDim {
			src = "(derived)"
		} else if s.Input >= 0 {
			if s.Input >= len(phs) {
				return nil, fmt.Errorf("symbols[%d] names placeholder %d of %d", id, s.Input, len(phs))
			}
			switch {
			case s.Dim == -1:
				src = phs[s.Input]
			case s.Dim == OffsetDim:
				src = phs[s.Input] + ".storage_offset()"
			case s.Dim >= 0:
				src = fmt.Sprintf("%s.size(%d)", phs[s.Input], s.Dim)
			default:
				return nil, fmt.Errorf("symbols[%d] has dim %d; write a dim ≥ 0, -1 (an int placeholder), -2 (a storage offset) or -3 (a derived symbol, with def and div)", id, s.Dim)
			}
		}
		env.NewSymbol(s.Hint, src)
	}
	return env, nil
}

type jsonDecoder struct {
	g      *Graph
	byName map[string]*Node
	env    *primtorch.ShapeEnv // the graph's symbols, nil when it has none
}

// sym reads a {"sym": {"c": 2, "terms": [[4, [0, 1]], ...]}} size expression over d's symbols.
func (d *jsonDecoder) sym(x any) (primtorch.SymInt, error) {
	obj, ok := x.(map[string]any)
	if !ok {
		return primtorch.SymInt{}, fmt.Errorf("sym is not an object {\"c\": INT, \"terms\": [[COEF, [SYMBOL, ...]], ...]}")
	}
	num := func(v any, what string) (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Errorf("sym %s %v is not an integer", what, v)
		}
		return strconv.ParseInt(string(n), 10, 64)
	}
	var s primtorch.SymInt
	for k, v := range obj {
		switch k {
		case "c":
			c, err := num(v, "constant")
			if err != nil {
				return s, err
			}
			s = s.AddConst(c)
		case "terms":
			terms, ok := v.([]any)
			if !ok {
				return s, fmt.Errorf("sym terms are not a JSON array")
			}
			for i, t := range terms {
				pair, _ := t.([]any)
				if len(pair) != 2 {
					return s, fmt.Errorf("sym term %d is not [COEF, [SYMBOL, ...]]", i)
				}
				coef, err := num(pair[0], "coefficient")
				if err != nil {
					return s, err
				}
				ids, _ := pair[1].([]any)
				m := primtorch.SymConst(coef)
				for _, idv := range ids {
					id, err := num(idv, "symbol")
					if err != nil {
						return s, err
					}
					if d.env == nil || id < 0 || int(id) >= d.env.NumSymbols() {
						return s, fmt.Errorf("sym term %d names symbol s%d, which the graph's \"symbols\" do not list", i, id)
					}
					m = m.Mul(d.env.Symbol(int(id)))
				}
				s = s.Add(m)
			}
		default:
			return s, fmt.Errorf("unknown sym field %q; expected c and terms", k)
		}
	}
	return s, nil
}

// symOrInt reads an INT or a {"sym": ...} entry of a tensor meta.
func (d *jsonDecoder) symOrInt(v any, what string) (primtorch.SymInt, error) {
	if obj, ok := v.(map[string]any); ok {
		tag, x, err := tagged(obj)
		if err != nil || tag != "sym" {
			return primtorch.SymInt{}, fmt.Errorf("%s is neither an integer nor a {\"sym\": ...} size expression", what)
		}
		return d.sym(x)
	}
	n, ok := v.(json.Number)
	if !ok {
		return primtorch.SymInt{}, fmt.Errorf("%s is not an integer", what)
	}
	x, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return primtorch.SymInt{}, fmt.Errorf("%s = %s is not an int64", what, n)
	}
	return primtorch.SymConst(x), nil
}

func (d *jsonDecoder) node(jn *jsonNode) (*Node, error) {
	op, ok := parseNodeOp(jn.Op)
	if !ok {
		return nil, fmt.Errorf("unknown op %q; expected placeholder, call_function, call_method, get_attr or output", jn.Op)
	}
	if _, dup := d.byName[jn.Name]; dup && op != Output {
		return nil, fmt.Errorf("name is used twice; node names must be unique")
	}
	n := &Node{Name: jn.Name, Op: op, Target: jn.Target, Where: jn.Where, Stack: jn.Stack}
	for i, v := range jn.Args {
		a, err := d.arg(v)
		if err != nil {
			return nil, fmt.Errorf("args[%d]: %w", i, err)
		}
		n.Args = append(n.Args, a)
	}
	for i, kv := range jn.Kwargs {
		name, ok := pairKey(kv)
		if !ok {
			return nil, fmt.Errorf("kwargs[%d] is not a [\"name\", ARG] pair", i)
		}
		a, err := d.arg(kv[1])
		if err != nil {
			return nil, fmt.Errorf("kwargs[%d] (%s): %w", i, name, err)
		}
		n.Kwargs = append(n.Kwargs, Kwarg{Name: name, Value: a})
	}
	m, err := d.meta(jn.Meta)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	n.Meta = m
	return n, nil
}

func pairKey(v []any) (string, bool) {
	if len(v) != 2 {
		return "", false
	}
	k, ok := v[0].(string)
	return k, ok
}

// tagged splits a one-key object into its tag and value.
func tagged(v map[string]any) (string, any, error) {
	if len(v) != 1 {
		return "", nil, fmt.Errorf("object with %d keys; tagged values have exactly one key", len(v))
	}
	for k, x := range v {
		return k, x, nil
	}
	panic("unreachable")
}

func (d *jsonDecoder) arg(v any) (Arg, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		c, err := decodeScalar(v)
		return Const{c}, err
	}
	tag, x, err := tagged(obj)
	if err != nil {
		return nil, err
	}
	switch tag {
	case "node":
		name, _ := x.(string)
		n, ok := d.byName[name]
		if !ok {
			return nil, fmt.Errorf("node %q is not defined before this node", name)
		}
		return n, nil
	case "list", "tuple", "slice":
		elems, err := d.argList(x, tag)
		if err != nil {
			return nil, err
		}
		switch tag {
		case "list":
			return List{Elems: elems}, nil
		case "tuple":
			return Tuple{Elems: elems}, nil
		}
		if len(elems) != 3 {
			return nil, fmt.Errorf("slice has %d parts; write [start, stop, step]", len(elems))
		}
		return Slice{Start: elems[0], Stop: elems[1], Step: elems[2]}, nil
	case "dict":
		pairs, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("dict is not a list of [key, ARG] pairs")
		}
		entries := []DictEntry{}
		for i, p := range pairs {
			kv, _ := p.([]any)
			key, ok := pairKey(kv)
			if !ok {
				return nil, fmt.Errorf("dict entry %d is not a [\"key\", ARG] pair", i)
			}
			a, err := d.arg(kv[1])
			if err != nil {
				return nil, fmt.Errorf("dict key %q: %w", key, err)
			}
			entries = append(entries, DictEntry{Key: key, Value: a})
		}
		return Dict{Entries: entries}, nil
	}
	if tag == "sym" {
		si, err := d.sym(x)
		return Const{primtorch.SymValue(si)}, err
	}
	c, err := decodeTagged(tag, x)
	return Const{c}, err
}

func (d *jsonDecoder) argList(x any, tag string) ([]Arg, error) {
	items, ok := x.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON array", tag)
	}
	elems := []Arg{}
	for i, item := range items {
		a, err := d.arg(item)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", tag, i, err)
		}
		elems = append(elems, a)
	}
	return elems, nil
}

// decodeScalar reads an untagged value: null, a bool, an integer or a string.
func decodeScalar(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case json.Number:
		i, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s is not an int64; floats are written {\"float\": \"1.5\"}", v)
		}
		return i, nil
	case []any:
		return nil, fmt.Errorf("bare JSON array; lists and tuples are written {\"list\": [...]} or {\"tuple\": [...]}")
	}
	return nil, fmt.Errorf("unexpected JSON value %v", v)
}

// decodeTagged reads the tagged constants (everything but node, containers and slices).
func decodeTagged(tag string, x any) (any, error) {
	s, isString := x.(string)
	switch tag {
	case "float":
		if isString {
			return parseJSONFloat(s)
		}
	case "complex":
		parts, _ := x.([]any)
		if len(parts) == 2 {
			re, _ := parts[0].(string)
			im, _ := parts[1].(string)
			r, err1 := parseJSONFloat(re)
			i, err2 := parseJSONFloat(im)
			if err1 == nil && err2 == nil {
				return complex(r, i), nil
			}
		}
		return nil, fmt.Errorf("complex is not [\"re\", \"im\"] with float strings")
	case "dtype":
		if dt, ok := primtorch.ParseDType(s); ok && isString {
			return dt, nil
		}
		return nil, fmt.Errorf("unknown dtype %v; expected a torch dtype name such as float32", x)
	case "device":
		if isString {
			return primtorch.ParseDevice(s)
		}
	case "ellipsis":
		return primtorch.Ellipsis{}, nil
	case "memory_format":
		if memoryFormats[primtorch.MemoryFormat(s)] {
			return primtorch.MemoryFormat(s), nil
		}
		return nil, fmt.Errorf("unknown memory format %v", x)
	case "layout":
		if layouts[primtorch.Layout(s)] {
			return primtorch.Layout(s), nil
		}
		return nil, fmt.Errorf("unknown layout %v", x)
	default:
		return nil, fmt.Errorf("unknown tag %q; expected node, float, complex, dtype, device, ellipsis, memory_format, layout, list, tuple, slice or dict", tag)
	}
	return nil, fmt.Errorf("%s value %v is not a string", tag, x)
}

func parseJSONFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, fmt.Errorf("bad float %q; write Python's repr, such as \"1.5\", \"-0.0\", \"inf\" or \"nan\"", s)
	}
	if err != nil {
		return 0, fmt.Errorf("float %q is out of range", s)
	}
	return f, nil
}

func (d *jsonDecoder) meta(v any) (any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		c, err := decodeScalar(v)
		if _, isString := c.(string); isString {
			return nil, fmt.Errorf("a string is not a meta")
		}
		return c, err
	}
	tag, x, err := tagged(obj)
	if err != nil {
		return nil, err
	}
	switch tag {
	case "tensor":
		return d.tensorMeta(x)
	case "sym":
		si, err := d.sym(x)
		if err != nil {
			return nil, err
		}
		return primtorch.SymValue(si), nil
	case "tuple":
		items, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("tuple meta is not a JSON array")
		}
		elems := make([]any, len(items))
		for i, item := range items {
			if elems[i], err = d.meta(item); err != nil {
				return nil, fmt.Errorf("tuple element %d: %w", i, err)
			}
		}
		return elems, nil
	case "float", "complex":
		return decodeTagged(tag, x)
	}
	return nil, fmt.Errorf("unknown meta tag %q; expected tensor, tuple, sym, float or complex", tag)
}

func (d *jsonDecoder) tensorMeta(x any) (*primtorch.TensorMeta, error) {
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tensor meta is not an object")
	}
	m := &primtorch.TensorMeta{Device: primtorch.CPU}
	var sizes, strides []primtorch.SymInt
	offset := primtorch.SymConst(0)
	var err error
	seen := map[string]bool{}
	for k, v := range obj {
		seen[k] = true
		switch k {
		case "dtype":
			s, _ := v.(string)
			dt, ok := primtorch.ParseDType(s)
			if !ok {
				return nil, fmt.Errorf("unknown dtype %v", v)
			}
			m.DType = dt
		case "shape":
			sizes, err = d.symInts(v, k)
		case "stride":
			strides, err = d.symInts(v, k)
		case "storage_offset":
			offset, err = d.symOrInt(v, k)
		case "device":
			s, _ := v.(string)
			m.Device, err = primtorch.ParseDevice(s)
		case "requires_grad":
			var isBool bool
			if m.RequiresGrad, isBool = v.(bool); !isBool {
				err = fmt.Errorf("requires_grad %v is not a bool", v)
			}
		default:
			err = fmt.Errorf("unknown tensor meta field %q", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if !seen["dtype"] || !seen["shape"] {
		return nil, fmt.Errorf("tensor meta needs dtype and shape")
	}
	if !seen["stride"] {
		strides = primtorch.SymContiguousStrides(sizes)
	}
	if len(strides) != len(sizes) {
		return nil, fmt.Errorf("tensor meta has %d sizes and %d strides", len(sizes), len(strides))
	}
	return m.SetSymLayout(sizes, strides, offset), nil
}

// symInts reads a JSON array of INT or {"sym": ...} entries.
func (d *jsonDecoder) symInts(v any, what string) ([]primtorch.SymInt, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON array", what)
	}
	out := make([]primtorch.SymInt, len(items))
	for i, item := range items {
		x, err := d.symOrInt(item, fmt.Sprintf("%s[%d]", what, i))
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}
