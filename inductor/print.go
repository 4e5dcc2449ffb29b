package inductor

import (
	"fmt"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// The IR's text form (deterministic; golden-tested):
//
//	graph forward:
//	  buf0: f32[4,16] = input x
//	  buf1: f32[4,16] = pointwise ranges=[4,16] reads=[buf0]
//	    (i0, i1) -> maximum(load(buf0, 16*i0 + i1), 0.0)
//	  buf2: f32[4,1] = reduction sum ranges=[4,1] reduce=[16] reads=[buf1]
//	    (i0, i1; r0) -> load(buf1, 16*i0 + r0)
//	  buf3: f32[4,8] = extern prims.mm(buf1, buf4)
//	  buf5: f32[16,4]{1,16} = alias of buf1
//	  return (buf2, buf3)
//
// A buffer's type is its dtype, sizes and, when not contiguous or offset, {strides+offset}.
// Loads print the storage index (the logical index through the buffer's layout). Values used
// more than once in a body are named t0, t1, ... on lines before the result.

// String prints the graph.
func (g *Graph) String() string {
	var b strings.Builder
	b.WriteString("graph " + g.Name + ":\n")
	for _, buf := range g.Buffers {
		writeBuffer(&b, buf, "  ")
	}
	b.WriteString("  return (")
	for i, o := range g.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		if o.Buf != nil {
			b.WriteString(o.Buf.Name)
		} else {
			b.WriteString(constText(o.Const))
		}
	}
	if len(g.Outputs) == 1 {
		b.WriteString(",")
	}
	b.WriteString(")\n")
	return b.String()
}

func constText(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	case float64:
		return pyLiteral(primtorch.Float64, Number{F: v})
	}
	return fmt.Sprint(v)
}

// typeText prints f32[4,16] with {strides+offset} when the layout is not contiguous.
func typeText(dt primtorch.DType, ssizes []Sym, l Layout) string {
	var b strings.Builder
	b.WriteString(dt.String())
	b.WriteString(symsText(ssizes))
	var contig []int64
	if !anySymbolic(ssizes) {
		contig = primtorch.ContiguousStrides(staticSizes(ssizes, ""))
	} else {
		for _, s := range primtorch.SymContiguousStrides(ssizes) {
			k, _ := s.IsConst()
			contig = append(contig, k)
		}
	}
	same := len(contig) == len(l.Strides)
	for k := range contig {
		if same && !isConstSize(l.Strides[k], contig[k]) {
			same = false
		}
	}
	if anySymbolic(ssizes) {
		// symbolic sizes: compare with the symbolic contiguous strides
		same = symsEqual(primtorch.SymContiguousStrides(ssizes), l.Strides)
	}
	if !same || !isConstSize(l.Offset, 0) {
		b.WriteString("{")
		for k, s := range l.Strides {
			if k > 0 {
				b.WriteString(",")
			}
			b.WriteString(strings.ReplaceAll(s.String(), " ", ""))
		}
		if !isConstSize(l.Offset, 0) {
			b.WriteString("+" + strings.ReplaceAll(l.Offset.String(), " ", ""))
		}
		b.WriteString("}")
	}
	return b.String()
}

