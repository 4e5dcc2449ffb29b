package kernels

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// ISA is the instruction-set level kernels are compiled for. The level is
// chosen from the CPU's features (klauspost/cpuid/v2) and turned into explicit
// compiler flags, never -march=native, so a cache key names a portable target
// rather than one machine.
type ISA struct {
	// Name is the level: "avx512", "avx2", "sse4.2" or "baseline".
	Name string
	// Flags are the compiler flags selecting the level.
	Flags []string
	// VectorWidth is the number of float32 lanes the compiler vectorises to.
	VectorWidth int
	// requires lists the CPU features code built at this level may use.
	requires []cpuid.FeatureID
}

// isaLevels lists every level, best first. Each row: name, flags, float lanes,
// and the CPU features the flags let the compiler use.
var isaLevels = []ISA{
	{
		Name: "avx512",
		Flags: []string{"-mavx2", "-mfma", "-mf16c",
			"-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mavx512cd",
			"-mprefer-vector-width=512"},
		VectorWidth: 16,
		requires: []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C,
			cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512VL, cpuid.AVX512BW, cpuid.AVX512CD},
	},
	{
		Name:        "avx2",
		Flags:       []string{"-mavx2", "-mfma", "-mf16c"},
		VectorWidth: 8,
		requires:    []cpuid.FeatureID{cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C},
	},
	{
		Name:        "sse4.2",
		Flags:       []string{"-msse4.2", "-mpopcnt"},
		VectorWidth: 4,
		requires:    []cpuid.FeatureID{cpuid.SSE4, cpuid.SSE42, cpuid.POPCNT},
	},
	{
		// x86-64 (SSE2) on amd64; the compiler's default target elsewhere.
		Name:        "baseline",
		VectorWidth: 4,
	},
}

// ISALevels returns the names of all levels, best first.
func ISALevels() []string {
	names := make([]string, len(isaLevels))
	for i, l := range isaLevels {
		names[i] = l.Name
	}
	return names
}

// LookupISA returns the level called name, whether or not this CPU can run it
// (compiling for a level the CPU lacks is allowed; running is not).
func LookupISA(name string) (ISA, error) {
	for _, l := range isaLevels {
		if l.Name == name {
			return l.clone(), nil
		}
	}
	return ISA{}, fmt.Errorf("kernels: unknown ISA level %q (%s); use one of %s, or unset %s to detect it",
		name, EnvISA, strings.Join(ISALevels(), ", "), EnvISA)
}

// DetectISA returns the best level this CPU can run.
func DetectISA() ISA {
	return detectISA(cpuHas)
}

// ISAFromEnv returns the level named by PTGO_CPU_ISA, or the detected one when
// it is unset. It does not check that this CPU can run the level: Compile does,
// Build does not.
func ISAFromEnv() (ISA, error) {
	name := getenv(EnvISA)
	if name == "" {
		return DetectISA(), nil
	}
	return LookupISA(name)
}

// Missing returns the CPU features the level needs that this CPU lacks.
func (i ISA) Missing() []string {
	return i.missing(cpuHas)
}

// CheckRunnable returns an error naming the missing CPU features when this CPU
// cannot run code built for the level.
func (i ISA) CheckRunnable() error {
	if m := i.Missing(); len(m) > 0 {
		return fmt.Errorf("kernels: this CPU lacks %s, needed by ISA level %q; kernels for it can be built (Build) but not loaded or run — set %s to one of %s or unset it",
			strings.Join(m, ", "), i.Name, EnvISA, strings.Join(runnableNames(cpuHas), ", "))
	}
	return nil
}

func (i ISA) String() string {
	return fmt.Sprintf("%s (%d float lanes, flags %q)", i.Name, i.VectorWidth, i.Flags)
}

func (i ISA) clone() ISA {
	i.Flags = append([]string(nil), i.Flags...)
	return i
}

func (i ISA) missing(has func(cpuid.FeatureID) bool) []string {
	var m []string
	for _, f := range i.requires {
		if !has(f) {
			m = append(m, f.String())
		}
	}
	return m
}

func detectISA(has func(cpuid.FeatureID) bool) ISA {
	for _, l := range isaLevels {
		if len(l.missing(has)) == 0 {
			return l.clone()
		}
	}
	return isaLevels[len(isaLevels)-1].clone()
}

func runnableNames(has func(cpuid.FeatureID) bool) []string {
	var names []string
	for _, l := range isaLevels {
		if len(l.missing(has)) == 0 {
			names = append(names, l.Name)
		}
	}
	return names
}

// cpuHas reports a feature of this CPU. Off amd64 no x86 feature is present,
// so only "baseline" is runnable.
func cpuHas(f cpuid.FeatureID) bool {
	return runtime.GOARCH == "amd64" && cpuid.CPU.Supports(f)
}
