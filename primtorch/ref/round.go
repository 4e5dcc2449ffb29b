package ref

import "ptgo/primtorch"

// roundHalf and roundBFloat16 round a float64 to the dtype (primtorch/round.go).
func roundHalf(v float64) float64     { return primtorch.RoundHalf(v) }
func roundBFloat16(v float64) float64 { return primtorch.RoundBFloat16(v) }
