package primtorch

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Symbolic sizes (dynamic shapes).
//
// A SymInt is an integer that may depend on size symbols s0, s1, …: a polynomial
// C + Σ coef·Π s_i with int64 coefficients, kept canonical (terms sorted, equal monomials merged,
// no zero coefficients), so equal polynomials have equal keys. A SymInt with no terms is a plain
// constant. Every symbol belongs to a ShapeEnv, which holds its value at trace time (the hint)
// and the guards the trace assumed about symbols; a symbolic SymInt carries its env, so a
// comparison anywhere (a meta function's broadcast check, a Python branch on x.size(0)) records
// its guard in the right env without plumbing.
//
// A TensorMeta with symbolic sizes keeps the hint values in Shape, Strides and Offset (so every
// consumer that reads them sees a consistent concrete tensor) and the symbolic layout in Sym.
// Op.MetaArgs is the one gate: an op whose meta function is not symbolic (the registry row has
// symMeta) gets its symbolic arguments specialised — each symbol they mention is guarded equal
// to its hint and replaced by it — so a meta function written for concrete sizes never sees a
// symbol and never returns a result that is silently wrong at another size.

// SymInt is an integer polynomial over size symbols. The zero SymInt is the constant 0.
type SymInt struct {
	c     int64
	terms []symTerm
	env   *ShapeEnv
}

type symTerm struct {
	coef int64
	syms []int // symbol ids, ascending; repeats are powers
}

// SymConst is the constant c.
func SymConst(c int64) SymInt { return SymInt{c: c} }

// IsConst reports whether s has no symbols, and its value.
func (s SymInt) IsConst() (int64, bool) { return s.c, len(s.terms) == 0 }

// Env is the ShapeEnv of s's symbols (nil for a constant).
func (s SymInt) Env() *ShapeEnv { return s.env }

// Hint is s's value at trace time.
func (s SymInt) Hint() int64 {
	if len(s.terms) == 0 {
		return s.c
	}
	return s.Eval(s.env.hintsSnapshot())
}

// Eval is s's value for the symbol values vals (indexed by symbol id).
func (s SymInt) Eval(vals []int64) int64 {
	v := s.c
	for _, t := range s.terms {
		p := t.coef
		for _, id := range t.syms {
			p *= vals[id]
		}
		v += p
	}
	return v
}

