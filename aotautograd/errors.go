package aotautograd

import (
	"errors"
	"fmt"

	"ptgo/fxgraph"
	"ptgo/primtorch"
)

// ErrNotDifferentiable is wrapped by Split's error when a gradient would have to flow through
// an op ptgo has no derivative for (a prims.fallback: a torch-level call such as dropout in
// training or max pooling, run by torch).
// The error also wraps primtorch.ErrUnsupported: the caller runs the graph with torch, whose
// autograd differentiates it.
var ErrNotDifferentiable = errors.New("not differentiable by ptgo")

// NotDifferentiableError names the node a gradient cannot flow through.
type NotDifferentiableError struct {
	Node   string // the node's name in the prims graph
	Target string // its target ("prims.fallback(torch.nn.functional.dropout)")
	Where  string // the user's source line, when known
	Reason string
}

func (e *NotDifferentiableError) Error() string {
	where := ""
	if e.Where != "" {
		where = " at " + e.Where
	}
	return fmt.Sprintf("aotautograd: no derivative for %s (node %s%s): %s; ptgo runs this graph with torch, whose autograd differentiates it",
		e.Target, e.Node, where, e.Reason)
}

// Unwrap makes errors.Is see both ErrNotDifferentiable and primtorch.ErrUnsupported.
func (e *NotDifferentiableError) Unwrap() []error {
	return []error{ErrNotDifferentiable, primtorch.ErrUnsupported}
}

func notDifferentiable(n *fxgraph.Node, reason string) *NotDifferentiableError {
	target := n.Target
	if n.Target == "prims.fallback" && len(n.Args) > 0 {
		if c, ok := n.Args[0].(fxgraph.Const); ok {
			target = fmt.Sprintf("prims.fallback(%v)", c.V)
		}
	}
	return &NotDifferentiableError{Node: n.Name, Target: target, Where: n.Where, Reason: reason}
}

// unsupportedf is an error wrapping primtorch.ErrUnsupported: the graph is valid, but Split
// cannot handle it; the caller runs it with torch.
func unsupportedf(format string, args ...any) error {
	return fmt.Errorf("aotautograd: %s: %w; ptgo runs this graph with torch", fmt.Sprintf(format, args...), primtorch.ErrUnsupported)
}

// bugError is panicked when aotautograd emits an invalid prims call; Split recovers it into a
// "ptgo BUG" error.
type bugError struct{ msg string }

func bug(format string, args ...any) { panic(bugError{fmt.Sprintf(format, args...)}) }

// abort carries an error out of the backward pass's recursion (Split recovers it).
type abort struct{ err error }
