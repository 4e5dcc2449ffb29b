package inductor

import (
	"math"
	"strconv"
	"strings"

	"ptgo/primtorch"
)

// The value IR: what a loop body computes at one point of its iteration space. A body is a DAG
// of Values over the node's index variables; values are interned per Graph (equal structure is
// the same *Value), so common subexpressions are shared by construction and pointer equality is
// structural equality.

// ValueKind says what a Value is.
type ValueKind uint8

const (
	VLoad   ValueKind = iota // Buf at the logical index Index (one Expr per dimension of Buf)
	VConst                   // the number Num
	VIndex                   // the index expression Expr as a value (iota)
	VOp                      // the op Op (a row of the ops table) applied to Args
	VCast                    // Args[0] converted to DType
	VMasked                  // Args[0] ? Args[1] : Args[2], evaluating only the branch taken
	VSize                    // the size expression Size (over the size symbols) as an int64 value
	VFloat                   // the call's float argument Num.I (a Python float read at run time) as a float64 value
)

// Number is a constant: F for floating dtypes, I for integers and bools (0 or 1).
type Number struct {
	F float64
	I int64
}

// Value is one node of a loop body. Values are immutable and interned: build them with the
// Graph's constructors.
type Value struct {
	ID    int
	Kind  ValueKind
	DType primtorch.DType
	Op    string
	Args  []*Value
	Buf   *Buffer
	Index []Expr
	Expr  Expr
	Num   Number
	Size  Sym

	vars     uint64 // bit k: variable k appears (variables ≥ 64 set varsWide)
	varsWide bool
	size     int // number of distinct values in the DAG below and including this one, capped
}

func (v *Value) usesVar(k int) bool {
	if k >= 64 {
		return v.varsWide
	}
	return v.vars&(1<<uint(k)) != 0 || v.varsWide
}

// values interns the Values of one Graph.
type values struct {
	byKey map[string]*Value
	n     int
}

func newValues() *values { return &values{byKey: map[string]*Value{}} }

func (vs *values) intern(v *Value) *Value {
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(v.Kind)) + "|" + v.DType.String() + "|" + v.Op + "|")
	for _, a := range v.Args {
		b.WriteString(strconv.Itoa(a.ID) + ",")
	}
	b.WriteByte('|')
	switch v.Kind {
	case VLoad:
		b.WriteString(v.Buf.Name)
		for _, e := range v.Index {
			b.WriteString(";" + e.Key())
		}
	case VIndex:
		b.WriteString(v.Expr.Key())
	case VSize:
		b.WriteString(v.Size.Key())
	case VFloat:
		b.WriteString(strconv.FormatInt(v.Num.I, 10))
	case VConst:
		b.WriteString(strconv.FormatUint(math.Float64bits(v.Num.F), 16) + "/" + strconv.FormatInt(v.Num.I, 10))
	}
	key := b.String()
	if old, ok := vs.byKey[key]; ok {
		return old
	}
	vs.n++
	v.ID = vs.n
	v.size = 1
	for _, a := range v.Args {
		v.vars |= a.vars
		v.varsWide = v.varsWide || a.varsWide
		v.size += a.size
	}
	if v.size > 1<<20 {
		v.size = 1 << 20
	}
	markExprVars := func(e Expr) {
		for _, t := range e.Terms {
			markAtomVars(v, t.Atom)
		}
	}
	for _, e := range v.Index {
		markExprVars(e)
	}
	markExprVars(v.Expr)
	vs.byKey[key] = v
	return v
}

func markAtomVars(v *Value, a *Atom) {
	switch a.Kind {
	case AtomVar:
		if a.Var >= 64 {
			v.varsWide = true
		} else {
			v.vars |= 1 << uint(a.Var)
		}
	case AtomDiv, AtomMod:
		for _, t := range a.X.Terms {
			markAtomVars(v, t.Atom)
		}
	case AtomInd:
		v.vars |= a.Val.vars
		v.varsWide = v.varsWide || a.Val.varsWide
	}
}

