package fxgraph

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The text form (Parse reads it back):
//
//	graph forward(x: f32[4,8], y: f32[8]{2+1}):
//	  %fc1_weight : f32[16,8]!grad = get_attr[fc1.weight]
//	  %linear     : f32[4,16]!grad = torch.nn.functional.linear(%x, %fc1_weight, None)  # model.py:12
//	  %view       : f32[64]!grad   = .view(%linear, -1)
//	  %max_1      : (f32[], i64[]) = torch.max(%y, 0)
//	  return (%linear, [%view, {"a": %max_1}])
//
// (Names and metas are padded into columns.)
// The header lists the leading placeholders that have no source line, as name: meta, or
// name[target]: meta when the target differs from the name. Every other node is a line
// "%name : meta = rhs", where rhs is placeholder[target], get_attr[target], target(args) for
// call_function or .method(args) for call_method; the output node is "return arg". A node's
// source line follows as a "# file:line" comment (quoted in Go syntax when it has spaces at its
// ends or control characters). Targets that are not plain paths are quoted. Arguments read as
// Python: %node, None, True, 3, -0.0, inf, nan, complex(1.0, 2.0), "str" (Go escapes),
// torch.float32, torch.device("cuda:0"), ..., torch.channels_last, torch.strided,
// slice(None, 2, None), [a, b], (a,), {"k": v}. Metas are described in meta.go.

// String prints the graph's text form: deterministic, and Parse gives back an equal graph.
func (g *Graph) String() string {
	var b strings.Builder
	header := 0
	for header < len(g.Nodes) && g.Nodes[header] != nil && g.Nodes[header].Op == Placeholder && g.Nodes[header].Where == "" {
		header++
	}
	b.WriteString("graph ")
	if isIdent(g.Name) {
		b.WriteString(g.Name)
	} else {
		b.WriteString(strconv.Quote(g.Name))
	}
	if g.Shapes != nil && g.Shapes.NumSymbols() > 0 {
		b.WriteByte('[')
		for id, h := range g.Shapes.Hints() {
			if id > 0 {
				b.WriteString(", ")
			}
			b.WriteString("s" + strconv.Itoa(id) + "=" + strconv.FormatInt(h, 10))
			if d, ok := g.Shapes.Derived(id); ok {
				b.WriteString(" floordiv(sym(" + strconv.Quote(d.Num.String()) + "), " + strconv.FormatInt(d.Div, 10) + ")")
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte('(')
	for i, n := range g.Nodes[:header] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.Name)
		if n.Target != n.Name {
			b.WriteString("[" + pathText(n.Target, isAttrPath) + "]")
		}
		b.WriteString(": ")
		writeMeta(&b, n.Meta)
	}
	b.WriteString("):\n")

	body := g.Nodes[header:]
	lefts := make([]string, len(body))
	metas := make([]string, len(body))
	nameWidth, metaWidth := 0, 0
	for i, n := range body {
		if n == nil || n.Op == Output {
			continue
		}
		lefts[i] = "%" + n.Name
		metas[i] = metaString(n.Meta)
		nameWidth = max(nameWidth, len(lefts[i]))
		metaWidth = max(metaWidth, len(metas[i]))
	}
	// columns align up to a width; a longer name or meta (a call returning thousands of
	// tensors) is not padded to (the text grew as lines × the longest line: fuzz seed 22586)
	nameWidth, metaWidth = min(nameWidth, maxNameColumn), min(metaWidth, maxMetaColumn)
	for i, n := range body {
		b.WriteString("  ")
		if n == nil {
			b.WriteString("<nil node>\n")
			continue
		}
		if n.Op == Output {
			b.WriteString("return ")
			if len(n.Args) > 0 {
				writeArg(&b, n.Args[0], nodeName)
			}
		} else {
			pad(&b, lefts[i], nameWidth)
			b.WriteString(" : ")
			pad(&b, metas[i], metaWidth)
			b.WriteString(" = ")
			writeRHS(&b, n, nodeName)
		}
		if n.Where != "" {
			b.WriteString("  # " + whereText(n.Where))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

const maxNameColumn, maxMetaColumn = 48, 160

func pad(b *strings.Builder, s string, width int) {
	b.WriteString(s)
	for i := len(s); i < width; i++ {
		b.WriteByte(' ')
	}
}

func nodeName(n *Node) string {
	if n == nil {
		return "%<nil>"
	}
	return "%" + n.Name
}

// pathText is the target as written: raw when ok accepts it, else quoted.
func pathText(target string, ok func(string) bool) string {
	if ok(target) {
		return target
	}
	return strconv.Quote(target)
}

// whereText is a source location as written after "# ": raw when it reads back unchanged.
func whereText(where string) string {
	raw := utf8.ValidString(where) && !strings.HasPrefix(where, `"`) &&
		strings.TrimSpace(where) == where &&
		strings.IndexFunc(where, unicode.IsControl) < 0
	if raw {
		return where
	}
	return strconv.Quote(where)
}

// writeRHS appends what a node computes. ref names argument nodes.
func writeRHS(b *strings.Builder, n *Node, ref func(*Node) string) {
	switch n.Op {
	case Placeholder:
		b.WriteString("placeholder[" + pathText(n.Target, isAttrPath) + "]")
		return
	case GetAttr:
		b.WriteString("get_attr[" + pathText(n.Target, isAttrPath) + "]")
		return
	case CallMethod:
		b.WriteString("." + pathText(n.Target, isIdent))
	case CallFunction:
		b.WriteString(pathText(n.Target, isDottedIdent))
	default:
		b.WriteString(strconv.Quote(n.Op.String()) + pathText(n.Target, isDottedIdent))
	}
	b.WriteByte('(')
	for i, a := range n.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		writeArg(b, a, ref)
	}
	for i, kw := range n.Kwargs {
		if i > 0 || len(n.Args) > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pathText(kw.Name, isIdent) + "=")
		writeArg(b, kw.Value, ref)
	}
	b.WriteByte(')')
}

// writeArg appends an argument's text form. ref names nodes.
func writeArg(b *strings.Builder, a Arg, ref func(*Node) string) {
	switch a := a.(type) {
	case *Node:
		b.WriteString(ref(a))
	case Const:
		writeConst(b, a.V)
	case List:
		b.WriteByte('[')
		writeArgs(b, a.Elems, ref)
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		writeArgs(b, a.Elems, ref)
		if len(a.Elems) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case Slice:
		b.WriteString("slice(")
		writeArgs(b, []Arg{a.Start, a.Stop, a.Step}, ref)
		b.WriteByte(')')
	case Dict:
		b.WriteByte('{')
		for i, e := range a.Entries {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(e.Key) + ": ")
			writeArg(b, e.Value, ref)
		}
		b.WriteByte('}')
	case nil:
		b.WriteString("<nil Arg>")
	}
}

func writeArgs(b *strings.Builder, args []Arg, ref func(*Node) string) {
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		writeArg(b, a, ref)
	}
}
