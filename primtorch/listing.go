package primtorch

import (
	"fmt"
	"strings"
)

// Flags lists an op's properties as short words, for listings.
func (op *Op) Flags() []string {
	var f []string
	add := func(b bool, s string) {
		if b {
			f = append(f, s)
		}
	}
	add(op.Random, "random")
	add(op.NonDifferentiable, "nondiff")
	add(op.NumbersAsTensors, "numbers")
	add(op.AcceptsOut, "out=")
	add(op.DataDependent, "data-dependent")
	add(op.Functional != nil, "inplace-of:"+nameOf(op.Functional))
	add(len(op.Mutates) > 0, "mutates:"+strings.Join(op.mutatedNames(), ","))
	if len(op.overloads) > 1 {
		f = append(f, fmt.Sprintf("overload %d/%d", indexOf(op.overloads, op)+1, len(op.overloads)))
	}
	return f
}

func nameOf(op *Op) string {
	if op == nil {
		return ""
	}
	return op.Name
}

func indexOf(ops []*Op, op *Op) int {
	for i, o := range ops {
		if o == op {
			return i
		}
	}
	return -1
}

func (op *Op) mutatedNames() []string {
	var out []string
	for _, i := range op.Mutates {
		out = append(out, op.Schema.Params[i].Canon)
	}
	return out
}

// Status is "ok", "data-dependent" or "partial: <note>": how far Meta covers the op.
func (op *Op) Status() string {
	switch {
	case op.DataDependent:
		return "data-dependent"
	case op.Note != "":
		return "partial: " + op.Note
	}
	return "ok"
}

// decompStatus is set by package primtorch/decomp (SetDecompStatus) when it is linked in.
var decompStatus func(*Op) string

// SetDecompStatus installs the function DecompStatus reports; package primtorch/decomp calls it
// from its init, so the registry can list decomposition status without importing decomp.
func SetDecompStatus(f func(*Op) string) { decompStatus = f }

// DecompStatus says how the decomposition stage treats the op: "decomposed" (into core ops),
// "fallback" (kept as a prims.fallback call run by torch), "n/a" (a core op itself), or
// "unknown" when package primtorch/decomp is not linked into the program.
func (op *Op) DecompStatus() string {
	if op.IsPrim() {
		return "n/a"
	}
	if decompStatus == nil {
		return "unknown"
	}
	return decompStatus(op)
}

// Listing prints every op, sorted by name: a line with name, kind, type promotion, aliasing,
// flags, meta status and decomposition status, then its signatures (other ones after "|", with the targets that alone use
// them) and its targets.
func Listing() string {
	var b strings.Builder
	for _, op := range Ops() {
		alias := op.Alias.String()
		if op.Alias != AliasNone {
			alias += "(" + op.Schema.Params[op.AliasArg].Canon + ")"
		}
		fmt.Fprintf(&b, "%s  kind=%s promotion=%s alias=%s", op.Name, op.Kind, op.Promotion, alias)
		if f := op.Flags(); len(f) > 0 {
			fmt.Fprintf(&b, " flags=%s", strings.Join(f, ","))
		}
		fmt.Fprintf(&b, " status=%q decomp=%s\n", op.Status(), op.DecompStatus())
		fmt.Fprintf(&b, "    %s\n", op.Schema.Text)
		for _, s := range op.Sigs[1:] {
			if ts := op.sigTargets[s]; len(ts) > 0 {
				fmt.Fprintf(&b, "    | %s  (only %s)\n", s.Text, strings.Join(ts, " "))
				continue
			}
			fmt.Fprintf(&b, "    | %s\n", s.Text)
		}
		fmt.Fprintf(&b, "    targets: %s\n", strings.Join(op.Targets, " "))
	}
	return b.String()
}
