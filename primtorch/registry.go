package primtorch

import (
	"fmt"
	"strings"
)

// A def is one registry row, as the ops_*.go tables write it.
type def struct {
	id      OpID
	kind    Kind
	prom    Promotion
	schema  string
	targets string
	meta    metaFn
	alts    []string
	pysigs  []pysig
	flags   rowFlag
	note    string
	since   TorchVersion

	inplaceID      OpID
	inplaceTargets string
	hasInplace     bool
	mutatesWhen    func(*Args) []string
	raisesWhen     func(*Args, Value) bool
	selfWhen       func(*Args) bool
}

// pysig is a signature only some targets use: Python-level functions whose signature differs from
// the op's (F.relu(input, inplace=False) against torch.relu(input)).
type pysig struct {
	targets []string
	sig     string
}

type rowFlag uint16

const (
	fRandom           rowFlag = 1 << iota // random op (dropout, rand)
	fNonDiff                              // results never require grad
	fNumbers                              // Tensor parameters accept Python numbers
	fOut                                  // accepts out=
	fDataDep                              // output shape depends on data: Meta returns ErrDataDependent
	fMayAlias                             // an aliasing output may also be the input itself or a copy
	fOwnGrad                              // the meta function sets requires_grad itself (detach, copy_)
	fNumbersSelf                          // with fNumbers: the first parameter takes a number too (torch.add(2, x))
	fNoOverlap                            // in place: self may share no memory with the other tensor arguments (torch's assert_no_overlap)
	fSymbolic                             // the meta function handles symbolic sizes (sym.go)
	fSymFloat                             // self and other may be a SymFloat (a float argument read at run time, symfloat.go)
	fSymFloatValue                        // the value parameter may be a SymFloat (addcmul, addcdiv)
	fSymFloatExponent                     // the exponent may be a SymFloat (pow)
)

// row starts a registry row. targets is a space-separated list where "@name" stands for
// "torch.name Tensor.name", "F.name" for "torch.nn.functional.name" and "nn.name" for
// "torch._C._nn.name" (where torch's builtin F-functions live).
func row(id OpID, kind Kind, prom Promotion, schema, targets string, meta metaFn) *def {
	return &def{id: id, kind: kind, prom: prom, schema: schema, targets: targets, meta: meta}
}

// alt adds signatures calls may also use.
func (d *def) alt(sigs ...string) *def { d.alts = append(d.alts, sigs...); return d }

// py declares the signature targets (already listed in the row) use instead of the row's.
func (d *def) py(targets, sig string) *def {
	d.pysigs = append(d.pysigs, pysig{expandTargets(targets), sig})
	return d
}

func (d *def) with(f rowFlag) *def { d.flags |= f; return d }

func (d *def) notes(s string) *def { d.note = s; return d }

// sinceTorch declares the first torch version that has the op (torch 2.0's
// scaled_dot_product_attention); older torches never reach it.
func (d *def) sinceTorch(v TorchVersion) *def { d.since = v; return d }

// inplace declares the in-place variant (name_): same meta, result written into self.
func (d *def) inplace(id OpID, targets string) *def {
	d.inplaceID, d.inplaceTargets, d.hasInplace = id, targets, true
	return d
}

// mutates declares arguments a call writes depending on its values (batch_norm's running
// stats in training).
func (d *def) mutates(f func(*Args) []string) *def { d.mutatesWhen = f; return d }

// raises declares when a call may raise for some input values (see Effects): f gets the bound
// arguments and the result meta.
func (d *def) raises(f func(*Args, Value) bool) *def { d.raisesWhen = f; return d }

// returnsSelf declares when torch's kernel returns its input tensor itself (the same Python
// object, not a view): f gets the bound arguments.
func (d *def) returnsSelf(f func(*Args) bool) *def { d.selfWhen = f; return d }

