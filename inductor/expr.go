package inductor

import (
	"sort"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// Index expressions: the symbolic integers that say where a load reads and a store writes.
//
// An Expr is an affine sum C + Σ Coef·Atom with integer coefficients, kept canonical: terms
// sorted by atom, equal atoms merged, no zero coefficients. An atom is an index variable, a
// floor division x // n or floor modulo x % n of an expression by a positive constant (views and
// reshapes of non-contiguous layouts need them), or an indirect index read from a tensor
// (gather, index_select, advanced indexing). Division and modulo have floor semantics in the IR;
// generated C uses / and %, which agree because every index is non-negative wherever it is
// evaluated (masked branches guard the others).
//
// Simplification uses Bounds, the range of each variable, to drop divisions and modulos that
// cannot matter, and merges the pairs c*(x//c) + x%c → x and c*((x//c)%s) + x%c → x%(c*s), so
// a reshape that only re-groups contiguous dimensions costs nothing.

// AtomKind says what an Atom is.
type AtomKind uint8

const (
	AtomVar AtomKind = iota // index variable Var (times the size symbols Mono, when set)
	AtomDiv                 // X // N (times the size symbols Mono, when set)
	AtomMod                 // X % N (times Mono, when set)
	AtomInd                 // Val (an int64 value) wrapped into [0, N) (or [0, Size)), checked at run time (times Mono)
	AtomSym                 // the product of the size symbols Mono (a symbolic stride or offset)
)

// Atom is an indivisible part of an Expr. Atoms are immutable.
type Atom struct {
	Kind AtomKind
	Var  int
	X    Expr
	N    int64
	Val  *Value
	// Size is an indirect atom's symbolic extent (the indexed dim's size; N is 0 then).
	Size *Sym
	// Mono: size symbol ids, ascending (repeats are powers), of an AtomSym, or the symbolic
	// coefficient of another atom (i0·s1, (i0 // 4)·s1: a stride of a symbolic layout); env is
	// their ShapeEnv.
	Mono []int
	env  *primtorch.ShapeEnv
	key  string
}

func (a *Atom) Key() string { return a.key }

func newAtom(a *Atom) *Atom {
	switch a.Kind {
	case AtomVar:
		a.key = "v" + strconv.Itoa(a.Var)
		if len(a.Mono) > 0 {
			a.key += "*" + monoText(a.Mono)
		}
	case AtomSym:
		a.key = monoText(a.Mono)
	case AtomDiv:
		a.key = "div(" + a.X.Key() + "," + strconv.FormatInt(a.N, 10) + ")"
	case AtomMod:
		a.key = "mod(" + a.X.Key() + "," + strconv.FormatInt(a.N, 10) + ")"
	case AtomInd:
		a.key = "ind(#" + strconv.Itoa(a.Val.ID) + "," + a.extentText() + ")"
	}
	if a.Kind != AtomVar && a.Kind != AtomSym && len(a.Mono) > 0 {
		a.key += "*" + monoText(a.Mono)
	}
	return a
}

// scaledBy reports a division, modulo or indirect atom with a symbolic coefficient (its value
// is not X // N itself: the simplification rules that read X and N do not apply).
func (a *Atom) scaledBy() bool { return a.Kind != AtomVar && a.Kind != AtomSym && len(a.Mono) > 0 }

// plainAtom reports an atom of kind k without a symbolic coefficient.
func (a *Atom) plainAtom(k AtomKind) bool { return a.Kind == k && len(a.Mono) == 0 }

// withMono is a (division, modulo or indirect) atom times the size symbols mono.
func (a *Atom) withMono(mono []int, env *primtorch.ShapeEnv) *Atom {
	return newAtom(&Atom{Kind: a.Kind, Var: a.Var, X: a.X, N: a.N, Val: a.Val, Size: a.Size, Mono: mulMonos(a.Mono, mono), env: env})
}

// extentText is an indirect atom's extent: N, or its symbolic size.
func (a *Atom) extentText() string {
	if a.Size != nil {
		return a.Size.String()
	}
	return strconv.FormatInt(a.N, 10)
}

// ExtentC is an indirect atom's extent in C (a literal or the kernel's size variables).
func (a *Atom) ExtentC() string {
	if a.Size != nil {
		return sizeC(*a.Size)
	}
	return strconv.FormatInt(a.N, 10)
}

// Term is Coef·Atom.
type Term struct {
	Coef int64
	Atom *Atom
}

// Expr is C + Σ Terms. The zero Expr is the constant 0.
type Expr struct {
	C     int64
	Terms []Term
}

// Bounds gives the size of each variable's range: variable k takes values 0..b[k]-1. A variable
// beyond the slice has an unknown range.
type Bounds []int64

// Const is the constant expression c.
func Const(c int64) Expr { return Expr{C: c} }

// Var is index variable k.
func Var(k int) Expr { return atomExpr(newAtom(&Atom{Kind: AtomVar, Var: k})) }

func atomExpr(a *Atom) Expr { return Expr{Terms: []Term{{Coef: 1, Atom: a}}} }

// IsConst reports whether e has no terms.
func (e Expr) IsConst() bool { return len(e.Terms) == 0 }

// IsVar reports whether e is exactly variable k.
func (e Expr) IsVar(k int) bool {
	return e.C == 0 && len(e.Terms) == 1 && e.Terms[0].Coef == 1 && e.Terms[0].Atom.plainVar(k)
}

func (a *Atom) plainVar(k int) bool { return a.Kind == AtomVar && a.Var == k && len(a.Mono) == 0 }

// Key is a canonical string: equal keys mean equal expressions.
func (e Expr) Key() string {
	var b strings.Builder
	b.WriteString(strconv.FormatInt(e.C, 10))
	for _, t := range e.Terms {
		b.WriteString("+" + strconv.FormatInt(t.Coef, 10) + "*" + t.Atom.key)
	}
	return b.String()
}

// Equal reports structural equality.
func (e Expr) Equal(o Expr) bool { return e.Key() == o.Key() }

// Add returns e + o.
func (e Expr) Add(o Expr) Expr {
	return normalize(Expr{C: e.C + o.C, Terms: append(append([]Term(nil), e.Terms...), o.Terms...)}, nil)
}

// AddConst returns e + c.
func (e Expr) AddConst(c int64) Expr { return Expr{C: e.C + c, Terms: e.Terms} }

// Scale returns k·e.
func (e Expr) Scale(k int64) Expr {
	if k == 0 {
		// an indirect index stays, with coefficient 0: its range check must still run
		var out Expr
		for _, t := range e.Terms {
			if t.Atom.hasInd() {
				out.Terms = append(out.Terms, Term{Atom: t.Atom})
			}
		}
		return out
	}
	out := Expr{C: e.C * k, Terms: make([]Term, len(e.Terms))}
	for i, t := range e.Terms {
		out.Terms[i] = Term{Coef: t.Coef * k, Atom: t.Atom}
	}
	return out
}

// Coef returns the coefficient of variable k among e's top-level terms (its constant part: a
// symbolic coefficient counts as a nested use, see UsesVarNested).
func (e Expr) Coef(k int) int64 {
	for _, t := range e.Terms {
		if t.Atom.plainVar(k) {
			return t.Coef
		}
	}
	return 0
}

// Affine reports whether every term of e is a variable (no division, modulo or indirection;
// symbolic coefficients allowed) or a symbolic constant.
func (e Expr) Affine() bool {
	for _, t := range e.Terms {
		if t.Atom.Kind != AtomVar && t.Atom.Kind != AtomSym {
			return false
		}
	}
	return true
}

// UsesVarNested reports whether variable k appears inside a division, modulo or indirect atom,
// or with a symbolic coefficient: anywhere but a plain c·v_k term.
func (e Expr) UsesVarNested(k int) bool { return e.SymbolicCoef(k) || e.usesVarInside(k) }

// SymbolicCoef reports whether variable k appears with a symbolic coefficient (c·s1·v_k: a
// stride of a symbolic layout, a product of sizes that are each at least 2).
func (e Expr) SymbolicCoef(k int) bool {
	for _, t := range e.Terms {
		if t.Atom.Kind == AtomVar && t.Atom.Var == k && len(t.Atom.Mono) > 0 {
			return true
		}
	}
	return false
}

// coefSym is variable k's coefficient among e's top-level terms, symbolic ones included.
func (e Expr) coefSym(k int) Sym {
	c := symc(0)
	for _, t := range e.Terms {
		if t.Atom.Kind != AtomVar || t.Atom.Var != k {
			continue
		}
		if len(t.Atom.Mono) > 0 {
			c = c.Add(monoSym(t.Atom.Mono, t.Atom.env).MulConst(t.Coef))
		} else {
			c = c.Add(symc(t.Coef))
		}
	}
	return c
}

// usesVarInside reports whether variable k appears inside a division, modulo or indirect atom.
func (e Expr) usesVarInside(k int) bool {
	for _, t := range e.Terms {
		switch t.Atom.Kind {
		case AtomDiv, AtomMod:
			if t.Atom.X.UsesVar(k) {
				return true
			}
		case AtomInd:
			if t.Atom.Val.usesVar(k) {
				return true
			}
		}
	}
	return false
}

// hasInd reports whether e has an indirect index (a run-time checked one) anywhere.
func (e Expr) hasInd() bool {
	for _, t := range e.Terms {
		if t.Atom.hasInd() {
			return true
		}
	}
	return false
}

// hasInd reports whether the atom is or holds an indirect index.
func (a *Atom) hasInd() bool {
	switch a.Kind {
	case AtomInd:
		return true
	case AtomDiv, AtomMod:
		return a.X.hasInd()
	}
	return false
}

// UsesVar reports whether variable k appears anywhere in e.
func (e Expr) UsesVar(k int) bool { return e.Coef(k) != 0 || e.UsesVarNested(k) }

func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d != 0 && (a < 0) != (d < 0) {
		q--
	}
	return q
}