// Symbols lists the symbol ids s mentions, ascending, without repeats.
func (s SymInt) Symbols() []int {
	var out []int
	seen := map[int]bool{}
	for _, t := range s.terms {
		for _, id := range t.syms {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	sort.Ints(out)
	return out
}

// Linear reports whether s is coef·s_id + c for one symbol (coef ≠ 0), and its parts.
func (s SymInt) Linear() (id int, coef, c int64, ok bool) {
	if len(s.terms) != 1 || len(s.terms[0].syms) != 1 {
		return 0, 0, 0, false
	}
	return s.terms[0].syms[0], s.terms[0].coef, s.c, true
}

func monoKey(syms []int) string {
	var b strings.Builder
	for i, id := range syms {
		if i > 0 {
			b.WriteByte('*')
		}
		b.WriteString("s" + strconv.Itoa(id))
	}
	return b.String()
}

func pickEnv(a, b *ShapeEnv) *ShapeEnv {
	if a != nil {
		return a
	}
	return b
}

func normSym(c int64, terms []symTerm, env *ShapeEnv) SymInt {
	sort.SliceStable(terms, func(i, j int) bool { return monoLess(terms[i].syms, terms[j].syms) })
	out := terms[:0:0]
	for _, t := range terms {
		if n := len(out); n > 0 && monoKey(out[n-1].syms) == monoKey(t.syms) {
			out[n-1].coef += t.coef
			continue
		}
		out = append(out, t)
	}
	kept := out[:0]
	for _, t := range out {
		if t.coef != 0 {
			kept = append(kept, t)
		}
	}
	if len(kept) == 0 {
		return SymInt{c: c}
	}
	return SymInt{c: c, terms: kept, env: env}
}

func monoLess(a, b []int) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Add returns s + o.
func (s SymInt) Add(o SymInt) SymInt {
	return normSym(s.c+o.c, append(append([]symTerm(nil), s.terms...), o.terms...), pickEnv(s.env, o.env))
}

// AddConst returns s + c.
func (s SymInt) AddConst(c int64) SymInt { return SymInt{c: s.c + c, terms: s.terms, env: s.env} }

// Neg returns -s.
func (s SymInt) Neg() SymInt { return s.MulConst(-1) }

// Sub returns s - o.
func (s SymInt) Sub(o SymInt) SymInt { return s.Add(o.Neg()) }

// MulConst returns k·s.
func (s SymInt) MulConst(k int64) SymInt {
	if k == 0 {
		return SymInt{}
	}
	ts := make([]symTerm, len(s.terms))
	for i, t := range s.terms {
		ts[i] = symTerm{coef: t.coef * k, syms: t.syms}
	}
	return SymInt{c: s.c * k, terms: ts, env: s.env}
}

// Mul returns s·o.
func (s SymInt) Mul(o SymInt) SymInt {
	if k, ok := o.IsConst(); ok {
		return s.MulConst(k)
	}
	if k, ok := s.IsConst(); ok {
		return o.MulConst(k)
	}
	var ts []symTerm
	for _, a := range append([]symTerm{{coef: s.c}}, s.terms...) {
		for _, b := range append([]symTerm{{coef: o.c}}, o.terms...) {
			if a.coef == 0 || b.coef == 0 {
				continue
			}
			syms := append(append([]int(nil), a.syms...), b.syms...)
			sort.Ints(syms)
			ts = append(ts, symTerm{coef: a.coef * b.coef, syms: syms})
		}
	}
	c := int64(0)
	rest := ts[:0]
	for _, t := range ts {
		if len(t.syms) == 0 {
			c += t.coef
		} else {
			rest = append(rest, t)
		}
	}
	return normSym(c, rest, pickEnv(s.env, o.env))
}

// FloorDivConst returns s // n for a positive n when it is again a polynomial: every term's
// coefficient is a multiple of n (the constant part may be anything).
func (s SymInt) FloorDivConst(n int64) (SymInt, bool) {
	if n <= 0 {
		return SymInt{}, false
	}
	ts := make([]symTerm, len(s.terms))
	for i, t := range s.terms {
		if t.coef%n != 0 {
			return SymInt{}, false
		}
		ts[i] = symTerm{coef: t.coef / n, syms: t.syms}
	}
	return normSym(floorDiv(s.c, n), ts, s.env), true
}

// FloorDiv returns s // n for a positive n: a polynomial when FloorDivConst gives one, otherwise
// the polynomial part plus a derived symbol floor(r / n) of the rest (torch's FloorDiv): with
// every coefficient of s written as n·a + b (0 ≤ b < n), s // n = Σ a·term + floor(Σ b·term / n),
// so equal remainders share one symbol. n ≤ 0 reports false.
func (s SymInt) FloorDiv(n int64) (SymInt, bool) {
	if q, ok := s.FloorDivConst(n); ok {
		return q, true
	}
	if n <= 0 {
		return SymInt{}, false
	}
	whole := SymConst(floorDiv(s.c, n))
	rest := SymConst(s.c - floorDiv(s.c, n)*n)
	for _, t := range s.terms {
		a := floorDiv(t.coef, n)
		whole = whole.Add(SymInt{terms: []symTerm{{coef: a, syms: t.syms}}, env: s.env})
		rest = rest.Add(SymInt{terms: []symTerm{{coef: t.coef - a*n, syms: t.syms}}, env: s.env})
	}
	whole = normSym(whole.c, whole.terms, s.env)
	rest = normSym(rest.c, rest.terms, s.env)
	if k, ok := rest.IsConst(); ok {
		return whole.AddConst(floorDiv(k, n)), true
	}
	return whole.Add(s.env.derivedSymbol(SymDef{Num: rest, Div: n})), true
}

// Mod returns s % n (Python's modulo) for a positive n: s - n·(s // n).
func (s SymInt) Mod(n int64) (SymInt, bool) {
	q, ok := s.FloorDiv(n)
	if !ok {
		return SymInt{}, false
	}
	return s.Sub(q.MulConst(n)), true
}

// SymDef defines a derived symbol: floor(Num / Div), Num a polynomial in earlier symbols with
// coefficients in [0, Div), Div > 1. Its value is computed from theirs wherever they are known
// (the guards, the runtime, a backward's saved sizes); it is never read from an input.
type SymDef struct {
	Num SymInt
	Div int64
}

func (d SymDef) key() string { return d.Num.Key() + " // " + strconv.FormatInt(d.Div, 10) }

// String is "(s0 + 1)//2".
func (d SymDef) String() string {
	if len(d.Num.terms) == 1 && d.Num.c == 0 && d.Num.terms[0].coef == 1 {
		return d.Num.String() + "//" + strconv.FormatInt(d.Div, 10)
	}
	return "(" + d.Num.String() + ")//" + strconv.FormatInt(d.Div, 10)
}

// derivedSymbol is the symbol defined by d, made on first use. Like a symbol read from an input
// it stands for a size ≥ 2, which a guard checks: at a hint of 0 or 1 it is specialised (as
// torch specialises sizes 0 and 1), so every rule that knows symbols are ≥ 2 holds for it.
func (e *ShapeEnv) derivedSymbol(d SymDef) SymInt {
	k := d.key()
	e.mu.Lock()
	id, ok := e.derivedOf[k]
	e.mu.Unlock()
	if !ok {
		hint := floorDiv(d.Num.Hint(), d.Div)
		s := e.NewSymbol(hint, d.String())
		id, _, _, _ = s.Linear()
		e.mu.Lock()
		e.derived[id] = d
		e.derivedOf[k] = id
		why := e.Why
		e.mu.Unlock()
		if why == "" {
			why = "a floor division of sizes"
		}
		if hint < 2 {
			e.Specialize(id, why+" that is "+strconv.FormatInt(hint, 10))
		} else {
			e.addGuard(SymGuard{Left: s, Right: SymConst(2), Rel: RelGe, Why: why})
		}
	}
	if e.IsSpecialized(id) {
		return SymConst(e.HintOf(id))
	}
	return e.Symbol(id)
}

// DefineSymbol makes symbol id (made by NewSymbol) a derived one (decoding a graph).
func (e *ShapeEnv) DefineSymbol(id int, d SymDef) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.derived[id] = d
	e.derivedOf[d.key()] = id
}

// Derived is symbol id's definition, if it is a derived symbol.
func (e *ShapeEnv) Derived(id int) (SymDef, bool) {
	if e == nil {
		return SymDef{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d, ok := e.derived[id]
	return d, ok
}

// FillDerived sets the values of the derived symbols in vals (by id) from the symbols they are
// defined by (a specialised symbol counts as its hint).
func (e *ShapeEnv) FillDerived(vals []int64) {
	if e == nil {
		return
	}
	e.mu.Lock()
	n := len(e.derived)
	e.mu.Unlock()
	if n == 0 {
		return
	}
	for id := range vals {
		if d, ok := e.Derived(id); ok {
			vals[id] = floorDiv(d.Num.Resolve().Eval(vals), d.Div)
		}
	}
}

// derivedConst is the value of derived symbol id when the symbols it is defined by were all
// specialised.
func (e *ShapeEnv) derivedConst(id int) (int64, bool) {
	d, ok := e.Derived(id)
	if !ok {
		return 0, false
	}
	if k, ok := d.Num.Resolve().IsConst(); ok {
		return floorDiv(k, d.Div), true
	}
	return 0, false
}

// floorDivLowerBound is a polynomial ≤ p for every value of the symbols, without the derived
// symbols p has alone in a term with a coefficient m·k that is a multiple of their divisor k:
// q = floor(N / k) gives N - k + 1 ≤ k·q ≤ N, so m·k·q ≥ m·N for m < 0 and ≥ m·(N - k + 1)
// for m > 0 (s - 3·(s // 3), which is s % 3, is ≥ 0).
func (e *ShapeEnv) floorDivLowerBound(p SymInt) SymInt {
	if e == nil {
		return p
	}
	for range 8 {
		changed := false
		for _, t := range p.terms {
			if len(t.syms) != 1 {
				continue
			}
			d, ok := e.Derived(t.syms[0])
			if !ok || t.coef%d.Div != 0 {
				continue
			}
			m := t.coef / d.Div
			bound := d.Num
			if m > 0 {
				bound = bound.AddConst(1 - d.Div)
			}
			p = p.Sub(SymInt{terms: []symTerm{t}, env: e}).Add(bound.MulConst(m))
			changed = true
			break
		}
		if !changed {
			break
		}
	}
	return p
}

// LowerBound is the least value symbol id takes wherever the guards hold: 2, as for every size
// symbol, or more where a floor division of it is guarded: q = floor((a·s + b) / k) specialised
// at c (s // 3 == 1 at a first size of 4) or guarded ≥ 2 gives a·s + b ≥ q·k, so s ≥ 3 for
// s // 3 == 1, and x[:, s % 3:] (a slice from s - 3) provably starts in range.
func (e *ShapeEnv) LowerBound(id int) int64 {
	lb := int64(2)
	if e == nil {
		return lb
	}
	e.mu.Lock()
	defs := make(map[int]SymDef, len(e.derived))
	for did, d := range e.derived {
		defs[did] = d
	}
	e.mu.Unlock()
	for did, d := range defs {
		sym, a, b, ok := d.Num.Linear()
		if !ok || sym != id || a <= 0 {
			continue
		}
		q := int64(2)
		if e.IsSpecialized(did) {
			q = e.HintOf(did)
		}
		if need := -floorDiv(b-q*d.Div, a); need > lb { // ceil((q·k - b) / a)
			lb = need
		}
	}
	return lb
}

// ModConst returns s % n (Python's modulo) when every term's coefficient is a multiple of n.
func (s SymInt) ModConst(n int64) (int64, bool) {
	if n <= 0 {
		return 0, false
	}
	for _, t := range s.terms {
		if t.coef%n != 0 {
			return 0, false
		}
	}
	return s.c - floorDiv(s.c, n)*n, true
}

// DivExact returns s / o when o divides s as polynomials with an exact quotient (o a constant
// dividing every coefficient, or o a monomial factor of every term and the constant zero).
func (s SymInt) DivExact(o SymInt) (SymInt, bool) {
	if k, ok := o.IsConst(); ok {
		if k == 0 {
			return SymInt{}, false
		}
		if s.c%k != 0 {
			return SymInt{}, false
		}
		q, ok := s.FloorDivConst(abs64(k))
		if !ok {
			return SymInt{}, false
		}
		if k < 0 {
			q = q.Neg()
		}
		return q, true
	}
	// s a constant multiple of o: 2*s0 - 2 = 2 * (s0 - 1) (a stepped pooling's window rows)
	if len(o.terms) > 0 && len(s.terms) == len(o.terms) {
		for _, t := range s.terms {
			if slices.Equal(t.syms, o.terms[0].syms) {
				if t.coef%o.terms[0].coef == 0 {
					k := t.coef / o.terms[0].coef
					if s.Equal(o.MulConst(k)) {
						return SymConst(k), true
					}
				}
				break
			}
		}
	}
	if len(o.terms) != 1 || o.c != 0 || s.c != 0 {
		return SymInt{}, false
	}
	d := o.terms[0]
	var ts []symTerm
	for _, t := range s.terms {
		rest, ok := removeMono(t.syms, d.syms)
		if !ok || t.coef%d.coef != 0 {
			return SymInt{}, false
		}
		ts = append(ts, symTerm{coef: t.coef / d.coef, syms: rest})
	}
	c := int64(0)
	kept := ts[:0]
	for _, t := range ts {
		if len(t.syms) == 0 {
			c += t.coef
		} else {
			kept = append(kept, t)
		}
	}
	return normSym(c, kept, pickEnv(s.env, o.env)), true
}

func removeMono(syms, d []int) ([]int, bool) {
	out := append([]int(nil), syms...)
	for _, id := range d {
		k := -1
		for i, x := range out {
			if x == id {
				k = i
				break
			}
		}
		if k < 0 {
			return nil, false
		}
		out = append(out[:k], out[k+1:]...)
	}
	return out, true
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Equal reports whether s and o are the same polynomial.
func (s SymInt) Equal(o SymInt) bool { return s.Key() == o.Key() }

// Key is a canonical string: equal keys mean equal polynomials.
func (s SymInt) Key() string { return s.String() }

// String prints torch's way: "4*s0*s1 + s2 + 3", "s0 - 1", "8".
func (s SymInt) String() string {
	if len(s.terms) == 0 {
		return strconv.FormatInt(s.c, 10)
	}
	var b strings.Builder
	for i, t := range s.terms {
		coef := t.coef
		switch {
		case i == 0 && coef < 0:
			b.WriteString("-")
			coef = -coef
		case i > 0 && coef < 0:
			b.WriteString(" - ")
			coef = -coef
		case i > 0:
			b.WriteString(" + ")
		}
		if coef != 1 {
			b.WriteString(strconv.FormatInt(coef, 10) + "*")
		}
		b.WriteString(monoKey(t.syms))
	}
	switch {
	case s.c > 0:
		b.WriteString(" + " + strconv.FormatInt(s.c, 10))
	case s.c < 0:
		b.WriteString(" - " + strconv.FormatInt(-s.c, 10))
	}
	return b.String()
}

// ParseSymInt parses String's form over env's symbols ("s0", "4*s0*s1 + 2"). Symbols the env
// does not have yet are an error.
func ParseSymInt(text string, env *ShapeEnv) (SymInt, error) {
	t := strings.ReplaceAll(strings.TrimSpace(text), " ", "")
	if t == "" {
		return SymInt{}, fmt.Errorf("empty size expression")
	}
	var out SymInt
	i := 0
	for i < len(t) {
		sign := int64(1)
		switch t[i] {
		case '+':
			i++
		case '-':
			sign = -1
			i++
		}
		j := i
		for j < len(t) && t[j] != '+' && t[j] != '-' {
			j++
		}
		term := t[i:j]
		if term == "" {
			return SymInt{}, fmt.Errorf("bad size expression %q", text)
		}
		v := SymConst(sign)
		for _, f := range strings.Split(term, "*") {
			if strings.HasPrefix(f, "s") {
				id, err := strconv.Atoi(f[1:])
				if err != nil || env == nil || id < 0 || id >= env.NumSymbols() {
					return SymInt{}, fmt.Errorf("unknown size symbol %q in %q", f, text)
				}
				v = v.Mul(env.Symbol(id))
				continue
			}
			k, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return SymInt{}, fmt.Errorf("bad size expression %q", text)
			}
			v = v.MulConst(k)
		}
		out = out.Add(v)
		i = j
	}
	return out, nil
}

// Rel is a relation a guard asserts of an expression against zero.
type Rel uint8

const (
	RelEq Rel = iota // e == 0
	RelNe            // e != 0
	RelGe            // e >= 0
	RelGt            // e > 0
)

var relNames = [...]string{"==", "!=", ">=", ">"}

func (r Rel) String() string { return relNames[r] }

// SymGuard asserts Left Rel Right of the symbols' values; Why says which trace decision needed
// it (a user file:line, or the op whose meta compared sizes).
type SymGuard struct {
	Left, Right SymInt
	Rel         Rel
	Why         string
}

func (g SymGuard) String() string {
	return g.Left.String() + " " + g.Rel.String() + " " + g.Right.String()
}

// key is the same for guards that say the same: a >= b and a - b >= 0, a > b and a >= b + 1,
// a == b and b == a.
func (g SymGuard) key() string {
	d, rel := g.Left.Sub(g.Right), g.Rel
	if rel == RelGt {
		d, rel = d.AddConst(-1), RelGe
	}
	if (rel == RelEq || rel == RelNe) && len(d.terms) > 0 && d.terms[0].coef < 0 {
		d = d.Neg()
	}
	return rel.String() + " " + d.String()
}

// Holds reports whether the guard holds for symbol values vals.
func (g SymGuard) Holds(vals []int64) bool {
	d := g.Left.Eval(vals) - g.Right.Eval(vals)
	switch g.Rel {
	case RelEq:
		return d == 0
	case RelNe:
		return d != 0
	case RelGe:
		return d >= 0
	default:
		return d > 0
	}
}

// ShapeEnv holds one trace's size symbols: each symbol's hint (its value at trace time) and
// source (where the runtime reads it, "L['x'].size(0)"), the guards the trace assumed, and the
// symbols specialised to their hints. It is safe for use by one compile at a time (the mutex
// only protects hint snapshots read by printing from another goroutine).
type ShapeEnv struct {
	mu          sync.Mutex
	hints       []int64
	sources     []string
	guards      []SymGuard
	guardKeys   map[string]bool
	specialized map[int]string // symbol → why
	derived     map[int]SymDef // symbol → its definition (a floor division of other symbols)
	derivedOf   map[string]int // SymDef.key() → symbol
	floats      []floatSym     // float symbols (symfloat.go)
	floatSpec   map[int]string // float symbol → why it was specialised
	// Why is the current reason recorded with new guards ("model.py:12"); the trace sets it.
	Why string
}

// NewShapeEnv returns an empty env.
func NewShapeEnv() *ShapeEnv {
	return &ShapeEnv{guardKeys: map[string]bool{}, specialized: map[int]string{}, derived: map[int]SymDef{}, derivedOf: map[string]int{}}
}

// NewSymbol adds a symbol with a hint and a source and returns it. Symbols stand for sizes ≥ 2
// (0 and 1 are specialised, as torch does), which the caller's guard checks.
func (e *ShapeEnv) NewSymbol(hint int64, source string) SymInt {
	e.mu.Lock()
	id := len(e.hints)
	e.hints = append(e.hints, hint)
	e.sources = append(e.sources, source)
	e.mu.Unlock()
	return e.Symbol(id)
}

// Symbol is symbol id as a SymInt.
func (e *ShapeEnv) Symbol(id int) SymInt {
	return SymInt{terms: []symTerm{{coef: 1, syms: []int{id}}}, env: e}
}

// NumSymbols is how many symbols the env has.
func (e *ShapeEnv) NumSymbols() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.hints)
}

// HintOf is symbol id's hint; SourceOf its source.
func (e *ShapeEnv) HintOf(id int) int64 { return e.hintsSnapshot()[id] }
func (e *ShapeEnv) SourceOf(id int) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sources[id]
}

