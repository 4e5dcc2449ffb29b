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
//	specialised (its value is always the hint). Tensor metas give the sizes at the hints. Only
//	the encoder writes symbols: Go never reads a symbolic graph back from JSON.
//
//	META = null                                           none (the output node)
//	     | {"tensor": {"dtype": "float32", "shape": [4, 8], "stride": [8, 1],
//	                   "storage_offset": 0, "device": "cpu", "requires_grad": false}}
//	     | {"tuple": [META, ...]}                         a tuple of values (null for None)
//	     | INT | {"float": ...} | {"complex": ...} | true | false   a Python scalar
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
		for id, b := range SymbolBindings(g) {
			if id > 0 {
				buf.WriteString(", ")
			}
			if b.Input < 0 && !g.Shapes.IsSpecialized(id) {
				return nil, fmt.Errorf("fxgraph: cannot encode graph %s as JSON: size symbol s%d has no graph input that carries it", g.Name, id)
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
		c, terms := v.Terms()
		ts := make([][]any, len(terms))
		for i, t := range terms {
			ts[i] = []any{t.Coef, t.Syms}
		}
		return map[string]any{"sym": map[string]any{"c": c, "terms": ts}}, nil
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
		Version *int       `json:"version"`
		Name    string     `json:"name"`
		Nodes   []jsonNode `json:"nodes"`
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
	return d.g, nil
}

type jsonDecoder struct {
	g      *Graph
	byName map[string]*Node
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
	m, err := decodeMeta(jn.Meta)
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

func decodeMeta(v any) (any, error) {
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
		return decodeTensorMeta(x)
	case "tuple":
		items, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("tuple meta is not a JSON array")
		}
		elems := make([]any, len(items))
		for i, item := range items {
			if elems[i], err = decodeMeta(item); err != nil {
				return nil, fmt.Errorf("tuple element %d: %w", i, err)
			}
		}
		return elems, nil
	case "float", "complex":
		return decodeTagged(tag, x)
	}
	return nil, fmt.Errorf("unknown meta tag %q; expected tensor, tuple, float or complex", tag)
}

func decodeTensorMeta(x any) (*primtorch.TensorMeta, error) {
	obj, ok := x.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tensor meta is not an object")
	}
	m := &primtorch.TensorMeta{Device: primtorch.CPU}
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
			m.Shape, err = jsonInts(v, k)
		case "stride":
			m.Strides, err = jsonInts(v, k)
		case "storage_offset":
			var c any
			if c, err = decodeScalar(v); err == nil {
				var isInt bool
				if m.Offset, isInt = c.(int64); !isInt {
					err = fmt.Errorf("storage_offset %v is not an integer", v)
				}
			}
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
		m.Strides = primtorch.ContiguousStrides(m.Shape)
	}
	return m, nil
}

func jsonInts(v any, what string) ([]int64, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a JSON array", what)
	}
	out := make([]int64, len(items))
	for i, item := range items {
		num, ok := item.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is not an integer", what, i)
		}
		x, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s[%d] = %s is not an int64", what, i, num)
		}
		out[i] = x
	}
	return out, nil
}