func floorMod(a, m int64) int64 { return a - m*floorDiv(a, m) }

// Range returns the smallest and largest value e takes, ok=false when unknown.
func (e Expr) Range(b Bounds) (lo, hi int64, ok bool) {
	lo, hi = e.C, e.C
	for _, t := range e.Terms {
		alo, ahi, aok := t.Atom.rangeOf(b)
		if !aok {
			return 0, 0, false
		}
		if t.Coef >= 0 {
			lo += t.Coef * alo
			hi += t.Coef * ahi
		} else {
			lo += t.Coef * ahi
			hi += t.Coef * alo
		}
	}
	return lo, hi, true
}

func (a *Atom) rangeOf(b Bounds) (lo, hi int64, ok bool) {
	if a.scaledBy() {
		return 0, 0, false // times a size symbol: ≥ 2, no upper bound
	}
	switch a.Kind {
	case AtomSym:
		return 0, 0, false // ≥ 2, no upper bound
	case AtomVar:
		if len(a.Mono) > 0 {
			return 0, 0, false
		}
		if a.Var < len(b) && b[a.Var] > 0 {
			return 0, b[a.Var] - 1, true
		}
		return 0, 0, false
	case AtomDiv:
		xlo, xhi, xok := a.X.Range(b)
		if !xok {
			return 0, 0, false
		}
		return floorDiv(xlo, a.N), floorDiv(xhi, a.N), true
	case AtomMod:
		xlo, xhi, xok := a.X.Range(b)
		if xok && xlo >= 0 && xhi < a.N {
			return xlo, xhi, true
		}
		return 0, a.N - 1, true
	case AtomInd:
		if a.Size != nil {
			return 0, 0, false
		}
		return 0, a.N - 1, true
	}
	return 0, 0, false
}