// Hints returns a copy of every symbol's hint, by id.
func (e *ShapeEnv) Hints() []int64 { return append([]int64(nil), e.hintsSnapshot()...) }

func (e *ShapeEnv) hintsSnapshot() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hints
}

// Guards returns the guards recorded so far.
func (e *ShapeEnv) Guards() []SymGuard {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]SymGuard(nil), e.guards...)
}

// Specialized maps each specialised symbol to why.
func (e *ShapeEnv) Specialized() map[int]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.specialized)
}

// IsSpecialized reports whether symbol id was specialised to its hint.
func (e *ShapeEnv) IsSpecialized(id int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.specialized[id]
	return ok
}

// AddGuard records an assumption about symbols (a relation the trace relies on without having
// decided it from a comparison, such as an int argument being ≥ 2).
func (e *ShapeEnv) AddGuard(g SymGuard) { e.addGuard(g) }

func (e *ShapeEnv) addGuard(g SymGuard) {
	if _, ok := g.Left.Sub(g.Right).IsConst(); ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if g.Why == "" {
		g.Why = e.Why
	}
	k := g.key()
	if e.guardKeys[k] {
		return
	}
	e.guardKeys[k] = true
	e.guards = append(e.guards, g)
}

// envMark is the state of an env's guards and specialisations at one point (mark).
type envMark struct {
	guards int
	spec   map[int]bool
}

