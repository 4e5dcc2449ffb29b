package decomp

import (
	"reflect"
	"runtime"
	"strings"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// Symbolic sizes (dynamic shapes). A graph whose metas have size symbols (g.Shapes) decomposes
// into a prims graph with symbolic metas: the decompositions listed in symbolicDecompFns read
// sizes as SymInts (sizesOf, m.SymSizes(), c.a.SymInt) and pass them to the builders, which emit
// sym(...) constants. Any other decomposition reads concrete sizes: its call's arguments are
// specialised first (each symbol they mention guarded equal to its hint, primtorch's
// SpecializeInPlace), so the sizes it bakes into the graph hold whenever the guards do.
// checkSymbolicResult catches a listed decomposition that baked a size in without a guard.

// symbolicDecompFns are the decompositions that handle symbolic sizes (closures by the function
// that makes them: every unaryPrim(...) row is symbolic).
var symbolicDecompFns = []decompFn{
	// elementwise
	unaryPrim(""), binaryPrim(""), noDerivative(nil), dPositive, dAsinh, dAcosh, dAtanh,
	dFrac, dSignbit, dSquare, dRelu6, dRound, dWhere, dMaskedFill, dLerp, dRelu, dGelu, dSilu, dMish, dElu,
	dSelu, dCelu, dLeakyRelu, dHardtanh, dHardsigmoid, dHardswish, dSoftplus, dLogSigmoid, dSoftsign,
	dTanhshrink, dHardshrink, dSoftshrink, dThreshold, dGlu, dPrelu, dClamp, dAdd, dSub, dDiv, dRsub,
	dPow, dXlogy, dLogaddexp, dFmaxFmin(""), dAddcdiv, dAddcmul, dIsInfSigned(0), dNanToNum, dLogit,
	// casts, copies, factories
	dTo, dClone, dCopy, dFill, dRequiresGrad, dFull, dArange, dEye,
	// reductions
	dSum, dNansum, dMean, dProd, dAmaxAmin(""), dMaxMinAll(""), dMaxMinDim("", ""), dArg(""), dVar,
	dLogsumexp, dNorm, dAllAny(""), dCountNonzero, dScan(""), dSoftmax(false),
	// views
	dView, dReshape, dSqueeze, dUnsqueeze, dTranspose, dPermute, dMovedim, dExpand, dBroadcastTensors,
	dContiguous, dNarrow, dSelect, dSplit, dUnbind, dAsStrided, dDetach,
	// matrix products, normalization, attention
	dMatmul, dMm, dBmm, dAddmm, dLinear, dOuter, dLayerNorm, dGroupNorm, dBatchNorm, dInstanceNorm, dDropout,
	dScaledDotProductAttention,
	// joins
	dCat, dStack, dHVStack, dRepeat, dTri(false),
	// indexing, padding
	dGetitem, dSetitem, dGather, dIndexSelect, dEmbedding, dScatter, dPad,
	// convolution and pooling (their metas keep the batch and, for convolutions and poolings
	// whose output size is a floor division of the input's, the spatial sizes symbolic:
	// primtorch's spatialSymbolic; adaptive average pooling to a fixed size: globalPoolSymbolic)
	dConv(0, false), dMaxPool2d, dAvgPool2d, dAdaptiveAvgPool,
	dNormalize, dCosineSimilarity, dPairwiseDistance, dFlip,
	// losses
	dPointwiseLoss, dBCE, dBCEWithLogits, dNllLoss, dCrossEntropy,
}

var symbolicDecompSet = func() map[string]bool {
	s := map[string]bool{}
	for _, fn := range symbolicDecompFns {
		s[decompName(fn)] = true
	}
	return s
}()

// decompName names a decomposition by the function that is or makes it ("dSum", "unaryPrim"):
// closures are named after their maker (the compiler may copy a closure's code where its maker
// is inlined, so code pointers do not identify them).
func decompName(fn decompFn) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	parts := strings.Split(name, ".")
	for len(parts) > 1 && strings.HasPrefix(parts[len(parts)-1], "func") {
		parts = parts[:len(parts)-1]
	}
	return parts[len(parts)-1]
}

// symbolicDecomp reports whether op's decomposition handles symbolic sizes (an in-place op's:
// its functional op's).
func symbolicDecomp(op *primtorch.Op) bool {
	fn := decomps[op.ID]
	if fn == nil {
		return false
	}
	name := decompName(fn)
	if name == "inplace" && op.Functional != nil {
		return symbolicDecomp(op.Functional)
	}
	return symbolicDecompSet[name]
}

// symbolicNode reports whether a torch-level call reads or returns symbolic sizes.
func (d *decomposer) symbolicNode(n *fxgraph.Node) bool {
	if primtorch.HasSymbols(n.Meta) {
		return true
	}
	found := false
	for _, in := range n.Inputs() {
		found = found || primtorch.HasSymbols(in.Meta)
	}
	fxgraph.VisitArgSymbols(n, func(primtorch.SymInt) { found = true })
	return found
}

// specializeCall makes a call's bound arguments and result meta static (with guards) for a
// decomposition that reads concrete sizes.
func (c *ctx) specializeCall() {
	why := "decomposition of " + c.op.Name
	c.a.SpecializeInPlace(why)
	c.out = primtorch.SpecializeValue(c.out, why)
}

// checkSymbolicResult verifies that a symbolic decomposition's result has the torch-level
// result's sizes as polynomials, up to symbols the decomposition (or the metas) specialised: a
// size that differs otherwise was baked in from a hint without a guard, a ptgo bug.
func (d *decomposer) checkSymbolicResult(c *ctx, res any) {
	var check func(r any, want any)
	check = func(r any, want any) {
		wm, ok := want.(*primtorch.TensorMeta)
		if !ok || wm == nil || wm.Sym == nil {
			if ws, ok := want.([]any); ok {
				if rs, ok := r.([]any); ok && len(rs) == len(ws) {
					for i := range ws {
						check(rs[i], ws[i])
					}
				}
			}
			return
		}
		var gm *primtorch.TensorMeta
		switch x := r.(type) {
		case *fxgraph.Node:
			gm = x.TensorMeta()
		case *tstate:
			gm = d.read(x).TensorMeta()
		}
		if gm == nil || len(gm.Shape) != len(wm.Shape) {
			return
		}
		got, exp := gm.SymSizes(), wm.SymSizes()
		for i := range exp {
			if got[i].Equal(exp[i]) {
				continue
			}
			for _, id := range exp[i].Symbols() {
				if !exp[i].Env().IsSpecialized(id) {
					bug("%s gives size %s where torch gives %s: a size symbol was baked into the graph", c.op.Name, got[i], exp[i])
				}
			}
		}
	}
	check(res, c.out)
}
