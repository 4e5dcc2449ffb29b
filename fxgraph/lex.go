package fxgraph

import (
	"fmt"
	"strconv"
	"strings"
)

// The scanner of the text form: it cuts the whole text into tokens up front, each with its line,
// column and byte span, so the parser can look ahead freely and can take the raw source between
// two tokens (get_attr paths such as layers.0.1.weight, which do not scan as one token).

type tokKind uint8

const (
	tEOF      tokKind = iota
	tNewline          // end of a line
	tIdent            // relu, torch, f32
	tRef              // %relu (text is the name)
	tInt              // 12 (unsigned; the parser applies a leading "-")
	tFloat            // 1.5, 1e-05
	tString           // "a\n" (text is the unquoted value)
	tComment          // # model.py:12 (text is what follows "#")
	tEllipsis         // ...
	tPunct            // one of ( ) [ ] { } , : = . + - @ !
)

type token struct {
	kind      tokKind
	text      string
	line, col int
	off, end  int // byte span in the source
}

// describe names a token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tNewline:
		return "end of line"
	case tRef:
		return strconv.Quote("%" + t.text)
	case tString:
		return "string " + strconv.Quote(t.text)
	case tComment:
		return "comment"
	}
	return strconv.Quote(t.text)
}

func (t token) is(kind tokKind, text string) bool { return t.kind == kind && t.text == text }

// ParseError is a syntax error in graph text, at a 1-based line and byte column.
type ParseError struct {
	Line, Col int
	Msg       string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("fxgraph: cannot parse graph text at %d:%d: %s; fix the text (Graph.String prints the accepted form)", e.Line, e.Col, e.Msg)
}

// scan cuts src into tokens, ending with tEOF.
func scan(src string) ([]token, error) {
	var toks []token
	line, lineStart := 1, 0
	i := 0
	for i < len(src) {
		c := src[i]
		start := i
		col := i - lineStart + 1
		emit := func(kind tokKind, text string) {
			toks = append(toks, token{kind: kind, text: text, line: line, col: col, off: start, end: i})
		}
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\n':
			i++
			emit(tNewline, "\n")
			line, lineStart = line+1, i
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			emit(tComment, strings.TrimSuffix(src[start+1:i], "\r"))
		case isIdentStart(c):
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			emit(tIdent, src[start:i])
		case c == '%':
			i++
			if i >= len(src) || !isIdentStart(src[i]) {
				return nil, &ParseError{line, col, "expected a node name (an identifier) after %"}
			}
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
			emit(tRef, src[start+1:i])
		case c >= '0' && c <= '9':
			kind := tInt
			i = scanDigits(src, i)
			if i+1 < len(src) && src[i] == '.' && isDigit(src[i+1]) {
				kind = tFloat
				i = scanDigits(src, i+1)
			}
			if j := scanExponent(src, i); j > i {
				kind, i = tFloat, j
			}
			emit(kind, src[start:i])
		case c == '"':
			i++
			for i < len(src) && src[i] != '"' && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] != '\n' {
					i++
				}
				i++
			}
			if i >= len(src) || src[i] != '"' {
				return nil, &ParseError{line, col, "string is not closed before the end of the line"}
			}
			i++
			s, err := strconv.Unquote(src[start:i])
			if err != nil {
				return nil, &ParseError{line, col, fmt.Sprintf("bad string %s (Go escapes: \\n \\\" \\\\ \\u00e9)", src[start:i])}
			}
			emit(tString, s)
		case strings.HasPrefix(src[i:], "..."):
			i += 3
			emit(tEllipsis, "...")
		case strings.IndexByte("()[]{},:=.+-@!", c) >= 0:
			i++
			emit(tPunct, src[start:i])
		default:
			return nil, &ParseError{line, col, fmt.Sprintf("unexpected character %q", rune(c))}
		}
	}
	toks = append(toks, token{kind: tEOF, line: line, col: i - lineStart + 1, off: i, end: i})
	return toks, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

func scanDigits(src string, i int) int {
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	return i
}

// scanExponent returns the end of an exponent ("e-05") at i, or i when there is none.
func scanExponent(src string, i int) int {
	if i >= len(src) || (src[i] != 'e' && src[i] != 'E') {
		return i
	}
	j := i + 1
	if j < len(src) && (src[j] == '+' || src[j] == '-') {
		j++
	}
	if j >= len(src) || !isDigit(src[j]) {
		return i
	}
	return scanDigits(src, j)
}
