package inductor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ptgo/fxgraph"
	"ptgo/kernels"
	"ptgo/logs"
)

// Options configures Compile.
type Options struct {
	// Compiler builds and loads the C unit; nil uses kernels.Default().
	Compiler *kernels.Compiler
	// Context bounds the C compile; nil is context.Background().
	Context context.Context
	// DebugDir, when set, receives one file per stage: 0_prims.txt (the input graph),
	// 1_lowered.txt, 2_inlined.txt, 3_schedule.txt, 4_kernels.c, 5_plan.txt, 5_plan.json.
	DebugDir string
	// Codegen tunes the C (tests use it to compare against single-threaded code).
	Codegen CodegenOptions
	// Check verifies the loop IR after every pass (PTGO_CHECK=1 in the pipeline driver).
	Check bool
	// NoFusion skips Inline and puts every node in a kernel of its own (a baseline for tests and
	// benchmarks).
	NoFusion bool
}

// Compiled is a compiled graph: every stage's result, the loaded library and the plan.
type Compiled struct {
	Lowered  string // the loop IR text right after lowering
	Graph    *Graph // the loop IR after inlining
	Schedule *Schedule
	Source   *Source
	Program  *Program
	Library  *kernels.Library
	// Timings lists each stage and how long it took, in order.
	Timings []StageTime

	mu    sync.Mutex // guards arena
	arena execArena
}

// StageTime is how long one compile stage took.
type StageTime struct {
	Stage string
	Time  time.Duration
}

// Compile lowers a prims graph, fuses it, generates one C translation unit, compiles and loads
// it (kernels.Compile), and builds the launch plan. It logs the C on logs.OutputCode and the
// stage times on logs.CompileTimes.
//
// A graph with size symbols (IsSymbolic) compiles into one library and plan for every value of
// the symbols, or fails with a *SymbolicUnsupported error saying what needs static sizes (see
// symbolic.go); the caller then compiles the graph with static shapes.
func Compile(g *fxgraph.Graph, opts Options) (_ *Compiled, err error) {
	if IsSymbolic(g) {
		defer recoverSym(g.Name, &err)
	}
	c := &Compiled{}
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	stage := func(name string) {
		now := time.Now()
		c.Timings = append(c.Timings, StageTime{Stage: name, Time: now.Sub(start)})
		start = now
	}
	dump := func(file, text string) error {
		if opts.DebugDir == "" {
			return nil
		}
		if err := os.MkdirAll(opts.DebugDir, 0o755); err != nil {
			return fmt.Errorf("inductor: debug dir: %w", err)
		}
		return os.WriteFile(filepath.Join(opts.DebugDir, file), []byte(text), 0o644)
	}
	if err := dump("0_prims.txt", g.String()); err != nil {
		return nil, err
	}
	ir, err := Lower(g)
	if err != nil {
		return nil, err
	}
	c.Lowered = ir.String()
	stage("lower")
	if err := checkStage(opts, ir, "lower"); err != nil {
		return nil, err
	}
	if err := dump("1_lowered.txt", c.Lowered); err != nil {
		return nil, err
	}
	if !opts.NoFusion {
		AbsorbActivations(ir)
		Inline(ir)
	}
	c.Graph = ir
	stage("inline")
	if err := checkStage(opts, ir, "inline"); err != nil {
		return nil, err
	}
	if err := dump("2_inlined.txt", ir.String()); err != nil {
		return nil, err
	}
	if opts.NoFusion {
		c.Schedule = Unfused(ir)
	} else {
		c.Schedule = Fuse(ir)
	}
	stage("fuse")
	if err := dump("3_schedule.txt", c.Schedule.String()); err != nil {
		return nil, err
	}
	c.Source = Generate(c.Schedule, opts.Codegen)
	stage("codegen")
	if err := dump("4_kernels.c", c.Source.Text); err != nil {
		return nil, err
	}
	if logs.On(logs.OutputCode) {
		logs.Printf(logs.OutputCode, "inductor: C for graph %s:\n%s", g.Name, c.Source.Text[c.Source.Prelude:])
	}
	c.Program, err = Plan(c.Schedule, c.Source)
	if err != nil {
		return nil, err
	}
	if opts.Check {
		if err := verifyArena(c.Program); err != nil {
			return nil, fmt.Errorf("ptgo BUG: inductor: graph %s: the plan's arena is invalid: %w", g.Name, err)
		}
	}
	stage("plan")
	if err := dump("5_plan.txt", c.Program.String()); err != nil {
		return nil, err
	}
	if opts.DebugDir != "" {
		js, err := c.Program.JSON()
		if err != nil {
			return nil, err
		}
		if err := dump("5_plan.json", string(js)); err != nil {
			return nil, err
		}
	}
	if len(c.Source.Kernels) > 0 {
		comp := opts.Compiler
		if comp == nil {
			if comp, err = kernels.Default(); err != nil {
				return nil, err
			}
		}
		c.Library, err = comp.Compile(ctx, kernels.Source{Name: "graph_" + g.Name, Text: c.Source.Text, Parts: c.Source.Parts})
		if err != nil {
			return nil, fmt.Errorf("inductor: compiling the kernels of graph %s: %w", g.Name, err)
		}
	}
	stage("cc")
	if logs.On(logs.CompileTimes) {
		var parts []string
		for _, t := range c.Timings {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", t.Stage, float64(t.Time.Microseconds())/1000))
		}
		logs.Printf(logs.CompileTimes, "inductor: graph %s: %d kernels; %s", g.Name, len(c.Source.Kernels), strings.Join(parts, ", "))
	}
	return c, nil
}

