// Package fxgraph is ptgo's torch-level graph IR, the form of torch.fx graphs: what capture
// (package bytecode) builds from a frame, what custom backends receive as a torch.fx
// GraphModule, and what primtorch decomposes into core ops.
//
// A Graph is a straight-line list of Nodes: placeholders (the inputs), then call_function
// (a Python callable by path: torch.relu, operator.getitem), call_method (a Tensor method:
// view, add_), and get_attr (a parameter or buffer of the user's module by dotted path:
// fc1.weight) in execution order, then one output node returning a structure of Tuple, List
// and Dict of nodes and constants. Arguments are nodes, constants (Const), lists, tuples,
// slices and dicts. Every node but the output carries a meta (a primtorch.TensorMeta, a tuple
// of metas, or a Python scalar) and the user's source line.
//
// What the package provides:
//
//   - Building: New and the Add* methods, which pick unique names that torch.fx keeps.
//   - Text: Graph.String prints a deterministic, readable form (print.go documents it) and
//     Parse reads it back to an equal graph; Equal/Diff compare graphs structurally.
//   - Checking: Verify checks the invariants below, and with a MetaChecker (the op registry's
//     meta functions) that every call's meta is what the op computes.
//   - Passes, plain functions: EliminateDeadCode, Clone, Graph.Fingerprint (a cache key).
//   - Export: EncodeJSON/DecodeJSON (json.go documents the schema); the Python side,
//     python/ptgo/fx_export.py, turns the JSON into a real torch.fx.GraphModule whose
//     parameters are the user's own tensors under their original names.
//
// Invariants (Verify): placeholders come first and one output node last; each argument node
// is defined earlier in the same graph; names are unique Python identifiers that torch.fx
// would not rename (no keywords, builtins such as max, or zero-padded suffixes); targets fit
// their op; metas are present and well formed (one stride per dim, nothing negative, a known
// device), and the output has none; Node.Index matches the position (call Graph.Renumber
// after editing Graph.Nodes directly).
//
// The package imports primtorch only for its value types (dtypes, devices, tensor metas);
// it knows no ops. The reference interpreter over core ops comes later.
package fxgraph