func (e *ShapeEnv) mark() envMark {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := envMark{guards: len(e.guards), spec: make(map[int]bool, len(e.specialized))}
	for id := range e.specialized {
		m.spec[id] = true
	}
	return m
}

// rollback forgets the guards and specialisations recorded since m (guards are only appended);
// it reports whether there were any.
func (e *ShapeEnv) rollback(m envMark) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.guards) == m.guards && len(e.specialized) == len(m.spec) {
		return false
	}
	for _, g := range e.guards[m.guards:] {
		delete(e.guardKeys, g.key())
	}
	e.guards = e.guards[:m.guards]
	for id := range e.specialized {
		if !m.spec[id] {
			delete(e.specialized, id)
		}
	}
	return true
}

// definitely is f's answer when f needs no guard (nor specialisation) to give it, and false
// otherwise (what it recorded forgotten): torch's guard_or_false, for questions whose false
// answer is always sound (a fast path that a general one computes as well).
func definitely(env *ShapeEnv, f func() bool) bool {
	if env == nil {
		return f()
	}
	m := env.mark()
	r := f()
	if env.rollback(m) {
		return false
	}
	return r
}

// envOfMetas is the env of the first symbolic meta (nil when all are static).
func envOfMetas(ms []*TensorMeta) *ShapeEnv {
	for _, m := range ms {
		if m == nil || m.Sym == nil {
			continue
		}
		var env *ShapeEnv
		symbolsIn(m, func(s SymInt) {
			if env == nil {
				env = s.env
			}
		})
		if env != nil {
			return env
		}
	}
	return nil
}

