// Package pipeline is ptgo's compile policy for one torch-level graph, as Inductor's compile_fx
// is torch's: it decides which path a graph takes and drives the stages along it. Both ways a
// graph reaches ptgo's backends go through it: a frame captured by ptgo's own bytecode
// interpreter (pybridge's compileFrame) and a torch.fx GraphModule handed to the backend entry
// point (torch.compile(m, backend="ptgo"), imported by ImportFX).
//
// # What it takes
//
// A Request: the torch-level graph (fxgraph, metas on every node), the live tensors of its
// get_attr nodes (opaque py.Obj handles it never looks into), the grad mode the graph starts
// in, the backend (Inductor: C kernels; AOTEager: ptgo's autograd, graphs run by torch) and
// options (freezing). A Host does the few things only Python can (fold a BatchNorm into a
// convolution's tensors, build the runtime objects from a launch plan); pybridge implements it
// over ptgo._runtime, tests implement it in Go.
//
// # What it gives
//
// The compiled callable (a Host object), or "run this graph with torch" with the reason named
// on perf_hints and counted in Stats, or an *Error naming the stage that failed. The policy:
//
//  1. A graph whose results require grad (CPU tensors only) takes the autograd path:
//     decompose, refuse outputs that alias inputs, lift get_attr parameters to placeholders,
//     split with aotautograd (min-cut partition), check no output eager would track lost its
//     tangent, then compile the forward and the backward to C (Inductor) or turn both back into
//     torch calls (AOTEager), and wrap them in one autograd.Function (Host).
//  2. Otherwise, for Inductor: freezing when asked or, with no option given, when the compiled
//     module is in eval mode and version guards exist (A90), then the suitability check (CPU tensors),
//     decomposition, lifting, inductor.Compile, and the launch plan handed to the Host's C++
//     runtime with the lifted tensors bound as its last inputs.
//  3. Anything else — AOTEager inference graphs, ops without a lowering, writes the
//     functionalization cannot express, no C compiler, no C++ runtime — returns 0: the caller
//     runs the torch-level graph with torch.
//
// Where a compiled graph may be re-run with torch when its kernels reject its data (an index
// out of range), the pipeline asks the Host for that re-run only for graphs that write no input,
// draw no random numbers and switch no grad mode (A45).
//
// # FX import
//
// ImportFX reads the JSON a torch.fx GraphModule is serialised to (python/ptgo/fx_import.py;
// fxgraph's schema), maps every call target onto ptgo's op registry (aten overloads by their
// schema name, builtins and torch._C functions by their importable path), recomputes every
// registered call's meta with primtorch's meta functions and compares it with the meta the
// graph came with (torch's FakeTensor, or ptgo's own from its capture). What ptgo cannot take
// is an *Unsupported naming the node: the caller runs the GraphModule as it is. A symbolic
// graph (Dynamo's dynamic shapes) arrives with its symbols table and polynomial sizes; its
// metas are compared as polynomials, and CompileFX returns the guards ptgo's import and
// compile recorded (FXResult.Guards), which the caller checks on every call because Dynamo
// owns the frame's guards; a NeedsStatic answer runs the graph with torch.
//
// The package talks to Python only through Host and py.Obj handles, so it builds and tests with
// CGO_ENABLED=0; Config.CompileC replaces inductor.Compile in tests that must not load C.
package pipeline
