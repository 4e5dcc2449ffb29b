package fxgraph

import (
	"fmt"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Parse reads the text form that Graph.String prints (see print.go) and returns the graph.
// Names are kept as written and reserved, so later Add* calls do not reuse them. Parse checks
// syntax, unique names and that every %reference names a node defined on an earlier line;
// everything else (node order, targets, metas) is Verify's job. Errors are *ParseError with
// the line and column.
func Parse(text string) (*Graph, error) {
	toks, err := scan(text)
	if err != nil {
		return nil, err
	}
	p := &parser{src: text, toks: toks, byName: map[string]*Node{}, defLine: map[string]int{}}
	g, err := p.graph()
	if err != nil {
		return nil, err
	}
	return g, nil
}

type parser struct {
	src     string
	toks    []token
	pos     int
	g       *Graph
	byName  map[string]*Node
	defLine map[string]int
}

func (p *parser) peek() token { return p.peekAt(0) }

func (p *parser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, format string, args ...any) error {
	return &ParseError{Line: t.line, Col: t.col, Msg: fmt.Sprintf(format, args...)}
}

// expected reports that the next token is not what the grammar needs here.
func (p *parser) expected(what string) error {
	t := p.peek()
	return p.errAt(t, "expected %s, found %s", what, t.describe())
}

func (p *parser) isPunct(text string) bool { return p.peek().is(tPunct, text) }

// punct consumes the punctuation text or fails saying what it was needed for.
func (p *parser) punct(text, context string) error {
	if !p.isPunct(text) {
		return p.expected(strconv.Quote(text) + " " + context)
	}
	p.next()
	return nil
}

func (p *parser) skipNewlines() {
	for p.peek().kind == tNewline {
		p.next()
	}
}

func (p *parser) endOfLine() error {
	if k := p.peek().kind; k != tNewline && k != tEOF {
		return p.expected("end of line")
	}
	p.next()
	return nil
}

func (p *parser) graph() (*Graph, error) {
	p.skipNewlines()
	if !p.peek().is(tIdent, "graph") {
		return nil, p.expected(`"graph NAME(inputs):" header`)
	}
	p.next()
	var name string
	switch t := p.peek(); t.kind {
	case tIdent, tString:
		name = p.next().text
	default:
		return nil, p.expected("graph name")
	}
	p.g = New(name)
	if p.isPunct("[") {
		if err := p.symbols(); err != nil {
			return nil, err
		}
	}
	if err := p.punct("(", "after the graph name"); err != nil {
		return nil, err
	}
	for !p.isPunct(")") {
		if err := p.param(); err != nil {
			return nil, err
		}
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if err := p.punct(")", "closing the graph inputs"); err != nil {
		return nil, err
	}
	if err := p.punct(":", "ending the graph header"); err != nil {
		return nil, err
	}
	if err := p.endOfLine(); err != nil {
		return nil, err
	}
	for {
		p.skipNewlines()
		t := p.peek()
		var n *Node
		var err error
		switch {
		case t.kind == tEOF:
			return p.g, nil
		case t.kind == tRef:
			n, err = p.nodeLine()
		case t.is(tIdent, "return"):
			p.next()
			var result Arg
			if result, err = p.arg(); err == nil {
				n = p.g.addNamed(&Node{Name: "output", Op: Output, Target: "output", Args: []Arg{result}})
			}
		default:
			return nil, p.expected(`a node line "%name : meta = ..." or "return ..."`)
		}
		if err != nil {
			return nil, err
		}
		if p.peek().kind == tComment {
			if n.Where, err = p.where(p.next()); err != nil {
				return nil, err
			}
		}
		if err := p.endOfLine(); err != nil {
			return nil, err
		}
	}
}

// param reads one header input: name: meta, or name[target]: meta.
func (p *parser) param() error {
	t := p.peek()
	if t.kind != tIdent {
		return p.expected("an input name")
	}
	p.next()
	target := t.text
	if p.isPunct("[") {
		var err error
		if target, err = p.target(isAttrPath); err != nil {
			return err
		}
	}
	if err := p.punct(":", "between the input name and its meta"); err != nil {
		return err
	}
	meta, err := p.meta()
	if err != nil {
		return err
	}
	return p.define(t, &Node{Name: t.text, Op: Placeholder, Target: target, Meta: meta})
}

func (p *parser) define(at token, n *Node) error {
	if line, dup := p.defLine[n.Name]; dup {
		return p.errAt(at, "node %%%s is defined twice (first on line %d); names must be unique", n.Name, line)
	}
	p.defLine[n.Name] = at.line
	p.byName[n.Name] = p.g.addNamed(n)
	return nil
}

// nodeLine reads "%name : meta = rhs".
func (p *parser) nodeLine() (*Node, error) {
	at := p.next()
	if err := p.punct(":", "after the node name"); err != nil {
		return nil, err
	}
	meta, err := p.meta()
	if err != nil {
		return nil, err
	}
	if err := p.punct("=", "after the meta of %"+at.text); err != nil {
		return nil, err
	}
	n := &Node{Name: at.text, Meta: meta}
	t := p.peek()
	switch {
	case (t.is(tIdent, "placeholder") || t.is(tIdent, "get_attr")) && p.peekAt(1).is(tPunct, "["):
		p.next()
		n.Op = GetAttr
		if t.text == "placeholder" {
			n.Op = Placeholder
		}
		if n.Target, err = p.target(isAttrPath); err != nil {
			return nil, err
		}
	case t.is(tPunct, "."):
		p.next()
		n.Op = CallMethod
		switch m := p.peek(); m.kind {
		case tIdent, tString:
			n.Target = p.next().text
		default:
			return nil, p.expected("a method name after \".\"")
		}
		if n.Args, n.Kwargs, err = p.callArgs(); err != nil {
			return nil, err
		}
	case t.kind == tIdent || t.kind == tString:
		n.Op = CallFunction
		n.Target = p.path()
		if n.Args, n.Kwargs, err = p.callArgs(); err != nil {
			return nil, err
		}
	default:
		return nil, p.expected("placeholder[...], get_attr[...], a function path or .method")
	}
	if err := p.define(at, n); err != nil {
		return nil, err
	}
	return n, nil
}

// path reads a quoted target or a dotted path of identifiers: torch.nn.functional.linear.
func (p *parser) path() string {
	t := p.next()
	if t.kind == tString {
		return t.text
	}
	parts := []string{t.text}
	for p.isPunct(".") && p.peekAt(1).kind == tIdent {
		p.next()
		parts = append(parts, p.next().text)
	}
	return strings.Join(parts, ".")
}

// target reads "[path]" or "[\"quoted\"]"; the raw path is taken from the source because
// "layers.0.1" does not scan as identifiers.
func (p *parser) target(ok func(string) bool) (string, error) {
	open := p.next()
	if p.peek().kind == tString && p.peekAt(1).is(tPunct, "]") {
		s := p.next().text
		p.next()
		return s, nil
	}
	j := p.pos
	for ; !p.toks[j].is(tPunct, "]"); j++ {
		if k := p.toks[j].kind; k == tNewline || k == tEOF {
			return "", p.errAt(open, `expected "]" closing the target on the same line`)
		}
	}
	raw := p.src[open.end:p.toks[j].off]
	if !ok(raw) {
		return "", p.errAt(p.peek(), "bad target %q: expected a dotted path such as fc1.weight or layers.0.bias, or a quoted string", raw)
	}
	p.pos = j + 1
	return raw, nil
}

// where reads a source location comment: "# model.py:12" or "# \"quoted\"".
func (p *parser) where(c token) (string, error) {
	s := strings.TrimSpace(c.text)
	if !strings.HasPrefix(s, `"`) {
		return s, nil
	}
	w, err := strconv.Unquote(s)
	if err != nil {
		return "", p.errAt(c, "bad quoted source location %s (Go string syntax)", s)
	}
	return w, nil
}

// callArgs reads "(args, name=value)".
func (p *parser) callArgs() ([]Arg, []Kwarg, error) {
	if err := p.punct("(", "opening the call's arguments"); err != nil {
		return nil, nil, err
	}
	var args []Arg
	var kwargs []Kwarg
	for !p.isPunct(")") {
		t := p.peek()
		if (t.kind == tIdent || t.kind == tString) && p.peekAt(1).is(tPunct, "=") {
			p.next()
			p.next()
			v, err := p.arg()
			if err != nil {
				return nil, nil, err
			}
			kwargs = append(kwargs, Kwarg{Name: t.text, Value: v})
		} else {
			if kwargs != nil {
				return nil, nil, p.errAt(t, "positional argument after keyword argument %s", kwargs[len(kwargs)-1].Name)
			}
			v, err := p.arg()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, v)
		}
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if err := p.punct(")", "or \",\" in the call's arguments"); err != nil {
		return nil, nil, err
	}
	return args, kwargs, nil
}

// seq reads elements up to close, comma separated, a trailing comma allowed; it reports
// whether the last element had a trailing comma.
func (p *parser) seq(close, what string, elem func() error) (trailing bool, err error) {
	for !p.isPunct(close) {
		if err := elem(); err != nil {
			return false, err
		}
		trailing = false
		if !p.isPunct(",") {
			break
		}
		p.next()
		trailing = true
	}
	return trailing, p.punct(close, "or \",\" in "+what)
}

// arg reads one argument.
func (p *parser) arg() (Arg, error) {
	t := p.peek()
	switch {
	case t.kind == tRef:
		p.next()
		n, ok := p.byName[t.text]
		if !ok {
			return nil, p.errAt(t, "%%%s is not defined on an earlier line; define nodes before their uses", t.text)
		}
		return n, nil
	case t.kind == tString:
		p.next()
		return Const{t.text}, nil
	case t.kind == tEllipsis:
		p.next()
		return Const{primtorch.Ellipsis{}}, nil
	case t.is(tPunct, "["):
		p.next()
		elems := []Arg{}
		_, err := p.seq("]", "a list", func() error {
			a, err := p.arg()
			elems = append(elems, a)
			return err
		})
		return List{Elems: elems}, err
	case t.is(tPunct, "("):
		p.next()
		elems := []Arg{}
		trailing, err := p.seq(")", "a tuple", func() error {
			a, err := p.arg()
			elems = append(elems, a)
			return err
		})
		if err == nil && len(elems) == 1 && !trailing {
			return nil, p.errAt(t, "a one-element tuple is written (x,)")
		}
		return Tuple{Elems: elems}, err
	case t.is(tPunct, "{"):
		p.next()
		entries := []DictEntry{}
		_, err := p.seq("}", "a dict", func() error {
			k := p.peek()
			if k.kind != tString {
				return p.expected("a string dict key")
			}
			p.next()
			if err := p.punct(":", "after the dict key"); err != nil {
				return err
			}
			v, err := p.arg()
			entries = append(entries, DictEntry{Key: k.text, Value: v})
			return err
		})
		return Dict{Entries: entries}, err
	case t.is(tIdent, "slice") && p.peekAt(1).is(tPunct, "("):
		return p.slice()
	case t.is(tIdent, "torch") && p.peekAt(1).is(tPunct, "."):
		v, err := p.torchConst()
		return Const{v}, err
	}
	v, ok, err := p.scalar()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, p.expected("an argument (%node, constant, [list], (tuple,), {dict} or slice(...))")
	}
	return Const{v}, nil
}

// slice reads slice(stop), slice(start, stop) or slice(start, stop, step).
func (p *parser) slice() (Arg, error) {
	at := p.next()
	p.next()
	var parts []Arg
	if _, err := p.seq(")", "slice(...)", func() error {
		a, err := p.arg()
		parts = append(parts, a)
		return err
	}); err != nil {
		return nil, err
	}
	none := Const{nil}
	switch len(parts) {
	case 1:
		return Slice{Start: none, Stop: parts[0], Step: none}, nil
	case 2:
		return Slice{Start: parts[0], Stop: parts[1], Step: none}, nil
	case 3:
		return Slice{Start: parts[0], Stop: parts[1], Step: parts[2]}, nil
	}
	return nil, p.errAt(at, "slice takes 1 to 3 arguments, got %d", len(parts))
}

// torchConst reads torch.float32, torch.device("cuda:0"), torch.channels_last, torch.strided.
func (p *parser) torchConst() (any, error) {
	p.next()
	p.next()
	t := p.peek()
	if t.kind != tIdent {
		return nil, p.expected("a name after \"torch.\"")
	}
	p.next()
	if t.text == "device" && p.isPunct("(") {
		p.next()
		s := p.peek()
		if s.kind != tString {
			return nil, p.expected(`a device string such as "cuda:0"`)
		}
		p.next()
		d, err := primtorch.ParseDevice(s.text)
		if err != nil {
			return nil, p.errAt(s, "%v", err)
		}
		return d, p.punct(")", "closing torch.device(...)")
	}
	if d, ok := primtorch.ParseDType("torch." + t.text); ok {
		return d, nil
	}
	if memoryFormats[primtorch.MemoryFormat(t.text)] {
		return primtorch.MemoryFormat(t.text), nil
	}
	if layouts[primtorch.Layout(t.text)] {
		return primtorch.Layout(t.text), nil
	}
	return nil, p.errAt(t, "unknown torch.%s: expected a dtype (torch.float32), torch.device(\"...\"), a memory format (torch.channels_last) or a layout (torch.strided)", t.text)
}

// scalar reads None, True, False, a number, inf, nan or complex(re, im); ok is false (and
// nothing is consumed) when the next token starts none of them.
func (p *parser) scalar() (v any, ok bool, err error) {
	t := p.peek()
	switch {
	case t.is(tIdent, "None"):
		p.next()
		return nil, true, nil
	case t.is(tIdent, "True"), t.is(tIdent, "False"):
		p.next()
		return t.text == "True", true, nil
	case t.is(tIdent, "complex") && p.peekAt(1).is(tPunct, "("):
		p.next()
		p.next()
		re, err := p.float("the real part of complex(re, im)")
		if err != nil {
			return nil, true, err
		}
		if err := p.punct(",", "in complex(re, im)"); err != nil {
			return nil, true, err
		}
		im, err := p.float("the imaginary part of complex(re, im)")
		if err != nil {
			return nil, true, err
		}
		return complex(re, im), true, p.punct(")", "closing complex(re, im)")
	case t.kind == tInt, t.kind == tFloat, t.is(tPunct, "-"), t.is(tIdent, "inf"), t.is(tIdent, "nan"):
		v, err := p.number()
		return v, true, err
	case t.is(tIdent, "sym") && p.peekAt(1).is(tPunct, "("):
		s, err := p.symInt("a size expression")
		return s, true, err
	}
	return nil, false, nil
}

// symbols reads the header's size symbols with their hints: [s0=8, s1=16].
func (p *parser) symbols() error {
	p.next()
	p.g.Shapes = primtorch.NewShapeEnv()
	for !p.isPunct("]") {
		t := p.next()
		if t.kind != tIdent || t.text != "s"+strconv.Itoa(p.g.Shapes.NumSymbols()) {
			return p.errAt(t, "expected size symbol s%d (symbols are numbered from s0 in order)", p.g.Shapes.NumSymbols())
		}
		if err := p.punct("=", "after a size symbol"); err != nil {
			return err
		}
		h := p.next()
		hint, err := strconv.ParseInt(h.text, 10, 64)
		if h.kind != tInt || err != nil {
			return p.errAt(h, "expected the hint (an integer) of %s", t.text)
		}
		sym := p.g.Shapes.NewSymbol(hint, "")
		if p.peek().is(tIdent, "floordiv") {
			// a derived symbol: floordiv(sym("s0 + 1"), 2)
			p.next()
			if err := p.punct("(", "after floordiv"); err != nil {
				return err
			}
			num, err := p.symInt("a derived symbol's numerator")
			if err != nil {
				return err
			}
			if err := p.punct(",", "in floordiv(num, div)"); err != nil {
				return err
			}
			dt := p.next()
			div, err := strconv.ParseInt(dt.text, 10, 64)
			if dt.kind != tInt || err != nil || div < 2 {
				return p.errAt(dt, "expected the divisor (an integer ≥ 2) of %s", t.text)
			}
			id, _, _, _ := sym.Linear()
			for _, x := range num.Symbols() {
				if x >= id {
					return p.errAt(dt, "%s is derived from s%d; a derived symbol is defined by earlier symbols", t.text, x)
				}
			}
			p.g.Shapes.DefineSymbol(id, primtorch.SymDef{Num: num, Div: div})
			if err := p.punct(")", "closing floordiv(num, div)"); err != nil {
				return err
			}
		}
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	return p.punct("]", "closing the size symbols")
}

// symInt reads a size: an integer, a symbol (s0) or sym("4*s0 + 1").
func (p *parser) symInt(what string) (primtorch.SymInt, error) {
	t := p.peek()
	env := p.g.Shapes
	switch {
	case t.is(tIdent, "sym") && p.peekAt(1).is(tPunct, "("):
		p.next()
		p.next()
		e := p.next()
		if e.kind != tString {
			return primtorch.SymInt{}, p.errAt(e, "expected a quoted size expression in sym(...)")
		}
		s, err := primtorch.ParseSymInt(e.text, env)
		if err != nil {
			return primtorch.SymInt{}, p.errAt(e, "%v; declare symbols in the header: graph f[s0=8](...)", err)
		}
		return s, p.punct(")", "closing sym(...)")
	case t.kind == tIdent && strings.HasPrefix(t.text, "s"):
		p.next()
		s, err := primtorch.ParseSymInt(t.text, env)
		if err != nil {
			return primtorch.SymInt{}, p.errAt(t, "%v; declare symbols in the header: graph f[s0=8](...)", err)
		}
		return s, nil
	}
	v, err := p.number()
	if err != nil {
		return primtorch.SymInt{}, err
	}
	i, ok := v.(int64)
	if !ok {
		if what == "the storage offset" {
			return primtorch.SymInt{}, p.errAt(p.toks[p.pos-1], "storage offset must be an integer")
		}
		return primtorch.SymInt{}, p.errAt(p.toks[p.pos-1], "expected an integer in %s", what)
	}
	return primtorch.SymConst(i), nil
}

// symInts reads a list of sizes up to one of closers (consumed).
func (p *parser) symInts(closers, what string) ([]primtorch.SymInt, error) {
	out := []primtorch.SymInt{}
	closing := func() bool { t := p.peek(); return t.kind == tPunct && strings.Contains(closers, t.text) }
	for !closing() {
		s, err := p.symInt(what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if !closing() {
		return nil, p.expected(fmt.Sprintf("\",\" or %q in %s", closers, what))
	}
	p.next()
	return out, nil
}

// number reads an optionally negative int64 or float64 literal (inf and nan included).
func (p *parser) number() (any, error) {
	sign := ""
	if p.isPunct("-") {
		p.next()
		sign = "-"
	}
	t := p.peek()
	switch {
	case t.kind == tInt:
		p.next()
		v, err := strconv.ParseInt(sign+t.text, 10, 64)
		if err != nil {
			return nil, p.errAt(t, "integer %s%s does not fit in int64", sign, t.text)
		}
		return v, nil
	case t.kind == tFloat, t.is(tIdent, "inf"), sign == "" && t.is(tIdent, "nan"):
		p.next()
		v, err := strconv.ParseFloat(sign+t.text, 64)
		if err != nil {
			return nil, p.errAt(t, "float %s%s is out of range", sign, t.text)
		}
		return v, nil
	}
	return nil, p.expected("a number")
}

func (p *parser) float(what string) (float64, error) {
	v, err := p.number()
	if err != nil {
		return 0, err
	}
	switch v := v.(type) {
	case float64:
		return v, nil
	case int64:
		return float64(v), nil
	}
	return 0, p.expected(what)
}

// meta reads a node meta: a tensor meta, a tuple of metas, a scalar or None.
func (p *parser) meta() (any, error) {
	t := p.peek()
	if t.is(tPunct, "(") {
		p.next()
		elems := []any{}
		trailing, err := p.seq(")", "a tuple meta", func() error {
			m, err := p.meta()
			elems = append(elems, m)
			return err
		})
		if err == nil && len(elems) == 1 && !trailing {
			return nil, p.errAt(t, "a one-element tuple meta is written (m,)")
		}
		return elems, err
	}
	if t.kind == tIdent && p.peekAt(1).is(tPunct, "[") {
		return p.tensorMeta()
	}
	v, ok, err := p.scalar()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, p.expected("a meta (f32[4,8], (meta, meta), a number, True/False or None)")
	}
	return v, nil
}

// tensorMeta reads dtype[shape]{strides+offset}@device!grad.
func (p *parser) tensorMeta() (any, error) {
	t := p.next()
	dt, ok := primtorch.ParseDType(t.text)
	if !ok {
		return nil, p.errAt(t, "unknown dtype %q: expected f32, f16, bf16, f64, i64, i32, i16, i8, u8, b8, c64 or c128", t.text)
	}
	p.next()
	sizes, err := p.symInts("]", "the shape")
	if err != nil {
		return nil, err
	}
	m := &primtorch.TensorMeta{DType: dt, Device: primtorch.CPU}
	strides, offset := primtorch.SymContiguousStrides(sizes), primtorch.SymConst(0)
	if p.isPunct("{") {
		p.next()
		if strides, err = p.symInts("}+", "the strides"); err != nil {
			return nil, err
		}
		if p.toks[p.pos-1].is(tPunct, "+") {
			if offset, err = p.symInt("the storage offset"); err != nil {
				return nil, err
			}
			if err := p.punct("}", "closing the strides"); err != nil {
				return nil, err
			}
		}
	}
	m.SetSymLayout(sizes, strides, offset)
	if p.isPunct("@") {
		p.next()
		at := p.peek()
		if at.kind != tIdent {
			return nil, p.expected("a device after \"@\" (cuda:0)")
		}
		p.next()
		dev := at.text
		if p.isPunct(":") && p.peekAt(1).kind == tInt {
			p.next()
			dev += ":" + p.next().text
		}
		if m.Device, err = primtorch.ParseDevice(dev); err != nil {
			return nil, p.errAt(at, "%v", err)
		}
	}
	if p.isPunct("!") {
		p.next()
		if !p.peek().is(tIdent, "grad") {
			return nil, p.expected("\"grad\" after \"!\"")
		}
		p.next()
		m.RequiresGrad = true
	}
	return m, nil
}

// ints reads comma-separated integers up to one of the closing punctuation marks in closers
// (which is consumed).
func (p *parser) ints(closers, what string) ([]int64, error) {
	out := []int64{}
	closing := func() bool { t := p.peek(); return t.kind == tPunct && strings.Contains(closers, t.text) }
	for !closing() {
		v, err := p.number()
		if err != nil {
			return nil, err
		}
		i, ok := v.(int64)
		if !ok {
			return nil, p.errAt(p.toks[p.pos-1], "expected an integer in %s", what)
		}
		out = append(out, i)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if !closing() {
		return nil, p.expected(fmt.Sprintf("\",\" or %q in %s", closers, what))
	}
	p.next()
	return out, nil
}