func intsText(xs []int64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func bufNames(bs []*Buffer) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = "None"
		if b != nil {
			parts[i] = b.Name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// writeBuffer prints one buffer definition, each line prefixed by indent.
func writeBuffer(b *strings.Builder, buf *Buffer, indent string) {
	b.WriteString(indent + buf.Name + ": " + typeText(buf.DType, buf.Sizes, buf.Layout) + " = ")
	switch n := buf.Def.(type) {
	case *InputNode:
		b.WriteString("input " + n.Name + "\n")
	case *AliasNode:
		b.WriteString("alias of " + n.Base.Name)
		if n.Of != nil {
			b.WriteString(" as written by " + n.Of.Name)
		}
		b.WriteString("\n")
	case *Extern:
		if k := externOutIndex(n, buf); n.Primary() != buf {
			fmt.Fprintf(b, "output %d of %s\n", k, n.Primary().Name)
			return
		}
		b.WriteString(externText(n))
		if len(n.Outs) > 1 {
			b.WriteString(" -> " + bufNames(n.Outs))
		}
		b.WriteString("\n")
	case *Pointwise:
		fmt.Fprintf(b, "pointwise ranges=%s reads=%s\n", symsText(n.Ranges), bufNames(n.Reads()))
		writeBody(b, n.Body, len(n.Ranges), 0, indent+"  ")
	case *Reduction:
		fmt.Fprintf(b, "reduction %s ranges=%s reduce=%s reads=%s\n", n.Kind, symsText(n.Ranges), symsText(n.ReduceRanges), bufNames(n.Reads()))
		writeBody(b, n.Body, len(n.Ranges), len(n.ReduceRanges), indent+"  ")
	case *Scan:
		fmt.Fprintf(b, "scan %s dim=%d ranges=%s reads=%s\n", n.Kind, n.Dim, symsText(n.Ranges), bufNames(n.Reads()))
		writeBody(b, n.Body, len(n.Ranges), 0, indent+"  ")
	case *ScatterNode:
		op := "="
		if n.Accumulate {
			op = "+="
		}
		fmt.Fprintf(b, "scatter into %s ranges=%s reads=%s\n", n.Into.Name, symsText(n.Ranges), bufNames(n.Reads()))
		names := varNamer(len(n.Ranges))
		ind := func(a *Atom) string {
			_, s := formatValue(a.Val, names)
			return "ind(" + s + ", " + a.extentText() + ")"
		}
		flat := flatten(n.Target, n.Into.Layout.Strides, n.Into.Layout.Offset, nil)
		writeBody(b, n.Body, len(n.Ranges), 0, indent+"  ")
		b.WriteString(indent + "    -> " + n.Into.Name + "[" + flat.Format(names, ind, false) + "] " + op + " value\n")
	default:
		b.WriteString("?\n")
	}
}

func externOutIndex(e *Extern, b *Buffer) int {
	for k, o := range e.Outs {
		if o == b {
			return k
		}
	}
	return 0
}

func externText(e *Extern) string {
	var parts []string
	for _, a := range e.Args {
		parts = append(parts, externArgText(a))
	}
	for _, kw := range e.Kwargs {
		parts = append(parts, kw.Name+"="+externArgText(kw.Value))
	}
	s := "extern " + e.Target + "(" + strings.Join(parts, ", ") + ")"
	if e.Reason != "extern" {
		s += "  # " + e.Reason
	}
	return s
}

func externArgText(a ExternArg) string {
	switch {
	case a.Buf != nil:
		return a.Buf.Name
	case a.None:
		return "None"
	case a.IsSeq:
		parts := make([]string, len(a.List))
		for i, e := range a.List {
			parts[i] = externArgText(e)
		}
		if a.Tuple {
			if len(parts) == 1 {
				return "(" + parts[0] + ",)"
			}
			return "(" + strings.Join(parts, ", ") + ")"
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	switch v := a.Value.(type) {
	case string:
		return strconv.Quote(v)
	case primtorch.DType:
		return v.TorchName()
	}
	return constText(a.Value)
}

// varNamer names a node's variables: i0.. for the first nI, then r0...
func varNamer(nI int) func(int) string {
	return func(k int) string {
		if k < nI {
			return "i" + strconv.Itoa(k)
		}
		return "r" + strconv.Itoa(k-nI)
	}
}

func writeBody(b *strings.Builder, v *Value, nI, nR int, indent string) {
	names := varNamer(nI)
	var params []string
	for k := 0; k < nI; k++ {
		params = append(params, names(k))
	}
	head := "(" + strings.Join(params, ", ")
	if nR > 0 {
		var rs []string
		for k := 0; k < nR; k++ {
			rs = append(rs, names(nI+k))
		}
		head += "; " + strings.Join(rs, ", ")
	}
	head += ")"
	lets, final := formatValue(v, names)
	for _, l := range lets {
		b.WriteString(indent + l + "\n")
	}
	b.WriteString(indent + head + " -> " + final + "\n")
}

// formatValue prints v with the variables named by names; values used more than once (other
// than constants) become let lines.
func formatValue(v *Value, names func(int) string) (lets []string, final string) {
	uses := map[*Value]int{}
	var countExpr func(e Expr)
	countExpr = func(e Expr) {
		for _, t := range e.Terms {
			switch t.Atom.Kind {
			case AtomDiv, AtomMod:
				countExpr(t.Atom.X)
			case AtomInd:
				uses[t.Atom.Val]++
			}
		}
	}
	walkValues([]*Value{v}, func(x *Value) {
		for _, a := range x.Args {
			uses[a]++
		}
		for _, e := range x.Index {
			countExpr(e)
		}
		countExpr(x.Expr)
	})
	named := map[*Value]string{}
	var str func(x *Value) string
	ind := func(a *Atom) string { return "ind(" + str(a.Val) + ", " + a.extentText() + ")" }
	exprText := func(e Expr) string { return e.Format(names, ind, false) }
	str = func(x *Value) string {
		if n, ok := named[x]; ok {
			return n
		}
		var s string
		switch x.Kind {
		case VConst:
			return pyLiteral(x.DType, x.Num)
		case VLoad:
			s = "load(" + x.Buf.Name + ", " + exprText(flatten(x.Index, x.Buf.Layout.Strides, x.Buf.Layout.Offset, nil)) + ")"
		case VIndex:
			s = "index(" + exprText(x.Expr) + ", " + x.DType.String() + ")"
		case VSize:
			s = "size(" + x.Size.String() + ")"
		case VFloat:
			s = "float_arg(" + strconv.FormatInt(x.Num.I, 10) + ")"
		case VCast:
			s = "convert(" + str(x.Args[0]) + ", " + x.DType.String() + ")"
		case VMasked:
			s = "masked(" + str(x.Args[0]) + ", " + str(x.Args[1]) + ", " + str(x.Args[2]) + ")"
		case VOp:
			parts := make([]string, len(x.Args))
			for i, a := range x.Args {
				parts[i] = str(a)
			}
			s = x.Op + "(" + strings.Join(parts, ", ") + ")"
		}
		if uses[x] > 1 && x != v {
			name := "t" + strconv.Itoa(len(lets))
			lets = append(lets, name+" = "+s)
			named[x] = name
			return name
		}
		return s
	}
	if v != nil {
		final = str(v)
	}
	return lets, final
}
