package fxgraph

import (
	"fmt"
	"strings"
)

// Node names become Python variables in the code torch.fx generates, so they follow torch.fx's
// own naming rules: a name torch.fx would rename (a keyword, a builtin it would shadow, a
// numeric suffix with a leading zero) is never generated here and is rejected by Verify. That
// is what keeps node names identical on the Go side and in the exported GraphModule.

// uniqueName makes a Python identifier from hint that no other node of g uses:
// "relu", "relu_1", "relu_2", ... Names torch.fx reserves are skipped the way torch.fx skips
// them: the first torch.max node is "max_1".
func (g *Graph) uniqueName(hint string) string {
	base := sanitize(hint)
	if g.names == nil {
		g.names = map[string]int{}
	}
	name := base
	for g.nameTaken(name) {
		g.names[base]++
		name = fmt.Sprintf("%s_%d", base, g.names[base])
	}
	g.names[name] = 0
	return name
}

func (g *Graph) nameTaken(name string) bool {
	_, used := g.names[name]
	return used || reservedNames[name]
}

// sanitize turns a target path into a name hint: "torch.nn.functional.relu" → "relu",
// "fc1.weight" → "fc1_weight", "__add__" → "add".
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" {
		out = "v"
	}
	if out[0] >= '0' && out[0] <= '9' {
		out = "_" + out
	}
	if pythonKeywords[out] || zeroPaddedSuffix(out) {
		out += "_"
	}
	return out
}

// zeroPaddedSuffix reports names like "x_01" that torch.fx rewrites ("x_1").
func zeroPaddedSuffix(name string) bool {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	digits := name[i:]
	return i > 0 && name[i-1] == '_' && len(digits) > 1 && digits[0] == '0'
}

// lastComponent is the name hint for a call target: the part after the last dot, dunders trimmed.
func lastComponent(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		target = target[i+1:]
	}
	return strings.Trim(target, "_")
}

// isIdent reports an ASCII Python identifier (keywords included).
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// isDottedIdent reports "a.b.c" where every part is an identifier (a call_function target).
func isDottedIdent(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !isIdent(part) {
			return false
		}
	}
	return true
}

// isAttrPath reports "a.0.b" where every part is an identifier or a decimal index (a get_attr
// target: nn.Sequential children are named "0", "1", ...).
func isAttrPath(s string) bool {
	for part := range strings.SplitSeq(s, ".") {
		if !isIdent(part) && !isDecimal(part) {
			return false
		}
	}
	return true
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// nameProblem says why torch.fx would not keep name as a node name, or "" when it would.
func nameProblem(name string) string {
	switch {
	case !isIdent(name):
		return "is not an ASCII Python identifier"
	case pythonKeywords[name]:
		return "is a Python keyword or reserved by torch.fx"
	case reservedNames[name]:
		return "shadows a Python builtin or a torch.fx global, so torch.fx would rename it"
	case zeroPaddedSuffix(name):
		return "has a zero-padded numeric suffix, which torch.fx rewrites"
	}
	return ""
}

var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true,
	"elif": true, "else": true, "except": true, "finally": true, "for": true, "from": true,
	"global": true, "if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true, "output": true,
}

// reservedNames are the names torch.fx refuses for a node: CPython 3.11's builtins (as
// `builtins.__dict__` holds them with the site module loaded), the globals torch.fx's generated
// code imports, and the module parameter "self".
var reservedNames = func() map[string]bool {
	const names = `ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup
	BlockingIOError BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError
	ConnectionError ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis
	EncodingWarning EnvironmentError Exception ExceptionGroup FileExistsError FileNotFoundError
	FloatingPointError FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError
	IndexError InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError
	ModuleNotFoundError NameError NotADirectoryError NotImplemented NotImplementedError OSError
	OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError
	ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration
	SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError TypeError
	UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError
	UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__
	__doc__ __import__ __loader__ __name__ __package__ __spec__ abs aiter all anext any ascii bin
	bool breakpoint bytearray bytes callable chr classmethod compile complex copyright credits
	delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals
	hasattr hash help hex id input int isinstance issubclass iter len license list locals map max
	memoryview min next object oct open ord pow print property quit range repr reversed round set
	setattr slice sorted staticmethod str sum super tuple type vars zip
	inf nan NoneType torch device fx_pytree pytree self`
	m := map[string]bool{}
	for _, n := range strings.Fields(names) {
		m[n] = true
	}
	return m
}()
