package primtorch

import (
	"fmt"
	"strconv"
	"strings"
)

// BaseType is the element type of a schema parameter.
type BaseType uint8

const (
	TTensor BaseType = iota
	TScalar
	TInt
	TFloat
	TBool
	TStr
	TScalarType
	TDevice
	TLayout
	TMemoryFormat
	TGenerator
	TAny // anything (indices of getitem, p of norm, ...): the meta function checks it
)

var baseTypeNames = [...]string{
	TTensor: "Tensor", TScalar: "Scalar", TInt: "int", TFloat: "float", TBool: "bool",
	TStr: "str", TScalarType: "ScalarType", TDevice: "Device", TLayout: "Layout",
	TMemoryFormat: "MemoryFormat", TGenerator: "Generator", TAny: "Any",
}

func (b BaseType) String() string { return baseTypeNames[b] }

func parseBaseType(s string) (BaseType, bool) {
	if s == "SymInt" {
		return TInt, true
	}
	for i, n := range baseTypeNames {
		if n == s {
			return BaseType(i), true
		}
	}
	return 0, false
}

// Type is a parameter or return type: Tensor, int[2], int[1]?, Tensor?[], Tensor... .
type Type struct {
	Base         BaseType
	List         bool // T[] or T[N]
	Len          int  // N of T[N] (a single T is then accepted and repeated); 0 when unsized
	Optional     bool // T? or T[]?: None is accepted
	ElemOptional bool // T?[]: list elements may be None
	Varargs      bool // T...: a list whose elements may also come as trailing positional args
}

func (t Type) String() string {
	s := t.Base.String()
	if t.ElemOptional {
		s += "?"
	}
	if t.Varargs {
		return s + "..."
	}
	if t.List {
		if t.Len > 0 {
			s += fmt.Sprintf("[%d]", t.Len)
		} else {
			s += "[]"
		}
	}
	if t.Optional {
		s += "?"
	}
	return s
}

// Param is one parameter (or named return) of a schema.
type Param struct {
	Name       string // the Python keyword
	Canon      string // the name meta functions read: Name unless the schema renames it (name:canon)
	Type       Type
	Alias      string // alias set of an annotation like Tensor(a) or Tensor(a!); "" when none
	Writes     bool   // the annotation has "!": the argument is mutated
	Default    Value
	HasDefault bool
	KwOnly     bool
}

// Schema is a parsed ATen-like signature:
//
//	add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//	max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
//	add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)
//	embedding(Tensor input:indices, Tensor weight, ...) -> Tensor
//
// Extensions over ATen: "Any" (a value the meta function checks itself), "T..." (a list that also
// takes trailing positional arguments, like torch.einsum's operands) and "name:canon" (the Python
// keyword is name, meta functions read canon).
type Schema struct {
	// Namespace is "prims" for core ops ("prims::add(...)"), "" for torch-level ops.
	Namespace string
	Name      string
	Overload  string
	Params    []Param
	Returns   []Param
	Text      string
}

// FullName is [namespace::]name[.overload]: "add.Tensor", "relu", "prims::add".
func (s *Schema) FullName() string {
	name := s.Name
	if s.Namespace != "" {
		name = s.Namespace + "::" + name
	}
	if s.Overload == "" {
		return name
	}
	return name + "." + s.Overload
}

// Param returns the index of the parameter whose Name or Canon is name, or -1.
func (s *Schema) Param(name string) int {
	for i := range s.Params {
		if s.Params[i].Canon == name || s.Params[i].Name == name {
			return i
		}
	}
	return -1
}

func (s *Schema) String() string { return s.Text }

// ParseSchema parses an ATen-like schema string (see Schema).
func ParseSchema(text string) (*Schema, error) {
	p := &schemaParser{s: text}
	sc, err := p.schema()
	if err != nil {
		return nil, fmt.Errorf("primtorch: bad schema %q at offset %d: %v; fix the registry row", text, p.i, err)
	}
	sc.Text = text
	return sc, nil
}