// Load reads buf at a logical index.
func (vs *values) Load(buf *Buffer, idx []Expr) *Value {
	return vs.intern(&Value{Kind: VLoad, DType: buf.DType, Buf: buf, Index: idx})
}

// ConstF is a floating constant of dtype dt (or an integer/bool constant converted from f).
func (vs *values) ConstF(dt primtorch.DType, f float64) *Value {
	if !dt.IsFloatingPoint() {
		return vs.ConstI(dt, int64(f))
	}
	switch dt {
	case primtorch.Float32, primtorch.Float16, primtorch.BFloat16:
		f = roundToDType(dt, f)
	}
	return vs.intern(&Value{Kind: VConst, DType: dt, Num: Number{F: f}})
}

// ConstI is an integer or bool constant of dtype dt (or a floating constant converted from i).
func (vs *values) ConstI(dt primtorch.DType, i int64) *Value {
	if dt.IsFloatingPoint() {
		return vs.ConstF(dt, float64(i))
	}
	if dt == primtorch.Bool && i != 0 {
		i = 1
	}
	return vs.intern(&Value{Kind: VConst, DType: dt, Num: Number{I: wrapInt(dt, i)}})
}

// Const converts a Python scalar (int64, float64, bool) to a constant of dtype dt.
func (vs *values) Const(dt primtorch.DType, x any) *Value {
	switch x := x.(type) {
	case bool:
		if x {
			return vs.ConstI(dt, 1)
		}
		return vs.ConstI(dt, 0)
	case int64:
		return vs.ConstI(dt, x)
	case float64:
		if dt == primtorch.Bool {
			if x != 0 {
				return vs.ConstI(dt, 1)
			}
			return vs.ConstI(dt, 0)
		}
		return vs.ConstF(dt, x)
	}
	return nil
}

// SizeValue is the size expression s as an int64 value (a constant when s is).
func (vs *values) SizeValue(s Sym) *Value {
	if k, ok := s.IsConst(); ok {
		return vs.ConstI(primtorch.Int64, k)
	}
	return vs.intern(&Value{Kind: VSize, DType: primtorch.Int64, Size: s})
}

// FloatArg is the call's float argument k (Graph.FloatInputs) as a float64 value.
func (vs *values) FloatArg(k int) *Value {
	return vs.intern(&Value{Kind: VFloat, DType: primtorch.Float64, Num: Number{I: int64(k)}})
}

// Index is the index expression e as a value of dtype dt.
func (vs *values) Index(dt primtorch.DType, e Expr) *Value {
	return vs.intern(&Value{Kind: VIndex, DType: dt, Expr: e})
}

// Op applies a row of the ops table; the result dtype follows the row (same as the first
// argument's, or bool).
func (vs *values) Op(op string, args ...*Value) *Value {
	info := opTable[op]
	if info == nil {
		panic("ptgo BUG: inductor: value op " + op + " is not in the ops table (ops.go)")
	}
	dt := args[len(args)-1].DType
	if info.boolOut {
		dt = primtorch.Bool
	} else if op == "where" {
		dt = args[1].DType
	}
	return vs.intern(&Value{Kind: VOp, DType: dt, Op: op, Args: args})
}

// Cast converts x to dt (identity when x already has dt).
func (vs *values) Cast(x *Value, dt primtorch.DType) *Value {
	if x.DType == dt {
		return x
	}
	if x.Kind == VConst {
		if x.DType.IsFloatingPoint() {
			if dt == primtorch.Bool {
				if x.Num.F != 0 {
					return vs.ConstI(dt, 1)
				}
				return vs.ConstI(dt, 0)
			}
			if !dt.IsFloatingPoint() && (math.IsNaN(x.Num.F) || math.IsInf(x.Num.F, 0)) {
				return vs.intern(&Value{Kind: VCast, DType: dt, Args: []*Value{x}})
			}
			return vs.ConstF(dt, x.Num.F)
		}
		return vs.ConstI(dt, x.Num.I)
	}
	return vs.intern(&Value{Kind: VCast, DType: dt, Args: []*Value{x}})
}