// Specialize guards symbol id equal to its hint (why says what needed a concrete value).
func (e *ShapeEnv) Specialize(id int, why string) {
	e.mu.Lock()
	_, done := e.specialized[id]
	if !done {
		e.specialized[id] = why
	}
	hint := e.hints[id]
	e.mu.Unlock()
	if !done {
		e.addGuard(SymGuard{Left: e.Symbol(id), Right: SymConst(hint), Rel: RelEq, Why: why})
	}
}

// Specialize returns the hint of s, guarding every symbol it mentions equal to its hint.
func (s SymInt) Specialize(why string) int64 {
	for _, id := range s.Symbols() {
		s.env.Specialize(id, why)
	}
	return s.Hint()
}

// decide evaluates a relation at the hints and guards the outcome.
func decide(a, b SymInt, rel Rel) bool {
	env := pickEnv(a.env, b.env)
	g := SymGuard{Left: a, Right: b, Rel: rel}
	if env == nil {
		return g.Holds(nil)
	}
	holds := g.Holds(env.hintsSnapshot())
	if !holds {
		switch rel {
		case RelEq:
			g.Rel = RelNe
		case RelNe:
			g.Rel = RelEq
		case RelGe: // not (a >= b) is b > a
			g = SymGuard{Left: b, Right: a, Rel: RelGt}
		case RelGt: // not (a > b) is b >= a
			g = SymGuard{Left: b, Right: a, Rel: RelGe}
		}
	}
	env.addGuard(g)
	return holds
}

