package pipeline

import (
	"errors"
	"fmt"

	"ptgo/inductor"
)

// Symbolic graphs on the inference path. A captured graph whose metas hold size symbols
// (fxgraph.Graph.Shapes, dynamic shapes) is compiled by inductor into one library and plan for
// every value of the symbols. When inductor cannot (an op without a symbolic lowering, a
// symbolic stride, a CUDA graph) the inference path returns an error wrapping
// *inductor.SymbolicUnsupported, and nothing was handed to the runtime: the caller recompiles
// the graph with static shapes (the symbols specialised to their hints under the trace's
// guards). Detect it with IsSymbolicUnsupported(err) or
// errors.As(err, new(*inductor.SymbolicUnsupported)).

// IsSymbolicUnsupported reports whether err says a graph with size symbols must be compiled with
// static shapes instead.
func IsSymbolicUnsupported(err error) bool { return inductor.IsSymbolicUnsupported(err) }

// SymbolicReason is the reason inductor gave for refusing symbolic sizes ("" when err is not
// such a refusal).
func SymbolicReason(err error) string {
	var su *inductor.SymbolicUnsupported
	if errors.As(err, &su) {
		return su.Reason
	}
	return ""
}

func symbolicUnsupported(err error) error {
	return fmt.Errorf("pipeline: compiling with symbolic sizes: %w", err)
}