// Masked is cond ? then : els, where only the branch taken is evaluated (its loads may be out of
// range otherwise).
func (vs *values) Masked(cond, then, els *Value) *Value {
	if cond.Kind == VConst {
		if cond.Num.I != 0 {
			return then
		}
		return els
	}
	return vs.intern(&Value{Kind: VMasked, DType: then.DType, Args: []*Value{cond, then, els}})
}

func roundToDType(dt primtorch.DType, f float64) float64 { return primtorch.RoundToDType(dt, f) }

// wrapInt truncates i to the width of integer dtype dt, as a C cast does.
func wrapInt(dt primtorch.DType, i int64) int64 {
	switch dt {
	case primtorch.Int32:
		return int64(int32(i))
	case primtorch.Int16:
		return int64(int16(i))
	case primtorch.Int8:
		return int64(int8(i))
	case primtorch.UInt8:
		return int64(uint8(i))
	}
	return i
}

// valueSubst rebuilds values: variables through vars (simplified under bounds), and loads
// through load when set (after their index was substituted). A nil *valueSubst changes nothing.
type valueSubst struct {
	vs     *values
	vars   func(k int) Expr
	bounds Bounds
	load   func(v *Value, idx []Expr) *Value
	memo   map[*Value]*Value
}

func (s *valueSubst) value(v *Value) *Value {
	if s == nil {
		return v
	}
	if s.memo == nil {
		s.memo = map[*Value]*Value{}
	}
	if r, ok := s.memo[v]; ok {
		return r
	}
	var r *Value
	switch v.Kind {
	case VLoad:
		idx := make([]Expr, len(v.Index))
		for i, e := range v.Index {
			idx[i] = e.Subst(s.vars, s.bounds, s)
		}
		if s.load != nil {
			r = s.load(v, idx)
		}
		if r == nil {
			r = s.vs.Load(v.Buf, idx)
		}
	case VConst, VSize, VFloat:
		r = v
	case VIndex:
		r = s.vs.Index(v.DType, v.Expr.Subst(s.vars, s.bounds, s))
	case VOp:
		args := make([]*Value, len(v.Args))
		for i, a := range v.Args {
			args[i] = s.value(a)
		}
		r = s.vs.intern(&Value{Kind: VOp, DType: v.DType, Op: v.Op, Args: args})
	case VCast:
		r = s.vs.Cast(s.value(v.Args[0]), v.DType)
	case VMasked:
		r = s.vs.Masked(s.value(v.Args[0]), s.value(v.Args[1]), s.value(v.Args[2]))
	}
	s.memo[v] = r
	return r
}

// walkValues calls f once for every value in the DAG under roots (children first), including
// values inside indirect index atoms.
func walkValues(roots []*Value, f func(*Value)) {
	seen := map[*Value]bool{}
	var visit func(v *Value)
	var visitExpr func(e Expr)
	visitExpr = func(e Expr) {
		for _, t := range e.Terms {
			switch t.Atom.Kind {
			case AtomDiv, AtomMod:
				visitExpr(t.Atom.X)
			case AtomInd:
				visit(t.Atom.Val)
			}
		}
	}
	visit = func(v *Value) {
		if v == nil || seen[v] {
			return
		}
		seen[v] = true
		for _, a := range v.Args {
			visit(a)
		}
		for _, e := range v.Index {
			visitExpr(e)
		}
		visitExpr(v.Expr)
		f(v)
	}
	for _, r := range roots {
		visit(r)
	}
}

// loadsOf returns the loads under roots, in a deterministic order.
func loadsOf(roots ...*Value) []*Value {
	var out []*Value
	walkValues(roots, func(v *Value) {
		if v.Kind == VLoad {
			out = append(out, v)
		}
	})
	return out
}

// cost estimates the work of computing the DAG under v once (distinct values, weighted by op).
func cost(v *Value) int {
	total := 0
	walkValues([]*Value{v}, func(x *Value) {
		switch x.Kind {
		case VOp:
			total += opTable[x.Op].cost
		case VLoad, VCast, VMasked, VIndex, VSize, VFloat:
			total++
		}
	})
	return total
}