// EqualHint decides s == o at the hints and guards the answer: a size symbol compared equal to a
// constant is specialised (torch does the same), two symbols compared are guarded equal or
// unequal.
func (s SymInt) EqualHint(o SymInt) bool {
	if s.Equal(o) {
		return true
	}
	if k, ok := o.IsConst(); ok && s.Hint() == k {
		if id, _, _, lin := s.Linear(); lin {
			s.env.Specialize(id, s.env.Why)
			return true
		}
	}
	return decide(s, o, RelEq)
}

// GeHint decides s >= o at the hints and guards the answer.
func (s SymInt) GeHint(o SymInt) bool {
	if d, ok := s.Sub(o).IsConst(); ok {
		return d >= 0
	}
	if s.provablyGe(o) {
		return true
	}
	return decide(s, o, RelGe)
}

// GtHint decides s > o at the hints and guards the answer.
func (s SymInt) GtHint(o SymInt) bool { return s.GeHint(o.AddConst(1)) }

// ProvablyNonNegative reports whether s ≥ 0 for every value of its symbols (no guard).
func (s SymInt) ProvablyNonNegative() bool { return s.provablyGe(SymConst(0)) }

// provablyGe uses that every symbol is at least its lower bound (2, or more: LowerBound): a
// difference whose terms all have positive coefficients is at least its value with every symbol
// at its bound.
func (s SymInt) provablyGe(o SymInt) bool {
	d := s.Sub(o)
	if _, c := d.IsConst(); c {
		return d.c >= 0
	}
	env := d.env
	d = env.floorDivLowerBound(d)
	// with every symbol s_i = lb_i + t_i (t_i >= 0), a polynomial in the t_i whose coefficients
	// are all non-negative is non-negative: s0*s0 - s0 - 1 = t0*t0 + 3*t0 + 1 (lb 2)
	shifted := SymConst(d.c)
	lbs := map[int]int64{}
	for _, t := range d.terms {
		if len(t.syms) > 6 {
			return false
		}
		p := SymConst(t.coef)
		for _, id := range t.syms {
			lb, ok := lbs[id]
			if !ok {
				lb = env.LowerBound(id)
				lbs[id] = lb
			}
			p = p.Mul(SymInt{c: lb, terms: []symTerm{{coef: 1, syms: []int{id}}}})
		}
		shifted = shifted.Add(p)
	}
	if shifted.c < 0 {
		return false
	}
	for _, t := range shifted.terms {
		if t.coef < 0 {
			return false
		}
	}
	return true
}

// AsSymInt converts an int Value (int64 or SymInt) to a SymInt.
func AsSymInt(v Value) (SymInt, bool) {
	switch x := v.(type) {
	case SymInt:
		return x, true
	case int64:
		return SymConst(x), true
	case int:
		return SymConst(int64(x)), true
	case bool:
		if x {
			return SymConst(1), true
		}
		return SymConst(0), true
	}
	return SymInt{}, false
}

// SymValue is s as a Value: an int64 when constant.
func SymValue(s SymInt) Value {
	if k, ok := s.IsConst(); ok {
		return k
	}
	return s
}

// SymLayout is the symbolic form of a TensorMeta's sizes, strides and offset.
type SymLayout struct {
	Sizes   []SymInt
	Strides []SymInt
	Offset  SymInt
}

// IsSymbolic reports whether m has symbolic sizes, strides or offset.
func (m *TensorMeta) IsSymbolic() bool { return m != nil && m.Sym != nil }

// SymSizes returns m's sizes as SymInts (constants for a static tensor).
func (m *TensorMeta) SymSizes() []SymInt {
	if m.Sym != nil {
		return append([]SymInt(nil), m.Sym.Sizes...)
	}
	return constSyms(m.Shape)
}