// normalize sorts and merges terms and applies the div/mod pair rules. b may be nil.
func normalize(e Expr, b Bounds) Expr {
	for {
		e = mergeTerms(e)
		next, changed := mergeDivModPairs(e, b)
		if !changed {
			return e
		}
		e = next
	}
}

func mergeTerms(e Expr) Expr {
	if len(e.Terms) == 0 {
		return Expr{C: e.C}
	}
	ts := append([]Term(nil), e.Terms...)
	sort.SliceStable(ts, func(i, j int) bool { return atomLess(ts[i].Atom, ts[j].Atom) })
	out := ts[:0]
	for _, t := range ts {
		if n := len(out); n > 0 && out[n-1].Atom.key == t.Atom.key {
			out[n-1].Coef += t.Coef
			continue
		}
		out = append(out, t)
	}
	res := Expr{C: e.C}
	for _, t := range out {
		// a term whose coefficient is 0 goes, unless it holds an indirect index: x[idx] along
		// an expanded (stride 0) dim reads the same address for every index, and eager still
		// raises for one out of range (fuzz seed 11463)
		if t.Coef != 0 || t.Atom.hasInd() {
			res.Terms = append(res.Terms, t)
		}
	}
	return res
}

// atomLess orders variables first by index (a plain one before its symbolic multiples), then
// other atoms by key.
func atomLess(a, b *Atom) bool {
	if (a.Kind == AtomVar) != (b.Kind == AtomVar) {
		return a.Kind == AtomVar
	}
	if a.Kind == AtomVar {
		if a.Var != b.Var {
			return a.Var < b.Var
		}
		return a.key < b.key
	}
	return a.key < b.key
}

