package aotautograd

import "ptgo/primtorch"

// SetMetaForTest replaces the meta function of the calls the derivative formulas emit; it
// returns the function that restores the registry's.
func SetMetaForTest(f func(op *primtorch.Op, vals []primtorch.Value) (primtorch.Value, error)) (restore func()) {
	old := metaOf
	metaOf = f
	return func() { metaOf = old }
}