// SymStrides returns m's strides as SymInts.
func (m *TensorMeta) SymStrides() []SymInt {
	if m.Sym != nil {
		return append([]SymInt(nil), m.Sym.Strides...)
	}
	return constSyms(m.Strides)
}

// SymOffset returns m's storage offset as a SymInt.
func (m *TensorMeta) SymOffset() SymInt {
	if m.Sym != nil {
		return m.Sym.Offset
	}
	return SymConst(m.Offset)
}

// SymNumel is the number of elements.
func (m *TensorMeta) SymNumel() SymInt {
	n := SymConst(1)
	for _, s := range m.SymSizes() {
		n = n.Mul(s)
	}
	return n
}

func constSyms(xs []int64) []SymInt {
	out := make([]SymInt, len(xs))
	for i, x := range xs {
		out[i] = SymConst(x)
	}
	return out
}

// hintsOf evaluates SymInts at their hints.
func hintsOf(xs []SymInt) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = x.Hint()
	}
	return out
}

// SetSymLayout gives m the symbolic layout (sizes, strides, offset), setting Shape, Strides and
// Offset to their hints; an all-constant layout leaves m static.
func (m *TensorMeta) SetSymLayout(sizes, strides []SymInt, offset SymInt) *TensorMeta {
	m.Shape, m.Strides, m.Offset = hintsOf(sizes), hintsOf(strides), offset.Hint()
	m.Sym = nil
	all := append(append([]SymInt{offset}, sizes...), strides...)
	for _, x := range all {
		if _, ok := x.IsConst(); !ok {
			m.Sym = &SymLayout{Sizes: append([]SymInt(nil), sizes...), Strides: append([]SymInt(nil), strides...), Offset: offset}
			break
		}
	}
	return m
}

// SymContiguousStrides is ContiguousStrides for symbolic sizes (symbols are ≥ 2, so only
// constant size-1 dims are skipped).
func SymContiguousStrides(sizes []SymInt) []SymInt {
	st := make([]SymInt, len(sizes))
	acc := SymConst(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		st[i] = acc
		if k, ok := sizes[i].IsConst(); !ok || k > 1 {
			acc = acc.Mul(sizes[i])
		}
	}
	return st
}

// NewSymContiguous is NewContiguous for symbolic sizes.
func NewSymContiguous(dt DType, sizes []SymInt, dev Device) *TensorMeta {
	m := &TensorMeta{DType: dt, Device: dev}
	return m.SetSymLayout(sizes, SymContiguousStrides(sizes), SymConst(0))
}

// symbolsIn collects the symbolic SymInts in a Value (metas, lists, scalars).
func symbolsIn(v Value, f func(SymInt)) {
	switch x := v.(type) {
	case SymInt:
		if _, ok := x.IsConst(); !ok {
			f(x)
		}
	case *TensorMeta:
		if x != nil && x.Sym != nil {
			for _, s := range x.Sym.Sizes {
				symbolsIn(s, f)
			}
			for _, s := range x.Sym.Strides {
				symbolsIn(s, f)
			}
			symbolsIn(x.Sym.Offset, f)
		}
	case []Value:
		for _, e := range x {
			symbolsIn(e, f)
		}
	case Tuple:
		for _, e := range x {
			symbolsIn(e, f)
		}
	case []*TensorMeta:
		for _, e := range x {
			symbolsIn(e, f)
		}
	case []SymInt:
		for _, e := range x {
			symbolsIn(e, f)
		}
	case Slice:
		if x.SymStart != nil {
			symbolsIn(*x.SymStart, f)
		}
		if x.SymStop != nil {
			symbolsIn(*x.SymStop, f)
		}
	}
}

// HasSymbols reports whether v holds a symbolic size anywhere.
func HasSymbols(v Value) bool {
	found := false
	symbolsIn(v, func(SymInt) { found = true })
	return found
}

// SpecializeValue returns v with every symbolic size replaced by its hint, guarding each symbol
// it mentions equal to its hint (why says what needed it): metas become static clones, SymInts
// become int64.
func SpecializeValue(v Value, why string) Value {
	symbolsIn(v, func(s SymInt) { s.Specialize(why) })
	return staticValue(v)
}

func staticValue(v Value) Value {
	switch x := v.(type) {
	case SymInt:
		return x.Hint()
	case *TensorMeta:
		if x == nil || x.Sym == nil {
			return x
		}
		c := x.Clone()
		c.Sym = nil
		return c
	case []SymInt:
		return hintsOf(x)
	case Slice:
		return x.Static()
	case []*TensorMeta:
		out := make([]*TensorMeta, len(x))
		for i, e := range x {
			out[i], _ = staticValue(e).(*TensorMeta)
		}
		return out
	case []Value:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = staticValue(e)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = staticValue(e)
		}
		return out
	}
	return v
}

