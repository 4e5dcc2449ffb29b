package ref

import (
	"math"

	"ptgo/primtorch"
)

// permuted returns a view of t with dims in order perm.
func permuted(t *Tensor, perm []int) *Tensor {
	v := &Tensor{DType: t.DType, Shape: make([]int64, len(perm)), Strides: make([]int64, len(perm)), Offset: t.Offset, st: t.st}
	for i, d := range perm {
		v.Shape[i], v.Strides[i] = t.Shape[d], t.Strides[d]
	}
	return v
}

// reductionGroups returns x's storage positions grouped by output element (row-major over the
// kept dims), each group listing the reduced elements in row-major order of the reduced dims.
func reductionGroups(x *Tensor, dims []int64) (groups [][]int64) {
	nd := len(x.Shape)
	reduced := make([]bool, nd)
	if len(dims) == 0 {
		for i := range reduced {
			reduced[i] = true
		}
	}
	for _, d := range dims {
		if nd > 0 {
			if d < 0 {
				d += int64(nd)
			}
			reduced[d] = true
		}
	}
	var perm []int
	r := int64(1)
	for d := 0; d < nd; d++ {
		if !reduced[d] {
			perm = append(perm, d)
		}
	}
	for d := 0; d < nd; d++ {
		if reduced[d] {
			perm = append(perm, d)
			r *= x.Shape[d]
		}
	}
	pos := permuted(x, perm).positions()
	if r == 0 {
		n := int64(1)
		for d := 0; d < nd; d++ {
			if !reduced[d] {
				n *= x.Shape[d]
			}
		}
		return make([][]int64, n)
	}
	for k := int64(0); k < int64(len(pos)); k += r {
		groups = append(groups, pos[k:k+r])
	}
	return groups
}

func evalReduction(c *evalCtx) (any, error) {
	x := c.tensor("self")
	groups := reductionGroups(x, c.a.Ints("dims"))
	out := c.newOutput()
	opos := out.positions()
	if len(opos) != len(groups) {
		return nil, c.errorf("ptgo BUG: %d output elements for %d reduction groups", len(opos), len(groups))
	}
	fl := isFloat(x.DType)
	for k, g := range groups {
		switch c.op.ID {
		case primtorch.OpPrimSum, primtorch.OpPrimProd:
			sum := c.op.ID == primtorch.OpPrimSum
			if fl {
				acc := 1.0
				if sum {
					acc = 0
				}
				for _, p := range g {
					if sum {
						acc += x.getF(p)
					} else {
						acc *= x.getF(p)
					}
				}
				out.setF(opos[k], acc)
				continue
			}
			acc := int64(1)
			if sum {
				acc = 0
			}
			for _, p := range g {
				if sum {
					acc += x.getI(p)
				} else {
					acc *= x.getI(p)
				}
			}
			out.setI(opos[k], acc)
		case primtorch.OpPrimAmax, primtorch.OpPrimAmin:
			isMax := c.op.ID == primtorch.OpPrimAmax
			if fl {
				acc := x.getF(g[0])
				for _, p := range g[1:] {
					if isMax {
						acc = maximumF(acc, x.getF(p))
					} else {
						acc = minimumF(acc, x.getF(p))
					}
				}
				out.setF(opos[k], acc)
				continue
			}
			acc := x.getI(g[0])
			for _, p := range g[1:] {
				if isMax {
					acc = max(acc, x.getI(p))
				} else {
					acc = min(acc, x.getI(p))
				}
			}
			out.setI(opos[k], acc)
		case primtorch.OpPrimAny, primtorch.OpPrimAll:
			all := c.op.ID == primtorch.OpPrimAll
			acc := all
			for _, p := range g {
				nz := x.getF(p) != 0
				if all {
					acc = acc && nz
				} else {
					acc = acc || nz
				}
			}
			out.setI(opos[k], b2i(acc))
		case primtorch.OpPrimArgmax, primtorch.OpPrimArgmin:
			out.setI(opos[k], argExtreme(x, g, c.op.ID == primtorch.OpPrimArgmax))
		}
	}
	return out, nil
}

// argExtreme is the index in g of the first maximum (minimum); a NaN is the extreme.
func argExtreme(x *Tensor, g []int64, isMax bool) int64 {
	best := int64(0)
	if isFloat(x.DType) {
		bv := x.getF(g[0])
		for j := 1; j < len(g) && !math.IsNaN(bv); j++ {
			v := x.getF(g[j])
			if math.IsNaN(v) || (isMax && v > bv) || (!isMax && v < bv) {
				best, bv = int64(j), v
			}
		}
		return best
	}
	bv := x.getI(g[0])
	for j := 1; j < len(g); j++ {
		v := x.getI(g[j])
		if (isMax && v > bv) || (!isMax && v < bv) {
			best, bv = int64(j), v
		}
	}
	return best
}

// evalScan is cumsum/cumprod along dim, accumulating in float64 (or int64).
func evalScan(c *evalCtx) (any, error) {
	x := c.tensor("self")
	out := c.newOutput()
	nd := len(x.Shape)
	if nd == 0 {
		copyInto(out, x)
		return out, nil
	}
	d := int(c.a.Int("dim"))
	if d < 0 {
		d += nd
	}
	perm := []int{}
	for i := 0; i < nd; i++ {
		if i != d {
			perm = append(perm, i)
		}
	}
	perm = append(perm, d)
	xp, op := permuted(x, perm).positions(), permuted(out, perm).positions()
	n := int(x.Shape[d])
	sum := c.op.ID == primtorch.OpPrimCumsum
	for k := 0; k+n <= len(xp) && n > 0; k += n {
		if isFloat(x.DType) {
			acc := 1.0
			if sum {
				acc = 0
			}
			for j := 0; j < n; j++ {
				if sum {
					acc += x.getF(xp[k+j])
				} else {
					acc *= x.getF(xp[k+j])
				}
				out.setF(op[k+j], acc)
			}
			continue
		}
		acc := int64(1)
		if sum {
			acc = 0
		}
		for j := 0; j < n; j++ {
			if sum {
				acc += x.getI(xp[k+j])
			} else {
				acc *= x.getI(xp[k+j])
			}
			out.setI(op[k+j], acc)
		}
	}
	return out, nil
}
