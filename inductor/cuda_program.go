package inductor

import (
	"encoding/json"
	"fmt"
	"sort"
)

// CUDAPlan is what a CUDA program adds to the launch plan (JSON "cuda", beside "device"):
//
//	"device": "cuda:0",
//	"cuda": {"module": "/…/ptgo/cuda/ab/ab…cubin", "kind": "cubin", "arch": 90,
//	         "kernels": {"cuda_fused_add_gelu_0": {"grid": [1056, 1, 1], "block": [256, 1, 1],
//	                      "shared": 0, "schedule": "pointwise vec4"},
//	                     "cuda_fused_sum_1": {..., "then": {"kernel": "cuda_fused_sum_1_final",
//	                      "grid": [...], "block": [...], "shared": 0}}}}
//
// A kernel step of a CUDA program launches its kernel (cuLaunchKernel) on the caller's current
// stream with one pointer parameter per ptrs entry (the storage start, as for C kernels) and then
// a pointer to the graph's status word (an int the kernels or their faults into: 1 an index out
// of range, 2 an integer division by zero); "then" is launched right after with the same
// parameters (a split reduction's final kernel). Buffers are on the program's device, the arena
// too (a split reduction's partials are a uint8 arena buffer among its ptrs).
type CUDAPlan struct {
	Module  string
	Kind    string
	Arch    int
	Kernels map[string]*CUDALaunch
}

// CUDALaunch is one kernel's launch configuration.
type CUDALaunch struct {
	Kernel   string      `json:"kernel,omitempty"`
	Grid     [3]uint32   `json:"grid"`
	Block    [3]uint32   `json:"block"`
	Shared   uint32      `json:"shared"`
	Schedule string      `json:"schedule,omitempty"`
	Then     *CUDALaunch `json:"then,omitempty"`
}

type cudaPlanJSON struct {
	Module  string                 `json:"module"`
	Kind    string                 `json:"kind"`
	Arch    int                    `json:"arch"`
	Kernels map[string]*CUDALaunch `json:"kernels"`
}

func (p *Program) cudaJSON() string {
	if p.Device == "" && p.CUDA == nil {
		return ""
	}
	s := ",\n \"device\": " + mustJSON(p.Device)
	if p.CUDA != nil {
		// kernels in name order: the JSON is deterministic
		names := make([]string, 0, len(p.CUDA.Kernels))
		for n := range p.CUDA.Kernels {
			names = append(names, n)
		}
		sort.Strings(names)
		s += ",\n \"cuda\": {\"module\": " + mustJSON(p.CUDA.Module) + ", \"kind\": " + mustJSON(p.CUDA.Kind) +
			", \"arch\": " + mustJSON(p.CUDA.Arch) + ", \"kernels\": {"
		for i, n := range names {
			if i > 0 {
				s += ","
			}
			s += "\n  " + mustJSON(n) + ": " + mustJSON(p.CUDA.Kernels[n])
		}
		s += "}}"
	}
	return s
}

func (p *Program) decodeCUDA(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var j cudaPlanJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return fmt.Errorf("inductor: decoding a program's cuda section: %w", err)
	}
	p.CUDA = &CUDAPlan{Module: j.Module, Kind: j.Kind, Arch: j.Arch, Kernels: j.Kernels}
	return nil
}