// checkHints verifies that a symbolic meta agrees with its own hints (Shape, Strides, Offset
// equal the symbolic layout evaluated at the hints): a meta function that got one of them wrong
// is a ptgo bug, caught here rather than at another size.
func checkHints(v Value) error {
	var err error
	var walk func(Value)
	walk = func(v Value) {
		switch x := v.(type) {
		case *TensorMeta:
			if x == nil || x.Sym == nil || err != nil {
				return
			}
			if len(x.Sym.Sizes) != len(x.Shape) || len(x.Sym.Strides) != len(x.Strides) {
				err = fmt.Errorf("symbolic layout of rank %d for a tensor of rank %d", len(x.Sym.Sizes), len(x.Shape))
				return
			}
			if !shapeEqual(hintsOf(x.Sym.Sizes), x.Shape) || !shapeEqual(hintsOf(x.Sym.Strides), x.Strides) || x.Sym.Offset.Hint() != x.Offset {
				err = fmt.Errorf("symbolic layout %s disagrees with its hints %s", x.SymString(), x.String())
			}
		case []Value:
			for _, e := range x {
				walk(e)
			}
		case Tuple:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return err
}

// SymString prints m with symbolic sizes: f32[s0,64] (strides and offset as String does).
func (m *TensorMeta) SymString() string {
	if m.Sym == nil {
		return m.String()
	}
	var b strings.Builder
	b.WriteString(m.DType.String())
	b.WriteByte('[')
	for i, s := range m.Sym.Sizes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(s.String(), " ", ""))
	}
	b.WriteByte(']')
	contiguous := true
	want := SymContiguousStrides(m.Sym.Sizes)
	for i := range want {
		if k, ok := m.Sym.Sizes[i].IsConst(); ok && k == 1 {
			continue
		}
		if !want[i].Equal(m.Sym.Strides[i]) {
			contiguous = false
		}
	}
	if off, ok := m.Sym.Offset.IsConst(); !contiguous || !ok || off != 0 {
		b.WriteString("{")
		for i, s := range m.Sym.Strides {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strings.ReplaceAll(s.String(), " ", ""))
		}
		if off, ok := m.Sym.Offset.IsConst(); !ok || off != 0 {
			b.WriteString("+" + strings.ReplaceAll(m.Sym.Offset.String(), " ", ""))
		}
		b.WriteString("}")
	}
	if m.Device.Type != "" && m.Device.Type != "cpu" {
		b.WriteString("@" + m.Device.String())
	}
	if m.RequiresGrad {
		b.WriteString("!grad")
	}
	return b.String()
}

// VisitSymbols calls f with every symbolic SymInt in v (metas, lists, scalars).
func VisitSymbols(v Value, f func(SymInt)) { symbolsIn(v, f) }

// SymTermView is one term of a SymInt: Coef·Π Syms.
type SymTermView struct {
	Coef int64
	Syms []int
}

// Terms returns s's constant and its terms (for code that evaluates SymInts elsewhere: guards
// in C, the runtime).
func (s SymInt) Terms() (int64, []SymTermView) {
	out := make([]SymTermView, len(s.terms))
	for i, t := range s.terms {
		out[i] = SymTermView{Coef: t.coef, Syms: append([]int(nil), t.syms...)}
	}
	return s.c, out
}

// Resolve replaces the symbols of s that the env specialised by their hints.
func (s SymInt) Resolve() SymInt {
	if s.env == nil {
		return s
	}
	spec := s.env.Specialized()
	if len(spec) == 0 {
		return s
	}
	hints := s.env.Hints()
	out := SymConst(s.c)
	for _, t := range s.terms {
		term := SymConst(t.coef)
		for _, id := range t.syms {
			if _, ok := spec[id]; ok {
				term = term.MulConst(hints[id])
			} else if k, ok := s.env.derivedConst(id); ok {
				term = term.MulConst(k)
			} else {
				term = term.Mul(s.env.Symbol(id))
			}
		}
		out = out.Add(term)
	}
	return out
}

// resolveBound resolves a symbolic slice bound: nil when nothing symbolic is left (the hint is
// the slice's int bound already).
func resolveBound(b *SymInt) *SymInt {
	if b == nil {
		return nil
	}
	r := b.Resolve()
	if _, cst := r.IsConst(); cst {
		return nil
	}
	return &r
}

// ResolveValue is Resolve over a Value: metas get their symbolic layout resolved (static again
// when nothing symbolic is left), SymInts resolved (int64 when constant), containers element-wise.
func ResolveValue(v Value) Value {
	switch x := v.(type) {
	case SymInt:
		return SymValue(x.Resolve())
	case *TensorMeta:
		if x == nil || x.Sym == nil {
			return x
		}
		c := x.Clone()
		sizes, strides := make([]SymInt, len(x.Sym.Sizes)), make([]SymInt, len(x.Sym.Strides))
		for i, s := range x.Sym.Sizes {
			sizes[i] = s.Resolve()
		}
		for i, s := range x.Sym.Strides {
			strides[i] = s.Resolve()
		}
		return c.SetSymLayout(sizes, strides, x.Sym.Offset.Resolve())
	case []Value:
		out := make([]Value, len(x))
		for i, e := range x {
			out[i] = ResolveValue(e)
		}
		return out
	case Tuple:
		out := make(Tuple, len(x))
		for i, e := range x {
			out[i] = ResolveValue(e)
		}
		return out
	case []SymInt:
		out := make([]SymInt, len(x))
		for i, e := range x {
			out[i] = e.Resolve()
		}
		return out
	case Slice:
		x.SymStart, x.SymStop = resolveBound(x.SymStart), resolveBound(x.SymStop)
		return x
	}
	return v
}
