package inductor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"ptgo/fxgraph"
	"ptgo/kernels/cuda"
	"ptgo/logs"
	"ptgo/primtorch"
)

// CUDACompileOptions configures CompileCUDA.
type CUDACompileOptions struct {
	// Compiler compiles the unit with NVRTC into its cache; nil generates the source and the plan
	// only (Compiled.Artifact stays nil).
	Compiler *cuda.Compiler
	Gen      CUDAOptions
	// Device is the program's device ("cuda:0").
	Device   string
	Check    bool
	DebugDir string
	NoFusion bool
}

// CompiledCUDA is a graph compiled for a GPU: every stage, the binary and the plan.
type CompiledCUDA struct {
	Graph    *Graph
	Schedule *Schedule
	Source   *CUDASource
	Program  *Program
	Artifact *cuda.Artifact
	Timings  []StageTime
}

// CompileCUDA lowers, fuses and plans a prims graph exactly as Compile does, renders the kernels
// as CUDA C (GenerateCUDA) and compiles them with NVRTC. Kernel names start with cuda_ where the
// C backend's start with cpp_.
func CompileCUDA(g *fxgraph.Graph, opts CUDACompileOptions) (*CompiledCUDA, error) {
	c := &CompiledCUDA{}
	start := time.Now()
	stage := func(name string) {
		now := time.Now()
		c.Timings = append(c.Timings, StageTime{Stage: name, Time: now.Sub(start)})
		start = now
	}
	dump := func(file, text string) {
		if opts.DebugDir != "" {
			_ = os.MkdirAll(opts.DebugDir, 0o755)
			_ = os.WriteFile(filepath.Join(opts.DebugDir, file), []byte(text), 0o644)
		}
	}
	dump("0_prims.txt", g.String())
	if IsSymbolic(g) || fxgraph.HasFloatSymbols(g) {
		return nil, &SymbolicUnsupported{Graph: g.Name, Reason: "the CUDA renderer compiles static shapes and constant floats only"}
	}
	ir, err := Lower(g)
	if err != nil {
		return nil, err
	}
	if err := checkStage(Options{Check: opts.Check}, ir, "lower"); err != nil {
		return nil, err
	}
	if !opts.NoFusion {
		Inline(ir)
	}
	if err := checkStage(Options{Check: opts.Check}, ir, "inline"); err != nil {
		return nil, err
	}
	c.Graph = ir
	if opts.NoFusion {
		c.Schedule = Unfused(ir)
	} else {
		c.Schedule = Fuse(ir)
	}
	for _, st := range c.Schedule.Steps {
		if k, ok := st.(*Kernel); ok {
			k.Name = "cuda_" + strings.TrimPrefix(k.Name, "cpp_")
		}
	}
	stage("lower+fuse")
	dump("3_schedule.txt", c.Schedule.String())
	c.Source = GenerateCUDA(c.Schedule, opts.Gen)
	stage("codegen")
	dump("4_kernels.cu", c.Source.Text)
	if logs.On(logs.OutputCode) {
		logs.Printf(logs.OutputCode, "inductor: CUDA for graph %s:\n%s", g.Name, c.Source.Text[c.Source.Prelude:])
	}
	c.Program, err = PlanCUDA(c.Schedule, c.Source, opts.Device)
	if err != nil {
		return nil, err
	}
	if opts.Check {
		if err := verifyArena(c.Program); err != nil {
			return nil, fmt.Errorf("ptgo BUG: inductor: graph %s: the plan's arena is invalid: %w", g.Name, err)
		}
	}
	stage("plan")
	if opts.Compiler != nil && len(c.Source.Kernels) > 0 {
		c.Artifact, err = opts.Compiler.Compile("graph_"+g.Name, c.Source.Text)
		if err != nil {
			return nil, fmt.Errorf("inductor: compiling the CUDA kernels of graph %s: %w", g.Name, err)
		}
		c.Program.CUDA.Module = c.Artifact.Path
		c.Program.CUDA.Kind = opts.Compiler.Kind.String()
		c.Program.CUDA.Arch = int(opts.Compiler.Arch)
	}
	stage("nvrtc")
	if s, err := c.Program.JSON(); err == nil {
		dump("5_plan.json", string(s))
	}
	if logs.On(logs.CompileTimes) {
		var parts []string
		for _, t := range c.Timings {
			parts = append(parts, fmt.Sprintf("%s %.2f ms", t.Stage, float64(t.Time.Microseconds())/1000))
		}
		logs.Printf(logs.CompileTimes, "inductor: graph %s: %d CUDA kernels; %s", g.Name, len(c.Source.Kernels), strings.Join(parts, ", "))
	}
	return c, nil
}

// PlanCUDA builds the launch plan of a CUDA unit: Plan's buffers, arena and steps (the same as
// the C backend's), the device, each kernel's launch configuration, and an arena buffer of
// scratch bytes appended to the pointers of each kernel that needs one.
func PlanCUDA(s *Schedule, src *CUDASource, device string) (*Program, error) {
	csrc := &Source{}
	byName := map[string]*CUDAKernel{}
	for _, k := range src.Kernels {
		csrc.Kernels = append(csrc.Kernels, &KernelCode{Name: k.Name, Args: k.Args, Writes: k.Writes})
		byName[k.Name] = k
	}
	p, err := Plan(s, csrc)
	if err != nil {
		return nil, err
	}
	if device == "" {
		device = "cuda:0"
	}
	p.Device = device
	p.CUDA = &CUDAPlan{Kernels: map[string]*CUDALaunch{}}
	var steps []PStep
	for _, st := range p.Steps {
		if st.Op != "kernel" {
			steps = append(steps, st)
			continue
		}
		k := byName[st.Kernel]
		if k == nil {
			return nil, fmt.Errorf("ptgo BUG: inductor: CUDA kernel %s has no code", st.Kernel)
		}
		l := &CUDALaunch{Grid: k.Grid, Block: k.Block, Shared: k.Shared, Schedule: k.Schedule}
		if f := k.Final; f != nil {
			l.Then = &CUDALaunch{Kernel: f.Name, Grid: f.Grid, Block: f.Block, Shared: f.Shared, Schedule: f.Schedule}
		}
		p.CUDA.Kernels[k.Name] = l
		if k.Scratch > 0 {
			off := (p.ArenaBytes + 255) / 256 * 256
			id := len(p.Buffers)
			p.Buffers = append(p.Buffers, BufSpec{Name: "scratch_" + k.Name, Role: "alloc", DType: primtorch.UInt8, Sizes: []int64{k.Scratch},
				Strides: []int64{1}, StorageElems: k.Scratch, Base: -1, Arena: off})
			p.ArenaBytes = off + k.Scratch
			steps = append(steps, PStep{Op: "alloc", Buf: id, Reuse: -1})
			st.Ptrs = append(append([]int(nil), st.Ptrs...), id)
		}
		steps = append(steps, st)
	}
	p.Steps = steps
	return p, nil
}