// mergeDivModPairs applies k·c·(x//c) + k·(x%c) → k·x and k·c·((x//c)%s) + k·(x%c) → k·(x%(c·s)).
func mergeDivModPairs(e Expr, b Bounds) (Expr, bool) {
	for i, t := range e.Terms {
		if t.Atom.Kind != AtomMod {
			continue
		}
		x, c, k, mono := t.Atom.X, t.Atom.N, t.Coef, monoText(t.Atom.Mono)
		for j, u := range e.Terms {
			if j == i || u.Coef != k*c || monoText(u.Atom.Mono) != mono {
				continue
			}
			var repl Expr
			switch {
			case u.Atom.Kind == AtomDiv && u.Atom.N == c && u.Atom.X.Key() == x.Key():
				repl = x.Scale(k)
			case u.Atom.Kind == AtomMod && u.Atom.X.Terms != nil && len(u.Atom.X.Terms) == 1 && u.Atom.X.C == 0 &&
				u.Atom.X.Terms[0].Coef == 1 && u.Atom.X.Terms[0].Atom.plainAtom(AtomDiv) &&
				u.Atom.X.Terms[0].Atom.N == c && u.Atom.X.Terms[0].Atom.X.Key() == x.Key():
				repl = Mod(x, c*u.Atom.N, b).Scale(k)
			default:
				continue
			}
			if len(t.Atom.Mono) > 0 { // k·c·(x//c)·m + k·(x%c)·m → k·x·m
				repl = repl.mulMono(t.Atom.Mono, t.Atom.env)
			}
			rest := Expr{C: e.C + repl.C}
			for m, w := range e.Terms {
				if m != i && m != j {
					rest.Terms = append(rest.Terms, w)
				}
			}
			rest.Terms = append(rest.Terms, repl.Terms...)
			return rest, true
		}
	}
	return e, false
}