// MustParseSchema is ParseSchema for registry rows, which are fixed at build time.
func MustParseSchema(text string) *Schema {
	s, err := ParseSchema(text)
	if err != nil {
		panic(err)
	}
	return s
}

type schemaParser struct {
	s string
	i int
}

func (p *schemaParser) ws() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *schemaParser) peek(tok string) bool {
	p.ws()
	return strings.HasPrefix(p.s[p.i:], tok)
}

func (p *schemaParser) eat(tok string) bool {
	if p.peek(tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *schemaParser) expect(tok string) error {
	if !p.eat(tok) {
		return fmt.Errorf("expected %q", tok)
	}
	return nil
}

func (p *schemaParser) ident() string {
	p.ws()
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || (p.i > start && c >= '0' && c <= '9') {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

func (p *schemaParser) schema() (*Schema, error) {
	sc := &Schema{Name: p.ident()}
	if sc.Name == "" {
		return nil, fmt.Errorf("expected the op name")
	}
	if p.eat("::") {
		sc.Namespace, sc.Name = sc.Name, p.ident()
		if sc.Name == "" {
			return nil, fmt.Errorf("expected the op name after the namespace")
		}
	}
	if p.eat(".") {
		sc.Overload = p.ident()
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	kwOnly := false
	for !p.eat(")") {
		if len(sc.Params) > 0 || kwOnly {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if p.eat("*") {
			kwOnly = true
			continue
		}
		prm, err := p.param(true)
		if err != nil {
			return nil, err
		}
		prm.KwOnly = kwOnly
		sc.Params = append(sc.Params, prm)
	}
	if err := p.expect("->"); err != nil {
		return nil, err
	}
	if p.eat("(") {
		for !p.eat(")") {
			if len(sc.Returns) > 0 {
				if err := p.expect(","); err != nil {
					return nil, err
				}
			}
			r, err := p.param(false)
			if err != nil {
				return nil, err
			}
			sc.Returns = append(sc.Returns, r)
		}
	} else {
		r, err := p.param(false)
		if err != nil {
			return nil, err
		}
		sc.Returns = append(sc.Returns, r)
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("trailing text")
	}
	seen := map[string]bool{}
	for _, prm := range sc.Params {
		if seen[prm.Name] {
			return nil, fmt.Errorf("parameter %q appears twice", prm.Name)
		}
		seen[prm.Name] = true
	}
	return sc, nil
}

// param parses "Type[annotation] name[:canon][=default]"; the name is optional for returns.
func (p *schemaParser) param(needName bool) (Param, error) {
	var prm Param
	tn := p.ident()
	base, ok := parseBaseType(tn)
	if !ok {
		return prm, fmt.Errorf("unknown type %q", tn)
	}
	prm.Type.Base = base
	if p.eat("(") {
		p.ws()
		start := p.i
		for p.i < len(p.s) && p.s[p.i] != ')' {
			p.i++
		}
		ann := p.s[start:p.i]
		p.i++
		prm.Writes = strings.HasSuffix(ann, "!")
		prm.Alias = strings.TrimSuffix(ann, "!")
	}
	if p.eat("?") {
		prm.Type.Optional = true
	}
	if p.eat("...") {
		prm.Type.List, prm.Type.Varargs = true, true
	} else if p.eat("[") {
		prm.Type.List = true
		prm.Type.ElemOptional, prm.Type.Optional = prm.Type.Optional, false
		p.ws()
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i > start {
			prm.Type.Len, _ = strconv.Atoi(p.s[start:p.i])
		}
		if err := p.expect("]"); err != nil {
			return prm, err
		}
		if p.eat("?") {
			prm.Type.Optional = true
		}
	}
	prm.Name = p.ident()
	prm.Canon = prm.Name
	if p.eat(":") {
		prm.Canon = p.ident()
	}
	if needName && prm.Name == "" {
		return prm, fmt.Errorf("parameter of type %s has no name", prm.Type)
	}
	if p.eat("=") {
		p.ws()
		start := p.i
		depth := 0
		inStr := byte(0)
		for p.i < len(p.s) {
			c := p.s[p.i]
			if inStr != 0 {
				if c == inStr {
					inStr = 0
				}
			} else if c == '\'' || c == '"' {
				inStr = c
			} else if c == '[' {
				depth++
			} else if c == ']' {
				depth--
			} else if (c == ',' || c == ')') && depth == 0 {
				break
			}
			p.i++
		}
		lit := strings.TrimSpace(p.s[start:p.i])
		v, err := parseDefault(lit, prm.Type)
		if err != nil {
			return prm, fmt.Errorf("default of %s: %v", prm.Name, err)
		}
		prm.Default, prm.HasDefault = v, true
	}
	return prm, nil
}

// parseDefault converts a default literal to the Value binding would produce for it.
func parseDefault(lit string, t Type) (Value, error) {
	if lit == "None" {
		return nil, nil
	}
	if t.List {
		var elems []string
		if strings.HasPrefix(lit, "[") {
			inner := strings.TrimSpace(lit[1 : len(lit)-1])
			if inner != "" {
				elems = strings.Split(inner, ",")
			}
		} else {
			if t.Len == 0 {
				return nil, fmt.Errorf("a single value %q needs a sized list type", lit)
			}
			for i := 0; i < t.Len; i++ {
				elems = append(elems, lit)
			}
		}
		et := Type{Base: t.Base}
		switch t.Base {
		case TInt:
			out := make([]int64, len(elems))
			for i, e := range elems {
				v, err := parseDefault(strings.TrimSpace(e), et)
				if err != nil {
					return nil, err
				}
				out[i] = v.(int64)
			}
			return out, nil
		case TFloat:
			out := make([]float64, len(elems))
			for i, e := range elems {
				v, err := parseDefault(strings.TrimSpace(e), et)
				if err != nil {
					return nil, err
				}
				out[i] = v.(float64)
			}
			return out, nil
		case TBool:
			out := make([]bool, len(elems))
			for i, e := range elems {
				v, err := parseDefault(strings.TrimSpace(e), et)
				if err != nil {
					return nil, err
				}
				out[i] = v.(bool)
			}
			return out, nil
		}
		return nil, fmt.Errorf("no list defaults for %s", t.Base)
	}
	switch t.Base {
	case TInt:
		return strconv.ParseInt(lit, 10, 64)
	case TFloat:
		return strconv.ParseFloat(lit, 64)
	case TBool:
		switch lit {
		case "True":
			return true, nil
		case "False":
			return false, nil
		}
		return nil, fmt.Errorf("bad bool %q", lit)
	case TStr:
		if len(lit) >= 2 && (lit[0] == '\'' || lit[0] == '"') && lit[len(lit)-1] == lit[0] {
			return lit[1 : len(lit)-1], nil
		}
		return nil, fmt.Errorf("bad string %q", lit)
	case TScalar, TAny:
		switch {
		case lit == "True":
			return true, nil
		case lit == "False":
			return false, nil
		case len(lit) >= 2 && (lit[0] == '\'' || lit[0] == '"'):
			return lit[1 : len(lit)-1], nil
		case strings.ContainsAny(lit, ".eE") || lit == "inf" || lit == "-inf":
			return strconv.ParseFloat(lit, 64)
		}
		return strconv.ParseInt(lit, 10, 64)
	case TScalarType:
		if d, ok := ParseDType(lit); ok {
			return d, nil
		}
		return nil, fmt.Errorf("bad dtype %q", lit)
	case TMemoryFormat:
		return MemoryFormat(lit), nil
	case TLayout:
		return Layout(lit), nil
	case TDevice:
		return ParseDevice(strings.Trim(lit, "'\""))
	}
	return nil, fmt.Errorf("no defaults for %s", t.Base)
}