func expandTargets(s string) []string {
	var out []string
	for _, t := range strings.Fields(s) {
		switch {
		case strings.HasPrefix(t, "@"):
			out = append(out, "torch."+t[1:], "Tensor."+t[1:])
		case strings.HasPrefix(t, "F."):
			out = append(out, "torch.nn.functional."+t[2:])
		case strings.HasPrefix(t, "nn."):
			out = append(out, "torch._C._nn."+t[3:])
		default:
			out = append(out, t)
		}
	}
	return out
}

// inplaceSchema turns "name.ov(Tensor self, ...) -> Tensor" into
// "name_.ov(Tensor(a!) self, ...) -> Tensor(a!)".
func inplaceSchema(s string) string {
	open := strings.IndexByte(s, '(')
	head := s[:open]
	if dot := strings.IndexByte(head, '.'); dot >= 0 {
		head = head[:dot] + "_" + head[dot:]
	} else {
		head += "_"
	}
	rest := strings.ReplaceAll(s[open:], "Tensor(a) ", "Tensor ")
	for _, self := range []string{"Tensor self", "Tensor input:self"} {
		if strings.HasPrefix(rest, "("+self) {
			rest = "(" + strings.Replace(self, "Tensor", "Tensor(a!)", 1) + rest[1+len(self):]
			break
		}
	}
	arrow := strings.LastIndex(rest, "->")
	return head + rest[:arrow] + "-> Tensor(a!)"
}

// allDefs lists every table; registry_init builds the ops from it.
func allDefs() [][]*def {
	return [][]*def{
		unaryDefs, activationDefs, binaryDefs, ternaryDefs, reductionDefs, normDefs,
		linalgDefs, convDefs, viewDefs, joinDefs, indexDefs, factoryDefs, castDefs,
		lossDefs, miscDefs, attentionDefs, primDefs,
	}
}