// FloorDiv returns x // d (d > 0), simplified under b.
func FloorDiv(x Expr, d int64, b Bounds) Expr {
	if d == 1 {
		return x
	}
	cq := floorDiv(x.C, d)
	q := Expr{C: cq}
	rest := Expr{C: x.C - cq*d}
	for _, t := range x.Terms {
		if t.Coef%d == 0 {
			q.Terms = append(q.Terms, Term{Coef: t.Coef / d, Atom: t.Atom})
		} else {
			rest.Terms = append(rest.Terms, t)
		}
	}
	q = normalize(q, b)
	if len(rest.Terms) == 0 {
		return q.AddConst(floorDiv(rest.C, d))
	}
	if lo, hi, ok := rest.Range(b); ok && floorDiv(lo, d) == floorDiv(hi, d) {
		return q.AddConst(floorDiv(lo, d))
	}
	if rest.C == 0 && len(rest.Terms) == 1 && rest.Terms[0].Coef == 1 && rest.Terms[0].Atom.plainAtom(AtomDiv) {
		inner := rest.Terms[0].Atom
		return q.Add(FloorDiv(inner.X, inner.N*d, b))
	}
	// (x % (k·d)) // d = (x // d) % k
	if rest.C == 0 && len(rest.Terms) == 1 && rest.Terms[0].Coef == 1 && rest.Terms[0].Atom.plainAtom(AtomMod) && rest.Terms[0].Atom.N%d == 0 {
		inner := rest.Terms[0].Atom
		return q.Add(Mod(FloorDiv(inner.X, d, b), inner.N/d, b))
	}
	return normalize(q.Add(atomExpr(newAtom(&Atom{Kind: AtomDiv, X: rest, N: d}))), b)
}

// Mod returns x % m (m > 0), simplified under b.
func Mod(x Expr, m int64, b Bounds) Expr {
	if m == 1 {
		return Expr{}
	}
	rest := Expr{C: floorMod(x.C, m)}
	for _, t := range x.Terms {
		if t.Coef%m != 0 {
			rest.Terms = append(rest.Terms, t)
		}
	}
	if len(rest.Terms) == 0 {
		return rest
	}
	if lo, hi, ok := rest.Range(b); ok && floorDiv(lo, m) == floorDiv(hi, m) {
		return rest.AddConst(-m * floorDiv(lo, m))
	}
	if rest.C == 0 && len(rest.Terms) == 1 && rest.Terms[0].Coef == 1 && rest.Terms[0].Atom.plainAtom(AtomMod) && rest.Terms[0].Atom.N%m == 0 {
		return Mod(rest.Terms[0].Atom.X, m, b)
	}
	return atomExpr(newAtom(&Atom{Kind: AtomMod, X: rest, N: m}))
}

// Ind is the indirect index v (an int64 value) for a dimension of size n: negative values count
// from the end, and a value outside [-n, n) makes the kernel return status 1.
func Ind(v *Value, n int64) Expr { return atomExpr(newAtom(&Atom{Kind: AtomInd, Val: v, N: n})) }

// IndSym is Ind for a dimension whose size may be a size symbol.
func IndSym(v *Value, n Sym) Expr {
	if k, ok := n.IsConst(); ok {
		return Ind(v, k)
	}
	return atomExpr(newAtom(&Atom{Kind: AtomInd, Val: v, Size: &n}))
}

// extent is an indirect atom's extent as a size.
func (a *Atom) extent() Sym {
	if a.Size != nil {
		return *a.Size
	}
	return symc(a.N)
}

// Subst replaces variable k by f(k) everywhere (inside atoms too) and simplifies under b, the
// bounds of the new variables. vs rebuilds values inside indirect atoms.
func (e Expr) Subst(f func(k int) Expr, b Bounds, vs *valueSubst) Expr {
	out := Expr{C: e.C}
	for _, t := range e.Terms {
		var r Expr
		switch t.Atom.Kind {
		case AtomVar:
			r = f(t.Atom.Var)
			if len(t.Atom.Mono) > 0 {
				r = r.mulMono(t.Atom.Mono, t.Atom.env)
			}
		case AtomSym:
			r = atomExpr(t.Atom)
		case AtomDiv:
			r = FloorDiv(t.Atom.X.Subst(f, b, vs), t.Atom.N, b)
		case AtomMod:
			r = Mod(t.Atom.X.Subst(f, b, vs), t.Atom.N, b)
		case AtomInd:
			r = IndSym(vs.value(t.Atom.Val), t.Atom.extent())
		}
		if t.Atom.scaledBy() {
			r = r.mulMono(t.Atom.Mono, t.Atom.env)
		}
		r = r.Scale(t.Coef)
		out.C += r.C
		out.Terms = append(out.Terms, r.Terms...)
	}
	return normalize(out, b)
}