// Run executes the compiled graph on Go tensors (see Execute) with the arena the compiled graph
// keeps across calls, as the CPython runtime does: constants computed by Once kernels on the
// first call must still be intact on later ones. A call made while another runs gets a fresh
// arena.
func (c *Compiled) Run(inputs []*Tensor, nthreads int) ([]*Tensor, error) {
	if !c.mu.TryLock() {
		return Execute(c.Program, c.Library, inputs, nthreads)
	}
	defer c.mu.Unlock()
	return execute(c.Program, c.Library, inputs, nil, nil, nthreads, &c.arena)
}

// RunInts is Run for a graph that takes int arguments (Program.IntInputs), in placeholder order.
func (c *Compiled) RunInts(inputs []*Tensor, ints []int64, nthreads int) ([]*Tensor, error) {
	if !c.mu.TryLock() {
		return ExecuteInts(c.Program, c.Library, inputs, ints, nthreads)
	}
	defer c.mu.Unlock()
	return execute(c.Program, c.Library, inputs, ints, nil, nthreads, &c.arena)
}

// RunArgs is Run for a graph that takes int and float arguments (Program.IntInputs,
// Program.FloatInputs), each in placeholder order.
func (c *Compiled) RunArgs(inputs []*Tensor, ints []int64, floats []float64, nthreads int) ([]*Tensor, error) {
	if !c.mu.TryLock() {
		return ExecuteArgs(c.Program, c.Library, inputs, ints, floats, nthreads)
	}
	defer c.mu.Unlock()
	return execute(c.Program, c.Library, inputs, ints, floats, nthreads, &c.arena)
}

func checkStage(opts Options, g *Graph, stage string) error {
	if !opts.Check {
		return nil
	}
	if err := Verify(g); err != nil {
		return fmt.Errorf("ptgo BUG: inductor: the loop IR is invalid after %s: %w", stage, err)
	}
	return nil
}

// Unfused schedules every buffer as a kernel of its own, in graph order (no fusion at all).
func Unfused(g *Graph) *Schedule {
	s := &Schedule{Graph: g}
	outputs := g.outputSet()
	_ = outputs
	n := 0
	for _, b := range g.Buffers {
		switch d := b.Def.(type) {
		case *Extern:
			if d.Primary() == b {
				s.Steps = append(s.Steps, &ExternStep{Call: d})
			}
		case *Pointwise, *Reduction, *Scan, *ScatterNode:
			sq, _ := squeezed(rangesOf(d))
			if _, ok := d.(*Scan); ok {
				sq = nil
			}
			k := &Kernel{Outer: sq, Nodes: []*KernelNode{{Buf: b}}}
			k.Name = kernelName(k, n)
			n++
			s.Steps = append(s.Steps, k)
		}
	}
	return s
}