// buildRegistry makes the ops from the tables. It runs as opsByID's initializer, so package-level
// variables anywhere may use OpID.Op and Lookup.
func buildRegistry() []*Op {
	opsByID := make([]*Op, NumOps)
	var order []*Op
	generic := map[*Op][]*Schema{}
	pyFor := map[*Op]map[string][]*Schema{}
	add := func(id OpID, d *def, schema string, alts []string, pysigs []pysig, targets string, functional *Op) *Op {
		if id >= NumOps {
			panic(fmt.Sprintf("ptgo BUG: registry row %q has id %d >= NumOps; add its constant to ids.go", schema, id))
		}
		if opsByID[id] != nil {
			panic(fmt.Sprintf("ptgo BUG: registry rows %q and %q share id %d; give each its own constant in ids.go", opsByID[id].Schema.Text, schema, id))
		}
		op := &Op{
			ID: id, Kind: d.kind, Promotion: d.prom, meta: d.meta, Note: d.note, Since: d.since,
			Random: d.flags&fRandom != 0, NonDifferentiable: d.flags&fNonDiff != 0,
			NumbersAsTensors: d.flags&fNumbers != 0, selfNumbers: d.flags&fNumbersSelf != 0 && d.flags&fNumbers != 0, AcceptsOut: d.flags&fOut != 0 && functional == nil,
			DataDependent: d.flags&fDataDep != 0, Targets: expandTargets(targets), ownGrad: d.flags&fOwnGrad != 0,
			RefusesOverlap: d.flags&fNoOverlap != 0, Symbolic: d.flags&fSymbolic != 0, SymFloats: d.flags&fSymFloat != 0,
			SymFloatValue: d.flags&fSymFloatValue != 0, SymFloatExponent: d.flags&fSymFloatExponent != 0,
			Functional: functional, mutatesWhen: d.mutatesWhen, raisesWhen: d.raisesWhen, selfWhen: d.selfWhen,
		}
		op.Schema = MustParseSchema(schema)
		op.Name = op.Schema.FullName()
		op.Sigs = []*Schema{op.Schema}
		for _, s := range alts {
			op.Sigs = append(op.Sigs, MustParseSchema(s))
		}
		generic[op] = op.Sigs
		pyFor[op] = map[string][]*Schema{}
		for _, ps := range pysigs {
			sc := MustParseSchema(ps.sig)
			op.Sigs = append(op.Sigs[:len(op.Sigs):len(op.Sigs)], sc)
			if op.sigTargets == nil {
				op.sigTargets = map[*Schema][]string{}
			}
			op.sigTargets[sc] = ps.targets
			for _, t := range ps.targets {
				if indexOfString(op.Targets, t) < 0 {
					panic(fmt.Sprintf("ptgo BUG: %s declares a signature for target %s, which is not among its targets", op.Name, t))
				}
				pyFor[op][t] = append(pyFor[op][t], sc)
			}
		}
		for i, p := range op.Schema.Params {
			if p.Writes {
				op.Mutates = append(op.Mutates, i)
			}
		}
		if len(op.Schema.Returns) > 0 && op.Schema.Returns[0].Alias != "" {
			for i, p := range op.Schema.Params {
				if p.Alias == op.Schema.Returns[0].Alias {
					op.AliasArg = i
					switch {
					case p.Writes:
						op.Alias = AliasInPlace
					case d.flags&fMayAlias != 0:
						op.Alias = AliasMaybe
					default:
						op.Alias = AliasView
					}
				}
			}
		}
		if _, dup := opsByName[op.Name]; dup {
			panic(fmt.Sprintf("ptgo BUG: two registry rows are named %s; give one an overload name", op.Name))
		}
		opsByID[id], opsByName[op.Name] = op, op
		order = append(order, op)
		return op
	}
	for _, table := range allDefs() {
		for _, d := range table {
			op := add(d.id, d, d.schema, d.alts, d.pysigs, d.targets, nil)
			if d.hasInplace {
				alts := make([]string, len(d.alts))
				for i, s := range d.alts {
					alts[i] = inplaceSchema(s)
				}
				ip := add(d.inplaceID, d, inplaceSchema(d.schema), alts, nil, d.inplaceTargets, op)
				ip.NonDifferentiable = op.NonDifferentiable
				op.Inplace = ip
			}
		}
	}
	for id, op := range opsByID {
		if op == nil {
			panic(fmt.Sprintf("ptgo BUG: OpID %d has no registry row; add one to an ops_*.go table or remove the constant from ids.go", id))
		}
	}
	// Each target reaches a view of the op restricted to the signatures that target accepts.
	for _, op := range order {
		for _, t := range op.Targets {
			view := op
			sigs, isPy := pyFor[op][t]
			if !isPy {
				sigs = generic[op]
			}
			method := strings.HasPrefix(t, "Tensor.")
			reflected := strings.HasPrefix(t, "operator.") && op.NumbersAsTensors && !op.selfNumbers
			if method || reflected || len(sigs) != len(op.Sigs) {
				v := *op
				v.Sigs, v.canonical, v.method = sigs, op, method
				v.selfNumbers = op.selfNumbers || reflected
				view = &v
			}
			byTarget[t] = append(byTarget[t], view)
		}
	}
	for _, views := range byTarget {
		for _, v := range views {
			if v.canonical != nil {
				v.overloads = views
			}
		}
	}
	for _, op := range order {
		first := byTarget[op.Targets[0]]
		op.overloads = make([]*Op, len(first))
		for i, v := range first {
			op.overloads[i] = v.Canonical()
		}
		for _, t := range op.Targets {
			views := byTarget[t]
			same := len(views) == len(op.overloads)
			for i := 0; same && i < len(views); i++ {
				same = views[i].Canonical() == op.overloads[i]
			}
			if !same {
				panic(fmt.Sprintf("ptgo BUG: target %s reaches %v but %s's first target %s reaches %v; overloads must list the same targets",
					t, views, op.Name, op.Targets[0], op.overloads))
			}
		}
	}
	return opsByID
}

func indexOfString(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