// Simplify re-simplifies e under b.
func (e Expr) Simplify(b Bounds) Expr { return e.Subst(Var, b, nil) }

// Format prints e: names names variables, ind prints an indirect atom's value.
func (e Expr) Format(names func(int) string, ind func(*Atom) string, cStyle bool) string {
	var b strings.Builder
	first := true
	for _, t := range e.Terms {
		coef := t.Coef
		if !first {
			if coef < 0 {
				b.WriteString(" - ")
				coef = -coef
			} else {
				b.WriteString(" + ")
			}
		} else if coef < 0 {
			b.WriteString("-")
			coef = -coef
		}
		first = false
		if coef != 1 {
			b.WriteString(strconv.FormatInt(coef, 10) + "*")
		}
		b.WriteString(t.Atom.format(names, ind, cStyle))
	}
	if first {
		return strconv.FormatInt(e.C, 10)
	}
	if e.C > 0 {
		b.WriteString(" + " + strconv.FormatInt(e.C, 10))
	} else if e.C < 0 {
		b.WriteString(" - " + strconv.FormatInt(-e.C, 10))
	}
	return b.String()
}

func (a *Atom) monoSuffix(cStyle bool) string {
	if len(a.Mono) == 0 {
		return ""
	}
	return "*" + monoFormat(a.Mono, cStyle)
}

func (a *Atom) format(names func(int) string, ind func(*Atom) string, cStyle bool) string {
	switch a.Kind {
	case AtomVar:
		if len(a.Mono) > 0 {
			return names(a.Var) + "*" + monoFormat(a.Mono, cStyle)
		}
		return names(a.Var)
	case AtomSym:
		return monoFormat(a.Mono, cStyle)
	case AtomDiv, AtomMod:
		x := a.X.Format(names, ind, cStyle)
		if len(a.X.Terms) > 1 || a.X.C != 0 || (len(a.X.Terms) == 1 && a.X.Terms[0].Coef != 1) {
			x = "(" + x + ")"
		}
		op := " // "
		if a.Kind == AtomMod {
			op = " % "
		} else if cStyle {
			op = " / "
		}
		return "(" + x + op + strconv.FormatInt(a.N, 10) + ")" + a.monoSuffix(cStyle)
	case AtomInd:
		return ind(a) + a.monoSuffix(cStyle)
	}
	return "?"
}

// String prints e with variables named v0, v1, ...
func (e Expr) String() string {
	return e.Format(func(k int) string { return "v" + strconv.Itoa(k) }, func(a *Atom) string { return "ind(#" + strconv.Itoa(a.Val.ID) + ")" }, false)
}

// flatten returns the storage index of a logical index under strides and offset, simplified
// under b. A symbolic stride or offset makes symbolic terms (i·s1, s1).
func flatten(idx []Expr, strides []Sym, offset Sym, b Bounds) Expr {
	out := symExpr(offset)
	for k, e := range idx {
		st, static := strides[k].IsConst()
		if static && st == 0 && !e.hasInd() {
			continue
		}
		var s Expr
		if static {
			s = e.Scale(st)
		} else {
			s = e.mulSym(strides[k])
		}
		out.C += s.C
		out.Terms = append(out.Terms, s.Terms...)
	}
	return normalize(out, b)
}

func monoText(m []int) string {
	parts := make([]string, len(m))
	for i, id := range m {
		parts[i] = "s" + strconv.Itoa(id)
	}
	return strings.Join(parts, "*")
}

// monoFormat prints a monomial: s0*s1, or in C the kernel's variables (symC).
func monoFormat(m []int, cStyle bool) string {
	if !cStyle {
		return monoText(m)
	}
	parts := make([]string, len(m))
	for i, id := range m {
		parts[i] = symC(id)
	}
	return strings.Join(parts, "*")
}

func mulMonos(a, b []int) []int {
	out := append(append([]int(nil), a...), b...)
	sort.Ints(out)
	return out
}

// mulMono returns e·Π mono.
func (e Expr) mulMono(mono []int, env *primtorch.ShapeEnv) Expr {
	out := Expr{}
	if e.C != 0 {
		out.Terms = append(out.Terms, Term{Coef: e.C, Atom: newAtom(&Atom{Kind: AtomSym, Mono: append([]int(nil), mono...), env: env})})
	}
	for _, t := range e.Terms {
		var a *Atom
		switch t.Atom.Kind {
		case AtomVar:
			a = newAtom(&Atom{Kind: AtomVar, Var: t.Atom.Var, Mono: mulMonos(t.Atom.Mono, mono), env: env})
		case AtomSym:
			a = newAtom(&Atom{Kind: AtomSym, Mono: mulMonos(t.Atom.Mono, mono), env: env})
		default:
			a = t.Atom.withMono(mono, env)
		}
		out.Terms = append(out.Terms, Term{Coef: t.Coef, Atom: a})
	}
	return normalize(out, nil)
}

// mulSym returns e·s for a size expression s.
func (e Expr) mulSym(s Sym) Expr {
	c, terms := symTerms(s)
	out := e.Scale(c)
	for _, t := range terms {
		m := e.mulMono(t.mono, s.Env()).Scale(t.coef)
		out.C += m.C
		out.Terms = append(out.Terms, m.Terms...)
	}
	return normalize(out, nil)
}

// symExpr is a size expression as an index expression (symbolic terms are AtomSym).
func symExpr(s Sym) Expr {
	c, terms := symTerms(s)
	out := Expr{C: c}
	for _, t := range terms {
		out.Terms = append(out.Terms, Term{Coef: t.coef, Atom: newAtom(&Atom{Kind: AtomSym, Mono: t.mono, env: s.Env()})})
	}
	return normalize(out, nil)
}

// SymCoef is the coefficient of variable k in an affine e, symbolic terms included.
func (e Expr) SymCoef(k int) Sym {
	out := symc(0)
	for _, t := range e.Terms {
		if t.Atom.Kind == AtomVar && t.Atom.Var == k {
			out = out.Add(monoSym(t.Atom.Mono, t.Atom.env).MulConst(t.Coef))
		}
	}
	return out
}

// SymConst is e's part without variables: the constant and the symbolic terms.
func (e Expr) SymConst() Sym {
	out := symc(e.C)
	for _, t := range e.Terms {
		if t.Atom.Kind == AtomSym {
			out = out.Add(monoSym(t.Atom.Mono, t.Atom.env).MulConst(t.Coef))
		}
	}
	return out
}

func monoSym(mono []int, env *primtorch.ShapeEnv) Sym {
	out := symc(1)
	for _, id := range mono {
		out = out.Mul(env.Symbol(id))
	}
	return out
}

// exprSymbols adds the size symbols e mentions to seen.
func exprSymbols(e Expr, add func(id int)) {
	for _, t := range e.Terms {
		for _, id := range t.Atom.Mono {
			add(id)
		}
		if t.Atom.Kind == AtomDiv || t.Atom.Kind == AtomMod {
			exprSymbols(t.Atom.X, add)
		}
		if t.Atom.Size != nil {
			for _, id := range t.Atom.Size.Symbols() {
				add(id)
			}
		}
	}
}
